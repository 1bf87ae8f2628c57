# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's)
"""The compiled Poisson-bootstrap update of a multiclass sketch's confusion matrices.

Replicate ``r`` of the confusion matrix adds, for each row, its sample weight times its Poisson
weight ``k_r`` to cell ``(true class, predicted class)``. The row keys and the Poisson weights are
those of the binary kernel (:mod:`streameval.kernels.bootstrap`: the same key, the same function of
``(key, r)``), so the confusion replicates and the one-vs-rest replicate histograms of one sketch
resample the same rows with the same weights, and a row's weights do not depend on the chunk,
shard or thread that sees it.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .bootstrap import _poisson_weights_from
from .cache import ENABLED as CACHE

__all__ = ["poisson_matrix", "add_confusion_replicates", "add_column_replicates"]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def poisson_matrix(keys, thresholds, n_replicates, out, i0, i1):  # type: ignore[no-untyped-def]
    """Fill ``out[i, r]`` (uint8, shape (n, R)) with row ``i``'s Poisson weight in replicate ``r``,
    for rows ``i0 .. i1 - 1``: the binary kernel's weights, computed once per row and then read by
    the confusion and every column (a K-class sketch would otherwise hash each row K + 1 times)."""
    kbuf = np.empty(n_replicates, dtype=np.int32)
    for i in range(i0, i1):
        _poisson_weights_from(keys[i], kbuf, thresholds, 0)
        for r in range(n_replicates):
            out[i, r] = np.uint8(kbuf[r])


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def add_confusion_replicates(conf, labels, preds, use_preds, scores, weights, weighted, kmat, r0, r1):  # type: ignore[no-untyped-def]
    """Add each row's weight times ``kmat[row, r]`` to ``conf[r, true, pred]`` for ``r0 <= r < r1``.

    Parameters
    ----------
    conf : float64 array of shape (R, K, K)
        Updated in place; threads given disjoint replicate ranges write disjoint slices.
    labels : int64 array of shape (n,)
        True class codes.
    preds : int64 array of shape (n,)
        Predicted class codes, read when ``use_preds``.
    scores : array of shape (n, K)
        Read when not ``use_preds``: the prediction is the row's first argmax (``np.argmax``).
    weights : float64 array of shape (n,)
        Read when ``weighted``.
    kmat : uint8 array of shape (n, R)
        The rows' Poisson weights (:func:`poisson_matrix`).
    """
    k = conf.shape[1]
    for i in range(labels.shape[0]):
        w = weights[i] if weighted else 1.0
        if w == 0.0:
            continue
        if use_preds:
            p = preds[i]
        else:
            p = 0
            best = scores[i, 0]
            for j in range(1, k):
                if scores[i, j] > best:
                    best = scores[i, j]
                    p = j
        t = labels[i]
        for r in range(r0, r1):
            conf[r, t, p] += w * kmat[i, r]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def add_column_replicates(table, rows, order, positive, weights, weighted, kmat):  # type: ignore[no-untyped-def]
    """Add each row's weight times ``kmat[row, :]`` to ``table[rows[row], positive[row], :]``,
    visiting rows in ``order`` (:func:`streameval.kernels.bootstrap.order_by_row`: the table is
    walked once); rows with ``rows[row] < 0`` (NaN score, zero weight) are skipped."""
    R = table.shape[2]
    for n in range(order.shape[0]):
        i = order[n]
        row = rows[i]
        if row < 0:
            continue
        w = weights[i] if weighted else 1.0
        cell = table[row, np.int64(positive[i])]
        for r in range(R):
            cell[r] += w * kmat[i, r]
