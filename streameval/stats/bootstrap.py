"""Poisson-bootstrap confidence intervals for any metric, from a sketch's replicates.

A sketch built with ``bootstrap=R`` holds ``R`` replicate histograms
(:mod:`streameval.sketch.bootstrap`). Each replicate is turned into a sketch view (its weights,
the sketch's own per-cell min/max) and the metric is computed on it, with binning bounds
``[lo_r, hi_r]`` that contain the value the replicate's exact rows give. The percentile interval
is ``[q(lo, a/2), q(hi, 1 - a/2)]``, ``q`` the sample quantile (linear interpolation). Quantiles
are monotone in every input, so this contains the percentile interval of the exact rows' replicate
values: rigorous under binning, as every interval of :mod:`streameval.stats`, and equal to it on
discrete scores.

Log loss and Brier score of a replicate come from its bins: within a cell the per-row loss lies
between its values at the cell's smallest and largest score (exact on discrete scores).
Threshold metrics need an exact threshold (a bin edge, or a bin whose scores are all on one side);
build the sketch on a grid with a cut there otherwise (``grid.with_cuts``, ``--grid ...@T``).

References
----------
.. [1] Efron & Tibshirani (1993). "An Introduction to the Bootstrap", ch. 13 (percentile interval).
.. [2] Hanley & MacGibbon (2006). "Creating non-parametric bootstrap samples using Poisson
   frequencies". Computer Methods and Programs in Biomedicine 83(1), 57-62.
.. [3] Chamandy, Muralidharan, Najmi & Naidu (2012). "Estimating uncertainty for massive data
   streams". Google technical report.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from ..errors import InexactThresholdWarning, UndefinedMetricWarning, UsageError
from ..metrics.estimate import Estimate
from ..metrics.table import BinTable
from .interval import ConfidenceInterval, check_level

if TYPE_CHECKING:
    from ..sketch.binary import BinarySketch

__all__ = ["bootstrap_ci", "compare_bootstrap", "replicate_estimates", "metric_function", "replicate_sketches",
           "THRESHOLD_METRICS"]

THRESHOLD_METRICS = (
    "recall", "precision", "specificity", "npv", "fpr", "fnr", "accuracy", "balanced_accuracy", "f1", "jaccard",
    "mcc", "informedness", "markedness", "g_mean", "fowlkes_mallows",
)
_ALIASES = {"tpr": "recall", "sensitivity": "recall", "tnr": "specificity", "ppv": "precision", "auc": "roc_auc",
            "brier": "brier_score"}
MetricFn = Callable[["BinarySketch"], Any]


def _loss_bounds(t: BinTable, metric: str, eps: float) -> Estimate:
    """Mean loss with bounds from the cells' score ranges (for replicate views)."""
    from .loss import _terms

    lo = hi = weight = 0.0
    for w, a, b in ((t.pos, t.pos_min, t.pos_max), (t.neg, 1.0 - t.neg_max, 1.0 - t.neg_min)):
        keep = w > 0
        if not keep.any():
            continue
        la, lb = _terms(metric, a[keep], eps), _terms(metric, b[keep], eps)
        lo += float((w[keep] * np.minimum(la, lb)).sum())
        hi += float((w[keep] * np.maximum(la, lb)).sum())
        weight += float(w[keep].sum())
    if weight <= 0:
        return Estimate(math.nan, math.nan, math.nan)
    return Estimate.from_bounds(lo / weight, hi / weight)


def metric_function(metric: str | MetricFn, threshold: float | None = None, positive_if: str = ">=") -> MetricFn:
    """A function ``sketch -> Estimate | float`` for a metric name, or ``metric`` if callable.

    Names: ``"roc_auc"``, ``"average_precision"``, ``"gini"``, ``"log_loss"``, ``"brier_score"``,
    ``"roc_auc@0.1"`` (partial AUC up to FPR 0.1, McClish-standardised), ``"recall_at_fpr@0.01"``
    (recall at the largest exact threshold whose FPR is at most 0.01), or a threshold metric
    (:data:`THRESHOLD_METRICS`) at ``threshold`` or written ``"f1@0.5"``.

    Raises
    ------
    UsageError
        Unknown name, a threshold metric without a threshold, or a threshold that is not exact.
    """
    if callable(metric):
        return metric
    name, _, at = str(metric).partition("@")
    name = _ALIASES.get(name, name)
    value: float | None = threshold
    if at:
        try:
            value = float(at)
        except ValueError:
            raise UsageError(f"bad metric {metric!r}: {at!r} after '@' is not a number") from None
    if name == "roc_auc":
        return (lambda s: s.roc_auc()) if value is None else (lambda s: s.roc_auc(max_fpr=value))
    if name in ("average_precision", "gini") and value is None:
        return lambda s: getattr(s, name)()
    if name in ("log_loss", "brier_score") and value is None:
        from ..kernels.binary import LOG_LOSS_EPS

        def loss(s: "BinarySketch") -> Any:
            if s.counters["n_outside"]:
                raise ValueError(f"{name} is defined for probabilities only: scores lie outside [0, 1]")
            return _loss_bounds(s.table(), name, LOG_LOSS_EPS)

        return loss
    if name == "recall_at_fpr" and value is not None:
        def recall_at(s: "BinarySketch") -> Any:
            r = s.threshold_at(fpr=value, positive_if=positive_if)
            return math.nan if r is None else r.confusion.recall

        return recall_at
    if name in THRESHOLD_METRICS:
        if value is None:
            raise UsageError(f"{name} is taken at a threshold: pass threshold= or write {name}@0.5")

        def at_threshold(s: "BinarySketch") -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InexactThresholdWarning)
                c = s.confusion(value, positive_if=positive_if)
            if not c.exact:
                raise UsageError(
                    f"threshold {value!r} cuts a bin whose scores straddle it, so the replicates' counts there are "
                    f"not exact; build the sketch on a grid with a cut at it (grid.with_cuts([{value!r}]), "
                    f"--grid ...@{value!r})"
                )
            return getattr(c, name)

        return at_threshold
    raise UsageError(
        f"unknown metric {metric!r} for a bootstrap interval: use roc_auc, average_precision, gini, log_loss, "
        f"brier_score, roc_auc@MAX_FPR, recall_at_fpr@FPR, a callable, or one of {', '.join(THRESHOLD_METRICS)} "
        "at a threshold (f1@0.5)"
    )


def replicate_sketches(sketch: "BinarySketch") -> Iterator["BinarySketch"]:
    """Yield one sketch view per bootstrap replicate (bins only; see the module docstring).

    Raises
    ------
    UsageError
        If the sketch has no replicates.
    """
    from ..sketch.binary import BinarySketch

    rep = sketch.replicates
    if rep is None:
        raise UsageError(
            "this sketch has no bootstrap replicates: build it with BinarySketch(..., bootstrap=200) (or "
            "evaluate(..., bootstrap=200), --bootstrap 200), ideally with row_id"
        )
    keys, values = sketch._compact()
    for rkeys, rvalues in rep.replicate_values(keys, values):
        view = BinarySketch(sketch.grid)
        view._labels = sketch._labels
        view._keys, view._values = rkeys, rvalues
        view.counters["n_outside"] = sketch.counters["n_outside"]
        yield view


def _as_bounds(x: Any) -> tuple[float, float, float]:
    if isinstance(x, Estimate):
        return float(x.value), float(x.lower), float(x.upper)
    v = float(x)
    return v, v, v


def replicate_estimates(sketch: "BinarySketch", metric: str | MetricFn, threshold: float | None = None,
                        positive_if: str = ">=") -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate binning bounds ``(lo, hi)`` of ``metric`` (NaN where undefined).

    Raises
    ------
    UsageError
        As :func:`metric_function`, or if the sketch has no replicates.
    """
    fast = _vectorized(sketch, metric, threshold, positive_if)
    if fast is not None:
        return fast
    fn = metric_function(metric, threshold, positive_if)
    lo, hi = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for view in replicate_sketches(sketch):
            try:
                _, a, b = _as_bounds(fn(view))
            except ValueError as exc:
                if isinstance(exc, UsageError):
                    raise
                a = b = math.nan
            lo.append(a)
            hi.append(b)
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def _replicate_table(sketch: "BinarySketch") -> tuple[BinTable, np.ndarray, np.ndarray]:
    """The sketch's bin table and the replicates' (k, R) positive and negative weights in its order."""
    rep = sketch.replicates
    assert rep is not None
    keys, _ = sketch._compact()
    t = sketch.table()  # descending keys
    rkeys, rw = rep.compact()
    pos = np.zeros((keys.shape[0], rep.n_replicates))
    neg = np.zeros_like(pos)
    at = keys.shape[0] - 1 - np.searchsorted(keys, rkeys)  # ascending position -> descending row
    pos[at], neg[at] = rw[:, 1, :], rw[:, 0, :]
    return t, pos, neg


def _vectorized(sketch: "BinarySketch", metric: Any, threshold: float | None,
                positive_if: str) -> tuple[np.ndarray, np.ndarray] | None:
    """All replicates at once for the full ROC-AUC and for threshold metrics; None otherwise."""
    if not isinstance(metric, str) or sketch.replicates is None:
        return None
    name, _, at = metric.partition("@")
    name = _ALIASES.get(name, name)
    if name == "roc_auc" and not at:
        from ..metrics.auc import replicate_roc_auc

        t, pos, neg = _replicate_table(sketch)
        return replicate_roc_auc(t, pos, neg)
    if name in THRESHOLD_METRICS:
        value = float(at) if at else threshold
        if value is None:
            return None
        metric_function(metric, threshold, positive_if)(sketch)  # the checks: exact threshold
        from ..metrics.confusion import Confusion

        t, pos, neg = _replicate_table(sketch)
        low = np.minimum(t.pos_min, t.neg_min)  # an exact threshold leaves each bin on one side
        above = low >= value if positive_if == ">=" else low > value
        tp, fp = pos[above].sum(axis=0), neg[above].sum(axis=0)
        fn, tn = pos.sum(axis=0) - tp, neg.sum(axis=0) - fp
        out = np.empty(tp.shape[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            for r in range(tp.shape[0]):
                out[r] = float(getattr(Confusion(float(tp[r]), float(fp[r]), float(fn[r]), float(tn[r])), name))
        return out, out.copy()
    return None


def percentile_interval(lo: np.ndarray, hi: np.ndarray, level: float, what: str) -> tuple[float, float]:
    """``(q(lo, a/2), q(hi, 1 - a/2))`` over the defined replicates; NaN when too few are defined."""
    ok = ~(np.isnan(lo) | np.isnan(hi))
    n_ok, n = int(ok.sum()), lo.shape[0]
    if n_ok < max(2, n // 2):
        warnings.warn(
            f"{what}: only {n_ok} of {n} bootstrap replicates are defined (a class missing?); returning NaN",
            UndefinedMetricWarning,
            stacklevel=3,
        )
        return math.nan, math.nan
    if n_ok < n:
        warnings.warn(
            f"{what}: {n - n_ok} of {n} bootstrap replicates are undefined and left out", UndefinedMetricWarning,
            stacklevel=3,
        )
    a = (1.0 - level) / 2.0
    if n_ok * a < 1.0:
        warnings.warn(
            f"{what}: {n_ok} replicates resolve the {100 * a:g}% tails poorly; use at least {math.ceil(2 / a)}",
            UndefinedMetricWarning,
            stacklevel=3,
        )
    return float(np.quantile(lo[ok], a)), float(np.quantile(hi[ok], 1.0 - a))


def bootstrap_ci(sketch: "BinarySketch", metric: str | MetricFn = "roc_auc", level: float = 0.95, *,
                 threshold: float | None = None, positive_if: str = ">=") -> ConfidenceInterval:
    """Percentile bootstrap interval of any metric from the sketch's Poisson replicates.

    Parameters
    ----------
    sketch : BinarySketch
        Built with ``bootstrap=R``.
    metric : str or callable, default "roc_auc"
        See :func:`metric_function`; a callable takes a sketch and returns a float or Estimate.
    level : float in (0, 1), default 0.95
    threshold : float, optional
        For threshold metrics.
    positive_if : {">=", ">"}

    Returns
    -------
    ConfidenceInterval
        ``estimate``: the metric on the sketch itself (with its binning bounds; the exact running
        sum for log loss and Brier); ``ci_lower``/``ci_upper``: the percentile interval, widened
        over binning (``widened``); ``method``: ``"bootstrap (Poisson, percentile, R=...)"``.

    Raises
    ------
    UsageError
        No replicates, an unknown metric, a level outside (0, 1), an inexact threshold.

    Warns
    -----
    UndefinedMetricWarning
        When replicates are undefined (left out; NaN when more than half are), or too few
        replicates for the level's tails.
    """
    level = check_level(level)
    fn = metric_function(metric, threshold, positive_if)
    lo, hi = replicate_estimates(sketch, metric, threshold, positive_if)
    name = metric if isinstance(metric, str) else getattr(metric, "__name__", "metric")
    if isinstance(metric, str) and _ALIASES.get(metric, metric) in ("log_loss", "brier_score"):
        exact = sketch.log_loss() if _ALIASES.get(metric, metric) == "log_loss" else sketch.brier_score()
        estimate = Estimate(exact, exact, exact)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            v, a, b = _as_bounds(fn(sketch))
        estimate = Estimate(v, a, b)
    ci_lo, ci_hi = percentile_interval(lo, hi, level, f"the bootstrap interval of {name}")
    assert sketch.replicates is not None
    widened = bool(np.any(lo != hi))
    method = f"bootstrap (Poisson, percentile, R={sketch.replicates.n_replicates})"
    return ConfidenceInterval(estimate, ci_lo, ci_hi, level, method, widened=widened)


def _p_range(d_lo: np.ndarray, d_hi: np.ndarray) -> tuple[float, float, float]:
    """Two-sided bootstrap p-value ``min(1, 2 (1 + min(#d <= 0, #d >= 0)) / (R + 1))`` with its
    range over the binning bounds of the differences (value at the midpoints)."""
    R = int(d_lo.shape[0])

    def p(d: np.ndarray) -> float:
        k = min(int(np.count_nonzero(d <= 0)), int(np.count_nonzero(d >= 0)))
        return min(1.0, 2.0 * (1 + k) / (R + 1))

    mid = p(0.5 * (d_lo + d_hi))
    k_le = (int(np.count_nonzero(d_hi <= 0)), int(np.count_nonzero(d_lo <= 0)))  # fewest, most at or below 0
    k_ge = (int(np.count_nonzero(d_lo >= 0)), int(np.count_nonzero(d_hi >= 0)))
    lo = min(1.0, 2.0 * (1 + min(k_le[0], k_ge[0])) / (R + 1))
    hi = min(1.0, 2.0 * (1 + min(k_le[1], k_ge[1])) / (R + 1))
    return mid, min(lo, mid), max(hi, mid)


def compare_bootstrap(first: "BinarySketch", second: "BinarySketch", metric: str | MetricFn = "roc_auc",
                      level: float = 0.95, *, paired: bool, threshold: float | None = None,
                      positive_if: str = ">=") -> Any:
    """Bootstrap comparison of a metric between two sketches with replicates: ``first - second``.

    Replicate ``r`` of each sketch gives ``d_r = m(first_r) - m(second_r)``; the interval is the
    percentile interval of the ``d_r`` (widened over binning: ``[lo_a - hi_b, hi_a - lo_b]`` per
    replicate) and the p-value ``min(1, 2 (1 + min(#d_r <= 0, #d_r >= 0)) / (R + 1))``.

    Parameters
    ----------
    first, second : BinarySketch
        Both with ``bootstrap=R`` (the same R).
    metric : str or callable
        See :func:`metric_function`.
    level : float in (0, 1)
    paired : bool
        True for two models scored on the same rows: the replicates must share their weights
        (same seed and keying, built over the same rows, as :func:`streameval.compare_paired`
        does), so ``d_r`` is the difference on one resample. False for independent samples (two
        periods): their replicates are independent resamples.

    Returns
    -------
    Comparison
        ``method`` ``"bootstrap paired (Poisson, percentile, R=...)"`` or ``"... unpaired ..."``;
        ``statistic`` is the difference over the replicates' standard deviation.

    Raises
    ------
    UsageError
        Missing replicates, different R; for ``paired``, replicates that are not aligned.

    Warns
    -----
    CorrelatedReplicatesWarning
        Unpaired sketches keyed by position with the same seed (their rows share weights).
    """
    from ..sketch.bootstrap import CorrelatedReplicatesWarning
    from .comparison import Comparison

    level = check_level(level)
    ra, rb = first.replicates, second.replicates
    if ra is None or rb is None:
        raise UsageError("a bootstrap comparison needs both sketches built with bootstrap=R")
    if ra.n_replicates != rb.n_replicates:
        raise UsageError(f"the sketches have {ra.n_replicates} and {rb.n_replicates} replicates; use the same R")
    if paired and (ra.seed != rb.seed or ra.keyed != rb.keyed or first.n_rows != second.n_rows):
        raise UsageError(
            "a paired bootstrap needs replicates drawn with the same weights: the same seed and row keys over the same "
            "rows (streameval.compare_paired builds them so)"
        )
    if not paired and ra.seed == rb.seed and "position" in (ra.keyed, rb.keyed):
        warnings.warn(
            "unpaired bootstrap of sketches keyed by position with the same seed: rows at the same positions share "
            "weights; build them with different seeds or with row_id",
            CorrelatedReplicatesWarning,
            stacklevel=2,
        )
    fn = metric_function(metric, threshold, positive_if)
    lo_a, hi_a = replicate_estimates(first, metric, threshold, positive_if)
    lo_b, hi_b = replicate_estimates(second, metric, threshold, positive_if)
    d_lo, d_hi = lo_a - hi_b, hi_a - lo_b
    name = metric if isinstance(metric, str) else getattr(metric, "__name__", "metric")
    ci_lo, ci_hi = percentile_interval(d_lo, d_hi, level, f"the bootstrap comparison of {name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        _, a_lo, a_hi = _as_bounds(fn(first))
        _, b_lo, b_hi = _as_bounds(fn(second))
    estimate = Estimate.from_bounds(a_lo - b_hi, a_hi - b_lo)
    ok = ~(np.isnan(d_lo) | np.isnan(d_hi))
    mid = 0.5 * (d_lo[ok] + d_hi[ok])
    sd = float(np.std(mid, ddof=1)) if mid.shape[0] > 1 else math.nan
    z = estimate.value / sd if sd > 0 else math.nan
    p, p_lo, p_hi = _p_range(d_lo[ok], d_hi[ok]) if mid.shape[0] else (math.nan, math.nan, math.nan)
    kind = "paired" if paired else "unpaired"
    label = f"bootstrap {kind} (Poisson, percentile, R={ra.n_replicates})"
    quantity = "ΔAUC" if name in ("roc_auc", "auc") else f"Δ{name}"
    widened = not (estimate.exact and bool(np.array_equal(d_lo, d_hi, equal_nan=True)))
    return Comparison(estimate, ci_lo, ci_hi, Estimate.point(z), Estimate(p, p_lo, p_hi), label, level, quantity,
                      widened=widened)
