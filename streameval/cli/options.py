"""Parsing of the CLI's composite options: thresholds (``-t 0.3,0.5``) and gates (``--fail-under``)."""

from __future__ import annotations

from typing import Any, List, Optional

import typer

from ..errors import UsageError

__all__ = ["parse_thresholds", "FORMAT_VERSION_HELP", "check_format_version"]

FORMAT_VERSION_HELP = ("Sketch file format to write: 3 (default, compact), 4 (columnar: shards that fold into a "
                       "roll-up faster) or 1 (for streameval releases that read only versions 1-2).")


def check_format_version(value: Optional[int]) -> Optional[int]:
    """``--format-version``: None (the default format), 1, 3 or 4; anything else is a usage error."""
    if isinstance(value, bool) or value not in (None, 1, 3, 4):
        raise typer.BadParameter(f"{value} is not a format streameval writes: give 3, 4 or 1", param_hint="--format-version")
    return value


def parse_thresholds(values: Optional[List[str]]) -> list[float]:
    """``["0.3,0.5", "0.9"]`` -> ``[0.3, 0.5, 0.9]``; NaN or text is a usage error (exit 2)."""
    import math

    out = []
    for v in values or []:
        for part in str(v).split(","):
            try:
                t = float(part)
            except ValueError:
                t = math.nan
            if math.isnan(t):
                raise typer.BadParameter(f"bad threshold {part.strip()!r}: give numbers such as 0.5 or 0.3,0.5",
                                         param_hint="--threshold")
            out.append(t)
    return out


_LOWER_IS_BETTER = ("fpr", "fnr")


def _parse_gates(text: Optional[str]) -> list[tuple[str, float | None, float]]:
    """``roc_auc=0.8,recall@0.5=0.6`` -> ``[(metric, threshold or None, floor), ...]``.

    A metric that is better low (``fpr``, ``fnr``) is refused: a floor on it would fail good
    models; a non-finite floor is refused too.
    """
    if not text:
        return []
    import math

    from ..stats import parse_metric

    out = []
    for part in text.split(","):
        name, sep, floor = part.partition("=")
        if not sep:
            raise typer.BadParameter(f"bad gate {part!r}: expected METRIC=FLOOR", param_hint="--fail-under")
        try:
            metric, threshold = parse_metric(name.strip())
        except UsageError as exc:
            raise typer.BadParameter(f"bad gate {part!r}: {exc}", param_hint="--fail-under") from None
        if metric == "roc_auc" and name.strip() not in ("roc_auc", "auc"):
            raise typer.BadParameter(f"bad gate {part!r}: expected METRIC=FLOOR, e.g. roc_auc=0.8 or recall@0.5=0.6",
                                     param_hint="--fail-under")
        if metric in _LOWER_IS_BETTER:
            better = {"fpr": "specificity", "fnr": "recall"}[metric]
            raise typer.BadParameter(
                f"bad gate {part!r}: {metric} is better low, and --fail-under fails when a metric is below its "
                f"floor; gate on {better}@{threshold:g} (1 - {metric}) instead", param_hint="--fail-under")
        try:
            value = float(floor)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise typer.BadParameter(f"bad gate {part!r}: the floor must be a number such as 0.8",
                                     param_hint="--fail-under")
        out.append((metric, threshold, value))
    return out


def _check_gates(report: Any, gates: list[tuple[str, float | None, float]]) -> list[str]:
    """The gates ``report`` fails, as readable strings.

    A gate passes only when its metric is surely at or above its floor: for a metric that binning
    leaves in a range (ROC-AUC of continuous scores), its lower bound is compared. A sliced report
    is gated on all its rows together (its ``overall`` report); a note on stderr says so.
    """
    if not gates:
        return []
    target = getattr(report, "overall", None) or report
    if target is not report:
        typer.echo("note: --fail-under gates the metrics of all rows together, not each slice "
                   "(`streameval monitor check` tests each slice)", err=True)
    failed = []
    for metric, threshold, floor in gates:
        shown = ""
        if threshold is None:
            entry = target.metrics.get(metric) or {}
            value, lower = entry.get("value"), entry.get("lower", entry.get("value"))
            if value is not None and lower is not None and lower != value:
                value = lower
                shown = (f"{entry['lower']:.6g} (lower bound: the binning leaves the exact value in "
                         f"[{entry['lower']:.6g}, {entry['upper']:.6g}]; a finer --grid narrows it)")
            label = metric
        else:
            sk = target.sketch
            value = float(getattr(sk.confusion(threshold, positive_if=target.provenance.get("positive_if", ">=")), metric))
            label = f"{metric}@{threshold:g}"
        if value is None or not value >= floor:
            failed.append(f"{label} = {shown or ('undefined' if value is None else f'{value:.6g}')} < {floor:g}")
    return failed
