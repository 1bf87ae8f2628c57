"""Pure functions of a sketch's bin table: curves, areas, confusion rates, thresholds, probabilities.

Nothing here knows about sketch objects, files or readers; every function takes a
:class:`~streameval.metrics.table.BinTable` (and, for probability metrics, the running sums).
"""

from .confusion import Confusion
from .estimate import Estimate
from .probability import CalibrationCurve
from .table import BinTable
from .thresholds import ThresholdResult, TopK

__all__ = ["BinTable", "CalibrationCurve", "Confusion", "Estimate", "ThresholdResult", "TopK"]
