"""Monitoring views of a sliced and windowed result (:class:`~streameval.report.SliceTable`).

- each metric over windows: all slices together (blue, with its confidence band), the middle
  half of the slices (grey band, the 25th to 75th percentile across slices in each window), and
  one slice picked from a list (black, with its confidence band, binning bounds and alert
  markers); the list holds every slice, alerted ones first, then the worst in the newest window;
- score drift over windows: PSI of each window's score histogram (labelled and unlabelled rows)
  against the same slice's first window (:func:`streameval.stats.score_drift`);
- without windows: the worst slices as a dot plot with their intervals, and the spread of the
  metric across all slices.

The per-(window, slice) numbers travel once, as CSV text inside the chart's specification (one
line per group, so 1,000 slices x 30 windows stay near 2 MB), and are drawn in the browser; the
tables on the page use the same cells as the terminal table. Nothing here recomputes a reported
metric: the lines are the table's rows, and the "all slices" line is the table's own
computation (:meth:`SliceTable.from_sketchset`) on the groups merged per window.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any, Sequence

from .charts import PALETTE

__all__ = ["ALL", "monitor_charts", "series_rows", "slice_label"]

ALL = "(all)"
WINDOW = "window"
BAND_WIDTH, BAND_HEIGHT = 420, 220
MAX_GROUPS = 50_000  # about 10 MB of page: beyond it the page is slow to write and to open
_RATE_PREFIXES = ("recall@", "precision@", "fpr@")
_TITLES = {"roc_auc": "ROC AUC", "average_precision": "average precision", "psi": "score drift (PSI vs first window)"}


def slice_label(row: dict[str, Any], names: Sequence[str]) -> str:
    """The slice's values joined by `` / `` (the window excluded); ``(all)`` without slice columns."""
    return " / ".join("null" if row.get(n) is None else str(row.get(n)) for n in names) if names else ALL


def metric_columns(columns: Sequence[str]) -> list[str]:
    """The columns drawn as panels: AUC, AP and the rates at each threshold (not the est_ ones)."""
    out = [c for c in ("roc_auc", "average_precision") if c in columns]
    return out + [c for c in columns if c.startswith(_RATE_PREFIXES)]


def _iso(v: Any) -> str:
    return v.isoformat() if isinstance(v, (_dt.datetime, _dt.date)) else str(v)


def _num(v: Any) -> float | None:
    if v is None:
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def _psi(table: Any, names: Sequence[str], windows: set[Any] | None = None) -> dict[tuple[Any, ...], float | None]:
    """PSI of every group's scores (in ``windows`` when given) against its slice's first window
    (None where undefined)."""
    from ...errors import UsageError
    from ...stats import score_drift

    ss = table.sketches
    keys = ss.key_names
    if WINDOW not in keys:
        return {}
    wi = keys.index(WINDOW)
    first: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for key in ss.keys():
        sl = tuple(k for i, k in enumerate(key) if i != wi)
        if sl not in first or key[wi] < first[sl][wi]:
            first[sl] = key
    hists: dict[tuple[Any, ...], Any] = {}
    out: dict[tuple[Any, ...], float | None] = {}
    for key in ss.keys():
        if windows is not None and key[wi] not in windows:
            continue
        ref = first[tuple(k for i, k in enumerate(key) if i != wi)]
        for k in (key, ref):
            if k not in hists:
                hists[k] = ss.score_histogram(k)
        b, w = hists[key][:2]
        rb, rw = hists[ref][:2]
        try:  # PSI needs no min/max (they only tighten the KS distance): leaving them out halves the cost
            out[key] = _num(score_drift(b, w, rb, rw).psi)
        except UsageError:  # an empty histogram: no drift to speak of
            out[key] = None
    return out


def _overall_rows(table: Any) -> list[dict[str, Any]]:
    """The table's own rows for all slices merged per window (its thresholds and CI options)."""
    from ..binary import CIOptions
    from ..slices import SliceTable

    ss = table.sketches.rollup([WINDOW])
    thresholds = sorted({float(c.split("@", 1)[1]) for c in table.columns if c.startswith("recall@")})
    ci_prov = table.provenance.get("ci")
    ci = None
    if "roc_auc_ci_lower" in table.columns:
        ci = CIOptions(**ci_prov) if isinstance(ci_prov, dict) else CIOptions()
    sub = SliceTable.from_sketchset(ss, thresholds=thresholds, positive_if=table.provenance.get("positive_if", ">="),
                                    ci=ci)
    return sub.rows


def series_rows(table: Any, windows: set[Any] | None = None) -> list[dict[str, Any]]:
    """One dict per plotted group: ``window`` (ISO text), ``slice`` (its label, ``(all)`` for all
    slices merged), ``n_rows``, each metric column with its ``_lower``/``_upper`` binning bounds
    and ``roc_auc_ci_lower``/``roc_auc_ci_upper`` when present, and ``psi`` when windowed.
    Only the groups of ``windows`` (window starts) when given. Ordered by slice, then window."""
    keys = table.sketches.key_names
    names = [k for k in keys if k != WINDOW]
    metrics = metric_columns(table.columns)
    cols = ["n_rows"] + [c + s for c in metrics for s in ("", "_lower", "_upper") if c + s in table.columns]
    cols += [c for c in ("roc_auc_ci_lower", "roc_auc_ci_upper") if c in table.columns]
    psi = _psi(table, names, windows)
    sources = [(r, slice_label(r, names)) for r in table.rows]
    if names and WINDOW in keys:
        sources += [(r, ALL) for r in _overall_rows(table)]
    if windows is not None:
        sources = [(r, label) for r, label in sources if r.get(WINDOW) in windows]
    out = []
    for r, label in sources:
        d: dict[str, Any] = {"window": _iso(r.get(WINDOW, "")), "slice": label}
        d.update({c: _num(r.get(c)) for c in cols})
        if WINDOW in keys:
            d["psi"] = psi.get(tuple(r[k] for k in keys)) if label != ALL else None
        out.append(d)
    if WINDOW in keys and names:
        _overall_psi(table, out)
    out.sort(key=lambda d: (d["slice"], d["window"]))
    return out


def _overall_psi(table: Any, out: list[dict[str, Any]]) -> None:
    """PSI of all slices merged per window, against the first window."""
    from ...errors import UsageError
    from ...stats import score_drift

    ss = table.sketches.rollup([WINDOW])
    keys = sorted(ss.keys())
    if not keys:
        return
    rb, rw = ss.score_histogram(keys[0])[:2]
    by_window = {}
    for k in keys:
        b, w = ss.score_histogram(k)[:2]
        try:
            by_window[_iso(k[0])] = _num(score_drift(b, w, rb, rw).psi)
        except UsageError:
            by_window[_iso(k[0])] = None
    for d in out:
        if d["slice"] == ALL:
            d["psi"] = by_window.get(d["window"])


def to_csv(rows: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """``(csv text, numeric field names)``: 7 significant digits, empty cells for undefined; the
    header holds the columns' field names (:func:`_field`)."""
    if not rows:
        return "window,slice\n", []
    cols = list(rows[0])
    numeric = [c for c in cols if c not in ("window", "slice")]

    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.7g}"
        text = str(v)
        return '"' + text.replace('"', '""') + '"' if any(ch in text for ch in ',"\n') else text

    lines = [",".join(_field(c) for c in cols)] + [",".join(cell(r[c]) for c in cols) for r in rows]
    return "\n".join(lines) + "\n", [_field(c) for c in numeric]


def alert_points(alerts: dict[str, Any] | None, names: Sequence[str], rows: list[dict[str, Any]]
                 ) -> tuple[str | None, list[dict[str, Any]], list[str]]:
    """``(metric column, [{window, slice, value}], notes)``: the plotted values of every alerted
    slice in the windows of the check's current period (``window`` as ISO text with its offset)."""
    if not alerts:
        return None, [], []
    prov = alerts.get("provenance", {})
    metric = str(prov.get("metric", ""))
    if list(prov.get("by", [])) != list(names):
        return metric, [], [f"alerts were checked by {prov.get('by')}, the table is sliced by {list(names)}: "
                            "alert markers are not drawn (the alert table is shown)"]
    fired = {slice_label(r, names) for r in alerts.get("rows", []) if r.get("alert")}
    start, end = _period(str(prov.get("current", "")))
    points = []
    for d in rows:
        if d["slice"] in fired and d.get(metric) is not None and start is not None and end is not None:
            w = _dt.datetime.fromisoformat(d["window"])
            w = w if w.tzinfo is not None else w.replace(tzinfo=_dt.timezone.utc)
            if start <= w < end:
                points.append({"window": d["window"], "slice": d["slice"], "value": d[metric]})
    return metric, points, []


def _period(text: str) -> tuple[_dt.datetime | None, _dt.datetime | None]:
    """``[a, b)`` as written by the alert table, to datetimes (None when it does not parse)."""
    try:
        a, b = text.strip().lstrip("[").rstrip(")").split(",")
        start, end = _dt.datetime.fromisoformat(a.strip()), _dt.datetime.fromisoformat(b.strip())
    except ValueError:
        return None, None
    utc = _dt.timezone.utc
    return (start if start.tzinfo else start.replace(tzinfo=utc)), (end if end.tzinfo else end.replace(tzinfo=utc))


def slice_order(rows: list[dict[str, Any]], fired: set[str]) -> list[str]:
    """Every slice label: alerted first, then by ROC AUC in its newest window (lowest first)."""
    newest: dict[str, dict[str, Any]] = {}
    for d in rows:
        if d["slice"] != ALL and (d["slice"] not in newest or d["window"] > newest[d["slice"]]["window"]):
            newest[d["slice"]] = d

    def rank(label: str) -> tuple[int, float, str]:
        auc = newest[label].get("roc_auc")
        return (0 if label in fired else 1, math.inf if auc is None else auc, label)

    return sorted(newest, key=rank)


def _field(name: str) -> str:
    """A column name as a plain Vega-Lite field: ``recall@0.5`` -> ``recall_at_0_5`` (a dot would
    name a nested field, in encodings and in the CSV parser alike)."""
    return name.replace("@", "_at_").replace(".", "_").replace("-", "m")


def _window_tip() -> Any:
    import altair as alt

    return alt.Tooltip("utcyearmonthdatehoursminutes(window):T", title="window (UTC)")


def _panel(metric: str, sel: Any, has_slices: bool, alerts: list[dict[str, Any]] | None, bounds: bool,
           axis: Any) -> Any:
    import altair as alt

    title = _TITLES.get(metric, metric)
    f = _field(metric)
    x = alt.X("window:T", title="window start (UTC)", scale=alt.Scale(type="utc"), axis=axis)
    y = alt.Y(f"{f}:Q", title=title, scale=alt.Scale(zero=False))
    tip = [alt.Tooltip("slice:N"), _window_tip(),
           alt.Tooltip(f"{f}:Q", title=title, format=".4f"), alt.Tooltip("n_rows:Q", title="rows", format=",.0f")]
    if bounds:
        tip += [alt.Tooltip(f"{f}_lower:Q", title="binning bound, lower", format=".4f"),
                alt.Tooltip(f"{f}_upper:Q", title="binning bound, upper", format=".4f")]
    ci = metric == "roc_auc"
    if ci:
        tip += [alt.Tooltip("roc_auc_ci_lower:Q", title="CI lower", format=".4f"),
                alt.Tooltip("roc_auc_ci_upper:Q", title="CI upper", format=".4f")]
    base = alt.Chart().encode(x=x)
    layers = []
    everyone = base.transform_filter(alt.datum.slice == ALL)
    one = base.transform_filter(alt.datum.slice == sel)
    if has_slices:
        layers.append(base.transform_filter(alt.datum.slice != ALL).transform_filter(
            f"isValid(datum['{f}'])").mark_area(color="#999999", opacity=0.25).encode(
            y=alt.Y(f"q1({f}):Q", title=title), y2=alt.Y2(f"q3({f}):Q")))
    if ci:
        layers.append(everyone.mark_area(color=PALETTE[0], opacity=0.15).encode(
            y=alt.Y("roc_auc_ci_lower:Q", title=title), y2="roc_auc_ci_upper:Q"))
    layers.append(everyone.mark_line(color=PALETTE[0], point=alt.OverlayMarkDef(color=PALETTE[0])).encode(y=y, tooltip=tip))
    if has_slices:
        if ci:
            layers.append(one.mark_area(color="#000000", opacity=0.12).encode(
                y=alt.Y("roc_auc_ci_lower:Q", title=title), y2="roc_auc_ci_upper:Q"))
        if bounds:
            layers.append(one.mark_rule(color="#000000").encode(
                y=alt.Y(f"{f}_lower:Q", title=title), y2=f"{f}_upper:Q"))
        layers.append(one.mark_line(color="#000000", point=alt.OverlayMarkDef(color="#000000")).encode(y=y, tooltip=tip))
    if alerts:
        # Windows as epoch milliseconds: a named inline dataset is not parsed, and a string is no time.
        points = [{**a, "window": _dt.datetime.fromisoformat(a["window"]).timestamp() * 1000} for a in alerts]
        pts = alt.Chart(alt.InlineData(values=points)).transform_filter(alt.datum.slice == sel).mark_point(
            shape="triangle-down", color="#D55E00", filled=True, size=140).encode(
            x=x, y=alt.Y("value:Q", title=title),
            tooltip=[alt.Tooltip("slice:N"), _window_tip(),
                     alt.Tooltip("value:Q", title=f"{title} (alert)", format=".4f")])
        layers.append(pts)
    if metric == "psi":
        import pandas as pd

        layers.append(alt.Chart(pd.DataFrame({"psi": [0.1, 0.25]})).mark_rule(
            color="#E69F00", strokeDash=[4, 4]).encode(y="psi:Q", tooltip=[alt.Tooltip("psi:Q", title="PSI rule of thumb")]))
    return alt.layer(*layers).properties(title=title, width=BAND_WIDTH, height=BAND_HEIGHT)


def _windowed_chart(rows: list[dict[str, Any]], metrics: list[str], has_slices: bool, options: list[str],
                    alert_metric: str | None, alerts: list[dict[str, Any]]) -> Any:
    import altair as alt

    csv, numeric = to_csv(rows)
    data = alt.InlineData(values=csv, format=alt.CsvDataFormat(
        type="csv", parse={"window": "date", **{c: "number" for c in numeric}}))
    if has_slices:
        sel = alt.param(name="slice", value=options[0] if options else ALL,
                        bind=alt.binding_select(options=options, name="slice (black line): ",
                                                element="#slice-picker"))
    else:
        sel = alt.param(name="slice", value=ALL)
    windows = sorted({r["window"] for r in rows})
    daily = all(w[11:19] in ("", "00:00:00") for w in windows)
    axis = alt.Axis(labelAngle=-30, format="%Y-%m-%d" if daily else "%Y-%m-%d %H:%M", tickCount=min(len(windows), 8))
    panels = [_panel(m, sel, has_slices, alerts if m == alert_metric else None, bool(rows) and m + "_lower" in rows[0],
                     axis)
              for m in metrics + (["psi"] if any(r.get("psi") is not None for r in rows) else [])]
    # The parameter given at construction: add_params() deep-copies every panel (seconds with the data).
    param: Any = sel.param
    return alt.ConcatChart(concat=panels, columns=2, data=data, params=[param])


def _per_slice_chart(rows: list[dict[str, Any]], metric: str, worst: int = 30) -> Any:
    """Without windows: the ``worst`` slices by ``metric`` with their intervals, and its spread."""
    import altair as alt
    import pandas as pd

    title = _TITLES.get(metric, metric)
    df = pd.DataFrame([r for r in rows if r.get(metric) is not None])
    if df.empty:
        return None
    low = df.nsmallest(worst, metric)
    order = list(low["slice"])
    y = alt.Y("slice:N", sort=order, title=None)
    tip = [alt.Tooltip("slice:N"), alt.Tooltip(f"{_field(metric)}:Q", title=title, format=".4f"),
           alt.Tooltip("n_rows:Q", title="rows", format=",.0f")]
    layers = []
    if metric == "roc_auc" and "roc_auc_ci_lower" in low:
        tip += [alt.Tooltip("roc_auc_ci_lower:Q", title="CI lower", format=".4f"),
                alt.Tooltip("roc_auc_ci_upper:Q", title="CI upper", format=".4f")]
        layers.append(alt.Chart(low).mark_rule(color="#999999").encode(
            y=y, x=alt.X("roc_auc_ci_lower:Q", title=title), x2="roc_auc_ci_upper:Q"))
    layers.append(alt.Chart(low).mark_point(filled=True, color=PALETTE[0]).encode(
        y=y, x=alt.X(f"{_field(metric)}:Q", title=title, scale=alt.Scale(zero=False)), tooltip=tip))
    dots = alt.layer(*layers).properties(title=f"The {len(low)} slices with the lowest {title} (grey: CI)",
                                        width=BAND_WIDTH, height=max(BAND_HEIGHT, 14 * len(low)))
    spread = alt.Chart(df).mark_bar(color=PALETTE[0]).encode(
        x=alt.X(f"{_field(metric)}:Q", bin=alt.Bin(maxbins=40), title=title),
        y=alt.Y("count():Q", title="slices"), tooltip=[alt.Tooltip("count():Q", title="slices")],
    ).properties(title=f"{title} across all {len(df):,} slices", width=BAND_WIDTH, height=BAND_HEIGHT)
    return alt.hconcat(dots, spread)


def newest_windows(table: Any, max_groups: int) -> set[Any] | None:
    """The newest windows holding at most ``max_groups`` groups together (at least one window), or
    None when the whole table fits."""
    if len(table.rows) <= max_groups:
        return None
    per_window: dict[Any, int] = {}
    for r in table.rows:
        per_window[r[WINDOW]] = per_window.get(r[WINDOW], 0) + 1
    keep: set[Any] = set()
    total = 0
    for w in sorted(per_window, reverse=True):
        if keep and total + per_window[w] > max_groups:
            break
        keep.add(w)
        total += per_window[w]
    return keep


def monitor_charts(table: Any, alerts: dict[str, Any] | None = None, max_groups: int = MAX_GROUPS
                   ) -> tuple[list[tuple[str, Any]], list[str], list[dict[str, Any]]]:
    """``([(id, chart)], [notes], series rows)`` for a :class:`SliceTable` and, optionally, the
    dict of an :class:`~streameval.monitor.alerts.AlertTable` (its ``to_dict()``).

    At most ``max_groups`` (window, slice) groups are plotted: beyond that (a month of hourly
    windows x 1,000 slices is 720,000 groups, a page of 150 MB), only the newest windows that fit,
    and a note says so."""
    keys = table.sketches.key_names
    names = [k for k in keys if k != WINDOW]
    notes: list[str] = []
    windows = newest_windows(table, max_groups) if WINDOW in keys else None
    if windows is not None:
        all_windows = {r[WINDOW] for r in table.rows}
        notes.append(f"Plots show the newest {len(windows):,} of {len(all_windows):,} windows: the page draws at most "
                     f"{max_groups:,} (window, slice) groups and this result has {len(table.rows):,}. Roll the windows "
                     "up (--window 1w, SketchSet.rollup) or keep fewer slice columns (--by) to see the whole period.")
    rows = series_rows(table, windows)
    metrics = metric_columns(table.columns)
    if WINDOW in keys:
        metric, points, more = alert_points(alerts, names, rows)
        notes += more
        fired = {p["slice"] for p in points}
        options = slice_order(rows, fired) if names else []
        charts = [("monitor", _windowed_chart(rows, metrics, bool(names), options, metric, points))]
        if not any(r.get("psi") is not None for r in rows):
            notes.append("Score drift: no window has scores to compare.")
        return charts, notes, rows
    notes.append("Metrics over windows and score drift (PSI) over time: this result has no time windows "
                 "(evaluate with time= and window=).")
    chart = _per_slice_chart(rows, "roc_auc") if names else None
    return ([("slices", chart)] if chart is not None else []), notes, rows
