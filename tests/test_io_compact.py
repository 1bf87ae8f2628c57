"""Sketch format version 3 (compact bins): exact round trips, the documented layout, every refusal.

The layout is checked against ``sketch_layout``, a pure-Python reading of docs/sketch-format.md
§4.1 written apart from the compiled codec; refusals are crafted byte by byte.
"""

from __future__ import annotations

import importlib.util
import json
import math
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
from streameval.sketch.io_checks import _aggregates, _probability_bounds

MAGIC = b"\x89SEVSK\r\n"
GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"


def split(data: bytes) -> tuple[int, int, dict, bytes]:
    _, version, flags, hlen = struct.unpack_from("<8sHHI", data, 0)
    header = json.loads(data[16:16 + hlen])
    (plen,) = struct.unpack_from("<Q", data, 16 + hlen)
    payload = data[24 + hlen:24 + hlen + plen]
    assert len(data) == 28 + hlen + plen
    return version, flags, header, zlib.decompress(payload) if flags & 1 else payload


def pack(header: dict, payload: bytes, version: int = 3, flags: int = 0) -> bytes:
    h = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    stored = zlib.compress(payload) if flags & 1 else payload
    body = struct.pack("<8sHHI", MAGIC, version, flags, len(h)) + h + struct.pack("<Q", len(stored)) + stored
    return body + struct.pack("<I", zlib.crc32(body))


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def random_sketch(rng: np.random.Generator) -> BinarySketch:
    grid = [LinearGrid(-2.0, 3.0, 40), ProbabilityGrid(6, -20), FloatGrid(4, -10, 10), ProbabilityGrid(),
            LinearGrid(0, 1, 4).with_cuts(0.3)][int(rng.integers(5))]
    sk = BinarySketch(grid)
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(0, 2000))
        y = (rng.random(n) < rng.random()).astype(np.int8)
        kind = int(rng.integers(4))
        s = [rng.random(n), rng.random(n).astype(np.float32), np.round(rng.random(n), 2), rng.normal(0, 2, n)][kind]
        if n:
            s[rng.random(n) < 0.05] = -0.0
        w = None
        if sk.counters["weighted"] or rng.random() < 0.3:
            w = [rng.exponential(1.0, n), np.round(rng.exponential(3.0, n)), rng.exponential(1.0, n) * 1e200][int(rng.integers(3))]
        sk.update(y, s, w)
    return sk


@pytest.mark.parametrize("seed", range(40))
def test_round_trip_is_bit_exact_and_follows_the_documented_layout(seed):
    sk = random_sketch(np.random.default_rng(seed))
    for compress in (False, True):
        data = sk.to_bytes(compress=compress)
        version, flags, header, payload = split(data)
        assert (version, flags & 1) == (3, int(compress))
        keys, values = sk._compact()
        assert payload == sketch_layout.encode_payload(keys, values)  # the writer's nibbles, as documented
        ref_keys, ref_values = sketch_layout.decode_payload(payload, header["n_bins"])
        assert np.array_equal(ref_keys, keys) and np.array_equal(bits(ref_values), bits(values))
        back = BinarySketch.from_bytes(data)
        k2, v2 = back._compact()
        assert np.array_equal(k2, keys) and np.array_equal(bits(v2), bits(values))  # -0.0 included
        assert back.counters == sk.counters
        assert back.to_bytes(compress=compress) == data


def test_general_encoding_reads_the_same():
    sk = random_sketch(np.random.default_rng(5))
    version, flags, header, payload = split(sk.to_bytes())
    keys, values = sk._compact()
    general = pack(header, sketch_layout.encode_payload(keys, values, general=True))
    assert len(general) > len(sk.to_bytes())
    assert BinarySketch.from_bytes(general) == sk


def test_version_1_and_3_read_to_the_same_sketch():
    sk = random_sketch(np.random.default_rng(11))
    a, b = BinarySketch.from_bytes(sk.to_bytes()), BinarySketch.from_bytes(sk.to_bytes(format_version=1))
    assert a == b == sk
    assert split(sk.to_bytes(format_version=1))[0] == 1


def test_summary_matches_the_separate_checks():
    """The decoder's one-pass sums equal io_checks' aggregates; its log-loss bounds contain the
    libm ones and are no wider than LOG_SLACK per unit weight."""
    from streameval.kernels import codec
    from streameval.sketch.io_compact import decode_compact

    for seed in range(12):
        sk = random_sketch(np.random.default_rng(100 + seed))
        _, _, header, payload = split(sk.to_bytes())
        keys, values, summary = decode_compact(payload, header["n_bins"], sk.grid, False, None)
        t0, t1, cells, w_in, w_touch, outside, frac = _aggregates(values)
        assert summary[:7] == (t0, t1, cells, w_in, w_touch, outside, frac)
        b_lo, b_hi, l_lo, l_hi = _probability_bounds(values)
        s_b_lo, s_b_hi, s_l_lo, s_l_hi = summary.bounds
        assert s_b_lo == pytest.approx(b_lo, rel=1e-12, abs=1e-300) and s_b_hi == pytest.approx(b_hi, rel=1e-12, abs=1e-300)
        slack = codec.LOG_SLACK * w_touch + 1e-12 * abs(l_hi)
        assert s_l_lo <= l_lo + 1e-12 * abs(l_lo) and s_l_hi >= l_hi - 1e-12 * abs(l_hi)
        assert l_lo - s_l_lo <= slack + 1e-12 * abs(l_lo) and s_l_hi - l_hi <= slack


def test_shards_are_smaller_than_version_1_raw():
    rng = np.random.default_rng(3)
    y = (rng.random(10_000) < 0.1).astype(np.int8)
    s = 1 / (1 + np.exp(-rng.normal(-1 + 2 * y, 1.5))).astype(np.float32)
    sk = BinarySketch().update(y, s)
    v3, v1_raw, v1_zlib = sk.to_bytes(), sk.to_bytes(compress=False, format_version=1), sk.to_bytes(format_version=1)
    assert len(v3) * 5 < len(v1_raw)
    assert len(v3) < 1.5 * len(v1_zlib)


def test_replicates_stay_version_2():
    sk = BinarySketch(bootstrap=4, seed=1).update([0, 1, 1, 0], [0.1, 0.7, 0.8, 0.3], row_id=[1, 2, 3, 4])
    assert split(sk.to_bytes())[0] == 2
    with pytest.raises(ValueError, match="version 2 only"):
        sk.to_bytes(format_version=3)
    with pytest.raises(ValueError, match="format_version must be 3, 4 or 1"):
        BinarySketch().to_bytes(format_version=2)


def test_version_3_refuses_bootstrap_header_and_multiclass():
    sk = BinarySketch().update([0, 1], [0.2, 0.9])
    _, _, header, payload = split(sk.to_bytes())
    bad = dict(header, bootstrap={"replicates": 2})
    with pytest.raises(SketchFormatError, match="'bootstrap' needs format version 2, the file says 3"):
        BinarySketch.from_bytes(pack(bad, payload))
    mc = streameval.MulticlassSketch(classes=[0, 1, 2]).update([0, 1, 2], np.eye(3)).to_bytes()
    _, hlen = struct.unpack_from("<HI", mc, 10)
    body = bytearray(mc[:-4])
    struct.pack_into("<H", body, 8, 3)
    with pytest.raises(SketchFormatError, match="version 3 holds binary sketches only"):
        streameval.MulticlassSketch.from_bytes(bytes(body) + struct.pack("<I", zlib.crc32(body)))


# -- refusals, crafted byte by byte (LinearGrid(0, 1, 8): bins 1..8, grid size 10) ----------------

V = sketch_layout.varint
F64 = struct.Struct("<d").pack
F32 = struct.Struct("<f").pack
HEADER = {"sketch": "binary", "grid": {"kind": "linear", "lo": 0.0, "hi": 1.0, "bins": 8}, "n_bins": 2,
          "counters": {"n_rows": 3, "prob_weight": 3.0, "brier_sum": 0.25 + 0.01 + 0.0025,
                       "log_loss_sum": -math.log(0.5) - math.log(0.9) - math.log(0.95)},
          "meta": {"neg_label": 0}}
# bin 5: one negative at 0.5 (INT|SINGLE|F32); bin 8: positives at 0.9 and 0.95 (INT, float64)
GOOD = V(5) + bytes([0x0F]) + V(1) + F32(0.5) + V(3) + bytes([0x30]) + V(2) + F64(0.9) + F64(0.95) + F64(0.9 + 0.95)


def test_crafted_payload_reads():
    sk = BinarySketch.from_bytes(pack(HEADER, GOOD))
    keys, values = sk._compact()
    assert keys.tolist() == [5, 8]
    assert values[0, 0].tolist() == [1.0, 0.5, 0.5, 0.5] and values[1, 1].tolist() == [2.0, 0.9, 0.95, 0.9 + 0.95]
    assert sk.roc_auc() == 1.0


CASES = {
    "truncated in a key": (V(5) + bytes([0x0F]) + V(1) + F32(0.5) + bytes([0x83]), "payload ends inside bin 1"),
    "truncated in a value": (GOOD[:-3], "payload ends inside bin 1"),
    "key varint not canonical": (bytes([0x85, 0x00]) + GOOD[1:], "bin 0's key delta is not a canonical varint"),
    "key varint too long": (bytes([0x85, 0x80, 0x80, 0x80, 0x00]) + GOOD[1:], "bin 0's key delta is not a canonical varint"),
    "repeated key": (GOOD.replace(V(3) + bytes([0x30]), V(0) + bytes([0x30])), "not increasing inside the grid: bin 1 repeats"),
    "key beyond the grid": (GOOD.replace(V(3) + bytes([0x30]), V(5) + bytes([0x30])), "bin 1's key is beyond the grid \\(size 10\\)"),
    "empty tag": (V(5) + bytes([0x00]) + GOOD[2:], "stored bin is empty: bin 0 has tag 0"),
    "flags without PRESENT": (V(5) + bytes([0x0E]) + GOOD[2:], "bin 0's tag has flags for a class it does not hold"),
    "integer weight 0": (V(5) + bytes([0x0F]) + V(0) + GOOD[3:], "bin 0's integer weight is not a canonical varint in \\[1, 2\\*\\*53\\]"),
    "integer weight beyond 2**53": (V(5) + bytes([0x0F]) + V(2**53 + 1) + GOOD[3:], "integer weight is not a canonical varint"),
    "trailing bytes": (GOOD + b"\x00\x01", "2 trailing byte\\(s\\) after the 2 bins"),
    "negative float weight": (V(5) + bytes([0x0D]) + F64(-1.0) + GOOD[3:], "weight is negative or not finite"),
    "NaN float weight": (V(5) + bytes([0x0D]) + F64(math.nan) + GOOD[3:], "weight is negative or not finite"),
    "min above max": (GOOD.replace(F64(0.9) + F64(0.95), F64(0.95) + F64(0.9)), "min/max are inconsistent"),
    "min outside its bin": (GOOD.replace(F64(0.9) + F64(0.95), F64(0.7) + F64(0.95)), "do not belong to the bin"),
    "single score outside its bin": (GOOD.replace(F32(0.5), F32(0.9)), "do not belong to the bin"),
    "sum outside its range": (GOOD.replace(F64(0.9 + 0.95), F64(2.5)), "score sum is outside"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("compress", [False, True])
def test_refusals_name_the_bin(case, compress):
    payload, message = CASES[case]
    with pytest.raises(SketchFormatError, match=message):
        BinarySketch.from_bytes(pack(HEADER, payload, flags=int(compress)), source="x.sevsk")


def test_counters_are_checked_against_the_bins():
    for key, value, message in (("n_rows", 1, "non-empty bin cells but at most"), ("brier_sum", 0.9, "brier_sum"),
                                ("log_loss_sum", 5.0, "log_loss_sum")):
        with pytest.raises(SketchFormatError, match=message):
            BinarySketch.from_bytes(pack(dict(HEADER, counters=dict(HEADER["counters"], **{key: value})), GOOD))


def test_every_truncation_and_byte_flip_is_refused():
    data = pack(HEADER, GOOD)
    for n in range(len(data)):
        with pytest.raises(SketchFormatError):
            BinarySketch.from_bytes(data[:n])
    for i in range(len(data)):
        flipped = bytearray(data)
        flipped[i] ^= 0x20
        with pytest.raises(SketchFormatError):
            BinarySketch.from_bytes(bytes(flipped))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64), st.integers(0, 6))
def test_arbitrary_payloads_never_escape_as_other_errors(payload, k):
    try:
        sk = BinarySketch.from_bytes(pack(dict(HEADER, n_bins=k), payload))
    except SketchFormatError:
        return
    assert sk.n_occupied_bins == k


def test_inflating_beyond_the_bins_is_refused():
    with pytest.raises(SketchFormatError, match="longer than 2 bins can take"):
        BinarySketch.from_bytes(pack(HEADER, GOOD + b"\x00" * 200, flags=1))


# -- golden files of version 3 -----------------------------------------------------------------


def _golden():
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", ["mixed", "mixed-zlib", "weighted", "float-inf"])
def test_golden_v3(name):
    """Never regenerate or edit ``tests/golden/binary-v3-*.sevsk`` (see test_io.test_golden_v1)."""
    mod = _golden()
    data = mod.path_for(name, 3).read_bytes()
    version, flags, header, payload = split(data)
    assert version == 3 and bool(flags & 1) == (name == "mixed-zlib")
    decoded = streameval.load(mod.path_for(name, 3))
    rebuilt, compress = mod.build_v3()[name]
    keys, values = rebuilt._compact()
    dk, dv = decoded._compact()
    assert np.array_equal(dk, keys) and np.array_equal(bits(dv), bits(values))
    assert payload == sketch_layout.encode_payload(keys, values)
    again = split(decoded.to_bytes(compress=compress))
    header.get("meta", {}).pop("created_by", None)
    again[2].get("meta", {}).pop("created_by", None)
    assert again == (version, flags, header, payload)
