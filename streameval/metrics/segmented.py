"""Bin-table metrics for many groups at once: ROC-AUC, average precision and confusion counts.

A sliced and windowed table has tens of thousands of groups, each a handful of occupied bins.
Building a :class:`~streameval.metrics.table.BinTable` and calling :func:`~.auc.roc_auc` per
group costs about a millisecond of Python each; here every group's bins sit in one set of flat
arrays (:class:`SegmentedTable`, each group a contiguous segment in descending score order, as in
a ``BinTable``), and each metric is a few vectorized expressions over all rows plus one sum per
segment. The per-row expressions are those of :mod:`.auc` and :mod:`.confusion` (the within-bin
path kinds, the pair-count area, the average-precision group and integral bounds, the nearest
exact threshold) and the sums are added in NumPy's order (pairwise), so each group's result
equals the single-sketch one bit for bit; a test checks it. :func:`segmented_psi` does the same for
score drift (PSI of each group's score histogram against a reference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..kernels.segments import segment_cumsum, segment_sum
from .auc import _group, _integral

__all__ = ["SegmentedTable", "segmented_roc_auc", "segmented_average_precision", "segmented_confusion",
           "score_histograms", "segmented_psi"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_EXACT_SUM = 2.0**52


@dataclass(frozen=True, eq=False)
class SegmentedTable:
    """The bin tables of ``n_groups`` groups, concatenated.

    Attributes
    ----------
    starts : ndarray of int64, shape (n_groups + 1,)
        Group ``g``'s rows are ``starts[g]:starts[g + 1]`` (empty for a group with no bins).
    group : ndarray of int64, shape (k,)
        The group of each row.
    keys : ndarray of int64, shape (k,)
        Grid bin of each row, descending within each group.
    pos, neg, pos_min, pos_max, neg_min, neg_max : ndarray of float64, shape (k,)
        As in :class:`~streameval.metrics.table.BinTable`.
    tp, fp : ndarray of float64, shape (k,)
        Positive / negative weight at or above each row's bin, within its group.
    P, N : ndarray of float64, shape (n_groups,)
        Each group's positive and negative weight.
    """

    starts: IntArray
    group: IntArray
    keys: IntArray
    pos: FloatArray
    neg: FloatArray
    pos_min: FloatArray
    pos_max: FloatArray
    neg_min: FloatArray
    neg_max: FloatArray
    tp: FloatArray
    fp: FloatArray
    P: FloatArray
    N: FloatArray

    @classmethod
    def from_cells(cls, group: IntArray, bins: IntArray, cls_: IntArray, cells: FloatArray,
                   n_groups: int) -> "SegmentedTable":
        """Build from cells sorted by ``(group, bin, class)`` ascending, classes 0 and 1 only.

        Parameters
        ----------
        group, bins, cls_ : ndarray of int64, shape (m,)
            Each cell's group (``< n_groups``), grid bin and class (0 negative, 1 positive).
        cells : ndarray of float64, shape (m, 4)
            ``[weight, min, max, score_sum]`` per cell.
        n_groups : int
        """
        m = group.shape[0]
        new = np.ones(m, dtype=bool)
        if m:
            new[1:] = (group[1:] != group[:-1]) | (bins[1:] != bins[:-1])
        row = np.cumsum(new) - 1
        k = int(row[-1]) + 1 if m else 0
        row_group = group[new]
        starts = np.searchsorted(row_group, np.arange(n_groups + 1)).astype(np.int64)
        # ascending rows -> descending within each group (BinTable's order)
        asc = np.arange(k, dtype=np.int64)
        desc = starts[row_group] + starts[row_group + 1] - 1 - asc
        where = desc[row]
        fields = {}
        for c, prefix in ((1, "pos"), (0, "neg")):
            mine = np.flatnonzero(cls_ == c)
            at, values = where[mine], cells[mine]
            for suffix, f, empty in (("", 0, 0.0), ("_min", 1, np.inf), ("_max", 2, -np.inf)):
                arr = np.full(k, empty)
                arr[at] = values[:, f]
                fields[prefix + suffix] = arr
        keys = np.empty(k, dtype=np.int64)
        keys[desc] = bins[new]
        out_group = np.empty(k, dtype=np.int64)
        out_group[desc] = row_group
        tp = segment_cumsum(fields["pos"], starts)
        fp = segment_cumsum(fields["neg"], starts)
        last = starts[1:] - 1
        has = starts[1:] > starts[:-1]
        P = np.where(has, tp[np.maximum(last, 0)] if k else 0.0, 0.0)
        N = np.where(has, fp[np.maximum(last, 0)] if k else 0.0, 0.0)
        return cls(starts=starts, group=out_group, keys=keys, tp=tp, fp=fp, P=P, N=N, **fields)

    @property
    def n_groups(self) -> int:
        return int(self.starts.shape[0] - 1)

    def _sum(self, x: FloatArray) -> FloatArray:
        """Sum of ``x`` over each group's rows, added in ``np.sum``'s order (bit-identical results)."""
        out: FloatArray = segment_sum(np.ascontiguousarray(x, dtype=np.float64), self.starts)
        return out

    def _kinds(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int8]]:
        both = (self.pos > 0) & (self.neg > 0)
        lower = np.where(self.pos_min > self.neg_max, 2, np.where(self.pos_min == self.neg_max, 1, 0))
        upper = np.where(self.pos_max < self.neg_min, 0, np.where(self.pos_max == self.neg_min, 1, 2))
        return np.where(both, lower, 1).astype(np.int8), np.where(both, upper, 1).astype(np.int8)


def _from_bounds(lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``Estimate.from_bounds`` elementwise: ``(value, lower, upper)``."""
    swap = (lo > hi) & (lo - hi <= 1e-12 * np.maximum(1.0, np.abs(lo)))
    lo, hi = np.where(swap, hi, lo), np.where(swap, lo, hi)
    value = np.where(lo == hi, lo, np.minimum(np.maximum(0.5 * (lo + hi), lo), hi))
    return value, lo, hi


def _area(t: SegmentedTable, kind: npt.NDArray[np.int8]) -> FloatArray:
    """Per group, :func:`.auc._full_area`: the pair count when exact, else the area in rates;
    NaN for a group without pairs (its AUC is undefined)."""
    tp_before = t.tp - t.pos
    h = np.where(kind == 2, t.pos, np.where(kind == 0, 0.0, 0.5 * t.pos))
    pairs = t.P * t.N
    with np.errstate(invalid="ignore", divide="ignore"):
        counted = t._sum(t.neg * (tp_before + h)) / pairs
    if not np.any(pairs >= _EXACT_SUM):  # the area in rates serves only groups of 2**52 pairs or more
        return np.where(pairs > 0, counted, np.nan)
    g = t.group
    P, N = t.P[g], t.N[g]
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = t.fp / N
        f0 = f1 - t.neg / N
        t1 = t.tp / P
        t0 = t1 - t.pos / P
        dx = f1 - f0
        width = np.clip(np.minimum(f1, 1.0) - f0, 0.0, None)
        slope = np.where(dx > 0, (t1 - t0) / dx, 0.0)
        height = np.where(kind == 2, t1, np.where(kind == 0, t0, t0 + 0.5 * width * slope))
        rates = t._sum(width * height)
    return np.where((pairs > 0) & (pairs < _EXACT_SUM), counted, np.where(pairs > 0, rates, np.nan))


def segmented_roc_auc(t: SegmentedTable) -> tuple[FloatArray, FloatArray, FloatArray]:
    """ROC-AUC of every group with its binning bounds, as :func:`.auc.roc_auc` (full area).

    Returns
    -------
    value, lower, upper : ndarray of float64, shape (n_groups,)
        NaN for a group without both classes (where ``roc_auc`` warns and returns NaN).
    """
    lower_kind, upper_kind = t._kinds()
    lo = np.minimum(_area(t, lower_kind), 1.0)
    hi = np.minimum(_area(t, upper_kind), 1.0)
    value, lo, hi = _from_bounds(lo, hi)
    defined = (t.P > 0) & (t.N > 0)
    return tuple(np.where(defined, a, np.nan) for a in (value, lo, hi))  # type: ignore[return-value]


def segmented_average_precision(t: SegmentedTable) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Average precision of every group with its binning bounds, as :func:`.auc.average_precision`.

    Returns
    -------
    value, lower, upper : ndarray of float64, shape (n_groups,)
        0 for a group with negatives only and NaN for an empty one (scikit-learn's and
        ``average_precision``'s conventions, without the warning).
    """
    # each group's weights scaled by a power of two to total about 1, as average_precision (exact:
    # the same bits for ordinary weights; subnormal ones are lifted out of the range losing digits)
    total = t.P + t.N
    e_group = np.where(np.isfinite(total), -np.frexp(total)[1], 0)
    e = np.repeat(e_group, np.diff(t.starts))
    p, n = np.ldexp(t.pos, e), np.ldexp(t.neg, e)
    tp0 = np.ldexp(t.tp - t.pos, e)
    d0 = tp0 + np.ldexp(t.fp - t.neg, e)
    neg_none = (n == 0) | (t.pos_min > t.neg_max)
    neg_all = (n > 0) & (t.pos_max <= t.neg_min)
    extra_lo = np.where(neg_none, 0.0, n)
    extra_hi = np.where(neg_all, n, 0.0)
    tied = t.pos_min == t.pos_max
    upper = _group(tp0, d0, p, extra_hi)
    lower = np.where(tied, _group(tp0, d0, p, extra_lo), _integral(tp0, d0, p, extra_lo))
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = t._sum(np.where(p > 0, lower, 0.0)) / np.ldexp(t.P, e_group)
        hi = t._sum(upper) / np.ldexp(t.P, e_group)
    value, lo, hi = _from_bounds(np.maximum(0.0, np.minimum(lo, 1.0)), np.maximum(0.0, np.minimum(hi, 1.0)))
    none = t.P <= 0
    empty = none & (t.N <= 0)
    return tuple(np.where(empty, np.nan, np.where(none, 0.0, a)) for a in (value, lo, hi))  # type: ignore[return-value]


def segmented_confusion(t: SegmentedTable, key: int, threshold: float) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """Predicted-positive weights ``(tp, fp)`` of every group at ``threshold`` (``score >=
    threshold``; its grid bin is ``key``), as :func:`.confusion.confusion_at`.

    Returns
    -------
    tp, fp : ndarray of float64, shape (n_groups,)
        Exact counts, or those at the nearest exact threshold where the threshold falls inside a
        bin whose scores straddle it.
    exact : ndarray of bool, shape (n_groups,)
        False where the counts were moved to the nearest exact threshold.
    """
    size = t.starts[1:] - t.starts[:-1]
    n_above = np.bincount(t.group, weights=(t.keys > key), minlength=t.n_groups).astype(np.int64)
    k = t.keys.shape[0]
    first_below = t.starts[:-1] + n_above  # may be the next group's first row (or k) when all are above
    i = np.minimum(first_below, max(k - 1, 0))
    prev = np.maximum(first_below - 1, 0)  # not i - 1: i is clipped for the last group
    if k == 0:
        zeros = np.zeros(t.n_groups)
        return zeros, zeros.copy(), np.ones(t.n_groups, dtype=bool)
    tp_above = np.where(n_above > 0, t.tp[prev], 0.0)
    fp_above = np.where(n_above > 0, t.fp[prev], 0.0)
    in_bin = (n_above < size) & (t.keys[i] == key)
    p, n = t.pos[i], t.neg[i]
    tp_lo = tp_above + np.where(t.pos_min[i] >= threshold, p, 0.0)
    tp_hi = tp_above + np.where(t.pos_max[i] < threshold, 0.0, p)
    fp_lo = fp_above + np.where(t.neg_min[i] >= threshold, n, 0.0)
    fp_hi = fp_above + np.where(t.neg_max[i] < threshold, 0.0, n)
    exact = ~in_bin | ((tp_lo == tp_hi) & (fp_lo == fp_hi))
    below = np.minimum(t.pos_min[i], t.neg_min[i])
    above = np.where(n_above > 0, np.minimum(t.pos_min[prev], t.neg_min[prev]),
                     np.nextafter(np.maximum(t.pos_max[i], t.neg_max[i]), np.inf))
    use_below = threshold - below <= above - threshold
    tp = np.where(~in_bin, tp_above, np.where(exact, tp_lo, np.where(use_below, tp_above + p, tp_above)))
    fp = np.where(~in_bin, fp_above, np.where(exact, fp_lo, np.where(use_below, fp_above + n, fp_above)))
    return tp, fp, exact


def score_histograms(group: IntArray, bins: IntArray, weight: FloatArray) -> tuple[IntArray, IntArray, FloatArray]:
    """Per (group, bin) total weight of cells sorted by (group, bin, class): ``(group, bin, weight)``
    with one entry per occupied (group, bin), sorted (the classes added in class order)."""
    m = group.shape[0]
    if m == 0:
        return group, bins, weight
    new = np.ones(m, dtype=bool)
    new[1:] = (group[1:] != group[:-1]) | (bins[1:] != bins[:-1])
    starts = np.flatnonzero(new)
    return group[starts], bins[starts], np.add.reduceat(weight, starts)


def segmented_psi(group: IntArray, bins: IntArray, weight: FloatArray, reference_of: IntArray,
                  ref_group: IntArray, ref_bins: IntArray, ref_weight: FloatArray, n_refs: int, *,
                  buckets: int = 10, eps: float = 1e-4) -> FloatArray:
    """Population stability index of many score histograms, each against its own reference.

    The same statistic as :func:`streameval.stats.score_drift`'s ``psi`` (Yurdakul 2018), for
    all groups at once: each reference's weight is cut into ``buckets`` groups of about equal
    weight at bin boundaries (a bin belongs to bucket ``floor(buckets * F_ref(before the bin))``),
    both histograms are summed per bucket, and ``PSI = sum (a - r) ln(a / r)`` over the buckets'
    shares, an empty share counting as ``eps``.

    Parameters
    ----------
    group, bins, weight : ndarray of shape (m,)
        The histograms under test, one entry per occupied (group, bin), sorted by (group, bin)
        (:func:`score_histograms`); groups are numbered ``0 .. len(reference_of) - 1``.
    reference_of : ndarray of int64, shape (n_groups,)
        Each group's reference histogram, or -1 for none.
    ref_group, ref_bins, ref_weight : ndarray of shape (r,)
        The reference histograms, sorted by (reference, bin); references are ``0 .. n_refs - 1``.
    n_refs : int
    buckets : int, default 10
    eps : float, default 1e-4

    Returns
    -------
    ndarray of float64, shape (n_groups,)
        NaN where a group has no reference, or either histogram is empty.

    References
    ----------
    .. [1] Yurdakul (2018). "Statistical properties of population stability index". Western
       Michigan University.
    """
    n_groups = reference_of.shape[0]
    ref_starts = np.searchsorted(ref_group, np.arange(n_refs + 1)).astype(np.int64)
    tr = np.bincount(ref_group, weights=ref_weight, minlength=n_refs)
    ta = np.bincount(group, weights=weight, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        cum = segment_cumsum(np.ascontiguousarray(ref_weight, dtype=np.float64), ref_starts) / tr[ref_group]
    span = int(max(int(bins.max(initial=0)), int(ref_bins.max(initial=0)))) + 1
    ref_key = ref_group * span + ref_bins

    def before(refs: IntArray, b: IntArray) -> FloatArray:
        """The reference's cumulative share strictly below each bin."""
        i = np.searchsorted(ref_key, refs * span + b, side="left")
        first = i <= ref_starts[refs]
        out: FloatArray = np.where(first, 0.0, cum[np.maximum(i - 1, 0)])
        return out

    def bucket(share: FloatArray) -> IntArray:
        out: IntArray = np.minimum((share * buckets + 1e-12).astype(np.int64), buckets - 1)
        return out

    has = reference_of >= 0
    g_ok = has[group]
    g, b, w = group[g_ok], bins[g_ok], weight[g_ok]
    refs = reference_of[g]
    wa = np.bincount(g * buckets + bucket(before(refs, b)), weights=w, minlength=n_groups * buckets)
    wr = np.bincount(ref_group * buckets + bucket(before(ref_group, ref_bins)), weights=ref_weight,
                     minlength=n_refs * buckets)
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = wa.reshape(n_groups, buckets) / ta[:, None]
        pr = wr.reshape(n_refs, buckets) / tr[:, None]
        pr_g = pr[np.maximum(reference_of, 0)]
        qa, qr = np.where(pa > 0, pa, eps), np.where(pr_g > 0, pr_g, eps)
        psi = np.sum((qa - qr) * np.log(qa / qr), axis=1)
    ok = has & (ta > 0) & (tr[np.maximum(reference_of, 0)] > 0) if n_refs else np.zeros(n_groups, dtype=bool)
    return np.where(ok, psi, np.nan)
