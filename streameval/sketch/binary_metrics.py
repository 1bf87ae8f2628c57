"""The metric methods of :class:`~streameval.BinarySketch`: a thin facade over :mod:`streameval.metrics`.

Each method builds (once per state) the sketch's bin table and calls a pure function of
:mod:`streameval.metrics` or :mod:`streameval.stats`; nothing here changes the sketch. Kept apart
from the state (``binary.py``) so that each module holds one idea; curves and thresholds are in
``binary_curves.py``.
"""

from __future__ import annotations

from typing import Any, overload

from ..grid import Grid
from ..kernels import binary as kernels
from ..metrics import auc, probability
from ..metrics.estimate import Estimate
from ..metrics.probability import CalibrationCurve, ProbabilitySums
from ..metrics.soft_auc import DEFAULT_MAX_PAIRS
from ..metrics.soft_auc import soft_auc as _soft_auc
from ..metrics.table import BinTable
from .binary_curves import BinaryCurves

__all__ = ["BinaryMetrics"]


class BinaryMetrics(BinaryCurves):
    """Metric methods shared by binary sketches; the class using it provides ``table()``,
    ``grid`` and ``counters``."""

    grid: Grid
    counters: dict[str, Any]

    def table(self) -> BinTable:  # pragma: no cover - provided by the sketch
        raise NotImplementedError

    def roc_auc(self, max_fpr: float | None = None) -> Estimate:
        """Area under the ROC curve, or the McClish-standardized partial AUC up to ``max_fpr``.

        Parameters
        ----------
        max_fpr : float in (0, 1], optional
            If given, the partial AUC over FPR in ``[0, max_fpr]``, standardized so that a random
            ranking gives 0.5 and a perfect one 1 (McClish 1989), as scikit-learn's
            ``roc_auc_score(max_fpr=...)``.

        Returns
        -------
        Estimate
            The probability that a random positive outscores a random negative, ties counting 1/2
            (weighted pairs over ``P * N``), with binning bounds that contain the value computed on
            the raw rows; exact (``lower == upper``) when every occupied bin holds one score value.
            NaN with an :class:`~streameval.UndefinedMetricWarning` when a class is absent.

        Raises
        ------
        ValueError
            If ``max_fpr`` is outside (0, 1].

        References
        ----------
        .. [1] Hanley and McNeil (1982). "The meaning and use of the area under a receiver operating
           characteristic (ROC) curve". Radiology 143(1).
        .. [2] Fawcett (2006). "An introduction to ROC analysis". Pattern Recognition Letters 27(8).
        .. [3] McClish (1989). "Analyzing a portion of the ROC curve". Medical Decision Making 9(3).
        """
        return auc.roc_auc(self.table(), max_fpr)

    def gini(self) -> Estimate:
        """Gini coefficient (accuracy ratio, Somers' D) ``2 * AUC - 1``, with bounds.

        Returns
        -------
        Estimate
            In [-1, 1]: 0 for a random ranking, 1 for a perfect one; bounds mapped from the AUC's.
            NaN with an :class:`~streameval.UndefinedMetricWarning` when a class is absent.

        References
        ----------
        .. [1] Hand and Till (2001). "A simple generalisation of the area under the ROC curve for
           multiple class classification problems". Machine Learning 45(2).
        """
        return auc.gini(self.table())

    def average_precision(self) -> Estimate:
        """Average precision: the step-wise area under the precision-recall curve (the PR-AUC of
        most texts), as ``sklearn.metrics.average_precision_score``.

        ``AP = sum_n (R_n - R_{n-1}) P_n`` over the thresholds in decreasing order, with all rows of
        a tied score entering together (scikit-learn's convention).

        Returns
        -------
        Estimate
            In [0, 1], with bounds that contain the raw rows' value (the extreme orders of the
            positives and negatives inside each bin); exact when every occupied bin holds one score
            value. 0.0 with an :class:`~streameval.UndefinedMetricWarning` when there is no positive
            row (as scikit-learn); NaN for an empty sketch.

        References
        ----------
        .. [1] Manning, Raghavan and Schütze (2008). "Introduction to Information Retrieval", ch. 8.4.
        .. [2] Su, Yuan and Zhu (2015). "Relationship between average precision and AUC". ICTIR.
        """
        return auc.average_precision(self.table())

    def pr_auc(self, method: str = "trapezoid") -> float:
        """Area under the precision-recall curve by the trapezoidal rule.

        The PR-AUC of most texts is :meth:`average_precision` (the step integral, with bounds); this is
        ``sklearn.metrics.auc(recall, precision)`` on :meth:`precision_recall_curve`'s points, which
        linear interpolation makes optimistic (Davis and Goadrich 2006). Also available under the
        name that says which it is, :meth:`pr_auc_trapezoid`.

        Parameters
        ----------
        method : {"trapezoid"}, default "trapezoid"
            The only integration rule offered.

        Returns
        -------
        float
            In [0, 1]; on continuous scores, the trapezoid over the sketch's exact thresholds (a subset
            of the raw curve's points), so not bounded like :meth:`average_precision`.

        Raises
        ------
        ValueError
            If ``method`` is not ``"trapezoid"``.

        References
        ----------
        .. [1] Davis and Goadrich (2006). "The relationship between precision-recall and ROC curves".
           ICML.
        """
        return auc.pr_auc(self.table(), method)

    def pr_auc_trapezoid(self) -> float:
        """Trapezoidal area under the precision-recall curve (see :meth:`pr_auc`).

        Returns
        -------
        float
            ``sklearn.metrics.auc(recall, precision)`` over the curve's points, in [0, 1].

        References
        ----------
        .. [1] Davis and Goadrich (2006). "The relationship between precision-recall and ROC curves".
           ICML.
        """
        return auc.pr_auc(self.table(), "trapezoid")

    def ci(
        self,
        metric: Any = "roc_auc",
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
            ``"roc_auc"``; ``"log_loss"`` or ``"brier_score"`` (normal interval of the mean, its
            variance bounded from the bins: :func:`streameval.stats.loss.probability_ci`); or a
            rate at ``threshold``: ``"recall"`` (``"tpr"``), ``"precision"``, ``"specificity"``
            (``"tnr"``), ``"npv"``, ``"fpr"``, ``"fnr"``, ``"accuracy"``.
        level : float in (0, 1), default 0.95
        method : str, optional
            ``"bootstrap"``: percentile interval of any metric (also ``"average_precision"``,
            ``"f1"`` at a threshold, ``"recall_at_fpr@0.01"``, a callable ``sketch -> value``) from
            the sketch's Poisson replicates (``bootstrap=R``; :func:`streameval.stats.bootstrap.bootstrap_ci`).
            For ROC-AUC ``"delong"`` (default; DeLong et al. 1988) or ``"hanley_mcneil"``; for log
            loss and Brier ``"normal"``; for rates ``"wilson"`` (default; Wilson 1927), ``"clopper_pearson"`` or ``"jeffreys"``.
        threshold : float
            Required for rates.
        positive_if : {">=", ">"}
            Threshold rule for rates.

        Returns
        -------
        streameval.stats.ConfidenceInterval
            The estimate with its binning bounds and the interval; with binning the interval is
            widened to contain the one the exact rows give. Weights are read as frequency weights,
            or with Kish's effective sample size when the sketch kept the squared weights (every
            weighted sketch built by this version); the method then says ``Kish n_eff``.

        Raises
        ------
        UsageError
            Unknown metric or method, a level outside (0, 1), a rate without ``threshold``.
        """
        from ..errors import UsageError
        from ..stats import rate_cis, roc_auc_ci

        if method == "bootstrap" or callable(metric):
            from ..stats.bootstrap import bootstrap_ci

            return bootstrap_ci(self, metric, level, threshold=threshold, positive_if=positive_if)  # type: ignore[arg-type]
        if metric == "roc_auc":
            return roc_auc_ci(self.table(), level, method or "delong", kish=self._kish())
        if metric in ("log_loss", "brier_score", "brier"):
            from ..stats.loss import probability_ci

            if method not in (None, "normal"):
                raise UsageError(f"the {metric} interval has one method, 'normal'; got {method!r}")
            name = "brier_score" if metric == "brier" else metric
            return probability_ci(self._sums(), self.table(), name, level, self._weight_sq())
        name = {"tpr": "recall", "sensitivity": "recall", "tnr": "specificity", "ppv": "precision"}.get(metric, metric)
        if threshold is None:
            raise UsageError(f"ci({metric!r}) needs threshold=: the rate is taken at a threshold")
        c = self.confusion(threshold, positive_if=positive_if)
        return rate_cis(c, level, method or "wilson", rates=(name,), kish=self._kish())[name]

    def _kish(self) -> tuple[float, float] | None:
        """``(P / sum w**2 of positives, N / sum w**2 of negatives)``, or None (unweighted, or the
        squared weights were not recorded: frequency weights)."""
        c = self.counters
        if not c.get("weighted") or "weight_sq_pos" not in c:
            return None
        t = self.table()
        sp, sn = float(c["weight_sq_pos"]), float(c["weight_sq_neg"])
        return (t.P / sp if sp > 0 else 1.0, t.N / sn if sn > 0 else 1.0)

    def _weight_sq(self) -> float | None:
        """Sum of squared weights of the binned rows (Kish), or None: unweighted, or not recorded."""
        c = self.counters
        if not c.get("weighted") or "weight_sq_pos" not in c:
            return None
        return float(c["weight_sq_pos"]) + float(c["weight_sq_neg"])

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
        """Brier score ``sum w (y - p)^2 / sum w``: the mean squared error of the probabilities.

        Returns
        -------
        float
            In [0, 1], exact up to rounding whatever the grid (a running sum over rows). NaN with an
            :class:`~streameval.UndefinedMetricWarning` for an empty sketch.

        Raises
        ------
        ValueError
            If a score lies outside [0, 1] (as scikit-learn's ``brier_score_loss``).

        References
        ----------
        .. [1] Brier (1950). "Verification of forecasts expressed in terms of probability". Monthly
           Weather Review 78(1).
        """
        return probability.brier_score(self._sums())

    def calibration_curve(self, n_bins: int = 10) -> CalibrationCurve:
        """Reliability diagram and expected calibration error over ``n_bins`` equal-width bins on [0, 1].

        Bin ``j`` holds scores in ``(j/n, (j+1)/n]`` (the first also holds 0), scikit-learn's
        ``calibration_curve(strategy="uniform")``.

        Parameters
        ----------
        n_bins : int, default 10
            Number of calibration bins, >= 1.

        Returns
        -------
        CalibrationCurve
            ``prob_true`` (observed positive fraction), ``prob_pred`` (mean score) and ``weight`` per
            non-empty bin, shape (m,), and ``ece``; ``exact`` is False when a sketch bin straddles a
            calibration-bin edge and was assigned by its mean score.

        Raises
        ------
        ValueError
            If ``n_bins < 1`` or a score lies outside [0, 1].

        References
        ----------
        .. [1] Naeini, Cooper and Hauskrecht (2015). "Obtaining well calibrated probabilities using
           Bayesian binning". AAAI.
        .. [2] Guo, Pleiss, Sun and Weinberger (2017). "On calibration of modern neural networks". ICML.
        """
        return probability.calibration_curve(self.table(), n_bins)

    def expected_calibration_error(self, n_bins: int = 10) -> float:
        """Expected calibration error over ``n_bins`` equal-width bins."""
        return self.calibration_curve(n_bins).ece
