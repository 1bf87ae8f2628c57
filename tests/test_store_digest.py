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
        monkeypatch.setattr(store_module, "_digest", lambda p: calls.append(p) or real(p))
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
