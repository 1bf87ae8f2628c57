"""DeLong's paired test of two ROC-AUCs on the same rows, out of core in two passes.

DeLong et al. [1]_ compare two correlated AUCs through each row's *placements*: for a positive
``i``, ``V10_i`` is the share of negatives it outranks (ties 1/2); for a negative ``j``,
``V01_j`` the share of positives that outrank it. The variance of ``A1 - A2`` is
``var1 + var2 - 2 cov``, ``cov = C10 / P + C01 / N`` with ``C10 = sum_i w_i (V10_i^1 - A1)(V10_i^2 -
A2) / (P - 1)`` (and ``C01`` over negatives): it needs each row's placements under *both*
models at once, which no per-model histogram holds. So:

- pass 1 builds each model's sketch (one read, both scores);
- pass 2 reads the rows again and, from the pass-1 histograms, gives each row its placement under
  each model, accumulating ``sum w V^1 V^2`` per class (:class:`PairedPlacements`).

A row's placement comes from its own score and the other class's bins: exact where its bin is
resolved for it (the other class's scores in the bin all above, all below, or all equal to it),
else bounded by the bin's share. The accumulated sums carry those bounds (placements lie in [0, 1],
so the product of the lower ends bounds ``V^1 V^2`` below and the product of the upper ends above),
and the interval uses the largest variance over them: rigorous under binning, exact on discrete
scores. Weights are frequency weights.

References
----------
.. [1] DeLong, DeLong & Clarke-Pearson (1988). Biometrics 44(3), 837-845.
.. [2] Robin et al. (2011). pROC, BMC Bioinformatics 12, 77 (``roc.test(paired = TRUE)``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..kernels.binary import MAX, MIN, W
from ..metrics.auc import roc_auc
from ..metrics.estimate import Estimate
from .comparison import Comparison, _nan_comparison, _ratio_range, _two_sided_p
from .delong import _too_few, _variance, delong_placements
from .interval import check_level, normal_quantile

if TYPE_CHECKING:
    from ..sketch.binary import BinarySketch

__all__ = ["PairedPlacements", "paired_delong"]


class _Placer:
    """Per-bin tables of one model's pass-1 sketch, to place rows by their score."""

    def __init__(self, sketch: "BinarySketch") -> None:
        self.grid = sketch.grid
        keys, values = sketch._compact()
        self.keys = keys
        w = values[:, :, W]
        self.neg_w, self.pos_w = w[:, 0], w[:, 1]
        self.P, self.N = float(self.pos_w.sum()), float(self.neg_w.sum())
        self.neg_below = np.cumsum(self.neg_w) - self.neg_w  # negatives in lower bins
        self.pos_above = self.P - np.cumsum(self.pos_w)  # positives in higher bins
        self.neg_min, self.neg_max = values[:, 0, MIN], values[:, 0, MAX]
        self.pos_min, self.pos_max = values[:, 1, MIN], values[:, 1, MAX]

    def place(self, scores: np.ndarray, positive: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper placement of each row (V10 for positives, V01 for negatives)."""
        bins = self.grid.bin_index(scores)
        at = np.searchsorted(self.keys, bins)
        ok = at < self.keys.shape[0]
        ok[ok] = self.keys[at[ok]] == bins[ok]
        if not ok.all():
            raise InputError(
                f"{what}: a row's score {float(scores[~ok][0])!r} falls in a bin the first pass never saw; "
                "the source changed between the two passes (a paired test needs the same rows twice)"
            )
        s = scores.astype(np.float64, copy=False)
        # Positives: negatives in the row's bin that lie below it (1 each) or tie with it (1/2).
        nmin, nmax, nw = self.neg_min[at], self.neg_max[at], self.neg_w[at]
        all_below = s > nmax
        tie = (nmin == nmax) & (s == nmin)
        known = (nw == 0) | all_below | (s < nmin) | tie
        share = np.where(all_below, 1.0, np.where(tie, 0.5, 0.0))
        lo_p = (self.neg_below[at] + nw * share) / self.N
        hi_p = (self.neg_below[at] + nw * np.where(known, share, 1.0)) / self.N
        # Negatives: positives in the row's bin above it (1 each) or tied (1/2).
        pmin, pmax, pw = self.pos_min[at], self.pos_max[at], self.pos_w[at]
        all_above = s < pmin
        tie = (pmin == pmax) & (s == pmin)
        known = (pw == 0) | all_above | (s > pmax) | tie
        share = np.where(all_above, 1.0, np.where(tie, 0.5, 0.0))
        lo_n = (self.pos_above[at] + pw * share) / self.P
        hi_n = (self.pos_above[at] + pw * np.where(known, share, 1.0)) / self.P
        return np.where(positive, lo_p, lo_n), np.where(positive, hi_p, hi_n)


class PairedPlacements:
    """Pass 2 of DeLong's paired test: the cross sums of both models' placements, per class.

    Parameters
    ----------
    first, second : BinarySketch
        The two models' pass-1 sketches of the same rows.

    Attributes
    ----------
    cross_lo, cross_hi : ndarray of shape (2,)
        Bounds of ``sum w V^1 V^2`` over negatives (index 0) and positives (index 1).
    weight : ndarray of shape (2,)
        Weight of the rows added, per class (checked against pass 1 by :func:`paired_delong`).
    """

    def __init__(self, first: "BinarySketch", second: "BinarySketch") -> None:
        self._placers = (_Placer(first), _Placer(second))
        self.cross_lo = np.zeros(2)
        self.cross_hi = np.zeros(2)
        self.weight = np.zeros(2)

    def add(self, labels: np.ndarray, first: np.ndarray, second: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Add a chunk of rows: ``labels`` 0/1, both models' scores, optional weights.

        Rows with a NaN score (either model) or a zero weight are skipped, as pass 1 skips them.

        Raises
        ------
        InputError
            If a score falls in a bin pass 1 never filled (the source changed).
        """
        keep = ~(np.isnan(first) | np.isnan(second))
        if weights is not None:
            keep &= weights > 0
        y = labels[keep].astype(bool)
        w = np.ones(int(keep.sum())) if weights is None else weights[keep].astype(np.float64)
        lo1, hi1 = self._placers[0].place(first[keep], y, "model 1")
        lo2, hi2 = self._placers[1].place(second[keep], y, "model 2")
        for c in (0, 1):
            m = y == bool(c)
            self.cross_lo[c] += float(np.dot(w[m], lo1[m] * lo2[m]))
            self.cross_hi[c] += float(np.dot(w[m], hi1[m] * hi2[m]))
            self.weight[c] += float(w[m].sum())


def paired_delong(first: "BinarySketch", second: "BinarySketch", placements: PairedPlacements,
                  level: float = 0.95) -> Comparison:
    """DeLong's paired test of ``AUC(first) - AUC(second)`` on the same rows.

    Parameters
    ----------
    first, second : BinarySketch
        Pass-1 sketches of the two models' scores on the same rows (same labels, weights).
    placements : PairedPlacements
        Pass 2 over the same rows.
    level : float in (0, 1), default 0.95

    Returns
    -------
    Comparison
        ``estimate``: the difference with binning bounds; the interval
        ``[D_lo - z se_hi, D_hi + z se_hi]`` clipped to [-1, 1], ``se_hi`` the square root of the
        largest variance of the difference over the binning bounds; ``statistic`` ``z`` and the
        two-sided normal ``p_value`` with their ranges; ``method`` ``"DeLong paired"``.

    Raises
    ------
    InputError
        If the sketches' class weights differ, or pass 2 saw other rows than pass 1.

    Warns
    -----
    UndefinedMetricWarning
        When a class has total weight <= 1: all NaN.
    """
    level = check_level(level)
    t1, t2 = first.table(), second.table()
    method, quantity = "DeLong paired", "ΔAUC"
    if not (_close(t1.P, t2.P) and _close(t1.N, t2.N)):
        raise InputError(
            f"the two models' sketches hold different rows ({t1.P:g}/{t1.N:g} vs {t2.P:g}/{t2.N:g} positive/negative "
            "weight); a paired test needs both scores on the same rows (skip rows whose score is NaN in either)"
        )
    if not (_close(placements.weight[1], t1.P) and _close(placements.weight[0], t1.N)):
        raise InputError(
            f"the second pass read {placements.weight[1]:g} positive and {placements.weight[0]:g} negative weight, "
            f"the first {t1.P:g} and {t1.N:g}: the source changed between the passes"
        )
    if _too_few(t1, "the paired DeLong test"):
        return _nan_comparison(method, level, quantity)
    a, b = roc_auc(t1), roc_auc(t2)
    v1 = _variance(t1, delong_placements(t1))
    v2 = _variance(t2, delong_placements(t2))
    P, N = t1.P, t1.N
    # C10 = (sum w V1 V2 - P A1 A2) / (P - 1): its bounds from the cross sums and the AUC bounds
    # (placements and AUCs lie in [0, 1], so products are monotone in each factor).
    c_lo = ((placements.cross_lo[1] - P * a.upper * b.upper) / ((P - 1) * P)
            + (placements.cross_lo[0] - N * a.upper * b.upper) / ((N - 1) * N))
    c_hi = ((placements.cross_hi[1] - P * a.lower * b.lower) / ((P - 1) * P)
            + (placements.cross_hi[0] - N * a.lower * b.lower) / ((N - 1) * N))
    exact = a.exact and b.exact and v1.exact and v2.exact and bool(np.array_equal(placements.cross_lo, placements.cross_hi))
    v_hi = max(v1.upper + v2.upper - 2.0 * c_lo, 0.0)
    v_lo = max(v1.lower + v2.lower - 2.0 * c_hi, 0.0)
    d = Estimate.point(a.value - b.value) if a.exact and b.exact else Estimate.from_bounds(a.lower - b.upper, a.upper - b.lower)
    z = normal_quantile(level)
    se_hi = math.sqrt(v_hi)
    ci_lo, ci_hi = max(d.lower - z * se_hi, -1.0), min(d.upper + z * se_hi, 1.0)
    inf = Estimate(math.inf, math.inf, math.inf)
    if exact:
        zv = d.value / math.sqrt(v_hi) if v_hi > 0 else (0.0 if d.value == 0 else math.copysign(math.inf, d.value))
        return Comparison(d, ci_lo, ci_hi, Estimate.point(zv), Estimate.point(_two_sided_p(zv, math.inf)),
                          method, level, quantity, inf, widened=False)
    z_lo, z_hi = _ratio_range(d.lower, d.upper, v_lo, v_hi)
    z_mid = _ratio_range(d.value, d.value, 0.5 * (v_lo + v_hi), 0.5 * (v_lo + v_hi))[0]
    stat = Estimate(min(max(z_mid, z_lo), z_hi), z_lo, z_hi)
    abs_lo = 0.0 if z_lo <= 0.0 <= z_hi else min(abs(z_lo), abs(z_hi))
    p_lo, p_hi = _two_sided_p(max(abs(z_lo), abs(z_hi)), math.inf), _two_sided_p(abs_lo, math.inf)
    p = Estimate(min(max(_two_sided_p(z_mid, math.inf), p_lo), p_hi), p_lo, p_hi)
    return Comparison(d, ci_lo, ci_hi, stat, p, method, level, quantity, inf, widened=True)


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1.0)
