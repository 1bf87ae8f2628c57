"""The in-place pair sort and compact cells (kernels/pairsort.py): against NumPy's sort, the
row-by-row run reduction, the hash table, and, through a SketchSet, a set that never compacts."""

from __future__ import annotations

import numpy as np
import pytest
from test_sketchset import _build, _frame

from streameval import DEFAULT_GRID, LinearGrid
from streameval.kernels import grouped, grouped_sort, pairsort
from streameval.sketch.sketchset import SketchSet


@pytest.mark.parametrize("n", [0, 1, 2, 31, 32, 33, 257, 5_000, 200_000])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("spread", ["wide", "narrow", "skewed"])
def test_sort_pairs_equals_numpy_and_moves_values_with_keys(n, threads, spread):
    rng = np.random.default_rng(n + threads)
    if spread == "wide":  # packed keys as the buffer makes them: code << b | row
        bits = max((n - 1).bit_length(), 1)
        keys = (rng.integers(0, 1 << 35, n) << bits) | np.arange(n)
    elif spread == "narrow":  # fewer than 256 distinct values: one digit
        keys = rng.permutation(np.arange(n) % 256)[: min(n, 256)]
        keys = np.unique(keys) if n > 256 else keys
    else:  # most keys in one top bucket, a few far away
        keys = np.unique(np.concatenate([rng.integers(0, 1 << 20, n), rng.integers(1 << 50, 1 << 51, max(n // 100, 1))]))
        keys = rng.permutation(keys)[:n]
    vals = rng.random(keys.shape[0])
    of = dict(zip(keys.tolist(), vals.tolist(), strict=True))
    k, v = keys.copy(), vals.copy()
    pairsort.sort_pairs(k, v, threads)
    assert np.array_equal(k, np.sort(keys))
    assert v.tolist() == [of[x] for x in k.tolist()]


def _packed(codes: np.ndarray) -> tuple[np.ndarray, int]:
    bits = max((codes.shape[0] - 1).bit_length(), 1)
    return (codes << bits) | np.arange(codes.shape[0]), bits


@pytest.mark.parametrize("span", [3_000, 100_000])
def test_reduce_pairs_gives_the_row_by_row_cells_bit_for_bit(span):
    """One-row cells in place, the others apart, NaN scores skipped (a cell of NaNs and one
    score is a one-row cell); joined, the same bits as reduce_run's cells of the same keys."""
    rng = np.random.default_rng(span)
    n = 60_000
    codes = rng.integers(0, span, n)  # ~20 rows per cell, or mostly cells of one row
    scores = rng.random(n) * 1e3
    scores[rng.random(n) < 0.05] = np.nan
    keys, bits = _packed(codes)
    ref_keys = np.sort(keys)
    ref_codes, ref_cells = np.empty(n, np.int64), np.empty((n, 4))
    k = grouped_sort.reduce_run(ref_keys.copy(), bits, np.empty(0, np.int64), scores, scores, False, ref_codes, ref_cells)
    pk, ps = keys.copy(), scores.copy()
    pairsort.sort_pairs(pk, ps)
    full_codes, full_cells = np.empty(n // 2 + 1, np.int64), np.empty((n // 2 + 1, 4))
    m, j = pairsort.reduce_pairs(pk, ps, bits, full_codes, full_cells)
    assert m + j == k and j > 0 and (m > 0) == (span > n)
    assert np.all(np.diff(pk[:m]) > 0) and np.all(full_cells[:j, 0] >= 2)
    got = pairsort.expand(pk[:m], ps[:m], full_codes[:j], full_cells[:j])
    assert np.array_equal(got[0], ref_codes[:k]) and np.array_equal(got[1], ref_cells[:k])
    lo, hi = int(ref_codes[k // 3]), int(ref_codes[2 * k // 3])
    part = pairsort.group_slice(pk[:m], ps[:m], full_codes[:j], full_cells[:j], lo, hi)
    inside = (ref_codes[:k] >= lo) & (ref_codes[:k] < hi)
    assert np.array_equal(part[0], ref_codes[:k][inside]) and np.array_equal(part[1], ref_cells[:k][inside])


@pytest.mark.parametrize("gather_rows", [0, 1 << 25])
def test_compact_buffer_equals_the_hash_table_bit_for_bit(gather_rows, monkeypatch):
    """Unweighted rows sorted with their scores (in place, or keys alone then scores gathered)
    give the hash table's cells and counters bit for bit (score sums added in arrival order),
    NaN scores and unlabelled rows included."""
    monkeypatch.setattr(grouped_sort, "GATHER_ROWS", gather_rows)
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1)
    monkeypatch.setattr(grouped_sort, "DENSE", 0.0)
    grid = DEFAULT_GRID
    rng = np.random.default_rng(9)
    n = 80_000
    gid = rng.integers(0, 50, n)
    s = np.round(rng.normal(0.5, 0.4, n), 3)
    s[rng.random(n) < 0.02] = np.nan
    cls = rng.choice([0, 1, 2], n)
    args = (*grid.kernel_params(), grid.n_bins, gid, s, cls, np.empty(0), False)
    buf, c1 = grouped_sort.RowBuffer(), np.zeros((50, 8))
    for a in range(0, n, 30_000):
        buf.add(*grid.kernel_params(), grid.n_bins, gid[a:a + 30_000], s[a:a + 30_000], cls[a:a + 30_000],
                np.empty(0), False, c1)
    assert buf.compact is None
    buf.flush()
    assert buf.compact is not None and not buf.runs
    codes, cells, one = buf.drain()
    assert one is not None and one[0].shape[0] > 0 and codes.shape[0] > 0
    table, c2 = grouped.new_table(), np.zeros((50, 8))
    table, used = grouped.grouped_update(grouped.reserve(table, 0, n), 0, *args, c2)
    want = grouped.drain(table, used, 3 * grid.n_bins, 50)
    got = pairsort.expand(*one, codes, cells)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(c1, c2)


def test_a_second_run_joins_the_compact_one_to_the_full_runs(monkeypatch):
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1)
    monkeypatch.setattr(grouped_sort, "DENSE", 0.0)
    grid = LinearGrid(0, 1, 1000)
    rng = np.random.default_rng(2)
    n = 25_000
    gid, s, cls = rng.integers(0, 30, n), rng.random(n), rng.integers(0, 2, n)
    buf, ctr = grouped_sort.RowBuffer(capacity=10_000), np.zeros((30, 8))
    buf.add(*grid.kernel_params(), grid.n_bins, gid, s, cls, np.empty(0), False, ctr)
    assert len(buf.runs) == 2 and buf.compact is None and buf.rows == 5_000  # the first, compact, run joined
    codes, cells, one = buf.drain()
    assert one is None
    table, c2 = grouped.new_table(), np.zeros((30, 8))
    table, used = grouped.grouped_update(grouped.reserve(table, 0, n), 0, *grid.kernel_params(), grid.n_bins, gid, s,
                                         cls, np.empty(0), False, c2)
    want = grouped.drain(table, used, 3 * grid.n_bins, 30)
    assert np.array_equal(codes, want[0]) and np.array_equal(cells[:, :3], want[1][:, :3])
    np.testing.assert_allclose(cells[:, 3], want[1][:, 3], rtol=1e-13)


def _hashed(df, chunk: int) -> SketchSet:
    ss = SketchSet(["country", "model"])
    ss._rows.dense = False  # every chunk to the hash table: nothing compact
    for i in range(0, len(df), chunk):
        c = df.iloc[i:i + chunk]
        ss.update({"country": c.country.values, "model": c.model.values}, c.y.values, c.s.values)
    return ss


@pytest.mark.parametrize("gather_rows", [0, 1 << 25])
def test_a_compact_set_reads_as_the_hash_table_set(gather_rows, monkeypatch):
    """A set kept compact answers per-group reads without expanding and equals, bit for bit, a
    set built by the hash table: sketches, counts, unlabelled cells, merge, roll-up, bytes."""
    monkeypatch.setattr(grouped_sort, "GATHER_ROWS", gather_rows)
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1000)
    df = _frame(n=40_000, seed=3, decimals=None, unlabelled=0.1)
    ss, ref = _build(df, 40_000), _hashed(df, 40_000)
    assert ss.n_cells == ref.n_cells and ss._one is not None and ss._one[0].shape[0] > 0.5 * ss.n_cells
    for key in ref.keys():
        a, b = ss.group_parts(key), ref.group_parts(key)
        (ka, va), (kb, vb) = a[0]._compact(), b[0]._compact()
        assert np.array_equal(ka, kb) and np.array_equal(va, vb)
        assert a[1] == b[1] and a[2] == b[2]
    assert ss._one is not None  # per-group reads did not expand the set
    assert ss.rollup(["country"]).to_bytes() == ref.rollup(["country"]).to_bytes()
    assert ss.merge(ref).to_bytes() == ref.merge(ref).to_bytes()
    for x, y in zip(ss.cell_columns(), ref.cell_columns(), strict=True):
        assert np.array_equal(x, y)
    assert ss._one is None and ss.n_cells == ref.n_cells
    assert ss.to_bytes() == ref.to_bytes()


def test_rows_added_after_a_compact_read_merge_with_it(monkeypatch):
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1000)
    df = _frame(n=30_000, seed=5, decimals=None)
    a, b = _build(df.iloc[:20_000], 20_000), _hashed(df.iloc[:20_000], 20_000)
    key = a.keys()[0]
    a.sketch(key)  # sorted, kept compact
    b.sketch(key)
    assert a._one is not None
    for ss in (a, b):
        c = df.iloc[20_000:]
        ss.update({"country": c.country.values, "model": c.model.values}, c.y.values, c.s.values)
    for x, y in zip(a.cell_columns(), b.cell_columns(), strict=True):
        assert np.array_equal(x[..., :3] if x.ndim == 2 else x, y[..., :3] if y.ndim == 2 else y)
    np.testing.assert_allclose(a.cell_columns()[3][:, 3], b.cell_columns()[3][:, 3], rtol=1e-13)
    assert a.overall().roc_auc().value == b.overall().roc_auc().value


@pytest.mark.parametrize("gather_rows", [0, 1 << 25])
@pytest.mark.parametrize("later", ["float32", "float64"])
def test_float32_scores_are_buffered_in_4_bytes_and_widen_exactly(later, gather_rows, monkeypatch):
    """float32 scores are kept as float32 (exact) while every chunk is float32; a float64 chunk
    widens the buffered ones; either way the cells equal the hash table's bit for bit."""
    monkeypatch.setattr(grouped_sort, "GATHER_ROWS", gather_rows)
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1000)
    rng = np.random.default_rng(12)
    n = 40_000
    g = rng.integers(0, 400, n)
    y = (rng.random(n) < 0.3).astype(float)
    s = rng.random(n).astype(np.float32)
    s[rng.random(n) < 0.01] = np.nan
    ss, ref = SketchSet(["g"]), SketchSet(["g"])
    ref._rows.dense = False
    for a in range(0, n, 20_000):
        part = s[a:a + 20_000] if a == 0 or later == "float32" else s[a:a + 20_000].astype(np.float64) / 3
        for x in (ss, ref):
            x.update({"g": g[a:a + 20_000]}, y[a:a + 20_000], part, nan_policy="skip")
        if a == 0:
            assert ss._rows._scores.dtype == np.float32
    assert ss._rows._scores.dtype == (np.float32 if later == "float32" else np.float64)
    ss._consolidate()
    assert ss._one is not None and ss._one[1].dtype == (np.float32 if later == "float32" else np.float64)
    for x, z in zip(ss.cell_columns(), ref.cell_columns(), strict=True):
        assert np.array_equal(x, z)
    assert np.array_equal(ss.group_counters()["n_nan"], ref.group_counters()["n_nan"])


def test_populate_keeps_contents_and_accepts_any_view():
    """Mapping pages ahead never changes what was written (written, unwritten, unaligned, tiny)."""
    a = np.empty(1 << 20, dtype=np.int64)
    a[:1000] = np.arange(1000)
    grouped_sort.populate(a[3:])  # unaligned, overlapping written rows
    grouped_sort.populate(a[:1])  # smaller than a page
    grouped_sort.populate(np.empty(0))
    assert np.array_equal(a[:1000], np.arange(1000))
    a[1000:] = 7
    assert int(a[1000:].sum()) == 7 * ((1 << 20) - 1000)


def _resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def test_release_drops_whole_pages_and_keeps_the_rest():
    """Released pages leave the resident set (Linux); elements outside the released whole pages,
    including those sharing a page with released ones, keep their values."""
    a = np.arange(8 << 20, dtype=np.int64)  # 64 MB, every page touched
    cut = 1000  # not at a page boundary
    before = _resident_mb()
    grouped_sort.release(a[cut:])
    grouped_sort.release(a[:1])  # smaller than a page: nothing
    grouped_sort.release(np.empty(0))
    assert np.array_equal(a[:cut], np.arange(cut))
    first_whole = -(-(a.ctypes.data + 8 * cut) // 4096) * 4096  # first page boundary at or after a[cut]
    kept = (first_whole - a.ctypes.data) // 8
    assert np.array_equal(a[cut:kept], np.arange(cut, kept))  # the shared page is kept
    stop = ((a.ctypes.data + a.nbytes) // 4096 * 4096 - a.ctypes.data) // 8  # the last whole page's end
    assert np.array_equal(a[stop:], np.arange(stop, a.shape[0]))
    if grouped_sort._MADVISE is not None:
        assert before - _resident_mb() > 48
        assert not a[kept:stop].any()  # released pages read back as zeros


def test_a_compact_run_releases_its_spent_tail(monkeypatch):
    """After the compact sort, the rows of cells of two or more rows (the buffer's tail) are no
    longer resident; the cells are those of the hash table, bit for bit."""
    if grouped_sort._MADVISE is None:
        pytest.skip("no madvise on this system: the tail stays resident until the set is freed")
    monkeypatch.setattr(grouped_sort, "GATHER_ROWS", 0)  # the in-place sort, as at 100M rows
    rng = np.random.default_rng(4)
    n = 2_000_000
    g = rng.integers(0, 20, n)  # few groups and a coarse grid: most rows share a cell
    y = (rng.random(n) < 0.3).astype(float)
    s = rng.random(n)
    grid = LinearGrid(0, 1, 1 << 14)
    ss, ref = SketchSet(["g"], grid), SketchSet(["g"], grid)
    ref._rows.dense = False
    for x in (ss, ref):
        x.update({"g": g}, y, s)
    assert ss._rows.dense
    before = _resident_mb()
    ss._consolidate()
    m = ss._one[0].shape[0]
    assert n - m > n // 2  # most rows are in cells of two or more rows
    # new: the full cells (40 bytes each); gone: the buffer's 16 bytes per row past m (without
    # the release, the growth would be the new cells' size)
    cells_mb, tail_mb = 40 * ss._code.shape[0] / 2**20, 16 * (n - m) / 2**20
    assert _resident_mb() - before < cells_mb - tail_mb / 2
    for x, z in zip(ss.cell_columns(), ref.cell_columns(), strict=True):
        assert np.array_equal(x, z)


def test_groups_created_in_bulk_keep_order_cap_and_known_keys():
    """A chunk's new groups are created in one call, in the order one at a time would give; the
    cap counts only new keys (groups a store added are known) and names the first key past it."""
    from streameval.errors import InputError

    ss = SketchSet(["g"], max_groups=5)
    ss.update({"g": [3, 1, 3, 2]}, [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4])
    assert ss.keys() == [(3,), (1,), (2,)]
    other = SketchSet(["g"])
    other.update({"g": [7, 8]}, [0, 1], [0.5, 0.6])
    for key in other.keys():  # known to the set, unknown to its key encoder
        ss.add_group(key, *other.group_parts(key))
    ss.update({"g": [7, 8, 1]}, [1, 0, 1], [0.7, 0.8, 0.9])  # 5 groups: at the cap, not past it
    assert ss.keys() == [(3,), (1,), (2,), (7,), (8,)]
    assert ss.counts((7,))["n_rows"] == 2 and ss.counts((1,))["n_rows"] == 2
    with pytest.raises(InputError, match=r"more than 5 groups .*the newest is \(9,\)"):
        ss.update({"g": [9, 10]}, [0, 1], [0.1, 0.2])


def test_a_bad_label_after_null_labels_is_reported_at_its_own_row():
    from streameval.errors import InputError

    ss = SketchSet(["g"])
    ss.update({"g": [1, 1]}, [0, 1], [0.1, 0.2])
    with pytest.raises(InputError, match=r"first 3(\.0)? at row 6\b"):
        ss.update({"g": [1] * 5}, [np.nan, np.nan, 0, 1, 3], [0.1, 0.2, 0.3, 0.4, 0.5])
    ss.update({"g": [1] * 4}, [np.nan, 1.0, np.nan, 0.0], [0.1, 0.2, 0.3, 0.4])
    assert ss.counts((1,))["n_unlabelled"] == 2 and ss.sketch((1,)).n_rows == 4
