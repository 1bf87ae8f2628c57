"""Probability metrics: log loss and Brier score (exact running sums) and calibration.

Log loss and Brier score are kept by the sketch as exact running sums over rows, so they are exact
up to floating-point rounding, whatever the grid. Calibration is computed from the per-bin score
sums; a sketch bin whose scores straddle a calibration-bin edge is assigned by its mean score,
which is reported through ``exact=False``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import UndefinedMetricWarning
from .estimate import Estimate
from .table import BinTable, FloatArray

__all__ = ["ProbabilitySums", "log_loss", "log_loss_clipped", "brier_score", "CalibrationCurve", "calibration_curve"]


@dataclass(frozen=True)
class ProbabilitySums:
    """The exact running sums a sketch keeps for probability metrics.

    Attributes
    ----------
    weight : float
        Weight of the rows with a score in [0, 1] (the rows both sums cover).
    n_outside : int
        Rows with a score outside [0, 1], left out of both sums.
    brier_sum : float
        ``sum w (y - s)^2``.
    log_loss_sum : float
        ``sum -w log(clip(p_true, eps, 1 - eps))``, ``p_true`` being the score of positives and
        ``1 - score`` of negatives.
    eps : float
        The clipping constant used.
    """

    weight: float
    n_outside: int
    brier_sum: float
    log_loss_sum: float
    eps: float


def _check(sums: ProbabilitySums, what: str) -> bool:
    if sums.n_outside:  # scikit-learn raises too: these scores are not probabilities
        raise ValueError(
            f"{sums.n_outside} score(s) lie outside [0, 1]; {what} is defined for probabilities only "
            "(for logits, apply a sigmoid before evaluating)"
        )
    if sums.weight <= 0:
        warnings.warn(f"no rows; {what} is undefined, returning NaN", UndefinedMetricWarning, stacklevel=4)
        return False
    return True


def log_loss(sums: ProbabilitySums) -> float:
    """Mean log loss (cross-entropy) ``-sum w [y log p + (1 - y) log(1 - p)] / sum w``.

    Probabilities are clipped to ``[eps, 1 - eps]`` with ``eps`` = float64 machine epsilon, as
    scikit-learn's ``log_loss`` does for float64 input; :func:`log_loss_clipped` gives the value
    for another clipping constant.

    Raises
    ------
    ValueError
        If a score lies outside [0, 1].

    Notes
    -----
    Scores are always widened to float64 first. scikit-learn clips float32 input at float32's
    epsilon and computes in float32, so on float32 scores its value can differ from this one in
    the rows it clips (scores within 1.2e-7 of 0 or 1) and by float32 rounding elsewhere.

    References
    ----------
    .. [1] Bishop (2006). "Pattern Recognition and Machine Learning", sec. 4.3.2.
    """
    if not _check(sums, "log loss"):
        return math.nan
    return sums.log_loss_sum / sums.weight


def _clipped_loss(p: FloatArray, eps: float) -> FloatArray:
    return np.asarray(-np.log(np.clip(p, eps, 1.0 - eps)), dtype=np.float64)


def log_loss_clipped(sums: ProbabilitySums, t: BinTable, eps: float) -> Estimate:
    """Mean log loss with probabilities clipped to ``[eps, 1 - eps]`` for a given ``eps``.

    Many texts and systems clip at a fixed ``eps`` such as 1e-15 (scikit-learn did before 1.5);
    the sketch's running sum clips at float64 machine epsilon. The two differ only on rows whose
    probability of the true class ``p`` lies below ``max(eps, eps_sketch)`` or above
    ``1 - max(eps, eps_sketch)``. Per row the difference ``-log(clip(p, eps)) + log(clip(p,
    eps_sketch))`` is monotone in ``p``, so over a sketch bin holding scores in ``[min, max]`` it
    lies between its values at the two ends: the result is exact when those rows sit in bins of
    one score value each (or there are none), and carries rigorous bounds otherwise.

    Parameters
    ----------
    sums : ProbabilitySums
        The sketch's running sums (clipped at ``sums.eps``).
    t : BinTable
        The sketch's occupied bins (per-class min, max, sum and weight per bin).
    eps : float
        Clipping constant, ``0 < eps < 0.5``.

    Returns
    -------
    Estimate
        The mean log loss (the point uses each bin's mean score) with bounds; NaN with an
        :class:`~streameval.UndefinedMetricWarning` when there are no rows.

    Raises
    ------
    ValueError
        If ``eps`` is not in (0, 0.5), or a score lies outside [0, 1].

    References
    ----------
    .. [1] Bishop (2006). "Pattern Recognition and Machine Learning", sec. 4.3.2.
    """
    if not (isinstance(eps, (int, float)) and 0.0 < eps < 0.5):
        raise ValueError(f"eps must lie in (0, 0.5) (probabilities are clipped to [eps, 1 - eps]), got {eps!r}")
    if not _check(sums, "log loss"):
        return Estimate(math.nan, math.nan, math.nan)
    eps = float(eps)
    lo_total = hi_total = mid_total = 0.0
    # p_true is the score for positives and 1 - score for negatives (as the kernel computes it).
    for w, a, b, m in (
        (t.pos, t.pos_min, t.pos_max, t.pos_sum),
        (t.neg, 1.0 - t.neg_max, 1.0 - t.neg_min, None),
    ):
        keep = w > 0
        if not keep.any():
            continue
        wk, ak, bk = w[keep], a[keep], b[keep]
        mean = (m[keep] / wk) if m is not None else 1.0 - t.neg_sum[keep] / wk
        mean = np.clip(mean, ak, bk)
        da = _clipped_loss(ak, eps) - _clipped_loss(ak, sums.eps)
        db = _clipped_loss(bk, eps) - _clipped_loss(bk, sums.eps)
        dm = _clipped_loss(mean, eps) - _clipped_loss(mean, sums.eps)
        lo_total += float((wk * np.minimum(da, db)).sum())
        hi_total += float((wk * np.maximum(da, db)).sum())
        mid_total += float((wk * dm).sum())
    base = sums.log_loss_sum
    lower, upper = (base + lo_total) / sums.weight, (base + hi_total) / sums.weight
    value = min(max((base + mid_total) / sums.weight, lower), upper)
    return Estimate(value, lower, upper)


def brier_score(sums: ProbabilitySums) -> float:
    """Brier score ``sum w (y - p)^2 / sum w``, the mean squared error of the probabilities.

    References
    ----------
    .. [1] Brier (1950). "Verification of forecasts expressed in terms of probability". Monthly
       Weather Review 78(1).
    """
    if not _check(sums, "Brier score"):
        return math.nan
    return sums.brier_sum / sums.weight


@dataclass(frozen=True)
class CalibrationCurve:
    """Reliability diagram data for non-empty calibration bins, in increasing score order.

    Attributes
    ----------
    prob_true : ndarray of shape (m,)
        Observed fraction of positives (weighted) per calibration bin.
    prob_pred : ndarray of shape (m,)
        Mean predicted probability per calibration bin.
    weight : ndarray of shape (m,)
        Weight per calibration bin.
    ece : float
        Expected calibration error ``sum_j weight_j |prob_true_j - prob_pred_j| / sum weight``
        (Naeini, Cooper, Hauskrecht 2015; Guo et al. 2017).
    exact : bool
        False if some sketch bin straddled a calibration-bin edge and was assigned by its mean.
    """

    prob_true: FloatArray
    prob_pred: FloatArray
    weight: FloatArray
    ece: float
    exact: bool


def calibration_curve(t: BinTable, n_bins: int = 10) -> CalibrationCurve:
    """Calibration (reliability) curve over ``n_bins`` equal-width bins on [0, 1].

    Bin ``j`` holds scores in ``(j/n, (j+1)/n]`` (the first bin also holds 0), the assignment of
    scikit-learn's ``calibration_curve(strategy="uniform")``.

    Raises
    ------
    ValueError
        If ``n_bins < 1`` or some score lies outside [0, 1].
    """
    if int(n_bins) != n_bins or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if len(t) and (float(np.min(t.lo)) < 0 or float(np.max(t.hi)) > 1):
        raise ValueError("calibration needs scores in [0, 1]; some scores lie outside")
    edges = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    weight = t.pos + t.neg
    a = np.searchsorted(edges, t.lo, side="left")
    b = np.searchsorted(edges, t.hi, side="left")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (t.pos_sum + t.neg_sum) / weight
    cal = np.where(a == b, a, np.searchsorted(edges, mean, side="left"))
    w = np.bincount(cal, weights=weight, minlength=n_bins)
    pos = np.bincount(cal, weights=t.pos, minlength=n_bins)
    ssum = np.bincount(cal, weights=t.pos_sum + t.neg_sum, minlength=n_bins)
    nz = w > 0
    prob_true = pos[nz] / w[nz]
    prob_pred = ssum[nz] / w[nz]
    total = float(w.sum())
    ece = float(np.sum(w[nz] * np.abs(prob_true - prob_pred)) / total) if total > 0 else math.nan
    return CalibrationCurve(prob_true, prob_pred, w[nz].astype(np.float64), ece, bool(np.all(a == b)))
