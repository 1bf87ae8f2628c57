"""Store: an incremental, crash-safe monitoring store in one embedded DuckDB file.

Five tables (schema version 3, documented in ``docs/monitoring-store.md``; plain SQL types, so
the same schema can move to a server database):

- ``meta(key, value)``: the schema version and the job that fills the store (score, label,
  weight, slice columns, time column, window, time zone, grid), fixed by the first ingest;
- ``files(path, file_id, size, mtime_ns, digest, rows, ingested_at, labels, weighted)``: one row
  per ingested file;
- ``groups(file_id, gid, window_start, slice, n_rows, ...)``: one row per (file, window, slice)
  group with its counters; ``slice`` is a JSON list of the slice values;
- ``cells(file_id, gid, bin, class, weight, min, max, score_sum)``: one row per occupied
  (group, bin, class) of the file, class 2 being rows whose label had not arrived;
- ``single_cells(file_id, gid, bin, class, score)``: the cells of one row (weight 1, min = max =
  sum = the score) apart, since almost every cell of a finely sliced log is one.

Each file's contribution is written in one transaction: an unchanged file (same size and
modification time, or same SHA-256; a modification time within 2 s of when it was recorded is
not trusted: :data:`RACY_NS`) is skipped; a changed one (labels arrived) has its rows
replaced, never added to; ``kill -9`` at any moment leaves the store as before or after that
file, because DuckDB rolls back an unfinished transaction when the file is next opened. A second
process that opens the store while one writes gets :class:`StoreBusyError`. Reading scans the
tables in columns and merges by key in NumPy (:mod:`.layout`). Stores of schema version 1
(a BLOB per group) are upgraded when opened for writing and still read when opened read-only
(:mod:`.legacy`); stores of version 2 (no ``single_cells``) are read as they are and become
version 3 when opened for writing (the table is added; their cells stay where they are).
"""

from __future__ import annotations

import datetime as _dt
import glob
import hashlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..errors import InputError, StreamevalError, UsageError
from ..grid import DEFAULT_GRID, grid_from_spec, parse_grid
from ..inputs import LabelEncoder
from ..inputs import merge_labels as _merge_labels
from ..inputs import plain_value as _plain
from ..sketch.sketchset import DEFAULT_MAX_GROUPS, SketchSet
from ..windows import parse_window, utc_micros, window_starts
from .layout import CELLS_DDL, GROUPS_DDL, SINGLE_CELLS_DDL, _pylist, insert_tables, read_sketchset, zone_named

__all__ = ["Store", "StoreBusyError", "IngestResult", "STORE_SCHEMA_VERSION"]

STORE_SCHEMA_VERSION = 3
_JOB_KEYS = ("score", "label", "weight", "by", "time", "window", "tz", "grid", "pos_label", "where")
_EXTENSIONS = (".parquet", ".pq", ".csv", ".csv.gz", ".tsv", ".tsv.gz", ".arrow", ".feather", ".ipc",
               ".ndjson", ".jsonl", ".json")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path VARCHAR PRIMARY KEY, file_id INTEGER NOT NULL, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL,
    digest VARCHAR NOT NULL, rows BIGINT NOT NULL, ingested_at TIMESTAMPTZ NOT NULL, labels VARCHAR NOT NULL,
    weighted BOOLEAN NOT NULL);
""" + GROUPS_DDL + CELLS_DDL + SINGLE_CELLS_DDL


class StoreBusyError(StreamevalError, RuntimeError):
    """Another process has the store open for writing; try again when it is done."""


@dataclass(frozen=True)
class IngestResult:
    """What ingesting one file did.

    Attributes
    ----------
    path : str
        The file (absolute path).
    action : {"added", "replaced", "unchanged"}
    rows : int
        Rows read from the file (0 when unchanged).
    groups : int
        (window, slice) groups written.
    """

    path: str
    action: str
    rows: int
    groups: int


def _digest(path: str, stop: threading.Event | None = None) -> str:
    """The file's SHA-256 as hex; ``""`` if ``stop`` is set before the end (an abandoned hash
    ends at the next MiB instead of reading a large file to its end for nothing)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            if stop is not None and stop.is_set():
                return ""
            h.update(block)
    return h.hexdigest()


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one version of a file from another: size, modification time, inode, device."""
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


_READ_ATTEMPTS = 3
"""Reads of a file that keeps changing while it is read before ingest gives up on it."""
RACY_NS = 2_000_000_000
"""A modification time this close to the clock when it is recorded (2 s: FAT's granularity, more
than any other file system's) does not prove a later file of the same size and time unchanged:
the file may be rewritten within the same tick of the file system's clock. Such a time is
recorded as -1, so the next ingest compares digests (as git does with "racily clean" entries)."""


def _trusted_mtime(st: os.stat_result, seen_ns: int) -> int:
    """The modification time to record for ``st``, taken when the clock read at least ``seen_ns``
    (``time.time_ns()`` just before the ``stat``): its own, or -1 while it is too recent to trust
    (:data:`RACY_NS`). A rewrite after the ``stat`` gets a later tick than a time recorded here."""
    return st.st_mtime_ns if seen_ns - st.st_mtime_ns >= RACY_NS else -1


def _one(result: Any) -> Any:
    """The first row of a DuckDB result, or None; the result is read to its end (DuckDB refuses
    other work on the connection while a result is unfinished)."""
    rows = result.fetchall()
    return rows[0] if rows else None


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files named by paths, directories (searched recursively) and globs, absolute, sorted, unique.

    Raises
    ------
    FileNotFoundError
        If a path matches nothing.
    """
    out: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            found = [os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.lower().endswith(_EXTENSIONS)]
        elif any(c in p for c in "*?["):
            found = [f for f in glob.glob(p, recursive=True) if os.path.isfile(f)]
        elif os.path.isfile(p):
            found = [p]
        else:
            found = []
        if not found:
            raise FileNotFoundError(2, "no such file, or no data files in it", p)
        out += [os.path.abspath(f) for f in found]
    return sorted(dict.fromkeys(out))


class Store:
    """An incremental monitoring store: per-(window, slice) sketches of every ingested file.

    Parameters
    ----------
    path : str or path-like
        The DuckDB file; created if missing (unless ``read_only``).
    read_only : bool, default False
        Open for reading only (several readers may share the file).

    Raises
    ------
    StoreBusyError
        If another process holds the store open for writing.
    FileNotFoundError
        If ``read_only`` and the file does not exist.
    InputError
        If the path is not a DuckDB file (another file, a folder); the message names it.

    Examples
    --------
    >>> with streameval.Store("monitor.duckdb") as store:                      # doctest: +SKIP
    ...     store.ingest(["logs/2026-11-20.parquet"], score="p", label="y", by=["country"],
    ...                  time="ts", window="1d")
    ...     table = store.report(by=["country"], window="1w")
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        import duckdb

        self.path = os.fspath(path)
        if read_only and not os.path.exists(self.path):
            raise FileNotFoundError(2, "no such store", self.path)
        try:
            self._con = duckdb.connect(self.path, read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreBusyError(
                    f"{self.path}: the store is busy (another process is writing to it); try again when it is done"
                ) from None
            raise InputError(f"{self.path}: not a store: DuckDB cannot open it ({exc})") from None
        self._con.execute("SET TimeZone = 'UTC'")
        version = self._meta().get("schema_version")
        if version is not None and int(version) > STORE_SCHEMA_VERSION:
            raise UsageError(f"{self.path}: store schema version {version} is newer than this streameval "
                             f"({STORE_SCHEMA_VERSION}); upgrade streameval")
        self._legacy = version is not None and int(version) == 1
        if not read_only:
            if self._legacy:  # schema 1 (a BLOB per group): move it to plain columns, in one transaction
                from .legacy import upgrade

                names, grid, windowed = self._layout()
                upgrade(self._con, self.path, names, grid, windowed, STORE_SCHEMA_VERSION)
                self._legacy = False
            self._con.execute(_SCHEMA)  # version 2 gains single_cells here (an empty table: harmless to it)
            if self._meta().get("schema_version") != str(STORE_SCHEMA_VERSION):
                self._con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(STORE_SCHEMA_VERSION)])
        self._version = STORE_SCHEMA_VERSION if not read_only or version is None else int(version)

    # -- plumbing -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the store (commits nothing: every ingest has committed already)."""
        self._con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _meta(self) -> dict[str, str]:
        try:
            return dict(self._con.execute("SELECT key, value FROM meta").fetchall())
        except Exception:  # a read-only store created by nothing yet
            return {}

    @property
    def job(self) -> dict[str, Any]:
        """The job that fills the store (score, label, weight, by, time, window, tz, grid, ...)."""
        raw = self._meta().get("job")
        return {} if raw is None else dict(json.loads(raw))

    def _layout(self) -> tuple[list[str], Any, bool]:
        """The stored key names, grid and whether there are windows (from the job)."""
        job = self.job
        windowed = job.get("window") is not None
        names = (["window"] if windowed else []) + list(job.get("by") or [])
        grid = grid_from_spec(job["grid"]) if job.get("grid") else DEFAULT_GRID
        return names, grid, windowed

    def files(self) -> list[dict[str, Any]]:
        """Ingested files: path, size, mtime_ns, digest, rows, ingested_at."""
        query = "SELECT path, size, mtime_ns, digest, rows, ingested_at FROM files ORDER BY path"
        rows: list[dict[str, Any]] = self._con.sql(query).to_arrow_table().to_pylist()
        return rows

    def _empty(self) -> bool:
        """Whether no file is in the store."""
        return bool(_one(self._con.execute("SELECT count(*) FROM files")) == (0,))

    def _resolve_job(self, given: dict[str, Any]) -> dict[str, Any]:
        stored = self.job
        if stored and self._empty():
            # no file was written under the stored job (a first ingest failed, say on a typo in a
            # column name): the options given now replace it, the ones left out are kept
            kept = {k: v for k, v in stored.items() if v is not None}
            if "grid" in kept:
                kept["grid"] = grid_from_spec(kept["grid"])
            given = {k: given[k] if given.get(k) not in (None, []) else kept.get(k, given.get(k)) for k in _JOB_KEYS}
            stored = {}
        if not stored:
            if given.get("score") is None or given.get("label") is None:
                raise UsageError("the first ingest into a store needs score= and label= (--score, --label)")
            job = {k: given.get(k) for k in _JOB_KEYS}
            job["by"] = list(job["by"] or [])
            grid = job["grid"]
            job["grid"] = (parse_grid(grid) if isinstance(grid, str) else grid or DEFAULT_GRID).spec()
            if job["window"] is not None:
                job["window"] = str(parse_window(job["window"]))
            if (job["time"] is None) != (job["window"] is None):
                raise UsageError("give both time= (--time) and window= (--window), or neither")
            return job
        for k in _JOB_KEYS:
            v = given.get(k)
            if v is None or (k == "by" and not v):
                continue
            if k == "grid":
                v = (parse_grid(v) if isinstance(v, str) else v).spec()
            if k == "window":
                v = str(parse_window(str(v)))
            if k == "by":
                v = list(v)
            if v != stored.get(k):
                raise UsageError(
                    f"{self.path}: this store was built with {k}={stored.get(k)!r}, not {v!r}; use the "
                    "store's settings (or omit the option), or start a new store"
                )
        return stored

    # -- writing ------------------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | os.PathLike[str]] | str,
        *,
        score: str | None = None,
        label: str | None = None,
        weight: str | None = None,
        by: Sequence[str] | None = None,
        time: str | None = None,
        window: str | None = None,
        tz: str | None = None,
        grid: Any = None,
        pos_label: Any = None,
        where: str | None = None,
        nan_policy: str = "raise",
        max_groups: int = DEFAULT_MAX_GROUPS,
    ) -> list[IngestResult]:
        """Ingest files, each in one transaction: new files are added, changed ones replaced.

        Parameters
        ----------
        paths : path, directory, glob or a list of them
        score, label, weight, by, time, window, tz, grid, pos_label, where
            The job (see :func:`streameval.evaluate`). The first ingest fixes it in the store;
            later ingests may omit it, and must not contradict it once a file is in the store
            (before, the options given replace the stored ones: a failed first ingest's typo is
            not kept).
        nan_policy : {"raise", "skip"}
        max_groups : int

        Returns
        -------
        list of IngestResult
            One per file, in path order.

        Raises
        ------
        UsageError
            A job that contradicts the store's.
        SourceError, InputError
            Bad data in a file (the files before it stay ingested; nothing of it is written); a
            file that changed while it was read, three times in a row; a file with the same bytes
            as another path in the store (a symlink, hard link or copy: its rows would count twice).
        """
        job = self._resolve_job({"score": score, "label": label, "weight": weight, "by": list(by or []),
                                 "time": time, "window": window, "tz": tz, "grid": grid, "pos_label": pos_label,
                                 "where": where})
        if self._meta().get("job") is None or self._empty():
            self._con.execute("INSERT OR REPLACE INTO meta VALUES ('job', ?)", [json.dumps(job)])
        results = []
        for path in expand_paths([os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]):
            for _ in range(_READ_ATTEMPTS):
                result = self._ingest_one(path, job, nan_policy, max_groups)
                if result is not None:
                    results.append(result)
                    break
            else:
                raise InputError(f"{path}: the file changed while it was read, {_READ_ATTEMPTS} times in a row; "
                                 "nothing of it was written: ingest it once it is written")
        return results

    def _ingest_one(self, path: str, job: dict[str, Any], nan_policy: str, max_groups: int) -> IngestResult | None:
        """Ingest one file (:meth:`ingest`); None, writing nothing, if it changed while it was read.

        The digest is taken before the read when only the modification time moved (it decides
        whether the file changed), else on a thread while the file is read: then it may be of
        other bytes than the read if the file is rewritten meanwhile (an atomic rename: same
        size, new inode), so the file's identity is checked again after both. Recording the new
        bytes' digest beside the old bytes' sketch would make the next ingest find the new file
        unchanged and keep the old sketch for good.
        """
        from ..slicing import sketch_slices

        seen = time.time_ns()
        st = os.stat(path)
        known = _one(self._con.execute("SELECT size, mtime_ns, digest FROM files WHERE path = ?", [path]))
        if known is not None and (known[0], known[1]) == (st.st_size, st.st_mtime_ns):
            return IngestResult(path, "unchanged", 0, 0)
        stop = threading.Event()
        if known is not None and known[0] == st.st_size:  # touched, or rewritten at the same size?
            digest = _digest(path)
            if known[2] == digest:
                if known[1] != _trusted_mtime(st, seen):
                    self._con.execute("UPDATE files SET mtime_ns = ? WHERE path = ?", [_trusted_mtime(st, seen), path])
                return IngestResult(path, "unchanged", 0, 0)
            pending = None
        else:  # new, or of another size: its digest is only recorded, so hash it while it is read
            pending = ThreadPoolExecutor(1, thread_name_prefix="streameval-digest")
            hashed = pending.submit(_digest, path, stop)
        try:
            ss, prov = sketch_slices(
                path, score=job["score"], label=job["label"], weight=job["weight"], by=job["by"],
                time=job["time"], window=job["window"], tz=job["tz"], grid=grid_from_spec(job["grid"]),
                pos_label=job["pos_label"], where=job["where"], nan_policy=nan_policy, max_groups=max_groups,
            )
            if pending is not None:
                digest = hashed.result()
        finally:
            if pending is not None:
                stop.set()  # a read that failed (or was interrupted) leaves its hash: it ends at the next MiB
                pending.shutdown(wait=False, cancel_futures=True)
        if _identity(os.stat(path)) != _identity(st):
            return None
        twin = _one(self._con.execute("SELECT path FROM files WHERE digest = ? AND path <> ?", [digest, path]))
        if twin is not None:  # a symlink, a hard link or a copy of an ingested file: its rows would count twice
            raise InputError(f"{path}: the same bytes as {twin[0]}, which is in the store already (a link or a "
                             "copy?); ingesting it would count its rows twice: nothing was written "
                             "(`streameval monitor forget` the other path first to move it)")
        self._write(path, st, _trusted_mtime(st, seen), digest, int(prov["rows_read"]), ss, job["window"] is not None)
        return IngestResult(path, "added" if known is None else "replaced", int(prov["rows_read"]), len(ss))

    def _write(self, path: str, st: os.stat_result, mtime_ns: int, digest: str, rows: int, ss: SketchSet,
               windowed: bool) -> None:
        """Replace one file's contribution: one transaction (delete its rows, insert the new ones)."""
        con = self._con
        con.execute("BEGIN TRANSACTION")
        try:
            old = _one(con.execute("SELECT file_id FROM files WHERE path = ?", [path]))
            if old is not None:
                con.execute("DELETE FROM groups WHERE file_id = ?", [old[0]])
                con.execute("DELETE FROM cells WHERE file_id = ?", [old[0]])
                con.execute("DELETE FROM single_cells WHERE file_id = ?", [old[0]])
            top = _one(con.execute("SELECT max(file_id) FROM files"))
            file_id = 0 if top is None or top[0] is None else int(top[0]) + 1
            insert_tables(con, ss, file_id, windowed)
            labels = json.dumps([_plain(ss._labels.pos_label), _plain(ss._labels.neg_label)])
            con.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [path, file_id, st.st_size, mtime_ns, digest, rows, _dt.datetime.now(_dt.timezone.utc),
                         labels, ss.weighted])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("CHECKPOINT")

    def forget(self, path: str | os.PathLike[str]) -> bool:
        """Remove one file's contribution (in one transaction). Returns whether it was there."""
        path = os.path.abspath(os.fspath(path))
        con = self._con
        con.execute("BEGIN TRANSACTION")
        try:
            there = _one(con.execute("SELECT file_id FROM files WHERE path = ?", [path]))
            if there is not None:
                con.execute("DELETE FROM groups WHERE file_id = ?", [there[0]])
                con.execute("DELETE FROM cells WHERE file_id = ?", [there[0]])
                con.execute("DELETE FROM single_cells WHERE file_id = ?", [there[0]])
                con.execute("DELETE FROM files WHERE path = ?", [path])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return there is not None

    # -- reading ------------------------------------------------------------------------------
    def sketchset(
        self,
        *,
        by: Sequence[str] | None = None,
        window: str | None = None,
        since: _dt.datetime | None = None,
        until: _dt.datetime | None = None,
    ) -> SketchSet:
        """Merge the stored groups on read: one sketch per (window, slice) of ``by``.

        Parameters
        ----------
        by : sequence of str, optional
            Slice columns to keep (a subset of the store's); default all of them. ``[]`` merges
            all slices.
        window : str, optional
            A window length made of whole stored windows (``"1w"`` or ``"1mo"`` over daily
            windows; not ``"1mo"`` over weekly ones, whose weeks straddle months, nor anything
            finer than the store's); default the store's. ``"all"`` merges all windows.
        since, until : datetime, optional
            Keep windows starting at or after ``since`` and before ``until``.

        Raises
        ------
        UsageError
            An unknown slice column, a store with no job yet, a window the stored ones do not fit
            into, a window or period asked of a store without windows.
        """
        job = self.job
        if not job:
            raise UsageError(f"{self.path}: the store is empty (nothing ingested yet)")
        names, grid, windowed = self._layout()
        keep = list(job["by"]) if by is None else list(by)
        unknown = [k for k in keep if k not in job["by"]]
        if unknown:
            raise UsageError(f"{self.path}: no slice column {unknown}; the store slices by {job['by'] or 'nothing'}")
        mapper = None
        if not windowed and (since is not None or until is not None or window not in (None, "all")):
            raise UsageError(f"{self.path}: the store has no time windows (it was filled without --time and "
                             "--window), so it cannot be reported by window or period (--window, --since, "
                             "--reference, --current): every row would be left out or merged")
        if windowed and window not in (None, "all") and str(parse_window(window)) != job["window"]:
            if not _nests(parse_window(job["window"]), parse_window(window)):
                raise UsageError(
                    f"{self.path}: the store keeps {job['window']} windows, which do not fit whole into "
                    f"{parse_window(window)} windows (a finer window, or one whose edges cut stored windows, as "
                    "weeks cut months); report by windows made of whole stored ones (or 'all'), or ingest "
                    "into a store with finer windows")
            mapper = _window_mapper(parse_window(window), job.get("tz"))
        elif windowed and window != "all" and job.get("tz"):
            mapper = _in_zone(job["tz"])  # stored in UTC; named in the job's zone, as `eval` names them
        names_out = (["window"] if windowed and window != "all" else []) + keep
        if self._legacy:
            return self._sketchset_v1(names, grid, windowed, names_out, mapper, since, until)
        labels = LabelEncoder(_plain(job.get("pos_label")))
        weighted = False
        for raw, w in self._con.execute("SELECT DISTINCT labels, weighted FROM files").fetchall():
            pos, neg = json.loads(raw)
            _merge_labels(labels, LabelEncoder(pos, neg))
            weighted = weighted or bool(w)
        return read_sketchset(self._con, key_names=names_out, grid=grid, windowed=windowed,
                              keep=[list(job["by"]).index(k) for k in keep], window_of=mapper, since=since,
                              until=until, labels=(labels.pos_label, labels.neg_label), weighted=weighted,
                              max_groups=10 * DEFAULT_MAX_GROUPS, single_cells=self._version >= 3)

    def _sketchset_v1(self, names: list[str], grid: Any, windowed: bool, names_out: list[str], mapper: Any,
                      since: _dt.datetime | None, until: _dt.datetime | None) -> SketchSet:
        """Read a schema-1 store opened read-only (slow: a BLOB per group)."""
        from .legacy import read_v1

        where, params = ["true"], []
        if since is not None:
            where.append("window_start >= ?")
            params.append(since)
        if until is not None:
            where.append("window_start < ?")
            params.append(until)
        ss = read_v1(self._con, self.path, names, grid, windowed, " AND ".join(where), params)
        if names_out == names and mapper is None:
            return ss
        return ss.rollup(names_out, window=mapper)

    def newest_window(self) -> _dt.datetime | None:
        """The start of the newest window stored (None when nothing is windowed)."""
        table = self._con.sql(f"SELECT max(window_start) AS newest FROM {'sketches' if self._legacy else 'groups'}"
                              ).to_arrow_table()
        value: _dt.datetime | None = _pylist(table.column(0))[0]  # to_pylist would import pandas
        return value


_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_MONTHS_OF = {"month": 1, "quarter": 3, "year": 12}


def _nests(stored: Any, wanted: Any) -> bool:
    """Whether every ``stored`` window lies inside one ``wanted`` window (both aligned as
    :func:`streameval.windows.window_starts` aligns them: multiples of seconds, minutes, hours
    and days since the epoch on the local clock, weeks from a Monday, months since 1970-01)."""
    def part_of_a_day(w: Any) -> bool:
        return bool(w.unit in _SECONDS and 86400 % (w.multiple * _SECONDS[w.unit]) == 0)

    if wanted.unit in _SECONDS:
        return bool(stored.unit in _SECONDS and (wanted.multiple * _SECONDS[wanted.unit]) % (
            stored.multiple * _SECONDS[stored.unit]) == 0)
    if wanted.unit == "week":
        return part_of_a_day(stored) or (stored.unit == "week" and wanted.multiple % stored.multiple == 0)
    if part_of_a_day(stored):
        return True
    if stored.unit not in _MONTHS_OF:
        return False
    months = stored.multiple * _MONTHS_OF[stored.unit]
    if wanted.unit == "year" and 12 % months:
        return False
    return bool((wanted.multiple * _MONTHS_OF[wanted.unit]) % months == 0)


def _in_zone(tz: str) -> Any:
    """A stored window start (an aware datetime) as the same instant in the zone ``tz``."""
    zone = zone_named(tz)

    def local(start: Any) -> Any:
        return None if start is None else start.astimezone(zone)

    return local


def _window_mapper(win: Any, tz: str | None) -> Any:
    """The coarser window of a stored window start (an aware datetime), through Arrow arrays built
    from buffers and read back by :func:`.layout._pylist`: ``pa.array`` and ``to_pylist`` of zoned
    timestamps import pandas (~0.3 s of a report's start)."""
    import numpy as np

    cache: dict[Any, Any] = {}
    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

    def coarser(start: Any) -> Any:
        if start is None:
            return None
        if start not in cache:
            arr = utc_micros(np.array([(start - epoch) // _dt.timedelta(microseconds=1)]))
            cache[start] = _pylist(window_starts(arr, win, tz))[0]
        return cache[start]

    return coarser
