"""The ``streameval`` command: a thin shell over :func:`streameval.evaluate` and friends.

Each command parses its options, calls one library function and prints the result.

Exit codes: 0 success; 1 data error (missing file or column, bad labels, NaN scores, empty input,
corrupt sketch file, ...); 2 usage error (unknown option, bad grid or format, bad config file).
Errors go to stderr as ``error: <message>``; they name the file, the column and the problem.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer

from ..errors import StreamevalError, UsageError
from .options import FORMAT_VERSION_HELP, _check_gates, _parse_gates, check_format_version, parse_thresholds
from .plainparams import PlainGroup

EXIT_OK, EXIT_DATA_ERROR, EXIT_USAGE_ERROR, EXIT_ALERT = 0, 1, 2, 3

app = typer.Typer(
    name="streameval",
    cls=PlainGroup,  # plain option values without pydantic (cli/plainparams.py)
    help=(
        "Evaluate binary classifiers over prediction logs too big for memory: exact metrics on "
        "discrete scores, rigorous intervals otherwise; sketches of shards merge exactly.\n\n"
        "Exit codes: 0 success, 1 data error, 2 usage error, 3 a gate failed (--fail-under, --fail-if-different)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,  # plain help: readable metavars, and no rich import for --help
)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"streameval {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main_options(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Evaluate binary classifiers over prediction logs too big for memory."""


class Rule(str, Enum):
    """Threshold rules."""

    ge = ">="
    gt = ">"


_RULE_HELP = "Positive iff score >= threshold (default, scikit-learn's) or score > threshold."


class AucCI(str, Enum):
    """ROC-AUC confidence interval methods."""

    delong = "delong"
    hanley_mcneil = "hanley_mcneil"
    bootstrap = "bootstrap"


class RateCI(str, Enum):
    """Rate (proportion) confidence interval methods."""

    wilson = "wilson"
    clopper_pearson = "clopper_pearson"
    jeffreys = "jeffreys"
    bootstrap = "bootstrap"


def _ci(on: bool, level: float, auc: AucCI, rate: RateCI, bootstrap: Optional[int] = None) -> Any:
    if not on and not bootstrap:
        return None
    from ..report import CIOptions

    if bootstrap:  # replicates asked for: they give the intervals unless a method was named
        auc = AucCI.bootstrap if auc is AucCI.delong else auc
        rate = RateCI.bootstrap if rate is RateCI.wilson else rate
    elif AucCI.bootstrap in (auc,) or rate is RateCI.bootstrap:
        raise UsageError("bootstrap intervals need replicates: add --bootstrap R (e.g. 200), ideally with --row-id")
    return CIOptions(level=level, auc_method=auc.value, rate_method=rate.value)


class Engine(str, Enum):
    """Where `eval --engine` runs."""

    local = "local"
    spark = "spark"
    dask = "dask"


class Format(str, Enum):
    """Report output formats."""

    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


CONFIG_KEYS = {
    "source": (str, list),
    "score": (str,),
    "label": (str,),
    "weight": (str,),
    "pos_label": (str, int, float, bool),
    "grid": (str,),
    "thresholds": (list,),
    "where": (str,),
    "sql": (str,),
    "table": (str,),
    "format": (str,),
    "save_sketch": (str,),
    "format_version": (int,),
    "skip_nan": (bool,),
    "batch_rows": (int,),
    "threads": (int,),
    "rule": (str,),
    "by": (str, list),
    "time": (str,),
    "window": (str,),
    "tz": (str,),
    "require_labels": (bool,),
    "max_groups": (int,),
}


def _error(message: str, code: int = EXIT_DATA_ERROR) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _run(fn: Callable[[], Any]) -> Any:
    """Run a command body, turning data errors into exit code 1 with a one-line message."""
    try:
        return fn()
    except UsageError as exc:
        raise _error(str(exc), EXIT_USAGE_ERROR) from None
    except (StreamevalError, OSError) as exc:
        if isinstance(exc, OSError) and exc.filename is not None:
            raise _error(f"{exc.filename}: {exc.strerror or exc}") from None
        raise _error(str(exc)) from None
    except ImportError as exc:
        raise _error(str(exc)) from None


def _load_config(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise typer.BadParameter(f"{path}: no such file", param_hint="--config") from None
    except tomllib.TOMLDecodeError as exc:
        raise typer.BadParameter(f"{path}: not valid TOML ({exc})", param_hint="--config") from None
    data = dict(data.get("eval", data))
    for key, value in data.items():
        if key not in CONFIG_KEYS:
            raise typer.BadParameter(
                f"{path}: unknown key {key!r}; known keys: {', '.join(CONFIG_KEYS)}", param_hint="--config"
            )
        if not isinstance(value, CONFIG_KEYS[key]):
            raise typer.BadParameter(f"{path}: {key} has the wrong type ({type(value).__name__})", param_hint="--config")
    bad = [t for t in data.get("thresholds", []) if isinstance(t, bool) or not isinstance(t, (int, float))]
    if bad:
        raise typer.BadParameter(f"{path}: thresholds must be numbers, got {bad[0]!r}", param_hint="--config")
    for key in ("batch_rows", "threads"):
        if key in data and data[key] < 1:
            raise typer.BadParameter(f"{path}: {key} must be >= 1, got {data[key]}", param_hint="--config")
    base = path.parent
    if "source" in data:
        sources = [data["source"]] if isinstance(data["source"], str) else list(data["source"])
        data["source"] = [s if os.path.isabs(s) else str(base / s) for s in sources]
    if "save_sketch" in data and not os.path.isabs(data["save_sketch"]):
        data["save_sketch"] = str(base / data["save_sketch"])
    return data


def _save(sketch: Any, path: Path, format_version: int | None = None) -> None:
    """Save a sketch, creating its folder (``--save-sketch sk/day.sketch`` just works)."""
    from ..sketch.binary import BinarySketch

    if format_version is not None and not isinstance(sketch, BinarySketch):
        raise UsageError("--format-version applies to binary sketches; multiclass sketches have one layout")
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise type(exc)(exc.errno, f"cannot create its folder ({exc.strerror})", str(path)) from None
    if format_version is None:
        sketch.save(path)
    else:
        sketch.save(path, format_version=format_version)


def _parse_grid(text: str | None) -> Any:
    if text is None:
        return None
    from ..grid import parse_grid

    try:
        return parse_grid(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--grid") from None


def _console(err: bool = False) -> Any:
    from rich.console import Console

    stream = sys.stderr if err else sys.stdout
    return Console(file=stream, width=None if stream.isatty() else 120, soft_wrap=False)


def _write_html(report: Any, path: Optional[Path], alerts: Any = None) -> None:
    """Write the HTML page of a report or a sliced result (with ``alerts``, a ``monitor check`` result)."""
    if path is None:
        return
    from ..report.html import write_html

    if alerts is None:
        write_html(report, path)
    else:
        write_html(report, path, alerts=alerts)


def _write_images(report: Any, png_dir: Optional[Path], svg_dir: Optional[Path], **options: Any) -> None:
    """Write the report's plots as PNG and/or SVG files (vl-convert; no browser)."""
    if png_dir is None and svg_dir is None:
        return
    from ..report.html.images import write_images

    for fmt, directory in (("png", png_dir), ("svg", svg_dir)):
        if directory is not None:
            write_images(report, directory, fmt, **options)


def _emit(report: Any, fmt: Format, output: Optional[Path], quiet: bool = False) -> None:
    """Write the report as asked; ``quiet`` drops only the default terminal table, never asked-for output."""
    if fmt == Format.json:
        text = report.to_json() + "\n"
    elif fmt == Format.markdown:
        text = report.to_markdown()
    elif fmt == Format.csv:
        if not hasattr(report, "to_csv"):
            raise UsageError("--format csv is for sliced results (--by/--window); use json or markdown here")
        text = report.to_csv()
    else:
        text = None
        if quiet and output is None:
            return
    if output is not None:
        from ..atomic import write_text_atomic

        write_text_atomic(output, text if text is not None else report.to_text(width=120))
        return
    if text is not None:
        sys.stdout.write(text)
    else:
        _console().print(report)


_SOURCES_HELP = (
    "Parquet, CSV (.csv, .csv.gz), TSV (.tsv, .tsv.gz), Arrow IPC/Feather or NDJSON files, directories (hive "
    "partitions become columns) or globs; or a .duckdb database file."
)


@app.command("eval")
def eval_cmd(
    sources: Optional[List[str]] = typer.Argument(None, help=_SOURCES_HELP, show_default=False, metavar="SOURCE"),
    score: Optional[List[str]] = typer.Option(
        None, "--score", "-s", metavar="COLUMN",
        help="Score column, or an SQL expression; several (or a glob such as 'p_*') for multiclass, two with --paired.",
    ),
    label: Optional[str] = typer.Option(
        None, "--label", "-l", metavar="COLUMN", help="Label column, or an SQL expression such as \"status = 'fraud'\"."
    ),
    weight: Optional[str] = typer.Option(None, "--weight", "-w", metavar="COLUMN", help="Sample-weight column or expression."),
    pos_label: Optional[str] = typer.Option(None, "--pos-label", metavar="VALUE", help="Label value of the positive class."),
    grid: Optional[str] = typer.Option(
        None, "--grid", "-g", metavar="GRID", help="Binning grid: probability[:BITS] (default), float[:BITS], linear:LO:HI:BINS; append @T1,T2 to cut bins at thresholds (exact counts there), e.g. probability@0.5."
    ),
    threshold: Optional[List[str]] = typer.Option(
        None, "--threshold", "-t", metavar="T[,T...]", help="Thresholds for confusion counts: -t 0.3,0.5 or repeated. Default 0.5 for probabilities."
    ),
    where: Optional[str] = typer.Option(None, "--where", metavar="SQL", help="SQL filter on the rows (run by DuckDB)."),
    sql: Optional[str] = typer.Option(
        None, "--sql", metavar="SQL", help="DuckDB query giving the rows; the SOURCE files are the view `data`."
    ),
    table: Optional[str] = typer.Option(None, "--table", metavar="NAME", help="Table to read from a .duckdb SOURCE."),
    fmt: Optional[Format] = typer.Option(None, "--format", "-f", help="Output format (default table)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write the report to this file."),
    save_sketch: Optional[Path] = typer.Option(
        None, "--save-sketch", metavar="FILE", help="Save the sketch to this file (to merge or re-report later)."
    ),
    format_version: Optional[int] = typer.Option(
        None, "--format-version", metavar="N", help="With --save-sketch: " + FORMAT_VERSION_HELP[0].lower() + FORMAT_VERSION_HELP[1:]
    ),
    config: Optional[Path] = typer.Option(None, "--config", "-c", metavar="FILE", help="TOML job config; options given here override it."),
    skip_nan: Optional[bool] = typer.Option(
        None, "--skip-nan/--no-skip-nan", help="Skip rows with NaN/null scores (counted in the report) instead of failing."
    ),
    batch_rows: Optional[int] = typer.Option(None, "--batch-rows", metavar="N", help="Rows per batch (memory vs. overhead).", min=1),
    threads: Optional[int] = typer.Option(
        None, "--threads", "-j", metavar="N", help="Threads for reading and binning (default: all CPUs).", min=1
    ),
    rule: Optional[Rule] = typer.Option(None, "--rule", help=_RULE_HELP),
    by: Optional[str] = typer.Option(
        None, "--by", "-b", metavar="COLUMNS", help="Slice by these columns (comma-separated): one row per slice."
    ),
    time_col: Optional[str] = typer.Option(None, "--time", metavar="COLUMN", help="Time column for --window."),
    window: Optional[str] = typer.Option(
        None, "--window", metavar="LENGTH", help="Tumbling time windows: 1h, 1d, 1w, 1mo, ... (needs --time)."
    ),
    tz: Optional[str] = typer.Option(None, "--tz", metavar="ZONE", help="Time zone windows align to (default UTC)."),
    require_labels: Optional[bool] = typer.Option(
        None, "--require-labels/--allow-unlabelled",
        help="With --by/--window: null labels are an error (default: counted as unlabelled, labels arrive late).",
    ),
    max_groups: Optional[int] = typer.Option(None, "--max-groups", min=1, help="Cap on (window, slice) groups."),
    fail_under: Optional[str] = typer.Option(
        None, "--fail-under", metavar="GATES",
        help="Exit 3 if a metric is below its floor, e.g. roc_auc=0.8,recall@0.5=0.6 (for CI pipelines).",
    ),
    ci: bool = typer.Option(False, "--ci", help="Add 95% confidence intervals (sampling uncertainty; DeLong for AUC, Wilson for rates)."),
    level: float = typer.Option(0.95, "--level", metavar="P", min=0.5, max=0.999999, help="Confidence level for --ci."),
    auc_ci: AucCI = typer.Option(AucCI.delong, "--auc-ci", help="ROC-AUC interval method for --ci."),
    rate_ci: RateCI = typer.Option(RateCI.wilson, "--rate-ci", help="Rate interval method for --ci."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar, and no table on the terminal (asked-for --format or -o output still comes)."),
    html_path: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="Also write a self-contained HTML report with plots to FILE."),
    png_dir: Optional[Path] = typer.Option(None, "--png", metavar="DIR", help="Also write the report's plots as PNG files (one per plot) to DIR; --svg for SVG."),
    svg_dir: Optional[Path] = typer.Option(None, "--svg", metavar="DIR", help="Also write the report's plots as SVG files to DIR."),
    engine: Engine = typer.Option(Engine.local, "--engine", help="Where to evaluate files: here, on Spark (active session, else SPARK_MASTER or local[*]) or on Dask (active client)."),
    bootstrap: Optional[int] = typer.Option(
        None, "--bootstrap", metavar="R", min=2, help="Keep R Poisson-bootstrap replicates: bootstrap CIs of AUC, AP and the rates (implies --ci).",
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", min=0, help="Seed of the bootstrap weights."),
    row_id: Optional[str] = typer.Option(
        None, "--row-id", metavar="COLUMN", help="Row identifier keying the bootstrap weights (shards then merge into one pass's replicates).",
    ),
    paired: bool = typer.Option(
        False, "--paired", help="Two --score columns of two models on the same rows: DeLong's paired test (two passes) and, with --bootstrap, the paired bootstrap.",
    ),
) -> None:
    """Evaluate a prediction log: read it batch by batch and report metrics with their bounds."""
    cfg = _load_config(config) if config is not None else {}

    def pick(value: Any, key: str, default: Any = None) -> Any:
        return value if value is not None else cfg.get(key, default)

    srcs = list(sources) if sources else cfg.get("source", [])
    score_ = pick((score[0] if len(score) == 1 else list(score)) if score else None, "score")
    label_ = pick(label, "label")
    sql_ = pick(sql, "sql")
    if score_ is None:
        raise typer.BadParameter("give the score column (--score, or `score =` in the config)", param_hint="--score")
    if label_ is None:
        raise typer.BadParameter("give the label column (--label, or `label =` in the config)", param_hint="--label")
    if not srcs and sql_ is None:
        raise typer.BadParameter("give SOURCE files or a --sql query", param_hint="SOURCE")
    grid_ = _parse_grid(pick(grid, "grid"))
    thresholds = parse_thresholds(threshold) if threshold else cfg.get("thresholds")
    fmt_text = fmt.value if fmt is not None else cfg.get("format", "table")
    try:
        fmt_ = Format(fmt_text)
    except ValueError:
        raise typer.BadParameter(f"unknown format {fmt_text!r}; choose table, json or markdown", param_hint="--format") from None
    save = save_sketch if save_sketch is not None else (Path(cfg["save_sketch"]) if "save_sketch" in cfg else None)
    format_version_ = check_format_version(pick(format_version, "format_version"))
    if format_version_ is not None and save is None:
        raise typer.BadParameter("--format-version says how to write the sketch file: give --save-sketch FILE too",
                                 param_hint="--format-version")
    gates = _parse_gates(fail_under)
    by_ = pick(by, "by")
    if isinstance(by_, str):
        by_ = [b.strip() for b in by_.split(",") if b.strip()]
    rule_text = rule.value if rule is not None else cfg.get("rule", ">=")
    if rule_text not in (">=", ">"):
        raise typer.BadParameter(f"unknown rule {rule_text!r}; use '>=' or '>'", param_hint="--rule")
    if save is not None:  # a sketch file that cannot be written is refused before anything is read
        from ..multiclass_eval import is_multiclass_score

        kind = "--paired" if paired else "--by" if by_ else "--window" if pick(window, "window") else None
        if kind is not None:
            raise typer.BadParameter(f"--save-sketch writes one sketch; a {kind} evaluation has none to save yet "
                                     "(`streameval monitor ingest` keeps sketches per window and slice)",
                                     param_hint="--save-sketch")
        if format_version_ is not None and not paired and is_multiclass_score(score_):
            raise typer.BadParameter("several --score columns make a multiclass sketch, which --save-sketch writes in "
                                     "its one layout: drop --format-version", param_hint="--format-version")

    def _on_engine() -> Any:
        if not srcs or sql_ is not None or pick(where, "where") or pick(table, "table"):
            raise UsageError("--engine spark|dask reads SOURCE files; --sql, --table and --where run on the local engine")
        from ..engines.files import evaluate_files

        return evaluate_files(
            engine.value, srcs, score=score_, label=label_, weight=pick(weight, "weight"), grid=grid_,
            pos_label=pick(pos_label, "pos_label"), nan_policy="skip" if pick(skip_nan, "skip_nan", False) else "raise",
            thresholds=thresholds, positive_if=rule_text, ci=_ci(ci, level, auc_ci, rate_ci),
            by=by_, time=pick(time_col, "time"), window=pick(window, "window"), tz=pick(tz, "tz"),
            require_labels=bool(pick(require_labels, "require_labels", False)), max_groups=pick(max_groups, "max_groups"),
        )

    def body() -> None:
        from ..evaluate import evaluate
        from ..sources import DEFAULT_BATCH_ROWS

        if paired:
            from .compare import run_paired

            scores = score_ if isinstance(score_, list) else [s.strip() for s in str(score_).split(",")]
            options = dict(label=label_, weight=pick(weight, "weight"), grid=grid_, pos_label=pick(pos_label, "pos_label"),
                           where=pick(where, "where"), sql=sql_, table=pick(table, "table"), level=level,
                           nan_policy="skip" if pick(skip_nan, "skip_nan", False) else "raise",
                           bootstrap=bootstrap, seed=seed, row_id=row_id)
            return run_paired(srcs, scores, options, fmt_, output, None)
        if engine is not Engine.local:
            report = _on_engine()
        else:
            report = evaluate(
                srcs or None,
                score=score_,
                label=label_,
                weight=pick(weight, "weight"),
                grid=grid_,
                pos_label=pick(pos_label, "pos_label"),
                where=pick(where, "where"),
                sql=sql_,
                table=pick(table, "table"),
                thresholds=thresholds,
                nan_policy="skip" if pick(skip_nan, "skip_nan", False) else "raise",
                batch_rows=pick(batch_rows, "batch_rows", DEFAULT_BATCH_ROWS),
                progress=not quiet,
                threads=pick(threads, "threads"),
                positive_if=rule_text,
                by=by_,
                time=pick(time_col, "time"),
                window=pick(window, "window"),
                tz=pick(tz, "tz"),
                require_labels=bool(pick(require_labels, "require_labels", False)),
                max_groups=pick(max_groups, "max_groups"),
                ci=_ci(ci, level, auc_ci, rate_ci, bootstrap),
                bootstrap=bootstrap,
                seed=seed,
                row_id=row_id,
            )
        if save is not None:
            if not hasattr(getattr(report, "sketch", None), "save"):
                raise UsageError("--save-sketch is not available for this kind of evaluation yet")
            _save(report.sketch, save, format_version_)
            report.provenance["sketch_file"] = str(save)
        _emit(report, fmt_, output, quiet=quiet and fmt is None and "format" not in cfg)
        _write_html(report, html_path)
        _write_images(report, png_dir, svg_dir)
        failed = _check_gates(report, gates)
        if failed:
            typer.echo("gate failed: " + "; ".join(failed), err=True)
            raise typer.Exit(EXIT_ALERT)

    _run(body)


@app.command("merge")
def merge_cmd(
    sketches: List[Path] = typer.Argument(
        ..., help="Sketch files, folders (their *.sketch files) or globs to merge (all on the same grid).", show_default=False
    ),
    out: Path = typer.Option(..., "--output", "-o", metavar="FILE", help="File to write the merged sketch to."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
    strict: bool = typer.Option(False, "--strict", help="Refuse (exit 1) when an input file would be counted twice."),
    threads: Optional[int] = typer.Option(None, "--threads", "-j", metavar="N", min=1, help="Threads that load and fold (default: all CPUs)."),
    format_version: Optional[int] = typer.Option(None, "--format-version", metavar="N", help=FORMAT_VERSION_HELP),
) -> None:
    """Merge sketches of shards (days, partitions, workers) into one; exact, order-free.

    Each thread loads and folds its share of the files into a running sketch, so memory does not
    grow with their number. Each sketch made by `eval` records its input files; merging one twice
    warns (or with --strict fails). Merging one file with --format-version 1 converts it for older
    readers.
    """
    check_format_version(format_version)

    def body() -> None:
        import warnings

        from ..sketch.files import expand_sketch_paths, file_kind, merge_files
        from ..sketch.provenance import DuplicateInputWarning

        files = expand_sketch_paths(sketches)
        if format_version is not None and files and file_kind(files[0]) != "binary":
            raise UsageError(f"--format-version applies to binary sketches; {files[0]} is a multiclass sketch, "
                             "which has one layout: drop --format-version")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DuplicateInputWarning)
            merged = merge_files(files, strict=strict, threads=threads)
        for w in caught:
            typer.echo(f"warning: {w.message}", err=True)
        _save(merged, out, format_version)
        if not quiet:
            typer.echo(f"merged {len(files)} sketches ({merged.n_rows:,} rows) into {out}", err=True)

    _run(body)


@app.command("report")
def report_cmd(
    sketch: Path = typer.Argument(..., help="A sketch file written by `eval --save-sketch` or `merge`.", show_default=False),
    threshold: Optional[List[str]] = typer.Option(
        None, "--threshold", "-t", metavar="T[,T...]", help="Thresholds for confusion counts: -t 0.3,0.5 or repeated. Default 0.5 for probabilities."
    ),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE", help="Write the report to this file."),
    rule: Rule = typer.Option(Rule.ge, "--rule", help=_RULE_HELP),
    ci: bool = typer.Option(False, "--ci", help="Add 95% confidence intervals (sampling uncertainty; DeLong for AUC, Wilson for rates)."),
    level: float = typer.Option(0.95, "--level", metavar="P", min=0.5, max=0.999999, help="Confidence level for --ci."),
    auc_ci: AucCI = typer.Option(AucCI.delong, "--auc-ci", help="ROC-AUC interval method for --ci."),
    rate_ci: RateCI = typer.Option(RateCI.wilson, "--rate-ci", help="Rate interval method for --ci."),
    html_path: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="Also write a self-contained HTML report with plots to FILE."),
    png_dir: Optional[Path] = typer.Option(None, "--png", metavar="DIR", help="Also write the report's plots as PNG files (one per plot) to DIR; --svg for SVG."),
    svg_dir: Optional[Path] = typer.Option(None, "--svg", metavar="DIR", help="Also write the report's plots as SVG files to DIR."),
) -> None:
    """Report the metrics of a saved sketch (no data needed)."""

    def body() -> None:
        from ..report import Report
        from ..sketch.binary import load
        from ..sketch.multiclass import MulticlassSketch

        s = load(sketch)
        report: Any
        if isinstance(s, MulticlassSketch):
            from ..report import MulticlassReport

            report = MulticlassReport.from_sketch(s, provenance={"source": str(sketch), "sketch_file": str(sketch)})
        else:
            report = Report.from_sketch(s, thresholds=parse_thresholds(threshold) if threshold else None,
                                        provenance={"source": str(sketch), "sketch_file": str(sketch)},
                                        positive_if=rule.value, ci=_ci(ci, level, auc_ci, rate_ci))
        _emit(report, fmt, output)
        _write_html(report, html_path)
        _write_images(report, png_dir, svg_dir)

    _run(body)


def _add_monitor() -> None:
    from .monitor import monitor_app

    app.add_typer(monitor_app, name="monitor")


_add_monitor()
from . import compare as _compare_cmds  # noqa: E402,F401  (registers `compare` on app)
from . import tools as _tool_cmds  # noqa: E402,F401  (registers `generate` and `demo`)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
