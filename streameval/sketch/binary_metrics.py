"""The metric methods of :class:`~streameval.BinarySketch`: a thin facade over :mod:`streameval.metrics`.

Each method builds (once per state) the sketch's bin table and calls a pure function of
:mod:`streameval.metrics` or :mod:`streameval.stats`; nothing here changes the sketch. Kept apart
from the state (``sketch.py``) so that each module holds one idea.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, overload

import numpy as np

from ..grid import Grid
from ..kernels import binary as kernels
from ..metrics import auc, curves, probability, thresholds
from ..metrics.confusion import Confusion, confusion_at
from ..metrics.estimate import Estimate
from ..metrics.probability import CalibrationCurve, ProbabilitySums
from ..metrics.soft_auc import DEFAULT_MAX_PAIRS
from ..metrics.soft_auc import soft_auc as _soft_auc
from ..metrics.table import BinTable
from ..metrics.thresholds import ThresholdResult, TopK

__all__ = ["BinaryMetrics"]


class BinaryMetrics:
    """Metric methods shared by binary sketches; the class using it provides ``table()``,
    ``grid`` and ``counters``."""

    grid: Grid
    counters: dict[str, Any]

    def table(self) -> BinTable:  # pragma: no cover - provided by the sketch
        raise NotImplementedError

    def roc_auc(self, max_fpr: float | None = None) -> Estimate:
        """ROC-AUC, or McClish-standardized partial AUC up to ``max_fpr``; see :func:`streameval.metrics.auc.roc_auc`."""
        return auc.roc_auc(self.table(), max_fpr)

    def gini(self) -> Estimate:
        """Gini coefficient ``2 AUC - 1``; see :func:`streameval.metrics.auc.gini`."""
        return auc.gini(self.table())

    def average_precision(self) -> Estimate:
        """Average precision with bounds; see :func:`streameval.metrics.auc.average_precision`."""
        return auc.average_precision(self.table())

    def pr_auc(self, method: str = "trapezoid") -> float:
        """Trapezoidal area under the PR curve (optimistic); see :func:`streameval.metrics.auc.pr_auc`.

        The PR-AUC of most texts is :meth:`average_precision` (the step integral, with bounds);
        this is the trapezoid, also available as :meth:`pr_auc_trapezoid`.
        """
        return auc.pr_auc(self.table(), method)

    def pr_auc_trapezoid(self) -> float:
        """Trapezoidal area under the PR curve; the name says which PR-AUC it is (see :meth:`pr_auc`)."""
        return auc.pr_auc(self.table(), "trapezoid")

    def _curve_thresholds(self, out: tuple[np.ndarray, np.ndarray, np.ndarray], positive_if: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if thresholds.check_rule(positive_if) == ">":
            return out[0], out[1], self.table().strict_thresholds(out[2])
        return out

    def roc_curve(self, drop_intermediate: bool = True, *, positive_if: str = ">=") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(fpr, tpr, thresholds)``; see :func:`streameval.metrics.curves.roc_curve`.

        With ``positive_if=">"`` the thresholds are stated for the rule ``score > threshold`` (the
        same points; each threshold is the largest score left out).
        """
        return self._curve_thresholds(curves.roc_curve(self.table(), drop_intermediate), positive_if)

    def precision_recall_curve(self, drop_intermediate: bool = False, *, positive_if: str = ">=") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(precision, recall, thresholds)``; see :func:`streameval.metrics.curves.precision_recall_curve`.

        ``positive_if`` as for :meth:`roc_curve`.
        """
        return self._curve_thresholds(curves.precision_recall_curve(self.table(), drop_intermediate), positive_if)

    def det_curve(self, drop_intermediate: bool = False, *, positive_if: str = ">=") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(fpr, fnr, thresholds)``; see :func:`streameval.metrics.curves.det_curve`.

        ``positive_if`` as for :meth:`roc_curve`.
        """
        return self._curve_thresholds(curves.det_curve(self.table(), drop_intermediate), positive_if)

    def confusion(self, threshold: float, *, positive_if: str = ">=") -> Confusion:
        """Confusion counts and rates at ``threshold``.

        Parameters
        ----------
        threshold : float
            The decision threshold, in score units.
        positive_if : {">=", ">"}, default ">="
            A row is predicted positive iff ``score >= threshold`` (scikit-learn's convention) or
            ``score > threshold``. Both are exact: ``score > t`` is ``score >= nextafter(t, inf)``.

        Returns
        -------
        Confusion
            Exact unless the threshold falls inside a bin whose scores straddle it; then the
            counts are those of the nearest exact threshold, with an
            :class:`InexactThresholdWarning` and the bounds at the requested threshold.

        Raises
        ------
        ValueError
            If ``threshold`` is NaN or ``positive_if`` is not one of the two rules.
        """
        t = float(threshold)
        if math.isnan(t):
            raise ValueError("threshold must be a number, got NaN")
        strict = thresholds.check_rule(positive_if) == ">"
        t_ge = float(np.nextafter(t, np.inf)) if strict else t
        key = int(self.grid.bin_index(np.array([t_ge]))[0])
        c = confusion_at(self.table(), key, t_ge)
        if not strict:
            return c
        snapped = c.threshold if not c.exact else t
        if not c.exact:
            snapped = float(self.table().strict_thresholds([c.threshold])[0])
        return replace(c, threshold=snapped, requested_threshold=t, positive_if=">")

    def _rule(self, r: ThresholdResult, positive_if: str) -> ThresholdResult:
        return thresholds.strict_result(self.table(), r) if thresholds.check_rule(positive_if) == ">" else r

    def equal_error_rate(self, *, positive_if: str = ">=") -> ThresholdResult:
        """EER and its threshold; see :func:`streameval.metrics.thresholds.equal_error_rate`.

        ``positive_if`` states the returned threshold for the rule ``>=`` or ``>`` (same rows).
        """
        return self._rule(thresholds.equal_error_rate(self.table()), positive_if)

    def ks_statistic(self, *, positive_if: str = ">=") -> ThresholdResult:
        """KS statistic ``max(TPR - FPR)`` and its threshold; see :func:`streameval.metrics.thresholds.ks_statistic`.

        ``positive_if`` states the returned threshold for the rule ``>=`` or ``>`` (same rows).
        """
        return self._rule(thresholds.ks_statistic(self.table()), positive_if)

    def best_threshold(
        self,
        metric: Any = "f1",
        *,
        beta: float = 1.0,
        cost_fp: float = 1.0,
        cost_fn: float = 1.0,
        prevalence: float | None = None,
        positive_if: str = ">=",
    ) -> ThresholdResult:
        """Threshold maximizing ``metric`` (a name or a callable of the curve's arrays).

        See :func:`streameval.metrics.thresholds.best_threshold` for the objectives (F1, F-beta,
        MCC, Youden's J, G-mean, Fowlkes-Mallows, expected cost with an optional deployment
        ``prevalence``, the ROC point nearest (0, 1), the PR point nearest (1, 1)).
        ``positive_if`` states the returned threshold for the rule ``>=`` or ``>`` (same rows).
        """
        r = thresholds.best_threshold(self.table(), metric, beta=beta, cost_fp=cost_fp, cost_fn=cost_fn,
                                      prevalence=prevalence)
        return self._rule(r, positive_if)

    def threshold_at(
        self,
        *,
        precision: float | None = None,
        recall: float | None = None,
        fpr: float | None = None,
        positive_if: str = ">=",
    ) -> ThresholdResult | None:
        """Threshold reaching a target; see :func:`streameval.metrics.thresholds.threshold_at`.

        ``positive_if`` states the returned threshold for the rule ``>=`` or ``>`` (same rows).
        """
        r = thresholds.threshold_at(self.table(), precision=precision, recall=recall, fpr=fpr)
        return None if r is None else self._rule(r, positive_if)

    def top_k(self, k: float) -> TopK:
        """Precision/recall/lift of the ``k`` top-scored rows; see :func:`streameval.metrics.thresholds.top_k`."""
        return thresholds.top_k(self.table(), k)

    def r_precision(self) -> Estimate:
        """Precision at ``k = P`` (break-even point); see :func:`streameval.metrics.thresholds.r_precision`."""
        return thresholds.r_precision(self.table())

    def ci(
        self,
        metric: str = "roc_auc",
        *,
        level: float = 0.95,
        method: str | None = None,
        threshold: float | None = None,
        positive_if: str = ">=",
    ) -> Any:
        """Confidence interval of a metric (sampling uncertainty), as pROC's ``ci()``.

        Parameters
        ----------
        metric : str, default "roc_auc"
            ``"roc_auc"``, or a rate at ``threshold``: ``"recall"`` (``"tpr"``), ``"precision"``,
            ``"specificity"`` (``"tnr"``), ``"npv"``, ``"fpr"``, ``"fnr"``, ``"accuracy"``.
        level : float in (0, 1), default 0.95
        method : str, optional
            For ROC-AUC ``"delong"`` (default; DeLong et al. 1988) or ``"hanley_mcneil"``; for
            rates ``"wilson"`` (default; Wilson 1927), ``"clopper_pearson"`` or ``"jeffreys"``.
        threshold : float
            Required for rates.
        positive_if : {">=", ">"}
            Threshold rule for rates.

        Returns
        -------
        streameval.stats.ConfidenceInterval
            The estimate with its binning bounds and the interval; with binning the interval is
            widened to contain the one the exact rows give. Weights are read as frequency weights.

        Raises
        ------
        UsageError
            Unknown metric or method, a level outside (0, 1), a rate without ``threshold``.
        """
        from ..errors import UsageError
        from ..stats import rate_cis, roc_auc_ci

        if metric == "roc_auc":
            return roc_auc_ci(self.table(), level, method or "delong")
        name = {"tpr": "recall", "sensitivity": "recall", "tnr": "specificity", "ppv": "precision"}.get(metric, metric)
        if threshold is None:
            raise UsageError(f"ci({metric!r}) needs threshold=: the rate is taken at a threshold")
        c = self.confusion(threshold, positive_if=positive_if)
        return rate_cis(c, level, method or "wilson", rates=(name,))[name]

    def _sums(self) -> ProbabilitySums:
        c = self.counters
        return ProbabilitySums(
            c["prob_weight"], int(c["n_outside"]), c["brier_sum"], c["log_loss_sum"], kernels.LOG_LOSS_EPS
        )

    @overload
    def log_loss(self, eps: None = None) -> float: ...
    @overload
    def log_loss(self, eps: float) -> Estimate: ...

    def log_loss(self, eps: float | None = None) -> float | Estimate:
        """Mean log loss (cross-entropy) of the rows with a score in [0, 1].

        Parameters
        ----------
        eps : float, optional
            Clip probabilities to ``[eps, 1 - eps]`` (e.g. 1e-15, as many texts do). Without it,
            the clip is float64 machine epsilon (scikit-learn's for float64 input) and the result
            is the exact running sum, a float.

        Returns
        -------
        float or Estimate
            Without ``eps``: a float, exact up to rounding. With ``eps``: an :class:`Estimate`,
            exact unless rows with a probability within ``eps`` of 0 or 1 share a bin with other
            score values (see :func:`streameval.metrics.probability.log_loss_clipped`). NaN with an
            :class:`~streameval.UndefinedMetricWarning` when there are no rows.

        Raises
        ------
        ValueError
            If a score lies outside [0, 1] (apply a sigmoid to logits first), or ``eps`` is not in
            (0, 0.5).

        References
        ----------
        .. [1] Bishop (2006). "Pattern Recognition and Machine Learning", sec. 4.3.2.
        """
        if eps is None:
            return probability.log_loss(self._sums())
        return probability.log_loss_clipped(self._sums(), self.table(), eps)

    def soft_auc(self, beta: float, *, max_pairs: int = DEFAULT_MAX_PAIRS) -> Estimate:
        """Soft-AUC: mean over (positive, negative) pairs of ``sigmoid(beta * (s_pos - s_neg))``.

        Parameters
        ----------
        beta : float
            The sigmoid's slope in inverse score units (> 0); larger values approach ROC-AUC.
        max_pairs : int, default 2**24
            Bin pairs summed one by one before bins are pooled (pooling keeps the bounds rigorous).

        Returns
        -------
        Estimate
            Value at the bins' mean scores, with bounds containing the raw rows' soft-AUC; exact on
            discrete scores. NaN with an :class:`~streameval.UndefinedMetricWarning` if a class is
            absent.

        Raises
        ------
        ValueError
            If ``beta`` is not positive and finite.

        References
        ----------
        .. [1] Herschtal and Raskutti (2004). "Optimising area under the ROC curve using gradient
           descent". ICML.
        """
        return _soft_auc(self.table(), beta, max_pairs)

    def brier_score(self) -> float:
        """Brier score (exact running sum); see :func:`streameval.metrics.probability.brier_score`."""
        return probability.brier_score(self._sums())

    def calibration_curve(self, n_bins: int = 10) -> CalibrationCurve:
        """Reliability curve and ECE; see :func:`streameval.metrics.probability.calibration_curve`."""
        return probability.calibration_curve(self.table(), n_bins)

    def expected_calibration_error(self, n_bins: int = 10) -> float:
        """Expected calibration error over ``n_bins`` equal-width bins."""
        return self.calibration_curve(n_bins).ece
