"""Sketch state and its file family.

- :mod:`.binary`: :class:`BinarySketch` (one score, two classes) with its metric methods in
  :mod:`.binary_metrics`;
- :mod:`.multiclass`: :class:`MulticlassSketch` (K classes), its state in :mod:`.multiclass_state`;
- :mod:`.sketchset`: :class:`SketchSet`, key -> sketch for slices x windows, over :mod:`.cells`;
- :mod:`.io`, :mod:`.io_checks`, :mod:`.io_multiclass`: the versioned file format
  (docs/sketch-format.md); :mod:`.provenance`: which inputs a sketch has seen.

The names load on first use (:mod:`streameval.lazy`): reading a sketch set does not import the
multiclass sketch and its kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

__all__ = ["BinarySketch", "MulticlassSketch", "SketchSet", "load", "merge"]

__getattr__, __dir__ = lazy_names(__name__, globals(), {
    "BinarySketch": ".binary", "load": ".binary", "merge": ".binary", "MulticlassSketch": ".multiclass",
    "SketchSet": ".sketchset",
})

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily
    from .binary import BinarySketch, load, merge
    from .multiclass import MulticlassSketch
    from .sketchset import SketchSet
