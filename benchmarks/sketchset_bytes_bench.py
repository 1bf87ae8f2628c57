"""SketchSet bytes: size per partition and the cost of to_bytes / from_bytes / merge (medians of 5)."""
import statistics
import time

import numpy as np

from streameval.engines.kinds import merge_sketchsets
from streameval.sketch.sketchset import SketchSet


def part(rows, slices, days, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, rows)
    p = 1 / (1 + np.exp(-(rng.normal(0, 1.5, rows) + (2 * y - 1))))
    ss = SketchSet(["window", "slice"])
    ss.update([rng.integers(0, days, rows), rng.integers(0, slices, rows)], y, p)
    return ss

def med(f, n=5):  # noqa: D103
    out = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return statistics.median(out)

for rows, slices, days in [(100_000, 10, 1), (1_000_000, 30, 7), (1_000_000, 1000, 1)]:
    a, b = part(rows, slices, days, 1), part(rows, slices, days, 2)
    da, db = a.to_bytes(), b.to_bytes()
    cells = a.cell_columns()[0].shape[0]
    print(f"{rows:,} rows x {slices * days:,} groups: {cells:,} cells, {len(da) / 1e6:.2f} MB ({len(da) / cells:.1f} B/cell); "
          f"to_bytes {med(a.to_bytes) * 1e3:.0f} ms, from_bytes {med(lambda da=da: SketchSet.from_bytes(da)) * 1e3:.0f} ms, "
          f"merge of two (bytes in, bytes out) {med(lambda da=da, db=db: merge_sketchsets(da, db)) * 1e3:.0f} ms")
