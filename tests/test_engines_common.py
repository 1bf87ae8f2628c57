"""Engine-neutral partition steps, without an engine: the bytes a partition ships and merges."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pytest
from sklearn.metrics import roc_auc_score

from streameval import BinarySketch
from streameval.engines import common


def _batches(n: int, size: int, seed: int = 0) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(np.int8)
    p = rng.integers(0, 50, n).astype(np.float32) / 50  # discrete: every metric exact
    table = pa.table({common.SCORE: p, common.LABEL: y})
    return table.to_batches(max_chunksize=size)


def _flags(data: bytes) -> int:
    value: int = struct.unpack_from("<H", data, 10)[0]
    return value


def test_partition_and_merge_bytes_are_uncompressed_and_equal_to_one_sketch():
    job = common.SketchJob(names={"score": "p", "label": "y"})
    parts = [_batches(30_000, 1_000, seed) for seed in range(3)]  # 30 small batches each, as Spark sends
    blobs = [common.partition_sketch(b, job) for b in parts]
    merged = common.merge_sketches(*blobs)
    assert all(_flags(b) & 1 == 0 for b in [*blobs, merged])
    tables = [pa.Table.from_batches(b) for b in parts]
    y = np.concatenate([t.column(common.LABEL).to_numpy() for t in tables])
    p = np.concatenate([t.column(common.SCORE).to_numpy() for t in tables])
    sketch = BinarySketch.from_bytes(merged)
    reference = BinarySketch().update(y, p)
    assert sketch.n_rows == reference.n_rows == 90_000
    np.testing.assert_array_equal(sketch.table().tp, reference.table().tp)
    np.testing.assert_array_equal(sketch.table().fp, reference.table().fp)
    assert sketch.roc_auc() == pytest.approx(roc_auc_score(y, p), abs=1e-12)
