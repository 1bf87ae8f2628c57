"""The sorted-rows path of the grouped update (kernels/grouped_sort.py): the same cells and
counters as a row-by-row reference and as the hash table, over buffer boundaries, runs and merges."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm
from test_sketchset import _build, _frame, _key, _reference_cells

from streameval import DEFAULT_GRID, LinearGrid
from streameval.kernels import grouped, grouped_sort, pairsort
from streameval.sketch.cells import reduce_cells
from streameval.sketch.sketchset import SketchSet


def _runs(buf: grouped_sort.RowBuffer) -> int:
    """Sorted runs of a buffer, the compact first run included."""
    return len(buf.runs) + (buf.compact is not None)


def _drain(buf: grouped_sort.RowBuffer) -> tuple[np.ndarray, np.ndarray]:
    """A buffer's cells as one full table."""
    codes, cells, one = buf.drain()
    return (codes, cells) if one is None else pairsort.expand(*one, codes, cells)


def _rows(n: int, groups: int, seed: int):
    rng = np.random.default_rng(seed)
    gid = rng.integers(0, groups, n)
    y = rng.choice([0.0, 1.0, np.nan], n, p=[0.6, 0.3, 0.1])
    s = np.round(rng.normal(0.5, 0.4, n), 2)
    s[rng.random(n) < 0.01] = np.nan
    w = np.where(rng.random(n) < 0.05, 0.0, rng.choice([0.5, 1.0, 2.0], n))
    return gid, np.where(np.isnan(y), 2, y).astype(np.int64), y, s, w


@pytest.mark.parametrize("grid", [DEFAULT_GRID, LinearGrid(-1, 2, 30)])
@pytest.mark.parametrize("capacity,weighted_from,packed_bits", [
    (1 << 24, 0, 63), (4_001, 0, 63), (4_001, None, 63), (1_777, 9_000, 63), (4_001, 0, 20), (1 << 24, None, 20)])
def test_row_buffer_equals_a_brute_force_reference(grid, capacity, weighted_from, packed_bits, monkeypatch):
    """Chunks buffered, sorted into runs (several when the buffer is small, so chunks straddle
    its end and the k-way merge combines runs), give exactly the cells and counters of a dict
    built row by row: NaN scores, zero weights, scores outside [0, 1], unlabelled rows; weights
    from the first chunk, never, or from a later chunk (earlier rows weigh 1); codes packed with
    the row, or (too wide to pack) sorted stably."""
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1)
    monkeypatch.setattr(grouped_sort, "DENSE", 0.0)
    monkeypatch.setattr(grouped_sort, "_PACKED_BITS", packed_bits)
    gid, cls, y, s, w = _rows(20_000, 37, 11)
    if weighted_from is None:
        w = np.ones_like(w)
    else:
        w[:weighted_from] = 1.0
    codes, cells, ctr = _reference_cells(gid, y, s, w, grid.n_bins, grid)
    buf, counters = grouped_sort.RowBuffer(capacity), np.zeros((37, 8))
    for a in range(0, len(s), 3001):
        b = min(a + 3001, len(s))
        weighted = weighted_from is not None and b > weighted_from
        assert buf.takes(b - a)
        buf.add(*grid.kernel_params(), grid.n_bins, gid[a:b], s[a:b], cls[a:b], w[a:b] if weighted else np.empty(0),
                weighted, counters)
    assert _runs(buf) == (len(s) - 1) // capacity
    got_codes, got_cells = _drain(buf)
    assert np.array_equal(got_codes, codes)
    assert np.array_equal(got_cells[:, :3], cells[:, :3])
    np.testing.assert_allclose(got_cells[:, 3], cells[:, 3], rtol=1e-12, atol=1e-12)
    assert np.array_equal(counters[:, :5], ctr[:, :5])
    np.testing.assert_allclose(counters[:, 5:], ctr[:, 5:], rtol=1e-12)
    assert buf.rows == 0 and not _runs(buf)


def test_row_buffer_adds_each_cells_rows_in_arrival_order_like_the_hash_table(monkeypatch):
    """Within one run, a cell's score sum is added row by row in arrival order, so the sorted
    path gives the hash table's cells bit for bit (not only up to rounding)."""
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1)
    monkeypatch.setattr(grouped_sort, "DENSE", 0.0)
    grid = LinearGrid(0, 1, 16)
    gid, cls, _, s, w = _rows(50_000, 5, 3)
    s = np.abs(np.nan_to_num(s)) % 1
    args = (*grid.kernel_params(), grid.n_bins, gid, s, cls, w, True)
    buf, c1 = grouped_sort.RowBuffer(), np.zeros((5, 8))
    buf.add(*args, c1)
    table, used = grouped.new_table(), 0
    c2 = np.zeros((5, 8))
    table, used = grouped.grouped_update(grouped.reserve(table, used, len(s)), used, *args, c2)
    a, b = buf.drain(), grouped.drain(table, used, 3 * grid.n_bins, 5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert np.array_equal(c1, c2)


def test_merge_runs_combines_equal_codes_in_run_order():
    rng = np.random.default_rng(5)
    runs = []
    for _ in range(6):
        k = int(rng.integers(0, 400))
        codes = np.unique(rng.integers(0, 500, k))
        cells = np.column_stack([rng.integers(1, 4, len(codes)).astype(float), rng.random(len(codes)),
                                 1 + rng.random(len(codes)), rng.random(len(codes)) * 1e3])
        runs.append((codes, cells))
    runs.insert(2, (np.empty(0, np.int64), np.empty((0, 4))))  # an empty run
    want = reduce_cells(np.concatenate([c for c, _ in runs]), np.concatenate([v for _, v in runs]))
    got = grouped_sort.merge_runs(list(runs))
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(got[1][:, :3], want[1][:, :3])
    np.testing.assert_allclose(got[1][:, 3], want[1][:, 3], rtol=1e-13)
    # two runs take the two-way merge; one run is returned as it is
    two = grouped_sort.merge_runs(runs[:2])
    ref = reduce_cells(np.concatenate([runs[0][0], runs[1][0]]), np.concatenate([runs[0][1], runs[1][1]]))
    assert np.array_equal(two[0], ref[0]) and np.allclose(two[1], ref[1], rtol=1e-13)
    assert grouped_sort.merge_runs(runs[:1])[0] is runs[0][0]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dense", [0.0, 2.0])
def test_sketchset_on_either_path_equals_scikit_learn(weighted, dense, monkeypatch):
    """A set whose chunks are sorted (density threshold 0) or hashed after the first chunk
    (threshold 2: never dense) gives every group scikit-learn's exact metrics."""
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1000)
    monkeypatch.setattr(grouped_sort, "DENSE", dense)
    df = _frame()
    ss = _build(df, 7000, weighted)
    assert ss._rows.dense is (dense == 0.0)
    assert (ss._used > 0) is (dense > 0)  # later chunks went to the hash table
    for (k1, k2), g in df.groupby(["country", "model"], dropna=False):
        sk = ss.sketch(_key(k1, k2))
        wt = g.w if weighted else None
        auc = sk.roc_auc()
        assert auc.exact and auc.value == pytest.approx(skm.roc_auc_score(g.y, g.s, sample_weight=wt), abs=1e-12)
        assert sk.log_loss() == pytest.approx(skm.log_loss(g.y, g.s, sample_weight=wt), abs=1e-12)
        c = sk.confusion(0.5)
        tn, fp, fn, tp = skm.confusion_matrix(g.y, g.s >= 0.5, sample_weight=wt).ravel()
        assert (c.tp, c.fp, c.fn, c.tn) == pytest.approx((tp, fp, fn, tn), abs=1e-9)


def test_sketchset_reads_then_takes_more_rows(monkeypatch):
    """Reading a set sorts its buffered rows; rows added afterwards are buffered again and merge
    with the sorted cells: the same cells as one pass."""
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1)
    monkeypatch.setattr(grouped_sort, "DENSE", 0.0)
    df = _frame(n=12_000, seed=4)
    a = _build(df, 12_000)
    b = SketchSet(["country", "model"])
    for part in (df.iloc[:5000], df.iloc[5000:]):
        b.update({"country": part.country.values, "model": part.model.values}, part.y.values, part.s.values)
        b.cell_columns()
    for x, z in zip(a.cell_columns(), b.cell_columns(), strict=True):
        np.testing.assert_allclose(x, z, rtol=1e-13)
    assert a.keys() == b.keys()


def test_the_choice_of_path_follows_the_cells_per_row(monkeypatch):
    """A first large chunk with few cells per row sends the set to the hash table; so does a run
    that turns out sparse later (many rows per cell); short first chunks do not decide."""
    grid = LinearGrid(0, 1, 8)
    rng = np.random.default_rng(7)

    def chunk(n, groups):
        return (*grid.kernel_params(), grid.n_bins, rng.integers(0, groups, n), rng.random(n),
                rng.integers(0, 2, n), np.empty(0), False, np.zeros((1000, 8)))

    buf = grouped_sort.RowBuffer()
    assert not buf.takes(grouped_sort.MIN_SORT_ROWS - 1) and buf.takes(grouped_sort.MIN_SORT_ROWS)
    buf.add(*chunk(50_000, 2))  # 2 groups x 8 bins x 2 classes: 32 cells for 50,000 rows
    assert buf.dense is False and not buf.takes(1 << 20) and buf.rows == 0 and _runs(buf) == 1
    buf = grouped_sort.RowBuffer(capacity=60_000)
    buf.add(*chunk(50_000, 1000))  # 16,000 cells: dense
    assert buf.dense is True
    monkeypatch.setattr(grouped_sort, "DENSE", 0.9)
    buf.add(*chunk(20_000, 1000))  # the buffer fills: its run has fewer than 0.9 cells per row
    assert buf.dense is False and _runs(buf) == 1
    with pytest.raises(ValueError, match="capacity"):
        grouped_sort.RowBuffer(0)


@pytest.mark.slow  # a child process under a small address-space limit
def test_a_limited_address_space_gets_a_smaller_buffer(tmp_path):
    """Where the buffer's address space cannot be reserved (a strict limit), the set takes a
    smaller buffer and gives the same cells (checked in a child process with RLIMIT_AS)."""
    import subprocess
    import sys
    import textwrap

    resource = pytest.importorskip("resource")
    if not hasattr(resource, "RLIMIT_AS") or not __import__("os").path.exists("/proc/self/status"):
        pytest.skip("needs Linux's RLIMIT_AS and /proc")
    script = textwrap.dedent("""
        import resource, numpy as np
        from streameval.sketch.sketchset import SketchSet
        from streameval.kernels import grouped_sort
        rng = np.random.default_rng(1)
        g, y, s = rng.integers(0, 500, 100_000), rng.integers(0, 2, 100_000), rng.random(100_000)
        ref = SketchSet(["g"])
        ref._rows.dense = False
        ref.update({"g": g}, y, s)
        vm = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmSize")][0] * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + 1536 * 2**20, resource.RLIM_INFINITY))
        ss = SketchSet(["g"]).update({"g": g}, y, s)
        assert ss._rows.dense and ss._rows.capacity == 1 << 22, ss._rows.capacity
        for a, b in zip(ss.cell_columns(), ref.cell_columns()):
            assert np.array_equal(a, b)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
