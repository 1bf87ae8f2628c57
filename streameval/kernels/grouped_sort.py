# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's, and intrinsics are called with typing contexts)
"""The grouped update by sorting: rows buffered as packed keys, sorted once, reduced to cells.

With many small groups (1,000 slices x 30 days, a few hundred rows per group) almost every row is
a ``(group, bin, class)`` cell of its own. The hash table of :mod:`streameval.kernels.grouped`
then grows with the rows: each row is a random access into a table of hundreds of MB, the table
is rehashed each time it doubles, and the fresh memory it touches (~70 bytes per cell over its
growth) is the dominant cost on a virtual machine. A row is smaller than a cell (16 bytes: a
packed key and the score, against a cell's 40), so here rows are kept as they come and sorted
once:

1. :func:`pack` writes each row's cell code and score into the buffer (weights are copied
   beside them; scores in 4 bytes while every one is a float32 value) and adds the group
   counters in the same pass; each chunk's pages are mapped beforehand in one call
   (:func:`populate`);
2. when the buffer is full or the set is read, :func:`to_keys` makes the codes distinct keys in
   place (``code << b | row``, ``b`` bits for the row's place), NumPy sorts them in place (its
   vectorized quicksort, ~25-35 ms per million keys here), and :func:`reduce_run` turns them
   into cells sorted by code in one pass (a *run*; each cell's rows are added in arrival order,
   as the hash table adds them). Codes too wide to pack are sorted stably instead;
3. runs (one per :data:`CAPACITY` buffered rows) are merged by a k-way merge
   (:func:`merge_runs`).

The first run of unweighted rows is *compact* instead (:mod:`~streameval.kernels.pairsort`): the
scores are sorted with the keys and one-row cells are kept as ``(code, score)``, the buffer's own
memory, so the peak is the buffer (12-16 bytes per row) rather than buffer and cells (48). The
sketch set keeps it so until all its cells are read at once.

:class:`RowBuffer` decides per set: the first chunk of at least :data:`MIN_SORT_ROWS` rows is
sorted at once to measure its cells per row; below :data:`DENSE` the set keeps using the hash
table, which stays small and cache-resident when many rows share a cell.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numba as nb
import numpy as np

from .binary import BLOCK, _block_keys
from .cache import ENABLED as CACHE
from .grouped import _row_terms, count_row, merge_sorted
from .intrinsics import prefetch
from .pairsort import expand, gather, reduce_pairs, sort_pairs

__all__ = ["RowBuffer", "pack", "to_keys", "reduce_run", "merge_runs", "DENSE", "MIN_SORT_ROWS", "CAPACITY", "COMPACT"]

DENSE = 0.25
"""Cells per row (of the first large chunk) from which a set buffers and sorts its rows."""
MIN_SORT_ROWS = 1 << 15
"""Chunks shorter than this go to the hash table while the set has not chosen (too few rows to
measure the density on)."""
CAPACITY = 1 << 27
"""Rows a buffer holds before it sorts them into a run (2 GB of address space, 3 GB weighted,
used only as rows arrive). A row costs less than a cell (16 bytes against 40), so at this
density holding rows is cheaper than holding runs, and one sort at the end needs no merge."""
COMPACT = True
"""Sort unweighted rows with their scores in place and keep one-row cells as (code, score)
(:mod:`~streameval.kernels.pairsort`): 16 bytes per row at the peak instead of 48."""
GATHER_ROWS = 1 << 25
"""Up to this many rows, a compact run sorts the keys alone (NumPy) and gathers the scores into a
new array (4-8 bytes more per row, 256 MB at most); above, keys and scores sort in place."""
PRETOUCH = True
"""Touch a sort's output on a second thread while the keys sort."""
PAGE = 4096
"""Bytes of the smallest page (:func:`touch`'s stride)."""
_POPULATE_WRITE = 23  # Linux's MADV_POPULATE_WRITE (5.14+): map pages writable without writing them
_DONTNEED = 4  # Linux's MADV_DONTNEED: drop pages of private anonymous memory (zeros if read again)


def _madvise() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_MADVISE = _madvise()


def populate(view: np.ndarray) -> None:
    """Map the pages of a contiguous array's fresh memory in one system call, contents unchanged.

    On this VM a page fault costs ~15 us per 4 KB page taken one at a time as rows are written
    (1.2 GB of buffer at 100M rows: seconds of system time); ``MADV_POPULATE_WRITE`` maps a
    range at once (80 MB in ~30 ms against ~0.2-0.8 s by faults, measured). A no-op where the
    call is missing or refused (other systems, older kernels): the pages then fault as before.
    """
    if _MADVISE is None or view.nbytes < PAGE:
        return
    start = (view.ctypes.data + PAGE - 1) // PAGE * PAGE
    end = (view.ctypes.data + view.nbytes) // PAGE * PAGE
    if end > start:
        _MADVISE(start, end - start, _POPULATE_WRITE)  # type: ignore[operator]


def release(view: np.ndarray) -> None:
    """Give the whole pages inside a contiguous array's memory back to the OS (``MADV_DONTNEED``).

    For a buffer's part that will not be read again while the buffer lives on (the tail of a
    compact run, past its one-row cells): its pages leave the resident set at once instead of
    when the whole buffer is freed. Reading them afterwards gives zeros. A no-op where the call
    is missing (other systems); the pages then stay resident until the buffer is freed.
    """
    if _MADVISE is None or view.nbytes < PAGE:
        return
    start = (view.ctypes.data + PAGE - 1) // PAGE * PAGE
    end = (view.ctypes.data + view.nbytes) // PAGE * PAGE
    if end > start:
        _MADVISE(start, end - start, _DONTNEED)  # type: ignore[operator]


_AHEAD = 64  # rows ahead whose score is prefetched by reduce_run (16: 10% slower at 100M rows)
_PACKED_BITS = 63
"""Code and row bits that fit a packed key; wider codes are sorted stably instead."""


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def pack(kind, f0, f1, f2, i0, i1, i2, cuts, n_bins, gid, scores, cls, weights,  # type: ignore[no-untyped-def]
         weighted, out, counters, out_scores):
    """Cell codes of one chunk, ``out[i] = (gid * n_bins + bin) * 3 + cls`` (0 for a NaN score); adds every row's
    group counters to ``counters`` (as :func:`grouped.grouped_update` does).

    Parameters are those of :func:`streameval.kernels.grouped.grouped_update`, plus ``out``, an
    int64 array of shape (n,), and ``out_scores`` (float64 or float32, shape (n,)), which receives
    the scores (float32 only when they are float32 values).
    """
    n = scores.shape[0]
    keys = np.empty(BLOCK, dtype=np.int64)
    terms = np.empty((6, BLOCK), dtype=np.float64)
    ctr = counters.reshape(-1)
    for start in range(0, n, BLOCK):
        end = min(start + BLOCK, n)
        m = end - start
        sc = scores[start:end]
        cl = cls[start:end]
        gb = gid[start:end]
        ob = out[start:end]
        os_ = out_scores[start:end]
        _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, sc, keys)
        _row_terms(sc, cl, weights[start:end] if weighted else weights, weighted, terms)
        for j in range(m):  # a NaN score makes no cell: code 0 keeps the codes packable
            ob[j] = (gb[j] * n_bins + keys[j]) * 3 + cl[j] if sc[j] == sc[j] else 0
        for j in range(m):
            os_[j] = sc[j]
        for j in range(m):
            count_row(ctr, gb, cl, terms, j, m)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def touch(flat, stride):  # type: ignore[no-untyped-def]
    """Write one element every ``stride`` of ``flat`` (makes the OS map its pages now)."""
    for i in range(0, flat.shape[0], stride):
        flat[i] = 0.0


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def to_keys(codes, row_bits):  # type: ignore[no-untyped-def]
    """In place: ``codes[i] = codes[i] << row_bits | i`` (distinct keys whose order is the codes'
    order, then the rows')."""
    for i in range(codes.shape[0]):
        codes[i] = (codes[i] << row_bits) | i


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def reduce_run(keys, row_bits, rows, scores, weights, weighted, codes, cells):  # type: ignore[no-untyped-def]
    """Cells of buffered rows from their sorted keys; returns how many were written.

    ``keys`` are :func:`to_keys`'s packed keys, sorted (``rows`` empty), or cell codes sorted
    stably with ``rows`` the row of each (when codes are too wide to pack). Rows with a NaN score
    or a zero weight make no cell (they are counted by :func:`pack`). ``codes`` (int64, shape
    (n,); it may be ``keys`` itself: the k-th code is written after the k-th key is read) and
    ``cells`` (float64, shape (n, 4): weight, min, max, score sum) receive the cells in code
    order; each cell's rows are added in row order.
    """
    mask = (np.int64(1) << row_bits) - 1
    packed = rows.shape[0] == 0
    n = keys.shape[0]
    k = 0
    last = -1
    for i in range(n):
        key = keys[i]
        row = key & mask if packed else rows[i]
        s = np.float64(scores[row])
        w = weights[row] if weighted else 1.0
        ahead = keys[min(i + _AHEAD, n - 1)] & mask if packed else rows[min(i + _AHEAD, n - 1)]
        prefetch(scores, ahead)
        if weighted:
            prefetch(weights, ahead)
        if s != s or w == 0.0:
            continue
        code = key >> row_bits if packed else key
        if code == last:
            c = k - 1
            cells[c, 0] += w
            if s < cells[c, 1]:
                cells[c, 1] = s
            if s > cells[c, 2]:
                cells[c, 2] = s
            cells[c, 3] += w * s
        else:
            codes[k] = code
            cells[k, 0] = w
            cells[k, 1] = s
            cells[k, 2] = s
            cells[k, 3] = w * s
            last = code
            k += 1
    return k


@nb.njit(inline="always", nogil=True)
def _before(hc, hr, a, b):  # type: ignore[no-untyped-def]
    return hc[a] < hc[b] or (hc[a] == hc[b] and hr[a] < hr[b])


@nb.njit(nogil=True, inline="always")
def _sift(hc, hr, size):  # type: ignore[no-untyped-def]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= size:
            return
        if a + 1 < size and _before(hc, hr, a + 1, a):
            a += 1
        if not _before(hc, hr, a, i):
            return
        hc[i], hc[a] = hc[a], hc[i]
        hr[i], hr[a] = hr[a], hr[i]
        i = a


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def _merge_runs(run_codes, run_cells, starts, codes, cells):  # type: ignore[no-untyped-def]
    r = starts.shape[0] - 1
    pos = starts[:r].copy()
    hc = np.empty(r, dtype=np.int64)  # a binary heap of (head code, run)
    hr = np.empty(r, dtype=np.int64)
    size = 0
    for j in range(r):
        if starts[j + 1] > starts[j]:
            hc[size] = run_codes[starts[j]]
            hr[size] = j
            size += 1
            i = size - 1
            while i > 0 and _before(hc, hr, i, (i - 1) // 2):
                p = (i - 1) // 2
                hc[i], hc[p] = hc[p], hc[i]
                hr[i], hr[p] = hr[p], hr[i]
                i = p
    k = 0
    last = -1
    while size:
        j = hr[0]
        p = pos[j]
        end = starts[j + 1]
        # copy this run's cells while they come before every other run's head (long stretches
        # when runs cover different groups), combining a code equal to the last one written
        bound = hc[1] if size > 1 else np.iinfo(np.int64).max
        if size > 2 and hc[2] < bound:
            bound = hc[2]
        while True:
            code = run_codes[p]
            if code == last:
                c = k - 1
                cells[c, 0] += run_cells[p, 0]
                cells[c, 1] = min(cells[c, 1], run_cells[p, 1])
                cells[c, 2] = max(cells[c, 2], run_cells[p, 2])
                cells[c, 3] += run_cells[p, 3]
            else:
                codes[k] = code
                for f in range(4):
                    cells[k, f] = run_cells[p, f]
                last = code
                k += 1
            p += 1
            if p >= end or run_codes[p] >= bound:
                break
        pos[j] = p
        if p < end:
            hc[0] = run_codes[p]
        else:
            size -= 1
            hc[0] = hc[size]
            hr[0] = hr[size]
        _sift(hc, hr, size)
    return k


def merge_runs(runs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Union of sorted cell runs ``(codes int64 (k,), cells float64 (k, 4))``, sorted by code.

    Equal codes combine: weights and score sums add in run order, min/max combine. One pass over
    all cells with a heap of the runs' heads; a run's cells that come before every other head are
    copied without touching the heap.
    """
    if not runs:
        return np.empty(0, dtype=np.int64), np.empty((0, 4), dtype=np.float64)
    if len(runs) == 1:
        return runs[0]
    if len(runs) == 2:
        return merge_sorted(*runs[0], *runs[1])
    total = sum(c.shape[0] for c, _ in runs)
    codes = np.empty(total, dtype=np.int64)
    cells = np.empty((total, 4), dtype=np.float64)
    starts = np.cumsum([0] + [c.shape[0] for c, _ in runs])
    run_codes = np.concatenate([c for c, _ in runs])
    run_cells = np.concatenate([v for _, v in runs])
    runs.clear()
    k = _merge_runs(run_codes, run_cells, starts, codes, cells)
    if k < total - total // 8:  # many duplicates: give the unused memory back
        return codes[:k].copy(), cells[:k].copy()
    return codes[:k], cells[:k]


class RowBuffer:
    """The rows of a sketch set waiting to be sorted into cells, and the runs already sorted.

    Parameters
    ----------
    capacity : int, default :data:`CAPACITY`
        Rows buffered before they are sorted into a run. The buffer is allocated at the first
        chunk and untouched (memory is used as rows arrive: 16 bytes per row, 12 while scores are
        float32 values, 24 weighted).

    Notes
    -----
    ``dense`` is None until the first chunk of at least :data:`MIN_SORT_ROWS` rows has been seen,
    then True (chunks go here) or False (chunks go to the hash table). A run with fewer than
    :data:`DENSE` cells per row turns it False too (many rows per cell: the hash table's state
    is then smaller than the rows). ``compact`` holds the first run when it is compact (see
    :meth:`drain`); a second run turns it into a full run.
    """

    def __init__(self, capacity: int = CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = capacity
        self.dense: bool | None = None
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []
        # the first run, when compact: ((one-row codes, their scores), (codes, cells) of the others)
        self.compact: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
        self.rows = 0
        self._codes = np.empty(0, dtype=np.int64)
        self._scores = np.empty(0, dtype=np.float64)
        self._weights: np.ndarray | None = None

    def takes(self, n: int) -> bool:
        """Whether a chunk of ``n`` rows goes here (else to the hash table)."""
        return bool(self.dense) or (self.dense is None and n >= MIN_SORT_ROWS)

    def add(self, kind: int, f0: float, f1: float, f2: float, i0: int, i1: int, i2: int, cuts: np.ndarray,
            n_bins: int, gid: np.ndarray, scores: np.ndarray, cls: np.ndarray, weights: np.ndarray,
            weighted: bool, counters: np.ndarray, *, narrow: bool = False) -> None:
        """Buffer one chunk, adding its group counters (arguments as :func:`grouped.grouped_update`'s:
        ``scores`` and ``weights`` float64, ``weights`` ignored unless ``weighted``). ``narrow``
        says every score is a float32 value: while all are, the buffer keeps them in 4 bytes."""
        n = scores.shape[0]
        done = 0
        while done < n:
            if self.rows == self.capacity:
                self.flush()
            self._allocate(weighted, narrow)
            m = min(n - done, self.capacity - self.rows)
            a, b = self.rows, self.rows + m
            part = slice(done, done + m)
            for buffer in (self._codes, self._scores) if self._weights is None else (self._codes, self._scores, self._weights):
                populate(buffer[a:b])
            pack(kind, f0, f1, f2, i0, i1, i2, cuts, n_bins, gid[part], scores[part], cls[part],
                 weights[part] if weighted else weights, weighted, self._codes[a:b], counters, self._scores[a:b])
            if self._weights is not None:
                self._weights[a:b] = weights[part] if weighted else 1.0
            self.rows = b
            done += m
            if self.dense is None:  # decide once, on this chunk's own cells per row
                codes = np.sort(self._codes[a:b])
                cells = 1 + int(np.count_nonzero(codes[1:] != codes[:-1]))
                self.dense = cells >= DENSE * m
                if not self.dense:
                    self.flush()

    def _allocate(self, weighted: bool, narrow: bool) -> None:
        """Make sure the buffers exist (a flush hands the codes buffer to its run), the scores'
        float64 unless every buffered score is a float32 value."""
        dtype = np.float32 if narrow and (self.rows == 0 or self._scores.dtype == np.float32) else np.float64
        if self._codes.shape[0] == 0:
            try:  # address space only: pages are touched as rows arrive
                self._codes = np.empty(self.capacity, dtype=np.int64)
                if self._scores.shape[0] < self.capacity or self._scores.dtype != dtype:
                    self._scores = np.empty(self.capacity, dtype=dtype)
            except MemoryError:  # strict overcommit or an address-space limit: a smaller buffer, more runs
                self.capacity = min(self.capacity, 1 << 22)
                self._codes = np.empty(self.capacity, dtype=np.int64)
                self._scores = np.empty(self.capacity, dtype=dtype)
        if self._scores.dtype != dtype:  # a chunk of wider scores: the buffered ones widen (exactly)
            wide = np.empty(self._scores.shape[0], dtype=np.float64)
            wide[: self.rows] = self._scores[: self.rows]
            self._scores = wide
        if weighted and self._weights is None:
            self._weights = np.empty(self.capacity, dtype=np.float64)
            self._weights[: self.rows] = 1.0

    def flush(self) -> None:
        """Sort the buffered rows into a run (compact when it is the first and rows are unweighted)."""
        n = self.rows
        if n == 0:
            return
        codes_in = self._codes[:n]
        row_bits = max((n - 1).bit_length(), 1)
        packable = int(codes_in.min()) >= 0 and int(codes_in.max()).bit_length() + row_bits <= _PACKED_BITS
        if self.compact is not None:  # a second run: the first one joins the full runs
            (one_code, one_score), (code, cell) = self.compact
            self.compact = None
            self.runs.append(expand(one_code, one_score, code, cell))
        elif COMPACT and packable and self._weights is None and not self.runs:
            self._flush_compact(n, row_bits)
            return
        cells = np.empty((n, 4), dtype=np.float64)
        # fresh memory is slow to touch on a VM (page faults): touch the cells on another core while
        # this one sorts (both release the GIL)
        toucher = threading.Thread(target=touch, args=(cells.reshape(-1), PAGE // 8), daemon=True) \
            if PRETOUCH and n >= MIN_SORT_ROWS and _MADVISE is None else \
            threading.Thread(target=populate, args=(cells,), daemon=True) if PRETOUCH and n >= MIN_SORT_ROWS else None
        if toucher is not None:
            toucher.start()
        if packable:
            to_keys(codes_in, row_bits)
            codes_in.sort()  # NumPy's vectorized quicksort, in place: keys are distinct
            keys, rows = codes_in, np.empty(0, dtype=np.int64)
        else:  # codes too wide to pack with the row: a stable sort of the codes
            rows = np.argsort(codes_in, kind="stable")
            keys, row_bits = codes_in[rows], 0
        if toucher is not None:
            toucher.join()
        weighted = self._weights is not None
        codes = keys  # written in place: the k-th cell's code once the k-th key or a later one is read
        k = reduce_run(keys, row_bits, rows, self._scores[:n], self._weights if weighted else self._scores, weighted,
                       codes, cells)
        self.rows = 0
        if codes.base is self._codes or codes is self._codes:  # the run keeps the buffer's codes: a new one next time
            self._codes = np.empty(0, dtype=np.int64)
        if k < DENSE * n:
            self.dense = False
        if k < n - n // 8:  # many rows per cell: give the unused memory back
            codes, cells = codes[:k].copy(), cells[:k].copy()
        self.runs.append((codes[:k], cells[:k]))

    def _flush_compact(self, n: int, row_bits: int) -> None:
        """The rows sorted with their scores in place, one-row cells kept as (code, score)."""
        keys, scores = self._codes[:n], self._scores[:n]
        to_keys(keys, row_bits)
        if n <= GATHER_ROWS:
            keys.sort()
            scores = np.empty(n, dtype=scores.dtype)
            populate(scores)
            gather(keys, row_bits, self._scores[:n], scores)
        else:
            sort_pairs(keys, scores)
        # cells of two or more rows: at most n // 2 (address space; pages are touched as written)
        codes = np.empty(n // 2 + 1, dtype=np.int64)
        cells = np.empty((n // 2 + 1, 4), dtype=np.float64)
        m, k = reduce_pairs(keys, scores, row_bits, codes, cells)
        # past the one-row cells, the pairs are spent: ~12 bytes a row of a cell of two or more rows
        # (at 100M rows in 1,000 slices x 30 days, 11M rows: 129 MB) that would stay resident as long as the set
        release(keys[m:])
        release(scores[m:])
        self.rows = 0
        self._codes, self._scores = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)  # the run keeps them
        if m + k < DENSE * n:
            self.dense = False
        # views, not copies: a copy would add to the peak, and untouched pages take no memory
        self.compact = ((keys[:m], scores[:m]), (codes[:k], cells[:k]))

    def drain(self) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """All rows as cells sorted by code; the buffer's memory is released.

        Returns
        -------
        codes, cells : int64 array (k,), float64 array (k, 4)
            Cells ``[weight, min, max, score_sum]``.
        one : tuple of int64 array (m,) and float64 array (m,), or None
            When the rows were unweighted and sorted in one run: the cells of exactly one row, as
            ``(codes, scores)`` (weight 1, min = max = sum = the score), apart from ``codes``.
            :func:`~streameval.kernels.pairsort.expand` joins them.
        """
        self.flush()
        runs, self.runs = self.runs, []
        compact, self.compact = self.compact, None
        self._codes, self._scores, self._weights = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64),
                                                    None)
        if compact is not None:
            return compact[1][0], compact[1][1], compact[0]
        codes, cells = merge_runs(runs)
        return codes, cells, None
