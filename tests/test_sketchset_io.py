"""SketchSet bytes (streameval.sketch.sketchset_io): round trip, determinism and corruption."""

from __future__ import annotations

import datetime as dt
import zlib

import numpy as np
import pyarrow as pa
import pytest

import streameval
from streameval.errors import InputError, SketchFormatError
from streameval.sketch import sketchset_io as sio
from streameval.sketch.sketchset import SketchSet
from streameval.slicing import sketch_slices


def _table(n: int = 3000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n).astype(object)
    y[rng.random(n) < 0.1] = None  # labels not arrived yet
    country = rng.choice(np.array(["fr", "de", "it", None], dtype=object), n)
    times = np.datetime64("2024-03-01") + rng.integers(0, 10 * 86400, n).astype("timedelta64[s]")
    t = pa.array(times.astype("datetime64[us]"), mask=rng.random(n) < 0.05)
    return pa.table({
        "p": rng.random(n), "y": pa.array(list(y), pa.int64()), "w": rng.uniform(0.1, 3, n),
        "country": pa.array(list(country), pa.string()), "tier": rng.integers(0, 4, n), "ts": t,
    })


def _sliced(tz: str | None = None, weighted: bool = True, **kw) -> SketchSet:
    ss, _ = sketch_slices(_table(), score="p", label="y", weight="w" if weighted else None,
                          by=["country", "tier"], time="ts", window="1d", tz=tz, **kw)
    return ss


def assert_same(a: SketchSet, b: SketchSet) -> None:
    assert a.key_names == b.key_names and a.grid == b.grid and a.max_groups == b.max_groups
    assert a.keys() == b.keys()
    assert [[type(v) for v in k] for k in a.keys()] == [[type(v) for v in k] for k in b.keys()]
    assert (a._labels.pos_label, a._labels.neg_label, a.weighted) == (b._labels.pos_label, b._labels.neg_label, b.weighted)
    ca, cb = a.group_counters(), b.group_counters()
    assert ca.keys() == cb.keys()
    for name in ca:
        assert np.array_equal(ca[name], cb[name]), name
    for x, y in zip(a.cell_columns(), b.cell_columns(), strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
def test_round_trip_is_exact_and_deterministic(tz):
    ss = _sliced(tz)
    data = ss.to_bytes()
    back = SketchSet.from_bytes(data)
    assert_same(ss, back)
    assert back.to_bytes() == data
    # Window keys keep their zone (they print and compare as in a local run).
    window = next(k[0] for k in back.keys() if k[0] is not None)
    assert isinstance(window, dt.datetime) and str(window.tzinfo) == (tz or "UTC")
    # Metrics of a group read back equal the original group's.
    key = ss.keys()[0]
    assert back.sketch(key).roc_auc() == ss.sketch(key).roc_auc()


def test_round_trip_of_string_labels_empty_and_unkeyed_sets():
    t = _table().append_column("status", pa.array(np.where(np.arange(3000) % 3 == 0, "fraud", "ok")))
    ss, _ = sketch_slices(t, score="p", label="status", by="country", pos_label="fraud", max_groups=77)
    back = SketchSet.from_bytes(ss.to_bytes())
    assert_same(ss, back)
    assert back._labels.pos_label == "fraud" and back._labels.neg_label == "ok"
    for empty in (SketchSet(["a", "b"]), SketchSet([])):
        assert_same(empty, SketchSet.from_bytes(empty.to_bytes()))
    one = SketchSet([]).update([], [0, 1, 1], [0.1, 0.8, 0.3])
    assert_same(one, SketchSet.from_bytes(one.to_bytes()))


def test_merge_after_round_trip_equals_merge_before():
    a, b = _sliced(), _sliced()
    ss2, _ = sketch_slices(_table(seed=5), score="p", label="y", weight="w", by=["country", "tier"], time="ts", window="1d")
    direct = a.merge(ss2)
    shipped = SketchSet.from_bytes(b.to_bytes()).merge(SketchSet.from_bytes(ss2.to_bytes()))
    assert_same(direct, shipped)


def test_mixed_type_keys_are_refused_with_the_key_name():
    ss = SketchSet(["k"])
    ss.update({"k": [1]}, [0], [0.2])
    ss.update({"k": ["1"]}, [1], [0.7])
    with pytest.raises(InputError, match="'k'.*mix"):
        ss.to_bytes()


# -- corruption -------------------------------------------------------------------------------

def _pack(groups: pa.Table, cells: pa.Table, version: int = sio.FORMAT_VERSION, flags: int = 0) -> bytes:
    first = sio._ipc(groups)
    payload = first + sio._ipc(cells)
    return sio._HEAD.pack(sio.MAGIC, version, flags, zlib.crc32(payload), len(payload), len(first)) + payload


def _parts(ss: SketchSet) -> tuple[pa.Table, pa.Table]:
    head, tail = sio._header(ss.to_bytes(), None)
    return sio._read_ipc(head, "groups", None), sio._read_ipc(tail, "cells", None)


def test_every_truncation_and_byte_flip_is_detected():
    data = _sliced(weighted=False).to_bytes()
    rng = np.random.default_rng(1)
    for cut in [0, 7, 8, 23, 24, 40, *rng.integers(25, len(data), 30).tolist(), len(data) - 1]:
        with pytest.raises(SketchFormatError):
            SketchSet.from_bytes(data[:cut])
    for at in [0, 9, 12, 17, 25, *rng.integers(32, len(data), 40).tolist()]:
        bad = bytearray(data)
        bad[at] ^= 0x5A
        with pytest.raises(SketchFormatError):
            SketchSet.from_bytes(bytes(bad))
    with pytest.raises(SketchFormatError):
        SketchSet.from_bytes(data + b"\0")


def test_header_errors_name_the_cause():
    ss = _sliced()
    g, c = _parts(ss)
    with pytest.raises(SketchFormatError, match="version mismatch: expected 1, got 7; upgrade"):
        SketchSet.from_bytes(_pack(g, c, version=7))
    with pytest.raises(SketchFormatError, match="flags"):
        SketchSet.from_bytes(_pack(g, c, flags=1))
    with pytest.raises(SketchFormatError, match="bad magic"):
        SketchSet.from_bytes(streameval.BinarySketch().update([0, 1], [0.2, 0.9]).to_bytes())
    with pytest.raises(SketchFormatError, match="checksum"):
        SketchSet.from_bytes(ss.to_bytes()[:-1] + b"\x07")
    with pytest.raises(TypeError):
        SketchSet.from_bytes("not bytes")  # type: ignore[arg-type]


def _replace(table: pa.Table, name: str, values) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


def test_contents_are_checked_behind_a_valid_checksum():
    ss = _sliced()
    g, c = _parts(ss)
    n_bins = ss.grid.n_bins
    b = c.column("bin").to_numpy().copy()
    w = c.column("weight").to_numpy().copy()
    lo, hi = c.column("min").to_numpy(), c.column("max").to_numpy()
    rows = g.column("n_rows").to_numpy().copy()
    cases = {
        "outside": (g, _replace(c, "bin", np.where(np.arange(len(b)) == 3, n_bins, b))),
        "ordered": (g, c.take(np.r_[1, 0, np.arange(2, c.num_rows)])),
        "weights": (g, _replace(c, "weight", np.where(np.arange(len(w)) == 5, -1.0, w))),
        "min <= max": (g, _replace(c, "max", np.where(np.arange(len(w)) == 2, lo - 1, hi))),
        "non-negative": (_replace(g, "n_rows", np.where(np.arange(len(rows)) == 0, -4, rows)), c),
        "unlabelled rows than rows": (_replace(g, "n_unlabelled", rows + 1), c),
        "columns": (g.drop_columns(["brier_sum"]).replace_schema_metadata(g.schema.metadata), c),
        "cells table has columns": (g, c.drop_columns(["score_sum"])),
        "distinct": (g.take(np.zeros(g.num_rows, dtype=np.int64)).replace_schema_metadata(g.schema.metadata), c),
        "metadata": (g.replace_schema_metadata({}), c),
    }
    for match, (gg, cc) in cases.items():
        with pytest.raises(SketchFormatError, match=match):
            SketchSet.from_bytes(_pack(gg, cc))
    meta = g.schema.metadata[b"streameval.sketchset"].decode()
    for old, new, match in [('"max_groups": 1000000', '"max_groups": 0', "max_groups"),
                            ('"weighted": true', '"weighted": 1', "weighted"),
                            ('"neg_label": 0', '"neg_label": 1', "negative label")]:
        assert old in meta
        with pytest.raises(SketchFormatError, match=match):
            SketchSet.from_bytes(_pack(g.replace_schema_metadata({"streameval.sketchset": meta.replace(old, new)}), c))
    spec_broken = meta.replace('"grid": {', '"grid": {"kind": "nonsense", "x": {')
    with pytest.raises(SketchFormatError):
        SketchSet.from_bytes(_pack(g.replace_schema_metadata({"streameval.sketchset": spec_broken}), c))
