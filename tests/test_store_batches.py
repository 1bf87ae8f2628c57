"""The store's cell columns (sketchset_cells.store_batches): the same cells, bit for bit, as
cell_batches, split into full and single cells (weight 1, min = max = sum), for compact and full
sets, weighted and not, at any batch size."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from streameval.sketch.sketchset import SketchSet
from streameval.sketch.sketchset_cells import cell_batches, store_batches
from streameval.slicing import sketch_slices


def _set(kind: str) -> SketchSet:
    rng = np.random.default_rng(7)
    n = 200_000
    score = rng.random(n).astype(np.float32)
    if kind == "rounded":  # many rows per cell, NaN and out-of-range scores among them
        score = np.round(rng.random(n) * 1.2 - 0.1, 2)
        score[::997] = np.nan
    cols = {"score": score, "label": (rng.random(n) < 0.3).astype(np.int8), "seg": rng.integers(0, 40, n).astype(np.int32)}
    if kind == "weighted":
        cols["w"] = rng.random(n) * 3
    ss, _ = sketch_slices(pa.table(cols), score="score", label="label", by=["seg"],
                          weight="w" if kind == "weighted" else None, nan_policy="skip")
    return ss


@pytest.mark.parametrize("kind", ["compact", "rounded", "weighted"])
@pytest.mark.parametrize("max_cells", [1, 2_500, 1 << 19])
def test_store_batches_equal_cell_batches(kind: str, max_cells: int) -> None:
    ss = _set(kind)
    ss._consolidate()
    if kind == "compact":
        assert ss._one is not None  # the one-row cells kept apart: the merge of both tables is exercised
    if kind == "weighted":
        assert ss._one is None
    total = singles = 0
    for (g0, g1, group, bins, klass, cells), (h0, h1, full, single) in zip(cell_batches(ss, max_cells),
                                                                          store_batches(ss, max_cells), strict=True):
        assert (g0, g1) == (h0, h1)
        assert [c.dtype for c in full] == [np.int32, np.int32, np.int8] + [np.float64] * 4
        assert [c.dtype for c in single] == [np.int32, np.int32, np.int8, np.float64]
        bits = cells.view(np.int64)
        is_single = (cells[:, 0] == 1.0) & (bits[:, 1] == bits[:, 2]) & (bits[:, 1] == bits[:, 3])
        for part, mask in ((full, ~is_single), (single, is_single)):
            gid, b, c = part[:3]
            assert np.array_equal(gid, (group + g0)[mask]) and np.all((gid >= g0) & (gid < max(g1, 1)))
            assert np.array_equal(b, bins[mask]) and np.array_equal(c, klass[mask])
        for f in range(4):
            assert np.array_equal(full[3 + f].view(np.int64), bits[~is_single, f])
        assert np.array_equal(single[3].view(np.int64), bits[is_single, 1])
        total += full[0].shape[0] + single[0].shape[0]
        singles += single[0].shape[0]
    assert total == ss.n_cells
    if kind == "compact":
        assert singles > total // 2  # continuous scores, 5,000 rows per group: mostly one-row cells
    if kind == "rounded":
        assert singles < total // 10  # ~100 distinct scores per group: cells of many rows


def test_store_batches_of_an_empty_set() -> None:
    ss = SketchSet(["seg"])
    batches = list(store_batches(ss, 100))
    assert [(g0, g1, [c.shape[0] for c in (*full, *single)]) for g0, g1, full, single in batches] == [(0, 0, [0] * 11)]
