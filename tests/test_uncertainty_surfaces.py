"""Confidence intervals and comparisons where users meet them: sketch.ci, reports, the CLI, gates."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

import streameval
from streameval import BinarySketch, LinearGrid
from streameval.cli.main import app
from streameval.errors import IncompatibleGridError, UsageError
from streameval.report import CIOptions, Report


def _rows(seed: int, n: int = 4000, shift: float = 0.25):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    s = np.round(np.clip(rng.normal(0.4 + shift * y, 0.2), 0, 1), 3)
    return y, s


def _brute_delong(y, s):
    pos, neg = s[y], s[~y]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    auc = psi.mean()
    return auc, v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size


def test_sketch_ci_is_delong_on_discrete_scores():
    y, s = _rows(0, 1500)
    ci = BinarySketch().update(y, s).ci()
    auc, var = _brute_delong(y, s)
    z = sps.norm.ppf(0.975)
    assert ci.method == "DeLong" and not ci.widened
    assert ci.ci_lower == pytest.approx(auc - z * math.sqrt(var), abs=1e-9)
    assert ci.ci_upper == pytest.approx(auc + z * math.sqrt(var), abs=1e-9)


def test_sketch_rate_ci_is_wilson():
    y, s = _rows(1)
    ci = BinarySketch().update(y, s).ci("recall", threshold=0.5)
    tp, p = int((y & (s >= 0.5)).sum()), int(y.sum())
    ref = sps.binomtest(tp, p).proportion_ci(0.95, method="wilson")
    assert (ci.ci_lower, ci.ci_upper) == pytest.approx((ref.low, ref.high), abs=1e-12)
    with pytest.raises(UsageError, match="threshold"):
        BinarySketch().update(y, s).ci("recall")


def test_report_labels_the_two_kinds_of_interval():
    y, s = _rows(2)
    r = Report.from_sketch(BinarySketch(LinearGrid(0, 1, 50)).update(y, s + 1e-4 * np.arange(s.size) % 1e-3),
                           thresholds=[0.5], ci=CIOptions())
    auc = r.metrics["roc_auc"]
    assert auc["ci"]["method"] == "DeLong" and auc["ci"]["widened"]
    assert auc["ci"]["lower"] <= auc["lower"] <= auc["upper"] <= auc["ci"]["upper"]
    assert set(r.confusion[0]["ci"]) >= {"precision", "recall", "fpr"}
    text = r.to_text(width=160)
    assert "95% CI" in text and "binning bounds" in text
    md = r.to_markdown()
    assert "binning bounds" in md and "confidence interval" in md
    assert json.loads(r.to_json())["metrics"]["roc_auc"]["ci"]["level"] == 0.95


def test_compare_api_and_errors():
    a = BinarySketch().update(*_rows(3))
    b = BinarySketch().update(*_rows(4, shift=0.1))
    c = streameval.compare(a, b)
    assert c.estimate.value > 0 and c.p_value.value < 1e-6
    r = streameval.compare(a, b, "recall@0.5")
    assert r.method.startswith("Newcombe")
    with pytest.raises(UsageError, match="unknown metric"):
        streameval.compare(a, b, "recall")
    with pytest.raises(IncompatibleGridError):
        streameval.compare(a, BinarySketch(LinearGrid(0, 1, 1000)).update(*_rows(5)), "recall@0.5")
    ya, sa = _rows(6)
    with pytest.raises(UsageError, match="positive classes differ"):
        streameval.compare(a, BinarySketch().update(np.where(ya, "bad", "good"), sa, pos_label="bad"))


def test_slice_table_ci_columns():
    y, s = _rows(7, 6000)
    seg = np.where(np.arange(y.size) % 2 == 0, "a", "b")
    t = streameval.evaluate({"y": y.astype(np.int8), "s": s, "seg": seg}, score="s", label="y", by="seg", ci=True)
    for row in t.rows:
        m = seg == row["seg"]
        auc, var = _brute_delong(y[m], s[m])
        assert row["roc_auc_ci_lower"] == pytest.approx(auc - sps.norm.ppf(0.975) * math.sqrt(var), abs=1e-9)
    assert "ci" in t.overall.metrics["roc_auc"]


def test_cli_ci_compare_and_gates(tmp_path):
    runner = CliRunner()
    for name, seed, shift in (("a", 8, 0.25), ("b", 9, 0.05)):
        y, s = _rows(seed, shift=shift)
        BinarySketch().update(y, s).save(tmp_path / f"{name}.sketch")
    r = runner.invoke(app, ["report", str(tmp_path / "a.sketch"), "--ci", "-t", "0.5"])
    assert r.exit_code == 0 and "95% CI" in r.stdout and "DeLong" in r.stdout
    r = runner.invoke(app, ["compare", str(tmp_path / "a.sketch"), str(tmp_path / "b.sketch")])
    assert r.exit_code == 0 and "DeLong unpaired" in r.stdout and "differ at the 5% level" in r.stdout
    r = runner.invoke(app, ["compare", str(tmp_path / "a.sketch"), str(tmp_path / "b.sketch"),
                            "--fail-if-different", "0.05", "-f", "json"])
    assert r.exit_code == 3 and json.loads(r.stdout)["p_value_upper"] < 0.05
    r = runner.invoke(app, ["compare", str(tmp_path / "a.sketch"), str(tmp_path / "a.sketch"), "--fail-if-different", "0.05"])
    assert r.exit_code == 0
    y, s = _rows(10)
    log = tmp_path / "log.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"y": y, "s": s}), log)
    auc = float(BinarySketch().update(y, s).roc_auc())
    ok = runner.invoke(app, ["eval", str(log), "-s", "s", "-l", "y", "-q", "--fail-under", f"roc_auc={auc - 0.01}"])
    assert ok.exit_code == 0
    bad = runner.invoke(app, ["eval", str(log), "-s", "s", "-l", "y", "-q", "--fail-under", f"roc_auc={auc + 0.01},recall@0.5=0"])
    assert bad.exit_code == 3 and "roc_auc" in bad.stderr and "recall" not in bad.stderr
    usage = runner.invoke(app, ["eval", str(log), "-s", "s", "-l", "y", "--fail-under", "auc>0.8"])
    assert usage.exit_code == 2


def _paired_log(tmp_path, n=6000):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    y = (rng.random(n) < 0.3).astype(int)
    base = rng.normal(y, 1.0)
    m1 = np.round(1 / (1 + np.exp(-base)), 3)
    m2 = np.round(1 / (1 + np.exp(-(0.7 * base + rng.normal(0, 0.7, n)))), 3)
    for i, part in enumerate(np.array_split(np.arange(n), 4)):
        pq.write_table(pa.table({"y": y[part], "m1": m1[part], "m2": m2[part], "id": part}),
                       tmp_path / f"p{i}.parquet", row_group_size=500)
    return y, m1, m2


def test_evaluate_bootstrap_with_row_id_does_not_depend_on_threads(tmp_path):
    _paired_log(tmp_path)
    kw = dict(score="m1", label="y", bootstrap=50, seed=3, row_id="id")
    one = streameval.evaluate(str(tmp_path), threads=1, **kw)
    two = streameval.evaluate(str(tmp_path), threads=2, batch_rows=700, **kw)
    assert one.sketch.replicates == two.sketch.replicates
    assert one.sketch.ci("roc_auc", method="bootstrap").ci_lower == two.sketch.ci("roc_auc", method="bootstrap").ci_lower
    with pytest.raises(UsageError, match="bootstrap"):
        streameval.evaluate(str(tmp_path), score="m1", label="y", row_id="id")
    with pytest.raises(UsageError, match="unsliced"):
        streameval.evaluate(str(tmp_path), score="m1", label="y", bootstrap=10, by=["y"])


def test_cli_bootstrap_paired_and_compare(tmp_path):
    _paired_log(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["eval", str(tmp_path), "-s", "m1", "-l", "y", "--bootstrap", "60", "--row-id", "id", "-q",
                            "-f", "json", "--save-sketch", str(tmp_path / "a.sketch"), "-t", "0.5", "--grid", "probability@0.5"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["metrics"]["roc_auc"]["ci"]["method"].startswith("bootstrap")
    assert report["metrics"]["average_precision"]["ci"]["lower"] < report["metrics"]["average_precision"]["value"]
    assert report["thresholds"][0]["ci"]["f1"]["method"].startswith("bootstrap")
    r = runner.invoke(app, ["eval", str(tmp_path), "-s", "m2", "-l", "y", "--bootstrap", "60", "--seed", "9", "-q",
                            "--save-sketch", str(tmp_path / "b.sketch")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["compare", str(tmp_path / "a.sketch"), str(tmp_path / "b.sketch"), "--bootstrap",
                            "--metric", "average_precision", "--fail-if-different", "0.05"])
    assert r.exit_code == 3 and "bootstrap unpaired" in r.stdout, r.output
    r = runner.invoke(app, ["eval", str(tmp_path), "-s", "m1", "-s", "m2", "-l", "y", "--paired", "-f", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["delong"]["method"] == "DeLong paired" and out["verdict"].startswith("m1 has the higher ROC AUC")
    r = runner.invoke(app, ["eval", str(tmp_path), "-s", "m1", "-l", "y", "--paired"])
    assert r.exit_code == 2 and "two score columns" in r.output
    r = runner.invoke(app, ["eval", str(tmp_path), "-s", "m1", "-l", "y", "--ci", "--auc-ci", "bootstrap"])
    assert r.exit_code == 2 and "--bootstrap" in r.output
