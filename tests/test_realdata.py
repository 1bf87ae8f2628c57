"""A model trained on real data (scikit-learn's bundled breast-cancer set), evaluated by the CLI.

The CLI's numbers are checked against scikit-learn: exact on rounded (discrete) scores, inside
the reported interval on raw probabilities.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, confusion_matrix, log_loss, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from typer.testing import CliRunner

from streameval.cli.main import app


@pytest.fixture(scope="module")
def predictions(tmp_path_factory):
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=1000)).fit(X_tr, y_tr)
    p = model.predict_proba(X_te)[:, 1]
    d = tmp_path_factory.mktemp("real")
    # label as text, as prediction logs often store it: "benign" is class 1 in this data set
    label = np.where(y_te == 1, "benign", "malignant")
    pq.write_table(pa.table({"p": p, "p3": np.round(p, 3), "diagnosis": label}), d / "preds.parquet")
    return d / "preds.parquet", y_te, p


def _eval(path, *args):
    r = CliRunner().invoke(app, ["eval", str(path), "--label", "diagnosis", "--pos-label", "benign",
                                 "--format", "json", *args])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_raw_probabilities_inside_intervals(predictions):
    path, y, p = predictions
    d = _eval(path, "--score", "p")
    m = d["metrics"]
    for key, ref in (("roc_auc", roc_auc_score(y, p)), ("average_precision", average_precision_score(y, p))):
        assert m[key]["lower"] - 1e-12 <= ref <= m[key]["upper"] + 1e-12, key
    assert m["log_loss"]["value"] == pytest.approx(log_loss(y, p), rel=1e-9)
    assert m["n_rows"] == len(y) and m["positives"]["value"] == y.sum()
    c = d["thresholds"][0]
    if c["exact"]:
        tn, fp, fn, tp = confusion_matrix(y, p >= 0.5).ravel()
        assert (c["tp"], c["fp"], c["fn"], c["tn"]) == (tp, fp, fn, tn)


def test_rounded_scores_exact(predictions):
    path, y, p = predictions
    p3 = np.round(p, 3)
    d = _eval(path, "--score", "p3", "-t", "0.5", "-t", "0.9")
    m = d["metrics"]
    assert m["roc_auc"]["exact"] and m["average_precision"]["exact"]
    assert m["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, p3), abs=1e-12)
    assert m["average_precision"]["value"] == pytest.approx(average_precision_score(y, p3), abs=1e-12)
    for c, t in zip(d["thresholds"], (0.5, 0.9), strict=False):
        tn, fp, fn, tp = confusion_matrix(y, p3 >= t).ravel()
        assert c["exact"] and (c["tp"], c["fp"], c["fn"], c["tn"]) == (tp, fp, fn, tn)


def test_label_expression_equals_pos_label(predictions):
    path, y, p = predictions
    r = CliRunner().invoke(app, ["eval", str(path), "--score", "p3", "--label", "diagnosis = 'benign'", "-f", "json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["roc_auc"] == _eval(path, "--score", "p3")["metrics"]["roc_auc"]
