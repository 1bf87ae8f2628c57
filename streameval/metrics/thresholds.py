"""Threshold analysis: EER, KS, best threshold for a metric, targets, top-k.

Searches run over the sketch's exact thresholds (one per occupied bin, plus ``+inf`` where
nothing is predicted positive); on discrete scores that is every distinct score, so the answer
is the one a search over the raw rows would give. On continuous scores a better threshold may hide
inside a bin; the quantities that can be bounded (EER, KS, top-k) say so with an interval.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from ..errors import UndefinedMetricWarning
from .confusion import Confusion, confusion_from_counts
from .curves import counts_at_thresholds
from .estimate import NAN, Estimate
from .table import BinTable, FloatArray

__all__ = [
    "ThresholdResult",
    "equal_error_rate",
    "ks_statistic",
    "best_threshold",
    "threshold_at",
    "top_k",
    "r_precision",
    "OBJECTIVES",
    "RULES",
    "check_rule",
    "strict_result",
]

RULES = (">=", ">")
"""Threshold rules: positive iff ``score >= t`` (scikit-learn's, the default) or ``score > t``."""


def check_rule(positive_if: str) -> str:
    """Validate a threshold rule.

    Raises
    ------
    ValueError
        If ``positive_if`` is not ``">="`` or ``">"``.
    """
    if positive_if not in RULES:
        raise ValueError(f"positive_if must be '>=' or '>', got {positive_if!r}")
    return positive_if


def strict_result(t: BinTable, r: "ThresholdResult") -> "ThresholdResult":
    """``r`` restated for the rule ``score > threshold`` (the same rows predicted positive).

    Every threshold the searches return is exact (splits no bin), so the ``>`` threshold is the
    largest score below it (:meth:`BinTable.strict_thresholds`) and the counts do not change.
    """
    x = float(t.strict_thresholds([r.threshold])[0])
    conf = replace(r.confusion, threshold=x, requested_threshold=x, positive_if=">")
    return replace(r, threshold=x, confusion=conf)


@dataclass(frozen=True)
class ThresholdResult:
    """A chosen threshold, the value of the quantity there, and the confusion counts there.

    Attributes
    ----------
    threshold : float
        Predict positive iff ``score >= threshold`` (``score > threshold`` when
        ``confusion.positive_if == ">"``).
    value : Estimate
        The quantity (EER, KS, the objective); an interval when it is not exact.
    confusion : Confusion
        Counts at ``threshold`` (always exact).
    """

    threshold: float
    value: Estimate
    confusion: Confusion


def _curve(t: BinTable) -> tuple[FloatArray, FloatArray, FloatArray]:
    # (tp, fp, thresholds) with the "nothing positive" point at +inf first.
    _, fp, _, tp, thr = counts_at_thresholds(t)
    return np.r_[0.0, tp], np.r_[0.0, fp], np.r_[np.inf, thr]


def _require_both(t: BinTable, what: str) -> None:
    if t.P <= 0 or t.N <= 0:
        raise ValueError(f"{what} needs both classes; got {t.P:g} positive and {t.N:g} negative weight")


def equal_error_rate(t: BinTable) -> ThresholdResult:
    """Equal error rate: where the false accept rate (FPR) equals the false reject rate (FNR).

    Between the two exact thresholds where FPR - FNR changes sign, the crossing is found by linear
    interpolation (the convention of ISO/IEC 19795-1 style DET analysis). The exact EER lies in the
    overlap of the two rates' ranges between those points, which is the reported interval.

    Returns
    -------
    ThresholdResult
        ``threshold`` is the exact threshold of the two closest to the crossing.

    Raises
    ------
    ValueError
        If a class is absent.
    """
    _require_both(t, "equal error rate")
    tp, fp, thr = _curve(t)
    fpr = fp / t.N
    fnr = 1.0 - tp / t.P
    i = int(np.argmax(fpr >= fnr))  # first point past the crossing; fpr[-1] = 1 >= fnr[-1] = 0
    if i == 0:
        j = 0
        value = Estimate.point(fpr[0])
    else:
        a0, b0, a1, b1 = fpr[i - 1], fnr[i - 1], fpr[i], fnr[i]
        d0, d1 = b0 - a0, a1 - b1  # both >= 0
        lam = d0 / (d0 + d1) if d0 + d1 > 0 else 0.0
        est = a0 + lam * (a1 - a0)
        lo, hi = max(a0, b1), min(a1, b0)
        value = Estimate(est, min(lo, est), max(hi, est))
        j = i if abs(a1 - b1) <= abs(a0 - b0) else i - 1
    conf = confusion_from_counts(tp[j], fp[j], t.P, t.N, float(thr[j]))
    return ThresholdResult(float(thr[j]), value, conf)


def ks_statistic(t: BinTable) -> ThresholdResult:
    """Kolmogorov-Smirnov statistic ``max_t (TPR(t) - FPR(t))`` and where it is reached.

    The maximum over exact thresholds is a lower bound (and the value); inside a bin the
    positives may come first, so ``max_i (TPR after bin i - FPR before bin i)`` over bins
    not known to put all negatives first is an upper bound.

    References
    ----------
    .. [1] Kolmogorov (1933); Smirnov (1948). In credit scoring: Thomas, Edelman, Crook (2002).
       "Credit Scoring and Its Applications", SIAM.
    """
    _require_both(t, "KS statistic")
    tp, fp, thr = _curve(t)
    diff = tp / t.P - fp / t.N
    j = int(np.argmax(diff))
    lower, threshold, tp_j, fp_j = float(diff[j]), float(thr[j]), tp[j], fp[j]
    both = (t.pos > 0) & (t.neg > 0)
    # A bin whose positives all score above its negatives has one more exact point inside it,
    # at threshold = its smallest positive score.
    split = both & (t.pos_min > t.neg_max)
    if split.any():
        inner = t.tp[split] / t.P - t.fp_before[split] / t.N
        k = int(np.argmax(inner))
        if inner[k] > lower:
            lower, threshold = float(inner[k]), float(t.pos_min[split][k])
            tp_j, fp_j = t.tp[split][k], t.fp_before[split][k]
    # Where positives and negatives interleave, a point inside the bin may do better.
    open_bins = both & ~split & ~(t.pos_max <= t.neg_min)
    upper = lower
    if open_bins.any():
        cand = t.tp[open_bins] / t.P - t.fp_before[open_bins] / t.N
        upper = max(lower, float(cand.max()))
    conf = confusion_from_counts(tp_j, fp_j, t.P, t.N, threshold)
    return ThresholdResult(threshold, Estimate(lower, lower, upper), conf)


def _objective_arrays(
    tp: FloatArray, fp: FloatArray, P: float, N: float, beta: float, cost_fp: float, cost_fn: float,
    prevalence: float | None = None,
) -> dict[str, FloatArray]:
    fn, tn = P - tp, N - fp
    total = P + N
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = tp / P if P > 0 else np.full_like(tp, np.nan)
        tnr = tn / N if N > 0 else np.full_like(tp, np.nan)
        b2 = beta * beta
        if np.isinf(beta):  # F-beta -> recall as beta -> inf
            f_beta = np.where(P > 0, tpr, 0.0)
        else:
            f_beta = np.where((1 + b2) * tp + b2 * fn + fp > 0, (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp), 0.0)
        den_mcc = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return {
            "f1": np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0),
            "f_beta": f_beta,
            "accuracy": (tp + tn) / total,
            "balanced_accuracy": 0.5 * (tpr + tnr),
            "mcc": np.where(den_mcc > 0, (tp * tn - fp * fn) / den_mcc, 0.0),
            "informedness": tpr + tnr - 1.0,
            "youden_j": tpr + tnr - 1.0,
            "cost": -(cost_fp * fp + cost_fn * fn) / total if prevalence is None
            else -(cost_fp * (1.0 - prevalence) * (fp / N if N > 0 else 0.0 * fp)
                   + cost_fn * prevalence * (fn / P if P > 0 else 0.0 * fn)),
            "g_mean": np.sqrt(np.clip(tpr * tnr, 0.0, None)),
            "fowlkes_mallows": np.where(tp > 0, np.sqrt(np.where(tp > 0, tp / np.where(tp + fp > 0, tp + fp, 1.0), 0.0) * tpr), 0.0),
            "roc_closest": -np.sqrt((1.0 - tnr) ** 2 + (1.0 - tpr) ** 2),
            "pr_closest": -np.sqrt((1.0 - np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1.0), 1.0)) ** 2
                                   + (1.0 - tpr) ** 2),
        }


OBJECTIVES = ("f1", "f_beta", "accuracy", "balanced_accuracy", "mcc", "informedness", "youden_j", "cost", "g_mean",
              "fowlkes_mallows", "roc_closest", "pr_closest")
_MINIMIZED = ("cost", "roc_closest", "pr_closest")  # reported as the positive distance or cost


def best_threshold(
    t: BinTable,
    metric: str | Callable[..., Any] = "f1",
    *,
    beta: float = 1.0,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
    prevalence: float | None = None,
) -> ThresholdResult:
    """The exact threshold that maximizes a metric (or minimizes expected cost or a distance).

    Parameters
    ----------
    metric : str or callable
        ``"f1"``, ``"f_beta"``, ``"accuracy"``, ``"balanced_accuracy"``, ``"mcc"``,
        ``"informedness"``/``"youden_j"``, ``"g_mean"`` (sqrt(TPR * TNR)), ``"fowlkes_mallows"``
        (sqrt(precision * recall)), ``"cost"``, ``"roc_closest"`` (the ROC point nearest (0, 1),
        Perkins & Schisterman 2006) or ``"pr_closest"`` (the PR point nearest (1, 1)). Or a callable
        ``f(tp=, fp=, fn=, tn=, tpr=, fpr=, precision=, recall=)`` of arrays (one entry per exact
        threshold) returning the objective to maximize.
        ``"cost"`` minimizes ``(cost_fp * fp + cost_fn * fn) / total``, the expected cost per unit
        of weight (Elkan 2001), or with ``prevalence`` ``cost_fp (1 - prevalence) FPR + cost_fn
        prevalence FNR`` (the expected cost in a population with that prevalence). The ``value``
        of ``"cost"``, ``"roc_closest"`` and ``"pr_closest"`` is the (positive) cost or distance.
    beta : float, default 1.0
        For ``"f_beta"`` (``inf`` for recall).
    cost_fp, cost_fn : float, default 1.0
        For ``"cost"``.
    prevalence : float in [0, 1], optional
        For ``"cost"``: the deployment prevalence, if it differs from the sample's.

    Raises
    ------
    ValueError
        If ``metric`` is unknown, ``prevalence`` is outside [0, 1], or the sketch is empty.
    """
    if callable(metric):
        return _best_by_callable(t, metric)
    if prevalence is not None and not 0.0 <= prevalence <= 1.0:
        raise ValueError(f"prevalence must be in [0, 1], got {prevalence!r}")
    if metric not in OBJECTIVES:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(OBJECTIVES)}")
    if not beta >= 0:
        raise ValueError(f"beta must be >= 0 (inf for recall), got {beta!r}")
    if t.P + t.N <= 0:
        raise ValueError("the sketch is empty")
    tp, fp, thr = _curve(t)
    values = _objective_arrays(tp, fp, t.P, t.N, beta, cost_fp, cost_fn, prevalence)[metric]
    if np.all(np.isnan(values)):
        raise ValueError(f"{metric} is undefined at every threshold (a class is missing)")
    j = int(np.nanargmax(values))
    v = float(values[j])
    if metric in _MINIMIZED:
        v = -v
    conf = confusion_from_counts(tp[j], fp[j], t.P, t.N, float(thr[j]))
    return ThresholdResult(float(thr[j]), Estimate.point(v), conf)


def _best_by_callable(t: BinTable, objective: Callable[..., Any]) -> ThresholdResult:
    if t.P + t.N <= 0:
        raise ValueError("the sketch is empty")
    tp, fp, thr = _curve(t)
    fn, tn = t.P - tp, t.N - fp
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = tp / t.P if t.P > 0 else np.full_like(tp, np.nan)
        fpr = fp / t.N if t.N > 0 else np.full_like(tp, np.nan)
        precision = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
    values = np.asarray(objective(tp=tp, fp=fp, fn=fn, tn=tn, tpr=tpr, fpr=fpr, precision=precision, recall=tpr),
                        dtype=np.float64)
    if values.shape != tp.shape:
        raise ValueError(f"the objective must return one value per threshold ({tp.shape[0]}), got shape {values.shape}")
    if np.all(np.isnan(values)):
        raise ValueError("the objective is NaN at every threshold")
    j = int(np.nanargmax(values))
    conf = confusion_from_counts(tp[j], fp[j], t.P, t.N, float(thr[j]))
    return ThresholdResult(float(thr[j]), Estimate.point(float(values[j])), conf)


def threshold_at(
    t: BinTable, *, precision: float | None = None, recall: float | None = None, fpr: float | None = None
) -> ThresholdResult | None:
    """The exact threshold that reaches a target precision, recall or false positive rate.

    Exactly one target must be given:

    - ``recall=r``: the highest threshold with recall >= r;
    - ``precision=p``: the lowest threshold with precision >= p (the most recall at that precision);
    - ``fpr=f``: the lowest threshold with FPR <= f (the most recall at that false alarm rate).

    Returns
    -------
    ThresholdResult or None
        None, with an :class:`UndefinedMetricWarning`, when no threshold reaches the target.
    """
    given = {k: v for k, v in (("precision", precision), ("recall", recall), ("fpr", fpr)) if v is not None}
    if len(given) != 1:
        raise ValueError("give exactly one of precision=, recall=, fpr=")
    (name, target), = given.items()
    tp, fp, thr = _curve(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        if name == "recall":
            _require_both(t, "threshold_at(recall=...)")
            ok = tp / t.P >= target
            idx = np.flatnonzero(ok)
            j = int(idx[0]) if idx.size else -1
            achieved = tp / t.P
        elif name == "precision":
            prec = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
            idx = np.flatnonzero(prec >= target)
            j = int(idx[-1]) if idx.size else -1
            achieved = prec
        else:
            _require_both(t, "threshold_at(fpr=...)")
            rate = fp / t.N
            idx = np.flatnonzero(rate <= target)
            j = int(idx[-1]) if idx.size else -1
            achieved = rate
    if j < 0:
        warnings.warn(f"no threshold reaches {name} {target!r}", UndefinedMetricWarning, stacklevel=2)
        return None
    conf = confusion_from_counts(tp[j], fp[j], t.P, t.N, float(thr[j]))
    return ThresholdResult(float(thr[j]), Estimate.point(float(achieved[j])), conf)


@dataclass(frozen=True)
class TopK:
    """Metrics of the ``k`` highest-scored rows (weight units when weighted).

    Attributes
    ----------
    k : float
        Rows (weight) taken.
    tp : Estimate
        Positives among them; an interval when the cut falls inside a bin with both classes
        whose order is unknown (including ties at the cut, where the value is the expected count
        under random tie-breaking).
    precision, recall, lift : Estimate
        ``tp / k``, ``tp / P`` and ``precision / prevalence``.
    """

    k: float
    tp: Estimate
    precision: Estimate
    recall: Estimate
    lift: Estimate


def top_k(t: BinTable, k: float) -> TopK:
    """Precision, recall and lift among the ``k`` highest-scored rows.

    ``k`` larger than the total weight is clamped to it.

    Raises
    ------
    ValueError
        If ``k <= 0`` or the sketch is empty.
    """
    total = t.P + t.N
    if not k > 0:
        raise ValueError(f"k must be > 0, got {k!r}")
    if total <= 0:
        raise ValueError("the sketch is empty")
    k = min(float(k), total)
    cum = t.tp + t.fp
    i = int(np.searchsorted(cum, k, side="left"))  # first bin whose end reaches k
    i = min(i, len(t) - 1)
    tp0, fp0 = float(t.tp_before[i]), float(t.fp_before[i])
    m = k - tp0 - fp0
    p, n = float(t.pos[i]), float(t.neg[i])
    lo_in, hi_in = max(0.0, m - n), min(m, p)
    if t.pos_min[i] > t.neg_max[i] or n == 0:
        lo_in = hi_in
    elif t.pos_max[i] < t.neg_min[i] or p == 0:
        hi_in = lo_in
    mid = m * p / (p + n) if (t.pure[i] and lo_in != hi_in) else 0.5 * (lo_in + hi_in)
    tp = Estimate(tp0 + mid, tp0 + lo_in, tp0 + hi_in)

    def scale(f: Callable[[float], float]) -> Estimate:
        return Estimate(f(tp.value), f(tp.lower), f(tp.upper))

    prevalence = t.P / total
    if t.P > 0:
        recall = scale(lambda x: x / t.P)
        lift = scale(lambda x: x / k / prevalence)
    else:
        recall = lift = NAN
    return TopK(k=k, tp=tp, precision=scale(lambda x: x / k), recall=recall, lift=lift)


def r_precision(t: BinTable) -> Estimate:
    """R-precision: precision among the top ``R = P`` rows, where precision equals recall.

    This is the precision-recall break-even point [1]_.

    References
    ----------
    .. [1] Manning, Raghavan, Schütze (2008). "Introduction to Information Retrieval", ch. 8.4.
    """
    if t.P <= 0:
        warnings.warn("no positives; R-precision is undefined", UndefinedMetricWarning, stacklevel=2)
        return NAN
    return top_k(t, t.P).precision


