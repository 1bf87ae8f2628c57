"""The HTML report: one self-contained page (no network request when viewed) with the plots
evaluators read, drawn with Vega-Lite through Altair, its JavaScript embedded.

- :mod:`.data`: what each plot shows, as small tables computed from the sketch's own curves
  (downsampled for display; reported numbers are never recomputed);
- :mod:`.charts`: the Altair charts;
- :mod:`.page`: the page around them (summary, confusion tables, provenance, notes);
- :mod:`.monitor` and :mod:`.monitor_tables`: the page of a sliced and windowed result (metrics
  over windows per slice, score drift, the worst slices, alerts);
- :mod:`.images`: the same charts as PNG or SVG files (vl-convert, no browser).

Why Vega-Lite: measured on this machine, a one-chart page is 1.0 MB with Vega-Lite's JavaScript
inlined and 4.9 MB with Plotly's, against the 3 MB target for the whole report; Vega-Lite has log
and custom scales, tooltips, and a stable declarative spec (docs/html-report.md).
"""

from .images import write_images
from .page import binary_report_html, multiclass_report_html, report_html, slices_report_html, write_html

__all__ = ["binary_report_html", "multiclass_report_html", "report_html", "slices_report_html", "write_html",
           "write_images"]
