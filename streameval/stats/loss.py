"""Confidence intervals of the mean log loss and the Brier score, from the bins.

Both metrics are means of a per-row loss ``l`` (``-log(clip(p_true))`` or ``(y - p)**2``); their
normal-theory interval is ``mean +/- z * sd(l) / sqrt(n)``. The sketch keeps the exact running sum
of ``w * l`` but not of ``w * l**2``. It does not need to: within one bin and class the loss is a
monotone function of the score, so each row's ``l**2`` lies between its values at the cell's
smallest and largest score, and the sum of squares lies between the two cell-wise sums. On
discrete scores (each cell holds one score value) both sums are exact; otherwise the upper one
gives an upper bound of the variance, so the interval contains the one the exact rows give, as
every binned interval in :mod:`streameval.stats` does. This costs nothing in the binning kernel
and works on every sketch file ever written.

Weights: with ``weight_sq`` (the sum of squared weights, kept by format-2 sketches) the sample size
is Kish's effective size ``n_eff = (sum w)**2 / sum w**2`` [3]_; without it the weights are read as
frequency weights (``n = sum w``), which is exact for unweighted data.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import UndefinedMetricWarning, UsageError
from ..metrics.estimate import Estimate
from ..metrics.probability import ProbabilitySums, _check
from ..metrics.table import BinTable, FloatArray
from .interval import ConfidenceInterval, check_level, normal_quantile

__all__ = ["probability_ci", "second_moment_bounds", "effective_size"]

_METRICS = {"log_loss": "log loss", "brier_score": "Brier score"}


def _terms(metric: str, p_true: FloatArray, eps: float) -> FloatArray:
    """Per-row loss as a function of ``p_true`` (the probability given to the true class)."""
    if metric == "log_loss":
        return np.asarray(-np.log(np.clip(p_true, eps, 1.0 - eps)), dtype=np.float64)
    return np.asarray((1.0 - p_true) ** 2, dtype=np.float64)


def second_moment_bounds(t: BinTable, metric: str, eps: float) -> tuple[float, float]:
    """Bounds of ``sum w * l**2`` over the rows, ``l`` the per-row loss of ``metric``.

    Parameters
    ----------
    t : BinTable
        The sketch's bins; every score must lie in [0, 1].
    metric : {"log_loss", "brier_score"}
    eps : float
        The log loss's clipping constant.

    Returns
    -------
    (float, float)
        ``(lower, upper)``; equal when every non-empty cell holds one score value.
    """
    lower = upper = 0.0
    # p_true is the score of positives and 1 - score of negatives; the loss decreases in p_true,
    # so a cell's extreme squared losses sit at its two ends.
    for w, a, b in ((t.pos, t.pos_min, t.pos_max), (t.neg, 1.0 - t.neg_max, 1.0 - t.neg_min)):
        keep = w > 0
        if not keep.any():
            continue
        la = _terms(metric, a[keep], eps) ** 2
        lb = _terms(metric, b[keep], eps) ** 2
        lower += float((w[keep] * np.minimum(la, lb)).sum())
        upper += float((w[keep] * np.maximum(la, lb)).sum())
    return lower, upper


def effective_size(weight: float, weight_sq: float | None) -> float:
    """Kish's effective sample size ``weight**2 / weight_sq``, or ``weight`` when unknown.

    References
    ----------
    .. [1] Kish (1965). "Survey Sampling", Wiley, sec. 11.7.
    """
    if weight_sq is None or weight_sq <= 0:
        return weight
    return weight * weight / weight_sq


def probability_ci(
    sums: ProbabilitySums,
    t: BinTable,
    metric: str = "log_loss",
    level: float = 0.95,
    weight_sq: float | None = None,
) -> ConfidenceInterval:
    """Normal-theory confidence interval of the mean log loss or Brier score.

    Parameters
    ----------
    sums : ProbabilitySums
        The sketch's exact running sums (weight of the rows in [0, 1], loss sums).
    t : BinTable
        The sketch's bins, for the second moment (see the module docstring).
    metric : {"log_loss", "brier_score"}, default "log_loss"
    level : float in (0, 1), default 0.95
    weight_sq : float, optional
        Sum of squared weights of the rows, for Kish's effective sample size; ``None`` reads the
        weights as frequency weights.

    Returns
    -------
    ConfidenceInterval
        ``estimate`` is the exact mean (bounds equal to it); ``ci_lower``/``ci_upper`` are
        ``mean -/+ z * se`` with ``se = sqrt(s2 / n)``, ``s2`` the (upper bound of the) sample
        variance with Bessel's correction ``n / (n - 1)``, ``n`` the (effective) sample size. The
        Brier interval is clipped to [0, 1] and the log-loss interval to [0, inf). ``widened`` is
        True when the second moment was only bounded (unresolved bins).

    Raises
    ------
    UsageError
        Unknown metric, or ``level`` outside (0, 1).
    ValueError
        If a score lies outside [0, 1] (as the point metrics).

    Warns
    -----
    UndefinedMetricWarning
        With no rows, or an (effective) size of at most 1: the interval is NaN.

    References
    ----------
    .. [1] Brier (1950). Monthly Weather Review 78(1).
    .. [2] Bishop (2006). "Pattern Recognition and Machine Learning", sec. 4.3.2.
    .. [3] Kish (1965). "Survey Sampling", Wiley.
    """
    if metric not in _METRICS:
        raise UsageError(f"unknown metric {metric!r} for a probability CI; expected one of {sorted(_METRICS)}")
    level = check_level(level)
    method = "normal" if weight_sq is None else "normal, Kish n_eff"
    if not _check(sums, _METRICS[metric]):
        nan = Estimate(math.nan, math.nan, math.nan)
        return ConfidenceInterval(nan, math.nan, math.nan, level, method)
    total = sums.log_loss_sum if metric == "log_loss" else sums.brier_sum
    mean = total / sums.weight
    est = Estimate(mean, mean, mean)
    n = effective_size(sums.weight, weight_sq)
    if n <= 1.0:
        warnings.warn(
            f"the {_METRICS[metric]} interval needs an (effective) sample size above 1, got {n:g}; returning NaN",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return ConfidenceInterval(est, math.nan, math.nan, level, method)
    m2_lo, m2_hi = second_moment_bounds(t, metric, sums.eps)
    var = max(m2_hi / sums.weight - mean * mean, 0.0) * n / (n - 1.0)
    se = math.sqrt(var / n)
    z = normal_quantile(level)
    lower = max(mean - z * se, 0.0)
    upper = mean + z * se
    if metric == "brier_score":
        upper = min(upper, 1.0)
    widened = m2_hi > m2_lo * (1.0 + 1e-12) + 1e-300
    return ConfidenceInterval(est, lower, upper, level, method, widened=widened, se=se)
