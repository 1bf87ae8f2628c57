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
from collections.abc import Callable
from typing import Any, TypeVar

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
            column = _positive_column(y_true, pos_label)
            sums = score.sum(axis=1, dtype=np.float64)
            if not np.allclose(sums, 1.0, rtol=0.0, atol=np.sqrt(np.finfo(score.dtype).eps if score.dtype.kind == "f" else 1e-8)):
                warnings.warn(
                    "The y_prob values do not sum to one (rows of a y_score of shape (n, 2)); only the "
                    f"positive class's column (column {column}: columns follow the sorted labels, as "
                    "predict_proba's) is used. Pass probabilities, or the positive column alone.",
                    UserWarning,
                    stacklevel=3,
                )
            score = score[:, column]
    return BinarySketch(grid, pos_label=pos_label, threads=1).update(y_true, score, sample_weight)


def _positive_column(y_true: Any, pos_label: Any) -> int:
    """The column of the positive class in ``(n, 2)`` probabilities: ``predict_proba`` orders its
    columns by sorted label (``classes_``), so ``pos_label`` naming the smaller label is column 0."""
    if pos_label is None:
        return 1  # default coding: the positive class is 1 / True, the larger label
    from ..errors import InputError
    from ..inputs import as_1d_array

    try:
        labels = np.unique(as_1d_array(y_true, "y_true"))
    except TypeError:  # mixed or null labels: BinarySketch.update names the problem
        return 1
    if labels.shape[0] == 1 and labels[0] != pos_label:  # only negatives: pos_label's place among the two
        try:
            return 0 if pos_label < labels[0] else 1
        except TypeError:
            return 1
    if labels.shape[0] == 1:
        raise InputError(
            f"y_true holds one label value, {pos_label!r}, so which column of y_score (n, 2) is its probability "
            "is unknown; pass the positive class's column alone (1-D)"
        )
    return 0 if labels.shape[0] == 2 and labels[0] == pos_label else 1


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
    """Binary log loss (cross-entropy), as ``sklearn.metrics.log_loss``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels: 0/1, bool, or two values with ``pos_label`` naming the positive one.
    y_pred : array-like of shape (n_samples,) or (n_samples, 2)
        Probability of the positive class (for (n, 2), its second column; rows that do not sum
        to one warn as scikit-learn).
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative row weights.
    pos_label : scalar, optional
        The positive class when labels are not 0/1 or bool.

    Returns
    -------
    float
        ``-sum w [y log p + (1 - y) log(1 - p)] / sum w`` in nats, with ``p`` clipped to
        ``[eps, 1 - eps]``, ``eps`` the float64 machine epsilon (scikit-learn's clip for
        float64); exact up to rounding whatever the grid. For another clip, use
        ``BinarySketch.log_loss(eps=...)``.

    Raises
    ------
    ValueError
        If a probability lies outside [0, 1] (as scikit-learn).

    References
    ----------
    .. [1] Bishop (2006). "Pattern Recognition and Machine Learning", sec. 4.3.2.
    """
    return float(_sketch(y_true, y_pred, sample_weight, None, pos_label).log_loss())


def brier_score_loss(y_true: Any, y_proba: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    """Brier score, as ``sklearn.metrics.brier_score_loss``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels: 0/1, bool, or two values with ``pos_label`` naming the positive one.
    y_proba : array-like of shape (n_samples,) or (n_samples, 2)
        Probability of the positive class.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative row weights.
    pos_label : scalar, optional
        The positive class when labels are not 0/1 or bool.

    Returns
    -------
    float
        ``sum w (y - p)^2 / sum w`` in [0, 1], exact up to rounding whatever the grid.

    Raises
    ------
    ValueError
        If a probability lies outside [0, 1] (as scikit-learn).

    References
    ----------
    .. [1] Brier (1950). "Verification of forecasts expressed in terms of probability". Monthly
       Weather Review 78(1).
    """
    return float(_sketch(y_true, y_proba, sample_weight, None, pos_label).brier_score())


def roc_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None, pos_label: Any = None,
              drop_intermediate: bool = True, grid: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve ``(fpr, tpr, thresholds)``, as ``sklearn.metrics.roc_curve``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    y_score : array-like of shape (n_samples,) or (n_samples, 2)
    sample_weight : array-like of shape (n_samples,), optional
    pos_label : scalar, optional
    drop_intermediate : bool, default True
        Drop points on straight segments, as scikit-learn.
    grid : Grid, optional
        Binning grid (default :data:`streameval.DEFAULT_GRID`).

    Returns
    -------
    fpr, tpr : ndarray of shape (m,)
        ``fpr[i]``, ``tpr[i]``: rates of the rows with ``score >= thresholds[i]``.
    thresholds : ndarray of shape (m,)
        Decreasing; ``thresholds[0]`` is ``inf``. On discrete scores every point of scikit-learn's
        curve; on continuous ones one point per occupied bin, at the bin's smallest score, where
        the counts are exact.

    References
    ----------
    .. [1] Fawcett (2006). "An introduction to ROC analysis". Pattern Recognition Letters 27(8).
    """
    return _sketch(y_true, y_score, sample_weight, grid, pos_label).roc_curve(drop_intermediate)  # type: ignore[no-any-return]


def precision_recall_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None, pos_label: Any = None,
                           drop_intermediate: bool = False, grid: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision-recall curve ``(precision, recall, thresholds)``, as
    ``sklearn.metrics.precision_recall_curve``.

    Parameters are those of :func:`roc_curve` (``drop_intermediate`` defaults to False here, as
    scikit-learn).

    Returns
    -------
    precision, recall : ndarray of shape (m + 1,)
        Increasing thresholds; the last point is ``(1, 0)`` with no threshold, as scikit-learn.
    thresholds : ndarray of shape (m,)
        Increasing. Same point rule as :func:`roc_curve`.

    References
    ----------
    .. [1] Davis and Goadrich (2006). "The relationship between precision-recall and ROC curves".
       ICML.
    """
    return _sketch(y_true, y_score, sample_weight, grid, pos_label).precision_recall_curve(drop_intermediate)  # type: ignore[no-any-return]


def det_curve(y_true: Any, y_score: Any, *, sample_weight: Any = None, pos_label: Any = None,
              drop_intermediate: bool = False, grid: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Detection error tradeoff curve ``(fpr, fnr, thresholds)``, as ``sklearn.metrics.det_curve``.

    Parameters are those of :func:`roc_curve` (``drop_intermediate`` defaults to False).

    Returns
    -------
    fpr, fnr : ndarray of shape (m,)
        False positive and false negative rates at each threshold.
    thresholds : ndarray of shape (m,)
        Increasing; same point rule as :func:`roc_curve`.

    Raises
    ------
    ValueError
        If only one class is present in ``y_true`` (as scikit-learn).

    References
    ----------
    .. [1] Martin, Doddington, Kamm, Ordowski and Przybocki (1997). "The DET curve in assessment
       of detection task performance". Eurospeech.
    """
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


_HARD_PARAMETERS = """
    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels: 0/1, bool, or two values with ``pos_label`` naming the positive one.
    y_pred : array-like of shape (n_samples,)
        Predicted labels, in the same label set as ``y_true``.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative row weights; counts become weight sums.
    pos_label : scalar, optional
        The positive class when labels are not 0/1 or bool.
"""

_HARD_RAISES = """
    Raises
    ------
    InputError
        If the arrays differ in length, a label is missing or null, a weight is negative or not
        finite, or ``pos_label`` is not among the labels.
"""


_F = TypeVar("_F", bound=Callable[..., float])


def _hard_doc(summary: str, returns: str, reference: str, extra_parameters: str = "") -> Callable[[_F], _F]:
    """Give a hard-prediction metric its numpydoc docstring from the shared sections."""

    def decorate(f: _F) -> _F:
        params = _HARD_PARAMETERS.rstrip("\n") + extra_parameters
        f.__doc__ = (
            f"{summary}\n{params}\n\n    Returns\n    -------\n    float\n        {returns}\n"
            f"{_HARD_RAISES}\n    References\n    ----------\n    .. [1] {reference}\n"
        )
        return f

    return decorate


_SOKOLOVA = 'Sokolova and Lapalme (2009). "A systematic analysis of performance measures for classification tasks". Information Processing and Management 45(4).'


@_hard_doc(
    "Precision ``tp / (tp + fp)`` of hard predictions, as ``sklearn.metrics.precision_score`` (binary).",
    "In [0, 1]; 0.0 with an :class:`~streameval.UndefinedMetricWarning` when nothing is predicted positive (scikit-learn's ``zero_division='warn'``).",
    _SOKOLOVA,
)
def precision_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).precision)


@_hard_doc(
    "Recall (sensitivity, TPR) ``tp / (tp + fn)`` of hard predictions, as ``sklearn.metrics.recall_score`` (binary).",
    "In [0, 1]; 0.0 with an :class:`~streameval.UndefinedMetricWarning` when there is no positive row.",
    _SOKOLOVA,
)
def recall_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).recall)


@_hard_doc(
    "F1 score ``2 tp / (2 tp + fp + fn)`` of hard predictions, as ``sklearn.metrics.f1_score`` (binary).",
    "In [0, 1]; 0.0 with an :class:`~streameval.UndefinedMetricWarning` when ``tp + fp + fn`` is 0.",
    'van Rijsbergen (1979). "Information Retrieval", 2nd ed., ch. 7.',
)
def f1_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).f1)


@_hard_doc(
    "F-beta score ``(1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)`` of hard predictions, as ``sklearn.metrics.fbeta_score`` (binary).",
    "In [0, 1]; ``beta=0`` is precision and ``beta=inf`` is recall; 0.0 with an :class:`~streameval.UndefinedMetricWarning` when undefined.",
    'van Rijsbergen (1979). "Information Retrieval", 2nd ed., ch. 7.',
    "\n    beta : float\n        Weight of recall relative to precision, >= 0 (``inf`` allowed).",
)
def fbeta_score(y_true: Any, y_pred: Any, *, beta: float, sample_weight: Any = None, pos_label: Any = None) -> float:
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).f_beta(beta))


@_hard_doc(
    "Accuracy ``(tp + tn) / n`` of hard predictions, as ``sklearn.metrics.accuracy_score`` (binary, ``normalize=True``).",
    "In [0, 1]; 0.0 with an :class:`~streameval.UndefinedMetricWarning` for empty input.",
    _SOKOLOVA,
)
def accuracy_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).accuracy)


@_hard_doc(
    "Balanced accuracy ``(TPR + TNR) / 2`` of hard predictions, as ``sklearn.metrics.balanced_accuracy_score`` (binary, ``adjusted=False``).",
    "In [0, 1]; with one class present, the recall of that class, with an :class:`~streameval.UndefinedMetricWarning` (as scikit-learn).",
    'Brodersen, Ong, Stephan and Buhmann (2010). "The balanced accuracy and its posterior distribution". ICPR.',
)
def balanced_accuracy_score(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).balanced_accuracy)


@_hard_doc(
    "Matthews correlation coefficient ``(tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn))`` of hard predictions, as ``sklearn.metrics.matthews_corrcoef`` (binary).",
    "In [-1, 1]; 0.0 when a marginal is empty (undefined), as scikit-learn.",
    'Matthews (1975). "Comparison of the predicted and observed secondary structure of T4 phage lysozyme". Biochimica et Biophysica Acta 405(2).',
)
def matthews_corrcoef(y_true: Any, y_pred: Any, *, sample_weight: Any = None, pos_label: Any = None) -> float:
    return float(_confusion(y_true, y_pred, sample_weight, pos_label).mcc)
