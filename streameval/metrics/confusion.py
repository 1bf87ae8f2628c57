"""Confusion counts at a threshold, and every rate built on them.

Definitions follow scikit-learn where it has the metric (accuracy, balanced accuracy, precision,
recall, F-beta, MCC, Jaccard) including its zero-division convention: an undefined ratio warns
(:class:`UndefinedMetricWarning`) and returns 0.0, except MCC, which returns 0.0 silently as
``matthews_corrcoef`` does. Rates scikit-learn does not define (specificity, NPV, P4, lift, ...)
warn and return NaN when their denominator is zero.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InexactThresholdWarning, UndefinedMetricWarning
from .table import BinTable

__all__ = ["Confusion", "confusion_at", "confusion_from_counts"]


def _ratio(num: float, den: float, name: str, zero: float = 0.0) -> float:
    if den == 0:
        warnings.warn(
            f"{name} is ill-defined (denominator 0); returning {zero}",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return zero
    return num / den


@dataclass(frozen=True)
class Confusion:
    """Weighted confusion counts at one threshold (positive iff ``score >= threshold``, or
    ``score > threshold`` when ``positive_if == ">"``).

    Attributes
    ----------
    tp, fp, fn, tn : float
        True/false positives/negatives (weighted; row counts when unweighted).
    threshold : float
        The threshold the counts hold at.
    requested_threshold : float
        The threshold asked for. Differs from ``threshold`` only when the requested one fell
        inside a bin whose scores straddle it; then ``exact`` is False, the counts are those at
        the nearest exact threshold, and ``tp_bounds``/``fp_bounds`` bound the counts at the
        requested one.
    exact : bool
        Whether the counts hold at ``requested_threshold``.
    tp_bounds, fp_bounds : tuple of float
        ``(lower, upper)`` of ``tp`` and ``fp`` at ``requested_threshold``.

    References
    ----------
    .. [1] Powers (2011). "Evaluation: from precision, recall and F-measure to ROC, informedness,
       markedness & correlation". Journal of Machine Learning Technologies 2(1).
    """

    tp: float
    fp: float
    fn: float
    tn: float
    threshold: float = math.nan
    requested_threshold: float = math.nan
    exact: bool = True
    tp_bounds: tuple[float, float] = field(default=(math.nan, math.nan))
    fp_bounds: tuple[float, float] = field(default=(math.nan, math.nan))
    positive_if: str = ">="

    # -- totals ------------------------------------------------------------------------------
    @property
    def total(self) -> float:
        """All weight: ``tp + fp + fn + tn``."""
        return self.tp + self.fp + self.fn + self.tn

    @property
    def positives(self) -> float:
        """Actual positives ``tp + fn``."""
        return self.tp + self.fn

    @property
    def negatives(self) -> float:
        """Actual negatives ``fp + tn``."""
        return self.fp + self.tn

    # -- rates --------------------------------------------------------------------------------
    @property
    def accuracy(self) -> float:
        """``(tp + tn) / total``."""
        return _ratio(self.tp + self.tn, self.total, "accuracy")

    @property
    def recall(self) -> float:
        """Recall, sensitivity, true positive rate: ``tp / (tp + fn)``."""
        return _ratio(self.tp, self.positives, "recall")

    tpr = sensitivity = recall

    @property
    def specificity(self) -> float:
        """Specificity, true negative rate: ``tn / (tn + fp)``."""
        return _ratio(self.tn, self.negatives, "specificity", math.nan)

    tnr = specificity

    @property
    def precision(self) -> float:
        """Precision, positive predictive value: ``tp / (tp + fp)``."""
        return _ratio(self.tp, self.tp + self.fp, "precision")

    ppv = precision

    @property
    def npv(self) -> float:
        """Negative predictive value: ``tn / (tn + fn)``."""
        return _ratio(self.tn, self.tn + self.fn, "npv", math.nan)

    @property
    def fpr(self) -> float:
        """False positive rate (fall-out, false accept rate): ``fp / (fp + tn)``."""
        return _ratio(self.fp, self.negatives, "fpr", math.nan)

    @property
    def fnr(self) -> float:
        """False negative rate (miss rate, false reject rate): ``fn / (fn + tp)``."""
        return _ratio(self.fn, self.positives, "fnr", math.nan)

    @property
    def false_accept_rate(self) -> float:
        """FAR in biometrics (ISO/IEC 19795-1): the false positive rate."""
        return self.fpr

    @property
    def false_reject_rate(self) -> float:
        """FRR in biometrics (ISO/IEC 19795-1): the false negative rate."""
        return self.fnr

    @property
    def balanced_accuracy(self) -> float:
        """``(tpr + tnr) / 2`` (Brodersen et al. 2010; scikit-learn ``balanced_accuracy_score``)."""
        rates = [num / den for num, den in ((self.tp, self.positives), (self.tn, self.negatives)) if den > 0]
        if len(rates) < 2:
            warnings.warn(
                "balanced accuracy with only one class present; averaging the recall of the "
                "classes present, as scikit-learn does",
                UndefinedMetricWarning,
                stacklevel=2,
            )
        return float(np.mean(rates)) if rates else math.nan

    def f_beta(self, beta: float) -> float:
        """F-beta score ``(1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)`` (van Rijsbergen 1979).

        ``beta=0`` is precision and ``beta=inf`` is recall (the limits), as in scikit-learn.

        Raises
        ------
        ValueError
            If ``beta`` is negative.
        """
        if not beta >= 0:
            raise ValueError(f"beta must be >= 0 (inf for recall), got {beta!r}")
        if math.isinf(beta):  # the limit: F-beta -> recall (scikit-learn's fbeta_score does the same)
            return _ratio(self.tp, self.positives, "F-score")
        b2 = beta * beta
        return _ratio((1 + b2) * self.tp, (1 + b2) * self.tp + b2 * self.fn + self.fp, "F-score")

    @property
    def f1(self) -> float:
        """F1 score ``2 tp / (2 tp + fp + fn)``."""
        return self.f_beta(1.0)

    @property
    def jaccard(self) -> float:
        """Jaccard index (critical success index) ``tp / (tp + fp + fn)``."""
        return _ratio(self.tp, self.tp + self.fp + self.fn, "jaccard")

    @property
    def mcc(self) -> float:
        """Matthews correlation coefficient (Matthews 1975); 0.0 when undefined, as scikit-learn."""
        tp, fp, fn, tn = self.tp, self.fp, self.fn, self.tn
        den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return 0.0 if den == 0 else (tp * tn - fp * fn) / den

    @property
    def p4(self) -> float:
        """P4 metric ``4 tp tn / (4 tp tn + (tp + tn)(fp + fn))`` (Sitarz 2023, arXiv:2210.11997)."""
        tp, fp, fn, tn = self.tp, self.fp, self.fn, self.tn
        return _ratio(4 * tp * tn, 4 * tp * tn + (tp + tn) * (fp + fn), "P4", math.nan)

    @property
    def g_mean(self) -> float:
        """Geometric mean of TPR and TNR, ``sqrt(tpr * tnr)`` (Kubat & Matwin 1997)."""
        tpr, tnr = self.recall, self.specificity
        return math.sqrt(tpr * tnr) if tpr >= 0 and tnr >= 0 else math.nan

    @property
    def fowlkes_mallows(self) -> float:
        """Fowlkes-Mallows index, ``sqrt(precision * recall)`` (Fowlkes & Mallows 1983)."""
        return math.sqrt(self.precision * self.recall)

    @property
    def informedness(self) -> float:
        """Informedness, Youden's J statistic: ``tpr + tnr - 1`` (Youden 1950)."""
        return self.recall + self.specificity - 1.0

    youden_j = informedness

    @property
    def markedness(self) -> float:
        """Markedness ``ppv + npv - 1`` (Powers 2011)."""
        return self.precision + self.npv - 1.0

    @property
    def prevalence(self) -> float:
        """Share of actual positives ``(tp + fn) / total``."""
        return _ratio(self.positives, self.total, "prevalence", math.nan)

    @property
    def lift(self) -> float:
        """Lift ``precision / prevalence``: how much richer in positives the predicted positives are."""
        return _ratio(self.precision, self.prevalence, "lift", math.nan)

    @property
    def baseline_accuracy(self) -> float:
        """Accuracy of always predicting the majority class: ``max(P, N) / total``."""
        return _ratio(max(self.positives, self.negatives), self.total, "baseline accuracy", math.nan)

    # -- export -------------------------------------------------------------------------------
    RATES = (
        "accuracy", "balanced_accuracy", "precision", "recall", "specificity", "npv", "fpr",
        "fnr", "f1", "mcc", "p4", "jaccard", "informedness", "markedness", "prevalence", "lift",
        "baseline_accuracy", "g_mean", "fowlkes_mallows",
    )

    def to_dict(self) -> dict[str, Any]:
        """Counts, thresholds and every rate, for reports (rates that are undefined are NaN)."""
        out: dict[str, Any] = {
            "threshold": self.threshold,
            "requested_threshold": self.requested_threshold,
            "positive_if": self.positive_if,
            "exact": self.exact,
            "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
        }
        if not self.exact:
            out["tp_bounds"] = list(self.tp_bounds)
            out["fp_bounds"] = list(self.fp_bounds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            for name in self.RATES:
                out[name] = getattr(self, name)
        return out


def confusion_from_counts(tp: float, fp: float, P: float, N: float, threshold: float) -> Confusion:
    """An exact :class:`Confusion` from positive-predicted counts and class totals."""
    tp, fp = float(tp), float(fp)
    return Confusion(
        tp=tp, fp=fp, fn=float(P - tp), tn=float(N - fp), threshold=threshold,
        requested_threshold=threshold, exact=True, tp_bounds=(tp, tp), fp_bounds=(fp, fp),
    )


def confusion_at(t: BinTable, key: int, threshold: float) -> Confusion:
    """Confusion counts at ``threshold``, whose grid bin is ``key``.

    Exact unless ``threshold`` falls strictly inside the score range of a class in its own bin;
    then the counts at the nearest exact threshold (the bin's smallest score, or the next score
    above the bin) are returned with ``exact=False`` and an :class:`InexactThresholdWarning`.
    """
    if math.isnan(threshold):
        raise ValueError("threshold must not be NaN")
    desc = t.keys  # descending
    n_above = int(np.searchsorted(-desc, -key, side="left"))  # bins with key > `key`
    tp_above = float(t.tp[n_above - 1]) if n_above else 0.0
    fp_above = float(t.fp[n_above - 1]) if n_above else 0.0
    if n_above == len(t) or desc[n_above] != key:
        return confusion_from_counts(tp_above, fp_above, t.P, t.N, threshold)
    i = n_above
    p, n = float(t.pos[i]), float(t.neg[i])
    tp_lo = tp_above + (p if t.pos_min[i] >= threshold else 0.0)
    tp_hi = tp_above + (0.0 if t.pos_max[i] < threshold else p)
    fp_lo = fp_above + (n if t.neg_min[i] >= threshold else 0.0)
    fp_hi = fp_above + (0.0 if t.neg_max[i] < threshold else n)
    if tp_lo == tp_hi and fp_lo == fp_hi:
        return confusion_from_counts(tp_lo, fp_lo, t.P, t.N, threshold)
    below = float(t.lo[i])
    above = float(t.lo[i - 1]) if i > 0 else float(np.nextafter(t.hi[i], np.inf))
    use_below = threshold - below <= above - threshold
    snapped = below if use_below else above
    tp, fp = (tp_above + p, fp_above + n) if use_below else (tp_above, fp_above)
    warnings.warn(
        f"threshold {threshold!r} falls inside a bin holding scores from {below!r} to "
        f"{float(t.hi[i])!r} on both sides of it; reporting counts at the nearest exact threshold "
        f"{snapped!r} (tp in [{tp_lo:g}, {tp_hi:g}], fp in [{fp_lo:g}, {fp_hi:g}] at the requested "
        "one). For exact counts at this threshold, add it to the grid as a cut: "
        f"grid.with_cuts({threshold!r}), or append '@{threshold!r}' to --grid on the command line.",
        InexactThresholdWarning,
        stacklevel=3,
    )
    return Confusion(
        tp=tp, fp=fp, fn=t.P - tp, tn=t.N - fp, threshold=snapped, requested_threshold=threshold,
        exact=False, tp_bounds=(tp_lo, tp_hi), fp_bounds=(fp_lo, fp_hi),
    )
