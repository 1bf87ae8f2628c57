"""Sampling uncertainty and tests, as pure functions of bin tables and counts.

Binning bounds (in :class:`~streameval.metrics.estimate.Estimate`) say how far unresolved bins
can move a number computed on these rows; the confidence intervals here say how far it could move
on another sample. Every interval computed from binned counts is widened so that it contains the
interval the exact rows would give. Weights are read as frequency weights (counts), or with
Kish's effective sample size where the sketch kept the squared weights (format version 2).

- :mod:`.delong`: ROC-AUC variance and intervals (DeLong, Hanley & McNeil).
- :mod:`.proportions`: Wilson, Clopper-Pearson and Jeffreys intervals; rates at a threshold.
- :mod:`.comparison`: two independent samples: AUC (DeLong unpaired), proportions (Newcombe).
- :mod:`.loss`: log loss and Brier score (normal interval, second moment bounded from the bins).
- :mod:`.bootstrap`: Poisson-bootstrap percentile intervals of any metric (``bootstrap=R`` sketches).
- :mod:`.drift`: score drift between two histograms: PSI, KS distance, Jensen-Shannon.
- :mod:`.multiple`: Benjamini-Hochberg false discovery rate control.

SciPy is imported lazily, by the Clopper-Pearson and Jeffreys intervals and the Student-t
comparison only.
"""

from .comparison import Comparison, compare, compare_auc, compare_proportions, parse_metric, relative_error_reduction
from .delong import DeLongPlacements, delong_placements, delong_variance, hanley_mcneil_se, roc_auc_ci
from .drift import Drift, score_drift
from .interval import ConfidenceInterval
from .multiple import BHResult, benjamini_hochberg
from .proportions import proportion_ci, rate_cis

__all__ = [
    "BHResult",
    "Comparison",
    "ConfidenceInterval",
    "DeLongPlacements",
    "Drift",
    "benjamini_hochberg",
    "compare",
    "compare_auc",
    "compare_proportions",
    "delong_placements",
    "delong_variance",
    "hanley_mcneil_se",
    "parse_metric",
    "proportion_ci",
    "relative_error_reduction",
    "rate_cis",
    "roc_auc_ci",
    "score_drift",
]
