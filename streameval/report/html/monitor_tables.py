"""Tables of the monitoring page: the summary, the worst slices of the newest window, the alerts.

Cells are formatted as in the terminal table (:mod:`streameval.report.slices`), so a number on the
page reads the same as on screen and rounds the JSON's.
"""

from __future__ import annotations

import html
import math
from typing import Any

from .monitor import WINDOW, metric_columns, slice_label

__all__ = ["alert_table", "summary_rows", "worst_table"]


def summary_rows(table: Any) -> list[list[str]]:
    """``[label, value]`` rows: groups, slices, windows, rows, and the overall metrics when known."""
    from ..slices import _cell

    keys = table.sketches.key_names
    names = [k for k in keys if k != WINDOW]
    windows = sorted({r[WINDOW] for r in table.rows}) if WINDOW in keys else []
    out = [["groups (window x slice)", f"{len(table.rows):,}"],
           ["slices", f"{len({slice_label(r, names) for r in table.rows}):,}" if names else "none"],
           ["windows", f"{len(windows):,}" + (f" ({_cell({'w': windows[0]}, 'w')} to {_cell({'w': windows[-1]}, 'w')}"
                                              + (f", {length}" if (length := table.provenance.get("window")) else "")
                                              + ")" if windows else "")],
           ["rows", f"{table.sketches.n_rows:,}"]]
    if table.overall is not None:
        out += [[f"all rows: {label}", text] for label, text in table.overall.rows()]
    return out


def _ci(row: dict[str, Any]) -> str:
    lo, hi = row.get("roc_auc_ci_lower"), row.get("roc_auc_ci_upper")
    return "n/a" if lo is None or hi is None else f"{lo:.4f} to {hi:.4f}"


def worst_table(table: Any, alerts: dict[str, Any] | None, limit: int = 20) -> list[str]:
    """The ``limit`` rows with the lowest ROC AUC, in the newest window when windowed, as HTML."""
    from ..slices import _cell
    from .page import _table

    keys = list(table.sketches.key_names)
    names = [k for k in keys if k != WINDOW]
    if not names or "roc_auc" not in table.columns:
        return []
    rows = table.rows
    where = "over all rows"
    if WINDOW in keys and rows:
        newest = max(r[WINDOW] for r in rows)
        rows = [r for r in rows if r[WINDOW] == newest]
        where = f"in the newest window ({_cell({'w': newest}, 'w')})"
    defined = sorted((r for r in rows if r.get("roc_auc") is not None), key=lambda r: (r["roc_auc"], slice_label(r, names)))
    shown = defined[:limit]
    fired = {slice_label(r, names) for r in (alerts or {}).get("rows", []) if r.get("alert")}
    cols = [c for c in ("n_rows", "prevalence", "roc_auc") if c in table.columns]
    rates = [c for c in metric_columns(table.columns) if c not in ("roc_auc",)]
    header = [*names, "rows", "prevalence", "ROC AUC [binning bounds]", "AUC CI", *rates, "alert"]
    body = []
    for r in shown:
        cells = [_cell(r, n) for n in names] + [_cell(r, c) for c in cols] + [_ci(r)]
        cells += [_cell(r, c) for c in rates] + ["ALERT" if slice_label(r, names) in fired else ""]
        body.append(cells)
    undefined = len(rows) - len(defined)
    out = [f"<h2>Worst slices {html.escape(where)}</h2>",
           f'<p class="legend">The {len(shown)} of {len(rows):,} slices with the lowest ROC AUC'
           + (f"; {undefined:,} more have one class only (AUC undefined)" if undefined else "")
           + ". Small slices have wide confidence intervals: read the CI before acting. Every row: "
           "<code>SliceTable.to_json()</code> or <code>--format csv</code>.</p>",
           _table(body, header, "worst")]
    return out


def alert_table(alerts: dict[str, Any] | None, limit: int = 50) -> list[str]:
    """The alerted slices of a ``monitor check`` result (its dict), most harmful first."""
    from .page import _table

    if not alerts:
        return []
    prov = alerts.get("provenance", {})
    by = list(prov.get("by", []))
    fired = [r for r in alerts.get("rows", []) if r.get("alert")]

    def f(x: Any, spec: str = ".4f") -> str:
        return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)

    body = [[*(str(r.get(k)) for k in by), f(r.get("n_current"), ",.0f"), f(r.get("reference")), f(r.get("current")),
             f(r.get("delta"), "+.4f"),
             "n/a" if r.get("ci_lower") is None else f"{r['ci_lower']:+.4f} to {r['ci_upper']:+.4f}",
             f(r.get("p_adjusted"), ".3g")] for r in fired[:limit]]
    head = (f"{len(fired)} of {len(alerts.get('rows', []))} slice(s) alert on {prov.get('metric')}: current "
            f"{prov.get('current')} against reference {prov.get('reference')} (Benjamini-Hochberg adjusted p < "
            f"{prov.get('alpha')}, change of at least {prov.get('min_effect')} in the harmful direction).")
    out = ["<h2>Alerts</h2>", f'<p class="legend">{html.escape(head)}</p>']
    if body:
        out.append(_table(body, [*by, "rows (current)", "reference", "current", "change", "95% CI of the change",
                                 "adjusted p"], "alerts"))
    return out
