"""Version 3 (compact bins) against version 1: same bins, same verdict; exact round trips; loading
under threads.

The oracle for any version-3 payload is a strict pure-Python parser of docs/sketch-format.md §4.1
(:func:`parse_strict`, written from the text) followed by the version-1 reader on the bins it
parsed: a version-3 file must be accepted exactly when the structure is valid and the same bins
and header, written as version 1, are accepted.
"""

from __future__ import annotations

import json
import math
import struct
import sys

import numpy as np
import pytest
import sketch_layout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_io_compact import pack, random_sketch, split

from streameval import BinarySketch, FloatGrid, LinearGrid, ProbabilityGrid, SketchFormatError

PRESENT, INT, SINGLE, F32 = 1, 2, 4, 8


class Refused(Exception):
    """The payload breaks a structural rule of §4.1."""


def _varint(data: bytes, pos: int, limit: int) -> tuple[int, int]:
    x = 0
    for i in range(limit):
        if pos >= len(data):
            raise Refused("runs past the end")
        b = data[pos]
        pos += 1
        x |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if b == 0 and i > 0:
                raise Refused("not canonical")
            return x, pos
    raise Refused("longer than its limit")


def _take(data: bytes, pos: int, fmt: str) -> tuple[float, int]:
    size = struct.calcsize(fmt)
    if pos + size > len(data):
        raise Refused("record runs past the end")
    return float(struct.unpack_from(fmt, data, pos)[0]), pos + size


def parse_strict(data: bytes, k: int, grid_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, values)`` of a version-3 payload, or :class:`Refused` for a structural fault."""
    keys = np.zeros(k, dtype=np.int64)
    values = np.zeros((k, 2, 4))
    pos = key = 0
    for j in range(k):
        d, pos = _varint(data, pos, 4)
        if j and d == 0:
            raise Refused("repeated key")
        key = d if j == 0 else key + d
        if key >= grid_size:
            raise Refused("key outside the grid")
        keys[j] = key
        if pos >= len(data):
            raise Refused("runs past the end")
        tag = data[pos]
        pos += 1
        if tag == 0:
            raise Refused("tag 0")
        for c in range(2):
            nib = (tag >> (4 * c)) & 15
            if nib == 0:
                values[j, c] = [0.0, math.inf, -math.inf, 0.0]
                continue
            if not nib & PRESENT:
                raise Refused("flags without PRESENT")
            if nib & INT:
                n, pos = _varint(data, pos, 8)
                if not 1 <= n <= 2**53:
                    raise Refused("integer weight out of range")
                w = float(n)
            else:
                w, pos = _take(data, pos, "<d")
            fmt = "<f" if nib & F32 else "<d"
            lo, pos = _take(data, pos, fmt)
            if nib & SINGLE:
                hi, sm = lo, w * lo
            else:
                hi, pos = _take(data, pos, fmt)
                sm, pos = _take(data, pos, "<d")
            if w == 0.0 and (lo, hi, sm) == (math.inf, -math.inf, 0.0):
                raise Refused("the empty cell as a present cell")
            values[j, c] = [w, lo, hi, sm]
    if pos != len(data):
        raise Refused("bytes after the last record")
    return keys, values


def v1_payload(keys: np.ndarray, values: np.ndarray) -> bytes:
    deltas = np.diff(np.asarray(keys, dtype=np.int64), prepend=np.int64(0)).astype("<u4")
    return deltas.tobytes() + np.ascontiguousarray(values, dtype="<f8").tobytes()


def verdict(data: bytes) -> bool:
    """Accepted (True) or refused with a SketchFormatError (False); anything else escapes."""
    try:
        BinarySketch.from_bytes(data)
    except SketchFormatError:
        return False
    return True


def expected_v3_verdict(header: dict, payload: bytes, grid_size: int) -> bool:
    try:
        keys, values = parse_strict(payload, header["n_bins"], grid_size)
    except Refused:
        return False
    return verdict(pack(header, v1_payload(keys, values), version=1))


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


# -- the log-loss bounds of the one-pass decoder ------------------------------------------------


def test_log_loss_sum_beyond_the_version_1_bound_is_refused():
    """One negative row's cell reaches into [0, 1] from below (min -0.5, max 0): the log-loss sum
    may be at most -log(1 - eps) = 2.2e-16 (prob_weight 0, so no slack beyond 1e-6 relative).
    The decoder's bounds were widened by 1e-15 per unit weight and let 1e-15 through."""
    header = {"sketch": "binary", "grid": {"kind": "linear", "lo": -1.0, "hi": 1.0, "bins": 1}, "n_bins": 1,
              "counters": {"n_rows": 1, "n_outside": 1, "prob_weight": 0.0, "brier_sum": 0.0, "log_loss_sum": 0.0},
              "meta": {}}
    keys = np.array([1])
    values = np.array([[[1.0, -0.5, 0.0, -0.5], [0.0, math.inf, -math.inf, 0.0]]])
    for ll, ok in ((0.0, True), (2.220446049250313e-16, True), (5e-16, False), (1e-15, False), (1.2e-15, False)):
        h = dict(header, counters=dict(header["counters"], log_loss_sum=ll))
        assert verdict(pack(h, v1_payload(keys, values), version=1)) is ok
        assert verdict(pack(h, sketch_layout.encode_payload(keys, values))) is ok, ll


# -- any payload: the verdict of the strict parser and the version-1 reader ----------------------

_SKETCHES = [random_sketch(np.random.default_rng(seed)) for seed in (1, 4, 7, 9, 12)]


@st.composite
def mutated_payloads(draw):  # type: ignore[no-untyped-def]
    sk = _SKETCHES[draw(st.integers(0, len(_SKETCHES) - 1))]
    _, _, header, _ = split(sk.to_bytes())
    keys, values = sk._compact()
    keys, values = keys[:40], values[:40].copy()
    header = json.loads(json.dumps(header))
    header["n_bins"] = len(keys)
    general = draw(st.booleans())
    payload = bytearray(sketch_layout.encode_payload(keys, values, general=general))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "k"]))
        at = draw(st.integers(0, max(len(payload) - 1, 0)))
        if op == "flip" and payload:
            payload[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and payload:
            payload[at] = draw(st.sampled_from([0x00, 0x01, 0x0F, 0x10, 0x7F, 0x80, 0xFF, 0xF0]))
        elif op == "insert":
            payload[at:at] = draw(st.binary(min_size=1, max_size=9))
        elif op == "delete":
            del payload[at:at + draw(st.integers(1, 9))]
        elif op == "truncate":
            del payload[at:]
        elif op == "k":
            header["n_bins"] = max(0, header["n_bins"] + draw(st.integers(-2, 2)))
    return header, bytes(payload), sk.grid.n_bins


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_payloads())
def test_mutated_payloads_get_the_version_1_verdict(case):
    header, payload, grid_size = case
    assert verdict(pack(header, payload)) == expected_v3_verdict(header, payload, grid_size)


def test_valid_files_keep_the_decoders_bounds(monkeypatch):
    """The exact bounds are recomputed only near an edge: never for the files writers produce."""
    from streameval.sketch import io_checks

    calls = []
    real = io_checks._probability_bounds
    monkeypatch.setattr(io_checks, "_probability_bounds", lambda v: calls.append(1) or real(v))
    for sk in _SKETCHES:
        assert BinarySketch.from_bytes(sk.to_bytes()) == sk
    assert not calls
    BinarySketch.from_bytes(_SKETCHES[0].to_bytes(format_version=1))
    assert calls  # version 1 computes them


# -- the grid cache and the shared JSON decoder -------------------------------------------------


def test_grid_cache_keeps_negative_zero():
    """``lo = -0.0`` and ``lo = 0.0`` are equal floats: the grid cache served the first grid read
    for both, so the second file wrote itself back with the other sign (and which one depended on
    the order files were read)."""
    from streameval import LinearGrid

    plus = BinarySketch(LinearGrid(0.0, 1.0, 4)).update([0, 1], [0.2, 0.7]).to_bytes()
    minus = BinarySketch(LinearGrid(-0.0, 1.0, 4)).update([0, 1], [0.2, 0.7]).to_bytes()
    assert plus != minus
    for data in (plus, minus, plus):
        assert BinarySketch.from_bytes(data).to_bytes() == data


# -- exact round trips at the edges of float64 and float32 ---------------------------------------

F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)  # smallest normal float32
F32_SUB = float(np.float32(1.401298464324817e-45))  # smallest subnormal float32
EDGE_SCORES = [0.0, -0.0, 0.5, 1.0, 1.0 - 2.0**-53, 2.0**-53, 5e-324, 2.2250738585072014e-308, -5e-324,
               F32_MAX, -F32_MAX, F32_TINY, F32_SUB, float(np.nextafter(np.float32(0.5), np.float32(1))),
               0.1, 1e300, -1e300, 3.0, -2.0, 0.30000000000000004, 0.3]
EDGE_WEIGHTS = [1.0, 2.0**53, 2.0**53 + 2, 2.0**53 - 1, 1e299, 5e-324, 1e-300, 0.5, 3.0, 127.0, 128.0, 0.0]
GRIDS = [LinearGrid(-2.0, 3.0, 40), ProbabilityGrid(), ProbabilityGrid(8, -60, tail_bits=2),
         FloatGrid(2, -1022, 1023), LinearGrid(0.0, 1.0, 4).with_cuts(0.3, 0.30000000000000004)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, len(GRIDS) - 1),
    st.lists(st.tuples(st.integers(0, 1), st.one_of(st.sampled_from(EDGE_SCORES), st.floats(width=32, allow_nan=False, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False)),
                       st.sampled_from(EDGE_WEIGHTS)), min_size=0, max_size=30),
    st.booleans(),
)
def test_round_trips_are_bit_exact_at_float_edges(g, rows, weighted):
    sk = BinarySketch(GRIDS[g])
    if rows:
        y, s, w = (list(t) for t in zip(*rows, strict=True))
        try:
            sk.update(y, s, w if weighted else None)
        except ValueError:  # weights above the documented total (1e300)
            return
    keys, values = sk._compact()
    for compress in (False, True):
        data = sk.to_bytes(compress=compress)
        back = BinarySketch.from_bytes(data)
        k2, v2 = back._compact()
        assert np.array_equal(k2, keys) and np.array_equal(bits(v2), bits(values))
        assert back.counters == sk.counters and back.to_bytes(compress=compress) == data
        v1 = BinarySketch.from_bytes(sk.to_bytes(format_version=1))
        assert np.array_equal(bits(v1._compact()[1]), bits(values))
        assert back.to_bytes(format_version=1) == sk.to_bytes(format_version=1)
        v4 = sk.to_bytes(compress=compress, format_version=4)
        back4 = BinarySketch.from_bytes(v4)
        k4, val4 = back4._compact()
        assert np.array_equal(k4, keys) and np.array_equal(bits(val4), bits(values))
        assert back4.counters == sk.counters and back4.to_bytes(compress=compress, format_version=4) == v4
        assert back4.to_bytes(compress=compress) == data


def test_infinite_scores_of_old_files_round_trip_through_version_3():
    """Files from before the finite-score rule may hold +-inf in a float grid's end bins."""
    import pathlib

    data = (pathlib.Path(__file__).resolve().parent / "golden" / "binary-v3-float-inf.sevsk").read_bytes()
    sk = BinarySketch.from_bytes(data)
    values = sk._compact()[1]
    assert np.isinf(values[:, :, 1:3][values[:, :, 0] > 0]).any()
    v1 = sk.to_bytes(format_version=1)
    again = BinarySketch.from_bytes(v1)
    assert np.array_equal(bits(again._compact()[1]), bits(values))
    assert again.to_bytes() == sk.to_bytes()


def test_loading_on_threads_equals_loading_one_by_one(tmp_path):
    """The grid cache and the one JSON decoder are shared by every thread: files of several grids
    (and labels, so headers differ) read concurrently give what they give one by one."""
    from concurrent.futures import ThreadPoolExecutor

    import streameval

    rng = np.random.default_rng(8)
    paths, expected = [], []
    for i in range(48):
        sk = random_sketch(rng)
        if i % 3 == 0:
            sk = BinarySketch(sk.grid, pos_label=f"yes-{i}").update([f"yes-{i}", f"no-{i}"], [0.25, 0.75])
        path = tmp_path / f"s{i:02d}.sevsk"
        sk.save(path)
        paths.append(path)
        expected.append(path.read_bytes())
    streameval.sketch.io_header._GRIDS.clear()
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = list(pool.map(lambda p: streameval.load(p).to_bytes(), paths * 4))
        assert got == expected * 4


def test_a_present_cell_of_weight_0_is_refused_naming_the_bin():
    """The empty cell [0, inf, -inf, 0] written with a present nibble (float64 weight 0 or -0.0):
    refused with a message naming the bin (it was "a bin's cells are inconsistent", naming nothing).
    A weight 0 with other values gets version 1's messages (test_io: "stored bin is empty")."""
    from test_io_compact import F32, F64, GOOD, HEADER, V

    for w in (0.0, -0.0):
        payload = V(5) + bytes([0x1F]) + V(1) + F32(0.5) + F64(w) + F64(math.inf) + F64(-math.inf) + F64(0.0) + GOOD[7:]
        assert sketch_layout.decode_payload(payload, 2)[0].tolist() == [5, 8]
        with pytest.raises(SketchFormatError, match="bin 0 holds the empty cell \\[0, \\+inf, -inf, 0\\] as a present cell"):
            BinarySketch.from_bytes(pack(HEADER, payload))


# -- the same bins and counters, mutated the same way, as versions 1, 3 and 4, loaded and folded --

SPECIAL = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 5e-324, 1e-300, 1e300, 2.0**53, 2.0**53 + 2, 0.5, 1e-16]
FACTORS = [0.0, 1 - 1e-6, 1 - 2e-6, 1 + 1e-6, 1 + 2e-6, 1 - 1e-9, 1 + 1e-9, 0.5, 2.0]


def _v4_sketches() -> list[BinarySketch]:
    """Sketches that fill every list of version 4 (_SKETCHES has no float32 unit cell and no
    weight of exactly 1.0 in a weighted sketch), on grids _SKETCHES lacks (a linear grid reaching
    below 0, probability tails, the widest float grid)."""
    rng = np.random.default_rng(40)
    out = []
    for grid, n, weighted in ((ProbabilityGrid(), 300, False), (LinearGrid(-2.0, 3.0, 40), 400, True),
                              (ProbabilityGrid(8, -60, tail_bits=2), 300, True), (FloatGrid(2, -1022, 1023), 200, False)):
        y = rng.integers(0, 2, n)
        s = rng.random(n).astype(np.float32).astype(np.float64)
        s[: n // 4] = rng.normal(0.5, 2.0, n // 4)  # float64 scores, some outside [0, 1]
        s[n // 4: n // 3] = np.round(s[n // 4: n // 3], 1)  # shared scores: GEN cells
        w = np.where(rng.random(n) < 0.5, 1.0, rng.exponential(1.0, n)) if weighted else None  # weights of 1.0: units
        out.append(BinarySketch(grid).update(y, s, w))
    return out


_V4_SKETCHES = _SKETCHES + _v4_sketches()


def both_verdicts(data: bytes) -> tuple[bool | str, bool | str]:
    """``(load, fold)``: True if accepted, else the SketchFormatError's message; anything else escapes."""
    from streameval.kernels.binary import empty_state
    from streameval.sketch import io as sketch_io

    out: list[bool | str] = []
    try:
        BinarySketch.from_bytes(data)
        out.append(True)
    except SketchFormatError as exc:
        out.append(str(exc))
    try:
        header = json.loads(data[16:16 + struct.unpack_from("<I", data, 12)[0]])
        grid = sketch_io._cached_grid(header["grid"], None)
        state = empty_state(grid.n_bins)
        sketch_io.decode(data, None, fold_into=(grid, state))
        out.append(True)
    except SketchFormatError as exc:
        out.append(str(exc))
    return out[0], out[1]


@st.composite
def mutated_sketches(draw):  # type: ignore[no-untyped-def]
    sk = _V4_SKETCHES[draw(st.integers(0, len(_V4_SKETCHES) - 1))]
    _, _, header, _ = split(sk.to_bytes())
    header = json.loads(json.dumps(header))
    keys, values = sk._compact()
    values = values.copy()
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["int counter", "float counter", "weighted", "cell", "unit"]))
        counters = header["counters"]
        if what == "int counter":
            name = draw(st.sampled_from(["n_rows", "n_nan", "n_zero_weight", "n_outside"]))
            counters[name] = max(0, counters.get(name, 0) + draw(st.integers(-2, 2)))
        elif what == "float counter":
            name = draw(st.sampled_from(["prob_weight", "brier_sum", "log_loss_sum"]))
            counters[name] = float(counters.get(name, 0.0)) * draw(st.sampled_from(FACTORS))
        elif what == "weighted":
            counters["weighted"] = not counters.get("weighted", False)
        elif what == "unit" and len(keys):  # weight 1.0 and one score: version 4's U32/U64 lists
            j, c = draw(st.integers(0, len(keys) - 1)), draw(st.integers(0, 1))
            x = draw(st.one_of(st.sampled_from(SPECIAL), st.just(float(values[j, 1 - c, 1])), st.just(float(values[j, c, 2]))))
            values[j, c] = [1.0, x, x, x]
        elif len(keys):
            j, c, f = draw(st.integers(0, len(keys) - 1)), draw(st.integers(0, 1)), draw(st.integers(0, 3))
            how = draw(st.sampled_from(["special", "next", "scale", "copy"]))
            x = float(values[j, c, f])
            if how == "special":
                x = draw(st.sampled_from(SPECIAL))
            elif how == "next" and math.isfinite(x):
                x = float(np.nextafter(x, draw(st.sampled_from([-math.inf, math.inf]))))
            elif how == "scale":
                x *= draw(st.sampled_from(FACTORS))
            elif how == "copy":
                x = float(values[draw(st.integers(0, len(keys) - 1)), draw(st.integers(0, 1)), f])
            values[j, c, f] = x
    return header, keys, values


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_sketches())
def test_mutated_bins_and_counters_get_the_same_verdict_in_both_layouts(case):
    _same_verdict_in_every_layout(case)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_sketches())
def test_many_mutated_bins_and_counters_get_the_same_verdict_in_every_layout(case):
    _same_verdict_in_every_layout(case)


def _same_verdict_in_every_layout(case: tuple) -> None:
    header, keys, values = case
    v1 = verdict(pack(header, v1_payload(keys, values), version=1))
    for general in (False, True):
        payload = sketch_layout.encode_payload(keys, values, general=general)
        assert verdict(pack(header, payload)) == expected_v3_verdict(header, payload, _grid_size(header))
        assert verdict(pack(header, payload)) == v1  # the empty cell is nibble 0 in both encodings
        columnar = sketch_layout.encode_columnar_payload(keys, values, general=general)
        assert verdict(pack(header, columnar, version=4)) == v1  # version 4: a bin of two empty cells is not stored
        for data in (pack(header, payload), pack(header, columnar, version=4)):
            load, fold = both_verdicts(data)  # merge_files folds: one verdict, one message
            assert load == fold and (load is True) == v1


def parse_columnar_strict(data: bytes, k: int, grid_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, values)`` of a version-4 payload, read as docs/sketch-format.md §4.2 says, or
    :class:`Refused` for a structural fault."""
    if len(data) < 24:
        raise Refused("shorter than the list lengths")
    m = struct.unpack_from("<6I", data, 0)
    if 24 + sum(n * (8, 12, 36)[i % 3] for i, n in enumerate(m)) != len(data):
        raise Refused("another length than the lists need")
    if sum(m) > 2 * k:
        raise Refused("more cells than 2 * n_bins")
    cells: list[dict[int, list[float]]] = [{}, {}]
    pos = 24
    for i, n in enumerate(m):
        c, form = divmod(i, 3)
        keys = struct.unpack_from(f"<{n}I", data, pos)
        pos += 4 * n
        if form == 2:
            cols = [struct.unpack_from(f"<{n}d", data, pos + 8 * n * f) for f in range(4)]
            pos += 32 * n
            rows = [list(r) for r in zip(*cols, strict=True)] if n else []
        else:
            fmt, size = ("f", 4) if form == 0 else ("d", 8)
            rows = [[1.0, x, x, x] for x in struct.unpack_from(f"<{n}{fmt}", data, pos)]
            pos += size * n
        prev = -1
        for key, cell in zip(keys, rows, strict=True):
            if key <= prev or key >= grid_size or key in cells[c]:
                raise Refused("keys not increasing inside the grid, or in two lists")
            if form == 2 and cell[0] == 0.0 and cell[1:] == [math.inf, -math.inf, 0.0]:
                raise Refused("the empty cell as a present cell")
            prev = key
            cells[c][key] = cell
    keys_all = sorted(set(cells[0]) | set(cells[1]))
    if len(keys_all) != k:
        raise Refused("another number of bins than n_bins")
    values = np.array([[cells[c].get(key, [0.0, math.inf, -math.inf, 0.0]) for c in range(2)] for key in keys_all])
    return np.array(keys_all, dtype=np.int64), values.reshape(k, 2, 4)


@st.composite
def mutated_columnar_payloads(draw):  # type: ignore[no-untyped-def]
    sk = _V4_SKETCHES[draw(st.integers(0, len(_V4_SKETCHES) - 1))]
    header = json.loads(json.dumps(split(sk.to_bytes())[2]))
    keys, values = sk._compact()  # all of them: the counters hold, so unchanged bytes are accepted
    payload = bytearray(sketch_layout.encode_columnar_payload(keys, values, general=draw(st.booleans())))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["flip", "set", "length", "insert", "delete", "truncate", "k"]))
        at = draw(st.integers(0, max(len(payload) - 1, 0)))
        if op == "flip" and payload:
            payload[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and payload:
            payload[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xF0]))
        elif op == "length" and len(payload) >= 24:
            i = draw(st.integers(0, 5))
            n = struct.unpack_from("<I", payload, 4 * i)[0]
            n = draw(st.sampled_from([0, 1, n - 1, n + 1, 2**31, 2**32 - 1, 2**32 - n])) % 2**32
            struct.pack_into("<I", payload, 4 * i, n)
        elif op == "insert":
            payload[at:at] = draw(st.binary(min_size=1, max_size=12))
        elif op == "delete":
            del payload[at:at + draw(st.integers(1, 12))]
        elif op == "truncate":
            del payload[at:]
        elif op == "k":
            header["n_bins"] = max(0, header["n_bins"] + draw(st.integers(-2, 2)))
    return header, bytes(payload), sk.grid.n_bins


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_columnar_payloads())
def test_mutated_columnar_payloads_get_the_version_1_verdict_on_both_paths(case):
    _columnar_verdict(case)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_columnar_payloads())
def test_many_mutated_columnar_payloads_get_the_version_1_verdict_on_both_paths(case):
    _columnar_verdict(case)


def _columnar_verdict(case: tuple) -> None:
    """Any version-4 payload: accepted exactly when the strict reading of §4.2 finds its structure
    valid and the same bins as version 1 are accepted; load and fold say the same thing."""
    header, payload, grid_size = case
    load, fold = both_verdicts(pack(header, payload, version=4))
    assert load == fold
    try:
        keys, values = parse_columnar_strict(payload, header["n_bins"], grid_size)
    except Refused:
        assert load is not True
        return
    assert (load is True) == verdict(pack(header, v1_payload(keys, values), version=1))
    if load is True:
        back = BinarySketch.from_bytes(pack(header, payload, version=4))._compact()
        assert np.array_equal(back[0], keys) and np.array_equal(bits(back[1]), bits(values))


def _grid_size(header: dict) -> int:
    from streameval.sketch.io_header import _grid

    return _grid(header["grid"], None).n_bins


# -- no read past the end: payloads placed against a page that faults when read ------------------

_GUARDED = r'''
import ctypes, mmap, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_io_compact import random_sketch, split
from streameval.errors import SketchFormatError
from streameval.sketch.io_compact import decode_compact

PAGE = mmap.PAGESIZE
mm = mmap.mmap(-1, 3 * PAGE)
base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
assert ctypes.CDLL(None).mprotect(ctypes.c_void_p(base + 2 * PAGE), PAGE, 0) == 0  # PROT_NONE
arena = np.frombuffer(mm, dtype=np.uint8, count=2 * PAGE)
rng = np.random.default_rng(int(sys.argv[2]))
done = refused = 0
for _ in range(int(sys.argv[3])):
    sk = random_sketch(rng)
    _, _, header, payload = split(sk.to_bytes(compress=False))
    if len(payload) <= 2 * PAGE:  # the whole payload, as written, reads
        view = arena[2 * PAGE - len(payload):]
        view[:] = np.frombuffer(payload, dtype=np.uint8)
        decode_compact(memoryview(view), header["n_bins"], sk.grid, False, None)
    payload = payload[: 2 * PAGE]
    for _ in range(30):
        p = bytearray(payload[: int(rng.integers(0, len(payload) + 1))])
        if p and rng.random() < 0.5:
            p[int(rng.integers(len(p)))] = int(rng.integers(256))
        view = arena[2 * PAGE - len(p):]  # the payload's last byte is the last readable one
        view[:] = np.frombuffer(bytes(p), dtype=np.uint8)
        try:
            decode_compact(memoryview(view), header["n_bins"] + int(rng.integers(0, 3)), sk.grid, False, None)
        except SketchFormatError:
            refused += 1
        done += 1
print("ok", done, refused)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect through libc: Linux only")
@pytest.mark.parametrize("sketches", [2, pytest.param(200, marks=pytest.mark.slow)])  # default suite time
def test_decoder_never_reads_past_the_payload(sketches):
    """Truncated and corrupted payloads end exactly where a PROT_NONE page begins: any read past the
    end (the kernels run without bounds checks) kills the child process with SIGSEGV."""
    import pathlib
    import subprocess

    tests = str(pathlib.Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", _GUARDED, tests, "5", str(sketches)], capture_output=True, text=True,
                         timeout=1200)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    done, refused = (int(x) for x in out.stdout.split()[1:])
    assert done == 30 * sketches and 0 < refused <= done


def test_any_memoryview_of_the_bytes_reads():
    """A strided or multi-dimensional memoryview of a file's bytes raised TypeError ("casts are
    restricted to C-contiguous views") from from_bytes instead of reading."""
    data = _SKETCHES[0].to_bytes()
    doubled = np.repeat(np.frombuffer(data, dtype=np.uint8), 2)
    square = np.zeros((len(data), 2), dtype=np.uint8)
    square[:, 0] = np.frombuffer(data, dtype=np.uint8)
    for view in (memoryview(doubled[::2]), memoryview(square[:, 0]), memoryview(np.frombuffer(data, dtype=np.uint8)).cast("B", (len(data), 1))):
        assert BinarySketch.from_bytes(view) == _SKETCHES[0]
    with pytest.raises(SketchFormatError):
        BinarySketch.from_bytes(memoryview(square[:, 1]))  # zeros: not a sketch


def test_the_largest_grid_keys_fit_4_byte_deltas(monkeypatch):
    """The largest grid §3.1 allows (201,850,881 bins; 256 cuts more at most) keeps every key below
    2**28, the most a 4-byte varint holds: its last bins round trip (with the size cap raised)."""
    monkeypatch.setenv("STREAMEVAL_MAX_GRID_BINS", str(1 << 28))
    grid = ProbabilityGrid(20, -65, tail_bits=19)
    assert grid.n_bins == 201_850_881 < 1 << 28
    sk = BinarySketch(grid).update([0, 1, 1], [-3e9, 0.5, 3e9])
    data = sk.to_bytes()
    back = BinarySketch.from_bytes(data)
    assert back == sk and back._compact()[0][-1] > 1 << 27
