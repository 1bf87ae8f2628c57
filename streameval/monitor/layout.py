"""The store's columnar layout: a SketchSet as tables of plain rows, and back, merged on read.

Schema version 3 (``docs/monitoring-store.md``) keeps each ingested file's contribution as rows of
three tables: ``groups`` (one row per (file, window, slice): the key and the group's counters),
``cells`` (one row per occupied (file, group, bin, class): weight, min, max, score sum) and
``single_cells`` (the cells of one row, the common case in a finely sliced log, as their score
alone: 5 columns instead of 8, about half the insert work and a 2.4x smaller file). Version 2
had no ``single_cells``. Reading 90 days x 1,000 slices is then one columnar scan of each table
into Arrow, and merging by key is NumPy work: one stable sort of the cells by output code, and,
only where cells of several stored groups meet, their sums added left to right
(:func:`streameval.kernels.segments.run_sum`, the order :func:`streameval.kernels.grouped.sort_reduce`
adds them in) in the order the cells were written. No Python per group or per cell, no
per-group BLOB to parse, and no compiled kernel: the first call of one costs a fresh process
Numba's initialisation (~0.8-1.0 s of CPU), more than the whole merge."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..kernels.segments import run_sum
from ..sketch.sketchset import SketchSet
from ..sketch.sketchset_cells import store_batches

__all__ = ["COUNTERS", "GROUPS_DDL", "CELLS_DDL", "SINGLE_CELLS_DDL", "tables_of", "insert_tables", "read_sketchset", "write_memory_limit"]

COUNTERS = ("n_rows", "n_nan", "n_zero_weight", "n_outside", "n_unlabelled", "prob_weight", "brier_sum",
            "log_loss_sum")
"""Counter columns of ``groups``, in :meth:`SketchSet.group_counters` order."""
_INTS = 5
GROUPS_DDL = """
CREATE TABLE IF NOT EXISTS groups (
    file_id INTEGER NOT NULL, gid INTEGER NOT NULL, window_start TIMESTAMPTZ, slice VARCHAR NOT NULL,
    n_rows BIGINT NOT NULL, n_nan BIGINT NOT NULL, n_zero_weight BIGINT NOT NULL, n_outside BIGINT NOT NULL,
    n_unlabelled BIGINT NOT NULL, prob_weight DOUBLE NOT NULL, brier_sum DOUBLE NOT NULL,
    log_loss_sum DOUBLE NOT NULL);
"""
CELLS_DDL = """
CREATE TABLE IF NOT EXISTS cells (
    file_id INTEGER NOT NULL, gid INTEGER NOT NULL, bin INTEGER NOT NULL, class TINYINT NOT NULL,
    weight DOUBLE NOT NULL, min DOUBLE NOT NULL, max DOUBLE NOT NULL, score_sum DOUBLE NOT NULL);
"""
SINGLE_CELLS_DDL = """
CREATE TABLE IF NOT EXISTS single_cells (
    file_id INTEGER NOT NULL, gid INTEGER NOT NULL, bin INTEGER NOT NULL, class TINYINT NOT NULL,
    score DOUBLE NOT NULL);
"""


def _json_key(v: Any) -> Any:
    if isinstance(v, (_dt.datetime, _dt.date)):
        return v.isoformat()
    return v


def tables_of(ss: SketchSet, file_id: int, windowed: bool) -> tuple[Any, Iterator[tuple[Any, Any]]]:
    """One file's contribution as a ``groups`` Arrow table and its cells as pairs of Arrow tables
    ``(cells, single_cells)`` of about :data:`CELL_BATCH` cells together (a range of groups at a
    time: a compact set is never expanded whole), each in the column order of its DDL.

    ``gid`` numbers the set's groups 0..n-1 in :meth:`SketchSet.keys` order; ``slice`` is the JSON
    list of the slice values (dates as ISO strings); ``window_start`` is null without windows. A
    cell of weight 1 whose min, max and score sum are one value (one row's cell) goes to
    ``single_cells`` as its score; every other cell to ``cells``.
    """
    import pyarrow as pa

    keys = ss.keys()
    n = len(keys)
    counters = ss.group_counters()
    fid = pa.array(np.full(n, file_id, dtype=np.int32))
    starts = pa.array([k[0] for k in keys] if windowed else [None] * n, pa.timestamp("us", tz="UTC"))
    slices = pa.array([json.dumps([_json_key(v) for v in (k[1:] if windowed else k)]) for k in keys], pa.string())
    groups = pa.table({"file_id": fid, "gid": pa.array(np.arange(n, dtype=np.int32)), "window_start": starts,
                       "slice": slices, **{c: pa.array(counters[c]) for c in COUNTERS}})

    def table(names: tuple[str, ...], columns: tuple[np.ndarray, ...]) -> Any:
        return pa.table({"file_id": pa.array(np.full(columns[0].shape[0], file_id, dtype=np.int32)),
                         **{name: pa.array(col) for name, col in zip(names, columns, strict=True)}})

    def cell_tables() -> Iterator[tuple[Any, Any]]:
        for _, _, full, single in store_batches(ss, CELL_BATCH):
            yield table(_CELL_COLUMNS, full), table(_SINGLE_COLUMNS, single)

    return groups, cell_tables()


_CELL_COLUMNS = ("gid", "bin", "class", "weight", "min", "max", "score_sum")
_SINGLE_COLUMNS = ("gid", "bin", "class", "score")
CELL_BATCH = 1 << 19
"""Cells per Arrow table written to the store (~23 MB of columns; ~90 MB of temporaries)."""


WRITE_MEMORY_PER_THREAD = 96
"""MB of DuckDB memory per DuckDB thread while a file's rows are inserted (:func:`write_memory_limit`).

A transaction's new rows are written to the database file as they come (DuckDB's optimistic
writes), but its buffer pool keeps the written blocks until its limit: without one, a 100M-row
file's 94M cells held ~6 GB. Under a tight limit DuckDB inserts on one thread: 10M cells took
2.8-3.2 s at 64 or 128 MB and 1.6-1.7 s at 160, 192, 256 or 512 MB (2 threads, DuckDB 2.0;
one process per setting). Session 8 (100M-row set, load 4-5): 256 MB held
~390 MB over the set, 64 MB ~190-200 MB; batches of 1M cells under 64 MB held ~320 MB, of 256K
~770 MB (slower too)."""
WRITE_MEMORY_CEILING = 512
"""MB: the most, whatever the threads. DuckDB runs a thread per core, and its buffer pool keeps a
transaction's written blocks up to the limit: 96 MB per thread without a ceiling is 3 GB on 32
cores, 6 GB on 64, against the store's 2 GiB peak target for a 100M-row ingest (its
store file alone is ~1 GB). A bound, not a measured gain: 30M rows on 2 cores with DuckDB's
threads set to 32 peaked at 1,240 MiB under 3,072 MB and 1,171-1,241 MiB under 512 MB (2
threads, 192 MB: 1,089-1,118 MiB; one process per run); larger files were not measured."""


def write_memory_limit(threads: int) -> str:
    """DuckDB's memory limit while inserting on ``threads`` threads: :data:`WRITE_MEMORY_PER_THREAD`
    MB per thread (enough for each to write row groups at once; one thread at least) and at most
    :data:`WRITE_MEMORY_CEILING` MB, as a DuckDB setting value such as ``"192MB"``."""
    return f"{min(WRITE_MEMORY_PER_THREAD * max(int(threads), 1), WRITE_MEMORY_CEILING)}MB"


def insert_tables(con: Any, ss: SketchSet, file_id: int, windowed: bool) -> None:
    """Insert one file's groups and cells (:func:`tables_of`) through the DuckDB connection
    ``con`` (the store's own), inside the caller's transaction, with DuckDB's memory bounded
    meanwhile (:func:`write_memory_limit` of the connection's threads; DuckDB's default limit
    after)."""
    groups, cell_tables = tables_of(ss, file_id, windowed)
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    con.execute(f"SET memory_limit = '{write_memory_limit(threads)}'")
    try:
        con.from_arrow(groups).insert_into("groups")
        for cells, single in cell_tables:  # a range of groups at a time
            for name, part in (("cells", cells), ("single_cells", single)):
                if part.num_rows:
                    con.from_arrow(part).insert_into(name)  # a relation: less memory than INSERT ... SELECT
    finally:
        con.execute("RESET memory_limit")  # the store's own connection: back to DuckDB's default


def _np(column: Any) -> np.ndarray:
    """A numeric Arrow column without nulls as a NumPy array (a view of its buffer when it has one
    chunk): pyarrow's ``to_numpy`` imports pandas on first use, ~0.5-1 s of a report's start."""
    from ..sources.base import numpy_view

    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    view = numpy_view(arr)
    return view if isinstance(view, np.ndarray) else np.asarray(arr.to_numpy(zero_copy_only=False))


def _pylist(arr: Any) -> list[Any]:
    """``arr.to_pylist()``, with timestamps converted here: pyarrow converts zoned timestamps
    through pandas (imported on first use). The same values: aware datetimes in the type's zone
    (``zoneinfo``, or a fixed offset), naive ones for naive timestamps, None for nulls."""
    import pyarrow as pa

    t = arr.type
    if not pa.types.is_timestamp(t):
        return list(arr.to_pylist())
    per = {"s": 10**6, "ms": 10**3, "us": 1, "ns": None}[t.unit]
    if per is None:  # nanoseconds: datetime cannot hold them; pyarrow's own rules apply
        return list(arr.to_pylist())
    epoch = _dt.datetime(1970, 1, 1)
    zone: Any = None
    if t.tz is not None:
        epoch = epoch.replace(tzinfo=_dt.timezone.utc)
        zone = _zone(t.tz)
    out: list[Any] = []
    for v in arr.cast(pa.int64()).to_pylist():
        if v is None:
            out.append(None)
            continue
        when = epoch + _dt.timedelta(microseconds=v * per)
        out.append(when.astimezone(zone) if zone is not None else when)
    return out


def zone_named(tz: str | None) -> Any:
    """The tzinfo of a job's ``tz`` (None and UTC's names, as :mod:`streameval.windows` accepts
    them, are UTC).

    Raises
    ------
    UsageError
        A name neither zoneinfo nor a fixed offset.
    """
    from ..errors import UsageError
    from ..windows import _UTC

    if tz is None or tz in _UTC:
        return _dt.timezone.utc
    try:
        return _zone(tz)
    except (ValueError, KeyError) as exc:  # zoneinfo's ZoneInfoNotFoundError is a KeyError
        raise UsageError(f"unknown time zone {tz!r} ({exc})") from None


def _zone(name: str) -> Any:
    """The tzinfo pyarrow gives a timestamp type's zone: ``zoneinfo`` for names, fixed offsets
    (``+01:00``) as ``datetime.timezone``."""
    if name[:1] in "+-" and len(name) == 6 and name[3] == ":":
        sign = -1 if name[0] == "-" else 1
        return _dt.timezone(sign * _dt.timedelta(hours=int(name[1:3]), minutes=int(name[4:6])))
    import zoneinfo

    return zoneinfo.ZoneInfo(name)


def _codes(column: Any) -> tuple[np.ndarray, list[Any]]:
    """Dictionary codes of an Arrow column (null is a value of its own) and its distinct values."""
    enc = column.combine_chunks().dictionary_encode(null_encoding="encode") if len(column) else None
    if enc is None:
        return np.empty(0, dtype=np.int64), []
    return _np(enc.indices).astype(np.int64), _pylist(enc.dictionary)


class StoreReadError(ValueError):
    """The store's tables do not fit together (a cell without its group row)."""


def _row_lookup(file_ids: np.ndarray, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A dense table from ``(file_id, gid)`` to the row of the groups table: ``(base, size, lut)``,
    the row of ``(f, g)`` being ``lut[base[f] + g]`` for ``g < size[f]`` (-1 for a group not read)."""
    n_files = int(file_ids.max()) + 1 if file_ids.shape[0] else 0
    size = np.zeros(n_files, dtype=np.int64)
    np.maximum.at(size, file_ids, gids + 1)
    base = np.zeros(n_files + 1, dtype=np.int64)
    np.cumsum(size, out=base[1:])
    lut = np.full(int(base[-1]), -1, dtype=np.int64)
    lut[base[file_ids] + gids] = np.arange(file_ids.shape[0], dtype=np.int64)
    return base, size, lut


def _cell_keys(cells: Any, file_ids: np.ndarray, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scanned cells' keys as ``(row, local)``: each cell's row in the groups table (whose
    ``file_ids``, ``gids`` are given) and its code inside the group (``bin * 3 + class``).
    Filled batch by batch from views of the Arrow buffers: no combined copies of the columns,
    no casts of whole columns (fresh memory is what a cold process pays most for here); rows
    come from a dense lookup table, not a search.

    Raises
    ------
    StoreReadError
        A cell whose (file_id, gid) has no row among the groups read.
    """
    base, size, lut = _row_lookup(file_ids, gids)
    m = cells.num_rows
    row = np.empty(m, dtype=np.int64)
    local = np.empty(m, dtype=np.int64)
    at = 0
    for batch in cells.to_batches():
        k = batch.num_rows
        if k == 0:
            continue
        col = dict(zip(batch.schema.names, batch.columns, strict=True))
        fid, gid = _np(col["file_id"]), _np(col["gid"])
        known = (fid >= 0) & (fid < size.shape[0])
        slot = np.where(known, fid, 0)
        known &= (gid >= 0) & (gid < size[slot])
        rows = np.where(known, lut[np.where(known, base[slot] + gid, 0)] if lut.shape[0] else -1, -1)
        if rows.min() < 0:
            bad = int(np.argmin(rows))
            raise StoreReadError(f"store cells of file_id {int(fid[bad])}, gid {int(gid[bad])} have no row in the "
                                 "groups table read with them; the store is inconsistent")
        row[at:at + k] = rows
        part = local[at:at + k]
        np.multiply(_np(col["bin"]), 3, out=part, dtype=np.int64)
        part += _np(col["class"])
        at += k
    return row, local


def _cell_values(parts: Sequence[Any], order: np.ndarray) -> np.ndarray:
    """The scanned cells' ``[weight, min, max, score_sum]`` as a float64 array of shape (m, 4),
    row ``i`` holding the scanned cell ``order[i]`` of the scans ``parts`` taken one after the
    other (a ``cells`` scan, or a ``single_cells`` one, whose cells are ``[1, s, s, s]``): written
    straight in that order from the Arrow buffers (one fresh array, no gather of a scan-ordered
    copy)."""
    m = sum(part.num_rows for part in parts)
    values = np.empty((m, 4))
    position = np.empty(m, dtype=np.int64)
    position[order] = np.arange(m, dtype=np.int64)
    at = 0
    for part in parts:
        single = "score" in part.schema.names
        for batch in part.to_batches():
            k = batch.num_rows
            if k == 0:
                continue
            where = position[at:at + k]
            if single:
                score = _np(batch.column("score"))
                columns = [np.ones(k), score, score, score]
            else:
                columns = [_np(batch.column(name)) for name in ("weight", "min", "max", "score_sum")]
            if int(where[-1]) - int(where[0]) == k - 1 and bool(np.all(np.diff(where) == 1)):
                target = values[int(where[0]):int(where[0]) + k]  # the batch keeps its order: a block copy
                for j, column in enumerate(columns):
                    target[:, j] = column
            else:
                for j, column in enumerate(columns):
                    values[where, j] = column
            at += k
    return values


def _scan_order(keys: list[tuple[np.ndarray, np.ndarray]], span: int) -> tuple[np.ndarray, np.ndarray,
                                                                                   np.ndarray | None]:
    """The cells of several scans (``(row, local)`` each) in the order one table would hold them,
    by group row then code: ``(row, local, order)``, ``order`` indexing the scans taken one after
    the other (None when the one scan's own order stands).

    Rows are written file by file (``file_id`` grows with each write, so the groups table's rows,
    sorted by ``(file_id, gid)``, come in write order), each file's cells by ``(gid, code)``: this
    is the order of writing, in which the cells of one output code are added. A plain scan of a
    table comes in that order; the SEMI JOIN of a ``since``/``until`` read need not (DuckDB's
    join holds back a vector with few matches and gives it last), so a scan out of order is
    sorted too. The keys are unique: any sort gives the one order.
    """
    if len(keys) == 1 and _increasing(keys[0][0], keys[0][1], span):
        return keys[0][0], keys[0][1], None
    row = keys[0][0] if len(keys) == 1 else np.concatenate([r for r, _ in keys])
    local = keys[0][1] if len(keys) == 1 else np.concatenate([c for _, c in keys])
    order: np.ndarray = np.argsort(row * span + local, kind="stable")
    return row[order], local[order], order


def _increasing(row: np.ndarray, local: np.ndarray, span: int, chunk: int = 1 << 20) -> bool:
    """Whether the keys ``row * span + local`` strictly increase, checked a chunk at a time (no
    whole-length temporaries)."""
    m = row.shape[0]
    for at in range(0, m, chunk):
        end = min(at + chunk + 1, m)  # one key of overlap with the next chunk
        key = row[at:end] * span + local[at:end]
        if not bool(np.all(key[1:] > key[:-1])):
            return False
    return True


def _keys_of(codes: np.ndarray, values: list[list[Any]]) -> list[tuple[Any, ...]]:
    """The key tuples of mixed-radix codes (the first part varies fastest); a part whose values
    are tuples (the kept slice values) adds one key column per tuple item."""
    columns: list[list[Any]] = []
    rest = codes.astype(np.int64)
    for vals in values:
        size = max(len(vals), 1)
        picked = [vals[i] for i in (rest % size).tolist()]
        rest = rest // size
        if vals and isinstance(vals[0], tuple):
            columns.extend([t[j] for t in picked] for j in range(len(vals[0])))
        else:
            columns.append(picked)
    if not columns:
        return [() for _ in range(codes.shape[0])]
    return list(zip(*columns, strict=True))


def _runs_order(group: np.ndarray, local: np.ndarray) -> np.ndarray | None:
    """The stable sort by ``(group, local)`` without sorting, when the cells come as runs of one
    group each with ``local`` increasing and no group in two runs (each output group is one
    stored group, read in the order it was written): the runs ordered by group. None otherwise."""
    m = group.shape[0]
    if m == 0:
        return None
    starts = np.flatnonzero(np.r_[True, (group[1:] != group[:-1]) | (local[1:] <= local[:-1])])
    by_group = np.argsort(group[starts], kind="stable")
    run_group = group[starts][by_group]
    if np.any(run_group[1:] == run_group[:-1]):
        return None
    lengths = np.diff(np.append(starts, m))[by_group]
    first = starts[by_group]
    # positions: each run's first cell, then +1 along the run
    offsets = np.repeat(first - np.cumsum(lengths) + lengths, lengths)
    order: np.ndarray = offsets + np.arange(m, dtype=np.int64)
    return order


def merge_cells(group: np.ndarray, local: np.ndarray, values: np.ndarray,
                span: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells of many stored groups merged by output group: ``(codes, cells)`` sorted by code.

    Parameters
    ----------
    group : int64 array of shape (m,)
        Each cell's output group.
    local : int64 array of shape (m,)
        Each cell's code inside its group (``bin * 3 + class``, below ``span``).
    values : float64 array of shape (m, 4)
        ``[weight, min, max, score_sum]`` per cell.
    span : int

    Returns
    -------
    codes : int64 array of shape (k,)
        ``group * span + local``, strictly increasing.
    cells : float64 array of shape (k, 4)

    Notes
    -----
    The same cells as :func:`streameval.kernels.grouped.sort_reduce` (a test compares them): a
    stable sort by code, then the cells of one code combine in input order, weights and score
    sums added left to right (min/max of equal values of opposite signs of zero may keep the
    other zero). When no two cells share a code (each output group from one stored group, as
    in a report by the stored windows and slices), the sort is all there is.
    """
    code, order = _merge_order(group, local, span)
    return _reduce_sorted(code, np.take(values, order, axis=0))  # whole rows: ~3x faster than four column gathers


def _merge_order(group: np.ndarray, local: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """``(codes sorted, order)``: the codes ``group * span + local`` in stable sorted order, and
    the permutation that sorts them."""
    code = group * span + local
    order = _runs_order(group, local)
    if order is None:
        order = np.argsort(code, kind="stable")
    return code[order], order


def _reduce_sorted(code: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells sorted by code with the cells of each code combined in order (see :func:`merge_cells`)."""
    m = code.shape[0]
    new = np.ones(m, dtype=bool)
    new[1:] = code[1:] != code[:-1]
    if bool(new.all()):
        return code, cells
    starts = np.flatnonzero(new)
    out = np.empty((starts.shape[0], 4))
    sums = run_sum(cells[:, [0, 3]], np.append(starts, m))
    out[:, 0], out[:, 3] = sums[:, 0], sums[:, 1]
    out[:, 1] = np.minimum.reduceat(cells[:, 1], starts)
    out[:, 2] = np.maximum.reduceat(cells[:, 2], starts)
    return code[starts], out


def read_sketchset(
    con: Any,
    *,
    key_names: Sequence[str],
    grid: Any,
    windowed: bool,
    keep: Sequence[int],
    window_of: Callable[[Any], Any] | None,
    since: _dt.datetime | None,
    until: _dt.datetime | None,
    labels: tuple[Any, Any],
    weighted: bool,
    max_groups: int,
    single_cells: bool = True,
) -> SketchSet:
    """Merge the stored groups on read, straight into the output key.

    Parameters
    ----------
    con : duckdb connection
    key_names : sequence of str
        The output key names (``"window"`` first when windows are kept).
    grid : Grid
    windowed : bool
        Whether the store has windows.
    keep : sequence of int
        Positions of the slice values kept in the output key, in output order.
    window_of : callable or None
        Maps a stored window start to the output one (a coarser window), or None to keep it;
        ignored when windows are dropped (``"window"`` not in ``key_names``).
    since, until : datetime, optional
        Keep windows starting in ``[since, until)``.
    labels : (pos_label, neg_label)
    weighted : bool
    max_groups : int
    single_cells : bool, default True
        Whether the store has the ``single_cells`` table (schema version 3; version 2 keeps every
        cell in ``cells``).

    Returns
    -------
    SketchSet
        Exactly the set that grouping all stored rows by the output key would have built.
    """
    where, params = ["true"], []
    if since is not None:
        where.append("window_start >= ?")
        params.append(since)
    if until is not None:
        where.append("window_start < ?")
        params.append(until)
    cond = " AND ".join(where)
    # Through Arrow: DuckDB's fetchall would need pytz for TIMESTAMPTZ values.
    groups = con.sql(f"SELECT file_id, gid, window_start, slice, {', '.join(COUNTERS)} FROM groups WHERE {cond} "
                     "ORDER BY file_id, gid", params=params).to_arrow_table()
    n_in = groups.num_rows
    with_window = bool(key_names) and key_names[0] == "window" and windowed
    parts: list[np.ndarray] = []
    values: list[list[Any]] = []
    if with_window:
        codes, starts = _codes(groups.column("window_start"))
        mapped = [window_of(s) if window_of is not None and s is not None else s for s in starts]
        index = {m: i for i, m in enumerate(dict.fromkeys(mapped))}
        uniq = list(index)
        remap = np.array([index[m] for m in mapped] or [0], dtype=np.int64)
        parts.append(remap[codes] if codes.size else codes)
        values.append(uniq)
    if keep:
        codes, slices = _codes(groups.column("slice"))
        tuples = [tuple(json.loads(s)[i] for i in keep) for s in slices]
        uniq = list(dict.fromkeys(tuples))
        index = {t: i for i, t in enumerate(uniq)}
        remap = np.array([index[t] for t in tuples] or [0], dtype=np.int64)
        parts.append(remap[codes] if codes.size else codes)
        values.append(uniq)
    combined = np.zeros(n_in, dtype=np.int64)
    radix = 1
    for part, vals in zip(parts, values, strict=True):
        combined += part * radix
        radix *= max(len(vals), 1)
    uniq_codes, merged = np.unique(combined, return_inverse=True)
    merged = merged.reshape(-1)
    keys = _keys_of(uniq_codes, values)
    n_out = len(keys)
    counters = np.zeros((n_out, len(COUNTERS)))
    for j, name in enumerate(COUNTERS):
        counters[:, j] = np.bincount(merged, weights=_np(groups.column(name)).astype(np.float64), minlength=n_out)
    # cells of the selected groups, mapped to their output group through (file_id, gid)
    file_ids = _np(groups.column("file_id")).astype(np.int64)
    gids = _np(groups.column("gid")).astype(np.int64)
    scanned = []
    for table, columns in (("cells", _CELL_COLUMNS), ("single_cells", _SINGLE_COLUMNS))[:2 if single_cells else 1]:
        names = ", ".join(f"c.{name}" for name in ("file_id", *columns))
        if since is None and until is None:
            scanned.append(con.sql(f"SELECT {names} FROM {table} c").to_arrow_table())
        else:
            scanned.append(con.sql(f"SELECT {names} FROM {table} c SEMI JOIN (SELECT file_id, gid FROM groups "
                                   f"WHERE {cond}) g ON c.file_id = g.file_id AND c.gid = g.gid",
                                   params=params).to_arrow_table())
    parts = [part for part in scanned if part.num_rows] or scanned[:1]
    span = 3 * grid.n_bins
    row, local, scan = _scan_order([_cell_keys(part, file_ids, gids) for part in parts], span)
    sorted_codes, order = _merge_order(merged[row] if row.size else row, local, span)
    codes, merged_cells = _reduce_sorted(sorted_codes, _cell_values(parts, order if scan is None else scan[order]))
    return SketchSet.from_cells(key_names, grid, keys, counters, codes, merged_cells, pos_label=labels[0],
                                neg_label=labels[1], weighted=weighted, max_groups=max_groups)
