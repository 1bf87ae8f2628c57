"""The bin table: a sketch's occupied bins in descending score order, with running counts.

This is the one primitive every curve, area and threshold metric is built on (as scikit-learn
builds every curve on counts per threshold). Row ``i`` is the ``i``-th occupied bin counting from
the highest scores; ``tp[i]``/``fp[i]`` are the positive/negative weights with score greater than
or equal to the bin's smallest score ``lo[i]``, which is therefore an *exact* threshold: the counts
there are the true counts, whatever the scores inside the bins.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from ..kernels.fields import MAX, MIN, SUM, W

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class BinTable:
    """Occupied bins in descending score order.

    Attributes
    ----------
    keys : ndarray of int64, shape (k,)
        Grid bin indices, descending.
    pos, neg : ndarray of float64, shape (k,)
        Positive and negative weight per bin.
    pos_min, pos_max, neg_min, neg_max : ndarray of float64, shape (k,)
        Smallest and largest score per class per bin (``+inf``/``-inf`` where a class is absent).
    pos_sum, neg_sum : ndarray of float64, shape (k,)
        Weighted score sums per class per bin.
    """

    keys: npt.NDArray[np.int64]
    pos: FloatArray
    neg: FloatArray
    pos_min: FloatArray
    pos_max: FloatArray
    neg_min: FloatArray
    neg_max: FloatArray
    pos_sum: FloatArray
    neg_sum: FloatArray

    @classmethod
    def from_compact(cls, keys: npt.NDArray[np.int64], values: FloatArray) -> "BinTable":
        """Build from ascending ``keys`` and ``values`` of shape (k, 2, 4)."""
        v = values[::-1]
        return cls(
            keys=keys[::-1].copy(),
            pos=v[:, 1, W].copy(),
            neg=v[:, 0, W].copy(),
            pos_min=v[:, 1, MIN].copy(),
            pos_max=v[:, 1, MAX].copy(),
            neg_min=v[:, 0, MIN].copy(),
            neg_max=v[:, 0, MAX].copy(),
            pos_sum=v[:, 1, SUM].copy(),
            neg_sum=v[:, 0, SUM].copy(),
        )

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @cached_property
    def tp(self) -> FloatArray:
        """Positive weight with score >= ``lo[i]``."""
        return np.cumsum(self.pos)

    @cached_property
    def fp(self) -> FloatArray:
        """Negative weight with score >= ``lo[i]``."""
        return np.cumsum(self.neg)

    @property
    def tp_before(self) -> FloatArray:
        """Positive weight in bins above bin ``i``."""
        return self.tp - self.pos

    @property
    def fp_before(self) -> FloatArray:
        """Negative weight in bins above bin ``i``."""
        return self.fp - self.neg

    @cached_property
    def P(self) -> float:
        """Total positive weight."""
        return float(self.tp[-1]) if len(self) else 0.0

    @cached_property
    def N(self) -> float:
        """Total negative weight."""
        return float(self.fp[-1]) if len(self) else 0.0

    @cached_property
    def lo(self) -> FloatArray:
        """Smallest score in each bin (an exact threshold)."""
        return np.minimum(self.pos_min, self.neg_min)

    @cached_property
    def hi(self) -> FloatArray:
        """Largest score in each bin."""
        return np.maximum(self.pos_max, self.neg_max)

    @cached_property
    def pure(self) -> npt.NDArray[np.bool_]:
        """Bins holding a single score value (all their rows tied)."""
        return np.asarray(self.lo == self.hi, dtype=bool)

    @cached_property
    def _maxima(self) -> FloatArray:
        """Every class's largest score per bin, ascending (the known scores below any threshold)."""
        m = np.concatenate([self.pos_max, self.neg_max])
        return np.sort(m[np.isfinite(m)])

    def strict_thresholds(self, thresholds: npt.ArrayLike) -> FloatArray:
        """The ``score > x`` form of exact ``score >= t`` thresholds: ``x`` = the largest score below ``t``.

        For a threshold ``t`` that splits no bin (every threshold the metrics return), no score lies
        in ``(x, t)``, so ``score > x`` selects exactly the rows ``score >= t`` does. ``t = +inf``
        (nothing positive) becomes the largest score; a ``t`` with no score below it becomes the
        float just below ``t``.
        """
        t = np.asarray(thresholds, dtype=np.float64)
        m = self._maxima
        i = np.searchsorted(m, t, side="left") - 1
        below = np.nextafter(t, -np.inf)
        if m.size == 0:
            return below
        return np.where(i >= 0, m[np.clip(i, 0, None)], below)

    def lower_path(self) -> npt.NDArray[np.int8]:
        """Per bin, the lowest ROC path the bin's rows can trace (see :func:`path_kind`)."""
        return self._lower_path

    def upper_path(self) -> npt.NDArray[np.int8]:
        """Per bin, the highest ROC path the bin's rows can trace."""
        return self._upper_path

    @cached_property
    def _both(self) -> npt.NDArray[np.bool_]:
        return (self.pos > 0) & (self.neg > 0)

    @cached_property
    def _lower_path(self) -> npt.NDArray[np.int8]:
        kind = np.where(self.pos_min > self.neg_max, 2, np.where(self.pos_min == self.neg_max, 1, 0))
        return np.where(self._both, kind, 1).astype(np.int8)

    @cached_property
    def _upper_path(self) -> npt.NDArray[np.int8]:
        kind = np.where(self.pos_max < self.neg_min, 0, np.where(self.pos_max == self.neg_min, 1, 2))
        return np.where(self._both, kind, 1).astype(np.int8)
