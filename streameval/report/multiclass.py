"""MulticlassReport: a K-class evaluation's metrics, per-class table and confusion matrix.

Computed once from a :class:`~streameval.MulticlassSketch` into JSON-ready values; JSON, Markdown
and the terminal are renderings of the same values. AUC and AP come with binning bounds
(``lower``/``upper``), as in the binary report.
"""

from __future__ import annotations

import io
import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import UndefinedMetricWarning
from .images import ImageOutput

__all__ = ["MulticlassReport", "MULTICLASS_SCHEMA_VERSION"]

MULTICLASS_SCHEMA = "streameval.sketch.multiclass"
MULTICLASS_SCHEMA_VERSION = 1


def _v(x: Any) -> Any:
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    return None if isinstance(x, float) and not math.isfinite(x) else x


def _est(e: Any) -> dict[str, Any]:
    return {"value": _v(float(e.value)), "lower": _v(float(e.lower)), "upper": _v(float(e.upper)),
            "exact": bool(e.lower == e.upper)}


@dataclass
class MulticlassReport(ImageOutput):
    """Metrics of a multiclass sketch.

    Attributes
    ----------
    sketch : MulticlassSketch
    metrics : dict
        ``accuracy``, ``balanced_accuracy``, ``top_2_accuracy``, ``cohen_kappa``,
        ``matthews_corrcoef``, ``log_loss``, ``brier``, ``roc_auc_ovr_macro``,
        ``roc_auc_ovr_weighted``, ``roc_auc_ovr_micro``, ``roc_auc_ovo_macro``,
        ``average_precision_macro`` (the AUC/AP entries as ``{"value", "lower", "upper", "exact"}``).
    per_class : list of dict
        One row per class: ``class``, ``precision``, ``recall``, ``f1``, ``support``, ``roc_auc``
        (one-vs-rest, with bounds), ``average_precision``.
    confusion_matrix : list of list
        Counts, rows = true class, columns = predicted class (argmax).
    provenance : dict
    notes : list of str
    """

    sketch: Any
    metrics: dict[str, Any]
    per_class: list[dict[str, Any]]
    confusion_matrix: list[list[float]]
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_sketch(cls, sketch: Any, *, provenance: dict[str, Any] | None = None) -> "MulticlassReport":
        """Compute the report of a :class:`~streameval.MulticlassSketch` with scores."""
        notes: list[str] = []
        m: dict[str, Any] = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")

            def put(key: str, fn: Any, est: bool = False) -> None:
                try:
                    value = fn()
                    m[key] = _est(value) if est else _v(float(value))
                except ValueError as exc:
                    m[key] = None
                    notes.append(f"{key}: {exc}")

            put("accuracy", sketch.accuracy)
            put("balanced_accuracy", sketch.balanced_accuracy)
            if sketch.n_classes > 2:
                put("top_2_accuracy", lambda: sketch.top_k_accuracy(2))
            put("cohen_kappa", sketch.cohen_kappa)
            put("matthews_corrcoef", sketch.matthews_corrcoef)
            put("log_loss", sketch.log_loss)
            put("brier", sketch.brier_score)
            for avg in ("macro", "weighted", "micro"):
                put(f"roc_auc_ovr_{avg}", lambda avg=avg: sketch.roc_auc("ovr", avg), est=True)
            put("roc_auc_ovo_macro", lambda: sketch.roc_auc("ovo", "macro"), est=True)
            put("average_precision_macro", lambda: sketch.average_precision("macro"), est=True)
            p, r, f, s = sketch.precision_recall_fscore_support(average=None)
            aucs = sketch.roc_auc("ovr", None)
            aps = sketch.average_precision(None)
        for w in caught:
            if issubclass(w.category, UndefinedMetricWarning) and str(w.message) not in notes:
                notes.append(str(w.message))
        per_class = [
            {"class": _v(c), "precision": _v(float(p[i])), "recall": _v(float(r[i])), "f1": _v(float(f[i])),
             "support": _v(float(s[i])), "roc_auc": _est(aucs[i]), "average_precision": _est(aps[i])}
            for i, c in enumerate(sketch.classes)
        ]
        cm = [[_v(float(x)) for x in row] for row in sketch.confusion_matrix()]
        prov = dict(provenance or {})
        prov["classes"] = [_v(c) for c in sketch.classes]
        prov["grid"] = sketch.grid.spec()
        return cls(sketch, m, per_class, cm, prov, notes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (schema ``streameval.sketch.multiclass``, version 1)."""
        return {"schema": MULTICLASS_SCHEMA, "schema_version": MULTICLASS_SCHEMA_VERSION, "metrics": self.metrics,
                "per_class": self.per_class, "confusion_matrix": self.confusion_matrix,
                "provenance": {k: _v(v) if not isinstance(v, (list, dict)) else v for k, v in self.provenance.items()},
                "notes": list(self.notes)}

    def to_json(self, indent: int | None = 2) -> str:
        """Strict JSON."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=str)

    def _cell(self, v: Any) -> str:
        if v is None:
            return "n/a"
        if isinstance(v, dict):
            text = self._cell(v["value"])
            return text if v["exact"] or v["lower"] is None else f"{text} [{v['lower']:.6g}, {v['upper']:.6g}]"
        if isinstance(v, float):
            return f"{v:,.0f}" if v.is_integer() and abs(v) >= 1 else f"{v:.6g}"
        return str(v)

    def to_html(self, path: Any = None, title: str | None = None) -> str:
        """The report as one self-contained HTML page: tables, confusion heatmaps (counts and
        row-normalised) and per-class one-vs-rest ROC and PR curves (see docs/html-report.md).

        Parameters
        ----------
        path : path-like, optional
            Write the page there (atomically) as well as returning it.
        title : str, optional
            Page title.

        Returns
        -------
        str
            The HTML document (no network request when opened).

        Raises
        ------
        ImportError
            Altair or vl-convert-python is missing (``pip install "streameval[html]"``).
        """
        from .html import report_html

        return report_html(self, path, title)

    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown."""
        lines = ["## streameval multiclass report", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {self._cell(v)} |" for k, v in self.metrics.items()]
        head = ["class", "precision", "recall", "f1", "support", "roc_auc (OvR)", "average_precision"]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.per_class:
            lines.append("| " + " | ".join(self._cell(r[k]) for k in ("class", "precision", "recall", "f1", "support",
                                                                         "roc_auc", "average_precision")) + " |")
        classes = [str(c) for c in self.provenance["classes"]]
        lines += ["", "Confusion matrix (rows: true class, columns: predicted):", "",
                  "| true \\ predicted | " + " | ".join(classes) + " |", "|" + "---|" * (len(classes) + 1)]
        lines += [f"| {c} | " + " | ".join(self._cell(x) for x in row) + " |" for c, row in zip(classes, self.confusion_matrix, strict=True)]
        lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.table import Table

        t = Table(title="streameval multiclass report (value \\[binning bounds])", header_style="bold")
        t.add_column("metric")
        t.add_column("value", overflow="fold")
        for k, v in self.metrics.items():
            t.add_row(k, self._cell(v))
        yield t
        pc = Table(title="per class (one-vs-rest)", header_style="bold")
        for name in ("class", "precision", "recall", "f1", "support", "roc_auc", "average_precision"):
            pc.add_column(name, justify="right", overflow="fold")
        for r in self.per_class:
            pc.add_row(*(self._cell(r[k]) for k in ("class", "precision", "recall", "f1", "support", "roc_auc",
                                                    "average_precision")))
        yield pc
        classes = [str(c) for c in self.provenance["classes"]]
        cm = Table(title="confusion matrix (rows: true, columns: predicted)", header_style="bold")
        cm.add_column("true \\ pred")
        for c in classes:
            cm.add_column(c, justify="right")
        for c, row in zip(classes, self.confusion_matrix, strict=True):
            cm.add_row(c, *(self._cell(x) for x in row))
        yield cm
        for n in self.notes:
            yield f"note: {n}"

    def to_text(self, width: int = 120) -> str:
        """The terminal rendering as plain text."""
        from rich.console import Console

        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        console.print(self)
        return console.export_text()

    def __str__(self) -> str:
        return self.to_text()
