"""scikit-learn-shaped functions: switch a notebook from ``sklearn.metrics`` with one import.

``from streameval.metrics import roc_auc_score, average_precision_score, log_loss, ...`` take the
same arguments as scikit-learn's and return floats (or arrays), computed through a
:class:`~streameval.BinarySketch` of the given chunk: equal to scikit-learn's to 1e-12 on discrete
scores; on continuous scores the float is the midpoint of the binning bounds, and
``return_estimate=True`` returns the :class:`~streameval.Estimate` with them. For data that does
not fit in memory, build the sketch chunk by chunk instead (``BinarySketch.update``) and merge.

Deliberate differences from scikit-learn are listed in ``docs/sklearn-differences.md``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .estimate import Estimate

__all__ = [
    "roc_auc_score",
    "average_precision_score",
    "log_loss",
    "brier_score_loss",
    "roc_curve",
    "precision_recall_curve",
    "det_curve",
    "confusion_matrix",
    "precision_score",
    "recall_score",
    "f1_score",
    "fbeta_score",
    "accuracy_score",
    "balanced_accuracy_score",
    "matthews_corrcoef",
]


def _sketch(y_true: Any, y_score: Any, sample_weight: Any, grid: Any, pos_label: Any) -> Any:
    from ..sketch.binary import BinarySketch

    score = y_score
    if isinstance(score, (list, tuple)) or getattr(score, "ndim", 1) == 2:
        score = np.asarray(score)
        if score.ndim == 2 and score.shape[1] == 2:  # predict_proba output: the positive class's column
            sums = score.sum(axis=1, dtype=np.float64)
            if not np.allclose(sums, 1.0, rtol=0.0, atol=np.sqrt(np.finfo(score.dtype).eps if score.dtype.kind == "f" else 1e-8)):
                warnings.warn(
                    "The y_prob values do not sum to one (rows of a y_score of shape (n, 2)); only the "
                    "second column, the positive class's probability, is used. Pass probabilities, or "
                    "the positive column alone.",
                    UserWarning,
                    stacklevel=3,
                )
            score = score[:, 1]
    return BinarySketch(grid, pos_label=pos_label, threads=1).update(y_true, score, sample_weight)


def _out(e: Estimate, return_estimate: bool) -> Any:
    return e if return_estimate else float(e.value)


def roc_auc_score(
    y_true: Any,
    y_score: Any,
    *,
    sample_weight: Any = None,
    max_fpr: float | None = None,
    grid: Any = None,
    pos_label: Any = None,
    return_estimate: bool = False,
) -> Any:
    """ROC-AUC (binary), as ``sklearn.metrics.roc_auc_score``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_score : array-like of shape (n,) or (n, 2)
        Scores (for (n, 2), the positive class's column).
    sample_weight : array-like of shape (n,), optional
    max_fpr : float, optional
        Partial AUC up to this FPR, McClish-standardized (as scikit-learn).
    grid : Grid, optional
        Binning grid (default :data:`streameval.DEFAULT_GRID`).
    pos_label : scalar, optional
        Positive class when labels are not 0/1/bool.
    return_estimate : bool, default False
        Return the :class:`Estimate` (value and binning bounds) instead of a float.

    Returns
    -------
    float or Estimate
        NaN with an :class:`~streameval.UndefinedMetricWarning` when one class is absent
        (scikit-learn raises ``ValueError`` there; see ``docs/sklearn-differences.md``).
    """
    return _out(_sketch(y_true, y_score, sample_weight, grid, pos_label).roc_auc(max_fpr), return_estimate)


def average_precision_score(
    y_true: Any, y_score: Any, *, sample_weight: Any = None, grid: Any = None, pos_label: Any = None,
    return_estimate: bool = False,
) -> Any:
    """Average precision (the step-wise PR-AUC), as ``sklearn.metrics.average_precision_score``.

    Returns 0.0 with an :class:`~streameval.UndefinedMetricWarning` when there is no positive
    label, as scikit-learn. Other parameters as :func:`roc_auc_score`.
    """
    return _out(_sketch(y_true, y_score, sample_weight, grid, pos_label).average_precision(), return_estimate)


def log_loss(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Binary log loss, as ``sklearn.metrics.log_loss`` (clipped at float64 epsilon).

    Raises
    ------
    ValueError
        If a probability lies outside [0, 1] (as scikit-learn).
    """
    return float(_sketch(y_true, y_pred, sample_weight, None, pos_label).log_loss())


def brier_score_loss(y_true: Any, y_proba: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Brier score, as ``sklearn.metrics.brier_score_loss``.

    Raises
    ------
    ValueError
        If a probability lies outside [0, 1] (as scikit-learn).
    """
    return float(_sketch(y_true, y_proba, sample_weight, None, pos_label).brier_score())


def roc_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None, pos_label: Any = None,
              drop_intermediate: bool = True, grid: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr, tpr, thresholds)`` as ``sklearn.metrics.roc_curve`` (all its points on discrete scores)."""
    return _sketch(y_true, y_score, sample_weight, grid, pos_label).roc_curve(drop_intermediate)  # type: ignore[no-any-return]


def precision_recall_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None, pos_label: Any = None,
                           drop_intermediate: bool = False, grid: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(precision, recall, thresholds)`` as ``sklearn.metrics.precision_recall_curve``."""
    return _sketch(y_true, y_score, sample_weight, grid, pos_label).precision_recall_curve(drop_intermediate)  # type: ignore[no-any-return]


def det_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None, pos_label: Any = None,
              drop_intermediate: bool = False, grid: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr, fnr, thresholds)`` as ``sklearn.metrics.det_curve``."""
    return _sketch(y_true, y_score, sample_weight, grid, pos_label).det_curve(drop_intermediate)  # type: ignore[no-any-return]


def _confusion(y_true: Any, y_pred: Any, sample_weight: Any, pos_label: Any) -> Any:
    """Counts of hard 0/1 (or bool, or pos_label/other) predictions: a sketch of the predictions
    as scores, read at threshold 0.5."""
    from ..inputs import LabelEncoder, as_1d_array

    pred = as_1d_array(y_pred, "y_pred")
    enc = LabelEncoder(pos_label=pos_label)
    scores = enc.encode(pred, 0).astype(np.float64)
    return _sketch(y_true, scores, sample_weight, None, pos_label).confusion(0.5)


def confusion_matrix(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> np.ndarray:
    """``[[tn, fp], [fn, tp]]`` of hard predictions, as ``sklearn.metrics.confusion_matrix`` for
    two classes (negative first). Integers when unweighted or the weights are integers (bool,
    int, uint), floats otherwise, as scikit-learn."""
    c = _confusion(y_true, y_pred, sample_weight, pos_label)
    m = np.array([[c.tn, c.fp], [c.fn, c.tp]])
    # scikit-learn's dtype rule: integer counts unless the weights are floats.
    integral = sample_weight is None or np.asarray(sample_weight).dtype.kind in "biu"
    return m.astype(np.int64) if integral else m


def precision_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Precision of hard predictions (0.0 with a warning when nothing is predicted positive)."""
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).precision)


def recall_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Recall of hard predictions."""
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).recall)


def f1_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """F1 of hard predictions."""
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).f1)


def fbeta_score(y_true: Any, y_pred: Any, *, beta: float, sample_weight: Any = None, pos_label: Any = None) -> float:
    """F-beta of hard predictions (``beta=inf`` is recall)."""
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).f_beta(beta))


def accuracy_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Accuracy of hard predictions."""
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).accuracy)


def balanced_accuracy_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Balanced accuracy of hard predictions."""
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).balanced_accuracy)


def matthews_corrcoef(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Matthews correlation coefficient of hard predictions (0.0 when undefined, as scikit-learn)."""
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).mcc)
