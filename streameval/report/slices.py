"""SliceTable: the tidy result of a sliced and windowed evaluation, one row per (window, slice...).

Every row has the same flat columns, so the table is the same in Arrow, Polars, pandas and JSON:
the key columns, then row counts, then each metric with its binning bounds as ``<metric>_lower``
and ``<metric>_upper`` (equal to the value when exact), then the rates at each requested
threshold as ``<rate>@<threshold>``, then the estimated performance of rows whose labels have not
arrived (``est_`` columns, computed on the assumption that the scores are calibrated). Undefined
values (AUC of a slice with one class) are null, never dropped rows.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import InexactThresholdWarning, UndefinedMetricWarning
from ..metrics.thresholds import check_rule
from ..sketch.binary import BinarySketch
from ..sketch.sketchset import SketchSet

__all__ = ["SliceTable", "SLICE_SCHEMA_VERSION"]

SLICE_SCHEMA = "streameval.slices"
SLICE_SCHEMA_VERSION = 1
_RATES = ("precision", "recall", "fpr", "f1")
_SHOW = 20
_HEADERS = {"labelled_fraction": "labelled", "average_precision": "AP", "prevalence": "prev."}
_SCREEN = ("n_rows", "labelled_fraction", "prevalence", "roc_auc", "average_precision", "log_loss")


def _num(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _metric_columns(row: dict[str, Any], sk: BinarySketch, thresholds: Sequence[float], positive_if: str,
                    prefix: str = "", ci: Any = None) -> None:
    t = sk.table()
    total = t.P + t.N
    row[prefix + "positives"] = _num(t.P)
    row[prefix + "negatives"] = _num(t.N)
    row[prefix + "prevalence"] = _num(t.P / total) if total > 0 else None
    for name, get in (("roc_auc", sk.roc_auc), ("average_precision", sk.average_precision)):
        if t.P > 0 and t.N > 0:
            e = get()
            row[prefix + name], row[prefix + name + "_lower"], row[prefix + name + "_upper"] = (
                _num(e.value), _num(e.lower), _num(e.upper))
        else:
            row[prefix + name] = row[prefix + name + "_lower"] = row[prefix + name + "_upper"] = None
    if ci is not None:
        from ..stats import roc_auc_ci

        band = roc_auc_ci(t, ci.level, ci.auc_method) if t.P > 0 and t.N > 0 else None
        row["roc_auc_ci_lower"] = None if band is None else _num(band.ci_lower)
        row["roc_auc_ci_upper"] = None if band is None else _num(band.ci_upper)
    if not prefix:
        for name, loss in (("log_loss", sk.log_loss), ("brier", sk.brier_score)):
            try:
                row[name] = _num(loss())
            except ValueError:  # scores outside [0, 1]
                row[name] = None
    for th in thresholds:
        c = sk.confusion(th, positive_if=positive_if) if total > 0 else None
        for rate in _RATES:
            row[f"{prefix}{rate}@{th:g}"] = None if c is None else _num(getattr(c, rate))


@dataclass
class SliceTable:
    """Metrics per (window, slice...), one tidy row each, with the sketches they come from.

    Attributes
    ----------
    sketches : SketchSet
        The per-group sketches (merge, roll up or save them for later).
    rows : list of dict
        One dict per group with the columns of :attr:`columns`; JSON-ready (undefined is None).
    columns : list of str
        Column names in order: the key names, ``n_rows``, ``n_labelled``, ``labelled_fraction``,
        ``positives``, ``negatives``, ``prevalence``, ``roc_auc`` (+ ``_lower``/``_upper``
        binning bounds), ``average_precision`` (+ bounds), ``log_loss``, ``brier``,
        ``<rate>@<threshold>`` for precision, recall, fpr and f1, and the ``est_`` columns.
    provenance : dict
        Source, keys, window, time zone, grid, rows read, version.
    notes : list of str
    overall : Report or None
        The report of all rows together (set by :func:`streameval.evaluate`).
    """

    sketches: SketchSet
    rows: list[dict[str, Any]]
    columns: list[str]
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    overall: Any = None  # the Report of all rows, when built by evaluate()

    @classmethod
    def from_sketchset(
        cls,
        sketches: SketchSet,
        *,
        thresholds: Sequence[float] = (),
        positive_if: str = ">=",
        provenance: dict[str, Any] | None = None,
        ci: Any = None,
    ) -> "SliceTable":
        """Compute the table of a :class:`SketchSet`.

        Parameters
        ----------
        sketches : SketchSet
        thresholds : sequence of float
            Thresholds for the rate columns.
        positive_if : {">=", ">"}
            Threshold rule.
        provenance : dict, optional
            Carried into :attr:`provenance`.
        ci : CIOptions, optional
            Add ``roc_auc_ci_lower``/``roc_auc_ci_upper`` (sampling confidence interval, DeLong by
            default; not to be confused with the ``_lower``/``_upper`` binning bounds).

        Returns
        -------
        SliceTable
        """
        check_rule(positive_if)
        thresholds = [float(t) for t in thresholds]
        rows: list[dict[str, Any]] = []
        inexact = 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for key, sk in sketches.items():
                counts = sketches.counts(key)
                row: dict[str, Any] = dict(zip(sketches.key_names, key, strict=True))
                row["n_rows"] = counts["n_rows"]
                labelled = counts["n_rows"] - counts["n_unlabelled"]
                row["n_labelled"] = labelled
                row["labelled_fraction"] = labelled / counts["n_rows"] if counts["n_rows"] else None
                _metric_columns(row, sk, thresholds, positive_if, ci=ci)
                est = _estimate(sketches, key, counts)
                _metric_columns(row, est if est is not None else BinarySketch(sketches.grid), thresholds,
                                positive_if, prefix="est_")
                rows.append(row)
        for w in caught:
            if issubclass(w.category, InexactThresholdWarning):
                inexact += 1
            elif not issubclass(w.category, UndefinedMetricWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        columns = list(rows[0]) if rows else list(sketches.key_names)
        notes = []
        if inexact:
            notes.append(
                f"{inexact} threshold rate(s) fell inside a bin whose scores straddle the threshold and are "
                "given at the nearest exact threshold; add the thresholds to the grid as cuts for exact counts"
            )
        if any(r.get("n_labelled", 0) < r.get("n_rows", 0) for r in rows):
            notes.append(
                "est_ columns estimate the performance of rows whose labels have not arrived, assuming the "
                "scores are calibrated probabilities (confidence-based performance estimation); they are "
                "not measurements"
            )
        prov = dict(provenance or {})
        prov.setdefault("keys", list(sketches.key_names))
        prov["grid"] = sketches.grid.spec()
        prov["positive_if"] = positive_if
        if ci is not None:
            prov["ci"] = {"level": ci.level, "auc_method": ci.auc_method, "rate_method": ci.rate_method}
        prov["groups"] = len(rows)
        return cls(sketches, rows, columns, prov, notes)

    # -- tables -------------------------------------------------------------------------------
    def to_arrow(self) -> Any:
        """The table as a ``pyarrow.Table``."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.rows) if self.rows else pa.table({c: [] for c in self.columns})

    def to_polars(self) -> Any:
        """The table as a ``polars.DataFrame`` (needs polars)."""
        import polars as pl

        return pl.from_arrow(self.to_arrow())

    def to_pandas(self) -> Any:
        """The table as a ``pandas.DataFrame`` (needs pandas)."""
        return self.to_arrow().to_pandas()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"schema", "schema_version", "columns", "rows", "provenance", "notes"}``."""
        return {
            "schema": SLICE_SCHEMA,
            "schema_version": SLICE_SCHEMA_VERSION,
            "columns": self.columns,
            "rows": [{k: _json_value(v) for k, v in r.items()} for r in self.rows],
            "provenance": {k: _json_value(v) for k, v in self.provenance.items()},
            "notes": list(self.notes),
            "overall": None if self.overall is None else self.overall.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """Strict JSON (no NaN); timestamps as ISO-8601 strings."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def to_csv(self) -> str:
        """All rows as CSV (Arrow's writer; timestamps in ISO-8601)."""
        import pyarrow.csv as pacsv

        buf = io.BytesIO()
        pacsv.write_csv(self.to_arrow(), buf)
        return buf.getvalue().decode()

    def to_markdown(self, sort_by: str = "roc_auc", limit: int = 200) -> str:
        """The rows shown on screen (see :meth:`view`) as a GitHub-flavoured Markdown table."""
        keys = list(self.sketches.key_names)
        cols = keys + [c for c in self.columns if c not in keys and not c.endswith(("_lower", "_upper"))]
        lines = ["## streameval slices", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in self.view(sort_by, limit):
            lines.append("| " + " | ".join(_cell(r, c).replace("|", "\\|") for c in cols) + " |")
        lines += [""] + [f"- {n}" for n in self._footer(sort_by, limit)]
        return "\n".join(lines) + "\n"

    def to_html(self, path: Any = None, title: str | None = None, alerts: Any = None) -> str:
        """The table as one self-contained HTML page: each metric over windows per slice (any slice
        picked from a list) with CI bands and alert markers, score drift (PSI) over windows, and
        the worst slices (see :func:`streameval.report.html.slices_report_html`, docs/html-report.md).

        Parameters
        ----------
        path : str or path-like, optional
            Also write the page there (atomically).
        title : str, optional
        alerts : AlertTable or dict, optional
            A :func:`streameval.monitor.check` result (or its ``to_dict()``) to mark.

        Returns
        -------
        str
            The HTML document.

        Raises
        ------
        ImportError
            Altair or vl-convert-python is missing (``pip install "streameval[html]"``).
        """
        from .html import report_html

        return report_html(self, path, title, alerts=alerts)

    # -- terminal ------------------------------------------------------------------------------
    def view(self, sort_by: str = "roc_auc", limit: int = _SHOW) -> list[dict[str, Any]]:
        """The rows to show on screen: all if at most ``limit``, else the lowest and highest by ``sort_by``.

        Rows whose ``sort_by`` is undefined come last.
        """
        if sort_by not in self.columns:
            raise ValueError(f"cannot sort by {sort_by!r}; columns: {', '.join(self.columns)}")
        if len(self.rows) <= limit:
            return list(self.rows)
        defined = sorted((r for r in self.rows if r.get(sort_by) is not None), key=lambda r: r[sort_by])
        half = limit // 2
        return defined[:half] + defined[-(limit - half):] if len(defined) > limit else defined

    def to_text(self, width: int = 120, sort_by: str = "roc_auc", limit: int = _SHOW) -> str:
        """The terminal rendering as plain text."""
        from rich.console import Console

        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        console.print(self._rich(sort_by, limit))
        for n in self._footer(sort_by, limit):
            console.print(n)
        return console.export_text()

    def _rich(self, sort_by: str, limit: int) -> Any:
        from rich.table import Table

        keys = list(self.sketches.key_names)
        shown = keys + [c for c in _SCREEN if c in self.columns]
        shown += [c for c in self.columns if c.startswith(("recall@", "precision@"))][:4]
        if any(r.get("est_roc_auc") is not None for r in self.rows):
            shown.append("est_roc_auc")
        t = Table(title="streameval slices (value \\[binning bounds])", header_style="bold")
        for c in shown:
            t.add_column(_HEADERS.get(c, c), justify="left" if c in self.sketches.key_names else "right", overflow="fold")
        for r in self.view(sort_by, limit):
            t.add_row(*(_cell(r, c) for c in shown))
        return t

    def _footer(self, sort_by: str, limit: int) -> list[str]:
        out = []
        if len(self.rows) > limit:
            out.append(f"{len(self.rows):,} rows; showing the {limit // 2} lowest and {limit - limit // 2} highest by "
                       f"{sort_by} (all rows: --format json or csv, or SliceTable.to_arrow())")
        return out + [f"note: {n}" for n in self.notes]

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield self._rich("roc_auc", _SHOW)
        yield from self._footer("roc_auc", _SHOW)

    def __str__(self) -> str:
        return self.to_text()


def _estimate(sketches: SketchSet, key: Any, counts: dict[str, Any]) -> BinarySketch | None:
    if not counts["n_unlabelled"]:
        return None
    try:
        return sketches.unlabelled_estimate(key)
    except ValueError:  # scores are not probabilities: no estimate
        return None


def _json_value(v: Any) -> Any:
    if isinstance(v, (_dt.datetime, _dt.date)):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _cell(row: dict[str, Any], col: str) -> str:
    v = row.get(col)
    if v is None:
        return "null" if col in row and col not in ("roc_auc", "average_precision", "est_roc_auc") else "n/a"
    if isinstance(v, _dt.datetime):
        return v.strftime("%Y-%m-%d") if (v.hour, v.minute, v.second) == (0, 0, 0) else v.strftime("%Y-%m-%d %H:%M")
    if isinstance(v, float):
        lo, hi = row.get(col + "_lower"), row.get(col + "_upper")
        text = f"{v:.4f}" if abs(v) < 1e4 else f"{v:,.0f}"
        if lo is not None and hi is not None and lo != hi:
            text += f" [{lo:.4f}, {hi:.4f}]"
        return text
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)
