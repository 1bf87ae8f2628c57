# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's, and intrinsics are called with typing contexts)
"""Compiled decoder of the columnar bin payload (sketch format version 4).

Version 3 stores each bin as a variable-length record whose length depends on its tag, so its
decoder branches on the data at every bin (~13-18 ns per cell for the parse alone, ~40 ns with
the checks). Version 4 stores the cells of each class in three lists, each a set of flat
little-endian columns (``docs/sketch-format.md`` §4.2)::

    6 x uint32   the lists' lengths: for class 0 then class 1, lists U32, U64, GEN
    per class (0, 1), per list (U32, U64, GEN):
      uint32[m]        keys, strictly increasing inside the list
      U32:  float32[m] scores of unit cells (weight 1, one score; the sum is the score)
      U64:  float64[m] scores of unit cells whose score is not a float32 value
      GEN:  float64[m] weights, then float64[m] minima, float64[m] maxima, float64[m] sums

A class's three lists hold distinct keys; the header's ``n_bins`` is the number of distinct keys
of both classes. Every loop below runs over one list of one class, so the class and the cell
form are constants of the loop: no branch depends on the data except on an error.

:func:`decode4` checks what :func:`streameval.kernels.codec.decode_checked` checks (the structure,
every cell's values, the sums the counter checks need, in the same ``S_*``/``C_*`` slots) and
either fills compact bins or, with ``fold``, adds the cells straight into a dense state. Sums may
differ from version 3's by rounding (another order of additions): the counter checks decide a sum
that close to its bound with the bins, as they do for version 3.

:func:`fold_many` folds a batch of shards (either layout) in one call, so a roll-up releases and
takes back the GIL once per batch rather than once per shard.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .binary import LOG_LOSS_EPS, MAX, MIN, SUM, W, bin_indices, fold_cell
from .cache import ENABLED as CACHE
from .codec import (
    C_CELLS,
    C_CELLS_OK,
    C_FRAC,
    C_OUTSIDE,
    LOG_SLACK,
    S_B_HI,
    S_B_LO,
    S_L_HI,
    S_L_LO,
    S_T0,
    S_T1,
    S_W_IN,
    S_W_TOUCH,
    _cell_ok,
    _log_sum,
    range_terms,
)
from .codec import OK as OK3
from .codec import decode_fold as decode_fold3
from .intrinsics import _LN2_HI, _LN2_LO, bits_f32, bits_f64, f64_bits, load_le32, load_le64, prefetch

U32, U64, GEN = 0, 1, 2
N_LISTS = 6
PROLOGUE = 4 * N_LISTS
CELL_BYTES = (8, 12, 36)  # bytes per cell of lists U32, U64, GEN (key included)
BLOCK = 256  # cells whose scores are binned and logged together (scratch stays in L1)
PREFETCH = 16  # cells between a state line's prefetch and its fold
LANES = 16  # running products of a unit list's log-loss terms (BLOCK / LANES factors per block)

# decode4 status codes (io_columnar.py turns them into messages)
OK = 0
LENGTH = 1  # the payload's length is not what the list lengths say
TOO_MANY_CELLS = 2  # more cells than 2 * n_bins
KEY_NOT_INCREASING = 3
KEY_OUTSIDE_GRID = 4
DUPLICATE_CELL = 5  # a key in two lists of one class
BIN_COUNT = 6  # distinct keys != the header's n_bins
ZERO_WEIGHT = 7  # a GEN cell holding the empty cell [0 or -0.0, +inf, -inf, 0]
BITMAP_PER_CELL = 2  # decode4: a bitmap of the grid when it has at most this many words per cell

__all__ = ["decode4", "fold_many", "surely_consistent", "list_lengths", "U32", "U64", "GEN", "CELL_BYTES", "PROLOGUE"]


@nb.njit(inline="always", nogil=True)
def _u32(buf, pos):  # type: ignore[no-untyped-def]
    """The uint32 at ``buf[pos:pos + 4]`` as an int64 in ``[0, 2**32)`` (``load_le32`` is signed:
    a length or key of 2**31 or more read through it is negative)."""
    return np.int64(load_le32(buf, pos)) & np.int64(0xFFFFFFFF)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def list_lengths(buf):  # type: ignore[no-untyped-def]
    """The six list lengths (int64) and the payload length they need (-1 if ``buf`` is shorter
    than the prologue)."""
    m = np.zeros(N_LISTS, dtype=np.int64)
    if buf.shape[0] < PROLOGUE:
        return m, np.int64(-1)
    need = np.int64(PROLOGUE)
    for i in range(N_LISTS):
        m[i] = _u32(buf, 4 * i)
        need += m[i] * CELL_BYTES[i % 3]
    return m, need


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def decode4(buf, k, n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, keys, values, state, fold, sums, counts,  # type: ignore[no-untyped-def]
            bitmap_per_cell=BITMAP_PER_CELL):
    """Decode and check the columnar payload ``buf`` (uint8) of ``k`` bins.

    Without ``fold``, fills ``keys`` (int64 (k,)) and ``values`` (float64 (k, 2, 4)) with the
    compact bins; with ``fold``, adds every cell into the dense ``state`` (float64
    (n_bins, 2, 4)) as :func:`streameval.kernels.binary.merge_into` would add the decoded bins
    (one addition per state cell and file, so bit for bit whatever the order).

    Returns ``(status, list, cell, byte offset)``: status :data:`OK`, or the first structural
    problem's code with the list (0-5: class * 3 + form), the cell and the payload byte where it
    was found. With status OK, ``counts[C_CELLS_OK]`` says whether every cell passed the value
    rules (``io_checks.check_cells``); ``sums`` and ``counts`` receive what the counter checks
    need (the slots of :mod:`streameval.kernels.codec`). On a failure ``state`` may hold part of
    the file: the caller discards it.

    Keys are checked distinct within a class with a bitmap of the grid when it has at most
    ``bitmap_per_cell`` words (64 bins) per cell (shards on the default grid), else by walking the
    sorted lists against each other (a few cells on a large grid: work in proportion to the cells,
    not the grid); both find the same first problem.
    """
    m, need = list_lengths(buf)
    if need < 0 or need != buf.shape[0]:
        return LENGTH, -1, -1, buf.shape[0]
    total = 0
    for i in range(N_LISTS):
        total += m[i]
    if total > 2 * k:
        return TOO_MANY_CELLS, -1, -1, 0
    # -- structure: keys increasing inside each list and the grid, distinct within a class
    starts = np.empty(N_LISTS, dtype=np.int64)
    pos = np.int64(PROLOGUE)
    for li in range(N_LISTS):
        starts[li] = pos
        pos += m[li] * CELL_BYTES[li % 3]
    nw = (n_bins + 63) >> 6
    use_bitmap = nw <= bitmap_per_cell * total + 64
    seen = np.zeros((2, nw if use_bitmap else 0), dtype=np.uint64)
    status, li, i, at, distinct = _structure(buf, m, starts, n_bins, seen, use_bitmap)
    if status != OK:
        return status, li, i, at
    if distinct != k:
        return BIN_COUNT, -1, -1, 0
    for li in range(2, N_LISTS, 3):  # the empty cell stored as a present one
        mg = m[li]
        wpos = starts[li] + 4 * mg
        for i in range(mg):
            w = bits_f64(load_le64(buf, wpos + 8 * i))
            if w == 0.0:
                lo = bits_f64(load_le64(buf, wpos + 8 * (mg + i)))
                hi = bits_f64(load_le64(buf, wpos + 8 * (2 * mg + i)))
                sm = bits_f64(load_le64(buf, wpos + 8 * (3 * mg + i)))
                if lo == math.inf and hi == -math.inf and sm == 0.0:
                    return ZERO_WEIGHT, li, i, wpos + 8 * i
    # -- values: checks and sums, list by list
    acc = np.zeros(12, dtype=np.float64)  # t0, t1, w_in, w_touch, b_lo, b_hi, l_lo, l_hi, w_logs
    cnt = np.zeros(3, dtype=np.int64)  # cells, outside, frac
    ok = True
    scratch = np.empty((6, BLOCK), dtype=np.float64)
    got = np.empty(2 * BLOCK, dtype=np.int64)
    want = np.empty(2 * BLOCK, dtype=np.int64)
    for li in range(N_LISTS):
        c = li // 3
        if li % 3 == GEN:
            ok = ok and _gen_values(buf, starts[li], m[li], c, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, acc, cnt, scratch, got, want)
        else:
            ok = ok and _unit_values(buf, starts[li], m[li], li % 3 == U32, c, kind, f0, f1, f2, i0, i1, i2, cuts, acc, cnt, scratch, got, want)
        if not ok:
            break
    # -- the cells themselves
    if not fold:  # filled even when a cell fails: the NumPy checks name it
        _fill_bins(buf, starts, m, seen, keys, values, use_bitmap)
    elif ok:
        for li in range(N_LISTS):
            _fold_list(buf, starts[li], m[li], li % 3, li // 3, state)
    sums[S_T0], sums[S_T1], sums[S_W_IN], sums[S_W_TOUCH] = acc[0], acc[1], acc[2], acc[3]
    sums[S_B_LO], sums[S_B_HI] = acc[4], acc[5]
    sums[S_L_LO], sums[S_L_HI] = acc[6] - LOG_SLACK * acc[8], acc[7] + LOG_SLACK * acc[8]
    counts[C_CELLS], counts[C_OUTSIDE], counts[C_FRAC], counts[C_CELLS_OK] = cnt[0], cnt[1], cnt[2], ok
    return OK, -1, -1, 0


@nb.njit(nogil=True, boundscheck=False)
def _structure(buf, m, starts, n_bins, seen, use_bitmap):  # type: ignore[no-untyped-def]
    """Keys increasing inside each list and the grid, distinct within a class:
    ``(status, list, cell, byte, distinct bins)``.

    With ``use_bitmap``, ``seen`` (zeroed, a bitmap of the grid per class) records the keys; else
    each key is looked for in the class's earlier lists (a positive cell's also in the negative
    lists, to count the bins both classes share) by pointers that only move forward, since every
    list is increasing once checked. Both find the same first problem.
    """
    ptr = np.zeros(N_LISTS, dtype=np.int64)
    shared = 0
    for li in range(N_LISTS):
        c = li // 3
        pos = starts[li]
        ptr[:] = 0
        prev = np.int64(-1)
        for i in range(m[li]):
            key = _u32(buf, pos + 4 * i)
            if key <= prev:
                return KEY_NOT_INCREASING, li, i, pos + 4 * i, 0
            if key >= n_bins:
                return KEY_OUTSIDE_GRID, li, i, pos + 4 * i, 0
            prev = key
            if use_bitmap:
                word = key >> 6
                bit = np.uint64(1) << np.uint64(key & 63)
                if seen[c, word] & bit:
                    return DUPLICATE_CELL, li, i, pos + 4 * i, 0
                seen[c, word] |= bit
                continue
            for e in range(li):  # the class's earlier lists; a class-1 key also against class 0
                while ptr[e] < m[e] and _u32(buf, starts[e] + 4 * ptr[e]) < key:
                    ptr[e] += 1
                if ptr[e] < m[e] and _u32(buf, starts[e] + 4 * ptr[e]) == key:
                    if e // 3 == c:
                        return DUPLICATE_CELL, li, i, pos + 4 * i, 0
                    shared += 1
    distinct = 0
    if use_bitmap:
        for w in range(seen.shape[1]):
            distinct += _popcount(seen[0, w] | seen[1, w])
    else:
        for li in range(N_LISTS):
            distinct += m[li]
        distinct -= shared
    return OK, -1, -1, 0, distinct


@nb.njit(inline="always", nogil=True)
def _popcount(x):  # type: ignore[no-untyped-def]
    """Set bits of the uint64 ``x``, in constant time (LLVM turns this into one popcnt where the
    CPU has it; a loop over the set bits made the ranks of a dense sketch quadratic in a word)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@nb.njit(inline="always", nogil=True)
def _unit_score(buf, base, i, f32):  # type: ignore[no-untyped-def]
    if f32:
        return np.float64(bits_f32(load_le32(buf, base + 4 * i)))
    return bits_f64(load_le64(buf, base + 8 * i))


@nb.njit(inline="always", nogil=True)
def _add_sums(acc, cnt, c, sums, cells, outside, frac):  # type: ignore[no-untyped-def]
    """Add one list's sums ``(class weight, w_in, w_touch, Brier low, high, log-loss low, high,
    weight with logs)`` and counts into ``acc`` and ``cnt`` (:func:`decode4`'s slots)."""
    acc[0 if c == 0 else 1] += sums[0]
    for i in range(1, 8):
        acc[i + 1] += sums[i]
    cnt[0] += cells
    cnt[1] += outside
    if frac:
        cnt[2] = 1


@nb.njit(nogil=True, boundscheck=False, error_model="numpy")
def _unit_values(buf, start, mu, f32, c, kind, f0, f1, f2, i0, i1, i2, cuts, acc, cnt, scratch, got, want):  # type: ignore[no-untyped-def]
    """Checks and sums of one unit list (weight 1, one score per cell); False if a cell fails.

    The log loss ``-sum log x`` (one term per cell) is ``-log(prod x)``: the terms ``x`` (in
    ``[eps, 1]``) are multiplied into :data:`LANES` running products (vectorized), whose binary
    exponents move into an integer after each block (exactly), before they could underflow. Each
    product rounds by at most 2**-53 relative and each lane's final log by an ulp of at most
    ln 2, so the sum is off by at most ~2.3e-16 per cell plus ~1e-16 relative (no more than the
    log per cell it replaces, and far inside what ``io_checks._check_probability_sums`` decides
    with the exact bounds: ``3e-15`` per unit of touching weight plus 1e-8 relative): the
    verdicts are those of a log per cell.
    """
    base = start + 4 * mu
    eps = LOG_LOSS_EPS
    xs = scratch[0]
    ls = scratch[1]
    lanes = scratch[2, :LANES]
    lanes[:] = 1.0
    expo = 0
    t = w_in = b = 0.0
    outside = 0
    for s0 in range(0, mu, BLOCK):
        e = min(BLOCK, mu - s0)
        nan = False
        for i in range(e):
            s = _unit_score(buf, base, s0 + i, f32)
            nan |= s != s
            xs[i] = s
            want[i] = _u32(buf, start + 4 * (s0 + i))
        if nan:
            return False
        bin_indices(kind, f0, f1, f2, i0, i1, i2, cuts, xs[:e], got[:e])
        bad = False
        for i in range(e):  # a reduction (vectorized), not an exit per cell
            bad |= got[i] != want[i]
        if bad:
            return False
        for i in range(e):
            s = xs[i]
            inside = (s >= 0.0) & (s <= 1.0)
            ca = min(max(s, eps), 1.0 - eps)
            d = s if c == 0 else 1.0 - s  # Brier s**2 or (1 - s)**2, as version 3's single cells
            t += 1.0
            w_in += 1.0 if inside else 0.0
            b += d * d if inside else 0.0
            x = 1.0 - ca if c == 0 else ca  # log loss -log(1 - s) or -log(s)
            ls[i] = x if inside else 1.0
            outside += 0 if inside else 1
        expo += _multiply_lanes(ls, e, lanes)
    lsum = -(expo * _LN2_HI) - expo * _LN2_LO  # ln 2 in two parts: the first product is exact
    for j in range(LANES):
        lsum -= math.log(lanes[j])
    # a single score reaches into [0, 1] only from inside it: touching weight = inside weight
    _add_sums(acc, cnt, c, (t, w_in, w_in, b, b, lsum, lsum, w_in), mu, outside, False)
    return True


@nb.njit(inline="always", nogil=True, boundscheck=False, error_model="numpy")
def _multiply_lanes(ls, e, lanes):  # type: ignore[no-untyped-def]
    """Multiply ``ls[:e]`` (``e <= BLOCK``, each in ``[2**-52, 1]``) into ``lanes`` (each in
    ``[1, 2)`` on entry and on return); the binary exponent taken out of them (exactly).

    A lane takes at most ``BLOCK / LANES = 16`` factors per call, so it stays above
    ``2**-832``: no underflow, no subnormal."""
    for i in range(e, (e + LANES - 1) // LANES * LANES):
        ls[i] = 1.0
    for q in range(0, e, LANES):
        for j in range(LANES):
            lanes[j] *= ls[q + j]
    out = 0
    for j in range(LANES):
        bits = f64_bits(lanes[j])
        out += ((bits >> 52) & 0x7FF) - 1023
        lanes[j] = bits_f64((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000)
    return out


@nb.njit(nogil=True, boundscheck=False, error_model="numpy")
def _gen_values(buf, start, mg, c, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, acc, cnt, scratch, got, want):  # type: ignore[no-untyped-def]
    """Checks and sums of one GEN list (as version 3's cells that are not single); False if a
    cell fails."""
    wb = start + 4 * mg
    x_lo, x_hi, w_lo, w_hi = scratch[0], scratch[1], scratch[2], scratch[3]
    ends = scratch[4]
    ends2 = scratch[5]
    t = w_in = w_touch = b_lo = b_hi = l_lo = l_hi = w_logs = 0.0
    outside = 0
    frac = False
    for s0 in range(0, mg, BLOCK):
        e = min(BLOCK, mg - s0)
        q = 0
        for i in range(e):
            j = s0 + i
            w = bits_f64(load_le64(buf, wb + 8 * j))
            lo = bits_f64(load_le64(buf, wb + 8 * (mg + j)))
            hi = bits_f64(load_le64(buf, wb + 8 * (2 * mg + j)))
            sm = bits_f64(load_le64(buf, wb + 8 * (3 * mg + j)))
            if not _cell_ok(w, lo, hi, sm, False, rel_tol):
                return False
            key = _u32(buf, start + 4 * j)
            ends[i] = lo
            ends2[i] = hi
            want[i] = key
            t += w
            frac = frac or w != np.floor(w)
            if hi >= 0.0 and lo <= 1.0:
                w_touch += w
                inside = lo >= 0.0 and hi <= 1.0
                if inside:
                    w_in += w
                bl, bh, x_lo[q], x_hi[q] = range_terms(lo, hi, c)
                w_lo[q] = w if inside else 0.0
                w_hi[q] = w
                q += 1
                if inside:
                    b_lo += w * bl
                b_hi += w * bh
                w_logs += w
            else:
                outside += 1
        bin_indices(kind, f0, f1, f2, i0, i1, i2, cuts, ends[:e], got[:e])
        bin_indices(kind, f0, f1, f2, i0, i1, i2, cuts, ends2[:e], got[BLOCK:BLOCK + e])
        bad = False
        for i in range(e):
            bad |= (got[i] != want[i]) | (got[BLOCK + i] != want[i])
        if bad:
            return False
        l_lo += _log_sum(x_lo[:q], w_lo[:q])
        l_hi += _log_sum(x_hi[:q], w_hi[:q])
    _add_sums(acc, cnt, c, (t, w_in, w_touch, b_lo, b_hi, l_lo, l_hi, w_logs), mg, outside, frac)
    return True


@nb.njit(nogil=True, boundscheck=False)
def _fold_list(buf, start, mc, form, c, state):  # type: ignore[no-untyped-def]
    """Add the cells of one list into the dense ``state``."""
    flat = state.reshape(state.size)
    base = start + 4 * mc
    for i in range(mc):
        if i + PREFETCH < mc:
            prefetch(flat, _u32(buf, start + 4 * (i + PREFETCH)) * 8)
        key = _u32(buf, start + 4 * i)
        if form == GEN:
            w = bits_f64(load_le64(buf, base + 8 * i))
            lo = bits_f64(load_le64(buf, base + 8 * (mc + i)))
            hi = bits_f64(load_le64(buf, base + 8 * (2 * mc + i)))
            sm = bits_f64(load_le64(buf, base + 8 * (3 * mc + i)))
            fold_cell(state, key, c, w, lo, hi, sm)
        else:
            s = _unit_score(buf, base, i, form == U32)
            fold_cell(state, key, c, 1.0, s, s, s)


@nb.njit(nogil=True, boundscheck=False)
def _fill_bins(buf, starts, m, seen, keys, values, use_bitmap):  # type: ignore[no-untyped-def]
    """The compact bins: keys from the union of both classes' key sets, each cell at its key's
    rank (from the bitmap ``seen`` when ``use_bitmap``, else by sorting the keys)."""
    nw = seen.shape[1]
    rank = np.empty(nw, dtype=np.int64)  # bins before word w
    if use_bitmap:
        j = 0
        for w in range(nw):
            rank[w] = j
            x = seen[0, w] | seen[1, w]
            while x:
                low = x & (~x + np.uint64(1))  # the lowest set bit
                keys[j] = (w << 6) + _popcount(low - np.uint64(1))
                j += 1
                x ^= low
    else:
        every = np.empty(m.sum(), dtype=np.int64)
        j = 0
        for li in range(N_LISTS):
            for i in range(m[li]):
                every[j] = _u32(buf, starts[li] + 4 * i)
                j += 1
        every.sort()
        j = 0
        for x in every:
            if j == 0 or x != keys[j - 1]:
                keys[j] = x
                j += 1
    for j in range(keys.shape[0]):
        for c in range(2):
            values[j, c, W] = 0.0
            values[j, c, MIN] = math.inf
            values[j, c, MAX] = -math.inf
            values[j, c, SUM] = 0.0
    for li in range(N_LISTS):
        form, c = li % 3, li // 3
        start, mc = starts[li], m[li]
        base = start + 4 * mc
        for i in range(mc):
            key = _u32(buf, start + 4 * i)
            if use_bitmap:
                w = key >> 6
                below = seen[0, w] | seen[1, w]
                below &= (np.uint64(1) << np.uint64(key & 63)) - np.uint64(1)
                j = rank[w] + _popcount(below)
            else:
                j = np.searchsorted(keys, key)
            if form == GEN:
                values[j, c, W] = bits_f64(load_le64(buf, base + 8 * i))
                values[j, c, MIN] = bits_f64(load_le64(buf, base + 8 * (mc + i)))
                values[j, c, MAX] = bits_f64(load_le64(buf, base + 8 * (2 * mc + i)))
                values[j, c, SUM] = bits_f64(load_le64(buf, base + 8 * (3 * mc + i)))
            else:
                s = _unit_score(buf, base, i, form == U32)
                values[j, c, W] = 1.0
                values[j, c, MIN] = s
                values[j, c, MAX] = s
                values[j, c, SUM] = s


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def fold_many(data, offs, lens, ks, columnar, n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, state, sums, counts):  # type: ignore[no-untyped-def]
    """Fold several shards' payloads into the dense ``state`` in one call (the GIL released once):
    payload ``j`` is ``data[offs[j]:offs[j] + lens[j]]`` (uint8), of ``ks[j]`` bins, in the
    columnar layout where ``columnar[j]``, else the compact one (version 3,
    :func:`streameval.kernels.codec.decode_fold`); ``sums[j]`` and ``counts[j]`` receive what
    :func:`decode4` gives for it.

    Returns the number of payloads folded and checked, in order: it stops at the first whose status
    is not OK or whose cells fail their rules (``state`` then holds part of it; the caller
    decodes that one again for the message and discards the state).
    """
    no_keys = np.empty(0, dtype=np.int64)
    no_values = np.empty((0, 2, 4), dtype=np.float64)
    for j in range(offs.shape[0]):
        buf = data[offs[j]:offs[j] + lens[j]]
        if columnar[j]:
            status = decode4(buf, ks[j], n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, no_keys, no_values, state,
                             True, sums[j], counts[j])[0]
            failed = status != OK
        else:
            status = decode_fold3(buf, ks[j], n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, state, sums[j], counts[j])[0]
            failed = status != OK3
        if failed or counts[j, C_CELLS_OK] == 0:
            return j
    return offs.shape[0]


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def surely_consistent(ints, floats, sums, counts, rel_tol, near_rel, out):  # type: ignore[no-untyped-def]
    """For each shard ``j`` of a batch, whether ``io_checks.check_consistency`` surely passes it
    without its bins (``out[j]``), from its counters (``ints[j]``: n_rows, n_nan, n_zero_weight,
    n_outside as float64; ``floats[j]``: prob_weight, brier_sum, log_loss_sum, weighted as 0/1)
    and what :func:`fold_many` gave for it (``sums[j]``, ``counts[j]``).

    Decided only for unweighted shards whose counters and weights are below 2**53 (where the
    integer rules hold in float64); each rule is the Python check's float64 arithmetic in its order
    (no fast-math: no contraction), so True means it passes. ``rel_tol`` is ``io_checks.REL_TOL``,
    ``near_rel`` is ``io_checks._NEAR``.
    """
    exact = 2.0**53
    for j in range(out.shape[0]):
        n_rows, n_nan, n_zero, n_outside = ints[j, 0], ints[j, 1], ints[j, 2], ints[j, 3]
        pw, brier, log_loss, weighted = floats[j, 0], floats[j, 1], floats[j, 2], floats[j, 3]
        t0, t1, w_in, w_touch = sums[j, S_T0], sums[j, S_T1], sums[j, S_W_IN], sums[j, S_W_TOUCH]
        cells, outside_cells = np.float64(counts[j, C_CELLS]), np.float64(counts[j, C_OUTSIDE])
        total = t0 + t1
        binned = n_rows - n_nan
        ok = weighted == 0.0 and counts[j, C_FRAC] == 0 and n_rows < exact and total <= exact
        ok = ok and n_nan <= n_rows and n_zero == 0.0 and n_outside <= n_rows
        ok = ok and cells <= binned and n_outside <= binned and n_outside >= outside_cells
        slack = rel_tol * max(total, pw) + 1e-300
        ok = ok and w_in - slack <= pw and pw <= w_touch + slack
        ok = ok and total == binned and pw == np.floor(pw) and pw + n_outside - total == 0.0
        for i in range(2):
            value = brier if i == 0 else log_loss
            lower = sums[j, S_B_LO] if i == 0 else sums[j, S_L_LO]
            upper = sums[j, S_B_HI] if i == 0 else sums[j, S_L_HI]
            edge = rel_tol * max(upper, value) + 1e-9 * pw + 1e-300  # io_checks._within
            lo_edge, hi_edge = lower - edge, upper + edge
            margin = min(abs(value - lo_edge), abs(value - hi_edge))
            near = near_rel * max(max(abs(lower), abs(upper)), value) + 3e-15 * w_touch + 1e-300
            ok = ok and lo_edge <= value and value <= hi_edge and margin > near
        out[j] = ok and not brier > pw * (1.0 + rel_tol) + 1e-300
