"""The sketch file format (docs/sketch-format.md): round trips, files, golden files, corruption.

Decoding must either return exactly the sketch that was written or raise SketchFormatError with a
message naming the cause; it must never return a different sketch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import struct
import zlib

import numpy as np
import pytest
import sketch_layout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streameval
from streameval import BinarySketch, FloatGrid, LinearGrid, ProbabilityGrid, SketchFormatError

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"

GRIDS = {
    "linear": LinearGrid(0.0, 1.0, 64),
    "linear_int": LinearGrid(300, 851, 551),
    "probability": ProbabilityGrid(mantissa_bits=6, min_exponent=-20),
    "probability_default": ProbabilityGrid(),
    "float": FloatGrid(mantissa_bits=4, min_exponent=-8, max_exponent=8),
}


def _scores(grid, rng, n):
    if isinstance(grid, LinearGrid):
        s = grid.lo + (grid.hi - grid.lo) * rng.random(n)
        s[:3] = [grid.lo - 1.0, grid.hi, grid.hi + 5.0]  # end bins and the closed right edge
        return s
    if isinstance(grid, FloatGrid):
        s = rng.normal(0, 20, n)
        s[:4] = [0.0, -1e300, 1e300, 1e-300]  # infinite scores are refused by update (scikit-learn's policy)
        return s
    s = rng.random(n) ** 3
    s[:5] = [0.0, 1.0, -0.5, 1.5, 1e-12]
    return s


def make(grid, n=200, seed=0, weighted=False, nan=False) -> BinarySketch:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int8)
    s = _scores(grid, rng, n)
    if nan:
        s[::7] = np.nan
    w = None
    if weighted:
        w = rng.exponential(1.0, n)
        w[::5] = 0.0
    return BinarySketch(grid).update(y, s, w, nan_policy="skip" if nan else "raise")


# -- byte layout helpers (independent of io.py: the documented layout) ---------------------------

MAGIC = b"\x89SEVSK\r\n"


def split(data: bytes) -> dict:
    """Decode the documented layout into its fields (payload decompressed)."""
    magic, version, flags, hlen = struct.unpack_from("<8sHHI", data, 0)
    header = data[16 : 16 + hlen]
    (plen,) = struct.unpack_from("<Q", data, 16 + hlen)
    payload = data[24 + hlen : 24 + hlen + plen]
    (crc,) = struct.unpack_from("<I", data, 24 + hlen + plen)
    assert len(data) == 28 + hlen + plen
    assert crc == zlib.crc32(data[: 24 + hlen + plen])
    if flags & 1:
        payload = zlib.decompress(payload)
    return {"magic": magic, "version": version, "flags": flags, "header": header, "payload": payload}


def pack(magic=MAGIC, version=1, flags=1, header=b"{}", payload=b"", compress=None) -> bytes:
    """Re-pack fields with a correct CRC; compresses the payload when flags bit 0 is set."""
    if isinstance(header, dict):
        header = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    if compress is None:
        compress = bool(flags & 1)
    if compress:
        payload = zlib.compress(payload, 6)
    body = struct.pack("<8sHHI", magic, version, flags, len(header)) + header
    body += struct.pack("<Q", len(payload)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


def unpack_payload(payload: bytes, k: int, version: int = 1) -> tuple[np.ndarray, np.ndarray]:
    if version == 3:
        keys, values = sketch_layout.decode_payload(payload, k)
        return np.diff(keys, prepend=np.int64(0)), values
    deltas = np.frombuffer(payload, dtype="<u4", count=k).copy()
    values = np.frombuffer(payload, dtype="<f8", offset=4 * k).reshape(k, 2, 4).copy()
    return deltas, values


def craft(data: bytes, header=None, deltas=None, values=None, **fields) -> bytes:
    """Modify a valid file's header dict / key deltas / values and re-pack it with a valid CRC."""
    f = split(data)
    h = json.loads(f["header"])
    k = h["n_bins"]
    d, v = unpack_payload(f["payload"], k, f["version"])
    if header is not None:
        header(h)
    if deltas is not None:
        deltas(d)
    if values is not None:
        values(v)
    if f["version"] == 3:  # every cell in the general form: valid, never what the writer picks
        payload = sketch_layout.encode_payload(np.cumsum(d.astype(np.int64)), v, general=True)
    else:
        payload = d.astype("<u4").tobytes() + v.astype("<f8").tobytes()
    args = {"version": f["version"], "flags": f["flags"], "header": h, "payload": payload}
    args.update(fields)
    return pack(**args)


def meta_free(data: bytes) -> tuple:
    """A file's content without meta.created_by (which names the writing version)."""
    f = split(data)
    h = json.loads(f["header"])
    h["meta"].pop("created_by")
    return f["version"], f["flags"], h, f["payload"]


def content(data: bytes) -> tuple:
    """A file's fields without the header's meta (labels and writer name)."""
    f = split(data)
    h = json.loads(f["header"])
    h.pop("meta")
    return f["version"], f["flags"], h, f["payload"]


@pytest.fixture(scope="module")
def small() -> bytes:
    return make(LinearGrid(0.0, 1.0, 8), n=12, seed=1).to_bytes()


@pytest.fixture(scope="module")
def small_v1() -> bytes:
    return make(LinearGrid(0.0, 1.0, 8), n=12, seed=1).to_bytes(format_version=1)


# -- round trips ---------------------------------------------------------------------------------


def assert_round_trip(s: BinarySketch, compress: bool) -> bytes:
    b = s.to_bytes(compress=compress)
    d = BinarySketch.from_bytes(b)
    assert d == s
    assert d.grid == s.grid and d.counters == s.counters
    k1, v1 = s._compact()
    k2, v2 = d._compact()
    assert k1.tobytes() == k2.tobytes() and v1.tobytes() == v2.tobytes()  # bit for bit
    assert d.roc_auc() == s.roc_auc()
    assert d.to_bytes(compress=compress) == b
    return b


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_round_trip(grid, weighted, compress):
    s = make(GRIDS[grid], weighted=weighted, nan=weighted)
    b = assert_round_trip(s, compress)
    assert split(b)["flags"] == (1 if compress else 0)
    if weighted:
        assert s.counters["weighted"] and s.counters["n_nan"] > 0 and s.counters["n_zero_weight"] > 0


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_empty_round_trip(grid, compress):
    s = BinarySketch(GRIDS[grid])
    b = s.to_bytes(compress=compress)
    d = BinarySketch.from_bytes(b)
    assert d == s and d.n_occupied_bins == 0
    assert d.to_bytes(compress=compress) == b
    assert json.loads(split(b)["header"])["n_bins"] == 0 and split(b)["payload"] == b""


def test_round_trip_after_merge_and_chunks():
    g = GRIDS["probability"]
    a, b = make(g, seed=1), make(g, seed=2, weighted=True)
    assert_round_trip(a.merge(b), True)
    assert BinarySketch.from_bytes(a.to_bytes()).merge(b) == a.merge(b)


def test_decoded_sketch_keeps_working():
    s = make(GRIDS["linear"], seed=3)
    d = BinarySketch.from_bytes(s.to_bytes())
    y, x = np.array([0, 1]), np.array([0.25, 0.75])
    assert d.update(y, x) == s.copy().update(y, x)


def test_compression_pays_and_uncompressed_layout():
    s = make(GRIDS["probability_default"], n=2000)
    raw, packed = s.to_bytes(compress=False, format_version=1), s.to_bytes(format_version=1)
    assert len(packed) < len(raw)
    f = split(raw)
    k = s.n_occupied_bins
    assert len(f["payload"]) == k * (4 + 64)
    deltas, values = unpack_payload(f["payload"], k)
    keys, vals = s._compact()
    assert np.array_equal(np.cumsum(deltas.astype(np.int64)), keys)
    assert np.array_equal(values, vals)  # (bin, class, field) order, little-endian float64


def test_encoding_is_deterministic():
    g = GRIDS["float"]
    assert make(g, seed=4).to_bytes() == make(g, seed=4).to_bytes()


@pytest.mark.parametrize("grid", ["linear", "probability", "float"])
def test_reencode_identical_bytes(grid):
    b = make(GRIDS[grid]).to_bytes()
    assert BinarySketch.from_bytes(b).to_bytes() == b


def test_pos_label_survives_round_trip():
    s = BinarySketch(pos_label="fraud").update(["fraud", "ok"], [0.9, 0.1])
    d = BinarySketch.from_bytes(s.to_bytes())
    assert d.pos_label == "fraud"
    d.update(["fraud", "ok"], [0.8, 0.2])  # must not need pos_label again


def test_numpy_pos_label_survives_round_trip():
    s = BinarySketch().update(np.array([2, 1, 2]), [0.1, 0.2, 0.3], pos_label=np.int64(2))
    d = BinarySketch.from_bytes(s.to_bytes())
    assert d.pos_label == 2
    d.update(np.array([2, 1]), [0.4, 0.5])
    assert d == s.update(np.array([2, 1]), [0.4, 0.5])


@pytest.mark.parametrize(
    "pos_label, labels, third", [("fraud", ["fraud", "ok"], "maybe"), (7, [7, 3], 5), (1.5, [1.5, 0.5], 2.5)]
)
def test_labels_survive_round_trip(pos_label, labels, third):
    s = BinarySketch(pos_label=pos_label).update(labels, [0.9, 0.1])
    d = BinarySketch.from_bytes(s.to_bytes())
    assert d.pos_label == pos_label
    d.update(labels[::-1], [0.2, 0.8])  # no pos_label needed again
    assert d == s.copy().update(labels[::-1], [0.2, 0.8])
    with pytest.raises(streameval.InputError, match="negative class changed"):
        d.update([labels[0], third], [0.5, 0.5])


def test_decoded_neg_label_still_checked():
    d = BinarySketch.from_bytes(BinarySketch().update([0, 1], [0.1, 0.9]).to_bytes())
    with pytest.raises(streameval.InputError, match="negative class changed"):
        d.update([-1, 1], [0.1, 0.9])


def test_reencode_identical_except_meta():
    for grid in GRIDS.values():
        b = make(grid, weighted=True, nan=True).to_bytes()
        assert content(BinarySketch.from_bytes(b).to_bytes()) == content(b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    grid=st.sampled_from([GRIDS["linear"], GRIDS["probability"], GRIDS["float"], LinearGrid(-3.5, 2.0, 5)]),
    rows=st.lists(
        st.tuples(
            st.booleans(),
            st.floats(allow_nan=True, allow_infinity=False, width=64),
            st.one_of(st.none(), st.floats(0.0, 1e6)),
        ),
        max_size=40,
    ),
    chunks=st.integers(1, 3),
    compress=st.booleans(),
)
def test_random_sketches_round_trip(grid, rows, chunks, compress):
    s = BinarySketch(grid)
    weighted = any(w is not None for _, _, w in rows)
    y = np.array([r[0] for r in rows], dtype=bool)
    x = np.array([r[1] for r in rows], dtype=np.float64)
    w = np.array([1.0 if r[2] is None else r[2] for r in rows]) if weighted else None
    for part in np.array_split(np.arange(len(rows)), chunks):
        s.update(y[part], x[part], None if w is None else w[part], nan_policy="skip")
    b = s.to_bytes(compress=compress)
    d = BinarySketch.from_bytes(b)
    assert d == s
    assert d._compact()[1].tobytes() == s._compact()[1].tobytes()
    assert content(d.to_bytes(compress=compress)) == content(b)


# -- files ------------------------------------------------------------------------------------


def test_save_load(tmp_path):
    s = make(GRIDS["float"], weighted=True)
    path = tmp_path / "day1.sevsk"
    s.save(path)
    assert streameval.load(path) == s
    assert streameval.load(str(path)) == s
    assert path.read_bytes() == s.to_bytes()
    assert os.listdir(tmp_path) == ["day1.sevsk"]  # no temporary file left behind
    s.update([1], [0.5]).save(path)  # overwrite in place
    assert streameval.load(path).n_rows == s.n_rows


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        streameval.load(tmp_path / "missing.sevsk")
    bad = tmp_path / "bad.sevsk"
    bad.write_bytes(b"PAR1" + b"\0" * 40)
    with pytest.raises(SketchFormatError, match=r"bad\.sevsk: not a streameval sketch"):
        streameval.load(bad)
    data = bytearray(make(GRIDS["linear"]).to_bytes())
    data[-1] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(SketchFormatError, match=r"bad\.sevsk: checksum mismatch"):
        streameval.load(bad)


# -- golden files -------------------------------------------------------------------------------


def _golden_module():
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def allow_infinite_scores(monkeypatch):
    """Let ``update`` bin infinite scores, as releases before the finite-score rule did.

    The golden "float" file holds -inf and +inf (files may: they read as before); rebuilding it
    from its data needs the old acceptance. The wrapper runs the real checks on the finite rows.
    """
    import streameval.sketch.binary as sketch_module

    real = sketch_module.clean_scores

    def clean_scores(scores, row_offset, nan_policy):
        s = np.asarray(scores, dtype=np.float64)
        inf = np.isinf(s)
        if not inf.any():
            return real(scores, row_offset, nan_policy)
        out, n_nan = real(np.where(inf, 0.0, s), row_offset, nan_policy)
        return np.where(inf, s, out), n_nan

    monkeypatch.setattr(sketch_module, "clean_scores", clean_scores)


GOLDEN_NAMES = ["linear", "probability", "float", "weighted-nan"]


def test_golden_files_present(allow_infinite_scores):
    """Every golden file of every released version stays in the repository, readable forever."""
    mod = _golden_module()
    assert sorted(mod.build()) == sorted(GOLDEN_NAMES)
    found = sorted(p.name for p in GOLDEN.glob("binary-v*.sevsk"))
    later = ["weighted-kish"]  # version-1 files added after the first release (tests/test_bootstrap.py)
    assert [f"binary-v1-{n}.sevsk" for n in sorted(GOLDEN_NAMES + later)] == [n for n in found if n.startswith("binary-v1-")]


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_v1(name, allow_infinite_scores):
    """Golden files of format version 1 must stay readable forever.

    Never regenerate or edit ``tests/golden/binary-v1-*.sevsk``: they are the bytes released
    streameval versions wrote. If this test fails, the reader (or the binning) changed in a way
    that breaks old files; fix the code, not the files.
    """
    mod = _golden_module()
    data = mod.path_for(name, 1).read_bytes()
    assert split(data)["version"] == 1
    decoded = streameval.load(mod.path_for(name, 1))
    rebuilt = mod.build()[name]
    # Rebuilding from the same data gives the same bins bit for bit (the binning is part of the
    # format) and the same counts; the running float sums (log loss, Brier) may differ by rounding
    # when the kernel's summation order changes.
    assert split(rebuilt.to_bytes(format_version=1))["payload"] == split(data)["payload"]
    assert decoded.roc_auc() == rebuilt.roc_auc()
    for key, value in rebuilt.counters.items():
        if key.startswith("weight_sq_"):  # new in format version 2 (Kish's effective size)
            assert key not in decoded.counters
            continue
        if isinstance(value, float):
            assert decoded.counters[key] == pytest.approx(value, rel=1e-12, abs=1e-300), key
        else:
            assert decoded.counters[key] == value, key
    # Re-encoding the decoded sketch reproduces the file byte for byte, except meta.created_by,
    # which names the writing streameval version (a later release writes its own name there).
    assert meta_free(decoded.to_bytes(format_version=1)) == meta_free(data)
    if name == "weighted-nan":
        assert decoded.counters["weighted"] and decoded.counters["n_nan"] == 10
        assert decoded.counters["n_zero_weight"] == 9


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_v1_reencodes_to_identical_bytes(name):
    data = _golden_module().path_for(name, 1).read_bytes()
    written_by = json.loads(split(data)["header"])["meta"]["created_by"]
    reencoded = BinarySketch.from_bytes(data).to_bytes(format_version=1)
    if written_by == f"streameval {streameval.__version__}":
        assert reencoded == data
    else:  # a later release writes its own name in meta.created_by; nothing else may differ
        assert meta_free(reencoded) == meta_free(data)


# -- corruption: anything wrong raises SketchFormatError ----------------------------------------


@pytest.mark.parametrize("compress", [True, False])
def test_every_truncation(compress):
    data = make(LinearGrid(0.0, 1.0, 8), n=12, seed=1).to_bytes(compress=compress)
    for n in range(len(data)):
        with pytest.raises(SketchFormatError):
            BinarySketch.from_bytes(data[:n])
    assert BinarySketch.from_bytes(data).n_rows == 12


def test_truncation_messages(small):
    with pytest.raises(SketchFormatError, match="only 0 bytes"):
        BinarySketch.from_bytes(b"")
    with pytest.raises(SketchFormatError, match="truncated"):
        BinarySketch.from_bytes(small[:-1])
    with pytest.raises(SketchFormatError, match="padded"):
        BinarySketch.from_bytes(small + b"\0")


@pytest.mark.parametrize("compress", [True, False])
def test_every_byte_flip_is_caught(compress):
    data = make(LinearGrid(0.0, 1.0, 8), n=12, seed=1).to_bytes(compress=compress)
    rng = np.random.default_rng(0)
    for pos in range(len(data)):
        for mask in (0x01, 0x80, 0xFF, int(rng.integers(1, 256))):
            bad = bytearray(data)
            bad[pos] ^= mask
            with pytest.raises(SketchFormatError):
                BinarySketch.from_bytes(bytes(bad))


def test_random_multi_byte_corruption_never_returns_a_sketch():
    data = make(GRIDS["probability"], n=300, seed=2).to_bytes()
    rng = np.random.default_rng(1)
    for _ in range(300):
        bad = bytearray(data)
        for pos in rng.choice(len(data), size=int(rng.integers(2, 6)), replace=False):
            bad[pos] ^= int(rng.integers(1, 256))
        with pytest.raises(SketchFormatError):
            BinarySketch.from_bytes(bytes(bad))


def test_wrong_magic(small):
    with pytest.raises(SketchFormatError, match="not a streameval sketch"):
        BinarySketch.from_bytes(b"PK\x03\x04" + small[4:])
    with pytest.raises(SketchFormatError, match="magic"):
        BinarySketch.from_bytes(pack(magic=b"\x89PNG\r\n\x1a\n"))


@pytest.mark.parametrize("version", [5, 7, 65535])
def test_future_version_says_upgrade(small, version):
    f = split(small)
    data = pack(version=version, header=f["header"], payload=f["payload"])
    with pytest.raises(SketchFormatError, match=rf"version {version} is not supported.*reads versions 1, 2, 3, 4.*upgrade streameval"):
        BinarySketch.from_bytes(data)


def test_version_zero_rejected_without_upgrade_hint(small):
    f = split(small)
    with pytest.raises(SketchFormatError, match="version 0 is not supported") as info:
        BinarySketch.from_bytes(pack(version=0, header=f["header"], payload=f["payload"]))
    assert "upgrade" not in str(info.value)


@pytest.mark.parametrize("flags", [0x0002, 0x0003, 0x8000, 0xFFFF])
def test_unknown_flags(small, flags):
    f = split(small)
    with pytest.raises(SketchFormatError, match=f"unknown flags 0x{flags:04x}"):
        BinarySketch.from_bytes(pack(flags=flags, header=f["header"], payload=f["payload"], compress=True))


@pytest.mark.parametrize("hlen", [(1 << 20) + 1, 0xFFFFFFFF])
def test_absurd_header_length(small, hlen):
    data = bytearray(small)
    struct.pack_into("<I", data, 12, hlen)
    with pytest.raises(SketchFormatError, match="exceeds the 1 MiB limit"):
        BinarySketch.from_bytes(bytes(data))


def test_absurd_payload_length(small):
    f = split(small)
    hlen = len(f["header"])
    data = bytearray(small)
    struct.pack_into("<Q", data, 16 + hlen, (1 << 64) - 1)
    with pytest.raises(SketchFormatError, match="payload length 18,446,744,073,709,551,615 bytes exceeds the limit"):
        BinarySketch.from_bytes(bytes(data))


def _set(key, value):
    def edit(h):
        h[key] = value

    return edit


def _set_in(outer, key, value):
    def edit(h):
        h[outer][key] = value

    return edit


def _drop(key):
    def edit(h):
        del h[key]

    return edit


def _cell(b, c, field, value):
    def edit(v):
        v[b, c, field] = value

    return edit


PAYLOAD_CASES = {
    # name: (craft kwargs, expected message)
    "keys not increasing": (dict(deltas=lambda d: d.__setitem__(1, 0)), "keys are not increasing"),
    "key beyond grid": (dict(deltas=lambda d: d.__setitem__(-1, 1000)), "keys are not increasing inside the grid"),
    "negative weight": (dict(values=_cell(0, 0, 0, -1.0)), "weight is negative"),
    "nan weight": (dict(values=_cell(0, 1, 0, np.nan)), "weight is negative or not finite"),
    "inf weight": (dict(values=_cell(0, 0, 0, np.inf)), "weight is negative or not finite"),
    "empty bin": (dict(values=lambda v: v[0, :, 0].__setitem__(slice(None), 0.0)), "stored bin is empty"),
    "min > max": (dict(values=lambda v: v[0, v[0, :, 0].argmax()].__setitem__(slice(1, 3), [0.9, 0.1])), "min/max are inconsistent"),
    "nan min": (dict(values=lambda v: v[0, v[0, :, 0].argmax()].__setitem__(1, np.nan)), "min/max are inconsistent"),
    "nan sum": (dict(values=lambda v: v[0, v[0, :, 0].argmax()].__setitem__(3, np.nan)), "inconsistent"),
    "min outside its bin": (dict(values=lambda v: v[-1, v[-1, :, 0].argmax()].__setitem__(1, -0.75)), "do not belong to the bin"),
    "max outside its bin": (dict(values=lambda v: v[0, v[0, :, 0].argmax()].__setitem__(2, 5.0)), "do not belong to the bin"),
    "stray min in empty cell": (dict(values=lambda v: v[np.flatnonzero(v[:, 0, 0] == 0)[0], 0].__setitem__(1, -0.5)), "empty class cell"),
    "header not an object": (dict(header=None, ), None),  # replaced below
}
del PAYLOAD_CASES["header not an object"]


@pytest.mark.parametrize("layout", [1, 3])
@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("case", sorted(PAYLOAD_CASES))
def test_invalid_payload_with_valid_crc(case, compress, layout):
    # LinearGrid(-1, 1, 4): bins 1..4 have width 0.5; two classes, some bins one-class only.
    s = BinarySketch(LinearGrid(-1.0, 1.0, 4)).update([0, 1, 0, 1, 1, 0], [-2.0, -0.9, -0.1, 0.2, 0.6, 0.7])
    good = s.to_bytes(compress=compress, format_version=layout)
    kwargs, message = PAYLOAD_CASES[case]
    bad = craft(good, **kwargs)
    assert bad != good
    with pytest.raises(SketchFormatError, match=message):
        BinarySketch.from_bytes(bad)


HEADER_CASES = {
    "not JSON": (b"{not json", "unreadable header"),
    "not UTF-8": (b'{"a":"\xff"}', "unreadable header"),
    "list": (b"[1, 2]", "header is not a JSON object"),
    "string": (b'"binary"', "header is not a JSON object"),
    "deeply nested": (b"[" * 100000 + b"]" * 100000, "unreadable header|not a JSON object"),
}


@pytest.mark.parametrize("case", sorted(HEADER_CASES))
def test_bad_header_bytes(small, case):
    raw, message = HEADER_CASES[case]
    f = split(small)
    with pytest.raises(SketchFormatError, match=message):
        BinarySketch.from_bytes(pack(header=raw, payload=f["payload"]))


HEADER_FIELD_CASES = {
    "unknown grid kind": (_set_in("grid", "kind", "spline"), "unknown grid kind 'spline'"),
    "grid not a dict": (_set("grid", "linear"), "grid spec must be a dict"),
    "grid bad parameter": (_set_in("grid", "bins", -3), "bins must be an integer"),
    "grid extra parameter": (_set_in("grid", "gamma", 2), "bad parameters"),
    "grid infinite parameter": (_set_in("grid", "bins", float("inf")), "bad header field"),
    "missing grid": (_drop("grid"), "bad header field"),
    "missing counters": (_drop("counters"), "bad header field"),
    "unknown sketch kind": (_set("sketch", "ternary"), "unknown sketch kind 'ternary'"),
    "n_bins one short": (lambda h: h.__setitem__("n_bins", h["n_bins"] - 1), "payload (holds|is longer)|bin"),
    "n_bins zero": (_set("n_bins", 0), "payload (holds|is longer|length .* is more than 0 bins)"),
    "n_bins beyond grid": (_set("n_bins", 10**12), "n_bins"),
    "n_bins negative": (_set("n_bins", -1), "n_bins"),
    "n_bins float": (_set("n_bins", 5.5), "n_bins"),
    "n_bins string": (_set("n_bins", "5"), "n_bins"),
    "n_bins bool": (_set("n_bins", True), "n_bins"),
    "counter negative": (_set_in("counters", "n_rows", -5), "counter 'n_rows' has bad value"),
    "counter string": (_set_in("counters", "n_nan", "3"), "counter 'n_nan' has bad value"),
    "counter float for int": (_set_in("counters", "n_rows", 6.5), "counter 'n_rows' has bad value"),
    "counter infinite": (_set_in("counters", "brier_sum", float("inf")), "counter 'brier_sum' has bad value"),
    "counters not a dict": (_set("counters", 5), "bad header field"),
}


@pytest.mark.parametrize("layout", [1, 3])
@pytest.mark.parametrize("case", sorted(HEADER_FIELD_CASES))
def test_bad_header_fields_with_valid_crc(case, layout):
    s = BinarySketch(LinearGrid(-1.0, 1.0, 4)).update([0, 1, 0, 1, 1, 0], [-2.0, -0.9, -0.1, 0.2, 0.6, 0.7])
    edit, message = HEADER_FIELD_CASES[case]
    with pytest.raises(SketchFormatError, match=message):
        BinarySketch.from_bytes(craft(s.to_bytes(format_version=layout), header=edit))


def test_payload_not_zlib(small):
    f = split(small)
    with pytest.raises(SketchFormatError, match="does not decompress"):
        BinarySketch.from_bytes(pack(header=f["header"], payload=b"\x00" * 20, compress=False))


def test_uncompressed_payload_with_zlib_flag_clear_is_checked(small):
    # Compressed bytes stored with the flag clear: the payload length cannot match.
    f = split(small)
    with pytest.raises(SketchFormatError, match="payload holds"):
        BinarySketch.from_bytes(pack(flags=0, header=f["header"], payload=zlib.compress(f["payload"]), compress=False))


def test_payload_inflating_beyond_its_bins(small_v1):
    f = split(small_v1)
    bomb = f["payload"] + b"\0" * 10_000_000
    with pytest.raises(SketchFormatError, match="payload length 99.. is more than 7 bins can take"):
        BinarySketch.from_bytes(pack(header=f["header"], payload=bomb))


def test_unknown_header_fields_are_ignored(small):
    # Forward-compatible additions inside version 1 must not break readers.
    d = BinarySketch.from_bytes(craft(small, header=_set("future_field", {"x": 1})))
    assert d == BinarySketch.from_bytes(small)


def test_source_named_in_errors(small):
    with pytest.raises(SketchFormatError, match=r"^shard-7\.sevsk: truncated"):
        BinarySketch.from_bytes(small[:-3], source="shard-7.sevsk")


# -- hardening (issue 14): hostile files, caps, consistency rules -------------------------------


def _peak_bytes(fn) -> tuple[int, BaseException | None]:
    import tracemalloc

    tracemalloc.start()
    err = None
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - returned to the caller
        err = exc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, err


def _valid_header(grid_spec: dict, k: int, counters=None) -> dict:
    c = {"n_rows": 0, "n_nan": 0, "n_zero_weight": 0, "n_outside": 0, "prob_weight": 0.0,
         "brier_sum": 0.0, "log_loss_sum": 0.0, "weighted": False}
    c.update(counters or {})
    return {"sketch": "binary", "grid": grid_spec, "n_bins": k, "counters": c, "meta": {}}


def test_dev_zero_fails_at_once():
    peak, err = _peak_bytes(lambda: streameval.load("/dev/zero"))
    assert isinstance(err, SketchFormatError) and "/dev/zero: not a streameval sketch" in str(err)
    assert peak < 1 << 20


def test_cli_report_on_dev_zero_is_a_clean_error():
    from typer.testing import CliRunner

    from streameval.cli.main import app

    result = CliRunner().invoke(app, ["report", "/dev/zero"])
    assert result.exit_code == 1 and "not a streameval sketch" in result.stderr
    assert "Traceback" not in result.output


def test_huge_grid_is_refused_before_anything_is_allocated(monkeypatch):
    spec = {"kind": "float", "mantissa_bits": 20, "min_exponent": -32, "max_exponent": 32}  # 2**27 bins
    data = pack(header=_valid_header(spec, 0), payload=b"")
    assert len(data) < 400
    peak, err = _peak_bytes(lambda: BinarySketch.from_bytes(data))
    assert isinstance(err, SketchFormatError)
    assert "134,217,728 bins, more than the limit of 4,194,304" in str(err) and "STREAMEVAL_MAX_GRID_BINS" in str(err)
    assert peak < 1 << 20
    monkeypatch.setenv("STREAMEVAL_MAX_GRID_BINS", str(1 << 28))  # the documented way to raise it
    assert BinarySketch.from_bytes(data).grid.n_bins == 1 << 27
    monkeypatch.setenv("STREAMEVAL_MAX_GRID_BINS", "lots")
    with pytest.raises(streameval.UsageError, match="STREAMEVAL_MAX_GRID_BINS='lots'"):
        BinarySketch.from_bytes(data)


@pytest.mark.parametrize("values", ["zeros", "nan"])
def test_inflation_bomb_is_checked_while_inflating(values):
    k = (1 << 22) - 2
    spec = {"kind": "linear", "lo": 0.0, "hi": 1.0, "bins": k}
    z = zlib.compressobj(1)
    stored = z.compress(np.ones(k, dtype="<u4").tobytes())  # valid keys 1..k: the bomb is in the values
    block = (b"\0" * 8 if values == "zeros" else np.float64(np.nan).tobytes()) * (1 << 17)
    for _ in range(k * 64 // len(block)):
        stored += z.compress(block)
    stored += z.compress(block[: k * 64 % len(block)]) + z.flush()
    data = pack(header=_valid_header(spec, k), payload=stored, compress=False)  # ~1.2 MB claiming 285 MB
    assert len(data) < 2 << 20
    peak, err = _peak_bytes(lambda: BinarySketch.from_bytes(data))
    assert isinstance(err, SketchFormatError), err
    assert peak < 96 << 20, peak  # the keys (16 + 32 MB) and one run of values, not 285 MB


def test_declared_payload_beyond_its_bins_is_refused_before_inflating():
    spec = {"kind": "linear", "lo": 0.0, "hi": 1.0, "bins": 8}
    data = pack(header=_valid_header(spec, 3), payload=b"\0" * 1_000_000)
    with pytest.raises(SketchFormatError, match="payload length .* is more than 3 bins can take"):
        BinarySketch.from_bytes(data)


def test_compressed_payload_longer_than_declared(small_v1):
    f = split(small_v1)
    k = json.loads(f["header"])["n_bins"]
    bigger = zlib.compress(f["payload"] + b"\0" * 100)
    assert len(bigger) <= k * 68
    with pytest.raises(SketchFormatError, match="longer than its header says"):
        BinarySketch.from_bytes(pack(header=f["header"], payload=bigger, compress=False))


def test_trailing_bytes_after_the_zlib_stream(small_v1):
    f = split(small_v1)
    stored = zlib.compress(f["payload"]) + b"junk"
    with pytest.raises(SketchFormatError, match="4 trailing byte"):
        BinarySketch.from_bytes(pack(header=f["header"], payload=stored, compress=False))


def test_file_with_trailing_bytes_is_refused_without_reading_them(tmp_path, small):
    p = tmp_path / "padded.sevsk"
    p.write_bytes(small + b"\0" * 10_000_000)
    peak, err = _peak_bytes(lambda: streameval.load(p))
    assert isinstance(err, SketchFormatError) and "truncated or padded" in str(err)
    assert peak < 1 << 20


def _linear_sketch():
    return BinarySketch(LinearGrid(-1.0, 1.0, 4)).update([0, 1, 0, 1, 1, 0], [-2.0, -0.9, -0.1, 0.2, 0.6, 0.7])


def _prob_sketch(weighted=False):
    rng = np.random.default_rng(5)
    y = (rng.random(300) < 0.4).astype(np.int8)
    w = rng.exponential(1.0, 300) if weighted else None
    return BinarySketch(ProbabilityGrid(4, -10)).update(y, rng.random(300), w)


def _set_cut(h, cuts):
    h["grid"] = {"kind": "cut", "base": h["grid"], "cuts": cuts}


RULE_CASES = {
    # name: (sketch, craft kwargs, message)
    "text grid parameter": (_linear_sketch, dict(header=_set_in("grid", "lo", "-1.0")), r"grid\.lo='-1\.0': must be a number"),
    "float bin count": (_linear_sketch, dict(header=_set_in("grid", "bins", 4.0)), r"grid\.bins=4\.0: must be an integer"),
    "bool parameter": (_linear_sketch, dict(header=_set_in("grid", "bins", True)), r"grid\.bins=True"),
    "missing parameter": (_linear_sketch, dict(header=lambda h: h["grid"].pop("hi")), "bad parameters for 'linear' grid"),
    "400-digit counter": (_linear_sketch, dict(header=_set_in("counters", "n_rows", 10**400)), "integer of 401 digits"),
    "counter beyond int64": (_linear_sketch, dict(header=_set_in("counters", "n_rows", 2**63)), r"counter 'n_rows' has bad value"),
    "NaN counter": (_linear_sketch, dict(header=_set_in("counters", "prob_weight", float("nan"))), "counter 'prob_weight' has bad value nan"),
    "negative log loss": (_linear_sketch, dict(header=_set_in("counters", "log_loss_sum", -5.0)), "counter 'log_loss_sum' has bad value -5.0"),
    "unknown counter": (_linear_sketch, dict(header=_set_in("counters", "n_fraud", 1)), "unknown counter 'n_fraud'"),
    "weighted not bool": (_linear_sketch, dict(header=_set_in("counters", "weighted", 1)), "counter 'weighted' has bad value 1"),
    "brier above weight": (_prob_sketch, dict(header=lambda h: h["counters"].update(brier_sum=h["counters"]["prob_weight"] * 1.5)), "brier_sum=.* is outside"),
    "log loss too small": (_prob_sketch, dict(header=lambda h: h["counters"].update(log_loss_sum=0.0)), "log_loss_sum=0.0 is outside"),
    "prob weight too big": (_prob_sketch, dict(header=lambda h: h["counters"].update(prob_weight=h["counters"]["prob_weight"] + 5)), "prob_weight=.* should be|prob_weight=.* but"),
    "rows disagree with weights": (_prob_sketch, dict(header=lambda h: h["counters"].update(n_rows=h["counters"]["n_rows"] + 1)), "the bins hold 300 rows but n_rows - n_nan = 301"),
    "fractional count": (_prob_sketch, dict(values=_cell(0, 0, 0, 1.5)), "not a row count|outside"),
    "zero-weight rows unweighted": (_prob_sketch, dict(header=_set_in("counters", "n_zero_weight", 1)), "n_zero_weight=1 in an unweighted sketch"),
    "more NaN rows than rows": (_linear_sketch, dict(header=_set_in("counters", "n_nan", 7)), "n_nan=7 exceeds n_rows=6"),
    "n_outside too small": (_linear_sketch, dict(header=_set_in("counters", "n_outside", 0)), "n_outside=0"),
    "sum above weight x max": (_linear_sketch, dict(values=lambda v: v[1, v[1, :, 0].argmax()].__setitem__(3, 100.0)), r"score sum is outside \[weight x min, weight x max\]"),
    "sum below weight x min": (_prob_sketch, dict(values=lambda v: v[3, v[3, :, 0].argmax()].__setitem__(3, -1.0)), "score sum is outside"),
    "total weight overflows": (_prob_sketch, dict(values=lambda v: v[:, :, 0].__setitem__(slice(None), np.where(v[:, :, 0] > 0, 1e308, 0.0))), "score sum|total weight|exceeds"),
    "NaN label": (_linear_sketch, dict(header=lambda h: h["meta"].update(pos_label=float("nan"), neg_label=None)), r"meta\.pos_label=nan"),
    "equal labels": (_linear_sketch, dict(header=lambda h: h["meta"].update(pos_label=3, neg_label=3)), "the two classes are equal"),
    "label 1 equals True": (_linear_sketch, dict(header=lambda h: h["meta"].update(pos_label=1, neg_label=True)), "the two classes are equal"),
    "dict label": (_linear_sketch, dict(header=lambda h: h["meta"].update(pos_label={"a": 1})), r"meta\.pos_label"),
    "odd default negative": (_linear_sketch, dict(header=lambda h: h["meta"].update(neg_label=5)), "negative label is 0, -1 or false"),
    "meta as pairs": (_linear_sketch, dict(header=_set("meta", [["pos_label", 1]])), "meta=.*must be a JSON object"),
    "counters as pairs": (_linear_sketch, dict(header=_set("counters", [["n_rows", 6]])), "counters=.*must be a JSON object"),
    "unsorted cuts": (_linear_sketch, dict(header=lambda h: _set_cut(h, [0.5, 0.2])), "cuts must be strictly increasing"),
    "duplicate cuts": (_linear_sketch, dict(header=lambda h: _set_cut(h, [0.2, 0.2])), "cuts must be strictly increasing"),
    "text cuts": (_linear_sketch, dict(header=lambda h: _set_cut(h, ["0.2"])), "must be a list of numbers"),
    "cut of a cut": (_linear_sketch, dict(header=lambda h: (_set_cut(h, [0.2]), _set_cut(h, [0.3]))), "unknown grid kind 'cut'"),
}


@pytest.mark.parametrize("layout", [1, 3])
@pytest.mark.parametrize("case", sorted(RULE_CASES))
def test_consistency_rules(case, layout):
    make_sketch, kwargs, message = RULE_CASES[case]
    good = make_sketch().to_bytes(format_version=layout)
    bad = craft(good, **kwargs)
    assert bad != good
    with pytest.raises(SketchFormatError, match=message):
        BinarySketch.from_bytes(bad)


def test_duplicate_json_keys_are_refused(small):
    f = split(small)
    header = f["header"].replace(b'{"counters"', b'{"n_bins":0,"counters"', 1)
    with pytest.raises(SketchFormatError, match="duplicate key 'n_bins'"):
        BinarySketch.from_bytes(pack(header=header, payload=f["payload"], compress=False, flags=1))


def test_from_bytes_refuses_non_bytes():
    with pytest.raises(streameval.InputTypeError, match="must be bytes"):
        BinarySketch.from_bytes(10**9)  # bytes(10**9) would allocate a gigabyte of zeros
    assert BinarySketch.from_bytes(memoryview(_linear_sketch().to_bytes())) == _linear_sketch()


def test_weights_that_overflow_are_refused_with_the_row():
    with pytest.raises(streameval.InputError, match="adds up to more than 1e\\+300 at row 1"):
        BinarySketch().update([0, 1, 1], [0.2, 0.5, 0.9], [1e300, 1e300, 1.0])
    with pytest.raises(streameval.InputError, match="infinite value.*first inf at row 2"):
        BinarySketch(streameval.FloatGrid()).update([0, 1, 1], [0.2, 0.5, np.inf])
    s = BinarySketch().update([0, 1], [0.2, 0.8], [1e299, 1e299])  # large but summable: fine
    assert BinarySketch.from_bytes(s.to_bytes()) == s


def test_cli_eval_with_overflowing_weights_fails_cleanly(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from streameval.cli.main import app

    pq.write_table(pa.table({"s": [0.1, 0.9, 0.4], "y": [0, 1, 1], "w": [1e308, 1e308, 1.0]}), tmp_path / "w.parquet")
    result = CliRunner().invoke(app, ["eval", str(tmp_path / "w.parquet"), "--score", "s", "--label", "y",
                                      "--weight", "w", "--save-sketch", str(tmp_path / "w.sketch")])
    assert result.exit_code != 0 and "adds up to more than" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "w.sketch").exists()
