# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's)
"""The one-pass kernel of a multiclass sketch whose histograms are dense (K up to about 12 on the default grid).

:func:`dense_column` bins one score column of a chunk (called once per column): for each
block of rows it computes the column's fine and pair-grid bin keys (vectorized), then adds each
row once to its one-vs-rest cell (fine grid; class "row is of class ``j``") and, when the row is
of another class ``t``, to its pairwise cell ``(t, j)`` (pair grid), prefetching both; the
column's Brier and log-loss sums follow in the same block (the binary kernel's vectorized sums).
:func:`row_stats` keeps the per-row statistics (prediction, rank of the true class's score, the
row-sum check), vectorized across rows one column at a time.

Why column by column: a row-major pass (each row's K cells in turn) touches 2K scattered cells
per row and measured 4-5x slower than one column at a time, whose one-vs-rest and pairwise cells
(about 2.4 MB and 0.7 MB at K = 10 on softmax scores) stay far better cached. Measured side by
side (K = 10, 1M float32 rows, default grid, one core, minimum of 7): the one-vs-rest and
pairwise passes of the earlier kernels took 184 ns per row, this kernel 101-114 ns; the per-row
statistics 23 ns row by row, 17 ns vectorized. Branches for min/max (a new extreme is rare after
a cell's first rows) and a scratch cell for the rows of class ``j`` (instead of a branch around
their missing pairwise cell) took another 10% off (134 against 150 ms per 1M rows, loaded
machine). What remains is the scatter itself, about two thirds of the time: per row and column
one 64-byte one-vs-rest line and one 32-byte pairwise cell, in working sets (2.4 MB and 0.7 MB
per column) larger than L2; keys, offsets and the probability sums take the other third.

Tried and not taken (session 6, K = 10, 1M rows, thread CPU time, minimum of 9-11, same run, on
a machine at load 4-10): marking pages in ``_add``'s first-row branch instead of a loop per block
(2.4x slower: 394 against 168 ms, the store defeats the scatter loop's code generation); one mark
loop for both states (152 against 148 ms); prefetching 8, 24 or 32 rows ahead instead of 16 (8:
217 against 170 ms; the others within noise); row-statistics blocks of 256 to 2,048 rows (within
10%); pair grids 32x and 64x coarser than the grid instead of 16x (update 5-10% faster, one-vs-one
bounds 2x and 4x wider). Reading one contiguous column per call, as now, costs the same as
reading a column of a Fortran-order matrix (160 against 163 ms).
Session 7 (same measure, load 4-6, not taken): pair bins mapped from the bins by a compiled twin
of ``coarsening_map`` instead of binning each score twice (6 alternations of fresh processes:
medians 166 against 160 ms, no gain); both grids' keys and the offsets in one loop (160-167
against 165-181 ms: within the noise); the one-vs-rest and pairwise scatters as two loops (192-200
against 165-169 ms: slower); the page marks inside the offsets loop (no gain); one-vs-rest cells
in two planes, negatives apart from positives, halving the negatives' working set (140-160
against 143-173 ms: not resolvable at that load; it needs a quiet machine, and the compact form's
``(k, 2, 4)`` cells would be gathered from two planes).
Session 8 (same measure, load 4-6, not taken): one scatter per row and column into cells per
(column, fine bin, true class), from which both tables would follow at compaction (one-vs-rest:
pooled over the true class; pairs: coarsened), instead of two scatters: 173-177 against
179-208 ms warm, 2.06 against 1.90 thread-s for 10M rows into fresh states, 180 MB of pages
touched against 50 MB (its working set per column is K/2 times the one-vs-rest one's; with the
pair grid 16x coarser than the grid, the pairs alone cannot give the one-vs-rest bins). Keys
from float32 bit patterns (8 lanes; the same keys, checked on 1.2M scores with edge cases):
1.15-1.19 against 1.05-1.08 ns per score, no gain. An upper bound for better locality: with
every cell offset folded into L2-sized ranges (wrong cells, timing only) the kernel took 117-119
against 160 ms, so cache misses cost about a quarter; a radix partition of each column's rows by
bin range (2^11 to 2^13 bins per part, int32 offsets and float32 scores in buffers, stable, then
the scatters part by part) paid more for its buffers than it saved: 255-285 against 167 ms.

Dense states here start as *zero* memory (fresh anonymous maps: pages are only allocated where
a cell is touched, and nothing is written to initialize them): a cell whose weight is 0 is empty
whatever its min/max fields hold, and the first row into a cell sets its min and max.
:func:`occupied` and :func:`gather` turn such a state into the compact form's cells
(``[0, +inf, -inf, 0]`` for an empty class), so the results are bit for bit those of the binary
kernel's ``[0, +inf, -inf, 0]``-initialized states: rows reach each cell in row order, so even the
score sums are the same. Which pages were touched is asked of the OS where it can say
(:mod:`.multiclass_pages`: Linux's page map, one read per compaction); only elsewhere do rows mark
their pages (``marking``), two byte stores per row and column: 21 ms of 173 per 1M rows at K = 10.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba import types
from numba.extending import intrinsic
from numba.np.numpy_support import carray

from .binary import (
    BLOCK,
    MAX,
    MIN,
    N_FIELDS,
    SUM,
    W,
    _block_keys,
    _lanes_log,
    _new_lanes,
    _sums_unweighted,
    _sums_weighted,
)
from .cache import ENABLED as CACHE
from .intrinsics import prefetch

__all__ = ["dense_column", "row_stats", "column_addresses", "occupied", "gather", "zeros", "pages", "mark"]

PREFETCH = 16  # rows prefetched ahead in the scatter
PAGE_SHIFT = 9  # 512 float64 = one 4 KiB page: flat offset >> PAGE_SHIFT is the page
ROW_BLOCK = 1024  # rows per block of the per-row statistics (their K column slices stay in L1/L2)


def zeros(shape: tuple[int, ...]) -> np.ndarray:
    """A zero-filled float64 array whose pages are allocated on first touch (see module notes)."""
    from .multiclass import alloc  # anonymous memory map (with 2 MiB pages) for large arrays

    n = int(np.prod(shape)) * 8
    if n >= 1 << 20:
        return alloc(shape)  # a fresh map reads as zeros
    return np.zeros(shape)


@intrinsic
def _pointer(typingctx, address, like):  # type: ignore[no-untyped-def]
    """``address`` (an int64) as a pointer to ``like``'s dtype, for ``numba.carray``."""
    if not isinstance(like, types.Array):
        return None
    ptr = types.CPointer(like.dtype)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.inttoptr(args[0], context.get_value_type(ptr))

    return ptr(address, like), codegen


@nb.njit(inline="always")
def _add(flat, c, w, s):  # type: ignore[no-untyped-def]
    """Add one row to the cell at ``flat[c:c + 4]``; an empty cell (weight 0) takes ``s`` as min and max."""
    old = flat[c + W]
    flat[c + W] = old + w
    if old == 0.0:
        flat[c + MIN] = s
        flat[c + MAX] = s
    else:  # branches, not selects: after the first rows a new min or max is rare
        if s < flat[c + MIN]:
            flat[c + MIN] = s
        if s > flat[c + MAX]:
            flat[c + MAX] = s
    flat[c + SUM] += w * s


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def dense_column(  # type: ignore[no-untyped-def]
    column, j, K, labels, weights, weighted, ovr, ovr_on, n_bins, pair, n_pair, pairs_on, ovr_pages, pair_pages,
    marking, kind, f0, f1, f2, i0, i1, i2, cuts, pkind, pf0, pf1, pf2, pi0, pi1, pi2, pcuts, sums,
):
    """Bin score column ``j`` (of ``K``) of a chunk into dense one-vs-rest and pairwise states.

    Parameters
    ----------
    column : (n,) float32 or float64, contiguous: the scores of class ``j`` (a column of the
        score matrix, or an Arrow column's own buffer)
    labels : (n,) int64 class indices; ``weights`` (n,) float64 when ``weighted``
    ovr : flat float64 view of the ``(K * n_bins, 2, 4)`` one-vs-rest state (cell of column ``j``,
        bin ``b``, class ``c`` at ``((j * n_bins + b) * 2 + c) * 4``; ``c = 1`` for rows of class ``j``);
        unused unless ``ovr_on`` (the one-vs-rest histograms are then hash tables, filled elsewhere)
    pair : flat float64 view of the ``(K * K * n_pair + 1, 4)`` pairwise state (true class ``t``,
        column ``j``, pair bin ``b`` at ``((t * K + j) * n_pair + b) * 4``; the last cell is a
        scratch cell that takes the rows of class ``j``, which have no pairwise cell, so the
        scatter needs no branch); unused unless ``pairs_on``
    ovr_pages, pair_pages : uint8 marks, one per 4 KiB page of ``ovr`` and ``pair``, set for every
        page a row reaches (what :func:`occupied` reads) when ``marking``; without it the caller
        asks the OS which pages were written (:mod:`.multiclass_pages`) and they are not touched
    kind.. cuts / pkind.. pcuts : the grid's and the pair grid's kernel parameters
    sums : (K, 4) float64; row ``j`` receives the column's ``[n_outside_01, weight_01,
        brier_sum, log_loss_sum]`` (the binary kernel's probability sums of "class j or not")

    Rows with zero weight leave no trace in the cells.
    """
    n = column.shape[0]
    fk = np.empty(BLOCK + PREFETCH, dtype=np.int64)
    ck = np.zeros(BLOCK + PREFETCH, dtype=np.int64)
    pos = np.empty(BLOCK, dtype=np.uint8)
    line = 2 * N_FIELDS
    trash = K * K * n_pair * N_FIELDS  # rows of class j "pair" with column j here: no branch
    base = j * n_bins
    lanes = _new_lanes()
    n_out = 0
    w_in = 0.0
    brier = 0.0
    logloss = 0.0
    exponent = 0
    flushed = 0.0
    for start in range(0, n, BLOCK):
        m = min(BLOCK, n - start)
        sc = column[start:start + m]
        lb = labels[start:start + m]
        _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, sc, fk)
        if pairs_on:
            _block_keys(pkind, pf0, pf1, pf2, pi0, pi1, pi2, pcuts, sc, ck)
        for r in range(m):
            t = lb[r]
            p = t == j
            pos[r] = p
            fk[r] = (base + fk[r]) * line + np.int64(p) * N_FIELDS
            ck[r] = trash if p else ((t * K + j) * n_pair + ck[r]) * N_FIELDS
        if marking and ovr_on:
            for r in range(m):
                ovr_pages[fk[r] >> PAGE_SHIFT] = 1
        if marking and pairs_on:
            for r in range(m):
                pair_pages[ck[r] >> PAGE_SHIFT] = 1
        for r in range(m, m + PREFETCH):
            fk[r] = fk[m - 1]
            ck[r] = ck[m - 1]
        for r in range(m):
            if ovr_on:
                prefetch(ovr, fk[r + PREFETCH])
            if pairs_on:
                prefetch(pair, ck[r + PREFETCH])
            w = weights[start + r] if weighted else 1.0
            if w == 0.0:
                continue
            v = np.float64(sc[r])
            if ovr_on:
                _add(ovr, fk[r], w, v)
            if pairs_on:
                _add(pair, ck[r], w, v)
        if weighted:
            o, wi, b, ll = _sums_weighted(sc, pos[:m], weights[start:start + m])
            logloss += ll
        else:
            o, wi, b, e, f = _sums_unweighted(sc, pos[:m], lanes)
            exponent += e
            flushed += f
        n_out += o
        w_in += wi
        brier += b
    if not weighted:
        logloss = _lanes_log(lanes, exponent, flushed)
    sums[j, 0] = n_out
    sums[j, 1] = w_in
    sums[j, 2] = brier
    sums[j, 3] = logloss


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def row_stats(addresses, like, labels, weights, weighted, preds, use_pred, confusion, ranks, s_true, tol):  # type: ignore[no-untyped-def]
    """Per row: the prediction (``preds``, or the first maximum as ``np.argmax``), the rank of the
    true class's score in ``top_k_accuracy_score``'s order (descending score, ties by descending
    column), and the true class's score (into ``s_true``); weights added to ``confusion[t, pred]``
    and ``ranks[t, rank]``.

    The K score columns (contiguous, of ``like``'s dtype, as many rows as ``labels``) are given
    by the addresses of their data (:func:`column_addresses`), so that columns decoded apart need
    no copy into one matrix and one compiled kernel serves every K (a ``numba.typed.List`` of
    arrays would compile its methods again in every process: 2.7 s under load). The caller
    keeps the columns alive during the call. Vectorized across the rows of a block, one column
    at a time; the row sums add the columns in column order, as a row-by-row loop would. Returns
    the number of rows whose scores do not sum to 1 within ``tol``.
    """
    K = addresses.shape[0]
    n = labels.shape[0]
    best = np.empty(ROW_BLOCK, dtype=np.int64)
    top = np.empty(ROW_BLOCK)
    rank = np.empty(ROW_BLOCK, dtype=np.int64)
    total = np.empty(ROW_BLOCK)
    st = np.empty(ROW_BLOCK)
    unnormalized = 0
    for start in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - start)
        lb = labels[start:start + m]
        first = carray(_pointer(addresses[0], like), n)[start:start + m]
        for r in range(m):
            st[r] = np.float64(carray(_pointer(addresses[lb[r]], like), n)[start + r])  # the true class's score
            best[r] = 0
            top[r] = np.float64(first[r])
            rank[r] = 0
            total[r] = 0.0
        for j in range(K):
            col = carray(_pointer(addresses[j], like), n)[start:start + m]
            for r in range(m):
                v = np.float64(col[r])
                better = v > top[r]
                best[r] = j if better else best[r]
                top[r] = v if better else top[r]
                rank[r] += (v > st[r]) | ((v == st[r]) & (j > lb[r]))
                total[r] += v
        for r in range(m):
            t = lb[r]
            w = weights[start + r] if weighted else 1.0
            p = preds[start + r] if use_pred else best[r]
            confusion[t, p] += w
            ranks[t, rank[r]] += w
            s_true[start + r] = st[r]
            unnormalized += abs(total[r] - 1.0) > tol
    return unnormalized


def column_addresses(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(addresses, like)`` of contiguous columns of one dtype, for :func:`row_stats`: their
    data addresses (int64) and an empty array of their dtype."""
    for c in columns:
        if not c.flags.c_contiguous or c.dtype != columns[0].dtype:
            raise ValueError("row_stats needs contiguous score columns of one dtype")
    return np.array([c.ctypes.data for c in columns], dtype=np.int64), np.empty(0, dtype=columns[0].dtype)


def pages(state: np.ndarray) -> np.ndarray:
    """Zeroed page marks for a dense state (one uint8 per 4 KiB page of its flat float64 view)."""
    return np.zeros((state.size >> PAGE_SHIFT) + 1, dtype=np.uint8)


def mark(marks: np.ndarray, state: np.ndarray, rows: np.ndarray) -> None:
    """Mark the pages of ``rows`` of ``state`` (cells put there from a compact form)."""
    width = state.size // max(1, state.shape[0])
    marks[(rows * width) >> PAGE_SHIFT] = 1


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _occupied(weight, stride, marks, out):  # type: ignore[no-untyped-def]
    """Rows of a flat state (``stride`` floats per row, ``weight`` holding each class's weight
    offset: 0 or 0 and 4) with positive weight, scanning only marked pages; returns the count."""
    per_page = (1 << PAGE_SHIFT) // stride
    n_rows = weight.shape[0] // stride
    count = 0
    for page in range(marks.shape[0]):
        if marks[page] == 0:
            continue
        for row in range(page * per_page, min(n_rows, (page + 1) * per_page)):
            at = row * stride
            hit = weight[at + W] > 0.0
            if stride == 2 * N_FIELDS:
                hit |= weight[at + N_FIELDS + W] > 0.0
            if hit:
                if count < out.shape[0]:
                    out[count] = row
                count += 1
    return count


def occupied(state: np.ndarray, marks: np.ndarray) -> np.ndarray:
    """Indices (int64, ascending) of the rows of a dense state (``(m, 2, 4)`` or ``(m, 4)``) with
    positive weight in some class. Only the pages marked in ``marks`` are read: the others were
    never touched, and reading them would map them in for nothing (measured: 0.4-0.8 s for the
    213 MB one-vs-rest state of K = 10 on the default grid)."""
    flat = state.reshape(-1)
    stride = state.size // max(1, state.shape[0])
    out = np.empty(1 << 16, dtype=np.int64)
    count = _occupied(flat, stride, marks, out)
    if count > out.shape[0]:
        out = np.empty(count, dtype=np.int64)
        _occupied(flat, stride, marks, out)
    return out[:count].copy() if count < out.shape[0] // 2 else out[:count]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _gather(flat, stride, rows, out):  # type: ignore[no-untyped-def]
    for i in range(rows.shape[0]):
        src = rows[i] * stride
        dst = i * stride
        for c in range(0, stride, N_FIELDS):
            if flat[src + c + W] > 0.0:
                for f in range(N_FIELDS):
                    out[dst + c + f] = flat[src + c + f]
            else:
                out[dst + c + W] = 0.0
                out[dst + c + MIN] = np.inf
                out[dst + c + MAX] = -np.inf
                out[dst + c + SUM] = 0.0


def gather(state: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The cells of ``rows`` of a zero-initialized dense state, every empty cell (weight 0) as
    ``[0, +inf, -inf, 0]``: the compact form's values, shape ``(len(rows), *state.shape[1:])``."""
    out = np.empty((rows.shape[0], *state.shape[1:]))
    _gather(state.reshape(-1), state.size // max(1, state.shape[0]), rows, out.reshape(-1))
    return out
