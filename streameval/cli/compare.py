"""``streameval compare`` (two independent samples) and ``eval --paired`` (two models on the same rows)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .main import _RULE_HELP, EXIT_ALERT, Format, Rule, _run, app

__all__ = ["compare_cmd", "run_paired"]


@app.command("compare")
def compare_cmd(
    first: Path = typer.Argument(..., help="Sketch of the first sample (e.g. this week).", show_default=False),
    second: Path = typer.Argument(..., help="Sketch of the second sample (e.g. the reference period).", show_default=False),
    metric: str = typer.Option("roc_auc", "--metric", "-m", metavar="METRIC", help="roc_auc, or a rate at a threshold: recall@0.5, precision@0.8, fpr@0.3, ..."),
    level: float = typer.Option(0.95, "--level", metavar="P", min=0.5, max=0.999999, help="Confidence level."),
    alpha: Optional[float] = typer.Option(
        None, "--fail-if-different", min=0.0, max=1.0, metavar="ALPHA",
        help="Exit 3 when the difference is significant at this level (p < ALPHA), to gate a job.",
    ),
    rule: Rule = typer.Option(Rule.ge, "--rule", help=_RULE_HELP),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="table (one line) or json."),
    bootstrap: bool = typer.Option(
        False, "--bootstrap", help="Bootstrap test from the sketches' replicates (built with --bootstrap R): any metric, "
        "e.g. average_precision, f1@0.5, log_loss.",
    ),
) -> None:
    """Compare a metric between two independent samples: the difference, its CI and a test (DeLong for AUC)."""

    def body() -> None:
        import json

        from ..sketch.binary import load
        from ..stats import compare

        a, b = load(first), load(second)
        if bootstrap:
            from ..stats.bootstrap import compare_bootstrap

            c = compare_bootstrap(a, b, metric, level, paired=False, positive_if=rule.value)  # type: ignore[arg-type]
        else:
            c = compare(a, b, metric, level=level, positive_if=rule.value)
        significant = alpha is not None and c.p_value.upper < alpha
        if fmt == Format.json:
            sys.stdout.write(json.dumps({"first": str(first), "second": str(second), "metric": metric,
                                         **c.to_dict()}, indent=2, default=str) + "\n")
        else:
            typer.echo(f"{metric}: {first} vs {second}: {c}")
            typer.echo(f"verdict: {verdict(c)}")
        if significant:
            raise typer.Exit(EXIT_ALERT)

    _run(body)


def verdict(c: Any) -> str:
    """One of: undefined, significant, not significant, or undecided at the grid's resolution."""
    import math

    alpha = 1.0 - c.level
    if math.isnan(c.p_value.value):
        return "the test is undefined for these sketches (see the warnings): no verdict"
    if c.p_value.upper < alpha:
        return f"the two samples differ at the {100 * alpha:g}% level (p={c.p_value.upper:.3g})"
    if c.p_value.lower >= alpha:
        return f"the two samples do not differ significantly at the {100 * alpha:g}% level (p={c.p_value.lower:.3g})"
    return (f"undecided at this grid's resolution: p lies in [{c.p_value.lower:.3g}, {c.p_value.upper:.3g}] around "
            f"{alpha:g}; a finer --grid settles it")


def run_paired(sources: list[str], scores: list[str], options: dict[str, Any], fmt: Format,
               output: Optional[Path], alpha: Optional[float]) -> None:
    """``eval --score A --score B --paired``: DeLong's paired test (and the paired bootstrap)."""
    import json

    from ..errors import UsageError
    from ..paired_eval import compare_paired

    if len(scores) != 2:
        raise UsageError(f"--paired compares two models: give two score columns (--score A --score B), got {len(scores)}")
    result = compare_paired(sources or None, scores=scores, **options)
    if fmt == Format.json:
        text = json.dumps(result.to_dict(), indent=2, default=str) + "\n"
    else:
        text = str(result) + "\n"
    if output is not None:
        from ..atomic import write_bytes_atomic

        write_bytes_atomic(output, text.encode())
    else:
        sys.stdout.write(text)
    if alpha is not None and result.delong.p_value.upper < alpha:
        raise typer.Exit(EXIT_ALERT)
