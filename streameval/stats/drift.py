"""Score drift between two histograms on the same grid: PSI, Kolmogorov-Smirnov, Jensen-Shannon.

Inputs are a histogram's occupied bins and their weights (``SketchSet.score_histogram``, or a
sketch's table with both classes added). Bins are the finest unit the sketch knows: everything is
computed on whole bins, and the KS distance, which could change inside a bin, comes as an
interval.

- PSI (population stability index, Yurdakul 2018): the reference's weight is cut into ``buckets``
  groups of about equal weight (deciles by default) at bin boundaries; both histograms are
  summed per group; ``PSI = sum (a - r) ln(a / r)`` over the groups' shares, with empty shares
  replaced by ``eps``. Rules of thumb: < 0.1 stable, 0.1-0.25 moderate, > 0.25 large shift.
- KS distance: ``max |F_a - F_r|`` over scores. At bin boundaries both CDFs are exact; inside a
  bin each rises from its start to its end value, so the distance there is at most
  ``max(A_end - R_start, R_end - A_start)``.
- Jensen-Shannon divergence (Lin 1991) of the two bucket distributions, base 2, in [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import UsageError
from ..metrics.estimate import Estimate

__all__ = ["Drift", "score_drift"]

PSI_EPS = 1e-4


@dataclass(frozen=True)
class Drift:
    """Drift of a histogram from a reference.

    Attributes
    ----------
    psi : float
        Population stability index over :attr:`buckets` reference-quantile buckets.
    ks : Estimate
        Kolmogorov-Smirnov distance; exact at bin boundaries, an interval when a bin hides more.
    js : float
        Jensen-Shannon divergence (base 2) of the bucket distributions, in [0, 1].
    buckets : int
        Buckets actually used (fewer than asked when the reference has few occupied bins).
    weight, reference_weight : float
        Total weight of each histogram.
    """

    psi: float
    ks: Estimate
    js: float
    buckets: int
    weight: float
    reference_weight: float

    def to_dict(self) -> dict[str, float | int]:
        """Flat JSON-ready values."""
        return {"psi": self.psi, "ks": self.ks.value, "ks_lower": self.ks.lower, "ks_upper": self.ks.upper,
                "js": self.js, "buckets": self.buckets}


def _pure_bins(keys: np.ndarray, parts: list[tuple[np.ndarray, npt.ArrayLike | None, npt.ArrayLike | None]]
               ) -> np.ndarray:
    """Bins whose scores, in both histograms, are all one value (no CDF change inside them)."""
    lo = np.full(keys.shape[0], np.inf)
    hi = np.full(keys.shape[0], -np.inf)
    for k, mn, mx in parts:
        if mn is None or mx is None:
            return np.zeros(keys.shape[0], dtype=bool)
        at = np.searchsorted(keys, k)
        np.minimum.at(lo, at, np.asarray(mn, dtype=np.float64))
        np.maximum.at(hi, at, np.asarray(mx, dtype=np.float64))
    return np.asarray(lo == hi, dtype=bool)


def score_drift(
    keys: npt.ArrayLike,
    weights: npt.ArrayLike,
    reference_keys: npt.ArrayLike,
    reference_weights: npt.ArrayLike,
    *,
    buckets: int = 10,
    eps: float = PSI_EPS,
    ranges: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike, npt.ArrayLike] | None = None,
) -> Drift:
    """Drift of one score histogram from a reference histogram on the same grid.

    Parameters
    ----------
    keys, weights : array-like of shape (k,)
        Bin indices (any order) and weights of the histogram under test.
    reference_keys, reference_weights : array-like of shape (m,)
        The reference period's histogram, on the same grid.
    buckets : int, default 10
        Reference-quantile buckets for PSI and JS.
    eps : float, default 1e-4
        Share used in place of an empty bucket's 0 in PSI.
    ranges : tuple of four arrays, optional
        ``(min, max, reference_min, reference_max)`` per bin: bins holding one score value in
        both histograms then add no uncertainty to the KS distance (exact on discrete scores).

    Returns
    -------
    Drift

    Raises
    ------
    UsageError
        If either histogram is empty or ``buckets < 2``.

    References
    ----------
    .. [1] Yurdakul (2018). "Statistical properties of population stability index". Western
       Michigan University.
    .. [2] Lin (1991). "Divergence measures based on the Shannon entropy". IEEE Trans. Inf.
       Theory 37(1).
    """
    if int(buckets) != buckets or buckets < 2:
        raise UsageError(f"buckets must be an integer >= 2, got {buckets!r}")
    ka, kr = np.asarray(keys, dtype=np.int64), np.asarray(reference_keys, dtype=np.int64)
    grid_keys = np.union1d(ka, kr)
    a = np.zeros(grid_keys.shape[0])
    r = np.zeros(grid_keys.shape[0])
    np.add.at(a, np.searchsorted(grid_keys, ka), np.asarray(weights, dtype=np.float64))
    np.add.at(r, np.searchsorted(grid_keys, kr), np.asarray(reference_weights, dtype=np.float64))
    pure = _pure_bins(grid_keys, [(ka, *ranges[:2]), (kr, *ranges[2:])] if ranges is not None else [(ka, None, None)])
    ta, tr = float(a.sum()), float(r.sum())
    if ta <= 0 or tr <= 0:
        raise UsageError("drift needs two non-empty histograms")
    fa, fr = np.cumsum(a) / ta, np.cumsum(r) / tr
    edges = np.abs(fa - fr)
    inner = np.where(pure, edges, np.maximum(fa - np.r_[0.0, fr[:-1]], fr - np.r_[0.0, fa[:-1]]))
    ks_lo = float(max(edges.max(), 0.0))
    ks_hi = float(max(ks_lo, inner.max()))
    # Buckets: bin j goes to bucket floor(buckets * reference CDF before it), so each bucket
    # starts where the reference's cumulative share crosses a multiple of 1/buckets.
    before = np.r_[0.0, fr[:-1]]
    bucket = np.minimum((before * buckets + 1e-12).astype(np.int64), buckets - 1)
    _, bucket = np.unique(bucket, return_inverse=True)
    n = int(bucket.max()) + 1
    pa = np.bincount(bucket, weights=a, minlength=n) / ta
    pr = np.bincount(bucket, weights=r, minlength=n) / tr
    qa, qr = np.where(pa > 0, pa, eps), np.where(pr > 0, pr, eps)
    psi = float(np.sum((qa - qr) * np.log(qa / qr)))
    m = 0.5 * (pa + pr)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl_a = np.where(pa > 0, pa * np.log2(pa / m), 0.0).sum()
        kl_r = np.where(pr > 0, pr * np.log2(pr / m), 0.0).sum()
    js = float(min(max(0.5 * (kl_a + kl_r), 0.0), 1.0))
    return Drift(psi=psi if math.isfinite(psi) else math.nan, ks=Estimate(ks_lo, ks_lo, ks_hi), js=js,
                 buckets=n, weight=ta, reference_weight=tr)
