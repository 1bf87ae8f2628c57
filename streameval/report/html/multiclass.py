"""The HTML page of a multiclass report: metric table, per-class table, the confusion matrix as a
heatmap (counts and row-normalised), and per-class one-vs-rest ROC and precision-recall curves."""

from __future__ import annotations

from typing import Any

import numpy as np

from .charts import HEIGHT, PALETTE, WIDTH, _fmt, _frame
from .data import downsample

__all__ = ["multiclass_charts", "multiclass_tables"]

MAX_CURVE_CLASSES = 20  # beyond this, per-class curves would be unreadable: the heatmap and table remain
POINTS_PER_CLASS = 300


def _heatmap(report: Any, normalize: bool) -> Any:
    import altair as alt

    classes = [str(c) for c in report.provenance["classes"]]
    cm = np.asarray([[np.nan if v is None else float(v) for v in row] for row in report.confusion_matrix])
    rows = cm.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        shown = np.where(rows > 0, cm / rows, 0.0) if normalize else cm
    t, p = np.meshgrid(np.arange(len(classes)), np.arange(len(classes)), indexing="ij")
    df = _frame({"true": np.array(classes)[t.ravel()], "predicted": np.array(classes)[p.ravel()],
                 "value": shown.ravel(), "count": cm.ravel()})
    title = "Confusion matrix, row-normalised (recall on the diagonal)" if normalize else "Confusion matrix (counts)"
    base = alt.Chart(df).encode(
        x=alt.X("predicted:N", sort=classes, title="predicted class"),
        y=alt.Y("true:N", sort=classes, title="true class"))
    rect = base.mark_rect().encode(
        color=alt.Color("value:Q", scale=alt.Scale(scheme="blues"), title="fraction" if normalize else "rows"),
        tooltip=[alt.Tooltip("true:N"), alt.Tooltip("predicted:N"), _fmt("count", "rows", ",.6~g"),
                 _fmt("value", "fraction of the true class" if normalize else "rows", ".4~g")])
    layers = [rect]
    if len(classes) <= 15:
        layers.append(base.mark_text(fontSize=10).encode(
            text=alt.Text("value:Q", format=".2f" if normalize else ",.0f"),
            color=alt.condition(alt.datum.value > (0.5 if normalize else float(np.nanmax(cm)) / 2),
                                alt.value("white"), alt.value("black"))))
    side = max(WIDTH, min(700, 28 * len(classes)))
    return alt.layer(*layers).properties(title=title, width=side, height=side)


def _ovr_curves(report: Any) -> tuple[Any, Any] | None:
    import altair as alt
    import pandas as pd

    sketch = report.sketch
    classes = list(sketch.classes)
    if len(classes) > MAX_CURVE_CLASSES:
        return None
    roc_parts, pr_parts = [], []
    for c in classes:
        ovr = sketch.one_vs_rest(c)
        if ovr.positive_weight <= 0 or ovr.negative_weight <= 0:
            continue
        fpr, tpr, thr = ovr.roc_curve(drop_intermediate=False)
        i = downsample(fpr.shape[0], POINTS_PER_CLASS)
        roc_parts.append(_frame({"fpr": fpr[i], "tpr": tpr[i], "threshold": thr[i], "class": np.full(i.shape[0], str(c))}))
        prec, rec, thr2 = ovr.precision_recall_curve()
        j = downsample(thr2.shape[0], POINTS_PER_CLASS)
        pr_parts.append(_frame({"precision": prec[j], "recall": rec[j], "threshold": thr2[j],
                                "class": np.full(j.shape[0], str(c))}))
    if not roc_parts:
        return None
    colour = alt.Color("class:N", scale=alt.Scale(range=PALETTE * 3), title="class")
    tip = [alt.Tooltip("class:N"), _fmt("threshold", "threshold", ".6~g")]
    roc = alt.Chart(pd.concat(roc_parts)).mark_line().encode(
        x=alt.X("fpr:Q", title="false positive rate", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("tpr:Q", title="true positive rate", scale=alt.Scale(domain=[0, 1])), color=colour,
        tooltip=[*tip, _fmt("fpr", "FPR"), _fmt("tpr", "TPR")],
    ).properties(title="One-vs-rest ROC per class", width=WIDTH, height=HEIGHT)
    pr = alt.Chart(pd.concat(pr_parts)).mark_line().encode(
        x=alt.X("recall:Q", title="recall", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("precision:Q", title="precision", scale=alt.Scale(domain=[0, 1])), color=colour,
        tooltip=[*tip, _fmt("recall", "recall"), _fmt("precision", "precision")],
    ).properties(title="One-vs-rest precision-recall per class", width=WIDTH, height=HEIGHT)
    return roc, pr


def multiclass_charts(report: Any) -> tuple[list[tuple[str, Any]], list[str]]:
    """``([(id, chart), ...], [missing-plot messages])`` for a multiclass report."""
    charts = [("confusion", _heatmap(report, False)), ("confusion_normalised", _heatmap(report, True))]
    missing = []
    if report.sketch.mode != "scores":
        missing.append("Per-class ROC and precision-recall curves: this sketch was fed hard predictions, not scores.")
    else:
        curves = _ovr_curves(report)
        if curves is None:
            missing.append(f"Per-class curves: shown for up to {MAX_CURVE_CLASSES} classes with both classes present.")
        else:
            charts += [("ovr_roc", curves[0]), ("ovr_pr", curves[1])]
    return charts, missing


def multiclass_tables(report: Any) -> list[str]:
    """The metric and per-class tables as HTML (the same cells as the terminal report)."""
    from .page import _table

    out = ["<h2>Summary</h2>",
           _table([[k, report._cell(v)] for k, v in report.metrics.items()], ["metric", "value [binning bounds]"], "summary"),
           "<h2>Per class (one-vs-rest)</h2>"]
    keys = ("class", "precision", "recall", "f1", "support", "roc_auc", "average_precision")
    out.append(_table([[report._cell(r[k]) for k in keys] for r in report.per_class], list(keys), "per-class"))
    return out
