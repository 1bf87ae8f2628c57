"""Result objects and their renderings.

- :mod:`.binary`: :class:`Report`, one sketch's headline metrics with bounds and provenance;
  JSON (``docs/report-schema.md``), Markdown and terminal renderings.
- :mod:`.slices`: :class:`SliceTable`, the tidy table of a sliced and windowed evaluation, one row
  per (window, slice...) with the same columns in Arrow, Polars, pandas, JSON and on screen.

The names load on first use (:mod:`streameval.lazy`): ``monitor report`` needs the slice table,
not the single-sketch and multiclass reports (and their kernels).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

__all__ = [
    "METRIC_LABELS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "WIDE_BOUNDS",
    "CIOptions",
    "MulticlassReport",
    "Report",
    "SliceTable",
    "compute_metrics",
    "format_metric",
    "wide_bounds_note",
]

__getattr__, __dir__ = lazy_names(__name__, globals(), {
    **dict.fromkeys(("METRIC_LABELS", "SCHEMA", "SCHEMA_VERSION", "WIDE_BOUNDS", "CIOptions", "Report",
                     "compute_metrics", "format_metric", "wide_bounds_note"), ".binary"),
    "MulticlassReport": ".multiclass",
    "SliceTable": ".slices",
})

if TYPE_CHECKING:  # what type checkers see; at run time the names load lazily
    from .binary import (
        METRIC_LABELS,
        SCHEMA,
        SCHEMA_VERSION,
        WIDE_BOUNDS,
        CIOptions,
        Report,
        compute_metrics,
        format_metric,
        wide_bounds_note,
    )
    from .multiclass import MulticlassReport
    from .slices import SliceTable
