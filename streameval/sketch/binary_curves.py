"""Curves, confusion counts and threshold tools of :class:`~streameval.BinarySketch`: a thin
facade over :mod:`streameval.metrics.curves` and :mod:`streameval.metrics.thresholds`, kept apart
from the scalar metrics (``binary_metrics.py``) so that each module holds one idea."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..grid import Grid
from ..metrics import curves, thresholds
from ..metrics.confusion import Confusion, confusion_at
from ..metrics.estimate import Estimate
from ..metrics.table import BinTable
from ..metrics.thresholds import ThresholdResult, TopK

__all__ = ["BinaryCurves"]


class BinaryCurves:
    """Mixin: curves and thresholds of a binary sketch; the class using it provides ``table()``
    and ``grid``."""

    grid: Grid

    def table(self) -> BinTable:  # pragma: no cover - provided by the sketch
        raise NotImplementedError

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
