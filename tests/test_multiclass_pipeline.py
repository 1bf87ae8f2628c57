"""Chunks binned without a barrier between them (sketch/multiclass_pipeline.py).

The pipeline must run each key's tasks in chunk order, never two of one key at once, finish
chunks in order on the caller's thread, and hand a task's error to the caller; a sketch fed
through it must hold the same bytes as one fed chunk by chunk with a barrier.
"""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest

from streameval import MulticlassSketch, ProbabilityGrid
from streameval.sketch.multiclass_pipeline import Pipeline


def test_keys_run_in_chunk_order_one_at_a_time_and_chunks_finish_in_order():
    rng = random.Random(3)
    log: dict[str, list[int]] = {}
    running: set[str] = set()
    overlaps = []
    finished: list[int] = []
    lock = threading.Lock()

    def task(key, chunk):
        def run():
            with lock:
                if key in running:
                    overlaps.append((key, chunk))
                running.add(key)
            time.sleep(rng.random() * 0.002)
            with lock:
                running.discard(key)
                log.setdefault(key, []).append(chunk)
        return run

    with Pipeline(3) as pipe:
        for c in range(30):
            keys = rng.sample(["a", "b", "c", "d", "e"], rng.randint(1, 5))
            pipe.submit([(k, task(k, c)) for k in keys], lambda c=c: finished.append(c))
            pipe.wait(keep=rng.randint(0, 3))
            assert finished == list(range(len(finished)))  # in order, on this thread
    assert finished == list(range(30))
    assert not overlaps
    for chunks in log.values():
        assert chunks == sorted(chunks)
    assert sum(len(v) for v in log.values()) > 30


def test_a_task_error_reaches_the_caller_and_the_threads_stop():
    pipe = Pipeline(2)
    done = []

    def boom():
        raise RuntimeError("kernel failed")

    pipe.submit([("a", lambda: done.append(1)), ("b", boom)], lambda: done.append("finished"))
    with pytest.raises(RuntimeError, match="kernel failed"):
        pipe.wait()
    assert "finished" not in done
    with pytest.raises(RuntimeError, match="kernel failed"):
        pipe.close()
    assert not any(t.is_alive() for t in pipe._workers)


@pytest.mark.parametrize("weighted", [False, True])
def test_pipelined_sketch_holds_the_same_bytes(weighted):
    """Chunks of several sizes (small ones too, below the two-halves and the threads' sizes),
    with weights or not, through a pipeline of two threads: the same bytes as with a barrier."""
    k = 4
    grid, pairs = ProbabilityGrid(mantissa_bits=7, tail_bits=None), ProbabilityGrid(mantissa_bits=4, tail_bits=None)
    rng = np.random.default_rng(12)
    n = 400_000
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.0
    p = (np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)).astype(np.float32)
    w = rng.integers(0, 3, n).astype(np.float64) * 0.7 if weighted else None
    cuts = [0, 90_000, 190_000, 200_000, 203_000, 330_000, 399_990, n]

    def fed(pipeline):
        s = MulticlassSketch(classes=range(k), grid=grid, pair_grid=pairs, threads=2)
        s._pipelined(pipeline)
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            s.update(y[a:b], p[a:b], sample_weight=None if w is None else w[a:b])
        s._pipelined(None)
        return s

    with Pipeline(2) as pipe:
        mine = fed(pipe)
    ref = fed(None)
    assert mine.to_bytes() == ref.to_bytes()
    assert mine.n_rows == n and mine.confusion.sum() == pytest.approx(n if w is None else w.sum())


def test_reading_a_pipelined_sketch_waits_for_its_chunks():
    k, n = 3, 150_000
    rng = np.random.default_rng(2)
    y = rng.integers(0, k, n)
    p = rng.dirichlet(np.ones(k), n)
    ref = MulticlassSketch(classes=range(k)).update(y, p)
    with Pipeline(2) as pipe:
        s = MulticlassSketch(classes=range(k))
        s._pipelined(pipe)
        s.update(y, p)
        assert s.to_bytes() == ref.to_bytes()  # compacting settles first
        assert s.accuracy() == ref.accuracy()
        s._pipelined(None)


def test_row_tasks_leave_the_sketch_tables_to_the_callers_thread():
    """Chunks overlap on a pipeline: an unweighted chunk's row tasks count into tables of their
    own (added by its finish, on the caller's thread); a weighted chunk's one row task adds to the
    sketch's tables, and a sketch waits for earlier unweighted chunks before queueing one."""
    from streameval.sketch.multiclass_rows import SPLIT_ROWS, RowStats

    k = 3
    rng = np.random.default_rng(1)
    for n in (1_000, SPLIT_ROWS + 1):
        y = rng.integers(0, k, n)
        cols = [rng.random(n) for _ in range(k)]
        conf, ranks = np.zeros((k, k)), np.zeros((k, k))
        unweighted = RowStats(cols, y, None, None, conf, ranks)
        assert len(unweighted.tasks) == (2 if n >= SPLIT_ROWS else 1)
        assert all(c is not conf and r is not ranks for c, r in unweighted.tables)
        for task in unweighted.tasks:
            task()
        assert conf.sum() == 0  # until finish
        unweighted.finish()
        assert conf.sum() == n and ranks.sum() == n
        weighted = RowStats(cols, y, np.full(n, 0.5), None, conf, ranks)
        assert weighted.direct and len(weighted.tasks) == 1 and weighted.tables[0][0] is conf
        # the true-class score buffer goes back to the spare list at finish, for the next chunk
        spare: list[np.ndarray] = []
        first = RowStats(cols, y, None, None, conf, ranks, spare)
        for task in first.tasks:
            task()
        expected = first.finish()
        assert len(spare) == 1 and spare[0] is first._buffer
        again = RowStats(cols, y, None, None, conf, ranks, spare)
        assert again._buffer is first._buffer and not spare
        for task in again.tasks:
            task()
        assert again.finish() == expected

    # a sketch fed unweighted then weighted chunks on a pipeline: the same bytes as with barriers
    n = 200_000
    y = rng.integers(0, k, n)
    p = rng.dirichlet(np.ones(k), n)
    w = rng.random(n)

    def fed(pipeline):
        s = MulticlassSketch(classes=range(k), threads=2)
        s._pipelined(pipeline)
        for a, b, weighted in ((0, 80_000, False), (80_000, 120_000, True), (120_000, n, False)):
            s.update(y[a:b], p[a:b], sample_weight=w[a:b] if weighted else None)
        s._pipelined(None)
        return s

    with Pipeline(2) as pipe:
        assert fed(pipe).to_bytes() == fed(None).to_bytes()
