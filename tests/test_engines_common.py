"""Engine-neutral partition steps, without an engine: the bytes a partition ships and the
warm-up thread a Spark task runs while it receives its batches."""

from __future__ import annotations

import struct
import threading

import numpy as np
import pyarrow as pa
import pytest
from sklearn.metrics import roc_auc_score

from streameval import BinarySketch
from streameval.engines import common
from streameval.engines.spark import _read_warming


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


def test_read_warming_returns_every_batch_in_order_after_a_two_row_warm_up():
    batches = _batches(25_000, 10_000)
    seen: list[tuple[str, int]] = []

    def partition(got: list[pa.RecordBatch]) -> bytes:
        seen.append((threading.current_thread().name, sum(b.num_rows for b in got)))
        return b""

    out = _read_warming(iter(batches), partition)
    assert [b.num_rows for b in out] == [10_000, 10_000, 5_000]
    assert all(a.equals(b) for a, b in zip(out, batches, strict=True))
    assert seen == [("streameval-warm-up", 2)]  # the warm-up ran on its own thread, on two rows
    assert _read_warming(iter([]), partition) == []
    assert len(seen) == 1  # no rows, no warm-up


def test_read_warming_ignores_warm_up_errors():
    def partition(got: list[pa.RecordBatch]) -> bytes:
        raise ValueError("bad first rows")

    batches = _batches(10, 4)
    assert len(_read_warming(iter(batches), partition)) == 3
