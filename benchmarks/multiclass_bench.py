"""Multiclass sketch: update throughput against scikit-learn, and memory at K = 100.

    python benchmarks/multiclass_bench.py [--rows 2000000] [--k100-rows 1000000] [--threads N]
                                          [--e2e-rows 10000000] [--cold-reps 2] [--part k10|k100|e2e]

Part 1 (K = 10, float32 softmax scores): rows/s of ``MulticlassSketch.update`` (1M-row chunks),
then the time to compact and compute every metric, against scikit-learn computing the confusion
matrix, the classification report, one-vs-rest and one-vs-one ROC-AUC and the log loss in memory
on the same rows. Part 2 (K = 100, run in a child process so its peak RSS is its own): rows fed in
100K-row chunks, peak RSS, compact sketch size in total and per class. Part 3 (end to end, K = 10):
a Parquet file of ``--e2e-rows`` rows (10 float32 score columns + int32 label), read with pyarrow
and nothing else (decode-only) and evaluated with ``streameval.evaluate(score="p_*")``, the two
alternated three times after a warm-up each; medians of wall and CPU times (all threads) and the
ratio of the wall times, with the machine's load average at the start and the end; then the same
pair cold, each run in a fresh process (what a command-line run pays: imports, compiled kernels
loaded from their cache), alternated ``--cold-reps`` times. CPU times are all threads', user
and system together and user alone. ``--part`` runs one part alone.
Not part of any CI.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def scores(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and float32 softmax scores whose true class gets a +1.5 logit boost."""
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)).astype(np.float32)
    z[np.arange(n), y] += 1.5
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    return y, z


def part_k10(n: int, threads: int | None) -> dict[str, float]:
    from sklearn import metrics as skm

    from streameval import MulticlassSketch

    rng = np.random.default_rng(0)
    y, p = scores(rng, n, 10)
    MulticlassSketch(classes=range(10)).update(y[:100_000], p[:100_000])  # compile / warm caches
    s = MulticlassSketch(classes=range(10), threads=threads)
    t0 = time.perf_counter()
    for a in range(0, n, 1_000_000):
        s.update(y[a:a + 1_000_000], p[a:a + 1_000_000])
    t1 = time.perf_counter()
    s.confusion_matrix()
    s.classification_report()
    ovr, ovo = s.roc_auc("ovr"), s.roc_auc("ovo")
    s.log_loss()
    t2 = time.perf_counter()
    pred = p.argmax(axis=1)
    skm.confusion_matrix(y, pred)
    skm.classification_report(y, pred)
    ref_ovr = skm.roc_auc_score(y, p, multi_class="ovr")
    ref_ovo = skm.roc_auc_score(y, p, multi_class="ovo")
    skm.log_loss(y, p)
    t3 = time.perf_counter()
    return {
        "rows": n,
        "update_s": t1 - t0,
        "update_rows_per_s": n / (t1 - t0),
        "metrics_s": t2 - t1,
        "sklearn_s": t3 - t2,
        "sklearn_rows_per_s": n / (t3 - t2),
        "speedup_update": (t3 - t2) / (t1 - t0),
        "speedup_update_and_metrics": (t3 - t2) / (t2 - t0),
        "ovr_auc": float(ovr), "ovr_width": ovr.width, "ovr_sklearn": ref_ovr,
        "ovo_auc": float(ovo), "ovo_width": ovo.width, "ovo_sklearn": ref_ovo,
        "sketch_mb": s.nbytes / 1e6,
        "sketch_mb_per_class": s.nbytes / 1e6 / 10,
    }


def part_k100(n: int) -> dict[str, float]:
    from streameval import MulticlassSketch

    rng = np.random.default_rng(1)
    s = MulticlassSketch(classes=range(100), threads=1)
    t0 = time.perf_counter()
    for a in range(0, n, 100_000):
        y, p = scores(rng, min(100_000, n - a), 100)
        s.update(y, p)
    t1 = time.perf_counter()
    ovo = s.roc_auc("ovo")
    s.classification_report()
    t2 = time.perf_counter()
    return {
        "rows": n,
        "update_s": t1 - t0,
        "metrics_s": t2 - t1,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "sketch_mb": s.nbytes / 1e6,
        "sketch_mb_per_class": s.nbytes / 1e6 / 100,
        "pair_grid": s.pair_grid.describe() if s.pair_grid else "none",
        "ovo_auc": float(ovo), "ovo_width": ovo.width,
    }


def part_e2e(n: int, cold_reps: int = 2) -> dict[str, float]:
    import os
    import statistics
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    import streameval

    path = os.path.join(tempfile.mkdtemp(), "mc10.parquet")
    rng = np.random.default_rng(2)
    with pq.ParquetWriter(path, pa.schema([*(pa.field(f"p_{j}", pa.float32()) for j in range(10)), pa.field("y", pa.int32())])) as w:
        for a in range(0, n, 1_000_000):
            y, p = scores(rng, min(1_000_000, n - a), 10)
            w.write_table(pa.table({**{f"p_{j}": p[:, j] for j in range(10)}, "y": y.astype(np.int32)}))

    def decode() -> None:
        f = pq.ParquetFile(path)
        for _ in f.iter_batches(batch_size=1 << 20):
            pass

    def evaluate() -> None:
        streameval.evaluate(path, score="p_*", label="y")

    def cpu() -> tuple[float, float]:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime, r.ru_utime

    decode()
    evaluate()
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {"decode": [], "evaluate": []}
    cpus: dict[str, list[float]] = {"decode": [], "evaluate": []}
    users: dict[str, list[float]] = {"decode": [], "evaluate": []}
    for _ in range(3):
        for name, f in (("decode", decode), ("evaluate", evaluate)):
            t0, (c0, u0) = time.perf_counter(), cpu()
            f()
            c1, u1 = cpu()
            times[name].append(time.perf_counter() - t0)
            cpus[name].append(c1 - c0)
            users[name].append(u1 - u0)
    d, e = statistics.median(times["decode"]), statistics.median(times["evaluate"])
    dc, ec = statistics.median(cpus["decode"]), statistics.median(cpus["evaluate"])
    # Cold: what a command-line run pays, each in a fresh process (imports, kernels loaded from
    # the cache, the file read once), decode-only and evaluate alternated.
    cold = {
        "decode": f"import pyarrow.parquet as pq\nfor _ in pq.ParquetFile({path!r}).iter_batches(batch_size=1 << 20): pass",
        "evaluate": f"import streameval\nstreameval.evaluate({path!r}, score='p_*', label='y')",
    }
    cold_t: dict[str, list[float]] = {"decode": [], "evaluate": []}
    cold_c: dict[str, list[float]] = {"decode": [], "evaluate": []}
    for _ in range(cold_reps):
        for name, code in cold.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cold_t[name].append(time.perf_counter() - t0)
            cold_c[name].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    os.remove(path)
    cd, ce = statistics.median(cold_t["decode"]), statistics.median(cold_t["evaluate"])
    # CPU seconds (all threads) are reported too: on a shared machine they move less with the
    # load than wall times do; user CPU apart, as the system part (page faults) swung 0.1-1.8 s
    # per run on the shared VM of session 7 whatever the code.
    return {"rows": n, "decode_s": d, "evaluate_s": e, "ratio_decode_over_evaluate": d / e,
            "decode_cpu_s": dc, "evaluate_cpu_s": ec,
            "decode_user_s": statistics.median(users["decode"]), "evaluate_user_s": statistics.median(users["evaluate"]),
            "cold_decode_s": cd, "cold_evaluate_s": ce, "cold_ratio": cd / ce,
            "cold_decode_cpu_s": statistics.median(cold_c["decode"]), "cold_evaluate_cpu_s": statistics.median(cold_c["evaluate"]),
            "load_average_1min": load, "load_average_1min_end": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--k100-rows", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--e2e-rows", type=int, default=10_000_000)
    ap.add_argument("--cold-reps", type=int, default=2, help="fresh-process decode/evaluate alternations (part 3)")
    ap.add_argument("--part", choices=["k10", "k100", "e2e"], default=None, help="run this part only, in this process")
    args = ap.parse_args()
    if args.part == "k100":
        print(json.dumps(part_k100(args.k100_rows)))
        return
    if args.part == "k10":
        print(json.dumps(part_k10(args.rows, args.threads)))
        return
    if args.part == "e2e":
        print(json.dumps(part_e2e(args.e2e_rows, args.cold_reps)))
        return
    for part in ("k10", "k100", "e2e"):
        cmd = [sys.executable, __file__, "--part", part, "--rows", str(args.rows), "--k100-rows", str(args.k100_rows),
               "--e2e-rows", str(args.e2e_rows), "--cold-reps", str(args.cold_reps)]
        if args.threads is not None:
            cmd += ["--threads", str(args.threads)]
        out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        print(f"== {part} ==")
        for key, value in out.items():
            print(f"  {key:28s} {value:.6g}" if isinstance(value, float) else f"  {key:28s} {value}")


if __name__ == "__main__":
    main()
