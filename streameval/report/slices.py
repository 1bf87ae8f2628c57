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
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from ..errors import UndefinedMetricWarning
from ..metrics.segmented import SegmentedTable, segmented_average_precision, segmented_confusion, segmented_roc_auc
from ..metrics.thresholds import check_rule
from ..sketch.sketchset import UNLABELLED, SketchSet
from ..sketch.sketchset_cells import cell_batches
from .columns import float_values

__all__ = ["SliceTable", "SLICE_SCHEMA_VERSION"]

SLICE_SCHEMA = "streameval.slices"
SLICE_SCHEMA_VERSION = 1
_RATES = ("precision", "recall", "fpr", "f1")
_SHOW = 20
_BATCH = 1 << 17  # cells per batch of groups in from_sketchset
_HEADERS = {"labelled_fraction": "labelled", "average_precision": "AP", "prevalence": "prev."}
_SCREEN = ("n_rows", "labelled_fraction", "prevalence", "roc_auc", "average_precision", "log_loss", "psi")


Column = Any  # float64 array (non-finite: null), int64 array, or a list of Python values (key columns)


def _floats(values: Any) -> np.ndarray:
    """A float column: float64, NaN standing for null (every non-finite value is null)."""
    return np.asarray(values, dtype=np.float64)


def _add(data: dict[str, list[np.ndarray]], name: str, values: np.ndarray) -> None:
    """Append one batch of groups' values to a column (concatenated by :func:`_joined`)."""
    data.setdefault(name, []).append(_floats(values))


def _joined(parts: dict[str, list[np.ndarray]]) -> dict[str, Column]:
    return {name: np.concatenate(arrays) if len(arrays) != 1 else arrays[0] for name, arrays in parts.items()}


def _area_data(data: dict[str, list[np.ndarray]], t: SegmentedTable, prefix: str = "") -> None:
    """Counts, prevalence, ROC-AUC and average precision (with binning bounds) of every group."""
    total = t.P + t.N
    _add(data, prefix + "positives", t.P)
    _add(data, prefix + "negatives", t.N)
    with np.errstate(invalid="ignore", divide="ignore"):
        _add(data, prefix + "prevalence", np.where(total > 0, t.P / total, np.nan))
    both = (t.P > 0) & (t.N > 0)
    for name, metric in (("roc_auc", segmented_roc_auc), ("average_precision", segmented_average_precision)):
        for suffix, values in zip(("", "_lower", "_upper"), metric(t), strict=True):
            _add(data, prefix + name + suffix, np.where(both, values, np.nan))


def _rate_data(data: dict[str, list[np.ndarray]], t: SegmentedTable, grid: Any, thresholds: Sequence[float],
               positive_if: str, prefix: str = "") -> int:
    """Precision, recall, FPR and F1 of every group at each threshold; returns how many
    (group, threshold) counts fell inside a bin and were moved to the nearest exact threshold."""
    inexact = 0
    defined = (t.P + t.N) > 0
    for th in thresholds:
        t_ge = float(np.nextafter(th, np.inf)) if positive_if == ">" else th
        key = int(grid.bin_index(np.array([t_ge]))[0])
        tp, fp, exact = segmented_confusion(t, key, t_ge)
        inexact += int(np.count_nonzero(~exact & defined))
        fn, tn = t.P - tp, t.N - fp
        pos, neg = tp + fn, fp + tn
        with np.errstate(invalid="ignore", divide="ignore"):
            f1_den = 2.0 * tp + 1.0 * fn + fp
            rates = {
                "precision": np.where(tp + fp == 0, 0.0, tp / (tp + fp)),
                "recall": np.where(pos == 0, 0.0, tp / pos),
                "fpr": np.where(neg == 0, np.nan, fp / neg),
                "f1": np.where(f1_den == 0, 0.0, 2.0 * tp / f1_den),
            }
        for rate in _RATES:
            _add(data, f"{prefix}{rate}@{th:g}", np.where(defined, rates[rate], np.nan))
    return inexact


def _ci_columns(data: dict[str, Column], sketches: SketchSet, keys: list[Any], ci: Any) -> None:
    """Sampling confidence intervals of the AUC, group by group (DeLong needs each group's bins)."""
    from ..stats import roc_auc_ci

    bands = np.full((len(keys), 2), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for i, key in enumerate(keys):
            t = sketches.sketch(key).table()
            if t.P > 0 and t.N > 0:
                band = roc_auc_ci(t, ci.level, ci.auc_method)
                bands[i] = band.ci_lower, band.ci_upper
    data["roc_auc_ci_lower"], data["roc_auc_ci_upper"] = bands[:, 0].copy(), bands[:, 1].copy()


def _estimate_table(group: np.ndarray, bins: np.ndarray, cls: np.ndarray, cells: np.ndarray, n: int) -> SegmentedTable:
    """The estimated (CBPE) bin tables of every group's unlabelled rows, as
    :meth:`SketchSet.unlabelled_estimate` builds them one group at a time: a cell of weight ``w``
    and score sum ``S`` counts ``S`` as positive and ``w - S`` as negative weight. Groups with an
    unlabelled score outside [0, 1] get no estimate (an empty table)."""
    mine = cls == UNLABELLED
    g, b, c = group[mine], bins[mine], cells[mine]
    bad = np.bincount(g, weights=(c[:, 1] < 0) | (c[:, 2] > 1), minlength=n) > 0
    ok = ~bad[g]
    g, b, c = g[ok], b[ok], c[ok]
    pos = np.clip(c[:, 3], 0.0, c[:, 0])
    weight = np.stack([c[:, 0] - pos, pos], axis=1).reshape(-1)  # class 0 then 1 per bin: sorted order
    out = np.repeat(c, 2, axis=0)
    out[:, 0] = weight
    keep = weight > 0
    return SegmentedTable.from_cells(np.repeat(g, 2)[keep], np.repeat(b, 2)[keep],
                                     np.tile(np.array([0, 1], dtype=np.int64), g.shape[0])[keep], out[keep], n)


Parts = dict[str, list[np.ndarray]]


def _batch_columns(sketches: SketchSet, thresholds: list[float], positive_if: str) -> tuple[Parts, Parts, Parts, int]:
    """The per-group columns computed from the cells: ``(areas, rates, estimates, inexact)``.

    Groups go in batches of about ``_BATCH`` cells: the per-bin temporaries stay small (memory
    that is reused is cheap; fresh memory costs page faults, on VMs ~5 ms per MB), and a set's
    compact one-row cells are expanded a batch at a time, never all at once. The batches are
    independent and NumPy releases the GIL in its loops, so two threads share them; each
    column's parts are joined in batch order, as one thread would have them.
    """

    def one(batch: Any) -> tuple[Parts, Parts, Parts, int]:
        g0, g1, g, bn, kl, ce = batch
        areas: Parts = {}
        rates: Parts = {}
        est_columns: Parts = {}
        labelled_cells = kl != UNLABELLED
        lab = SegmentedTable.from_cells(g[labelled_cells], bn[labelled_cells], kl[labelled_cells],
                                        ce[labelled_cells], g1 - g0)
        est = _estimate_table(g, bn, kl, ce, g1 - g0)
        _area_data(areas, lab)
        inexact = _rate_data(rates, lab, sketches.grid, thresholds, positive_if)
        _area_data(est_columns, est, "est_")
        inexact += _rate_data(est_columns, est, sketches.grid, thresholds, positive_if, "est_")
        return areas, rates, est_columns, inexact

    lock = threading.Lock()
    failed = threading.Event()  # set by a thread that raised (or was interrupted): the other stops too
    batches = enumerate(cell_batches(sketches, _BATCH))  # made one at a time, as the threads ask

    def worker() -> list[tuple[int, tuple[Parts, Parts, Parts, int]]]:
        done: list[tuple[int, tuple[Parts, Parts, Parts, int]]] = []
        try:
            while not failed.is_set():
                with lock:
                    item = next(batches, None)
                if item is None:
                    break
                done.append((item[0], one(item[1])))
        except BaseException:
            failed.set()
            raise
        return done  # cut short only when the other thread raised, which then reaches the caller

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="streameval-table") as pool:
        theirs = pool.submit(worker)
        mine = worker()
        results = [r for _, r in sorted(mine + theirs.result(), key=lambda x: x[0])]
    out: tuple[Parts, Parts, Parts] = ({}, {}, {})
    for part in results:
        for joined, piece in zip(out, part[:3], strict=True):
            for name, arrays in piece.items():
                joined.setdefault(name, []).extend(arrays)
    return out[0], out[1], out[2], sum(r[3] for r in results)


class SliceTable:
    """Metrics per (window, slice...), one tidy row each, with the sketches they come from.

    Parameters
    ----------
    sketches : SketchSet
    rows : list of dict, optional
        The rows (see :attr:`rows`); not needed when ``data`` is given.
    columns : list of str
    provenance : dict, optional
    notes : list of str, optional
    overall : Report, optional
    data : dict of column name -> column, optional
        The values by column, as :meth:`from_sketchset` computes them: float64 arrays (a
        non-finite value is null), int64 arrays, or lists of Python values (the key columns);
        :attr:`rows` is then built from them when first read.

    Attributes
    ----------
    sketches : SketchSet
        The per-group sketches (merge, roll up or save them for later).
    rows : list of dict
        One dict per group with the columns of :attr:`columns`; JSON-ready (undefined is None).
        Built on first use from the columns (90,000 dicts take ~0.5 s, which a CSV or a
        terminal view does not need); assigning a list replaces the table's values.
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

    def __init__(
        self,
        sketches: SketchSet,
        rows: list[dict[str, Any]] | None = None,
        columns: Sequence[str] = (),
        provenance: dict[str, Any] | None = None,
        notes: list[str] | None = None,
        overall: Any = None,
        *,
        data: dict[str, Column] | None = None,
    ) -> None:
        if rows is None and data is None:
            raise ValueError("SliceTable needs rows or data")
        self.sketches = sketches
        self.columns = list(columns)
        self.provenance = dict(provenance or {})
        self.notes = list(notes or [])
        self.overall = overall  # the Report of all rows, when built by evaluate()
        self._rows = rows
        self._data = data  # the values by column, while `rows` has not been replaced

    def __repr__(self) -> str:
        return f"SliceTable(columns={self.columns!r}, rows={self._n_rows()}, keys={list(self.sketches.key_names)!r})"

    def _n_rows(self) -> int:
        if self._data is not None and self.columns:
            return len(self._data[self.columns[0]])
        return len(self.rows)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One dict per group (see the class docstring), built from the columns on first use."""
        if self._rows is None:
            data = self._data or {}
            lists = [_python_values(data[c]) for c in self.columns]
            self._rows = [dict(zip(self.columns, values, strict=True)) for values in zip(*lists, strict=True)]
        return self._rows

    @rows.setter
    def rows(self, rows: list[dict[str, Any]]) -> None:
        self._rows, self._data = rows, None

    def _column(self, name: str) -> Column | None:
        """A column's values as computed (None once :attr:`rows` was replaced, or unknown)."""
        if self._data is None or (self._rows is not None and len(self._rows) != len(self._data.get(name, ()))):
            return None
        return self._data.get(name)

    @classmethod
    def from_sketchset(
        cls,
        sketches: SketchSet,
        *,
        thresholds: Sequence[float] = (),
        positive_if: str = ">=",
        provenance: dict[str, Any] | None = None,
        ci: Any = None,
        reference: SketchSet | None = None,
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
        reference : SketchSet, optional
            Reference histograms keyed by the slice columns (the key without ``"window"``), e.g.
            a reference period merged per slice (``Store.sketchset(window="all", since=...,
            until=...)``). Adds ``psi``: the population stability index of each group's scores
            (labelled and unlabelled rows) against its slice's reference; null when the slice
            has no reference rows.

        Returns
        -------
        SliceTable
        """
        check_rule(positive_if)
        thresholds = [float(t) for t in thresholds]
        keys = sketches.keys()
        ctr = sketches.group_counters()
        lab_areas, lab_rates, est_columns, inexact = _batch_columns(sketches, thresholds, positive_if)
        data: dict[str, Column] = {name: [k[i] for k in keys] for i, name in enumerate(sketches.key_names)}
        data["n_rows"] = ctr["n_rows"].astype(np.int64)
        n_labelled = (ctr["n_rows"] - ctr["n_unlabelled"]).astype(np.int64)
        data["n_labelled"] = n_labelled
        with np.errstate(invalid="ignore", divide="ignore"):
            data["labelled_fraction"] = _floats(n_labelled / ctr["n_rows"])
        data.update(_joined(lab_areas))
        if ci is not None:
            _ci_columns(data, sketches, keys, ci)
        with np.errstate(invalid="ignore", divide="ignore"):
            for name, total in (("log_loss", ctr["log_loss_sum"]), ("brier", ctr["brier_sum"])):
                value = np.where(ctr["n_outside"] > 0, np.nan, total / ctr["prob_weight"])  # outside [0, 1]: undefined
                data[name] = _floats(np.where(ctr["prob_weight"] > 0, value, np.nan))
        if reference is not None:
            data["psi"] = _floats(sketches.psi(reference))
        data.update(_joined(lab_rates))
        data.update(_joined(est_columns))
        columns = list(data)
        notes = []
        if inexact:
            notes.append(
                f"{inexact} threshold rate(s) fell inside a bin whose scores straddle the threshold and are "
                "given at the nearest exact threshold; add the thresholds to the grid as cuts for exact counts"
            )
        if bool(np.any(n_labelled < data["n_rows"])):
            notes.append(
                "est_ columns estimate the performance of rows whose labels have not arrived, assuming the "
                "scores are calibrated probabilities (confidence-based performance estimation); they are "
                "not measurements"
            )
        n_nan, n_outside = int(ctr["n_nan"].sum()), int(ctr["n_outside"].sum())
        if n_nan:
            notes.append(f"{n_nan:,} row(s) with a NaN or null score were skipped: they count in n_rows (and "
                         "n_labelled) but in no metric")
        if n_outside:
            groups = int(np.count_nonzero(ctr["n_outside"]))
            notes.append(f"{n_outside:,} labelled row(s) in {groups:,} group(s) have a score outside [0, 1]: "
                         "log_loss and brier are null in those groups")
        if reference is not None:
            notes.append("psi: population stability index of each group's scores (all rows) against its slice's "
                         "reference; rules of thumb: < 0.1 stable, 0.1-0.25 moderate, > 0.25 large shift")
        prov = dict(provenance or {})
        prov.setdefault("keys", list(sketches.key_names))
        prov["grid"] = sketches.grid.spec()
        prov["positive_if"] = positive_if
        if ci is not None:
            prov["ci"] = {"level": ci.level, "auc_method": ci.auc_method, "rate_method": ci.rate_method}
        prov["groups"] = len(keys)
        return cls(sketches, None, columns, prov, notes, data=data)

    # -- tables -------------------------------------------------------------------------------
    def to_arrow(self) -> Any:
        """The table as a ``pyarrow.Table``."""
        import pyarrow as pa

        if self._n_rows() == 0:
            return pa.table({c: [] for c in self.columns})
        if self._data is not None and all(self._column(c) is not None for c in self.columns):
            from .columns import arrow_column

            return pa.table({c: arrow_column(self._data[c]) for c in self.columns})
        return pa.Table.from_pylist(self.rows)

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
        from .columns import write_csv_text

        return write_csv_text(self.to_arrow())

    def to_markdown(self, sort_by: str = "roc_auc", limit: int = 200) -> str:
        """The rows shown on screen (see :meth:`view`) as a GitHub-flavoured Markdown table."""
        keys = list(self.sketches.key_names)
        cols = keys + [c for c in self.columns if c not in keys and not c.endswith(("_lower", "_upper"))]
        lines = ["## streameval slices", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in self.view(sort_by, limit):
            lines.append("| " + " | ".join(_cell(r, c, c in keys).replace("|", "\\|") for c in cols) + " |")
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
        if self._n_rows() <= limit:
            return list(self.rows)
        half = limit // 2
        col = self._column(sort_by)
        if isinstance(col, np.ndarray) and col.dtype in (np.float64, np.int64):  # sort the column, build shown rows only
            defined = np.flatnonzero(np.isfinite(col)) if col.dtype == np.float64 else np.arange(col.shape[0])
            order = defined[np.argsort(col[defined], kind="stable")]  # stable, as sorted() on the rows
            picked = np.r_[order[:half], order[-(limit - half):]] if order.shape[0] > limit else order
            return [self._row(i) for i in picked.tolist()]
        rows = sorted((r for r in self.rows if r.get(sort_by) is not None), key=lambda r: r[sort_by])
        return rows[:half] + rows[-(limit - half):] if len(rows) > limit else rows

    def _row(self, i: int) -> dict[str, Any]:
        """Row ``i`` (the same dict as ``rows[i]`` once :attr:`rows` is built)."""
        if self._rows is not None or self._data is None:
            return self.rows[i]
        return {c: _python_value(self._data[c], i) for c in self.columns}

    def _any_defined(self, name: str) -> bool:
        col = self._column(name)
        if isinstance(col, np.ndarray) and col.dtype == np.float64:
            return bool(np.isfinite(col).any())
        return any(r.get(name) is not None for r in self.rows)

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
        if self._any_defined("est_roc_auc"):
            shown.append("est_roc_auc")
        t = Table(title="streameval slices (value \\[binning bounds])", header_style="bold")
        for c in shown:
            t.add_column(_HEADERS.get(c, c), justify="left" if c in self.sketches.key_names else "right", overflow="fold")
        for r in self.view(sort_by, limit):
            t.add_row(*(_cell(r, c, c in keys) for c in shown))
        return t

    def _footer(self, sort_by: str, limit: int) -> list[str]:
        out = []
        if self._n_rows() > limit:
            out.append(f"{self._n_rows():,} rows; showing the {limit // 2} lowest and {limit - limit // 2} highest by "
                       f"{sort_by} (all rows: --format json or csv, or SliceTable.to_arrow())")
        return out + [f"note: {n}" for n in self.notes]

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield self._rich("roc_auc", _SHOW)
        yield from self._footer("roc_auc", _SHOW)

    def __str__(self) -> str:
        return self.to_text()


def _python_values(col: Column) -> list[Any]:
    """A column as JSON-ready Python values (floats: None for undefined)."""
    if isinstance(col, np.ndarray):
        return float_values(col) if col.dtype == np.float64 else list(col.tolist())
    return list(col)


def _python_value(col: Column, i: int) -> Any:
    if isinstance(col, np.ndarray):
        v = col[i].item()
        return None if isinstance(v, float) and not math.isfinite(v) else v
    return col[i]


def _json_value(v: Any) -> Any:
    if isinstance(v, (_dt.datetime, _dt.date)):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


_LOOKS_NULL = ("null", "n/a", "none", "nan", "")


def _cell(row: dict[str, Any], col: str, key: bool = False) -> str:
    v = row.get(col)
    if key and isinstance(v, str) and (v.strip().lower() in _LOOKS_NULL or v != v.strip()):
        return json.dumps(v)  # a slice value that reads as a null (or hides spaces) is shown quoted
    if v is None:
        return "null" if col in row and col not in ("roc_auc", "average_precision", "est_roc_auc") else "n/a"
    if isinstance(v, _dt.datetime):
        if (v.hour, v.minute, v.second, v.microsecond) == (0, 0, 0, 0):
            return v.strftime("%Y-%m-%d")
        return v.strftime("%Y-%m-%d %H:%M" if (v.second, v.microsecond) == (0, 0) else "%Y-%m-%d %H:%M:%S")
    if isinstance(v, float):
        lo, hi = row.get(col + "_lower"), row.get(col + "_upper")
        text = f"{v:.4f}" if abs(v) < 1e4 else f"{v:,.0f}"
        if lo is not None and hi is not None and lo != hi:
            text += f" [{lo:.4f}, {hi:.4f}]"
        return text
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)
