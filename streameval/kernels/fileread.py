# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's, and intrinsics are called with typing contexts)
"""Reading a batch of small sketch files and checking their frames in one compiled call.

A roll-up reads thousands of ~100 KB shards. In Python each file takes four system calls, and
the thread drops the GIL and takes it back around each one. The framing check and the CRC add
more Python. :func:`read_frames` opens, reads and closes a batch of files with the C library
and checks each frame with ISA-L's CRC-32, without the GIL, in one call.

The C functions are called through their addresses, which are passed in at run time. Compiled
code that names a ``ctypes`` function cannot be cached, and these kernels are cached. ``open``
is variadic and is called here with a fixed prototype. That is sound on the x86-64 System V ABI
(the caller's vector-register count in ``al`` only decides whether the callee saves registers
it then ignores) and not on others. :data:`FUNCTIONS` is therefore None except on Linux x86-64
with ISA-L's CRC at hand, checked against zlib's. Callers read the files the Python way
otherwise.

A file the call does not take (not read whole, or a frame the checks refuse) is left to the
caller, which reads it the general way and gets the general verdict. The frame rules are those
of ``sketch.fold_files.LeanFolder.framed``, in the same order.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import zlib

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .cache import ENABLED as CACHE
from .intrinsics import load_le32, load_le64

__all__ = ["FUNCTIONS", "read_frames", "stat_sizes", "MAGIC"]

MAGIC = b"\x89SEVSK\r\n"
_MAGIC64 = int.from_bytes(MAGIC, "little") - (1 << 64 if MAGIC[7] >= 0x80 else 0)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)


_STAT_BYTES = 256  # more than x86-64's struct stat (144 bytes)
_ST_MODE, _ST_SIZE = 24, 48  # where x86-64 Linux's struct stat holds st_mode (uint32) and st_size (int64)


def _stat_function(libc: ctypes.CDLL) -> int:
    """The address of the C library's ``stat`` when it fills x86-64 Linux's ``struct stat`` as
    checked here against ``os.stat`` on this module's file (glibc exports ``stat`` since 2.33), else 0."""
    try:
        fn = libc.stat
        fn.argtypes, fn.restype = [ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int
        out = ctypes.create_string_buffer(_STAT_BYTES)
        want = os.stat(__file__)
        if fn(os.fsencode(__file__), out) != 0:
            return 0
        mode = int.from_bytes(out.raw[_ST_MODE:_ST_MODE + 4], "little")
        size = int.from_bytes(out.raw[_ST_SIZE:_ST_SIZE + 8], "little", signed=True)
        if (mode, size) != (want.st_mode, want.st_size):
            return 0
        return ctypes.cast(fn, ctypes.c_void_p).value or 0
    except (OSError, AttributeError, ValueError):
        return 0


def _functions() -> np.ndarray | None:
    """The addresses of ``open``, ``read``, ``close``, ISA-L's ``crc32_gzip_refl`` and ``stat``
    (0 where it is not usable: :func:`stat_sizes` is then not called) as int64, or None where
    :func:`read_frames` may not call them."""
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        return None
    try:
        import isal.isal_zlib as isal_zlib

        libc = ctypes.CDLL(None, use_errno=True)
        crc = ctypes.CDLL(isal_zlib.__file__).crc32_gzip_refl
        crc.argtypes, crc.restype = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint64], ctypes.c_uint32
        probe = bytes(range(256)) * 5
        if crc(0, probe, len(probe)) != zlib.crc32(probe) or crc(7, b"x", 1) != zlib.crc32(b"x", 7):
            return None
        found = [ctypes.cast(f, ctypes.c_void_p).value for f in (libc.open, libc.read, libc.close, crc)]
    except (OSError, AttributeError, ImportError):
        return None
    if not all(found):
        return None
    return np.array([*found, _stat_function(libc)], dtype=np.int64)


FUNCTIONS = _functions()
"""``open``, ``read``, ``close``, ``crc32_gzip_refl``, ``stat`` (0: not usable) as int64
addresses, or None: not available."""

_I8P = ir.IntType(8).as_pointer()
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


@intrinsic
def _address(typingctx, arr, idx):  # type: ignore[no-untyped-def]
    """The address of ``arr[idx]`` as an int64 (no bounds check: the caller checks)."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        aty = signature.args[0]
        ary = context.make_array(aty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aty, ary, [args[1]], wraparound=False, boundscheck=False)
        return builder.ptrtoint(ptr, _I64)

    return types.int64(arr, idx), codegen


def _caller(ret: ir.Type, params: list[ir.Type], result: types.Type):  # type: ignore[no-untyped-def]
    """An intrinsic ``call(fn, a[, b[, c]])`` calling the C function at address ``fn`` (int64) with
    its int64 arguments narrowed or cast to ``params``, its ``ret`` widened to ``result``."""
    fnty = ir.FunctionType(ret, params)

    def codegen(context, builder, signature, llargs):  # type: ignore[no-untyped-def]
        f = builder.inttoptr(llargs[0], fnty.as_pointer())
        actual = []
        for value, want in zip(llargs[1:], params, strict=True):
            if isinstance(want, ir.PointerType):
                actual.append(builder.inttoptr(value, want))
            elif want.width < 64:
                actual.append(builder.trunc(value, want))
            else:
                actual.append(value)
        out = builder.call(f, actual)
        if ret.width < 64:
            return builder.zext(out, _I64) if result == types.uint64 else builder.sext(out, _I64)
        return out

    if len(params) == 1:
        @intrinsic
        def call1(typingctx, fn, a):  # type: ignore[no-untyped-def]
            return result(fn, a), codegen

        return call1
    if len(params) == 2:
        @intrinsic
        def call2(typingctx, fn, a, b):  # type: ignore[no-untyped-def]
            return result(fn, a, b), codegen

        return call2

    @intrinsic
    def call3(typingctx, fn, a, b, c):  # type: ignore[no-untyped-def]
        return result(fn, a, b, c), codegen

    return call3


_open = _caller(_I32, [_I8P, _I32], types.int64)  # int open(const char *path, int flags, ...)
_read = _caller(_I64, [_I32, _I8P, _I64], types.int64)  # ssize_t read(int fd, void *buf, size_t n)
_close = _caller(_I32, [_I32], types.int64)  # int close(int fd)
_crc = _caller(_I32, [_I32, _I8P, _I64], types.uint64)  # uint32_t crc32_gzip_refl(uint32_t, const uint8_t *, uint64_t)
_stat = _caller(_I32, [_I8P, _I8P], types.int64)  # int stat(const char *path, struct stat *out)
_S_IFMT, _S_IFREG = 0o170000, 0o100000


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def stat_sizes(fns, names, name_offs, plain, sizes, files, nbytes, smallest, largest):  # type: ignore[no-untyped-def]
    """The sizes of the files ``read_frames`` should read, as ``os.stat`` gives them, from the first
    on: at most ``files`` of them, and no more once their sizes reach ``nbytes``.

    Parameters
    ----------
    fns : int64 array (5,)
        :data:`FUNCTIONS`, whose ``stat`` (``fns[4]``) is not 0.
    names, name_offs : arrays
        As :func:`read_frames` takes them.
    plain : bool array (n,)
        Whether a path can be passed to C (no NUL byte); the others get -1.
    sizes : int64 array (n,)
        Receives each file's size, or -1 where it is not a regular file of ``smallest`` to
        ``largest`` bytes, or ``stat`` fails.

    Returns
    -------
    int
        How many files got a size (``read_frames`` reads those).
    """
    out = np.zeros(_STAT_BYTES, dtype=np.uint8)
    total = 0
    j = 0
    while j < name_offs.shape[0] and j < files and total < nbytes:
        size = np.int64(-1)
        if plain[j] and _stat(fns[4], _address(names, name_offs[j]), _address(out, 0)) == 0:
            mode = np.int64(load_le32(out, _ST_MODE)) & 0xFFFFFFFF
            got = load_le64(out, _ST_SIZE)
            if (mode & _S_IFMT) == _S_IFREG and smallest <= got and got <= largest:
                size = got
        sizes[j] = size
        if size > 0:
            total += size
        j += 1
    return j


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def read_frames(fns, names, name_offs, sizes, buf, at, caps, out):  # type: ignore[no-untyped-def]
    """Read files one after another into ``buf`` from ``at`` on, each whole, and check their frames.

    Parameters
    ----------
    fns : int64 array (5,)
        :data:`FUNCTIONS`.
    names : uint8 array
        The paths, encoded with ``os.fsencode``, each followed by a NUL byte: path ``i`` starts at
        ``name_offs[i]``.
    name_offs : int64 array (n,)
    sizes : int64 array (n,)
        Each file's size (``os.stat``); -1: do not read it.
    buf : uint8 array
    at : int
    caps : int64 array (2, 2)
        The longest payload allowed for versions 3 and 4 (rows), without and with compression
        (columns); -1 where none is.
    out : int64 array (n, 5)
        Per file: where it starts in ``buf``, its length (-1: not taken), version, flags, and
        where its header ends (its payload length field starts).

    Returns
    -------
    int
        Where the next file would start in ``buf``.

    Notes
    -----
    A file is taken when it is read whole (exactly ``sizes[i]`` bytes, one read) into the room
    left, and its frame passes: the magic bytes, version 3 or 4, flags 0 or 1, a header length
    of at most 1 MiB, the payload within its cap and the file's size, and the CRC-32.
    """
    pos = at
    for i in range(name_offs.shape[0]):
        out[i, 1] = -1
        size = sizes[i]
        if size < 28 or pos + size + 1 > buf.shape[0]:
            continue
        fd = _open(fns[0], _address(names, name_offs[i]), np.int64(_OPEN_FLAGS))
        if fd < 0:
            continue
        got = _read(fns[1], fd, _address(buf, pos), size + 1)
        _close(fns[2], fd)
        if got != size:
            continue
        if load_le64(buf, pos) != _MAGIC64:
            continue
        head = np.int64(load_le32(buf, pos + 8)) & 0xFFFFFFFF
        version, flags = head & 0xFFFF, head >> 16
        hlen = np.int64(load_le32(buf, pos + 12)) & 0xFFFFFFFF
        if not (3 <= version <= 4 and flags <= 1) or hlen > (1 << 20) or size < 16 + hlen + 12:
            continue
        cap = caps[version - 3, flags]
        off = 16 + hlen
        plen = load_le64(buf, pos + off)
        if cap < 0 or plen < 0 or plen > cap or size != off + 8 + plen + 4:
            continue
        end = off + 8 + plen
        want = np.int64(load_le32(buf, pos + end)) & 0xFFFFFFFF
        if np.int64(_crc(fns[3], np.int64(0), _address(buf, pos), end)) != want:
            continue
        out[i, 0], out[i, 1], out[i, 2], out[i, 3], out[i, 4] = pos, size, version, flags, off
        pos += size
    return pos
