"""The files table records each file's SHA-256: hashed while the file is read when it is new or
of another size, before reading when only its modification time moved (the digest then decides
whether it changed)."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest
from test_store_single_cells import JOB, _day

from streameval.errors import InputError
from streameval.monitor import Store
from streameval.monitor import store as store_module
from streameval.sources.base import SourceError


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_digests_recorded_for_new_replaced_and_touched_files(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")
    _day(a, 1)
    _day(b, 2)
    with Store(tmp_path / "m.duckdb") as st:
        assert [r.action for r in st.ingest([a, b], **JOB)] == ["added", "added"]
        digests = dict(st._con.execute("SELECT path, digest FROM files").fetchall())
        assert digests == {a: _sha(a), b: _sha(b)}
        _day(a, 1, n=2000)  # rewritten, another size: replaced, hashed while read
        os.utime(b, ns=(1, 1))  # touched only: hashed first, found unchanged, not read
        calls: list[str] = []
        real = store_module._digest
        monkeypatch.setattr(store_module, "_digest", lambda p, *a: calls.append(p) or real(p, *a))
        assert [r.action for r in st.ingest([a, b])] == ["replaced", "unchanged"]
        assert sorted(calls) == [a, b]
        digests = dict(st._con.execute("SELECT path, digest FROM files").fetchall())
        assert digests == {a: _sha(a), b: _sha(b)}
        assert st._con.execute("SELECT mtime_ns FROM files WHERE path = ?", [b]).fetchall() == [(1,)]


def test_a_file_that_fails_to_read_writes_nothing_and_its_hash_thread_ends(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    with Store(tmp_path / "m.duckdb") as st:
        with pytest.raises(SourceError, match="bad.parquet"):
            st.ingest([str(bad)], **JOB)
        assert st._con.execute("SELECT count(*) FROM files").fetchall() == [(0,)]
    deadline = time.monotonic() + 5
    while any(t.name.startswith("streameval-digest") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("streameval-digest")]


def test_a_file_replaced_while_it_is_read_is_read_again_not_recorded_as_its_new_self(tmp_path, monkeypatch):
    """The hash runs beside the read: if the file is swapped (same size: labels corrected) after
    the read opened it but before the hash did, the digest is the new bytes' while the sketch is
    the old ones'. Recorded as such, the next ingest would find the new file "unchanged" (same
    size, same digest) and keep the old sketch for good."""
    import streameval.slicing as slicing

    path = tmp_path / "log.csv"
    old, new = "score,label\n0.25,0\n0.75,1\n0.5,0\n", "score,label\n0.25,1\n0.75,0\n0.5,1\n"
    assert len(old) == len(new)
    path.write_text(old)
    read_done = threading.Event()
    real_digest, real_read = store_module._digest, slicing.sketch_slices
    swapped: list[bool] = []

    def late_digest(p, *args):  # the hash thread opens the file only after the read
        read_done.wait(10)
        return real_digest(p, *args)

    def read_then_swap(*args, **kwargs):
        out = real_read(*args, **kwargs)
        if not swapped:
            tmp = tmp_path / "log.tmp"
            tmp.write_text(new)
            os.utime(tmp, ns=(10**18, 10**18))
            os.replace(tmp, path)  # an atomic rewrite, as a labelling job would do
            swapped.append(True)
        read_done.set()
        return out

    monkeypatch.setattr(store_module, "_digest", late_digest)
    monkeypatch.setattr(slicing, "sketch_slices", read_then_swap)
    with Store(tmp_path / "m.duckdb") as st:
        st.ingest([str(path)], score="score", label="label")
        st.ingest([str(path)])
        got = st.sketchset()
        recorded = st._con.execute("SELECT size, mtime_ns, digest FROM files").fetchall()
    monkeypatch.setattr(slicing, "sketch_slices", real_read)
    fresh = tmp_path / "fresh.csv"
    fresh.write_text(new)
    with Store(tmp_path / "fresh.duckdb") as st:
        st.ingest([str(fresh)], score="score", label="label")
        want = st.sketchset()
    assert got.counts(()) == want.counts(())
    assert got.cell_columns()[3].tolist() == want.cell_columns()[3].tolist()
    assert recorded == [(len(new), 10**18, _sha(path))]


def test_a_file_that_keeps_changing_while_read_is_refused_with_nothing_written(tmp_path, monkeypatch):
    import streameval.slicing as slicing

    path = tmp_path / "log.csv"
    path.write_text("score,label\n0.25,0\n0.75,1\n")
    real_read = slicing.sketch_slices
    reads: list[int] = []

    def read_then_touch(*args, **kwargs):
        out = real_read(*args, **kwargs)
        reads.append(1)
        os.utime(path, ns=(len(reads) * 10**15, len(reads) * 10**15))  # a writer still at work
        return out

    monkeypatch.setattr(slicing, "sketch_slices", read_then_touch)
    with Store(tmp_path / "m.duckdb") as st:
        with pytest.raises(InputError, match="log.csv: the file changed while it was read"):
            st.ingest([str(path)], score="score", label="label")
        assert len(reads) == store_module._READ_ATTEMPTS
        assert st._con.execute("SELECT count(*) FROM files").fetchall() == [(0,)]
        assert st._con.execute("SELECT count(*) FROM groups").fetchall() == [(0,)]
        monkeypatch.setattr(slicing, "sketch_slices", real_read)
        assert [r.action for r in st.ingest([str(path)])] == ["added"]


def test_a_same_size_rewrite_within_the_files_clock_tick_is_found(tmp_path, monkeypatch):
    """A file ingested right after it was written may be rewritten within the same tick of the
    file system's clock (1-2 s on FAT, SMB or some NFS servers): same size, same modification
    time. Such a recent time is recorded as -1, so the next ingest compares digests and finds the
    new labels; once the time is old enough it is recorded and trusted (no hash)."""
    path = tmp_path / "log.csv"
    old, new = "score,label\n0.25,0\n0.75,1\n0.5,0\n", "score,label\n0.25,1\n0.75,0\n0.5,1\n"
    path.write_text(old)
    tick = os.stat(path).st_mtime_ns
    with Store(tmp_path / "m.duckdb") as st:
        assert [r.action for r in st.ingest([str(path)], score="score", label="label")] == ["added"]
        assert st._con.execute("SELECT mtime_ns FROM files").fetchall() == [(-1,)]
        path.write_text(new)
        os.utime(path, ns=(tick, tick))  # the same tick as the first version
        assert [r.action for r in st.ingest([str(path)])] == ["replaced"]
        assert float(st.sketchset().sketch(()).roc_auc()) == 0.0  # the new labels (the old ones: 1.0)
        old_tick = tick - 10 * store_module.RACY_NS
        os.utime(path, ns=(old_tick, old_tick))  # touched to an old time: hashed once, then trusted
        assert [r.action for r in st.ingest([str(path)])] == ["unchanged"]
        assert st._con.execute("SELECT mtime_ns FROM files").fetchall() == [(old_tick,)]
        calls: list[str] = []
        real = store_module._digest
        monkeypatch.setattr(store_module, "_digest", lambda p, *a: calls.append(p) or real(p, *a))
        assert [r.action for r in st.ingest([str(path)])] == ["unchanged"]
        assert calls == []
