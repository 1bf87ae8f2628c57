# mypy: disable-error-code="call-arg,no-untyped-call,assignment,var-annotated"
# (Numba-compiled code: scalar types are Numba's)
"""The compiled Poisson-bootstrap update: R replicate histograms filled in one pass over a chunk.

Each row gets, for each replicate ``r``, an integer weight ``k ~ Poisson(1)`` that is a pure
function of ``(seed, row key, r)`` (Hanley & MacGibbon 2006; Chamandy et al. 2012): no random
state is carried, so shards, threads and reruns that see the same row give it the same weights,
and replicate histograms merge exactly like the sketch's own bins.

- The row key is a 64-bit hash of the row identifier (``row_id``) or of the row's position in
  the stream, mixed with the seed (:func:`row_hashes`, :func:`position_hashes`,
  :func:`string_hashes`; SplitMix64's finaliser, Steele, Lea & Flood 2014).
- The replicate weight is ``k = #{j : u >= T_j}`` where ``u`` is a 32-bit hash of the row key and
  ``r`` (MurmurHash3's 32-bit finaliser) and ``T_j = round(2**32 * P(K <= j - 1))`` for
  ``j = 1..12``: Poisson(1) up to the 2**-32 resolution of ``u`` (the tail beyond 12,
  ``P(K >= 13) = 6.4e-11``, is folded into 12). :func:`_poisson_weight` emits this as 32-bit LLVM
  integer operations (Numba would widen them to 64 bits); :func:`_add_poisson_lanes` adds the
  weights of 8 replicates as one 8 x i32 vector (AVX2 ``vpmulld``, ``vpcmpgtd``), testing the
  rare high thresholds only when a lane needs them: ~0.6 ns of one core per row and replicate,
  against ~3-5 ns for the 64-bit scalar form Numba generated before.
- Replicate weights are kept per occupied bin only: ``index[bin]`` points to a row of ``table``
  (shape ``(capacity, 2, R)``, float64: class, replicate), allocated on the bin's first row
  (:func:`assign_rows`, one pass) and grown by doubling, so memory follows the occupied bins, not
  the grid's size. :func:`add_replicates` then adds the weights of a range of replicates, so
  threads given disjoint ranges fill the table side by side. Rows come grouped by table row
  (:func:`group_by_row`); unweighted rows add their weights into a small int32 buffer (both classes,
  the range's replicates) that is added to the table once per table row, so the table is touched
  once per occupied bin and the per-row work is the hash and a vector add.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable, Sequence

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .binary import BLOCK, _block_keys
from .cache import ENABLED as CACHE

__all__ = ["POISSON_THRESHOLDS", "LANES", "FLUSH_ROWS", "assign_rows", "order_by_row", "group_by_row", "count_rows",
           "scatter_rows", "add_replicates", "replicate_cuts", "row_hashes", "position_hashes", "string_hashes"]

MAX_K = 12
LANES = 8
"""Replicates are computed in blocks of this many (one AVX2 vector of uint32)."""
FLUSH_ROWS = (2**31 - 1) // MAX_K
"""Unweighted rows add at most ``MAX_K`` per replicate into an int32 buffer: it is added to the
table after at most this many rows, before it can overflow."""


def _thresholds() -> np.ndarray:
    cdf, term, out = 0.0, math.exp(-1.0), []
    for j in range(MAX_K):
        cdf += term / math.factorial(j)
        out.append(min(round(cdf * 2.0**32), 2**32 - 1))
    return np.array(out, dtype=np.uint32)


POISSON_THRESHOLDS = _thresholds()
"""``T_j`` for ``j = 1..12``: ``u >= T_j`` adds one to the replicate weight."""



@nb.njit(inline="always", nogil=True)
def _mix64(z):  # type: ignore[no-untyped-def]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def row_hashes(ids, seed):  # type: ignore[no-untyped-def]
    """64-bit row keys of integer identifiers (any int/uint dtype, read as uint64)."""
    s = _mix64(np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15))
    out = np.empty(ids.shape[0], dtype=np.uint64)
    for i in range(ids.shape[0]):
        out[i] = _mix64(np.uint64(ids[i]) ^ s)
    return out


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def position_hashes(start, n, seed):  # type: ignore[no-untyped-def]
    """Row keys of the stream positions ``start .. start + n - 1`` (no ``row_id``)."""
    s = _mix64(np.uint64(seed) + np.uint64(0x632BE59BD9B4E019))
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = _mix64(np.uint64(start + i) ^ s)
    return out


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def string_hashes(offsets, data, seed):  # type: ignore[no-untyped-def]
    """Row keys of strings given as Arrow offsets (int32/int64) and UTF-8 bytes (FNV-1a 64)."""
    s = _mix64(np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15))
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        h = np.uint64(0xCBF29CE484222325)
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[j])) * np.uint64(0x100000001B3)
        out[i] = _mix64(h ^ s)
    return out


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def assign_rows(index, used, kind, f0, f1, f2, i0, i1, i2, cuts, scores, weights, weighted):  # type: ignore[no-untyped-def]
    """Each row's replicate-table row (-1: NaN score or zero weight), allocating rows for new bins.

    ``index`` (int64, grid size; -1 = no row yet) is updated in place. Returns ``(rows, used)``;
    the caller grows the table to at least ``used`` rows before :func:`add_replicates`.
    """
    n = scores.shape[0]
    rows = np.empty(n, dtype=np.int64)
    bins = np.empty(BLOCK, dtype=np.int64)
    for start in range(0, n, BLOCK):
        end = min(start + BLOCK, n)
        sc = scores[start:end]
        _block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, sc, bins)
        for j in range(end - start):
            s = np.float64(sc[j])
            w = weights[start + j] if weighted else 1.0
            if s != s or w == 0.0:
                rows[start + j] = -1
                continue
            b = bins[j]
            row = index[b]
            if row < 0:
                row = used
                index[b] = row
                used += 1
            rows[start + j] = row
    return rows, used


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def order_by_row(rows, used):  # type: ignore[no-untyped-def]
    """A stable counting sort of the rows by table row (skipped rows, -1, first): adding the
    weights in this order walks the table once instead of jumping across it (measured 2-3x)."""
    counts = np.zeros(used + 2, dtype=np.int64)
    for i in range(rows.shape[0]):
        counts[rows[i] + 2] += 1
    for j in range(1, used + 2):
        counts[j] += counts[j - 1]
    out = np.empty(rows.shape[0], dtype=np.int64)
    for i in range(rows.shape[0]):
        j = rows[i] + 1
        out[counts[j]] = i
        counts[j] += 1
    return out


def replicate_cuts(n_replicates: int, parts: int) -> np.ndarray:
    """Split replicates ``0 .. R - 1`` into ``parts`` ranges (int64 bounds, ``parts + 1`` of them)
    that start on multiples of :data:`LANES`, so no thread computes a padded block twice."""
    blocks = -(-n_replicates // LANES)
    cuts = np.linspace(0, blocks, parts + 1).astype(np.int64) * LANES
    return np.minimum(cuts, n_replicates)


_GOLDEN = 0x9E3779B9
_TAIL = 4  # the vector form tests thresholds T_1..T_4 always, the rest only if a lane reaches T_5


def _fmix32(builder: ir.IRBuilder, lo: ir.Value, hi: ir.Value, rc: ir.Value,
            const: Callable[[int], ir.Constant]) -> ir.Value:
    """IR of the weight's 32-bit hash ``u`` (scalar or vector: LLVM's integer operations are
    type-generic); ``rc = r * 0x9E3779B9``, ``const(v)`` builds a constant of the operands' type."""
    h = builder.xor(lo, builder.add(hi, rc))
    h = builder.mul(builder.xor(h, builder.lshr(h, const(16))), const(0x85EBCA6B))
    h = builder.mul(builder.xor(h, builder.lshr(h, const(13))), const(0xC2B2AE35))
    return builder.xor(h, builder.lshr(h, const(16)))


@intrinsic
def _poisson_weight(typingctx, lo, hi, r):  # type: ignore[no-untyped-def]
    """Replicate ``r``'s Poisson weight (int32) of the row key ``hi << 32 | lo``: the module
    docstring's hash and threshold count, written as 32-bit LLVM operations."""
    sig = types.int32(types.uint32, types.uint32, types.int64)
    thresholds = [int(t) for t in POISSON_THRESHOLDS]

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        i32 = ir.IntType(32)

        def c(v: int) -> ir.Constant:
            return ir.Constant(i32, v)

        lo_, hi_, r_ = args
        h = _fmix32(builder, lo_, hi_, builder.mul(builder.trunc(r_, i32), c(_GOLDEN)), c)
        k = c(0)
        for t in thresholds:
            k = builder.add(k, builder.zext(builder.icmp_unsigned(">=", h, c(t)), i32))
        return k

    return sig, codegen


@intrinsic
def _add_poisson_lanes(typingctx, acc, at, lo, hi, r):  # type: ignore[no-untyped-def]
    """``acc[at + j] += `` replicate ``r + j``'s Poisson weight of the row key ``hi << 32 | lo``,
    for ``j = 0 .. LANES - 1`` (``acc``: int32, 1-D, contiguous), as explicit 8 x i32 vector IR.

    ``u >= T`` is tested as the signed ``u ^ 2**31 > (T - 1) ^ 2**31`` (one ``vpcmpgtd``; AVX2
    has no unsigned compare), and the thresholds ``T_5 .. T_12`` only when some lane reaches
    ``T_5`` (``P(K >= 5) = 0.0037``: 2.9% of the blocks): 1.5x fewer operations than all twelve.
    """
    sig = types.void(acc, types.int64, types.uint32, types.uint32, types.int64)
    thresholds = [int(t) for t in POISSON_THRESHOLDS]

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        acc_, at_, lo_, hi_, r_ = args
        i32 = ir.IntType(32)
        vec = ir.VectorType(i32, LANES)

        def const(v: int) -> ir.Constant:
            return ir.Constant(vec, [v & 0xFFFFFFFF] * LANES)

        def splat(x: ir.Value) -> ir.Value:
            one = builder.insert_element(ir.Constant(vec, ir.Undefined), x, ir.Constant(i32, 0))
            return builder.shuffle_vector(one, ir.Constant(vec, ir.Undefined), ir.Constant(vec, [0] * LANES))

        aty = signature.args[0]
        array = context.make_array(aty)(context, builder, acc_)
        ptr = cgutils.get_item_pointer(context, builder, aty, array, [at_], wraparound=False, boundscheck=False)
        vptr = builder.bitcast(ptr, vec.as_pointer())
        rc = builder.mul(builder.trunc(r_, i32), ir.Constant(i32, _GOLDEN))
        steps = ir.Constant(vec, [(j * _GOLDEN) & 0xFFFFFFFF for j in range(LANES)])
        h = _fmix32(builder, splat(lo_), splat(hi_), builder.add(splat(rc), steps), const)
        flipped = builder.xor(h, const(0x80000000))

        def at_least(t: int) -> ir.Value:  # lanes with u >= t, as i1
            return builder.icmp_signed(">", flipped, const((t - 1) ^ 0x80000000))

        total = builder.load(vptr, align=4)
        for t in thresholds[:_TAIL]:
            total = builder.sub(total, builder.sext(at_least(t), vec))  # true lanes are -1
        builder.store(total, vptr, align=4)
        rare = builder.bitcast(at_least(thresholds[_TAIL]), ir.IntType(LANES))
        with builder.if_then(builder.icmp_unsigned("!=", rare, ir.Constant(ir.IntType(LANES), 0)), likely=False):
            total = builder.load(vptr, align=4)
            for t in thresholds[_TAIL:]:
                total = builder.sub(total, builder.sext(at_least(t), vec))
            builder.store(total, vptr, align=4)
        return context.get_dummy_value()

    return sig, codegen


@nb.njit(inline="always", nogil=True)
def _split(key):  # type: ignore[no-untyped-def]
    return np.uint32(key & np.uint64(0xFFFFFFFF)), np.uint32(key >> np.uint64(32))


@nb.njit(inline="always", nogil=True)
def _row_weights(lo, hi, kbuf, r0, blocks):  # type: ignore[no-untyped-def]
    kbuf[:] = 0
    for b in range(blocks):
        _add_poisson_lanes(kbuf, b * LANES, lo, hi, r0 + b * LANES)


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def count_rows(rows, used, a, b):  # type: ignore[no-untyped-def]
    """How many of ``rows[a:b]`` fall in each table row (int64, ``used`` entries; -1 skipped)."""
    counts = np.zeros(used, dtype=np.int64)
    for i in range(a, b):
        if rows[i] >= 0:
            counts[rows[i]] += 1
    return counts


@nb.njit(nogil=True, cache=CACHE, boundscheck=False)
def scatter_rows(rows, labels, keys, weights, weighted, fill, a, b, out_labels, out_keys, out_weights):  # type: ignore[no-untyped-def]
    """Move rows ``a .. b - 1`` (skipping -1) to ``out_*[fill[row]]``, advancing ``fill``:
    the placing pass of a stable counting sort whose ``fill`` holds each table row's next slot
    for this range (threads given consecutive ranges and their own ``fill`` write disjoint slots)."""
    for i in range(a, b):
        row = rows[i]
        if row < 0:
            continue
        at = fill[row]
        fill[row] = at + 1
        out_labels[at] = labels[i]
        out_keys[at] = keys[i]
        if weighted:
            out_weights[at] = weights[i]


def group_by_row(rows: np.ndarray, used: int, labels: np.ndarray, keys: np.ndarray, weights: np.ndarray,
                 weighted: bool, run: Callable[[Sequence[Callable[[], Any]]], list[Any]] | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kept rows' labels, keys and weights grouped by table row: a stable counting sort that
    moves the values as it places them (no separate gathers), over consecutive ranges of rows
    on threads when ``run`` (calls a list of callables, possibly at once) is given.

    Returns ``(starts, labels, keys, weights)``: the rows of table row ``j`` are
    ``starts[j] .. starts[j + 1] - 1`` (``starts`` has ``used + 1`` entries), in arrival order;
    rows skipped (``rows == -1``) are dropped; ``weights`` is empty when not ``weighted``.
    """
    n = rows.shape[0]
    parts = 1 if run is None else max(1, min(2, n // 1_000_000))  # 2: the scatter is memory-bound
    if run is None:
        def run(calls: Sequence[Callable[[], Any]]) -> list[Any]:
            return [c() for c in calls]
    cuts = [n * k // parts for k in range(parts + 1)]
    counts = run([partial(count_rows, rows, used, cuts[k], cuts[k + 1]) for k in range(parts)])
    total = np.sum(counts, axis=0) if parts > 1 else counts[0]
    starts = np.zeros(used + 1, dtype=np.int64)
    np.cumsum(total, out=starts[1:])
    kept = int(starts[used])
    out_labels = np.empty(kept, dtype=labels.dtype)
    out_keys = np.empty(kept, dtype=np.uint64)
    out_weights = np.empty(kept if weighted else 0, dtype=np.float64)
    fills, at = [], starts[:used].copy()
    for c in counts:  # range k's rows of a table row follow those of ranges 0..k-1: stable
        fills.append(at.copy())
        at += c
    run([partial(scatter_rows, rows, labels, keys, weights, weighted, fills[k], cuts[k], cuts[k + 1], out_labels,
                 out_keys, out_weights) for k in range(parts)])
    return starts, out_labels, out_keys, out_weights


@nb.njit(nogil=True, cache=CACHE, boundscheck=False, error_model="numpy")
def add_replicates(table, starts, labels, weights, weighted, keys, r0, r1, flush_rows=FLUSH_ROWS):  # type: ignore[no-untyped-def]
    """Add each row's Poisson weights for replicates ``r0 .. r1 - 1`` to ``table[row, class]``.

    The rows come grouped by table row (:func:`group_by_row`). Threads given disjoint replicate
    ranges write disjoint slices of the table. Unweighted rows are summed in int32 per (table
    row, class) and added once per table row (exact: whole numbers); weighted rows add
    ``w * k`` to the table one row at a time, in arrival order. ``flush_rows`` (at most
    :data:`FLUSH_ROWS`; smaller in tests) bounds the rows summed in int32 between additions.
    """
    m = r1 - r0
    blocks = (m + LANES - 1) // LANES
    width = blocks * LANES  # replicates past r1 are computed in the last block and dropped
    kbuf = np.zeros(width, dtype=np.int32)
    acc = np.zeros((2, width), dtype=np.int32)
    for row in range(starts.shape[0] - 1):
        a, b = starts[row], starts[row + 1]
        if weighted:
            for i in range(a, b):
                lo, hi = _split(keys[i])
                _row_weights(lo, hi, kbuf, r0, blocks)
                w = weights[i]
                cell = table[row, np.int64(labels[i])]
                for r in range(m):
                    cell[r0 + r] += w * kbuf[r]
            continue
        for part in range(a, b, flush_rows):
            seen = 0  # bit c: class c had rows (small chunks often touch one class of a bin)
            for i in range(part, min(part + flush_rows, b)):
                lo, hi = _split(keys[i])
                c = np.int64(labels[i])
                seen |= 1 << c
                acc_c = acc[c]
                for blk in range(blocks):
                    _add_poisson_lanes(acc_c, blk * LANES, lo, hi, r0 + blk * LANES)
            _flush(table, row, acc, r0, m, seen)


@nb.njit(inline="always", nogil=True)
def _flush(table, row, acc, r0, m, seen):  # type: ignore[no-untyped-def]
    for c in range(2):
        if not (seen >> c) & 1:
            continue
        cell = table[row, c]
        a = acc[c]
        for r in range(m):
            cell[r0 + r] += a[r]
        a[:] = 0


@nb.njit(inline="always", nogil=True)
def _poisson_weights_from(key, kbuf, thresholds, r0):  # type: ignore[no-untyped-def]
    """``kbuf[r] = `` replicate ``r0 + r``'s Poisson weight of ``key``, for every ``r`` of ``kbuf``.
    ``thresholds`` must be :data:`POISSON_THRESHOLDS` (kept for callers; the compiled weight
    has them as constants)."""
    lo, hi = _split(key)
    for r in range(kbuf.shape[0]):
        kbuf[r] = _poisson_weight(lo, hi, r0 + r)
