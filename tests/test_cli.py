"""Tests of the streameval command line: results, help, exit codes and error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from streameval import synthetic
from streameval.cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ["eval", "merge", "report", "generate", "demo"]


def run(*args: str):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    path = d / "log.parquet"
    synthetic.write_parquet(path, 6000, decimals=3, seed=31, row_group_rows=2000)
    return path


def _json(result) -> dict:
    assert result.exit_code == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


def test_every_command_has_help():
    top = run("--help")
    assert top.exit_code == 0
    for cmd in COMMANDS:
        assert cmd in top.stdout
        r = run(cmd, "--help")
        assert r.exit_code == 0 and "Usage" in r.stdout
        doc = app.registered_commands[COMMANDS.index(cmd)].callback.__doc__
        assert doc and doc.strip()
    docs = (ROOT / "docs" / "cli.md").read_text()
    for cmd in COMMANDS:
        assert f"streameval {cmd}" in docs


def test_eval_json_matches_sklearn(log):
    d = _json(run("eval", log, "--score", "score", "--label", "label", "--format", "json", "-t", "0.5", "-t", "0.25"))
    t = pq.read_table(log)
    y, s = t.column("label").to_numpy(), t.column("score").to_numpy()
    assert d["metrics"]["roc_auc"]["exact"]
    assert d["metrics"]["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert d["thresholds"][1]["tp"] == float(((s >= 0.25) & (y == 1)).sum())
    assert d["provenance"]["source"] == str(log)


def test_eval_threads_give_the_same_report(log):
    args = ["eval", log, "--score", "score", "--label", "label", "--format", "json", "--batch-rows", "2000"]
    one, two = _json(run(*args, "--threads", "1")), _json(run(*args, "-j", "2"))
    for key in ("roc_auc", "average_precision", "ks", "n_rows"):
        assert one["metrics"][key] == two["metrics"][key]
    assert one["thresholds"] == two["thresholds"]


def test_eval_table_and_markdown(log, tmp_path):
    r = run("eval", log, "--score", "score", "--label", "label")
    assert r.exit_code == 0 and "ROC AUC" in r.stdout and "provenance" in r.stdout
    quiet = run("eval", log, "--score", "score", "--label", "label", "--quiet", "--save-sketch", tmp_path / "s.sketch")
    assert quiet.exit_code == 0 and quiet.stdout == "" and (tmp_path / "s.sketch").exists()
    asked = run("eval", log, "--score", "score", "--label", "label", "-q", "-f", "json")
    assert asked.exit_code == 0 and json.loads(asked.stdout)["schema"] == "streameval.report"
    r = run("eval", log, "--score", "score", "--label", "label", "-f", "markdown", "-o", tmp_path / "r.md")
    assert r.exit_code == 0 and (tmp_path / "r.md").read_text().startswith("## streameval report")


def test_eval_by_slice_and_window_matches_a_group_by(log):
    r = run("eval", log, "-s", "score", "-l", "label", "--by", "segment", "--time", "ts", "--window", "1d", "-f", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema"] == "streameval.slices" and d["columns"][:2] == ["window", "segment"]
    df = pq.read_table(log).to_pandas()
    df["day"] = df.ts.dt.floor("D")
    assert len(d["rows"]) == df.groupby(["day", "segment"]).ngroups
    row = d["rows"][0]
    g = df[(df.segment == row["segment"]) & (df.day == pd.Timestamp(row["window"]).tz_localize(None))]
    assert row["n_rows"] == len(g)
    assert row["roc_auc_lower"] - 1e-12 <= roc_auc_score(g.label, g.score) <= row["roc_auc_upper"] + 1e-12
    assert d["overall"]["metrics"]["n_rows"] == len(df)
    csv = run("eval", log, "-s", "score", "-l", "label", "--by", "segment", "-f", "csv")
    assert csv.exit_code == 0 and csv.stdout.splitlines()[0].startswith('"segment","n_rows"')
    bad = run("eval", log, "-s", "score", "-l", "label", "--window", "1d")
    assert bad.exit_code == 2 and "--time" in bad.stderr


def test_eval_expression_and_where(log):
    d = _json(run("eval", log, "--score", "score", "--label", "label = 1", "--where", "segment = 'web'", "-f", "json"))
    t = pq.read_table(log)
    mask = t.column("segment").to_numpy(zero_copy_only=False) == "web"
    y, s = t.column("label").to_numpy()[mask], t.column("score").to_numpy()[mask]
    assert d["metrics"]["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    d2 = _json(run("eval", log, "--sql", "SELECT * FROM data WHERE segment = 'web'", "--score", "score",
                   "--label", "label", "-f", "json"))
    assert d2["metrics"]["roc_auc"] == d["metrics"]["roc_auc"]


def test_shards_merge_report_equals_eval_all(tmp_path):
    shards = []
    for i in range(3):
        p = tmp_path / f"day={i}" / "part.parquet"
        p.parent.mkdir()
        synthetic.write_parquet(p, 3000, seed=100 + i, weight=True)
        shards.append(p)
    for i, p in enumerate(shards):
        r = run("eval", p, "--score", "score", "--label", "label", "--weight", "weight", "-q",
                "--save-sketch", tmp_path / f"s{i}.sketch", "-f", "json")
        assert r.exit_code == 0, r.stderr
    r = run("merge", *[tmp_path / f"s{i}.sketch" for i in range(3)], "-o", tmp_path / "all.sketch")
    assert r.exit_code == 0 and "9,000 rows" in r.stderr
    merged = _json(run("report", tmp_path / "all.sketch", "-f", "json", "-t", "0.5"))
    whole = _json(run("eval", tmp_path, "--score", "score", "--label", "label", "--weight", "weight",
                      "-f", "json", "-t", "0.5"))
    for key, v in whole["metrics"].items():
        if key in ("log_loss", "brier", "ece"):
            assert merged["metrics"][key]["value"] == pytest.approx(v["value"], rel=1e-12)
        else:
            assert merged["metrics"][key] == v, key
    assert merged["thresholds"] == whole["thresholds"]
    assert whole["provenance"]["n_files"] == 3


_CONFIG_DATA = {  # config -> (file it names under configs/, generate arguments)
    "credit.toml": ("data/credit.parquet", dict(distribution="credit")),
    "fraud.toml": ("data/fraud.parquet", dict(distribution="calibrated")),
    "rare-events.toml": ("data/alerts.parquet", dict(distribution="rare", weight=True)),
    "monitor.toml": ("data/monitor.parquet", dict(distribution="calibrated")),
}


def test_every_example_config_is_tested():
    assert sorted(p.name for p in (ROOT / "configs").glob("*.toml")) == sorted(_CONFIG_DATA)


@pytest.mark.parametrize("name", sorted(_CONFIG_DATA))
def test_example_configs_run_as_they_are(tmp_path, name):
    """Each config runs unchanged on the data its comment tells `streameval generate` to make."""
    import shutil

    rel, kwargs = _CONFIG_DATA[name]
    shutil.copy(ROOT / "configs" / name, tmp_path / name)
    (tmp_path / "data").mkdir()
    assert f'"{rel}"' in (ROOT / "configs" / name).read_text()
    r = run("generate", tmp_path / rel, "--rows", "20000", *[x for k, v in kwargs.items()
                                                            for x in ((f"--{k}",) if v is True else (f"--{k}", v))])
    assert r.exit_code == 0, r.stderr
    out = run("eval", "--config", tmp_path / name, "--format", "json")
    assert out.exit_code == 0, out.stderr
    d = json.loads(out.stdout)
    t = pq.read_table(tmp_path / rel).to_pandas()
    if name == "monitor.toml":
        assert d["schema"] == "streameval.slices" and d["overall"]["metrics"]["n_rows"] == len(t)
        return
    if name == "fraud.toml":
        t = t[t.ts >= pd.Timestamp("2024-01-01 08:00:00")]
    w = t["weight"] if "weight" in t else None
    assert d["metrics"]["n_rows"] == len(t)
    auc = d["metrics"]["roc_auc"]
    assert auc["lower"] - 1e-12 <= roc_auc_score(t.label, t.score, sample_weight=w) <= auc["upper"] + 1e-12
    if name == "credit.toml":
        assert auc["exact"] and [c["requested_threshold"] for c in d["thresholds"]] == [600, 650, 700]


def test_demo_and_generate(tmp_path):
    r = run("demo", "--rows", "5000", "--dir", tmp_path / "demo", "-q", "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["n_rows"] == 5000
    assert (tmp_path / "demo" / "predictions.parquet").exists() and (tmp_path / "demo" / "predictions.sketch").exists()
    r = run("generate", tmp_path / "g.csv.gz", "--rows", "1000", "--distribution", "rare", "--decimals", "4")
    assert r.exit_code == 0
    d = _json(run("eval", tmp_path / "g.csv.gz", "--score", "score", "--label", "label", "-f", "json"))
    assert d["metrics"]["n_rows"] == 1000


# -- usage errors: exit 2 ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, needle",
    [
        (["--grid", "bogus"], "bad grid"),
        (["--format", "xml"], "xml"),
        (["--no-such-option"], "No such option"),
        (["--config", "missing.toml"], "no such file"),
        (["--threads", "0"], "--threads"),
    ],
)
def test_usage_errors_exit_2(log, args, needle):
    r = run("eval", log, "--score", "score", "--label", "label", *args)
    assert r.exit_code == 2
    assert needle in r.stderr


def test_missing_score_option_is_usage_error(log):
    r = run("eval", log, "--label", "label")
    assert r.exit_code == 2 and "--score" in r.stderr


def test_bad_config_key_is_usage_error(tmp_path, log):
    (tmp_path / "c.toml").write_text('score = "score"\nlabel = "label"\nscroe = 1\n')
    r = run("eval", log, "--config", tmp_path / "c.toml")
    assert r.exit_code == 2 and "scroe" in r.stderr


# -- data errors: exit 1 -----------------------------------------------------------------------
def test_missing_file(tmp_path):
    r = run("eval", tmp_path / "nope.parquet", "--score", "score", "--label", "label")
    assert r.exit_code == 1 and "nope.parquet" in r.stderr and "no such file" in r.stderr


def test_missing_column_lists_available(log):
    r = run("eval", log, "--score", "prob", "--label", "label")
    assert r.exit_code == 1
    assert str(log) in r.stderr and "'prob'" in r.stderr and "score, label, segment, ts" in r.stderr


def test_non_binary_labels_show_examples(tmp_path):
    pq.write_table(pa.table({"score": [0.1, 0.5, 0.9], "label": [0, 1, 7]}), tmp_path / "bad.parquet")
    r = run("eval", tmp_path / "bad.parquet", "--score", "score", "--label", "label")
    assert r.exit_code == 1
    assert "bad.parquet" in r.stderr and "label 'label'" in r.stderr and "7 (1 rows)" in r.stderr


def test_nan_scores(tmp_path):
    pq.write_table(pa.table({"score": [0.1, float("nan"), 0.9], "label": [0, 1, 1]}), tmp_path / "nan.parquet")
    r = run("eval", tmp_path / "nan.parquet", "--score", "score", "--label", "label")
    assert r.exit_code == 1 and "NaN" in r.stderr and "row 1" in r.stderr and "nan.parquet" in r.stderr
    d = _json(run("eval", tmp_path / "nan.parquet", "--score", "score", "--label", "label", "--skip-nan", "-f", "json"))
    assert d["provenance"]["rows_skipped"]["nan_score"] == 1


def test_empty_input(tmp_path):
    pq.write_table(pa.table({"score": pa.array([], pa.float64()), "label": pa.array([], pa.int8())}), tmp_path / "e.parquet")
    r = run("eval", tmp_path / "e.parquet", "--score", "score", "--label", "label")
    assert r.exit_code == 1 and "no rows" in r.stderr


def test_corrupt_sketch(tmp_path, log):
    good = tmp_path / "good.sketch"
    assert run("eval", log, "--score", "score", "--label", "label", "-q", "--save-sketch", good).exit_code == 0
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.sketch"
    bad.write_bytes(bytes(data))
    r = run("report", bad)
    assert r.exit_code == 1 and "bad.sketch" in r.stderr and "corrupt" in r.stderr
    (tmp_path / "junk.sketch").write_bytes(b"hello world, not a sketch")
    r = run("merge", good, tmp_path / "junk.sketch", "-o", tmp_path / "out.sketch")
    assert r.exit_code == 1 and "junk.sketch" in r.stderr and "not a streameval sketch" in r.stderr
    r = run("report", tmp_path / "missing.sketch")
    assert r.exit_code == 1 and "missing.sketch" in r.stderr


def test_merge_incompatible_grids(tmp_path, log):
    a, b = tmp_path / "a.sketch", tmp_path / "b.sketch"
    run("eval", log, "--score", "score", "--label", "label", "-q", "--save-sketch", a)
    run("eval", log, "--score", "score", "--label", "label", "-q", "--grid", "linear:0:1:100", "--save-sketch", b)
    r = run("merge", a, b, "-o", tmp_path / "c.sketch")
    assert r.exit_code == 1 and "different grids" in r.stderr


def test_python_dash_m_entry_point():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "streameval", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "eval" in r.stdout


def test_conflicting_options_and_bad_config_values_are_usage_errors(tmp_path, log):
    r = run("eval", log, "--score", "score", "--label", "label", "--table", "t", "--sql", "select 1")
    assert r.exit_code == 2 and "not both" in r.stderr and "Traceback" not in r.stderr
    r = run("eval", log, "--score", "score", "--label", "label", "--table", "preds")
    assert r.exit_code == 2 and "DuckDB database" in r.stderr
    for bad in ('thresholds = ["a"]', "thresholds = [0.5, true]", "batch_rows = 0"):
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'score = "score"\nlabel = "label"\n{bad}\n')
        r = run("eval", log, "--config", cfg)
        assert r.exit_code == 2, bad


def test_config_save_sketch_is_relative_to_the_config_and_errors_name_the_target(tmp_path, log):
    sub = tmp_path / "cfg"
    sub.mkdir()
    cfg = sub / "job.toml"
    cfg.write_text('score = "score"\nlabel = "label"\nsave_sketch = "out.sketch"\nformat = "json"\n')
    r = run("eval", log, "--config", cfg, "-q")
    assert r.exit_code == 0 and (sub / "out.sketch").exists()
    r = run("eval", log, "--score", "score", "--label", "label", "-q", "--save-sketch", tmp_path / "new" / "x.sk")
    assert r.exit_code == 0 and (tmp_path / "new" / "x.sk").exists()  # the folder is created
    (tmp_path / "file").write_text("")
    r = run("eval", log, "--score", "score", "--label", "label", "-q", "--save-sketch", tmp_path / "file" / "x.sk")
    assert r.exit_code == 1 and "x.sk" in r.stderr and ".tmp" not in r.stderr


def test_version_short_help_readable_metavars_and_every_command_documented():
    r = run("--version")
    assert r.exit_code == 0 and r.stdout.startswith("streameval ")
    top = run("-h")
    assert top.exit_code == 0 and "<bool>" not in top.stdout
    for cmd in ("eval", "merge", "report", "compare", "generate", "demo", "monitor"):
        assert cmd in top.stdout
        h = run(cmd, "-h")
        assert h.exit_code == 0 and "<bool>" not in h.stdout and len(h.stdout.splitlines()) > 4, cmd
    for cmd in ("ingest", "report", "check", "forget"):
        assert run("monitor", cmd, "-h").exit_code == 0
    docs = (ROOT / "docs" / "cli.md").read_text()
    for cmd in ("eval", "merge", "report", "compare", "generate", "demo", "monitor ingest", "monitor report",
                "monitor check", "monitor forget"):
        assert f"streameval {cmd}" in docs, f"docs/cli.md does not document `streameval {cmd}`"


def test_thresholds_comma_separated_and_nan_is_a_usage_error(log):
    d = _json(run("eval", log, "-s", "score", "-l", "label", "-t", "0.3,0.5", "-t", "0.9", "-f", "json"))
    assert [c["requested_threshold"] for c in d["thresholds"]] == [0.3, 0.5, 0.9]
    r = run("eval", log, "-s", "score", "-l", "label", "-t", "nan")
    assert r.exit_code == 2 and "bad threshold" in r.stderr


def test_eval_saves_the_sketch_in_the_requested_format_version(tmp_path, log):
    """`eval --save-sketch F --format-version 4` writes the columnar layout (shards that fold into a
    roll-up faster), the same sketch as the default version 3; the option needs --save-sketch,
    and a config's format_version is checked as the option is."""
    import streameval

    base = ("eval", log, "--score", "score", "--label", "label", "-q")
    assert run(*base, "--save-sketch", tmp_path / "v3.sketch").exit_code == 0
    r = run(*base, "--save-sketch", tmp_path / "v4.sketch", "--format-version", "4")
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "v3.sketch").read_bytes()[8:10] == (3).to_bytes(2, "little")
    assert (tmp_path / "v4.sketch").read_bytes()[8:10] == (4).to_bytes(2, "little")
    assert streameval.load(tmp_path / "v4.sketch") == streameval.load(tmp_path / "v3.sketch")
    r = run(*base, "--format-version", "4")
    assert r.exit_code == 2 and "--save-sketch" in r.stderr
    r = run(*base, "--save-sketch", tmp_path / "v2.sketch", "--format-version", "2")
    assert r.exit_code == 2 and "3, 4 or 1" in r.stderr and not (tmp_path / "v2.sketch").exists()
    cfg = tmp_path / "job.toml"
    cfg.write_text('save_sketch = "cfg.sketch"\nformat_version = true\n')
    r = run(*base, "--config", cfg)
    assert r.exit_code == 2 and "3, 4 or 1" in r.stderr and not (tmp_path / "cfg.sketch").exists()
    cfg.write_text('save_sketch = "cfg.sketch"\nformat_version = 4\n')
    assert run(*base, "--config", cfg).exit_code == 0
    assert (tmp_path / "cfg.sketch").read_bytes()[8:10] == (4).to_bytes(2, "little")


def test_eval_save_sketch_that_cannot_be_written_is_refused_before_reading(tmp_path, log):
    """A sketch file --save-sketch cannot write (slices or windows: a set of sketches; --paired: no
    sketch; --format-version of a multiclass sketch, which has one layout) is a usage error given
    before the evaluation reads anything (a missing source is not reached), not a traceback or an
    error after a long run; a sliced evaluation that could be saved gave an AttributeError."""
    missing = tmp_path / "missing.parquet"
    out = tmp_path / "s.sketch"
    for source, extra, words in [
        (missing, ("--by", "label"), "--by"),
        (missing, ("--time", "t", "--window", "1d"), "--window"),
        (missing, ("--score", "score", "--paired"), "--paired"),
        (missing, ("--format-version", "4", "--score", "other"), "multiclass"),
        (log, ("--by", "label"), "--by"),  # was: AttributeError after the evaluation
    ]:
        r = run("eval", source, "--score", "score", "--label", "label", "-q", "--save-sketch", out, *extra)
        assert r.exit_code == 2, (extra, r.exit_code, r.stderr, r.exception)
        assert words in r.stderr and "--save-sketch" in r.stderr, r.stderr
        assert not out.exists()
    r = run("eval", log, "--score", "score", "--label", "label", "-q", "--save-sketch", out, "--format-version", "1")
    assert r.exit_code == 0 and out.read_bytes()[8:10] == (1).to_bytes(2, "little")
