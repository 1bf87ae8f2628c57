"""Contracts every sketch must pass: chunking, merge algebra, inputs unchanged, round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sample_data import make_data

import streameval
from streameval import BinarySketch, FloatGrid, IncompatibleGridError, LinearGrid, ProbabilityGrid
from streameval.kernels.binary import MAX, MIN, SUM, W

GRIDS = [None, LinearGrid(0, 1, 50), FloatGrid(4, -6, 6), ProbabilityGrid(6, -12)]


def exact_parts_equal(a: BinarySketch, b: BinarySketch, sums_rtol: float = 1e-12) -> None:
    """Counts and min/max identical; float sums equal up to rounding."""
    ka, va = a._compact()
    kb, vb = b._compact()
    np.testing.assert_array_equal(ka, kb)
    np.testing.assert_array_equal(va[:, :, MIN], vb[:, :, MIN])
    np.testing.assert_array_equal(va[:, :, MAX], vb[:, :, MAX])
    np.testing.assert_allclose(va[:, :, W], vb[:, :, W], rtol=sums_rtol)
    np.testing.assert_allclose(va[:, :, SUM], vb[:, :, SUM], rtol=1e-9, atol=1e-12)
    for name in ("n_rows", "n_nan", "n_zero_weight", "n_outside"):
        assert a.counters[name] == b.counters[name]
    for name in ("prob_weight", "brier_sum", "log_loss_sum"):
        assert a.counters[name] == pytest.approx(b.counters[name], rel=1e-9, abs=1e-12)


def split_points(rng, n, k):
    return np.sort(rng.choice(np.arange(1, n), size=min(k, n - 1), replace=False))


@pytest.mark.parametrize("grid", GRIDS, ids=str)
@pytest.mark.parametrize("weighted", [False, True])
def test_chunking_gives_identical_sketch(grid, weighted, dist):
    y, s, w = make_data(dist, 3000, seed=1, weighted=weighted)
    whole = BinarySketch(grid).update(y, s, w)
    rng = np.random.default_rng(0)
    for k in (1, 7, 100):
        cuts = split_points(rng, len(y), k)
        parts = BinarySketch(grid)
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(y)], strict=False):
            parts.update(y[a:b], s[a:b], None if w is None else w[a:b])
        exact_parts_equal(whole, parts)
        if not weighted:  # integer counts: every bin-derived metric is identical, not just close
            assert whole.roc_auc() == parts.roc_auc()
            assert whole.average_precision() == parts.average_precision()
        np.testing.assert_array_equal(whole.roc_curve()[2], parts.roc_curve()[2])


@pytest.mark.parametrize("grid", GRIDS, ids=str)
def test_merge_algebra(grid):
    parts = []
    for seed in range(3):
        y, s, w = make_data("discrete" if seed else "continuous", 1000, seed=seed, weighted=True)
        parts.append(BinarySketch(grid).update(y, s, w))
    a, b, c = parts
    before = [p.to_bytes() for p in parts]
    exact_parts_equal(a.merge(b), b.merge(a))
    exact_parts_equal(a.merge(b).merge(c), a.merge(b.merge(c)))
    exact_parts_equal(streameval.merge([a, b, c]), a.merge(b).merge(c))
    empty = BinarySketch(grid)
    assert a.merge(empty) == a and empty.merge(a) == a
    assert a.copy() == a and a.copy() is not a
    assert [p.to_bytes() for p in parts] == before, "merge must not change its inputs"


def test_merge_equals_update_on_concatenation():
    y, s, w = make_data("continuous", 4000, seed=3, weighted=True)
    whole = BinarySketch().update(y, s, w)
    halves = BinarySketch().update(y[:1500], s[:1500], w[:1500]).merge(
        BinarySketch().update(y[1500:], s[1500:], w[1500:])
    )
    exact_parts_equal(whole, halves)
    assert halves.roc_auc().lower == pytest.approx(whole.roc_auc().lower, abs=1e-12)


def test_merge_rejects_different_grids_naming_both():
    a = BinarySketch(LinearGrid(0, 1, 10)).update([0, 1], [0.2, 0.8])
    b = BinarySketch(ProbabilityGrid()).update([0, 1], [0.2, 0.8])
    with pytest.raises(IncompatibleGridError, match=r"linear:0.0:1.0:10.*probability:12"):
        a.merge(b)
    with pytest.raises(ValueError):
        streameval.merge([])


def test_update_after_read_and_after_load_continues_exactly():
    y, s, _ = make_data("continuous", 2000, seed=9)
    whole = BinarySketch().update(y, s)
    sk = BinarySketch().update(y[:1000], s[:1000])
    sk.roc_auc()  # compacts
    sk = BinarySketch.from_bytes(sk.to_bytes())
    sk.update(y[1000:], s[1000:])
    exact_parts_equal(whole, sk)


def test_round_trip_bit_for_bit():
    y, s, w = make_data("wide", 3000, seed=2, weighted=True)
    sk = BinarySketch(FloatGrid()).update(y, s, w)
    again = BinarySketch.from_bytes(sk.to_bytes())
    assert again == sk and again.to_bytes() == sk.to_bytes()
    assert again.roc_auc() == sk.roc_auc()


@given(st.lists(st.tuples(st.integers(0, 1), st.floats(-2, 2)), min_size=1, max_size=80), st.integers(1, 5))
@settings(max_examples=200, deadline=None)
def test_property_chunking_and_merge(rows, k):
    y = np.array([r[0] for r in rows], dtype=np.int8)
    s = np.array([r[1] for r in rows])
    whole = BinarySketch(LinearGrid(-1, 1, 8)).update(y, s)
    chunks = np.array_split(np.arange(len(y)), k)
    sketches = [BinarySketch(LinearGrid(-1, 1, 8)).update(y[c], s[c]) for c in chunks]
    merged = streameval.merge(sketches[::-1])
    exact_parts_equal(whole, merged)


def test_nan_skip_counts_and_excludes():
    s = np.array([0.1, np.nan, 0.7, np.nan])
    y = np.array([0, 1, 1, 0])
    sk = BinarySketch().update(y, s, nan_policy="skip")
    assert sk.counters["n_nan"] == 2 and sk.n_rows == 4
    assert sk.positive_weight == 1 and sk.negative_weight == 1


def test_memory_of_compact_sketch_is_small():
    y, s, _ = make_data("continuous", 20000, seed=0)
    sk = BinarySketch().update(y, s)
    sk.roc_auc()
    assert sk._dense is None
    assert sk._values.nbytes <= 64 * sk.n_occupied_bins


def test_cut_grid_sketch_round_trips_and_refuses_other_cuts():
    y, s, _ = make_data("continuous", 2000, seed=5)
    grid = ProbabilityGrid().with_cuts(0.3, 0.8)
    sk = BinarySketch(grid).update(y, s)
    again = BinarySketch.from_bytes(sk.to_bytes())
    assert again == sk and again.grid == grid
    with pytest.raises(IncompatibleGridError, match="cuts at 0.3, 0.8"):
        sk.merge(BinarySketch(ProbabilityGrid().with_cuts(0.3)).update(y, s))


@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_update_equals_single_thread(monkeypatch, threads):
    import streameval.sketch.binary as sketch_mod

    monkeypatch.setattr(sketch_mod, "MIN_ROWS_PER_THREAD", 100)
    monkeypatch.setattr(sketch_mod, "SMALL_CHUNK_ROWS", 0)
    y, s, w = make_data("wide", 5000, seed=8, weighted=True)
    s[::97] = np.nan
    one = BinarySketch(threads=1).update(y, s, w, nan_policy="skip")
    many = BinarySketch(threads=threads)
    many.update(y[:2000], s[:2000], w[:2000], nan_policy="skip")
    assert len(many._aux) == threads - 1
    many.update(y[2000:], s[2000:], w[2000:], nan_policy="skip")
    exact_parts_equal(one, many)
    assert many._aux == []  # merged into the main state when read


COARSENINGS = [
    (ProbabilityGrid(12), ProbabilityGrid(9)),
    (ProbabilityGrid(5, -9), ProbabilityGrid(0, -9)),
    (LinearGrid(0, 1, 64), LinearGrid(0, 1, 8)),
    (LinearGrid(-3, 5, 1000), LinearGrid(-3, 5, 125)),
    (FloatGrid(10), FloatGrid(7)),
    (FloatGrid(3, -4, 4), FloatGrid(1, -4, 4)),
]


@pytest.mark.parametrize("fine, coarse", COARSENINGS, ids=lambda g: g.describe())
def test_coarsen_equals_binning_on_the_coarse_grid(fine, coarse):
    from streameval.grid import coarsening_map

    rng = np.random.default_rng(4)
    s = np.concatenate([
        rng.random(3000), rng.normal(0, 3, 3000), 1 - rng.random(500) * 1e-6, rng.random(500) * 1e-7,
        [0.0, -0.0, 0.5, 1.0, -1.0, 2.0, 5.0, -3.0, 4.999, 1e300, -1e300],  # infinite scores are refused
    ])
    y = (rng.random(s.size) < 0.4).astype(np.int8)
    # the key map agrees with binning on the coarse grid, score by score
    np.testing.assert_array_equal(coarsening_map(fine, coarse)(fine.bin_index(s)), coarse.bin_index(s))
    direct = BinarySketch(coarse).update(y, s)
    exact_parts_equal(BinarySketch(fine).update(y, s).coarsen(coarse), direct)
    # merging a fine and a coarse sketch lands on the coarse grid, in either order
    a = BinarySketch(fine).update(y[:4000], s[:4000])
    b = BinarySketch(coarse).update(y[4000:], s[4000:])
    for merged in (a.merge(b), b.merge(a), streameval.merge([a, b, BinarySketch(fine)])):
        assert merged.grid == coarse
        exact_parts_equal(merged, direct)


def test_not_a_coarsening():
    from streameval.grid import coarsening_map

    assert coarsening_map(ProbabilityGrid(9), ProbabilityGrid(12)) is None  # finer, not coarser
    assert coarsening_map(ProbabilityGrid(12, -30), ProbabilityGrid(9, -20)) is None
    assert coarsening_map(LinearGrid(0, 1, 64), LinearGrid(0, 1, 24)) is None
    assert coarsening_map(LinearGrid(0, 1, 64), LinearGrid(0, 2, 32)) is None
    assert coarsening_map(FloatGrid(10, -20, 20), FloatGrid(8, -10, 20)) is None
    assert coarsening_map(ProbabilityGrid().with_cuts(0.5), ProbabilityGrid(9).with_cuts(0.5)) is None
    sk = BinarySketch(ProbabilityGrid(9)).update([0, 1], [0.2, 0.7])
    with pytest.raises(IncompatibleGridError, match="coarsening"):
        sk.coarsen(ProbabilityGrid(12))
    with pytest.raises(IncompatibleGridError, match="neither"):
        sk.merge(BinarySketch(ProbabilityGrid(10, -12)).update([0, 1], [0.2, 0.7]))


@pytest.mark.parametrize("grid", GRIDS, ids=str)
def test_small_chunk_path_equals_dense_path(monkeypatch, grid, dist):
    import streameval.sketch.binary as sketch_mod

    y, s, w = make_data(dist, 4000, seed=12, weighted=True)
    s[::51] = np.nan
    w[::37] = 0.0

    def build(small_rows):
        monkeypatch.setattr(sketch_mod, "SMALL_CHUNK_ROWS", small_rows)
        sk = BinarySketch(grid)
        for a in range(0, 4000, 700):
            sk.update(y[a:a + 700], s[a:a + 700], w[a:a + 700], nan_policy="skip")
            sk.roc_auc()  # read between chunks: the sketch goes back to compact form
        return sk

    small, dense = build(1 << 20), build(0)
    assert small._dense is None and small.n_occupied_bins > 0
    exact_parts_equal(small, dense)
    assert small.counters["n_nan"] == dense.counters["n_nan"] > 0
