"""Side by side: ordered merge tree vs Spark treeReduce, binary sketch of 20k rows in 200 partitions."""
import functools
import os
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from engine_data import frame  # noqa: E402 - after sys.path
from pyspark.sql import SparkSession  # noqa: E402

import streameval.spark as ses  # noqa: E402
from streameval.engines import common  # noqa: E402
from streameval.engines import spark as es  # noqa: E402

spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4").config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
spark.sparkContext.setLogLevel("FATAL")
sdf = spark.createDataFrame(frame()).repartition(200).cache()
sdf.count()

def tree_reduce():
    eng = es._Spark()
    job = common.job_for(None, None, "p", "y", None, "raise")
    sel = eng.select(sdf, [(common.SCORE, "p"), (common.LABEL, "y")])
    part = functools.partial(common.partition_sketch, job=job)
    def per(batches):
        import pyarrow as pa
        yield pa.RecordBatch.from_pydict({"sketch": [part(list(batches))]}, schema=pa.schema([("sketch", pa.binary())]))
    return sel.mapInArrow(per, "sketch binary").rdd.map(lambda r: bytes(r[0])).treeReduce(common.merge_sketches, depth=2)

runs = {"ordered fan_in=16": lambda: ses.sketch(sdf, score="p", label="y"),
        "ordered fan_in=8": lambda: ses.sketch(sdf, score="p", label="y", fan_in=8),
        "treeReduce depth=2": tree_reduce}
times = {k: [] for k in runs}
for f in runs.values():  # warm
    f()
for _ in range(3):
    for k, f in runs.items():
        t = time.perf_counter()
        f()
        times[k].append(time.perf_counter() - t)
for k, v in times.items():
    print(f"{k}: median {statistics.median(v):.2f} s  {[round(x, 2) for x in v]}")
print("load", os.getloadavg())
spark.stop()
