"""The store's cell columns (sketchset_cells.store_batches): the same cells, bit for bit, as
cell_batches split into columns, for compact and full sets, weighted and not, at any batch size."""

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
    total = 0
    for (g0, g1, group, bins, klass, cells), (h0, h1, cols) in zip(cell_batches(ss, max_cells),
                                                                    store_batches(ss, max_cells), strict=True):
        assert (g0, g1) == (h0, h1)
        gid, b, c, w, lo, hi, sm = cols
        assert (gid.dtype, b.dtype, c.dtype) == (np.int32, np.int32, np.int8)
        assert np.array_equal(gid, group + g0) and gid.min(initial=g0) >= g0 and gid.max(initial=g0) < max(g1, 1)
        assert np.array_equal(b, bins) and np.array_equal(c, klass)
        for f, col in enumerate((w, lo, hi, sm)):
            assert col.dtype == np.float64 and col.flags.c_contiguous
            assert np.array_equal(col.view(np.int64), np.ascontiguousarray(cells[:, f]).view(np.int64))
        total += gid.shape[0]
    assert total == ss.n_cells


def test_store_batches_of_an_empty_set() -> None:
    ss = SketchSet(["seg"])
    batches = list(store_batches(ss, 100))
    assert [(g0, g1, [c.shape[0] for c in cols]) for g0, g1, cols in batches] == [(0, 0, [0] * 7)]
