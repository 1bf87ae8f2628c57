"""Comparing two independent samples: ROC-AUC (DeLong, unpaired) and two proportions.

"Independent" means the two inputs share no rows: two periods, two regions, two populations.
Two models scored on the *same* rows need the paired DeLong test (the covariance of the two
AUCs), which per-class histograms of each model alone cannot give; it is not offered here.

With unresolved bins every number is bounded, not guessed: the difference carries binning
bounds, and the statistic and p-value are given as :class:`~streameval.metrics.estimate.Estimate`
ranges that contain the values the exact rows would give. For a conservative decision use
``p_value.upper``.
"""

from __future__ import annotations

import dataclasses
import math
import types
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import UndefinedMetricWarning, UsageError
from ..metrics.auc import roc_auc
from ..metrics.estimate import NAN, Estimate
from ..metrics.table import BinTable
from .delong import _too_few, _variance, delong_placements
from .interval import check_level, normal_quantile
from .proportions import _check_counts, _wilson

__all__ = ["Comparison", "compare_auc", "compare_proportions"]


def _fmt(x: Estimate, spec: str) -> str:
    if math.isnan(x.value):
        return "nan"
    if x.exact:
        return format(x.value, spec)
    return f"{format(x.value, spec)} [{format(x.lower, spec)}, {format(x.upper, spec)}]"


@dataclass(frozen=True)
class Comparison:
    """The difference between two independent estimates, its CI, and a test of no difference.

    Attributes
    ----------
    estimate : Estimate
        ``first - second``, with binning bounds (exact on discrete scores).
    ci_lower, ci_upper : float
        Confidence interval of the difference; with binning it contains the exact rows' interval.
    statistic : Estimate
        The test statistic (``z``, or pROC's ``D`` when ``df`` is finite), with bounds that contain
        the exact rows' value.
    p_value : Estimate
        Two-sided p-value, with bounds; ``p_value.upper`` is the conservative one.
    method : str
        The interval and the test, e.g. ``"DeLong unpaired"``.
    level : float
        Confidence level of the interval.
    quantity : str
        What is compared, for display (``"ΔAUC"``, ``"Δproportion"``).
    df : Estimate
        Degrees of freedom of the reference Student t distribution (bounds when binned), or
        ``inf`` for the normal distribution.
    widened : bool
        True when binning made the interval and the statistic ranges wider than exact.
    """

    estimate: Estimate
    ci_lower: float
    ci_upper: float
    statistic: Estimate
    p_value: Estimate
    method: str
    level: float
    quantity: str = "Δ"
    df: Estimate = Estimate(math.inf, math.inf, math.inf)
    widened: bool = False

    def __str__(self) -> str:
        stat = "z" if math.isinf(self.df.value) else f"D(df={_fmt(self.df, '.1f')})"
        return (
            f"{self.quantity} {_fmt(self.estimate, '.3f')} ({100 * self.level:g}% CI "
            f"{self.ci_lower:.3f} to {self.ci_upper:.3f}; {self.method} {stat}={_fmt(self.statistic, '.2f')}, "
            f"p={_fmt(self.p_value, '.3g')})"
        )

    def to_dict(self) -> dict[str, float | bool | str]:
        """Flat dict for JSON reports; ``*_lower``/``*_upper`` of ``estimate``, ``statistic`` and
        ``p_value`` are binning bounds."""
        out: dict[str, float | bool | str] = {"quantity": self.quantity, "method": self.method, "level": self.level}
        for name in ("estimate", "statistic", "p_value", "df"):
            e: Estimate = getattr(self, name)
            out.update({name: e.value, f"{name}_lower": e.lower, f"{name}_upper": e.upper})
        out.update(ci_lower=self.ci_lower, ci_upper=self.ci_upper, widened=self.widened)
        return out


def _ratio_range(d_lo: float, d_hi: float, v_lo: float, v_hi: float) -> tuple[float, float]:
    """Range of ``d / sqrt(v)`` over ``d in [d_lo, d_hi]``, ``v in [v_lo, v_hi]`` (``0/0 = 0``)."""

    def q(d: float, v: float) -> float:
        if d == 0:
            return 0.0
        return math.copysign(math.inf, d) if v <= 0 else d / math.sqrt(v)

    lo = q(d_lo, v_hi) if d_lo >= 0 else q(d_lo, v_lo)
    hi = q(d_hi, v_lo) if d_hi >= 0 else q(d_hi, v_hi)
    return lo, hi


def _two_sided_p(z: float, df: float) -> float:
    a = abs(z)
    if math.isinf(df):
        return math.erfc(a / math.sqrt(2.0))
    from scipy.stats import t as student_t

    return float(min(1.0, 2.0 * student_t.sf(a, df)))


def _welch_df(sa: float, sb: float, fa: float, fb: float) -> float:
    """pROC's degrees of freedom ``(sa + sb)^2 / (sa^2 / fa + sb^2 / fb)`` (Welch-Satterthwaite form)."""
    if sa == 0 and sb == 0:
        return fa + fb
    return (sa + sb) ** 2 / (sa * sa / fa + sb * sb / fb)


def _df_range(va: Estimate, vb: Estimate, fa: float, fb: float) -> tuple[float, float]:
    """Range of the Welch df over the variance box. It depends on ``r = sa / sb`` alone, rises
    from ``fb`` (r = 0) to its peak ``fa + fb`` at ``r = fa / fb`` and falls to ``fa`` (r -> inf)."""
    ends = [_welch_df(va.lower, vb.upper, fa, fb), _welch_df(va.upper, vb.lower, fa, fb)]
    lo = min(ends)
    r_lo = va.lower / vb.upper if vb.upper > 0 else math.inf
    r_hi = va.upper / vb.lower if vb.lower > 0 else math.inf
    hi = fa + fb if r_lo <= fa / fb <= r_hi else max(ends)
    return lo, hi


def _nan_comparison(method: str, level: float, quantity: str) -> Comparison:
    return Comparison(NAN, math.nan, math.nan, NAN, NAN, method, level, quantity)


def compare_auc(
    first: BinTable, second: BinTable, level: float = 0.95, distribution: str = "normal", *,
    kish_first: tuple[float, float] | None = None, kish_second: tuple[float, float] | None = None,
) -> Comparison:
    """Compare the ROC-AUCs of two independent samples (DeLong's unpaired test).

    The difference ``D = AUC_1 - AUC_2`` has variance ``var_1 + var_2``, each DeLong's
    (:func:`~streameval.stats.delong.delong_variance`), since the samples share no rows. The
    statistic is ``D / sqrt(var_1 + var_2)``; the interval ``D +/- q sqrt(var_1 + var_2)``, clipped to
    [-1, 1].

    Parameters
    ----------
    first, second : BinTable
        The two samples' bins (e.g. two periods). Their grids need not match.
    level : float in (0, 1), default 0.95
        Confidence level of the interval.
    distribution : {"normal", "t"}, default "normal"
        Reference distribution of the statistic. ``"normal"``: DeLong's asymptotic normal ``z``.
        ``"t"``: pROC's ``roc.test(paired = FALSE, method = "delong")`` [2]_, a Student t with
        ``df = (S1 + S2)^2 / (S1^2 / (n1 - 1) + S2^2 / (n2 - 1))``, ``S`` the variances and ``n``
        each sample's total weight (rows); the interval then uses the t quantile. They agree for
        large samples.
    kish_first, kish_second : (float, float), optional
        Each sample's ``(P / sum w**2 of positives, N / sum w**2 of negatives)``
        (``BinarySketch._kish()``): its DeLong variance then uses Kish's effective sizes, as
        :func:`~streameval.stats.delong.roc_auc_ci` does, so that rescaling the weights changes
        nothing. ``None``: frequency weights.

    Returns
    -------
    Comparison
        ``method`` is ``"DeLong unpaired"`` (``", Kish n_eff"`` added with Kish factors); ``quantity`` ``"ΔAUC"``. All NaN, with an
        :class:`UndefinedMetricWarning`, if either sample has a class of total weight <= 1.

    Raises
    ------
    UsageError
        If ``level`` is not in (0, 1) or ``distribution`` is unknown.

    Notes
    -----
    Binning: ``D`` lies in ``[lo_1 - hi_2, hi_1 - lo_2]`` (the AUC bounds) and the variance in
    ``[vlo_1 + vlo_2, vhi_1 + vhi_2]`` (:func:`delong_variance`'s bounds). The interval
    ``[D_lo - q sqrt(v_hi), D_hi + q sqrt(v_hi)]`` contains the exact one. The statistic's range
    is that of ``D / sqrt(v)`` over that box, the p-value's range follows from the smallest and
    largest ``|statistic|`` (and, for ``"t"``, the largest and smallest df over the box: the
    two-sided p-value falls with ``|t|`` and with df). Each range contains the exact rows' value.

    References
    ----------
    .. [1] DeLong, DeLong & Clarke-Pearson (1988). Biometrics 44(3), 837-845.
    .. [2] Robin et al. (2011). "pROC: an open-source package for R and S+ to analyze and compare
       ROC curves". BMC Bioinformatics 12, 77.
    """
    level = check_level(level)
    if distribution not in ("normal", "t"):
        raise UsageError(f"unknown distribution {distribution!r}; expected 'normal' or 't'")
    kished = kish_first is not None or kish_second is not None
    method, quantity = "DeLong unpaired" + (", Kish n_eff" if kished else ""), "ΔAUC"
    what = "the DeLong comparison of ROC AUCs"
    if _too_few(first, what, kish_first) or _too_few(second, what, kish_second):
        return _nan_comparison(method, level, quantity)
    a, b = roc_auc(first), roc_auc(second)
    va = _variance(first, delong_placements(first), kish=kish_first)
    vb = _variance(second, delong_placements(second), kish=kish_second)
    exact = a.exact and b.exact and va.exact and vb.exact
    d = Estimate.point(a.value - b.value) if a.exact and b.exact else Estimate.from_bounds(a.lower - b.upper, a.upper - b.lower)
    v_lo, v_hi = va.lower + vb.lower, va.upper + vb.upper
    if distribution == "normal":
        df = Estimate(math.inf, math.inf, math.inf)
        q = normal_quantile(level)
    else:
        (pa_, na_), (pb_, nb_) = kish_first or (1.0, 1.0), kish_second or (1.0, 1.0)
        fa, fb = first.P * pa_ + first.N * na_ - 1.0, second.P * pb_ + second.N * nb_ - 1.0
        if va.exact and vb.exact:
            df = Estimate.point(_welch_df(va.value, vb.value, fa, fb))
        else:
            df = Estimate.from_bounds(*_df_range(va, vb, fa, fb))
        from scipy.stats import t as student_t

        q = float(student_t.ppf(1.0 - (1.0 - level) / 2.0, df.lower))  # smallest df: widest
    se_hi = math.sqrt(v_hi)
    ci_lo, ci_hi = max(d.lower - q * se_hi, -1.0), min(d.upper + q * se_hi, 1.0)
    z_lo, z_hi = _ratio_range(d.lower, d.upper, v_lo, v_hi)
    if exact:
        z = z_lo
        stat = Estimate.point(z)
        p = Estimate.point(_two_sided_p(z, df.value))
    else:
        v_mid = 0.5 * (v_lo + v_hi)
        z_mid = _ratio_range(d.value, d.value, v_mid, v_mid)[0]
        stat = Estimate(min(max(z_mid, z_lo), z_hi), z_lo, z_hi)
        abs_lo = 0.0 if z_lo <= 0.0 <= z_hi else min(abs(z_lo), abs(z_hi))
        abs_hi = max(abs(z_lo), abs(z_hi))
        p_lo, p_hi = _two_sided_p(abs_hi, df.upper), _two_sided_p(abs_lo, df.lower)
        p_mid = _two_sided_p(z_mid, df.value)
        p = Estimate(min(max(p_mid, p_lo), p_hi), p_lo, p_hi)
    return Comparison(d, ci_lo, ci_hi, stat, p, method, level, quantity, df, widened=not exact)


def compare_proportions(
    x1: float, n1: float, x2: float, n2: float, level: float = 0.95
) -> Comparison:
    """Compare two independent proportions ``x1 / n1`` and ``x2 / n2``.

    The interval of ``p1 - p2`` is Newcombe's hybrid score interval [1]_ (his method 10), built
    from the two Wilson intervals ``[l1, u1]``, ``[l2, u2]``:
    ``[d - sqrt((p1 - l1)^2 + (u2 - p2)^2), d + sqrt((u1 - p1)^2 + (p2 - l2)^2)]``. The test is
    the pooled two-proportion z test, ``z = (p1 - p2) / sqrt(p (1 - p) (1/n1 + 1/n2))`` with
    ``p = (x1 + x2) / (n1 + n2)``, whose square is Pearson's chi-squared statistic of the 2x2 table
    without continuity correction [2]_.

    Parameters
    ----------
    x1, n1, x2, n2 : float
        Successes and trials (or frequency-weight totals) of each sample; ``0 <= x <= n``.
    level : float in (0, 1), default 0.95
        Confidence level of the interval.

    Returns
    -------
    Comparison
        ``method`` is ``"Newcombe hybrid score CI, pooled"`` (the pooled z test); ``quantity`` ``"Δproportion"``; exact
        (no binning enters). NaN with an :class:`UndefinedMetricWarning` if ``n1`` or ``n2`` is 0.
        When both proportions are 0 (or both 1) the statistic is 0 and the p-value 1.

    Raises
    ------
    UsageError
        If ``level`` is not in (0, 1), or a count is negative, non-finite or ``x > n``.

    References
    ----------
    .. [1] Newcombe (1998). "Interval estimation for the difference between independent
       proportions: comparison of eleven methods". Statistics in Medicine 17(8), 873-890.
    .. [2] Agresti (2013). "Categorical Data Analysis", 3rd ed., section 3.1.

    Examples
    --------
    >>> from streameval.stats import compare_proportions
    >>> print(compare_proportions(56, 70, 48, 80))
    Δproportion 0.200 (95% CI 0.052 to 0.334; Newcombe hybrid score CI, pooled z=2.65, p=0.00805)
    """
    level = check_level(level)
    method, quantity = "Newcombe hybrid score CI, pooled", "Δproportion"
    a1, m1 = _check_counts(x1, n1)
    a2, m2 = _check_counts(x2, n2)
    if m1 == 0 or m2 == 0:
        warnings.warn(
            f"a sample has no trials (n1 = {m1:g}, n2 = {m2:g}); the comparison is not defined, returning NaN",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        return _nan_comparison(method, level, quantity)
    p1, p2 = a1 / m1, a2 / m2
    d = p1 - p2
    l1, u1 = _wilson(a1, m1, level)
    l2, u2 = _wilson(a2, m2, level)
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    pool = (a1 + a2) / (m1 + m2)
    se0 = math.sqrt(pool * (1.0 - pool) * (1.0 / m1 + 1.0 / m2))
    z = 0.0 if se0 == 0 else d / se0
    p = math.erfc(abs(z) / math.sqrt(2.0))
    return Comparison(
        Estimate.point(d), max(lo, -1.0), min(hi, 1.0), Estimate.point(z), Estimate.point(p), method, level, quantity,
    )


_RATE_COUNTS = {  # rate -> (successes, trials) from a Confusion
    "recall": lambda c: (c.tp, c.tp + c.fn),
    "precision": lambda c: (c.tp, c.tp + c.fp),
    "specificity": lambda c: (c.tn, c.tn + c.fp),
    "fpr": lambda c: (c.fp, c.fp + c.tn),
    "fnr": lambda c: (c.fn, c.fn + c.tp),
    "npv": lambda c: (c.tn, c.tn + c.fn),
    "accuracy": lambda c: (c.tp + c.tn, c.tp + c.fp + c.fn + c.tn),
}


def parse_metric(metric: str) -> tuple[str, float | None]:
    """``"roc_auc"`` -> ``("roc_auc", None)``; ``"recall@0.5"`` -> ``("recall", 0.5)``.

    Raises
    ------
    UsageError
        For an unknown metric, or a rate without ``@threshold``.
    """
    name, _, at = metric.partition("@")
    name = {"tpr": "recall", "tnr": "specificity", "ppv": "precision", "auc": "roc_auc"}.get(name, name)
    if name == "roc_auc" and not at:
        return name, None
    if name in _RATE_COUNTS and at:
        try:
            return name, float(at)
        except ValueError:
            pass
    raise UsageError(
        f"unknown metric {metric!r}: use roc_auc, or a rate at a threshold such as recall@0.5 "
        f"(rates: {', '.join(_RATE_COUNTS)})"
    )


def compare(first: Any, second: Any, metric: str = "roc_auc", *, level: float = 0.95,
            positive_if: str = ">=") -> Comparison:
    """Compare a metric between two independent samples (two periods, two populations).

    Parameters
    ----------
    first, second : BinarySketch
        Sketches of the two samples (no row in both).
    metric : str, default "roc_auc"
        ``"roc_auc"`` (DeLong's unpaired test, :func:`compare_auc`) or a rate at a threshold,
        ``"recall@0.5"``, ``"precision@0.8"``, ``"fpr@0.3"``, ... (two-proportion test and
        Newcombe's interval, :func:`compare_proportions`).
    level : float in (0, 1), default 0.95
    positive_if : {">=", ">"}
        Threshold rule for rates.

    Returns
    -------
    Comparison
        ``estimate`` is ``first - second``. Weighted sketches that kept their squared weights
        (every one built by this version) are compared with Kish's effective sizes, as their own
        ``ci()``: only the weights' ratios matter (``method`` then ends in ``", Kish n_eff"``);
        other weights are read as frequency counts.

    Raises
    ------
    UsageError
        Unknown metric, or sketches whose positive classes differ (the comparison would mean
        different things).
    IncompatibleGridError
        For a rate, sketches on different grids (the threshold would cut them differently).
    """
    from ..errors import IncompatibleGridError

    name, threshold = parse_metric(metric)
    if getattr(first, "pos_label", None) != getattr(second, "pos_label", None):
        raise UsageError(
            f"cannot compare sketches whose positive classes differ ({first.pos_label!r} and {second.pos_label!r})"
        )
    # Kish's effective sizes when the sketches kept the squared weights (as their own ci() uses):
    # with frequency weights, weights scaled by 1000 made any difference significant, and
    # weights normalized to sum to 1 made every comparison NaN.
    kish_a, kish_b = _kish_of(first), _kish_of(second)
    if threshold is None:
        return compare_auc(first.table(), second.table(), level, kish_first=kish_a, kish_second=kish_b)
    if first.grid != second.grid:
        raise IncompatibleGridError(
            f"cannot compare {metric} between sketches on {first.grid.describe()} and {second.grid.describe()}"
        )
    ca = first.confusion(threshold, positive_if=positive_if)
    cb = second.confusion(threshold, positive_if=positive_if)
    if not (ca.exact and cb.exact):
        raise UsageError(
            f"threshold {threshold!r} cuts a bin in one of the sketches, so its counts are not exact; "
            "rebuild both on a grid with a cut there (--grid ...@THRESHOLD) to compare rates at it"
        )
    x1, n1 = _RATE_COUNTS[name](_effective(ca, kish_a))
    x2, n2 = _RATE_COUNTS[name](_effective(cb, kish_b))
    out = compare_proportions(x1, n1, x2, n2, level)
    if kish_a is not None or kish_b is not None:
        out = dataclasses.replace(out, method=out.method + ", Kish n_eff")
    return out


def _kish_of(sketch: Any) -> tuple[float, float] | None:
    kish = getattr(sketch, "_kish", None)
    return kish() if callable(kish) else None


def _effective(c: Any, kish: tuple[float, float] | None) -> Any:
    """Counts with each class's rows at their class's Kish factor (as :func:`rate_cis`)."""
    if kish is None:
        return c
    kp, kn = kish
    return types.SimpleNamespace(tp=c.tp * kp, fn=c.fn * kp, fp=c.fp * kn, tn=c.tn * kn)


def relative_error_reduction(model: Any, baseline: Any, metric: str = "log_loss") -> Estimate:
    """Relative error reduction of a model over a baseline: ``(E_base - E_model) / E_base``.

    Parameters
    ----------
    model, baseline : BinarySketch
        The two models' sketches (on the same rows or not).
    metric : {"log_loss", "brier", "roc_auc"}
        The error: log loss, Brier score, or ``1 - ROC-AUC`` (binning bounds carried through).

    Returns
    -------
    Estimate
        1 means the model removes all of the baseline's error, 0 none, negative that it is worse.

    Raises
    ------
    UsageError
        For another metric, or a baseline without error.
    """
    if metric == "roc_auc":
        m, b = model.roc_auc(), baseline.roc_auc()
        em, eb = (1 - m.upper, 1 - m.lower), (1 - b.upper, 1 - b.lower)
    elif metric in ("log_loss", "brier"):
        get = {"log_loss": "log_loss", "brier": "brier_score"}[metric]
        vm, vb = getattr(model, get)(), getattr(baseline, get)()
        em, eb = (vm, vm), (vb, vb)
    else:
        raise UsageError(f"unknown metric {metric!r}: use log_loss, brier or roc_auc")
    if not eb[0] > 0:
        raise UsageError(f"the baseline's {metric} error is {eb[0]!r}: nothing to reduce")
    lo, hi = (eb[0] - em[1]) / eb[0], (eb[1] - em[0]) / eb[1]
    lo, hi = min(lo, (eb[1] - em[1]) / eb[1], (eb[0] - em[0]) / eb[0]), max(hi, (eb[1] - em[1]) / eb[1], (eb[0] - em[0]) / eb[0])
    return Estimate.from_bounds(lo, hi)
