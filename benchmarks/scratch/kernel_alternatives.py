"""Scratch study: alternatives to streameval.kernels.binary.update_state, measured side by side.

    python benchmarks/scratch/kernel_alternatives.py [--rows 10M] [--rounds 5]

10M rows in memory, mid distribution in random order, float32 scores, int8 labels, default
ProbabilityGrid. Every variant runs once per round, rounds interleaved; medians reported.
Not part of the suite and not a test: a record of why the kernel looks the way it does.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import synth  # noqa: E402

import streameval  # noqa: E402
from streameval import kernels  # noqa: E402
from streameval.kernels.binary import _bits, bin_of  # noqa: E402

LO = kernels.LOG_LOSS_EPS
HI = 1.0 - LO
LN2 = math.log(2.0)
SQRT2 = math.sqrt(2.0)


# ---- (b) fused kernel without the probability sums -------------------------------------------
@nb.njit(nogil=True, boundscheck=False)
def k_nosums(state, kind, f0, f1, f2, i0, i1, i2, scores, labels):
    n_nan = 0
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        if s != s:
            n_nan += 1
            continue
        c = np.int64(labels[i])
        cell = state[bin_of(kind, f0, f1, f2, i0, i1, i2, s), c]
        cell[0] += 1.0
        if s < cell[1]:
            cell[1] = s
        if s > cell[2]:
            cell[2] = s
        cell[3] += s
    return n_nan


# ---- polynomial log (vectorizable: no calls, no branches) --------------------------------------
@nb.njit(inline="always", fastmath=True)
def plog(x):
    """log(x) for normal x > 0 to ~1 ulp-ish: exponent split, mantissa in [sqrt(.5), sqrt(2)), atanh series."""
    b = _bits(x)
    e = (b >> 52) - 1023
    m_bits = (b & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000
    m = _f64(m_bits)
    big = m > SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    t = (m - 1.0) / (m + 1.0)
    t2 = t * t
    p = 1.0 / 23.0
    p = p * t2 + 1.0 / 21.0
    p = p * t2 + 1.0 / 19.0
    p = p * t2 + 1.0 / 17.0
    p = p * t2 + 1.0 / 15.0
    p = p * t2 + 1.0 / 13.0
    p = p * t2 + 1.0 / 11.0
    p = p * t2 + 1.0 / 9.0
    p = p * t2 + 1.0 / 7.0
    p = p * t2 + 1.0 / 5.0
    p = p * t2 + 1.0 / 3.0
    p = p * t2 + 1.0
    return e * LN2 + 2.0 * t * p


from numba import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402


@intrinsic
def _f64(typingctx, x):  # type: ignore[no-untyped-def]
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return sig, codegen


@nb.njit(nogil=True, fastmath=True, boundscheck=False)
def sums_poly(scores, labels):
    """Brier and log-loss sums in one vectorizable pass (scores in [0, 1] assumed checked)."""
    brier = 0.0
    ll = 0.0
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        c = labels[i]
        p = s if c == 1 else 1.0 - s
        p = min(max(p, LO), HI)
        d = 1.0 - p
        brier += d * d
        ll -= plog(p)
    return brier, ll


@nb.njit(nogil=True, boundscheck=False)
def sums_mathlog(scores, labels):
    brier = 0.0
    ll = 0.0
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        c = labels[i]
        p = s if c == 1 else 1.0 - s
        p = min(max(p, LO), HI)
        d = 1.0 - p
        brier += d * d
        ll -= math.log(p)
    return brier, ll


def sums_numpy(scores, labels):
    s = scores.astype(np.float64)
    p = np.where(labels == 1, s, 1.0 - s)
    np.clip(p, LO, HI, out=p)
    d = 1.0 - p
    return float(d @ d), float(-np.log(p).sum())


# ---- (c3) fused kernel with the polynomial log ------------------------------------------------
@nb.njit(nogil=True, boundscheck=False)
def k_fused_poly(state, kind, f0, f1, f2, i0, i1, i2, scores, labels):
    brier = 0.0
    ll = 0.0
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        if s != s:
            continue
        c = np.int64(labels[i])
        cell = state[bin_of(kind, f0, f1, f2, i0, i1, i2, s), c]
        cell[0] += 1.0
        if s < cell[1]:
            cell[1] = s
        if s > cell[2]:
            cell[2] = s
        cell[3] += s
        if 0.0 <= s <= 1.0:
            p = s if c == 1 else 1.0 - s
            p = min(max(p, LO), HI)
            d = 1.0 - p
            brier += d * d
            ll -= plog(p)
    return brier, ll


# ---- (d) two-pass per block: vectorizable keys (+ sums), then scatter ---------------------------
@nb.njit(nogil=True, fastmath=True, boundscheck=False)
def keys_prob(scores, out, i0, i1, i2):
    """Branch-free ProbabilityGrid keys for a block (same formula as grid.bin_index)."""
    top = 2 + 2 * i2
    for i in range(scores.shape[0]):
        s = np.float64(scores[i])
        low = s < 0.5
        q = s if low else 1.0 - s
        k = (_bits(q) >> (52 - i0)) - i1
        k = max(k, 0)
        idx = 1 + k if low else 1 + 2 * i2 - k
        idx = 0 if s < 0.0 else idx
        idx = top if s > 1.0 else idx
        out[i] = idx


@nb.njit(nogil=True, boundscheck=False)
def scatter(state, keys, scores, labels):
    for i in range(keys.shape[0]):
        s = np.float64(scores[i])
        cell = state[keys[i], np.int64(labels[i])]
        cell[0] += 1.0
        if s < cell[1]:
            cell[1] = s
        if s > cell[2]:
            cell[2] = s
        cell[3] += s


@nb.njit(nogil=True, boundscheck=False)
def k_twopass(state, i0, i1, i2, scores, labels, block):
    buf = np.empty(block, dtype=np.int32)
    n = scores.shape[0]
    brier = 0.0
    ll = 0.0
    for start in range(0, n, block):
        stop = min(start + block, n)
        sc = scores[start:stop]
        lb = labels[start:stop]
        kb = buf[: stop - start]
        keys_prob(sc, kb, i0, i1, i2)
        scatter(state, kb, sc, lb)
        b, l_ = sums_poly(sc, lb)
        brier += b
        ll += l_
    return brier, ll


@nb.njit(nogil=True, boundscheck=False)
def k_twopass_nosums(state, i0, i1, i2, scores, labels, block):
    buf = np.empty(block, dtype=np.int32)
    n = scores.shape[0]
    for start in range(0, n, block):
        stop = min(start + block, n)
        kb = buf[: stop - start]
        keys_prob(scores[start:stop], kb, i0, i1, i2)
        scatter(state, kb, scores[start:stop], labels[start:stop])
    return 0


# ---- (e) smaller hot state ---------------------------------------------------------------------
@nb.njit(nogil=True, boundscheck=False)
def k_split_state(wsum, mm32, kind, f0, f1, f2, i0, i1, i2, scores, labels):
    """wsum (n_bins, 4) f64 = [w0, w1, sum0, sum1] (32 B/bin); mm32 (n_bins, 4) f32 = [min0, max0, min1, max1] (16 B/bin)."""
    for i in range(scores.shape[0]):
        s32 = scores[i]
        s = np.float64(s32)
        if s != s:
            continue
        c = np.int64(labels[i])
        b = bin_of(kind, f0, f1, f2, i0, i1, i2, s)
        wsum[b, c] += 1.0
        wsum[b, 2 + c] += s
        if s32 < mm32[b, 2 * c]:
            mm32[b, 2 * c] = s32
        if s32 > mm32[b, 2 * c + 1]:
            mm32[b, 2 * c + 1] = s32
    return 0


@nb.njit(nogil=True, boundscheck=False)
def k_counts_minmax32(cnt, mm32, kind, f0, f1, f2, i0, i1, i2, scores, labels):
    """Smallest state: uint32 counts (n_bins, 2) (8 B/bin) + f32 min/max (16 B/bin); no score sum."""
    for i in range(scores.shape[0]):
        s32 = scores[i]
        s = np.float64(s32)
        if s != s:
            continue
        c = np.int64(labels[i])
        b = bin_of(kind, f0, f1, f2, i0, i1, i2, s)
        cnt[b, c] += 1
        if s32 < mm32[b, 2 * c]:
            mm32[b, 2 * c] = s32
        if s32 > mm32[b, 2 * c + 1]:
            mm32[b, 2 * c + 1] = s32
    return 0


def empty_mm32(n_bins):
    mm = np.empty((n_bins, 4), dtype=np.float32)
    mm[:, 0::2] = np.inf
    mm[:, 1::2] = -np.inf
    return mm


# ---- (g) NumPy only ----------------------------------------------------------------------------
def numpy_bincount(grid, scores, labels, n_bins, with_minmax):
    keys = grid.bin_index(scores)  # int64, float64 internally
    cell = keys * 2 + labels
    cnt = np.bincount(cell, minlength=2 * n_bins)
    sums = np.bincount(cell, weights=scores, minlength=2 * n_bins)
    if with_minmax:
        mn = np.full(2 * n_bins, np.inf)
        mx = np.full(2 * n_bins, -np.inf)
        np.minimum.at(mn, cell, scores)
        np.maximum.at(mx, cell, scores)
    return cnt, sums


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="10M")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    n = int(float(args.rows.rstrip("M")) * 1e6) if args.rows.endswith("M") else int(args.rows)
    y, s = synth.arrays("mid", n, np.float32)
    u = y.view(np.uint8)
    grid = streameval.DEFAULT_GRID
    prm = grid.kernel_params()
    kind, f0, f1, f2, i0, i1, i2 = prm
    nb_ = grid.n_bins
    w0 = np.empty(0)

    st = kernels.empty_state(nb_)
    wsum = np.zeros((nb_, 4))
    mm = empty_mm32(nb_)
    cnt = np.zeros((nb_, 2), dtype=np.uint32)

    # accuracy of the polynomial log, and the sums' agreement
    xs = np.random.default_rng(1).random(1_000_000) * 0.999 + 1e-9
    pl = np.array([plog_scalar(x) for x in xs[:2000]])
    rel = np.max(np.abs(pl - np.log(xs[:2000])) / np.abs(np.log(xs[:2000])))
    bm, lm = sums_mathlog(s, u)
    bp, lp = sums_poly(s, u)
    bn, ln_ = sums_numpy(s, u)
    print(f"poly log max rel err (2000 pts) {rel:.2e}; log-loss sum rel diff poly {abs(lp - lm) / lm:.2e}, "
          f"numpy {abs(ln_ - lm) / lm:.2e}")

    def two_threads(fn_state):
        half = n // 2
        states = [kernels.empty_state(nb_) for _ in range(2)]
        with ThreadPoolExecutor(2) as ex:
            list(ex.map(lambda k: kernels.update_state(states[k], *prm, s[k * half:(k + 1) * half],
                                                       u[k * half:(k + 1) * half], w0, False), range(2)))
        return states

    pool = ThreadPoolExecutor(2)
    tstates = [kernels.empty_state(nb_), kernels.empty_state(nb_)]

    def threads(k, fn):
        step = (n + k - 1) // k
        futs = [pool.submit(fn, tstates[j], s[j * step:(j + 1) * step], u[j * step:(j + 1) * step]) for j in range(k)]
        return [f.result() for f in futs]

    def merge_dense():
        a, b = tstates
        out = a.copy()
        out[..., 0] += b[..., 0]
        out[..., 3] += b[..., 3]
        np.minimum(out[..., 1], b[..., 1], out=out[..., 1])
        np.maximum(out[..., 2], b[..., 2], out=out[..., 2])
        return out

    cur = lambda stt, sc, lb: kernels.update_state(stt, *prm, sc, lb, w0, False)  # noqa: E731
    nos = lambda stt, sc, lb: k_nosums(stt, *prm, sc, lb)  # noqa: E731

    variants = {
        "a  current fused kernel (math.log per row)": lambda: kernels.update_state(st, *prm, s, u, w0, False),
        "b  fused, no brier/log-loss sums": lambda: k_nosums(st, *prm, s, u),
        "c0 sums alone: scalar math.log loop": lambda: sums_mathlog(s, u),
        "c1 sums alone: NumPy vectorized pass": lambda: sums_numpy(s, u),
        "c2 sums alone: Numba fastmath polynomial log": lambda: sums_poly(s, u),
        "c3 fused with polynomial log": lambda: k_fused_poly(st, *prm, s, u),
        "c4 b + separate polynomial-log pass": lambda: (k_nosums(st, *prm, s, u), sums_poly(s, u)),
        "c5 b + separate NumPy pass": lambda: (k_nosums(st, *prm, s, u), sums_numpy(s, u)),
        "d1 two-pass 16K blocks (keys, scatter), no sums": lambda: k_twopass_nosums(st, i0, i1, i2, s, u, 16384),
        "d2 two-pass 16K blocks + poly-log sums per block": lambda: k_twopass(st, i0, i1, i2, s, u, 16384),
        "d3 keys pass alone (vectorized, int32)": lambda: keys_prob(s, np.empty(n, np.int32), i0, i1, i2),
        "e1 split state: f64 [w,sum] 32 B + f32 min/max 16 B": lambda: k_split_state(wsum, mm, *prm, s, u),
        "e2 u32 counts 8 B + f32 min/max 16 B (no score sum)": lambda: k_counts_minmax32(cnt, mm, *prm, s, u),
        "f1 current kernel, 1 thread (via pool)": lambda: threads(1, cur),
        "f2 current kernel, 2 threads + dense merge": lambda: (threads(2, cur), merge_dense()),
        "f3 no-sums kernel, 1 thread (via pool)": lambda: threads(1, nos),
        "f4 no-sums kernel, 2 threads + dense merge": lambda: (threads(2, nos), merge_dense()),
        "f5 dense merge of two states alone": merge_dense,
        "g1 NumPy: bin_index + 2x bincount (no min/max)": lambda: numpy_bincount(grid, s, u, nb_, False),
        "g2 NumPy: + np.minimum.at/np.maximum.at": lambda: numpy_bincount(grid, s, u, nb_, True),
        "g3 NumPy: grid.bin_index alone": lambda: grid.bin_index(s),
    }
    if args.only:
        variants = {k: v for k, v in variants.items() if any(k.startswith(o) for o in args.only.split(","))}
    for fn in variants.values():  # compile / warm
        fn()
    times = {k: [] for k in variants}
    for r in range(args.rounds):
        for k, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    base = statistics.median(times[next(iter(times))])
    print(f"\n{n:,} rows, float32 scores, int8 labels, mid distribution (random order), "
          f"{args.rounds} interleaved rounds, medians; occupied bins "
          f"{int(((st[:, 0, 0] > 0) | (st[:, 1, 0] > 0)).sum()):,} of {nb_:,}\n")
    print("| variant | ms | M rows/s | vs (a) |")
    print("|---|---:|---:|---:|")
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"| {k} | {m * 1e3:.1f} | {n / m / 1e6:.0f} | {base / m:.2f}x |")


@nb.njit
def plog_scalar(x):
    return plog(x)


if __name__ == "__main__":
    main()
