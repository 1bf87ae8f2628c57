"""Store schema version 3: one-row cells in ``single_cells`` (their score alone), every other cell
in ``cells``. The reader merges both tables in the order the cells were written, so a store reads
bit for bit as it did with every cell in one table; version-2 stores (one table) are read as they
are and become version 3 when opened for writing."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from streameval.monitor import Store
from streameval.monitor.store import STORE_SCHEMA_VERSION

JOB = dict(score="score", label="label", by=["segment"], time="ts", window="1d")


def _day(path, day: int, n: int = 3000) -> None:
    """Scores on a 1e-4 lattice: most cells hold one row, some two or more (single and full cells)."""
    rng = np.random.default_rng(day)
    y = (rng.random(n) < 0.3).astype(float)
    y[rng.random(n) < 0.1] = np.nan  # labels not arrived yet: class 2
    s = np.round(np.clip(rng.normal(0.35 + 0.3 * np.nan_to_num(y), 0.2), 0, 1), 4)
    ts = pd.Timestamp(f"2026-11-{day:02d}") + pd.to_timedelta(rng.integers(0, 86400, n), unit="s")
    pd.DataFrame({"score": s, "label": y, "segment": rng.choice(["a", "b", "c"], n), "ts": ts}).to_parquet(path)


def _bits(store: Store, **read) -> tuple:
    ss = store.sketchset(**read)
    group, bins, klass, cells = ss.cell_columns()
    counts = [sorted(ss.counts(k).items()) for k in ss.keys()]
    return ss.keys(), counts, group.tolist(), bins.tolist(), klass.tolist(), cells.view(np.int64).tolist()


READS = [{}, {"by": [], "window": "all"}, {"by": [], "window": "1w"}, {"window": "all"}]


@pytest.fixture()
def days(tmp_path):
    files = [str(tmp_path / f"d{d}.parquet") for d in (1, 2, 3)]
    for d, f in enumerate(files, start=1):
        _day(f, d)
    return files


def _to_v2(path) -> None:
    """Turn a version-3 store into the version-2 form: every cell in ``cells``, written in the
    order version 2 wrote them (file by file, each file's cells by group, bin and class)."""
    con = duckdb.connect(str(path))
    con.execute("""CREATE TABLE cells_v2 AS SELECT * FROM (
        SELECT file_id, gid, bin, class, weight, min, max, score_sum FROM cells
        UNION ALL SELECT file_id, gid, bin, class, 1.0, score, score, score FROM single_cells)
        ORDER BY file_id, gid, bin, class""")
    con.execute("DROP TABLE cells")
    con.execute("DROP TABLE single_cells")
    con.execute("ALTER TABLE cells_v2 RENAME TO cells")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.close()


def test_single_cells_hold_one_row_cells_and_the_read_is_unchanged(tmp_path, days):
    with Store(tmp_path / "v3.duckdb") as st:
        st.ingest(days, **JOB)
        single, full = (st._con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("single_cells", "cells"))
        assert single > full > 0  # both tables in use
        assert st._con.execute("SELECT count(*) FROM cells WHERE weight = 1 AND min = max AND max = score_sum"
                               ).fetchall()[0][0] == 0
        want = [_bits(st, **r) for r in READS]
    v2 = tmp_path / "v2.duckdb"
    (tmp_path / "v3.duckdb").rename(v2)
    _to_v2(v2)
    with Store(v2, read_only=True) as st:  # one table, read in scan order: the same bits
        assert st._meta()["schema_version"] == "2"
        assert [_bits(st, **r) for r in READS] == want


def test_a_version_2_store_is_upgraded_for_writing_and_reads_the_same(tmp_path, days):
    with Store(tmp_path / "all.duckdb") as st:
        st.ingest(days, **JOB)
        want = [_bits(st, **r) for r in READS]
    old = tmp_path / "old.duckdb"
    with Store(old) as st:
        st.ingest(days[:2], **JOB)
    _to_v2(old)
    with Store(old) as st:  # opened for writing: version 3, single_cells added, old cells where they were
        assert st._meta()["schema_version"] == str(STORE_SCHEMA_VERSION) == "3"
        assert st._con.execute("SELECT count(*) FROM single_cells").fetchall()[0][0] == 0
        assert [r.action for r in st.ingest(days)] == ["unchanged", "unchanged", "added"]
        assert st._con.execute("SELECT count(DISTINCT file_id) FROM single_cells").fetchall()[0][0] == 1
        assert [_bits(st, **r) for r in READS] == want
        # the first day rewritten (its labels changed): its old cells leave both tables
        _day(days[0], 1, n=2000)
        assert [r.action for r in st.ingest(days)] == ["replaced", "unchanged", "unchanged"]
        after = [_bits(st, **r) for r in READS]
        assert st.forget(days[0])
        for table in ("cells", "single_cells"):
            ids = {r[0] for r in st._con.execute(f"SELECT DISTINCT file_id FROM {table}").fetchall()}
            assert ids and ids <= {r[0] for r in st._con.execute("SELECT file_id FROM files").fetchall()}
    with Store(tmp_path / "fresh.duckdb") as st:
        _day(tmp_path / "d1b.parquet", 1, n=2000)
        st.ingest(days[1:], **JOB)  # written in the upgraded store's order: days 2 and 3, then the new day 1
        st.ingest(str(tmp_path / "d1b.parquet"))
        assert [_bits(st, **r) for r in READS] == after  # cells of one code added in write order



def _frame(day: int, scores, doubled: bool) -> pd.DataFrame:
    scores = np.repeat(scores, 2 if doubled else 1)  # every row twice: no cell of one row
    ts = pd.Timestamp(f"2026-11-{day:02d}") + pd.to_timedelta(np.arange(scores.shape[0]), unit="s")
    return pd.DataFrame({"score": scores, "label": np.zeros(scores.shape[0]), "ts": ts})


@pytest.mark.parametrize("layout", ["v3", "v3 without single cells", "v2"])
def test_a_since_read_adds_cells_in_write_order(tmp_path, layout):
    """The --since/--until read takes the cells through a SEMI JOIN, and DuckDB's join holds back
    a vector with few matches (here the first: 2,040 cells of the day left out, then a few of
    the day read) and gives it last. Read in scan order, file 0's cells of a code came after
    files 1 and 2's: a zero bin holding -0.0 (file 0) and 0.0 (files 1, 2) read min -0.0 where
    the unfiltered read of the same groups (and the pre-change reader without --since) gives
    0.0 (``np.minimum`` keeps the later of two equal zeros)."""
    import datetime as dt

    doubled = layout == "v3 without single cells"
    # file 0: 2,040 cells of day 1, then 8 of day 2: DuckDB's first vector of cells, 8 matches
    parts = [pd.concat([_frame(1, np.linspace(0.05, 0.95, 2040), doubled),
                        _frame(2, np.array([-0.0, 0.5, 0.25, 0.6, 0.65, 0.7, 0.75, 0.8]), doubled)]),
             _frame(2, np.r_[0.0, 0.5, 0.25, np.linspace(0.3, 0.9, 300)], doubled),
             _frame(2, np.array([0.0, 0.5, 0.25]), doubled)]
    files = [str(tmp_path / f"f{i}.parquet") for i in range(3)]
    for part, f in zip(parts, files, strict=True):
        part.to_parquet(f)
    with Store(tmp_path / "s.duckdb") as st:
        st.ingest(files, score="score", label="label", time="ts", window="1d")
        if doubled:
            assert st._con.execute("SELECT count(*) FROM single_cells").fetchall() == [(0,)]
    if layout == "v2":
        _to_v2(tmp_path / "s.duckdb")
    day2 = dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc)
    with Store(tmp_path / "s.duckdb", read_only=True) as st:
        ss = st.sketchset()  # the unfiltered read: day 2's groups merged in write order
        got = st.sketchset(since=day2)
        assert got.keys() == [k for k in ss.keys() if k[0] == day2]
        full = {k: i for i, k in enumerate(ss.keys())}
        g, b, c, cells = ss.cell_columns()
        mine = g == full[got.keys()[0]]
        g2, b2, c2, cells2 = got.cell_columns()
        assert b2.tolist() == b[mine].tolist() and c2.tolist() == c[mine].tolist()
        assert cells2.view(np.int64).tolist() == cells[mine].view(np.int64).tolist()
        zero = cells2[b2 == b2.min()]
        assert zero.shape[0] == 1 and not np.signbit(zero[0, 1])  # file 0's -0.0 first, then 0.0, 0.0


@pytest.mark.parametrize("chunk", [1, 2, 7, 1 << 20])
def test_the_scan_order_check_sees_a_step_back_at_any_chunk_edge(chunk):
    from streameval.monitor.layout import _increasing

    rng = np.random.default_rng(chunk)
    key = np.sort(rng.choice(10**6, 300, replace=False))
    assert _increasing(key // 30, key % 30, 30, chunk)
    for i in range(1, 300):
        bad = key.copy()
        bad[i] = bad[i - 1]  # a repeat, or (below) a step back, at every place
        assert not _increasing(bad // 30, bad % 30, 30, chunk)
        bad[i] = bad[i - 1] - 1
        assert not _increasing(bad // 30, bad % 30, 30, chunk)
