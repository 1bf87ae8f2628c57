"""The report's charts, as Altair (Vega-Lite) specifications.

Colours are the Okabe-Ito palette (safe for the common colour-vision deficiencies). Every curve
has a tooltip with the threshold and the metrics at that point.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import data

__all__ = ["PALETTE", "binary_charts"]

PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
WIDTH, HEIGHT = 320, 260


def _frame(d: dict[str, Any]) -> Any:
    import pandas as pd

    return pd.DataFrame({k: np.asarray(v) for k, v in d.items() if np.ndim(v) == 1})


def _fmt(field: str, title: str, fmt: str = ".4~g") -> Any:
    import altair as alt

    return alt.Tooltip(field, title=title, format=fmt)


def _sweep_tooltip() -> list[Any]:
    return [_fmt("threshold", "threshold", ".6~g"), _fmt("tpr", "TPR (recall)"), _fmt("fpr", "FPR"),
            _fmt("precision", "precision"), _fmt("f1", "F1"), _fmt("tp", "tp", ",.6~g"), _fmt("fp", "fp", ",.6~g")]


def roc(sw: Any, auc_text: str, ci: tuple[float, str] | None = None) -> Any:
    """ROC curve with the chance diagonal, the binning band and, with ``ci = (level, method)``,
    the pointwise confidence band of the TPR (columns ``tpr_ci_lower``/``tpr_ci_upper`` of ``sw``).

    The binning band: between two consecutive exact points (bin edges) the exact curve of all rows
    is a monotone staircase, so it lies in the box spanned by the two points; the band is the union
    of those boxes (visible only where a bin holds many rows of both classes).
    """
    import altair as alt

    x = alt.X("fpr:Q", title="false positive rate", scale=alt.Scale(domain=[0, 1]))
    layers = []
    if ci is not None:
        layers.append(alt.Chart(sw).mark_area(color=PALETTE[5], opacity=0.35).encode(
            x=x, y=alt.Y("tpr_ci_lower:Q", title="true positive rate (recall)"), y2="tpr_ci_upper:Q",
            tooltip=[_fmt("threshold", "threshold", ".6~g"), _fmt("tpr_ci_lower", f"TPR {ci[0]:.0%} CI lower"),
                     _fmt("tpr_ci_upper", f"TPR {ci[0]:.0%} CI upper")]))
    f, t = np.r_[0.0, sw.fpr.to_numpy()], np.r_[0.0, sw.tpr.to_numpy()]  # from the (0, 0) corner
    box = _frame({"fpr": f, "box_lower": t, "box_upper": np.r_[t[1:], t[-1:]]})
    layers.append(alt.Chart(box).mark_area(color="#999999", opacity=0.5, interpolate="step-after").encode(
        x=x, y=alt.Y("box_lower:Q", title="true positive rate (recall)"), y2="box_upper:Q"))
    base = alt.Chart(sw).mark_line(color=PALETTE[0], point=alt.OverlayMarkDef(size=12, opacity=0.01)).encode(
        x=alt.X("fpr:Q", title="false positive rate", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("tpr:Q", title="true positive rate (recall)", scale=alt.Scale(domain=[0, 1])),
        order="threshold_rank:Q", tooltip=_sweep_tooltip())
    chance = alt.Chart(_frame({"x": np.array([0.0, 1.0]), "y": np.array([0.0, 1.0])})).mark_line(
        color="#888888", strokeDash=[4, 4]).encode(x="x:Q", y="y:Q")
    sub = ["grey: binning band (the exact curve lies inside)"]
    if ci is not None:
        sub.append(f"light blue: {ci[0]:.0%} CI of the TPR at each threshold ({ci[1]}, pointwise)")
    return alt.layer(chance, *layers, base).properties(
        title=alt.TitleParams(f"ROC curve ({auc_text})", subtitle=sub, subtitleFontSize=10), width=WIDTH, height=HEIGHT)


def pr(sw: Any, prevalence: float, ap_text: str) -> Any:
    import altair as alt

    curve = alt.Chart(sw).mark_line(color=PALETTE[1], point=alt.OverlayMarkDef(size=12, opacity=0.01)).encode(
        x=alt.X("recall:Q", title="recall", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("precision:Q", title="precision", scale=alt.Scale(domain=[0, 1])),
        order="threshold_rank:Q", tooltip=_sweep_tooltip())
    base = alt.Chart(_frame({"x": np.array([0.0, 1.0]), "y": np.array([prevalence, prevalence])})).mark_line(
        color="#888888", strokeDash=[4, 4]).encode(x="x:Q", y="y:Q")
    r = np.linspace(0.01, 1, 100)
    iso = []
    for f in (0.2, 0.4, 0.6, 0.8):
        with np.errstate(divide="ignore", invalid="ignore"):
            p = f * r / (2 * r - f)
        ok = np.isfinite(p) & (p > 0) & (p <= 1)
        iso.append(_frame({"recall": r[ok], "precision": p[ok], "f1": np.full(ok.sum(), f)}))
    import pandas as pd

    lines = alt.Chart(pd.concat(iso)).mark_line(color="#BBBBBB", strokeWidth=0.8).encode(
        x="recall:Q", y="precision:Q", detail="f1:N", tooltip=[_fmt("f1", "iso-F1")])
    return (lines + base + curve).properties(
        title=f"Precision-recall ({ap_text}; dashed: prevalence {prevalence:.3g})", width=WIDTH, height=HEIGHT)


def sweep_chart(sw: Any, marks: list[float]) -> Any:
    import altair as alt

    long = sw.melt(id_vars=["threshold"], value_vars=["precision", "recall", "f1", "fpr", "alert_rate"],
                   var_name="metric", value_name="value")
    chart = alt.Chart(long).mark_line().encode(
        x=alt.X("threshold:Q", title="threshold (score units)"),
        y=alt.Y("value:Q", title="rate", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("metric:N", scale=alt.Scale(range=PALETTE), title=None),
        tooltip=[_fmt("threshold", "threshold", ".6~g"), alt.Tooltip("metric:N"), _fmt("value", "value")])
    layers = [chart]
    if marks:
        rule = alt.Chart(_frame({"threshold": np.asarray(marks, dtype=float)})).mark_rule(
            color="#000000", strokeDash=[2, 2]).encode(x="threshold:Q", tooltip=[_fmt("threshold", "chosen threshold", ".6~g")])
        layers.append(rule)
    return alt.layer(*layers).properties(title="Threshold sweep (dotted: chosen thresholds)", width=WIDTH, height=HEIGHT)


def far_frr(sw: Any, eer: Any) -> Any:
    import altair as alt

    long = sw.assign(FAR=sw.fpr, FRR=sw.fnr).melt(id_vars=["threshold"], value_vars=["FAR", "FRR"],
                                                  var_name="rate", value_name="value")
    chart = alt.Chart(long).mark_line().encode(
        x=alt.X("threshold:Q", title="threshold (score units)"), y=alt.Y("value:Q", title="error rate"),
        color=alt.Color("rate:N", scale=alt.Scale(range=PALETTE[:2]), title=None),
        tooltip=[_fmt("threshold", "threshold", ".6~g"), alt.Tooltip("rate:N"), _fmt("value", "rate")])
    point = alt.Chart(_frame({"threshold": np.array([eer.threshold]), "value": np.array([float(eer.value)])})).mark_point(
        color="#000000", size=80, filled=True).encode(x="threshold:Q", y="value:Q",
                                                      tooltip=[_fmt("threshold", "EER threshold", ".6~g"), _fmt("value", "EER")])
    return (chart + point).properties(title=f"FAR / FRR (EER {float(eer.value):.4g})", width=WIDTH, height=HEIGHT)


def det_chart(dt: Any) -> Any:
    import altair as alt

    # Down to the 1e-6 the rates are clipped at (rare-event FPRs), up to 1 - 1e-6; labels that
    # would overlap are dropped by the axis.
    ticks = np.array([1e-6, 1e-5, 1e-4, 0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 0.999, 0.9999, 0.99999])
    from scipy.stats import norm

    values = [float(v) for v in norm.ppf(ticks)]
    labels = {f"{v:.6f}": f"{t:g}" for v, t in zip(values, ticks, strict=True)}
    expr = " : ".join(f"abs(datum.value - {v}) < 1e-6 ? '{labels[f'{v:.6f}']}'" for v in values) + " : ''"
    axis = alt.Axis(values=values, labelExpr=expr, labelOverlap=True)
    return alt.Chart(dt).mark_line(color=PALETTE[2], point=alt.OverlayMarkDef(size=12, opacity=0.01)).encode(
        x=alt.X("x:Q", title="false positive rate (normal deviate scale)", axis=axis),
        y=alt.Y("y:Q", title="false negative rate (normal deviate scale)", axis=axis),
        tooltip=[_fmt("threshold", "threshold", ".6~g"), _fmt("fpr", "FPR"), _fmt("fnr", "FNR")],
    ).properties(title="DET curve", width=WIDTH, height=HEIGHT)


def ks_chart(sw: Any, ks: Any) -> Any:
    import altair as alt

    cdf = sw.assign(positives=1 - sw.tpr, negatives=1 - sw.fpr).melt(
        id_vars=["threshold"], value_vars=["positives", "negatives"], var_name="class", value_name="cdf")
    chart = alt.Chart(cdf).mark_line().encode(
        x=alt.X("threshold:Q", title="score"), y=alt.Y("cdf:Q", title="cumulative fraction below the score"),
        color=alt.Color("class:N", scale=alt.Scale(range=PALETTE[:2]), title=None),
        tooltip=[_fmt("threshold", "score", ".6~g"), alt.Tooltip("class:N"), _fmt("cdf", "CDF")])
    rule = alt.Chart(_frame({"threshold": np.array([ks.threshold])})).mark_rule(color="#000000").encode(
        x="threshold:Q", tooltip=[_fmt("threshold", "KS at score", ".6~g")])
    return (chart + rule).properties(title=f"KS plot (max gap {float(ks.value):.4g})", width=WIDTH, height=HEIGHT)


def gains_chart(sw: Any) -> Any:
    import altair as alt

    gains = alt.Chart(sw).mark_line(color=PALETTE[0]).encode(
        x=alt.X("alert_rate:Q", title="fraction of rows flagged (by score)", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("recall:Q", title="fraction of positives captured", scale=alt.Scale(domain=[0, 1])),
        tooltip=[_fmt("threshold", "threshold", ".6~g"), _fmt("alert_rate", "flagged"), _fmt("recall", "captured"),
                 _fmt("lift", "lift")])
    diag = alt.Chart(_frame({"x": np.array([0.0, 1.0]), "y": np.array([0.0, 1.0])})).mark_line(
        color="#888888", strokeDash=[4, 4]).encode(x="x:Q", y="y:Q")
    lift = alt.Chart(sw).mark_line(color=PALETTE[1]).encode(
        x=alt.X("alert_rate:Q", title="fraction of rows flagged (by score)", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("lift:Q", title="lift (precision / prevalence)"),
        tooltip=[_fmt("threshold", "threshold", ".6~g"), _fmt("alert_rate", "flagged"), _fmt("lift", "lift")])
    return alt.hconcat((diag + gains).properties(title="Cumulative gains", width=WIDTH, height=HEIGHT),
                       lift.properties(title="Lift", width=WIDTH, height=HEIGHT))


def distribution_chart(dist: Any) -> Any:
    import altair as alt

    charts = []
    for axis in ("linear", "log"):
        part = dist[dist["axis"] == axis]
        if part.empty:
            continue
        scale = alt.Scale(type="log") if axis == "log" else alt.Scale()
        # A rectangle per display bin, from 0 to its weight: with x and x2 given, a bar mark
        # would take y as a position and draw a small square there.
        charts.append(alt.Chart(part).mark_rect(opacity=0.6).encode(
            x=alt.X("left:Q", title=f"score ({axis} axis)", scale=scale), x2="right:Q",
            y=alt.Y("weight:Q", title="rows (weight)"), y2=alt.datum(0),
            color=alt.Color("cls:N", scale=alt.Scale(range=PALETTE[:2]), title=None),
            tooltip=[alt.Tooltip("cls:N", title="class"), _fmt("left", "from", ".4~g"), _fmt("right", "to", ".4~g"),
                     _fmt("weight", "rows", ",.6~g")],
        ).properties(title=f"Score distribution per class ({axis})", width=WIDTH, height=HEIGHT))
    return alt.hconcat(*charts)


def calibration_chart(cal: dict[str, Any]) -> Any:
    import altair as alt

    df = _frame({k: cal[k] for k in ("prob_pred", "prob_true", "weight")})
    diag = alt.Chart(_frame({"x": np.array([0.0, 1.0]), "y": np.array([0.0, 1.0])})).mark_line(
        color="#888888", strokeDash=[4, 4]).encode(x="x:Q", y="y:Q")
    points = alt.Chart(df).mark_line(color=PALETTE[2], point=True).encode(
        x=alt.X("prob_pred:Q", title="mean predicted probability", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("prob_true:Q", title="observed fraction of positives", scale=alt.Scale(domain=[0, 1])),
        tooltip=[_fmt("prob_pred", "predicted"), _fmt("prob_true", "observed"), _fmt("weight", "rows", ",.6~g")])
    return (diag + points).properties(title=f"Calibration (ECE {cal['ece']:.4g})", width=WIDTH, height=HEIGHT)


def binary_charts(sketch: Any, report: Any, thresholds: list[float]) -> tuple[list[tuple[str, Any]], list[str]]:
    """``([(id, chart), ...], [missing-plot messages])`` for a binary report."""
    charts: list[tuple[str, Any]] = []
    missing: list[str] = []
    dist = _frame(data.score_distribution(sketch))
    if not dist.empty:
        charts.append(("distribution", distribution_chart(dist)))
    why = data.both_classes(sketch)
    if why is not None:
        missing.append(f"ROC, precision-recall, threshold sweep, FAR/FRR, DET, KS and gains plots: {why}.")
    else:
        sw = _frame(data.sweep(sketch))
        sw["threshold_rank"] = np.arange(len(sw))
        m = report.metrics
        auc = m.get("roc_auc", {}) or {}
        ap = m.get("average_precision", {}) or {}
        prevalence = float(sketch.positive_weight) / float(sketch.positive_weight + sketch.negative_weight)
        ci = None
        if isinstance(auc.get("ci"), dict):
            level = float(auc["ci"].get("level", 0.95))
            sw["tpr_ci_lower"], sw["tpr_ci_upper"] = data.tpr_ci(sw["tp"].to_numpy(), float(sketch.positive_weight), level)
            ci = (level, "Wilson")
        charts.append(("roc", roc(sw, f"AUC {auc.get('value', float('nan')):.4g}", ci)))
        charts.append(("pr", pr(sw, prevalence, f"AP {ap.get('value', float('nan')):.4g}")))
        charts.append(("sweep", sweep_chart(sw, thresholds)))
        charts.append(("far_frr", far_frr(sw, sketch.equal_error_rate())))
        charts.append(("det", det_chart(_frame(data.det(sketch)))))
        charts.append(("ks", ks_chart(sw, sketch.ks_statistic())))
        charts.append(("gains", gains_chart(sw)))
    if sketch.counters["n_outside"] == 0 and sketch.n_rows > 0:
        charts.append(("calibration", calibration_chart(data.calibration(sketch))))
    else:
        missing.append("Calibration: scores outside [0, 1] are not probabilities.")
    return charts, missing
