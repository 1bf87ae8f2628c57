"""The value-with-interval type every bounded metric returns."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["Estimate"]


@dataclass(frozen=True, eq=False)
class Estimate:
    """A metric's point estimate and a rigorous interval that contains the exact value.

    It behaves as its value where a number is expected: ``auc > 0.8``, ``round(auc, 3)``,
    ``auc - 0.5``, ``np.isclose(auc, 0.9)``, ``f"{auc:.3f}"`` and ``float(auc)`` all use
    :attr:`value`; ``auc == 0.75`` compares the value, ``auc == other_estimate`` all three fields.

    The exact value is the one scikit-learn computes on the raw rows (ties counted as its
    documentation says). ``lower <= exact <= upper`` always holds, up to floating-point rounding
    (a few ulps); on discrete scores, where every bin holds one score value, ``lower == upper``.

    Attributes
    ----------
    value : float
        Point estimate: the midpoint of the interval unless the metric documents otherwise.
    lower, upper : float
        Interval bounds.
    """

    value: float
    lower: float
    upper: float

    @property
    def exact(self) -> bool:
        """True when the interval has width zero (the value is exact)."""
        return self.lower == self.upper

    @property
    def width(self) -> float:
        """``upper - lower``."""
        return self.upper - self.lower

    def __float__(self) -> float:
        return float(self.value)

    # -- behave as the number it estimates ----------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Estimate):
            return (self.value, self.lower, self.upper) == (other.value, other.lower, other.upper)
        if isinstance(other, (int, float, np.floating, np.integer)):
            return bool(self.value == other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.value, self.lower, self.upper))

    def __lt__(self, other: float) -> bool:
        return self.value < float(other)

    def __le__(self, other: float) -> bool:
        return self.value <= float(other)

    def __gt__(self, other: float) -> bool:
        return self.value > float(other)

    def __ge__(self, other: float) -> bool:
        return self.value >= float(other)

    def __round__(self, ndigits: int | None = None) -> float:
        return round(self.value, ndigits)

    def __add__(self, other: float) -> float:
        return self.value + float(other)

    __radd__ = __add__

    def __sub__(self, other: float) -> float:
        return self.value - float(other)

    def __rsub__(self, other: float) -> float:
        return float(other) - self.value

    def __mul__(self, other: float) -> float:
        return self.value * float(other)

    __rmul__ = __mul__

    def __truediv__(self, other: float) -> float:
        return self.value / float(other)

    def __rtruediv__(self, other: float) -> float:
        return float(other) / self.value

    def __neg__(self) -> float:
        return -self.value

    def __abs__(self) -> float:
        return abs(self.value)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.asarray(self.value, dtype=dtype)

    def __contains__(self, x: float) -> bool:
        return self.lower <= x <= self.upper

    def __format__(self, spec: str) -> str:
        spec = spec or ".6g"
        if self.exact or math.isnan(self.value):
            return format(self.value, spec)
        return f"{format(self.value, spec)} [{format(self.lower, spec)}, {format(self.upper, spec)}]"

    def __str__(self) -> str:
        return format(self, "")

    @classmethod
    def point(cls, x: float) -> "Estimate":
        """An exact value."""
        return cls(float(x), float(x), float(x))

    @classmethod
    def from_bounds(cls, lower: float, upper: float) -> "Estimate":
        """The interval ``[lower, upper]`` with its midpoint as the value."""
        lo, hi = float(lower), float(upper)
        if lo > hi and lo - hi <= 1e-12 * max(1.0, abs(lo)):
            lo, hi = hi, lo  # equal up to rounding: the two bounds were summed in different orders
        return cls(lo if lo == hi else min(max(0.5 * (lo + hi), lo), hi), lo, hi)

    def map(self, f: Callable[[float], float]) -> "Estimate":
        """Apply an increasing function to value and bounds (e.g. Gini = 2 AUC - 1)."""
        return Estimate(f(self.value), f(self.lower), f(self.upper))

    def to_dict(self) -> dict[str, float | bool]:
        """``{"value", "lower", "upper", "exact"}`` for JSON reports."""
        return {"value": self.value, "lower": self.lower, "upper": self.upper, "exact": self.exact}


NAN = Estimate(math.nan, math.nan, math.nan)
