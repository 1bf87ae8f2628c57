# mypy: disable-error-code="no-untyped-call"
"""The compiled pair-count terms of the ROC-AUC (:func:`streameval.metrics.auc._full_areas`).

Apart from :mod:`streameval.metrics.auc` so that reading and reporting stored sets, which compute
their AUCs per group in NumPy (:mod:`streameval.metrics.segmented`), do not import Numba.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .cache import ENABLED as CACHE

__all__ = ["pair_terms"]


@nb.njit(nogil=True, cache=CACHE)
def pair_terms(pos, neg, tp, lower, upper):  # type: ignore[no-untyped-def]
    """The per-bin terms ``neg_b * (tp_before_b + h_b)`` of
    :func:`streameval.metrics.auc._full_area` for the ``lower`` and the ``upper`` path kinds, in
    one pass (the same operations per element, so the same terms).

    Parameters
    ----------
    pos, neg, tp : float64 arrays of shape (k,)
        Positive and negative weight per bin, positives at or above each bin.
    lower, upper : int arrays of shape (k,)
        The path kind of each bin (0, 1 or 2; see :mod:`streameval.metrics.auc`).

    Returns
    -------
    (lo, hi) : float64 arrays of shape (k,)
    """
    k = pos.shape[0]
    lo = np.empty(k)
    hi = np.empty(k)
    for i in range(k):
        p, n = pos[i], neg[i]
        before = tp[i] - p
        kl, ku = lower[i], upper[i]
        lo[i] = n * (before + (p if kl == 2 else (0.0 if kl == 0 else 0.5 * p)))
        hi[i] = n * (before + (p if ku == 2 else (0.0 if ku == 0 else 0.5 * p)))
    return lo, hi
