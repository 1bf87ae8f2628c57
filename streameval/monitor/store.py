"""Store: an incremental, crash-safe monitoring store in one embedded DuckDB file.

Three tables (documented in ``docs/monitoring-store.md``; plain SQL types and BLOBs in the sketch
file format, so the same schema can move to a server database):

- ``meta(key, value)``: the schema version and the job that fills the store (score, label,
  weight, slice columns, time column, window, time zone, grid), fixed by the first ingest;
- ``files(path, size, mtime_ns, digest, rows, ingested_at)``: one row per ingested file;
- ``sketches(path, window_start, slice, n_rows, n_unlabelled, labelled, unlabelled, counters)``:
  one row per (file, window, slice) group; ``labelled`` is the group's binary sketch,
  ``unlabelled`` the score histogram of its rows whose label had not arrived (a cell block, see
  :func:`streameval.sketch.cells.encode_cells`), ``slice`` a JSON list of the slice values.

Each file's contribution is written in one transaction: an unchanged file (same size and
modification time, or same SHA-256) is skipped; a changed one (labels arrived) has its rows
replaced, never added to; ``kill -9`` at any moment leaves the store as before or after that
file, because DuckDB rolls back an unfinished transaction when the file is next opened. A second
process that opens the store while one writes gets :class:`StoreBusyError`.
"""

from __future__ import annotations

import datetime as _dt
import glob
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..errors import StreamevalError, UsageError
from ..grid import grid_from_spec, parse_grid
from ..sketch.binary import BinarySketch
from ..sketch.sketchset import DEFAULT_MAX_GROUPS, SketchSet
from ..windows import parse_window, window_starts

__all__ = ["Store", "StoreBusyError", "IngestResult", "STORE_SCHEMA_VERSION"]

STORE_SCHEMA_VERSION = 1
_JOB_KEYS = ("score", "label", "weight", "by", "time", "window", "tz", "grid", "pos_label", "where")
_EXTENSIONS = (".parquet", ".pq", ".csv", ".csv.gz", ".tsv", ".tsv.gz", ".arrow", ".feather", ".ipc",
               ".ndjson", ".jsonl", ".json")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path VARCHAR PRIMARY KEY, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL, digest VARCHAR NOT NULL,
    rows BIGINT NOT NULL, ingested_at TIMESTAMPTZ NOT NULL);
CREATE TABLE IF NOT EXISTS sketches (
    path VARCHAR NOT NULL, window_start TIMESTAMPTZ, slice VARCHAR NOT NULL, n_rows BIGINT NOT NULL,
    n_unlabelled BIGINT NOT NULL, labelled BLOB NOT NULL, unlabelled BLOB, counters VARCHAR NOT NULL);
"""


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


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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


def _json_key(v: Any) -> Any:
    if isinstance(v, (_dt.datetime, _dt.date)):
        return v.isoformat()
    return v


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
            raise
        self._con.execute("SET TimeZone = 'UTC'")
        if not read_only:
            self._con.execute(_SCHEMA)
            if self._meta().get("schema_version") is None:
                self._con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(STORE_SCHEMA_VERSION)])
        version = self._meta().get("schema_version")
        if version is not None and int(version) > STORE_SCHEMA_VERSION:
            raise UsageError(f"{self.path}: store schema version {version} is newer than this streameval "
                             f"({STORE_SCHEMA_VERSION}); upgrade streameval")

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

    def files(self) -> list[dict[str, Any]]:
        """Ingested files: path, size, mtime_ns, digest, rows, ingested_at."""
        query = "SELECT path, size, mtime_ns, digest, rows, ingested_at FROM files ORDER BY path"
        rows: list[dict[str, Any]] = self._con.sql(query).to_arrow_table().to_pylist()
        return rows

    def _resolve_job(self, given: dict[str, Any]) -> dict[str, Any]:
        stored = self.job
        if not stored:
            if given.get("score") is None or given.get("label") is None:
                raise UsageError("the first ingest into a store needs score= and label= (--score, --label)")
            job = {k: given.get(k) for k in _JOB_KEYS}
            job["by"] = list(job["by"] or [])
            grid = job["grid"]
            job["grid"] = (parse_grid(grid) if isinstance(grid, str) else grid or BinarySketch().grid).spec()
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
            later ingests may omit it, and must not contradict it.
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
            Bad data in a file (the files before it stay ingested; nothing of it is written).
        """
        from ..slicing import sketch_slices

        job = self._resolve_job({"score": score, "label": label, "weight": weight, "by": list(by or []),
                                 "time": time, "window": window, "tz": tz, "grid": grid, "pos_label": pos_label,
                                 "where": where})
        if self._meta().get("job") is None:
            self._con.execute("INSERT OR REPLACE INTO meta VALUES ('job', ?)", [json.dumps(job)])
        results = []
        for path in expand_paths([os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]):
            st = os.stat(path)
            known = self._con.execute("SELECT size, mtime_ns, digest FROM files WHERE path = ?", [path]).fetchone()
            if known is not None and (known[0], known[1]) == (st.st_size, st.st_mtime_ns):
                results.append(IngestResult(path, "unchanged", 0, 0))
                continue
            digest = _digest(path)
            if known is not None and known[2] == digest:
                self._con.execute("UPDATE files SET mtime_ns = ? WHERE path = ?", [st.st_mtime_ns, path])
                results.append(IngestResult(path, "unchanged", 0, 0))
                continue
            ss, prov = sketch_slices(
                path, score=job["score"], label=job["label"], weight=job["weight"], by=job["by"], time=job["time"],
                window=job["window"], tz=job["tz"], grid=grid_from_spec(job["grid"]), pos_label=job["pos_label"],
                where=job["where"], nan_policy=nan_policy, max_groups=max_groups,
            )
            table = self._rows(path, ss, job)
            self._write(path, st, digest, int(prov["rows_read"]), table)
            results.append(IngestResult(path, "added" if known is None else "replaced", int(prov["rows_read"]),
                                        table.num_rows))
        return results

    def _rows(self, path: str, ss: SketchSet, job: dict[str, Any]) -> Any:
        import pyarrow as pa

        windowed = job["window"] is not None
        cols: dict[str, list[Any]] = {k: [] for k in ("path", "window_start", "slice", "n_rows", "n_unlabelled",
                                                      "labelled", "unlabelled", "counters")}
        for key in ss.keys():
            labelled, unlabelled, counts = ss.group_parts(key)
            cols["path"].append(path)
            cols["window_start"].append(key[0] if windowed else None)
            cols["slice"].append(json.dumps([_json_key(v) for v in (key[1:] if windowed else key)]))
            cols["n_rows"].append(int(counts["n_rows"]))
            cols["n_unlabelled"].append(int(counts["n_unlabelled"]))
            cols["labelled"].append(labelled.to_bytes())
            cols["unlabelled"].append(unlabelled)
            cols["counters"].append(json.dumps(counts))
        types = {"window_start": pa.timestamp("us", tz="UTC"), "labelled": pa.binary(), "unlabelled": pa.binary()}
        return pa.table({k: pa.array(v, type=types.get(k)) for k, v in cols.items()})

    def _write(self, path: str, st: os.stat_result, digest: str, rows: int, table: Any) -> None:
        con = self._con
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM sketches WHERE path = ?", [path])
            con.register("_streameval_new", table)
            con.execute("INSERT INTO sketches SELECT * FROM _streameval_new")
            con.unregister("_streameval_new")
            con.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                        [path, st.st_size, st.st_mtime_ns, digest, rows, _dt.datetime.now(_dt.timezone.utc)])
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
            there = con.execute("SELECT count(*) FROM files WHERE path = ?", [path]).fetchone()
            con.execute("DELETE FROM sketches WHERE path = ?", [path])
            con.execute("DELETE FROM files WHERE path = ?", [path])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return bool(there and there[0])

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
            A window length equal to or coarser than the store's (``"1w"`` over daily windows);
            default the store's. ``"all"`` merges all windows.
        since, until : datetime, optional
            Keep windows starting at or after ``since`` and before ``until``.

        Raises
        ------
        UsageError
            An unknown slice column, a store with no job yet.
        """
        job = self.job
        if not job:
            raise UsageError(f"{self.path}: the store is empty (nothing ingested yet)")
        windowed = job["window"] is not None
        names = (["window"] if windowed else []) + list(job["by"])
        grid = grid_from_spec(job["grid"])
        ss = SketchSet(names, grid, max_groups=10 * DEFAULT_MAX_GROUPS)
        query = "SELECT window_start, slice, labelled, unlabelled, counters FROM sketches WHERE true"
        params: list[Any] = []
        if since is not None:
            query += " AND window_start >= ?"
            params.append(since)
        if until is not None:
            query += " AND window_start < ?"
            params.append(until)
        # Through Arrow: DuckDB's fetchall would need pytz for TIMESTAMPTZ values.
        rows = self._con.sql(query, params=params).to_arrow_table().to_pylist()
        for start, slice_json, lab, unl, counters in (tuple(r.values()) for r in rows):
            key = ((start,) if windowed else ()) + tuple(json.loads(slice_json))
            ss.add_group(key, BinarySketch.from_bytes(bytes(lab), source=self.path),
                         None if unl is None else bytes(unl), json.loads(counters))
        keep = list(job["by"]) if by is None else list(by)
        unknown = [k for k in keep if k not in job["by"]]
        if unknown:
            raise UsageError(f"{self.path}: no slice column {unknown}; the store slices by {job['by'] or 'nothing'}")
        mapper = None
        if windowed and window not in (None, "all") and str(parse_window(window)) != job["window"]:
            mapper = _window_mapper(parse_window(window), job.get("tz"))
        names_out = (["window"] if windowed and window != "all" else []) + keep
        if names_out == names and mapper is None:
            return ss
        return ss.rollup(names_out, window=mapper)

    def newest_window(self) -> _dt.datetime | None:
        """The start of the newest window stored (None when nothing is windowed)."""
        table = self._con.sql("SELECT max(window_start) AS newest FROM sketches").to_arrow_table()
        value: _dt.datetime | None = table.column(0).to_pylist()[0]
        return value


def _window_mapper(win: Any, tz: str | None) -> Any:
    import pyarrow as pa

    cache: dict[Any, Any] = {}

    def coarser(start: Any) -> Any:
        if start is None:
            return None
        if start not in cache:
            arr = pa.array([start], pa.timestamp("us", tz="UTC"))
            cache[start] = window_starts(arr, win, tz).to_pylist()[0]
        return cache[start]

    return coarser
