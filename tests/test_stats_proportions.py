"""Proportion intervals (streameval.stats.proportions) against SciPy, published values and
raw-rows counts."""

from __future__ import annotations

import doctest
import math
import warnings

import numpy as np
import pytest
from scipy.special import betainc
from scipy.stats import binomtest
from stats_reference import random_rows

import streameval
from streameval.errors import InexactThresholdWarning, UndefinedMetricWarning, UsageError
from streameval.metrics.confusion import Confusion, confusion_from_counts
from streameval.stats import proportion_ci, rate_cis
from streameval.stats import proportions as prop_mod

CASES = [(0, 1), (1, 1), (0, 20), (1, 29), (3, 10), (15, 148), (81, 263), (263, 263), (500, 1000), (7, 10_000)]


@pytest.mark.parametrize("x, n", CASES)
@pytest.mark.parametrize("level", [0.8, 0.95, 0.999])
def test_wilson_and_clopper_pearson_match_scipy(x, n, level):
    ref = binomtest(x, n).proportion_ci(confidence_level=level, method="wilson")
    ci = proportion_ci(x, n, level, "wilson")
    assert ci.ci_lower == pytest.approx(ref.low, abs=1e-12) and ci.ci_upper == pytest.approx(ref.high, abs=1e-12)
    ref = binomtest(x, n).proportion_ci(confidence_level=level, method="exact")
    ci = proportion_ci(x, n, level, "clopper_pearson")
    assert ci.ci_lower == pytest.approx(ref.low, abs=1e-9) and ci.ci_upper == pytest.approx(ref.high, abs=1e-9)
    assert ci.estimate.value == x / n and ci.estimate.exact and not ci.widened


@pytest.mark.parametrize("x, n", CASES)
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_jeffreys_is_the_equal_tailed_posterior_interval(x, n, level):
    # Posterior Beta(x + 1/2, n - x + 1/2): each tail outside the interval holds (1 - level) / 2,
    # checked with the regularized incomplete beta function (not the quantile the code uses);
    # at x = 0 (x = n) the lower (upper) end is 0 (1), Brown, Cai & DasGupta (2001) section 4.1.2.
    ci = proportion_ci(x, n, level, "jeffreys")
    a, b, tail = x + 0.5, n - x + 0.5, (1 - level) / 2
    if x == 0:
        assert ci.ci_lower == 0.0
    else:
        assert betainc(a, b, ci.ci_lower) == pytest.approx(tail, rel=1e-8)
    if x == n:
        assert ci.ci_upper == 1.0
    else:
        assert 1 - betainc(a, b, ci.ci_upper) == pytest.approx(tail, rel=1e-8)


@pytest.mark.parametrize(
    "x, n, wilson, exact",
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison of
    # seven methods", Statistics in Medicine 17:857-872, Table II: method 3 (Wilson score) and
    # method 5 (Clopper-Pearson "exact"), 95%, to 4 decimals.
    [
        (81, 263, (0.2553, 0.3662), (0.2527, 0.3676)),
        (15, 148, (0.0624, 0.1605), (0.0578, 0.1617)),
        (0, 20, (0.0, 0.1611), (0.0, 0.1684)),
        (1, 29, (0.0061, 0.1718), (0.0009, 0.1776)),
    ],
)
def test_newcombe_published_values(x, n, wilson, exact):
    w, e = proportion_ci(x, n), proportion_ci(x, n, method="clopper_pearson")
    assert (round(w.ci_lower, 4), round(w.ci_upper, 4)) == wilson
    assert (round(e.ci_lower, 4), round(e.ci_upper, 4)) == exact


def test_coverage_of_clopper_pearson_is_at_least_the_level():
    # Exact binomial coverage (sum of binomial probabilities of the x whose interval covers p).
    from scipy.stats import binom

    n = 30
    ivs = [proportion_ci(x, n, 0.95, "clopper_pearson") for x in range(n + 1)]
    for p in np.linspace(0.01, 0.99, 41):
        cover = sum(binom.pmf(x, n, p) for x, ci in enumerate(ivs) if ci.ci_lower <= p <= ci.ci_upper)
        assert cover >= 0.95 - 1e-12


def test_fractional_counts_are_continuous():
    a, b = proportion_ci(10.0, 40.0), proportion_ci(10.0 + 1e-9, 40.0)
    assert a.ci_lower == pytest.approx(b.ci_lower, abs=1e-9)
    c = proportion_ci(10.5, 40.25, method="clopper_pearson")
    assert 0 < c.ci_lower < 10.5 / 40.25 < c.ci_upper < 1


# -- rates at a threshold ----------------------------------------------------------------------


def counts_at(y, s, w, threshold):
    w = np.ones(len(y)) if w is None else w
    pred = s >= threshold
    return float(w[pred & (y == 1)].sum()), float(w[pred & (y == 0)].sum()), float(w[y == 1].sum()), float(w[y == 0].sum())


RATES = {
    "accuracy": lambda tp, fp, P, N: (tp + N - fp, P + N),
    "precision": lambda tp, fp, P, N: (tp, tp + fp),
    "recall": lambda tp, fp, P, N: (tp, P),
    "specificity": lambda tp, fp, P, N: (N - fp, N),
    "npv": lambda tp, fp, P, N: (N - fp, N - fp + P - tp),
    "fpr": lambda tp, fp, P, N: (fp, N),
    "fnr": lambda tp, fp, P, N: (P - tp, P),
}


@pytest.mark.parametrize("method", ["wilson", "clopper_pearson", "jeffreys"])
def test_exact_threshold_rates_equal_proportion_ci(method):
    conf = confusion_from_counts(tp=30, fp=12, P=50, N=200, threshold=0.5)
    out = rate_cis(conf, 0.9, method)
    assert list(out) == list(RATES)
    for name, f in RATES.items():
        x, n = f(30.0, 12.0, 50.0, 200.0)
        ref = proportion_ci(x, n, 0.9, method)
        assert out[name].ci_lower == ref.ci_lower and out[name].ci_upper == ref.ci_upper
        assert out[name].estimate.value == pytest.approx(getattr(conf, name)) and not out[name].widened


@pytest.mark.parametrize("method", ["wilson", "clopper_pearson", "jeffreys"])
def test_inexact_threshold_contains_the_exact_counts_interval(method):
    rng = np.random.default_rng({"wilson": 1, "clopper_pearson": 2, "jeffreys": 3}[method])
    grid = streameval.LinearGrid(0, 1, 8)
    widened = 0
    for trial in range(60):
        y, s, w = random_rows(rng, int(rng.integers(10, 200)), weighted=trial % 2 == 0)
        sk = streameval.BinarySketch(grid).update(y, s, sample_weight=w)
        threshold = float(rng.uniform(0.05, 0.95))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InexactThresholdWarning)
            conf = sk.confusion(threshold)
        tp, fp, P, N = counts_at(y, s, w, threshold)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            out = rate_cis(conf, 0.95, method)
        widened += not conf.exact
        for name, f in RATES.items():
            x, n = f(tp, fp, P, N)
            ci = out[name]
            if math.isnan(ci.ci_lower):
                continue  # a corner of the box has a zero denominator
            ref = proportion_ci(x, n, 0.95, method)
            assert ci.ci_lower <= ref.ci_lower + 1e-12 and ref.ci_upper <= ci.ci_upper + 1e-12, (trial, name)
            assert ci.estimate.lower - 1e-12 <= x / n <= ci.estimate.upper + 1e-12
            assert ci.widened == (not conf.exact)
    assert widened > 20


def test_corners_are_the_extremes_of_the_box():
    # The union over a fine grid of counts inside the box equals the union over its corners.
    conf = Confusion(
        tp=20, fp=30, fn=30, tn=170, exact=False, tp_bounds=(14.0, 26.0), fp_bounds=(22.0, 41.0)
    )
    out = rate_cis(conf, 0.95, "wilson")
    for name, f in RATES.items():
        los, his = [], []
        for tp in np.linspace(14, 26, 25):
            for fp in np.linspace(22, 41, 25):
                x, n = f(tp, fp, 50.0, 200.0)
                ci = proportion_ci(x, n)
                los.append(ci.ci_lower)
                his.append(ci.ci_upper)
        assert out[name].ci_lower == pytest.approx(min(los), abs=1e-12)
        assert out[name].ci_upper == pytest.approx(max(his), abs=1e-12)


# -- bad input ---------------------------------------------------------------------------------


def test_bad_input():
    for level in (0, 1, 95, float("nan")):
        with pytest.raises(UsageError, match="level"):
            proportion_ci(3, 10, level)
    with pytest.raises(UsageError, match="unknown method"):
        proportion_ci(3, 10, method="wald")
    with pytest.raises(UsageError, match=r"\[0, n\]"):
        proportion_ci(11, 10)
    with pytest.raises(UsageError):
        proportion_ci(-1, 10)
    with pytest.raises(UsageError):
        proportion_ci(1, float("inf"))
    with pytest.raises(UsageError, match="unknown rate"):
        rate_cis(confusion_from_counts(1, 1, 2, 2, 0.5), rates=("f1",))


def test_zero_denominator_warns_and_returns_nan():
    with pytest.warns(UndefinedMetricWarning):
        ci = proportion_ci(0, 0)
    assert math.isnan(ci.ci_lower) and math.isnan(ci.estimate.value)
    conf = confusion_from_counts(tp=0, fp=0, P=10, N=10, threshold=2.0)  # nothing predicted positive
    with pytest.warns(UndefinedMetricWarning, match="precision"):
        out = rate_cis(conf)
    assert math.isnan(out["precision"].ci_upper) and out["recall"].ci_upper > 0


def test_str():
    assert str(proportion_ci(81, 263)) == "0.308 (95% CI 0.255-0.366, Wilson)"
    ci = proportion_ci(1, 29, 0.9, "jeffreys")
    assert str(ci) == f"{1 / 29:.3f} (90% CI {ci.ci_lower:.3f}-{ci.ci_upper:.3f}, Jeffreys)"


def test_doctests():
    assert doctest.testmod(prop_mod, raise_on_error=False).failed == 0
