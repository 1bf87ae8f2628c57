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


def test_evaluate_loads_neither_pandas_nor_pyarrow_dataset(mc_log):
    """Regression: listing the columns with pyarrow.dataset and converting them with to_numpy
    imported pandas (0.7 s once per process, which a decode-only pass never pays)."""
    import subprocess
    import sys

    path, y, p = mc_log
    code = (
        "import sys, streameval\n"
        f"r = streameval.evaluate({str(path)!r}, score='p_*', label='y')\n"
        "print(r.metrics['accuracy'], 'pandas' in sys.modules, 'pyarrow.dataset' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert float(out[0]) == pytest.approx(skm.accuracy_score(y, p.argmax(1)), abs=1e-12)
    assert out[1:] == ["False", "False"]


@pytest.mark.parametrize("type_", ["int8", "uint16", "int32", "int64", "float32", "float64"])
def test_numpy_view_equals_to_numpy(type_):
    import pyarrow as pa

    from streameval.multiclass_eval import _numpy_view

    arr = pa.array(np.arange(-3, 20).astype(type_) if type_[0] != "u" else np.arange(23).astype(type_))
    for a in (arr, arr.slice(5, 9), pa.chunked_array([arr.slice(2)]), arr.slice(3, 0), pa.array([], type=arr.type)):
        view = _numpy_view(a)
        assert view is not None and view.dtype == np.dtype(type_)
        np.testing.assert_array_equal(view, a.to_numpy())


def test_numpy_view_declines_what_it_cannot_view():
    import pyarrow as pa

    from streameval.multiclass_eval import _numpy_view

    for a in (pa.array([1.0, None]), pa.array([True, False]), pa.array(["a", "b"]),
              pa.array(["a", "b"]).dictionary_encode(), pa.chunked_array([pa.array([1]), pa.array([2])]),
              pa.array(np.ones(3, dtype=np.float16))):
        assert _numpy_view(a) is None


def test_null_labels_and_scores_still_name_the_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"p_0": p[:, 0], "p_1": p[:, 1], "y": pa.array([1, None, 0])}), path)
    with pytest.raises(ValueError, match="row 1"):
        streameval.evaluate(str(path), score="p_*", label="y")
    pq.write_table(pa.table({"p_0": pa.array([0.2, None, 0.5]), "p_1": p[:, 1], "y": [1, 0, 0]}), path)
    with pytest.raises(ValueError, match="row 1"):
        streameval.evaluate(str(path), score="p_*", label="y")
