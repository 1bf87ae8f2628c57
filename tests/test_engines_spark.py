"""streameval.spark against the local path, on a local[2] Spark session (Java from Debian)."""

from __future__ import annotations

import os
import sys
import warnings

import pandas as pd
import pytest
from engine_data import frame, json_close, multiclass_frame, same, same_multiclass, same_slices, sliced_frame
from pyspark.sql import SparkSession  # a missing PySpark fails the run, never skips

import streameval
import streameval.spark as ses
from streameval import InputError, UsageError


@pytest.fixture(scope="module")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    session = (SparkSession.builder.master("local[2]").appName("streameval-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    session.sparkContext.setLogLevel("FATAL")
    yield session
    session.stop()


@pytest.mark.parametrize("partitions", [1, pytest.param(7, marks=pytest.mark.slow), pytest.param(200, marks=pytest.mark.slow)])  # 7, 200: the slow suite
def test_equal_to_local_for_any_partitioning(spark, partitions):
    df = frame()
    local = streameval.evaluate(df, score="p", label="y")
    sdf = spark.createDataFrame(df).repartition(partitions)
    r = ses.evaluate(sdf, score="p", label="y", thresholds=[0.5])
    same(r.sketch, local.sketch)
    assert r.metrics["roc_auc"] == local.metrics["roc_auc"]
    assert r.confusion[0]["tp"] == local.confusion[0]["tp"]


@pytest.mark.slow  # the default suite keeps the one-partition equalities (time: README)
def test_expressions_weights_string_labels_one_class_and_empty_partitions(spark):
    df = frame(seed=1).sort_values("y")
    sdf = spark.createDataFrame(df).coalesce(1).repartitionByRange(9, "y")  # single-class partitions
    local = streameval.evaluate(df, score="p", label="status", weight="w", pos_label="fraud")
    same(ses.sketch(sdf, score="p", label="status", weight="w", pos_label="fraud"), local.sketch, weighted=True)
    # Spark SQL expressions, as on the command line.
    expr = ses.sketch(sdf, score="p * 100", label="status = 'fraud'")
    df2 = df.assign(p100=df.p * 100, is_fraud=df.status == "fraud")
    same(expr, streameval.evaluate(df2, score="p100", label="is_fraud").sketch)
    # Empty partitions (more partitions than rows).
    tiny = df.head(5)
    same(ses.sketch(spark.createDataFrame(tiny).repartition(12), score="p", label="y"),
         streameval.evaluate(tiny, score="p", label="y").sketch)


@pytest.mark.slow  # the default suite keeps the one-partition equalities (time: README)
def test_clear_errors(spark):
    sdf = spark.createDataFrame(frame(100))
    with pytest.raises(InputError, match="nope"):
        ses.evaluate(sdf, score="nope", label="y")
    with pytest.raises((InputError, TypeError), match="numeric|number"):
        ses.evaluate(sdf, score="status", label="y")
    with pytest.raises(UsageError, match="time=.*window="):
        ses.evaluate(sdf, score="p", label="y", window="1d")
    with pytest.raises(InputError, match="slice='nope'"):
        ses.evaluate(sdf, score="p", label="y", by="nope")
    nulls = pd.DataFrame({"p": [0.1, 0.9, 0.4], "y": [0.0, None, 1.0]})
    with pytest.raises(InputError, match="null|missing"):
        ses.evaluate(spark.createDataFrame(nulls), score="p", label="y")


def test_cli_engine_spark_equals_local(spark, tmp_path):
    import json

    from typer.testing import CliRunner

    from streameval.cli.main import app

    path = tmp_path / "log.parquet"
    frame(5000, seed=5).to_parquet(path)
    runs = [CliRunner().invoke(app, ["eval", str(path), "-s", "p", "-l", "y", "-f", "json", *extra])
            for extra in ([], ["--engine", "spark"])]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    local, on_spark = (json.loads(r.stdout)["metrics"]["roc_auc"] for r in runs)
    assert local == on_spark


SLICED = dict(score="p", label="late", by=["country", "tier"], time="ts", window="1d")


@pytest.mark.parametrize("partitions", [pytest.param(n, marks=pytest.mark.slow) for n in (1, 7, 200)])  # the slow suite
def test_slices_and_windows_equal_local_for_any_partitioning(spark, partitions):
    df = sliced_frame()
    local = streameval.evaluate(df, **SLICED)
    sdf = spark.createDataFrame(df).repartition(partitions) if partitions > 1 else spark.createDataFrame(df).coalesce(1)
    r = ses.evaluate(sdf, **SLICED)
    same_slices(r, local)
    assert any(row["country"] is None for row in r.rows) and any(row["window"] is None for row in r.rows)
    assert any(row["n_labelled"] < row["n_rows"] for row in r.rows)
    if partitions == 7:  # the merge tree keeps the partitions' order: reruns give the same bits
        again = ses.evaluate(sdf, **SLICED)
        assert again.rows == r.rows


@pytest.mark.slow  # the default suite keeps the one-partition equalities (time: README)
def test_slices_by_expressions_weights_string_labels_one_class_and_empty_partitions(spark):
    df = sliced_frame(seed=3).sort_values("y")
    sdf = spark.createDataFrame(df).coalesce(1).repartitionByRange(9, "y")  # single-class partitions
    options = dict(score="p", label="status", weight="w", pos_label="fraud", time="ts", window="1w",
                   tz="Europe/Paris", thresholds=[0.3, 0.5])
    # Spark timestamps are instants (read here in the session's UTC), so the local reference gets
    # UTC-aware times: naive ones would be read as local times in tz.
    aware = df.assign(ts=df.ts.dt.tz_localize("UTC"))
    same_slices(ses.evaluate(sdf, by="country", **options), streameval.evaluate(aware, by="country", **options))
    # A Spark SQL expression as a slice: the key is named by the expression, as on the command line.
    r = ses.evaluate(sdf, by=["tier % 2"], **options)
    local = streameval.evaluate(aware.assign(**{"tier % 2": df.tier % 2}), by=["tier % 2"], **options)
    same_slices(r, local)
    assert r.sketches.key_names == ("window", "tier % 2")
    tiny = df.head(5)
    same_slices(ses.evaluate(spark.createDataFrame(tiny).repartition(12), by="country", **options),
                streameval.evaluate(aware.head(5), by="country", **options))


# 200 partitions of a multiclass frame run in the Dask tests; here they would add ~2 minutes on
# two cores, and the Spark merge tree is exercised at 200 partitions by the binary and sliced tests.
@pytest.mark.parametrize("partitions", [1, pytest.param(7, marks=pytest.mark.slow)])
def test_multiclass_equal_to_local(spark, partitions):
    df = multiclass_frame(2000)
    local = streameval.evaluate(df, score=["p_0", "p_1", "p_2"], label="animal", weight="w")
    r = ses.evaluate(spark.createDataFrame(df).repartition(partitions), score="p_*", label="animal", weight="w")
    assert type(r) is type(local)
    same_multiclass(r.sketch, local.sketch)
    assert r.metrics["roc_auc_ovo_macro"]["value"] == pytest.approx(local.metrics["roc_auc_ovo_macro"]["value"],
                                                                    rel=1e-12)


@pytest.mark.slow  # the default suite keeps the one-partition equalities (time: README)
def test_multiclass_one_class_partitions(spark):
    df = multiclass_frame(seed=4).sort_values("k")
    sdf = spark.createDataFrame(df).coalesce(1).repartitionByRange(6, "k")
    same_multiclass(ses.sketch(sdf, score=["p_0", "p_1", "p_2"], label="k"),
                    streameval.evaluate(df, score="p_0,p_1,p_2", label="k").sketch)


@pytest.mark.slow  # ~20 s; the default suite keeps the CLI's plain Spark run (default suite time)
def test_cli_engine_spark_slices_and_multiclass_equal_local(spark, tmp_path):
    import json

    from typer.testing import CliRunner

    from streameval.cli.main import app

    path = tmp_path / "log.parquet"
    sliced_frame(3000, seed=7).to_parquet(path)
    common = ["-s", "p", "-l", "late", "--by", "country", "--time", "ts", "--window", "1d", "-f", "json"]
    runs = [CliRunner().invoke(app, ["eval", str(path), *common, *extra]) for extra in ([], ["--engine", "spark"])]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    local, on_spark = (json.loads(r.stdout) for r in runs)
    key = lambda row: (row["window"] or "", row["country"] or "")  # noqa: E731
    json_close(sorted(local["rows"], key=key), sorted(on_spark["rows"], key=key))
    mc = tmp_path / "mc.parquet"
    multiclass_frame(1500, seed=7).to_parquet(mc)
    runs = [CliRunner().invoke(app, ["eval", str(mc), "-s", "p_0", "-s", "p_1", "-s", "p_2", "-l", "animal", "-f", "json",
                                     *extra]) for extra in ([], ["--engine", "spark"])]
    assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]
    local, on_spark = (json.loads(r.stdout)["metrics"] for r in runs)
    assert local.keys() == on_spark.keys()
    assert local["accuracy"] == on_spark["accuracy"] and local["roc_auc_ovr_macro"] == on_spark["roc_auc_ovr_macro"]
