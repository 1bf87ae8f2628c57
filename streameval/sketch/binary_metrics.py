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

    def _curve_thresholds(self, out: tuple[np.ndarray, np.ndarray, np.ndarray], positive_if: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if thresholds.check_rule(positive_if) == ">":
            return out[0], out[1], self.table().strict_thresholds(out[2])
        return out

    def roc_curve(self, drop_intermediate: bool = True, *, positive_if: str = ">=") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ROC curve ``(fpr, tpr, thresholds)``, as ``sklearn.metrics.roc_curve``.

        Parameters
        ----------
        drop_intermediate : bool, default True
            Drop points on straight segments of the curve, as scikit-learn.
        positive_if : {">=", ">"}, default ">="
            The rule the thresholds are stated for: ``score >= t`` (scikit-learn's) or ``score > t``
            (the same points; each threshold is then the largest score left out).

        Returns
        -------
        fpr, tpr : ndarray of shape (m,)
            Increasing rates of the rows predicted positive at ``thresholds[i]``.
        thresholds : ndarray of shape (m,)
            Decreasing; ``thresholds[0]`` is ``inf`` (no row positive). On discrete scores every point
            of scikit-learn's curve; on continuous ones one point per occupied bin, at the bin's
            smallest score, where the counts are exact.

        Warns
        -----
        UndefinedMetricWarning
            When a class is absent (its rate is NaN).

        References
        ----------
        .. [1] Fawcett (2006). "An introduction to ROC analysis". Pattern Recognition Letters 27(8).
        """
        return self._curve_thresholds(curves.roc_curve(self.table(), drop_intermediate), positive_if)

    def precision_recall_curve(self, drop_intermediate: bool = False, *, positive_if: str = ">=") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Precision-recall curve ``(precision, recall, thresholds)``, as
        ``sklearn.metrics.precision_recall_curve``.

        Parameters
        ----------
        drop_intermediate : bool, default False
            Drop points that do not change the curve's shape, as scikit-learn.
        positive_if : {">=", ">"}, default ">="
            Rule the thresholds are stated for (see :meth:`roc_curve`).

        Returns
        -------
        precision, recall : ndarray of shape (m + 1,)
            At increasing thresholds; the last point is ``(1, 0)`` with no threshold, as scikit-learn.
        thresholds : ndarray of shape (m,)
            Increasing; same point rule as :meth:`roc_curve`.

        References
        ----------
        .. [1] Davis and Goadrich (2006). "The relationship between precision-recall and ROC curves".
           ICML.
        """
        return self._curve_thresholds(curves.precision_recall_curve(self.table(), drop_intermediate), positive_if)

    def det_curve(self, drop_intermediate: bool = False, *, positive_if: str = ">=") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Detection error tradeoff curve ``(fpr, fnr, thresholds)``, as ``sklearn.metrics.det_curve``.

        Parameters
        ----------
        drop_intermediate : bool, default False
            Drop points that do not change the curve's shape.
        positive_if : {">=", ">"}, default ">="
            Rule the thresholds are stated for (see :meth:`roc_curve`).

        Returns
        -------
        fpr, fnr : ndarray of shape (m,)
            False positive (false accept) and false negative (false reject) rates.
        thresholds : ndarray of shape (m,)
            Increasing; same point rule as :meth:`roc_curve`.

        Raises
        ------
        ValueError
            If only one class is present.

        References
        ----------
        .. [1] Martin, Doddington, Kamm, Ordowski and Przybocki (1997). "The DET curve in assessment of
           detection task performance". Eurospeech.
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
        """Equal error rate: where the false accept rate (FPR) equals the false reject rate (FNR).

        Between the two exact thresholds where ``FPR - FNR`` changes sign the crossing is found by
        linear interpolation, as in DET analysis (ISO/IEC 19795-1).

        Parameters
        ----------
        positive_if : {">=", ">"}, default ">="
            Rule the returned threshold is stated for (the same rows either way).

        Returns
        -------
        ThresholdResult
            ``value`` the EER (a rate in [0, 1]) with the interval the exact rows allow, and
            ``threshold`` the exact threshold of the two nearest the crossing.

        Raises
        ------
        ValueError
            If a class is absent.

        References
        ----------
        .. [1] ISO/IEC 19795-1:2021, "Biometric performance testing and reporting", part 1.
        """
        return self._rule(thresholds.equal_error_rate(self.table()), positive_if)

    def ks_statistic(self, *, positive_if: str = ">=") -> ThresholdResult:
        """Kolmogorov-Smirnov statistic ``max_t (TPR(t) - FPR(t))`` and the threshold reaching it.

        The largest gap between the score distributions of positives and negatives, as used in credit
        scoring.

        Parameters
        ----------
        positive_if : {">=", ">"}, default ">="
            Rule the returned threshold is stated for.

        Returns
        -------
        ThresholdResult
            ``value`` in [0, 1] with bounds (inside a bin of both classes the positives may come first),
            and the exact threshold reaching it.

        Raises
        ------
        ValueError
            If a class is absent.

        References
        ----------
        .. [1] Thomas, Edelman and Crook (2002). "Credit Scoring and Its Applications". SIAM.
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
        """The exact threshold that maximizes a metric (or minimizes an expected cost or a distance).

        Only the sketch's exact thresholds (bin edges whose counts are known) are candidates, so the
        counts reported at the returned threshold are exact.

        Parameters
        ----------
        metric : str or callable, default "f1"
            ``"f1"``, ``"f_beta"``, ``"accuracy"``, ``"balanced_accuracy"``, ``"mcc"``,
            ``"informedness"``/``"youden_j"``, ``"g_mean"`` (``sqrt(TPR * TNR)``),
            ``"fowlkes_mallows"`` (``sqrt(precision * recall)``), ``"cost"``, ``"roc_closest"`` (the ROC
            point nearest (0, 1), Perkins and Schisterman 2006) or ``"pr_closest"`` (the PR point nearest
            (1, 1)); or a callable ``f(tp=, fp=, fn=, tn=, tpr=, fpr=, precision=, recall=)`` of arrays
            of shape (m,), one entry per exact threshold, returning the objective to maximize.
        beta : float, default 1.0
            For ``"f_beta"``; ``inf`` gives recall.
        cost_fp, cost_fn : float, default 1.0
            For ``"cost"``: the cost of a false positive and of a false negative, in any one unit.
        prevalence : float in [0, 1], optional
            For ``"cost"``: the deployment prevalence, when it differs from the sample's; the cost is
            then ``cost_fp (1 - prevalence) FPR + cost_fn prevalence FNR``.
        positive_if : {">=", ">"}, default ">="
            Rule the returned threshold is stated for.

        Returns
        -------
        ThresholdResult
            ``threshold`` and the objective's ``value`` there (for ``"cost"`` and the distances, the
            positive cost or distance), with the confusion counts at that threshold.

        Raises
        ------
        ValueError
            If ``metric`` is unknown, ``prevalence`` is outside [0, 1], or the sketch is empty.

        References
        ----------
        .. [1] Elkan (2001). "The foundations of cost-sensitive learning". IJCAI.
        .. [2] Perkins and Schisterman (2006). "The inconsistency of 'optimal' cutpoints obtained using
           two criteria based on the receiver operating characteristic curve". Am. J. Epidemiology 163(7).
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
        """The exact threshold that reaches a target precision, recall or false positive rate.

        Give exactly one target:

        - ``recall=r``: the highest threshold with recall >= r;
        - ``precision=p``: the lowest threshold with precision >= p (the most recall at that precision);
        - ``fpr=f``: the lowest threshold with FPR <= f (the most recall at that false alarm rate).

        Parameters
        ----------
        precision, recall, fpr : float in [0, 1], optional
            The target (one of them).
        positive_if : {">=", ">"}, default ">="
            Rule the returned threshold is stated for.

        Returns
        -------
        ThresholdResult or None
            The threshold and the rates there; None, with an :class:`~streameval.UndefinedMetricWarning`,
            when no threshold reaches the target.

        Raises
        ------
        ValueError
            If no target or more than one is given (an unreachable target gives None).
        """
        r = thresholds.threshold_at(self.table(), precision=precision, recall=recall, fpr=fpr)
        return None if r is None else self._rule(r, positive_if)

    def top_k(self, k: float) -> TopK:
        """Precision, recall and lift among the ``k`` highest-scored rows.

        Parameters
        ----------
        k : float
            Number of rows (or total weight) taken from the top, > 0; clamped to the total weight.
            When ``k`` cuts through a bin, the rows inside it are taken in the extreme orders, which
            gives the bounds.

        Returns
        -------
        TopK
            ``precision`` (the hit rate), ``recall`` (the capture rate) and ``lift`` (precision over
            prevalence) as :class:`Estimate` objects.

        Raises
        ------
        ValueError
            If ``k <= 0`` or the sketch is empty.

        References
        ----------
        .. [1] Manning, Raghavan and Schütze (2008). "Introduction to Information Retrieval", ch. 8.4.
        """
        return thresholds.top_k(self.table(), k)

    def r_precision(self) -> Estimate:
        """R-precision: the precision among the top ``R = P`` rows (``P`` the positive weight), where
        precision equals recall (the precision-recall break-even point).

        Returns
        -------
        Estimate
            In [0, 1], with bounds when the cut falls inside a bin of both classes.

        References
        ----------
        .. [1] Manning, Raghavan and Schütze (2008). "Introduction to Information Retrieval", ch. 8.4.
        """
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
