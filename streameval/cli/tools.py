"""``streameval generate`` (synthetic logs of any size) and ``streameval demo`` (a first run on sample data)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .main import Format, _emit, _run, app

__all__ = ["generate_cmd", "demo_cmd"]


@app.command("generate")
def generate_cmd(
    out: Path = typer.Argument(..., help="Output file: .parquet, .csv or .csv.gz.", show_default=False),
    rows: int = typer.Option(1_000_000, "--rows", "-n", metavar="N", help="Number of rows.", min=0),
    distribution: str = typer.Option("mid", "--distribution", "-d", metavar="NAME", help="mid, rare, calibrated, credit or logit."),
    prevalence: Optional[float] = typer.Option(None, "--prevalence", metavar="P", help="Share of positives (default per distribution)."),
    separation: Optional[float] = typer.Option(None, "--separation", metavar="D", help="Distance of the class means on the logit scale."),
    decimals: Optional[int] = typer.Option(None, "--decimals", metavar="K", help="Round scores to this many decimals (discrete scores)."),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Random seed."),
    dtype: str = typer.Option("float64", "--dtype", metavar="DTYPE", help="Score dtype: float64 or float32."),
    weight: bool = typer.Option(False, "--weight/--no-weight", help="Add a weight column."),
) -> None:
    """Write a synthetic prediction log of any size (columns score, label, optional weight, segment, ts)."""
    from .. import synthetic

    try:
        synthetic.LogSpec(rows, distribution=distribution, prevalence=prevalence, separation=separation,
                          decimals=decimals, seed=seed, score_dtype=dtype, weight=weight)
        if not str(out).lower().endswith((".parquet", ".pq", ".csv", ".csv.gz")):
            raise ValueError("use a .parquet, .csv or .csv.gz file name")
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    _run(lambda: synthetic.write_log(out, rows, distribution=distribution, prevalence=prevalence,
                                     separation=separation, decimals=decimals, seed=seed, score_dtype=dtype,
                                     weight=weight))
    typer.echo(f"wrote {rows:,} rows to {out}", err=True)


@app.command("demo")
def demo_cmd(
    rows: int = typer.Option(2_000_000, "--rows", "-n", metavar="N", help="Rows in the sample log.", min=1),
    directory: Path = typer.Option(Path("streameval-demo"), "--dir", help="Where to write the sample log."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Write a realistic sample prediction log (Parquet) and evaluate it: see it work on no data of your own."""
    from .. import synthetic
    from ..evaluate import evaluate

    def body() -> None:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "predictions.parquet"
        typer.echo(f"writing a sample fraud-model log of {rows:,} rows to {path} ...", err=True)
        synthetic.write_parquet(path, rows, distribution="calibrated", weight=True, seed=2024)
        # Operating thresholds as cuts of the grid: their confusion counts are exact, whatever the
        # scores; the rest of the report shows intervals where the scores are continuous.
        grid = "probability@0.1,0.3"
        cmd = (f"streameval eval {path} --score score --label label --weight weight --grid '{grid}' "
               "--threshold 0.1 --threshold 0.3")
        typer.echo(f"evaluating: {cmd}", err=True)
        report = evaluate(str(path), score="score", label="label", weight="weight", grid=grid,
                          thresholds=[0.1, 0.3], progress=not quiet)
        report.sketch.save(directory / "predictions.sketch")
        _emit(report, fmt, None)
        typer.echo(
            f"sketch saved to {directory / 'predictions.sketch'}; try `streameval report "
            f"{directory / 'predictions.sketch'} --threshold 0.2` (0.2 is not a cut: see the note)",
            err=True,
        )

    _run(body)
