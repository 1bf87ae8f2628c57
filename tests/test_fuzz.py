"""Fuzzing the sketch reader: hostile and unlucky bytes give a documented error or a sane sketch.

Every case starts from a valid file of some kind (grid kind, weighted or not, NaN rows, scores
outside [0, 1], one class only, empty, compressed or not) and applies one to three mutations:
raw byte edits (with and without a fixed-up CRC), structured edits of header fields (counters,
grid parameters, labels, bin count) and of payload cells (weights, min, max, sums, key deltas,
bins added or dropped), and edits that keep the framing valid but break a consistency rule.

For each case the reader must either raise ``SketchFormatError`` (nothing else), or return a
sketch whose every metric is in its valid range (AUC and its bounds in [0, 1] and ordered, log
loss >= 0, Brier in [0, 1], rates in [0, 1], ...), that re-encodes to bytes it reads back equal.

The default run checks a few thousand cases; ``pytest -m slow`` runs 100,000 more.
"""

from __future__ import annotations

import copy
import json
import math
import struct
import warnings
import zlib
from typing import Any, Callable

import numpy as np
import pytest
import sketch_layout

from streameval import BinarySketch, FloatGrid, LinearGrid, ProbabilityGrid, SketchFormatError
from streameval.errors import StreamevalError
from streameval.report.binary import compute_metrics

MAGIC = b"\x89SEVSK\r\n"


# -- valid files of every kind -----------------------------------------------------------------


def _bases() -> list[bytes]:
    rng = np.random.default_rng(2024)
    grids = [
        LinearGrid(0.0, 1.0, 16),
        LinearGrid(300, 851, 551),
        ProbabilityGrid(4, -12),
        ProbabilityGrid(3, -8, tail_bits=None),
        ProbabilityGrid(),
        FloatGrid(3, -6, 6),
        LinearGrid(0.0, 1.0, 8).with_cuts(0.25, 0.5),
        ProbabilityGrid(4, -12).with_cuts(0.5),
    ]
    out = []
    for gi, grid in enumerate(grids):
        for variant in range(5):
            n = [0, 1, 12, 80, 400][variant]
            if isinstance(grid, LinearGrid) and grid.lo == 300:
                s = np.round(rng.uniform(250, 900, n))
            elif isinstance(grid, FloatGrid):
                s = rng.normal(0, 3, n)
            else:
                s = rng.random(n) ** 2
                if variant == 3:
                    s[::9] = rng.choice([-0.5, 1.5, 7.0], s[::9].shape)  # outside [0, 1]
            y = (rng.random(n) < 0.35).astype(np.int8)
            if variant == 2:
                y[:] = 1  # one class only
            weighted = (gi + variant) % 2 == 1
            w = rng.exponential(2.0, n) if weighted else None
            if w is not None:
                w[::7] = 0.0
            if variant == 4:
                s[::11] = np.nan
            pos_label = None
            labels: Any = y
            if gi == 1 and variant == 3:
                pos_label, labels = "fraud", np.where(y == 1, "fraud", "ok")
            sk = BinarySketch(grid, pos_label=pos_label).update(labels, s, w, nan_policy="skip")
            out.append(sk.to_bytes(compress=(gi + variant) % 3 != 0, format_version=1))
            out.append(sk.to_bytes(compress=(gi + variant) % 3 == 0))  # version 3
    return out


BASES = _bases()


# -- file surgery (the documented layout, independent of streameval.sketch.io) ---------------------------


def _split(data: bytes) -> tuple[int, int, dict, np.ndarray, np.ndarray]:
    _, version, flags, hlen = struct.unpack_from("<8sHHI", data, 0)
    header = json.loads(data[16:16 + hlen])
    (plen,) = struct.unpack_from("<Q", data, 16 + hlen)
    payload = data[24 + hlen:24 + hlen + plen]
    if flags & 1:
        payload = zlib.decompress(payload)
    k = header["n_bins"]
    if version == 3:
        keys, values = sketch_layout.decode_payload(payload, k)
        return version, flags, header, np.diff(keys, prepend=np.int64(0)), values
    deltas = np.frombuffer(payload, dtype="<u4", count=k).astype(np.int64)
    values = np.frombuffer(payload, dtype="<f8", offset=4 * k).reshape(k, 2, 4).copy()
    return version, flags, header, deltas, values


def _pack(version: int, flags: int, header: Any, deltas: np.ndarray, values: np.ndarray,
          raw_header: bytes | None = None, extra_zlib: bytes = b"") -> bytes:
    hbytes = raw_header if raw_header is not None else json.dumps(header, sort_keys=True).encode()
    if version == 3:  # every cell written in the general form (valid, never what the writer picks)
        keys = np.cumsum(np.asarray(deltas, dtype=np.int64))
        payload = sketch_layout.encode_payload(keys, np.asarray(values, dtype=np.float64).reshape(-1, 2, 4), general=True)
    else:
        payload = (np.asarray(deltas) % (1 << 32)).astype("<u4").tobytes() + np.asarray(values, dtype="<f8").tobytes()
    if flags & 1:
        payload = zlib.compress(payload) + extra_zlib
    body = struct.pack("<8sHHI", MAGIC, version, flags, len(hbytes)) + hbytes + struct.pack("<Q", len(payload)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


def _recrc(data: bytes) -> bytes:
    """Fix the CRC (and the payload length) after a raw edit, so the checks after it are reached."""
    if len(data) < 28:
        return data
    hlen = struct.unpack_from("<I", data, 12)[0]
    if 24 + hlen > len(data) - 4:
        return data
    body = bytearray(data[:-4])
    struct.pack_into("<Q", body, 16 + hlen, len(body) - 24 - hlen)
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


# -- mutations ---------------------------------------------------------------------------------

SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, 1e-300, 1.0, -1.0,
                  0.5, 2.0, 1e300, 1e16, 0.9999999999999999]
SPECIAL_VALUES = SPECIAL_FLOATS + [0, 1, -1, 2**63, 2**63 - 1, 2**64, 10**30, 10**400, "3", "", True, False, None,
                                   [], {}, [1, 2], {"a": 1}, "x" * 5000]


def _pick(rng: np.random.Generator, seq: list) -> Any:
    # a copy: the lists and dicts of SPECIAL_VALUES would otherwise be shared between the places a
    # case puts them (a counters dict set to the shared {} and then edited held itself: circular)
    # and edited across cases
    return copy.deepcopy(seq[int(rng.integers(len(seq)))])


def _perturb_number(rng: np.random.Generator, x: Any) -> Any:
    try:
        return _perturb(rng, x)
    except OverflowError:  # a 400-digit integer times a float
        return math.inf


def _perturb(rng: np.random.Generator, x: Any) -> Any:
    r = int(rng.integers(8))
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return _pick(rng, SPECIAL_VALUES)
    if r == 0:
        return x + 1
    if r == 1:
        return x - 1
    if r == 2:
        return x * 2
    if r == 3:
        return x * 0.5
    if r == 4:
        return -x
    if r == 5:
        return float(x) * (1 + 1e-9)
    if r == 6:
        return type(x)(0)
    return _pick(rng, SPECIAL_VALUES)


def _mutate_header(rng: np.random.Generator, h: dict) -> None:
    r = int(rng.integers(7))
    if r == 0:  # a counter
        name = _pick(rng, ["n_rows", "n_nan", "n_zero_weight", "n_outside", "prob_weight", "brier_sum",
                           "log_loss_sum", "weighted", "n_other"])
        c = h.setdefault("counters", {})
        if isinstance(c, dict):
            c[name] = _perturb_number(rng, c.get(name, 0))
    elif r == 1:  # a grid parameter, possibly nested
        g = h.get("grid")
        if not isinstance(g, dict):
            return
        if g.get("kind") == "cut" and isinstance(g.get("cuts"), list) and g["cuts"] and rng.random() < 0.5:
            cuts = list(g["cuts"])
            op = int(rng.integers(5))
            if op == 0:
                cuts.reverse()
            elif op == 1:
                cuts.append(cuts[-1])
            elif op == 2:
                cuts.append(_pick(rng, SPECIAL_VALUES))
            elif op == 3:
                cuts = []
            else:
                cuts = [str(c) for c in cuts]
            g["cuts"] = cuts
            return
        if g.get("kind") == "cut" and isinstance(g.get("base"), dict):
            g = g["base"]
        key = _pick(rng, sorted(g) + ["extra"])
        g[key] = _perturb_number(rng, g.get(key)) if key != "kind" else _pick(rng, ["linear", "float", "cut", "x", 1])
    elif r == 2:
        h["n_bins"] = _perturb_number(rng, h.get("n_bins", 0))
    elif r == 3:  # labels
        meta = h.setdefault("meta", {})
        if isinstance(meta, dict):
            key = _pick(rng, ["pos_label", "neg_label", "created_by"])
            meta[key] = _pick(rng, SPECIAL_VALUES + [meta.get("pos_label"), meta.get("neg_label")])
    elif r == 4:
        key = _pick(rng, ["sketch", "grid", "n_bins", "counters", "meta"])
        if rng.random() < 0.5:
            h.pop(key, None)
        else:
            h[key] = _pick(rng, SPECIAL_VALUES)
    elif r == 5:  # a consistent-looking but wrong counter: scaled a little
        c = h.get("counters")
        if isinstance(c, dict):
            name = _pick(rng, ["prob_weight", "brier_sum", "log_loss_sum", "n_rows", "n_outside"])
            x = c.get(name, 0)
            factor = float(_pick(rng, [0.9, 1.1, 0.0, 1.5, 3.0]))
            c[name] = _perturb_number(rng, x) if not isinstance(x, (int, float)) or abs(x) > 1e300 else type(x)(x * factor)
    else:
        h["weighted"] = True  # an unknown top-level key: ignored


def _mutate_values(rng: np.random.Generator, d: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = v.shape[0]
    r = int(rng.integers(8))
    if k == 0 or r == 7:  # add a bin
        new = np.array([[[1.0, 0.3, 0.3, 0.3], [0.0, np.inf, -np.inf, 0.0]]])
        new[0, 0, 1:] = _pick(rng, SPECIAL_FLOATS)
        pos = int(rng.integers(k + 1))
        d = np.insert(d, pos, int(rng.integers(0, 4)))
        v = np.insert(v, pos, new, axis=0)
        return d, v
    b, c, f = int(rng.integers(k)), int(rng.integers(2)), int(rng.integers(4))
    if r == 0:
        v[b, c, f] = _pick(rng, SPECIAL_FLOATS)
    elif r == 1:
        x = _perturb_number(rng, float(v[b, c, f]))
        try:
            v[b, c, f] = float(x) if isinstance(x, (int, float)) else 0.0
        except OverflowError:
            v[b, c, f] = math.inf
    elif r == 2:
        v[b, c, 1], v[b, c, 2] = v[b, c, 2], v[b, c, 1]
    elif r == 3:
        v[b, c, 0] *= _pick(rng, [0.0, 0.5, 2.0, 1e300, 1e-300])
    elif r == 4:
        d[int(rng.integers(k))] = _pick(rng, [0, 1, 2, (1 << 32) - 1, int(rng.integers(0, 1 << 20))])
    elif r == 5:  # drop a bin (framing stays valid; the counters no longer match)
        d, v = np.delete(d, b), np.delete(v, b, axis=0)
    else:
        with np.errstate(all="ignore"):
            v[b, c, 3] = v[b, c, 0] * v[b, c, _pick(rng, [1, 2])] * _pick(rng, [1.0, 1.001, 0.999, 1.1])
    return d, v


def _mutate_raw(rng: np.random.Generator, data: bytes) -> bytes:
    b = bytearray(data)
    r = int(rng.integers(6))
    if r == 0:
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(len(b)))] ^= int(rng.integers(1, 256))
    elif r == 1:
        del b[int(rng.integers(len(b))):]
    elif r == 2:
        b += bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8))
    elif r == 3:
        at = int(rng.integers(len(b)))
        b[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8))
    elif r == 4:
        struct.pack_into("<H", b, 8 + 2 * int(rng.integers(2)), int(rng.integers(0, 1 << 16)))
    else:
        struct.pack_into("<I", b, 12, int(rng.integers(0, 1 << 32)))
    return _recrc(bytes(b)) if rng.random() < 0.7 else bytes(b)


def mutate(rng: np.random.Generator, base: bytes) -> bytes:
    version, flags, h, d, v = _split(base)
    raw_header = None
    extra = b""
    for _ in range(int(rng.integers(1, 4))):
        r = rng.random()
        if r < 0.45:
            _mutate_header(rng, h)
        elif r < 0.85:
            d, v = _mutate_values(rng, d, v)
            if rng.random() < 0.8:
                h["n_bins"] = int(v.shape[0])  # keep the framing consistent, so the rules are reached
        elif r < 0.9:
            flags ^= 1
        elif r < 0.95:
            extra = bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
        elif r < 0.98:
            flags ^= 1 if rng.random() < 0.2 else 0
        else:
            raw_header = json.dumps(h, sort_keys=True).replace('"n_bins"', '"n_bins":0,"n_bins"', 1).encode()
    data = _pack(version, flags, h, d, v, raw_header, extra)
    if rng.random() < 0.15:
        data = _mutate_raw(rng, data)
    return data


# -- the oracle ----------------------------------------------------------------------------------

UNIT = ("prevalence", "roc_auc", "partial_roc_auc", "average_precision", "pr_auc", "brier", "ece", "ks", "eer",
        "best_f1")
RATES = ("accuracy", "balanced_accuracy", "precision", "recall", "specificity", "npv", "fpr", "fnr", "f1", "p4",
         "jaccard", "prevalence", "baseline_accuracy")
SIGNED = ("mcc", "informedness", "markedness")
EPS = 1e-9


def _in(x: Any, lo: float, hi: float) -> bool:
    return x is None or (isinstance(x, (int, float)) and lo - EPS <= x <= hi + EPS)


def check_metrics(sk: BinarySketch) -> None:
    """Every metric of an accepted sketch is in its valid range, or undefined (None / a documented error)."""
    m, confusion, _notes = compute_metrics(sk, [0.5])
    assert m["n_rows"] >= 0
    for key in ("positives", "negatives"):
        assert math.isfinite(m[key]["value"]) and m[key]["value"] >= 0, (key, m[key])
    for key, entry in m.items():
        if not isinstance(entry, dict) or entry.get("value") is None:
            continue
        value = entry["value"]
        lower = value if entry.get("lower") is None else entry["lower"]
        upper = value if entry.get("upper") is None else entry["upper"]
        assert all(isinstance(x, (int, float)) and math.isfinite(x) for x in (value, lower, upper)), (key, entry)
        assert lower - EPS <= value <= upper + EPS, (key, entry)
        if key in UNIT:
            assert _in(lower, 0, 1) and _in(upper, 0, 1), (key, entry)
        elif key == "gini":
            assert _in(lower, -1, 1) and _in(upper, -1, 1), (key, entry)
        elif key == "log_loss":
            assert 0 <= value <= 36.05, (key, entry)
    for table in confusion + ([m["best_f1"]["confusion"]] if m.get("best_f1", {}).get("confusion") else []):
        for key in ("tp", "fp", "fn", "tn"):
            assert math.isfinite(table[key]) and table[key] >= 0, (key, table)
        for key in RATES:
            assert _in(table.get(key), 0, 1), (key, table)
        for key in SIGNED:
            assert _in(table.get(key), -1, 1), (key, table)
    fpr, tpr, _ = sk.roc_curve()
    if not (np.all(np.isfinite(fpr)) and np.all(np.isfinite(tpr))):
        t = sk.table()
        assert t.P == 0 or t.N == 0  # undefined (NaN, with a warning) only when a class is missing
    elif fpr.size:
        assert np.all(np.diff(fpr) >= -EPS) and np.all(np.diff(tpr) >= -EPS)
        assert fpr.min() >= -EPS and tpr.max() <= 1 + EPS
    again = BinarySketch.from_bytes(sk.to_bytes())
    assert again == sk
    assert sk.merge(again).n_rows == 2 * sk.n_rows


def run_cases(n: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    stats = {"cases": 0, "rejected": 0, "accepted": 0}
    errors: dict[str, int] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            base = BASES[i % len(BASES)]
            data = mutate(rng, base)
            stats["cases"] += 1
            try:
                sk = BinarySketch.from_bytes(data)
            except SketchFormatError as exc:
                stats["rejected"] += 1
                reason = str(exc).split(":")[0][:40]
                errors[reason] = errors.get(reason, 0) + 1
                continue
            except BaseException as exc:  # noqa: BLE001 - the point of the test
                raise AssertionError(f"case {i} (seed {seed}): undocumented {type(exc).__name__}: {exc}") from exc
            stats["accepted"] += 1
            try:
                check_metrics(sk)
            except StreamevalError:
                pass  # a metric that is undefined for this sketch, documented as such
            except AssertionError as exc:
                raise AssertionError(f"case {i} (seed {seed}): accepted sketch with impossible metrics: {exc}") from exc
    stats["distinct_errors"] = len(errors)
    return stats


@pytest.mark.filterwarnings("ignore")
def test_bases_are_valid():
    for data in BASES:
        check_metrics(BinarySketch.from_bytes(data))


def test_fuzz_default():
    stats = run_cases(3000, seed=1)
    assert stats["cases"] == 3000
    # the mutations reach deep: many distinct rejections, and some mutated files are still valid
    assert stats["rejected"] > 1500 and stats["accepted"] > 50 and stats["distinct_errors"] > 20, stats


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_fuzz_slow(seed):
    stats = run_cases(10_000, seed=100 + seed)
    assert stats["cases"] == 10_000


# -- structured generation: every counter and cell set to a value that breaks one rule -----------

Mutator = Callable[[dict, np.ndarray], None]


def _structured_cases() -> list[tuple[str, Mutator]]:
    cases: list[tuple[str, Mutator]] = []
    for name in ("n_rows", "n_nan", "n_zero_weight", "n_outside"):
        for bad in (-1, 2**63, 1.5, "1", None, True):
            cases.append((f"{name}={bad!r}", lambda h, v, n=name, b=bad: h["counters"].__setitem__(n, b)))
    for name in ("prob_weight", "brier_sum", "log_loss_sum"):
        for bad in (-1.0, math.nan, math.inf, "1", None, 1e301 * 100):
            cases.append((f"{name}={bad!r}", lambda h, v, n=name, b=bad: h["counters"].__setitem__(n, b)))
    for field, bad in ((0, -1.0), (0, math.nan), (0, math.inf), (1, math.nan), (2, math.nan), (3, math.nan),
                       (3, 1e9), (3, -1e9)):
        cases.append((f"cell field {field}={bad!r}", lambda h, v, f=field, b=bad: v[0, int(np.argmax(v[0, :, 0]))].__setitem__(f, b)))
    cases.append(("min > max", lambda h, v: v[0, int(np.argmax(v[0, :, 0]))].__setitem__(slice(1, 3), [0.9, 0.1])))
    cases.append(("empty cell with min", lambda h, v: v[0].__setitem__((int(np.argmin(v[0, :, 0])), 1), 0.2)))
    cases.append(("pos == neg label", lambda h, v: h["meta"].update(pos_label=0, neg_label=0)))
    cases.append(("NaN neg label", lambda h, v: h["meta"].update(pos_label="a", neg_label=math.nan)))
    return cases


@pytest.mark.parametrize("layout", [1, 3])
@pytest.mark.parametrize("case", range(len(_structured_cases())))
def test_structured_inconsistencies_are_refused(case, layout):
    name, edit = _structured_cases()[case]
    rng = np.random.default_rng(7)
    y = (rng.random(200) < 0.4).astype(np.int8)
    base = BinarySketch(ProbabilityGrid(4, -12)).update(y, rng.random(200)).to_bytes(format_version=layout)
    version, flags, h, d, v = _split(base)
    if np.all(v[0, :, 0] > 0) and "empty cell" in name:
        v = v[np.argmin((v[:, :, 0] > 0).all(axis=1))][None]  # a bin with one empty class
        d = d[:1]
        h["n_bins"] = 1
    edit(h, v)
    with pytest.raises(SketchFormatError):
        BinarySketch.from_bytes(_pack(version, flags, h, d, v))


# -- no false alarms: sketches streameval writes are always read back ------------------------------


def _random_valid_sketch(rng: np.random.Generator) -> BinarySketch:
    grid = [LinearGrid(-2.0, 3.0, 40), ProbabilityGrid(6, -20), FloatGrid(4, -10, 10), ProbabilityGrid(),
            LinearGrid(0, 1, 4).with_cuts(0.3)][int(rng.integers(5))]
    sk = BinarySketch(grid)
    scale = 10.0 ** rng.uniform(-300, 290)
    for _ in range(int(rng.integers(1, 6))):
        n = int(rng.integers(0, 3000))
        kind = int(rng.integers(4))
        s = [rng.random(n), rng.normal(0, 5, n), np.round(rng.random(n), 2), rng.random(n) ** 8][kind]
        s[rng.random(n) < 0.02] = np.nan
        y = (rng.random(n) < rng.random()).astype(np.int8)
        w = None
        if rng.random() < 0.5:
            w = rng.exponential(1.0, n) * scale
            w[rng.random(n) < 0.05] = 0.0
        sk.update(y, s, w, nan_policy="skip")
    return sk


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("seed", range(4))
def test_written_sketches_are_always_read_back(seed):
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(25):
            parts = [_random_valid_sketch(rng) for _ in range(int(rng.integers(1, 4)))]
            grids = {p.grid for p in parts}
            if len(grids) > 1:
                parts = parts[:1]
            sk = parts[0] if len(parts) == 1 else parts[0].merge(parts[1]) if len(parts) == 2 else parts[0].merge(parts[1]).merge(parts[2])
            for compress in (True, False):
                back = BinarySketch.from_bytes(sk.to_bytes(compress=compress))
                assert back == sk
            check_metrics(sk)
