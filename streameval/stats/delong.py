"""ROC-AUC sampling uncertainty from a bin table: DeLong's variance and Hanley & McNeil's SE.

Everything here is a pure function of a :class:`~streameval.metrics.table.BinTable`. On discrete
scores (every bin pure, or every bin's classes apart) the results equal the ones computed on the
raw rows; with unresolved bins they are rigorous *bounds* of the raw-rows values, and the
confidence interval built from them contains the raw-rows interval (see :func:`roc_auc_ci`).

Weights are *frequency weights* by default: a row of weight 3 counts as three identical rows.
The class totals ``P`` and ``N`` (sums of weights) then play the part of the numbers of positives
and negatives, as in the unweighted formulas. For importance or survey weights, sketches of format
version 2 keep each class's sum of squared weights, and ``kish=`` replaces ``P`` and ``N`` by
Kish's effective sizes ``P**2 / sum w**2`` (Kish 1965) in the variance; without them the
intervals' scale would depend on the weights' normalisation.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numba as nb
import numpy as np

from ..errors import UndefinedMetricWarning, UsageError
from ..kernels.cache import ENABLED as CACHE
from ..metrics.auc import roc_auc
from ..metrics.estimate import NAN, Estimate
from ..metrics.table import BinTable, FloatArray
from .interval import ConfidenceInterval, check_level, normal_quantile

__all__ = ["DeLongPlacements", "delong_placements", "delong_variance", "hanley_mcneil_se", "roc_auc_ci"]

_METHODS = {"delong": "DeLong", "hanley_mcneil": "Hanley-McNeil"}


@dataclass(frozen=True)
class DeLongPlacements:
    """Per-bin bounds of DeLong's placement values, with the weight of each class in the bin.

    DeLong et al. [1]_ define, for each positive ``i``, ``V10_i`` = the share of negatives it
    outranks (ties count 1/2), and for each negative ``j``, ``V01_j`` = the share of positives
    that outrank it. Every positive of bin ``b`` has ``V10`` in ``[v10_lo[b], v10_hi[b]]``, every
    negative ``V01`` in ``[v01_lo[b], v01_hi[b]]``; the bounds are equal where the bin is
    resolved (pure, one class, or classes apart).

    Attributes
    ----------
    pos, neg : ndarray of float64, shape (k,)
        Positive and negative weight per bin (the table's order: descending scores).
    v10_lo, v10_hi, v01_lo, v01_hi : ndarray of float64, shape (k,)
        Placement bounds, in [0, 1].
    resolved : bool
        True when every bin's placements are exact.
    """

    pos: FloatArray
    neg: FloatArray
    v10_lo: FloatArray
    v10_hi: FloatArray
    v01_lo: FloatArray
    v01_hi: FloatArray
    resolved: bool


def delong_placements(t: BinTable) -> DeLongPlacements:
    """Bounds of DeLong's placement values for every bin of ``t``.

    A positive in bin ``b`` outranks every negative below the bin (weight ``N - fp[b]``) and none
    above it; against the bin's own ``neg[b]`` negatives each pair is worth 1, 1/2 or 0. The
    table's min/max say which: the same per-bin path kinds that bound the AUC
    (:meth:`BinTable.lower_path`, :meth:`BinTable.upper_path`: kind / 2 is the smallest / largest
    value a same-bin pair can take). So ``V10 in [(N - fp[b] + neg[b] * lo_b) / N,
    (N - fp[b] + neg[b] * hi_b) / N]``, and symmetrically ``V01 in [(tp_before[b] + pos[b] *
    lo_b) / P, (tp_before[b] + pos[b] * hi_b) / P]``.

    This is the binned form of the sort-based computation of Sun & Xu [2]_: the bins are already
    sorted, so the cost is O(k) in the number of occupied bins.

    Parameters
    ----------
    t : BinTable
        The sketch's bins; must hold weight of both classes.

    Returns
    -------
    DeLongPlacements

    References
    ----------
    .. [1] DeLong, DeLong & Clarke-Pearson (1988). "Comparing the areas under two or more
       correlated receiver operating characteristic curves: a nonparametric approach".
       Biometrics 44(3), 837-845.
    .. [2] Sun & Xu (2014). "Fast implementation of DeLong's algorithm for comparing the areas
       under correlated receiver operating characteristic curves". IEEE Signal Processing
       Letters 21(11), 1389-1393.
    """
    P, N = t.P, t.N
    lo_k = 0.5 * t.lower_path().astype(np.float64)
    hi_k = 0.5 * t.upper_path().astype(np.float64)
    neg_below = N - t.fp
    pos_above = t.tp_before
    resolved = bool(np.all(lo_k == hi_k))
    return DeLongPlacements(
        pos=t.pos,
        neg=t.neg,
        v10_lo=(neg_below + t.neg * lo_k) / N,
        v10_hi=(neg_below + t.neg * hi_k) / N,
        v01_lo=(pos_above + t.pos * lo_k) / P,
        v01_hi=(pos_above + t.pos * hi_k) / P,
        resolved=resolved,
    )


def _sum_sq_dev(w: FloatArray, v: FloatArray) -> float:
    """``sum_i w_i (v_i - vbar)^2`` with ``vbar`` the weighted mean (two-pass, for accuracy)."""
    keep = w > 0
    w, v = w[keep], v[keep]
    mean = float(np.sum(w * v)) / float(np.sum(w))
    return float(np.sum(w * (v - mean) ** 2))


def _sum_sq_dev_upper(w: FloatArray, lo: FloatArray, hi: FloatArray) -> float:
    """An upper bound of ``sum_i w_i (v_i - vbar)^2`` over every ``v_i`` in ``[lo_i, hi_i]``.

    For any constant c, ``sum w (v - vbar)^2 <= sum w (v - c)^2`` (the mean minimizes the sum of
    squares), and ``(v - c)^2 <= max((lo - c)^2, (hi - c)^2) = (|c - m| + h)^2`` with ``m``, ``h``
    the midpoint and half-width. The bound is valid for every c; this picks the c minimizing
    ``g(c) = sum w (|c - m| + h)^2``, a convex piecewise quadratic: on the segment between
    consecutive sorted midpoints its minimizer is ``(sum_{m<c} w lo + sum_{m>c} w hi) / W``.
    """
    keep = w > 0
    w, lo, hi = w[keep], lo[keep], hi[keep]
    m = 0.5 * (lo + hi)
    h = 0.5 * (hi - lo)
    # Placements of consecutive bins do not overlap (a bin's rows outrank every lower bin's), so
    # the midpoints come already sorted in table order: skip the sort (the cost of a CI is O(k)).
    steps = np.diff(m)
    if np.all(steps >= 0):
        order = np.arange(m.shape[0])
    elif np.all(steps <= 0):
        order = np.arange(m.shape[0])[::-1]
    else:
        order = np.argsort(m, kind="stable")
    ms, ws = m[order], w[order]
    wl, wh = np.concatenate(([0.0], np.cumsum(ws * lo[order]))), np.cumsum((ws * hi[order])[::-1])[::-1]
    wh = np.concatenate((wh, [0.0]))
    c_star = (wl + wh) / float(np.sum(w))  # j = 0..k: the first j sorted bins lie below c
    seg_lo = np.concatenate(([-np.inf], ms))
    seg_hi = np.concatenate((ms, [np.inf]))
    j = int(np.argmax(c_star <= seg_hi))  # c_star decreases in j and seg_hi increases: one crossing
    c = float(np.clip(c_star[j], seg_lo[j], seg_hi[j]))
    return float(np.sum(w * (np.abs(c - m) + h) ** 2))


def _sum_sq_dev_lower(w: FloatArray, lo: FloatArray, hi: FloatArray) -> float:
    """A lower bound of ``sum_i w_i (v_i - vbar)^2`` when each *group's mean* lies in ``[lo, hi]``.

    Positives of one bin may have different placements; dropping their within-bin spread (law of
    total variance) leaves the spread of the bin means, whose smallest value over the box is
    ``min_c sum w dist(c, [lo, hi])^2`` (for fixed c the best mean is c clipped into its box). The
    minimizing c is the root of ``F(c) = sum w (c - clip(c, lo, hi))``, a non-decreasing
    piecewise-linear function with knots at the ``lo`` and ``hi``.
    """
    keep = w > 0
    w, lo, hi = w[keep], lo[keep], hi[keep]
    if float(np.max(lo)) <= float(np.min(hi)):
        return 0.0  # a common point: every mean can sit at it
    oh, ol = np.argsort(hi), np.argsort(lo)
    hs, whs = hi[oh], np.cumsum(w[oh])
    shs = np.cumsum(w[oh] * hs)
    ls = lo[ol]
    wls = np.cumsum(w[ol][::-1])[::-1]
    sls = np.cumsum((w[ol] * ls)[::-1])[::-1]
    zero = np.array([0.0])
    whs, shs = np.concatenate((zero, whs)), np.concatenate((zero, shs))
    wls, sls = np.concatenate((wls, zero)), np.concatenate((sls, zero))

    def F(x: FloatArray) -> FloatArray:
        i = np.searchsorted(hs, x, side="left")  # bins with hi < x
        j = np.searchsorted(ls, x, side="right")  # bins with lo <= x; the rest have lo > x
        return (x * whs[i] - shs[i]) + (x * wls[j] - sls[j])

    xs = np.unique(np.concatenate((lo, hi)))
    fx = F(xs)
    i = int(np.argmax(fx >= 0))  # F(max hi) >= 0, so some knot qualifies
    if i == 0 or fx[i] == 0:
        c = float(xs[i])
    else:
        x0, x1, f0, f1 = float(xs[i - 1]), float(xs[i]), float(fx[i - 1]), float(fx[i])
        c = x0 - f0 * (x1 - x0) / (f1 - f0)
    d = c - np.clip(c, lo, hi)
    return float(np.sum(w * d * d))


@nb.njit(inline="always", nogil=True, fastmath={"reassoc"})
def _ends(pos, neg, tp, fp, lk, hk, N, P, inv_n, inv_p, i):  # type: ignore[no-untyped-def]
    """Bin ``i``'s placement bounds ``(V10 lo, V10 hi, V01 lo, V01 hi)`` as in
    :func:`delong_placements`: ``V10 = (N - fp + neg * kind / 2) / N`` for its positives,
    ``V01 = (tp - pos + pos * kind / 2) / P`` for its negatives."""
    below = N - fp[i]
    above = tp[i] - pos[i]
    a, b = 0.5 * lk[i], 0.5 * hk[i]
    return ((below + neg[i] * a) * inv_n, (below + neg[i] * b) * inv_n,
            (above + pos[i] * a) * inv_p, (above + pos[i] * b) * inv_p)


# Sums reassociate (LLVM vectorises them, 2x): the bound holds for any c, so rounding in the walk
# that picks c cannot break it, and the sums move by ~1e-15 relative.
@nb.njit(nogil=True, cache=CACHE, fastmath={"reassoc"})
def _upper_sums(pos, neg, tp, fp, lk, hk, P, N):  # type: ignore[no-untyped-def]
    """Compiled twin of :func:`_sum_sq_dev` (resolved bins) / :func:`_sum_sq_dev_upper` for both
    classes at once: ``(sum for the positives' V10, sum for the negatives' V01, every bin
    resolved)``, from the table's counts and cumulative counts and its path kinds.

    Pass 1 takes each class's total weight and its sums of ``w * lo`` and ``w * hi`` (equal when
    resolved: the mean's numerator). Resolved: the two-pass sum of squared deviations. Otherwise
    ``g(c) = sum w (|c - m| + h)^2`` is convex and piecewise quadratic; on the segment where the
    first j bins (ascending m) lie below c its minimiser is ``(sum_{<} w lo + sum_{>} w hi) / W``:
    a walk from the low end finds the segment holding it (the positives' placements descend
    along the table, the negatives' ascend), and a last pass sums the bound.
    """
    k = pos.shape[0]
    inv_n, inv_p = 1.0 / N, 1.0 / P
    wp = wn = 0.0
    lo_p = hi_p = lo_n = hi_n = 0.0
    res_p = res_n = True
    for i in range(k):
        v10_lo, v10_hi, v01_lo, v01_hi = _ends(pos, neg, tp, fp, lk, hk, N, P, inv_n, inv_p, i)
        same = lk[i] == hk[i]
        wp += pos[i]
        wn += neg[i]
        res_p &= same | (pos[i] == 0.0)
        res_n &= same | (neg[i] == 0.0)
        lo_p += pos[i] * v10_lo
        hi_p += pos[i] * v10_hi
        lo_n += neg[i] * v01_lo
        hi_n += neg[i] * v01_hi
    # c per class: the mean when resolved, else the minimiser of g
    if res_p:
        cp = lo_p / wp
    else:
        cp = _minimiser(pos, neg, tp, fp, lk, hk, N, P, inv_n, inv_p, wp, hi_p, True)
    if res_n:
        cn = lo_n / wn
    else:
        cn = _minimiser(pos, neg, tp, fp, lk, hk, N, P, inv_n, inv_p, wn, hi_n, False)
    sp = sn = 0.0
    for i in range(k):  # no branch on empty classes: their terms are 0 * (a finite d**2) = 0
        v10_lo, v10_hi, v01_lo, v01_hi = _ends(pos, neg, tp, fp, lk, hk, N, P, inv_n, inv_p, i)
        d = abs(cp - 0.5 * (v10_lo + v10_hi)) + 0.5 * (v10_hi - v10_lo)
        sp += pos[i] * d * d
        d = abs(cn - 0.5 * (v01_lo + v01_hi)) + 0.5 * (v01_hi - v01_lo)
        sn += neg[i] * d * d
    return sp, sn, res_p and res_n


@nb.njit(inline="always", nogil=True, fastmath={"reassoc"})
def _minimiser(pos, neg, tp, fp, lk, hk, N, P, inv_n, inv_p, total, above, positives):  # type: ignore[no-untyped-def]
    """The ``c`` minimising ``g`` (see :func:`_upper_sums`) for one class; ``above`` starts as
    the class's sum of ``w * hi``."""
    k = pos.shape[0]
    below = 0.0
    prev = -np.inf
    for j in range(k + 1):
        b = (k - 1 - j) if positives else j
        if j < k:
            v10_lo, v10_hi, v01_lo, v01_hi = _ends(pos, neg, tp, fp, lk, hk, N, P, inv_n, inv_p, b)
            lo, hi, w = (v10_lo, v10_hi, pos[b]) if positives else (v01_lo, v01_hi, neg[b])
        else:
            lo, hi, w = np.inf, np.inf, 0.0
        seg_hi = 0.5 * (lo + hi)
        cstar = (below + above) / total
        if cstar <= seg_hi:
            return min(max(cstar, prev), seg_hi)
        below += w * lo
        above -= w * hi
        prev = seg_hi
    return prev


def _variance_upper(t: BinTable, kish: tuple[float, float] | None = None) -> tuple[float, bool]:
    """``(upper bound of DeLong's variance, every bin resolved)``, in O(k) compiled passes; the
    bound :func:`_variance` gives with ``upper_only=True`` (tested equal)."""
    P, N = t.P, t.N
    kp, kn = (1.0, 1.0) if kish is None else kish
    sp, sn, resolved = _upper_sums(t.pos, t.neg, t.tp, t.fp, t.lower_path(), t.upper_path(), P, N)
    return sp / ((P * kp - 1) * P) + sn / ((N * kn - 1) * N), bool(resolved)


def _too_few(t: BinTable, what: str, kish: tuple[float, float] | None = None) -> bool:
    """Warn and return True when a class is absent, or its (effective) size is at most 1."""
    kp, kn = (1.0, 1.0) if kish is None else kish
    if t.P * kp > 1 and t.N * kn > 1:
        return False
    if t.P > 0 and t.N > 0:
        if kish is None:
            sizes = f"{t.P:g} positive, {t.N:g} negative weight; weights are read as frequency counts"
        else:
            sizes = (f"Kish's effective sizes {t.P * kp:g} positive and {t.N * kn:g} negative, from the weights "
                     "and their squares")
        msg = f"{what} needs more than one row of each class ({sizes}); returning NaN"
    else:
        msg = (
            f"only one class is present ({t.P:g} positive, {t.N:g} negative weight); {what} is "
            "not defined in that case, returning NaN"
        )
    warnings.warn(msg, UndefinedMetricWarning, stacklevel=3)
    return True


def delong_variance(t: BinTable) -> Estimate:
    """DeLong's variance of the empirical ROC-AUC, with binning bounds.

    ``var = S10 / P + S01 / N``, ``S10 = sum_i (V10_i - AUC)^2 / (P - 1)`` over positives,
    ``S01 = sum_j (V01_j - AUC)^2 / (N - 1)`` over negatives, as in DeLong et al. [1]_ and pROC's
    ``var(roc, method = "delong")`` [3]_ (ties count 1/2). Weights are frequency weights (see the
    module docstring).

    Parameters
    ----------
    t : BinTable
        The sketch's bins.

    Returns
    -------
    Estimate
        The exact-rows variance lies in ``[lower, upper]``; ``lower == upper`` (the exact value)
        when every bin is resolved. NaN with an :class:`UndefinedMetricWarning` when a class has
        total weight <= 1 (one class, or a single row of one).

    Notes
    -----
    Upper bound: each placement lies in its bin's interval (:func:`delong_placements`), and
    ``sum (V - mean)^2 <= sum (V - c)^2`` for any c, so ``S10 <= min_c sum_b pos_b max_{v in
    [lo_b, hi_b]} (v - c)^2 / (P - 1)``, likewise ``S01``. Lower bound: the within-bin spread is
    dropped (law of total variance) and the bin means are placed as close together as their
    intervals allow.

    References
    ----------
    .. [1] DeLong, DeLong & Clarke-Pearson (1988). Biometrics 44(3), 837-845.
    .. [2] Sun & Xu (2014). IEEE Signal Processing Letters 21(11), 1389-1393.
    .. [3] Robin et al. (2011). "pROC: an open-source package for R and S+ to analyze and compare
       ROC curves". BMC Bioinformatics 12, 77.
    """
    if _too_few(t, "DeLong's variance"):
        return NAN
    return _variance(t, delong_placements(t))


def _variance(t: BinTable, pl: DeLongPlacements, upper_only: bool = False,
              kish: tuple[float, float] | None = None) -> Estimate:
    """The variance's bounds; with ``upper_only`` the lower bound (costly, and unused by a CI)
    is reported as 0. ``kish`` = ``(k_pos, k_neg)``: each class's term uses ``n_eff = k * weight``
    in place of its weight (``k = 1``: the frequency-weight formula)."""
    P, N = t.P, t.N
    kp, kn = (1.0, 1.0) if kish is None else kish
    dp, dn = (P * kp - 1) * P, (N * kn - 1) * N  # s^2 / n_eff with s^2 = sum w (V - A)^2 / W * n_eff / (n_eff - 1)
    if pl.resolved:
        var = _sum_sq_dev(pl.pos, pl.v10_lo) / dp + _sum_sq_dev(pl.neg, pl.v01_lo) / dn
        return Estimate.point(var)
    hi = (
        _sum_sq_dev_upper(pl.pos, pl.v10_lo, pl.v10_hi) / dp
        + _sum_sq_dev_upper(pl.neg, pl.v01_lo, pl.v01_hi) / dn
    )
    if upper_only:
        return Estimate(hi, 0.0, hi)
    lo = (
        _sum_sq_dev_lower(pl.pos, pl.v10_lo, pl.v10_hi) / dp
        + _sum_sq_dev_lower(pl.neg, pl.v01_lo, pl.v01_hi) / dn
    )
    return Estimate.from_bounds(min(lo, hi), hi)


def hanley_mcneil_se(auc: float, n_pos: float, n_neg: float) -> float:
    """Hanley & McNeil's standard error of the AUC (their equation 2).

    ``SE^2 = [A(1 - A) + (n_pos - 1)(Q1 - A^2) + (n_neg - 1)(Q2 - A^2)] / (n_pos n_neg)`` with
    ``Q1 = A / (2 - A)`` (two random positives both outrank a random negative) and
    ``Q2 = 2 A^2 / (1 + A)`` (one positive outranks two negatives), the values these
    probabilities take when the scores of both classes are exponential [1]_.

    Parameters
    ----------
    auc : float in [0, 1]
        The area ``A``.
    n_pos, n_neg : float
        Numbers (or frequency-weight totals) of positives ("abnormal", ``n_A``) and negatives
        ("normal", ``n_N``); both >= 1.

    Returns
    -------
    float

    Raises
    ------
    UsageError
        If ``auc`` is outside [0, 1] or a count is below 1.

    References
    ----------
    .. [1] Hanley & McNeil (1982). "The meaning and use of the area under a receiver operating
       characteristic (ROC) curve". Radiology 143(1), 29-36.
    """
    a, m, n = float(auc), float(n_pos), float(n_neg)
    if not 0.0 <= a <= 1.0:
        raise UsageError(f"auc must be in [0, 1], got {auc!r}")
    if not (m >= 1 and n >= 1):
        raise UsageError(f"n_pos and n_neg must be >= 1, got {n_pos!r} and {n_neg!r}")
    return math.sqrt(max(_hm_var(a, m, n), 0.0))


def _hm_var(a: float, m: float, n: float) -> float:
    q1, q2 = a / (2.0 - a), 2.0 * a * a / (1.0 + a)
    return (a * (1.0 - a) + (m - 1.0) * (q1 - a * a) + (n - 1.0) * (q2 - a * a)) / (m * n)


def _hm_se_max(lo: float, hi: float, m: float, n: float) -> float:
    """Largest Hanley-McNeil SE for an area anywhere in ``[lo, hi]``.

    ``var(A) = p(A) / ((2 - A)(1 + A))`` with ``p`` a quartic, so its maximum on an interval is at
    an end or at a real root of ``p' D - p D'`` (degree 5).
    """
    cands = [lo, hi]
    if hi > lo:
        P = np.polynomial.polynomial
        D = np.array([2.0, 1.0, -1.0])  # (2 - A)(1 + A), coefficients by increasing power
        p = P.polyadd(
            P.polyadd(P.polymul([0.0, 1.0, -(m + n - 1.0)], D), [0.0, m - 1.0, m - 1.0]),
            [0.0, 0.0, 4.0 * (n - 1.0), -2.0 * (n - 1.0)],
        )
        crit = P.polyroots(P.polysub(P.polymul(P.polyder(p), D), P.polymul(p, P.polyder(D))))
        real = crit[np.abs(crit.imag) <= 1e-12].real
        cands += [float(r) for r in real if lo < r < hi]
    return math.sqrt(max(max(_hm_var(a, m, n) for a in cands), 0.0))


def roc_auc_ci(t: BinTable, level: float = 0.95, method: str = "delong",
               kish: tuple[float, float] | None = None) -> ConfidenceInterval:
    """Confidence interval of the ROC-AUC, widened to contain the exact rows' interval.

    Parameters
    ----------
    t : BinTable
        The sketch's bins.
    level : float in (0, 1), default 0.95
        Confidence level.
    method : {"delong", "hanley_mcneil"}, default "delong"
        ``"delong"``: ``AUC +/- z sqrt(var)`` with DeLong's nonparametric variance
        (:func:`delong_variance`), clipped to [0, 1]: pROC's ``ci.auc(method = "delong")`` [3]_.
        ``"hanley_mcneil"``: the same with Hanley & McNeil's SE (:func:`hanley_mcneil_se`), which
        assumes exponential-like score distributions [2]_.
    kish : (float, float), optional
        ``(P / sum w**2 of positives, N / sum w**2 of negatives)`` for sample weights: DeLong's
        class terms use Kish's effective sizes ``k * weight`` instead of the weights (an
        approximation for importance or survey weights; the factors are 1 for unit weights).
        ``None``: frequency weights. Hanley-McNeil uses the effective sizes likewise.

    Returns
    -------
    ConfidenceInterval
        ``estimate`` is :func:`~streameval.metrics.auc.roc_auc` (with its binning bounds);
        ``ci_lower``/``ci_upper`` the interval, ``se`` the (upper bound of the) standard error,
        ``widened`` whether binning made the interval wider than the exact rows' one.

    Raises
    ------
    UsageError
        If ``level`` is not in (0, 1) or ``method`` is unknown.

    Warns
    -----
    UndefinedMetricWarning
        If a class is absent or has total weight <= 1; the interval is NaN (the estimate is NaN
        too when a class is absent).

    Notes
    -----
    With unresolved bins the exact AUC ``A`` lies in ``[A_lo, A_hi]`` (the binning bounds) and the
    exact variance below ``var_hi`` (:func:`delong_variance`'s upper bound; for Hanley-McNeil, the
    largest variance over ``[A_lo, A_hi]``). The reported interval is
    ``[A_lo - z sqrt(var_hi), A_hi + z sqrt(var_hi)]`` clipped to [0, 1]; since
    ``A_lo - z sqrt(var_hi) <= A - z sqrt(var)`` and ``A + z sqrt(var) <= A_hi + z sqrt(var_hi)``
    and clipping is monotone, it contains the interval the exact rows give. On discrete scores
    both bounds collapse and the interval equals the exact one.

    References
    ----------
    .. [1] DeLong, DeLong & Clarke-Pearson (1988). Biometrics 44(3), 837-845.
    .. [2] Hanley & McNeil (1982). Radiology 143(1), 29-36.
    .. [3] Robin et al. (2011). BMC Bioinformatics 12, 77.

    Examples
    --------
    >>> import streameval
    >>> from streameval.stats import roc_auc_ci
    >>> s = streameval.BinarySketch().update([0, 0, 1, 0, 1, 1], [0.1, 0.4, 0.35, 0.5, 0.8, 0.9])
    >>> ci = roc_auc_ci(s.table())
    >>> print(ci)
    0.778 (95% CI 0.291-1.000, DeLong)
    """
    level = check_level(level)
    if method not in _METHODS:
        raise UsageError(f"unknown method {method!r}; expected one of {sorted(_METHODS)}")
    name = _METHODS[method] + (", Kish n_eff" if kish is not None else "")
    if _too_few(t, f"the {name} interval of the ROC AUC", kish):
        est = roc_auc(t) if t.P > 0 and t.N > 0 else NAN
        return ConfidenceInterval(est, math.nan, math.nan, level, name, widened=False)
    z = normal_quantile(level)
    auc = roc_auc(t)
    if method == "delong":
        var_hi, resolved = _variance_upper(t, kish)
        se = math.sqrt(max(var_hi, 0.0))
        widened = not (auc.exact and resolved)
    else:
        kp, kn = (1.0, 1.0) if kish is None else kish
        se = _hm_se_max(auc.lower, auc.upper, t.P * kp, t.N * kn)
        widened = not auc.exact
    lower = min(max(auc.lower - z * se, 0.0), 1.0)
    upper = max(min(auc.upper + z * se, 1.0), 0.0)
    return ConfidenceInterval(auc, lower, upper, level, name, widened=widened, se=se)
