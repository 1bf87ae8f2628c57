# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's, and intrinsics are called with typing contexts)
"""Compiled encoder and decoder of the compact bin payload (sketch format version 3).

Version 1 stores every occupied bin as 68 bytes (a key delta and eight float64s); a shard of
10,000 rows is 558 KB raw, so loading thousands of shards is mostly inflating and checking bytes
that carry little. Version 3 stores each bin as a variable-length record (``docs/sketch-format.md``
§4.1)::

    varint   key delta (the first key itself; then >= 1)
    uint8    tag: the negative class's nibble in bits 0-3, the positive class's in bits 4-7
    per class whose nibble is not 0, negative first:
      weight   varint when the nibble has INT, else float64
      min      float32 when the nibble has F32, else float64
      max      (absent when the nibble has SINGLE) float32 or float64 as min
      sum      (absent when the nibble has SINGLE) float64

A nibble is ``PRESENT | INT? | SINGLE? | F32?``. ``INT``: the weight is a whole number in
``[1, 2**53]`` (every unweighted cell). ``SINGLE``: max has the same bits as min, and the sum has
the bits of ``weight * min`` in float64 (a cell of one row, or of rows sharing one score). ``F32``:
min and max are float32 values widened exactly. Every choice is bit-exact: a decoded cell equals
the encoded one bit for bit (``-0.0`` included).

Varints are unsigned LEB128, canonical (no trailing zero group): at most 4 bytes for a key delta
(keys are below 2**28: the largest grid §3.1 allows has 201,851,137 bins with its cuts), 8 for a
weight (at most 2**53). Little-endian throughout.

:func:`decode_checked` decodes and checks in one pass: the structure (varints, tags, keys
increasing inside the grid, integer weights in range, the exact length), every cell's values as
:func:`streameval.sketch.io_checks.check_cells` does (weights positive and finite, min <= max in
the bin, the sum between weight x min and weight x max), and the sums the counter checks need,
so a valid file never reaches the NumPy checks (an invalid one does, for its message).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .binary import LOG_LOSS_EPS, MAX, MIN, SUM, W, bin_indices, fold_cell
from .cache import ENABLED as CACHE
from .intrinsics import bits_f32, bits_f64, f32_bits, f64_bits, load_le32, load_le64, log_pos, prefetch

PRESENT, INT, SINGLE, F32 = 1, 2, 4, 8
MAX_INT_WEIGHT = 1 << 53
KEY_VARINT_BYTES = 4
WEIGHT_VARINT_BYTES = 8

# decode_checked status codes (io_compact.py turns them into messages)
OK = 0
TRUNCATED = 1
BAD_KEY_VARINT = 2
KEY_NOT_INCREASING = 3
KEY_OUTSIDE_GRID = 4
EMPTY_BIN = 5
BAD_NIBBLE = 6
BAD_INT_WEIGHT = 7
TRAILING = 8
ZERO_WEIGHT = 9  # a present cell (nibble not 0) holding the empty cell [0 or -0.0, +inf, -inf, 0]

__all__ = ["encode_bins", "decode_checked", "decode_fold", "PRESENT", "INT", "SINGLE", "F32", "LOG_SLACK"]


@nb.njit(inline="always", nogil=True)
def _nibble(w, lo, hi, sm):  # type: ignore[no-untyped-def]
    if not w > 0.0:
        return 0
    nib = PRESENT
    if w <= MAX_INT_WEIGHT and w == np.floor(w):
        nib |= INT
    if f64_bits(lo) == f64_bits(hi) and f64_bits(sm) == f64_bits(w * lo):
        nib |= SINGLE
    if f64_bits(np.float64(np.float32(lo))) == f64_bits(lo) and f64_bits(np.float64(np.float32(hi))) == f64_bits(hi):
        nib |= F32
    return nib


@nb.njit(inline="always", nogil=True)
def _varint_len(x):  # type: ignore[no-untyped-def]
    n = 1
    while x >= 128:
        x >>= 7
        n += 1
    return n


@nb.njit(inline="always", nogil=True)
def _cell_len(nib, w):  # type: ignore[no-untyped-def]
    if nib == 0:
        return 0
    n = _varint_len(np.uint64(w)) if nib & INT else 8
    v = 4 if nib & F32 else 8
    return n + (v if nib & SINGLE else 2 * v + 8)


@nb.njit(inline="always", nogil=True)
def _put_varint(out, pos, x):  # type: ignore[no-untyped-def]
    while x >= 128:
        out[pos] = np.uint8((x & 127) | 128)
        x >>= 7
        pos += 1
    out[pos] = np.uint8(x)
    return pos + 1


@nb.njit(inline="always", nogil=True)
def _put_bits(out, pos, b, nbytes):  # type: ignore[no-untyped-def]
    for i in range(nbytes):
        out[pos + i] = np.uint8((b >> (8 * i)) & 255)
    return pos + nbytes


@nb.njit(inline="always", nogil=True)
def _put_value(out, pos, x, f32):  # type: ignore[no-untyped-def]
    if f32:
        return _put_bits(out, pos, np.int64(f32_bits(np.float32(x))) & 0xFFFFFFFF, 4)
    return _put_bits(out, pos, f64_bits(x), 8)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def encode_bins(keys, values):  # type: ignore[no-untyped-def]
    """The compact payload of compact bins ``(keys, values)`` as a uint8 array.

    ``keys`` int64 (k,) strictly increasing; ``values`` float64 (k, 2, 4) with empty class cells
    ``[0, +inf, -inf, 0]`` and no NaN.
    """
    k = keys.shape[0]
    size = 0
    prev = 0
    for j in range(k):
        size += _varint_len(np.uint64(keys[j] - prev)) + 1
        prev = keys[j]
        for c in range(2):
            v = values[j, c]
            size += _cell_len(_nibble(v[W], v[MIN], v[MAX], v[SUM]), v[W])
    out = np.empty(size, dtype=np.uint8)
    pos = 0
    prev = 0
    for j in range(k):
        pos = _put_varint(out, pos, np.uint64(keys[j] - prev))
        prev = keys[j]
        n0 = _nibble(values[j, 0, W], values[j, 0, MIN], values[j, 0, MAX], values[j, 0, SUM])
        n1 = _nibble(values[j, 1, W], values[j, 1, MIN], values[j, 1, MAX], values[j, 1, SUM])
        out[pos] = np.uint8(n0 | (n1 << 4))
        pos += 1
        for c in range(2):
            nib = n0 if c == 0 else n1
            if nib == 0:
                continue
            v = values[j, c]
            if nib & INT:
                pos = _put_varint(out, pos, np.uint64(v[W]))
            else:
                pos = _put_bits(out, pos, f64_bits(v[W]), 8)
            pos = _put_value(out, pos, v[MIN], nib & F32)
            if not nib & SINGLE:
                pos = _put_value(out, pos, v[MAX], nib & F32)
                pos = _put_bits(out, pos, f64_bits(v[SUM]), 8)
    return out


@nb.njit(inline="always", nogil=True)
def _get_varint(buf, pos, n, max_bytes):  # type: ignore[no-untyped-def]
    """``(value, new pos, ok)``: a canonical LEB128 varint of at most ``max_bytes`` bytes."""
    if pos < n and buf[pos] < 128:  # the common one-byte case first
        return np.uint64(buf[pos]), pos + 1, True
    x = np.uint64(0)
    for i in range(max_bytes):
        if pos >= n:
            return x, pos, False
        b = np.uint64(buf[pos])
        pos += 1
        x |= (b & np.uint64(127)) << np.uint64(7 * i)
        if b < 128:
            return x, pos, not (b == 0 and i > 0)  # a trailing zero group is not canonical
    return x, pos, False


@nb.njit(inline="always", nogil=True)
def _get_value(buf, pos, f32):  # type: ignore[no-untyped-def]
    if f32:
        return np.float64(bits_f32(load_le32(buf, pos)))
    return bits_f64(load_le64(buf, pos))


# decode_checked's summary slots (io_compact.py reads them by these names)
S_T0, S_T1, S_W_IN, S_W_TOUCH, S_B_LO, S_B_HI, S_L_LO, S_L_HI = range(8)
C_CELLS, C_OUTSIDE, C_FRAC, C_CELLS_OK = range(4)
CELL_BLOCK = 256  # cells gathered before their ends are binned and their logs taken
FOLD_LAG = 32  # decode_fold: cells between a bin's prefetch and its fold (a power of two)
LOG_SLACK = 1e-15
"""Absolute widening, per unit weight, of the log-loss bounds computed by :func:`decode_checked`:
``log(1 - x)`` stands for ``log1p(-x)`` (``1 - x`` is exact for ``x >= 1/2`` by Sterbenz's lemma and
within 2**-54 below it). The vectorizable log (within 1 ulp, up to 7e-15 for the largest term,
36.04) and the summation order add a relative error below 1e-9, which this absolute widening
does not cover: ``io_checks._check_probability_sums`` decides a sum that close to an edge of its
accepted range with the exact bounds, so version 3 and version 1 give the same verdict."""


@nb.njit(inline="always", nogil=True)
def _cell_ok(w, lo, hi, sm, single, rel_tol):  # type: ignore[no-untyped-def]
    """The value rules of one non-empty cell (its bin is checked apart)."""
    if not (w > 0.0 and w < math.inf) or lo != lo or hi != hi or not lo <= hi:
        return False
    if single:
        return sm == sm
    low, high = w * lo, w * hi
    slack = rel_tol * max(abs(low), abs(high))
    slack = (slack if slack < math.inf else 0.0) + 1e-300
    return sm >= low - slack and sm <= high + slack


@nb.njit(inline="always", nogil=True)
def range_terms(lo, hi, c):  # type: ignore[no-untyped-def]
    """The extreme per-row terms of a cell of class ``c`` whose scores span ``[lo, hi]`` (reaching
    into [0, 1]): ``(smallest Brier term, largest, x of the smallest log-loss term -log x, x of
    the largest)``, scores clipped to [0, 1] and, for the logs, to [eps, 1 - eps]
    (``io_checks._probability_bounds``)."""
    eps = LOG_LOSS_EPS
    a, b = min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)
    ca, cb = min(max(a, eps), 1.0 - eps), min(max(b, eps), 1.0 - eps)
    if c == 0:  # Brier s**2, log loss -log(1 - s): both increase with s
        return a * a, b * b, 1.0 - ca, 1.0 - cb
    return (1.0 - b) ** 2, (1.0 - a) ** 2, cb, ca  # (1 - s)**2 and -log(s): both decrease with s


@nb.njit(inline="always", nogil=True)
def _ends_in_bins(got, end_key, e):  # type: ignore[no-untyped-def]
    for i in range(e):
        if got[i] != end_key[i]:
            return False
    return True


@nb.njit(nogil=True, boundscheck=False, error_model="numpy", fastmath={"reassoc"})
def _log_sum(x, w):  # type: ignore[no-untyped-def]
    """``-sum w log x``, vectorized (x positive and normal)."""
    a = 0.0
    for i in range(x.shape[0]):
        a -= w[i] * log_pos(x[i])
    return a


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def decode_checked(buf, k, n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, keys, values, sums, counts):  # type: ignore[no-untyped-def]
    """Decode ``k`` bins of the compact payload ``buf`` (uint8) into ``keys`` (int64 (k,)) and
    ``values`` (float64 (k, 2, 4)), checking everything about them in one pass (see :func:`_decode`).
    """
    return _decode(buf, k, n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, keys, values, values, False, sums, counts)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def decode_fold(buf, k, n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, state, sums, counts):  # type: ignore[no-untyped-def]
    """Decode ``k`` bins of the compact payload ``buf`` and fold them straight into the dense
    ``state`` (float64 (n_bins, 2, 4)) as :func:`streameval.kernels.binary.merge_into` would fold
    the decoded bins (bit for bit), with every check of :func:`decode_checked`.

    Nothing is allocated per bin: a roll-up of thousands of shard files never builds their bins.
    When the status is not OK or a cell fails its rules, ``state`` holds part of the file: the
    caller discards it (the merge fails) and decodes the file again for the message.

    The state is larger than L2 and a shard's bins are sparse in it, so each bin's line is
    prefetched as its key is read and the cell folded :data:`FOLD_LAG` cells later, in order.
    """
    no_keys = np.empty(0, dtype=np.int64)
    return _decode(buf, k, n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, no_keys, state, state, True, sums, counts)


@nb.njit(inline="always", nogil=True, boundscheck=False)
def _decode(buf, k, n_bins, kind, f0, f1, f2, i0, i1, i2, cuts, rel_tol, keys, values, state, fold, sums, counts):  # type: ignore[no-untyped-def]
    """Decode ``k`` bins of the compact payload ``buf`` (uint8) into ``keys`` (int64 (k,)) and
    ``values`` (float64 (k, 2, 4)), or with ``fold`` into the dense ``state`` (then ``keys`` and
    ``values`` are not touched), checking everything about them in one pass.

    Returns ``(status, bin, byte offset)``: status :data:`OK`, or the first structural problem's
    code with the bin index and byte offset where it was found. With status OK, ``counts[C_CELLS_OK]``
    says whether every cell passed the rules of ``check_cells`` (weights positive and finite,
    min <= max inside the bin, the sum between weight x min and weight x max); ``sums`` (float64 (8,))
    and ``counts`` (int64 (4,)) receive what the counter checks need (the ``S_*``/``C_*`` slots:
    class totals, the weights inside and reaching [0, 1], the cells outside it, whether a weight is
    fractional, and the Brier and log-loss bounds of ``io_checks._probability_bounds``, the
    log-loss ones widened by :data:`LOG_SLACK` per unit weight).
    """
    n = buf.shape[0]
    pos = 0
    key = np.int64(-1)
    ends = np.empty(2 * CELL_BLOCK, dtype=np.float64)  # small scratch, reused: stays in L1
    got = np.empty(2 * CELL_BLOCK, dtype=np.int64)
    end_key = np.empty(2 * CELL_BLOCK, dtype=np.int64)
    x_lo = np.empty(CELL_BLOCK, dtype=np.float64)
    x_hi = np.empty(CELL_BLOCK, dtype=np.float64)
    w_lo = np.empty(CELL_BLOCK, dtype=np.float64)
    w_hi = np.empty(CELL_BLOCK, dtype=np.float64)
    xs = np.empty(CELL_BLOCK, dtype=np.float64)  # single-score cells: one log each
    ws = np.empty(CELL_BLOCK, dtype=np.float64)
    eps = LOG_LOSS_EPS
    t0 = t1 = w_in = w_touch = b_lo = b_hi = w_logs = l_lo = l_hi = 0.0
    cells = outside = m = ms = e = 0
    frac = False
    ok_all = True
    flat = state.reshape(state.size)
    rk = np.empty(FOLD_LAG, dtype=np.int64)  # fold mode: the cells decoded, not yet folded
    rc = np.empty(FOLD_LAG, dtype=np.int64)
    rv = np.empty((FOLD_LAG, 4), dtype=np.float64)
    q = 0
    for j in range(k):
        start = pos
        d, pos, ok = _get_varint(buf, pos, n, KEY_VARINT_BYTES)
        if not ok:
            return (TRUNCATED if pos >= n else BAD_KEY_VARINT), j, start
        if j > 0 and d == 0:
            return KEY_NOT_INCREASING, j, start
        key = np.int64(d) if j == 0 else key + np.int64(d)
        if key >= n_bins:
            return KEY_OUTSIDE_GRID, j, start
        if fold:
            prefetch(flat, key * 8)
        else:
            keys[j] = key
        if pos >= n:
            return TRUNCATED, j, pos
        tag = np.int64(buf[pos])
        if tag == 0:
            return EMPTY_BIN, j, pos
        pos += 1
        for c in range(2):
            nib = (tag >> (4 * c)) & 15
            if nib == 0:
                if not fold:
                    values[j, c, W] = 0.0
                    values[j, c, MIN] = math.inf
                    values[j, c, MAX] = -math.inf
                    values[j, c, SUM] = 0.0
                continue
            if not nib & PRESENT:
                return BAD_NIBBLE, j, pos - 1
            if nib & INT:
                at = pos
                x, pos, ok = _get_varint(buf, pos, n, WEIGHT_VARINT_BYTES)
                if not ok:
                    return (TRUNCATED if pos >= n else BAD_INT_WEIGHT), j, at
                if x == 0 or x > np.uint64(MAX_INT_WEIGHT):
                    return BAD_INT_WEIGHT, j, at
                w = np.float64(x)
            else:
                if pos + 8 > n:
                    return TRUNCATED, j, pos
                at = pos
                w = bits_f64(load_le64(buf, pos))
                pos += 8
            size = 4 if nib & F32 else 8
            single = (nib & SINGLE) != 0
            if pos + (size if single else 2 * size + 8) > n:
                return TRUNCATED, j, pos
            lo = _get_value(buf, pos, nib & F32)
            pos += size
            if single:
                hi = lo
                sm = w * lo
            else:
                hi = _get_value(buf, pos, nib & F32)
                pos += size
                sm = bits_f64(load_le64(buf, pos))
                pos += 8
            if w == 0.0 and lo == math.inf and hi == -math.inf and sm == 0.0:
                return ZERO_WEIGHT, j, at  # the empty cell is nibble 0, never a present cell
            if fold:
                r = q & (FOLD_LAG - 1)
                if q >= FOLD_LAG:
                    fold_cell(state, rk[r], rc[r], rv[r, 0], rv[r, 1], rv[r, 2], rv[r, 3])
                rk[r], rc[r] = key, c
                rv[r, 0], rv[r, 1], rv[r, 2], rv[r, 3] = w, lo, hi, sm
                q += 1
            else:
                values[j, c, W] = w
                values[j, c, MIN] = lo
                values[j, c, MAX] = hi
                values[j, c, SUM] = sm
            if not ok_all or not _cell_ok(w, lo, hi, sm, single, rel_tol):
                ok_all = False  # keep decoding: the NumPy checks name the cell
                continue
            if e > 2 * CELL_BLOCK - 2:  # bin the block's ends in one vectorized call
                bin_indices(kind, f0, f1, f2, i0, i1, i2, cuts, ends[:e], got[:e])
                ok_all = _ends_in_bins(got, end_key, e)
                e = 0
            ends[e] = lo  # a single-score cell has one end to bin
            end_key[e] = key
            e += 1
            if not single:
                ends[e] = hi
                end_key[e] = key
                e += 1
            cells += 1
            if c == 0:
                t0 += w
            else:
                t1 += w
            frac = frac or w != np.floor(w)
            if hi >= 0.0 and lo <= 1.0:
                w_touch += w
                inside = lo >= 0.0 and hi <= 1.0
                if inside:
                    w_in += w
                if single:  # one score in [0, 1]: one Brier term and one log for both bounds
                    ca = min(max(lo, eps), 1.0 - eps)
                    bl = lo * lo if c == 0 else (1.0 - lo) ** 2
                    b_lo += w * bl
                    b_hi += w * bl
                    xs[ms] = 1.0 - ca if c == 0 else ca
                    ws[ms] = w
                    ms += 1
                    if ms == CELL_BLOCK:
                        a = _log_sum(xs, ws)
                        l_lo += a
                        l_hi += a
                        ms = 0
                else:
                    bl, bh, x_lo[m], x_hi[m] = range_terms(lo, hi, c)
                    w_lo[m] = w if inside else 0.0
                    w_hi[m] = w
                    m += 1
                    if m == CELL_BLOCK:
                        l_lo += _log_sum(x_lo, w_lo)
                        l_hi += _log_sum(x_hi, w_hi)
                        m = 0
                    if inside:
                        b_lo += w * bl
                    b_hi += w * bh
                w_logs += w
            else:
                outside += 1
    if pos != n:
        return TRAILING, k, pos
    for i in range(max(q - FOLD_LAG, 0), q):
        r = i & (FOLD_LAG - 1)
        fold_cell(state, rk[r], rc[r], rv[r, 0], rv[r, 1], rv[r, 2], rv[r, 3])
    if ok_all and e:
        bin_indices(kind, f0, f1, f2, i0, i1, i2, cuts, ends[:e], got[:e])
        ok_all = _ends_in_bins(got, end_key, e)
    l_lo += _log_sum(x_lo[:m], w_lo[:m])
    l_hi += _log_sum(x_hi[:m], w_hi[:m])
    a = _log_sum(xs[:ms], ws[:ms])
    l_lo += a
    l_hi += a
    sums[S_T0], sums[S_T1], sums[S_W_IN], sums[S_W_TOUCH] = t0, t1, w_in, w_touch
    sums[S_B_LO], sums[S_B_HI] = b_lo, b_hi
    sums[S_L_LO], sums[S_L_HI] = l_lo - LOG_SLACK * w_logs, l_hi + LOG_SLACK * w_logs
    counts[C_CELLS], counts[C_OUTSIDE], counts[C_FRAC], counts[C_CELLS_OK] = cells, outside, frac, ok_all
    return OK, k, pos
