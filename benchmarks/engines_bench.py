"""Engines: streameval on Spark and Dask against Spark's own evaluators and the local path.

    python benchmarks/engines_bench.py --data benchmarks/data/mid_10M_f32.parquet \
        [--cases all] [--timeout 1800] [--driver-memory 8g] [--reps 1] [--out FILE.json]
    python benchmarks/engines_bench.py --rows 5000000          # generated data, as before

Reads one Parquet file (columns ``score``, ``label``; ``benchmarks/synth.py`` writes them) or
writes ``--rows`` generated rows, then runs these cases one after the other in one process, each
reading the same file (nothing cached, so every side pays the same Parquet read), after a warm-up
of every case on a 200K-row file:

- ``exact``: the exact AUC, a Mann-Whitney count in integers over the sorted float32 scores (and
  scikit-learn's ``roc_auc_score`` as a cross-check up to 20M rows);
- ``local``: ``streameval.evaluate(path)``;
- ``dask``: ``streameval.dask.evaluate`` on ``dd.read_parquet`` (one partition per row group),
  threaded scheduler;
- ``spark``: ``streameval.spark.evaluate`` on ``spark.read.parquet`` (``local[2]``, about one
  partition per row group);
- ``evaluator``: ``BinaryClassificationEvaluator(metricName="areaUnderROC")`` (its default
  ``numBins=1000``);
- ``bcm-0`` and ``bcm-1000``: ``BinaryClassificationMetrics(scoreAndLabels, numBins)``, the
  Scala constructor called through Py4J on the DataFrame as a ``Dataset[(Double, Double)]`` (the
  Python API does not expose ``numBins``); 0 (no down-sampling: every distinct score is a
  threshold) is the default of Scala's ``new BinaryClassificationMetrics(rdd)`` on
  ``RDD[(Double, Double)]``;
- ``bcm-py``: the Python API as a PySpark user calls it, ``BinaryClassificationMetrics(rdd)`` on
  an RDD of Python ``(score, label)`` tuples; it calls the Scala constructor on a DataFrame, whose
  default is ``numBins=1000`` (Spark 4.3 bytecode: ``$lessinit$greater$default$2`` returns 1000);
- ``sketch``: bytes of one partition's sketch, and where a merge's time goes (parsing, merging,
  re-encoding), over 16 row groups;
- ``cold``: a fresh executor's first task against a warm one, in fresh processes, rounds
  alternating: (a) the executor path alone (import, first partition of one row group in 10K-row
  Arrow batches, second partition), with the Numba cache filled and with an empty
  ``NUMBA_CACHE_DIR``; (b) a fresh ``local[2]`` session whose Python workers have already run a
  trivial ``mapInArrow`` job (twice): ``streameval.spark.sketch`` first and second.

Each Spark case runs in its own job group, cancelled after ``--timeout`` seconds (recorded as a
timeout). Every figure carries the 1-minute load average before and after it and, for Spark
cases, the driver JVM's peak heap (in ``local[2]`` the executors run inside the driver JVM).
Results are saved after every case. Not part of any CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import traceback
from fractions import Fraction
from typing import Any, Callable

import numpy as np

WARM_ROWS = 200_000


def exact_auc(y: np.ndarray, s: np.ndarray) -> float:
    """ROC AUC by counting pairs in integers: for each positive, the negatives below it plus half
    those tied with it (the Mann-Whitney U), over ``P * N``; correctly rounded."""
    pos = np.sort(s[y == 1])
    neg = np.sort(s[y == 0])
    below = np.searchsorted(neg, pos, "left")
    upto = np.searchsorted(neg, pos, "right")
    twice_u = 2 * int(below.sum(dtype=np.int64)) + int((upto - below).sum(dtype=np.int64))
    return float(Fraction(twice_u, 2 * len(pos) * len(neg)))


def load1() -> float:
    return round(os.getloadavg()[0], 2)


class Bench:
    """Runs cases, records each with its load average, saves after every case."""

    def __init__(self, out: str | None, reps: int, timeout: float) -> None:
        self.out, self.reps, self.timeout = out, reps, timeout
        self.res: dict[str, Any] = {"cases": {}}
        self.spark: Any = None

    def save(self) -> None:
        if self.out:
            tmp = f"{self.out}.tmp{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(self.res, f, indent=1)
            os.replace(tmp, self.out)

    def _heap_reset(self) -> None:
        if self.spark is not None:
            mf = self.spark.sparkContext._jvm.java.lang.management.ManagementFactory
            for pool in mf.getMemoryPoolMXBeans():
                pool.resetPeakUsage()

    def _heap_peak(self) -> float | None:
        if self.spark is None:
            return None
        jvm = self.spark.sparkContext._jvm
        heap = jvm.java.lang.management.MemoryType.HEAP
        peak = sum(p.getPeakUsage().getUsed() for p in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
                   if p.getType() == heap)
        return round(peak / 2**30, 2)

    def _gc_s(self) -> float:
        beans = self.spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
        return sum(b.getCollectionTime() for b in beans) / 1000

    def _stages(self) -> list[dict[str, Any]]:
        """Spark's active stages (what a cancelled case was doing)."""
        tracker = self.spark.sparkContext.statusTracker()
        out = []
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None:
                out.append({"stage": sid, "name": info.name, "tasks": info.numTasks,
                            "done": info.numCompletedTasks, "active": info.numActiveTasks})
        return out

    def _cancel(self, name: str, rec: dict[str, Any]) -> None:
        rec["stages_at_timeout"] = self._stages()
        self.spark.sparkContext.cancelJobGroup(name)

    def case(self, name: str, f: Callable[[], float | None], exact: float | None, spark: bool = False) -> None:
        """Run ``f`` (returning an AUC or None) ``reps`` times; record the median seconds."""
        rec: dict[str, Any] = {"load1_before": load1(), "runs_s": []}
        self.res["cases"][name] = rec
        print(f"[{time.strftime('%H:%M:%S')}] {name} (load {rec['load1_before']})", flush=True)
        auc = None
        for _ in range(self.reps):
            timer = None
            if spark:
                sc = self.spark.sparkContext
                sc.setJobGroup(name, name, interruptOnCancel=True)
                timer = threading.Timer(self.timeout, self._cancel, args=(name, rec))
                timer.start()
                self._heap_reset()
                gc0 = self._gc_s()
            t0 = time.perf_counter()
            try:
                auc = f()
            except Exception as exc:  # noqa: BLE001 - a benchmark records what failed and goes on
                took = time.perf_counter() - t0
                text = f"{type(exc).__name__}: {exc}"
                rec["error"] = "timeout" if "stages_at_timeout" in rec else text[:1500]
                rec["failed_after_s"] = round(took, 1)
                rec["traceback_tail"] = traceback.format_exc()[-1500:]
                break
            finally:
                if timer is not None:
                    timer.cancel()
                    self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            rec["runs_s"].append(round(time.perf_counter() - t0, 3))
        if rec["runs_s"]:
            rec["s"] = statistics.median(rec["runs_s"])
        if auc is not None and "error" not in rec:
            rec["auc"] = auc
            if exact is not None:
                rec["auc_error"] = abs(auc - exact)
        rec["load1_after"] = load1()
        if spark:
            rec["driver_heap_peak_gib"] = self._heap_peak()
            rec["jvm_gc_s"] = round(self._gc_s() - gc0, 1)  # last run's
        print(f"    {json.dumps({k: v for k, v in rec.items() if k != 'traceback_tail'})}", flush=True)
        self.save()


def spark_pairs(df: Any) -> Any:
    """``df``'s two double columns as the JVM ``RDD[(Double, Double)]`` the Scala
    ``BinaryClassificationMetrics`` constructor takes."""
    jvm = df.sparkSession.sparkContext._jvm
    enc = jvm.org.apache.spark.sql.Encoders
    return getattr(df._jdf, "as")(enc.tuple(enc.scalaDouble(), enc.scalaDouble())).rdd()


def sketch_costs(path: str, groups: int) -> dict[str, Any]:
    """One partition's (row group's) sketch bytes, and where a ``groups``-way merge's CPU time goes
    (parse, merge, re-encode), with the zlib-compressed payload a file has and the uncompressed one
    the engines ship (``compress=False``)."""
    import pyarrow.parquet as pq

    import streameval
    from streameval.engines.common import merge_sketches
    from streameval.sketch.binary import BinarySketch, merge

    f = pq.ParquetFile(path)
    sketches = []
    for i in range(min(groups, f.metadata.num_row_groups)):
        t = f.read_row_group(i, columns=["score", "label"])
        sketches.append(streameval.BinarySketch(threads=1).update(t["label"].to_numpy(), t["score"].to_numpy()))
    n = len(sketches)
    out: dict[str, Any] = {"partition_rows": f.metadata.row_group(0).num_rows, "partitions": n,
                           "partition_occupied_bins_median": statistics.median(s.n_occupied_bins for s in sketches)}
    for compress in (True, False):
        key = "zlib" if compress else "uncompressed"
        cpu = time.process_time
        t0 = cpu()
        blobs = [s.to_bytes(compress=compress) for s in sketches]
        t1 = cpu()
        parsed = [BinarySketch.from_bytes(b) for b in blobs]
        t2 = cpu()
        merged = merge(parsed)
        t3 = cpu()
        data = merged.to_bytes(compress=compress)
        t4 = cpu()
        out[key] = {"bytes_per_partition_median": statistics.median(len(b) for b in blobs),
                    "encode_cpu_s_per_partition": (t1 - t0) / n, "parse_cpu_s_per_sketch": (t2 - t1) / n,
                    "merge_cpu_s_per_sketch": (t3 - t2) / n, "encode_merged_cpu_s": t4 - t3,
                    "merged_bytes": len(data)}
    plain = [s.to_bytes(compress=False) for s in sketches]
    t0 = time.process_time()
    merge_sketches(*plain)
    out["engine_merge_sketches_cpu_s_per_sketch"] = (time.process_time() - t0) / n
    out["merged_occupied_bins"] = int(merged.n_occupied_bins)
    return out


COLD_ROUNDS = 2


def cold_python_child(path: str) -> dict[str, float]:
    """Executor path in this fresh process: imports, first and second partition."""
    t = [time.perf_counter()]
    import numba  # noqa: F401
    import pyarrow.parquet as pq

    t.append(time.perf_counter())
    from streameval.engines.common import LABEL, SCORE, SketchJob, partition_sketch
    t.append(time.perf_counter())
    table = pq.ParquetFile(path).read_row_group(0, columns=["score", "label"]).rename_columns([SCORE, LABEL])
    batches = table.to_batches(max_chunksize=10_000)
    job = SketchJob(names={"score": "score", "label": "label"})
    t.append(time.perf_counter())
    partition_sketch(batches, job)
    t.append(time.perf_counter())
    partition_sketch(batches, job)
    t.append(time.perf_counter())
    d = np.diff(t)
    return {"import_numba_arrow_s": d[0], "import_streameval_s": d[1], "first_partition_s": d[3],
            "second_partition_s": d[4], "partition_rows": table.num_rows}


def cold_spark_child(path: str) -> dict[str, float]:
    """A fresh local[2] session: a trivial Arrow job twice, then streameval's sketch twice."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

    from streameval.engines import common
    from streameval.engines import spark as es

    meta = pq.ParquetFile(path).metadata
    split = max(4 << 20, -(-os.path.getsize(path) // meta.num_row_groups))
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.files.maxPartitionBytes", str(split)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    raw = spark.read.parquet(path)

    def rows(batches: Any) -> Any:
        import pyarrow as pa

        yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})

    out: dict[str, float] = {}
    for name in ("trivial_1_s", "trivial_2_s", "sketch_first_s", "sketch_second_s"):
        t0 = time.perf_counter()
        if name.startswith("trivial"):
            raw.mapInArrow(rows, "n long").collect()
        else:
            common.sketch_on(es._Spark(), raw, score="score", label="label", weight=None, grid=None,
                             pos_label=None, nan_policy="raise")
        out[name] = time.perf_counter() - t0
    spark.stop()
    return out


def cold_start(path: str, rounds: int = COLD_ROUNDS) -> dict[str, Any]:
    """The ``cold`` case: children in fresh processes, variants alternating (see the docstring)."""
    import subprocess

    def child(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
        e = dict(os.environ, **(env or {}))
        r = subprocess.run([sys.executable, __file__, "--data", path, *args], capture_output=True, text=True,
                           env=e, timeout=1800)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        if r.returncode or not lines:
            return {"error": r.stderr[-1500:]}
        rec: dict[str, Any] = json.loads(lines[-1])
        rec["load1_after"] = load1()
        return rec

    out: dict[str, Any] = {"python": {"cache_filled": [], "cache_empty": []},
                           "spark": []}
    child(["--child", "cold-python"])  # fills the cache for these column types
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as empty:
            out["python"]["cache_empty"].append(child(["--child", "cold-python"], {"NUMBA_CACHE_DIR": empty}))
        out["python"]["cache_filled"].append(child(["--child", "cold-python"]))
    for _ in range(rounds):
        out["spark"].append(child(["--child", "cold-spark"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="Parquet file with columns score, label (default: generate)")
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows to generate when --data is not given")
    ap.add_argument("--cases", default="all",
                    help="comma list of exact,local,dask,spark,evaluator,bcm-0,bcm-1000,bcm-py,sketch,cold")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per Spark case (cancelled after)")
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--cold-rounds", type=int, default=COLD_ROUNDS, help="rounds of the cold case")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:  # one fresh process of the cold case
        rec = (cold_python_child(args.data) if args.child == "cold-python"
               else cold_spark_child(args.data))
        print(json.dumps(rec | {"load1": load1()}))
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    import streameval

    every = ["exact", "local", "dask", "spark", "evaluator", "bcm-0", "bcm-1000", "bcm-py", "sketch", "cold"]
    cases = every if args.cases == "all" else args.cases.split(",")
    unknown = set(cases) - set(every)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}")
    tmp = tempfile.mkdtemp()
    path = args.data
    if path is None:
        rng = np.random.default_rng(0)
        y = rng.integers(0, 2, args.rows).astype(np.int8)
        p = (1 / (1 + np.exp(-(rng.normal(size=args.rows) + 1.2 * y)))).astype(np.float32)
        path = os.path.join(tmp, "log.parquet")
        pq.write_table(pa.table({"score": p, "label": y}), path, row_group_size=1 << 20)
        del y, p
    meta = pq.ParquetFile(path).metadata
    warm = os.path.join(tmp, "warm.parquet")
    pq.write_table(pq.ParquetFile(path).read_row_group(0).slice(0, WARM_ROWS), warm)
    b = Bench(args.out, args.reps, args.timeout)
    b.res.update({"data": path, "rows": meta.num_rows, "row_groups": meta.num_row_groups,
                  "file_bytes": os.path.getsize(path), "reps": args.reps, "timeout_s": args.timeout,
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})

    exact = None
    if "exact" in cases:
        def exact_case() -> float:
            t = pq.read_table(path, columns=["score", "label"])
            return exact_auc(t["label"].to_numpy(), t["score"].to_numpy())
        b.case("exact", exact_case, None)
        exact = b.res["exact_auc"] = b.res["cases"]["exact"]["auc"]
        if meta.num_rows <= 20_000_000:
            from sklearn.metrics import roc_auc_score

            t = pq.read_table(path, columns=["score", "label"])
            b.res["sklearn_auc"] = roc_auc_score(t["label"].to_numpy(), t["score"].to_numpy().astype(np.float64))
            del t
        b.save()

    def se_auc(report: Any) -> float:
        roc = report.metrics["roc_auc"]
        b.res.setdefault("streameval_bounds", {})[str(report.provenance.get("engine", "local"))] = [
            roc.get("lower"), roc.get("upper")]
        return float(roc["value"])

    if "local" in cases:
        streameval.evaluate(warm, score="score", label="label")
        b.case("local", lambda: se_auc(streameval.evaluate(path, score="score", label="label")), exact)

    if "dask" in cases:
        import dask
        import dask.dataframe as dd

        import streameval.dask as sed

        with dask.config.set(scheduler="threads"):
            sed.evaluate(dd.read_parquet(warm), score="score", label="label")
            ddf = dd.read_parquet(path, split_row_groups=True)
            b.res["dask_partitions"] = int(ddf.npartitions)
            b.case("dask", lambda: se_auc(sed.evaluate(ddf, score="score", label="label")), exact)

    spark_cases = [c for c in cases if c in ("spark", "evaluator", "bcm-0", "bcm-1000", "bcm-py")]
    if spark_cases:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.ml.evaluation import BinaryClassificationEvaluator
        from pyspark.mllib.evaluation import BinaryClassificationMetrics
        from pyspark.sql import SparkSession

        import streameval.spark as ses

        split = max(4 << 20, -(-os.path.getsize(path) // meta.num_row_groups))
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.driver.memory", args.driver_memory)
                 .config("spark.sql.files.maxPartitionBytes", str(split)).getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        b.spark = spark
        b.res["spark"] = {"version": spark.version, "driver_memory": args.driver_memory,
                          "max_heap_gib": round(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
                                                / 2**30, 2)}
        jvm = spark.sparkContext._jvm

        def frames(p: str) -> tuple[Any, Any]:
            raw = spark.read.parquet(p)
            return raw, raw.selectExpr("cast(score as double) as score", "cast(label as double) as label")

        def run_all(p: str, record: bool) -> None:
            raw, scored = frames(p)
            if record:
                b.res["spark"]["partitions"] = raw.rdd.getNumPartitions()
            steps: dict[str, Callable[[], float | None]] = {
                "spark": lambda: se_auc(ses.evaluate(raw, score="score", label="label")),
                "evaluator": lambda: float(BinaryClassificationEvaluator(
                    rawPredictionCol="score", labelCol="label", metricName="areaUnderROC").evaluate(scored)),
                "bcm-0": lambda: float(jvm.org.apache.spark.mllib.evaluation.BinaryClassificationMetrics(
                    spark_pairs(scored), 0).areaUnderROC()),
                "bcm-1000": lambda: float(jvm.org.apache.spark.mllib.evaluation.BinaryClassificationMetrics(
                    spark_pairs(scored), 1000).areaUnderROC()),
                "bcm-py": lambda: float(BinaryClassificationMetrics(
                    scored.rdd.map(lambda r: (float(r[0]), float(r[1])))).areaUnderROC),
            }
            for c in spark_cases:
                if record:
                    b.case(c, steps[c], exact, spark=True)
                else:
                    steps[c]()

        run_all(warm, record=False)
        b.res["spark"]["warm_up_done"] = True
        run_all(path, record=True)
        spark.stop()
        b.spark = None

    if "sketch" in cases:
        b.res["sketch"] = sketch_costs(path, 16)
        b.save()
    if "cold" in cases:
        b.res["cold"] = cold_start(path, args.cold_rounds)
        b.save()
    b.res["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    b.save()
    print(json.dumps(b.res, indent=1))


if __name__ == "__main__":
    main()
