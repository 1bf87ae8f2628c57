"""A sketch set's cells read a range of groups at a time (sketch/sketchset_cells.py): the batches
put together are :meth:`SketchSet.cell_columns`, whole groups, about the size asked, and a compact
set stays compact while a slice table is computed from it."""

from __future__ import annotations

import numpy as np
import pytest
from test_pairsort import _hashed
from test_sketchset import _build, _frame

from streameval.kernels import grouped_sort
from streameval.report import SliceTable
from streameval.sketch.sketchset import SketchSet
from streameval.sketch.sketchset_cells import cell_batches


def _joined(ss: SketchSet, max_cells: int) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    parts: list[list[np.ndarray]] = [[], [], [], []]
    ranges = []
    for g0, g1, group, bins, klass, cells in cell_batches(ss, max_cells):
        assert group.shape == bins.shape == klass.shape == cells.shape[:1]
        assert group.size == 0 or (group.min() >= 0 and group.max() < g1 - g0)
        ranges.append((g0, g1))
        for out, a in zip(parts, (group + g0, bins, klass, cells), strict=True):
            out.append(a)
    return [np.concatenate(p) for p in parts], ranges


@pytest.mark.parametrize("max_cells", [1, 7, 1000, 1 << 40])
@pytest.mark.parametrize("compact", [True, False])
def test_batches_put_together_are_the_cell_columns(max_cells, compact, monkeypatch):
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1000)
    df = _frame(n=20_000, seed=5, decimals=None, unlabelled=0.1)
    ss = _build(df, 20_000) if compact else _hashed(df, 5_000)
    ss._consolidate()  # the one sort of the buffered rows (done by the first read)
    assert (ss._one is not None) == compact
    joined, ranges = _joined(ss, max_cells)
    assert (ss._one is not None) == compact  # reading in batches did not expand the set
    assert ranges[0][0] == 0 and ranges[-1][1] == len(ss)
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(ranges, ranges[1:], strict=False))  # consecutive
    sizes = np.bincount(joined[0], minlength=len(ss))
    for g0, g1 in ranges:  # about max_cells each: a batch ends at the group that reaches it
        n = int(sizes[g0:g1].sum())
        assert n - int(sizes[g1 - 1]) < max_cells or g1 - g0 == 1
    for got, want in zip(joined, ss.cell_columns(), strict=True):
        assert np.array_equal(got, want)


def test_an_empty_set_gives_one_empty_batch():
    ss = SketchSet(["g"])
    (batch,) = list(cell_batches(ss, 10))
    assert batch[:2] == (0, 0) and all(a.shape[0] == 0 for a in batch[2:])


def test_a_slice_table_leaves_a_compact_set_compact(monkeypatch):
    monkeypatch.setattr(grouped_sort, "MIN_SORT_ROWS", 1000)
    df = _frame(n=20_000, seed=6, decimals=None, unlabelled=0.1)
    ss, ref = _build(df, 20_000), _hashed(df, 5_000)
    ss._consolidate()
    assert ss._one is not None
    got = SliceTable.from_sketchset(ss, thresholds=[0.5]).to_arrow()
    assert ss._one is not None
    assert got.equals(SliceTable.from_sketchset(ref, thresholds=[0.5]).to_arrow())


def test_the_store_writes_cells_a_group_range_at_a_time(tmp_path, monkeypatch):
    """Ingesting into the store in batches of 50 cells stores what one batch stores."""
    from test_monitor import JOB, _day

    from streameval.monitor import Store, layout

    _day(tmp_path / "d1.parquet", 1, n=6000, unlabelled=0.1)
    with Store(tmp_path / "one.duckdb") as st:
        st.ingest(str(tmp_path / "d1.parquet"), **JOB)
        want = st.sketchset().cell_columns()
    batches: list[int] = []  # cells per batch written
    limits: list[str] = []  # DuckDB's memory limit while each batch is made
    real = layout.store_batches

    def counted(ss, n):  # type: ignore[no-untyped-def]
        assert n == 50
        for b in real(ss, n):
            batches.append(b[2][0].shape[0] + b[3][0].shape[0])
            limits.append(st._con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
            yield b

    monkeypatch.setattr(layout, "CELL_BATCH", 50)
    monkeypatch.setattr(layout, "store_batches", counted)
    with Store(tmp_path / "many.duckdb") as st:
        limit = st._con.execute("SELECT current_setting('memory_limit')").fetchall()
        threads = st._con.execute("SELECT current_setting('threads')").fetchall()[0][0]
        st.ingest(str(tmp_path / "d1.parquet"), **JOB)
        # bounded while writing, by the threads DuckDB writes on (MB as DuckDB prints them: MiB)
        want_mb = min(layout.WRITE_MEMORY_PER_THREAD * max(threads, 1), layout.WRITE_MEMORY_CEILING)
        assert layout.write_memory_limit(threads) == f"{want_mb}MB"
        units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
        held = {round(float(x.split()[0]) * units[x.split()[1]] / 1e6) for x in limits}  # e.g. "183.1 MiB"
        assert held == {want_mb}, limits
        assert st._con.execute("SELECT current_setting('memory_limit')").fetchall() == limit  # bounded while writing only
        got = st.sketchset().cell_columns()
    assert len(batches) >= 3 and sum(batches) == want[0].shape[0]  # several batches were written
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)


def test_the_write_memory_limit_is_bounded_on_a_machine_of_many_cores():
    """DuckDB runs a thread per core; its buffer pool keeps a transaction's written blocks up to
    the limit, so a limit growing with the cores without end (6 GB on 64) let a 100M-row
    ingest hold most of its store in memory, against the 2 GiB peak target."""
    from streameval.monitor import layout

    assert layout.write_memory_limit(1) == f"{layout.WRITE_MEMORY_PER_THREAD}MB"
    assert layout.write_memory_limit(2) == f"{2 * layout.WRITE_MEMORY_PER_THREAD}MB"
    ceiling = layout.WRITE_MEMORY_CEILING
    assert ceiling <= 512
    for threads in (64, 256, 10**6):
        assert layout.write_memory_limit(threads) == f"{ceiling}MB"
