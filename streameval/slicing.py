"""Sliced and windowed evaluation: one read of a source into a :class:`SketchSet`.

:func:`sketch_slices` is the sliced twin of :func:`streameval.sketch_source`: the source delivers
the score, label and weight columns plus the slice columns and the time column (each a column
name or an SQL expression); each chunk's rows go to their (window, slice...) group. Windows are
computed from the time column per chunk (:mod:`streameval.windows`).
"""

from __future__ import annotations

import datetime as _dt
import time as _time
from typing import Any, Callable, Iterable, Iterator, Sequence, cast

from .errors import InputError, InputTypeError, UsageError
from .grid import Grid, parse_grid
from .progress import progress_callback
from .sketch.sketchset import DEFAULT_MAX_GROUPS, SketchSet
from .sources import DEFAULT_BATCH_ROWS, LABEL, SCORE, WEIGHT, open_source
from .windows import Window, check_tz, parse_window, window_keys

__all__ = ["sketch_slices", "WINDOW_KEY"]

WINDOW_KEY = "window"
"""Name of the key part holding each row's window start."""
_TIME = "time_column"  # source aliases; errors about a missing column name them


def _key_aliases(by: Sequence[str]) -> dict[str, str]:
    return {f"slice_column_{i + 1}": expr for i, expr in enumerate(by)}


def sketch_slices(
    source: Any,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    by: Sequence[str] | str | None = None,
    time: str | None = None,
    window: str | None = None,
    tz: str | None = None,
    grid: Grid | str | None = None,
    pos_label: Any = None,
    where: str | None = None,
    sql: str | None = None,
    table: str | None = None,
    nan_policy: str = "raise",
    require_labels: bool = False,
    max_groups: int = DEFAULT_MAX_GROUPS,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: bool | Callable[[int, int | None], None] | None = False,
) -> tuple[SketchSet, dict[str, Any]]:
    """Read a source into one sketch per (window, slice...) group, in one pass.

    Parameters
    ----------
    source, score, label, weight, grid, pos_label, where, sql, table, nan_policy, batch_rows, progress
        As for :func:`streameval.evaluate`.
    by : str or sequence of str, optional
        Slice columns (or SQL expressions); their values form the key (null is a value).
    time : str, optional
        Time column (timestamps, dates or epoch seconds); needs ``window``.
    window : str, optional
        Tumbling window length: ``"1h"``, ``"1d"``, ``"1w"``, ``"1mo"``, ... (see
        :func:`streameval.windows.parse_window`). The window start is the key's first part,
        named ``"window"``.
    tz : str, optional
        Time zone the windows align to; default UTC.
    require_labels : bool, default False
        Refuse null labels instead of counting them as unlabelled (labels that arrive late).
    max_groups : int
        Cap on the number of groups (a clear error past it).

    Returns
    -------
    sketches : SketchSet
    provenance : dict

    Raises
    ------
    UsageError
        ``time`` without ``window`` or the reverse, a bad window or time zone.
    SourceError, InputError, InputTypeError, EmptyInputError
        As :func:`streameval.evaluate`; errors name the file and row.
    """
    from .consume import _coerce_pos_label, _locate, _read_ahead
    from .evaluate import EmptyInputError

    if isinstance(by, str):
        by = [b.strip() for b in by.split(",") if b.strip()]
    by = list(by or [])
    if (time is None) != (window is None):
        raise UsageError("give both time= (--time) and window= (--window), or neither")
    check_tz(tz, window)
    win = parse_window(window) if window is not None else None
    names = ([WINDOW_KEY] if win is not None else []) + by
    if len(set(names)) != len(names):
        raise UsageError(f"slice columns must be distinct (and not named {WINDOW_KEY!r} with a window): {names}")
    extra = _key_aliases(by)
    if time is not None:
        extra[_TIME] = time
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = _time.perf_counter()
    src = open_source(source, score=score, label=label, weight=weight, where=where, sql=sql, table=table,
                      batch_rows=batch_rows, extra_columns=extra)
    g = parse_grid(grid) if isinstance(grid, str) else grid
    ss = SketchSet(names, g, max_groups=max_groups)
    columns = {SCORE: score, LABEL: label, **({WEIGHT: weight} if weight else {}), **extra}
    rows = 0
    with progress_callback(progress, src.rows_estimate, src.description) as on_rows:
        # the next batch decodes, and gets its windows, while this one is binned
        for item in _read_ahead(cast(Iterable[Any], _with_windows(src.chunks(), win, tz, time or ""))):
            chunk, windows = cast(tuple[Any, Any], item)
            batch = chunk.batch
            names_in = batch.schema.names
            keys = [batch.column(a) for a in _key_aliases(by)]
            if rows == 0:
                _check_key_types(keys, by, chunk.origin)
            if isinstance(windows, UsageError):  # raised in chunk order, after the earlier chunks' errors
                raise windows
            if windows is not None:
                keys.insert(0, windows)
            y = batch.column(LABEL)
            if rows == 0 and pos_label is not None:
                try:
                    pos_label = _coerce_pos_label(pos_label, y.type)
                except InputError as exc:
                    raise InputError(f"{chunk.origin}: label {label!r}: {exc}") from None
                ss._labels.pos_label = pos_label
            s = _numeric(batch.column(SCORE))
            w = _numeric(batch.column(WEIGHT)) if WEIGHT in names_in else None
            start = ss.n_rows
            try:
                ss.update(keys, y, s, w, nan_policy=nan_policy, require_labels=require_labels)
            except (InputError, InputTypeError) as exc:
                raise _locate(exc, chunk, start, columns) from None
            rows += batch.num_rows
            if on_rows is not None:
                on_rows(batch.num_rows)
    if rows == 0:
        raise EmptyInputError(f"{src.description}: no rows to evaluate")
    _release_read_buffers()
    provenance = {
        "source": src.description, "source_kind": src.kind, "engine": src.engine, "files": src.files[:1000],
        "n_files": len(src.files), "score": score, "label": label, "weight": weight, "by": by, "time": time,
        "window": None if win is None else str(win), "tz": tz or ("UTC" if win is not None else None),
        "pos_label": None if pos_label is None else str(pos_label), "where": where, "sql": sql,
        "rows_read": rows, "started_at": started.isoformat(timespec="seconds"),
        "elapsed_seconds": round(_time.perf_counter() - t0, 6),
    }
    return ss, provenance


def _with_windows(chunks: Iterable[Any], win: Window | None, tz: str | None,
                  column: str) -> Iterator[tuple[Any, Any]]:
    """``(chunk, its window keys)``: None without windows, a UsageError naming the chunk's
    origin for a bad time column (run on the read-ahead thread: windows are stateless)."""
    for chunk in chunks:
        windows: Any = None
        if win is not None:
            try:
                windows = window_keys(chunk.batch.column(_TIME), win, tz, column=column)
            except UsageError as exc:
                windows = UsageError(f"{chunk.origin}: {exc}")
        yield chunk, windows


def _check_key_types(keys: Sequence[Any], by: Sequence[str], origin: str) -> None:
    """Refuse slice columns of nested types (lists, structs, maps): a slice is one value per row."""
    import pyarrow as pa

    for col, name in zip(keys, by, strict=True):
        t = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
        if pa.types.is_nested(t):
            raise InputTypeError(
                f"{origin}: slice column {name!r} has type {t}; a slice is one value per row (a string, "
                "number, boolean, date or time): slice by an element or an SQL expression of it instead"
            )


def _release_read_buffers() -> None:
    """Hand the memory Arrow's allocator kept from the read's freed batches back to the OS.

    The allocator (mimalloc or jemalloc) keeps freed pages for reuse: after a 100M-row read,
    ~150 MB that would stay resident beside the set while it is sorted and written to a store.
    A few milliseconds, once per source.
    """
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _numeric(col: Any) -> Any:
    """Decimals (DuckDB's numeric literals) as float64; other columns as they are."""
    import pyarrow as pa

    return col.cast(pa.float64()) if pa.types.is_decimal(col.type) else col
