# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's)
"""The compiled loop behind :func:`streameval.sketch.multiclass_tables.pair_table`.

A one-vs-one table joins two sorted runs of cells (the pair grid's cells of class ``b`` in column
``a``, and column ``a``'s class-``a`` cells coarsened to that grid). With NumPy that is a sort, a
dedup, two searches and two scatters of about 3,000 cells each, whose fixed costs dominate: 90
tables (K = 10) took 28 ms. One merge pass writes the table's fields directly.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .binary import MAX, MIN, N_FIELDS, SUM, W
from .cache import ENABLED as CACHE

__all__ = ["pair_rows"]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _merge(nk, nv, pk, pv, keys, rows):  # type: ignore[no-untyped-def]
    """Fill ``keys`` (descending) and ``rows`` (8, k) from the two ascending runs; returns k."""
    i = nk.shape[0] - 1
    j = pk.shape[0] - 1
    out = 0
    while i >= 0 or j >= 0:
        key = max(nk[i] if i >= 0 else -1, pk[j] if j >= 0 else -1)
        keys[out] = key
        for c in range(2):
            rows[c * N_FIELDS + W, out] = 0.0
            rows[c * N_FIELDS + MIN, out] = np.inf
            rows[c * N_FIELDS + MAX, out] = -np.inf
            rows[c * N_FIELDS + SUM, out] = 0.0
        if i >= 0 and nk[i] == key:
            for f in range(N_FIELDS):
                rows[f, out] = nv[i, f]
            i -= 1
        if j >= 0 and pk[j] == key:
            for f in range(N_FIELDS):
                rows[N_FIELDS + f, out] = pv[j, f]
            j -= 1
        out += 1
    return out


def pair_rows(nk: np.ndarray, nv: np.ndarray, pk: np.ndarray, pv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Join negative cells ``(nk, nv (m, 4))`` and positive cells ``(pk, pv (p, 4))`` (keys ascending,
    unique within each) into ``(keys, rows)``: the union of the keys in descending order and the
    fields ``rows[c * 4 + f]`` (class ``c`` = 0 negative, 1 positive), an absent class's cell
    empty (``[0, +inf, -inf, 0]``)."""
    n = nk.shape[0] + pk.shape[0]
    keys = np.empty(n, dtype=np.int64)
    rows = np.empty((2 * N_FIELDS, n))
    k = _merge(np.ascontiguousarray(nk, dtype=np.int64), np.ascontiguousarray(nv, dtype=np.float64),
               np.ascontiguousarray(pk, dtype=np.int64), np.ascontiguousarray(pv, dtype=np.float64), keys, rows)
    return keys[:k], rows[:, :k]
