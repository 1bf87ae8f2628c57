"""evaluate(): the one glue from a source to a sketch to a :class:`~streameval.report.Report`.

The reading loops (:mod:`streameval.consume`) feed a source's chunks to sketches; this module picks
the source, the loop and the report.
"""

from __future__ import annotations

import datetime as _dt
import numbers
import time as _time
from typing import Any, Callable, Sequence

import numpy as np

from .consume import ROW_ID, _consume, _consume_parts
from .errors import InputError, UsageError
from .grid import Grid, parse_grid
from .progress import progress_callback
from .report import Report
from .sketch.binary import BinarySketch, cpu_count
from .sources import DEFAULT_BATCH_ROWS, Source, column_map, open_source
from .sources.textparts import TextRangeError

__all__ = ["evaluate", "sketch_source", "EmptyInputError"]


class EmptyInputError(InputError):
    """The source delivered no rows (empty files, or a filter that matched nothing)."""


def _n_threads(threads: int | None) -> int:
    if threads is None:
        return cpu_count()
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise UsageError(f"threads must be a positive integer, got {threads!r}")
    return int(threads)  # NumPy integers too (np.int64(2) was refused as "not a positive integer")


def _grid(grid: Grid | str | None) -> Grid | None:
    if isinstance(grid, str):
        return parse_grid(grid)
    return grid


def sketch_source(
    source: Any,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    grid: Grid | str | None = None,
    pos_label: Any = None,
    where: str | None = None,
    sql: str | None = None,
    table: str | None = None,
    nan_policy: str = "raise",
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: bool | Callable[[int, int | None], None] | None = False,
    threads: int | None = None,
    bootstrap: int | None = None,
    seed: int = 0,
    row_id: str | None = None,
) -> tuple[BinarySketch, dict[str, Any]]:
    """Read a source into a sketch; return the sketch and the provenance of the run.

    Takes the same parameters as :func:`evaluate` (except ``thresholds``); use it to build
    per-shard sketches to save and merge later.

    Returns
    -------
    sketch : BinarySketch
    provenance : dict
        ``source``, ``source_kind``, ``engine``, ``files``, ``score``, ``label``, ``weight``,
        ``pos_label``, ``where``, ``sql``, ``rows_read``, ``rows_skipped``, ``started_at``,
        ``elapsed_seconds``.

    Raises
    ------
    EmptyInputError
        If the source holds no rows (after ``where``).
    SourceError, InputError, InputTypeError
        See :func:`evaluate`.
    """
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = _time.perf_counter()
    src: Source = open_source(
        source, score=score, label=label, weight=weight, where=where, sql=sql, table=table, batch_rows=batch_rows,
        extra_columns={ROW_ID: row_id} if row_id is not None else None,
    )
    if row_id is not None and not bootstrap:
        raise UsageError("row_id keys the bootstrap replicates: give bootstrap= (--bootstrap R) with it")
    boot = {"bootstrap": bootstrap, "seed": seed} if bootstrap else None
    columns = column_map(score, label, weight)
    n_threads = _n_threads(threads)
    # Replicates keyed by stream position need the rows in stream order: one reader then.
    parts = src.parts() if n_threads > 1 and (boot is None or row_id is not None) else None
    from .kernels.cache import compile_timer

    with progress_callback(progress, src.rows_estimate, src.description) as on_rows, compile_timer() as compiled:
        try:
            if parts is not None and len(parts) > 1:
                sketch, rows = _consume_parts(parts, _grid(grid), n_threads, columns=columns, pos_label=pos_label,
                                              nan_policy=nan_policy, on_rows=on_rows, bootstrap=boot)
                sketch.threads = threads
        except TextRangeError:  # a quoted value holding a line break, or a bad line: read front to back
            parts = None
        if parts is None or len(parts) <= 1:
            sketch = BinarySketch(_grid(grid), threads=n_threads, **(boot or {}))
            rows = _consume(src.chunks(), sketch, columns=columns, pos_label=pos_label, nan_policy=nan_policy,
                            on_rows=on_rows, read_ahead=n_threads > 1)
    if rows == 0:
        raise EmptyInputError(
            f"{src.description}: no rows to evaluate"
            + (f" (the filter {where!r} matched none)" if where else " (the input is empty)")
        )
    from .sketch.provenance import file_inputs

    sketch.inputs = file_inputs(src.files, rows, src.file_ids)
    elapsed = _time.perf_counter() - t0
    provenance = {
        "source": src.description,
        "source_kind": src.kind,
        "engine": src.engine,
        "files": src.files[:1000],
        "n_files": len(src.files),
        "score": score,
        "label": label,
        "weight": weight,
        "pos_label": None if pos_label is None else str(pos_label),
        "where": where,
        "sql": sql,
        "table": table,
        "rows_read": rows,
        "rows_skipped": {"nan_score": int(sketch.counters["n_nan"])},
        "started_at": started.isoformat(timespec="seconds"),
        "elapsed_seconds": round(elapsed, 6),
        "compile_seconds": round(compiled[0], 6),
    }
    return sketch, provenance


def evaluate(
    source: Any,
    *,
    score: Any,
    label: str,
    weight: str | None = None,
    grid: Grid | str | None = None,
    pos_label: Any = None,
    where: str | None = None,
    sql: str | None = None,
    table: str | None = None,
    thresholds: Sequence[float] | None = None,
    nan_policy: str = "raise",
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: bool | Callable[[int, int | None], None] | None = False,
    threads: int | None = None,
    positive_if: str = ">=",
    by: Sequence[str] | str | None = None,
    time: str | None = None,
    window: str | None = None,
    tz: str | None = None,
    require_labels: bool = False,
    max_groups: int | None = None,
    ci: Any = None,
    bootstrap: int | None = None,
    seed: int = 0,
    row_id: str | None = None,
) -> Any:
    """Evaluate a binary classifier's prediction log, streaming it batch by batch.

    With ``by`` and/or ``time`` and ``window``, evaluates every (window, slice...) group in the
    same single read and returns a :class:`~streameval.report.SliceTable` (one tidy row per
    group, plus ``.overall``, the :class:`Report` of all rows); otherwise a :class:`Report`.

    Parameters
    ----------
    source : path, directory, glob, list of paths, or data object
        Parquet, CSV (``.csv``/``.csv.gz``), Arrow IPC/Feather or NDJSON files (hive-partitioned
        directories included); a ``.duckdb`` file (with ``table`` or ``sql``); ``None`` with
        ``sql`` (in-memory DuckDB); a DuckDB connection or relation; a Polars ``LazyFrame`` or
        ``DataFrame``; a pandas ``DataFrame``; a ``pyarrow.Table`` or ``RecordBatchReader``; a
        mapping of column name to 1-D NumPy array (or a structured array); any iterable of
        ``pyarrow.RecordBatch``. See :func:`streameval.sources.open_source`.
    score : str or list of str
        Score column, or an SQL expression over the columns (higher = more positive). Several
        columns (a list, ``"p_a,p_b,p_c"`` or a glob such as ``"p_*"``), one per class in class
        order, make a multiclass evaluation returning a
        :class:`~streameval.report.multiclass.MulticlassReport` (classes: the sorted label values).
    label : str
        Label column, or an SQL expression such as ``"status = 'fraud'"`` (true = positive).
        Labels must be bool, 0/1 or -1/1 unless ``pos_label`` is given.
    weight : str, optional
        Sample-weight column or expression (finite, >= 0).
    grid : Grid or str, optional
        Binning grid, or its string form (``"probability"``, ``"linear:300:851:551"``, ...).
        Default :data:`streameval.DEFAULT_GRID`, for probabilities.
    pos_label : scalar, optional
        The positive label value (a string is converted to the label column's type).
    where : str, optional
        SQL filter on the rows (through DuckDB, or Polars SQL for Polars sources).
    sql : str, optional
        A DuckDB query producing the rows; over files, the files are the view ``data``.
    table : str, optional
        Table of a DuckDB database or connection.
    thresholds : sequence of float, optional
        Thresholds for confusion counts; default ``[0.5]`` when scores are probabilities.
    nan_policy : {"raise", "skip"}, default "raise"
        NaN/null scores raise, or are skipped and counted in ``provenance["rows_skipped"]``.
    batch_rows : int, default 1,048,576
        Rows per batch: peak memory is a few batches, whatever the number of rows.
    progress : bool or callable, default False
        ``True`` shows a progress bar on stderr when it is a terminal; a callable
        ``f(rows_done, total_rows_or_None)`` is called after each batch.
    threads : int, optional
        Threads for reading and binning; default: the number of CPUs. Parquet files are split
        into runs of row groups, uncompressed local CSV, TSV and NDJSON files into ranges of
        lines, that each thread decodes and bins on its own; other sources are decoded on one
        background thread while the binning uses the others. ``1`` reads and
        bins on the calling thread only. Results do not depend on it, except for the last bits
        of floating-point sums (log loss, Brier score, score sums, weighted counts). Each thread
        keeps its own dense state while reading (the grid's bins x 64 bytes: 15 MB for the
        default grid), and a ``progress`` callable may be called from any of them (one at a
        time).

    positive_if : {">=", ">"}, default ">="
        Threshold rule for the confusion counts and the reported thresholds: positive iff
        ``score >= threshold`` (scikit-learn's) or ``score > threshold``.
    by : str or sequence of str, optional
        Slice columns or SQL expressions (``"country"``, ``["country", "model"]``); null values
        form their own slice.
    time, window, tz : str, optional
        Time column, tumbling window length (``"1h"``, ``"1d"``, ``"1w"``, ``"1mo"``) and the time
        zone windows align to (default UTC); see :func:`streameval.slicing.sketch_slices`.
    require_labels : bool, default False
        Sliced evaluation only: null labels are an error instead of unlabelled rows (whose scores
        still feed drift and estimated performance).
    max_groups : int, optional
        Cap on the number of (window, slice) groups; default 1,000,000.
    ci : CIOptions or bool, optional
        Add sampling confidence intervals (``True`` for 95%, DeLong for AUC, Wilson for rates;
        or a :class:`streameval.report.CIOptions`). They are reported apart from the binning
        bounds, never under the same name.
    bootstrap : int, optional
        Keep this many Poisson-bootstrap replicates (binary, unsliced evaluation) for bootstrap
        intervals of any metric (``CIOptions(auc_method="bootstrap")``,
        ``report.sketch.ci(metric, method="bootstrap")``); see :class:`BinarySketch`.
    seed : int, default 0
        Seed of the replicate weights.
    row_id : str, optional
        Column (or expression) of row identifiers keying the replicate weights, so that shards
        evaluated apart merge into the replicates of one pass. Without it rows are keyed by their
        position in the stream, which is then read by one thread.

    Returns
    -------
    Report or SliceTable
        ``report.sketch`` (the sketch), ``report.metrics`` (values with bounds),
        ``report.confusion`` and ``report.provenance`` (source, rows read/skipped, grid, version,
        time taken).

    Raises
    ------
    SourceError
        Missing file or column (the message lists the available columns), unknown format, or an
        expression/query the engine rejects.
    InputError
        Bad data: non-binary or null labels (with examples), NaN scores (with
        ``nan_policy="raise"``), negative weights; the message names the file, column and row.
    EmptyInputError
        No rows.
    InputTypeError
        A source of an unsupported type.

    Examples
    --------
    >>> import numpy as np, streameval
    >>> r = streameval.evaluate({"p": np.array([0.1, 0.4, 0.35, 0.8]), "y": np.array([0, 0, 1, 1])},
    ...                         score="p", label="y")
    >>> r.metrics["roc_auc"]["value"]
    0.75
    """
    from .metrics.thresholds import check_rule

    check_rule(positive_if)  # before reading anything
    from .windows import check_tz

    check_tz(tz, window)  # (it would change nothing: said rather than ignored)
    ci = _ci_options(ci)
    thresholds = _thresholds(thresholds)
    from .multiclass_eval import is_multiclass_score

    if is_multiclass_score(score):
        if by or time is not None or window is not None:
            raise UsageError("slices and windows of a multiclass evaluation are not supported yet; evaluate each "
                             "slice with --where, or one class at a time")
        # binary-only options: ignoring them would leave out what was asked for without a word
        binary_only = {"pos_label": pos_label is not None, "thresholds": thresholds is not None,
                       "nan_policy": nan_policy != "raise", "positive_if": positive_if != ">=",
                       "ci": ci is not None, "bootstrap": bootstrap is not None, "row_id": row_id is not None}
        given = [name for name, on in binary_only.items() if on]
        if given:
            raise UsageError(f"{', '.join(given)} apply to binary evaluations only; a multiclass evaluation (several "
                             "score columns) does not take them: drop them, or use MulticlassSketch(bootstrap=...) "
                             "and its ci() for intervals")
        from .multiclass_eval import sketch_multiclass
        from .report.multiclass import MulticlassReport

        msk, prov = sketch_multiclass(source, score=score, label=label, weight=weight, grid=grid, where=where,
                                      sql=sql, table=table, batch_rows=batch_rows, progress=progress, threads=threads)
        return MulticlassReport.from_sketch(msk, provenance=prov)
    if bootstrap is not None and (by or time is not None or window is not None):
        raise UsageError("bootstrap replicates are kept for unsliced binary evaluations; use the DeLong/Wilson "
                         "intervals (--ci) for slices")
    if by or time is not None or window is not None:
        return _evaluate_slices(source, score=score, label=label, weight=weight, grid=grid, pos_label=pos_label,
                                where=where, sql=sql, table=table, thresholds=thresholds, nan_policy=nan_policy,
                                batch_rows=batch_rows, progress=progress, positive_if=positive_if, by=by, time=time,
                                window=window, tz=tz, require_labels=require_labels, max_groups=max_groups, ci=ci)
    sketch, provenance = sketch_source(
        source, score=score, label=label, weight=weight, grid=grid, pos_label=pos_label, where=where,
        sql=sql, table=table, nan_policy=nan_policy, batch_rows=batch_rows, progress=progress, threads=threads,
        bootstrap=bootstrap, seed=seed, row_id=row_id,
    )
    t0 = _time.perf_counter()
    report = Report.from_sketch(sketch, thresholds=thresholds, provenance=provenance, positive_if=positive_if, ci=ci)
    report.provenance["metrics_seconds"] = round(_time.perf_counter() - t0, 6)
    return report


def _thresholds(thresholds: Any) -> list[float] | None:
    """``thresholds`` as a list of numbers: one number is a list of one; text is refused by name."""
    import numbers

    if thresholds is None:
        return None
    if isinstance(thresholds, numbers.Real):
        return [float(thresholds)]
    bad = isinstance(thresholds, (str, bytes))
    if not bad:
        try:
            values = list(thresholds)
        except TypeError:
            bad = True
        else:
            bad = not all(isinstance(t, numbers.Real) for t in values)
    if bad:
        raise UsageError(f"thresholds must be a number or a sequence of numbers, got {thresholds!r}")
    return [float(t) for t in values]


def _ci_options(ci: Any) -> Any:
    from .report import CIOptions

    if ci is None or ci is False:
        return None
    if ci is True:
        return CIOptions()
    if not isinstance(ci, CIOptions):
        raise UsageError(f"ci must be True, False or a CIOptions, got {ci!r}")
    from .stats.interval import check_level

    check_level(ci.level)
    return ci


def _evaluate_slices(source: Any, *, thresholds: Sequence[float] | None, positive_if: str,
                     max_groups: int | None, ci: Any, **options: Any) -> Any:
    from .report import SliceTable
    from .sketch.sketchset import DEFAULT_MAX_GROUPS
    from .slicing import sketch_slices

    sketches, provenance = sketch_slices(source, max_groups=max_groups or DEFAULT_MAX_GROUPS, **options)
    overall = sketches.overall()
    if thresholds is None:
        thresholds = [0.5] if overall.counters["n_outside"] == 0 else []
    result = SliceTable.from_sketchset(sketches, thresholds=thresholds, positive_if=positive_if,
                                       provenance=provenance, ci=ci)
    result.overall = Report.from_sketch(overall, thresholds=thresholds, provenance=dict(provenance),
                                        positive_if=positive_if, ci=ci)
    return result
