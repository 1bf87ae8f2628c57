"""The compiled hot loops: binning a chunk into a dense sketch state, and merging states.

The dense state is a float64 array of shape ``(n_bins, 2, 4)``: for each bin and class
(0 = negative, 1 = positive) the fields ``[weight, min, max, score_sum]``. One bin is exactly one
64-byte cache line, so a row touches one line. An empty cell is ``[0, +inf, -inf, 0]``.

Rows with NaN scores are skipped and counted (callers that must reject NaN check beforehand);
rows with zero weight are counted by the caller but leave no trace in the bins, as in
scikit-learn, which drops zero-weight samples before building its curves.

Compiled with Numba; every function is ``nogil`` so chunks can be binned on several threads into
separate states and merged.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from numba import types
from numba.extending import intrinsic

from .grid import KIND_FLOAT, KIND_LINEAR, KIND_PROBABILITY

W, MIN, MAX, SUM = 0, 1, 2, 3
N_FIELDS = 4

# Probabilities are clipped to [EPS, 1 - EPS] for the log loss, as scikit-learn does for float64.
LOG_LOSS_EPS = float(np.finfo(np.float64).eps)


@intrinsic
def _bits(typingctx, x):  # type: ignore[no-untyped-def]
    """Reinterpret a float64 as int64 (a free bitcast in LLVM)."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return sig, codegen


@nb.njit(inline="always", nogil=True)
def bin_of(kind, f0, f1, f2, i0, i1, i2, cuts, s):  # type: ignore[no-untyped-def]
    """Scalar twin of :meth:`streameval.grid.Grid.bin_index` (same formulas, same results)."""
    k = _base_bin(kind, f0, f1, f2, i0, i1, i2, s)
    for j in range(cuts.shape[0]):  # CutGrid: one extra bin per cut at or below s
        if s >= cuts[j]:
            k += 1
    return k


@nb.njit(inline="always", nogil=True)
def _base_bin(kind: int, f0: float, f1: float, f2: float, i0: int, i1: int, i2: int, s: float) -> int:
    if kind == KIND_PROBABILITY:
        if s < 0.0:
            return 0
        if s > 1.0:
            return 2 + 2 * i2
        if s < 0.5:
            k = (_bits(s) >> (52 - i0)) - i1  # type: ignore[call-arg]
            return 1 + (k if k > 0 else 0)
        k = (_bits(1.0 - s) >> (52 - i0)) - i1  # type: ignore[call-arg]
        return 1 + 2 * i2 - (k if k > 0 else 0)
    if kind == KIND_LINEAR:
        if s < f0:
            return 0
        if s > f2:
            return i0 + 1
        x = math.floor((s - f0) * f1)
        if not x < i0:  # also catches NaN, which a validated LinearGrid never produces
            return i0
        return 1 + int(x)
    # KIND_FLOAT
    a = -s if s < 0.0 else s
    k = (_bits(a) >> (52 - i0)) - i1  # type: ignore[call-arg]
    if k < 0:
        k = 0
    elif k >= i2:
        k = i2 - 1
    return i2 - 1 - k if s < 0.0 else i2 + k


@nb.njit(nogil=True, cache=True, boundscheck=False)
def update_state(state, kind, f0, f1, f2, i0, i1, i2, cuts, scores, labels, weights, weighted):  # type: ignore[no-untyped-def]
    """Bin one chunk into ``state`` (modified in place).

    Returns ``(n_nan, n_outside_01, weight_01, brier_sum, log_loss_sum)``: the NaN rows skipped, the
    rows whose score lies outside [0, 1] (left out of the two probability sums), the weight of the
    other rows, and their weighted sums of ``(y - s)**2`` and ``-log(clip(p_true, eps, 1 - eps))``.
    """
    n = scores.shape[0]
    n_nan = 0
    n_out = 0
    w_in = 0.0
    brier = 0.0
    logloss = 0.0
    lo = LOG_LOSS_EPS
    hi = 1.0 - LOG_LOSS_EPS
    for i in range(n):
        s = np.float64(scores[i])
        if s != s:
            n_nan += 1
            continue
        w = weights[i] if weighted else 1.0
        if w == 0.0:
            continue
        c = np.int64(labels[i])
        cell = state[bin_of(kind, f0, f1, f2, i0, i1, i2, cuts, s), c]
        cell[W] += w
        if s < cell[MIN]:
            cell[MIN] = s
        if s > cell[MAX]:
            cell[MAX] = s
        cell[SUM] += w * s
        if 0.0 <= s <= 1.0:
            p = s if c == 1 else 1.0 - s
            d = 1.0 - p
            w_in += w
            brier += w * d * d
            logloss -= w * math.log(min(max(p, lo), hi))
        else:
            n_out += 1
    return n_nan, n_out, w_in, brier, logloss


@nb.njit(nogil=True, cache=True, boundscheck=False)
def bin_indices(kind, f0, f1, f2, i0, i1, i2, cuts, scores, out):  # type: ignore[no-untyped-def]
    """Write the bin index of each score into ``out`` (for testing against the NumPy grid)."""
    for i in range(scores.shape[0]):
        out[i] = bin_of(kind, f0, f1, f2, i0, i1, i2, cuts, np.float64(scores[i]))


@nb.njit(nogil=True, cache=True, boundscheck=False)
def merge_into(state, keys, values):  # type: ignore[no-untyped-def]
    """Add compact bins ``(keys, values)`` into the dense ``state`` (modified in place)."""
    for j in range(keys.shape[0]):
        b = keys[j]
        for c in range(2):
            src = values[j, c]
            dst = state[b, c]
            dst[W] += src[W]
            if src[MIN] < dst[MIN]:
                dst[MIN] = src[MIN]
            if src[MAX] > dst[MAX]:
                dst[MAX] = src[MAX]
            dst[SUM] += src[SUM]


def empty_state(n_bins: int) -> np.ndarray:
    """A dense state with every cell empty."""
    state = np.empty((n_bins, 2, N_FIELDS), dtype=np.float64)
    state[...] = np.array([0.0, np.inf, -np.inf, 0.0])
    return state


def empty_values(n: int) -> np.ndarray:
    """Compact values for ``n`` empty bins."""
    return empty_state(n)


def compact(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Occupied bins of a dense state: ``(keys int64 ascending, values (k, 2, 4))``."""
    keys = np.flatnonzero((state[:, 0, W] > 0) | (state[:, 1, W] > 0)).astype(np.int64)
    return keys, state[keys]
