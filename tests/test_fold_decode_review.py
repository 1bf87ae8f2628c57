"""Review of the folding merge (commits 31fb6e8, 7f9d76f): ``merge_files`` folding version-3 shards
straight into each thread's dense state, the one-read path for small files, the ``Merger`` class.

The references are independent of the code under test: the sequential, lazy merge of the loaded
files (``streameval.merge`` over ``streameval.load``) for results, warnings and errors, and a
plain ``open().read()`` of the bytes for the file readers.
"""

from __future__ import annotations

import os
import stat
import threading
import warnings

import numpy as np
import pytest

import streameval
from streameval import BinarySketch, LinearGrid
from streameval.errors import UsageError
from streameval.kernels import binary as kernels
from streameval.sketch import io
from streameval.sketch.binary_merge import merge
from streameval.sketch.files import expand_sketch_paths, merge_files

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


def _sketch(seed: int, n: int = 400, grid=None, weighted: bool = False) -> BinarySketch:
    rng = np.random.default_rng(seed)
    w = rng.exponential(1.0, n) if weighted else None
    return BinarySketch(grid).update((rng.random(n) < 0.3).astype(int), rng.random(n), w)


def _sequential(paths, strict: bool = False):
    """The merge a user would write: each file loaded when the merge reaches it."""

    def loaded():
        for p in paths:
            s = streameval.load(p)
            if not isinstance(s, BinarySketch):
                raise UsageError("cannot merge binary and multiclass sketches together")
            yield s

    return merge(loaded(), strict=strict)


def _outcome(fn):
    """``(("ok", sketch) or ("err", type name, message), [(warning class, message), ...])``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: tuple = ("ok", fn())
        except Exception as exc:  # noqa: BLE001 - compared by type and message
            result = ("err", type(exc).__name__, str(exc))
    return result, sorted((type(w.message).__name__, str(w.message)) for w in caught)


# -- a named pipe is opened once -----------------------------------------------------------------


def _serve(path: str, data: bytes) -> threading.Thread:
    """A writer that opens the pipe ``path`` (blocking until a reader opens it), writes ``data`` and
    closes: what ``cat shard.sevsk > pipe`` does."""

    def write() -> None:
        try:
            with open(path, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the reader went away: the test below says so
            pass

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def _unblock(path: str) -> None:
    """Release a reader stuck opening ``path`` (it then reads an empty pipe), so a failing test ends."""
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)


def _read_in_thread(fn, path: str, timeout: float = 10.0):
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        while t.is_alive():
            try:
                _unblock(path)
            except OSError:
                pass
            t.join(0.5)
        pytest.fail(f"reading the pipe {path} did not finish in {timeout} s (opened twice?)")
    if "error" in box:
        raise box["error"]
    return box["value"]


@needs_fifo
@pytest.mark.parametrize("size", ["small", "large"])
def test_a_named_pipe_is_read_like_a_file(tmp_path, size):
    """The one-read path for small files used to open the path, see a pipe, close it and let the
    careful path open it again: the writer had gone (or got EPIPE), so the reader waited forever."""
    sk = _sketch(1, 200 if size == "small" else 60_000)  # the large one does not fit the pipe's buffer
    data = sk.to_bytes()
    assert (len(data) < 1 << 16) == (size == "small")
    pipe = str(tmp_path / "shard.sevsk")
    os.mkfifo(pipe)
    writer = _serve(pipe, data)
    got = _read_in_thread(lambda: io.read_sketch_file(pipe), pipe)
    writer.join(5)
    assert got == data
    writer = _serve(pipe, data)
    loaded = _read_in_thread(lambda: streameval.load(pipe), pipe)
    writer.join(5)
    assert loaded == sk and loaded.to_bytes() == data


@needs_fifo
def test_merge_files_reads_a_named_pipe_among_files(tmp_path):
    sketches = [_sketch(i) for i in range(5)]
    paths = []
    for i, sk in enumerate(sketches):
        p = tmp_path / f"s{i}.sevsk"
        sk.save(p)
        paths.append(str(p))
    pipe = str(tmp_path / "live.sevsk")
    os.mkfifo(pipe)
    piped = _sketch(99)
    writer = _serve(pipe, piped.to_bytes())
    merged = _read_in_thread(lambda: merge_files([*paths[:2], pipe, *paths[2:]], threads=1), pipe)
    writer.join(5)
    reference = merge([*sketches[:2], piped, *sketches[2:]])
    assert merged.to_bytes() == reference.to_bytes()


def test_a_directory_given_as_a_file_is_refused_by_name(tmp_path):
    """A folder that a glob matches (``day/*.sevsk`` with a folder ``x.sevsk``) is loaded as a file:
    the error is the one ``open`` gives, naming the path, whatever the number of threads."""
    day = tmp_path / "day"
    day.mkdir()
    for i in range(8):
        _sketch(i).save(day / f"h{i}.sevsk")
    (day / "h5b.sevsk").mkdir()
    pattern = str(day / "*.sevsk")
    paths = expand_sketch_paths([pattern])
    assert str(day / "h5b.sevsk") in paths
    with pytest.raises(IsADirectoryError) as direct:
        streameval.load(day / "h5b.sevsk")
    assert str(day / "h5b.sevsk") in str(direct.value)
    reference = _outcome(lambda: _sequential(paths))
    assert reference[0][:2] == ("err", "IsADirectoryError")
    for threads in (1, 2):
        assert _outcome(lambda t=threads: merge_files([pattern], threads=t)) == reference


def test_small_files_are_read_whole_and_checked(tmp_path):
    """Every size class of regular file: the bytes are the file's, and framing errors are the
    careful path's (the one-read path must not add its own wording)."""
    sk = _sketch(3, 3000)
    data = sk.to_bytes()
    p = tmp_path / "a.sevsk"
    p.write_bytes(data)
    assert io.read_sketch_file(p) == data == p.read_bytes()
    for cut in (27, 28, 40, len(data) - 1):
        p.write_bytes(data[:cut])
        with pytest.raises(streameval.SketchFormatError) as exc:
            io.read_sketch_file(p)
        assert str(exc.value).startswith(f"{p}: ")
    p.write_bytes(data + b"\0")
    with pytest.raises(streameval.SketchFormatError, match="truncated or padded"):
        io.read_sketch_file(p)
    assert stat.S_ISREG(os.stat(p).st_mode)


# -- the fold kernel's bounds --------------------------------------------------------------------


def test_fold_refuses_a_state_of_another_shape(tmp_path):
    """``decode_fold`` runs without bounds checks: a state that is not ``(grid.n_bins, 2, 4)``
    float64 in C order is refused before anything is written (keys are checked against the
    grid, not against the state)."""
    grid = LinearGrid(0, 1, 64)
    sk = _sketch(4, 500, grid)
    data = sk.to_bytes()
    for bad in (
        np.zeros((8, 2, 4)),  # too few bins: keys up to 65 would be written past its end
        np.zeros((grid.n_bins, 2, 4), dtype=np.float32),
        np.zeros((grid.n_bins, 4, 2)).transpose(0, 2, 1),  # the right shape, another layout
    ):
        before = bad.copy()
        with pytest.raises(ValueError, match="dense state"):
            io.decode(data, "s.sevsk", fold_into=(grid, bad))
        assert np.array_equal(bad, before)
    state = kernels.empty_state(grid.n_bins)
    parts = io.decode(data, "s.sevsk", fold_into=(grid, state))
    assert parts.folded  # type: ignore[union-attr]
    reference = kernels.empty_state(grid.n_bins)
    kernels.merge_into(reference, *sk._compact())
    assert np.array_equal(state.view(np.int64), reference.view(np.int64))


@pytest.mark.parametrize("change", ["grows", "shrinks"])
def test_a_file_that_changes_size_while_read_gets_the_careful_paths_verdict(tmp_path, monkeypatch, change):
    """The file changes between its ``fstat`` and its one read: the careful path reads it again
    from its start on the same descriptor and says what a fresh read of the changed file says."""
    data = _sketch(5).to_bytes()
    p = tmp_path / "s.sevsk"
    p.write_bytes(data)
    changed = data + b"\0" if change == "grows" else data[:-1]
    real = io._read_small

    def racing(fd: int, size: int, source: str) -> bytes | None:
        with open(p, "r+b") as f:  # another writer, in place
            f.write(changed)
            f.truncate(len(changed))
        return real(fd, size, source)

    monkeypatch.setattr(io, "_read_small", racing)
    with pytest.raises(streameval.SketchFormatError) as during:
        io.read_sketch_file(p)
    monkeypatch.setattr(io, "_read_small", real)
    with pytest.raises(streameval.SketchFormatError) as after:
        io.read_sketch_file(p)
    assert str(during.value) == str(after.value)
    assert "truncated or padded" in str(after.value)


# -- merge_files against the sequential merge, on a mixed corpus ---------------------------------

_GRIDS = (LinearGrid(0, 1, 64), LinearGrid(0, 1, 16), LinearGrid(0, 1, 48))


def _corpus(seed: int, folder) -> tuple[list[str], bool]:
    """Files of every kind merge_files meets: version 3 (folded) and version 1 (loaded whole),
    weighted or not, empty, on a grid, its coarsening or a clashing one, with bootstrap
    replicates (version 2), labels that clash, provenance that repeats, bytes that are corrupt."""
    rng = np.random.default_rng(seed)
    paths = []
    boot = rng.random() < 0.2  # every file, or none: a mix is refused
    for i in range(int(rng.integers(1, 15))):
        grid = _GRIDS[int(rng.choice(3, p=[0.7, 0.28, 0.02]))]
        sk = BinarySketch(grid, bootstrap=4, seed=1) if boot else BinarySketch(grid)
        n = 0 if rng.random() < 0.15 else int(rng.integers(1, 300))
        if n:
            y = (rng.random(n) < 0.3).astype(int)
            if rng.random() < 0.02:
                y = np.where(y == 1, 1, -1)  # another negative label: clashes with 0
            s = rng.random(n)
            s = s.astype(np.float32) if rng.random() < 0.3 else s
            w = rng.exponential(1.0, n) if rng.random() < 0.3 else None
            sk.update(y, s, w, **({"row_id": np.arange(n) + 1000 * i} if boot else {}))
        if rng.random() < 0.3:
            sk.inputs = [{"id": "sha256:" + format(int(rng.integers(4)), "032x"), "name": f"in{i}", "rows": n}]
        p = folder / f"f{i:02d}.sevsk"
        sk.save(p, format_version=1 if not boot and rng.random() < 0.2 else None)
        r = rng.random()
        if r < 0.015:  # a flipped bit: checksum mismatch
            b = bytearray(p.read_bytes())
            b[len(b) // 2] ^= 1
            p.write_bytes(bytes(b))
        elif r < 0.03:  # a byte after the CRC
            p.write_bytes(p.read_bytes() + b"x")
        paths.append(str(p))
    return paths, bool(rng.random() < 0.2)


@pytest.mark.parametrize("seed", range(24))
def test_merge_files_is_the_sequential_merge_on_a_mixed_corpus(tmp_path, seed):
    """One thread: the same bytes (bins, counters, provenance, weight_sq), the same warnings, or
    the same error (type and message). Two and three threads: the same verdict and warnings,
    the same keys, min and max bit for bit and the sums up to rounding."""
    paths, strict = _corpus(seed, tmp_path)
    reference, ref_warnings = _outcome(lambda: _sequential(paths, strict))
    for threads in (1, 2, 3):
        got, got_warnings = _outcome(lambda t=threads: merge_files(paths, strict=strict, threads=t))
        assert got_warnings == ref_warnings, threads
        assert got[0] == reference[0], (threads, got, reference)
        if reference[0] == "err":
            assert got == reference
            continue
        a, b = reference[1], got[1]
        if threads == 1:
            assert b.to_bytes() == a.to_bytes()
            continue
        (ka, va), (kb, vb) = a._compact(), b._compact()
        assert np.array_equal(ka, kb)
        assert np.array_equal(va[:, :, 1:3].view(np.int64), vb[:, :, 1:3].view(np.int64))
        np.testing.assert_allclose(vb[:, :, [0, 3]], va[:, :, [0, 3]], rtol=1e-12, atol=1e-300)
        assert b.inputs == a.inputs and b.inputs_dropped == a.inputs_dropped
        assert b.counters.keys() == a.counters.keys() and (a.replicates is None) == (b.replicates is None)
        if a.replicates is not None:  # weighted rows' replicate weights add up in another order
            (rka, rwa), (rkb, rwb) = a.replicates.compact(), b.replicates.compact()
            assert np.array_equal(rka, rkb)
            np.testing.assert_allclose(rwb, rwa, rtol=1e-12, atol=1e-300)
        for name, value in a.counters.items():
            assert b.counters[name] == pytest.approx(value, rel=1e-12), name


# -- crafted headers -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 3])
def test_weight_sq_beside_weights_whose_squares_overflow_is_a_format_error(version):
    """A class weight above 1.3e154 has no finite square: writers leave ``weight_sq`` out, and a
    crafted header that gives it anyway is refused as a format error (``float ** 2`` raised
    OverflowError out of ``from_bytes``, which promises SketchFormatError for any bytes)."""
    from test_io_compact import pack, split

    sk = BinarySketch().update(np.array([0, 1, 1]), np.array([0.2, 0.6, 0.7]), np.array([1e155, 2e155, 3e155]))
    assert "weight_sq_pos" not in sk.counters  # the writer's rule: squares overflow
    v, _, header, payload = split(sk.to_bytes(format_version=version))
    header["weight_sq"] = [1e300, 1e300]
    data = pack(header, payload, version=v)
    with pytest.raises(streameval.SketchFormatError, match="weight_sq"):
        BinarySketch.from_bytes(data)
    if version == 3:
        grid = sk.grid
        with pytest.raises(streameval.SketchFormatError, match="weight_sq"):
            io.decode(data, None, fold_into=(grid, kernels.empty_state(grid.n_bins)))


@pytest.mark.parametrize("version", [1, 3])
def test_weight_sq_of_a_class_weight_beyond_1e154_is_read_back(tmp_path, version):
    """200,000 rows of weight 1e150: the class weight 2e155 has no finite square, but the sum of
    squares (2e305) is finite and written; the file reads back, loaded or folded by merge_files."""
    n = 200_000
    rng = np.random.default_rng(8)
    y = (rng.random(n) < 0.5).astype(int)
    sk = BinarySketch().update(y, rng.random(n), np.full(n, 1e150))
    assert sk.counters["weight_sq_pos"] == pytest.approx(float(y.sum()) * 1e300, rel=1e-9)
    p = tmp_path / "heavy.sevsk"
    sk.save(p, format_version=version)
    back = streameval.load(p)
    assert back == sk and back.counters["weight_sq_pos"] == sk.counters["weight_sq_pos"]
    merged = merge_files([p, p], threads=1)  # the same file twice: a duplicate-free id-less merge
    assert merged.counters["weight_sq_pos"] == pytest.approx(2 * sk.counters["weight_sq_pos"], rel=1e-12)
