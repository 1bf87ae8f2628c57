"""Atomic, durable file writes: readers see the old file or the new one, never a mix.

Every file streameval writes (sketches, reports) goes through :func:`write_bytes_atomic`:

1. The data goes to a new, unique temporary file in the target's directory (same filesystem, so
   the final rename is atomic). On Linux it is an unnamed ``O_TMPFILE`` inode, which vanishes
   if the process dies before it is linked; elsewhere ``tempfile.mkstemp`` (``O_CREAT | O_EXCL
   | O_NOFOLLOW``, 0600, an unpredictable name). Either way the temporary is created
   exclusively: an existing name or a planted symlink is never opened or followed.
2. The file gets the existing target's permission bits (or, for a new file, those ``open()``
   would give under the umask), is written in full and ``fsync``-ed.
3. It is renamed over the target (``os.replace``; if the target is a symlink, the link itself is
   replaced, its destination is not written), and the directory is ``fsync``-ed so the rename
   survives a power loss.
4. On any failure (including ``KeyboardInterrupt``) the temporary is removed and the error names
   the target, not the temporary.

Concurrent writers to one path (threads or processes) each use their own temporary; the last
rename wins and the file is always one writer's complete data. A process killed with SIGKILL
can leave a named temporary only in the few microseconds between linking it (at a name
``.<target>.<host>.<pid>.<random>.tmp``) and renaming it; the next write to the same target
removes such leftovers of dead processes on the same host.

Owner, group and extended attributes of a replaced file are not carried over.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import socket
import stat
import tempfile
from typing import Callable

__all__ = ["write_bytes_atomic", "write_text_atomic"]

_TMP_SUFFIX = ".tmp"
_BASE_CHARS = 96  # of the target's name kept in a temporary's name (NAME_MAX is 255 bytes)


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically and durably (see :func:`write_bytes_atomic`).

    Parameters
    ----------
    path : str or path-like
        The file to create or replace.
    text : str
        Written as is (no newline translation).
    encoding : str, default "utf-8"

    Raises
    ------
    OSError
        If the directory is missing or not writable, the disk is full, ...; the message names
        ``path``. The target is then unchanged and no temporary file is left.
    """
    write_bytes_atomic(path, text.encode(encoding))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """Replace ``path``'s content with ``data`` atomically and durably.

    Parameters
    ----------
    path : str or path-like
        The file to create or replace. Its directory must exist.
    data : bytes-like

    Raises
    ------
    OSError
        If the directory is missing or not writable, the disk is full, ``path`` is a directory,
        ...; the message names ``path``. The target is then unchanged and no temporary file is
        left.

    Notes
    -----
    See the module docstring for the steps: an exclusive temporary in the same directory,
    ``fsync`` of the file, ``os.replace``, ``fsync`` of the directory; permission bits kept.

    Examples
    --------
    >>> import os, tempfile
    >>> from streameval.atomic import write_bytes_atomic
    >>> d = tempfile.mkdtemp()
    >>> write_bytes_atomic(os.path.join(d, "a.bin"), b"abc")
    >>> open(os.path.join(d, "a.bin"), "rb").read()
    b'abc'
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        _write(target, directory, memoryview(data).cast("B"))
    except OSError as exc:
        if exc.filename == target:
            raise
        raise type(exc)(exc.errno, exc.strerror or str(exc), target) from None


def _write(target: str, directory: str, data: memoryview) -> None:
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "is a directory", target)
    _remove_stale(directory, os.path.basename(target))
    try:
        _write_via(target, directory, data, mode, unnamed=_UNNAMED_OK[0])
    except _NoLink:
        _UNNAMED_OK[0] = False  # this system cannot link an O_TMPFILE inode: named temporaries
        _write_via(target, directory, data, mode, unnamed=False)
    _fsync_directory(directory)


class _NoLink(Exception):
    """An O_TMPFILE inode could not be given a name (no /proc, old kernel, filesystem)."""


_UNNAMED_OK = [True]


def _write_via(target: str, directory: str, data: memoryview, mode: int | None, unnamed: bool) -> None:
    fd, name, link = _open_temporary(directory, os.path.basename(target), mode, unnamed)
    tmp: str | None = name
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        elif name is not None:  # mkstemp made it 0600; give it what open() would
            os.fchmod(fd, 0o666 & ~_umask())
        _write_all(fd, data)
        os.fsync(fd)
        if link is not None:
            if mode is None and _linkat_fd(fd, target) == 0:
                return  # a new file: linked straight into place, no temporary name at all
            tmp = link()
        assert tmp is not None
        os.replace(tmp, target)  # right after the link: the window a SIGKILL could hit is tiny
        tmp = None
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        n = os.write(fd, data[: 1 << 26])
        data = data[n:]


_HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _tmp_name(base: str) -> str:
    return f".{base[:_BASE_CHARS]}.{_HOST}.{os.getpid()}.{secrets.token_hex(8)}{_TMP_SUFFIX}"


def _open_temporary(
    directory: str, base: str, mode: int | None, unnamed: bool
) -> tuple[int, str | None, Callable[[], str] | None]:
    """``(fd, name, link)``: an unnamed O_TMPFILE (name None, ``link()`` gives it a unique name),
    or a named mkstemp file (``link`` None)."""
    o_tmpfile = getattr(os, "O_TMPFILE", 0)
    if unnamed and o_tmpfile and os.path.isdir("/proc/self/fd"):
        try:
            fd = os.open(directory, o_tmpfile | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o666 if mode is None else 0o600)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise
        else:

            def link() -> str:
                while True:
                    name = os.path.join(directory, _tmp_name(base))
                    err = _linkat_fd(fd, name)
                    if err == 0:
                        return name
                    if err != errno.EEXIST:
                        raise _NoLink(err)

            return fd, None, link
    prefix = _tmp_name(base)[: -len(_TMP_SUFFIX) - 16]
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=_TMP_SUFFIX, dir=directory)
    return fd, name, None


def _linkat_fd(fd: int, name: str) -> int:
    """``linkat(AT_FDCWD, "/proc/self/fd/<fd>", AT_FDCWD, name, AT_SYMLINK_FOLLOW)``; 0 or errno.

    ``os.link`` cannot do it: it calls ``link()``, which links the /proc symlink itself (EXDEV).
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        linkat = libc.linkat
    except (OSError, AttributeError):  # pragma: no cover - not glibc/musl
        return errno.ENOSYS
    at_fdcwd, at_symlink_follow = -100, 0x400
    if linkat(at_fdcwd, f"/proc/self/fd/{fd}".encode(), at_fdcwd, os.fsencode(name), at_symlink_follow) == 0:
        return 0
    return ctypes.get_errno() or errno.EIO


def _fsync_directory(directory: str) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:  # pragma: no cover - platforms without directory handles (Windows)
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # pragma: no cover - filesystems that cannot sync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _umask() -> int:
    """The process umask, read without changing it where possible (Linux /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)  # pragma: no cover - not Linux
    os.umask(current)  # pragma: no cover
    return current  # pragma: no cover


def _remove_stale(directory: str, base: str) -> None:
    """Remove temporaries of ``base`` left by dead processes of this host (a SIGKILL mid-save)."""
    pattern = re.compile(
        re.escape(f".{base[:_BASE_CHARS]}.{_HOST}.") + r"(\d+)\.[0-9a-z_]+" + re.escape(_TMP_SUFFIX)
    )
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True
