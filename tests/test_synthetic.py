"""Tests of the synthetic prediction-log generator."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from streameval import synthetic


def _col(table, name):
    return table.column(name).to_numpy()


def test_mid_distribution_prevalence_and_range():
    t = synthetic.generate(200_000, distribution="mid", seed=1)
    y, s = _col(t, "label"), _col(t, "score")
    assert t.schema.field("label").type == "int8"
    assert abs(y.mean() - 0.10) < 0.005
    assert s.min() > 0 and s.max() < 1
    # negatives' logits ~ N(-1, 1.5), positives' ~ N(1, 1.5)
    logit = np.log(s / (1 - s))
    assert abs(logit[y == 0].mean() + 1) < 0.05 and abs(logit[y == 1].mean() - 1) < 0.05
    assert abs(logit[y == 0].std() - 1.5) < 0.05


def test_rare_distribution_piles_scores_near_1e4():
    t = synthetic.generate(300_000, distribution="rare", seed=2)
    y, s = _col(t, "label"), _col(t, "score")
    assert abs(y.mean() - 0.001) < 0.0005
    logit = np.log(s / (1 - s))
    assert abs(np.median(logit[y == 0]) - math.log(1e-4 / (1 - 1e-4))) < 0.05
    assert abs(logit[y == 1].mean() - (math.log(1e-4 / (1 - 1e-4)) + 2.5)) < 0.3


def test_deterministic_and_chunked():
    a = synthetic.generate(5000, seed=7, chunk_rows=1000)
    b = synthetic.generate(5000, seed=7, chunk_rows=1000)
    c = synthetic.generate(5000, seed=8, chunk_rows=1000)
    assert a.equals(b)
    assert not a.equals(c)
    sizes = [batch.num_rows for batch in synthetic.iter_batches(2500, chunk_rows=1000)]
    assert sizes == [1000, 1000, 500]


def test_options_decimals_dtype_weight_separation():
    t = synthetic.generate(20_000, decimals=3, score_dtype="float32", weight=True, prevalence=0.3, seed=3)
    s = _col(t, "score")
    assert s.dtype == np.float32
    assert len(np.unique(s)) <= 1001
    assert np.allclose(s, np.round(s.astype(np.float64), 3), atol=1e-7)
    w = _col(t, "weight")
    assert w.min() >= 0.5 and w.max() < 2
    assert abs(_col(t, "label").mean() - 0.3) < 0.02
    assert set(t.column_names) == {"score", "label", "weight", "segment", "ts"}
    from sklearn.metrics import roc_auc_score

    lo = synthetic.generate(20_000, separation=0.5, seed=4)
    hi = synthetic.generate(20_000, separation=4.0, seed=4)
    assert roc_auc_score(_col(lo, "label"), _col(lo, "score")) < roc_auc_score(_col(hi, "label"), _col(hi, "score"))


def test_credit_scores_are_integers_in_range():
    s = _col(synthetic.generate(10_000, distribution="credit"), "score")
    assert s.min() >= 300 and s.max() <= 850 and np.all(s == np.round(s))


def test_write_parquet_row_groups(tmp_path):
    path = synthetic.write_parquet(tmp_path / "log.parquet", 2500, row_group_rows=1000)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 2500 and meta.num_row_groups == 3
    assert pq.read_table(path).equals(synthetic.generate(2500, chunk_rows=1000))


def test_write_csv_gz(tmp_path):
    path = synthetic.write_log(tmp_path / "log.csv.gz", 1200, decimals=2, chunk_rows=500)
    t = pcsv.read_csv(path)
    assert t.num_rows == 1200
    assert np.allclose(t.column("score").to_numpy(), _col(synthetic.generate(1200, decimals=2, chunk_rows=500), "score"))


def test_empty_log(tmp_path):
    assert synthetic.generate(0).num_rows == 0
    assert pq.read_table(synthetic.write_parquet(tmp_path / "e.parquet", 0)).num_rows == 0


@pytest.mark.parametrize(
    "kwargs",
    [dict(distribution="nope"), dict(prevalence=1.5), dict(score_dtype="int8"), dict(decimals=-1), dict(rows=-1)],
)
def test_bad_parameters(kwargs):
    rows = kwargs.pop("rows", 10)
    with pytest.raises(ValueError):
        synthetic.LogSpec(rows, **kwargs)


def test_write_log_rejects_unknown_extension(tmp_path):
    with pytest.raises(ValueError, match="parquet"):
        synthetic.write_log(tmp_path / "x.txt", 10)


def test_calibrated_distribution_is_calibrated():
    import streameval

    table = synthetic.generate(200_000, distribution="calibrated", seed=3)
    sk = streameval.BinarySketch().update(table.column("label"), table.column("score"))
    assert sk.expected_calibration_error(10) < 0.01
    assert abs(sk.positive_weight / 200_000 - 0.1) < 0.01
