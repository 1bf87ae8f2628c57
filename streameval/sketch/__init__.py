"""Sketch state and its file family.

- :mod:`.binary`: :class:`BinarySketch` (one score, two classes) with its metric methods in
  :mod:`.binary_metrics`;
- :mod:`.multiclass`: :class:`MulticlassSketch` (K classes), its state in :mod:`.multiclass_state`;
- :mod:`.sketchset`: :class:`SketchSet`, key -> sketch for slices x windows, over :mod:`.cells`;
- :mod:`.io`, :mod:`.io_checks`, :mod:`.io_multiclass`: the versioned file format
  (docs/sketch-format.md); :mod:`.provenance`: which inputs a sketch has seen.
"""

from .binary import BinarySketch, load, merge
from .multiclass import MulticlassSketch
from .sketchset import SketchSet

__all__ = ["BinarySketch", "MulticlassSketch", "SketchSet", "load", "merge"]
