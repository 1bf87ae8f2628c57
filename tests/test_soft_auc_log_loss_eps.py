"""Soft-AUC and log loss with an explicit clipping eps, against brute force on the raw rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streameval import BinarySketch, LinearGrid, ProbabilityGrid, UndefinedMetricWarning

# Resolves probabilities down to 2**-64 (the default grid pools everything below 2**-30 in one bin).
FINE = ProbabilityGrid(mantissa_bits=12, min_exponent=-64)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # a formula independent of the library's split form


def soft_auc_brute(y, s, beta, w=None):
    w = np.ones_like(s) if w is None else w
    pos, neg = y == 1, y == 0
    pair_w = w[pos][:, None] * w[neg][None, :]
    return float((pair_w * _sigmoid(beta * (s[pos][:, None] - s[neg][None, :]))).sum() / pair_w.sum())


def log_loss_brute(y, s, eps, w=None):
    w = np.ones_like(s) if w is None else w
    p = np.clip(np.where(y == 1, s, 1.0 - s), eps, 1.0 - eps)
    return float(-(w * np.log(p)).sum() / w.sum())


@pytest.mark.parametrize("beta", [0.5, 10.0, 200.0])
def test_soft_auc_exact_on_discrete_scores(beta):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 3000)
    s = rng.integers(0, 40, 3000) / 40.0 + 0.2 * y
    s = np.clip(s, 0, 1)
    w = rng.uniform(0.1, 3.0, 3000)
    e = BinarySketch().update(y, s, w).soft_auc(beta)
    ref = soft_auc_brute(y, s, beta, w)
    assert e.exact
    assert e.value == pytest.approx(ref, abs=1e-12)


def test_soft_auc_bounds_contain_raw_value_on_continuous_scores():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 4000)
    s = 1 / (1 + np.exp(-(rng.normal(size=4000) + y)))
    for grid in (None, LinearGrid(0, 1, 50)):
        e = BinarySketch(grid).update(y, s).soft_auc(20.0)
        ref = soft_auc_brute(y, s, 20.0)
        assert e.lower - 1e-12 <= ref <= e.upper + 1e-12
        assert e.lower <= e.value <= e.upper
    coarse = BinarySketch(LinearGrid(0, 1, 50)).update(y, s).soft_auc(20.0)
    assert coarse.width > 0


def test_soft_auc_pooling_keeps_rigorous_bounds():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 5000)
    s = rng.integers(0, 2000, 5000) / 2000.0
    sk = BinarySketch().update(y, s)
    exact = sk.soft_auc(5.0)
    pooled = sk.soft_auc(5.0, max_pairs=400)
    assert exact.exact and not pooled.exact
    assert pooled.lower <= exact.value <= pooled.upper


def test_soft_auc_tends_to_roc_auc_and_handles_bad_input():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 2000)
    s = rng.integers(0, 30, 2000) / 30.0
    sk = BinarySketch().update(y, s)
    # Ties give sigmoid(0) = 1/2, as ROC-AUC counts them; distinct scores saturate at large beta.
    assert sk.soft_auc(1e6).value == pytest.approx(float(sk.roc_auc()), abs=1e-9)
    with pytest.raises(ValueError, match="beta"):
        sk.soft_auc(0.0)
    with pytest.raises(ValueError, match="beta"):
        sk.soft_auc(math.inf)
    one_class = BinarySketch().update(np.ones(5, int), np.linspace(0, 1, 5))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(one_class.soft_auc(1.0).value)


@pytest.mark.parametrize("eps", [1e-15, 1e-7, 1e-3, 1e-17])
def test_log_loss_with_explicit_eps_matches_brute_force(eps):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 3000)
    # Discrete scores, some of them inside the clipped zones at both ends.
    values = np.array([0.0, 1e-18, 1e-16, 5e-16, 1e-9, 1e-4, 0.3, 0.5, 0.9, 1 - 1e-9, 1 - 1e-4, 1.0])
    s = values[rng.integers(0, values.size, 3000)]
    w = rng.uniform(0.5, 2.0, 3000)
    e = BinarySketch(FINE).update(y, s, w).log_loss(eps=eps)
    assert e.exact
    assert e.value == pytest.approx(log_loss_brute(y, s, eps, w), rel=1e-12)


def test_log_loss_with_eps_bounds_on_continuous_scores_and_default_is_float():
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 4000)
    s = 10.0 ** rng.uniform(-20, 0, 4000)  # spans the clip point 1e-15 and beyond
    ref = log_loss_brute(y, s, 1e-15)
    widths = []
    for grid in (None, FINE):
        sk = BinarySketch(grid).update(y, s)
        assert isinstance(sk.log_loss(), float)
        e = sk.log_loss(eps=1e-15)
        assert e.lower - 1e-12 <= ref <= e.upper + 1e-12
        widths.append(e.width)
    # The fine grid separates the scores around the clip point: bounds within 0.1% of the value.
    assert widths[1] < 1e-3 * ref < widths[0]
    with pytest.raises(ValueError, match="eps"):
        sk.log_loss(eps=0.0)
