"""The metric methods of :class:`~streameval.MulticlassSketch`, kept apart from its state
(``multiclass.py``) so that each module holds one idea; the math lives in
:mod:`streameval.metrics.multiclass`."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..errors import UsageError
from ..metrics import multiclass as mm
from ..metrics.estimate import Estimate
from ..metrics.table import BinTable
from .multiclass_inputs import plain

__all__ = ["MulticlassMetrics"]


class MulticlassMetrics:
    """Mixin: metrics of a multiclass sketch. The sketch provides ``confusion``, ``ranks``,
    ``counters``, ``n_classes``, ``_classes`` and the ``_need_scores`` / ``_table`` helpers."""

    confusion: np.ndarray
    ranks: np.ndarray
    counters: dict[str, Any]
    _classes: Any
    _cache: dict[Any, Any]  # cleared by the sketch whenever its state changes

    @property
    def n_classes(self) -> int:  # pragma: no cover - provided by the sketch
        raise NotImplementedError

    def _need_scores(self, what: str) -> None:  # pragma: no cover - provided by the sketch
        raise NotImplementedError

    def _table(self, key: Any) -> BinTable:  # pragma: no cover - provided by the sketch
        raise NotImplementedError

    def _c(self) -> np.ndarray:
        if self._classes is None:
            raise UsageError("this sketch has no rows yet")
        return self.confusion

    def confusion_matrix(self, normalize: str | None = None) -> np.ndarray:
        """The ``(K, K)`` confusion matrix of the predictions: row = true class, column = predicted
        class, both in ``classes`` order, as ``sklearn.metrics.confusion_matrix(labels=classes)``.

        The prediction is the argmax of the scores (ties to the first class, as ``np.argmax``) or the
        ``y_pred`` given to :meth:`update`.

        Parameters
        ----------
        normalize : {None, "true", "pred", "all"}, default None
            Divide by the row sums (recall per class), the column sums (precision per class) or the total.

        Returns
        -------
        ndarray of shape (K, K)
            Counts (int64) without weights, weight sums (float64) with them, or the normalized fractions
            (rows or columns with a zero sum give 0, as scikit-learn).

        Raises
        ------
        ValueError
            If ``normalize`` is not one of the four values.
        UsageError
            If the sketch has no rows yet.
        """
        return mm.confusion_matrix(self._c(), normalize, weighted=bool(self.counters["weighted"]))

    def accuracy(self) -> float:
        """Fraction (by weight) of rows whose predicted class is the true one, as
        ``sklearn.metrics.accuracy_score``.

        Returns
        -------
        float
            In [0, 1].

        Raises
        ------
        UsageError
            If the sketch has no rows yet.
        """
        return mm.accuracy(self._c())

    def balanced_accuracy(self, adjusted: bool = False) -> float:
        """Mean per-class recall over the classes present in ``y_true``, as
        ``sklearn.metrics.balanced_accuracy_score``.

        Parameters
        ----------
        adjusted : bool, default False
            Rescale so that chance scores 0 and a perfect prediction 1 (``(score - 1/K') / (1 - 1/K')``,
            ``K'`` the classes present).

        Returns
        -------
        float

        References
        ----------
        .. [1] Brodersen, Ong, Stephan and Buhmann (2010). "The balanced accuracy and its posterior
           distribution". ICPR.
        """
        return mm.balanced_accuracy(self._c(), adjusted)

    def top_k_accuracy(self, k: int = 2) -> float:
        """Fraction (by weight) of rows whose true class is among the ``k`` highest scores, exactly, with
        ``sklearn.metrics.top_k_accuracy_score``'s tie rule (a tied true class counts only if every class
        tied with it fits in the top ``k``).

        Parameters
        ----------
        k : int, default 2
            Number of top classes, >= 1. ``k >= K`` gives 1.0 with an
            :class:`~streameval.UndefinedMetricWarning` (as scikit-learn).

        Returns
        -------
        float
            In [0, 1]; exact for every ``k`` (the sketch keeps the rank of the true class per row).

        Raises
        ------
        ValueError
            If ``k`` is not a positive integer.
        UsageError
            If the sketch was fed hard predictions only (no scores).
        """
        self._need_scores("top_k_accuracy")
        return mm.top_k_accuracy(self.ranks, k)

    def precision_recall_fscore_support(
        self, beta: float = 1.0, average: str | None = None, zero_division: Any = "warn"
    ) -> tuple[Any, Any, Any, Any]:
        """Per-class precision, recall, F-beta and support, as
        ``sklearn.metrics.precision_recall_fscore_support(labels=classes)``.

        Parameters
        ----------
        beta : float, default 1.0
            Weight of recall in the F score (``inf``: recall).
        average : {None, "micro", "macro", "weighted"}, default None
            None gives arrays of shape (K,); "micro" pools the counts; "macro" is the unweighted mean
            over classes; "weighted" weighs each class by its support.
        zero_division : {"warn", 0.0, 1.0, nan}, default "warn"
            Value for a ratio with a zero denominator ("warn": 0.0 with an
            :class:`~streameval.UndefinedMetricWarning`).

        Returns
        -------
        precision, recall, fbeta : ndarray of shape (K,) or float
        support : ndarray of shape (K,) or None
            Row weight per class (None when averaged, as scikit-learn).

        Raises
        ------
        ValueError
            If ``average`` is not one of the four values.

        References
        ----------
        .. [1] Sokolova and Lapalme (2009). "A systematic analysis of performance measures for
           classification tasks". Information Processing and Management 45(4).
        """
        return mm.precision_recall_fscore_support(self._c(), beta, average, zero_division)

    def cohen_kappa(self, weights: str | None = None) -> float:
        """Cohen's kappa between the true and the predicted classes, as ``sklearn.metrics.cohen_kappa_score``.

        Parameters
        ----------
        weights : {None, "linear", "quadratic"}, default None
            Disagreement weights for ordered classes (distance in ``classes`` order).

        Returns
        -------
        float
            In [-1, 1]; NaN with an :class:`~streameval.UndefinedMetricWarning` when the expected
            disagreement is zero (e.g. one class only).

        Raises
        ------
        ValueError
            If ``weights`` is not one of the three values.

        References
        ----------
        .. [1] Cohen (1960). "A coefficient of agreement for nominal scales". Educational and
           Psychological Measurement 20(1).
        """
        return mm.cohen_kappa(self._c(), weights)

    def matthews_corrcoef(self) -> float:
        """Multiclass Matthews correlation coefficient (Gorodkin's R_K), as ``sklearn.metrics.matthews_corrcoef``.

        Returns
        -------
        float
            In [-1, 1]; 0.0 when undefined (a constant prediction or one true class), as scikit-learn.

        References
        ----------
        .. [1] Gorodkin (2004). "Comparing two K-category assignments by a K-category correlation
           coefficient". Computational Biology and Chemistry 28(5-6).
        """
        return mm.matthews_corrcoef(self._c())

    def _sums(self) -> mm.MulticlassProbabilitySums:
        self._need_scores("log loss and Brier score")
        c = self.counters
        return mm.MulticlassProbabilitySums(
            c["prob_weight"], int(c["n_outside"]), int(c["n_unnormalized"]), c["log_loss_sum"], c["brier_sum"], self.n_classes
        )

    def log_loss(self) -> float:
        """Mean cross-entropy ``-sum w log p_true / sum w`` in nats, ``p_true`` the score of the true
        class clipped to ``[eps, 1 - eps]`` (float64 epsilon), as ``sklearn.metrics.log_loss``.

        Rows whose scores do not sum to one are used as they are, with a warning (scikit-learn 1.9
        does the same: it no longer renormalizes); the sketch counts such rows.

        Returns
        -------
        float
            Exact up to rounding (a running sum over rows), whatever the grid.

        Raises
        ------
        ValueError
            If a score lies outside [0, 1].
        UsageError
            If the sketch was fed hard predictions only.

        References
        ----------
        .. [1] Bishop (2006). "Pattern Recognition and Machine Learning", sec. 4.3.4.
        """
        return mm.log_loss(self._sums())

    def brier_score(self, scale_by_half: bool | str = "auto") -> float:
        """Multiclass Brier score ``sum w sum_k (p_k - [y = k])^2 / sum w``, as
        ``sklearn.metrics.brier_score_loss`` for multiclass input.

        Parameters
        ----------
        scale_by_half : bool or "auto", default "auto"
            Divide by 2 so the score lies in [0, 1]. "auto" halves it for two classes only
            (scikit-learn's rule, matching the binary Brier score).

        Returns
        -------
        float
            Exact up to rounding (a running sum over rows).

        Raises
        ------
        ValueError
            If a score lies outside [0, 1].

        References
        ----------
        .. [1] Brier (1950). "Verification of forecasts expressed in terms of probability". Monthly
           Weather Review 78(1).
        """
        return mm.brier_score(self._sums(), scale_by_half)

    def roc_auc(self, multi_class: str = "ovr", average: str | None = "macro") -> Estimate | list[Estimate]:
        """Multiclass ROC-AUC with binning bounds, as ``roc_auc_score(multi_class=..., average=...)``.

        ``multi_class="ovr"``: per class one-vs-rest, averaged "macro", "weighted" (by class
        weight), "micro" (pooled cells) or None (a list); ``"ovo"``: Hand & Till over the pairs
        of classes present, "macro" or "weighted" (by pair prevalence). See
        :func:`~streameval.metrics.multiclass.roc_auc_ovr` and ``roc_auc_ovo``.
        """
        self._need_scores("roc_auc")
        k = self.n_classes
        if multi_class == "ovr":
            if average == "micro":
                return mm.roc_auc_ovr([], self.confusion.sum(axis=1), average, self._table("pooled"))
            return mm.average_per_class(self._per_class("roc_auc"), self.confusion.sum(axis=1), average)
        if multi_class != "ovo":
            raise ValueError(f"multi_class must be 'ovr' or 'ovo', got {multi_class!r}")
        if average not in ("macro", "weighted"):
            raise ValueError(f"average must be 'macro' or 'weighted' for multi_class='ovo', got {average!r}")
        support = self.confusion.sum(axis=1)
        present = [j for j in range(k) if support[j] > 0]
        pairs = [(a, b) for i, a in enumerate(present) for b in present[i + 1:]]
        both = ((self._table(("ovo", a, b)), self._table(("ovo", b, a))) for a, b in pairs)
        prevalence = np.array([support[a] + support[b] for a, b in pairs])
        return mm.roc_auc_ovo(both, prevalence, average)

    def average_precision(self, average: str | None = "macro") -> Estimate | list[Estimate]:
        """One-vs-rest average precision with binning bounds, as ``sklearn.metrics.average_precision_score``
        on the label-binarized ``y_true``.

        Parameters
        ----------
        average : {"macro", "weighted", "micro", None}, default "macro"
            Unweighted mean over classes, mean weighted by class support, AP of the pooled
            one-vs-rest cells, or None for one :class:`Estimate` per class.

        Returns
        -------
        Estimate or list of Estimate
            Bounds that contain the raw rows' value; exact on discrete scores.

        Raises
        ------
        ValueError
            If ``average`` is not one of the four values.
        UsageError
            If the sketch was fed hard predictions only.
        """
        self._need_scores("average_precision")
        if average == "micro":
            return mm.average_precision([], self.confusion.sum(axis=1), average, self._table("pooled"))
        return mm.average_per_class(self._per_class("average_precision"), self.confusion.sum(axis=1), average)

    def _per_class(self, metric: str) -> list[Estimate]:
        """Each class's one-vs-rest ``"roc_auc"`` or ``"average_precision"``, computed once while
        the sketch is unchanged (a report asks for the macro, weighted and per-class values of
        both); the warnings of that computation (a class without rows) are given again on every
        call, as a fresh computation would give them."""
        key = ("per_class", metric)
        if key not in self._cache:
            tables = [self._table(("ovr", j)) for j in range(self.n_classes)]
            support = self.confusion.sum(axis=1)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fn = mm.roc_auc_ovr if metric == "roc_auc" else mm.average_precision
                values = fn(tables, support, None)
            self._cache[key] = (values, [(w.message, w.category) for w in caught])
        values, caught = self._cache[key]
        for message, category in caught:
            warnings.warn(message, category, stacklevel=3)
        return list(values)

    def ci(self, metric: str = "accuracy", level: float = 0.95, method: str = "bootstrap", *,
           average: str | None = "macro", zero_division: Any = "warn") -> Any:
        """Bootstrap confidence interval of a multiclass metric, from the sketch's Poisson replicates.

        Parameters
        ----------
        metric : str, default "accuracy"
            ``"accuracy"``, ``"balanced_accuracy"``, ``"precision"``, ``"recall"``, ``"f1"``
            (with ``average``), ``"cohen_kappa"``, ``"matthews_corrcoef"``, or ``"roc_auc"``
            (one-vs-rest, ``average`` "macro" or "weighted"); scikit-learn's scorer names
            (``"f1_macro"``, ``"roc_auc_ovr_weighted"``) also work.
        level : float in (0, 1), default 0.95
        method : {"bootstrap"}
            The percentile interval over the replicates (Efron & Tibshirani 1993, ch. 13).
        average : {"macro", "micro", "weighted"}, default "macro"
        zero_division : {"warn", 0.0, 1.0, nan}, default "warn"

        Returns
        -------
        streameval.stats.ConfidenceInterval
            See :func:`streameval.sketch.multiclass_ci.multiclass_bootstrap_ci`.

        Raises
        ------
        UsageError
            A method other than "bootstrap", a sketch built without ``bootstrap=R``, an unknown
            metric or average, a level outside (0, 1).
        """
        if method != "bootstrap":
            raise UsageError(f"multiclass intervals are bootstrap intervals: method must be 'bootstrap', got {method!r}")
        from .multiclass_ci import multiclass_bootstrap_ci

        return multiclass_bootstrap_ci(self, metric, level, average, zero_division)  # type: ignore[arg-type]

    def classification_report(
        self, *, output: str = "text", digits: int = 2, target_names: list[str] | None = None, zero_division: Any = "warn"
    ) -> Any:
        """Per-class precision/recall/F1/support with accuracy, macro and weighted rows.

        As ``classification_report(y_true, y_pred, labels=classes)``: ``output="text"`` is its
        text (same layout), ``"dict"`` its ``output_dict=True`` form, ``"arrow"`` a
        ``pyarrow.Table`` with one row per class and per summary line (columns ``class``,
        ``precision``, ``recall``, ``f1-score``, ``support``; the accuracy row has only
        ``f1-score`` = accuracy and ``support``, as in the text).
        """
        names = target_names if target_names is not None else [str(c) for c in plain(self._classes if self._classes is not None else [])]
        if len(names) != self.n_classes:
            raise ValueError(f"target_names has {len(names)} names for {self.n_classes} classes")
        report = mm.classification_report(self._c(), names, zero_division)
        if output == "dict":
            return report
        if output == "text":
            return mm.format_classification_report(report, digits, integer_support=not self.counters["weighted"])
        if output != "arrow":
            raise ValueError(f"output must be 'text', 'dict' or 'arrow', got {output!r}")
        import pyarrow as pa

        rows = mm.report_rows(report)
        cols = {h: pa.array([r[i] for r in rows], pa.string() if i == 0 else pa.float64()) for i, h in enumerate(("class", *mm.HEADERS))}
        return pa.table(cols)
