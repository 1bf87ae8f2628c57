"""Multiple testing: Benjamini-Hochberg false discovery rate control for many alerts at once.

Monitoring tests many slices and windows in one run; at a 5% level one test in twenty alerts by
chance. Benjamini-Hochberg keeps the expected share of false alerts among all alerts at ``alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import UsageError

__all__ = ["BHResult", "benjamini_hochberg"]


@dataclass(frozen=True, eq=False)
class BHResult:
    """Benjamini-Hochberg adjusted p-values and decisions, in the input order.

    Attributes
    ----------
    adjusted : ndarray of float64, shape (m,)
        Adjusted p-values (the smallest FDR level at which each test would be rejected); NaN
        where the input was NaN.
    reject : ndarray of bool, shape (m,)
        True where ``adjusted <= alpha``; False for NaN inputs.
    alpha : float
        The false discovery rate the decisions control.
    """

    adjusted: npt.NDArray[np.float64]
    reject: npt.NDArray[np.bool_]
    alpha: float

    @property
    def n_rejected(self) -> int:
        """Number of rejected hypotheses (alerts)."""
        return int(np.count_nonzero(self.reject))


def benjamini_hochberg(p_values: npt.ArrayLike, alpha: float = 0.05) -> BHResult:
    """Benjamini-Hochberg step-up procedure.

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``, reject the hypotheses of
    ``p_(1)..p_(k)`` for the largest ``k`` with ``p_(k) <= k alpha / m`` [1]_. The adjusted
    p-values are ``min(1, min_{j >= i} m p_(j) / j)`` (scipy's ``false_discovery_control``), and a
    test is rejected exactly when its adjusted p-value is ``<= alpha``. This controls the false
    discovery rate at ``alpha`` for independent (or positively dependent) tests.

    Parameters
    ----------
    p_values : array-like of shape (m,)
        P-values in [0, 1]. NaN entries (tests that were not defined) are left out: they do not
        count in ``m``, get a NaN adjusted p-value and are never rejected.
    alpha : float in (0, 1), default 0.05
        Target false discovery rate.

    Returns
    -------
    BHResult

    Raises
    ------
    UsageError
        If ``alpha`` is not in (0, 1), ``p_values`` is not one-dimensional, or a p-value is
        outside [0, 1].

    References
    ----------
    .. [1] Benjamini & Hochberg (1995). "Controlling the false discovery rate: a practical and
       powerful approach to multiple testing". Journal of the Royal Statistical Society B 57(1),
       289-300.

    Examples
    --------
    >>> from streameval.stats import benjamini_hochberg
    >>> r = benjamini_hochberg([0.01, 0.04, 0.03, 0.20], alpha=0.05)
    >>> r.adjusted.round(4).tolist(), r.reject.tolist()
    ([0.04, 0.0533, 0.0533, 0.2], [True, False, False, False])
    """
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise UsageError(f"alpha must be in (0, 1), got {alpha!r}")
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise UsageError(f"p_values must be one-dimensional, got shape {p.shape}")
    valid = ~np.isnan(p)
    bad = valid & ((p < 0) | (p > 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise UsageError(f"p-values must be in [0, 1]; p_values[{i}] = {p[i]!r}")
    adjusted = np.full(p.shape, np.nan)
    idx = np.flatnonzero(valid)
    m = idx.size
    if m:
        order = np.argsort(p[idx], kind="stable")
        ranked = p[idx][order] * m / np.arange(1, m + 1)
        adj = np.minimum(np.minimum.accumulate(ranked[::-1])[::-1], 1.0)
        adjusted[idx[order]] = adj
    reject = np.zeros(p.shape, dtype=bool)
    reject[valid] = adjusted[valid] <= a
    return BHResult(adjusted, reject, a)
