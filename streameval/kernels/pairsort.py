# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's)
"""Buffered rows sorted in place into compact cells: 16 bytes per row at the peak, and per cell after.

At 1,000 slices x 30 days almost every row is a ``(group, bin, class)`` cell of its own (100M rows:
94M cells), so a sketch set's state is as large as its input. :mod:`~streameval.kernels.grouped_sort`
buffers rows as 16-byte ``(key, score)`` pairs; sorting only the keys and gathering each row's score
into a new 40-byte cell needs the keys, the scores and the cells at once (48 bytes per row: 4.8 GB
at 100M rows). Here, for unweighted rows:

1. :func:`sort_pairs` sorts the keys (``code << b | row``: distinct, ordered by code then arrival)
   *with* their scores, in place: an MSD radix sort (American flag sort, 8-bit digits, insertion
   sort below :data:`SMALL` keys), the first digit's buckets then shared by two threads. Below
   ``grouped_sort.GATHER_ROWS`` rows, where a second score array is cheap, NumPy sorts the keys
   alone (~3x faster) and :func:`gather` copies the scores into their order instead;
2. :func:`reduce_pairs` reads the sorted pairs once, front to back, and writes in place over them
   every one-row cell as its code and score (16 bytes: weight 1, min = max = sum = the score),
   and every cell of two or more rows (a few percent of cells at that density) as a full cell
   into a separate table. A cell's rows are added in arrival order, as the hash table and
   :func:`~streameval.kernels.grouped_sort.reduce_run` add them, so the cells are the same bits.

:func:`expand` turns the two tables back into one full table (for readers of all cells at once);
:func:`group_slice` does it for one group's range of codes.
"""

from __future__ import annotations

import threading

import numba as nb
import numpy as np

from .cache import ENABLED as CACHE
from .intrinsics import prefetch

__all__ = ["sort_pairs", "gather", "reduce_pairs", "expand", "group_slice", "store_columns", "SMALL"]

SMALL = 32
"""Ranges of at most this many keys are finished by an insertion sort."""
_DIGIT = 8
_AHEAD = 64  # keys ahead whose score gather prefetches
_RADIX = 1 << _DIGIT


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _insertion(keys, vals, lo, hi):  # type: ignore[no-untyped-def]
    for i in range(lo + 1, hi):
        k = keys[i]
        v = vals[i]
        j = i - 1
        while j >= lo and keys[j] > k:
            keys[j + 1] = keys[j]
            vals[j + 1] = vals[j]
            j -= 1
        keys[j + 1] = k
        vals[j + 1] = v


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _partition(keys, vals, lo, hi, shift, bounds, scratch):  # type: ignore[no-untyped-def]
    """Permute ``[lo, hi)`` in place into buckets by the digit ``(key >> shift) & 255``;
    ``bounds[d]`` receives bucket ``d``'s start, ``bounds[256] = hi``; ``scratch`` is int64 of
    shape (3, 256)."""
    counts = scratch[0]
    heads = scratch[1]
    tails = scratch[2]
    counts[:] = 0
    for i in range(lo, hi):
        counts[(keys[i] >> shift) & (_RADIX - 1)] += 1
    s = lo
    for d in range(_RADIX):
        heads[d] = s
        bounds[d] = s
        s += counts[d]
        tails[d] = s
    bounds[_RADIX] = hi
    for d in range(_RADIX):
        if tails[d] - bounds[d] == hi - lo:  # one digit for all: nothing moves
            return
        while heads[d] < tails[d]:
            k = keys[heads[d]]
            v = vals[heads[d]]
            dd = (k >> shift) & (_RADIX - 1)
            while dd != d:  # carry the element to its bucket, picking up the one it displaces
                at = heads[dd]
                k2 = keys[at]
                v2 = vals[at]
                keys[at] = k
                vals[at] = v
                heads[dd] = at + 1
                k = k2
                v = v2
                dd = (k >> shift) & (_RADIX - 1)
            keys[heads[d]] = k
            vals[heads[d]] = v
            heads[d] += 1


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _sort_ranges(keys, vals, los, his, shift):  # type: ignore[no-untyped-def]
    """Sort each range ``[los[i], his[i])`` whose keys agree above bit ``shift + 8``."""
    cap = 64 * _RADIX
    st_lo = np.empty(cap, dtype=np.int64)
    st_hi = np.empty(cap, dtype=np.int64)
    st_sh = np.empty(cap, dtype=np.int64)
    bounds = np.empty(_RADIX + 1, dtype=np.int64)
    scratch = np.empty((3, _RADIX), dtype=np.int64)
    top = 0
    for r in range(los.shape[0]):
        st_lo[top] = los[r]
        st_hi[top] = his[r]
        st_sh[top] = shift
        top += 1
        while top:
            top -= 1
            lo = st_lo[top]
            hi = st_hi[top]
            sh = st_sh[top]
            if hi - lo <= SMALL:
                _insertion(keys, vals, lo, hi)
                continue
            _partition(keys, vals, lo, hi, sh, bounds, scratch)
            if sh == 0:  # keys are distinct: every bucket holds one key
                continue
            nxt = max(sh - _DIGIT, 0)  # bits a bucket already shares may be read again: harmless
            for d in range(_RADIX):
                if bounds[d + 1] - bounds[d] > 1:
                    st_lo[top] = bounds[d]
                    st_hi[top] = bounds[d + 1]
                    st_sh[top] = nxt
                    top += 1


def sort_pairs(keys: np.ndarray, vals: np.ndarray, threads: int = 2) -> None:
    """Sort distinct non-negative int64 ``keys`` ascending, in place, moving ``vals`` with them.

    Parameters
    ----------
    keys : int64 array of shape (n,)
        Distinct, non-negative (e.g. ``code << b | row``).
    vals : float64 array of shape (n,)
        Moved with their keys.
    threads : int, default 2
        The first digit's buckets are sorted on this many threads (the compiled code releases
        the GIL); the first pass is serial.
    """
    n = keys.shape[0]
    if n < 2:
        return
    top = max(int(keys.max()).bit_length() - _DIGIT, 0)
    if n <= SMALL:
        _sort_ranges(keys, vals, np.array([0]), np.array([n]), top)
        return
    bounds = np.empty(_RADIX + 1, dtype=np.int64)
    _partition(keys, vals, 0, n, top, bounds, np.empty((3, _RADIX), dtype=np.int64))
    if top == 0:
        return
    nxt = max(top - _DIGIT, 0)
    los, his = bounds[:-1], bounds[1:]
    if threads <= 1:
        _sort_ranges(keys, vals, los, his, nxt)
        return
    # buckets to threads by size: each thread's share of keys about 1 / threads
    cut = np.searchsorted(his, n * np.arange(1, threads) // threads)
    edges = [0, *(int(c) + 1 for c in cut), _RADIX]
    workers = [threading.Thread(target=_sort_ranges, args=(keys, vals, los[a:b], his[a:b], nxt), daemon=True)
               for a, b in zip(edges[1:-1], edges[2:], strict=True)]
    for t in workers:
        t.start()
    _sort_ranges(keys, vals, los[: edges[1]], his[: edges[1]], nxt)
    for t in workers:
        t.join()


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def reduce_pairs(keys, scores, row_bits, codes, cells):  # type: ignore[no-untyped-def]
    """Cells of unweighted rows from :func:`sort_pairs`'s sorted ``(key, score)`` pairs.

    One-row cells are written in place: the m-th over ``keys[m]`` (its code) and ``scores[m]``
    (its score); cells of two or more rows go to ``codes`` (int64, shape (>= n // 2,)) and
    ``cells`` (float64, shape (>= n // 2, 4): weight, min, max, score sum). NaN scores make no
    cell. Returns ``(m, k)``: the numbers of one-row and of full cells, each sorted by code.
    """
    n = keys.shape[0]
    m = 0
    k = 0
    i = 0
    while i < n:
        code = keys[i] >> row_bits
        j = i + 1
        while j < n and (keys[j] >> row_bits) == code:
            j += 1
        w = 0.0
        lo = 0.0
        hi = 0.0
        total = 0.0
        for r in range(i, j):
            s = scores[r]
            if s != s:
                continue
            if w == 0.0:
                lo = s
                hi = s
                total = 1.0 * s
            else:
                if s < lo:
                    lo = s
                if s > hi:
                    hi = s
                total += 1.0 * s
            w += 1.0
        if w == 1.0:
            keys[m] = code
            scores[m] = lo
            m += 1
        elif w > 1.0:
            codes[k] = code
            cells[k, 0] = w
            cells[k, 1] = lo
            cells[k, 2] = hi
            cells[k, 3] = total
            k += 1
        i = j
    return m, k


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def gather(keys, row_bits, scores, out):  # type: ignore[no-untyped-def]
    """``out[i] = scores[keys[i] & (2**row_bits - 1)]``: the scores in the order of packed keys
    sorted alone (reads prefetched ahead)."""
    mask = (np.int64(1) << row_bits) - 1
    n = keys.shape[0]
    for i in range(n):
        prefetch(scores, keys[min(i + _AHEAD, n - 1)] & mask)
        out[i] = scores[keys[i] & mask]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _expand(one_code, one_score, code, cell, out_code, out_cell):  # type: ignore[no-untyped-def]
    a = 0
    b = 0
    na = one_code.shape[0]
    nb_ = code.shape[0]
    for k in range(na + nb_):
        if b >= nb_ or (a < na and one_code[a] < code[b]):
            s = one_score[a]
            out_code[k] = one_code[a]
            out_cell[k, 0] = 1.0
            out_cell[k, 1] = s
            out_cell[k, 2] = s
            out_cell[k, 3] = s
            a += 1
        else:
            out_code[k] = code[b]
            for f in range(4):
                out_cell[k, f] = cell[b, f]
            b += 1


def expand(one_code: np.ndarray, one_score: np.ndarray, code: np.ndarray,
           cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One full cell table (int64 codes (k,), float64 cells (k, 4)) from one-row cells
    ``(one_code, one_score)`` and full cells ``(code, cell)``, both sorted, codes disjoint."""
    total = one_code.shape[0] + code.shape[0]
    out_code = np.empty(total, dtype=np.int64)
    out_cell = np.empty((total, 4), dtype=np.float64)
    _expand(one_code, one_score, code, cell, out_code, out_cell)
    return out_code, out_cell


def group_slice(one_code: np.ndarray, one_score: np.ndarray, code: np.ndarray, cell: np.ndarray,
                lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The full cells whose codes lie in ``[lo, hi)`` (one group's), from both tables."""
    a, b = np.searchsorted(one_code, [lo, hi])
    c, d = np.searchsorted(code, [lo, hi])
    return expand(one_code[a:b], one_score[a:b], code[c:d], cell[c:d])


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _single(w, lo, hi, sm):  # type: ignore[no-untyped-def]
    """Whether a cell is one of weight 1 whose min, max and sum are the same value (bit for bit)."""
    if w != 1.0:
        return False
    b = np.float64(lo).view(np.int64)
    return np.float64(hi).view(np.int64) == b and np.float64(sm).view(np.int64) == b


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _store_columns(one_code, one_score, code, cell, span, gid, bins, klass, w, mn, mx, sm, gid1, bins1, klass1, score1):  # type: ignore[no-untyped-def]
    a = 0
    b = 0
    na = one_code.shape[0]
    nb_ = code.shape[0]
    k = 0  # full cells written
    k1 = 0  # single cells written
    for _ in range(na + nb_):
        if b >= nb_ or (a < na and one_code[a] < code[b]):
            c = one_code[a]
            s = np.float64(one_score[a])
            single = True
            a += 1
        else:
            c = code[b]
            s = cell[b, 1]
            single = _single(cell[b, 0], cell[b, 1], cell[b, 2], cell[b, 3])
            b += 1
        g = c // span
        rest = c - g * span
        if single:
            gid1[k1] = g
            bins1[k1] = rest // 3
            klass1[k1] = rest - 3 * (rest // 3)
            score1[k1] = s
            k1 += 1
        else:
            gid[k] = g
            bins[k] = rest // 3
            klass[k] = rest - 3 * (rest // 3)
            w[k] = cell[b - 1, 0]
            mn[k] = cell[b - 1, 1]
            mx[k] = cell[b - 1, 2]
            sm[k] = cell[b - 1, 3]
            k += 1
    return k, k1


def store_columns(one_code: np.ndarray, one_score: np.ndarray, code: np.ndarray, cell: np.ndarray,
                  lo: int, hi: int, span: int) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The cells whose codes lie in ``[lo, hi)``, from both tables, as the columns a store writes:
    full cells apart from *single* ones (weight 1, min = max = sum bit for bit: one row's cell).

    Parameters
    ----------
    one_code, one_score : int64 array (m,), float32 or float64 array (m,)
        One-row cells (weight 1, min = max = sum = the score), sorted by code.
    code, cell : int64 array (k,), float64 array (k, 4)
        Full cells ``[weight, min, max, score_sum]``, sorted by code, codes disjoint from
        ``one_code``.
    lo, hi : int
        The code range.
    span : int
        Codes per group (``3 * n_bins``: a code is ``group * span + 3 * bin + class``).

    Returns
    -------
    full : tuple of arrays
        ``(group, bin, class, weight, min, max, score_sum)``: int32, int32, int8 and four float64
        arrays, of the cells in range that are not single, in code order.
    single : tuple of arrays
        ``(group, bin, class, score)``: int32, int32, int8, float64, of the single cells in range
        (every one-row cell of ``one_code`` and every full cell ``[1, s, s, s]``), in code order.
    """
    a, b = np.searchsorted(one_code, [lo, hi])
    c, d = np.searchsorted(code, [lo, hi])
    total = int(b - a + d - c)
    # sized for every cell on either side; pages never written are never allocated
    full: tuple[np.ndarray, ...] = (np.empty(total, dtype=np.int32), np.empty(total, dtype=np.int32), np.empty(total, dtype=np.int8),
                                    *(np.empty(total, dtype=np.float64) for _ in range(4)))
    single: tuple[np.ndarray, ...] = (np.empty(total, dtype=np.int32), np.empty(total, dtype=np.int32), np.empty(total, dtype=np.int8),
                                      np.empty(total, dtype=np.float64))
    counts: tuple[int, int] = _store_columns(one_code[a:b], one_score[a:b], code[c:d], cell[c:d], span, *full, *single)
    k, k1 = counts
    return tuple(x[:k] for x in full), tuple(x[:k1] for x in single)
