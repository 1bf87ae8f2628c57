"""Prediction logs in object stores and on HTTP servers, read through pyarrow filesystems.

``s3://``, ``gs://`` (``gcs://``), ``abfs://`` (``abfss://``), ``hdfs://`` and ``viewfs://`` URIs
go to pyarrow's own filesystems (:func:`pyarrow.fs.FileSystem.from_uri`), which take their
credentials and endpoints the usual way (``AWS_*`` environment variables or profiles,
``AWS_ENDPOINT_URL`` or ``?endpoint_override=`` for S3-compatible servers such as MinIO, Google
application credentials, ...). ``http://`` and ``https://`` URLs go through fsspec's HTTP
filesystem wrapped for pyarrow (``pip install fsspec aiohttp``). Access is read-only: nothing is
ever written to a remote location.

A URI may name a file, a "directory" (every file below it, recursively, except hidden ones and
markers such as ``_SUCCESS``) or a glob (``*`` within a path segment, ``**`` across segments,
``?``, ``[...]``); HTTP URLs must name files, as HTTP has no listing.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .base import SourceError

__all__ = ["REMOTE_SCHEMES", "RemoteFiles", "is_remote", "expand_remote", "remote_file_id"]

REMOTE_SCHEMES = frozenset({"s3", "gs", "gcs", "abfs", "abfss", "hdfs", "viewfs", "http", "https"})
_HTTP = frozenset({"http", "https"})
_GLOB = re.compile(r"[*?\[]")


def is_remote(path: str) -> bool:
    """True if ``path`` is a URI of a remote filesystem streameval reads (see :data:`REMOTE_SCHEMES`).

    Parameters
    ----------
    path : str
        A path or URI as given on the command line.

    Returns
    -------
    bool
        False for local paths, including Windows drive letters (``C:\\logs``).
    """
    scheme = urlsplit(str(path)).scheme.lower()
    return len(scheme) > 1 and scheme in REMOTE_SCHEMES


@dataclass(frozen=True)
class RemoteFiles:
    """Files found under remote URIs, all on one filesystem.

    Attributes
    ----------
    filesystem : pyarrow.fs.FileSystem
        The filesystem the paths are relative to.
    paths : list of str
        Paths within ``filesystem`` (for pyarrow's dataset and readers), sorted.
    uris : list of str
        The same files as full URIs (for messages and provenance).
    sizes : list of int
        File sizes in bytes.
    mtimes : list of float or None
        Modification times (seconds since the epoch) where the store reports them.
    """

    filesystem: Any
    paths: list[str]
    uris: list[str]
    sizes: list[int]
    mtimes: list[float | None]


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a path glob: ``**`` any depth, ``*`` and ``?`` within one segment."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _filesystem(uri: str) -> tuple[Any, str, str]:
    """``(filesystem, path within it, prefix to turn a path back into a URI)``."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in _HTTP:
        try:
            import fsspec
            from pyarrow.fs import FSSpecHandler, PyFileSystem
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise SourceError(f"{uri}: reading over HTTP needs fsspec and aiohttp; pip install fsspec aiohttp") from exc
        return PyFileSystem(FSSpecHandler(fsspec.filesystem(scheme))), uri, ""
    from pyarrow import fs as pafs

    try:
        filesystem, path = pafs.FileSystem.from_uri(uri)
    except (OSError, ValueError, TypeError) as exc:
        raise SourceError(f"{uri}: cannot open this location: {exc}") from exc
    return filesystem, path, f"{scheme}://"


def _error(uri: str, exc: Exception) -> SourceError:
    hint = ""
    text = str(exc)
    if "AWS" in text or "Access Denied" in text or "credentials" in text.lower() or "403" in text:
        hint = " (check the credentials: AWS_ACCESS_KEY_ID / AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS, ...)"
    return SourceError(f"{uri}: {text.strip() or type(exc).__name__}{hint}")


def _listed(filesystem: Any, base: str) -> list[Any]:
    from pyarrow import fs as pafs

    infos = filesystem.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    keep = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        name = posixpath.basename(info.path)
        if name.startswith((".", "_")):  # hidden files and markers such as _SUCCESS
            continue
        keep.append(info)
    return keep


def expand_remote(paths: Sequence[str]) -> RemoteFiles:
    """Files named by remote URIs (files, "directories", globs), on one filesystem.

    Parameters
    ----------
    paths : sequence of str
        URIs, each with a scheme in :data:`REMOTE_SCHEMES`, all of the same scheme and host
        (bucket, container, server).

    Returns
    -------
    RemoteFiles
        The files, sorted within each argument, each file once.

    Raises
    ------
    SourceError
        A URI that matches nothing, a glob or a directory on HTTP, URIs on different
        filesystems, or the store refusing access (the message names the URI).
    """
    from pyarrow import fs as pafs

    if not paths:
        raise SourceError("no input files given")
    roots = {(urlsplit(p).scheme.lower(), urlsplit(p).netloc) for p in paths}
    if len(roots) > 1:
        raise SourceError(
            "remote inputs must share one filesystem (same scheme and bucket or host); got "
            + ", ".join(f"{s}://{n}" for s, n in sorted(roots))
        )
    filesystem = None
    seen: set[str] = set()
    found: list[tuple[str, str, int, float | None]] = []
    for uri in paths:
        glob_at = _GLOB.search(uri)
        scheme = urlsplit(uri).scheme.lower()
        if glob_at and scheme in _HTTP:
            raise SourceError(f"{uri}: HTTP has no file listing; name each file (no globs)")
        head = uri[: glob_at.start()] if glob_at else uri
        fs_, path, prefix = _filesystem(head.rsplit("/", 1)[0] + "/" if glob_at else uri)
        filesystem = filesystem or fs_
        try:
            if glob_at:
                pattern = path.rstrip("/") + "/" + uri[len(head.rsplit("/", 1)[0]) + 1 :]
                regex = _glob_regex(pattern)
                infos = [i for i in _listed(fs_, path.rstrip("/")) if regex.match(i.path)]
            else:
                info = fs_.get_file_info(path)
                if info.type == pafs.FileType.File:
                    infos = [info]
                elif info.type == pafs.FileType.Directory and scheme not in _HTTP:
                    infos = _listed(fs_, path.rstrip("/"))
                else:
                    infos = []
        except OSError as exc:
            raise _error(uri, exc) from exc
        if not infos:
            raise SourceError(f"{uri}: no such file, or no files match")
        for info in sorted(infos, key=lambda i: i.path):
            if info.path in seen:
                continue
            seen.add(info.path)
            mtime = info.mtime.timestamp() if info.mtime is not None else None
            size = int(info.size) if info.size is not None else -1
            found.append((info.path, prefix + info.path if prefix else info.path, size, mtime))
    return RemoteFiles(
        filesystem,
        [f[0] for f in found],
        [f[1] for f in found],
        [f[2] for f in found],
        [f[3] for f in found],
    )


def remote_file_id(uri: str, size: int, mtime: float | None) -> str:
    """A file identity for provenance without reading the object: a digest of its URI, size and
    modification time (a rewritten object gets a new identity; an identical copy elsewhere does
    not share it, unlike a local file's content digest).

    Parameters
    ----------
    uri : str
        The object's full URI.
    size : int
        Its size in bytes.
    mtime : float or None
        Its modification time, if the store reports one.

    Returns
    -------
    str
        ``"uri:"`` followed by 32 hex digits.
    """
    h = hashlib.blake2b(f"{uri}\0{size}\0{mtime!r}".encode(), digest_size=16)
    return "uri:" + h.hexdigest()
