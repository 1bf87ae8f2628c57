"""kernels.segments: the NumPy segment sums equal the compiled kernels of kernels.grouped bit for bit,
and the store's merge of cells (monitor.layout.merge_cells) equals grouped.sort_reduce."""

from __future__ import annotations

import numpy as np
import pytest

from streameval.kernels import grouped, segments
from streameval.monitor.layout import merge_cells


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _values(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    if kind == "spread":  # magnitudes that make the order of additions show in the last bits
        return rng.random(n) * rng.choice([1.0, 1e-9, 1e9, -1.0], n)
    if kind == "counts":  # unweighted cell weights: whole numbers (the exact shortcut)
        return rng.integers(0, 5, n).astype(np.float64)
    if kind == "quarters":  # pair counts of the AUC: halves and quarters, of both signs
        return rng.integers(-8, 9, n) / 4.0
    if kind == "zeros":  # signed zeros: only a run of -0.0 keeps its sign
        return np.where(rng.random(n) < 0.9, -0.0, 0.0)
    return np.where(rng.random(n) < 0.5, 0.0, rng.random(n))  # "sparse"


def _starts(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    if shape == "few":  # long segments: the pairwise recursion above 128 values
        cuts = rng.choice(n + 1, 3)
    elif shape == "lengths":  # every length 0..140, so each pairwise branch and remainder is met
        lengths = rng.permutation(np.repeat(np.arange(141), 3))
        return np.r_[0, np.cumsum(lengths)].astype(np.int64)
    else:
        cuts = rng.choice(n + 1, max(n // 10, 1))
    return np.r_[0, np.sort(cuts), n].astype(np.int64)


@pytest.mark.parametrize("kind", ["spread", "counts", "quarters", "zeros", "sparse"])
@pytest.mark.parametrize("shape", ["few", "many", "lengths"])
def test_segment_sums_equal_the_compiled_kernels(kind, shape):
    rng = np.random.default_rng([ord(c) for c in kind + shape])
    for n in (0, 1, 7, 8, 9, 129, 3_000):
        starts = _starts(rng, n, shape)
        x = _values(rng, kind, int(starts[-1]))
        got, want = segments.segment_sum(x, starts), grouped.segment_sum(x, starts)
        assert np.array_equal(_bits(got), _bits(want)), (kind, shape, n)
        got, want = segments.segment_cumsum(x, starts), grouped.segment_cumsum(x, starts)
        assert np.array_equal(_bits(got), _bits(want)), (kind, shape, n)


def test_segment_sums_equal_numpy_on_each_segment():
    """Independent of the compiled kernels: each segment's sum is np.sum's, each running sum np.cumsum's."""
    rng = np.random.default_rng(5)
    x = _values(rng, "spread", 20_000)
    starts = np.r_[0, np.sort(rng.choice(20_001, 300)), 20_000].astype(np.int64)
    sums, runs = segments.segment_sum(x, starts), segments.segment_cumsum(x, starts)
    for g, (a, b) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        assert sums[g] == np.sum(x[a:b])
        assert np.array_equal(runs[a:b], np.cumsum(x[a:b]))


def test_run_sum_adds_left_to_right():
    rng = np.random.default_rng(6)
    x = _values(rng, "spread", 5_000).reshape(-1, 2)
    starts = np.unique(np.r_[0, rng.choice(2_500, 400), 2_500]).astype(np.int64)
    got = segments.run_sum(x, starts)
    for g, (a, b) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        for j in range(2):
            acc = x[a, j]
            for i in range(a + 1, b):
                acc += x[i, j]
            assert got[g, j] == acc or (np.isnan(acc) and np.isnan(got[g, j]))


@pytest.mark.parametrize("layout", ["runs", "runs_with_repeats", "shuffled", "empty"])
def test_merge_cells_equals_sort_reduce(layout):
    rng = np.random.default_rng(["runs", "runs_with_repeats", "shuffled", "empty"].index(layout))
    span = 3 * 40
    for _ in range(60):
        n_groups = int(rng.integers(1, 60))
        groups = rng.permutation(n_groups) if layout == "runs" else rng.integers(0, n_groups, n_groups)
        if layout == "empty":
            groups = groups[:0]
        gid, loc = [], []
        for g in groups:  # each stored group's cells sorted inside it, as the store writes them
            k = int(rng.integers(0, 12))
            gid.append(np.full(k, g))
            loc.append(np.sort(rng.choice(span, k, replace=False)))
        group = np.concatenate(gid or [np.empty(0)]).astype(np.int64)
        local = np.concatenate(loc or [np.empty(0)]).astype(np.int64)
        if layout == "shuffled":
            perm = rng.permutation(group.shape[0])
            group, local = group[perm], local[perm]
        values = np.column_stack([rng.integers(1, 4, group.shape[0]).astype(np.float64),
                                  -rng.random(group.shape[0]), rng.random(group.shape[0]),
                                  _values(rng, "spread", group.shape[0])])
        want_codes, want_cells = grouped.sort_reduce(group, local, values, n_groups, span)
        got_codes, got_cells = merge_cells(group, local, values, span)
        assert np.array_equal(got_codes, want_codes)
        assert np.array_equal(_bits(got_cells), _bits(want_cells))


@pytest.mark.parametrize("seed", range(8))
def test_cell_values_written_in_merge_order_equal_the_gather(seed):
    """The store read writes each scanned cell's values straight to its merged position (a block
    copy for a batch that keeps its order, a scatter otherwise): the same array as gathering a
    scan-ordered copy, for batches of any size, sorted, permuted or mixed; with a ``single_cells``
    scan after the ``cells`` one (odd seeds), whose cells are ``[1, s, s, s]``."""
    import pyarrow as pa

    from streameval.monitor.layout import _cell_values

    rng = np.random.default_rng(seed)

    def scan(m: int, names: tuple[str, ...]) -> tuple[pa.Table, np.ndarray]:
        values = rng.random((m, len(names)))
        cuts = np.unique(np.r_[0, rng.integers(0, m, int(rng.integers(0, 6))), m])
        table = pa.Table.from_batches([pa.record_batch({n: values[a:b, j] for j, n in enumerate(names)})
                                       for a, b in zip(cuts[:-1], cuts[1:], strict=True)])
        return table, values

    full, values = scan(int(rng.integers(1, 400)), ("weight", "min", "max", "score_sum"))
    parts = [full]
    if seed % 2:
        single, score = scan(int(rng.integers(1, 400)), ("score",))
        parts.append(single)
        values = np.concatenate([values, np.column_stack([np.ones(len(score)), score, score, score])])
    m = values.shape[0]
    bounds = np.unique(np.r_[0, np.cumsum([b.num_rows for p in parts for b in p.to_batches()])])
    order = np.arange(m)
    if seed % 3:  # batches moved as blocks (the report by stored windows and slices), or any permutation
        order = np.concatenate([np.arange(a, b) for a, b in rng.permutation(list(zip(bounds[:-1], bounds[1:], strict=True)))]) \
            if seed % 3 == 1 else rng.permutation(m)
    got = _cell_values(parts, order)
    assert np.array_equal(_bits(got), _bits(values[order]))


def test_table_batches_stop_at_the_first_failure(monkeypatch):
    """A batch that fails ends the table's work: the other thread takes no further batch (it ran
    through every remaining batch before the error reached the caller, and so did Ctrl-C)."""
    import streameval.report.slices as slices
    from streameval.sketch.sketchset import SketchSet

    n = 600
    ss = SketchSet(["g"]).update({"g": np.arange(n) % 60}, np.arange(n) % 2, np.linspace(0.0, 1.0, n))
    monkeypatch.setattr(slices, "_BATCH", 1)  # one group per batch: 60 batches
    calls = []
    real = slices._estimate_table

    def first_fails(*args):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("batch failed")
        return real(*args)

    monkeypatch.setattr(slices, "_estimate_table", first_fails)
    with pytest.raises(RuntimeError, match="batch failed"):
        slices.SliceTable.from_sketchset(ss)
    assert len(calls) <= 3  # the failing batch and at most the one the other thread had begun
    monkeypatch.setattr(slices, "_estimate_table", real)
    table = slices.SliceTable.from_sketchset(ss).to_arrow()
    assert table.column("g").to_pylist() == list(range(60)) and table.column("n_rows").to_pylist() == [10] * 60
