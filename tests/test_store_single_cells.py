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
