"""The batch read of ``merge_files``' lean path (:mod:`streameval.sketch.fold_files`): files read
into a reused buffer, the framing checked there, the counters read from the header's text, and
version 4's log-loss sums by running products. Each is compared with the general path it stands
in for: it takes a file only where the general path accepts it, with the same values."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import struct
import threading

import numpy as np
import pytest
from test_fold_files import _assert_same, _merge, _pack, _reference, _split

from streameval import BinarySketch, ProbabilityGrid, SketchFormatError
from streameval.kernels import fileread
from streameval.sketch import fold_files, io, io_header
from streameval.sketch.binary_merge import Merger
from streameval.sketch.io_checks import REL_TOL, _probability_bounds
from streameval.sketch.io_columnar import decode_columnar

GRID = ProbabilityGrid(mantissa_bits=6, min_exponent=-20)


def _shard(version: int = 4, compress: bool = False, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    y = (rng.random(300) < 0.3).astype(int)
    return BinarySketch(GRID).update(y, rng.random(300)).to_bytes(format_version=version, compress=compress)


def _frame_or_error(data: bytes) -> object:
    try:
        return io.frame(memoryview(data), "f")
    except SketchFormatError as exc:
        return str(exc)


def _variants(data: bytes) -> list[bytes]:
    """The file with each byte of its prefix, header length, payload length and CRC changed,
    cut short, padded, and with another version or flags."""
    hlen = struct.unpack_from("<I", data, 12)[0]
    spots = [*range(28), *range(16 + hlen, 24 + hlen), *range(len(data) - 4, len(data)), 16 + hlen + 30]
    out = []
    for at in spots:
        for delta in (1, 0x80, 0xFF):
            b = bytearray(data)
            b[at] = (b[at] + delta) & 0xFF
            out.append(bytes(b))
    out += [data[:n] for n in (0, 12, 16, 27, 28, 16 + hlen + 8, len(data) - 1)]
    out += [data + b"\0", data + data]
    version, flags, header, stored = _split(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    out += [_pack(text, stored, v, f) for v in (1, 2, 3, 4, 5) for f in (0, 1, 2)]
    return out


@pytest.mark.parametrize(("version", "compress"), [(3, False), (4, False), (4, True), (1, False), (2, False)])
def test_framed_takes_a_file_only_where_io_frame_does_with_the_same_values(version, compress):
    if version == 2:
        data = BinarySketch(GRID, bootstrap=3, seed=1).update([0, 1], [0.2, 0.7]).to_bytes()
    else:
        data = _shard(version, compress)
    folder = fold_files.LeanFolder()
    taken = 0
    for v in [data, *_variants(data)]:
        got = folder.framed(memoryview(v))
        want = _frame_or_error(v)
        if got is not None:
            taken += 1
            assert got == want
        elif not isinstance(want, str):
            assert want[0] not in (3, 4)  # a valid frame the lean check leaves: another version only
    assert taken >= (1 if version in (3, 4) else 0)
    assert (folder.framed(memoryview(data)) is not None) == (version in (3, 4))


def test_framed_follows_the_grid_size_limit_read_per_batch(monkeypatch):
    data = _shard(4)
    folder = fold_files.LeanFolder()
    assert folder.framed(memoryview(data)) is not None
    monkeypatch.setenv(io_header.MAX_GRID_BINS_ENV, "8")  # the payload is now beyond the cap
    assert folder.framed(memoryview(data)) is not None  # until the next batch
    folder.refresh()
    assert folder.framed(memoryview(data)) is None
    assert isinstance(_frame_or_error(data), str)
    monkeypatch.setenv(io_header.MAX_GRID_BINS_ENV, "many")  # unusable: the general path names it
    folder.refresh()
    assert folder.framed(memoryview(data)) is None


def test_read_into_reads_regular_files_and_leaves_everything_else(tmp_path):
    data = _shard(4)
    p = tmp_path / "a.sevsk"
    p.write_bytes(data)
    buf = np.zeros(len(data) + 100, dtype=np.uint8)
    assert fold_files.LeanFolder.read_into(str(p), buf.data, 50) == len(data)
    assert bytes(buf[50:50 + len(data)]) == data == io.read_sketch_file(p)
    assert fold_files.LeanFolder.read_into(str(p), buf.data, 100) is None  # no room (size + 1 bytes)
    assert fold_files.LeanFolder.read_into(str(tmp_path), buf.data, 0) is None  # a folder
    assert fold_files.LeanFolder.read_into(str(tmp_path / "missing"), buf.data, 0) is None
    (tmp_path / "short").write_bytes(data[:27])
    assert fold_files.LeanFolder.read_into(str(tmp_path / "short"), buf.data, 0) is None
    big = tmp_path / "big"
    big.write_bytes(b"\0" * (fold_files.READ_MAX + 1))
    large = np.zeros(fold_files.READ_MAX + 10, dtype=np.uint8)
    assert fold_files.LeanFolder.read_into(str(big), large.data, 0) is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX feature")
def test_read_into_does_not_open_a_named_pipe(tmp_path):
    """Opening a pipe with no writer waits forever; the general path opens it, once."""
    fifo = tmp_path / "pipe.sevsk"
    os.mkfifo(fifo)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(fold_files.LeanFolder.read_into(str(fifo), memoryview(bytearray(100)), 0)),
                         daemon=True)
    t.start()
    t.join(10)
    assert got == [None]


def test_merge_files_reads_a_named_pipe_among_shards_once(tmp_path):
    paths = []
    for i in range(6):
        p = tmp_path / f"s{i}.sevsk"
        p.write_bytes(_shard(4, seed=i))
        paths.append(p)
    want = _reference(paths)
    fifo = tmp_path / "s3-pipe.sevsk"
    if not hasattr(os, "mkfifo"):
        pytest.skip("named pipes are a POSIX feature")
    os.mkfifo(fifo)
    data = paths[3].read_bytes()

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    got = _merge([*paths[:3], fifo, *paths[4:]], threads=1)
    t.join(10)
    assert got[1] == want[1]
    assert isinstance(got[0], BinarySketch) and got[0].counters == want[0].counters


@pytest.mark.parametrize("threads", [1, 2])
def test_damaged_framing_among_shards_gives_the_load_error(tmp_path, threads):
    paths = []
    for i in range(9):
        p = tmp_path / f"s{i}.sevsk"
        p.write_bytes(_shard(4 if i % 2 else 3, seed=i))
        paths.append(p)
    data = paths[5].read_bytes()
    for bad in (data[:-1], data + b"\0", data[:-4] + bytes(4), data[:8] + b"\x09" + data[9:]):
        paths[5].write_bytes(bad)
        want = _reference(paths)
        assert isinstance(want[0], str)
        assert _merge(paths, threads) == want


_INT_TOKENS = ["0", "7", "9223372036854775807", "9223372036854775808", "9999999999999999999"]
_FLOAT_TOKENS = ["0", "0.0", "12", "3.5e2", "4e301", "4.0000000000000001e301", "4.000000000000001e301", "1e999",
                 "9999999999999999999", "0e5", "1E-400"]


def _header(tokens: dict[str, str], weighted: str = "false") -> bytes:
    order = ["brier_sum", "log_loss_sum", "n_nan", "n_outside", "n_rows", "n_zero_weight", "prob_weight"]
    counters = ",".join(f'"{n}":{tokens.get(n, "0")}' for n in order)
    return ('{"counters":{' + counters + ',"weighted":' + weighted + '},"grid":{"kind":"probability"},'
            '"meta":{},"n_bins":0,"sketch":"binary"}').encode()


@pytest.mark.parametrize("name", ["n_rows", "n_nan", "n_outside", "n_zero_weight", "prob_weight", "brier_sum", "log_loss_sum"])
def test_counters_read_from_the_text_equal_the_general_field_checks(name):
    tokens = _INT_TOKENS if name.startswith("n_") else _FLOAT_TOKENS
    for token in tokens:
        for weighted in ("false", "true"):
            text = _header({name: token}, weighted)
            match = fold_files._HEADER.fullmatch(text)
            raw = json.loads(text)["counters"]
            try:
                want = io_header._counters(raw, "f")
            except SketchFormatError:
                want = None
            if match is None:  # the pattern leaves it to the general path
                assert len(token) > 19 or want is None or not re.fullmatch(r"[0-9.eE+-]+", token)
                continue
            got = fold_files._counters(match.groups())
            assert got == want, token
            if got is not None:
                assert list(got) == list(want) and all(type(got[k]) is type(want[k]) for k in got)


_EDGES = [0.0, -0.0, 2.0**-52, 2.0**-53, 5e-324, 1e-300, 1e-17, 1e-9, 0.25, 0.5, 0.5 - 2**-54, 0.5 + 2**-53,
          1.0 - 2**-52, 1.0 - 2**-53, 1.0, 1.0 + 2**-52, -1e-300, 2.0, -3.5, 1e300]


@pytest.mark.parametrize("seed", range(6))
def test_version_4_log_loss_sums_by_products_stay_within_the_exact_bounds_budget(seed):
    """The decoder's log-loss bounds (unit cells by running products) against
    ``io_checks._probability_bounds`` (``log1p`` per cell): within the budget inside which
    ``_check_probability_sums`` decides with the exact bounds (3e-15 per unit of touching weight
    beyond the decoder's 1e-15 widening, plus 1e-8 relative), and far inside it."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6000))
    scores = np.concatenate([rng.choice(_EDGES, n // 3), rng.random(n - n // 3) ** float(rng.choice([1, 8, 40]))])
    if seed % 2:
        scores = 1.0 - scores  # near 1 from below: -log(1 - s) at its largest
    y = (rng.random(scores.size) < 0.5).astype(int)
    grid = ProbabilityGrid()
    data = BinarySketch(grid).update(y, scores).to_bytes(format_version=4)
    _, _, off, end = io.frame(memoryview(data), "f")
    k = json.loads(data[16:off])["n_bins"]
    keys, values, summary = decode_columnar(memoryview(data)[off + 8:end], k, grid, False, "f")
    exact = _probability_bounds(np.ascontiguousarray(values))
    w_touch = summary.w_touch
    for got, want in ((summary.bounds[2], exact[2]), (summary.bounds[3], exact[3])):
        # the decoder widens by 1e-15 per unit weight; the rest (products, logs, the order of the
        # additions) must stay far inside what the exact re-decision covers
        assert abs(got - want) <= 1.3e-15 * w_touch + 1e-12 * abs(want) + 1e-300
    assert summary.bounds[2] <= exact[2] + 1e-12 * exact[2] and summary.bounds[3] >= exact[3] - 1e-12 * exact[3]


def test_a_log_loss_counter_at_the_edge_of_its_range_gets_the_load_verdict(tmp_path):
    """Counters moved just inside and just outside the range the bins allow: the lean merge and
    the load agree, file by file."""
    rng = np.random.default_rng(7)
    scores = np.concatenate([rng.random(500), np.full(50, 2.0**-52), np.full(50, 1 - 2.0**-52)])
    y = (rng.random(scores.size) < 0.4).astype(int)
    sk = BinarySketch(GRID).update(y, scores)
    data = sk.to_bytes(format_version=4)
    _, flags, header, stored = _split(data)
    lo, hi = _probability_bounds(np.ascontiguousarray(sk._compact()[1]))[2:]
    pw = header["counters"]["prob_weight"]
    lo_edge = lo - (REL_TOL * hi + 1e-9 * pw)  # io_checks._within's accepted range
    hi_edge = (hi + 1e-9 * pw) / (1 - REL_TOL)
    near = []
    for edge in (lo_edge, hi_edge):
        near += [edge, math.nextafter(edge, 0), math.nextafter(edge, math.inf), edge * (1 - 1e-12), edge * (1 + 1e-12),
                 edge * (1 - 1e-9), edge * (1 + 1e-9)]
    paths = []
    for i, value in enumerate([lo, hi, *near]):
        header["counters"]["log_loss_sum"] = value
        p = tmp_path / f"e{i}.sevsk"
        p.write_bytes(_pack(json.dumps(header, sort_keys=True, separators=(",", ":")).encode(), stored, 4, flags))
        paths.append(p)
    for p in paths:
        assert _merge([paths[0], p], 1) == _reference([paths[0], p]), p.name
    refused = [isinstance(_reference([p])[0], str) for p in paths]
    assert any(refused) and not all(refused)


def _batch(datas: list[bytes], grid):
    """The shards of ``datas`` prepared in one batch buffer, folded: ``(shards, sums, counts)``."""
    folder = fold_files.LeanFolder()
    merger = Merger(BinarySketch(grid))
    buf = np.zeros(sum(len(d) for d in datas) + 64, dtype=np.uint8)
    shards, at = [], 64
    for d in datas:
        buf[at:at + len(d)] = np.frombuffer(d, dtype=np.uint8)
        shard = folder.prepare(buf.data[at:at + len(d)], "f", merger, None, at)
        assert shard is not None
        shards.append(shard)
        at += len(d)
    done, sums, counts = fold_files.fold_batch(buf, shards, merger.dense)
    assert done == len(shards)
    return shards, sums, counts


def test_the_batch_counter_check_passes_only_shards_the_full_check_passes():
    """Counters edited around every rule's edge: where the batch check says a shard passes, the
    full check (``Shard.check``) passes it with the same totals; and it decides the common case."""
    rng = np.random.default_rng(8)
    scores = np.concatenate([rng.random(700), [-0.5, 1.5, 2.0**-52, 1 - 2.0**-52]])
    y = (rng.random(scores.size) < 0.4).astype(int)
    sk = BinarySketch(GRID).update(y, scores)
    data = sk.to_bytes(format_version=4)
    _, flags, header, stored = _split(data)
    c = header["counters"]
    _, values = sk._compact()
    b_lo, b_hi, l_lo, l_hi = _probability_bounds(np.ascontiguousarray(values))
    pw = c["prob_weight"]
    edits: list[dict] = [{}]
    for name in ("n_rows", "n_nan", "n_outside", "n_zero_weight"):
        edits += [{name: c[name] + d} for d in (-1, 1) if c[name] + d >= 0]
    edits += [{"prob_weight": v} for v in (pw - 1, pw + 1, pw + 0.5, math.nextafter(pw, 0), math.nextafter(pw, math.inf))]
    edits += [{"n_rows": 2**53 + k, "prob_weight": float(2**53 + k - 4)} for k in (-1, 0, 1)]
    edits += [{"weighted": True}]
    for name, lo, hi in (("brier_sum", b_lo, b_hi), ("log_loss_sum", l_lo, l_hi)):
        lo_edge, hi_edge = lo - (REL_TOL * hi + 1e-9 * pw), (hi + 1e-9 * pw) / (1 - REL_TOL)
        for edge in (lo_edge, hi_edge, lo, hi):
            edits += [{name: v} for v in (edge, math.nextafter(edge, 0), math.nextafter(edge, math.inf), edge * (1 - 1e-7),
                                          edge * (1 + 1e-7), edge * (1 - 1e-3), edge * (1 + 1e-3)) if v >= 0]
    edits += [{"brier_sum": pw * (1 + REL_TOL) * k} for k in (0.999, 1.0, 1.001)]
    datas = []
    for edit in edits:
        h = json.loads(json.dumps(header))
        h["counters"].update(edit)
        if h["counters"].get("weighted") is True:
            h["weight_sq"] = [1.0, 1.0]
        datas.append(_pack(json.dumps(h, sort_keys=True, separators=(",", ":")).encode(), stored, 4, flags))
    shards, sums, counts = _batch(datas, GRID)
    sure = fold_files.surely_consistent(shards, sums, counts)
    passed = []
    for j, shard in enumerate(shards):
        try:
            totals = shard.check(sums[j].tolist(), counts[j].tolist())
        except SketchFormatError:
            passed.append(False)
            assert not sure[j], edits[j]
            continue
        passed.append(True)
        if sure[j]:
            assert totals == (sums[j][0], sums[j][1])
    assert sure[0] and passed[0]  # the file as written: decided by the batch check
    assert sum(sure) >= 5 and sum(passed) > sum(sure)  # and the full check still decides the edges
    assert not all(passed)
    assert sum(sure) < sum(passed) < len(shards)


needs_reader = pytest.mark.skipif(fileread.FUNCTIONS is None, reason="the compiled batch read is Linux x86-64 only")


@needs_reader
def test_the_compiled_batch_read_takes_exactly_the_frames_framed_takes(tmp_path):
    data = _shard(4)
    datas = [data, _shard(3), _shard(4, compress=True), *_variants(data)]
    paths = []
    for n, d in enumerate(datas):
        p = tmp_path / f"v{n:03d}-é.sevsk"  # a name beyond ASCII, as the file system encodes it
        p.write_bytes(d)
        paths.append(str(p))
    paths += [str(tmp_path), str(tmp_path / "missing"), str(tmp_path / "nul\0name")]
    folder = fold_files.LeanFolder()
    reader = fold_files.BatchReader.create(paths)
    assert reader is not None
    buf = np.zeros(len(paths) * (len(data) + 10) + fold_files.READ_MAX + 1, dtype=np.uint8)
    k, taken = reader.read(0, buf, 64, folder, len(paths), 1 << 40)
    assert k == len(paths)
    for j, d in enumerate(datas):
        want = folder.framed(memoryview(d))
        if want is None:
            assert j not in taken
            continue
        start, size, framed = taken[j]
        assert framed == want and size == len(d) and bytes(buf[start:start + size]) == d
    assert 0 in taken and 1 in taken and 2 in taken
    assert all(j < len(datas) for j in taken)


@needs_reader
def test_the_compiled_batch_read_stops_at_its_byte_budget_and_the_room(tmp_path):
    data = _shard(4)
    paths = []
    for n in range(6):
        p = tmp_path / f"s{n}.sevsk"
        p.write_bytes(data)
        paths.append(str(p))
    folder = fold_files.LeanFolder()
    reader = fold_files.BatchReader.create(paths)
    buf = np.zeros(3 * len(data) + 64, dtype=np.uint8)
    k, taken = reader.read(1, buf, 64, folder, 10, 2 * len(data))  # files 1 and 2 reach the budget
    assert k == 3 and sorted(taken) == [1, 2]
    k, taken = reader.read(0, buf, 64, folder, 10, 1 << 40)  # room for 2 whole files and a byte
    assert k == 6 and sorted(taken) == [0, 1]
    k, taken = reader.read(4, buf, 64, folder, 1, 1 << 40)
    assert k == 5 and sorted(taken) == [4]


@needs_reader
def test_the_compiled_batch_read_does_not_open_a_named_pipe(tmp_path):
    fifo = tmp_path / "pipe.sevsk"
    os.mkfifo(fifo)
    got: list[object] = []
    reader = fold_files.BatchReader.create([str(fifo)])
    t = threading.Thread(target=lambda: got.append(reader.read(0, np.zeros(100, dtype=np.uint8), 0, fold_files.LeanFolder(), 1, 10)),
                         daemon=True)
    t.start()
    t.join(10)
    assert got == [(1, {})]


@needs_reader
@pytest.mark.parametrize(("files", "nbytes"), [(100, 1 << 40), (5, 1 << 40), (100, 3000), (100, 1)])
def test_the_compiled_stat_gives_the_sizes_os_stat_gives(tmp_path, monkeypatch, files, nbytes):
    """``stat_sizes`` against the Python loop it replaces (``os.stat``): regular files at both size
    limits, a folder, a named pipe (not opened), symbolic links (to a file, to a folder, broken), a
    missing file, a name with a NUL byte, and the batch's file and byte budgets."""
    assert fileread.FUNCTIONS is not None and fileread.FUNCTIONS[4] != 0  # glibc >= 2.33 on x86-64
    paths = []
    for n, size in enumerate((0, 27, 28, 1000, fold_files.READ_MAX, fold_files.READ_MAX + 1, 2000)):
        p = tmp_path / f"f{n}-é.sevsk"
        p.write_bytes(b"x" * size)
        paths.append(str(p))
    os.mkfifo(tmp_path / "pipe")
    os.symlink(paths[3], tmp_path / "to-file")
    os.symlink(tmp_path, tmp_path / "to-dir")
    os.symlink(tmp_path / "nowhere", tmp_path / "broken")
    paths[3:3] = [str(tmp_path / name) for name in ("pipe", "to-file", "to-dir", "broken", "missing")]
    paths += [str(tmp_path), str(tmp_path / "nul\0name"), paths[2]]
    folder = fold_files.LeanFolder()
    reader = fold_files.BatchReader.create(paths)
    buf = np.zeros(20 * fold_files.READ_MAX, dtype=np.uint8)
    asked: list[list[int]] = []  # the sizes read_frames is given
    read = fileread.read_frames
    monkeypatch.setattr(fileread, "read_frames", lambda fns, names, offs, sizes, *rest: (asked.append(sizes.tolist()),
                                                                                         read(fns, names, offs, sizes, *rest))[1])
    got = [(reader.read_rows(k, buf, 64, folder, files, nbytes)[0], asked.pop()) for k in range(len(paths))]
    functions = reader._functions
    reader._functions = functions.copy()
    reader._functions[4] = 0  # the Python loop
    want = [(reader.read_rows(k, buf, 64, folder, files, nbytes)[0], asked.pop()) for k in range(len(paths))]
    assert got == want
    sizes = np.empty(len(paths), dtype=np.int64)
    n = fileread.stat_sizes(functions, reader._names, reader._offs, reader._plain, sizes, len(paths), 1 << 40, 28,
                            fold_files.READ_MAX)
    assert n == len(paths)
    expect = []
    for path in paths:
        try:
            st = os.stat(path)
            ok = stat.S_ISREG(st.st_mode) and 28 <= st.st_size <= fold_files.READ_MAX
            expect.append(st.st_size if ok else -1)
        except (OSError, ValueError):
            expect.append(-1)
    assert sizes.tolist() == expect
    assert sorted(set(expect)) == [-1, 28, 1000, 2000, fold_files.READ_MAX]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("reader", [True, False])
def test_merge_files_with_and_without_the_compiled_read(tmp_path, monkeypatch, threads, reader):
    if reader and fileread.FUNCTIONS is None:
        pytest.skip("the compiled batch read is Linux x86-64 only")
    if not reader:
        monkeypatch.setattr(fileread, "FUNCTIONS", None)
    monkeypatch.setattr(fold_files, "BATCH_FILES", 3)
    paths = []
    for i in range(11):
        p = tmp_path / f"m{i:02d}.sevsk"
        p.write_bytes(_shard(4 if i % 2 else 3, compress=i == 5, seed=i) if i != 8 else
                      BinarySketch(GRID).update([0, 1], [0.3, 0.6]).to_bytes(format_version=1))
        paths.append(p)
    got, want = _merge(paths, threads), _reference(paths)
    _assert_same(got[0], want[0], exact=threads == 1)
    assert got[1] == want[1]
    data = paths[6].read_bytes()
    paths[6].write_bytes(data[:-4] + bytes(4))  # a bad CRC among them
    assert _merge(paths, threads) == _reference(paths)
