"""DeLong's paired test (two passes) against a brute-force DeLong on the raw rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import streameval
from streameval.errors import InputError
from streameval.grid import LinearGrid, ProbabilityGrid
from streameval.stats.paired import PairedPlacements, paired_delong


def _placements(y: np.ndarray, s: np.ndarray, w: np.ndarray):
    """V10 per positive and V01 per negative by an O(n_pos x n_neg) pair count (ties 1/2)."""
    pos, neg = s[y == 1], s[y == 0]
    wp, wn = w[y == 1], w[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10 = psi @ wn / wn.sum()
    v01 = wp @ psi / wp.sum()
    return v10, v01


def brute_paired(y, s1, s2, w=None, level=0.95):
    w = np.ones_like(s1) if w is None else w
    v10a, v01a = _placements(y, s1, w)
    v10b, v01b = _placements(y, s2, w)
    wp, wn = w[y == 1], w[y == 0]
    P, N = wp.sum(), wn.sum()
    a1, a2 = wp @ v10a / P, wp @ v10b / P

    def cov(x, ax, z, az, ww, n):
        return float(ww @ ((x - ax) * (z - az)) / (n - 1))

    var = lambda v10, v01, a: cov(v10, a, v10, a, wp, P) / P + cov(v01, a, v01, a, wn, N) / N  # noqa: E731
    c = cov(v10a, a1, v10b, a2, wp, P) / P + cov(v01a, a1, v01b, a2, wn, N) / N
    vd = var(v10a, v01a, a1) + var(v10b, v01b, a2) - 2 * c
    d = a1 - a2
    z = d / math.sqrt(vd)
    q = norm.ppf(1 - (1 - level) / 2)
    return d, z, 2 * norm.sf(abs(z)), (d - q * math.sqrt(vd), d + q * math.sqrt(vd))


def _run(y, s1, s2, grid, w=None, chunks=3):
    a = streameval.BinarySketch(grid).update(y, s1, w)
    b = streameval.BinarySketch(grid).update(y, s2, w)
    acc = PairedPlacements(a, b)
    for part in np.array_split(np.arange(y.shape[0]), chunks):
        acc.add(y[part], s1[part], s2[part], None if w is None else w[part])
    return paired_delong(a, b, acc)


@pytest.mark.parametrize("seed", range(8))
def test_discrete_scores_equal_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 600))
    y = (rng.random(n) < rng.uniform(0.1, 0.6)).astype(int)
    y[:2] = [0, 1]
    base = rng.normal(y, 1.0)
    s1 = np.round(1 / (1 + np.exp(-base)), 2)
    s2 = np.round(1 / (1 + np.exp(-(base * 0.6 + rng.normal(0, 1, n)))), 2)
    w = rng.integers(1, 4, n).astype(float) if seed % 2 else None
    res = _run(y, s1, s2, LinearGrid(-0.005, 1.005, 101), w)
    d, z, p, (lo, hi) = brute_paired(y, s1, s2, w)
    assert not res.widened
    assert res.estimate.value == pytest.approx(d, abs=1e-12)
    assert res.statistic.value == pytest.approx(z, rel=1e-9, abs=1e-12)
    assert res.p_value.value == pytest.approx(p, rel=1e-9, abs=1e-15)
    assert (res.ci_lower, res.ci_upper) == pytest.approx((max(lo, -1), min(hi, 1)), abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_binned_scores_contain_exact_rows_values(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(40, 800))
    y = (rng.random(n) < 0.4).astype(int)
    y[:2] = [0, 1]
    base = rng.normal(y * 1.2, 1.0)
    s1 = 1 / (1 + np.exp(-base))
    s2 = 1 / (1 + np.exp(-(base * 0.5 + rng.normal(0, 1, n))))
    res = _run(y, s1, s2, ProbabilityGrid(mantissa_bits=int(rng.integers(0, 5))))
    d, z, p, (lo, hi) = brute_paired(y, s1, s2)
    assert res.estimate.lower - 1e-12 <= d <= res.estimate.upper + 1e-12
    assert res.statistic.lower - 1e-9 <= z <= res.statistic.upper + 1e-9
    assert res.p_value.lower - 1e-12 <= p <= res.p_value.upper + 1e-12
    assert res.ci_lower <= lo + 1e-12 and min(hi, 1) <= res.ci_upper + 1e-12


def test_same_model_twice_is_no_difference_and_changed_source_is_refused() -> None:
    rng = np.random.default_rng(1)
    y = (rng.random(300) < 0.5).astype(int)
    s = np.round(rng.random(300), 2)
    res = _run(y, s, s, LinearGrid(-0.005, 1.005, 101))
    assert res.estimate.value == 0 and res.ci_lower == pytest.approx(0, abs=1e-7)  # variance cancels to ~1e-17
    a = streameval.BinarySketch().update(y, s)
    b = streameval.BinarySketch().update(y, s)
    acc = PairedPlacements(a, b)
    acc.add(y[:100], s[:100], s[:100])
    with pytest.raises(InputError, match="changed between the passes"):
        paired_delong(a, b, acc)
    with pytest.raises(InputError, match="same rows"):
        paired_delong(a, streameval.BinarySketch().update(y[:200], s[:200]), PairedPlacements(a, b))


def _log(tmp_path, n=3000, seed=0):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    base = rng.normal(y, 1.0)
    m1 = np.round(1 / (1 + np.exp(-base)), 2)
    m2 = np.round(1 / (1 + np.exp(-(0.8 * base + rng.normal(0, 0.8, n)))), 2)
    path = tmp_path / "preds.parquet"
    for i in range(3):  # three files: read in several batches
        part = slice(i * n // 3, (i + 1) * n // 3)
        pq.write_table(pa.table({"y": y[part], "m1": m1[part], "m2": m2[part], "id": np.arange(n)[part]}),
                       tmp_path / f"part-{i}.parquet")
    return tmp_path, y, m1, m2, path


def test_compare_paired_on_files_equals_brute_force(tmp_path) -> None:
    folder, y, m1, m2, _ = _log(tmp_path)
    res = streameval.compare_paired(str(folder), scores=["m1", "m2"], label="y", grid="linear:-0.005:1.005:101",
                                    batch_rows=700)
    d, z, p, (lo, hi) = brute_paired(y, m1, m2)
    assert res.rows == y.shape[0]
    assert res.delong.estimate.value == pytest.approx(d, abs=1e-12)
    assert res.delong.p_value.value == pytest.approx(p, rel=1e-9, abs=1e-300)
    assert (res.delong.ci_lower, res.delong.ci_upper) == pytest.approx((lo, hi), abs=1e-12)
    assert "m1" in res.verdict() and res.to_dict()["delong"]["method"] == "DeLong paired"


def test_paired_bootstrap_agrees_with_delong_and_is_reproducible(tmp_path) -> None:
    folder, *_ = _log(tmp_path, n=4000, seed=3)
    kw = dict(scores=["m1", "m2"], label="y", bootstrap=200, seed=5, row_id="id")
    a = streameval.compare_paired(str(folder), **kw)
    b = streameval.compare_paired(str(folder), batch_rows=333, **kw)
    assert a.bootstrap is not None and a.bootstrap.method.startswith("bootstrap paired")
    assert (a.bootstrap.ci_lower, a.bootstrap.ci_upper) == (b.bootstrap.ci_lower, b.bootstrap.ci_upper)
    wd, wb = a.delong.ci_upper - a.delong.ci_lower, a.bootstrap.ci_upper - a.bootstrap.ci_lower
    assert wb == pytest.approx(wd, rel=0.3)
    # Positively correlated models: the paired interval is narrower than the unpaired DeLong one.
    from streameval.stats import compare_auc

    unpaired = compare_auc(a.first.table(), a.second.table())
    assert unpaired.ci_upper - unpaired.ci_lower > 1.2 * wd


def test_paired_refuses_iterators_and_wrong_arity(tmp_path) -> None:
    folder, *_ = _log(tmp_path, n=300)
    from streameval.errors import UsageError

    with pytest.raises(UsageError, match="two score"):
        streameval.compare_paired(str(folder), scores=["m1"], label="y")
    with pytest.raises(UsageError, match="twice"):
        streameval.compare_paired(iter([]), scores=["m1", "m2"], label="y")
