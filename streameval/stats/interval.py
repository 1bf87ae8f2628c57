"""The confidence-interval result type, and the argument checks every interval shares.

A :class:`ConfidenceInterval` carries *both* kinds of interval the project reports (see
``docs/design.md``, "Two kinds of interval"): the point estimate as an
:class:`~streameval.metrics.estimate.Estimate` whose ``[lower, upper]`` are the *binning bounds*
(how far unresolved bins can move the number on these rows), and ``ci_lower``/``ci_upper``, the
*confidence interval* (how far the number could move on another sample). A CI computed from binned
counts is widened so that it contains the CI the exact rows would give; ``widened`` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from ..errors import UsageError
from ..metrics.estimate import Estimate

__all__ = ["ConfidenceInterval", "check_level", "normal_quantile"]


def check_level(level: float) -> float:
    """Return ``level`` as a float after checking it is a confidence level in (0, 1).

    Raises
    ------
    UsageError
        (a ``ValueError``) if ``level`` is not a number strictly between 0 and 1, or is NaN. A
        level given in percent (95) is refused rather than guessed at.
    """
    try:
        x = float(level)
    except (TypeError, ValueError):
        raise UsageError(f"level must be a number in (0, 1), got {level!r}") from None
    if not 0.0 < x < 1.0:  # also False for NaN
        hint = f" (for {x:g}% pass level={x / 100:g})" if 1.0 < x < 100.0 else ""
        raise UsageError(f"level must be in (0, 1), got {level!r}{hint}")
    return x


def normal_quantile(level: float) -> float:
    """The two-sided critical value ``z = Phi^{-1}(1 - (1 - level) / 2)`` (1.959964 for 0.95).

    Uses :meth:`statistics.NormalDist.inv_cdf` (Wichura's AS 241, accurate to about 1e-16), so no
    SciPy import is needed.
    """
    return NormalDist().inv_cdf(1.0 - (1.0 - check_level(level)) / 2.0)


def _fmt(x: float, digits: int) -> str:
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"


@dataclass(frozen=True)
class ConfidenceInterval:
    """A point estimate with its binning bounds and a confidence interval.

    Attributes
    ----------
    estimate : Estimate
        The statistic computed on these rows. ``estimate.lower``/``estimate.upper`` are binning
        bounds that contain the exact (all-rows) value; they are equal on discrete scores.
    ci_lower, ci_upper : float
        The confidence interval. When ``widened`` is True it contains the interval the same
        method gives on the exact rows. NaN when the interval is undefined (one class, too few
        rows, zero denominator), with an :class:`~streameval.errors.UndefinedMetricWarning`.
    level : float
        Confidence level in (0, 1), e.g. 0.95.
    method : str
        How the interval was computed ("DeLong", "Hanley-McNeil", "Wilson", "Clopper-Pearson",
        "Jeffreys").
    widened : bool
        True when unresolved bins (or an inexact threshold) made the interval wider than the
        exact rows' interval could be; False when it equals it.
    se : float
        Standard error used for a normal-theory interval (for AUC: the square root of the
        variance, an upper bound of it when ``widened``); NaN for intervals not built from one.
    """

    estimate: Estimate
    ci_lower: float
    ci_upper: float
    level: float
    method: str
    widened: bool = False
    se: float = math.nan

    @property
    def width(self) -> float:
        """``ci_upper - ci_lower``."""
        return self.ci_upper - self.ci_lower

    def __contains__(self, x: float) -> bool:
        return self.ci_lower <= x <= self.ci_upper

    def __str__(self) -> str:
        e = self.estimate
        bounds = "" if e.exact or math.isnan(e.value) else f"bounds {_fmt(e.lower, 4)}-{_fmt(e.upper, 4)}; "
        pct = f"{100 * self.level:g}%"
        return (
            f"{_fmt(e.value, 3)} ({bounds}{pct} CI {_fmt(self.ci_lower, 3)}-{_fmt(self.ci_upper, 3)}, "
            f"{self.method})"
        )

    def to_dict(self) -> dict[str, float | bool | str]:
        """Flat dict for JSON reports: ``value``, ``lower``, ``upper``, ``exact``, ``ci_lower``...

        ``lower``/``upper`` are the binning bounds; ``ci_lower``/``ci_upper`` the confidence
        interval.
        """
        out: dict[str, float | bool | str] = dict(self.estimate.to_dict())
        out.update(
            ci_lower=self.ci_lower, ci_upper=self.ci_upper, level=self.level, method=self.method,
            widened=self.widened, se=self.se,
        )
        return out
