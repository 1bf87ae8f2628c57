"""Pure functions of a sketch's bin table: curves, areas, confusion rates, thresholds, probabilities.

Nothing here knows about sketch objects, files or readers; every function takes a
:class:`~streameval.metrics.table.BinTable` (and, for probability metrics, the running sums).
The one exception is :mod:`.functional`, scikit-learn-shaped functions over arrays
(``roc_auc_score``, ...) that build a sketch of their input (imported lazily).
"""

from .confusion import Confusion
from .estimate import Estimate
from .functional import (  # noqa: E402  (scikit-learn-shaped functions; build a sketch lazily)
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

__all__ = [
    "BinTable", "CalibrationCurve", "Confusion", "Estimate", "ThresholdResult", "TopK",
    "accuracy_score", "average_precision_score", "balanced_accuracy_score", "brier_score_loss",
    "confusion_matrix", "det_curve", "f1_score", "fbeta_score", "log_loss", "matthews_corrcoef",
    "precision_recall_curve", "precision_score", "recall_score", "roc_auc_score", "roc_curve",
]
