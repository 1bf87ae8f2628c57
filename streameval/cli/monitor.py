"""``streameval monitor``: ingest files into a store, report from it, check it for alerts, forget files.

A thin shell over :class:`streameval.monitor.Store` and :func:`streameval.monitor.check`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List, Optional

import typer

from .plainparams import PlainCommand, PlainGroup

monitor_app = typer.Typer(
    name="monitor",
    cls=PlainGroup,
    help="Incremental monitoring: a DuckDB store of per-(window, slice) sketches, reports and alerts.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,  # plain help: readable metavars, and no rich import for --help
)

_STORE = typer.Option(..., "--store", metavar="FILE", help="The store (a DuckDB file; created by the first ingest).")


def _shared() -> Any:
    from . import main as cli

    return cli


def _reading_process() -> None:
    """Set NumPy up for a command that reads a store (before NumPy is imported; the results are
    the same either way; variables the user set are left as they are):

    - no huge-page advice (``NUMPY_MADVISE_HUGEPAGE=0``): the command's arrays are written once
      and scanned once or twice, so fewer TLB misses gain nothing, while a huge-page fault costs
      far more than 512 small ones where memory is fragmented, as on virtual machines (here a
      fresh 58 MB array took 229-242 ms to fill with the advice, 65-67 ms without);
    - one OpenBLAS thread (``OPENBLAS_NUM_THREADS=1``): nothing here multiplies matrices, and
      starting its threads cost ~0.1 s of CPU per process on this 2-core machine.
    """
    if "numpy" not in sys.modules:
        import os

        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@monitor_app.command("ingest", cls=PlainCommand)
def ingest_cmd(
    paths: List[str] = typer.Argument(..., help="Files, directories or globs to ingest.", show_default=False),
    store: Path = _STORE,
    score: Optional[str] = typer.Option(None, "--score", "-s", metavar="COLUMN", help="Score column (first ingest; then the store's)."),
    label: Optional[str] = typer.Option(None, "--label", "-l", metavar="COLUMN", help="Label column; null labels count as unlabelled."),
    weight: Optional[str] = typer.Option(None, "--weight", "-w", metavar="COLUMN", help="Sample-weight column."),
    by: Optional[str] = typer.Option(None, "--by", "-b", metavar="COLUMNS", help="Slice columns, comma-separated."),
    time_col: Optional[str] = typer.Option(None, "--time", metavar="COLUMN", help="Time column."),
    window: Optional[str] = typer.Option(None, "--window", metavar="LENGTH", help="Window: 1h, 1d, 1w, 1mo, ..."),
    tz: Optional[str] = typer.Option(None, "--tz", metavar="ZONE", help="Time zone of the windows (default UTC)."),
    grid: Optional[str] = typer.Option(None, "--grid", "-g", metavar="GRID", help="Binning grid (see `eval --help`)."),
    pos_label: Optional[str] = typer.Option(None, "--pos-label", metavar="VALUE", help="Label value of the positive class."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", metavar="FILE", help="TOML job config ([eval] keys)."),
    skip_nan: Optional[bool] = typer.Option(None, "--skip-nan/--no-skip-nan", help="Skip rows with NaN/null scores (counted) instead of failing."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
) -> None:
    """Ingest files: new ones are added, changed ones (late labels) replaced, unchanged ones skipped."""
    cli = _shared()
    cfg = cli._load_config(config) if config is not None else {}

    def pick(value: Any, key: str) -> Any:
        return value if value is not None else cfg.get(key)

    by_ = pick(by, "by")
    if isinstance(by_, str):
        by_ = [b.strip() for b in by_.split(",") if b.strip()]
    # keys of a shared [eval] config that would change what is stored if they were dropped
    unused = [key for key in ("sql", "table", "require_labels") if cfg.get(key)]
    if unused:
        raise typer.BadParameter(
            f"{config}: {', '.join(unused)} apply to `eval` only: `monitor ingest` reads the files it is given and "
            "keeps rows whose label is null as unlabelled; drop them from the config", param_hint="--config")
    extra = {"max_groups": cfg["max_groups"]} if "max_groups" in cfg else {}

    def body() -> None:
        from ..monitor import Store

        with Store(store) as st:
            results = st.ingest(paths, score=pick(score, "score"), label=pick(label, "label"),
                                weight=pick(weight, "weight"), by=by_, time=pick(time_col, "time"),
                                window=pick(window, "window"), tz=pick(tz, "tz"), grid=pick(grid, "grid"),
                                pos_label=pick(pos_label, "pos_label"), where=cfg.get("where"),
                                nan_policy="skip" if pick(skip_nan, "skip_nan") else "raise", **extra)
        if not quiet:
            for r in results:
                what = {"added": f"added {r.rows:,} rows in {r.groups:,} groups",
                        "replaced": f"replaced with {r.rows:,} rows in {r.groups:,} groups",
                        "unchanged": "unchanged, skipped"}[r.action]
                typer.echo(f"{r.path}: {what}", err=True)

    cli._run(body)


@monitor_app.command("forget", cls=PlainCommand)
def forget_cmd(
    paths: List[str] = typer.Argument(..., help="Files whose contribution to remove.", show_default=False),
    store: Path = _STORE,
) -> None:
    """Remove files' contributions from the store (each in one transaction)."""
    cli = _shared()

    def body() -> None:
        from ..monitor import Store

        if not store.exists():  # opening it for writing would create an empty store
            raise FileNotFoundError(2, "no such store", str(store))
        with Store(store) as st:
            for p in paths:
                typer.echo(f"{p}: {'forgotten' if st.forget(p) else 'not in the store'}", err=True)

    cli._run(body)


@monitor_app.command("report", cls=PlainCommand)
def report_cmd(
    store: Path = _STORE,
    by: Optional[str] = typer.Option(None, "--by", "-b", metavar="COLUMNS", help="Slice columns to keep (default: the store's); '' for none."),
    window: Optional[str] = typer.Option(None, "--window", metavar="LENGTH", help="Roll windows up to this length, or 'all'."),
    since: Optional[str] = typer.Option(None, "--since", metavar="WHEN", help="From this date, or a length such as 30d before the newest window."),
    reference: Optional[str] = typer.Option(None, "--reference", metavar="PERIOD", help="Add psi: score drift of each row against its slice in this period (START:END dates, or a length such as 30d)."),
    threshold: Optional[List[str]] = typer.Option(None, "--threshold", "-t", metavar="T[,T...]", help="Thresholds for rate columns: -t 0.3,0.5 or repeated."),
    ci: bool = typer.Option(False, "--ci", help="Add DeLong 95% CIs of the AUC."),
    fmt: Optional[str] = typer.Option("table", "--format", "-f", help="table, json, csv or markdown."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write to this file."),
    html_path: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="Also write a self-contained HTML page: metrics over windows per slice, PSI, worst slices."),
    alerts: Optional[Path] = typer.Option(None, "--alerts", metavar="FILE", help="With --html or --png: mark the alerts of this `monitor check --format json` output."),
    png_dir: Optional[Path] = typer.Option(None, "--png", metavar="DIR", help="Also write the plots as PNG files to DIR."),
) -> None:
    """Merge the store on read and print one row per (window, slice)."""
    cli = _shared()
    try:
        fmt_ = cli.Format(fmt)
    except ValueError:
        raise typer.BadParameter(f"unknown format {fmt!r}", param_hint="--format") from None

    def body() -> None:
        _reading_process()
        from ..monitor.alerts import parse_period, parse_since
        from ..monitor.store import Store
        from ..report.slices import SliceTable

        with Store(store, read_only=True) as st:
            tz = st.job.get("tz") if st.job else None
            start = None if since is None else parse_since(since, st.newest_window(), tz)
            keep = None if by is None else [b.strip() for b in by.split(",") if b.strip()]
            ss = st.sketchset(by=keep, window=window, since=start)
            ref = None
            if reference is not None:
                a, b = parse_period(reference, st.newest_window(), tz)
                ref = st.sketchset(by=keep, window="all", since=a, until=b)
            table = SliceTable.from_sketchset(ss, thresholds=cli.parse_thresholds(threshold), ci=_ci_options() if ci else None,
                                              provenance={"source": str(store), **({"reference": reference} if ref is not None else {})},
                                              reference=ref)
        cli._emit(table, fmt_, output)
        alert_doc = None
        if alerts is not None:
            import json

            try:
                alert_doc = json.loads(alerts.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise cli.UsageError(f"--alerts {alerts}: not the JSON of `monitor check --format json` ({exc})") from None
        cli._write_html(table, html_path, alert_doc)
        cli._write_images(table, png_dir, None, alerts=alert_doc)

    cli._run(body)


def _ci_options() -> Any:
    from ..report.binary import CIOptions  # only with --ci: the single-sketch report module is not on the report path

    return CIOptions()


@monitor_app.command("check", cls=PlainCommand)
def check_cmd(
    store: Path = _STORE,
    reference: str = typer.Option(..., "--reference", metavar="PERIOD", help="Reference period: START:END dates, or a length such as 30d."),
    current: str = typer.Option("7d", "--current", metavar="PERIOD", help="Current period (default the last 7d of windows)."),
    metric: str = typer.Option("roc_auc", "--metric", "-m", metavar="METRIC", help="roc_auc, or a rate at a threshold such as recall@0.5."),
    by: Optional[str] = typer.Option(None, "--by", "-b", metavar="COLUMNS", help="Slice columns (default: the store's)."),
    min_effect: float = typer.Option(0.0, "--min-effect", metavar="X", min=0.0, help="Smallest change worth an alert."),
    alpha: float = typer.Option(0.05, "--alpha", metavar="P", min=0.0, max=1.0, help="False discovery rate across slices."),
    direction: Optional[str] = typer.Option(None, "--direction", metavar="DIR", help="decrease, increase or both (default: the harmful one)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
) -> None:
    """Compare each slice's current period with its reference; exit 3 when an alert fires.

    Each slice is tested (DeLong for AUC, two proportions for rates), the p-values are corrected
    with Benjamini-Hochberg, and a slice alerts when its change is significant and at least
    --min-effect in the harmful direction. Slices are ranked by contribution to the overall change.
    """
    cli = _shared()
    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"unknown format {fmt!r}: table or json", param_hint="--format")

    def body() -> None:
        _reading_process()
        from ..monitor import Store, check

        with Store(store, read_only=True) as st:
            keep = None if by is None else [b.strip() for b in by.split(",") if b.strip()]
            table = check(st, reference=reference, current=current, metric=metric, by=keep, min_effect=min_effect,
                          alpha=alpha, direction=direction)
        sys.stdout.write(table.to_json() + "\n" if fmt == "json" else table.to_text())
        if table.fired:
            raise typer.Exit(cli.EXIT_ALERT)

    cli._run(body)
