"""The compiled replicate update (streameval.kernels.bootstrap) against a NumPy reading of the
weight spec: every replicate range, padded lane block, flush interval, weighting and thread split."""

from __future__ import annotations

import math

import numpy as np
import pytest

import streameval
from streameval.kernels import bootstrap as kb


def _spec_weights(keys: np.ndarray, r0: int, r1: int) -> np.ndarray:
    """``(n, r1 - r0)`` Poisson weights of 64-bit row keys, by docs/sketch-format.md §10 in
    NumPy uint32 arithmetic (wraps modulo 2**32), thresholds recomputed from the Poisson CDF."""
    lo = (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32)[:, None]
    hi = (keys >> np.uint64(32)).astype(np.uint32)[:, None]
    r = np.arange(r0, r1, dtype=np.uint32)[None, :]
    with np.errstate(over="ignore"):
        h = lo ^ (hi + r * np.uint32(0x9E3779B9))
        h = (h ^ (h >> np.uint32(16))) * np.uint32(0x85EBCA6B)
        h = (h ^ (h >> np.uint32(13))) * np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    cdf = np.cumsum([math.exp(-1) / math.factorial(j) for j in range(12)])
    thresholds = np.minimum(np.round(cdf * 2.0**32), 2.0**32 - 1).astype(np.uint64)
    return (h.astype(np.uint64)[:, :, None] >= thresholds[None, None, :]).sum(axis=2)


def _chunk(n: int, used: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    rows = rng.integers(-1, used, n)  # -1: a skipped row (NaN score or zero weight)
    labels = rng.integers(0, 2, n).astype(np.int8)
    keys = rng.integers(0, 2**64, n, dtype=np.uint64)
    weights = rng.random(n) * 3
    return rows, labels, keys, weights


def _reference(rows: np.ndarray, labels: np.ndarray, keys: np.ndarray, weights: np.ndarray | None,
               used: int, R: int) -> np.ndarray:
    k = _spec_weights(keys, 0, R).astype(np.float64)
    if weights is not None:
        k *= weights[:, None]
    table = np.zeros((used, 2, R))
    keep = rows >= 0
    np.add.at(table, (rows[keep], labels[keep].astype(np.int64)), k[keep])
    return table


def test_poisson_weights_match_the_spec_and_the_tail() -> None:
    keys = np.random.default_rng(3).integers(0, 2**64, 20_000, dtype=np.uint64)
    kbuf = np.empty(37, dtype=np.int32)
    got = np.empty((keys.size, 37), dtype=np.int64)
    ref = _spec_weights(keys, 5, 42)
    for i in range(0, keys.size, 97):  # the scalar helper the multiclass kernel calls
        kb._poisson_weights_from(keys[i], kbuf, kb.POISSON_THRESHOLDS, 5)
        got[i] = kbuf
    assert np.array_equal(got[::97], ref[::97])
    # k reaches beyond 4 somewhere, so the high thresholds are exercised
    assert ref.max() >= 5 and set(np.unique(ref)) <= set(range(13))


@pytest.mark.parametrize("R", [2, 8, 13, 100])
@pytest.mark.parametrize("flush_rows", [1, 3, kb.FLUSH_ROWS])
def test_add_replicates_equals_the_spec_in_any_range_split(R: int, flush_rows: int) -> None:
    used, n = 37, 3000
    rows, labels, keys, _ = _chunk(n, used, R)
    starts, gl, gk, gw = kb.group_by_row(rows, used, labels, keys, np.empty(0), False)
    assert starts[-1] == np.count_nonzero(rows >= 0) and gw.size == 0
    expected = _reference(rows, labels, keys, None, used, R)
    for parts in (1, 2, 3):
        cuts = kb.replicate_cuts(R, parts)
        assert cuts[0] == 0 and cuts[-1] == R and np.all(np.diff(cuts) >= 0)
        assert np.all((cuts[:-1] % kb.LANES == 0) | (cuts[:-1] == R))
        table = np.zeros((used, 2, R))
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            kb.add_replicates(table, starts, gl, gw, False, gk, int(a), int(b), flush_rows)
        assert np.array_equal(table, expected), parts


def test_rare_high_weights_take_the_vector_tail_path() -> None:
    """One row per table row, so every cell is one weight: the blocks where a lane reaches
    k >= 5 (tested only then) agree with the spec too."""
    n, R = 5000, 64
    rows = np.arange(n)
    labels = np.zeros(n, dtype=np.int8)
    keys = np.random.default_rng(5).integers(0, 2**64, n, dtype=np.uint64)
    starts, gl, gk, gw = kb.group_by_row(rows, n, labels, keys, np.empty(0), False)
    table = np.zeros((n, 2, R))
    kb.add_replicates(table, starts, gl, gw, False, gk, 0, R)
    expected = _spec_weights(keys, 0, R)
    assert np.array_equal(table[:, 0], expected) and not table[:, 1].any()
    assert np.count_nonzero(expected >= 5) > 100 and expected.max() >= 7


def test_add_replicates_weighted_adds_in_arrival_order() -> None:
    used, n, R = 11, 2000, 21
    rows, labels, keys, weights = _chunk(n, used, 7)
    starts, gl, gk, gw = kb.group_by_row(rows, used, labels, keys, weights, True)
    table = np.full((used, 2, R), 0.25)  # a table that already holds weight
    kb.add_replicates(table, starts, gl, gw, True, gk, 0, 16)
    kb.add_replicates(table, starts, gl, gw, True, gk, 16, R)
    # reference: the same additions one row at a time, in arrival order (bit-identical sums)
    ref = np.full((used, 2, R), 0.25)
    k = _spec_weights(keys, 0, R)
    for i in np.flatnonzero(rows >= 0):
        ref[rows[i], labels[i]] += weights[i] * k[i]
    assert np.array_equal(table, ref)


def test_group_by_row_is_stable_and_drops_skipped_rows() -> None:
    rows = np.array([2, -1, 0, 2, 1, -1, 0, 2])
    labels = np.arange(8, dtype=np.int8)
    keys = np.arange(8, dtype=np.uint64) * np.uint64(10)
    weights = np.arange(8) + 0.5
    starts, gl, gk, gw = kb.group_by_row(rows, 4, labels, keys, weights, True)
    assert starts.tolist() == [0, 2, 3, 6, 6]
    assert gl.tolist() == [2, 6, 4, 0, 3, 7]
    assert gk.tolist() == [20, 60, 40, 0, 30, 70] and gw.tolist() == [2.5, 6.5, 4.5, 0.5, 3.5, 7.5]


@pytest.mark.parametrize("weighted", [False, True])
def test_group_by_row_in_two_ranges_equals_one_stable_sort(weighted: bool) -> None:
    n, used = 2_100_000, 997  # two ranges from 2M rows on
    rows, labels, keys, weights = _chunk(n, used, 9)
    calls: list[int] = []

    def run(fns):  # type: ignore[no-untyped-def]
        calls.append(len(fns))
        return [f() for f in reversed(fns)][::-1]  # in any order

    starts, gl, gk, gw = kb.group_by_row(rows, used, labels, keys, weights, weighted, run)
    assert calls == [2, 2]
    keep = np.flatnonzero(rows >= 0)
    order = keep[np.argsort(rows[keep], kind="stable")]
    assert np.array_equal(starts, np.r_[0, np.cumsum(np.bincount(rows[keep], minlength=used))])
    assert np.array_equal(gl, labels[order]) and np.array_equal(gk, keys[order])
    assert np.array_equal(gw, weights[order]) if weighted else gw.size == 0


@pytest.mark.parametrize("weighted", [False, True])
def test_sketch_replicates_do_not_depend_on_threads(weighted: bool) -> None:
    n = 60_000  # enough rows for three threads
    rng = np.random.default_rng(11)
    y = (rng.random(n) < 0.3).astype(int)
    p = rng.random(n)
    w = rng.random(n) if weighted else None
    ids = rng.permutation(n) * 3
    out = []
    for threads in (1, 2, 3):
        s = streameval.BinarySketch(bootstrap=29, seed=4, threads=threads).update(y, p, sample_weight=w, row_id=ids)
        out.append(s.replicates.compact())
    for keys, weights in out[1:]:
        assert np.array_equal(keys, out[0][0]) and np.array_equal(weights, out[0][1])
    # and they are the spec's weights: per replicate, the total over bins is sum_i w_i k_ir
    k = _spec_weights(streameval.sketch.bootstrap.row_keys(ids, n, 4, 0), 0, 29)
    ref = (k * (w[:, None] if weighted else 1.0)).sum(axis=0)
    assert np.allclose(out[0][1].sum(axis=(0, 1)), ref, rtol=1e-12, atol=0)
