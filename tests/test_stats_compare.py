"""Two-sample comparisons and multiple testing (streameval.stats.compare, .multiple) against
pROC's and Newcombe's published values, SciPy, and raw-rows references."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy.stats import chi2_contingency, norm
from scipy.stats import t as student_t
from stats_reference import asah, asah_table, close, delong_ref, random_rows

import streameval
import streameval.stats.comparison as compare_mod
from streameval.errors import UndefinedMetricWarning, UsageError
from streameval.stats import benjamini_hochberg, compare_auc, compare_proportions
from streameval.stats import multiple as multiple_mod


def table(y, s, w=None, grid=None):
    return streameval.BinarySketch(grid).update(y, s, sample_weight=w).table()


# -- AUC, DeLong unpaired -----------------------------------------------------------------------


@pytest.mark.parametrize("a, b", [("wfns", "s100b"), ("wfns", "ndka"), ("ndka", "s100b")])
def test_unpaired_discrete_equals_the_raw_row_reference(a, b):
    # pROC's unpaired roc.test on aSAH was matched during development; here the raw-row reference.
    c = compare_auc(asah_table(a), asah_table(b), distribution="t")
    assert not c.widened and c.statistic.exact and c.p_value.exact
    d, lo, hi, stat, p = reference_comparison(asah(a), asah(b))
    assert close(c.estimate.value, d, 1e-12)
    z = compare_auc(asah_table(a), asah_table(b))
    assert close(z.statistic.value, stat, 1e-9) and close(z.p_value.value, p, 1e-9)
    assert close(z.ci_lower, lo, 1e-9) and close(z.ci_upper, hi, 1e-9)
    rev = compare_auc(asah_table(b), asah_table(a), distribution="t")
    assert close(rev.statistic.value, -c.statistic.value, 1e-12) and close(rev.p_value.value, c.p_value.value, 1e-10)


def test_identical_samples_have_no_difference():
    t = asah_table("wfns")
    c = compare_auc(t, t)
    assert c.estimate.value == 0 and c.statistic.value == 0 and c.p_value.value == 1.0


def reference_comparison(rows_a, rows_b, level=0.95):
    a, va = delong_ref(*rows_a)
    b, vb = delong_ref(*rows_b)
    se = math.sqrt(va + vb)
    z = (a - b) / se
    q = float(norm.ppf(1 - (1 - level) / 2))
    return a - b, max(a - b - q * se, -1.0), min(a - b + q * se, 1.0), z, 2 * float(norm.sf(abs(z)))


@pytest.mark.parametrize("weighted", [False, True])
def test_discrete_equals_raw_rows(weighted):
    rng = np.random.default_rng(21 + weighted)
    for _ in range(25):
        ya, sa, wa = random_rows(rng, int(rng.integers(8, 200)), weighted)
        yb, sb, wb = random_rows(rng, int(rng.integers(8, 200)), weighted)
        sa, sb = np.round(sa, 2), np.round(sb, 3)
        c = compare_auc(table(ya, sa, wa), table(yb, sb, wb), level=0.9)
        d, lo, hi, z, p = reference_comparison((ya, sa, wa), (yb, sb, wb), 0.9)
        assert not c.widened
        assert close(c.estimate.value, d) and close(c.ci_lower, lo) and close(c.ci_upper, hi)
        assert close(c.statistic.value, z) and close(c.p_value.value, p)


def test_t_distribution_uses_welch_df():
    rng = np.random.default_rng(2)
    ya, sa, _ = random_rows(rng, 40)
    yb, sb, _ = random_rows(rng, 90)
    sa, sb = np.round(sa, 3), np.round(sb, 3)
    c = compare_auc(table(ya, sa), table(yb, sb), distribution="t")
    a, va = delong_ref(ya, sa)
    b, vb = delong_ref(yb, sb)
    df = (va + vb) ** 2 / (va**2 / (len(ya) - 1) + vb**2 / (len(yb) - 1))
    z = (a - b) / math.sqrt(va + vb)
    assert close(c.df.value, df) and close(c.p_value.value, 2 * float(student_t.sf(abs(z), df)))
    q = float(student_t.ppf(0.975, df))
    assert close(c.ci_upper, a - b + q * math.sqrt(va + vb))


@pytest.mark.parametrize("distribution", ["normal", "t"])
def test_binned_ranges_contain_the_exact_values(distribution):
    rng = np.random.default_rng(7 if distribution == "normal" else 8)
    widened = 0
    for trial in range(250):
        grid = streameval.LinearGrid(0, 1, int(rng.choice([2, 4, 8, 64])))
        ra = random_rows(rng, int(rng.integers(6, 100)), weighted=trial % 4 == 0)
        rb = random_rows(rng, int(rng.integers(6, 100)), weighted=trial % 4 == 0)
        c = compare_auc(table(*ra, grid), table(*rb, grid), distribution=distribution)
        a, va = delong_ref(*ra)
        b, vb = delong_ref(*rb)
        se, d = math.sqrt(va + vb), a - b
        z = d / se
        if distribution == "normal":
            q, p = float(norm.ppf(0.975)), 2 * float(norm.sf(abs(z)))
        else:
            na, nb = (float(np.sum(r[2])) if r[2] is not None else len(r[0]) for r in (ra, rb))
            df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
            assert c.df.lower - 1e-9 <= df <= c.df.upper + 1e-9
            q, p = float(student_t.ppf(0.975, df)), 2 * float(student_t.sf(abs(z), df))
        eps = 1e-12
        assert c.estimate.lower - eps <= d <= c.estimate.upper + eps
        assert c.ci_lower <= max(d - q * se, -1) + eps and min(d + q * se, 1) <= c.ci_upper + eps
        assert c.statistic.lower - 1e-9 <= z <= c.statistic.upper + 1e-9, (trial, c.statistic, z)
        assert c.p_value.lower - 1e-12 <= p <= c.p_value.upper + 1e-12, (trial, c.p_value, p)
        widened += c.widened
    assert widened > 100


def test_str_and_dict():
    c = compare_auc(asah_table("ndka"), asah_table("s100b"))
    d = c.estimate.value
    assert str(c) == (
        f"ΔAUC {d:.3f} (95% CI {c.ci_lower:.3f} to {c.ci_upper:.3f}; DeLong unpaired "
        f"z={c.statistic.value:.2f}, p={c.p_value.value:.3g})"
    )
    out = c.to_dict()
    assert out["estimate"] == d and out["p_value_upper"] == c.p_value.upper and out["widened"] is False
    rng = np.random.default_rng(0)
    grid = streameval.LinearGrid(0, 1, 4)
    binned = compare_auc(table(*random_rows(rng, 50), grid), table(*random_rows(rng, 50), grid))
    assert binned.widened and " [" in str(binned)  # ranges are printed, not hidden


def test_auc_bad_input():
    t = asah_table("wfns")
    for level in (0, 1, 95):
        with pytest.raises(UsageError, match="level"):
            compare_auc(t, t, level)
    with pytest.raises(UsageError, match="distribution"):
        compare_auc(t, t, distribution="bootstrap")
    one = table([1, 1, 1], [0.2, 0.4, 0.9])
    with pytest.warns(UndefinedMetricWarning):
        c = compare_auc(t, one)
    assert math.isnan(c.estimate.value) and math.isnan(c.p_value.value) and math.isnan(c.ci_lower)


# -- proportions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x1, n1, x2, n2, lo, hi",
    # Newcombe (1998), "Interval estimation for the difference between independent proportions:
    # comparison of eleven methods", Statistics in Medicine 17:873-890, Table II, method 10
    # (hybrid score), 95%, to 4 decimals.
    [
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
        (5, 56, 0, 29, -0.0381, 0.1926),
        (0, 10, 0, 20, -0.1611, 0.2775),
        (0, 10, 0, 10, -0.2775, 0.2775),
        (10, 10, 0, 20, 0.6791, 1.0000),
    ],
)
def test_newcombe_published_values(x1, n1, x2, n2, lo, hi):
    c = compare_proportions(x1, n1, x2, n2)
    assert (round(c.ci_lower, 4), round(c.ci_upper, 4)) == (lo, hi)
    assert c.estimate.value == pytest.approx(x1 / n1 - x2 / n2)


@pytest.mark.parametrize("x1, n1, x2, n2", [(56, 70, 48, 80), (9, 10, 3, 10), (5, 56, 1, 29), (120, 1000, 95, 1100)])
def test_pooled_z_is_pearson_chi_squared(x1, n1, x2, n2):
    c = compare_proportions(x1, n1, x2, n2)
    chi2, p, _, _ = chi2_contingency([[x1, n1 - x1], [x2, n2 - x2]], correction=False)
    assert close(c.statistic.value**2, chi2) and close(c.p_value.value, p)
    assert math.copysign(1, c.statistic.value) == math.copysign(1, x1 / n1 - x2 / n2)


def test_proportions_edge_cases():
    c = compare_proportions(0, 10, 0, 20)
    assert c.statistic.value == 0 and c.p_value.value == 1
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(compare_proportions(0, 0, 3, 10).ci_lower)
    with pytest.raises(UsageError):
        compare_proportions(11, 10, 3, 10)
    with pytest.raises(UsageError, match="level"):
        compare_proportions(1, 10, 3, 10, level=1.5)
    assert str(compare_proportions(56, 70, 48, 80)).startswith("Δproportion 0.200 (95% CI 0.052 to 0.334; Newcombe")


# -- Benjamini-Hochberg ----------------------------------------------------------------------------


def test_bh_matches_scipy_and_the_step_up_rule():
    import scipy.stats

    false_discovery_control = getattr(scipy.stats, "false_discovery_control", None)
    if false_discovery_control is None:
        pytest.skip("scipy < 1.11 has no false_discovery_control; the step-up check below is in the next test")
    rng = np.random.default_rng(9)
    for _ in range(50):
        m = int(rng.integers(1, 60))
        p = np.where(rng.random(m) < 0.3, rng.random(m) * 0.01, rng.random(m))
        if m > 3:
            p[1] = p[0]  # ties
        alpha = float(rng.choice([0.01, 0.05, 0.2]))
        r = benjamini_hochberg(p, alpha)
        assert np.allclose(r.adjusted, false_discovery_control(p, method="bh"), rtol=1e-12, atol=0)
        srt = np.sort(p)
        ok = np.flatnonzero(srt <= alpha * np.arange(1, m + 1) / m)
        k = ok[-1] + 1 if ok.size else 0  # the largest k with p_(k) <= k alpha / m
        assert r.n_rejected == k
        assert np.all(p[r.reject] <= (srt[k - 1] if k else -1))


def test_bh_nan_and_bad_input():
    r = benjamini_hochberg([0.01, float("nan"), 0.04, 0.03])
    assert np.isnan(r.adjusted[1]) and not r.reject[1]
    assert np.allclose(r.adjusted[[0, 2, 3]], [0.03, 0.04, 0.04])  # m = 3, not 4
    assert benjamini_hochberg([]).adjusted.size == 0
    with pytest.raises(UsageError, match="alpha"):
        benjamini_hochberg([0.1], alpha=0)
    with pytest.raises(UsageError, match=r"p_values\[1\]"):
        benjamini_hochberg([0.1, 1.2])
    with pytest.raises(UsageError, match="one-dimensional"):
        benjamini_hochberg([[0.1]])


def test_doctests():
    assert doctest.testmod(multiple_mod, raise_on_error=False).failed == 0
    assert doctest.testmod(compare_mod, raise_on_error=False).failed == 0
