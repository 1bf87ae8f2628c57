"""Alerts: compare each slice's current period with its reference period, corrected for many slices.

For every slice, the current period's sketch and the reference period's sketch (both merged from
the store on read) are compared with :func:`streameval.stats.compare` (DeLong's unpaired test for
ROC-AUC, the two-proportion test for a rate at a threshold). The p-values, taken at their
conservative end when binning leaves a range, are corrected across slices with Benjamini-Hochberg
(1995). A slice alerts when its change is significant after correction *and* at least
``min_effect`` in the harmful direction. Slices are ranked by their contribution to the overall
change: their share of the current period's rows times their own change. Each slice also gets
its score drift (PSI of the current period's scores against the reference period's), which needs
no labels: it is there before the labels arrive.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import UndefinedMetricWarning, UsageError
from .store import Store

__all__ = ["AlertTable", "check", "parse_period", "parse_since"]

_DURATION = re.compile(r"^\s*(\d+)\s*(min|h|d|w)\s*$")
_UNIT = {"min": _dt.timedelta(minutes=1), "h": _dt.timedelta(hours=1), "d": _dt.timedelta(days=1),
         "w": _dt.timedelta(weeks=1)}
_HARMFUL_UP = ("fpr", "fnr")


def _zone(tz: str | None) -> _dt.tzinfo:
    from .layout import zone_named

    zone: _dt.tzinfo = zone_named(tz)
    return zone


def _when(text: str, tz: str | None) -> _dt.datetime:
    t = _dt.datetime.fromisoformat(text.strip())
    return (t if t.tzinfo is not None else t.replace(tzinfo=_zone(tz))).astimezone(_dt.timezone.utc)


def parse_period(text: str, newest: _dt.datetime | None,
                 tz: str | None = None) -> tuple[_dt.datetime, _dt.datetime]:
    """``"2026-10-01:2026-11-01"`` (start inclusive, end exclusive; local times in ``tz`` unless a
    zone is given) or a duration such as ``"7d"``, ``"24h"``, ``"2w"``: the windows starting
    within that duration up to and including the newest window in the store.

    Parameters
    ----------
    text : str
    newest : datetime or None
        The start of the store's newest window.
    tz : str, optional
        The time zone of the store's windows (its job's ``tz``; default UTC): dates are midnights
        there, and days and weeks of a duration are calendar days there (a day across a change of
        clocks lasts 23 or 25 hours), so ``7d`` of daily windows is 7 windows.

    Returns
    -------
    (datetime, datetime)
        Start (inclusive) and end (exclusive), aware, in UTC.

    Raises
    ------
    UsageError
        If the text is neither form, a period that ends before it starts, or a duration asked of
        a store with no windows.
    """
    m = _DURATION.match(text)
    if m:
        if newest is None:
            raise UsageError("a period such as 7d needs a store with time windows (this one has none)")
        span = int(m.group(1)) * _UNIT[m.group(2)]
        # days and weeks on the local calendar (aware arithmetic in one zone is wall-clock arithmetic)
        local = newest.astimezone(_zone(tz) if m.group(2) in ("d", "w") else _dt.timezone.utc)
        first = (local - span).astimezone(_dt.timezone.utc)
        last = newest.astimezone(_dt.timezone.utc)
        return first + _dt.timedelta(microseconds=1), last + _dt.timedelta(microseconds=1)
    start, sep, end = text.partition(":")
    begin: _dt.datetime | None = None
    finish: _dt.datetime | None = None
    try:
        if sep and len(start) >= 8:
            begin, finish = _when(start, tz), _when(end, tz)
    except ValueError:
        pass
    if begin is not None and finish is not None:
        if finish <= begin:
            raise UsageError(f"bad period {text!r}: it ends before it starts (START:END, the end excluded)")
        return begin, finish
    raise UsageError(f"bad period {text!r}: expected START:END dates (2026-10-01:2026-11-01) or a length such as 7d")


def parse_since(text: str, newest: _dt.datetime | None, tz: str | None = None) -> _dt.datetime:
    """A start: an ISO date/time (local time in ``tz``, default UTC, unless a zone is given), or a
    length such as ``30d`` back from the newest window (that window included; see
    :func:`parse_period`).

    Raises
    ------
    UsageError
        If the text is neither.
    """
    if _DURATION.match(text):
        return parse_period(text, newest, tz)[0]
    try:
        return _when(text, tz)
    except ValueError:
        raise UsageError(f"bad start {text!r}: expected a date (2026-11-01) or a length such as 30d") from None


@dataclass
class AlertTable:
    """One row per slice: reference and current values, the change, its CI and test, and the alert.

    Attributes
    ----------
    rows : list of dict
        Columns: the slice keys, ``n_reference``, ``n_current``, ``reference``, ``current``,
        ``delta``, ``ci_lower``, ``ci_upper``, ``p_value`` (conservative end), ``p_adjusted``
        (Benjamini-Hochberg), ``contribution``, ``psi`` (score drift of the current period
        against the reference: population stability index of the slice's scores, labelled and
        unlabelled rows, over reference deciles), ``alert``; ranked by contribution, most
        harmful first.
    overall : dict
        The same columns for all slices together.
    provenance : dict
        Store, metric, periods, alpha, minimum effect, method.
    notes : list of str
    """

    rows: list[dict[str, Any]]
    overall: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def fired(self) -> bool:
        """Whether any slice alerts."""
        return any(r["alert"] for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values."""
        return {"schema": "streameval.alerts", "schema_version": 1, "fired": self.fired,
                "overall": _clean(self.overall), "rows": [_clean(r) for r in self.rows],
                "provenance": _clean(self.provenance), "notes": list(self.notes)}

    def to_json(self, indent: int | None = 2) -> str:
        """Strict JSON."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=str)

    def to_text(self, width: int = 120, limit: int = 20) -> str:
        """A terminal table of the most harmful slices, and the verdict."""
        from rich.console import Console
        from rich.table import Table

        p = self.provenance
        t = Table(title=f"{p['metric']}: current {p['current']} vs reference {p['reference']}", header_style="bold")
        keys = list(p["by"])
        cols = keys + ["n_current", "reference", "current", "delta", "95% CI", "p_adjusted", "PSI", "alert"]
        for c in cols:
            t.add_column(c, justify="left" if c in keys else "right", overflow="fold")
        for r in [self.overall] + self.rows[:limit]:
            ci = "n/a" if r["ci_lower"] is None else f"{r['ci_lower']:+.4f} to {r['ci_upper']:+.4f}"
            t.add_row(*[("(all)" if r is self.overall else "null" if r.get(k) is None else str(r.get(k))) for k in keys],
                      f"{r['n_current']:,.0f}",
                      _f(r["reference"]), _f(r["current"]), _f(r["delta"], "+.4f"), ci, _f(r.get("p_adjusted"), ".3g"),
                      _f(r.get("psi"), ".3f"), "ALERT" if r.get("alert") else "")
        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        console.print(t)
        n = sum(r["alert"] for r in self.rows)
        console.print(f"{n} of {len(self.rows)} slice(s) alert (BH-adjusted p < {p['alpha']:g} and a change of at "
                      f"least {p['min_effect']:g} in the harmful direction)")
        for note in self.notes:
            console.print(f"note: {note}")
        return console.export_text()

    def __str__(self) -> str:
        return self.to_text()


def _span(period: tuple[_dt.datetime, _dt.datetime], tz: str | None = None) -> str:
    """The window starts a period selects, to the minute, in the store's zone: ``[start, end)``,
    or ``(start, end]`` for a duration (whose bounds are 1 microsecond past window starts: the
    windows after ``newest - duration`` up to ``newest``)."""
    a, b = (p.astimezone(_zone(tz)) for p in period)
    left, right = ("(", "]") if a.microsecond == 1 and b.microsecond == 1 else ("[", ")")
    a, b = (p.replace(microsecond=0) for p in (a, b))
    return f"{left}{a.isoformat(sep=' ', timespec='minutes')}, {b.isoformat(sep=' ', timespec='minutes')}{right}"


def _f(x: Any, spec: str = ".4f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v.isoformat()
                if isinstance(v, (_dt.date, _dt.datetime)) else v) for k, v in d.items()}


def _value(sk: Any, name: str, threshold: float | None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        if threshold is None:
            t = sk.table()
            return float(sk.roc_auc()) if t.P > 0 and t.N > 0 else math.nan
        return float(getattr(sk.confusion(threshold), name))


def check(
    store: Store,
    *,
    reference: str | tuple[_dt.datetime, _dt.datetime],
    current: str | tuple[_dt.datetime, _dt.datetime] = "7d",
    metric: str = "roc_auc",
    by: Sequence[str] | None = None,
    min_effect: float = 0.0,
    alpha: float = 0.05,
    direction: str | None = None,
    level: float = 0.95,
) -> AlertTable:
    """Compare every slice's current period with its reference period and flag real drops.

    Parameters
    ----------
    store : Store
    reference, current : str or (datetime, datetime)
        Periods: ``"START:END"`` dates, a duration such as ``"7d"`` (ending at the newest window),
        or a pair of datetimes (start inclusive, end exclusive).
    metric : str, default "roc_auc"
        ``"roc_auc"`` or a rate at a threshold (``"recall@0.5"``).
    by : sequence of str, optional
        Slice columns (a subset of the store's); default all.
    min_effect : float, default 0
        Smallest change worth an alert, in the metric's units.
    alpha : float, default 0.05
        False discovery rate across slices (Benjamini & Hochberg 1995).
    direction : {"decrease", "increase", "both"}, optional
        Which change is harmful; default "increase" for fpr/fnr, else "decrease".
    level : float, default 0.95
        Level of the per-slice confidence intervals.

    Returns
    -------
    AlertTable

    Raises
    ------
    UsageError
        Bad periods, metric or direction.
    """
    from ..stats import benjamini_hochberg, compare, parse_metric  # here: `monitor report` imports this module

    name, threshold = parse_metric(metric)
    direction = direction or ("increase" if name in _HARMFUL_UP else "decrease")
    if direction not in ("decrease", "increase", "both"):
        raise UsageError(f"direction must be decrease, increase or both, got {direction!r}")
    newest = store.newest_window()
    tz = store.job.get("tz")
    ref = reference if isinstance(reference, tuple) else parse_period(reference, newest, tz)
    cur = current if isinstance(current, tuple) else parse_period(current, newest, tz)
    keep = list(store.job.get("by", [])) if by is None else list(by)
    ss_ref = store.sketchset(by=keep, window="all", since=ref[0], until=ref[1])
    ss_cur = store.sketchset(by=keep, window="all", since=cur[0], until=cur[1])
    notes: list[str] = []
    if ref[0] < cur[1] and cur[0] < ref[1]:
        notes.append("the current and reference periods overlap: windows in both are compared with themselves, "
                     "so changes look smaller than they are (the tests assume separate samples)")
    if len(ss_cur) == 0 or len(ss_ref) == 0:
        notes.append("no rows in the " + ("current" if len(ss_cur) == 0 else "reference") + " period")
    cur_all, ref_all = ss_cur.overall(), ss_ref.overall()
    total = cur_all.table().P + cur_all.table().N

    def row(cur_sk: Any, ref_sk: Any) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            c = compare(cur_sk, ref_sk, metric, level=level)
        tc, tr = cur_sk.table(), ref_sk.table()
        delta = c.estimate.value
        return {"n_reference": tr.P + tr.N, "n_current": tc.P + tc.N, "reference": _value(ref_sk, name, threshold),
                "current": _value(cur_sk, name, threshold), "delta": delta, "ci_lower": c.ci_lower,
                "ci_upper": c.ci_upper, "p_value": c.p_value.upper, "method": c.method,
                "contribution": (tc.P + tc.N) / total * delta if total > 0 else math.nan}

    psi = dict(zip(ss_cur.keys(), ss_cur.psi(ss_ref).tolist(), strict=True)) if len(ss_ref) else {}
    rows = []
    for key in ss_cur.keys():
        if key not in ss_ref:
            continue
        r = dict(zip(keep, key, strict=True))
        r.update(row(ss_cur.sketch(key), ss_ref.sketch(key)))
        r["psi"] = psi[key]
        rows.append(r)
    missing = len([k for k in ss_cur.keys() if k not in ss_ref])
    if missing:
        notes.append(f"{missing} slice(s) have no reference rows and are not tested")
    ps = [r["p_value"] for r in rows]
    bh = benjamini_hochberg(ps, alpha) if rows else None
    for i, r in enumerate(rows):
        r["p_adjusted"] = float(bh.adjusted[i]) if bh is not None else math.nan
        d = r["delta"]
        harmful = {"decrease": d <= -min_effect, "increase": d >= min_effect, "both": abs(d) >= min_effect}[direction]
        r["alert"] = bool(bh is not None and bh.reject[i] and harmful and math.isfinite(d))
    sign = 1.0 if direction == "increase" else -1.0
    rows.sort(key=lambda r: -sign * r["contribution"] if math.isfinite(r["contribution"]) else math.inf)
    overall = row(cur_all, ref_all) if len(ss_cur) and len(ss_ref) else {
        "n_reference": 0, "n_current": 0, "reference": math.nan, "current": math.nan, "delta": math.nan,
        "ci_lower": None, "ci_upper": None, "p_value": math.nan, "contribution": math.nan, "method": ""}
    overall["psi"] = float(ss_cur.rollup([]).psi(ss_ref.rollup([]))[0]) if len(ss_cur) and len(ss_ref) else math.nan
    overall["p_adjusted"] = overall["p_value"]
    overall["alert"] = False
    prov = {"store": store.path, "metric": metric, "by": keep, "reference": _span(ref, tz), "current": _span(cur, tz), "alpha": alpha, "min_effect": min_effect,
            "direction": direction, "correction": "Benjamini-Hochberg", "level": level}
    return AlertTable(rows, overall, prov, notes)
