"""Evaluate a Dask DataFrame: one sketch per partition (``to_delayed``), merged in an ordered tree
of Dask tasks, so only the final sketch reaches the client. Works with the threaded scheduler and
with ``distributed`` clusters alike (whatever scheduler is active)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InputError
from . import common

__all__ = ["evaluate", "sketch"]


def _import_dask() -> Any:
    try:
        import dask
        import dask.dataframe  # noqa: F401
    except ImportError as exc:
        raise ImportError('streameval.dask needs Dask: pip install "streameval[dask]"') from exc
    return dask


def _partition(df: Any, partition: Callable[[list[Any]], bytes]) -> bytes:
    import pyarrow as pa

    return partition([pa.Table.from_pandas(df, preserve_index=False)])


class _Dask:
    """The :class:`~streameval.engines.common.Engine` steps on Dask."""

    name = "Dask"

    def partitions(self, frame: Any) -> int:
        return int(frame.npartitions)

    def columns(self, frame: Any) -> list[str]:
        return [str(c) for c in frame.columns]

    def select(self, frame: Any, columns: Sequence[tuple[str, str]]) -> Any:
        present = list(frame.columns)
        for alias, name in columns:
            if name not in present:
                raise InputError(
                    f"{common.what(alias)} column {name!r} is not in the Dask DataFrame (columns: "
                    f"{', '.join(map(str, present[:20]))}); with Dask, pass column names (compute expressions "
                    "into a column first)"
                )
        # One column may serve twice (a slice column that is also the label): assign copies.
        return frame.assign(**{alias: frame[name] for alias, name in columns})[[alias for alias, _ in columns]]

    def run(self, selected: Any, partition: Callable[[list[Any]], bytes], merge: Callable[..., bytes],
            fan_in: int) -> bytes | None:
        dask = _import_dask()
        parts = [dask.delayed(_partition)(p, partition) for p in selected.to_delayed()]
        if not parts:
            return None
        (data,) = dask.compute(common.tree_merge(parts, dask.delayed(merge), fan_in))
        out: bytes = data
        return out

    def distinct(self, selected: Any, alias: str) -> Any:
        import pyarrow as pa

        values = selected[alias].dropna().drop_duplicates().compute()
        return pa.Array.from_pandas(values)


def sketch(
    ddf: Any,
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
    fan_in: int = 8,
) -> Any:
    """Build the sketch of a Dask DataFrame's rows on the workers.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        The prediction log.
    score : str or list of str
        Score column; several (a list, ``"p_a,p_b,p_c"`` or a glob such as ``"p_*"``), one per
        class in class order, make a multiclass sketch.
    label, weight : str
        Column names (Dask has no SQL: compute an expression into a column first).
    grid : Grid or str, optional
        As for :func:`streameval.evaluate`.
    pos_label : scalar, optional
        The positive class when labels are not 0/1 or bool (binary only).
    nan_policy : {"raise", "skip"}, default "raise"
    by, time, window, tz, require_labels, max_groups
        Slices and windows, as for :func:`streameval.evaluate` (column names).
    classes : sequence, optional
        Multiclass only: the classes in score-column order; default learned from the data as a
        local run learns them (one more pass over the label column).
    fan_in : int, default 8
        Sketches merged per reduce task (the tree's fan-in).

    Returns
    -------
    BinarySketch, SketchSet or MulticlassSketch
        Equal to the sketch a local run over the same rows builds (counts, minima and maxima
        exactly; weight and score sums up to floating-point rounding), for any partitioning.

    Raises
    ------
    InputError
        A missing column, non-numeric scores, labels that are not binary, as a local run.
    UsageError
        ``time`` without ``window``, a bad window, slices of a multiclass evaluation.
    ImportError
        Dask is not installed (``pip install "streameval[dask]"``).
    """
    _import_dask()
    return common.sketch_on(_Dask(), ddf, score=score, label=label, weight=weight, grid=grid, pos_label=pos_label,
                            nan_policy=nan_policy, by=by, time=time, window=window, tz=tz,
                            require_labels=require_labels, max_groups=max_groups, classes=classes, fan_in=fan_in)


def evaluate(
    ddf: Any,
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
    fan_in: int = 8,
) -> Any:
    """Evaluate a Dask DataFrame: :func:`sketch` on the workers, then what
    :func:`streameval.evaluate` returns for local data.

    Parameters are those of :func:`sketch` plus ``thresholds``, ``positive_if`` and ``ci`` as for
    :func:`streameval.evaluate`.

    Returns
    -------
    Report, SliceTable or MulticlassReport
        A :class:`~streameval.report.SliceTable` (with ``.overall``) when ``by`` or a window is
        given, a multiclass report for several score columns, else a :class:`~streameval.Report`.
    """
    _import_dask()
    return common.evaluate_on(
        _Dask(), ddf, score=score, label=label, weight=weight, pos_label=pos_label, thresholds=thresholds,
        positive_if=positive_if, ci=ci, grid=grid, nan_policy=nan_policy, by=by, time=time, window=window, tz=tz,
        require_labels=require_labels, max_groups=max_groups, classes=classes, fan_in=fan_in,
    )
