"""Score drift from histograms against independent computations on the raw rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from scipy.spatial.distance import jensenshannon

from streameval import BinarySketch, LinearGrid
from streameval.errors import UsageError
from streameval.sketch.sketchset import SketchSet
from streameval.stats import score_drift


def _hist(s, grid=None):
    ss = SketchSet([], grid).update([], np.full(s.size, np.nan), s)  # scores only, labels not needed
    return ss.score_histogram(())


def _reference_psi(a, r, buckets=10, eps=1e-4):
    """PSI on raw discrete values: buckets cut where the reference's cumulative share crosses k/buckets."""
    vals = np.unique(np.r_[a, r])
    cr = pd.Series(r).value_counts().reindex(vals, fill_value=0).to_numpy() / r.size
    ca = pd.Series(a).value_counts().reindex(vals, fill_value=0).to_numpy() / a.size
    before = np.cumsum(cr) - cr
    b = np.minimum(np.floor(before * buckets + 1e-12), buckets - 1).astype(int)
    _, b = np.unique(b, return_inverse=True)
    pa, pr = np.bincount(b, ca), np.bincount(b, cr)
    qa, qr = np.where(pa > 0, pa, eps), np.where(pr > 0, pr, eps)
    return float(np.sum((qa - qr) * np.log(qa / qr))), pa, pr


@pytest.mark.parametrize("shift", [0.0, 0.05, 0.3])
def test_discrete_drift_equals_raw_row_references(shift):
    rng = np.random.default_rng(int(shift * 100))
    r = np.round(rng.beta(2, 5, 20000), 3)
    a = np.round(np.clip(rng.beta(2, 5, 15000) + shift, 0, 1), 3)
    (ka, wa, la, ha), (kr, wr, lr, hr) = _hist(a), _hist(r)
    d = score_drift(ka, wa, kr, wr, ranges=(la, ha, lr, hr))
    psi, pa, pr = _reference_psi(a, r)
    assert d.psi == pytest.approx(psi, rel=1e-9, abs=1e-12)
    assert d.ks.exact and d.ks.value == pytest.approx(sps.ks_2samp(a, r).statistic, abs=1e-12)
    assert d.js == pytest.approx(jensenshannon(pa, pr, base=2) ** 2, abs=1e-12)
    if shift == 0.0:
        assert d.psi < 0.01
    if shift == 0.3:
        assert d.psi > 0.25


def test_continuous_ks_lies_inside_its_interval():
    rng = np.random.default_rng(1)
    for trial in range(30):
        r, a = rng.random(3000), rng.random(2000) ** (1 + trial / 30)
        grid = LinearGrid(0, 1, 16)
        (ka, wa, la, ha), (kr, wr, lr, hr) = _hist(a, grid), _hist(r, grid)
        d = score_drift(ka, wa, kr, wr, ranges=(la, ha, lr, hr))
        ks = sps.ks_2samp(a, r).statistic
        assert d.ks.lower - 1e-12 <= ks <= d.ks.upper + 1e-12


def test_bad_input():
    k, w, _, _ = _hist(np.array([0.1, 0.2]))
    with pytest.raises(UsageError):
        score_drift(k, w, [], [])
    with pytest.raises(UsageError):
        score_drift(k, w, k, w, buckets=1)
    t = BinarySketch().update([0, 1], [0.1, 0.2]).table()  # a sketch's table works too
    d = score_drift(t.keys, t.pos + t.neg, k, w)
    assert d.psi == pytest.approx(0.0) and d.ks.value == 0.0
