# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's, and intrinsics are called with typing contexts)
"""The compiled hot loops: binning a chunk into a dense sketch state, and merging states.

The dense state is a float64 array of shape ``(n_bins, 2, 4)``: for each bin and class
(0 = negative, 1 = positive) the fields ``[weight, min, max, score_sum]``. One bin is exactly one
64-byte cache line, so a row touches one line. A dense state starts as zero memory
(:func:`empty_state`: fresh pages that the OS maps only where a cell is written, so a state holds
memory for its occupied bins, not for the whole grid): a cell whose weight is 0 is empty whatever
its min and max hold, and the first row into a cell sets both. The compact form (:func:`compact`,
:func:`empty_values`) writes an empty class cell as ``[0, +inf, -inf, 0]``.

A chunk is binned in blocks of ``BLOCK`` rows, in three passes that each stay in L1:
1. cell offsets for the block (bin index and class; branch-free, vectorized by LLVM);
2. the scatter into the state, prefetching the cell ``PREFETCH_DISTANCE`` rows ahead (the
   state is larger than L2, so the scatter is bound by cache misses; the prefetch overlaps them);
3. the Brier and log-loss running sums, vectorized: unweighted rows multiply their clipped
   probabilities into running products (one log per lane at the end of the chunk), weighted rows
   take a branch-free log per row.
Measured alternatives and figures are in ``docs/design.md``.

Rows with NaN scores are skipped and counted (callers that must reject NaN check beforehand);
rows with zero weight are counted by the caller but leave no trace in the bins, as in
scikit-learn, which drops zero-weight samples before building its curves.

Every function is ``nogil`` so chunks can be binned on several threads into separate states.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ..grid import KIND_LINEAR, KIND_PROBABILITY
from .cache import ENABLED as CACHE
from .fields import LOG_LOSS_EPS as LOG_LOSS_EPS  # the cell layout, re-exported
from .fields import MAX as MAX
from .fields import MIN as MIN
from .fields import N_FIELDS as N_FIELDS
from .fields import SUM as SUM
from .fields import W as W
from .intrinsics import bits_f64, f64_bits, log_pos, prefetch

BLOCK = 4096
PREFETCH_DISTANCE = 16
LANES = 16  # running products of the log loss (unweighted rows)
GROUP = 16  # rows per lane between renormalizations: 16 * 52 < 1022 binary orders of magnitude
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE = 0x3FF0000000000000
_LN2 = math.log(2.0)



@nb.njit(inline="always", nogil=True, error_model="numpy")
def _keys_probability(scores, out, f0, f1, f2, i0, i1, i2):  # type: ignore[no-untyped-def]
    # f0, f1, f2: the tails' mantissa bits and bin counts below 0 and above 1 (see ProbabilityGrid).
    tb = np.int64(f0)
    n_low = np.int64(f1)
    n_high = np.int64(f2)
    low_base = (i1 >> i0) << tb  # (1023 + min_exponent) << tail_bits
    high_base = np.int64(1023) << tb
    top = n_low + 2 * i2
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        low = s < 0.5
        q = s if low else 1.0 - s
        k = (f64_bits(q) >> (52 - i0)) - i1
        k = k if k > 0 else 0
        idx = n_low + k if low else top - k
        t = f64_bits(abs(s)) >> (52 - tb)
        kb = t - low_base
        kb = kb if kb > 0 else 0
        kb = kb if kb < n_low - 1 else n_low - 1
        ka = t - high_base
        ka = ka if ka > 0 else 0
        ka = ka if ka < n_high - 1 else n_high - 1
        idx = n_low - 1 - kb if s < 0.0 else idx
        out[i] = top + 1 + ka if s > 1.0 else idx


@nb.njit(inline="always", nogil=True, error_model="numpy")
def _keys_linear(scores, out, lo, scale, hi, bins):  # type: ignore[no-untyped-def]
    top = np.float64(bins - 1)
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        x = np.floor((s - lo) * scale)
        x = x if x < top else top  # also clamps +inf; s > hi is handled below
        x = x if x > 0.0 else 0.0  # (and NaN rows, which are never used)
        idx = 1 + np.int64(x)
        idx = 0 if s < lo else idx
        out[i] = bins + 1 if s > hi else idx


@nb.njit(inline="always", nogil=True, error_model="numpy")
def _keys_float(scores, out, i0, i1, i2):  # type: ignore[no-untyped-def]
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        k = (f64_bits(abs(s)) >> (52 - i0)) - i1
        k = k if k > 0 else 0
        k = k if k < i2 else i2 - 1
        out[i] = i2 - 1 - k if s < 0.0 else i2 + k


@nb.njit(inline="always", nogil=True, error_model="numpy")
def _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, scores, out):  # type: ignore[no-untyped-def]
    """Bin indices of ``scores`` into ``out[:len(scores)]``; twin of ``Grid.bin_index``.

    Loops run over ``range(len)`` of slices, never ``range(start, end)``: with a start that may be
    negative, Numba guards every index for wraparound, and that guard stops LLVM from vectorizing
    (5-10x slower here).
    """
    if kind == KIND_PROBABILITY:
        _keys_probability(scores, out, f0, f1, f2, i0, i1, i2)
    elif kind == KIND_LINEAR:
        _keys_linear(scores, out, f0, f1, f2, i0)
    else:
        _keys_float(scores, out, i0, i1, i2)
    for j in range(cuts.shape[0]):  # CutGrid: one extra bin per cut at or below the score
        c = cuts[j]
        for i in range(scores.shape[0]):
            out[i] += np.float64(scores[i]) >= c


@nb.njit(nogil=True, cache=CACHE, error_model="numpy")
def bin_indices(kind, f0, f1, f2, i0, i1, i2, cuts, scores, out):  # type: ignore[no-untyped-def]
    """Write the bin index of each score into ``out`` (for testing against the NumPy grid)."""
    n = scores.shape[0]
    for start in range(0, n, BLOCK):
        end = min(start + BLOCK, n)
        _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, scores[start:end], out[start:end])


@nb.njit(inline="always", nogil=True, error_model="numpy")
def _row_terms(s, y):  # type: ignore[no-untyped-def]
    """``(inside, outside, 1 - p_true, clipped p_true)`` of one row, without branches."""
    inside = (s >= 0.0) & (s <= 1.0)  # both False for NaN
    outside = (s < 0.0) | (s > 1.0)
    p = s if y != 0 else 1.0 - s
    d = 1.0 - p if inside else 0.0  # selects, not products: 0 * NaN or 0 * inf is NaN
    p = p if p > LOG_LOSS_EPS else LOG_LOSS_EPS
    p = p if p < 1.0 - LOG_LOSS_EPS else 1.0 - LOG_LOSS_EPS
    return inside, outside, d, p


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy", fastmath={"reassoc"})
def _sums_weighted(scores, labels, weights):  # type: ignore[no-untyped-def]
    n_out = 0
    w_in = 0.0
    brier = 0.0
    logloss = 0.0
    for i in range(scores.shape[0]):
        inside, outside, d, p = _row_terms(np.float64(scores[i]), labels[i])
        w = weights[i]
        n_out += outside & (w > 0.0)
        w = w if inside else 0.0
        w_in += w
        brier += w * d * d
        logloss -= w * log_pos(p)
    return n_out, w_in, brier, logloss


@nb.njit(inline="always", nogil=True, error_model="numpy")
def _log_loss_lanes(p, inside, prod, near, j):  # type: ignore[no-untyped-def]
    """Fold one row's clipped ``p_true`` into lane ``j`` (see :func:`_sums_unweighted`)."""
    prod[j] *= p if inside & (p < 0.5) else 1.0
    q = 1.0 - p if inside & (p >= 0.5) else 0.0  # exact for p >= 0.5 (Sterbenz)
    x = near[j]
    near[j] = x + q * (1.0 - x)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy", fastmath={"reassoc"})
def _sums_unweighted(scores, labels, lanes):  # type: ignore[no-untyped-def]
    """Sums of one block of unweighted rows; the log loss is folded into ``lanes``.

    ``-sum(log p)`` is ``-log(prod p)``, kept in ``LANES`` lanes (vectorized) of two kinds, so
    that it is accurate relative to the result, not only in absolute terms:

    - ``p < 0.5`` is multiplied into a running product ``lanes[:LANES]``, whose binary exponent
      moves into an integer every ``GROUP`` rows per lane, before it could underflow
      (``p >= 2**-52``: a product of ``GROUP`` of them stays above ``2**-1022``). Each product
      rounds by half an ulp, and each such row adds at least ``log 2`` to the sum.
    - ``p >= 0.5`` (confident and right: ``-log p`` may be 1e-12) goes into ``x = 1 - prod p``
      as ``x += q (1 - x)`` with ``q = 1 - p``, exact in floating point; ``x`` keeps its
      relative precision while small, and once above 0.5 its ``-log(1 - x)`` is added to
      ``flushed`` and it restarts from 0.

    Returns ``(n_outside, weight_01, brier, exponent, flushed)``; :func:`_lanes_log` finishes.
    """
    n = scores.shape[0]
    prod = lanes[:LANES]
    near = lanes[LANES:]
    n_out = 0
    w_in = 0.0
    brier = 0.0
    exponent = 0
    flushed = 0.0
    span = LANES * GROUP
    for g in range(0, n, span):
        m = min(span, n - g)
        if m == span:
            for k in range(GROUP):
                for j in range(LANES):  # fixed trip counts: LLVM keeps the lanes in registers
                    i = np.uint64(g + k * LANES + j)  # unsigned: no wraparound guard
                    inside, outside, d, p = _row_terms(np.float64(scores[i]), labels[i])
                    n_out += outside
                    w_in += 1.0 if inside else 0.0
                    brier += d * d
                    _log_loss_lanes(p, inside, prod, near, j)
        else:  # the chunk's last rows: at most GROUP per lane
            for i in range(m):
                inside, outside, d, p = _row_terms(np.float64(scores[g + i]), labels[g + i])
                n_out += outside
                w_in += 1.0 if inside else 0.0
                brier += d * d
                _log_loss_lanes(p, inside, prod, near, i % LANES)
        for j in range(LANES):
            b = f64_bits(prod[j])
            exponent += (b >> 52) - 1023
            prod[j] = bits_f64((b & _MANTISSA) | _ONE)
            x = near[j]
            big = x > 0.5
            flushed -= log_pos(1.0 - x) if big else 0.0  # 1 - x is exact for x >= 0.5
            near[j] = 0.0 if big else x
    return n_out, w_in, brier, exponent, flushed


@nb.njit(inline="always", nogil=True)
def _new_lanes():  # type: ignore[no-untyped-def]
    """Log-loss lanes for :func:`_sums_unweighted`: products at 1, near-one sums at 0."""
    lanes = np.zeros(2 * LANES)
    lanes[:LANES] = 1.0
    return lanes


@nb.njit(nogil=True)
def _lanes_log(lanes, exponent, flushed):  # type: ignore[no-untyped-def]
    """The log-loss sum held by ``lanes`` (see :func:`_sums_unweighted`)."""
    total = flushed - exponent * _LN2
    for j in range(LANES):
        total -= math.log(lanes[j])
        total -= math.log1p(-lanes[LANES + j])
    return total


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def _probability_sums(scores, labels, weights, weighted):  # type: ignore[no-untyped-def]
    """Brier and log-loss sums over the rows whose score lies in [0, 1] (see update_state)."""
    if weighted:
        return _sums_weighted(scores, labels, weights)
    lanes = _new_lanes()
    n_out, w_in, brier, exponent, flushed = _sums_unweighted(scores, labels, lanes)
    return n_out, w_in, brier, _lanes_log(lanes, exponent, flushed)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def update_state(state, kind, f0, f1, f2, i0, i1, i2, cuts, scores, labels, weights, weighted):  # type: ignore[no-untyped-def]
    """Bin one chunk into ``state`` (modified in place; C-contiguous).

    Returns ``(n_nan, n_outside_01, weight_01, brier_sum, log_loss_sum)``: the NaN rows skipped, the
    rows whose score lies outside [0, 1] (left out of the two probability sums), the weight of the
    other rows, and their weighted sums of ``(y - s)**2`` and ``-log(clip(p_true, eps, 1 - eps))``.
    """
    n = scores.shape[0]
    keys = np.empty(BLOCK + PREFETCH_DISTANCE, dtype=np.int64)
    flat = state.reshape(-1)
    line = 2 * N_FIELDS
    lanes = _new_lanes()
    n_nan = 0
    n_out = 0
    w_in = 0.0
    brier = 0.0
    logloss = 0.0
    exponent = 0
    flushed = 0.0
    for start in range(0, n, BLOCK):
        end = min(start + BLOCK, n)
        m = end - start
        sc = scores[start:end]
        lb = labels[start:end]
        wt = weights[start:end] if weighted else weights
        _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, sc, keys)
        for j in range(m):  # cell offsets: bin * 8 + class * 4
            keys[j] = keys[j] * line + np.int64(lb[j]) * N_FIELDS
        for j in range(m, m + PREFETCH_DISTANCE):
            keys[j] = keys[m - 1]
        for j in range(m):
            prefetch(flat, keys[j + PREFETCH_DISTANCE])
            s = np.float64(sc[j])
            if s != s:
                n_nan += 1
                continue
            w = wt[j] if weighted else 1.0
            if w == 0.0:
                continue
            c = keys[j]
            fresh = flat[c + W] == 0.0  # an empty cell of a zero-memory state (w > 0 here)
            flat[c + W] += w
            if s < flat[c + MIN] or fresh:
                flat[c + MIN] = s
            if s > flat[c + MAX] or fresh:
                flat[c + MAX] = s
            flat[c + SUM] += w * s
        if weighted:
            o, wi, b, ll = _sums_weighted(sc, lb, wt)
            logloss += ll
        else:
            o, wi, b, e, f = _sums_unweighted(sc, lb, lanes)
            exponent += e
            flushed += f
        n_out += o
        w_in += wi
        brier += b
    if not weighted:
        logloss = _lanes_log(lanes, exponent, flushed)
    return n_nan, n_out, w_in, brier, logloss


@nb.njit(inline="always", nogil=True)
def _merge_cell(dst, src):  # type: ignore[no-untyped-def]
    """Fold one cell into another: weights and sums add, min/max combine."""
    dst[W] += src[W]
    if src[MIN] < dst[MIN]:
        dst[MIN] = src[MIN]
    if src[MAX] > dst[MAX]:
        dst[MAX] = src[MAX]
    dst[SUM] += src[SUM]


@nb.njit(inline="always", nogil=True)
def _fold_into_dense(state, b, c, src, j):  # type: ignore[no-untyped-def]
    """Fold the non-empty cell ``src[j, c]`` into the dense ``state[b, c]``, which may be empty
    (weight 0).

    An empty cell takes the other's fields as ``_merge_cell`` would fold them into
    ``[0, +inf, -inf, 0]``: the sums as ``0.0 + x`` (so a -0.0 sum becomes +0.0, bit for bit).
    Scalar indexing throughout: with cell views (``state[b, c]``) Numba builds an array view per
    call, which made this fold 2.5x slower.
    """
    fold_cell(state, b, c, src[j, c, W], src[j, c, MIN], src[j, c, MAX], src[j, c, SUM])


@nb.njit(inline="always", nogil=True)
def fold_cell(state, b, c, w, lo, hi, sm):  # type: ignore[no-untyped-def]
    """Fold the non-empty cell ``[w, lo, hi, sm]`` into the dense ``state[b, c]`` (see
    :func:`_fold_into_dense`)."""
    dw = state[b, c, W]
    if dw == 0.0:
        state[b, c, W] = 0.0 + w
        state[b, c, MIN] = lo
        state[b, c, MAX] = hi
        state[b, c, SUM] = 0.0 + sm
    else:
        state[b, c, W] = dw + w
        if lo < state[b, c, MIN]:
            state[b, c, MIN] = lo
        if hi > state[b, c, MAX]:
            state[b, c, MAX] = hi
        state[b, c, SUM] += sm


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def merge_into(state, keys, values):  # type: ignore[no-untyped-def]
    """Add compact bins ``(keys, values)`` into the dense ``state`` (modified in place)."""
    for j in range(keys.shape[0]):
        b = keys[j]
        for c in range(2):
            if values[j, c, W] > 0.0:
                _fold_into_dense(state, b, c, values, j)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def merge_dense(state, other):  # type: ignore[no-untyped-def]
    """Add the dense ``other`` into the dense ``state`` (modified in place)."""
    for b in range(other.shape[0]):
        for c in range(2):
            if other[b, c, W] > 0.0:
                _fold_into_dense(state, b, c, other, b)


def probability_sums(
    scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, weighted: bool
) -> tuple[int, float, float, float]:
    """``(n_outside_01, weight_01, brier_sum, log_loss_sum)`` of a whole chunk (see update_state)."""
    n_out, w_in, brier, logloss = _probability_sums(scores, labels, weights, weighted)
    return int(n_out), float(w_in), float(brier), float(logloss)


def bin_compact(
    keys: np.ndarray, labels: np.ndarray, scores: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Occupied bins of one chunk by sorting, without a dense state: ``(keys, values)``.

    For small chunks added to compact sketches (many small sketches stay small). Rows must be
    pre-filtered: no NaN score, no zero weight. Same cells as :func:`update_state`; the float
    sums may differ in the last bits (summation order).
    """
    if keys.shape[0] == 0:  # (np.r_[True, ...] below would mark a start in no rows)
        return np.empty(0, dtype=np.int64), empty_values(0)
    code = keys.astype(np.int64) * 2 + labels
    order = np.argsort(code, kind="stable")
    code = code[order]
    s = scores[order].astype(np.float64)
    w = np.ones_like(s) if weights is None else weights[order]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    cell = code[starts]
    out_keys = np.unique(cell >> 1)
    values = empty_values(out_keys.shape[0])
    row = np.searchsorted(out_keys, cell >> 1)
    cls = cell & 1
    values[row, cls, W] = np.add.reduceat(w, starts)
    values[row, cls, MIN] = np.minimum.reduceat(s, starts)
    values[row, cls, MAX] = np.maximum.reduceat(s, starts)
    with np.errstate(over="ignore", invalid="ignore"):  # huge scores: inf sums, as in the kernel
        values[row, cls, SUM] = np.add.reduceat(w * s, starts)
    return out_keys, values


def merge_compact(
    keys_a: np.ndarray, values_a: np.ndarray, keys_b: np.ndarray, values_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Union of two compact bin sets (keys ascending and unique in each)."""
    keys = np.union1d(keys_a, keys_b)
    values = empty_values(keys.shape[0])
    values[np.searchsorted(keys, keys_a)] = values_a
    at = np.searchsorted(keys, keys_b)
    dst = values[at]
    dst[:, :, W] += values_b[:, :, W]
    dst[:, :, MIN] = np.minimum(dst[:, :, MIN], values_b[:, :, MIN])
    dst[:, :, MAX] = np.maximum(dst[:, :, MAX], values_b[:, :, MAX])
    dst[:, :, SUM] += values_b[:, :, SUM]
    values[at] = dst
    return keys, values


def empty_state(n_bins: int) -> np.ndarray:
    """A dense state with every cell empty: zero memory, which takes no RAM until written.

    ``np.zeros`` of this size gets fresh pages from the OS, mapped on first write; a 333,825-bin
    state (21 MB) fed 100M probabilities writes ~74,000 bins, about 5 MB of pages.
    """
    return np.zeros((n_bins, 2, N_FIELDS), dtype=np.float64)


def empty_values(n: int) -> np.ndarray:
    """Compact values for ``n`` empty bins: every cell ``[0, +inf, -inf, 0]``."""
    values = np.empty((n, 2, N_FIELDS), dtype=np.float64)
    values[...] = np.array([0.0, np.inf, -np.inf, 0.0])
    return values


def compact(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Occupied bins of a dense state: ``(keys int64 ascending, values (k, 2, 4))``, an empty
    class cell of an occupied bin written as ``[0, +inf, -inf, 0]``."""
    keys = np.flatnonzero((state[:, 0, W] > 0) | (state[:, 1, W] > 0)).astype(np.int64)
    values = state[keys]
    empty = values[:, :, W] == 0
    values[:, :, MIN][empty] = np.inf
    values[:, :, MAX][empty] = -np.inf
    values[:, :, SUM][empty] = 0.0
    return keys, values
