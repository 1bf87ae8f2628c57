"""The "multiclass" kind of the sketch file format (docs/sketch-format.md §9): round trips, golden
files, corrupted and crafted files (only SketchFormatError), binary golden files unchanged."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import pathlib
import struct
import zlib

import numpy as np
import pytest

import streameval
from streameval import BinarySketch, LinearGrid, MulticlassSketch
from streameval.errors import SketchFormatError
from streameval.sketch.multiclass import load_multiclass

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
NAMES = ["scores", "weighted", "no-pairs", "coarse-pairs", "labels"]
BINARY_GOLDEN_SHA256 = {
    "binary-v1-float.sevsk": "e3b612096ccbcb46345f73e2f7de304930dbd197497771d579d58a47af41e015",
    "binary-v1-linear.sevsk": "e29f8f6842d69f210cefe5f50e04346ee322762f439bc5fff2bd8aa9c1e93d4d",
    "binary-v1-probability.sevsk": "afdf19ef8659b61348fa8e83293a0c3cae26912401415c600cc346d6fd0de947",
    "binary-v1-weighted-nan.sevsk": "4a684361747fef7791ebd25f13cc6b2e045ee93d242a2842252fa30d27e8cf73",
}


def _golden_module():
    spec = importlib.util.spec_from_file_location("make_golden_multiclass", GOLDEN / "make_golden_multiclass.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def built():
    return _golden_module().build()


def _metrics(s: MulticlassSketch) -> list:
    out = [s.confusion_matrix().tolist(), s.accuracy(), s.n_rows]
    if s.mode == "scores":
        out += [s.log_loss(), s.brier_score(), s.top_k_accuracy(2), float(s.roc_auc(multi_class="ovr"))]
        if s.pair_grid is not None:
            out.append(float(s.roc_auc(multi_class="ovo")))
    return out


# -- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("name", NAMES)
def test_round_trip_bit_for_bit(built, name, compress):
    s = built[name]
    data = s.to_bytes(compress=compress)
    r = MulticlassSketch.from_bytes(data)
    assert r == s
    assert r.to_bytes(compress=compress) == data
    assert _metrics(r) == _metrics(s)
    a, b = s._parts(), r._parts()
    for key in ("ovr_values", "pair_values", "confusion", "ranks"):
        assert np.asarray(a[key]).tobytes() == np.asarray(b[key]).tobytes()


@pytest.mark.parametrize(
    "sketch",
    [MulticlassSketch(), MulticlassSketch(classes=[1, 2, 3]), MulticlassSketch(pair_grid=None)],
    ids=["empty", "classes-only", "no-pairs-empty"],
)
def test_round_trip_empty(sketch):
    assert MulticlassSketch.from_bytes(sketch.to_bytes()) == sketch


def test_round_trip_merges_like_the_original(built):
    s = built["scores"]
    r = MulticlassSketch.from_bytes(s.to_bytes())
    assert r.merge(s) == s.merge(s)


def test_save_and_load(built, tmp_path):
    path = tmp_path / "m.sevsk"
    built["weighted"].save(path)
    for loaded in (streameval.load(path), load_multiclass(path)):
        assert isinstance(loaded, MulticlassSketch)
        assert loaded == built["weighted"]
    assert isinstance(streameval.load(GOLDEN / "binary-v1-linear.sevsk"), BinarySketch)


def test_kinds_are_not_confused(built, tmp_path):
    with pytest.raises(SketchFormatError, match="multiclass sketch"):
        BinarySketch.from_bytes(built["scores"].to_bytes())
    binary = (GOLDEN / "binary-v1-linear.sevsk").read_bytes()
    with pytest.raises(SketchFormatError, match="binary sketch"):
        MulticlassSketch.from_bytes(binary)
    with pytest.raises(SketchFormatError, match="binary sketch"):
        load_multiclass(GOLDEN / "binary-v1-linear.sevsk")


# -- golden files ----------------------------------------------------------------------------------


def test_golden_files_present(built):
    assert sorted(built) == sorted(NAMES)
    found = sorted(p.name for p in GOLDEN.glob("multiclass-v1-*.sevsk"))
    assert found == sorted(f"multiclass-v1-{n}.sevsk" for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_golden_v1(built, name):
    """Never regenerate or edit ``tests/golden/multiclass-v1-*.sevsk``: every release must read them."""
    path = _golden_module().path_for(name, 1)
    data = path.read_bytes()
    read = streameval.load(path)
    assert isinstance(read, MulticlassSketch)
    assert read == built[name]
    assert _metrics(read) == _metrics(built[name])
    assert read.to_bytes() == data
    assert built[name].to_bytes() == data


def test_binary_golden_files_unchanged():
    for name, digest in BINARY_GOLDEN_SHA256.items():
        assert hashlib.sha256((GOLDEN / name).read_bytes()).hexdigest() == digest, name


# -- corrupted and crafted files -----------------------------------------------------------------


def _split(data: bytes) -> tuple[dict, bytes, int]:
    """Header, raw payload and flags of a file (inflating the payload if needed)."""
    _, _, flags, hlen = struct.unpack_from("<8sHHI", data, 0)
    header = json.loads(data[16:16 + hlen])
    (plen,) = struct.unpack_from("<Q", data, 16 + hlen)
    payload = data[24 + hlen:24 + hlen + plen]
    return header, zlib.decompress(payload) if flags & 1 else payload, flags


def _frame(header: dict, payload: bytes, compress: bool = False) -> bytes:
    """A correctly framed file (valid CRC) with any header and payload."""
    if compress:
        payload = zlib.compress(payload, 6)
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = struct.pack("<8sHHI", b"\x89SEVSK\r\n", 1, int(compress), len(h)) + h + struct.pack("<Q", len(payload)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


def _decode_fails(data: bytes, match: str | None = None) -> None:
    with pytest.raises(SketchFormatError, match=match):
        MulticlassSketch.from_bytes(data)


def test_frame_helper_round_trips(built):
    header, payload, _ = _split(built["scores"].to_bytes())
    assert MulticlassSketch.from_bytes(_frame(header, payload)) == built["scores"]
    assert MulticlassSketch.from_bytes(_frame(header, payload, compress=True)) == built["scores"]


@pytest.mark.parametrize("name", ["labels", "no-pairs"])
def test_every_byte_flip_is_caught(built, name):
    data = built[name].to_bytes()
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x5A
        _decode_fails(bytes(bad))


def _f64(payload: bytes, offset: int, value: float) -> bytes:
    return payload[:offset] + struct.pack("<d", value) + payload[offset + 8:]


def _u64(payload: bytes, offset: int, value: int) -> bytes:
    return payload[:offset] + struct.pack("<Q", value) + payload[offset + 8:]


def test_crafted_payloads_fail_with_sketch_format_error(built):
    header, payload, _ = _split(built["scores"].to_bytes())
    n, m, k = header["n_bins"], header["n_pairs"], len(header["classes"])
    ovr_vals, pair_keys = 8 * n, 72 * n
    pair_vals = pair_keys + 8 * m
    confusion = pair_vals + 32 * m
    ranks = confusion + 8 * k * k
    cases = {
        "repeated ovr key": (_u64(payload, 8, 0), "one-vs-rest keys"),
        "ovr key out of range": (_u64(payload, 8 * (n - 1), 1 << 40), "one-vs-rest"),
        "pair key out of range": (_u64(payload, pair_keys, 1 << 50), "pair"),
        "diagonal pair": (_u64(payload, pair_keys, 0), "diagonal"),
        "ovr min outside its bin": (_f64(payload, ovr_vals + 8 * 5, 0.999), None),
        "negative ovr weight": (_f64(payload, ovr_vals + 8 * 4, -1.0), None),
        "pair min outside its bin": (_f64(payload, pair_vals + 8, 0.999), "pair cell"),
        "pair NaN": (_f64(payload, pair_vals + 24, float("nan")), "pair cell"),
        "negative confusion": (_f64(payload, confusion, -1.0), "confusion"),
        "infinite ranks": (_f64(payload, ranks + 8, float("inf")), "ranks"),
        "truncated": (payload[:-8], None),
        "trailing": (payload + b"\0" * 8, None),
    }
    # the first pair cell holds weight; an empty one must be exactly [0, inf, -inf, 0]
    emptied = _f64(_f64(_f64(_f64(payload, pair_vals, 0.0), pair_vals + 8, np.inf), pair_vals + 16, -np.inf), pair_vals + 24, 1.0)
    cases["empty pair cell with a sum"] = (emptied, "empty")
    for what, (bad, match) in cases.items():
        for compress in (False, True):
            with pytest.raises(SketchFormatError, match=match):
                MulticlassSketch.from_bytes(_frame(header, bad, compress))
            assert what


def test_crafted_headers_fail_with_sketch_format_error(built):
    header, payload, _ = _split(built["scores"].to_bytes())
    changes = {
        "n_bins": 1 << 60,
        "n_pairs": -1,
        "classes": [0, 1, 1],
        "max_classes": 2,
        "mode": "probabilities",
        "learned": "yes",
        "grid": {"kind": "linear", "lo": 0, "hi": 1, "bins": 1 << 40},
        "pair_grid": {"kind": "linear", "lo": 0.0, "hi": 1.0, "bins": 7},
        "counters": {**header["counters"], "col_prob_weight": [1.0]},
    }
    for key, value in changes.items():
        _decode_fails(_frame({**header, key: value}, payload))
    _decode_fails(_frame({**header, "counters": {**header["counters"], "mystery": 1}}, payload), "unknown counter")
    _decode_fails(_frame({**header, "counters": {**header["counters"], "n_rows": -1}}, payload), "n_rows")
    missing = dict(header)
    del missing["pair_grid"]
    _decode_fails(_frame(missing, payload), "pair_grid")


def test_declared_sizes_checked_before_inflating(built, monkeypatch):
    """A header declaring more cells than the cap is refused whatever the payload holds."""
    header, payload, _ = _split(built["coarse-pairs"].to_bytes())
    monkeypatch.setenv("STREAMEVAL_MAX_GRID_BINS", "64")
    _decode_fails(_frame(header, payload, compress=True), "bins")
    monkeypatch.setenv("STREAMEVAL_MAX_GRID_BINS", str(1 << 16))
    assert MulticlassSketch.from_bytes(_frame(header, payload, compress=True)) == built["coarse-pairs"]
    # a zlib bomb: small declared sizes, a stream inflating to far more; refused before inflating it
    bomb = zlib.compress(b"\0" * (64 << 20), 9)
    _decode_fails(_frame({**header, "n_bins": 1, "n_pairs": 0}, b""))
    raw = _frame({**header, "n_bins": 1, "n_pairs": 0}, b"")
    hlen = struct.unpack_from("<I", raw, 12)[0]
    body = raw[:16 + hlen] + struct.pack("<Q", len(bomb)) + bomb
    body = body[:10] + struct.pack("<H", 1) + body[12:]
    _decode_fails(body + struct.pack("<I", zlib.crc32(body)))


def test_random_mutations_raise_only_sketch_format_error(built):
    rng = np.random.default_rng(7)
    header, payload, _ = _split(built["weighted"].to_bytes())
    for trial in range(300):
        bad = bytearray(payload)
        for _ in range(int(rng.integers(1, 4))):
            bad[int(rng.integers(len(bad)))] = int(rng.integers(256))
        try:
            MulticlassSketch.from_bytes(_frame(header, bytes(bad), compress=bool(trial % 2)))
        except SketchFormatError:
            pass


def test_linear_grid_multiclass_file(tmp_path):
    s = MulticlassSketch(classes=["x", "y"], grid=LinearGrid(0.0, 1.0, 10)).update(["x", "y", "y"], np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]))
    assert MulticlassSketch.from_bytes(s.to_bytes(compress=False)) == s


@pytest.mark.parametrize("request_", ["auto", None, "coarse", "given"])
def test_empty_sketch_keeps_its_pair_grid_request(request_):
    """Regression: an empty sketch saved with the default pair_grid ("auto") read back with
    pairs off; it compared equal to the original but updated differently. Every request
    survives the round trip and the reloaded sketch updates like the original (K = 10, where
    "auto" picks a coarser pair grid than the grid). "given" is an explicit pair_grid equal to
    the grid, which used to read back as "auto" (the header field pair_grid_given now says it)."""
    from streameval import ProbabilityGrid
    from streameval.sketch.multiclass import auto_pair_grid

    grid = ProbabilityGrid(mantissa_bits=8)
    pair_grid = {"coarse": ProbabilityGrid(mantissa_bits=5), "given": ProbabilityGrid(mantissa_bits=8)}.get(request_, request_)
    empty = MulticlassSketch(grid=grid, pair_grid=pair_grid)
    data = empty.to_bytes()
    assert ("pair_grid_given" in _split(data)[0]) == (request_ == "given")  # other files: unchanged bytes
    back = MulticlassSketch.from_bytes(data)
    assert back == empty
    rng = np.random.default_rng(5)
    y = rng.integers(0, 10, 200)
    p = rng.dirichlet(np.ones(10), 200)
    empty.update(y, p)
    back.update(y, p)
    assert back == empty and back.to_bytes() == empty.to_bytes()
    expected = {"auto": auto_pair_grid(grid, 10), None: None, "coarse": pair_grid, "given": grid}[request_]
    assert auto_pair_grid(grid, 10) != grid  # so "auto" and "given" would differ if mixed up
    assert back.pair_grid == expected
    if expected is None:
        with pytest.raises(ValueError, match="pair_grid=None"):
            back.roc_auc("ovo")
    else:
        assert back.roc_auc("ovo") == empty.roc_auc("ovo")
    assert (MulticlassSketch(grid=grid) == MulticlassSketch(grid=grid, pair_grid=None)) is False


def test_explicit_pair_grid_equal_to_grid_is_not_auto():
    """An empty sketch asked for pair_grid=grid differs from one left at "auto" (they update
    differently beyond K = 4), in memory and read back; an old file without the field (what an
    "auto" sketch writes, and what a given one wrote before the field existed) still reads as "auto"."""
    from streameval import ProbabilityGrid
    from streameval.sketch.multiclass import auto_pair_grid

    grid = ProbabilityGrid(mantissa_bits=8)
    given, auto = MulticlassSketch(grid=grid, pair_grid=grid), MulticlassSketch(grid=grid)
    assert given != auto
    header, payload, _ = _split(given.to_bytes())
    assert header["pair_grid_given"] is True and header["pair_grid"] == header["grid"]
    old = dict(header)
    del old["pair_grid_given"]
    assert _frame(old, payload, True) == auto.to_bytes()  # the old bytes of "given" are those of "auto"
    read_old = MulticlassSketch.from_bytes(_frame(old, payload, True))
    assert read_old == auto
    y, p = np.arange(20) % 10, np.random.default_rng(1).dirichlet(np.ones(10), 20)
    assert read_old.update(y, p).pair_grid == auto_pair_grid(grid, 10) != grid
    assert MulticlassSketch.from_bytes(given.to_bytes()).update(y, p).pair_grid == grid


def test_pair_grid_given_header_checked(built):
    """pair_grid_given: only true, only in an empty sketch whose stored pair grid is its grid."""
    from streameval import ProbabilityGrid

    grid = ProbabilityGrid(mantissa_bits=8)
    header, payload, _ = _split(MulticlassSketch(grid=grid, pair_grid=grid).to_bytes())
    for value in (False, 1, "yes", None):
        _decode_fails(_frame({**header, "pair_grid_given": value}, payload), "pair_grid_given")
    coarse = ProbabilityGrid(mantissa_bits=5).spec()
    _decode_fails(_frame({**header, "pair_grid": coarse}, payload), "pair_grid_given")
    full, full_payload, _ = _split(built["scores"].to_bytes())
    _decode_fails(_frame({**full, "pair_grid": full["grid"], "pair_grid_given": True}, full_payload), "pair_grid_given")
    parts = MulticlassSketch(grid=grid)._parts()
    with pytest.raises(SketchFormatError, match="pair_grid_given"):
        MulticlassSketch._from_parts({**parts, "pair_grid_given": "yes"})
