"""streameval: exact-or-bounded evaluation of classifiers over data that does not fit in memory.

Scores are bucketed into fixed-resolution per-class histograms (:class:`BinarySketch`,
:class:`MulticlassSketch`) that merge exactly across chunks, shards and days; every metric is
derived from them, exact on discrete scores and with a rigorous interval otherwise.

Public names load on first use (PEP 562), so ``import streameval`` and ``streameval --help`` do not
pay for NumPy, Numba, pyarrow or DuckDB until something needs them.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

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

__version__ = "0.1.0"

# public name -> the module that defines it
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("DEFAULT_GRID", "CutGrid", "FloatGrid", "Grid", "LinearGrid", "ProbabilityGrid", "grid_from_spec", "parse_grid"),
        ".grid",
    ),
    **dict.fromkeys(("CalibrationCurve", "Confusion", "Estimate", "ThresholdResult", "TopK"), ".metrics"),
    **dict.fromkeys(("BinarySketch", "load", "merge"), ".sketch.binary"),
    "MulticlassSketch": ".sketch.multiclass",
    "SketchSet": ".sketch.sketchset",
    "compare": ".stats",
    "compare_paired": ".paired_eval",
    **dict.fromkeys(("EmptyInputError", "evaluate", "sketch_source"), ".evaluate"),
    "Store": ".monitor",
    "Report": ".report",
    **dict.fromkeys(("SourceError", "open_source"), ".sources"),
}

__all__ = [
    "IncompatibleGridError",
    "InexactThresholdWarning",
    "InputError",
    "InputTypeError",
    "SketchFormatError",
    "StreamevalError",
    "UndefinedMetricWarning",
    "UsageError",
    "DEFAULT_GRID",
    "CutGrid",
    "FloatGrid",
    "Grid",
    "LinearGrid",
    "ProbabilityGrid",
    "grid_from_spec",
    "parse_grid",
    "CalibrationCurve",
    "Confusion",
    "Estimate",
    "ThresholdResult",
    "TopK",
    "BinarySketch",
    "load",
    "merge",
    "MulticlassSketch",
    "SketchSet",
    "compare",
    "compare_paired",
    "EmptyInputError",
    "evaluate",
    "sketch_source",
    "Store",
    "Report",
    "SourceError",
    "open_source",
]


assert set(__all__) == set(_LAZY) | {n for n in __all__ if n in globals()}, "keep __all__ and _LAZY in step"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streameval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """The package module, keeping ``streameval.evaluate`` the function.

    Loading the submodule ``streameval.evaluate`` makes the import system set the package's
    attribute of that name to the submodule; with lazy names that could replace (or pre-empt) the
    function. The submodule stays reachable as ``sys.modules["streameval.evaluate"]`` and through
    ``from streameval.evaluate import ...``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # what type checkers and IDEs see; at run time the names load lazily
    from .evaluate import EmptyInputError, evaluate, sketch_source
    from .grid import DEFAULT_GRID, CutGrid, FloatGrid, Grid, LinearGrid, ProbabilityGrid, grid_from_spec, parse_grid
    from .metrics import CalibrationCurve, Confusion, Estimate, ThresholdResult, TopK
    from .monitor import Store
    from .paired_eval import compare_paired
    from .report import Report
    from .sketch.binary import BinarySketch, load, merge
    from .sketch.multiclass import MulticlassSketch
    from .sketch.sketchset import SketchSet
    from .sources import SourceError, open_source
    from .stats import compare
