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

__all__ = ["add_confusion_replicates"]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def add_confusion_replicates(conf, labels, preds, use_preds, scores, weights, weighted, keys, thresholds, r0, r1):  # type: ignore[no-untyped-def]
    """Add each row's Poisson weights for replicates ``r0 .. r1 - 1`` to ``conf[r, true, pred]``.

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
    keys : uint64 array of shape (n,)
        Row keys (:func:`streameval.kernels.bootstrap.row_hashes` and siblings).
    """
    kbuf = np.empty(r1 - r0, dtype=np.int32)
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
        _poisson_weights_from(keys[i], kbuf, thresholds, r0)
        t = labels[i]
        for r in range(r1 - r0):
            conf[r0 + r, t, p] += w * kbuf[r]
