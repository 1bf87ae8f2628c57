"""The monitoring store: incremental, idempotent, crash-safe ingest; merge on read; alerts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm
from typer.testing import CliRunner

from streameval.cli.main import app
from streameval.errors import InputError
from streameval.monitor import Store, StoreBusyError, check
from streameval.monitor.store import STORE_SCHEMA_VERSION


def _day(path, day: int, n: int = 4000, seed: int = 0, degrade: bool = False, unlabelled: float = 0.0):
    rng = np.random.default_rng(seed * 100 + day)
    y = rng.random(n) < 0.25
    seg = rng.choice(["a", "b", None], n)
    shift = np.where((seg == "b") & degrade, 0.0, 0.3)
    s = np.round(np.clip(rng.normal(0.4 + shift * y, 0.2), 0, 1), 3)
    lab = y.astype(float)
    lab[rng.random(n) < unlabelled] = np.nan
    ts = pd.Timestamp(f"2026-11-{day:02d}") + pd.to_timedelta(rng.integers(0, 86400, n), unit="s")
    df = pd.DataFrame({"score": s, "label": lab, "segment": seg, "ts": ts})
    df.to_parquet(path)
    return df


JOB = dict(score="score", label="label", by=["segment"], time="ts", window="1d")


def _state(store: Store) -> dict:
    ss = store.sketchset()
    out = {}
    for key in ss.keys():
        k, v = ss.sketch(key)._compact()
        out[key] = (k.tolist(), v[:, :, :3].tolist(), ss.counts(key)["n_rows"], ss.counts(key)["n_unlabelled"])
    return out


def test_store_rows_equal_a_group_by_and_reingest_is_idempotent(tmp_path):
    frames = [_day(tmp_path / f"d{d}.parquet", d, unlabelled=0.1) for d in (1, 2, 3)]
    df = pd.concat(frames)
    with Store(tmp_path / "m.duckdb") as st:
        res = st.ingest(str(tmp_path / "*.parquet"), **JOB)
        assert [r.action for r in res] == ["added"] * 3
        t0 = time.perf_counter()
        again = st.ingest(str(tmp_path / "*.parquet"))
        assert [r.action for r in again] == ["unchanged"] * 3 and time.perf_counter() - t0 < 1.0
        ss = st.sketchset()
        df["day"] = df.ts.dt.floor("D")
        for (day, seg), g in df.groupby(["day", "segment"], dropna=False):
            key = (day.tz_localize("UTC").to_pydatetime(), None if pd.isna(seg) else seg)
            lab = g[g.label.notna()]
            assert ss.counts(key)["n_rows"] == len(g) and ss.counts(key)["n_unlabelled"] == g.label.isna().sum()
            assert ss.sketch(key).roc_auc().value == pytest.approx(skm.roc_auc_score(lab.label, lab.score), abs=1e-12)
        by_seg = st.sketchset(window="all")
        for seg, g in df.groupby("segment", dropna=False):
            lab = g[g.label.notna()]
            auc = by_seg.sketch((None if pd.isna(seg) else seg,)).roc_auc().value
            assert auc == pytest.approx(skm.roc_auc_score(lab.label, lab.score), abs=1e-12)
        weekly = st.sketchset(by=[], window="1w")
        assert sum(weekly.counts(k)["n_rows"] for k in weekly.keys()) == len(df)


def test_changed_file_replaces_its_rows_and_forget_removes_them(tmp_path):
    p = tmp_path / "d1.parquet"
    _day(p, 1, unlabelled=0.5)
    with Store(tmp_path / "m.duckdb") as st:
        st.ingest(str(p), **JOB)
        before = st.sketchset(by=[], window="all").counts(())
        labelled = _day(p, 1, unlabelled=0.0)  # the late labels arrive: same rows, new file
        os.utime(p, ns=(time.time_ns(), time.time_ns() + 10**9))
        assert st.ingest(str(p))[0].action == "replaced"
        after = st.sketchset(by=[], window="all")
        assert after.counts(())["n_rows"] == before["n_rows"] == len(labelled)
        assert after.counts(())["n_unlabelled"] == 0
        assert after.sketch(()).roc_auc().value == pytest.approx(skm.roc_auc_score(labelled.label, labelled.score), abs=1e-12)
        assert st.forget(p) and not st.forget(p)
        assert st.files() == []


def test_a_contradicting_job_and_a_second_writer_are_refused(tmp_path):
    _day(tmp_path / "d1.parquet", 1)
    path = tmp_path / "m.duckdb"
    with Store(path) as st:
        st.ingest(str(tmp_path / "d1.parquet"), **JOB)
        with pytest.raises(ValueError, match="built with window"):
            st.ingest(str(tmp_path / "d1.parquet"), window="1h")
        code = f"import streameval; streameval.Store({str(path)!r})"
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert r.returncode != 0 and "StoreBusyError" in r.stderr and "busy" in r.stderr
    Store(path, read_only=True).close()  # free again once the writer is gone
    assert issubclass(StoreBusyError, RuntimeError)


def test_a_path_that_is_not_a_store_is_a_one_line_data_error(tmp_path):
    (tmp_path / "notes.duckdb").write_text("not a database")
    (tmp_path / "folder").mkdir()
    for path in (tmp_path / "notes.duckdb", tmp_path / "folder"):
        with pytest.raises(InputError, match="not a store: DuckDB cannot open it"):
            Store(path, read_only=True)
        r = CliRunner().invoke(app, ["monitor", "report", "--store", str(path)])
        assert r.exit_code == 1, r.output
        assert f"error: {path}: not a store" in r.output


_INGEST = """
import sys, streameval
with streameval.Store(sys.argv[1]) as st:
    print("open", flush=True)
    for f in sys.argv[2:]:
        st.ingest([f], score="score", label="label", by=["segment"], time="ts", window="1d")
        print("done", flush=True)
"""


@pytest.mark.parametrize("kills", [3, pytest.param(20, marks=pytest.mark.slow)])  # the 20: the slow suite
def test_kill_minus_nine_leaves_the_store_before_or_after_each_file(tmp_path, kills):
    files = [str(tmp_path / f"d{d}.parquet") for d in range(1, 7)]
    for d, f in enumerate(files, start=1):
        _day(f, d, n=30000)
    clean = tmp_path / "clean.duckdb"
    with Store(clean) as st:
        st.ingest(files, **JOB)
        expected = _state(st)
    rng = np.random.default_rng(0)
    partial = 0
    for k in range(kills):
        path = tmp_path / f"k{k}.duckdb"
        proc = subprocess.Popen([sys.executable, "-c", _INGEST, str(path), *files], stdout=subprocess.PIPE, text=True)
        # a random moment: after a random number of whole files, then a random part of the next
        for _ in range(1 + int(rng.integers(0, len(files)))):
            proc.stdout.readline()
        time.sleep(float(rng.uniform(0.0, 0.15)))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        with Store(path) as st:
            if st.job:  # killed after the first transaction began: every file is whole or absent
                done = {f["path"] for f in st.files()}
                partial += proc.returncode == -signal.SIGKILL and len(done) < len(files)
                part = _state(st)
                with Store(tmp_path / f"ref{k}.duckdb") as ref:
                    ref.ingest(sorted(done), **JOB) if done else None
                    assert part == (_state(ref) if done else {})
                st.ingest(files, **JOB)
                assert _state(st) == expected
        for p in tmp_path.glob(f"*{k}.duckdb*"):
            p.unlink()
    assert partial >= kills // 2, f"only {partial} of {kills} kills landed while files were being ingested"


def test_check_flags_the_degraded_slice_and_exits_3(tmp_path):
    for d in range(1, 11):
        _day(tmp_path / f"d{d:02d}.parquet", d, n=6000, degrade=d >= 8)
    store = tmp_path / "m.duckdb"
    with Store(store) as st:
        st.ingest(str(tmp_path / "*.parquet"), **JOB)
        table = check(st, reference="2026-11-01:2026-11-08", current="3d", min_effect=0.02)
    flagged = [r["segment"] for r in table.rows if r["alert"]]
    assert flagged == ["b"] and table.rows[0]["segment"] == "b"  # ranked first by contribution
    assert table.overall["delta"] < 0
    runner = CliRunner()
    r = runner.invoke(app, ["monitor", "check", "--store", str(store), "--reference", "2026-11-01:2026-11-08",
                            "--current", "3d", "--min-effect", "0.02"])
    assert r.exit_code == 3 and "ALERT" in r.stdout
    quiet = runner.invoke(app, ["monitor", "check", "--store", str(store), "--reference", "2026-11-01:2026-11-04",
                                "--current", "2026-11-04:2026-11-07"])
    assert quiet.exit_code == 0
    rep = runner.invoke(app, ["monitor", "report", "--store", str(store), "--window", "1w", "-f", "json"])
    assert rep.exit_code == 0 and '"window"' in rep.stdout
    bad = runner.invoke(app, ["monitor", "check", "--store", str(store), "--reference", "last month"])
    assert bad.exit_code == 2


_V1_SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE files (path VARCHAR PRIMARY KEY, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL, digest VARCHAR NOT NULL,
    rows BIGINT NOT NULL, ingested_at TIMESTAMPTZ NOT NULL);
CREATE TABLE sketches (path VARCHAR NOT NULL, window_start TIMESTAMPTZ, slice VARCHAR NOT NULL, n_rows BIGINT NOT NULL,
    n_unlabelled BIGINT NOT NULL, labelled BLOB NOT NULL, unlabelled BLOB, counters VARCHAR NOT NULL);
"""


def _write_v1_store(path, files):
    """A store as schema version 1 wrote it: one row per group with a sketch BLOB and a cell block."""
    import datetime as dt
    import hashlib
    import json

    import duckdb

    from streameval.grid import DEFAULT_GRID
    from streameval.slicing import sketch_slices

    con = duckdb.connect(str(path))
    con.execute(_V1_SCHEMA)
    job = {"score": "score", "label": "label", "weight": None, "by": ["segment"], "time": "ts", "window": "1d",
           "tz": None, "grid": DEFAULT_GRID.spec(), "pos_label": None, "where": None}
    con.execute("INSERT INTO meta VALUES ('schema_version', '1'), ('job', ?)", [json.dumps(job)])
    for f in files:
        ss, prov = sketch_slices(f, score="score", label="label", by=["segment"], time="ts", window="1d")
        for key in ss.keys():
            labelled, unlabelled, counts = ss.group_parts(key)
            con.execute("INSERT INTO sketches VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [f, key[0], json.dumps(list(key[1:])), counts["n_rows"], counts["n_unlabelled"],
                         labelled.to_bytes(), unlabelled, json.dumps(counts)])
        st = os.stat(f)
        con.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)", [f, st.st_size, st.st_mtime_ns,
                    hashlib.sha256(open(f, "rb").read()).hexdigest(), prov["rows_read"], dt.datetime.now(dt.timezone.utc)])
    con.close()


def test_a_schema_1_store_is_read_and_upgraded_to_the_same_state(tmp_path):
    """Old stores (a BLOB per group) stay readable read-only and are upgraded when opened for
    writing; either way every group equals a clean ingest into a new store."""
    files = [str(tmp_path / f"d{d}.parquet") for d in (1, 2, 3)]
    for d, f in enumerate(files, start=1):
        _day(f, d, n=3000, unlabelled=0.2)
    with Store(tmp_path / "new.duckdb") as st:
        st.ingest(files, **JOB)
        expected, weekly = _state(st), st.sketchset(by=[], window="1w").counts
    old = tmp_path / "old.duckdb"
    _write_v1_store(old, files)
    with Store(old, read_only=True) as st:
        assert _state(st) == expected
    with Store(old) as st:  # upgraded in place
        assert st._meta()["schema_version"] == str(STORE_SCHEMA_VERSION) and _state(st) == expected
        assert [r.action for r in st.ingest(files)] == ["unchanged"] * 3
        rolled = st.sketchset(by=[], window="1w")
        assert [rolled.counts(k) for k in rolled.keys()] == [weekly(k) for k in rolled.keys()]
    import duckdb

    tables = {r[0] for r in duckdb.connect(str(old), read_only=True).execute("SHOW TABLES").fetchall()}
    assert tables == {"meta", "files", "groups", "cells", "single_cells"}


def test_store_read_merges_by_key_like_a_group_by_with_filters_and_rollups(tmp_path):
    """The columnar read: slices kept or dropped, windows rolled up, since/until filters; each
    merged group equals the SketchSet built from the same rows in one pass."""
    import datetime as dt

    from streameval.slicing import sketch_slices

    frames = [_day(tmp_path / f"d{d:02d}.parquet", d, n=2500, unlabelled=0.1) for d in range(1, 10)]
    with Store(tmp_path / "m.duckdb") as st:
        st.ingest(str(tmp_path / "*.parquet"), **JOB)
        utc = dt.timezone.utc
        since, until = dt.datetime(2026, 11, 3, tzinfo=utc), dt.datetime(2026, 11, 8, tzinfo=utc)
        for by, window in (([], "all"), (["segment"], "1w"), ([], None), (["segment"], "all")):
            got = st.sketchset(by=by, window=window, since=since, until=until)
            df = pd.concat(frames)
            df = df[(df.ts >= "2026-11-03") & (df.ts < "2026-11-08")]
            path = tmp_path / "sel.parquet"
            df.to_parquet(path)
            want, _ = sketch_slices(str(path), score="score", label="label", by=by,
                                    time="ts" if window not in ("all",) else None,
                                    window=(window or "1d") if window not in ("all",) else None)
            assert sorted(got.keys(), key=str) == sorted(want.keys(), key=str)
            for key in want.keys():
                (k1, v1), (k2, v2) = got.sketch(key)._compact(), want.sketch(key)._compact()
                assert np.array_equal(k1, k2) and np.array_equal(v1[:, :, :3], v2[:, :, :3])
                assert got.counts(key)["n_rows"] == want.counts(key)["n_rows"]
                assert got.counts(key)["n_unlabelled"] == want.counts(key)["n_unlabelled"]
                _, wa, _, _ = got.score_histogram(key, labelled=False)
                _, wb, _, _ = want.score_histogram(key, labelled=False)
                assert np.array_equal(wa, wb)


def test_check_and_report_give_score_drift_against_the_reference(tmp_path):
    """PSI per slice in `monitor check` (current vs reference period) and in `monitor report
    --reference` (each window vs its slice's reference), equal to stats.score_drift."""
    import json

    from streameval.stats import score_drift

    for d in range(1, 11):
        _day(tmp_path / f"d{d:02d}.parquet", d, n=5000, degrade=d >= 8, unlabelled=0.2)
    store = tmp_path / "m.duckdb"
    with Store(store) as st:
        st.ingest(str(tmp_path / "*.parquet"), **JOB)
        table = check(st, reference="2026-11-01:2026-11-08", current="3d")
        cur = st.sketchset(window="all", since=table_period(st, "3d"))
        ref = st.sketchset(window="all", since=pd.Timestamp("2026-11-01", tz="UTC").to_pydatetime(),
                           until=pd.Timestamp("2026-11-08", tz="UTC").to_pydatetime())
    for r in table.rows:
        key = (r["segment"],)
        b, w, lo, hi = cur.score_histogram(key)
        rb, rw, rlo, rhi = ref.score_histogram(key)
        assert r["psi"] == pytest.approx(score_drift(b, w, rb, rw, ranges=(lo, hi, rlo, rhi)).psi, rel=1e-12)
    psi = {r["segment"]: r["psi"] for r in table.rows}
    assert psi["b"] > 2 * max(psi["a"], psi[None]) and table.overall["psi"] > 0
    assert "PSI" in table.to_text(width=200) and '"psi"' in table.to_json()
    runner = CliRunner()
    rep = runner.invoke(app, ["monitor", "report", "--store", str(store), "--reference", "2026-11-01:2026-11-08",
                              "-f", "json"])
    assert rep.exit_code == 0, rep.stdout
    rows = json.loads(rep.stdout)["rows"]
    late = [r["psi"] for r in rows if r["segment"] == "b" and r["window"] >= "2026-11-08"]
    early = [r["psi"] for r in rows if r["segment"] == "b" and r["window"] < "2026-11-08"]
    assert len(late) == 3 and min(late) > max(early)


def table_period(store, text):
    from streameval.monitor.alerts import parse_period

    return parse_period(text, store.newest_window())[0]
