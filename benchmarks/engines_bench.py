"""Engines: streameval on Spark and Dask against Spark's own evaluators and the local path.

    python benchmarks/engines_bench.py [--rows 10000000] [--partitions 16] [--out FILE.json]

Writes a Parquet file of ``--rows`` rows (float32 scores, int labels), then, side by side in one
run (medians of 3 after a warm-up):
- Spark local[2]: ``streameval.spark.evaluate`` vs ``BinaryClassificationEvaluator(areaUnderROC)``
  and ``BinaryClassificationMetrics`` (default bins; PySpark's Python API does not expose the
  Scala constructor's ``numBins``): seconds and AUC error against the exact AUC (scikit-learn on
  the same rows);
- Dask (threaded scheduler) vs local ``streameval.evaluate``: seconds;
- the sketch: bytes per partition and seconds per merge (for docs/scaling.md).
Not part of any CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

REPS = 3


def timed(f: Callable[[], Any], reps: int | None = None) -> tuple[float, Any]:
    reps = REPS if reps is None else reps
    f()
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--out", default=None)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sklearn.metrics import roc_auc_score

    import streameval

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, args.rows).astype(np.int32)
    p = (1 / (1 + np.exp(-(rng.normal(size=args.rows) + 1.2 * y)))).astype(np.float32)
    path = os.path.join(tempfile.mkdtemp(), "log.parquet")
    pq.write_table(pa.table({"p": p, "y": y}), path, row_group_size=1 << 20)
    exact = roc_auc_score(y, p.astype(np.float64))
    global REPS
    REPS = args.reps
    res: dict[str, Any] = {"rows": args.rows, "partitions": args.partitions, "exact_auc": exact}

    def save() -> None:  # after every step: a failure later keeps what was measured
        if args.out:
            with open(args.out, "w") as f:
                json.dump(res, f, indent=1)

    t_local, local = timed(lambda: streameval.evaluate(path, score="p", label="y"))
    res["local_s"] = t_local
    res["local_auc_error"] = abs(local.metrics["roc_auc"]["value"] - exact)
    save()

    # The sketch: bytes per partition and merge cost.
    part_rows = args.rows // args.partitions
    parts = [streameval.BinarySketch().update(y[i * part_rows:(i + 1) * part_rows], p[i * part_rows:(i + 1) * part_rows])
             for i in range(args.partitions)]
    blobs = [s.to_bytes() for s in parts]
    res["sketch_bytes_per_partition"] = statistics.median(len(b) for b in blobs)
    from streameval.engines.common import merge_sketches

    t0 = time.perf_counter()
    merged = merge_sketches(*blobs)
    res["merge_s_per_sketch"] = (time.perf_counter() - t0) / len(blobs)
    res["merged_sketch_bytes"] = len(merged)
    save()

    import dask
    import dask.dataframe as dd

    import streameval.dask as sed

    with dask.config.set(scheduler="threads"):
        ddf = dd.read_parquet(path).repartition(npartitions=args.partitions)
        res["dask_s"], rd = timed(lambda: sed.evaluate(ddf, score="p", label="y"))
        res["dask_auc_error"] = abs(rd.metrics["roc_auc"]["value"] - exact)
        save()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.mllib.evaluation import BinaryClassificationMetrics
    from pyspark.sql import SparkSession

    import streameval.spark as ses

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sdf = spark.read.parquet(path).repartition(args.partitions).cache()
    sdf.count()
    res["spark_streameval_s"], rs = timed(lambda: ses.evaluate(sdf, score="p", label="y"))
    res["spark_streameval_auc_error"] = abs(rs.metrics["roc_auc"]["value"] - exact)
    save()
    scored = sdf.selectExpr("cast(p as double) as rawPrediction", "cast(y as double) as label").cache()
    scored.count()
    ev = BinaryClassificationEvaluator(rawPredictionCol="rawPrediction", labelCol="label", metricName="areaUnderROC")
    res["spark_evaluator_s"], auc_ev = timed(lambda: ev.evaluate(scored))
    res["spark_evaluator_auc_error"] = abs(auc_ev - exact)
    save()
    pairs = scored.rdd.map(lambda r: (float(r[0]), float(r[1]))).cache()
    pairs.count()
    res["spark_metrics_default_s"], auc_m = timed(lambda: BinaryClassificationMetrics(pairs).areaUnderROC)
    res["spark_metrics_default_auc_error"] = abs(auc_m - exact)
    save()
    spark.stop()
    os.remove(path)
    save()
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
