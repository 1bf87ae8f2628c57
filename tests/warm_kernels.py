"""Compile streameval's largest kernels into Numba's cache while the test suite starts.

A fresh install compiles every kernel on first use, ~3.5 minutes of the default suite on 2 cores,
one kernel at a time on the core the tests run on. ``conftest.py`` starts this script in a
separate process at the start of a session, so the biggest of them (the shard merge's decoders,
~40 s; binning, sliced and multiclass updates) compile on the other core into the same cache,
where the tests then find them. It only warms a cache: a step that fails, or a kernel it has not
reached when a test needs it, is compiled by the test as it would be without it. Not collected
as a test (its name does not start with ``test_``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings
from typing import Callable


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="streameval-warm-") as folder:
        _steps(folder)
    print(f"warm-up done in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def _steps(folder: str) -> None:
    import numpy as np
    import pyarrow as pa

    import streameval
    from streameval import synthetic
    from streameval.sketch.files import merge_files
    from streameval.slicing import sketch_slices

    rng = np.random.default_rng(0)
    done: list[str] = []

    def step(name: str, work: Callable[[], object]) -> None:
        try:
            work()
            done.append(name)
        except Exception as exc:  # noqa: BLE001 - a warm-up: the test compiles what is left
            print(f"warm-up step {name!r} failed: {type(exc).__name__}: {exc}", file=sys.stderr)

    log = os.path.join(folder, "log.parquet")
    synthetic.write_parquet(log, 3000, seed=1, weight=True)
    shards = [os.path.join(folder, f"s{v}.sevsk") for v in (3, 4)]

    def merge() -> None:
        sketch = streameval.evaluate(log, score="score", label="label", weight="weight").sketch
        for path, version in zip(shards, (3, 4), strict=True):
            sketch.save(path, format_version=version)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the same input in every shard: a duplicate warning
            merge_files(shards * 3)

    def batches() -> None:  # canonical shards past a first batch: the header scan and the array path
        plain = streameval.BinarySketch().update((rng.random(400) < 0.3).astype(int), rng.random(400))
        paths = [os.path.join(folder, f"b{i:02d}.sevsk") for i in range(40)]
        for i, path in enumerate(paths):
            plain.save(path, format_version=3 + i % 2)
        merge_files(paths, threads=1)

    def formats() -> None:  # every writable version, compressed or not, and back
        sketch = streameval.BinarySketch().update((rng.random(3000) < 0.3).astype(int), rng.random(3000))
        for version in (1, 3, 4):
            for compress in (False, True):
                streameval.BinarySketch.from_bytes(sketch.to_bytes(format_version=version, compress=compress))

    n = 50_000
    table = pa.table({
        "score": rng.random(n).astype(np.float32), "label": (rng.random(n) < 0.3).astype(np.int8),
        "seg": rng.integers(0, 40, n).astype(np.int32),
        "ts": np.datetime64("2026-11-01", "us") + rng.integers(0, 3 * 86_400 * 10**6, n).astype("timedelta64[us]"),
    })
    y, p = rng.integers(0, 3, 5000), rng.dirichlet(np.ones(3), 5000)
    step("merge", merge)  # first: the largest, and the earliest test files merge shards
    step("batches", batches)
    step("formats", formats)
    step("evaluate", lambda: streameval.evaluate(log, score="score", label="label"))
    step("sliced", lambda: sketch_slices(table, score="score", label="label", by=["seg"], time="ts", window="1d")[0]
         .n_cells)
    step("multiclass", lambda: streameval.MulticlassSketch().update(y, p).classification_report())
    print(f"warm-up: {', '.join(done)}", file=sys.stderr)


if __name__ == "__main__":
    main()
