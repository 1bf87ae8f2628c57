"""HTML report: file size, write time and render time in headless Chromium.

    python benchmarks/html_bench.py [--rows 1000000]

Builds a report from ``--rows`` synthetic rows (the page's size depends on the sketch's occupied
bins, not on the rows), writes it with ``Report.to_html`` (the first call in a process also
builds the embedded JavaScript bundle: reported apart), then opens it three times in Debian's
Chromium from file:// and reports the median time until every chart's SVG is drawn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--screenshot", default=None, help="also save a screenshot of the page here")
    args = ap.parse_args()
    import streameval
    from streameval import synthetic
    from streameval.report.html.page import _bundle

    t0 = time.perf_counter()
    _bundle()
    bundle_s = time.perf_counter() - t0
    table = synthetic.generate(args.rows, seed=1)
    report = streameval.evaluate(table, score="score", label="label", thresholds=[0.3, 0.5])
    path = os.path.join(tempfile.mkdtemp(), "report.html")
    t0 = time.perf_counter()
    report.to_html(path)
    write_s = time.perf_counter() - t0
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        for _ in range(3):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            page.goto("file://" + path)
            page.wait_for_function("document.querySelectorAll('.chart svg').length >= 9", timeout=60_000)
            times.append(time.perf_counter() - t0)
            if args.screenshot:
                page.screenshot(path=args.screenshot, full_page=True)
            page.close()
        browser.close()
    print(f"rows {args.rows:,}; occupied bins {report.sketch.n_occupied_bins:,}")
    print(f"file size {os.path.getsize(path) / 1e6:.2f} MB; write {write_s:.2f} s (+ {bundle_s:.2f} s once per process "
          f"for the JavaScript bundle); render median {statistics.median(times):.2f} s of {[round(t, 2) for t in times]}")


if __name__ == "__main__":
    main()
