"""Report: a sketch's headline metrics with their bounds, plus provenance, and its renderings.

A :class:`Report` is computed once from a sketch (:meth:`Report.from_sketch`) into plain,
JSON-ready values; JSON, Markdown and the terminal table are all renderings of those same values,
so the formats never disagree. The JSON layout is a stable, versioned schema documented in
``docs/report-schema.md`` (``schema_version`` changes only when a field changes meaning or goes
away; new fields may be added within a version).

Every metric is a dict ``{"value", "lower", "upper", "exact"}``: ``lower``/``upper`` bound the exact
value (what scikit-learn computes on the raw rows) when it is not exact; they are ``null`` for the
few metrics without a rigorous interval (PR-AUC by trapezoids, ECE), which then say ``"exact":
false`` and are shown as ``~value``. Undefined values (for example ROC-AUC with one class) are
``null`` in JSON and ``n/a`` on screen, with a note saying why.
"""

from __future__ import annotations

import io
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..errors import InexactThresholdWarning, UndefinedMetricWarning
from ..metrics.estimate import Estimate
from ..sketch.binary import BinarySketch
from .images import ImageOutput

__all__ = ["Report", "SCHEMA_VERSION", "METRIC_LABELS"]

SCHEMA = "streameval.report"
SCHEMA_VERSION = 1
PARTIAL_AUC_MAX_FPR = 0.1
WIDE_BOUNDS = 0.01
"""Binning bounds wider than this get a note saying why and what to do."""
CALIBRATION_BINS = 10

# JSON key -> label on screen, in display order.
METRIC_LABELS: dict[str, str] = {
    "n_rows": "rows",
    "positives": "positives",
    "negatives": "negatives",
    "prevalence": "prevalence",
    "roc_auc": "ROC AUC",
    "partial_roc_auc": f"partial ROC AUC (FPR <= {PARTIAL_AUC_MAX_FPR:g}, McClish)",
    "gini": "Gini",
    "average_precision": "average precision",
    "pr_auc": "PR AUC (trapezoid)",
    "log_loss": "log loss",
    "brier": "Brier score",
    "ece": f"ECE ({CALIBRATION_BINS} bins)",
    "ks": "KS statistic",
    "eer": "equal error rate",
    "best_f1": "best F1",
}
_CONFUSION_COLUMNS = ("tp", "fp", "fn", "tn", "precision", "recall", "f1", "fpr", "accuracy")


def _clean(x: Any) -> Any:
    """Recursively turn NaN/inf into None and NumPy scalars into Python ones (strict JSON)."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _clean_dict(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = _clean(d)
    return out


def _est(e: Estimate) -> dict[str, Any]:
    return _clean_dict({"value": e.value, "lower": e.lower, "upper": e.upper, "exact": bool(e.exact)})


def _exact(x: float) -> dict[str, Any]:
    return _est(Estimate.point(x))


def _approx(x: float, exact: bool) -> dict[str, Any]:
    """A number without a rigorous interval: exact or not, no bounds."""
    if exact:
        return _exact(x)
    return _clean_dict({"value": x, "lower": None, "upper": None, "exact": False})


def _undefined() -> dict[str, Any]:
    return {"value": None, "lower": None, "upper": None, "exact": True}


def wide_bounds_note(label: str, e: Estimate, sketch: BinarySketch) -> str | None:
    """A note saying why ``e``'s binning bounds are wide and what to do, or None if they are not.

    Bounds wider than :data:`WIDE_BOUNDS` mean that many pairs of rows of opposite classes share
    a bin whose scores overlap: the grid is too coarse for these scores, or the scores lie where
    the grid has no resolution (beyond ``2**32`` in magnitude for the default grid, or outside a
    linear grid's range).
    """
    if not (e.width > WIDE_BOUNDS):
        return None
    hint = (
        "use a finer grid (--grid probability:14, or ProbabilityGrid(14) in Python) or one that fits "
        "the scores (--grid linear:LO:HI:BINS with one bin per value for integer scores; --grid float "
        "for logits and margins)"
    )
    return (
        f"{label} is only known to lie in [{e.lower:.6g}, {e.upper:.6g}] (binning bounds {e.width:.3g} "
        f"wide, more than {WIDE_BOUNDS:g}): many rows of both classes share bins of the grid "
        f"{sketch.grid.describe()} whose scores overlap, so their order is unknown; {hint}."
    )


@dataclass(frozen=True)
class CIOptions:
    """Which confidence intervals a report shows.

    Attributes
    ----------
    level : float
        Confidence level in (0, 1).
    auc_method : {"delong", "hanley_mcneil", "bootstrap"}
        ``"bootstrap"`` (a sketch with replicates) also adds the average precision's interval.
    rate_method : {"wilson", "clopper_pearson", "jeffreys", "bootstrap"}
    """

    level: float = 0.95
    auc_method: str = "delong"
    rate_method: str = "wilson"


_CI_RATES = ("precision", "recall", "specificity", "npv", "fpr", "fnr", "accuracy")


def _ci_dict(ci: Any) -> dict[str, Any]:
    return _clean_dict({"lower": ci.ci_lower, "upper": ci.ci_upper, "level": ci.level, "method": ci.method,
                        "widened": bool(ci.widened)})


def compute_metrics(
    sketch: BinarySketch,
    thresholds: Sequence[float] | None = None,
    *,
    positive_if: str = ">=",
    ci: CIOptions | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """The report's metrics, confusion tables and notes, as JSON-ready values.

    Parameters
    ----------
    sketch : BinarySketch
    thresholds : sequence of float, optional
        Thresholds for confusion counts; default ``[0.5]`` when every score lies in [0, 1], none
        otherwise.
    positive_if : {">=", ">"}, default ">="
        The threshold rule for the confusion counts and the thresholds reported (KS, EER, best F1).
    ci : CIOptions, optional
        Add confidence intervals: ROC-AUC (``metrics["roc_auc"]["ci"]``) and the rates at each
        threshold (``confusion[i]["ci"][rate]``), each ``{"lower", "upper", "level", "method",
        "widened"}``.

    Returns
    -------
    metrics : dict
        Keys of :data:`METRIC_LABELS`.
    confusion : list of dict
        One entry per threshold (see ``docs/report-schema.md``).
    notes : list of str
        Why a metric is undefined or inexact (warnings raised while computing).
    """
    notes: list[str] = []
    t = sketch.table()
    P, N = t.P, t.N
    total = P + N
    m: dict[str, Any] = {
        "n_rows": sketch.n_rows,
        "positives": _exact(P),
        "negatives": _exact(N),
        "prevalence": _exact(P / total) if total > 0 else _undefined(),
    }
    pure = bool(len(t) == 0 or t.pure.all())

    def guarded(key: str, fn: Callable[[], dict[str, Any]]) -> None:
        try:
            m[key] = fn()
        except ValueError as exc:
            m[key] = _undefined()
            notes.append(f"{METRIC_LABELS[key]}: {exc}")

    wide: list[str] = []

    def bounded(key: str, e: Estimate) -> dict[str, Any]:
        note = wide_bounds_note(METRIC_LABELS[key], e, sketch)
        if note:
            wide.append(note)
        return _est(e)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        guarded("roc_auc", lambda: bounded("roc_auc", sketch.roc_auc()))
        if ci is not None and isinstance(m.get("roc_auc"), dict) and m["roc_auc"].get("value") is not None:
            from ..stats import roc_auc_ci

            if ci.auc_method == "bootstrap":
                m["roc_auc"]["ci"] = _ci_dict(sketch.ci("roc_auc", method="bootstrap", level=ci.level))
            else:
                m["roc_auc"]["ci"] = _ci_dict(roc_auc_ci(t, ci.level, ci.auc_method, kish=sketch._kish()))
        guarded("partial_roc_auc", lambda: {**_est(sketch.roc_auc(PARTIAL_AUC_MAX_FPR)), "max_fpr": PARTIAL_AUC_MAX_FPR})
        guarded("gini", lambda: _est(sketch.gini()))
        guarded("average_precision", lambda: bounded("average_precision", sketch.average_precision()))
        if ci is not None and ci.auc_method == "bootstrap" and m["average_precision"].get("value") is not None:
            m["average_precision"]["ci"] = _ci_dict(sketch.ci("average_precision", method="bootstrap", level=ci.level))
        guarded("pr_auc", lambda: _approx(sketch.pr_auc(), pure))
        guarded("log_loss", lambda: _exact(sketch.log_loss()))
        guarded("brier", lambda: _exact(sketch.brier_score()))
        for key, name in (("log_loss", "log_loss"), ("brier", "brier_score")):
            if ci is not None and isinstance(m.get(key), dict) and m[key].get("value") is not None:
                m[key]["ci"] = _ci_dict(sketch.ci(name, level=ci.level))

        def ece() -> dict[str, Any]:
            if sketch.counters["n_outside"]:
                raise ValueError("scores outside [0, 1] are not probabilities")
            curve = sketch.calibration_curve(CALIBRATION_BINS)
            return {**_approx(curve.ece, curve.exact), "n_bins": CALIBRATION_BINS}

        guarded("ece", ece)

        def with_threshold(result: Any) -> dict[str, Any]:
            return {**_est(result.value), "threshold": _clean(result.threshold)}

        guarded("ks", lambda: with_threshold(sketch.ks_statistic(positive_if=positive_if)))
        guarded("eer", lambda: with_threshold(sketch.equal_error_rate(positive_if=positive_if)))

        def best_f1() -> dict[str, Any]:
            r = sketch.best_threshold("f1", positive_if=positive_if)
            return {**_est(r.value), "threshold": _clean(r.threshold), "confusion": _confusion(r.confusion)}

        guarded("best_f1", best_f1)

        if thresholds is None:
            thresholds = [0.5] if total > 0 and sketch.counters["n_outside"] == 0 else []
        confusion = []
        for th in thresholds if total > 0 else []:
            c = sketch.confusion(float(th), positive_if=positive_if)
            entry = _confusion(c)
            if ci is not None:
                from ..stats import rate_cis

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UndefinedMetricWarning)
                    if ci.rate_method == "bootstrap":
                        cis = _bootstrap_rates(sketch, c, ci.level, positive_if, notes)
                    else:
                        cis = rate_cis(c, ci.level, ci.rate_method, rates=_CI_RATES, kish=sketch._kish())
                entry["ci"] = {name: _ci_dict(v) for name, v in cis.items()}
            confusion.append(entry)
    for w in caught:
        if issubclass(w.category, (UndefinedMetricWarning, InexactThresholdWarning)):
            text = str(w.message)
            if text not in notes:
                notes.append(text)
    return m, confusion, wide + notes


def _bootstrap_rates(sketch: BinarySketch, c: Any, level: float, positive_if: str, notes: list[str]) -> dict[str, Any]:
    """Bootstrap intervals of the rates at an exact threshold (none, with a note, at an inexact one)."""
    if not c.exact:
        note = (f"threshold {c.requested_threshold:g} cuts a bin: no bootstrap intervals of the rates there "
                f"(add it to the grid as a cut: --grid ...@{c.requested_threshold:g})")
        if note not in notes:
            notes.append(note)
        return {}
    return {name: sketch.ci(name, method="bootstrap", level=level, threshold=c.requested_threshold,
                            positive_if=positive_if) for name in (*_CI_RATES, "f1")}


def _confusion(c: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _clean_dict(c.to_dict())


@dataclass
class Report(ImageOutput):
    """The result of an evaluation: the sketch, its metrics with bounds, and provenance.

    Attributes
    ----------
    sketch : BinarySketch
        The merged sketch (save it with ``report.sketch.save(path)`` to merge or re-report later).
    metrics : dict
        Metric name -> ``{"value", "lower", "upper", "exact", ...}`` (see ``docs/report-schema.md``).
    confusion : list of dict
        Confusion counts and rates at each requested threshold.
    provenance : dict
        Where the numbers come from: source, rows read and skipped, grid, version, timing.
    notes : list of str
        Why a metric is undefined or inexact.
    """

    sketch: BinarySketch
    metrics: dict[str, Any]
    confusion: list[dict[str, Any]] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_sketch(
        cls,
        sketch: BinarySketch,
        *,
        thresholds: Sequence[float] | None = None,
        provenance: dict[str, Any] | None = None,
        positive_if: str = ">=",
        ci: CIOptions | None = None,
    ) -> "Report":
        """Compute the report of a sketch.

        Parameters
        ----------
        sketch : BinarySketch
        thresholds : sequence of float, optional
            Thresholds for confusion counts (positive iff ``score >= threshold``). Default
            ``[0.5]`` when the scores are probabilities (all in [0, 1]), else none.
        provenance : dict, optional
            Source information to carry; the grid, row counters and version are filled in.
        positive_if : {">=", ">"}, default ">="
            Threshold rule: positive iff ``score >= threshold`` or ``score > threshold``.
        ci : CIOptions, optional
            Confidence intervals to add (see :func:`compute_metrics`).

        Returns
        -------
        Report
        """
        from .. import __version__

        metrics, confusion, notes = compute_metrics(sketch, thresholds, positive_if=positive_if, ci=ci)
        prov = dict(provenance or {})
        prov["positive_if"] = positive_if
        c = sketch.counters
        prov.setdefault("source", None)
        prov.setdefault("rows_read", sketch.n_rows)
        prov.setdefault("rows_skipped", {"nan_score": int(c["n_nan"])})
        prov["rows_zero_weight"] = int(c["n_zero_weight"])
        prov["rows_outside_0_1"] = int(c["n_outside"])
        prov["weighted"] = bool(c["weighted"])
        prov["grid"] = sketch.grid.spec()
        prov["grid_description"] = sketch.grid.describe()
        prov["occupied_bins"] = sketch.n_occupied_bins
        prov.setdefault("streameval_version", __version__)
        return cls(sketch, metrics, confusion, _clean(prov), notes)

    # -- renderings ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values, in the schema of ``docs/report-schema.md``."""
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "metrics": self.metrics,
            "thresholds": self.confusion,
            "provenance": self.provenance,
            "notes": list(self.notes),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as strict JSON (no NaN: undefined values are ``null``)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def rows(self) -> list[tuple[str, str]]:
        """``(label, formatted value)`` pairs for the headline metrics, in display order."""
        out = []
        for key, label in METRIC_LABELS.items():
            if key not in self.metrics:
                continue
            v = self.metrics[key]
            text = format_metric(v)
            if isinstance(v, dict) and isinstance(v.get("ci"), dict):
                text += "  " + format_ci(v["ci"])
            if isinstance(v, dict) and v.get("threshold") is not None:
                text += f"  at threshold {_num(v['threshold'])}"
            out.append((label, text))
        return out

    def confusion_cells(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """Per threshold: its text, then ``(column, value, CI text or "")`` for each of
        :data:`_CONFUSION_COLUMNS` (the CI text is ``lower-upper`` when an interval was asked for)."""
        out = []
        for c in self.confusion:
            th = _num(c["requested_threshold"])
            if not c["exact"]:  # counts of the nearest exact threshold; the notes give the bounds
                th += f" (~{_num(c['threshold'])})"
            cells = []
            for name in _CONFUSION_COLUMNS:
                band = (c.get("ci") or {}).get(name)
                ci = f"{band['lower']:.4g}-{band['upper']:.4g}" if band and band.get("lower") is not None else ""
                cells.append((name, _num(c.get(name)), ci))
            out.append((th, cells))
        return out

    def confusion_rows(self) -> list[list[str]]:
        """One row of formatted cells per threshold: threshold, then :data:`_CONFUSION_COLUMNS`
        (each value followed by its CI in parentheses when one was asked for)."""
        return [[th, *(f"{v} ({ci})" if ci else v for _, v, ci in cells)] for th, cells in self.confusion_cells()]

    def _rate_ci_label(self) -> str:
        for c in self.confusion:
            for band in (c.get("ci") or {}).values():
                if isinstance(band, dict) and band.get("level") is not None:
                    return f"{100 * band['level']:g}% CI, {band.get('method', '')}".rstrip(", ")
        return "CI"

    def _confusion_tables(self, width: int) -> list[Any]:
        """The confusion counts as one wide table when it fits ``width`` columns; otherwise (many
        columns, or intervals that would wrap inside numbers) one narrow table per threshold with
        a row per count or rate, so no number is ever cut."""
        from rich.table import Table

        rule = self.provenance.get("positive_if", ">=")
        title = f"confusion at thresholds (positive iff score {rule} threshold)"
        cells = self.confusion_cells()
        has_ci = any(ci for _, row in cells for _, _, ci in row)
        widths = [max(len("threshold"), *(len(th) for th, _ in cells))]
        for i, name in enumerate(_CONFUSION_COLUMNS):
            widths.append(max(len(name), *(max(len(row[i][1]), len(row[i][2]) + 2) for _, row in cells)))
        if sum(widths) + 3 * len(widths) + 1 <= width:
            ct = Table(title=title, header_style="bold")
            for name, w in zip(("threshold", *_CONFUSION_COLUMNS), widths, strict=True):
                ct.add_column(name, justify="right", min_width=w, no_wrap=True)
            for th, row in cells:
                ct.add_row(th, *(f"{v}\n({ci})" if ci else v for _, v, ci in row))
            return [ct]
        tables = []
        for th, row in cells:
            t = Table(title=f"confusion at threshold {th} (positive iff score {rule} threshold)", header_style="bold")
            t.add_column("", no_wrap=True)
            t.add_column("value", justify="right", no_wrap=True)
            if has_ci:
                t.add_column(self._rate_ci_label(), justify="right", no_wrap=True)
            for name, v, ci in row:
                t.add_row(name, v, *([ci] if has_ci else []))
            tables.append(t)
        return tables

    def provenance_rows(self) -> list[tuple[str, str]]:
        """``(label, text)`` pairs summarizing provenance."""
        p = self.provenance
        out = []
        if p.get("source"):
            out.append(("source", str(p["source"])))
        for key in ("score", "label", "weight", "pos_label", "where", "sql"):
            if p.get(key) is not None:
                out.append((key, str(p[key])))
        out.append(("rows read", f"{p.get('rows_read', 0):,}"))
        skipped = {k: v for k, v in (p.get("rows_skipped") or {}).items() if v}
        if skipped:
            out.append(("rows skipped", ", ".join(f"{v:,} ({k.replace('_', ' ')})" for k, v in skipped.items())))
        out.append(("grid", str(p.get("grid_description"))))
        if p.get("elapsed_seconds") is not None:
            compiling = p.get("compile_seconds") or 0.0
            busy = p["elapsed_seconds"] - compiling
            rate = p.get("rows_read", 0) / busy if busy > 0 else 0
            text = f"{p['elapsed_seconds']:.2f} s ({rate:,.0f} rows/s"
            if compiling >= 0.05:  # a first run on this machine: say so, and give the steady-state speed
                text += f" after {compiling:.1f} s compiling kernels, a one-off: later runs load them from the cache"
            out.append(("time", text + ")"))
        out.append(("streameval", str(p.get("streameval_version"))))
        return out

    def to_html(self, path: str | os.PathLike[str] | None = None, title: str | None = None) -> str:
        """The report as one self-contained HTML page with its plots (see docs/html-report.md).

        Parameters
        ----------
        path : path-like, optional
            Write the page there (atomically) as well as returning it.
        title : str, optional
            Page title (default: "streameval report" and the source).

        Returns
        -------
        str
            The HTML document; it makes no network request when opened (the Vega-Lite
            JavaScript is embedded, about 1 MB).

        Raises
        ------
        ImportError
            Altair or vl-convert-python is missing (``pip install "streameval[html]"``).
        """
        from .html import report_html

        return report_html(self, path, title)

    def to_markdown(self) -> str:
        """The report as GitHub-flavoured Markdown."""
        lines = ["## streameval report", "", "| metric | value |", "|---|---|"]
        lines += [f"| {label} | {text} |" for label, text in self.rows()]
        if self.confusion:
            head = ["threshold", *_CONFUSION_COLUMNS]
            lines += ["", "### Confusion at thresholds", "", "| " + " | ".join(head) + " |",
                      "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(r) + " |" for r in self.confusion_rows()]
        lines += ["", "### Provenance", "", "| | |", "|---|---|"]
        lines += [f"| {k} | {_md_escape(v)} |" for k, v in self.provenance_rows()]
        if self.notes:
            lines += ["", "### Notes", ""] + [f"- {n}" for n in self.notes]
        lines.append("")
        lines.append(
            "`value [lower, upper]`: binning bounds, which contain the exact value computed on all rows "
            "(not a confidence interval); `(95% CI ...)`: sampling confidence interval; `~` marks a value "
            "without bounds."
        )
        return "\n".join(lines) + "\n"

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.table import Table

        t = Table(title="streameval report", show_header=True, header_style="bold")
        t.add_column("metric")
        t.add_column("value [binning bounds]", overflow="fold")
        for label, text in self.rows():
            t.add_row(label, text)
        yield t
        if self.confusion:
            yield from self._confusion_tables(options.max_width)
        pt = Table(title="provenance", show_header=False)
        pt.add_column("")
        pt.add_column("", overflow="fold")
        for k, v in self.provenance_rows():
            pt.add_row(k, v)
        yield pt
        for n in self.notes:
            yield f"[yellow]note:[/yellow] {n}"

    def to_text(self, width: int = 100) -> str:
        """The terminal rendering as plain text (no colours)."""
        from rich.console import Console

        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        console.print(self)
        return console.export_text()

    def __str__(self) -> str:
        return self.to_text()


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _num(x: Any) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    if isinstance(x, float):  # weighted counts: whole units are enough on screen (JSON has all digits)
        return f"{x:,.0f}" if abs(x) >= 1e3 else f"{x:.6g}"
    return str(x)


def format_ci(ci: dict[str, Any]) -> str:
    """``(95% CI 0.905-0.919, DeLong)`` from a report's ``ci`` entry; the CI is never called bounds."""
    if ci.get("lower") is None or ci.get("upper") is None:
        return f"({100 * ci.get('level', 0.95):g}% CI n/a)"
    return f"({100 * ci['level']:g}% CI {_num(ci['lower'])}-{_num(ci['upper'])}, {ci['method']})"


def format_metric(v: Any) -> str:
    """Format one metric entry: ``value`` when exact, ``value [lower, upper]`` or ``~value`` otherwise."""
    if not isinstance(v, dict):
        return _num(v)
    value = v.get("value")
    if value is None:
        return "n/a"
    if v.get("exact", True):
        return _num(value)
    if v.get("lower") is None or v.get("upper") is None:
        return f"~{_num(value)}"
    return f"{_num(value)} [{_num(v['lower'])}, {_num(v['upper'])}]"
