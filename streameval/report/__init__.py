"""Result objects and their renderings.

- :mod:`.binary`: :class:`Report`, one sketch's headline metrics with bounds and provenance;
  JSON (``docs/report-schema.md``), Markdown and terminal renderings.
- :mod:`.slices`: :class:`SliceTable`, the tidy table of a sliced and windowed evaluation, one row
  per (window, slice...) with the same columns in Arrow, Polars, pandas, JSON and on screen.
"""

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
