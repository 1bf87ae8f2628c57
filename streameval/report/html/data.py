"""Plot data from a binary sketch: small tables for display, computed from the sketch's curves.

Every curve is downsampled to at most ``max_points`` points (a sketch can have 100k occupied bins),
spread along the curve's length; the reported metrics are never recomputed from these tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["MAX_POINTS", "both_classes", "sweep", "score_distribution", "calibration", "det", "downsample",
           "downsample_along", "tpr_ci"]

# Measured (benchmarks/html_bench.py, docs/html-report.md): 800 points per curve took 1.4-1.8x
# the render time of 400 on a 100M-row sketch; 400 points spread along the curve's length (below)
# keep every visible bend of a 320-pixel-wide chart.
MAX_POINTS = 400


def downsample(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` of ``n`` points, evenly spread, first and last kept."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))


def downsample_along(*coords: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` points spread evenly along a monotone path.

    Parameters
    ----------
    *coords : ndarray of shape (n,)
        Coordinates in [0, 1], each non-decreasing along the points (FPR and TPR in threshold
        order); the point's rank ``i / (n - 1)`` is added as one more, so that runs of thresholds
        where the curve stands still (the sweep's x axis) are sampled too.
    max_points : int

    Returns
    -------
    ndarray of int64
        Sorted, unique indices, first and last included: the first point at or past each of
        ``max_points`` evenly spaced levels of the summed coordinates (an L1 arc length). Evenly
        spaced indices would put all but a few points where the bins are, and miss a steep rise
        held by a few bins (a rare-event ROC near FPR 0).
    """
    n = coords[0].shape[0]
    if n <= max_points:
        return np.arange(n)
    rank = np.arange(n, dtype=np.float64) / (n - 1)
    length = np.maximum.accumulate(sum((np.asarray(c, dtype=np.float64) for c in coords), rank))
    idx = np.searchsorted(length, np.linspace(length[0], length[-1], max_points), side="left")
    return np.unique(np.r_[0, np.minimum(idx, n - 1), n - 1])


def both_classes(sketch: Any) -> str | None:
    """None when both classes are present, else why plots that need both are left out."""
    p, n = float(sketch.positive_weight), float(sketch.negative_weight)
    if p > 0 and n > 0:
        return None
    which = "positive" if p <= 0 else "negative"
    return f"this sketch has no {which} rows, so curves that compare the two classes are not defined"


def sweep(sketch: Any, max_points: int = MAX_POINTS) -> dict[str, np.ndarray]:
    """Per exact threshold (descending): the counts and rates a threshold sweep shows.

    From :meth:`BinarySketch.roc_curve` (all points) and the class totals: ``tp = tpr P``,
    ``fp = fpr N``. Downsampled to ``max_points`` thresholds.
    """
    fpr, tpr, thr = sketch.roc_curve(drop_intermediate=False)
    fpr, tpr, thr = fpr[1:], tpr[1:], thr[1:]  # drop the (0, 0) point at +inf
    P, N = float(sketch.positive_weight), float(sketch.negative_weight)
    tp, fp = tpr * P, fpr * N
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
        f1 = np.where(precision + tpr > 0, 2 * precision * tpr / (precision + tpr), 0.0)
    alert = (tp + fp) / (P + N)
    idx = downsample_along(fpr, tpr, max_points=max_points)
    return {
        "threshold": thr[idx], "tpr": tpr[idx], "fpr": fpr[idx], "precision": precision[idx], "recall": tpr[idx],
        "f1": f1[idx], "alert_rate": alert[idx], "tp": tp[idx], "fp": fp[idx], "fnr": 1 - tpr[idx],
        "lift": precision[idx] / (P / (P + N)),
    }


def score_distribution(sketch: Any, bins: int = 60) -> dict[str, np.ndarray]:
    """Weight per class in ``bins`` display bins of the score, on a linear axis and, for positive
    scores, a log axis (rare-event scores near 0). Each sketch bin is placed at its mean score."""
    t = sketch.table()
    out: dict[str, list[Any]] = {"axis": [], "cls": [], "left": [], "right": [], "weight": []}
    for cls, w, ssum in (("positive", t.pos, t.pos_sum), ("negative", t.neg, t.neg_sum)):
        keep = w > 0
        if not keep.any():
            continue
        mean = ssum[keep] / w[keep]
        for axis in ("linear", "log"):
            m, ww = (mean, w[keep]) if axis == "linear" else (mean[mean > 0], w[keep][mean > 0])
            if m.size == 0:
                continue
            lo, hi = float(m.min()), float(m.max())
            if axis == "log":
                edges = np.geomspace(lo, hi if hi > lo else lo * 10, bins + 1)
            else:
                edges = np.linspace(lo, hi if hi > lo else lo + 1, bins + 1)
            counts, _ = np.histogram(m, bins=edges, weights=ww)
            out["axis"] += [axis] * bins
            out["cls"] += [cls] * bins
            out["left"] += list(edges[:-1])
            out["right"] += list(edges[1:])
            out["weight"] += list(counts)
    return {k: np.asarray(v) for k, v in out.items()}


def calibration(sketch: Any, n_bins: int = 10) -> dict[str, Any]:
    """The reliability diagram's points (:meth:`BinarySketch.calibration_curve`)."""
    c = sketch.calibration_curve(n_bins)
    return {"prob_pred": c.prob_pred, "prob_true": c.prob_true, "weight": c.weight, "ece": c.ece}


def det(sketch: Any, max_points: int = MAX_POINTS) -> dict[str, np.ndarray]:
    """DET curve on normal-deviate axes: ``probit(fpr)``, ``probit(fnr)`` (rates clipped to
    [1e-6, 1 - 1e-6] so that 0 and 1 stay on the plot)."""
    from scipy.stats import norm

    fpr, fnr, thr = sketch.det_curve()
    order = np.argsort(thr, kind="stable")[::-1]  # descending threshold: FPR and 1 - FNR rise
    idx = np.sort(order[downsample_along(fpr[order], 1 - fnr[order], max_points=max_points)])
    x = np.asarray(norm.ppf(np.clip(fpr[idx], 1e-6, 1 - 1e-6)), dtype=np.float64)
    y = np.asarray(norm.ppf(np.clip(fnr[idx], 1e-6, 1 - 1e-6)), dtype=np.float64)
    return {"threshold": thr[idx], "fpr": fpr[idx], "fnr": fnr[idx], "x": x, "y": y}


def tpr_ci(tp: np.ndarray, positives: float, level: float = 0.95, method: str = "wilson"
           ) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise confidence interval of the true positive rate at each plotted threshold.

    Parameters
    ----------
    tp : ndarray of shape (n,)
        Positives (weight) with score at or above each threshold; the thresholds are the sketch's
        exact ones (bin edges), so ``tp`` is the count the exact rows give there.
    positives : float
        All positives (weight), the binomial ``n``.
    level : float, default 0.95
    method : {"wilson", "clopper_pearson", "jeffreys"}, default "wilson"
        See :func:`streameval.stats.proportion_ci`.

    Returns
    -------
    lower, upper : ndarray of shape (n,)
        The interval of ``tp / positives`` at each threshold, holding the threshold fixed
        (vertical, pointwise: not a simultaneous band for the whole curve).
    """
    from ...stats import proportion_ci

    pairs = [proportion_ci(min(max(float(x), 0.0), positives), positives, level, method) for x in tp]
    return np.array([c.ci_lower for c in pairs]), np.array([c.ci_upper for c in pairs])
