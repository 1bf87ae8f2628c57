# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's, and intrinsics are called with typing contexts)
"""The compiled grouped update: rows of many groups binned into one open-addressing cell table.

A :class:`~streameval.sketch.sketchset.SketchSet` keeps a cell per occupied
``(group, bin, class)``, class 2 being rows whose label is null. A dense state per group is out of
the question (30,000 groups x 333,825 bins), and sorting every chunk's rows by cell costs more
than reading them. The kernel here inserts each row into a hash table keyed by its cell code
``(group * n_bins + bin) * 3 + class``, so a chunk costs one pass over its rows, whatever the
number of groups, and the table grows with the occupied cells only.

Table layout: a float64 array of shape ``(capacity, 5)``, capacity a power of two, one 40-byte
slot per cell ``[code, weight, min, max, score_sum]``; the code is stored as a float64, exact
because callers keep codes below ``2**53`` (:data:`MAX_CODE`); an empty slot has code ``-1``.
Linear probing from a Fibonacci hash; the table doubles when it is three quarters full.

In the same pass the kernel adds each group's row counters (rows, NaN scores, zero weights,
labelled scores outside [0, 1], unlabelled rows) and probability sums (weight in [0, 1], Brier
and log-loss sums) into one 64-byte line per group; the per-row terms are computed per block in
a loop LLVM vectorizes (the branch-free ``log_pos``), the scatter adds them.

:func:`drain` turns a table into cells sorted by code (a counting sort by group, then a small sort
inside each group), and :func:`merge_sorted` combines two sorted cell tables in one linear pass.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .binary import BLOCK, LOG_LOSS_EPS, _block_keys
from .cache import ENABLED as CACHE
from .intrinsics import log_pos, prefetch

__all__ = ["new_table", "reserve", "grouped_update", "drain", "merge_sorted", "segment_cumsum", "segment_sum", "sort_reduce",
           "first_rows", "add_scaled", "MAX_CODE", "SLOT"]

SLOT = 5
"""Float64 fields per slot: code, weight, min, max, score_sum."""
MAX_CODE = 1 << 53
"""Cell codes must stay below this (exact as float64)."""
_EMPTY = -1.0
PREFETCH_DISTANCE = 32  # rows ahead whose cell and counters are prefetched (16: 20% slower, 64: no better)
_FIB = 0x9E3779B97F4A7C15
_MIN_CAPACITY = 1 << 10


def new_table(capacity: int = _MIN_CAPACITY) -> np.ndarray:
    """An empty cell table with room for ``capacity`` slots (rounded up to a power of two)."""
    cap = _MIN_CAPACITY
    while cap < capacity:
        cap *= 2
    table = np.zeros((cap, SLOT), dtype=np.float64)
    table[:, 0] = _EMPTY
    return table


@nb.njit(inline="always", nogil=True)
def _slot(code, shift):  # type: ignore[no-untyped-def]
    return np.int64((np.uint64(code) * np.uint64(_FIB)) >> np.uint64(shift))


@nb.njit(inline="always", nogil=True)
def _shift(cap):  # type: ignore[no-untyped-def]
    bits = 0
    while (1 << bits) < cap:
        bits += 1
    return 64 - bits


@nb.njit(inline="always", nogil=True, error_model="numpy")
def _add(flat, mask, shift, code, w, s):  # type: ignore[no-untyped-def]
    """Add one row to the cell ``code`` of the flattened table; returns 1 if it created the cell."""
    key = np.float64(code)
    i = _slot(code, shift)
    while True:
        at = i * 5
        k = flat[at]
        if k == key:
            flat[at + 1] += w
            if s < flat[at + 2]:
                flat[at + 2] = s
            if s > flat[at + 3]:
                flat[at + 3] = s
            flat[at + 4] += w * s
            return 0
        if k == _EMPTY:
            flat[at] = key
            flat[at + 1] = w
            flat[at + 2] = s
            flat[at + 3] = s
            flat[at + 4] = w * s
            return 1
        i = (i + 1) & mask


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def _rehash(table, out):  # type: ignore[no-untyped-def]
    """Insert the cells of ``table`` into the empty, larger table ``out``."""
    cap = out.shape[0]
    shift = _shift(cap)
    mask = cap - 1
    for j in range(table.shape[0]):
        key = table[j, 0]
        if key == _EMPTY:
            continue
        i = _slot(np.int64(key), shift)
        while out[i, 0] != _EMPTY:
            i = (i + 1) & mask
        for f in range(5):
            out[i, f] = table[j, f]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def _grow(table):  # type: ignore[no-untyped-def]
    """The same cells in a table twice as large (fallback; :func:`reserve` grows ahead)."""
    out = np.empty((table.shape[0] * 2, 5), dtype=np.float64)
    for i in range(out.shape[0]):
        out[i, 0] = _EMPTY
    _rehash(table, out)
    return out


def reserve(table: np.ndarray, used: int, extra: int) -> np.ndarray:
    """``table``, or a larger copy, with room for ``extra`` more cells at most 3/4 full.

    Growing here rather than inside the kernel matters: NumPy asks the kernel for transparent
    huge pages on large arrays, Numba's allocator does not, and on virtual machines a 4 KB page
    fault costs ~15 us, so a table grown inside the kernel cost ~4 ms per MB in page faults.
    """
    need = used + extra
    cap = table.shape[0]
    if need <= cap - cap // 4:
        return table
    while need > cap - cap // 4:
        cap *= 2
    out = np.empty((cap, SLOT), dtype=np.float64)
    out[:, 0] = _EMPTY
    _rehash(table, out)
    return out


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy", fastmath={"reassoc"})
def _row_terms(sc, cl, wt, weighted, out):  # type: ignore[no-untyped-def]
    """Per-row counter terms of one block, vectorized: ``out[f, j]`` for the fields of
    :func:`grouped_update`'s ``counters`` (rows and unlabelled are added by the caller)."""
    for j in range(sc.shape[0]):
        s = np.float64(sc[j])
        c = cl[j]
        w = wt[j] if weighted else 1.0
        nan = s != s
        labelled = (c != 2) & ~nan & (w > 0.0)
        inside = (s >= 0.0) & (s <= 1.0)
        p = s if c == 1 else 1.0 - s
        d = 1.0 - p if inside else 0.0
        p = p if p > LOG_LOSS_EPS else LOG_LOSS_EPS
        p = p if p < 1.0 - LOG_LOSS_EPS else 1.0 - LOG_LOSS_EPS
        wi = w if labelled & inside else 0.0
        out[0, j] = 1.0 if nan else 0.0
        out[1, j] = 1.0 if weighted & (w == 0.0) else 0.0
        out[2, j] = 1.0 if labelled & ~inside else 0.0
        out[3, j] = wi
        out[4, j] = wi * d * d
        out[5, j] = -wi * log_pos(p)



@nb.njit(inline="always", nogil=True)
def count_row(ctr, gb, cl, terms, j, m):  # type: ignore[no-untyped-def]
    """Row ``j``'s group counters (``ctr`` flat, 8 per group: rows, the five probability terms and
    the unlabelled count), prefetching the group ``PREFETCH_DISTANCE`` rows ahead."""
    prefetch(ctr, gb[min(j + PREFETCH_DISTANCE, m - 1)] * 8)
    g = gb[j] * 8
    ctr[g] += 1.0
    ctr[g + 1] += terms[0, j]
    ctr[g + 2] += terms[1, j]
    ctr[g + 3] += terms[2, j]
    ctr[g + 4] += 1.0 if cl[j] == 2 else 0.0
    ctr[g + 5] += terms[3, j]
    ctr[g + 6] += terms[4, j]
    ctr[g + 7] += terms[5, j]

@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def grouped_update(table, used, kind, f0, f1, f2, i0, i1, i2, cuts, n_bins, gid, scores, cls, weights,  # type: ignore[no-untyped-def]
                   weighted, counters):
    """Bin one chunk of grouped rows into ``table``; add their counters to ``counters``.

    Parameters
    ----------
    table : float64 array of shape (capacity, 5)
        The cell table (see the module docstring); may be replaced by a larger one.
    used : int
        Occupied slots of ``table``.
    kind, f0, f1, f2, i0, i1, i2, cuts
        The grid's kernel parameters (``Grid.kernel_params()``).
    n_bins : int
        The grid's number of bins.
    gid : int64 array of shape (n,)
        Group index of each row (``< counters.shape[0]``).
    scores : float64 array of shape (n,)
    cls : int64 array of shape (n,)
        0 negative, 1 positive, 2 label not arrived.
    weights : float64 array of shape (n,)
        Ignored unless ``weighted``.
    weighted : bool
    counters : float64 array of shape (groups, 8)
        Per group (one cache line): rows, NaN scores, zero weights (weighted only), labelled
        rows with a score outside [0, 1], unlabelled rows; then, over labelled rows with
        positive weight and a score in [0, 1], their weight, Brier sum and log-loss sum
        (probabilities clipped to machine epsilon). Counts are exact below ``2**53``.

    Returns
    -------
    (table, used)
        The table (the same one unless it grew) and its occupied slots.
    """
    n = scores.shape[0]
    keys = np.empty(BLOCK + PREFETCH_DISTANCE, dtype=np.int64)
    terms = np.empty((6, BLOCK), dtype=np.float64)
    cap = table.shape[0]
    shift = _shift(cap)
    mask = cap - 1
    limit = cap - cap // 4
    flat = table.reshape(-1)
    ctr = counters.reshape(-1)
    for start in range(0, n, BLOCK):
        end = min(start + BLOCK, n)
        m = end - start
        sc = scores[start:end]
        cl = cls[start:end]
        gb = gid[start:end]
        _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, sc, keys)
        _row_terms(sc, cl, weights[start:end] if weighted else weights, weighted, terms)
        for j in range(m):  # cell codes
            keys[j] = (gb[j] * n_bins + keys[j]) * 3 + cl[j]
        for j in range(m, m + PREFETCH_DISTANCE):
            keys[j] = keys[m - 1]
        if used + m > limit:  # room for every row of the block before it starts
            while used + m > limit:
                table = _grow(table)
                cap = table.shape[0]
                limit = cap - cap // 4
            shift = _shift(cap)
            mask = cap - 1
            flat = table.reshape(-1)
        for j in range(m):
            prefetch(flat, _slot(keys[j + PREFETCH_DISTANCE], shift) * 5)
            count_row(ctr, gb, cl, terms, j, m)
            s = np.float64(sc[j])
            w = weights[start + j] if weighted else 1.0
            if s == s and w != 0.0:
                used += _add(flat, mask, shift, keys[j], w, s)
    return table, used


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def _drain(table, span, counts, codes, cells):  # type: ignore[no-untyped-def]
    n_groups = counts.shape[0] - 1
    for i in range(table.shape[0]):
        key = table[i, 0]
        if key != _EMPTY:
            counts[np.int64(key) // span + 1] += 1
    for g in range(n_groups):
        counts[g + 1] += counts[g]
    pos = counts[:n_groups].copy()
    for i in range(table.shape[0]):  # one sequential read of the table, each cell to its group
        key = table[i, 0]
        if key != _EMPTY:
            code = np.int64(key)
            g = code // span
            j = pos[g]
            codes[j] = code
            for f in range(4):
                cells[j, f] = table[i, f + 1]
            pos[g] = j + 1
    for g in range(n_groups):
        a, b = counts[g], counts[g + 1]
        if b - a > 1:
            order = np.argsort(codes[a:b])
            codes[a:b] = codes[a:b][order]
            cells[a:b] = cells[a:b][order]


def drain(table: np.ndarray, used: int, span: int, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The cells of ``table`` sorted by code: ``(codes int64 (k,), cells float64 (k, 4))``.

    ``span`` is ``3 * n_bins`` (codes of one group lie in ``[g * span, (g + 1) * span)``) and
    every group index is below ``n_groups``. A counting sort by group puts each group's cells
    together; each group's few cells are then sorted by code. Outputs are allocated by NumPy
    (huge pages, see :func:`reserve`).
    """
    codes = np.empty(used, dtype=np.int64)
    cells = np.empty((used, 4), dtype=np.float64)
    _drain(table, span, np.zeros(n_groups + 1, dtype=np.int64), codes, cells)
    return codes, cells


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def _merge_sorted(code_a, cell_a, code_b, cell_b, codes, cells):  # type: ignore[no-untyped-def]
    na, nb_ = code_a.shape[0], code_b.shape[0]
    i = j = k = 0
    while i < na or j < nb_:
        if j >= nb_ or (i < na and code_a[i] < code_b[j]):
            codes[k] = code_a[i]
            for f in range(4):
                cells[k, f] = cell_a[i, f]
            i += 1
        elif i >= na or code_b[j] < code_a[i]:
            codes[k] = code_b[j]
            for f in range(4):
                cells[k, f] = cell_b[j, f]
            j += 1
        else:
            codes[k] = code_a[i]
            cells[k, 0] = cell_a[i, 0] + cell_b[j, 0]
            cells[k, 1] = min(cell_a[i, 1], cell_b[j, 1])
            cells[k, 2] = max(cell_a[i, 2], cell_b[j, 2])
            cells[k, 3] = cell_a[i, 3] + cell_b[j, 3]
            i += 1
            j += 1
        k += 1
    return k


def merge_sorted(code_a: np.ndarray, cell_a: np.ndarray, code_b: np.ndarray,
                 cell_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of two cell tables, each sorted by code with unique codes; equal codes combine
    (weights and sums add, min/max combine). Returns ``(codes, cells)`` sorted by code."""
    if code_a.shape[0] == 0:
        return code_b, cell_b
    if code_b.shape[0] == 0:
        return code_a, cell_a
    codes = np.empty(code_a.shape[0] + code_b.shape[0], dtype=np.int64)
    cells = np.empty((codes.shape[0], 4), dtype=np.float64)
    k = _merge_sorted(code_a, np.ascontiguousarray(cell_a), code_b, np.ascontiguousarray(cell_b), codes, cells)
    return codes[:k], cells[:k]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def segment_cumsum(x, starts):  # type: ignore[no-untyped-def]
    """Running sums restarted at each segment ``[starts[g], starts[g + 1])``, added left to right
    as ``np.cumsum`` does (so each segment's sums equal ``np.cumsum`` of it, bit for bit)."""
    out = np.empty_like(x)
    for g in range(starts.shape[0] - 1):
        acc = 0.0
        for i in range(starts[g], starts[g + 1]):
            acc += x[i]
            out[i] = acc
    return out


@nb.njit(nogil=True, inline="always")
def _pairwise(x, a, n):  # type: ignore[no-untyped-def]
    """NumPy's pairwise summation of ``x[a:a + n]`` (``pairwise_sum`` in its float loops)."""
    if n < 8:
        res = 0.0
        for i in range(a, a + n):
            res += x[i]
        return res
    if n <= 128:
        r = np.empty(8)
        for j in range(8):
            r[j] = x[a + j]
        i = 8
        while i < n - (n % 8):
            for j in range(8):
                r[j] += x[a + i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += x[a + i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_rec(x, a, n2) + _pairwise_rec(x, a + n2, n - n2)


@nb.njit(nogil=True)
def _pairwise_rec(x, a, n):  # type: ignore[no-untyped-def]
    return _pairwise(x, a, n)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def segment_sum(x, starts):  # type: ignore[no-untyped-def]
    """``np.sum`` of each segment ``x[starts[g]:starts[g + 1]]`` with NumPy's own order of
    additions (its pairwise summation), so each result equals ``np.sum`` of that segment bit for
    bit; 0 for an empty segment."""
    out = np.zeros(starts.shape[0] - 1)
    for g in range(starts.shape[0] - 1):
        out[g] = _pairwise_rec(x, starts[g], starts[g + 1] - starts[g])
    return out


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def _sort_reduce(gid, local, cells, span, counts, order, codes, out):  # type: ignore[no-untyped-def]
    n_groups = counts.shape[0] - 1
    for i in range(gid.shape[0]):
        counts[gid[i] + 1] += 1
    for g in range(n_groups):
        counts[g + 1] += counts[g]
    pos = counts[:n_groups].copy()
    for i in range(gid.shape[0]):
        g = gid[i]
        order[pos[g]] = i
        pos[g] += 1
    k = 0
    for g in range(n_groups):
        a, b = counts[g], counts[g + 1]
        if b == a:
            continue
        seg = order[a:b]
        if b - a > 1:
            keys = np.empty(b - a, dtype=np.int64)
            for j in range(b - a):
                keys[j] = local[seg[j]]
            seg = seg[np.argsort(keys, kind="mergesort")]
        last = -1
        for j in range(b - a):
            i = seg[j]
            code = g * span + local[i]
            if code == last:
                out[k - 1, 0] += cells[i, 0]
                out[k - 1, 1] = min(out[k - 1, 1], cells[i, 1])
                out[k - 1, 2] = max(out[k - 1, 2], cells[i, 2])
                out[k - 1, 3] += cells[i, 3]
            else:
                codes[k] = code
                for f in range(4):
                    out[k, f] = cells[i, f]
                k += 1
                last = code
    return k


def sort_reduce(gid: np.ndarray, local: np.ndarray, cells: np.ndarray, n_groups: int,
                span: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells of many sources merged by group: ``(codes, cells)`` sorted by ``gid * span + local``.

    Parameters
    ----------
    gid : int64 array of shape (m,)
        Each cell's group (``< n_groups``).
    local : int64 array of shape (m,)
        Each cell's code inside its group (``bin * 3 + class``, below ``span``).
    cells : float64 array of shape (m, 4)
        ``[weight, min, max, score_sum]``.

    Cells with equal codes combine (weights and sums add in input order, min/max combine). A
    counting sort by group, then a stable sort inside each group: O(m log(cells per group)).
    """
    m = gid.shape[0]
    codes = np.empty(m, dtype=np.int64)
    out = np.empty((m, 4), dtype=np.float64)
    k = _sort_reduce(np.ascontiguousarray(gid, dtype=np.int64), np.ascontiguousarray(local, dtype=np.int64),
                     np.ascontiguousarray(cells, dtype=np.float64), span, np.zeros(n_groups + 1, dtype=np.int64),
                     np.empty(m, dtype=np.int64), codes, out)
    return codes[:k], out[:k]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def first_rows(codes, size):  # type: ignore[no-untyped-def]
    """The first row holding each code in ``[0, size)``, -1 for codes absent: one pass over
    ``codes`` (int64, shape (n,)), for the key encoding of :mod:`streameval.sketch.groupkeys`."""
    out = np.full(size, -1, dtype=np.int64)
    for j in range(codes.shape[0]):
        c = codes[j]
        if out[c] < 0:
            out[c] = j
    return out


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def add_scaled(codes, ids, radix):  # type: ignore[no-untyped-def]
    """In place: ``codes += ids * radix`` (mixed-radix key codes without temporaries)."""
    for j in range(codes.shape[0]):
        codes[j] += ids[j] * radix


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def min_max(values):  # type: ignore[no-untyped-def]
    """``(min, max)`` of a non-empty integer array as int64, in one pass (NumPy's ``min`` and
    ``max`` are two)."""
    lo = values[0]
    hi = lo
    for j in range(1, values.shape[0]):  # min and max without branches: vectorized
        lo = min(lo, values[j])
        hi = max(hi, values[j])
    return np.int64(lo), np.int64(hi)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def first_rows_from(values, lo, size):  # type: ignore[no-untyped-def]
    """:func:`first_rows` of ``values - lo`` (integers of any width, all in ``[lo, lo + size)``)
    without the shifted copy."""
    out = np.full(size, -1, dtype=np.int64)
    for j in range(values.shape[0]):
        c = np.int64(values[j]) - lo
        if out[c] < 0:
            out[c] = j
    return out


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def add_lookup(codes, lut, values, lo, radix, first):  # type: ignore[no-untyped-def]
    """In place: ``codes[j] = lut[values[j] - lo] * radix``, plus ``codes[j]`` unless ``first``:
    one key column's value ids added to the mixed-radix codes without materializing them."""
    if first:
        for j in range(codes.shape[0]):
            codes[j] = lut[np.int64(values[j]) - lo] * radix
    else:
        for j in range(codes.shape[0]):
            codes[j] += lut[np.int64(values[j]) - lo] * radix
