"""Confidence intervals for a binomial proportion, and for the rates at a threshold.

Three standard intervals for ``x`` successes out of ``n`` (Brown, Cai & DasGupta [1]_ compare
them): Wilson's score interval, the Clopper-Pearson "exact" interval and the Jeffreys interval.
:func:`rate_cis` applies one of them to every proportion-type rate of a
:class:`~streameval.metrics.confusion.Confusion` (recall, specificity, precision, NPV, FPR, FNR,
accuracy). When the threshold cuts a bin, the counts there are only known to lie in a box; the
reported interval is then the union of the intervals over that box, so it contains the interval
the exact counts would give.

Weights are frequency weights unless ``kish=`` is given: weighted counts stand for row counts (a
row of weight 3 counts as three rows), and non-integer counts are accepted (the three intervals
extend continuously). For importance or survey weights pass ``kish=``: each class's rows then count
at Kish's effective size (see :func:`rate_cis`), which sketches keep the squared weights for.

References
----------
.. [1] Brown, Cai & DasGupta (2001). "Interval estimation for a binomial proportion". Statistical
   Science 16(2), 101-133.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable

from ..errors import UndefinedMetricWarning, UsageError
from ..metrics.confusion import Confusion
from ..metrics.estimate import Estimate
from .interval import ConfidenceInterval, check_level, normal_quantile

__all__ = ["RATE_COUNTS", "proportion_ci", "rate_cis"]

_METHODS = {"wilson": "Wilson", "clopper_pearson": "Clopper-Pearson", "jeffreys": "Jeffreys"}


def _check_counts(successes: float, n: float) -> tuple[float, float]:
    x, m = float(successes), float(n)
    if not (math.isfinite(x) and math.isfinite(m)) or m < 0:
        raise UsageError(f"successes and n must be finite with n >= 0, got {successes!r} and {n!r}")
    tol = 1e-9 * max(1.0, m)  # weighted counts: running sums may overshoot by rounding
    if x < -tol or x > m + tol:
        raise UsageError(f"successes must be in [0, n], got {successes!r} with n = {n!r}")
    return min(max(x, 0.0), m), m


def _wilson(x: float, n: float, level: float) -> tuple[float, float]:
    z = normal_quantile(level)
    z2 = z * z
    center = (x + z2 / 2.0) / (n + z2)
    half = z * math.sqrt(x * (n - x) / n + z2 / 4.0) / (n + z2)
    lo = 0.0 if x == 0 else max(center - half, 0.0)
    hi = 1.0 if x == n else min(center + half, 1.0)
    return lo, hi


def _clopper_pearson(x: float, n: float, level: float) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1.0 - level) / 2.0
    lo = 0.0 if x == 0 else float(beta.ppf(a, x, n - x + 1.0))
    hi = 1.0 if x == n else float(beta.ppf(1.0 - a, x + 1.0, n - x))
    return lo, hi


def _jeffreys(x: float, n: float, level: float) -> tuple[float, float]:
    from scipy.stats import beta

    a = (1.0 - level) / 2.0
    lo = 0.0 if x == 0 else float(beta.ppf(a, x + 0.5, n - x + 0.5))
    hi = 1.0 if x == n else float(beta.ppf(1.0 - a, x + 0.5, n - x + 0.5))
    return lo, hi


_BOUNDS: dict[str, Callable[[float, float, float], tuple[float, float]]] = {
    "wilson": _wilson,
    "clopper_pearson": _clopper_pearson,
    "jeffreys": _jeffreys,
}


def _method(method: str) -> str:
    if method not in _METHODS:
        raise UsageError(f"unknown method {method!r}; expected one of {sorted(_METHODS)}")
    return method


def _undefined(what: str) -> None:
    warnings.warn(
        f"{what} has a zero denominator; its confidence interval is not defined, returning NaN",
        UndefinedMetricWarning,
        stacklevel=3,
    )


def proportion_ci(
    successes: float, n: float, level: float = 0.95, method: str = "wilson"
) -> ConfidenceInterval:
    """Confidence interval for a binomial proportion ``successes / n``.

    Parameters
    ----------
    successes : float
        Number (or frequency-weight total) of successes, in ``[0, n]``.
    n : float
        Number (or frequency-weight total) of trials, >= 0.
    level : float in (0, 1), default 0.95
        Confidence level.
    method : {"wilson", "clopper_pearson", "jeffreys"}, default "wilson"
        - ``"wilson"``: the score interval of Wilson [1]_, the set of ``p`` that the score test
          does not reject: ``(x + z^2/2) / (n + z^2) +/- z sqrt(x (n - x) / n + z^2 / 4) / (n + z^2)``.
        - ``"clopper_pearson"``: Clopper & Pearson's [2]_ inversion of two one-sided binomial
          tests, ``[B(a/2; x, n - x + 1), B(1 - a/2; x + 1, n - x)]`` with ``B`` the beta
          quantile; conservative (coverage >= level).
        - ``"jeffreys"``: equal-tailed posterior interval under the Jeffreys prior Beta(1/2, 1/2),
          ``[B(a/2; x + 1/2, n - x + 1/2), B(1 - a/2; x + 1/2, n - x + 1/2)]``, with the lower end
          set to 0 when ``x = 0`` and the upper to 1 when ``x = n``, as Brown, Cai & DasGupta [3]_
          (section 4.1.2) define it.

    Returns
    -------
    ConfidenceInterval
        ``estimate`` is ``successes / n`` (exact), ``ci_lower``/``ci_upper`` the interval.
        NaN, with an :class:`UndefinedMetricWarning`, when ``n == 0``.

    Raises
    ------
    UsageError
        If ``level`` is outside (0, 1), ``method`` is unknown, ``n < 0`` or ``successes`` is
        outside ``[0, n]``.

    References
    ----------
    .. [1] Wilson (1927). "Probable inference, the law of succession, and statistical inference".
       Journal of the American Statistical Association 22(158), 209-212.
    .. [2] Clopper & Pearson (1934). "The use of confidence or fiducial limits illustrated in the
       case of the binomial". Biometrika 26(4), 404-413.
    .. [3] Brown, Cai & DasGupta (2001). Statistical Science 16(2), 101-133.

    Examples
    --------
    >>> from streameval.stats import proportion_ci
    >>> print(proportion_ci(81, 263))
    0.308 (95% CI 0.255-0.366, Wilson)
    """
    level = check_level(level)
    method = _method(method)
    x, m = _check_counts(successes, n)
    if m == 0:
        _undefined("the proportion")
        return ConfidenceInterval(Estimate(math.nan, math.nan, math.nan), math.nan, math.nan, level, _METHODS[method])
    lo, hi = _BOUNDS[method](x, m, level)
    return ConfidenceInterval(Estimate.point(x / m), lo, hi, level, _METHODS[method])


#: For each rate, its (successes, failures) as functions of ``(tp, fp, P, N)``.
RATE_COUNTS: dict[str, Callable[[float, float, float, float], tuple[float, float]]] = {
    "accuracy": lambda tp, fp, P, N: (tp + (N - fp), (P - tp) + fp),
    "precision": lambda tp, fp, P, N: (tp, fp),
    "recall": lambda tp, fp, P, N: (tp, P - tp),
    "specificity": lambda tp, fp, P, N: (N - fp, fp),
    "npv": lambda tp, fp, P, N: (N - fp, P - tp),
    "fpr": lambda tp, fp, P, N: (fp, N - fp),
    "fnr": lambda tp, fp, P, N: (P - tp, tp),
}


#: For each rate, the weight of its denominator in each class ``(positive, negative)``, for
#: Kish's effective size (each class's rows counted at its own design effect).
_TRIALS_BY_CLASS: dict[str, Callable[[float, float, float, float], tuple[float, float]]] = {
    "accuracy": lambda tp, fp, P, N: (P, N),
    "precision": lambda tp, fp, P, N: (tp, fp),
    "recall": lambda tp, fp, P, N: (P, 0.0),
    "specificity": lambda tp, fp, P, N: (0.0, N),
    "npv": lambda tp, fp, P, N: (P - tp, N - fp),
    "fpr": lambda tp, fp, P, N: (0.0, N),
    "fnr": lambda tp, fp, P, N: (P, 0.0),
}


def _bounds(pair: tuple[float, float], point: float) -> tuple[float, float]:
    lo, hi = pair
    if math.isnan(lo) or math.isnan(hi):
        return point, point
    return lo, hi


def rate_cis(
    confusion: Confusion,
    level: float = 0.95,
    method: str = "wilson",
    rates: tuple[str, ...] = tuple(RATE_COUNTS),
    kish: tuple[float, float] | None = None,
) -> dict[str, ConfidenceInterval]:
    """Confidence intervals of the proportion-type rates at one threshold.

    Parameters
    ----------
    confusion : Confusion
        Counts at a threshold, e.g. from ``BinarySketch.confusion(threshold)`` or
        :func:`~streameval.metrics.confusion.confusion_at`. When ``confusion.exact`` is False the
        counts at the *requested* threshold are only known to lie in ``tp_bounds`` x
        ``fp_bounds``, and those bounds are used.
    level : float in (0, 1), default 0.95
        Confidence level.
    method : {"wilson", "clopper_pearson", "jeffreys"}, default "wilson"
        See :func:`proportion_ci`.
    rates : tuple of str, optional
        Which rates, among ``"accuracy"``, ``"precision"`` (PPV), ``"recall"`` (TPR,
        sensitivity), ``"specificity"`` (TNR), ``"npv"``, ``"fpr"``, ``"fnr"``. Default: all.
    kish : (float, float), optional
        ``(P / sum w**2 of positives, N / sum w**2 of negatives)``: with sample weights, each
        rate's interval uses Kish's effective size [2]_ of its denominator, the weight of each
        class in it times that class's factor (exact Kish for rates within one class: recall,
        specificity, FPR, FNR; for precision, NPV and accuracy each class's rows count at their
        class's design effect). The rate itself is unchanged. ``None``: frequency weights.

    Returns
    -------
    dict of str to ConfidenceInterval
        One entry per rate, in the order asked. ``estimate`` holds the rate with its binning
        bounds (exact when the threshold is); ``widened`` is True when the threshold cuts a bin.
        A rate whose denominator is (or may be) zero gets NaN and an
        :class:`UndefinedMetricWarning`.

    Raises
    ------
    UsageError
        If ``level``, ``method`` or a rate name is not recognised.

    Notes
    -----
    Each rate is ``s / (s + f)`` with ``s`` and ``f`` sums or differences of ``tp``, ``fp`` and
    the class totals (see :data:`RATE_COUNTS`), so it is monotone in ``tp`` and in ``fp``
    separately; so are the ends of the three intervals, which grow with ``s`` and shrink with
    ``f``. Over the box ``[tp_lo, tp_hi] x [fp_lo, fp_hi]`` the smallest lower end and the
    largest upper end are therefore taken at its corners, and ``[min lower, max upper]`` over the
    four corners contains the interval of the true counts.

    References
    ----------
    .. [1] Brown, Cai & DasGupta (2001). Statistical Science 16(2), 101-133.
    .. [2] Kish (1965). "Survey Sampling", Wiley, sec. 11.7.
    """
    level = check_level(level)
    method = _method(method)
    unknown = [r for r in rates if r not in RATE_COUNTS]
    if unknown:
        raise UsageError(f"unknown rate(s) {unknown}; expected any of {list(RATE_COUNTS)}")
    P, N = confusion.positives, confusion.negatives
    exact = confusion.exact
    tps = (confusion.tp, confusion.tp) if exact else _bounds(confusion.tp_bounds, confusion.tp)
    fps = (confusion.fp, confusion.fp) if exact else _bounds(confusion.fp_bounds, confusion.fp)
    widened = tps[0] != tps[1] or fps[0] != fps[1]
    out: dict[str, ConfidenceInterval] = {}
    for name in rates:
        corners = [RATE_COUNTS[name](tp, fp, P, N) for tp in tps for fp in fps]
        if any(s + f <= 0 for s, f in corners):
            _undefined(name)
            nan = Estimate(math.nan, math.nan, math.nan)
            out[name] = ConfidenceInterval(nan, math.nan, math.nan, level, _METHODS[method], widened)
            continue
        los, his, vals = [], [], []
        boxes = [(tp, fp) for tp in tps for fp in fps]
        for (s, f), (tp, fp) in zip(corners, boxes, strict=True):
            x, m = _check_counts(max(s, 0.0), max(s, 0.0) + max(f, 0.0))
            vals.append(x / m)
            if kish is not None and m > 0:
                a, b = _TRIALS_BY_CLASS[name](tp, fp, P, N)
                m_eff = max(a, 0.0) * kish[0] + max(b, 0.0) * kish[1]
                x, m = x / m * m_eff, m_eff
            lo, hi = _BOUNDS[method](x, m, level)
            los.append(lo)
            his.append(hi)
        est = Estimate.point(vals[0]) if not widened else Estimate.from_bounds(min(vals), max(vals))
        label = _METHODS[method] + (", Kish n_eff" if kish is not None else "")
        out[name] = ConfidenceInterval(est, min(los), max(his), level, label, widened)
    return out
