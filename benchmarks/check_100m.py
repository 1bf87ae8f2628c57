"""The main job on a 100-million-row log, checked against scikit-learn on all rows.

Runs the CLI (`streameval eval ... --format json`) on a Parquet log under `/usr/bin/time -v` for
peak RSS, then loads the score and label columns whole and computes scikit-learn's ROC-AUC,
average precision and the confusion counts at the report's thresholds (24 GiB of RAM hold 100M
rows for scikit-learn; that is the point of comparison, not a way to run the job). Two logs:

- discrete: "mid" scores rounded to 4 decimals (float64): every number must equal scikit-learn's;
- continuous: "mid" float32 scores: scikit-learn's value must lie inside the printed interval.

Usage: python benchmarks/check_100m.py [--rows 100000000] [--data benchmarks/data]
Writes benchmarks/check_100m.json and prints a Markdown table (pasted into benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent


def run_cli(path: Path, thresholds: list[float], grid: str | None) -> tuple[dict, float, float]:
    cmd = [sys.executable, "-m", "streameval", "eval", str(path), "--score", "score", "--label", "label",
           "--format", "json", "--quiet"]
    for t in thresholds:
        cmd += ["--threshold", str(t)]
    if grid:
        cmd += ["--grid", grid]
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - t0
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    return json.loads(proc.stdout), elapsed, rss_kb / 1024


def sklearn_reference(path: Path, thresholds: list[float]) -> dict:
    from sklearn.metrics import average_precision_score, roc_auc_score

    table = pq.read_table(path, columns=["score", "label"])
    s = table.column("score").to_numpy()
    y = table.column("label").to_numpy()
    del table
    t0 = time.perf_counter()
    out = {"roc_auc": roc_auc_score(y, s), "average_precision": average_precision_score(y, s)}
    out["sklearn_seconds"] = time.perf_counter() - t0
    pos = y == 1
    out["confusion"] = [
        {"threshold": t, "tp": int(np.count_nonzero(pos & (s >= t))), "fp": int(np.count_nonzero(~pos & (s >= t)))}
        for t in thresholds
    ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from streameval import synthetic

    args.data.mkdir(parents=True, exist_ok=True)
    label = f"{args.rows // 1_000_000}M" if args.rows >= 1_000_000 else str(args.rows)
    cases = []
    discrete = args.data / f"discrete4_{label}.parquet"
    if not discrete.exists():
        synthetic.write_parquet(discrete, args.rows, distribution="mid", decimals=4, seed=7,
                                score_dtype="float64")
    cases.append(("discrete (4 decimals, float64)", discrete, [0.3, 0.5], None))
    continuous = args.data / f"mid_{label}_f32.parquet"
    if not continuous.exists():
        synthetic.write_parquet(continuous, args.rows, distribution="mid", seed=0, score_dtype="float32")
    # float32 thresholds on a float32 log: pass the grid cuts so the counts are exact there too
    cases.append(("continuous (float32)", continuous, [0.5], "probability@0.5"))

    results = []
    for name, path, thresholds, grid in cases:
        report, seconds, rss = run_cli(path, thresholds, grid)
        ref = sklearn_reference(path, thresholds)
        m = report["metrics"]
        row = {"case": name, "rows": report["provenance"]["rows_read"], "cli_seconds": seconds,
               "peak_rss_mb": rss, "sklearn_seconds": ref["sklearn_seconds"]}
        for key in ("roc_auc", "average_precision"):
            est = m[key]
            row[key] = {"streameval": est, "sklearn": ref[key],
                        "inside": est["lower"] - 1e-12 <= ref[key] <= est["upper"] + 1e-12,
                        "abs_diff": abs(est["value"] - ref[key])}
        row["confusion"] = []
        for got, want in zip(report["thresholds"], ref["confusion"], strict=True):
            row["confusion"].append({"threshold": want["threshold"], "exact": got["exact"],
                                     "tp": [got["tp"], want["tp"]], "fp": [got["fp"], want["fp"]],
                                     "equal": got["tp"] == want["tp"] and got["fp"] == want["fp"]})
        results.append(row)
        print(json.dumps(row, indent=1), flush=True)
    (HERE / "check_100m.json").write_text(json.dumps(results, indent=1))
    print("\n| log | rows | CLI time | peak RSS | ROC-AUC (streameval) | scikit-learn | AP (streameval) | scikit-learn | confusion counts |")
    print("|---|---:|---:|---:|---|---:|---|---:|---|")
    for r in results:
        def est(e: dict) -> str:
            return f"{e['value']:.12f}" if e["exact"] else f"{e['value']:.8f} [{e['lower']:.8f}, {e['upper']:.8f}]"
        conf = "; ".join(f"t={c['threshold']}: {'equal' if c['equal'] else 'DIFFERENT'}" for c in r["confusion"])
        print(f"| {r['case']} | {r['rows']:,} | {r['cli_seconds']:.1f} s | {r['peak_rss_mb']:.0f} MB | "
              f"{est(r['roc_auc']['streameval'])} | {r['roc_auc']['sklearn']:.12f} | "
              f"{est(r['average_precision']['streameval'])} | {r['average_precision']['sklearn']:.12f} | {conf} |")


if __name__ == "__main__":
    main()
