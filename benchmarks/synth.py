"""Synthetic prediction logs for the benchmarks: the two reference distributions, in chunks.

mid:  10% positives; negatives' logit ~ N(-1, 1.5), positives' logit ~ N(1, 1.5).
rare: 0.1% positives; negatives' logit ~ N(logit(1e-4), 1), positives' ~ N(logit(1e-4) + 2.5, 1).

Rows are produced in fixed-size chunks, each seeded by (seed, chunk index), so the first n rows of
a file are the same rows whatever its total size, and nothing ever holds all rows at once.
If ``streameval.synthetic`` exists it is the project's generator; this module stays as the
benchmarks' own copy so that a benchmark file means the same rows across library versions.
"""

from __future__ import annotations

import math
import os
from typing import Iterator

import numpy as np

CHUNK = 1 << 20
_RARE_MU = math.log(1e-4 / (1 - 1e-4))

DISTRIBUTIONS = {
    # name: (positive rate, (neg mean, neg sd), (pos mean, pos sd)) of the logit
    "mid": (0.10, (-1.0, 1.5), (1.0, 1.5)),
    "rare": (0.001, (_RARE_MU, 1.0), (_RARE_MU + 2.5, 1.0)),
}


def chunk(dist: str, index: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(labels int8, scores float64)`` for chunk ``index`` of ``n`` rows."""
    rate, (mn, sn), (mp, sp) = DISTRIBUTIONS[dist]
    rng = np.random.default_rng([seed, index, 0 if dist == "mid" else 1])
    y = (rng.random(n) < rate).astype(np.int8)
    z = rng.standard_normal(n)
    logit = np.where(y == 1, mp + sp * z, mn + sn * z)
    return y, 1.0 / (1.0 + np.exp(-logit))


def chunks(dist: str, n: int, seed: int = 0, size: int = CHUNK) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(labels, scores float64)`` chunks totalling ``n`` rows."""
    i = 0
    done = 0
    while done < n:
        m = min(size, n - done)
        y, s = chunk(dist, i, size, seed)
        yield y[:m], s[:m]
        done += m
        i += 1


def arrays(dist: str, n: int, dtype: type = np.float32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """All ``n`` rows in memory (for in-memory cases): ``(labels int8, scores dtype)``."""
    ys, ss = [], []
    for y, s in chunks(dist, n, seed):
        ys.append(y)
        ss.append(s.astype(dtype))
    return np.concatenate(ys), np.concatenate(ss)


def write_parquet(path: str, dist: str, n: int, dtype: type, row_group: int = CHUNK) -> None:
    """Write ``n`` rows (columns ``score``, ``label``) to ``path``, one chunk at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("score", pa.from_numpy_dtype(dtype)), ("label", pa.int8())])
    tmp = f"{path}.tmp{os.getpid()}"
    with pq.ParquetWriter(tmp, schema) as w:
        for y, s in chunks(dist, n, size=min(row_group, CHUNK)):
            w.write_table(pa.table({"score": s.astype(dtype), "label": y}, schema=schema),
                          row_group_size=row_group)
    os.replace(tmp, path)


def write_csv(path: str, dist: str, n: int) -> None:
    """Write ``n`` rows as CSV (``score`` as float32 text, ``label`` 0/1), one chunk at a time."""
    import pyarrow as pa
    import pyarrow.csv as pc

    schema = pa.schema([("score", pa.float32()), ("label", pa.int8())])
    tmp = f"{path}.tmp{os.getpid()}"
    with pc.CSVWriter(tmp, schema) as w:
        for y, s in chunks(dist, n):
            w.write_table(pa.table({"score": s.astype(np.float32), "label": y}, schema=schema))
    os.replace(tmp, path)


SEGMENTS = ("web", "mobile-ios", "mobile-android", "partner-api", "batch")


def write_csv_log(path: str, dist: str, n: int) -> None:
    """Write ``n`` rows as a realistic five-column CSV prediction log, one chunk at a time.

    Columns ``ts`` (ISO 8601 timestamp with milliseconds, one row every 10 ms from 2026-01-01),
    ``id`` (64-bit request id), ``segment`` (one of :data:`SEGMENTS`), ``score`` (float32 text)
    and ``label`` (0/1); about 60 bytes a row, so a 1 MiB block holds ~17,000 rows.
    """
    import pyarrow as pa
    import pyarrow.csv as pc

    schema = pa.schema([("ts", pa.timestamp("ms")), ("id", pa.int64()), ("segment", pa.string()),
                        ("score", pa.float32()), ("label", pa.int8())])
    start = np.datetime64("2026-01-01T00:00:00.000", "ms").astype(np.int64)
    tmp = f"{path}.tmp{os.getpid()}"
    done = 0
    with pc.CSVWriter(tmp, schema) as w:
        for i, (y, s) in enumerate(chunks(dist, n)):
            m = len(y)
            rng = np.random.default_rng([7, i])
            rows = np.arange(done, done + m, dtype=np.int64)
            seg = pa.array(np.asarray(SEGMENTS, dtype=object)[rng.integers(0, len(SEGMENTS), m)], pa.string())
            w.write_table(pa.table({
                "ts": pa.array(start + rows * 10, pa.timestamp("ms")),
                "id": rng.integers(1 << 40, 1 << 62, m, dtype=np.int64),
                "segment": seg, "score": s.astype(np.float32), "label": y}, schema=schema))
            done += m
    os.replace(tmp, path)
