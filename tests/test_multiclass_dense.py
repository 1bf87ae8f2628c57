"""The dense one-pass kernel of MulticlassSketch (kernels/multiclass_dense.py) against a pandas group-by.

Chunks above the small-chunk size go through the writing state; these tests check its cells,
one cell per (column, bin, class) and per (true class, column, pair bin), against a reference
that bins every score with the grid's NumPy formula and aggregates with pandas, and check that
thread count, memory order, chunking and a compact/dense round trip leave the cells unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import streameval.sketch.multiclass_state as ms
from streameval import MulticlassSketch, ProbabilityGrid
from streameval.kernels.binary import SUM, W

GRID = ProbabilityGrid(mantissa_bits=7, tail_bits=None)
PAIRS = ProbabilityGrid(mantissa_bits=4, tail_bits=None)  # an exact coarsening of GRID
N = 70_000  # above SMALL_CHUNK_ROWS: the writing state is used


def data(seed, k, *, ties, dtype, weighted):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, N)
    z = rng.normal(size=(N, k))
    z[np.arange(N), y] += 1.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    if ties:
        p = np.round(p, 2)
    w = rng.integers(0, 4, N).astype(np.float64) if weighted else None  # zeros included; sums exact
    return y, p.astype(dtype), w


def reference(y, p, w, k):
    """Cells by brute force: ``{code: [w, min, max, sum]}`` for one-vs-rest (code, class) and pairs."""
    w = np.ones(len(y)) if w is None else w
    keep = w > 0
    frames = []
    for j in range(k):
        s = p[:, j].astype(np.float64)
        frames.append(pd.DataFrame({
            "j": j, "t": y, "pos": (y == j).astype(int), "fine": GRID.bin_index(s), "pair": PAIRS.bin_index(s),
            "s": s, "w": w, "ws": w * s,
        })[keep])
    rows = pd.concat(frames)

    def cells(frame, keys):
        g = frame.groupby(keys)
        return pd.DataFrame({"w": g["w"].sum(), "min": g["s"].min(), "max": g["s"].max(), "sum": g["ws"].sum()})

    ovr = cells(rows, ["j", "fine", "pos"])
    pair = cells(rows[rows["t"] != rows["j"]], ["t", "j", "pair"])
    return ovr, pair


def assert_cells(sketch, y, p, w, k):
    ovr, pair = reference(y, p, w, k)
    parts = sketch._parts()
    keys, values = parts["ovr_keys"], parts["ovr_values"]
    j, b = np.divmod(keys, GRID.n_bins)
    got = []
    for c in (0, 1):
        has = values[:, c, W] > 0
        got.append(pd.DataFrame({"j": j[has], "fine": b[has], "pos": c, "w": values[has, c, W], "min": values[has, c, 1],
                                 "max": values[has, c, 2], "sum": values[has, c, SUM]}))
    mine = pd.concat(got).set_index(["j", "fine", "pos"]).sort_index()
    assert mine.index.equals(ovr.index)
    np.testing.assert_array_equal(mine[["w", "min", "max"]].to_numpy(), ovr[["w", "min", "max"]].to_numpy())
    np.testing.assert_allclose(mine["sum"].to_numpy(), ovr["sum"].to_numpy(), rtol=1e-12, atol=1e-12)
    # empty classes of occupied bins hold exactly the empty cell
    for c in (0, 1):
        empty = values[:, c, W] == 0
        assert np.all(values[empty, c] == np.array([0.0, np.inf, -np.inf, 0.0]))
    q, b = np.divmod(parts["pair_keys"], PAIRS.n_bins)
    t, j = np.divmod(q, k)
    pv = parts["pair_values"]
    mine = pd.DataFrame({"t": t, "j": j, "pair": b, "w": pv[:, W], "min": pv[:, 1], "max": pv[:, 2], "sum": pv[:, SUM]})
    mine = mine.set_index(["t", "j", "pair"]).sort_index()
    assert mine.index.equals(pair.index)
    np.testing.assert_array_equal(mine[["w", "min", "max"]].to_numpy(), pair[["w", "min", "max"]].to_numpy())
    np.testing.assert_allclose(mine["sum"].to_numpy(), pair["sum"].to_numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ties,dtype,weighted", [(True, np.float64, False), (False, np.float32, True), (True, np.float32, True)])
@pytest.mark.parametrize("layout", ["dense", "ovr hashed, pairs dense"])
def test_dense_cells_equal_a_group_by(monkeypatch, ties, dtype, weighted, layout):
    k = 5
    if layout != "dense":  # a budget that holds the pairwise state but not the one-vs-rest one
        monkeypatch.setattr(ms, "DENSE_BUDGET", k * k * PAIRS.n_bins * 32 + 64)
        assert k * GRID.n_bins * 64 > ms.DENSE_BUDGET
    y, p, w = data(3, k, ties=ties, dtype=dtype, weighted=weighted)
    s = MulticlassSketch(classes=range(k), grid=GRID, pair_grid=PAIRS, threads=2).update(y, p, sample_weight=w)
    assert s._tables is not None and s._tables.pair_dense and s._tables.dense == (layout == "dense")
    assert_cells(s, y, p, w, k)
    # the per-column probability sums are the binary sketch's on "class j or not"
    for j in range(k):
        col = s.one_vs_rest(j)
        assert col.brier_score() == pytest.approx(np.average((p[:, j] - (y == j)) ** 2, weights=w), rel=1e-9)


def test_threads_order_chunks_and_round_trips_do_not_change_cells():
    """Two threads or one, C or Fortran order, one chunk or three with compaction between them
    (the dense state rebuilt from compact cells): the same counts and min/max, bit for bit."""
    k = 4
    y, p, w = data(5, k, ties=False, dtype=np.float32, weighted=True)
    one = MulticlassSketch(classes=range(k), grid=GRID, pair_grid=PAIRS, threads=1).update(y, p, sample_weight=w)
    two = MulticlassSketch(classes=range(k), grid=GRID, pair_grid=PAIRS, threads=2).update(y, np.asfortranarray(p), sample_weight=w)
    assert one.to_bytes() == two.to_bytes()
    split = MulticlassSketch(classes=range(k), grid=GRID, pair_grid=PAIRS, threads=2)
    for part in np.array_split(np.arange(N), 3)[:2]:
        split.update(y[part], p[part], sample_weight=w[part])
        split._compact()  # the next chunk rebuilds the dense state from the compact cells
    rest = np.array_split(np.arange(N), 3)[2]
    split.update(y[rest], p[rest], sample_weight=w[rest])
    a, b = one._parts(), split._parts()
    for key in ("ovr", "pair"):
        np.testing.assert_array_equal(a[f"{key}_keys"], b[f"{key}_keys"])
        np.testing.assert_array_equal(a[f"{key}_values"][..., :3], b[f"{key}_values"][..., :3])
        np.testing.assert_allclose(a[f"{key}_values"][..., SUM], b[f"{key}_values"][..., SUM], rtol=1e-12)
    np.testing.assert_array_equal(a["confusion"], b["confusion"])
    np.testing.assert_array_equal(a["ranks"], b["ranks"])
    assert_cells(split, y, p, w, k)


def test_compact_cells_survive_a_dense_round_trip():
    """Cells of an earlier chunk, far (in score) from every later row, are carried through the
    dense state rebuilt for the next large chunk: compaction must read the pages they were put in,
    not only the pages later rows touched."""
    k, n = 3, 40_000
    rng = np.random.default_rng(8)
    y = rng.integers(0, k, 2 * n)
    confident = np.full((n, k), 0.01)
    confident[np.arange(n), y[:n]] = 0.98
    unsure = np.tile([0.34, 0.33, 0.33], (n, 1))
    p = np.vstack([confident, unsure])
    s = MulticlassSketch(classes=range(k), grid=GRID, pair_grid=PAIRS).update(y[:n], p[:n])
    s._compact()
    s.update(y[n:], p[n:])
    assert_cells(s, y, p, None, k)


@pytest.mark.parametrize("with_pred", [False, True])
def test_row_statistics_of_a_large_chunk_equal_a_row_by_row_count(with_pred):
    """A chunk large enough for the threads (65,536 rows or more, an odd count): the confusion
    and rank tables equal a row-by-row count and scikit-learn (ties included), and the rows
    that do not sum to 1 are all counted wherever they fall (both ends, the middle)."""
    from sklearn.metrics import confusion_matrix, log_loss, top_k_accuracy_score

    k, n = 5, 70_001
    y, p, _ = data(11, k, ties=False, dtype=np.float64, weighted=False)
    y, p = np.r_[y, y[:1]], np.vstack([p, p[:1]])
    p[1::7] = 0.2  # rows of tied scores: the rank's and the argmax's tie rules
    bad = np.array([0, n // 2 - 1, n // 2, n // 2 + 1, n - 1])
    p[bad] *= 0.9
    rng = np.random.default_rng(4)
    pred = rng.integers(0, k, n) if with_pred else None
    s = MulticlassSketch(classes=range(k), grid=GRID, pair_grid=PAIRS, threads=2).update(y, p, y_pred=pred)
    shown = p.argmax(axis=1) if pred is None else pred
    np.testing.assert_array_equal(s.confusion, confusion_matrix(y, shown, labels=range(k)))
    # rank of the true class's score: higher scores, and equal scores in later columns, first
    st = p[np.arange(n), y]
    later = np.arange(k)[None, :] > y[:, None]
    rank = np.sum((p > st[:, None]) | ((p == st[:, None]) & later), axis=1)
    np.testing.assert_array_equal(s.ranks, np.bincount(y * k + rank, minlength=k * k).reshape(k, k))
    for top in (1, 2, 3):
        assert s.top_k_accuracy(top) == pytest.approx(top_k_accuracy_score(y, p, k=top, labels=range(k)), abs=1e-12)
    assert s.counters["n_unnormalized"] == len(bad)
    with pytest.warns(UserWarning, match="do not sum to one"):
        got = s.log_loss()
    with pytest.warns(UserWarning, match="do not sum to one"):
        ref = log_loss(y, p, labels=range(k))
    assert got == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_cells_equal_a_group_by_when_the_kernel_marks_its_pages(monkeypatch, weighted):
    """Where the OS cannot say which pages of a dense state were written (not Linux, no
    /proc/self/pagemap), the kernel marks them row by row: the same cells as the reference."""
    from streameval.kernels import multiclass_pages

    monkeypatch.setattr(multiclass_pages, "knows", lambda state: False)
    k = 4
    y, p, w = data(6, k, ties=False, dtype=np.float32, weighted=weighted)
    half = N // 2  # both chunks above SMALL_CHUNK_ROWS: each goes through a dense state
    s = MulticlassSketch(classes=range(k), grid=GRID, pair_grid=PAIRS, threads=2)
    s.update(y[:half], p[:half], sample_weight=None if w is None else w[:half])
    s._compact()  # the next chunk's dense state starts from these cells (marked by mark())
    s.update(y[half:], p[half:], sample_weight=None if w is None else w[half:])
    assert s._tables is not None and s._tables.marking
    assert_cells(s, y, p, w, k)


def _default_grid_chunks(seed):
    """K = 6 softmax scores on the default grid (dense states of 2 MB and more: memory maps)."""
    rng = np.random.default_rng(seed)
    n, k = 150_000, 6
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)).astype(np.float32)
    z[np.arange(n), y] += 1.5
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    p[:200, :] = np.float32(0.9)  # rows far from the rest (bins of pages no later row reaches)
    return y, p, k


def _fed(y, p, k):
    s = MulticlassSketch(classes=range(k), threads=2)
    s.update(y[:80_000], p[:80_000])
    s._compact()  # cells carried into the next chunk's dense state
    s.update(y[80_000:], p[80_000:])
    return s


def test_pages_from_the_os_give_the_bytes_of_marked_pages(monkeypatch):
    """Default grid: compaction with the pages the OS reports written, with the kernel's own
    marks, and with every page read (the fallback when /proc fails after the start) writes the
    same file, bit for bit."""
    from streameval.kernels import multiclass_pages

    y, p, k = _default_grid_chunks(12)
    from_os = _fed(y, p, k)
    assert from_os._tables is not None
    assert from_os._tables.ovr_state.nbytes >= multiclass_pages.SCAN_ALL_BYTES
    assert from_os._tables.marking == (not multiclass_pages.pagemap_works())
    expected = from_os.to_bytes()
    with monkeypatch.context() as m:
        m.setattr(multiclass_pages, "knows", lambda state: False)
        marked = _fed(y, p, k)
        assert marked._tables is not None and marked._tables.marking
        assert marked.to_bytes() == expected
    if multiclass_pages.pagemap_works():
        monkeypatch.setattr(multiclass_pages, "written", lambda state: None)
        assert _fed(y, p, k).to_bytes() == expected


def test_written_pages_are_the_pages_written():
    """A fresh dense state: exactly the 4 KiB pages holding a written cell are reported (where
    /proc/self/pagemap answers; elsewhere the answer is None and the kernel marks pages)."""
    from streameval.kernels import multiclass_dense as dense
    from streameval.kernels import multiclass_pages

    state = dense.zeros((1 << 16, 4))  # 2 MiB: a memory map of its own, page-aligned
    rows = np.array([0, 5, 128, 40_000, (1 << 16) - 1])
    state[rows, W] = 1.0
    got = multiclass_pages.written(state)
    if not multiclass_pages.pagemap_works():
        assert got is None and not multiclass_pages.knows(state)
        return
    assert multiclass_pages.knows(state)
    expected = np.zeros((state.size >> 9) + 1, dtype=np.uint8)
    expected[(rows * 4) >> 9] = 1
    assert got is not None
    # 2 MiB pages (transparent huge pages) report all their 4 KiB parts: a superset, never fewer
    assert np.all(got[expected == 1] == 1)
    assert got.sum() == expected.sum() or got.sum() >= 512
    assert got.shape == expected.shape and got[-1] == 0  # no mark past the state's end
    np.testing.assert_array_equal(dense.occupied(state, got), rows)
    # small states are read whole; a large array not starting on a page boundary is not asked about
    small = np.zeros((100, 4))
    assert multiclass_pages.written(small) is not None and multiclass_pages.written(small).all()
    unaligned = np.zeros(((1 << 18) + 1) * 4)[4:].reshape(-1, 4)  # 8 MiB, one cell (32 bytes) past a page start
    assert unaligned.ctypes.data % 4096 != 0 or unaligned.nbytes < multiclass_pages.SCAN_ALL_BYTES
    assert not multiclass_pages.knows(unaligned) and multiclass_pages.written(unaligned) is None
