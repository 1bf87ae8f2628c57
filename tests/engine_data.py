"""Data and comparisons shared by the Spark and Dask engine tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

import streameval


def frame(n: int = 20_000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame({
        "y": y,
        "p": np.clip(rng.integers(0, 200, n) / 200 + 0.1 * y, 0, 1),  # discrete: exact AUC
        "w": rng.uniform(0.1, 2.0, n),
        "status": np.where(y == 1, "fraud", "ok"),
    })


def same(a: streameval.BinarySketch, b: streameval.BinarySketch, weighted: bool = False) -> None:
    ta, tb = a.table(), b.table()
    assert a.n_rows == b.n_rows and np.array_equal(ta.keys, tb.keys)
    for f in ("pos_min", "pos_max", "neg_min", "neg_max"):
        assert np.array_equal(getattr(ta, f), getattr(tb, f))
    if weighted:
        np.testing.assert_allclose(ta.pos, tb.pos, rtol=1e-12)
        np.testing.assert_allclose(ta.neg, tb.neg, rtol=1e-12)
    else:
        assert np.array_equal(ta.pos, tb.pos) and np.array_equal(ta.neg, tb.neg)
        assert a.roc_auc() == b.roc_auc()
