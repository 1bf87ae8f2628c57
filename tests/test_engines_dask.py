"""streameval.dask against the local path, on the threaded scheduler and a 2-worker LocalCluster."""

from __future__ import annotations

import dask.dataframe as dd  # a missing Dask fails the run, never skips
import pytest
from distributed import Client, LocalCluster
from engine_data import frame, same

import streameval
import streameval.dask as sed
from streameval import InputError, InputTypeError, UsageError


@pytest.mark.parametrize("partitions", [1, 7, 200])
def test_equal_to_local_for_any_partitioning(partitions):
    df = frame()
    local = streameval.evaluate(df, score="p", label="y")
    r = sed.evaluate(dd.from_pandas(df, npartitions=partitions), score="p", label="y", thresholds=[0.5])
    same(r.sketch, local.sketch)
    assert r.metrics["roc_auc"] == local.metrics["roc_auc"]
    assert r.confusion[0]["tp"] == local.confusion[0]["tp"]


def test_weighted_string_labels_and_one_class_partitions():
    df = frame(seed=1).sort_values("y")  # the first partitions hold negatives only, the last positives only
    local = streameval.evaluate(df, score="p", label="status", weight="w", pos_label="fraud")
    r = sed.sketch(dd.from_pandas(df, npartitions=9, sort=False), score="p", label="status", weight="w",
                   pos_label="fraud")
    same(r, local.sketch, weighted=True)


def test_empty_partitions():
    df = frame(50)
    ddf = dd.from_pandas(df, npartitions=5)
    filtered = ddf[ddf.p > 0.6]  # some partitions end up empty
    same(sed.sketch(filtered, score="p", label="y"), streameval.evaluate(df[df.p > 0.6], score="p", label="y").sketch)


def test_clear_errors():
    ddf = dd.from_pandas(frame(100), npartitions=2)
    with pytest.raises(InputError, match="'nope'"):
        sed.evaluate(ddf, score="nope", label="y")
    with pytest.raises(InputTypeError, match="numeric|number"):
        sed.evaluate(ddf, score="status", label="y")  # not numeric
    with pytest.raises(UsageError, match="not supported yet"):
        sed.evaluate(ddf, score="p", label="y", by="status")


def test_local_cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        df = frame(seed=2)
        r = sed.evaluate(dd.from_pandas(df, npartitions=16), score="p", label="y")
        same(r.sketch, streameval.evaluate(df, score="p", label="y").sketch)


def test_cli_engine_dask_equals_local(tmp_path):
    import json

    from typer.testing import CliRunner

    from streameval.cli.main import app

    path = tmp_path / "log.parquet"
    frame(5000, seed=4).to_parquet(path)
    runs = [CliRunner().invoke(app, ["eval", str(path), "-s", "p", "-l", "y", "-f", "json", *extra])
            for extra in ([], ["--engine", "dask"])]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    local, dask_ = (json.loads(r.stdout)["metrics"]["roc_auc"] for r in runs)
    assert local == dask_
