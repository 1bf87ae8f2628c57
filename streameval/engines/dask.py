"""Evaluate a Dask DataFrame: one sketch per partition (``to_delayed``), merged in a tree of
Dask tasks, so only the final sketch reaches the client. Works with the threaded scheduler and
with ``distributed`` clusters alike (whatever scheduler is active)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError, UsageError
from . import common

__all__ = ["evaluate", "sketch"]


def _import_dask() -> Any:
    try:
        import dask
        import dask.dataframe  # noqa: F401
    except ImportError as exc:
        raise ImportError('streameval.dask needs Dask: pip install "streameval[dask]"') from exc
    return dask


def _partition(df: Any, job: common.SketchJob) -> bytes:
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    return common.partition_sketch([table], job)


def _select(ddf: Any, score: str, label: str, weight: str | None) -> Any:
    names = {common.SCORE: score, common.LABEL: label, **({common.WEIGHT: weight} if weight else {})}
    columns = list(ddf.columns)
    for alias, name in names.items():
        if name not in columns:
            what = {common.SCORE: "score", common.LABEL: "label", common.WEIGHT: "weight"}[alias]
            raise InputError(
                f"{what} column {name!r} is not in the Dask DataFrame (columns: {', '.join(map(str, columns[:20]))}); "
                "with Dask, pass column names (compute expressions into a column first)"
            )
    return ddf[list(names.values())].rename(columns={v: k for k, v in names.items()})


def sketch(
    ddf: Any,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    grid: Any = None,
    pos_label: Any = None,
    nan_policy: str = "raise",
    fan_in: int = 8,
) -> Any:
    """Build the :class:`~streameval.BinarySketch` of a Dask DataFrame's rows, on the workers.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        The prediction log.
    score, label, weight : str
        Column names (Dask has no SQL: compute an expression into a column first).
    grid : Grid or str, optional
        As for :func:`streameval.evaluate`.
    pos_label : scalar, optional
        The positive class when labels are not 0/1 or bool.
    nan_policy : {"raise", "skip"}, default "raise"
    fan_in : int, default 8
        Sketches merged per reduce task (the tree's fan-in).

    Returns
    -------
    BinarySketch
        Equal to the sketch a local run over the same rows builds (counts, minima and maxima
        exactly; weight and score sums up to floating-point rounding), for any partitioning.

    Raises
    ------
    InputError
        A missing column, non-numeric scores, labels that are not binary, as a local run.
    ImportError
        Dask is not installed (``pip install "streameval[dask]"``).
    """
    dask = _import_dask()
    from ..sketch.binary import BinarySketch

    if fan_in < 2:
        raise UsageError(f"fan_in must be >= 2, got {fan_in}")
    job = common.job_for(grid, pos_label, score, label, weight, nan_policy)
    selected = _select(ddf, score, label, weight)
    parts = [dask.delayed(_partition)(p, job) for p in selected.to_delayed()]
    if not parts:
        return BinarySketch(job.grid_object())
    merge = dask.delayed(common.merge_sketches)
    (data,) = dask.compute(common.tree_merge(parts, merge, fan_in))
    return BinarySketch.from_bytes(data)


def evaluate(
    ddf: Any,
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
    """Evaluate a Dask DataFrame: :func:`sketch` on the workers, then the same
    :class:`~streameval.Report` :func:`streameval.evaluate` returns for local data.

    Parameters are those of :func:`sketch` plus ``thresholds``, ``positive_if`` and ``ci`` as for
    :func:`streameval.evaluate`. ``by``, ``time`` and ``window`` are not supported on Dask yet
    (a :class:`~streameval.UsageError` says so).
    """
    return common.evaluate_on(
        "Dask", sketch, ddf, ddf.npartitions, score=score, label=label, weight=weight, pos_label=pos_label,
        thresholds=thresholds, positive_if=positive_if, ci=ci, by=by, time=time, window=window, grid=grid,
        nan_policy=nan_policy,
    )
