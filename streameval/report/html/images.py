"""Static images of the report's charts (PNG or SVG), for slides and docs.

The charts are the HTML page's own Vega-Lite specifications, rendered by vl-convert (Vega in an
embedded JavaScript engine, no browser and no download at run time), one file per chart, named by
the chart's id (``roc.png``, ``pr.png``, ...). Files are written atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["FORMATS", "chart_specs", "write_images"]

FORMATS = ("png", "svg")


def chart_specs(report: Any, **options: Any) -> list[tuple[str, dict[str, Any]]]:
    """``[(id, Vega-Lite spec)]`` of the charts the report's HTML page draws, in page order.

    ``report`` is a binary :class:`~streameval.report.Report`, a multiclass report or a
    :class:`~streameval.report.SliceTable` (``options``: ``alerts=`` as for its page).
    """
    if hasattr(report, "sketches") and hasattr(report, "columns"):
        from .monitor import monitor_charts

        alerts: Any = options.get("alerts")
        charts = monitor_charts(report, alerts.to_dict() if hasattr(alerts, "to_dict") else alerts)[0]
    elif hasattr(report, "per_class"):
        from .multiclass import multiclass_charts

        charts = multiclass_charts(report)[0]
    else:
        from .charts import binary_charts

        thresholds = [float(c["requested_threshold"]) for c in report.confusion]
        charts = binary_charts(report.sketch, report, thresholds)[0]
    return [(cid, chart.to_dict()) for cid, chart in charts]


def write_images(report: Any, directory: str | os.PathLike[str], format: str = "png", scale: float = 2.0,
                 **options: Any) -> list[Path]:
    """Write each chart of the report's page as an image file in ``directory``.

    Parameters
    ----------
    report : Report, MulticlassReport or SliceTable
    directory : str or path-like
        Created if missing; existing files of the same names are replaced.
    format : {"png", "svg"}, default "png"
    scale : float, default 2.0
        PNG pixel density: 2 gives 640 x 520 pixels for a 320 x 260 chart (sharp on slides).
    **options
        ``alerts=`` for a sliced result (see :func:`~streameval.report.html.slices_report_html`).

    Returns
    -------
    list of Path
        The files written, in page order (``<chart id>.<format>``). A chart the report cannot
        draw (one class only, for instance) has no file.

    Raises
    ------
    ValueError
        If ``format`` is not png or svg.
    ImportError
        Altair or vl-convert-python is missing (``pip install "streameval[html]"``).
    """
    if format not in FORMATS:
        raise ValueError(f"image format must be png or svg, got {format!r}")
    from .page import _check_installed

    _check_installed()
    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    from ...atomic import write_bytes_atomic, write_text_atomic

    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    version = vl_version_for_vl_convert()
    written = []
    for cid, spec in chart_specs(report, **options):
        target = out_dir / f"{cid}.{format}"
        if format == "png":
            write_bytes_atomic(target, vlc.vegalite_to_png(spec, vl_version=version, scale=scale))
        else:
            write_text_atomic(target, vlc.vegalite_to_svg(spec, vl_version=version))
        written.append(target)
    return written
