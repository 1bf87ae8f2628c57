"""Batches of shards folded as arrays (:mod:`streameval.sketch.fold_scan`): the compiled header
scan reads exactly what the lean path's regular expression reads, and ``merge_files`` gives the
same sketch bit for bit, the same warnings and the same first error as with every file checked
one by one (the per-file path) and as loading and merging each file in order."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fold_files import _assert_same, _merge, _pack, _reference, _sketch, _split
from test_io_compact import bits

from streameval import BinarySketch, ProbabilityGrid
from streameval.kernels.headscan import LIT_ENDS, LITERALS, scan_headers
from streameval.sketch import fold_files, fold_scan
from streameval.sketch.fold_files import _HEADER

GRID = ProbabilityGrid(mantissa_bits=6, min_exponent=-20)  # small dense states: fast
TEMPLATE = b'"grid":{"kind":"probability","mantissa_bits":6,"min_exponent":-20,"tail_bits":10},"meta":{"neg_label":0}'
BASE = (b'{"counters":{"brier_sum":17.04296081937396,"log_loss_sum":51.23381661379398,"n_nan":0,"n_outside":0,'
        b'"n_rows":100,"n_zero_weight":0,"prob_weight":100.0,"weighted":false},' + TEMPLATE
        + b',"n_bins":82,"sketch":"binary"}')
TOKENS = [b"0", b"00", b"01", b"1", b"12", b"1.5", b"1.", b".5", b"1e5", b"1e", b"1E+5", b"1e-", b"2.5e-3", b"0.0e0",
          b"9" * 19, b"9" * 20, b"1" + b"0" * 18, b"-1", b"1.5.5", b"9223372036854775807", b"9223372036854775808",
          b"1e999", b"", b" 1", b"true"]
FIELDS = (b"brier_sum", b"log_loss_sum", b"n_nan", b"n_outside", b"n_rows", b"n_zero_weight", b"prob_weight", b"n_bins")


def _scan(headers: list[bytes], template: bytes = TEMPLATE):
    buf = np.frombuffer(b"".join(headers) or b"\0", dtype=np.uint8)
    sizes = np.array([len(h) for h in headers], dtype=np.int64)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    n = len(headers)
    ints = np.zeros((n, 5), np.int64)
    spans = np.zeros((n, 3, 2), np.int64)
    weighted = np.zeros(n, np.bool_)
    ok = np.zeros(n, np.bool_)
    scan_headers(buf, starts, ends, LITERALS, LIT_ENDS, np.frombuffer(template, np.uint8), ints, spans, weighted, ok)
    out = []
    for j, h in enumerate(headers):
        if not ok[j]:
            out.append(None)
            continue
        tokens = [h[spans[j, t, 0] - starts[j]:spans[j, t, 1] - starts[j]] for t in range(3)]
        out.append((ints[j].tolist(), tokens, bool(weighted[j])))
    return out


def _regex(header: bytes, template: bytes = TEMPLATE):
    """What the scan must give, from the lean path's regular expression: None unless it matches with
    ``template`` as its grid-and-meta group, no squared weights and integers below 2**63."""
    m = _HEADER.fullmatch(header)
    if m is None or m.group(9) != template or m.group(11) is not None:
        return None
    g = m.groups()
    ints = [int(g[2]), int(g[3]), int(g[4]), int(g[5]), int(g[9])]
    if max(ints) > (1 << 63) - 1:
        return None
    return ints, [g[0], g[1], g[6]], g[7] == b"true"


def _edited(field: bytes, token: bytes) -> bytes:
    return re.sub(b'"' + field + b'":[0-9.e]+', lambda m: b'"' + field + b'":' + token, BASE, count=1)


def test_the_scan_reads_what_the_regular_expression_reads_token_by_token():
    headers = [BASE, BASE.replace(b"false", b"true"), BASE.replace(b"false", b"tru"), BASE[:-1], BASE + b" ",
               BASE.replace(b'"binary"', b'"multiclass"'), BASE.replace(TEMPLATE, TEMPLATE[:-1] + b"1}"),
               BASE.replace(b'"sketch":"binary"}', b'"sketch":"binary","weight_sq":[1.5,2]}'), b"", b"{"]
    headers += [_edited(f, t) for f in FIELDS for t in TOKENS]
    got = _scan(headers)
    for h, g in zip(headers, got, strict=True):
        assert g == _regex(h), h
    assert sum(g is not None for g in got) > 60  # many accepted, not only refusals


def test_the_scan_reads_what_the_regular_expression_reads_on_random_edits():
    rng = random.Random(7)
    alphabet = b'0123456789.eE+-,:"{}abtrufls_ '
    seeds = [BASE, BASE.replace(b"false", b"true")] + [_edited(f, t) for f in FIELDS for t in TOKENS[:14]]
    headers = []
    for _ in range(6000):
        h = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(h))
            op = rng.random()
            if op < 0.4:
                h[at] = rng.choice(alphabet)
            elif op < 0.7:
                h[at:at] = bytes([rng.choice(alphabet)])
            else:
                del h[at]
        headers.append(bytes(h))
    got = _scan(headers)
    for h, g in zip(headers, got, strict=True):
        assert g == _regex(h), h
    assert 30 < sum(g is not None for g in got) < len(headers)  # (59 with this seed)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOKENS) | st.from_regex(rb"\A[0-9][0-9.eE+-]{0,24}\Z"), min_size=8, max_size=8))
def test_the_scan_reads_any_number_tokens_as_the_regular_expression(tokens):
    header = BASE
    for field, token in zip(FIELDS, tokens, strict=True):
        header = _edited(field, token)
    assert _scan([header]) == [_regex(header)]


def _shards(tmp_path, n: int, seed: int, version: int = 4, labels=None) -> list:
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        p = tmp_path / f"s{i:03d}.sevsk"
        _sketch(rng, 200, grid=GRID, labels=labels).save(p, format_version=version)
        paths.append(p)
    return paths


@pytest.fixture
def spy(monkeypatch):
    """Counts the batches folded as arrays; with ``spy.enabled`` False every batch goes file by file."""
    real = fold_scan.scan_batch

    class Spy:
        taken = 0
        enabled = True

    s = Spy()

    def scan_batch(*args, **kwargs):
        got = real(*args, **kwargs) if s.enabled else None
        s.taken += got is not None
        return got

    monkeypatch.setattr(fold_scan, "scan_batch", scan_batch)
    return s


def _per_file(paths, threads, spy):
    """merge_files with the array path off: every file checked one by one."""
    spy.enabled = False
    try:
        return _merge(paths, threads)
    finally:
        spy.enabled = True


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("batch", [1, 3, 32])
def test_batches_of_canonical_shards_merge_bit_for_bit_as_file_by_file(tmp_path, monkeypatch, spy, threads, version, batch):
    monkeypatch.setattr(fold_files, "BATCH_FILES", batch)
    paths = _shards(tmp_path, 40, seed=version * 10 + batch, version=version)
    got, got_warnings = _merge(paths, threads)
    assert spy.taken >= (40 // batch) // 2  # most batches went as arrays
    want, want_warnings = _reference(paths)
    _assert_same(got, want, exact=threads == 1)
    one_by_one, _ = _per_file(paths, threads, spy)
    assert got.counters == one_by_one.counters  # the same additions in the same order, whatever the threads
    assert np.array_equal(bits(got._compact()[1]), bits(one_by_one._compact()[1]))
    assert got.to_bytes() == one_by_one.to_bytes()
    assert got_warnings == want_warnings == []


def _rewrite(path, edit) -> None:
    version, flags, header, stored = _split(path.read_bytes())
    header, stored = edit(header, stored, version)
    path.write_bytes(_pack(json.dumps(header, sort_keys=True, separators=(",", ":")).encode(), stored, version, flags))


def _more_rows(header, stored, version):
    header["counters"]["n_rows"] += 1
    return header, stored


def _fewer_rows(header, stored, version):  # the counter checks need the bins to decide: the per-file check
    header["counters"]["prob_weight"] += 0.5
    return header, stored


def _bad_key(header, stored, version):
    at = 24 if version == 4 else 0
    return header, stored[:at] + b"\xff" * 4 + stored[at + 4:]


def _huge_count(header, stored, version):
    header["counters"]["n_nan"] = (1 << 63) - 1
    return header, stored


def _too_long(header, stored, version):  # more payload than n_bins can take
    header["n_bins"] = 1
    return header, stored


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("edit", [_more_rows, _fewer_rows, _bad_key, _huge_count, _too_long])
@pytest.mark.parametrize("where", [0, 5, 9])
def test_a_damaged_shard_in_a_batch_gives_the_sequential_error(tmp_path, monkeypatch, spy, threads, edit, where):
    monkeypatch.setattr(fold_files, "BATCH_FILES", 4)
    paths = _shards(tmp_path, 14, seed=3)
    _rewrite(paths[1 + where], edit)
    want = _reference(paths)
    assert isinstance(want[0], str)
    got = _merge(paths, threads)
    assert got == want
    assert got == _per_file(paths, threads, spy)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_label_clash_met_by_a_batch_is_its_first_files_error(tmp_path, monkeypatch, spy, threads):
    """The first file's labels (``yes``/``no``) clash with the batches' default coding: the error
    names the first shard of the first batch, as merging in order does."""
    monkeypatch.setattr(fold_files, "BATCH_FILES", 4)
    paths = _shards(tmp_path, 1, seed=4, labels=("yes", "no"))
    more = tmp_path / "more"
    more.mkdir()
    paths += _shards(more, 12, seed=5)
    want = _reference(paths)
    assert isinstance(want[0], str)
    assert _merge(paths, threads) == want


def test_weighted_and_provenance_shards_go_file_by_file(tmp_path, spy):
    """Headers the scan does not read (squared weights; each shard's own inputs) are read by the
    regular expression: the same result as loading and merging."""
    rng = np.random.default_rng(9)
    paths = []
    for i in range(12):
        sk = _sketch(rng, 150, grid=GRID, weighted=i % 2 == 0, inputs=[{"id": f"sha256:{i:02x}", "name": f"part-{i}", "rows": 150}])
        p = tmp_path / f"w{i:02d}.sevsk"
        sk.save(p, format_version=4)
        paths.append(p)
    got, got_warnings = _merge(paths, 1)
    want, want_warnings = _reference(paths)
    _assert_same(got, want, exact=True)
    assert got_warnings == want_warnings
    assert spy.taken == 0


def test_the_same_bytes_from_canonical_shards_of_a_large_grid(tmp_path, monkeypatch, spy):
    """The default grid (333,825 bins) and shards of 2,000 rows: the case the path exists for."""
    rng = np.random.default_rng(11)
    paths = []
    for i in range(40):
        p = tmp_path / f"d{i:02d}.sevsk"
        y = (rng.random(2000) < 0.4).astype(int)
        BinarySketch().update(y, np.clip(rng.beta(2, 5, 2000) + 0.1 * y, 0, 1)).save(p, format_version=4)
        paths.append(p)
    got, _ = _merge(paths, 2)
    assert spy.taken > 0
    one_by_one, _ = _per_file(paths, 2, spy)
    assert got.to_bytes() == one_by_one.to_bytes()


def test_tokens_longer_than_the_gather_room_send_the_batch_file_by_file(tmp_path, monkeypatch, spy):
    """A counter written with a long fraction (the same value) fills more than the scan's token
    room: that batch goes file by file, with the same result."""
    monkeypatch.setattr(fold_files, "BATCH_FILES", 1)
    paths = _shards(tmp_path, 6, seed=12)
    version, flags, header, stored = _split(paths[3].read_bytes())
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    value = repr(header["counters"]["brier_sum"]).encode()
    longer = value + b"0" * 150 if b"." in value else value + b"." + b"0" * 150
    text = text.replace(b'"brier_sum":' + value, b'"brier_sum":' + longer)
    paths[3].write_bytes(_pack(text, stored, version, flags))
    got, _ = _merge(paths, 1)
    assert spy.taken == 3  # files 2, 4, 5 (file 0 is loaded whole, file 1 sets the template, file 3 goes alone)
    want, _ = _reference(paths)
    _assert_same(got, want, exact=True)


def _odd_tokens(header: dict) -> bytes:
    """The canonical header text with its float counters written as other JSON numbers of the same
    value: integral ones as integers (``50``, ``0``), the others in upper-case exponent form."""
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    for name in ("brier_sum", "log_loss_sum", "prob_weight"):
        value = header["counters"][name]
        token = str(int(value)) if value.is_integer() else f"{value:.17E}"
        assert float(token) == value
        text = text.replace(f'"{name}":{json.dumps(value)},'.encode(), f'"{name}":{token},'.encode(), 1)
    return text


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("batch", [1, 32])
def test_mixed_versions_empty_and_weighted_shards_with_other_number_tokens(tmp_path, monkeypatch, spy, threads, batch):
    """Versions 3 and 4 in one batch, empty shards (``n_rows`` and ``n_bins`` 0), weighted shards
    without squared weights, and number tokens such as ``50`` or ``2.0894841792002160E+01``: the
    batches go as arrays, with the bytes, counters and warnings of loading and merging in order
    and of the per-file path."""
    monkeypatch.setattr(fold_files, "BATCH_FILES", batch)
    rng = np.random.default_rng(13)
    paths = []
    for i in range(36):
        sk = BinarySketch(GRID) if i % 7 == 3 else _sketch(rng, 50 + i, grid=GRID, weighted=i % 5 == 2)
        p = tmp_path / f"m{i:02d}.sevsk"
        sk.save(p, format_version=3 + i % 2)
        version, flags, header, stored = _split(p.read_bytes())
        header["meta"].setdefault("neg_label", 0)  # the empty shards' meta as the others'
        header.pop("weight_sq", None)
        p.write_bytes(_pack(_odd_tokens(header), stored, version, flags))
        paths.append(p)
    got, got_warnings = _merge(paths, threads)
    assert spy.taken >= (30 if batch == 1 else 1)  # (the first batch read sets the template)
    want, want_warnings = _reference(paths)
    _assert_same(got, want, exact=threads == 1)
    assert want.counters["weighted"] and want.counters["n_rows"] > 0
    one_by_one, one_warnings = _per_file(paths, threads, spy)
    assert got.counters == one_by_one.counters
    assert got.to_bytes() == one_by_one.to_bytes()
    assert got_warnings == want_warnings == one_warnings
