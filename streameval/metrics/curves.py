"""ROC, precision-recall and DET curves at the sketch's exact thresholds.

Each occupied bin contributes one point: the counts at threshold = the bin's smallest score, which
are exact. On discrete scores (one score value per bin) the arrays equal scikit-learn's; on
continuous scores they are a subset of scikit-learn's points (the ones between are inside bins).
Conventions follow scikit-learn: positive iff ``score >= threshold``; the ROC curve starts at
``(0, 0)`` with threshold ``+inf``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import UndefinedMetricWarning
from .table import BinTable, FloatArray

__all__ = ["counts_at_thresholds", "roc_curve", "precision_recall_curve", "det_curve"]


def counts_at_thresholds(t: BinTable) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Confusion counts at every exact threshold, in decreasing threshold order.

    Returns
    -------
    tn, fp, fn, tp : ndarray of float64, shape (k,)
        Weighted counts when predicting positive iff ``score >= thresholds[i]``.
    thresholds : ndarray of float64, shape (k,)
        Decreasing; ``thresholds[i]`` is the smallest score in the ``i``-th highest occupied bin.
    """
    tp, fp = t.tp, t.fp
    return t.N - fp, fp, t.P - tp, tp, t.lo


def _keep_roc(fps: FloatArray, tps: FloatArray) -> np.ndarray:
    # scikit-learn's drop_intermediate rule: drop points collinear with both neighbours
    # (zero second difference in both coordinates).
    inner = np.logical_or(np.diff(fps, 2), np.diff(tps, 2))
    return np.flatnonzero(np.r_[True, inner, True])


def _keep_tps_changes(tps: FloatArray) -> np.ndarray:
    # Keep only the first and last point of each run of equal tp (scikit-learn's PR/DET rule).
    inner = np.logical_or(np.diff(tps[:-1]), np.diff(tps[1:]))
    return np.flatnonzero(np.r_[True, inner, True])


def roc_curve(t: BinTable, drop_intermediate: bool = True) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Receiver operating characteristic curve.

    Parameters
    ----------
    t : BinTable
    drop_intermediate : bool, default True
        Drop points on straight segments between their neighbours, as scikit-learn does; the area
        and shape are unchanged. With non-integer weights the sketch sums weights per bin and
        scikit-learn per row, so a point collinear only up to rounding may be kept by one and
        dropped by the other.

    Returns
    -------
    fpr, tpr : ndarray of float64, shape (m,)
        Increasing false and true positive rates; ``fpr[i]``/``tpr[i]`` is the rate at
        ``thresholds[i]``. NaN (with a warning) when a class is absent.
    thresholds : ndarray of float64, shape (m,)
        Decreasing; ``thresholds[0] = inf`` (nothing predicted positive).

    References
    ----------
    .. [1] Fawcett (2006). "An introduction to ROC analysis". Pattern Recognition Letters 27(8).
    """
    _, fps, _, tps, thr = counts_at_thresholds(t)
    if drop_intermediate and fps.shape[0] > 2:
        keep = _keep_roc(fps, tps)
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    fps = np.r_[0.0, fps]
    tps = np.r_[0.0, tps]
    thr = np.r_[np.inf, thr]
    return _rate(fps, t.N, "negative"), _rate(tps, t.P, "positive"), thr


def _rate(x: FloatArray, total: float, what: str) -> FloatArray:
    if total <= 0:
        warnings.warn(
            f"no {what} samples; the {'false' if what == 'negative' else 'true'} positive rate is "
            "undefined (NaN)",
            UndefinedMetricWarning,
            stacklevel=4,
        )
        return np.full(x.shape, np.nan)
    return x / total


def precision_recall_curve(
    t: BinTable, drop_intermediate: bool = False
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Precision-recall pairs at the exact thresholds.

    Returns
    -------
    precision : ndarray of float64, shape (m + 1,)
        ``precision[i]`` at ``thresholds[i]``; the last element is 1 (scikit-learn's convention).
    recall : ndarray of float64, shape (m + 1,)
        Decreasing; the last element is 0. All ones (with a warning) when there are no positives.
    thresholds : ndarray of float64, shape (m,)
        Increasing.

    References
    ----------
    .. [1] Davis & Goadrich (2006). "The relationship between precision-recall and ROC curves".
       ICML.
    """
    _, fps, _, tps, thr = counts_at_thresholds(t)
    if drop_intermediate and fps.shape[0] > 2:
        keep = _keep_tps_changes(tps)
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    ps = tps + fps
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(ps != 0, tps / ps, 0.0)
    if t.P <= 0:
        warnings.warn(
            "No positive class found in y_true, recall is set to one for all thresholds.",
            UserWarning,
            stacklevel=3,
        )
        recall = np.ones_like(tps)
    else:
        recall = tps / t.P
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0], thr[::-1].copy()


def det_curve(t: BinTable, drop_intermediate: bool = False) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Detection error tradeoff: false positive rate against false negative rate.

    Returns
    -------
    fpr : ndarray of float64, shape (m,)
        False positive (false accept) rate, decreasing.
    fnr : ndarray of float64, shape (m,)
        False negative (false reject) rate, increasing.
    thresholds : ndarray of float64, shape (m,)
        Increasing; may start with the smallest score and end with ``inf``. Points are trimmed as
        scikit-learn's ``det_curve``: from the last point with zero false negatives to the first
        with zero false positives.

    Raises
    ------
    ValueError
        If only one class is present.

    References
    ----------
    .. [1] Martin et al. (1997). "The DET curve in assessment of detection task performance".
       Eurospeech.
    """
    if t.P <= 0 or t.N <= 0:
        raise ValueError("Only one class is present in y_true; the DET curve is not defined in that case.")
    _, fps, _, tps, thr = counts_at_thresholds(t)
    fps = np.r_[0.0, fps]
    tps = np.r_[0.0, tps]
    thr = np.r_[np.inf, thr]
    if drop_intermediate and fps.shape[0] > 2:
        keep = _keep_tps_changes(tps)
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    fns = tps[-1] - tps
    first = int(np.searchsorted(fps, fps[0], side="right")) - 1
    last = int(np.searchsorted(tps, tps[-1])) + 1
    sl = slice(max(first, 0), last)
    return fps[sl][::-1] / t.N, fns[sl][::-1] / t.P, thr[sl][::-1].copy()
