"""Where the compiled kernels are cached, so a second process on a machine pays no compile.

Numba caches a compiled function next to its source (``__pycache__``) or, when that folder is
read-only, in a user-wide cache folder under the home directory. Containers and Spark or Dask
executors often have neither writable, and Numba then refuses to define a cached function at
all ("cannot cache function ...: no locator available"). :func:`configure` runs before any
kernel module is imported and picks, in order:

1. ``NUMBA_CACHE_DIR`` when the user set it (Numba's own variable, honoured as is);
2. the package's own ``__pycache__`` folders, when writable (Numba's default);
3. ``$XDG_CACHE_HOME/streameval/numba`` or ``~/.cache/streameval/numba``;
4. ``<temp dir>/streameval-numba-<uid>``;
5. no cache at all: kernels compile in each process (a few seconds), but evaluation runs.

:data:`ENABLED` is the ``cache=`` flag the kernel modules pass to ``numba.njit``, and
:data:`LOCATION` says where the cache went (``streameval --version`` could show it; tests do).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["configure", "compile_timer", "ENABLED", "LOCATION"]


def _writable_dir(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    if not os.access(path, os.W_OK | os.X_OK):
        return False
    try:  # access() can be wrong on some mounts: really create a file
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def _package_cache_writable() -> bool:
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(here, "__pycache__")
    return _writable_dir(folder) if os.path.isdir(folder) or os.access(here, os.W_OK) else False


def configure() -> tuple[bool, str | None]:
    """Choose the kernel cache location (see the module docstring) and tell Numba.

    Returns
    -------
    (enabled, location) : tuple of (bool, str or None)
        Whether kernels are cached, and the folder (``"__pycache__"`` for Numba's default next to
        the sources; None when caching is off).
    """
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return True, user
    if _package_cache_writable():
        return True, "__pycache__"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    for folder in (os.path.join(base, "streameval", "numba"), os.path.join(tempfile.gettempdir(), f"streameval-numba-{uid}")):
        if _writable_dir(folder):
            os.environ["NUMBA_CACHE_DIR"] = folder
            import numba

            numba.config.CACHE_DIR = folder  # type: ignore[attr-defined]  # numba may have read the variable already
            return True, folder
    return False, None


ENABLED, LOCATION = configure()


@contextmanager
def compile_timer() -> Iterator[list[float]]:
    """Measure the seconds spent compiling kernels inside the ``with`` block.

    Yields a one-element list, filled on exit with the wall time of Numba's top-level compile
    events (nested compiles of inlined helpers are counted once); 0.0 when every kernel came from
    the cache or was already compiled in this process. Reports use it to state throughput
    without the one-off compilation of a first run on a machine.
    """
    from numba.core import event

    out = [0.0]
    with event.install_recorder("numba:compile") as recorder:
        yield out
    depth, start, total = 0, 0.0, 0.0
    for ts, e in recorder.buffer:
        if e.is_start:
            start = ts if depth == 0 else start
            depth += 1
        else:
            depth -= 1
            total += ts - start if depth == 0 else 0.0
    out[0] = total
