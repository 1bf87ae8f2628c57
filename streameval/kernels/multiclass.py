# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's)
"""The hash tables of a multiclass sketch with many classes (their dense twin: :mod:`.multiclass_dense`).

A multiclass sketch keeps, on its grid, one binary histogram per score column ``j`` (positives:
rows of class ``j``; negatives: all other rows) and, on its *pair grid*, one histogram per (true
class ``t``, column ``j != t``). When their dense states fit a budget they are dense and filled by
:func:`streameval.kernels.multiclass_dense.dense_column`. Otherwise (many classes) each *shard* is
an open-addressing hash table: one column's one-vs-rest histogram (entries ``(2, 4)``: the binary
cell layout, keyed by bin; :func:`ovr_chunk`) or one true class's pairwise histograms (entries
``(4,)`` keyed by ``column * n_pair_bins + bin``; :func:`pair_chunk`), so memory follows occupied
cells, and a shard grows (x2, in its own memory map) and compacts on its own.

Cells have the fields of :mod:`streameval.kernels.binary` (``W, MIN, MAX, SUM``) and scores are binned
by its ``_block_keys`` (the grid's scalar formula), so a multiclass sketch's one-vs-rest bins are
bit for bit those of a :class:`~streameval.BinarySketch` fed the same column.

Measured (K = 10, 1M float32 rows, default grid, one core): the same pairs in hash tables at full
resolution took 0.45-0.6 s: about 50 ns per probe into 200 MB of tables, where a dense update
costs about 16 ns.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

import numba as nb
import numpy as np

from .binary import BLOCK, MAX, MIN, N_FIELDS, SUM, W, _block_keys
from .binary import _merge_cell as _fold  # one cell-fold rule for every sketch kind
from .cache import ENABLED as CACHE
from .intrinsics import prefetch

EMPTY = -1
MAX_LOAD = 0.7  # shards grow (x2) before their load would pass this
MIN_CAPACITY = 64
PREFETCH = 16  # probes prefetched ahead
_GOLDEN = 0x9E3779B97F4A7C15  # Fibonacci hashing: multiply, keep the top bits

__all__ = [
    "EMPTY",
    "new_table",
    "grow",
    "limit",
    "ovr_chunk",
    "pair_chunk",
    "empty_cells",
    "alloc",
    "insert_cells",
    "compact_table",
]


def limit(capacity: int) -> int:
    """Largest number of entries a table of ``capacity`` slots may hold."""
    return int(capacity * MAX_LOAD)


_HUGE = 2 << 20
_MADV_HUGEPAGE = 14
_MAPPED = 1 << 20  # arrays at least this large get pages of their own
_libc: Any = None


def _madvise_huge(arr: np.ndarray) -> None:
    global _libc
    if arr.nbytes < 2 * _HUGE or not sys.platform.startswith("linux"):
        return
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        start = arr.ctypes.data
        lo = -(-start // _HUGE) * _HUGE
        hi = (start + arr.nbytes) // _HUGE * _HUGE
        if hi > lo:
            _libc.madvise(lo, hi - lo, _MADV_HUGEPAGE)
    except (OSError, AttributeError):  # no libc or no madvise: 4 KiB pages, same results
        return


def alloc(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    """An uninitialized array for a hash table or dense state.

    Large arrays get an anonymous memory map of their own, so freeing one returns its memory to
    the OS at once (malloc keeps freed blocks of up to 32 MiB in its heap, and the tables grow by
    doubling: measured at K = 100, 1M rows, RSS stayed 600 MB above the live state without this),
    and are backed by 2 MiB pages where Linux allows it: the tables are probed at random, and with
    4 KiB pages nearly every probe of a table larger than the TLB's reach also misses the TLB
    (random updates of a 200 MB table: 20 ns each with 4 KiB pages, 12 ns with 2 MiB pages).
    """
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if n < _MAPPED:
        return np.empty(shape, dtype=dtype)
    buf = mmap.mmap(-1, n)
    arr = np.frombuffer(buf, dtype=dtype).reshape(shape)
    _madvise_huge(arr)
    return arr


def empty_cells(n: int) -> np.ndarray:
    """``n`` empty single-class cells ``[0, +inf, -inf, 0]``, shape ``(n, 4)``, C-contiguous."""
    cells = alloc((n, N_FIELDS))
    cells[...] = np.array([0.0, np.inf, -np.inf, 0.0])
    return cells


def new_table(capacity: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """An empty hash table: keys (``EMPTY``) and cells; ``width`` 2 (one-vs-rest) or 1 (pairs).

    ``capacity`` must be a power of two. Cells are ``(capacity, 2, 4)`` for ``width=2`` and
    ``(capacity, 4)`` for ``width=1``, every cell ``[0, +inf, -inf, 0]``.
    """
    keys = alloc((capacity,), np.int64)
    cells = alloc((capacity, 2, N_FIELDS) if width == 2 else (capacity, N_FIELDS))
    keys[:] = EMPTY
    cells[...] = np.array([0.0, np.inf, -np.inf, 0.0])
    return keys, cells


@nb.njit(inline="always")
def _shift(capacity):  # type: ignore[no-untyped-def]
    s = 64
    c = capacity
    while c > 1:
        c >>= 1
        s -= 1
    return np.uint64(s)


@nb.njit(inline="always")
def _hash(key, shift):  # type: ignore[no-untyped-def]
    return np.int64((np.uint64(key) * np.uint64(_GOLDEN)) >> shift)


@nb.njit(inline="always")
def _find(keys, key, h, mask):  # type: ignore[no-untyped-def]
    """Slot of ``key`` (inserted if absent) and whether it was new; the table must have room."""
    while True:
        k = keys[h]
        if k == key:
            return h, 0
        if k == EMPTY:
            keys[h] = key
            return h, 1
        h = (h + 1) & mask


@nb.njit(inline="always")
def _add(flat, c, w, s):  # type: ignore[no-untyped-def]
    """Add one row to the cell at ``flat[c:c + 4]`` (flat indexing: no array views)."""
    flat[c + W] += w
    if s < flat[c + MIN]:
        flat[c + MIN] = s
    if s > flat[c + MAX]:
        flat[c + MAX] = s
    flat[c + SUM] += w * s


@nb.njit(nogil=True, cache=CACHE)
def _reinsert(keys, cells, new_keys, new_cells):  # type: ignore[no-untyped-def]
    mask = new_keys.shape[0] - 1
    shift = _shift(new_keys.shape[0])
    for i in range(keys.shape[0]):
        k = keys[i]
        if k != EMPTY:
            slot, _ = _find(new_keys, k, _hash(k, shift), mask)
            new_cells[slot] = cells[i]


def grow(keys: np.ndarray, cells: np.ndarray, needed: int) -> tuple[np.ndarray, np.ndarray]:
    """A copy of the table with room for ``needed`` entries (capacity doubled until it fits)."""
    cap = keys.shape[0]
    while limit(cap) < needed:
        cap *= 2
    new_keys, new_cells = new_table(cap, 2 if cells.ndim == 3 else 1)
    _reinsert(keys, cells, new_keys, new_cells)
    return new_keys, new_cells


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def ovr_chunk(  # type: ignore[no-untyped-def]
    col, pos, weights, weighted, start_row, keys, cells, count, kind, f0, f1, f2, i0, i1, i2, cuts,
):
    """Bin rows ``start_row..`` of one column into its one-vs-rest hash table.

    ``col`` (n,) contiguous scores, ``pos`` (n,) uint8 (1 = the column's class). Stops before a
    block that could push the table past its load limit. Returns ``(next row, entries)``;
    ``next row < n`` means: grow the table, then call again from there.
    """
    n = col.shape[0]
    fkeys = np.empty(BLOCK, dtype=np.int64)
    slots = np.empty(BLOCK + PREFETCH, dtype=np.int64)
    flat = cells.reshape(-1)
    cap = keys.shape[0]
    mask = cap - 1
    shift = _shift(cap)
    room = np.int64(cap * MAX_LOAD)
    for start in range(start_row, n, BLOCK):
        m = min(BLOCK, n - start)
        if count + m > room:
            return start, count
        sc = col[start:start + m]
        _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, sc, fkeys)
        for r in range(m):
            slots[r] = _hash(fkeys[r], shift)
        for r in range(m, m + PREFETCH):
            slots[r] = slots[m - 1]
        for r in range(m):
            nxt = slots[r + PREFETCH]
            prefetch(keys, nxt)
            prefetch(flat, nxt * 8)
            w = weights[start + r] if weighted else 1.0
            if w == 0.0:
                continue
            slot, new = _find(keys, fkeys[r], slots[r], mask)
            count += new
            _add(flat, slot * 8 + 4 * np.int64(pos[start + r]), w, np.float64(sc[r]))
    return n, count


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def pair_chunk(  # type: ignore[no-untyped-def]
    scores, rows, t, weights, weighted, start_row, keys, cells, count, n_pair, kind, f0, f1, f2, i0, i1, i2, cuts,
):
    """Bin the rows ``rows[start_row:]`` (all of true class ``t``) into class ``t``'s pairwise
    hash table: key ``column * n_pair + bin`` for every column but ``t``, probes prefetched.

    Returns ``(next position in rows, entries)``, as :func:`ovr_chunk`.
    """
    n = rows.shape[0]
    K = scores.shape[1]
    block = max(1, BLOCK // K)
    pk = np.empty(block, dtype=np.int64)
    buf = np.empty(block, dtype=np.float64)
    codes = np.empty(block * K + PREFETCH, dtype=np.int64)
    cslots = np.empty(block * K + PREFETCH, dtype=np.int64)
    cval = np.empty(block * K, dtype=np.float64)
    cw = np.empty(block * K, dtype=np.float64)
    flat = cells.reshape(-1)
    cap = keys.shape[0]
    mask = cap - 1
    shift = _shift(cap)
    room = np.int64(cap * MAX_LOAD)
    for start in range(start_row, n, block):
        m = min(block, n - start)
        if count + m * (K - 1) > room:
            return start, count
        c = 0
        for j in range(K):
            if j == t:
                continue
            for r in range(m):
                buf[r] = scores[rows[start + r], j]
            _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, buf[:m], pk)
            for r in range(m):
                key = j * n_pair + pk[r]
                codes[c] = key
                cslots[c] = _hash(key, shift)
                cval[c] = buf[r]
                cw[c] = weights[rows[start + r]] if weighted else 1.0
                c += 1
        for i in range(c, c + PREFETCH):
            cslots[i] = cslots[c - 1]
        for i in range(c):
            nxt = cslots[i + PREFETCH]
            prefetch(keys, nxt)
            prefetch(flat, nxt * 4)
            if cw[i] == 0.0:
                continue
            slot, new = _find(keys, codes[i], cslots[i], mask)
            count += new
            _add(flat, slot * 4, cw[i], cval[i])
    return n, count


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _insert_pairs(keys, cells, count, new_keys, new_cells):  # type: ignore[no-untyped-def]
    mask = keys.shape[0] - 1
    shift = _shift(keys.shape[0])
    for i in range(new_keys.shape[0]):
        slot, new = _find(keys, new_keys[i], _hash(new_keys[i], shift), mask)
        count += new
        _fold(cells[slot], new_cells[i])
    return count


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def _insert_binary(keys, cells, count, new_keys, new_cells):  # type: ignore[no-untyped-def]
    mask = keys.shape[0] - 1
    shift = _shift(keys.shape[0])
    for i in range(new_keys.shape[0]):
        slot, new = _find(keys, new_keys[i], _hash(new_keys[i], shift), mask)
        count += new
        _fold(cells[slot, 0], new_cells[i, 0])
        _fold(cells[slot, 1], new_cells[i, 1])
    return count


def insert_cells(
    keys: np.ndarray, cells: np.ndarray, count: int, new_keys: np.ndarray, new_cells: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Fold compact cells (unique keys, any order) into a table, growing it first if needed.

    Returns the (possibly new) table and its entry count. Weights and sums add, min/max combine:
    the same as binning the cells' rows again.
    """
    if count + new_keys.shape[0] > limit(keys.shape[0]):
        keys, cells = grow(keys, cells, count + new_keys.shape[0])
    fold = _insert_binary if cells.ndim == 3 else _insert_pairs
    return keys, cells, int(fold(keys, cells, count, new_keys, np.ascontiguousarray(new_cells)))


def compact_table(keys: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Occupied entries of a table, keys ascending: ``(keys, cells)``."""
    occupied = np.flatnonzero(keys != EMPTY)
    k = keys[occupied]
    order = np.argsort(k, kind="stable")
    return k[order], cells[occupied[order]]
