"""HTML report: file size, write time and render time in headless Chromium, by rows evaluated.

    python benchmarks/html_bench.py [--rows 1000000,100000000] [--reps 3] [--screenshot FILE]

For each row count, builds the sketch from the rows of ``streameval generate`` (the same
generator, ``synthetic.iter_batches``, seed 1) chunk by chunk with ``BinarySketch.update`` (100M
rows never sit in memory at once), writes the default binary report with ``Report.to_html`` (the
first call in a process also builds the embedded JavaScript bundle: reported apart), then opens
the pages in Debian's Chromium from file://, alternating between them, ``--reps`` times each, and
reports the median time until every chart's SVG is drawn, and the CPU seconds the browser's
processes spent meanwhile (psutil): on a loaded machine the wall time also counts waiting for a
core, the CPU time is what the render costs. The page's size follows the sketch's occupied bins,
not the rows: every curve is downsampled for display.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

N_CHARTS = 9


def build(rows: int, chunk_rows: int) -> tuple[object, float]:
    """The sketch of ``rows`` synthetic rows, and the seconds it took (generation included)."""
    from streameval import BinarySketch, synthetic

    t0 = time.perf_counter()
    sketch = BinarySketch()
    for batch in synthetic.iter_batches(rows, seed=1, chunk_rows=chunk_rows):
        sketch.update(batch.column("label").to_numpy(), batch.column("score").to_numpy())
    return sketch, time.perf_counter() - t0


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process's descendants (the browser and its driver); NaN
    without psutil (not a dependency of the project)."""
    try:
        import psutil
    except ImportError:
        return float("nan")

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def render_times(paths: list[str], reps: int, screenshot: str | None) -> tuple[list[list[float]], list[list[float]]]:
    """``(wall, cpu)``: seconds from navigation until all charts are drawn, and the CPU seconds the
    browser's processes spent meanwhile (what a render costs on an idle machine; wall time on a
    loaded one also counts waiting for a core), ``reps`` per page, pages alternating."""
    from playwright.sync_api import sync_playwright

    times: list[list[float]] = [[] for _ in paths]
    cpu: list[list[float]] = [[] for _ in paths]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        for _ in range(reps):
            for i, path in enumerate(paths):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto("about:blank")
                c0, t0 = _cpu_seconds(), time.perf_counter()
                page.goto("file://" + path)
                page.wait_for_function(f"document.querySelectorAll('.chart svg').length >= {N_CHARTS}", timeout=120_000)
                times[i].append(time.perf_counter() - t0)
                cpu[i].append(_cpu_seconds() - c0)
                if screenshot and i == len(paths) - 1:
                    page.screenshot(path=screenshot, full_page=True)
                page.close()
        browser.close()
    return times, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1000000", help="comma-separated row counts")
    ap.add_argument("--chunk-rows", type=int, default=5_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--screenshot", default=None, help="also save a screenshot of the last page here")
    args = ap.parse_args()
    from streameval.report import Report
    from streameval.report.html.page import _bundle

    t0 = time.perf_counter()
    _bundle()
    bundle_s = time.perf_counter() - t0
    out = tempfile.mkdtemp()
    results = []
    for rows in (int(r) for r in args.rows.split(",")):
        sketch, build_s = build(rows, args.chunk_rows)
        report = Report.from_sketch(sketch, thresholds=[0.3, 0.5],  # type: ignore[arg-type]
                                    provenance={"source": f"streameval generate, {rows:,} rows, seed 1"})
        path = os.path.join(out, f"report-{rows}.html")
        t0 = time.perf_counter()
        report.to_html(path)
        results.append({"rows": rows, "bins": sketch.n_occupied_bins, "build_s": build_s,  # type: ignore[attr-defined]
                        "write_s": time.perf_counter() - t0, "mb": os.path.getsize(path) / 1e6, "path": path})
    times, cpu = render_times([r["path"] for r in results], args.reps, args.screenshot)
    print(f"JavaScript bundle: {bundle_s:.2f} s once per process; load average {os.getloadavg()[0]:.1f} after the runs")
    print("| rows | occupied bins | sketch built (s) | page written (s) | size (MB) | render median (s) | "
          "browser CPU median (s) | renders (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r, t, c in zip(results, times, cpu, strict=True):
        print(f"| {r['rows']:,} | {r['bins']:,} | {r['build_s']:.1f} | {r['write_s']:.2f} | {r['mb']:.2f} | "
              f"{statistics.median(t):.2f} | {statistics.median(c):.2f} | {', '.join(f'{x:.2f}' for x in t)} |")


if __name__ == "__main__":
    main()
