"""The HTML page: header (what was evaluated, when), the summary and confusion tables, the charts
(Vega-Lite specs compiled to Vega by vl-convert and drawn by vega-embed, whose JavaScript is
embedded once), provenance, notes."""

from __future__ import annotations

import datetime as _dt
import functools
import html
import json
import os
from typing import Any

__all__ = ["binary_report_html", "multiclass_report_html", "report_html", "slices_report_html", "write_html"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5rem auto; max-width: 1400px;
       color: #222; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin-bottom: 0.2rem; } h2 { font-size: 1.1rem; margin-top: 1.6rem; }
.meta { color: #555; font-size: 0.9rem; }
table { border-collapse: collapse; font-size: 0.9rem; margin: 0.4rem 0; }
td, th { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 1.2rem; }
.chart { break-inside: avoid; }
.note { background: #fff8e1; border-left: 4px solid #E69F00; padding: 0.3rem 0.6rem; margin: 0.3rem 0; font-size: 0.9rem; }
.legend { color: #555; font-size: 0.85rem; }
@media print { .charts { display: block; } .chart { page-break-inside: avoid; margin-bottom: 1rem; } }
"""


def _table(rows: list[list[str]], header: list[str] | None = None, cls: str = "") -> str:
    out = [f'<table class="{cls}">']
    if header:
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _script_json(value: Any) -> str:
    return json.dumps(value).replace("</", "<\\/")


@functools.lru_cache(maxsize=1)
def _bundle() -> str:
    """vega, vega-lite and vega-embed as one script (from vl-convert, matching Altair's Vega-Lite)."""
    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    bundle = vlc.javascript_bundle(vl_version=vl_version_for_vl_convert())  # type: ignore[call-arg]
    return str(bundle).replace("</script", "<\\/script")


def _vega(spec: dict[str, Any]) -> Any:
    """A Vega-Lite spec compiled to Vega here, once, so the browser only parses and draws it.

    Measured on a 100M-row report (benchmarks/html_bench.py): compiling the nine charts' Vega-Lite
    in the page took about a third of its render time; compiling them here costs under a second.
    """
    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    return vlc.vegalite_to_vega(spec, vl_version=vl_version_for_vl_convert())


def binary_report_html(report: Any, title: str | None = None) -> str:
    """The self-contained HTML page of a binary :class:`~streameval.Report`.

    Parameters
    ----------
    report : Report
        A binary report (``report.sketch`` is its :class:`~streameval.BinarySketch`).
    title : str, optional
        Page title (default: "streameval report" and the source).

    Returns
    -------
    str
        One HTML document: no network request when opened (the plotting JavaScript is embedded).
    """
    from .charts import binary_charts

    sketch = report.sketch
    prov = report.provenance
    source = str(prov.get("source", "in-memory data"))
    made = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    thresholds = [float(c["requested_threshold"]) for c in report.confusion]
    charts, missing = binary_charts(sketch, report, thresholds)
    head = title or f"streameval report: {source}"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(head)}</title>", f"<style>{_CSS}</style>",
        f"<script>{_bundle()}</script>", "</head><body>",
        f"<h1>{html.escape(head)}</h1>",
        f'<p class="meta">{html.escape(source)}: {int(prov.get("rows_read", sketch.n_rows)):,} rows; '
        f"report made {html.escape(made)} by streameval {html.escape(str(prov.get('streameval_version', '')))}</p>",
        "<h2>Summary</h2>",
        _table([[label, text] for label, text in report.rows()], ["metric", "value [binning bounds] (CI)"], "summary"),
        '<p class="legend"><code>value [lower, upper]</code>: binning bounds, which contain the exact value on all rows '
        "(not a confidence interval); <code>(95% CI ...)</code>: sampling confidence interval; <code>~</code>: a value "
        "without bounds.</p>",
    ]
    if report.confusion:
        parts.append("<h2>Confusion at the chosen thresholds</h2>")
        for th, cells in report.confusion_cells():
            c = {name: v for name, v, _ in cells}
            parts.append(f"<p>threshold {html.escape(th)}</p>")
            parts.append(_table([["actual positive", c["tp"], c["fn"]], ["actual negative", c["fp"], c["tn"]]],
                                ["", "predicted positive", "predicted negative"], "confusion"))
            parts.append(_table([[name, v, ci] for name, v, ci in cells if name not in ("tp", "fp", "fn", "tn")],
                                ["rate", "value", "CI"], "rates"))
    parts += _charts_html(charts, missing)
    parts.append("<h2>Provenance</h2>")
    parts.append(_table([[k, v] for k, v in report.provenance_rows()], None, "provenance"))
    if report.notes:
        parts.append("<h2>Notes</h2>")
        parts += [f'<p class="note">{html.escape(n)}</p>' for n in report.notes]
    parts.append("</body></html>")
    return "\n".join(parts)


def multiclass_report_html(report: Any, title: str | None = None) -> str:
    """The self-contained HTML page of a :class:`~streameval.report.MulticlassReport`: metric and
    per-class tables, the confusion matrix as counts and row-normalised heatmaps, and the
    one-vs-rest ROC and precision-recall curves per class (up to 20 classes)."""
    from .multiclass import multiclass_charts, multiclass_tables

    prov = report.provenance
    source = str(prov.get("source", "in-memory data"))
    made = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    charts, missing = multiclass_charts(report)
    head = title or f"streameval multiclass report: {source}"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(head)}</title>", f"<style>{_CSS}</style>",
        f"<script>{_bundle()}</script>", "</head><body>",
        f"<h1>{html.escape(head)}</h1>",
        f'<p class="meta">{html.escape(source)}: {int(report.sketch.n_rows):,} rows, {report.sketch.n_classes} classes; '
        f"report made {html.escape(made)}</p>",
        *multiclass_tables(report),
    ]
    parts += _charts_html(charts, missing)
    if report.notes:
        parts.append("<h2>Notes</h2>")
        parts += [f'<p class="note">{html.escape(n)}</p>' for n in report.notes]
    parts.append("</body></html>")
    return "\n".join(parts)


def slices_report_html(table: Any, title: str | None = None, alerts: Any = None, worst: int = 20,
                       max_groups: int = 50_000) -> str:
    """The self-contained HTML page of a sliced and/or windowed result.

    Parameters
    ----------
    table : SliceTable
        One row per (window, slice...), from :func:`streameval.evaluate` with ``by=``/``time=``/
        ``window=`` or from ``streameval monitor report``.
    title : str, optional
        Page title.
    alerts : AlertTable or dict, optional
        The result of :func:`streameval.monitor.check` (or its ``to_dict()``, the JSON of
        ``streameval monitor check --format json``): alerted slices get markers on the checked
        metric's panel and an alert table.
    worst : int, default 20
        Rows of the worst-slices table.
    max_groups : int, default 50,000
        Most (window, slice) groups plotted; beyond, the newest windows that fit (with a note).

    Returns
    -------
    str
        One HTML document: metrics over windows per slice (every slice selectable), score drift
        (PSI) over windows, the worst slices of the newest window, the alerts, provenance, notes.
    """
    from .monitor import monitor_charts
    from .monitor_tables import alert_table, summary_rows, worst_table

    alert_dict = alerts.to_dict() if hasattr(alerts, "to_dict") else alerts
    prov = table.provenance
    source = str(prov.get("source", "in-memory data"))
    made = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    charts, missing, series = monitor_charts(table, alert_dict, max_groups)
    head = title or f"streameval monitoring report: {source}"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(head)}</title>", f"<style>{_CSS}</style>",
        f"<script>{_bundle()}</script>", "</head><body>",
        f"<h1>{html.escape(head)}</h1>",
        f'<p class="meta">{html.escape(source)}: {table.sketches.n_rows:,} rows in {len(table.rows):,} groups; '
        f"report made {html.escape(made)} by streameval {html.escape(str(prov.get('streameval_version', '')))}</p>",
        "<h2>Summary</h2>", _table(summary_rows(table), None, "summary"),
        *worst_table(table, alert_dict, worst),
        *alert_table(alert_dict),
    ]
    intro = []
    if charts and charts[0][0] == "monitor":
        intro = ['<p class="legend">Blue: all slices together (band: its confidence interval of the AUC, when '
                 "computed); grey band: the middle half of the slices (25th to 75th percentile in each window); "
                 "black: the slice picked in the list, alerted slices first, then the lowest AUC in the newest "
                 "window (band: its confidence interval; vertical ticks: binning bounds); orange triangles: alerts "
                 "of <code>monitor check</code> in its current period. PSI compares each window's scores with the "
                 "same slice's first window (dashed: 0.1 and 0.25, the usual rules of thumb for a moderate and a "
                 'large shift).</p>', '<div id="slice-picker"></div>']
    parts += _charts_html(charts, missing, intro)
    parts.append("<h2>Provenance</h2>")
    parts.append(_table([[k, json.dumps(v, default=str) if isinstance(v, (list, dict)) else str(v)]
                         for k, v in prov.items() if k != "files"], None, "provenance"))
    if table.notes:
        parts.append("<h2>Notes</h2>")
        parts += [f'<p class="note">{html.escape(n)}</p>' for n in table.notes]
    parts.append("</body></html>")
    return "\n".join(parts)


def _charts_html(charts: list[tuple[str, Any]], missing: list[str], intro: list[str] | None = None) -> list[str]:
    """The plots section: a note per missing plot, ``intro`` (HTML), a div per chart, and the
    script that draws them."""
    parts = ["<h2>Plots</h2>"]
    parts += [f'<p class="note missing">{html.escape(text)}</p>' for text in missing]
    parts += intro or []
    parts.append('<div class="charts">')
    parts += [f'<div class="chart" id="chart-{cid}"></div>' for cid, _chart in charts]
    parts.append("</div>")
    specs = {cid: _vega(chart.to_dict()) for cid, chart in charts}
    parts.append(f"<script>const SPECS = {_script_json(specs)};")
    parts.append(
        "const VIEWS = {}; for (const [id, spec] of Object.entries(SPECS)) {"
        " vegaEmbed('#chart-' + id, spec, {renderer: 'svg', actions: false})"
        ".then(r => { VIEWS[id] = r.view; }).catch(console.error); }</script>"
    )
    return parts


def report_html(report: Any, path: str | os.PathLike[str] | None = None, title: str | None = None,
                **options: Any) -> str:
    """The page of a binary or multiclass report or of a sliced result (:class:`SliceTable`); with
    ``path``, also written there atomically. ``options`` go to the page function (``alerts=`` for
    a sliced result, see :func:`slices_report_html`)."""
    if path is not None:
        write_html(report, path, title, **options)
        with open(path, encoding="utf-8") as f:
            return f.read()
    return str(_render(report)(report, title, **options))


def _render(report: Any) -> Any:
    if hasattr(report, "sketches") and hasattr(report, "columns"):
        return slices_report_html
    return multiclass_report_html if hasattr(report, "per_class") else binary_report_html


def _check_installed() -> None:
    try:
        import altair  # noqa: F401
        import vl_convert  # noqa: F401
    except ImportError as exc:
        raise ImportError('the HTML report needs Altair and vl-convert: pip install "streameval[html]"') from exc


def write_html(report: Any, path: str | os.PathLike[str], title: str | None = None, **options: Any) -> None:
    """Write the page of a report (:func:`binary_report_html`, :func:`multiclass_report_html`) or
    of a sliced result (:func:`slices_report_html`, which takes ``alerts=``) to ``path`` atomically.

    Raises
    ------
    ImportError
        Altair or vl-convert-python is missing (``pip install "streameval[html]"``).
    """
    _check_installed()
    from ...atomic import write_text_atomic

    write_text_atomic(path, _render(report)(report, title, **options))
