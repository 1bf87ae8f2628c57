"""The sketch file format: encode and decode a sketch's parts, checking everything before trusting it.

Layout (all integers little-endian; specified in ``docs/sketch-format.md``)::

    offset  size  field
    0       8     magic  b"\\x89SEVSK\\r\\n"
    8       2     format version (uint16): 3 (compact bins), 4 (columnar bins), 1 (68 bytes
                  per bin), or 2 for a sketch with bootstrap replicates
    10      2     flags (uint16): bit 0 = payload is zlib-compressed; other bits must be 0
    12      4     header length H (uint32), at most 1 MiB
    16      H     header: UTF-8 JSON object (sketch kind, grid spec, bin count, counters, labels)
    16+H    8     payload length L (uint64)
    24+H    L     payload: version 1/2: k uint32 key deltas, then k*2*4 float64 values (bin,
                  class, field), version 2 appending the replicate section
                  (:mod:`streameval.sketch.io_bootstrap`); version 3: k variable-length bin
                  records (:mod:`streameval.sketch.io_compact`); version 4: each class's cells
                  in flat columns (:mod:`streameval.sketch.io_columnar`);
                  kind "multiclass" has its own payload (:mod:`streameval.sketch.io_multiclass`)
    24+H+L  4     CRC-32 of bytes [0, 24+H+L)

Decoding checks, in order: the magic, version and flags (from the first 16 bytes, so a file that is
not a sketch fails at once whatever its size), the declared lengths against the caps, the CRC, the
header's every field (type and range), the grid's size against :func:`max_grid_bins`, the payload's
declared size before inflating it (bounded), then the payload's shape and the consistency rules
between bins, counters and labels. Every failure is a :class:`~streameval.errors.SketchFormatError`
naming the field and the value. Nothing is ever unpickled or executed.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import struct
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from ..errors import InputTypeError, SketchFormatError
from ..grid import Grid
from ..kernels.binary import N_FIELDS
from .io_bootstrap import MAX_REPLICATE_BYTES
from .io_checks import MAX_TOTAL_WEIGHT, check_cells, check_consistency, check_keys
from .io_checks import fail as _fail
from .io_columnar import decode_columnar, max_columnar_bytes
from .io_compact import decode_compact, max_compact_bytes
from .io_fold import check_room, fold_checked
from .io_header import (
    DEFAULT_MAX_GRID_BINS,
    FLOAT_COUNTERS,
    INT_COUNTERS,
    MAX_COUNT,
    MAX_GRID_BINS_ENV,
    MAX_LABEL_CHARS,
    WEIGHT_SQ_COUNTERS,
    _cached_grid,
    _counters,
    _is_int,
    _meta,
    _parse_header,
    _weight_sq,
    check_grid_size,
    max_grid_bins,
)
from .io_inflate import inflate_v1

try:  # ISA-L's CRC-32: zlib's polynomial and values, ~4x faster (a 75 KB shard: 7 us against 30)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - isal is a dependency where it has wheels
    from zlib import crc32 as _crc32

MAGIC = b"\x89SEVSK\r\n"
FORMAT_VERSION = 3
"""The version this streameval writes by default: binary sketches are written as version 3 (compact
bins, left uncompressed up to :data:`COMPRESS_ABOVE`: loads ~10x faster than version 1), or
version 2 when they carry bootstrap replicates; ``format_version=4`` writes the columnar layout
(shards that fold into a roll-up faster), ``format_version=1`` what streameval 0.1 releases
before it read."""
BASE_VERSION = 1
COMPACT_VERSION = 3
COLUMNAR_VERSION = 4
COMPRESS_ABOVE = 1 << 20
"""Version-3 payloads longer than this (1 MiB) are zlib-compressed by default: large sketches stay
small on disk, while shards (tens of KB) load without inflating."""
SUPPORTED_VERSIONS = (1, 2, 3, 4)
FLAG_ZLIB = 1
BIN_BYTES = 4 + 2 * N_FIELDS * 8  # one key delta and 8 float64 values per stored bin
_MAX_HEADER = 1 << 20
_PREFIX = struct.Struct("<8sHHI")

__all__ = [
    "SketchParts",
    "encode",
    "decode",
    "read_sketch_file",
    "sketch_kind",
    "max_grid_bins",
    "check_grid_size",
    "MAGIC",
    "FORMAT_VERSION",
    "SUPPORTED_VERSIONS",
    "DEFAULT_MAX_GRID_BINS",
    "MAX_GRID_BINS_ENV",
    "MAX_TOTAL_WEIGHT",
    "MAX_COUNT",
    "MAX_LABEL_CHARS",
    "INT_COUNTERS",
    "FLOAT_COUNTERS",
    "WEIGHT_SQ_COUNTERS",
]


@dataclass
class SketchParts:
    """Everything a sketch file holds, as plain values.

    Attributes
    ----------
    kind : str
        Sketch kind (``"binary"``).
    grid : Grid
        The grid the keys refer to.
    keys : ndarray of int64, shape (k,)
        Occupied bins, strictly increasing.
    values : ndarray of float64, shape (k, 2, 4)
        ``values[bin, class, field]``, fields weight, min, max, sum.
    counters : dict
        The exact running counters (``docs/sketch-format.md`` §3.2); after :func:`decode` every
        known counter is present with its documented type.
    meta : dict
        Labels and writer name.
    replicates : Replicates, optional
        Bootstrap replicates (format version 2).
    class_totals : tuple of float, optional
        ``(negative weight, positive weight)`` of the bins, when the decoder computed them.
    """

    kind: str
    grid: Grid
    keys: np.ndarray  # int64, ascending
    values: np.ndarray  # float64, (k, 2, 4)
    counters: dict[str, Any]
    meta: dict[str, Any]
    replicates: Any = None
    class_totals: tuple[float, float] | None = None
    folded: bool = False
    """The bins were folded into a state while decoding (``decode(fold_into=...)``): keys and
    values are empty."""


_NO_KEYS = np.empty(0, dtype=np.int64)
_NO_VALUES = np.empty((0, 2, N_FIELDS), dtype=np.float64)
_NO_KEYS.flags.writeable = _NO_VALUES.flags.writeable = False


def _max_payload(k: int, flags: int, extra: int = 0) -> int:
    """Largest stored payload for ``k`` bins (and ``extra`` raw bytes after them): exact when raw,
    zlib's worst-case expansion when not."""
    raw = k * BIN_BYTES + extra
    return raw + (raw >> 10) + 64 if flags & FLAG_ZLIB else raw


# -- encode --------------------------------------------------------------------------------------


def encode(parts: SketchParts, compress: bool | None = None, format_version: int | None = None) -> bytes:
    """Serialize ``parts`` to bytes.

    Parameters
    ----------
    parts : SketchParts
    compress : bool, optional
        zlib-compress the payload (flag bit 0). Default: yes for versions 1 and 2; for versions 3
        and 4 only a payload over :data:`COMPRESS_ABOVE` (1 MiB): small sketches load faster raw.
    format_version : {3, 4, 1}, optional
        Default 3, or 2 when ``parts`` carries bootstrap replicates (the only version that holds
        them). 4 writes the columnar layout (folds into a running merge ~2.5x faster than 3; up to
        ~1.5x larger). 1 writes the original layout, for streameval releases that read only
        versions 1 and 2.

    Returns
    -------
    bytes

    Raises
    ------
    SketchFormatError
        If a counter is not finite (it could not be read back).
    ValueError
        If ``format_version`` is not 1, 3 or 4, or cannot hold the sketch's replicates.
    """
    for name in FLOAT_COUNTERS:
        value = parts.counters.get(name, 0.0)
        if not math.isfinite(value):
            raise SketchFormatError(
                f"cannot encode the sketch: counter {name!r} is {value!r} (weights too large?); "
                "rescale the sample weights"
            )
    with np.errstate(over="ignore"):
        total = float(np.sum(parts.values[:, :, 0]))
    if not total <= MAX_TOTAL_WEIGHT:
        raise SketchFormatError(
            f"cannot encode the sketch: its total weight {total!r} exceeds {MAX_TOTAL_WEIGHT:g}, "
            "which readers refuse; rescale the sample weights (only their ratios matter)"
        )
    k = int(parts.keys.shape[0])
    header = {
        "sketch": parts.kind,
        "grid": parts.grid.spec(),
        "n_bins": k,
        "counters": {k: v for k, v in parts.counters.items() if k not in WEIGHT_SQ_COUNTERS},
        "meta": parts.meta,
    }
    if all(name in parts.counters for name in WEIGHT_SQ_COUNTERS):
        header["weight_sq"] = [parts.counters[name] for name in WEIGHT_SQ_COUNTERS]
    if format_version is not None and (isinstance(format_version, bool) or not isinstance(format_version, (int, np.integer))):
        raise ValueError(f"format_version must be an integer (3, 4 or 1), got {format_version!r}")
    if format_version not in (None, BASE_VERSION, COMPACT_VERSION, COLUMNAR_VERSION):
        raise ValueError(
            f"format_version must be {COMPACT_VERSION}, {COLUMNAR_VERSION} or {BASE_VERSION}, got {format_version!r}"
        )
    version, extra = int(format_version or COMPACT_VERSION), b""
    if parts.replicates is not None:
        from .io_bootstrap import encode_replicates

        if format_version is not None:
            raise ValueError("a sketch with bootstrap replicates is written as format version 2 only; drop format_version")
        version = 2
        header["bootstrap"], extra = encode_replicates(parts.replicates)
    hbytes = json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    if version == COMPACT_VERSION:
        from .io_compact import encode_compact

        payload = encode_compact(parts.keys, parts.values)
    elif version == COLUMNAR_VERSION:
        from .io_columnar import encode_columnar

        payload = encode_columnar(parts.keys, parts.values)
    else:
        deltas = np.diff(parts.keys, prepend=np.int64(0)).astype("<u4")
        payload = deltas.tobytes() + np.ascontiguousarray(parts.values, dtype="<f8").tobytes() + extra
    flags = 0
    raw_default = version in (COMPACT_VERSION, COLUMNAR_VERSION)
    if compress if compress is not None else (not raw_default or len(payload) > COMPRESS_ABOVE):
        payload = zlib.compress(payload, 6)
        flags |= FLAG_ZLIB
    body = _PREFIX.pack(MAGIC, version, flags, len(hbytes)) + hbytes + struct.pack("<Q", len(payload)) + payload
    return body + struct.pack("<I", _crc32(body))


# -- framing -------------------------------------------------------------------------------------


def _check_prefix(prefix: bytes | memoryview, source: str | None) -> tuple[int, int]:
    """Check the first 16 bytes; return ``(flags, header length)`` (:func:`_version` gives the version)."""
    if len(prefix) < _PREFIX.size:
        raise _fail(f"not a streameval sketch: only {len(prefix)} bytes", source)
    magic, version, flags, hlen = _PREFIX.unpack_from(prefix, 0)
    if magic != MAGIC:
        raise _fail(f"not a streameval sketch (magic bytes {bytes(magic)!r}, expected {MAGIC!r})", source)
    if version not in SUPPORTED_VERSIONS:
        raise _fail(
            f"sketch format version {version} is not supported: this streameval reads versions "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}"
            + ("; upgrade streameval to read it" if version > max(SUPPORTED_VERSIONS) else ""),
            source,
        )
    if flags & ~FLAG_ZLIB:
        raise _fail(f"unknown flags 0x{flags:04x} in sketch header", source)
    if hlen > _MAX_HEADER:
        raise _fail(f"header length {hlen} exceeds the 1 MiB limit; the file is corrupt", source)
    return int(flags), int(hlen)


def frame(view: memoryview, source: str | None) -> tuple[int, int, int, int]:
    """Check the framing of a whole file's bytes (:func:`decode`'s first checks, in its order:
    prefix, lengths against the caps and the size, CRC): ``(version, flags, header end, payload
    end)``; the header is ``view[16:header end]``, the payload ``view[header end + 8:payload end]``.

    Raises
    ------
    SketchFormatError
        As :func:`decode`, for the framing.
    """
    flags, hlen = _check_prefix(view[: _PREFIX.size], source)
    off = _PREFIX.size + hlen
    if len(view) < off + 8 + 4:
        raise _fail(f"truncated: {len(view)} bytes, header alone needs {off + 12}", source)
    (plen,) = struct.unpack_from("<Q", view, off)
    version = _version(view)
    _check_payload_length(plen, flags, source, version)
    end = off + 8 + plen
    if len(view) != end + 4:
        raise _fail(f"truncated or padded: {len(view)} bytes, the header says {end + 4}", source)
    (crc,) = struct.unpack_from("<I", view, end)
    if _crc32(view[:end]) != crc:
        raise _fail("checksum mismatch: the file is corrupt", source)
    return version, flags, off, end


def _version(prefix: bytes | memoryview) -> int:
    return int(struct.unpack_from("<H", prefix, 8)[0])


def _check_payload_length(plen: int, flags: int, source: str | None, version: int = 1) -> None:
    """Refuse a declared payload longer than the largest grid allowed (and replicates) could need."""
    bins = max_grid_bins()
    if version in (COMPACT_VERSION, COLUMNAR_VERSION):
        raw = max_compact_bytes(bins) if version == COMPACT_VERSION else max_columnar_bytes(bins)
        cap = raw + (raw >> 10) + 64 if flags & FLAG_ZLIB else raw
    else:
        cap = _max_payload(bins, flags, MAX_REPLICATE_BYTES if version == 2 else 0)
    if plen > cap:
        raise _fail(
            f"payload length {plen:,} bytes exceeds the limit of {cap:,} (a grid of at most "
            f"{bins:,} bins; raise it with {MAX_GRID_BINS_ENV}); the file is corrupt "
            "or not trusted",
            source,
        )


def _read_upto(f: BinaryIO, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = f.read(min(n, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_sketch_file(path: str | os.PathLike[str]) -> bytes:
    """Read the bytes of a sketch file, checking the framing before reading the payload.

    The first 16 bytes are read and checked first (a file that is not a sketch, ``/dev/zero``
    included, fails at once), then the header and the declared payload length, which must be
    within the caps and, for a regular file, match the file's size; only then is the rest read.
    The file is opened once: a named pipe (or any stream) is read from that one descriptor, and a
    regular file of at most 1 MiB in one read. The returned bytes still need :func:`decode`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    bytes

    Raises
    ------
    FileNotFoundError, OSError
        If the file cannot be opened or read.
    SketchFormatError
        If the framing is wrong (not a sketch, future version, lengths beyond the caps,
        truncated, trailing bytes); the message names the file.
    """
    source = os.fspath(path)
    # Opened once: a named pipe's writer is gone after the first reader closes it, so the small
    # file path and the careful path share this descriptor (a second open waited forever).
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # as open() says it, naming the path
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), source)
        if _is_regular(st.st_mode) and 28 <= st.st_size <= _READ_SMALL:
            small = _read_small(fd, st.st_size, source)
            if small is not None:
                return small
            os.lseek(fd, 0, os.SEEK_SET)  # it changed size meanwhile: the careful path names it
        with open(fd, "rb", closefd=False) as f:
            return _read_open(f, source)
    finally:
        os.close(fd)


def _read_open(f: BinaryIO, source: str) -> bytes:
    """:func:`read_sketch_file` of the open file ``f``, at its start, beyond the one-read path."""
    try:
        st = os.fstat(f.fileno())
    except OSError:
        st = None
    if st is not None and _is_regular(st.st_mode) and 28 <= st.st_size <= _READ_WHOLE:
        data = _read_regular(f, st.st_size, source)
        if data is not None:
            return data
        f.seek(0)
    prefix = _read_upto(f, _PREFIX.size)
    flags, hlen = _check_prefix(prefix, source)
    head = _read_upto(f, hlen + 8)
    if len(head) < hlen + 8:
        raise _fail(f"truncated: {len(prefix) + len(head)} bytes, header alone needs {_PREFIX.size + hlen + 12}", source)
    (plen,) = struct.unpack_from("<Q", head, hlen)
    _check_payload_length(plen, flags, source, _version(prefix))
    total = _PREFIX.size + hlen + 8 + plen + 4
    try:
        st = os.fstat(f.fileno())
    except OSError:
        st = None
    if st is not None and _is_regular(st.st_mode) and st.st_size != total:
        raise _fail(f"truncated or padded: {st.st_size} bytes, the header says {total}", source)
    rest = _read_upto(f, plen + 4)
    if len(rest) != plen + 4:
        got = _PREFIX.size + hlen + 8 + len(rest)
        raise _fail(f"truncated or padded: {got} bytes, the header says {total}", source)
    if f.read(1):
        raise _fail(f"truncated or padded: more than the {total} bytes the header says", source)
    return prefix + head + rest


_READ_WHOLE = 64 << 20  # regular files up to this size are read in two calls
_READ_SMALL = 1 << 20  # regular files up to this size are read in one call, then checked


def _read_small(fd: int, size: int, source: str) -> bytes | None:
    """The regular file ``fd`` of ``size`` bytes (at most 1 MiB) in one read (a shard: 3-4x faster
    than a buffered file), its framing checked (:func:`_framing_fits`); None when it
    changed size meanwhile or its header is cut short (the caller takes the careful path, which
    names any problem)."""
    data = os.read(fd, size + 1)
    if len(data) != size or not _framing_fits(data, size, source):
        return None
    return data


def _framing_fits(head: bytes, size: int, source: str) -> bool:
    """Check the framing in ``head`` (a regular file's first bytes) against the caps and the
    file's ``size``; False when ``head`` ends before the payload length (the careful path
    names the problem).

    Raises
    ------
    SketchFormatError
        Not a sketch, a future version, a length beyond the caps, or another size than the
        header says.
    """
    flags, hlen = _check_prefix(head[: _PREFIX.size], source)
    if len(head) < _PREFIX.size + hlen + 8:
        return False
    (plen,) = struct.unpack_from("<Q", head, _PREFIX.size + hlen)
    _check_payload_length(plen, flags, source, _version(head))
    total = _PREFIX.size + hlen + 8 + plen + 4
    if total != size:
        raise _fail(f"truncated or padded: {size} bytes, the header says {total}", source)
    return True


def _read_regular(f: BinaryIO, size: int, source: str) -> bytes | None:
    """A regular file of ``size`` bytes in two reads: its first 64 KiB, checked (framing, lengths
    against the caps and the file's size), then the rest. None when the file changed size
    meanwhile (the caller takes the careful path)."""
    head = f.read(min(size, 1 << 16))
    if not _framing_fits(head, size, source):
        return None  # a header beyond 64 KiB, or a short file
    rest = f.read(size - len(head)) if size > len(head) else b""
    if len(head) + len(rest) != size or f.read(1):
        return None
    return head + rest if rest else head


def sketch_kind(data: bytes | bytearray | memoryview, source: str | None = None) -> Any:
    """The header's ``sketch`` field (``"binary"``, ``"multiclass"``), after the framing checks only.

    Raises
    ------
    SketchFormatError
        If the first 16 bytes or the header are unreadable; the rest is checked by :func:`decode`.
    """
    view = _byte_view(data)
    _, hlen = _check_prefix(view[: _PREFIX.size], source)
    if len(view) < _PREFIX.size + hlen:
        raise _fail(f"truncated: {len(view)} bytes, header alone needs {_PREFIX.size + hlen + 12}", source)
    return _parse_header(view[_PREFIX.size:_PREFIX.size + hlen], source).get("sketch")


def _byte_view(data: bytes | bytearray | memoryview) -> memoryview:
    """``data`` as a flat view of bytes (a strided memoryview, which cannot be cast, is copied)."""
    if not isinstance(data, memoryview):
        return memoryview(data)
    return data.cast("B") if data.c_contiguous else memoryview(data.tobytes())


def _is_regular(mode: int) -> bool:
    return stat.S_ISREG(mode)


# -- decode --------------------------------------------------------------------------------------


def decode(
    data: bytes | bytearray | memoryview, source: str | None = None, fold_into: tuple[Grid, np.ndarray] | None = None
) -> SketchParts | dict[str, Any]:
    """Parse and validate sketch bytes.

    Parameters
    ----------
    data : bytes, bytearray or memoryview
    source : str, optional
        File name for error messages.
    fold_into : (Grid, ndarray), optional
        A grid and a dense state on it (float64 (n_bins, 2, 4), as
        :func:`streameval.kernels.binary.empty_state`): a version-3 or version-4 binary sketch on that grid has
        its bins folded into the state as they are decoded (the returned parts then hold no
        bins, ``folded`` True); any other sketch is decoded as without it. On an error the state
        may hold part of the bins.

    Returns
    -------
    SketchParts or dict
        Validated parts: every rule of ``docs/sketch-format.md`` §6 holds. For a file of kind
        ``"multiclass"``, the dict :meth:`MulticlassSketch._from_parts` takes (§9).

    Raises
    ------
    SketchFormatError
        If the bytes are not a sketch, come from a newer format version, are truncated or
        corrupted, exceed a cap, or describe an impossible sketch. The message names the field
        and the value.
    InputTypeError
        If ``data`` is not bytes-like.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputTypeError(f"sketch data must be bytes, got {type(data).__name__}")
    view = _byte_view(data)
    version, flags, off, end = frame(view, source)
    plen = end - off - 8
    header = _parse_header(view[_PREFIX.size:off], source)
    for key in ("sketch", "grid", "n_bins", "counters"):
        if key not in header:
            raise _fail(f"bad header field: {key!r} is missing", source)
    kind = header["sketch"]
    if kind == "multiclass" and version in (COMPACT_VERSION, COLUMNAR_VERSION):
        raise _fail(f"format version {version} holds binary sketches only; this file says 'multiclass'", source)
    if kind == "multiclass":  # its own layout: docs/sketch-format.md §9
        from .io_multiclass import decode_multiclass

        return decode_multiclass(header, view[off + 8:end], flags, source, version)  # 2: with replicates
    if kind != "binary":
        raise _fail(f"unknown sketch kind {kind!r} (this streameval reads 'binary' and 'multiclass')", source)
    grid = _cached_grid(header["grid"], source)
    k = header["n_bins"]
    if not _is_int(k) or not 0 <= k <= grid.n_bins:
        raise _fail(f"bad header field n_bins={k!r}: need an integer in [0, {grid.n_bins}]", source)
    counters = _counters(header["counters"], source)
    meta = _meta(header.get("meta", {}), source)
    boot = None
    if "bootstrap" in header:
        from .io_bootstrap import check_bootstrap_header

        if version != 2:
            raise _fail(f"header field 'bootstrap' needs format version 2, the file says {version}", source)
        boot = check_bootstrap_header(header["bootstrap"], k, source)
    if "weight_sq" in header:
        _weight_sq(header["weight_sq"], counters, source)
    extra = 0 if boot is None else boot.nbytes
    stored = view[off + 8:end]
    if version in (COMPACT_VERSION, COLUMNAR_VERSION):
        columnar = version == COLUMNAR_VERSION
        check_room(plen, columnar, bool(flags & FLAG_ZLIB), k, source)
        if fold_into is not None and fold_into[0] == grid:
            totals = fold_checked(stored, columnar, bool(flags & FLAG_ZLIB), k, grid, counters, source, fold_into[1])
            return SketchParts(kind, grid, _NO_KEYS, _NO_VALUES, counters, meta, None, totals, True)
        unpack = decode_columnar if columnar else decode_compact
        keys, values, summary = unpack(stored, k, grid, bool(flags & FLAG_ZLIB), source)
        check_consistency(values, counters, source, summary)
        return SketchParts(kind, grid, keys, values, counters, meta, None, (summary.t0, summary.t1))

    need = k * BIN_BYTES + extra
    if plen > _max_payload(k, flags, extra):
        raise _fail(f"payload length {plen} is more than {k} bins can take ({_max_payload(k, flags, extra)} bytes)", source)
    rest: bytes | memoryview = b""
    if flags & FLAG_ZLIB:
        keys, values, rest = inflate_v1(stored, k, grid, source, extra)
    else:
        if len(stored) != need:
            raise _fail(f"payload holds {len(stored)} bytes, {k} bins need {need}", source)
        rest = stored[k * BIN_BYTES:]
        keys = np.cumsum(np.frombuffer(stored, dtype="<u4", count=k).astype(np.int64))
        values = np.frombuffer(stored, dtype="<f8", offset=4 * k, count=k * 2 * N_FIELDS).reshape(k, 2, N_FIELDS).astype(np.float64)
        check_keys(grid, keys, source)
        check_cells(grid, keys, values, source)
    check_consistency(values, counters, source)
    replicates = None
    if boot is not None:
        from .io_bootstrap import decode_replicates

        replicates = decode_replicates(boot, rest, grid, keys, values, source, bool(counters["weighted"]))
    return SketchParts(kind, grid, keys, values, counters, meta, replicates)
