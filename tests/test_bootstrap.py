"""Poisson bootstrap: replicate weights, mergeable replicates, intervals for any metric, the file section."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import poisson
from sklearn.metrics import average_precision_score, f1_score, roc_auc_score

import streameval
from streameval.errors import InputError, SketchFormatError, UndefinedMetricWarning, UsageError
from streameval.grid import LinearGrid, ProbabilityGrid
from streameval.sketch.bootstrap import CorrelatedReplicatesWarning
from streameval.stats.bootstrap import replicate_estimates

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1


# -- an independent, pure-Python reading of the weight spec (kernels/bootstrap.py docstring) -----
def _mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _reference_weights(row_id: int, seed: int, n_replicates: int) -> list[int]:
    s = _mix64((seed + 0x9E3779B97F4A7C15) & M64)
    key = _mix64((row_id & M64) ^ s)
    lo, hi = key & M32, key >> 32
    cdf = np.cumsum([math.exp(-1) / math.factorial(j) for j in range(12)])
    thresholds = [min(round(c * 2.0**32), M32) for c in cdf]
    out = []
    for r in range(n_replicates):
        h = lo ^ ((hi + r * 0x9E3779B9) & M32)
        h = ((h ^ (h >> 16)) * 0x85EBCA6B) & M32
        h = ((h ^ (h >> 13)) * 0xC2B2AE35) & M32
        h ^= h >> 16
        out.append(sum(h >= t for t in thresholds))
    return out


def _data(n: int, seed: int, decimals: int | None = 2):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(int)
    p = 1.0 / (1.0 + np.exp(-rng.normal(1.2 * y - 0.4, 1.0)))
    if decimals is not None:
        p = np.round(p, decimals)
    return y, p


def _pure_grid(decimals: int = 2) -> LinearGrid:
    step = 10.0**-decimals
    return LinearGrid(-step / 2, 1 + step / 2, 10**decimals + 1)  # one bin per rounded value


def test_replicate_weights_follow_the_spec_and_poisson_1() -> None:
    n, R, seed = 3000, 40, 12345
    ids = np.arange(10_000, 10_000 + n)
    y = np.zeros(n, dtype=int)
    y[::3] = 1
    s = streameval.BinarySketch(LinearGrid(0, 1, 1), bootstrap=R, seed=seed).update(y, np.full(n, 0.5), row_id=ids)
    keys, w = s.replicates.compact()
    expected = np.zeros((2, R))
    for i, c in zip(ids[:300], y[:300], strict=True):
        expected[c] += _reference_weights(int(i), seed, R)
    first = streameval.BinarySketch(LinearGrid(0, 1, 1), bootstrap=R, seed=seed).update(y[:300], np.full(300, 0.5), row_id=ids[:300])
    assert np.array_equal(first.replicates.compact()[1][0], expected)
    # The weights of all n * R draws follow Poisson(1): chi-square on the counts of k = 0..4, >= 5.
    draws = np.array([_reference_weights(int(i), seed, 8) for i in ids[:2000]]).ravel()
    counts = np.bincount(np.minimum(draws, 5), minlength=6)
    probs = np.r_[poisson.pmf(np.arange(5), 1.0), poisson.sf(4, 1.0)]
    chi2 = float((((counts - probs * draws.size) ** 2) / (probs * draws.size)).sum())
    assert chi2 < 25.0  # 5 degrees of freedom: p < 1e-4 only if the weights are wrong
    assert w.sum(axis=(0, 1)).mean() == pytest.approx(n, rel=0.02)


@pytest.mark.parametrize("splits", [[0, 1000], [0, 333, 334, 2000], [0, 1, 1999]])
def test_shards_with_row_id_merge_into_the_one_pass_replicates(splits: list[int]) -> None:
    y, p = _data(2000, 1)
    ids = np.arange(2000) * 7 + 3
    whole = streameval.BinarySketch(bootstrap=30, seed=9).update(y, p, row_id=ids)
    order = np.random.default_rng(0).permutation(2000)  # any order, any split
    bounds = splits + [2000]
    shards = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        rows = order[a:b]
        shards.append(streameval.BinarySketch(bootstrap=30, seed=9).update(y[rows], p[rows], row_id=ids[rows]))
    merged = streameval.merge(shards[::-1])
    k1, w1 = merged.replicates.compact()
    k2, w2 = whole.replicates.compact()
    assert np.array_equal(k1, k2) and np.array_equal(w1, w2)
    # string ids: the same guarantee
    sid = np.array([f"row-{i}" for i in ids])
    a = streameval.BinarySketch(bootstrap=30, seed=9).update(y, p, row_id=sid)
    b = streameval.merge([streameval.BinarySketch(bootstrap=30, seed=9).update(y[order[:700]], p[order[:700]], row_id=sid[order[:700]]),
                          streameval.BinarySketch(bootstrap=30, seed=9).update(y[order[700:]], p[order[700:]], row_id=sid[order[700:]])])
    assert a.replicates == b.replicates


@pytest.mark.parametrize("seed", range(4))
def test_each_replicate_equals_sklearn_with_poisson_weights(seed: int) -> None:
    y, p = _data(600, seed)
    ids = np.arange(600) + 1000 * seed
    R = 12
    s = streameval.BinarySketch(_pure_grid(), bootstrap=R, seed=seed).update(y, p, row_id=ids)
    weights = np.array([_reference_weights(int(i), seed, R) for i in ids], dtype=float)  # (n, R)
    lo, hi = replicate_estimates(s, "roc_auc")
    ap_lo, ap_hi = replicate_estimates(s, "average_precision")
    f1_lo, _ = replicate_estimates(s, "f1@0.5")
    ll_lo, ll_hi = replicate_estimates(s, "log_loss")
    for r in range(R):
        w = weights[:, r]
        assert lo[r] == hi[r] == pytest.approx(roc_auc_score(y, p, sample_weight=w), abs=1e-12)
        assert ap_lo[r] == ap_hi[r] == pytest.approx(average_precision_score(y, p, sample_weight=w), abs=1e-12)
        assert f1_lo[r] == pytest.approx(f1_score(y, p >= 0.5, sample_weight=w), abs=1e-12)
        pt = np.where(y == 1, p, 1 - p)
        ref = float((w * -np.log(np.clip(pt, 2.0**-52, 1 - 2.0**-52))).sum() / w.sum())
        assert ll_lo[r] == pytest.approx(ref, rel=1e-12) and ll_hi[r] == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss", "brier_score"])
@pytest.mark.parametrize("seed", range(5))
def test_interval_contains_exact_rows_percentile_interval(metric: str, seed: int) -> None:
    """On continuous scores and a coarse grid, the interval contains the exact rows' one."""
    y, p = _data(800, 50 + seed, decimals=None)
    ids = np.arange(800)
    R = 40
    s = streameval.BinarySketch(ProbabilityGrid(mantissa_bits=2), bootstrap=R, seed=seed).update(y, p, row_id=ids)
    weights = np.array([_reference_weights(int(i), seed, R) for i in ids], dtype=float)
    pt = np.where(y == 1, p, 1 - p)

    def exact(w: np.ndarray) -> float:
        if metric == "roc_auc":
            return float(roc_auc_score(y, p, sample_weight=w))
        if metric == "average_precision":
            return float(average_precision_score(y, p, sample_weight=w))
        loss = -np.log(np.clip(pt, 2.0**-52, 1 - 2.0**-52)) if metric == "log_loss" else (1 - pt) ** 2
        return float((w * loss).sum() / w.sum())

    values = np.array([exact(weights[:, r]) for r in range(R)])
    ci = s.ci(metric, method="bootstrap", level=0.9)
    assert ci.widened
    assert ci.ci_lower <= np.quantile(values, 0.05) + 1e-12
    assert np.quantile(values, 0.95) <= ci.ci_upper + 1e-12
    lo, hi = replicate_estimates(s, metric)
    assert np.all(lo <= values + 1e-12) and np.all(values <= hi + 1e-12)


def test_interval_is_close_to_delong_on_large_samples() -> None:
    y, p = _data(20_000, 3, decimals=3)
    s = streameval.BinarySketch(_pure_grid(3), bootstrap=200, seed=1).update(y, p, row_id=np.arange(20_000))
    boot, delong = s.ci("roc_auc", method="bootstrap"), s.ci("roc_auc")
    assert boot.method.startswith("bootstrap") and not boot.widened
    assert boot.width == pytest.approx(delong.width, rel=0.25)
    assert boot.ci_lower < float(s.roc_auc()) < boot.ci_upper


def test_round_trip_version_2_and_merge_with_empty() -> None:
    y, p = _data(500, 2)
    s = streameval.BinarySketch(bootstrap=10, seed=3).update(y, p, row_id=np.arange(500))
    for compress in (True, False):
        data = s.to_bytes(compress=compress)
        assert int.from_bytes(data[8:10], "little") == 2
        back = streameval.BinarySketch.from_bytes(data)
        assert back == s and back.replicates is not None and back.replicates.keyed == "row_id"
    plain = streameval.BinarySketch().update(y, p)
    assert int.from_bytes(plain.to_bytes()[8:10], "little") == 3  # compact bins (no replicates)
    assert int.from_bytes(plain.to_bytes(format_version=1)[8:10], "little") == 1
    assert streameval.merge([streameval.BinarySketch(), s]) == s
    assert s.copy() == s


def test_corrupt_replicate_sections_are_refused() -> None:
    y, p = _data(300, 4)
    s = streameval.BinarySketch(LinearGrid(0, 1, 50), bootstrap=4, seed=0).update(y, p, row_id=np.arange(300))
    keys, w = s.replicates.compact()
    bad = s.copy()
    bad.replicates.weights = w.copy()
    bad.replicates.weights[0, 0, 0] = -1.0
    with pytest.raises(SketchFormatError, match="finite and >= 0"):
        streameval.BinarySketch.from_bytes(bad.to_bytes())
    bad.replicates.weights = w.copy()
    bad.replicates.keys = keys.copy()
    bad.replicates.keys[-1] = 0 if keys[0] != 0 else 51  # not an occupied bin of the sketch
    bad.replicates.keys.sort()
    with pytest.raises(SketchFormatError):
        streameval.BinarySketch.from_bytes(bad.to_bytes())


def test_errors_say_what_to_do() -> None:
    y, p = _data(100, 5)
    with pytest.raises(InputError, match="bootstrap"):
        streameval.BinarySketch(bootstrap=1)
    with pytest.raises(InputError, match="bootstrap=R"):
        streameval.BinarySketch().update(y, p, row_id=np.arange(100))
    with pytest.raises(UsageError, match="no bootstrap replicates"):
        streameval.BinarySketch().update(y, p).ci("roc_auc", method="bootstrap")
    s = streameval.BinarySketch(bootstrap=5).update(y, p, row_id=np.arange(100))
    with pytest.raises(InputError, match="keyed by row_id"):
        s.update(y, p)
    with pytest.raises(InputError, match="null"):
        streameval.BinarySketch(bootstrap=5).update(y[:3], p[:3], row_id=[1, None, 3])
    with pytest.raises(InputError, match="rows"):
        streameval.BinarySketch(bootstrap=5).update(y, p, row_id=np.arange(99))
    before = s.replicates.copy()
    with pytest.raises(InputError):
        s.update(y, p, row_id=np.arange(5))  # rejected chunk: nothing changes
    assert s.replicates == before
    with pytest.raises(InputError, match="differ"):
        streameval.merge([s, streameval.BinarySketch(bootstrap=6).update(y, p, row_id=np.arange(100))])
    with pytest.raises(InputError, match="without"):
        streameval.merge([s, streameval.BinarySketch().update(y, p)])
    with pytest.raises(UsageError, match="cut"):
        streameval.BinarySketch(ProbabilityGrid(0), bootstrap=5).update(y, p, row_id=np.arange(100)).ci(
            "f1", method="bootstrap", threshold=0.53)
    a = streameval.BinarySketch(bootstrap=5).update(y, p)
    b = streameval.BinarySketch(bootstrap=5).update(y, p)
    with pytest.warns(CorrelatedReplicatesWarning):
        streameval.merge([a, b])


def test_undefined_replicates_warn() -> None:
    y = np.array([0] * 30 + [1])
    p = np.linspace(0, 1, 31)
    s = streameval.BinarySketch(bootstrap=50).update(y, p, row_id=np.arange(31))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ci = s.ci("roc_auc", method="bootstrap")
    assert any(issubclass(w.category, UndefinedMetricWarning) for w in caught)
    assert math.isnan(ci.ci_lower) or ci.ci_lower <= ci.ci_upper


def test_callable_metric_and_recall_at_fpr() -> None:
    y, p = _data(3000, 6)
    s = streameval.BinarySketch(_pure_grid(), bootstrap=60, seed=2).update(y, p, row_id=np.arange(3000))
    ci = s.ci(lambda sk: sk.roc_auc(max_fpr=0.2))
    assert ci.ci_lower < float(s.roc_auc(max_fpr=0.2)) < ci.ci_upper
    r = s.ci("recall_at_fpr@0.1", method="bootstrap")
    assert 0 <= r.ci_lower <= r.ci_upper <= 1


# -- golden files of format version 2 ------------------------------------------------------------
def _golden():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent / "golden" / "make_golden.py"
    spec = importlib.util.spec_from_file_location("make_golden", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["bootstrap", "weighted-kish"])
def test_golden_files_of_session_5(name: str) -> None:
    """Never regenerate these golden files: they pin what every release must read."""
    mod = _golden()
    version = 2 if name == "bootstrap" else 1
    path = mod.path_for(name, version)
    data = path.read_bytes()
    assert int.from_bytes(data[8:10], "little") == version
    decoded = streameval.load(path)
    rebuilt = (mod.build_v2() if version == 2 else mod.build_v1_kish())[name]
    assert decoded == rebuilt or (
        decoded.replicates == rebuilt.replicates and float(decoded.roc_auc()) == float(rebuilt.roc_auc())
    )
    if name == "bootstrap":
        assert decoded.replicates.n_replicates == 6 and decoded.replicates.keyed == "row_id"
        ci = decoded.ci("roc_auc", method="bootstrap", level=0.5)
        assert ci.ci_lower <= ci.ci_upper
    else:
        w = 0.5 + (np.arange(50) % 4) * 0.75
        assert decoded.counters["weight_sq_neg"] + decoded.counters["weight_sq_pos"] == pytest.approx((w * w).sum())
        assert b'"weight_sq":[' in data  # a top-level key: older readers ignore it


def test_row_ids_agree_across_containers_and_dictionary_strings() -> None:
    """uint64 ids above 2**63 and dictionary-encoded strings key the same weights in any container."""
    import pyarrow as pa

    y = np.array([0, 1, 1, 0, 1])
    p = np.array([0.1, 0.8, 0.6, 0.3, 0.9])
    big = np.array([2**63 + 5, 2**64 - 1, 7, 2**63, 12], dtype=np.uint64)
    a = streameval.BinarySketch(bootstrap=8, seed=4).update(y, p, row_id=big)
    b = streameval.BinarySketch(bootstrap=8, seed=4).update(y, p, row_id=pa.array(big))
    assert a.replicates == b.replicates
    names = ["u1", "u2", "u3", "u4", "u5"]
    c = streameval.BinarySketch(bootstrap=8, seed=4).update(y, p, row_id=pa.array(names).dictionary_encode())
    d = streameval.BinarySketch(bootstrap=8, seed=4).update(y, p, row_id=names)
    assert c.replicates == d.replicates


def test_merge_files_of_nothing_is_a_usage_error() -> None:
    from streameval.sketch.files import merge_files

    with pytest.raises(UsageError, match="nothing to merge"):
        merge_files([])
