"""Bootstrap confidence intervals of multiclass metrics, from a sketch's Poisson replicates.

Each replicate's confusion matrix goes through the same pure metric function as the sketch's own
(:mod:`streameval.metrics.multiclass`); one-vs-rest ROC-AUC takes each class's replicate AUCs from
the binary path (:func:`streameval.stats.bootstrap.replicate_estimates`, all replicates at once) and
averages them per replicate as :func:`streameval.metrics.multiclass.roc_auc_ovr` averages classes.
The interval is the percentile interval of :func:`streameval.stats.bootstrap.percentile_interval`;
for ROC-AUC on binned scores it runs from the lower bounds' lower quantile to the upper bounds'
upper quantile, so it contains the exact rows' interval.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..errors import UndefinedMetricWarning, UsageError
from ..metrics import multiclass as mm
from ..metrics.estimate import Estimate

if TYPE_CHECKING:
    from ..stats.interval import ConfidenceInterval
    from .multiclass import MulticlassSketch

__all__ = ["multiclass_bootstrap_ci", "CONFUSION_METRICS"]

CONFUSION_METRICS = ("accuracy", "balanced_accuracy", "precision", "recall", "f1", "cohen_kappa", "matthews_corrcoef")
_ALIASES = {"mcc": "matthews_corrcoef", "kappa": "cohen_kappa", "auc": "roc_auc", "roc_auc_ovr": "roc_auc"}
_AVERAGED = ("precision", "recall", "f1")


def _parse(metric: str, average: str | None) -> tuple[str, str | None]:
    """``(name, average)`` of a metric name, also in scikit-learn's scorer spelling
    (``"f1_macro"``, ``"recall_weighted"``, ``"roc_auc_ovr_weighted"``)."""
    if not isinstance(metric, str):
        raise UsageError(f"metric must be a name, got {type(metric).__name__}")
    name = metric
    for suffix in ("macro", "micro", "weighted"):
        base = metric[: -len(suffix) - 1]
        if metric.endswith("_" + suffix) and (base in _AVERAGED or _ALIASES.get(base, base) == "roc_auc"):
            name, average = base, suffix
    name = _ALIASES.get(name, name)
    if name in _AVERAGED and average not in ("macro", "micro", "weighted"):
        raise UsageError(f"average must be 'macro', 'micro' or 'weighted' for {name}, got {average!r}")
    if name == "roc_auc" and average not in ("macro", "weighted"):
        raise UsageError(
            f"a bootstrap interval of the multiclass ROC-AUC is one-vs-rest with average 'macro' or 'weighted', "
            f"got {average!r}"
        )
    if name not in (*CONFUSION_METRICS, "roc_auc"):
        raise UsageError(
            f"unknown metric {metric!r} for a multiclass bootstrap interval: use {', '.join(CONFUSION_METRICS)} "
            "(precision/recall/f1 with average='macro'|'micro'|'weighted') or roc_auc (one-vs-rest, average "
            "'macro' or 'weighted')"
        )
    return name, average


def _confusion_metric(name: str, average: str | None, zero_division: Any) -> Callable[[np.ndarray], float]:
    """The pure metric function of a confusion matrix for ``name``."""
    if name in _AVERAGED:
        at = _AVERAGED.index(name)
        return lambda c: float(mm.precision_recall_fscore_support(c, 1.0, average, zero_division)[at])
    if name == "accuracy":
        return mm.accuracy
    if name == "balanced_accuracy":
        return lambda c: mm.balanced_accuracy(c)
    if name == "cohen_kappa":
        return lambda c: mm.cohen_kappa(c)
    return mm.matthews_corrcoef


def _replicate_roc_auc(sketch: "MulticlassSketch", average: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate bounds ``(lo, hi)`` of the one-vs-rest ROC-AUC, averaged over classes."""
    from ..stats.bootstrap import replicate_estimates

    rep = sketch.replicates
    assert rep is not None and sketch._classes is not None
    per_class = [replicate_estimates(sketch.one_vs_rest(label), "roc_auc") for label in sketch._classes]
    support = rep.confusion.sum(axis=2)  # (R, K): each replicate's class weights
    lo, hi = np.empty(rep.n_replicates), np.empty(rep.n_replicates)
    for r in range(rep.n_replicates):
        estimates = [Estimate(math.nan, float(a[r]), float(b[r])) for a, b in per_class]
        avg = mm.average_estimates(estimates, support[r] if average == "weighted" else None)
        lo[r], hi[r] = avg.lower, avg.upper
    return lo, hi


def multiclass_bootstrap_ci(sketch: "MulticlassSketch", metric: str, level: float = 0.95,
                            average: str | None = "macro", zero_division: Any = "warn") -> "ConfidenceInterval":
    """Percentile bootstrap interval of a multiclass metric (see the module docstring).

    Parameters
    ----------
    sketch : MulticlassSketch
        Built with ``bootstrap=R``.
    metric : str
        One of :data:`CONFUSION_METRICS` or ``"roc_auc"`` (one-vs-rest); scikit-learn's scorer
        names such as ``"f1_macro"`` or ``"roc_auc_ovr_weighted"`` also work.
    level : float in (0, 1)
    average : {"macro", "micro", "weighted"}
        For precision, recall and F1; "macro" or "weighted" for ROC-AUC.
    zero_division : {"warn", 0.0, 1.0, nan}
        As :meth:`MulticlassSketch.precision_recall_fscore_support`.

    Returns
    -------
    ConfidenceInterval
        ``estimate`` the sketch's own value (with its binning bounds for ROC-AUC); the method
        ``"bootstrap (Poisson, percentile, R=...)"``.

    Raises
    ------
    UsageError
        No replicates, no rows, an unknown metric or average, a level outside (0, 1); ROC-AUC of
        a sketch fed hard predictions only.

    Warns
    -----
    UndefinedMetricWarning
        When replicates are undefined (left out; NaN when more than half are), or too few for the
        level's tails.
    """
    from ..stats.bootstrap import percentile_interval
    from ..stats.interval import ConfidenceInterval, check_level

    level = check_level(level)
    name, average = _parse(metric, average)
    rep = sketch.replicates
    if rep is None:
        raise UsageError(
            "this sketch has no bootstrap replicates: build it with MulticlassSketch(..., bootstrap=200), ideally "
            "updating it with row_id="
        )
    if sketch._classes is None:
        raise UsageError("this sketch has no rows yet")
    widened = False
    if name == "roc_auc":
        sketch._need_scores("roc_auc")
        assert average is not None
        lo, hi = _replicate_roc_auc(sketch, average)
        own = sketch.roc_auc(multi_class="ovr", average=average)
        assert isinstance(own, Estimate)
        estimate = own
        widened = bool(np.any(lo != hi))
    else:
        fn = _confusion_metric(name, average, zero_division)
        estimate = Estimate.point(fn(sketch.confusion))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            lo = np.array([fn(c) for c in rep.confusion], dtype=np.float64)
        hi = lo
    label = name if name not in (*_AVERAGED, "roc_auc") else f"{name} ({average})"
    ci_lo, ci_hi = percentile_interval(lo, hi, level, f"the bootstrap interval of {label}")
    method = f"bootstrap (Poisson, percentile, R={rep.n_replicates})"
    return ConfidenceInterval(estimate, ci_lo, ci_hi, level, method, widened=widened)
