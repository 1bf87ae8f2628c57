"""streameval.dask against the local path, on the threaded scheduler and a 2-worker LocalCluster."""

from __future__ import annotations

import dask.dataframe as dd  # a missing Dask fails the run, never skips
import numpy as np
import pytest
from distributed import Client, LocalCluster
from engine_data import frame, json_close, multiclass_frame, same, same_multiclass, same_slices, sliced_frame

import streameval
import streameval.dask as sed
from streameval import InputError, InputTypeError, UsageError


@pytest.mark.parametrize("partitions", [1, 7, pytest.param(200, marks=pytest.mark.slow)])  # 200: the slow suite
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
    with pytest.raises(UsageError, match="time=.*window="):
        sed.evaluate(ddf, score="p", label="y", time="p")
    with pytest.raises(UsageError, match="bad window"):
        sed.evaluate(ddf, score="p", label="y", time="p", window="fortnight")
    with pytest.raises(InputError, match="slice column 'nope'"):
        sed.evaluate(ddf, score="p", label="y", by="nope")
    with pytest.raises(UsageError, match="multiclass.*not supported"):
        sed.evaluate(ddf, score="p,w", label="y", by="status")


@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)])  # worker processes
def test_local_cluster(processes):  # load (or compile, in a fresh install) the kernels: ~45 s, the slow suite
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=processes, dashboard_address=None) as cluster, \
            Client(cluster):
        df = frame(seed=2)
        r = sed.evaluate(dd.from_pandas(df, npartitions=16), score="p", label="y")
        same(r.sketch, streameval.evaluate(df, score="p", label="y").sketch)


@pytest.mark.slow  # worker processes compile the sliced and multiclass kernels: ~1 minute
def test_local_cluster_slices_and_multiclass():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        # Slices and multiclass sketches travel between worker processes as bytes too.
        sf = sliced_frame(3000, seed=2)
        options = dict(score="p", label="late", weight="w", by=["country", "tier"], time="ts", window="1d")
        same_slices(sed.evaluate(dd.from_pandas(sf, npartitions=9), **options), streameval.evaluate(sf, **options))
        mf = multiclass_frame(2000, seed=2)
        mc = sed.evaluate(dd.from_pandas(mf, npartitions=5), score="p_*", label="animal")
        same_multiclass(mc.sketch, streameval.evaluate(mf, score=["p_0", "p_1", "p_2"], label="animal").sketch)


SLICED = dict(score="p", label="late", by=["country", "tier"], time="ts", window="1d")


@pytest.mark.parametrize("partitions", [1, 7, pytest.param(200, marks=pytest.mark.slow)])  # 200: the slow suite
def test_slices_and_windows_equal_local_for_any_partitioning(partitions):
    df = sliced_frame()
    local = streameval.evaluate(df, **SLICED)
    r = sed.evaluate(dd.from_pandas(df, npartitions=partitions), **SLICED)
    same_slices(r, local)
    if partitions == 1:  # same rows in the same order: the same bits, rows in the same order
        assert r.rows == local.rows
    assert any(row["country"] is None for row in r.rows) and any(row["window"] is None for row in r.rows)
    assert any(row["n_labelled"] < row["n_rows"] for row in r.rows)  # unlabelled rows kept


def test_slices_weighted_string_labels_one_class_and_empty_partitions():
    df = sliced_frame(seed=3).sort_values("y")  # first partitions negatives only, last positives only
    options = dict(score="p", label="status", weight="w", pos_label="fraud", by="country", time="ts", window="1w",
                   tz="Europe/Paris", thresholds=[0.3, 0.5])
    ddf = dd.from_pandas(df, npartitions=9, sort=False)
    same_slices(sed.evaluate(ddf, **options), streameval.evaluate(df, **options))
    kept = ddf[ddf.p > 0.9]  # most partitions end up empty
    same_slices(sed.evaluate(kept, **options), streameval.evaluate(df[df.p > 0.9], **options))
    only_by = sed.sketch(ddf, score="p", label="status", pos_label="fraud", by=["tier"])
    assert only_by.key_names == ("tier",) and sorted(only_by.keys()) == [(0,), (1,), (2,)]


def test_slice_errors_come_from_the_tasks():
    df = sliced_frame(500)
    with pytest.raises(InputError, match="null label"):
        sed.evaluate(dd.from_pandas(df, npartitions=3), **SLICED, require_labels=True)
    with pytest.raises(InputError, match="max_groups"):
        sed.evaluate(dd.from_pandas(df, npartitions=3), **SLICED, max_groups=5)


@pytest.mark.parametrize("partitions", [1, 7, pytest.param(200, marks=pytest.mark.slow)])  # 200: the slow suite
def test_multiclass_equal_to_local(partitions):
    df = multiclass_frame()
    local = streameval.evaluate(df, score=["p_0", "p_1", "p_2"], label="animal", weight="w")
    r = sed.evaluate(dd.from_pandas(df, npartitions=partitions), score="p_*", label="animal", weight="w")
    assert type(r) is type(local)
    same_multiclass(r.sketch, local.sketch)
    assert list(r.sketch.classes) == ["cat", "dog", "eel"]
    np.testing.assert_allclose(r.sketch.confusion, local.sketch.confusion, rtol=1e-12)
    for name in ("roc_auc_ovr_macro", "roc_auc_ovo_macro", "average_precision_macro"):
        assert r.metrics[name]["value"] == pytest.approx(local.metrics[name]["value"], rel=1e-12)


def test_multiclass_one_class_partitions_and_integer_classes():
    df = multiclass_frame(seed=4).sort_values("k")
    ddf = dd.from_pandas(df, npartitions=6, sort=False)  # each partition holds one class
    local = streameval.evaluate(df, score="p_0,p_1,p_2", label="k")
    same_multiclass(sed.sketch(ddf, score="p_0,p_1,p_2", label="k"), local.sketch)
    # Integer labels 0..K-1 missing a class: the classes are still 0..K-1, as in a local run.
    two = df[df.k < 2]
    local2 = streameval.evaluate(two, score=["p_0", "p_1", "p_2"], label="k")
    same_multiclass(sed.sketch(dd.from_pandas(two, npartitions=4), score="p_*", label="k"), local2.sketch)
    with pytest.raises(InputError, match="which column"):
        sed.sketch(dd.from_pandas(df[df.k < 2].assign(k=lambda d: d.k.map({0: "a", 1: "b"})), npartitions=2),
                   score="p_*", label="k")
    given = sed.sketch(ddf, score="p_*", label="k", classes=[0, 1, 2])
    assert list(given.classes) == [0, 1, 2] and given.n_rows == len(df)


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


def test_cli_engine_dask_slices_and_multiclass_equal_local(tmp_path):
    import json

    from typer.testing import CliRunner

    from streameval.cli.main import app

    folder = tmp_path / "log"
    folder.mkdir()
    df = sliced_frame(4000, seed=6)
    df.iloc[:2500].to_parquet(folder / "a.parquet")  # two files: two partitions
    df.iloc[2500:].to_parquet(folder / "b.parquet")
    common = ["-s", "p", "-l", "late", "--by", "country,tier", "--time", "ts", "--window", "1d", "-f", "json"]
    runs = [CliRunner().invoke(app, ["eval", str(folder), *common, *extra]) for extra in ([], ["--engine", "dask"])]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    local, on_dask = (json.loads(r.stdout) for r in runs)
    key = lambda row: (row["window"] or "", row["country"] or "", row["tier"])  # noqa: E731
    json_close(sorted(local["rows"], key=key), sorted(on_dask["rows"], key=key))
    assert len(local["rows"]) > 40

    mc = tmp_path / "mc.parquet"
    multiclass_frame(3000, seed=6).to_parquet(mc)
    runs = [CliRunner().invoke(app, ["eval", str(mc), "-s", "p_*", "-l", "animal", "-f", "json", *extra])
            for extra in ([], ["--engine", "dask"])]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    local, on_dask = (json.loads(r.stdout) for r in runs)
    json_close(local["metrics"], on_dask["metrics"])
