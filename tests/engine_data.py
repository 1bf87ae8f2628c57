"""Data and comparisons shared by the Spark and Dask engine tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

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


def sliced_frame(n: int = 6000, seed: int = 0) -> pd.DataFrame:
    """Slices with null keys, daily windows with null times, labels that have not arrived."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    late = y.astype(float)
    late[rng.random(n) < 0.1] = np.nan
    ts = pd.Series(pd.to_datetime("2024-03-01") + pd.to_timedelta(rng.integers(0, 6 * 86400, n), unit="s"))
    ts[rng.random(n) < 0.05] = pd.NaT
    return pd.DataFrame({
        "y": y, "late": late, "p": np.clip(rng.integers(0, 200, n) / 200 + 0.1 * y, 0, 1), "w": rng.uniform(0.1, 2.0, n),
        "country": rng.choice(np.array(["fr", "de", "it", None], dtype=object), n),
        "tier": rng.integers(0, 3, n), "ts": ts, "status": np.where(y == 1, "fraud", "ok"),
    })


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return bool(np.isclose(a, b, rtol=1e-9, atol=1e-12))
    return a == b


def same_slices(a, b) -> None:
    """Two SliceTables hold the same groups with the same values (float sums up to rounding)."""
    names = a.sketches.key_names
    assert names == b.sketches.key_names and a.columns == b.columns
    rows_a = {tuple(r[k] for k in names): r for r in a.rows}
    rows_b = {tuple(r[k] for k in names): r for r in b.rows}
    assert len(rows_a) == len(a.rows) and rows_a.keys() == rows_b.keys()
    for key, row in rows_a.items():
        bad = {c: (row[c], rows_b[key][c]) for c in a.columns if not _close(row[c], rows_b[key][c])}
        assert not bad, (key, bad)
    assert a.overall.sketch.n_rows == b.overall.sketch.n_rows
    same(a.overall.sketch, b.overall.sketch, weighted=True)


def multiclass_frame(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    raw = rng.integers(1, 20, (n, 3)).astype(float)
    raw[np.arange(n), y] += 8
    p = raw / raw.sum(1, keepdims=True)
    return pd.DataFrame({"animal": np.array(["cat", "dog", "eel"])[y], "k": y, "w": rng.uniform(0.5, 2, n),
                         **{f"p_{j}": p[:, j] for j in range(3)}})


def same_multiclass(a, b) -> None:
    """Two multiclass sketches: equal classes, counts, min/max; sums up to rounding."""
    pa_, pb = a._parts(), b._parts()
    assert pa_.keys() == pb.keys()
    for key in pa_:
        x, y = pa_[key], pb[key]
        if key == "counters":
            assert x.keys() == y.keys()
            for name in x:
                np.testing.assert_allclose(np.asarray(x[name], float), np.asarray(y[name], float), rtol=1e-9, atol=1e-9)
        elif key in ("ovr_values", "pair_values"):
            assert x.shape == y.shape
            np.testing.assert_array_equal(x[..., 1:3], y[..., 1:3])  # min, max
            np.testing.assert_allclose(x[..., [0, 3]], y[..., [0, 3]], rtol=1e-9, atol=1e-12)
        elif isinstance(x, np.ndarray):
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
        else:
            assert x == y, key


def json_close(a, b, path=""):
    """Two JSON documents agree: same structure, equal values, floats up to rounding."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            json_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            json_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path

