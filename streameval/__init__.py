"""streameval: exact-or-bounded evaluation of binary classifiers over data that does not fit in memory.

Scores are bucketed into fixed-resolution per-class histograms (:class:`BinarySketch`) that merge
exactly across chunks, shards and days; every metric is derived from them, exact on discrete scores
and with a rigorous interval otherwise.
"""

from .errors import (
    IncompatibleGridError,
    InexactThresholdWarning,
    InputError,
    InputTypeError,
    SketchFormatError,
    StreamevalError,
    UndefinedMetricWarning,
    UsageError,
)
from .grid import DEFAULT_GRID, CutGrid, FloatGrid, Grid, LinearGrid, ProbabilityGrid, grid_from_spec, parse_grid
from .metrics import CalibrationCurve, Confusion, Estimate, ThresholdResult, TopK
from .sketch.binary import BinarySketch, load, merge
from .sketch.multiclass import MulticlassSketch
from .sketch.sketchset import SketchSet
from .stats import compare

__version__ = "0.1.0"

__all__ = [
    "MulticlassSketch",
    "BinarySketch",
    "CalibrationCurve",
    "Confusion",
    "CutGrid",
    "DEFAULT_GRID",
    "Estimate",
    "FloatGrid",
    "Grid",
    "IncompatibleGridError",
    "InexactThresholdWarning",
    "InputError",
    "InputTypeError",
    "LinearGrid",
    "ProbabilityGrid",
    "SketchFormatError",
    "StreamevalError",
    "ThresholdResult",
    "TopK",
    "UndefinedMetricWarning",
    "UsageError",
    "SketchSet",
    "compare",
    "grid_from_spec",
    "load",
    "merge",
    "parse_grid",
]

# End-to-end evaluation (sources -> sketch -> report). Imported last: these modules import the core.
from .evaluate import EmptyInputError, evaluate, sketch_source  # noqa: E402
from .monitor import Store  # noqa: E402
from .report import Report  # noqa: E402
from .sources import SourceError, open_source  # noqa: E402

__all__ += ["Store", "EmptyInputError", "Report", "SourceError", "evaluate", "open_source", "sketch_source"]
