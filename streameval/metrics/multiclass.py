"""Multiclass metrics: pure functions of a multiclass sketch's counts.

Every function takes plain arrays (the ``K x K`` confusion counts, the rank histogram of the true
class's score, the probability sums) or binary :class:`~streameval.metrics.table.BinTable` objects
(one-vs-rest and one-vs-one histograms), and follows scikit-learn's definition, name, argument
convention and tie rule; each docstring names the scikit-learn function it equals. Functions of
the confusion counts match scikit-learn called with ``labels=classes`` (every class of the
sketch, present in the rows or not), which is what keeps them stable across chunks.

ROC-AUC and average precision are never computed here: each per-class or per-pair value comes
from :mod:`streameval.metrics.auc` with its binning bounds, and an average of bounded values is
bounded by the same average of the bounds (the weights are exact counts), which is the interval
returned.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import UndefinedMetricWarning
from . import auc
from .estimate import NAN, Estimate
from .table import BinTable

__all__ = [
    "MulticlassProbabilitySums",
    "average_per_class",
    "confusion_matrix",
    "accuracy",
    "balanced_accuracy",
    "top_k_accuracy",
    "precision_recall_fscore_support",
    "cohen_kappa",
    "matthews_corrcoef",
    "log_loss",
    "brier_score",
    "average_estimates",
    "roc_auc_ovr",
    "roc_auc_ovo",
    "average_precision",
    "classification_report",
    "format_classification_report",
    "report_rows",
    "HEADERS",
]

FloatArray = npt.NDArray[np.float64]
AVERAGES = (None, "micro", "macro", "weighted")
HEADERS = ("precision", "recall", "f1-score", "support")


def _total(c: FloatArray) -> float:
    return float(np.sum(c))


def confusion_matrix(c: FloatArray, normalize: str | None = None, *, weighted: bool = True) -> np.ndarray:
    """The confusion matrix ``C[i, j]``: weight of rows of class ``i`` predicted as class ``j``.

    Equals ``sklearn.metrics.confusion_matrix(y_true, y_pred, labels=classes, normalize=...)``.

    Parameters
    ----------
    c : ndarray of shape (K, K)
        Confusion weights, rows = true class, columns = predicted class.
    normalize : {None, "true", "pred", "all"}
        Divide by row sums, column sums or the total; 0/0 gives 0 as in scikit-learn.
    weighted : bool, default True
        When False (no sample weights) and ``normalize`` is None, return int64 counts.

    Returns
    -------
    ndarray of shape (K, K)
    """
    if normalize not in (None, "true", "pred", "all"):
        raise ValueError(f"normalize must be one of None, 'true', 'pred', 'all', got {normalize!r}")
    cm = np.array(c, dtype=np.float64)
    with np.errstate(all="ignore"):
        if normalize == "true":
            cm = cm / cm.sum(axis=1, keepdims=True)
        elif normalize == "pred":
            cm = cm / cm.sum(axis=0, keepdims=True)
        elif normalize == "all":
            cm = cm / cm.sum()
    cm = np.nan_to_num(cm)
    if normalize is None and not weighted:
        return cm.astype(np.int64)
    return cm


def accuracy(c: FloatArray) -> float:
    """Weighted fraction of rows predicted right, ``trace(C) / sum(C)``; as ``accuracy_score``."""
    total = _total(c)
    if total <= 0:
        warnings.warn("no rows; accuracy is undefined, returning NaN", UndefinedMetricWarning, stacklevel=3)
        return math.nan
    return float(np.trace(c)) / total


def balanced_accuracy(c: FloatArray, adjusted: bool = False) -> float:
    """Mean per-class recall over the classes present in ``y_true``; as ``balanced_accuracy_score``.

    Classes predicted but never true are left out with a warning (scikit-learn's rule); with
    ``adjusted`` the chance level ``1 / n_classes`` is mapped to 0.

    References
    ----------
    .. [1] Brodersen, Ong, Stephan, Buhmann (2010). "The balanced accuracy and its posterior
       distribution". ICPR.
    """
    true = c.sum(axis=1)
    pred = c.sum(axis=0)
    present = (true > 0) | (pred > 0)
    if np.any(present & (true == 0)):
        warnings.warn("y_pred contains classes not in y_true", UserWarning, stacklevel=3)
    kept = true > 0
    if not kept.any():
        warnings.warn("no rows; balanced accuracy is undefined, returning NaN", UndefinedMetricWarning, stacklevel=3)
        return math.nan
    per_class = np.diag(c)[kept] / true[kept]
    score = float(np.mean(per_class))
    if adjusted:
        chance = 1 / per_class.shape[0]
        score = (score - chance) / (1 - chance)
    return score


def top_k_accuracy(ranks: FloatArray, k: int) -> float:
    """Weighted fraction of rows whose true class is among the ``k`` highest scores.

    Equals ``sklearn.metrics.top_k_accuracy_score(y_true, y_score, k=k, labels=classes)`` on
    multiclass data, ties included: scikit-learn orders a row's columns by
    ``argsort(scores, kind="mergesort")[::-1]``, i.e. by descending score and, among equal
    scores, by descending column index. ``ranks[t, r]`` is the weight of rows of class ``t`` whose
    true-class score has rank ``r`` in that order (``r`` = columns with a higher score, plus
    columns with an equal score and a larger index), so the result is exact for every ``k``.

    Parameters
    ----------
    ranks : ndarray of shape (K, K)
    k : int
        ``1 <= k``; ``k >= K`` gives 1 with a warning, as scikit-learn.
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    n_classes = ranks.shape[1]
    if k >= n_classes:
        warnings.warn(
            f"'k' ({k}) greater than or equal to 'n_classes' ({n_classes}) will result in a perfect score "
            "and is therefore meaningless.",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    total = float(np.sum(ranks))
    if total <= 0:
        warnings.warn("no rows; top-k accuracy is undefined, returning NaN", UndefinedMetricWarning, stacklevel=3)
        return math.nan
    return float(np.sum(ranks[:, : int(k)])) / total


def _zero_division_value(zero_division: Any) -> float:
    if isinstance(zero_division, str):
        if zero_division == "warn":
            return 0.0
        raise ValueError(f"zero_division must be 'warn', 0, 1 or nan, got {zero_division!r}")
    z = float(zero_division)
    if z in (0.0, 1.0) or math.isnan(z):
        return z
    raise ValueError(f"zero_division must be 'warn', 0, 1 or nan, got {zero_division!r}")


def _prf_divide(num: FloatArray, den: FloatArray, metric: str, modifier: str, zero_division: Any) -> FloatArray:
    # scikit-learn's _prf_divide: 0/0 -> zero_division, with a warning when it is "warn".
    mask = den == 0
    out = np.asarray(num, dtype=np.float64) / np.where(mask, 1.0, den)
    if not mask.any():
        return out
    out[mask] = _zero_division_value(zero_division)
    if isinstance(zero_division, str) and zero_division == "warn":
        where = "due to" if out.shape[0] == 1 else "in labels with"
        warnings.warn(
            f"{metric.capitalize()} is ill-defined and being set to 0.0 {where} no {modifier} samples. "
            "Use `zero_division` parameter to control this behavior.",
            UndefinedMetricWarning,
            stacklevel=4,
        )
    return out


def _nanaverage(a: FloatArray, weights: FloatArray | None = None) -> float:
    # scikit-learn's _nanaverage: NaN entries (zero_division=nan) are left out.
    if a.shape[0] == 0:
        return math.nan
    keep = ~np.isnan(a)
    if not keep.any():
        return math.nan
    if weights is None or float(np.sum(weights[keep])) == 0:
        return float(np.mean(a[keep]))
    return float(np.average(a[keep], weights=weights[keep]))


def precision_recall_fscore_support(
    c: FloatArray, beta: float = 1.0, average: str | None = None, zero_division: Any = "warn"
) -> tuple[Any, Any, Any, Any]:
    """Precision, recall, F-beta and support per class or averaged, from the confusion counts.

    Equals ``sklearn.metrics.precision_recall_fscore_support(y_true, y_pred, labels=classes,
    beta=beta, average=average, zero_division=zero_division)``: per class ``tp = C[k, k]``,
    predicted ``= sum_i C[i, k]``, true ``= sum_j C[k, j]``; ``F = (1 + b^2) tp / (b^2 true +
    predicted)``; "micro" pools the counts, "macro" is the unweighted mean, "weighted" weighs by
    support.

    Returns
    -------
    precision, recall, fbeta, support
        Arrays of shape (K,) when ``average`` is None, else floats and ``support = None``.

    Warns
    -----
    UndefinedMetricWarning
        For 0/0 ratios when ``zero_division="warn"`` (they are then 0).
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    if beta < 0:
        raise ValueError(f"beta should be >= 0, got {beta!r}")
    _zero_division_value(zero_division)
    tp = np.diag(c).astype(np.float64)
    pred = c.sum(axis=0).astype(np.float64)
    true = c.sum(axis=1).astype(np.float64)
    if average == "micro":
        tp, pred, true = (np.array([float(np.sum(x))]) for x in (tp, pred, true))
    precision = _prf_divide(tp, pred, "precision", "predicted", zero_division)
    recall = _prf_divide(tp, true, "recall", "true", zero_division)
    if math.isinf(beta):
        f = recall
    elif beta == 0:
        f = precision
    else:
        b2 = beta * beta
        f = _prf_divide((1 + b2) * tp, b2 * true + pred, "f-score", "true nor predicted", zero_division)
    if average is None:
        return precision, recall, f, true
    weights = true if average == "weighted" else None
    return _nanaverage(precision, weights), _nanaverage(recall, weights), _nanaverage(f, weights), None


def cohen_kappa(c: FloatArray, weights: str | None = None) -> float:
    """Cohen's kappa of predictions against truth; as ``cohen_kappa_score(labels=classes)``.

    ``weights`` "linear" or "quadratic" penalize a disagreement by ``|i - j|`` or ``(i - j)^2``,
    ``i, j`` being positions in ``classes`` (so every class of the sketch counts, present or
    not; scikit-learn without ``labels`` counts only the classes present). NaN with a warning
    when undefined.

    References
    ----------
    .. [1] Cohen (1960). "A coefficient of agreement for nominal scales". Educational and
       Psychological Measurement 20(1).
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    cm = np.asarray(c, dtype=np.float64)
    n = cm.shape[0]
    sum0 = cm.sum(axis=0)
    sum1 = cm.sum(axis=1)
    total = float(np.sum(sum0))
    if total == 0:
        warnings.warn("no rows; Cohen's kappa is undefined, returning NaN", UndefinedMetricWarning, stacklevel=3)
        return math.nan
    expected = np.outer(sum0, sum1) / total
    if weights is None:
        w = np.ones((n, n))
        np.fill_diagonal(w, 0.0)
    else:
        d = np.arange(n)[None, :] - np.arange(n)[:, None]
        w = np.abs(d).astype(np.float64) if weights == "linear" else (d * d).astype(np.float64)
    den = float(np.sum(w * expected))
    if den == 0:
        warnings.warn("only one class in common; Cohen's kappa is undefined, returning NaN", UndefinedMetricWarning, stacklevel=3)
        return math.nan
    return 1.0 - float(np.sum(w * cm)) / den


def matthews_corrcoef(c: FloatArray) -> float:
    """Matthews correlation coefficient (Gorodkin's K-class form); as ``matthews_corrcoef``.

    ``(c s - t.p) / sqrt((s^2 - p.p)(s^2 - t.t))`` with ``c`` correct, ``s`` total, ``t``/``p``
    true/predicted totals per class; 0 when the denominator is 0.

    References
    ----------
    .. [1] Gorodkin (2004). "Comparing two K-category assignments by a K-category correlation
       coefficient". Computational Biology and Chemistry 28(5).
    """
    t = c.sum(axis=1, dtype=np.float64)
    p = c.sum(axis=0, dtype=np.float64)
    correct = float(np.trace(c))
    s = float(p.sum())
    cov_tp = correct * s - float(np.sum(t * p))
    cov_pp = s * s - float(np.sum(p * p))
    cov_tt = s * s - float(np.sum(t * t))
    if cov_pp * cov_tt == 0:
        return 0.0
    return cov_tp / math.sqrt(cov_pp * cov_tt)


@dataclass(frozen=True)
class MulticlassProbabilitySums:
    """The running sums a multiclass sketch keeps for log loss and Brier score.

    Attributes
    ----------
    weight : float
        Weight of the rows whose true-class probability lies in [0, 1].
    n_outside : int
        Score cells (row, column) outside [0, 1].
    n_unnormalized : int
        Rows whose scores do not sum to 1 within scikit-learn's tolerance.
    log_loss_sum : float
        ``sum_rows -w log(clip(p_true, eps, 1 - eps))``.
    brier_sum : float
        ``sum_rows w sum_j (p_j - [j = true])^2``.
    n_classes : int
    """

    weight: float
    n_outside: int
    n_unnormalized: int
    log_loss_sum: float
    brier_sum: float
    n_classes: int


def _check_probabilities(sums: MulticlassProbabilitySums, what: str) -> bool:
    if sums.n_outside:
        raise ValueError(
            f"{sums.n_outside} score(s) lie outside [0, 1]; {what} is defined for probabilities only "
            "(apply a softmax to logits before evaluating)"
        )
    if sums.n_unnormalized:  # scikit-learn 1.9 warns and uses the scores as they are
        warnings.warn(
            f"The y_prob values do not sum to one ({sums.n_unnormalized} row(s)). Make sure to pass "
            "probabilities.",
            UserWarning,
            stacklevel=4,
        )
    if sums.weight <= 0:
        warnings.warn(f"no rows; {what} is undefined, returning NaN", UndefinedMetricWarning, stacklevel=4)
        return False
    return True


def log_loss(sums: MulticlassProbabilitySums) -> float:
    """Mean cross-entropy ``-sum w log(clip(p_true, eps, 1 - eps)) / sum w``; as ``log_loss``.

    ``eps`` is float64's machine epsilon (scikit-learn uses the input dtype's, so float32 input
    clipped at 1.2e-7 there can differ). Rows whose probabilities do not sum to 1 are used as
    they are, with a warning: scikit-learn 1.9 does the same (it no longer renormalizes).

    Raises
    ------
    ValueError
        If a score lies outside [0, 1], as scikit-learn.
    """
    if not _check_probabilities(sums, "log loss"):
        return math.nan
    return sums.log_loss_sum / sums.weight


def brier_score(sums: MulticlassProbabilitySums, scale_by_half: bool | str = "auto") -> float:
    """Multiclass Brier score ``mean_rows sum_j (p_j - [j = true])^2``; as ``brier_score_loss``.

    ``scale_by_half="auto"`` halves it for two classes (scikit-learn's rule, which makes the
    two-column form equal the binary Brier score).

    Raises
    ------
    ValueError
        If a score lies outside [0, 1], as scikit-learn.
    """
    if not _check_probabilities(sums, "Brier score"):
        return math.nan
    half = sums.n_classes < 3 if scale_by_half == "auto" else bool(scale_by_half)
    value = sums.brier_sum / sums.weight
    return 0.5 * value if half else value


def average_estimates(estimates: Sequence[Estimate], weights: npt.ArrayLike | None = None) -> Estimate:
    """Weighted mean of bounded values; the bounds are the same mean of the bounds.

    Each exact value ``x_i`` lies in ``[lo_i, hi_i]`` and the weights are exact and >= 0, so
    ``sum w_i x_i / sum w_i`` lies in ``[sum w_i lo_i / sum w_i, sum w_i hi_i / sum w_i]``.
    NaN if any value is NaN (as scikit-learn's mean of per-class scores).
    """
    if not estimates:
        return NAN
    w = np.ones(len(estimates)) if weights is None else np.asarray(weights, dtype=np.float64)
    if float(np.sum(w)) == 0:
        return Estimate.point(0.0)  # scikit-learn's _average_binary_score returns 0 here
    # Zero-weight entries count as 0, not NaN (scikit-learn: a class without rows does not make
    # the weighted average NaN).
    lo = float(np.average([0.0 if wi == 0 else e.lower for e, wi in zip(estimates, w, strict=True)], weights=w))
    hi = float(np.average([0.0 if wi == 0 else e.upper for e, wi in zip(estimates, w, strict=True)], weights=w))
    if math.isnan(lo) or math.isnan(hi):
        return NAN
    return Estimate.from_bounds(lo, hi)


def _check_average(average: str | None, allowed: tuple[str | None, ...]) -> None:
    if average not in allowed:
        raise ValueError(f"average must be one of {allowed}, got {average!r}")


def roc_auc_ovr(
    tables: Sequence[BinTable], support: FloatArray, average: str | None = "macro", pooled: BinTable | None = None
) -> Estimate | list[Estimate]:
    """One-vs-rest ROC-AUC; as ``roc_auc_score(multi_class="ovr", labels=classes)``.

    Parameters
    ----------
    tables : sequence of K BinTable
        Class ``k``'s one-vs-rest histograms (positives: rows of class ``k``; score: column ``k``).
    support : ndarray of shape (K,)
        Weight of each class's rows (the "weighted" average's weights, Provost & Domingos [2]_).
    average : {"macro", "weighted", "micro", None}
        "micro" is the AUC of ``pooled``: every (row, column) cell as one binary example,
        positive when the column is the row's class (scikit-learn's raveled one-hot form).
    pooled : BinTable, optional
        Needed for "micro".

    Returns
    -------
    Estimate, or a list of K Estimates for ``average=None``
        With binning bounds; a class without rows gives NaN with a warning, as scikit-learn.

    References
    ----------
    .. [1] Fawcett (2006). "An introduction to ROC analysis". Pattern Recognition Letters 27(8).
    .. [2] Provost & Domingos (2000). "Well-trained PETs: improving probability estimation trees".
    """
    _check_average(average, ("micro", "macro", "weighted", None))
    if average == "micro":
        if pooled is None:
            raise ValueError("average='micro' needs the pooled table")
        return auc.roc_auc(pooled)
    return average_per_class([auc.roc_auc(t) for t in tables], support, average)


def average_per_class(per_class: Sequence[Estimate], support: FloatArray, average: str | None) -> Estimate | list[Estimate]:
    """Per-class estimates averaged as :func:`roc_auc_ovr` and :func:`average_precision` do.

    Parameters
    ----------
    per_class : sequence of Estimate, one per class
    support : ndarray of shape (K,)
        Each class's weight (for "weighted").
    average : {"macro", "weighted", None}
        Unweighted mean, mean weighted by ``support``, or the list itself (a copy).

    Raises
    ------
    ValueError
        If ``average`` is not one of the three.
    """
    _check_average(average, ("macro", "weighted", None))
    if average is None:
        return list(per_class)
    return average_estimates(per_class, support if average == "weighted" else None)


def roc_auc_ovo(
    pairs: Iterable[tuple[BinTable, BinTable]], prevalence: FloatArray, average: str = "macro"
) -> Estimate:
    """One-vs-one ROC-AUC of Hand & Till [1]_; as ``roc_auc_score(multi_class="ovo")``.

    For each pair of classes ``(a, b)`` present in the rows, ``A(a, b) = (A(a|b) + A(b|a)) / 2``
    where ``A(a|b)`` is the AUC of column ``a`` among the rows of classes ``a`` and ``b``, class
    ``a`` positive. "macro" averages the pairs; "weighted" weighs each pair by its prevalence (the
    share of rows in ``a`` or ``b``), as scikit-learn.

    Parameters
    ----------
    pairs : iterable of (BinTable, BinTable)
        ``(a|b, b|a)`` for every pair ``a < b`` of classes present (consumed one at a time, so
        the K(K-1) tables need not all be in memory).
    prevalence : ndarray of shape (n_pairs,)
        Weight of the rows of each pair (any common scale).
    average : {"macro", "weighted"}

    References
    ----------
    .. [1] Hand & Till (2001). "A simple generalisation of the area under the ROC curve for
       multiple class classification problems". Machine Learning 45(2).
    """
    _check_average(average, ("macro", "weighted"))
    scores = []
    for ab, ba in pairs:
        x, y = auc.roc_auc(ab), auc.roc_auc(ba)
        scores.append(Estimate.from_bounds((x.lower + y.lower) / 2, (x.upper + y.upper) / 2))
    return average_estimates(scores, prevalence if average == "weighted" else None)


def average_precision(
    tables: Sequence[BinTable], support: FloatArray, average: str | None = "macro", pooled: BinTable | None = None
) -> Estimate | list[Estimate]:
    """One-vs-rest average precision; as ``average_precision_score`` on multiclass ``y_true``.

    Same arguments as :func:`roc_auc_ovr`; each class's AP (with bounds) comes from
    :func:`streameval.metrics.auc.average_precision`, "micro" from the pooled cells.
    """
    _check_average(average, ("micro", "macro", "weighted", None))
    if average == "micro":
        if pooled is None:
            raise ValueError("average='micro' needs the pooled table")
        return auc.average_precision(pooled)
    return average_per_class([auc.average_precision(t) for t in tables], support, average)


def classification_report(
    c: FloatArray, target_names: Sequence[str], zero_division: Any = "warn"
) -> dict[str, Any]:
    """Per-class precision, recall, F1 and support, plus accuracy, macro and weighted averages.

    Equals ``classification_report(y_true, y_pred, labels=classes, output_dict=True)``:
    ``{name: {"precision", "recall", "f1-score", "support"}, "accuracy": float, "macro avg": {...},
    "weighted avg": {...}}`` (all classes of the sketch are listed, so micro = accuracy).
    """
    p, r, f, s = precision_recall_fscore_support(c, average=None, zero_division=zero_division)
    report: dict[str, Any] = {}
    for name, row in zip(target_names, zip(p, r, f, s, strict=True), strict=True):
        report[name] = dict(zip(HEADERS, (float(v) for v in row), strict=True))
    total = float(np.sum(s))
    micro = precision_recall_fscore_support(c, average="micro", zero_division=zero_division)
    report["accuracy"] = float(micro[0])
    for avg in ("macro", "weighted"):
        ap, ar, af, _ = precision_recall_fscore_support(c, average=avg, zero_division=zero_division)
        report[f"{avg} avg"] = dict(zip(HEADERS, (float(ap), float(ar), float(af), total), strict=True))
    return report


def format_classification_report(report: dict[str, Any], digits: int = 2, *, integer_support: bool = True) -> str:
    """The text form of :func:`classification_report`, laid out exactly as scikit-learn's.

    ``integer_support`` prints supports as integers (unweighted rows), as scikit-learn does.
    """

    def sup(x: float) -> Any:
        return int(x) if integer_support else x

    names = [k for k in report if k not in ("accuracy", "macro avg", "weighted avg")]
    width = max(max((len(n) for n in names), default=0), len("weighted avg"), digits)
    head_fmt = "{:>{width}s} " + " {:>9}" * len(HEADERS)
    out = head_fmt.format("", *HEADERS, width=width) + "\n\n"
    row_fmt = "{:>{width}s} " + " {:>9.{digits}f}" * 3 + " {:>9}\n"
    for name in names:
        row = report[name]
        out += row_fmt.format(name, row["precision"], row["recall"], row["f1-score"], sup(row["support"]), width=width, digits=digits)
    out += "\n"
    support = sup(report["macro avg"]["support"])
    acc_fmt = "{:>{width}s} " + " {:>9.{digits}}" * 2 + " {:>9.{digits}f}" + " {:>9}\n"
    out += acc_fmt.format("accuracy", "", "", report["accuracy"], support, width=width, digits=digits)
    for avg in ("macro avg", "weighted avg"):
        row = report[avg]
        out += row_fmt.format(avg, row["precision"], row["recall"], row["f1-score"], sup(row["support"]), width=width, digits=digits)
    return out


def report_rows(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The report as tidy rows ``(class, precision, recall, f1-score, support)``: one per class,
    then accuracy (only f1-score = accuracy and support, as in the text), macro and weighted."""
    rows: list[tuple[Any, ...]] = [(n, *(r[h] for h in HEADERS)) for n, r in report.items() if isinstance(r, dict)]
    rows.insert(len(rows) - 2, ("accuracy", None, None, report["accuracy"], report["macro avg"]["support"]))
    return rows
