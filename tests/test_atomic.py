"""Atomic, durable writes (streameval.atomic): readers see the old file or the new one, never a mix."""

from __future__ import annotations

import errno
import importlib.util
import multiprocessing
import os
import pathlib
import random
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import streameval
from streameval import BinarySketch, ProbabilityGrid, atomic
from streameval.atomic import write_bytes_atomic, write_text_atomic

ATOMIC_PY = pathlib.Path(atomic.__file__)


def slow(fn):
    return pytest.mark.slow(fn)


def _sketch(seed: int, n: int = 3000) -> BinarySketch:
    rng = np.random.default_rng(seed)
    return BinarySketch(ProbabilityGrid(8)).update((rng.random(n) < 0.3).astype(np.int8), rng.random(n))


def _leftovers(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


@pytest.fixture(params=["unnamed", "mkstemp"])
def both_paths(request, monkeypatch):
    """Run a test with O_TMPFILE temporaries and with the named (mkstemp) fallback."""
    if request.param == "mkstemp":
        monkeypatch.setattr(atomic, "_UNNAMED_OK", [False])
    return request.param


def test_write_and_replace(tmp_path, both_paths):
    p = tmp_path / "a.bin"
    write_bytes_atomic(p, b"one")
    assert p.read_bytes() == b"one"
    write_bytes_atomic(str(p), bytearray(b"two"))
    assert p.read_bytes() == b"two"
    write_text_atomic(p, "drei\n")
    assert p.read_text() == "drei\n"
    assert _leftovers(tmp_path) == []


def test_existing_mode_is_kept_and_new_files_follow_the_umask(tmp_path, both_paths):
    p = tmp_path / "keep.bin"
    p.write_bytes(b"x")
    os.chmod(p, 0o640)
    write_bytes_atomic(p, b"y")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    os.chmod(p, 0o604)
    _sketch(1).save(p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o604
    ref = tmp_path / "ref.bin"
    ref.write_bytes(b"")  # what open() gives under the current umask
    new = tmp_path / "new.bin"
    write_bytes_atomic(new, b"z")
    assert stat.S_IMODE(os.stat(new).st_mode) == stat.S_IMODE(os.stat(ref).st_mode)


def test_symlink_target_is_replaced_not_followed(tmp_path, both_paths):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    link = tmp_path / "report.json"
    link.symlink_to(outside)
    write_text_atomic(link, "{}")
    assert outside.read_text() == "precious"
    assert not link.is_symlink() and link.read_text() == "{}"


def test_failure_leaves_target_and_no_temporary(tmp_path, monkeypatch, both_paths):
    p = tmp_path / "s.sketch"
    _sketch(1).save(p)
    before = p.read_bytes()

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "write", full)
    with pytest.raises(OSError, match="No space left") as info:
        _sketch(2).save(p)
    assert info.value.filename == str(p)  # names the target, not the temporary
    monkeypatch.undo()
    assert p.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_interrupt_cleans_up(tmp_path, monkeypatch, both_paths):
    p = tmp_path / "s.bin"

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_bytes_atomic(p, b"data")
    monkeypatch.undo()
    assert not p.exists() and _leftovers(tmp_path) == []


def test_errors_name_the_target(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        write_bytes_atomic(tmp_path / "no" / "such" / "dir.bin", b"x")
    assert info.value.filename == str(tmp_path / "no" / "such" / "dir.bin")
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        write_bytes_atomic(tmp_path / "d", b"x")
    assert _leftovers(tmp_path) == []


def test_file_and_directory_are_fsynced(tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def spy(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", spy)
    write_bytes_atomic(tmp_path / "f.bin", b"abc")
    assert synced == [False, True]  # the file, then its directory after the rename


def test_temporaries_are_unpredictable_and_exclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic, "_UNNAMED_OK", [False])
    names = set()
    real = atomic.os.replace

    def spy(src, dst):
        names.add(os.path.basename(src))
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", spy)
    for _ in range(20):
        write_bytes_atomic(tmp_path / "x.bin", b"1")
    assert len(names) == 20  # a fresh random name every time
    # a planted symlink at a would-be temporary name is never followed: mkstemp uses O_EXCL
    victim = tmp_path / "victim"
    victim.write_text("keep")
    for name in names:
        (tmp_path / name).symlink_to(victim)
    for _ in range(5):
        write_bytes_atomic(tmp_path / "x.bin", b"2")
    assert victim.read_text() == "keep"


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    stale = tmp_path / f".s.sketch.{atomic._HOST}.{pid}.0123456789abcdef.tmp"
    stale.write_bytes(b"half")
    mine = tmp_path / f".s.sketch.{atomic._HOST}.{os.getpid()}.0123456789abcdef.tmp"
    mine.write_bytes(b"in progress")  # a live process's temporary is left alone
    other = tmp_path / ".other.bin.deadbeef.1.x.tmp"
    other.write_bytes(b"not ours")
    write_bytes_atomic(tmp_path / "s.sketch", b"new")
    assert not stale.exists() and mine.exists() and other.exists()


# -- concurrency -------------------------------------------------------------------------------


def test_concurrent_thread_saves_always_leave_a_valid_file(tmp_path, savers=24):
    """Threads saving one path while a thread reads it: every read is a whole sketch, and no
    temporary is left (24 savers by default, 100 per round in the slow suite's 10 rounds)."""
    path = tmp_path / "shared.sketch"
    sketches = [_sketch(i, 500) for i in range(8)]
    valid = {s.to_bytes() for s in sketches}
    sketches[0].save(path)
    stop = threading.Event()
    seen = []

    def reader():
        while not stop.is_set():
            data = path.read_bytes()
            seen.append(data in valid)

    errors = []

    def saver(i):
        try:
            sketches[i % len(sketches)].save(path)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    r = threading.Thread(target=reader)
    r.start()
    threads = [threading.Thread(target=saver, args=(i,)) for i in range(savers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    r.join()
    assert errors == []
    assert seen and all(seen)
    assert path.read_bytes() in valid
    assert streameval.load(path) in sketches
    assert _leftovers(tmp_path) == []


def _save_in_process(args):
    path, seed = args
    _sketch(seed, 500).save(path)
    return seed


def test_concurrent_process_saves_always_leave_a_valid_file(tmp_path):
    path = str(tmp_path / "shared.sketch")
    valid = {_sketch(i % 4, 500).to_bytes() for i in range(4)}
    ctx = multiprocessing.get_context("fork")
    stop = threading.Event()
    seen = []

    def reader():
        while not stop.is_set():
            if os.path.exists(path):
                with open(path, "rb") as f:
                    seen.append(f.read() in valid)

    r = threading.Thread(target=reader)
    r.start()
    with ctx.Pool(4) as pool:
        done = pool.map(_save_in_process, [(path, i % 4) for i in range(100)])
    stop.set()
    r.join()
    assert sorted(done) == sorted(i % 4 for i in range(100))
    assert seen and all(seen)
    assert pathlib.Path(path).read_bytes() in valid
    assert _leftovers(tmp_path) == []


# -- kill -9 -----------------------------------------------------------------------------------

_CHILD = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("se_atomic", sys.argv[1])
atomic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atomic)
versions = [open(p, "rb").read() for p in sys.argv[3:]]
print("ready", flush=True)
i = 0
while True:
    atomic.write_bytes_atomic(sys.argv[2], versions[i % len(versions)])
    i += 1
"""


def _kill_during_saves(tmp_path, kills: int, seed: int) -> dict:
    """Start a process that saves sketches to one path in a loop, SIGKILL it at random moments,
    and check after each kill that the file is one complete version and no temporary is left."""
    rng = random.Random(seed)
    big = [_sketch(100 + i, 200_000) for i in range(2)]  # ~1 MB each: kills land mid-write
    blobs = []
    for i, s in enumerate(big):
        blob = tmp_path / f"v{i}.bin"
        blob.write_bytes(s.to_bytes())
        blobs.append(str(blob))
    valid = {pathlib.Path(b).read_bytes() for b in blobs}
    work = tmp_path / "work"
    work.mkdir()
    target = work / "live.sketch"
    stats = {"kills": 0, "old_or_new": 0, "missing_before_first_save": 0, "complete_leftovers": 0}
    for _ in range(kills):
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(ATOMIC_PY), str(target), *blobs],
                                 stdout=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.05))
        child.kill()
        child.wait()
        stats["kills"] += 1
        if not target.exists():
            stats["missing_before_first_save"] += 1
        else:
            data = target.read_bytes()
            assert data in valid, "a kill left a torn sketch file"
            assert streameval.load(target).n_rows == 200_000
            stats["old_or_new"] += 1
        # The only leftover a SIGKILL can cause is a complete, fsynced temporary, linked in the
        # microseconds before its rename; the next write to the target removes it.
        for name in _leftovers(work):
            assert (work / name).read_bytes() in valid, f"a kill left a partial temporary {name}"
            stats["complete_leftovers"] += 1
        if _leftovers(work):
            write_bytes_atomic(target, target.read_bytes())
            assert _leftovers(work) == [], "the next write did not remove the dead process's temporary"
    return stats


def test_kill_9_never_leaves_a_torn_file_or_a_temporary(tmp_path):
    stats = _kill_during_saves(tmp_path, kills=20, seed=1)
    assert stats["kills"] == 20 and stats["old_or_new"] >= 15
    # the link-to-rename window is ~20 us of a ~1.5 ms save loop here: about 1 kill in 60 hits it
    assert stats["complete_leftovers"] <= 5


@slow
def test_kill_9_many(tmp_path):
    stats = _kill_during_saves(tmp_path, kills=300, seed=2)
    print(stats)
    assert stats["old_or_new"] >= 250 and stats["complete_leftovers"] <= 20


@slow
def test_concurrent_saves_many_rounds(tmp_path):
    # A folder per round: the thread test leaves a sketch (seeds 0-7) that the process test's
    # reader, started before any child has saved on a busy machine, would read as not valid.
    for k in range(10):
        (tmp_path / f"r{k}").mkdir()
        (tmp_path / f"r{k}p").mkdir()
        test_concurrent_thread_saves_always_leave_a_valid_file(tmp_path / f"r{k}", savers=100)
        test_concurrent_process_saves_always_leave_a_valid_file(tmp_path / f"r{k}p")


def test_atomic_module_imports_standalone():
    """The kill test's child loads atomic.py alone: it must need nothing but the standard library."""
    spec = importlib.util.spec_from_file_location("se_atomic_alone", ATOMIC_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert callable(mod.write_bytes_atomic)
