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


def _parse_gates(text: Optional[str]) -> list[tuple[str, float | None, float]]:
    """``roc_auc=0.8,recall@0.5=0.6`` -> ``[(metric, threshold or None, floor), ...]``."""
    if not text:
        return []
    from ..stats import parse_metric

    out = []
    for part in text.split(","):
        name, sep, floor = part.partition("=")
        try:
            metric, threshold = parse_metric(name.strip())
            if metric == "roc_auc" and name.strip() not in ("roc_auc", "auc"):
                raise ValueError
            out.append((metric, threshold, float(floor)))
        except (ValueError, UsageError):
            raise typer.BadParameter(
                f"bad gate {part!r}: expected METRIC=FLOOR, e.g. roc_auc=0.8 or recall@0.5=0.6", param_hint="--fail-under"
            ) from None
        if not sep:
            raise typer.BadParameter(f"bad gate {part!r}: expected METRIC=FLOOR", param_hint="--fail-under")
    return out


def _check_gates(report: Any, gates: list[tuple[str, float | None, float]]) -> list[str]:
    """The gates ``report`` fails (a metric's value below its floor), as readable strings."""
    if not gates:
        return []
    target = getattr(report, "overall", None) or report
    failed = []
    for metric, threshold, floor in gates:
        if threshold is None:
            value = (target.metrics.get(metric) or {}).get("value")
            label = metric
        else:
            sk = target.sketch
            value = float(getattr(sk.confusion(threshold, positive_if=target.provenance.get("positive_if", ">=")), metric))
            label = f"{metric}@{threshold:g}"
        if value is None or not value >= floor:
            failed.append(f"{label} = {'undefined' if value is None else f'{value:.6g}'} < {floor:g}")
    return failed
