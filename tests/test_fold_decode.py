"""Decoding a version-3 file straight into a running dense state (``io.decode(fold_into=...)``, the
path :func:`streameval.sketch.files.merge_files` takes) against decoding it and then merging.

The reference is the decode-then-fold path the library had before: ``io.decode`` without
``fold_into`` followed by ``kernels.binary.merge_into``. Folding must give the same state bit
for bit, the same class totals, and for any bytes the same verdict and the same message.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import sketch_layout
from hypothesis import HealthCheck, given, settings
from test_io_compact import pack, random_sketch, split
from test_io_compact_review import _SKETCHES, mutated_payloads, mutated_sketches

import streameval
from streameval import BinarySketch, SketchFormatError
from streameval.kernels import binary as kernels
from streameval.sketch import io
from streameval.sketch.files import merge_files


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _outcome(data: bytes, fold: bool, base: BinarySketch | None = None) -> tuple[str, object]:
    """``("ok", (state, totals))`` or ``("refused", message)``; any other exception escapes."""
    grid = None
    if base is not None:
        grid = base.grid
    else:
        try:
            grid = io.decode(data).grid  # type: ignore[union-attr]
        except SketchFormatError:
            pass
    state = None if grid is None else kernels.empty_state(grid.n_bins)
    if state is not None and base is not None:
        kernels.merge_into(state, *base._compact())
    try:
        if fold and state is not None:
            parts = io.decode(data, "f.sevsk", fold_into=(grid, state))
        else:
            parts = io.decode(data, "f.sevsk")
    except SketchFormatError as exc:
        return "refused", str(exc)
    assert isinstance(parts, io.SketchParts)
    if fold and state is not None:
        assert parts.folded and parts.keys.size == 0 and parts.values.size == 0
    elif state is not None:
        assert not parts.folded
        kernels.merge_into(state, parts.keys, parts.values)
    return "ok", (state, parts.class_totals)


def _same(a: tuple[str, object], b: tuple[str, object]) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "refused":
        assert a[1] == b[1]
    else:
        (sa, ta), (sb, tb) = a[1], b[1]  # type: ignore[misc]
        assert ta == tb
        assert (sa is None) == (sb is None)
        if sa is not None:
            assert np.array_equal(bits(sa), bits(sb))


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("compress", [False, True])
def test_folding_equals_decoding_then_merging(seed, compress):
    rng = np.random.default_rng(1000 + seed)
    sk = random_sketch(rng)
    base = BinarySketch(sk.grid)
    if rng.random() < 0.7:  # a running state that already holds other bins (some the same)
        other = random_sketch(np.random.default_rng(seed))
        if other.grid == sk.grid:
            base = other
    data = sk.to_bytes(compress=compress) if compress else sk.to_bytes()
    assert io._version(data) == 3
    folded, decoded = _outcome(data, True, base), _outcome(data, False, base)
    assert folded[0] == "ok"
    _same(folded, decoded)


def test_another_grid_or_version_is_decoded_whole():
    sk = _SKETCHES[0]
    other = BinarySketch(streameval.LinearGrid(0, 1, 8))
    state = kernels.empty_state(other.grid.n_bins)
    parts = io.decode(sk.to_bytes(), None, fold_into=(other.grid, state))
    assert not parts.folded and parts.keys.size == sk.n_occupied_bins  # type: ignore[union-attr]
    assert not state.any()
    state = kernels.empty_state(sk.grid.n_bins)
    parts = io.decode(sk.to_bytes(format_version=1), None, fold_into=(sk.grid, state))
    assert not parts.folded and not state.any()  # type: ignore[union-attr]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_payloads())
def test_mutated_payloads_get_the_same_verdict_and_message(case):
    header, payload, _ = case
    data = pack(header, payload)
    _same(_outcome(data, True), _outcome(data, False))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_sketches())
def test_mutated_bins_and_counters_get_the_same_verdict_and_message(case):
    """Counters moved to (and just past) the edges of what the bins allow: the folding path
    decides them without the bins when it can, and decodes them when it must."""
    header, keys, values = case
    for general in (False, True):
        data = pack(header, sketch_layout.encode_payload(keys, values, general=general))
        _same(_outcome(data, True), _outcome(data, False))


def test_a_sum_at_the_edge_is_decided_with_the_bins(monkeypatch):
    """A log-loss sum on either side of the last accepted value: decided with the exact bounds,
    which the folding path gets by decoding the file again."""
    from streameval.sketch import io_checks

    sk = _SKETCHES[1]
    header = split(sk.to_bytes())[2]
    pw = header["counters"]["prob_weight"]
    real = io_checks._probability_bounds
    _, _, l_lo, l_hi = real(np.ascontiguousarray(sk._compact()[1]))
    ok, bad = l_hi, l_hi * (1 + 1e-5)  # the last accepted value lies between: bisect to it
    assert io_checks._within(l_lo, l_hi, ok, pw)[0] and not io_checks._within(l_lo, l_hi, bad, pw)[0]
    while np.nextafter(ok, np.inf) < bad:
        mid = ok + (bad - ok) / 2
        ok, bad = (mid, bad) if io_checks._within(l_lo, l_hi, mid, pw)[0] else (ok, mid)
    calls: list[int] = []
    monkeypatch.setattr(io_checks, "_probability_bounds", lambda v: calls.append(1) or real(v))
    for value, accepted in ((ok, True), (bad, False)):
        header["counters"]["log_loss_sum"] = float(value)
        data = pack(header, sketch_layout.encode_payload(*sk._compact()))
        calls.clear()
        folded = _outcome(data, True, BinarySketch(sk.grid))
        assert (folded[0] == "ok") == accepted, folded
        assert calls  # the exact bounds were needed
        _same(folded, _outcome(data, False, BinarySketch(sk.grid)))


def test_merge_files_on_one_thread_is_the_sequential_merge_bit_for_bit(tmp_path):
    rng = np.random.default_rng(5)
    paths, sketches = [], []
    for i in range(9):
        n = 3000
        sk = BinarySketch().update((rng.random(n) < 0.3).astype(int), rng.random(n), rng.exponential(1.0, n) if i % 3 == 0 else None)
        p = tmp_path / f"s{i}.sevsk"
        sk.save(p, format_version=1 if i == 4 else None)  # one version-1 file among them: loaded whole
        paths.append(p)
        sketches.append(streameval.load(p))
    merged = merge_files(paths, threads=1)
    reference = streameval.merge(sketches)
    assert merged.to_bytes() == reference.to_bytes()
    two = merge_files(paths, threads=2)
    k1, v1 = two._compact()
    k2, v2 = reference._compact()
    assert np.array_equal(k1, k2) and np.array_equal(bits(v1[:, :, 1:3]), bits(v2[:, :, 1:3]))  # min, max
    assert np.allclose(v1[:, :, [0, 3]], v2[:, :, [0, 3]], rtol=1e-12, atol=0)  # weights and sums: rounding


def test_a_bad_file_among_folded_ones_names_itself(tmp_path):
    rng = np.random.default_rng(6)
    paths = []
    for i in range(10):
        p = tmp_path / f"s{i}.sevsk"
        BinarySketch().update((rng.random(500) < 0.3).astype(int), rng.random(500)).save(p)
        paths.append(p)
    data = bytearray(paths[6].read_bytes())
    head = 16 + int.from_bytes(data[12:16], "little") + 8
    while data[head] & 0x80:  # past the first key's varint
        head += 1
    data[head + 1] = 0  # the first bin's tag: an empty bin
    body = bytes(data[:-4])
    paths[6].write_bytes(body + zlib.crc32(body).to_bytes(4, "little"))
    with pytest.raises(SketchFormatError) as loading:
        streameval.load(paths[6])
    assert "s6.sevsk: a stored bin is empty: bin 0 has tag 0" in str(loading.value)
    for threads in (1, 2):
        with pytest.raises(SketchFormatError) as merging:
            merge_files(paths, threads=threads)
        assert str(merging.value) == str(loading.value)
