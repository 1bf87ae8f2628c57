"""Log-loss and Brier confidence intervals from the bins (streameval.stats.loss)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

import streameval
from streameval.errors import UndefinedMetricWarning, UsageError
from streameval.grid import LinearGrid, ProbabilityGrid
from streameval.stats.interval import normal_quantile

EPS = float(np.finfo(np.float64).eps)


def _raw_ci(y: np.ndarray, p: np.ndarray, metric: str, level: float = 0.95, w: np.ndarray | None = None):
    """The textbook interval on the raw rows: mean +/- z s / sqrt(n) (frequency weights)."""
    pt = np.where(y == 1, p, 1.0 - p)
    loss = -np.log(np.clip(pt, EPS, 1 - EPS)) if metric == "log_loss" else (1.0 - pt) ** 2
    w = np.ones_like(p) if w is None else w
    n = w.sum()
    mean = float((w * loss).sum() / n)
    var = float((w * (loss - mean) ** 2).sum() / (n - 1))
    half = normal_quantile(level) * math.sqrt(var / n)
    return mean, max(mean - half, 0.0), mean + half


@pytest.mark.parametrize("metric", ["log_loss", "brier_score"])
@pytest.mark.parametrize("seed", range(6))
def test_discrete_scores_equal_raw_rows(metric: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 3000))
    p = np.round(rng.beta(2, 3, n), 2)
    y = (rng.random(n) < p).astype(int)
    s = streameval.BinarySketch(LinearGrid(-0.005, 1.005, 101))
    s.update(y, p)
    ci = s.ci(metric)
    mean, lo, hi = _raw_ci(y, p, metric)
    assert not ci.widened
    assert ci.estimate.value == pytest.approx(mean, rel=1e-12)
    assert ci.ci_lower == pytest.approx(lo, rel=1e-9, abs=1e-12)
    assert ci.ci_upper == pytest.approx(hi, rel=1e-9)
    ref = log_loss(y, p) if metric == "log_loss" else brier_score_loss(y, p)
    assert ci.estimate.value == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("metric", ["log_loss", "brier_score"])
@pytest.mark.parametrize("seed", range(25))
def test_continuous_scores_contain_raw_rows_interval(metric: str, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(20, 5000))
    p = rng.beta(0.5, 2.0, n)
    p[rng.random(n) < 0.02] = rng.choice([0.0, 1.0, 1e-18])  # clipped rows too
    y = (rng.random(n) < np.clip(p * 1.3, 0, 1)).astype(int)
    grid = ProbabilityGrid(mantissa_bits=int(rng.integers(0, 6)))  # coarse: bins hold many scores
    ci = streameval.BinarySketch(grid).update(y, p).ci(metric, level=float(rng.choice([0.8, 0.95, 0.99])))
    _, lo, hi = _raw_ci(y, p, metric, ci.level)
    assert ci.widened
    assert ci.ci_lower <= lo + 1e-12 and hi <= ci.ci_upper + 1e-12


def test_weighted_without_kish_reads_frequency_weights() -> None:
    rng = np.random.default_rng(7)
    p = np.round(rng.random(400), 1)
    y = (rng.random(400) < p).astype(int)
    w = rng.integers(1, 4, 400).astype(float)
    s = streameval.BinarySketch(LinearGrid(-0.05, 1.05, 11))
    s.update(y, p, sample_weight=w)
    s.counters.pop("weight_sq_pos", None)  # as a sketch written before the counter existed
    s.counters.pop("weight_sq_neg", None)
    ci = s.ci("brier_score")
    _, lo, hi = _raw_ci(y, p, "brier_score", w=w)
    assert ci.method == "normal"
    assert (ci.ci_lower, ci.ci_upper) == pytest.approx((lo, hi), rel=1e-9)


def test_undefined_and_bad_arguments() -> None:
    s = streameval.BinarySketch().update([1], [0.3])
    with pytest.warns(UndefinedMetricWarning):
        ci = s.ci("log_loss")
    assert math.isnan(ci.ci_lower) and math.isnan(ci.ci_upper)
    with pytest.raises(UsageError):
        s.ci("log_loss", level=95)
    with pytest.raises(UsageError):
        s.ci("brier_score", method="bootstrap")
    logits = streameval.BinarySketch().update([0, 1, 1], [-2.0, 0.5, 3.0])
    with pytest.raises(ValueError, match="outside"):
        logits.ci("log_loss")
    empty = streameval.BinarySketch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        assert math.isnan(empty.ci("brier_score").estimate.value)


def test_report_shows_loss_intervals() -> None:
    rng = np.random.default_rng(3)
    p = rng.random(2000)
    y = (rng.random(2000) < p).astype(int)
    report = streameval.Report.from_sketch(
        streameval.BinarySketch().update(y, p), ci=streameval.report.CIOptions()
    )
    for key in ("log_loss", "brier"):
        band = report.metrics[key]["ci"]
        assert band["lower"] < report.metrics[key]["value"] < band["upper"]
        assert band["method"] == "normal"
    assert "95% CI" in str(report)


def _kish_wilson(x: float, n: float, z: float) -> tuple[float, float]:
    center = (x + z * z / 2) / (n + z * z)
    half = z * math.sqrt(x * (n - x) / n + z * z / 4) / (n + z * z)
    return center - half, center + half


def test_kish_effective_size_in_rate_and_auc_intervals() -> None:
    """With importance weights the intervals use n_eff = (sum w)^2 / sum w^2 per class."""
    rng = np.random.default_rng(11)
    n = 4000
    p = np.round(rng.random(n), 2)
    y = (rng.random(n) < p).astype(int)
    w = rng.choice([0.5, 1.0, 4.0], n)
    s = streameval.BinarySketch(LinearGrid(-0.005, 1.005, 101)).update(y, p, sample_weight=w)
    pos = y == 1
    assert s.counters["weight_sq_pos"] == pytest.approx((w[pos] ** 2).sum())
    ci = s.ci("recall", threshold=0.5)
    hit = pos & (p >= 0.5)
    P, n_eff = w[pos].sum(), w[pos].sum() ** 2 / (w[pos] ** 2).sum()
    lo, hi = _kish_wilson(w[hit].sum() / P * n_eff, n_eff, normal_quantile(0.95))
    assert ci.method == "Wilson, Kish n_eff"
    assert (ci.ci_lower, ci.ci_upper) == pytest.approx((lo, hi), rel=1e-9)
    assert ci.estimate.value == pytest.approx(w[hit].sum() / P, rel=1e-12)
    # Rescaling the weights changes nothing under Kish (it would under frequency weights).
    s2 = streameval.BinarySketch(LinearGrid(-0.005, 1.005, 101)).update(y, p, sample_weight=w * 1000)
    for metric, kw in (("recall", {"threshold": 0.5}), ("precision", {"threshold": 0.3}), ("roc_auc", {})):
        a, b = s.ci(metric, **kw), s2.ci(metric, **kw)
        assert (a.ci_lower, a.ci_upper) == pytest.approx((b.ci_lower, b.ci_upper), rel=1e-9)
    a, b = s.ci("log_loss"), s2.ci("log_loss")
    assert (a.ci_lower, a.ci_upper) == pytest.approx((b.ci_lower, b.ci_upper), rel=1e-9)
    # Unit weights: Kish's n_eff is the count, so the interval equals the unweighted one.
    ones = streameval.BinarySketch(LinearGrid(-0.005, 1.005, 101)).update(y, p, sample_weight=np.ones(n))
    plain = streameval.BinarySketch(LinearGrid(-0.005, 1.005, 101)).update(y, p)
    for metric, kw in (("recall", {"threshold": 0.5}), ("roc_auc", {}), ("brier_score", {})):
        a, b = ones.ci(metric, **kw), plain.ci(metric, **kw)
        assert (a.ci_lower, a.ci_upper) == pytest.approx((b.ci_lower, b.ci_upper), rel=1e-9)
    # Merging keeps the squared weights; an unweighted shard counts its rows as w = 1.
    half = n // 2
    m = streameval.merge([
        streameval.BinarySketch(LinearGrid(-0.005, 1.005, 101)).update(y[:half], p[:half]),
        streameval.BinarySketch(LinearGrid(-0.005, 1.005, 101)).update(y[half:], p[half:], sample_weight=w[half:]),
    ])
    w_all = np.r_[np.ones(half), w[half:]]
    assert m.counters["weight_sq_pos"] == pytest.approx((w_all[pos] ** 2).sum())
    assert streameval.BinarySketch.from_bytes(m.to_bytes()) == m


def test_kish_with_too_few_effective_rows_is_nan_not_a_crash() -> None:
    """One positive row of weight 5: Kish's effective size is 1, the DeLong CI is undefined."""
    y = np.r_[1, np.zeros(99, dtype=int)]
    p = np.linspace(0.01, 0.99, 100)
    w = np.r_[5.0, np.ones(99)]
    s = streameval.BinarySketch().update(y, p, sample_weight=w)
    with pytest.warns(UndefinedMetricWarning, match="effective sizes"):
        ci = s.ci("roc_auc")
    assert math.isnan(ci.ci_lower)
    # Scaling weights down changes nothing under Kish (it would under frequency weights).
    rng = np.random.default_rng(2)
    y = (rng.random(2000) < 0.4).astype(int)
    p = np.round(rng.random(2000), 2)
    a = streameval.BinarySketch().update(y, p, sample_weight=np.full(2000, 3.0)).ci("roc_auc")
    b = streameval.BinarySketch().update(y, p, sample_weight=np.full(2000, 1 / 2000)).ci("roc_auc")
    assert (a.ci_lower, a.ci_upper) == pytest.approx((b.ci_lower, b.ci_upper), rel=1e-9)


def test_absorb_and_unweighted_chunks_keep_the_squared_weights() -> None:
    rng = np.random.default_rng(5)
    y = (rng.random(400) < 0.5).astype(int)
    p = rng.random(400)
    w = rng.exponential(1.0, 400)
    a = streameval.BinarySketch().update(y[:200], p[:200])
    b = streameval.BinarySketch().update(y[200:], p[200:], sample_weight=w[200:])
    merged = streameval.merge([a, b])
    a._absorb(b)
    assert a.counters["weight_sq_pos"] == pytest.approx(merged.counters["weight_sq_pos"], rel=1e-12)
    # an unweighted chunk after a weighted one counts its rows with w = 1
    c = streameval.BinarySketch().update(y[200:], p[200:], sample_weight=w[200:]).update(y[:200], p[:200])
    assert c.counters["weight_sq_pos"] == pytest.approx(merged.counters["weight_sq_pos"], rel=1e-12)
    assert streameval.BinarySketch.from_bytes(c.to_bytes()) == c
    old = c.to_bytes(format_version=1)
    assert int.from_bytes(old[8:10], "little") == 1  # the weight_sq key keeps version 1 readable
    assert streameval.BinarySketch.from_bytes(old) == c
    assert streameval.BinarySketch.from_bytes(old).counters["weight_sq_pos"] == c.counters["weight_sq_pos"]


def test_corrupt_squared_weights_are_refused() -> None:
    import json
    import struct
    import zlib

    from streameval.errors import SketchFormatError

    rng = np.random.default_rng(6)
    y = (rng.random(300) < 0.5).astype(int)
    s = streameval.BinarySketch().update(y, rng.random(300), sample_weight=rng.exponential(1.0, 300))
    data = s.to_bytes(compress=False)
    hlen = struct.unpack_from("<I", data, 12)[0]
    header = json.loads(data[16:16 + hlen])
    for bad in ([1e-9, 1e-9], [1.0, -1.0], [1.0], "x"):
        header["weight_sq"] = bad
        hb = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        body = data[:12] + struct.pack("<I", len(hb)) + hb + data[16 + hlen:-4]
        with pytest.raises(SketchFormatError, match="weight_sq"):
            streameval.BinarySketch.from_bytes(body + struct.pack("<I", zlib.crc32(body)))
