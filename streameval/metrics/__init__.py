"""Pure functions of a sketch's bin table: curves, areas, confusion rates, thresholds, probabilities.

Nothing here knows about sketch objects, files or readers; every function takes a
:class:`~streameval.metrics.table.BinTable` (and, for probability metrics, the running sums).
The one exception is :mod:`.functional`, scikit-learn-shaped functions over arrays
(``roc_auc_score``, ...) that build a sketch of their input (imported lazily).

The names load on first use (:mod:`streameval.lazy`): a module that needs one submodule (a
report's segmented areas) does not pay for the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

_FUNCTIONAL = (
    "accuracy_score", "average_precision_score", "balanced_accuracy_score", "brier_score_loss",
    "confusion_matrix", "det_curve", "f1_score", "fbeta_score", "log_loss", "matthews_corrcoef",
    "precision_recall_curve", "precision_score", "recall_score", "roc_auc_score", "roc_curve",
)

__all__ = [
    "BinTable", "CalibrationCurve", "Confusion", "Estimate", "ThresholdResult", "TopK",
    "accuracy_score", "average_precision_score", "balanced_accuracy_score", "brier_score_loss",
    "confusion_matrix", "det_curve", "f1_score", "fbeta_score", "log_loss", "matthews_corrcoef",
    "precision_recall_curve", "precision_score", "recall_score", "roc_auc_score", "roc_curve",
]

__getattr__, __dir__ = lazy_names(__name__, globals(), {
    "BinTable": ".table", "CalibrationCurve": ".probability", "Confusion": ".confusion", "Estimate": ".estimate",
    "ThresholdResult": ".thresholds", "TopK": ".thresholds", **dict.fromkeys(_FUNCTIONAL, ".functional"),
})

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily
    from .confusion import Confusion
    from .estimate import Estimate
    from .functional import (
        accuracy_score,
        average_precision_score,
        balanced_accuracy_score,
        brier_score_loss,
        confusion_matrix,
        det_curve,
        f1_score,
        fbeta_score,
        log_loss,
        matthews_corrcoef,
        precision_recall_curve,
        precision_score,
        recall_score,
        roc_auc_score,
        roc_curve,
    )
    from .probability import CalibrationCurve
    from .table import BinTable
    from .thresholds import ThresholdResult, TopK
