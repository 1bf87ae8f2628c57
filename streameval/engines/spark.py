"""Evaluate a Spark DataFrame: each partition builds its sketch in ``mapInArrow`` (Arrow batches
in, one row of sketch bytes out), and the sketches merge on the executors in an ordered tree
(partition ``i`` goes to merge task ``i // fan_in``, level after level), so the driver receives at
most ``fan_in`` sketches, never one per partition. The tree keeps the partitions' order, so a
rerun adds floating-point sums in the same order and sliced results list groups in order of
first appearance, as a local run does (Spark's ``treeReduce`` combines partial results in
arrival order)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import InputError
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


class _Spark:
    """The :class:`~streameval.engines.common.Engine` steps on Spark."""

    name = "Spark"

    def partitions(self, frame: Any) -> int:
        return int(frame.rdd.getNumPartitions())

    def columns(self, frame: Any) -> list[str]:
        return list(frame.columns)

    def select(self, frame: Any, columns: Sequence[tuple[str, str]]) -> Any:
        """Columns as names or Spark SQL expressions, under fixed aliases."""
        from pyspark.errors import AnalysisException

        exprs = [(f"{_quote(text) if text in frame.columns else text} AS {_quote(alias)}", alias, text)
                 for alias, text in columns]
        try:
            return frame.selectExpr(*(e for e, _, _ in exprs))
        except AnalysisException as exc:
            shown = ", ".join(f"{common.what(alias)}={text!r}" for _, alias, text in exprs)
            raise InputError(
                f"Spark cannot evaluate {shown} on this DataFrame (columns: {', '.join(frame.columns[:20])}): "
                f"{str(exc).splitlines()[0]}"
            ) from None

    def run(self, selected: Any, partition: Callable[[list[Any]], bytes], merge: Callable[..., bytes],
            fan_in: int) -> bytes | None:
        def per_partition(batches: Iterator[Any]) -> Iterator[Any]:
            import pyarrow as pa

            data = partition(list(batches))
            yield pa.RecordBatch.from_pydict({"sketch": [data]}, schema=pa.schema([("sketch", pa.binary())]))

        def merge_group(item: tuple[int, Any]) -> tuple[int, bytes]:
            return item[0], merge(*(b for _, b in sorted(item[1], key=lambda e: e[0])))

        rdd = selected.mapInArrow(per_partition, "sketch binary").rdd
        n = rdd.getNumPartitions()
        if n == 0:
            return None
        level = rdd.mapPartitionsWithIndex(lambda i, rows: [(i, bytes(r[0])) for r in rows])
        try:
            while n > fan_in:
                n = -(-n // fan_in)
                level = level.map(lambda kv: (kv[0] // fan_in, kv)).groupByKey(n).map(merge_group)
            items = sorted(level.collect(), key=lambda e: e[0])
        except Exception as exc:  # noqa: BLE001 - a task's error arrives wrapped in Py4J/Spark text
            raise _task_error(exc) from None
        return merge(*(b for _, b in items))

    def distinct(self, selected: Any, alias: str) -> Any:
        try:
            table = selected.select(alias).dropna().distinct().toArrow()
        except Exception as exc:  # noqa: BLE001 - as in run()
            raise _task_error(exc) from None
        return table.column(0).combine_chunks()


def sketch(
    df: Any,
    *,
    score: Any,
    label: str,
    weight: str | None = None,
    grid: Any = None,
    pos_label: Any = None,
    nan_policy: str = "raise",
    by: Sequence[str] | str | None = None,
    time: str | None = None,
    window: str | None = None,
    tz: str | None = None,
    require_labels: bool = False,
    max_groups: int | None = None,
    classes: Sequence[Any] | None = None,
    fan_in: int = 16,
) -> Any:
    """Build the sketch of a Spark DataFrame's rows on the executors.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The prediction log.
    score : str or list of str
        Score column or Spark SQL expression (``"p_fraud"``, ``"p * 100"``). Several columns (a
        list, ``"p_a,p_b,p_c"`` or a glob such as ``"p_*"`` over ``df.columns``), one per class
        in class order, make a multiclass sketch.
    label, weight : str
        Column names or Spark SQL expressions (``"status = 'fraud'"``).
    grid : Grid or str, optional
        As for :func:`streameval.evaluate`.
    pos_label : scalar, optional
        The positive class when labels are not 0/1 or bool (binary only).
    nan_policy : {"raise", "skip"}, default "raise"
    by, time, window, tz, require_labels, max_groups
        Slices and windows, as for :func:`streameval.evaluate`; slice and time columns may be
        Spark SQL expressions too.
    classes : sequence, optional
        Multiclass only: the classes in score-column order. Default: learned from the data as a
        local run learns them (the sorted labels, or ``0..K-1``), which costs one more pass over
        the label column.
    fan_in : int, default 16
        Sketches merged per task of the merge tree: ``ceil(log_fan_in(partitions)) - 1`` shuffle
        levels, and at most ``fan_in`` sketches reach the driver.

    Returns
    -------
    BinarySketch, SketchSet or MulticlassSketch
        Equal to the sketch of a local run over the same rows (counts, minima and maxima
        exactly; weight and score sums up to rounding), for any partitioning.

    Raises
    ------
    InputError
        A column or expression Spark cannot resolve; non-numeric scores, non-binary labels,
        too many groups (as a local run, raised from the task that met them).
    UsageError
        ``time`` without ``window``, a bad window, slices of a multiclass evaluation.
    ImportError
        PySpark is not installed.
    """
    _import_spark()
    return common.sketch_on(_Spark(), df, score=score, label=label, weight=weight, grid=grid, pos_label=pos_label,
                            nan_policy=nan_policy, by=by, time=time, window=window, tz=tz,
                            require_labels=require_labels, max_groups=max_groups, classes=classes, fan_in=fan_in)


def _task_error(exc: Exception) -> Exception:
    """The streameval error a Spark task raised, unwrapped from Spark's report when possible."""
    text = str(exc)
    for name in ("InputTypeError", "EmptyInputError", "InputError", "SourceError", "UsageError"):
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
    score: Any,
    label: str,
    weight: str | None = None,
    grid: Any = None,
    pos_label: Any = None,
    nan_policy: str = "raise",
    thresholds: Sequence[float] | None = None,
    positive_if: str = ">=",
    ci: Any = None,
    by: Sequence[str] | str | None = None,
    time: str | None = None,
    window: str | None = None,
    tz: str | None = None,
    require_labels: bool = False,
    max_groups: int | None = None,
    classes: Sequence[Any] | None = None,
    fan_in: int = 16,
) -> Any:
    """Evaluate a Spark DataFrame: :func:`sketch` on the executors, then what
    :func:`streameval.evaluate` returns for local data.

    Parameters are those of :func:`sketch` plus ``thresholds``, ``positive_if`` and ``ci`` as for
    :func:`streameval.evaluate`.

    Returns
    -------
    Report, SliceTable or MulticlassReport
        A :class:`~streameval.report.SliceTable` (with ``.overall``) when ``by`` or a window is
        given, a multiclass report for several score columns, else a :class:`~streameval.Report`.
    """
    _import_spark()
    return common.evaluate_on(
        _Spark(), df, score=score, label=label, weight=weight, pos_label=pos_label, thresholds=thresholds,
        positive_if=positive_if, ci=ci, grid=grid, nan_policy=nan_policy, by=by, time=time, window=window, tz=tz,
        require_labels=require_labels, max_groups=max_groups, classes=classes, fan_in=fan_in,
    )
