"""ROC-AUC confidence intervals (streameval.stats.delong) against pROC's published values and
raw-rows references."""

from __future__ import annotations

import doctest
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from sklearn.metrics import roc_auc_score
from stats_reference import asah, asah_table, class_totals, close, delong_ref, hm_var_ref, normal_ci, random_rows

import streameval
from streameval.errors import UndefinedMetricWarning, UsageError
from streameval.stats import delong as delong_mod
from streameval.stats import delong_placements, delong_variance, hanley_mcneil_se, roc_auc_ci


def table(y, s, w=None, grid=None):
    return streameval.BinarySketch(grid).update(y, s, sample_weight=w).table()


# -- published values ------------------------------------------------------------------------


@pytest.mark.parametrize("marker", ["wfns", "ndka", "s100b"])
def test_discrete_variance_and_ci_equal_the_raw_row_reference(marker):
    # The same checks pROC's published aSAH values pinned during development (var, ci.auc).
    y, x = asah(marker)
    auc, var = delong_ref(y, x)
    v = delong_variance(asah_table(marker))
    assert v.exact and close(v.value, var, 1e-12)
    ci = roc_auc_ci(asah_table(marker))
    assert not ci.widened and close(ci.estimate.value, auc, 1e-12)
    lo, hi = normal_ci(auc, var ** 0.5, 0.95)
    assert close(ci.ci_lower, lo, 1e-12) and close(ci.ci_upper, hi, 1e-12)
    assert str(ci) == f"{auc:.3f} (95% CI {ci.ci_lower:.3f}-{ci.ci_upper:.3f}, DeLong)"


def test_hanley_mcneil_ct_example():
    # Hanley & McNeil (1982), Table I: CT ratings (1 = definitely normal .. 5 = definitely
    # abnormal) of 58 normal and 51 abnormal patients; area under the rating ROC curve 0.893.
    normal, abnormal = [33, 6, 6, 11, 2], [3, 2, 2, 11, 33]
    ratings = np.arange(1, 6, dtype=np.float64)
    y = np.r_[np.zeros(5), np.ones(5)]
    s = np.r_[ratings, ratings]
    w = np.r_[normal, abnormal].astype(np.float64)
    ci = roc_auc_ci(table(y, s, w, streameval.LinearGrid(0, 10, 10)), method="hanley_mcneil")
    assert round(ci.estimate.value, 3) == 0.893 and ci.estimate.exact
    assert close(ci.se, math.sqrt(hm_var_ref(ci.estimate.value, 51, 58)), 1e-12)
    # DeLong on the same (tied, frequency-weighted) ratings equals the raw-rows reference.
    a, v = delong_ref(y, s, w)
    dl = roc_auc_ci(table(y, s, w, streameval.LinearGrid(0, 10, 10)))
    assert close(dl.se, math.sqrt(v)) and close(dl.estimate.value, a)


@pytest.mark.parametrize("a", [0.6, 0.75, 0.9, 0.97])
def test_hanley_mcneil_q1_q2_are_exponential_model_probabilities(a):
    # Q1 = P(two positives both above a negative), Q2 = P(a positive above two negatives), for
    # negatives ~ Exp(1) and positives ~ Exp(rate r) with P(X > Y) = 1 / (1 + r) = a.
    r = 1 / a - 1
    q1 = integrate.quad(lambda y: math.exp(-y) * math.exp(-r * y) ** 2, 0, math.inf)[0]
    q2 = integrate.quad(lambda x: r * math.exp(-r * x) * (1 - math.exp(-x)) ** 2, 0, math.inf)[0]
    var = (a * (1 - a) + 19 * (q1 - a * a) + 79 * (q2 - a * a)) / (20 * 80)
    assert close(hanley_mcneil_se(a, 20, 80) ** 2, var, 1e-8)


def test_hanley_mcneil_matches_simulated_variance():
    # The SE of the Mann-Whitney AUC over 4,000 simulated samples of 20 positives and 80 negatives
    # from the exponential model the formula assumes (sampling error of the variance ~2%).
    rng = np.random.default_rng(5)
    a, reps = 0.8, 4000
    neg = rng.exponential(1.0, (reps, 80))
    pos = rng.exponential(1.0 / (1 / a - 1), (reps, 20))
    aucs = (pos[:, :, None] > neg[:, None, :]).mean(axis=(1, 2))
    assert aucs.var(ddof=1) == pytest.approx(hanley_mcneil_se(a, 20, 80) ** 2, rel=0.08)
    # ...and a formula with the class sizes swapped is visibly off.
    assert abs(aucs.var(ddof=1) / hanley_mcneil_se(a, 80, 20) ** 2 - 1) > 0.15


# -- discrete scores: equal to the raw rows ----------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_discrete_equals_raw_rows(weighted):
    rng = np.random.default_rng(11 + weighted)
    for _ in range(40):
        n = int(rng.integers(6, 300))
        y, s, w = random_rows(rng, n, weighted)
        s = np.round(s, int(rng.integers(1, 4)))  # heavy ties at 1 decimal
        t = table(y, s, w)
        a_ref, v_ref = delong_ref(y, s, w)
        assert close(a_ref, roc_auc_score(y, s, sample_weight=w), 1e-12)
        v = delong_variance(t)
        assert v.exact and close(v.value, v_ref)
        for level in (0.9, 0.95, 0.99):
            ci = roc_auc_ci(t, level)
            lo, hi = normal_ci(a_ref, math.sqrt(v_ref), level)
            assert not ci.widened
            assert close(ci.estimate.value, a_ref) and close(ci.ci_lower, lo) and close(ci.ci_upper, hi)
            hm = roc_auc_ci(t, level, method="hanley_mcneil")
            lo, hi = normal_ci(a_ref, math.sqrt(hm_var_ref(a_ref, *class_totals(y, w))), level)
            assert close(hm.ci_lower, lo) and close(hm.ci_upper, hi) and not hm.widened


def test_weights_are_frequency_counts():
    rng = np.random.default_rng(3)
    y, s, w = random_rows(rng, 120, weighted=True)
    grid = streameval.LinearGrid(0, 1, 16)  # coarse: unresolved bins too
    yy, ss = np.repeat(y, w.astype(int)), np.repeat(s, w.astype(int))
    a, b = roc_auc_ci(table(y, s, w, grid)), roc_auc_ci(table(yy, ss, None, grid))
    assert close(a.ci_lower, b.ci_lower, 1e-12) and close(a.ci_upper, b.ci_upper, 1e-12)


# -- binned scores: the reported interval contains the raw rows' one ---------------------------


@pytest.mark.parametrize("bins", [2, 4, 8, 32])
def test_binned_ci_contains_exact_ci(bins):
    rng = np.random.default_rng(100 + bins)
    grid = streameval.LinearGrid(0, 1, bins)
    widened = 0
    for trial in range(300):
        n = int(rng.integers(5, 120))
        y, s, w = random_rows(rng, n, weighted=trial % 3 == 0)
        if trial % 5 == 0:
            s = np.round(s * 2 * bins) / (2 * bins)  # ties, pure bins and touching ranges
        t = table(y, s, w, grid)
        a_ref, v_ref = delong_ref(y, s, w)
        v = delong_variance(t)
        assert v.lower - 1e-12 <= v_ref <= v.upper + 1e-12, (trial, v, v_ref)
        ci = roc_auc_ci(t)
        lo, hi = normal_ci(a_ref, math.sqrt(v_ref))
        assert ci.ci_lower <= lo + 1e-12 and hi <= ci.ci_upper + 1e-12, (trial, ci, lo, hi)
        widened += ci.widened
        hm = roc_auc_ci(t, method="hanley_mcneil")
        lo, hi = normal_ci(a_ref, math.sqrt(hm_var_ref(a_ref, *class_totals(y, w))))
        assert hm.ci_lower <= lo + 1e-12 and hi <= hm.ci_upper + 1e-12
    assert widened > 60  # the test exercised unresolved bins


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.booleans(), st.integers(0, 16), st.integers(1, 3)), min_size=4, max_size=40),
)
def test_placement_bounds_hold_adversarially(rows):
    # Scores on a 1/16 lattice in 4 bins: pure bins, ties across classes, touching ranges.
    y = np.array([r[0] for r in rows], dtype=np.int8)
    if y.sum() < 2 or (1 - y).sum() < 2:
        return
    s = np.array([r[1] / 16 for r in rows])
    w = np.array([float(r[2]) for r in rows])
    t = table(y, s, w, streameval.LinearGrid(0, 1, 4))
    pl = delong_placements(t)
    yy, ss = np.repeat(y, w.astype(int)), np.repeat(s, w.astype(int))
    pos, neg = ss[yy == 1], ss[yy == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    keys = streameval.LinearGrid(0, 1, 4).bin_index(ss)
    row = {int(k): i for i, k in enumerate(t.keys)}
    bp, bn = np.array([row[int(k)] for k in keys[yy == 1]]), np.array([row[int(k)] for k in keys[yy == 0]])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    eps = 1e-12
    assert np.all(pl.v10_lo[bp] - eps <= v10) and np.all(v10 <= pl.v10_hi[bp] + eps)
    assert np.all(pl.v01_lo[bn] - eps <= v01) and np.all(v01 <= pl.v01_hi[bn] + eps)
    _, v_ref = delong_ref(y, s, w)
    v = delong_variance(t)
    assert v.lower - eps <= v_ref <= v.upper + eps
    if pl.resolved:
        assert close(v.value, v_ref)


def test_fine_grid_bounds_are_tight():
    # Continuous scores on a fine grid: a few unresolved bins, so the bounds must be close.
    rng = np.random.default_rng(8)
    y, s, _ = random_rows(rng, 3000)
    t = table(y, s, None, streameval.LinearGrid(0, 1, 2**12))
    v = delong_variance(t)
    _, v_ref = delong_ref(y, s)
    assert v.lower <= v_ref <= v.upper
    assert v.upper - v.lower < 0.02 * v_ref
    ci = roc_auc_ci(t)
    assert ci.widened and ci.width < 1.02 * 2 * 1.959963984540054 * math.sqrt(v_ref)


@pytest.mark.parametrize("seed", range(20))
def test_upper_bound_helper_picks_the_best_center(seed):
    # The closed-form minimizer of g(c) = sum w (|c - m| + h)^2 against a dense scan.
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 30))
    lo = rng.random(k)
    hi = lo + rng.random(k) * rng.choice([0.0, 0.1, 0.5], k)
    w = rng.integers(1, 5, k).astype(np.float64)
    m, h = (lo + hi) / 2, (hi - lo) / 2
    cs = np.sort(np.r_[np.linspace(-0.5, 2.0, 20001), lo, hi, m])  # the kinks of both functions
    g = np.sum(w * (np.abs(cs[:, None] - m) + h) ** 2, axis=1)
    got = delong_mod._sum_sq_dev_upper(w, lo, hi)
    assert got == pytest.approx(g.min(), rel=1e-6) and got <= g.min() * (1 + 1e-12)
    d = cs[:, None] - np.clip(cs[:, None], lo, hi)
    f = np.sum(w * d * d, axis=1)
    got = delong_mod._sum_sq_dev_lower(w, lo, hi)
    assert got <= f.min() + 1e-12 and got == pytest.approx(f.min(), rel=1e-6, abs=1e-12)


def test_hanley_mcneil_max_over_an_interval():
    rng = np.random.default_rng(4)
    for _ in range(200):
        lo = float(rng.random())
        hi = min(1.0, lo + float(rng.random()) * float(rng.choice([0.01, 0.3, 1.0])))
        m, n = float(rng.integers(2, 100)), float(rng.integers(2, 100))
        scan = max(math.sqrt(hm_var_ref(a, m, n)) for a in np.linspace(lo, hi, 501))
        got = delong_mod._hm_se_max(lo, hi, m, n)
        assert scan - 1e-12 <= got <= scan + 1e-5


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0, 1, 95, -0.5, float("nan"), "high"])
def test_bad_level(level):
    t = asah_table("wfns")
    with pytest.raises(UsageError, match="level"):
        roc_auc_ci(t, level)


def test_bad_method():
    with pytest.raises(UsageError, match="unknown method"):
        roc_auc_ci(asah_table("wfns"), method="bootstrap")
    with pytest.raises(UsageError):
        hanley_mcneil_se(1.2, 10, 10)
    with pytest.raises(UsageError):
        hanley_mcneil_se(0.8, 0, 10)


def test_one_class_warns_and_returns_nan():
    t = table([1, 1, 1], [0.2, 0.5, 0.7])
    with pytest.warns(UndefinedMetricWarning, match="only one class"):
        ci = roc_auc_ci(t)
    assert math.isnan(ci.estimate.value) and math.isnan(ci.ci_lower) and math.isnan(ci.ci_upper)
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(delong_variance(t).value)
    assert str(ci) == "nan (95% CI nan-nan, DeLong)"


def test_single_row_of_a_class_warns():
    t = table([1, 0, 0, 0], [0.9, 0.2, 0.5, 0.7])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ci = roc_auc_ci(t)
    assert len(rec) == 1 and issubclass(rec[0].category, UndefinedMetricWarning)
    assert "more than one row" in str(rec[0].message)
    assert ci.estimate.value == pytest.approx(1.0) and math.isnan(ci.ci_lower)
    # Weights that sum to less than 2 per class (e.g. normalised weights) are refused the same way.
    with pytest.warns(UndefinedMetricWarning, match="frequency counts"):
        roc_auc_ci(table([1, 1, 0, 0], [0.9, 0.4, 0.2, 0.5], [0.5, 0.5, 0.5, 0.5]))


def test_doctests():
    assert doctest.testmod(delong_mod, raise_on_error=False).failed == 0


@pytest.mark.parametrize("seed", range(20))
def test_compiled_variance_bound_equals_the_numpy_one(seed):
    """The compiled O(k) bound used by roc_auc_ci equals _variance(upper_only=True)."""
    from streameval.grid import LinearGrid, ProbabilityGrid
    from streameval.stats.delong import _variance, _variance_upper, delong_placements

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 3000))
    y = (rng.random(n) < rng.uniform(0.05, 0.6)).astype(int)
    y[:2] = [0, 1]
    s = rng.normal(y * rng.uniform(0, 2), 1.0)
    p = 1 / (1 + np.exp(-s))
    if seed % 2:
        p = np.round(p, 2)
        grid = LinearGrid(-0.005, 1.005, 101)
    else:
        grid = ProbabilityGrid(mantissa_bits=int(rng.integers(0, 8)))
    w = rng.integers(1, 5, n).astype(float) if seed % 3 == 0 else None
    t = streameval.BinarySketch(grid).update(y, p, w).table()
    fast, resolved = _variance_upper(t)
    slow = _variance(t, delong_placements(t), upper_only=True)
    assert fast == pytest.approx(slow.upper, rel=1e-10, abs=1e-18)
    assert resolved == slow.exact


@pytest.mark.parametrize("seed", range(12))
def test_compiled_pair_terms_give_the_numpy_auc_bit_for_bit(seed):
    """roc_auc's one-pass pair terms (used by every full AUC, hence by the DeLong CI) equal the
    NumPy form _full_area exactly, weighted or not, resolved bins or not."""
    from streameval.grid import ProbabilityGrid
    from streameval.metrics.auc import _full_area, _full_areas, roc_auc

    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(50, 5000))
    y = (rng.random(n) < rng.uniform(0.05, 0.7)).astype(int)
    y[:2] = [0, 1]
    p = 1 / (1 + np.exp(-rng.normal(y * rng.uniform(0, 2), 1.0)))
    if seed % 3 == 0:
        p = np.round(p, 2)
    w = None if seed % 2 else rng.random(n) * rng.choice([1e-3, 1.0, 1e3])
    t = streameval.BinarySketch(ProbabilityGrid(mantissa_bits=int(rng.integers(0, 10)))).update(y, p, w).table()
    lo, hi = _full_areas(t)
    assert lo == _full_area(t, t.lower_path()) and hi == _full_area(t, t.upper_path())
    est = roc_auc(t)
    assert (est.lower, est.upper) == (min(lo, 1.0), min(hi, 1.0))
    assert est.lower <= roc_auc_score(y, p, sample_weight=w) + 1e-12 and roc_auc_score(y, p, sample_weight=w) <= est.upper + 1e-12
