"""Where the binning kernel's time goes, pass by pass, on this machine (scratch, not in the suite).

    python benchmarks/scratch/kernel_limit.py [--rows 10M] [--reps 7]

10M mid rows in memory (float32 scores, uint8 labels, random order), one thread. Each variant is
timed by the calling thread's CPU time (``time.thread_time``) and the minimum of ``--reps``
interleaved runs is reported, so other jobs on the machine inflate the figures less than wall
time would (they still share the L3 cache and memory bandwidth).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numba as nb
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import synth  # noqa: E402

from streameval import DEFAULT_GRID, LinearGrid  # noqa: E402
from streameval.kernels import binary as k  # noqa: E402


# Scatter variants on the kernel's own key computation (no probability sums), to price each part
# of the per-row update. Same 64-byte cells, same blocking and prefetch as update_state.
@nb.njit(nogil=True, boundscheck=False, error_model="numpy")
def _scatter(state, kind, f0, f1, f2, i0, i1, i2, cuts, scores, labels, mode):  # type: ignore[no-untyped-def]
    n = scores.shape[0]
    keys = np.empty(k.BLOCK + k.PREFETCH_DISTANCE, dtype=np.int64)
    flat = state.reshape(-1)
    for start in range(0, n, k.BLOCK):
        end = min(start + k.BLOCK, n)
        m = end - start
        sc = scores[start:end]
        lb = labels[start:end]
        k._block_keys(kind, f0, f1, f2, i0, i1, i2, cuts, sc, keys)
        for j in range(m):
            keys[j] = keys[j] * 8 + np.int64(lb[j]) * 4
        for j in range(m, m + k.PREFETCH_DISTANCE):
            keys[j] = keys[m - 1]
        if mode == 0:  # keys only
            continue
        for j in range(m):
            k.prefetch(flat, keys[j + k.PREFETCH_DISTANCE])
            s = np.float64(sc[j])
            c = keys[j]
            if mode == 1:  # count and score sum only
                flat[c] += 1.0
                flat[c + 3] += s
            elif mode == 2:  # + min/max with branches, as update_state (fresh-cell check included)
                fresh = flat[c] == 0.0
                flat[c] += 1.0
                if s < flat[c + 1] or fresh:
                    flat[c + 1] = s
                if s > flat[c + 2] or fresh:
                    flat[c + 2] = s
                flat[c + 3] += s
            else:  # + min/max branch-free (always stored)
                fresh = flat[c] == 0.0
                flat[c] += 1.0
                lo = flat[c + 1]
                hi = flat[c + 2]
                flat[c + 1] = s if (s < lo) | fresh else lo
                flat[c + 2] = s if (s > hi) | fresh else hi
                flat[c + 3] += s
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="10M")
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    n = int(float(a.rows.rstrip("M")) * 1e6) if a.rows.endswith("M") else int(a.rows)
    y, s = synth.arrays("mid", n)
    labels = y.view(np.uint8)
    order = np.argsort(s, kind="stable")
    s_sorted, l_sorted = s[order], labels[order]
    e = np.empty(0)
    fine, small = DEFAULT_GRID, LinearGrid(0.0, 1.0, 1024)
    keys = np.empty(n, dtype=np.int64)
    states = {g: k.empty_state(g.n_bins) for g in (fine, small)}

    def read_only() -> None:  # the floor: stream the two columns once
        float(s.sum(dtype=np.float64))
        int(labels.sum(dtype=np.int64))

    variants = {
        "stream the columns (np.sum)": read_only,
        "keys only (bin_indices, default grid)": lambda: k.bin_indices(*fine.kernel_params(), s, keys),
        "probability sums only": lambda: k.probability_sums(s, labels, e, False),
        "update_state, default grid (333,825 bins, 21 MB)": lambda: k.update_state(
            states[fine], *fine.kernel_params(), s, labels, e, False),
        "update_state, default grid, rows sorted by score": lambda: k.update_state(
            states[fine], *fine.kernel_params(), s_sorted, l_sorted, e, False),
        "update_state, 1,024 linear bins (64 KB state)": lambda: k.update_state(
            states[small], *small.kernel_params(), s, labels, e, False),
    }
    fp = fine.kernel_params()
    scratch = k.empty_state(fine.n_bins)
    for mode, what in ((0, "keys in blocks, no scatter"), (1, "keys + scatter of count and sum"),
                       (2, "keys + scatter with min/max (branches, as update_state)"),
                       (3, "keys + scatter with min/max (branch-free selects)")):
        variants[f"{what}, default grid"] = (lambda mode=mode: _scatter(scratch, *fp, s, labels, mode))
    for fn in variants.values():  # load the kernels
        fn()
    best = {name: float("inf") for name in variants}
    for _ in range(a.reps):
        for name, fn in variants.items():
            t0 = time.thread_time()
            fn()
            best[name] = min(best[name], time.thread_time() - t0)
    print(f"{n:,} rows, min CPU time of {a.reps} runs, one thread")
    print("| pass | ms | ns/row | M rows/s |\n|---|---:|---:|---:|")
    for name, t in best.items():
        print(f"| {name} | {t * 1e3:.1f} | {t / n * 1e9:.2f} | {n / t / 1e6:.0f} |")


if __name__ == "__main__":
    main()
