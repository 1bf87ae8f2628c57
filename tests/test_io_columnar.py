"""Sketch format version 4 (columnar bins): exact round trips, the documented layout, every refusal,
folding while decoding, and the golden files.

The layout is checked against ``sketch_layout.encode_columnar_payload``, a plain-Python reading of
docs/sketch-format.md §4.2 written apart from the encoder (NumPy) and the decoder (compiled).
"""

from __future__ import annotations

import importlib.util
import json
import math
import pathlib
import struct
import sys
import zlib

import numpy as np
import pytest
import sketch_layout
import test_io_compact
from test_io_compact import split

import streameval
from streameval import BinarySketch, FloatGrid, LinearGrid, ProbabilityGrid, SketchFormatError
from streameval.grid import CutGrid
from streameval.kernels import binary as kernels
from streameval.sketch import io
from streameval.sketch.files import merge_files

MAGIC = b"\x89SEVSK\r\n"
GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"


def pack(header: dict, payload: bytes, version: int = 4, flags: int = 0) -> bytes:
    return test_io_compact.pack(header, payload, version, flags)


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def sketches() -> list[BinarySketch]:
    """Every cell form, every grid kind, weights, -0.0, both classes alone and together."""
    rng = np.random.default_rng(4)
    out = []
    for trial in range(24):
        n = int(rng.integers(1, 2500))
        y = rng.integers(0, 2, n)
        if trial % 7 == 3:
            y[:] = 1  # one class only
        s = rng.random(n)
        if trial % 3 == 0:
            s = s.astype(np.float32)
        if trial % 4 == 1:
            s = np.round(s, 2)  # discrete: many rows per score
        w = rng.random(n) * 3 if trial % 5 == 2 else None
        grid = [ProbabilityGrid(), LinearGrid(0, 1, 300), FloatGrid(4, -8, 8), CutGrid(ProbabilityGrid(6, -20), [0.5, 0.8])][trial % 4]
        out.append(BinarySketch(grid).update(y, s, w))
    out.append(BinarySketch())
    out.append(BinarySketch().update(np.array([0, 0, 1, 1]), np.array([-0.0, 0.0, -0.0, 1.0])))
    ten = BinarySketch().update(np.ones(10, dtype=np.int8), np.full(10, 0.1))  # sum != 10 x 0.1
    out.append(ten)
    return out


@pytest.mark.parametrize("index", range(27))
def test_round_trip_equals_version_3(index):
    sk = sketches()[index]
    v4 = sk.to_bytes(format_version=4)
    version, flags, header, payload = split(v4)
    assert version == 4 and flags == 0
    keys, values = sk._compact()
    assert payload == sketch_layout.encode_columnar_payload(keys, values)
    a = BinarySketch.from_bytes(v4)
    b = BinarySketch.from_bytes(sk.to_bytes())  # version 3
    for x in (a, b):
        k, v = x._compact()
        assert np.array_equal(k, keys) and np.array_equal(bits(v), bits(values))
    assert a.counters == b.counters == sk.counters
    assert BinarySketch.from_bytes(sk.to_bytes(format_version=4, compress=True))._compact()[0].tolist() == keys.tolist()


@pytest.mark.parametrize("index", range(27))
def test_fold_equals_decode_then_merge(index):
    sk = sketches()[index]
    base = BinarySketch(sk.grid).update(np.array([0, 1, 1]), np.array([0.25, 0.5, 0.75]))
    want = kernels.empty_state(sk.grid.n_bins)
    kernels.merge_into(want, *base._compact())
    got = want.copy()
    kernels.merge_into(want, *sk._compact())
    parts = io.decode(sk.to_bytes(format_version=4), "x", fold_into=(sk.grid, got))
    assert parts.folded and parts.keys.size == 0
    assert np.array_equal(bits(got), bits(want))
    totals = sk._compact()[1][:, :, 0].sum(axis=0)
    assert parts.class_totals == pytest.approx(tuple(totals), rel=1e-12)


def test_merge_files_mixed_versions(tmp_path):
    rng = np.random.default_rng(9)
    shards = [BinarySketch().update(rng.integers(0, 2, 800), rng.random(800).astype(np.float32)) for _ in range(12)]
    for i, s in enumerate(shards):
        s.save(tmp_path / f"s{i:02d}.sevsk", format_version=[4, 3, 1][i % 3])
    want = streameval.merge(shards)
    for threads in (1, 2):
        got = merge_files([tmp_path], threads=threads)
        kw, vw = want._compact()
        kg, vg = got._compact()
        assert np.array_equal(kw, kg)
        assert np.array_equal(vw[:, :, [0, 1, 2]], vg[:, :, [0, 1, 2]])  # counts, min, max exactly
        np.testing.assert_allclose(vg[:, :, 3], vw[:, :, 3], rtol=1e-12)  # sums up to their order
        assert got.counters["n_rows"] == 12 * 800
        assert got.roc_auc() == pytest.approx(want.roc_auc(), abs=1e-15)


# -- refusals, crafted byte by byte ----------------------------------------------------------------


def _base() -> tuple[dict, bytes, BinarySketch]:
    sk = BinarySketch(ProbabilityGrid(4, -12)).update(np.array([0, 1, 1, 0, 1]), np.array([0.1, 0.2, 0.7, 0.7, 0.9], dtype=np.float32))
    _, _, header, payload = split(sk.to_bytes(format_version=4))
    return header, payload, sk


def _lengths(payload: bytes) -> list[int]:
    return list(struct.unpack_from("<6I", payload, 0))


def _both(data: bytes, match: str) -> None:
    """Refused with ``match`` by load and by the folding path alike."""
    with pytest.raises(SketchFormatError, match=match):
        BinarySketch.from_bytes(data)
    grid = ProbabilityGrid(4, -12)
    with pytest.raises(SketchFormatError, match=match):
        io.decode(data, "x", fold_into=(grid, kernels.empty_state(grid.n_bins)))


def test_refuses_wrong_lengths():
    header, payload, _ = _base()
    _both(pack(header, payload[:-1]), "its list lengths need")
    _both(pack(header, payload + b"\0"), "its list lengths need")
    _both(pack(header, payload[:10]), "less than the 24")


def test_refuses_too_many_cells():
    header, payload, _ = _base()
    header["n_bins"] = 1
    _both(pack(header, payload), "more cells than 1 bins")


def test_refuses_keys_out_of_order_outside_grid_and_repeated():
    header, payload, sk = _base()
    m = _lengths(payload)
    assert m[0] >= 2  # class 0's U32 list holds 0.1 and 0.7
    keys = struct.unpack_from(f"<{m[0]}I", payload, 24)
    swapped = bytearray(payload)
    struct.pack_into("<2I", swapped, 24, keys[1], keys[0])
    _both(pack(header, bytes(swapped)), "class 0's U32 cell 1 repeats or precedes")
    beyond = bytearray(payload)
    struct.pack_into("<I", beyond, 24 + 4 * (m[0] - 1), sk.grid.n_bins)
    _both(pack(header, bytes(beyond)), "beyond the grid")


def test_refuses_a_cell_in_two_lists_and_a_wrong_bin_count():
    grid = ProbabilityGrid(4, -12)
    key = int(grid.bin_index(np.array([0.5]))[0])
    header = {"sketch": "binary", "grid": grid.spec(), "n_bins": 1, "meta": {},
              "counters": {"n_rows": 2, "n_nan": 0, "n_zero_weight": 0, "n_outside": 0, "prob_weight": 2.0,
                           "brier_sum": 0.5, "log_loss_sum": 2 * math.log(2), "weighted": False}}
    two = struct.pack("<6I", 1, 1, 0, 0, 0, 0) + struct.pack("<I", key) + struct.pack("<f", 0.5)
    two += struct.pack("<I", key) + struct.pack("<d", 0.5)
    _both(pack(header, two), "class 0's U64 cell 0's key is in another list of the same class")
    one = struct.pack("<6I", 1, 0, 0, 0, 0, 0) + struct.pack("<I", key) + struct.pack("<f", 0.5)
    header["n_bins"] = 2
    header["counters"].update(n_rows=1, prob_weight=1.0, brier_sum=0.25, log_loss_sum=math.log(2))
    _both(pack(header, one), "another number of distinct bins than n_bins=2")


def test_refuses_the_empty_cell_stored_and_values_that_break_the_rules():
    grid = ProbabilityGrid(4, -12)
    key = int(grid.bin_index(np.array([0.5]))[0])
    header = {"sketch": "binary", "grid": grid.spec(), "n_bins": 1, "meta": {},
              "counters": {"n_rows": 1, "n_nan": 0, "n_zero_weight": 0, "n_outside": 0, "prob_weight": 1.0,
                           "brier_sum": 0.25, "log_loss_sum": math.log(2), "weighted": False}}
    gen = struct.pack("<6I", 1, 0, 1, 0, 0, 0) + struct.pack("<I", key) + struct.pack("<f", 0.5)
    gen += struct.pack("<I", key + 1) + struct.pack("<4d", 0.0, math.inf, -math.inf, 0.0)
    header["n_bins"] = 2
    _both(pack(header, gen), "class 0's GEN cell 0 holds the empty cell")
    header["n_bins"] = 1
    for score, match in ((math.nan, "NaN|nan"), (0.9, "outside its bin|not in|bin")):
        bad = struct.pack("<6I", 1, 0, 0, 0, 0, 0) + struct.pack("<I", key) + struct.pack("<f", score)
        _both(pack(header, bad), match)
    sums = struct.pack("<6I", 0, 0, 1, 0, 0, 0) + struct.pack("<I", key) + struct.pack("<4d", 2.0, 0.5, 0.5, 3.0)
    header["counters"].update(n_rows=2, prob_weight=2.0, brier_sum=0.5, log_loss_sum=2 * math.log(2))
    _both(pack(header, sums), "sum")


def test_mutations_get_one_verdict_from_both_paths():
    """Random byte changes of the payload (CRC fixed): load and the folding path accept or refuse
    alike, with the same message; what is accepted loads to in-range metrics."""
    rng = np.random.default_rng(11)
    sk = BinarySketch(ProbabilityGrid(6, -16)).update(rng.integers(0, 2, 300), rng.random(300))
    sk.update(rng.integers(0, 2, 50), np.round(rng.random(50), 1), rng.random(50) + 0.5)
    _, _, header, payload = split(sk.to_bytes(format_version=4))
    accepted = 0
    for trial in range(300):
        p = bytearray(payload)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, len(p)))
            p[i] = int(rng.integers(0, 256)) if trial % 2 else p[i] ^ (1 << int(rng.integers(0, 8)))
        data = pack(header, bytes(p))
        verdicts = []
        try:
            got = BinarySketch.from_bytes(data)
            verdicts.append("ok")
        except SketchFormatError as exc:
            verdicts.append(str(exc))
        try:
            io.decode(data, None, fold_into=(sk.grid, kernels.empty_state(sk.grid.n_bins)))
            verdicts.append("ok")
        except SketchFormatError as exc:
            verdicts.append(str(exc))
        assert verdicts[0] == verdicts[1], (trial, verdicts)
        if verdicts[0] == "ok":
            accepted += 1
            assert 0.0 <= got.roc_auc() <= 1.0 and got.log_loss() >= 0.0
    assert accepted < 300


# -- golden files --------------------------------------------------------------------------------


def _golden():
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["mixed", "mixed-zlib", "weighted", "float-inf"])
def test_golden_v4(name):
    """Never regenerate or edit ``tests/golden/binary-v4-*.sevsk`` (see test_io.test_golden_v1):
    each reads to the bins of its version-3 twin, bit for bit, and writes back to its bytes."""
    mod = _golden()
    data = mod.path_for(name, 4).read_bytes()
    version, flags, header, payload = split(data)
    assert version == 4 and bool(flags & 1) == (name == "mixed-zlib")
    decoded = streameval.load(mod.path_for(name, 4))
    twin = streameval.load(mod.path_for(name, 3))
    keys, values = twin._compact()
    dk, dv = decoded._compact()
    assert np.array_equal(dk, keys) and np.array_equal(bits(dv), bits(values))
    assert decoded.counters == twin.counters
    assert payload == sketch_layout.encode_columnar_payload(keys, values)
    forms = _lengths(payload)
    if name == "mixed":  # every list form appears
        assert forms[0] + forms[3] > 0 and forms[1] + forms[4] > 0 and forms[2] + forms[5] > 0
    again = split(decoded.to_bytes(compress=bool(flags & 1), format_version=4))
    header.get("meta", {}).pop("created_by", None)
    again[2].get("meta", {}).pop("created_by", None)
    assert again == (version, flags, header, payload)


# -- no read past the end ---------------------------------------------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through libc: Linux only")
@pytest.mark.parametrize("sketches", [pytest.param(200, marks=pytest.mark.slow)])  # a child process: slow suite only
def test_decoder_never_reads_past_the_payload(sketches):
    """Version 4 under test_io_compact_review's guard page: truncated and corrupted payloads end
    where a PROT_NONE page begins, so any read past the end kills the child with SIGSEGV."""
    import subprocess

    from test_io_compact_review import _GUARDED

    script = (_GUARDED.replace("from streameval.sketch.io_compact import decode_compact",
                               "from streameval.sketch.io_columnar import decode_columnar as decode_compact")
              .replace("sk.to_bytes(compress=False)", "sk.to_bytes(compress=False, format_version=4)"))
    assert script.count("format_version=4") == 1 and "io_columnar" in script
    tests = str(pathlib.Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", script, tests, "6", str(sketches)], capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    done, refused = (int(x) for x in out.stdout.split()[1:])
    assert done == 30 * sketches and 0 < refused <= done


# -- list lengths and keys are uint32 ---------------------------------------------------------------


def _one_bin_header() -> dict:
    grid = ProbabilityGrid(4, -12)
    return {"sketch": "binary", "grid": grid.spec(), "n_bins": 1, "meta": {},
            "counters": {"n_rows": 1, "n_nan": 0, "n_zero_weight": 0, "n_outside": 0, "prob_weight": 1.0,
                         "brier_sum": 0.25, "log_loss_sum": math.log(2), "weighted": False}}


def test_list_lengths_and_keys_of_2_31_or_more_are_unsigned():
    """Read as int32, a list length of 2**32 - 1 counted -1 cells: the lengths' total matched a
    24-byte payload declaring one GEN cell (read 36 bytes past the end) and -1 more, and a key of
    2**31 or more was 'repeats or precedes the previous key' instead of beyond the grid."""
    header = _one_bin_header()
    for lengths in ((0, 0, 1, 0, 0, 2**32 - 1), (2**31, 0, 0, 0, 0, 0), (2**32 - 1,) * 6, (0, 0, 0, 2**31 + 5, 0, 0)):
        need = 24 + sum(m * size for m, size in zip(lengths, (8, 12, 36) * 2, strict=True))
        _both(pack(header, struct.pack("<6I", *lengths)), f"the payload holds 24 bytes, its list lengths need {need}$")
    for key in (2**31, 2**32 - 1):
        cell = struct.pack("<6I", 1, 0, 0, 0, 0, 0) + struct.pack("<I", key) + struct.pack("<f", 0.5)
        _both(pack(header, cell), f"class 0's U32 cell 0's key is beyond the grid \\(size {ProbabilityGrid(4, -12).n_bins}")


_GUARDED_LENGTHS = r'''
import ctypes, mmap, struct, sys
import numpy as np
from streameval import ProbabilityGrid
from streameval.errors import SketchFormatError
from streameval.sketch.io_columnar import decode_columnar

PAGE = mmap.PAGESIZE
mm = mmap.mmap(-1, 3 * PAGE)
base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
assert ctypes.CDLL(None).mprotect(ctypes.c_void_p(base + 2 * PAGE), PAGE, 0) == 0  # PROT_NONE
arena = np.frombuffer(mm, dtype=np.uint8, count=2 * PAGE)
grid = ProbabilityGrid(4, -12)
# lengths whose int32 reading adds up to the payload's length: a list past the end, or 2**34 bytes before it
cases = [(struct.pack("<6I", 0, 0, 1, 0, 0, 2**32 - 1), 1),
         (struct.pack("<6I", 2**31, 0, 477218589, 0, 0, 0) + bytes(20), 1)]
refused = 0
for payload, k in cases:
    view = arena[2 * PAGE - len(payload):]
    view[:] = np.frombuffer(payload, dtype=np.uint8)
    try:
        decode_columnar(memoryview(view), k, grid, False, None)
    except SketchFormatError:
        refused += 1
print("ok", refused)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through libc: Linux only")
@pytest.mark.slow  # a child process under guard pages, ~15 s (the slow suite runs in CI too)
def test_lengths_read_as_negative_never_move_a_list_outside_the_payload():
    import subprocess

    out = subprocess.run([sys.executable, "-c", _GUARDED_LENGTHS], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.split() == ["ok", "2"]


def test_scores_beyond_float32_encode_without_a_warning():
    """A float64 score beyond float32's range (1e300) made the writer's float32 test warn
    'overflow encountered in cast'; such a cell is a U64 unit cell."""
    import warnings

    sk = BinarySketch(FloatGrid(2, -1022, 1023)).update([0, 1, 1], [1e300, -1e300, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = sk.to_bytes(format_version=4)
    payload = split(data)[3]
    assert _lengths(payload) == [0, 1, 0, 1, 1, 0]
    assert BinarySketch.from_bytes(data) == sk


def test_format_version_must_be_an_integer():
    """``format_version=4.0`` passed the membership test (4.0 == 4) and failed in struct.pack with
    struct.error; ``True`` (== 1) wrote version 1."""
    sk = BinarySketch().update([0, 1], [0.25, 0.75])
    for bad in (4.0, 3.0, True, "4"):
        with pytest.raises(ValueError, match="format_version must be"):
            sk.to_bytes(format_version=bad)
    assert split(sk.to_bytes(format_version=np.int64(4)))[0] == 4


# -- test_fuzz's mutations, written as version 1 and as version 4 ---------------------------------


def _fold_verdict(data: bytes) -> bool | str:
    hlen = struct.unpack_from("<I", data, 12)[0]
    try:
        grid = io._cached_grid(json.loads(data[16:16 + hlen])["grid"], None)
    except Exception:  # noqa: BLE001 - a header the reader refuses before it needs a grid
        grid = ProbabilityGrid()
    try:
        io.decode(data, None, fold_into=(grid, kernels.empty_state(grid.n_bins)))
    except SketchFormatError as exc:
        return str(exc)
    return True


def test_fuzzed_bins_and_headers_get_the_version_1_verdict_on_both_paths():
    """test_fuzz's header and cell mutations (counters, labels, grids, NaN/inf/-0.0 cells, keys,
    duplicate JSON keys, flags, bytes after the zlib stream) applied to its bases, then written in
    both layouts: version 4 is accepted exactly when version 1 is, load and fold refuse with one
    message, and what is accepted is the version-1 sketch with in-range metrics."""
    import warnings

    import test_fuzz

    rng = np.random.default_rng(44)
    bases = [b for b in test_fuzz.BASES if struct.unpack_from("<H", b, 8)[0] == 1]
    seen = {True: 0, False: 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(600):
            _, flags, h, d, v = test_fuzz._split(bases[i % len(bases)])
            raw_header, extra = None, b""
            for _ in range(int(rng.integers(1, 4))):
                r = rng.random()
                if r < 0.45:
                    test_fuzz._mutate_header(rng, h)
                elif r < 0.9:
                    d, v = test_fuzz._mutate_values(rng, d, v)
                    h["n_bins"] = int(v.shape[0])
                elif r < 0.95:
                    flags ^= 1
                elif r < 0.98:
                    extra = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
                else:
                    raw_header = json.dumps(h, sort_keys=True).replace('"n_bins"', '"n_bins":0,"n_bins"', 1).encode()
            keys = np.cumsum(np.asarray(d, dtype=np.int64) % (1 << 32))
            if h.get("n_bins") != v.shape[0] or (keys.size and keys[-1] >= 1 << 32):
                continue  # no version-4 file holds the same bins
            v1 = test_fuzz._pack(1, flags, h, d, v, raw_header, extra)
            payload = sketch_layout.encode_columnar_payload(keys, np.asarray(v, dtype=np.float64), general=bool(i % 2))
            if flags & 1:
                payload = zlib.compress(payload) + extra
            hbytes = raw_header if raw_header is not None else json.dumps(h, sort_keys=True).encode()
            body = struct.pack("<8sHHI", MAGIC, 4, flags, len(hbytes)) + hbytes + struct.pack("<Q", len(payload)) + payload
            v4 = body + struct.pack("<I", zlib.crc32(body))
            try:
                want: BinarySketch | None = BinarySketch.from_bytes(v1)
            except SketchFormatError:
                want = None
            try:
                got: BinarySketch | str = BinarySketch.from_bytes(v4)
            except SketchFormatError as exc:
                got = str(exc)
            assert (want is None) == isinstance(got, str), (i, got)
            assert _fold_verdict(v4) == (True if want is not None else got), i
            seen[want is not None] += 1
            if want is not None:
                assert got == want
                try:
                    test_fuzz.check_metrics(got)
                except streameval.errors.StreamevalError:
                    pass  # a metric undefined for this sketch, documented as such
    assert seen[True] > 20 and seen[False] > 200, seen


@pytest.mark.parametrize("grid", [LinearGrid(0.0, 1.0, 1), FloatGrid(0, 0, 1)], ids=["linear-3-bins", "float-2-bins"])
def test_the_smallest_grids_fill_their_last_bin(grid):
    """Every bin of a 2- or 3-bin grid occupied (the last key is n_bins - 1, the bitmap's one word
    partly used): loaded and folded as version 3 is; one key more is beyond the grid."""
    sk = BinarySketch(grid).update([0, 1, 1, 0], [-5.0, 0.5, 7.0, 1e300])
    keys, values = sk._compact()
    assert keys.tolist() == list(range(grid.n_bins))
    data = sk.to_bytes(format_version=4)
    back = BinarySketch.from_bytes(data)
    assert np.array_equal(back._compact()[0], keys) and np.array_equal(bits(back._compact()[1]), bits(values))
    state = kernels.empty_state(grid.n_bins)
    io.decode(data, None, fold_into=(grid, state))
    want = kernels.empty_state(grid.n_bins)
    kernels.merge_into(want, keys, values)
    assert np.array_equal(bits(state), bits(want))
    _, _, header, payload = split(data)
    m = _lengths(payload)
    last = 24 + sum(n * size for n, size in zip(m, (8, 12, 36) * 2, strict=True))
    li = max(i for i in range(6) if m[i])  # the last non-empty list: its last key
    start = 24 + sum(n * size for n, size in zip(m[:li], (8, 12, 36) * 2, strict=False))
    bad = bytearray(payload)
    struct.pack_into("<I", bad, start + 4 * (m[li] - 1), grid.n_bins)
    assert last == len(payload)
    with pytest.raises(SketchFormatError, match="beyond the grid"):
        BinarySketch.from_bytes(pack(header, bytes(bad)))


def test_version_4_refuses_bootstrap_header_and_multiclass():
    """Version 4 holds binary sketches without replicates: a 'bootstrap' header and a multiclass
    file stamped version 4 are refused, by load and by the folding path."""
    header, payload, _ = _base()
    _both(pack(dict(header, bootstrap={"replicates": 2}), payload), "'bootstrap' needs format version 2, the file says 4")
    mc = streameval.MulticlassSketch(classes=[0, 1, 2]).update([0, 1, 2], np.eye(3)).to_bytes()
    body = bytearray(mc[:-4])
    struct.pack_into("<H", body, 8, 4)
    data = bytes(body) + struct.pack("<I", zlib.crc32(body))
    with pytest.raises(SketchFormatError, match="version 4 holds binary sketches only"):
        streameval.MulticlassSketch.from_bytes(data)
    _both(data, "version 4 holds binary sketches only")


# -- the two ways of checking keys distinct --------------------------------------------------------


def _decode_with(data: bytes, grid, bitmap_per_cell: int, fold: bool):
    """``codec4.decode4`` on a file's payload, forcing the grid bitmap (a huge ``bitmap_per_cell``)
    or the sorted walk (0): (status tuple, keys, values, state, sums, counts)."""
    from streameval.kernels import codec4
    from streameval.sketch.io_checks import REL_TOL

    _, _, header, payload = split(data)
    buf = np.frombuffer(payload, dtype=np.uint8)
    k = header["n_bins"]
    keys = np.full(0 if fold else k, -1, dtype=np.int64)
    values = np.zeros((0 if fold else k, 2, 4))
    state = kernels.empty_state(grid.n_bins) if fold else np.empty((0, 2, 4))
    sums, counts = np.zeros(8), np.zeros(4, dtype=np.int64)
    status = codec4.decode4(buf, k, grid.n_bins, *grid.kernel_params(), REL_TOL, keys, values, state, fold, sums, counts,
                            bitmap_per_cell)
    return tuple(int(x) for x in status), keys, values, state, sums, counts


@pytest.mark.slow  # ~14 s of mutated payloads (default suite time); CI runs the slow suite too
def test_bitmap_and_sorted_walk_agree_on_every_file():
    """Valid sketches and mutated payloads (keys moved, lengths changed): the grid bitmap and the
    sorted walk return the same status at the same cell, the same bins, sums and state."""
    rng = np.random.default_rng(21)
    grid = ProbabilityGrid()  # 5,216 words: the walk whenever bitmap_per_cell is 0
    cases = []
    for n in (1, 7, 300, 3000):
        y = rng.integers(0, 2, n)
        s = rng.random(n).astype(np.float64 if n == 300 else np.float32)
        sk = BinarySketch(grid).update(y, s)
        sk.update(y[: n // 3], s[: n // 3] * 0.5)  # general cells too
        cases.append(sk.to_bytes(format_version=4))
    header0 = split(cases[-1])[2]
    payload0 = split(cases[-1])[3]
    m = list(struct.unpack_from("<6I", payload0, 0))
    assert m[0] > 50 and m[2] > 0 and m[3] > 0
    key_bytes = [(24 + 4 * i) for i in range(min(m[0], 50))]
    u32 = np.frombuffer(payload0, dtype="<u4", count=m[0], offset=24).astype(np.int64)
    gen0 = np.frombuffer(payload0, dtype="<u4", count=m[2], offset=24 + 8 * m[0] + 12 * m[1]).astype(np.int64)
    first1 = 24 + 8 * m[0] + 12 * m[1] + 36 * m[2]  # class 1's first list's keys
    for trial in range(150):  # a key replaced by a random one, a positive cell's, or a GEN cell's in order
        p = bytearray(payload0)
        at = key_bytes[int(rng.integers(len(key_bytes)))]
        if trial % 3 == 0:
            struct.pack_into("<I", p, at, int(rng.integers(0, grid.n_bins + 5)))
        elif trial % 3 == 1:
            struct.pack_into("<I", p, at, struct.unpack_from("<I", payload0, first1 + 4 * int(rng.integers(0, min(m[3], 20))))[0])
        else:  # the same key in two lists of class 0, in order in both: a duplicate
            g = int(gen0[int(rng.integers(len(gen0)))])
            struct.pack_into("<I", p, 24 + 4 * int(np.searchsorted(u32, g)), g)
        header = dict(header0, n_bins=header0["n_bins"] + int(rng.integers(-2, 3)))
        cases.append(pack(header, bytes(p)))
    statuses = set()
    for data in cases:
        for fold in (False, True):
            a = _decode_with(data, grid, 1 << 40, fold)
            b = _decode_with(data, grid, 0, fold)
            assert a[0] == b[0]
            statuses.add(a[0][0])
            for x, y in zip(a[1:], b[1:], strict=True):
                assert np.array_equal(bits(x) if x.dtype.kind == "f" else x, bits(y) if y.dtype.kind == "f" else y)
    assert {0, 3, 5, 6} <= statuses  # OK, not increasing, duplicate, bin count all reached


def test_a_few_cells_on_a_large_grid_need_no_grid_sized_work(monkeypatch):
    """A 10-cell file on a 2**22-bin grid loads and folds without a grid-sized bitmap (the sorted
    walk), to the same bins as version 3."""
    grid = ProbabilityGrid(16, -60)
    assert grid.n_bins > 2**21
    monkeypatch.setenv("STREAMEVAL_MAX_GRID_BINS", str(1 << 23))
    sk = BinarySketch(grid).update([0, 1, 0, 1, 1, 0, 1, 0, 1, 1], [0.1, 0.2, 0.3, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    back = BinarySketch.from_bytes(sk.to_bytes(format_version=4))
    assert back == sk
    state = kernels.empty_state(grid.n_bins)
    io.decode(sk.to_bytes(format_version=4), None, fold_into=(grid, state))
    want = kernels.empty_state(grid.n_bins)
    kernels.merge_into(want, *sk._compact())
    assert np.array_equal(bits(state), bits(want))
