"""Multiclass evaluation of files: K score columns by list or glob, against scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm
from typer.testing import CliRunner

import streameval
from streameval.cli.main import app


@pytest.fixture()
def mc_log(tmp_path):
    rng = np.random.default_rng(0)
    n, k = 6000, 11  # 11 classes: p_2 must come before p_10 (natural order)
    y = rng.integers(0, k, n)
    logits = rng.normal(0, 1, (n, k))
    logits[np.arange(n), y] += 1.5
    p = np.round(np.exp(logits) / np.exp(logits).sum(1, keepdims=True), 3)
    df = pd.DataFrame({f"p_{j}": p[:, j] for j in range(k)})
    df["y"] = y
    path = tmp_path / "mc.parquet"
    df.to_parquet(path)
    return path, y, p


def test_evaluate_glob_and_list_equal_scikit_learn(mc_log):
    path, y, p = mc_log
    r = streameval.evaluate(str(path), score="p_*", label="y")
    assert r.provenance["score"][:3] == ["p_0", "p_1", "p_2"] and r.provenance["score"][-1] == "p_10"
    assert r.metrics["accuracy"] == pytest.approx(skm.accuracy_score(y, p.argmax(1)), abs=1e-12)
    ovr = np.mean([skm.roc_auc_score(y == j, p[:, j]) for j in range(p.shape[1])])
    assert r.metrics["roc_auc_ovr_macro"]["value"] == pytest.approx(ovr, abs=1e-12)
    assert r.metrics["top_2_accuracy"] == pytest.approx(skm.top_k_accuracy_score(y, p, k=2), abs=1e-12)
    np.testing.assert_array_equal(np.array(r.confusion_matrix), skm.confusion_matrix(y, p.argmax(1)))
    cols = [f"p_{j}" for j in range(p.shape[1])]
    again = streameval.evaluate(str(path), score=cols, label="y")
    assert again.metrics == r.metrics
    with pytest.raises(ValueError, match="matches 0"):
        streameval.evaluate(str(path), score="q_*", label="y")


def test_cli_multiclass(mc_log):
    path, y, p = mc_log
    runner = CliRunner()
    r = runner.invoke(app, ["eval", str(path), "--score", "p_*", "--label", "y", "-f", "json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["schema"] == "streameval.sketch.multiclass" and len(d["per_class"]) == p.shape[1]
    table = runner.invoke(app, ["eval", str(path), "--score", "p_*", "--label", "y"])
    assert table.exit_code == 0 and "confusion matrix" in table.stdout


def test_cli_multiclass_save_merge_report(mc_log, tmp_path):
    path, y, p = mc_log
    runner = CliRunner()
    sk = tmp_path / "mc.sketch"
    r = runner.invoke(app, ["eval", str(path), "--score", "p_*", "--label", "y", "-q", "--save-sketch", str(sk)])
    assert r.exit_code == 0, r.stderr
    m = runner.invoke(app, ["merge", str(sk), str(sk), "-o", str(tmp_path / "twice.sketch"), "-q"])
    assert m.exit_code == 0, m.stderr
    rep = runner.invoke(app, ["report", str(tmp_path / "twice.sketch"), "-f", "json"])
    assert rep.exit_code == 0, rep.stderr
    d = json.loads(rep.stdout)
    assert sum(row["support"] for row in d["per_class"]) == 2 * len(y)
    assert d["metrics"]["accuracy"] == pytest.approx(skm.accuracy_score(y, p.argmax(1)), abs=1e-12)


def test_threads_do_not_change_the_sketch(tmp_path):
    """Batches large enough for the dense writing state: one thread, or a reader thread and two
    binning threads sharing the columns, give the same sketch bit for bit, equal to scikit-learn."""
    rng = np.random.default_rng(3)
    n, k = 150_000, 4
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)).astype(np.float32)
    z[np.arange(n), y] += 1.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    path = tmp_path / "mc4.parquet"
    pd.DataFrame({**{f"p_{j}": p[:, j] for j in range(k)}, "y": y.astype(np.int32)}).to_parquet(path, row_group_size=70_000)
    one = streameval.evaluate(str(path), score="p_*", label="y", threads=1, batch_rows=70_000)
    two = streameval.evaluate(str(path), score="p_*", label="y", threads=2, batch_rows=70_000)
    assert one.sketch._tables is None and one.sketch.to_bytes() == two.sketch.to_bytes()
    np.testing.assert_array_equal(np.array(two.confusion_matrix), skm.confusion_matrix(y, p.argmax(1)))
    ovo = skm.roc_auc_score(y, p, multi_class="ovo")
    assert two.metrics["roc_auc_ovo_macro"]["lower"] <= ovo <= two.metrics["roc_auc_ovo_macro"]["upper"]
    with pytest.raises(ValueError, match="threads"):
        streameval.evaluate(str(path), score="p_*", label="y", threads=0)
