"""metrics.segmented: rates at a threshold for every group, against a brute-force count per group."""

from __future__ import annotations

import numpy as np
import pytest

from streameval.report import SliceTable
from streameval.sketch.sketchset import SketchSet


@pytest.mark.parametrize("order", [["a", "b", "c"], ["c", "a", "b"], ["b", "c", "a"]])
def test_rates_when_the_last_group_lies_above_the_threshold(order):
    # Regression: the last group of the table, with every bin above the threshold, took the
    # previous group's running counts (its row index was clipped before stepping back).
    rng = np.random.default_rng(0)
    data = {"a": (rng.random(50) * 0.4, rng.integers(0, 2, 50)),  # all below 0.5
            "b": (0.3 + rng.random(50) * 0.6, rng.integers(0, 2, 50)),  # straddles nothing but the grid
            "c": (0.8 + rng.random(3) * 0.2, np.array([1, 1, 0]))}  # all above
    ss = SketchSet(["g"])
    for name in order:  # groups are numbered in order of appearance
        s, y = data[name]
        ss.update({"g": [name] * len(s)}, y, s)
    table = SliceTable.from_sketchset(ss, thresholds=[0.5])
    for row in table.rows:
        s, y = data[row["g"]]
        tp, fp = int(np.sum((s >= 0.5) & (y == 1))), int(np.sum((s >= 0.5) & (y == 0)))
        assert row["recall@0.5"] == (tp / y.sum() if y.sum() else 0.0)
        assert row["precision@0.5"] == (tp / (tp + fp) if tp + fp else 0.0)
