"""Evaluate a Spark DataFrame: each partition builds its sketch in ``mapInArrow`` (Arrow batches
in, one row of sketch bytes out), the sketches merge on the executors with ``treeReduce``, and
the driver receives a few partial sketches at most, never one per partition."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InputError, UsageError
from . import common

__all__ = ["evaluate", "sketch"]


def _import_spark() -> Any:
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import DataFrame
    except ImportError as exc:
        raise ImportError(
            'streameval.spark needs PySpark and a Java runtime: pip install "streameval[spark]" '
            "(and e.g. apt-get install openjdk-17-jre-headless)"
        ) from exc
    return DataFrame


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _select(df: Any, score: str, label: str, weight: str | None) -> Any:
    """Score, label and weight as column names or Spark SQL expressions, under fixed aliases."""
    from pyspark.errors import AnalysisException

    parts = [(common.SCORE, score, "score"), (common.LABEL, label, "label")]
    if weight is not None:
        parts.append((common.WEIGHT, weight, "weight"))
    exprs = []
    for alias, text, what in parts:
        expr = _quote(text) if text in df.columns else text
        exprs.append((f"{expr} AS {_quote(alias)}", what, text))
    try:
        return df.selectExpr(*(e for e, _, _ in exprs))
    except AnalysisException as exc:
        shown = ", ".join(f"{what}={text!r}" for _, what, text in exprs)
        raise InputError(
            f"Spark cannot evaluate {shown} on this DataFrame (columns: {', '.join(df.columns[:20])}): "
            f"{str(exc).splitlines()[0]}"
        ) from None


def sketch(
    df: Any,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    grid: Any = None,
    pos_label: Any = None,
    nan_policy: str = "raise",
    depth: int = 2,
) -> Any:
    """Build the :class:`~streameval.BinarySketch` of a Spark DataFrame's rows, on the executors.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The prediction log.
    score, label, weight : str
        Column names or Spark SQL expressions (``"p_fraud"``, ``"status = 'fraud'"``).
    grid : Grid or str, optional
        As for :func:`streameval.evaluate`.
    pos_label : scalar, optional
        The positive class when labels are not 0/1 or bool.
    nan_policy : {"raise", "skip"}, default "raise"
    depth : int, default 2
        Depth of ``treeReduce`` (the merge tree on the executors).

    Returns
    -------
    BinarySketch
        Equal to the sketch of a local run over the same rows (counts, minima and maxima
        exactly; weight and score sums up to rounding), for any partitioning.

    Raises
    ------
    InputError
        A column or expression Spark cannot resolve; non-numeric scores or non-binary labels (as
        a local run, raised from the task that met them).
    ImportError
        PySpark is not installed.
    """
    _import_spark()
    from ..sketch.binary import BinarySketch

    if depth < 1:
        raise UsageError(f"depth must be >= 1, got {depth}")
    job = common.job_for(grid, pos_label, score, label, weight, nan_policy)
    selected = _select(df, score, label, weight)

    def per_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        data = common.partition_sketch(list(batches), job)
        yield pa.RecordBatch.from_pydict({"sketch": [data]}, schema=pa.schema([("sketch", pa.binary())]))

    rows = selected.mapInArrow(per_partition, "sketch binary").rdd.map(lambda r: bytes(r[0]))
    if rows.getNumPartitions() == 0:
        return BinarySketch(job.grid_object())
    try:
        data = rows.treeReduce(common.merge_sketches, depth=depth)
    except Exception as exc:  # noqa: BLE001 - a task's error arrives wrapped in Py4J/Spark text
        raise _task_error(exc) from None
    return BinarySketch.from_bytes(data)


def _task_error(exc: Exception) -> Exception:
    """The streameval error a Spark task raised, unwrapped from Spark's report when possible."""
    text = str(exc)
    for name in ("InputTypeError", "InputError", "SourceError", "UsageError"):
        marker = f"streameval.errors.{name}: "
        if marker not in text:
            marker = f"{name}: "
        at = text.find(marker)
        if at >= 0:
            message = text[at + len(marker):].splitlines()[0]
            from .. import errors

            return getattr(errors, name, InputError)(message)
    return exc


def evaluate(
    df: Any,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    grid: Any = None,
    pos_label: Any = None,
    nan_policy: str = "raise",
    thresholds: Sequence[float] | None = None,
    positive_if: str = ">=",
    ci: Any = None,
    by: Any = None,
    time: str | None = None,
    window: str | None = None,
) -> Any:
    """Evaluate a Spark DataFrame: :func:`sketch` on the executors, then the same
    :class:`~streameval.Report` :func:`streameval.evaluate` returns for local data.

    Parameters are those of :func:`sketch` plus ``thresholds``, ``positive_if`` and ``ci`` as for
    :func:`streameval.evaluate`. ``by``, ``time`` and ``window`` are not supported on Spark yet
    (a :class:`~streameval.UsageError` says so).
    """
    return common.evaluate_on(
        "Spark", sketch, df, df.rdd.getNumPartitions(), score=score, label=label, weight=weight, pos_label=pos_label,
        thresholds=thresholds, positive_if=positive_if, ci=ci, by=by, time=time, window=window, grid=grid,
        nan_policy=nan_policy,
    )
