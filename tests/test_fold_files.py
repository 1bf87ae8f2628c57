"""The lean per-file path of ``merge_files`` (:mod:`streameval.sketch.fold_files`) against loading
every file and merging (``streameval.merge([load(f) for f in files])``): the same sketch, the same
provenance and duplicate warnings on valid files; the same error, word for word, on bad ones."""

from __future__ import annotations

import json
import struct
import warnings
import zlib

import numpy as np
import pytest
from test_io_compact import bits

import streameval
from streameval import BinarySketch, LinearGrid, ProbabilityGrid, SketchFormatError
from streameval.errors import InputError
from streameval.kernels import binary as kernels
from streameval.sketch import fold_files, io
from streameval.sketch.binary_merge import Merger
from streameval.sketch.files import _load_folding, merge_files


def _sketch(rng: np.random.Generator, n: int = 400, *, weighted: bool = False, grid=None, labels=None,
            inputs=None) -> BinarySketch:
    y = (rng.random(n) < 0.3).astype(int)
    if labels is not None:
        y = np.where(y == 1, labels[0], labels[1])
    sk = BinarySketch(grid) if grid is not None else BinarySketch()
    kw = {} if labels is None else {"pos_label": labels[0]}
    sk.update(y, rng.random(n), rng.exponential(1.0, n) if weighted else None, **kw)
    if inputs is not None:
        sk.inputs = inputs
    return sk


def _save(tmp_path, name: str, sk: BinarySketch, version: int | None = None):
    p = tmp_path / name
    sk.save(p, format_version=version)
    return p


def _merge(paths, threads: int, strict: bool = False):
    """``(sketch or error text, warning texts)`` of merge_files."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = merge_files(paths, threads=threads, strict=strict)
        except (SketchFormatError, InputError, streameval.IncompatibleGridError) as exc:
            out = f"{type(exc).__name__}: {exc}"
    return out, [str(w.message) for w in caught]


def _reference(paths, strict: bool = False):
    """The same as :func:`_merge`, by loading each file and merging it, in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = streameval.merge((streameval.load(p) for p in paths), strict=strict)  # one at a time, in order
        except (SketchFormatError, InputError, streameval.IncompatibleGridError) as exc:
            out = f"{type(exc).__name__}: {exc}"
    return out, [str(w.message) for w in caught]


def _assert_same(got, want, exact: bool) -> None:
    if isinstance(want, str):
        assert got == want
        return
    assert isinstance(got, BinarySketch)
    assert got.grid == want.grid
    k1, v1 = got._compact()
    k2, v2 = want._compact()
    assert np.array_equal(k1, k2)
    assert np.array_equal(bits(v1[:, :, 1:3]), bits(v2[:, :, 1:3]))  # min, max exactly
    if exact:
        assert np.array_equal(bits(v1), bits(v2))
        assert got.counters == want.counters
    else:  # another order of additions on threads
        assert np.allclose(v1[:, :, [0, 3]], v2[:, :, [0, 3]], rtol=1e-12, atol=0)
        assert got.counters.keys() == want.counters.keys()
        for name, value in want.counters.items():
            assert got.counters[name] == pytest.approx(value, rel=1e-12), name
    assert got.inputs == want.inputs and got.inputs_dropped == want.inputs_dropped
    assert (got._labels.pos_label, got._labels.neg_label) == (want._labels.pos_label, want._labels.neg_label)
    assert got.replicates == want.replicates


def _lean_takes(path, grid) -> bool:
    merger = Merger(BinarySketch(grid))
    return fold_files.LeanFolder().fold(io.read_sketch_file(path), str(path), merger) is not None


def test_the_lean_path_takes_the_files_a_job_writes_and_leaves_the_others(tmp_path):
    rng = np.random.default_rng(1)
    grid = ProbabilityGrid(mantissa_bits=6, min_exponent=-20)
    taken = [
        _save(tmp_path, "v3.sevsk", _sketch(rng, grid=grid)),
        _save(tmp_path, "v4.sevsk", _sketch(rng, grid=grid), 4),
        _save(tmp_path, "w4.sevsk", _sketch(rng, weighted=True, grid=grid), 4),  # with weight_sq
        _save(tmp_path, "l3.sevsk", _sketch(rng, labels=("churn", "stay"), grid=grid)),
        _save(tmp_path, "in4.sevsk", _sketch(rng, inputs=[{"id": "sha256:ab", "name": "a.csv", "rows": 400}], grid=grid), 4),
        _save(tmp_path, "e4.sevsk", BinarySketch(grid), 4),  # no rows at all
        _save(tmp_path, "d4.sevsk", _sketch(np.random.default_rng(0)), 4),  # the default grid
    ]
    for p in taken:
        assert _lean_takes(p, ProbabilityGrid() if p.name == "d4.sevsk" else grid), p.name
    boot = BinarySketch(grid, bootstrap=4, seed=1).update([0, 1, 1], [0.1, 0.7, 0.8])
    left = [
        _save(tmp_path, "v1.sevsk", _sketch(rng, grid=grid), 1),
        _save(tmp_path, "v2.sevsk", boot),  # replicates: version 2
        _save(tmp_path, "lin.sevsk", _sketch(rng, grid=LinearGrid(0.0, 1.0, 64)), 4),  # another grid
    ]
    spaced = tmp_path / "spaced.sevsk"  # the same header with a space: not the canonical form
    _, _, header, payload = _split(taken[1].read_bytes())
    spaced.write_bytes(_pack(json.dumps(header, sort_keys=True).encode(), payload, 4))
    left.append(spaced)
    for p in left:
        assert not _lean_takes(p, grid), p.name
    assert streameval.load(spaced).n_rows == streameval.load(taken[1]).n_rows  # yet a valid file


@pytest.mark.parametrize("threads", [1, 2])
def test_merge_files_equals_loading_and_merging(tmp_path, threads):
    rng = np.random.default_rng(2)
    ids = [{"id": f"sha256:{i:02x}", "name": f"part{i}.csv", "rows": 400} for i in range(4)]
    sketches = [
        _sketch(rng, inputs=[ids[0]]), _sketch(rng, weighted=True, inputs=[ids[1]]), _sketch(rng),
        _sketch(rng, inputs=[ids[0], ids[2]]),  # part0 again: a duplicate warning
        _sketch(rng, grid=ProbabilityGrid(mantissa_bits=10)),  # a coarsening: the merge moves to it
        _sketch(rng, weighted=True), BinarySketch(), _sketch(rng, inputs=[{"id": None, "name": "x", "rows": None}]),
        _sketch(rng, 3000), _sketch(rng, inputs=[ids[3]]),
    ]
    versions = [4, 3, 1, 4, 4, 4, 3, 4, 3, 4]
    paths = [_save(tmp_path, f"s{i}.sevsk", sk, v) for i, (sk, v) in enumerate(zip(sketches, versions, strict=True))]
    got, got_warnings = _merge(paths, threads)
    want, want_warnings = _reference(paths)
    _assert_same(got, want, exact=threads == 1)
    assert got_warnings == want_warnings and len(want_warnings) == 1
    assert _merge(paths, threads, strict=True) == _reference(paths, strict=True)  # the duplicate refused


@pytest.mark.parametrize("threads", [1, 2])
def test_weighted_and_unweighted_weight_squares(tmp_path, threads):
    rng = np.random.default_rng(3)
    paths = [_save(tmp_path, f"w{i}.sevsk", _sketch(rng, weighted=i % 2 == 0), 4) for i in range(8)]
    got, _ = _merge(paths, threads)
    want, _ = _reference(paths)
    _assert_same(got, want, exact=threads == 1)
    assert "weight_sq_pos" in want.counters


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("clash", ["labels", "negatives", "grid", "replicates", "multiclass"])
def test_clashing_files_give_the_sequential_error(tmp_path, threads, clash):
    rng = np.random.default_rng(4)
    paths = [_save(tmp_path, f"a{i}.sevsk", _sketch(rng, labels=("yes", "no") if clash == "negatives" else None), 4)
             for i in range(9)]
    if clash == "labels":
        odd = _sketch(rng, labels=("spam", "ham"))
    elif clash == "negatives":
        odd = _sketch(rng, labels=("yes", "nope"))
    elif clash == "grid":
        odd = _sketch(rng, grid=LinearGrid(0.0, 1.0, 50))
    elif clash == "replicates":
        odd = BinarySketch(bootstrap=4, seed=1).update([0, 1, 1], [0.1, 0.7, 0.8])
    else:
        odd = streameval.MulticlassSketch().update([0, 1, 2], np.eye(3))
    paths[6] = tmp_path / "odd.sevsk"
    odd.save(paths[6])
    if clash == "multiclass":  # merge() refuses the type; merge_files says which kinds clash
        with pytest.raises(streameval.UsageError, match="binary and multiclass"):
            merge_files(paths, threads=threads)
        return
    want = _reference(paths)
    got = _merge(paths, threads)
    assert isinstance(want[0], str) and got == want


def _split(data: bytes) -> tuple[int, int, dict, bytes]:
    _, version, flags, hlen = struct.unpack_from("<8sHHI", data, 0)
    (plen,) = struct.unpack_from("<Q", data, 16 + hlen)
    return version, flags, json.loads(data[16:16 + hlen]), data[24 + hlen:24 + hlen + plen]


def _pack(header: bytes, stored: bytes, version: int, flags: int = 0) -> bytes:
    body = struct.pack("<8sHHI", io.MAGIC, version, flags, len(header)) + header + struct.pack("<Q", len(stored)) + stored
    return body + struct.pack("<I", zlib.crc32(body))


def _header_bytes(data: bytes) -> bytes:
    return data[16:16 + struct.unpack_from("<I", data, 12)[0]]


def _verdicts(data: bytes, grid) -> tuple[object, object, bool]:
    """``(load, merge_files' per-file path, whether the lean path decided)``: accepted files give
    their counters, labels, provenance and folded bins; refused ones their error text."""
    name = "f.sevsk"

    def outcome(fn):  # type: ignore[no-untyped-def]
        try:
            return fn()
        except SketchFormatError as exc:
            return str(exc)

    def load():  # type: ignore[no-untyped-def]
        s = BinarySketch._from_parts(io.decode(data, name), name)
        state = kernels.empty_state(s.grid.n_bins)
        keys, values = s._compact()
        kernels.merge_into(state, keys, values)
        c = {k: v for k, v in s.counters.items()}
        return s.grid, c, s._labels.pos_label, s._labels.neg_label, s.inputs, bits(state).tobytes()

    merger = Merger(BinarySketch(grid))
    decided = []

    def lean():  # type: ignore[no-untyped-def]
        got = fold_files.LeanFolder().fold(data, name, merger)
        decided.append(got is not None)
        if got is None:
            s, _ = _load_folding(name, merger, data)
            if s.grid != merger.grid:
                return load()
            c = {k: v for k, v in s.counters.items()}
            return s.grid, c, s._labels.pos_label, s._labels.neg_label, s.inputs, bits(merger.dense).tobytes()
        static, counters, _ = got
        c = {k: v for k, v in counters.items()}
        return static.grid, c, static.labels.pos_label, static.labels.neg_label, static.inputs, bits(merger.dense).tobytes()

    return outcome(load), outcome(lean), bool(decided and decided[0])


_TOKENS = ["0", "1", "-1", "01", "1.0", "1e999", "1E2", "2.5e-3", "true", "false", "null", '"7"', "9" * 20, "9" * 30,
           "9223372036854775807", "9223372036854775808", "1e308", "0.0", "NaN", "[]", "{}", "1.", ".5"]


def _mutations(header: bytes, rng: np.random.Generator, n: int) -> list[bytes]:
    """Header texts one edit away from ``header``: a value token replaced, a key renamed or
    duplicated, a space, a label, the kind, ``n_bins`` moved."""
    text = header.decode()
    values = [(m.start(), m.end()) for m in _VALUE.finditer(text)]
    out = []
    for _ in range(n):
        how = rng.integers(0, 6)
        if how <= 2:  # a value
            a, b = values[rng.integers(0, len(values))]
            out.append(text[:a] + _TOKENS[rng.integers(0, len(_TOKENS))] + text[b:])
        elif how == 3:  # a key's name, or a key written twice
            keys = [m.group(1) for m in _KEY.finditer(text)]
            key = keys[rng.integers(0, len(keys))]
            if rng.random() < 0.5:
                out.append(text.replace(f'"{key}":', f'"{key}x":', 1))
            else:
                out.append(text.replace(f'"{key}":', f'"{key}":0,"{key}":', 1))
        elif how == 4:  # whitespace or a structural character
            i = int(rng.integers(1, len(text) - 1))
            out.append(text[:i] + [" ", "}", "{", ",", "\u00e9", "\\"][rng.integers(0, 6)] + text[i:])
        else:  # labels, provenance, kind
            edits = [('"neg_label":0', '"neg_label":1'), ('"neg_label":0', '"neg_label":"a","pos_label":"a"'),
                     ('"binary"', '"multiclass"'), ('"created_by":"', '"created_by":"x'),
                     ('"neg_label":0', '"inputs":[{"id":null,"name":"q","rows":-1}],"neg_label":0'),
                     ('"neg_label":0', '"inputs":[{"id":"i","name":"q","rows":3}],"inputs_dropped":2,"neg_label":0'),
                     ('"neg_label":0', '"inputs_dropped":-2,"neg_label":0')]
            a, b = edits[rng.integers(0, len(edits))]
            out.append(text.replace(a, b, 1))
    return [t.encode() for t in out]


_VALUE = __import__("re").compile(r'(?<=:)(-?[0-9][0-9.eE+-]*|true|false|null|"[^"]*")')
_KEY = __import__("re").compile(r'"([a-z_]+)":')


@pytest.mark.parametrize("version", [3, 4])
def test_header_edits_get_the_load_verdict(version):
    rng = np.random.default_rng(10 + version)
    small = ProbabilityGrid(mantissa_bits=6, min_exponent=-20)  # a dense state per case: keep it small
    sketches = [_sketch(rng, grid=small), _sketch(rng, weighted=True, grid=small), _sketch(rng, 60, grid=small)]
    decided = 0
    cases = 0
    for sk in sketches:
        data = sk.to_bytes(format_version=version)
        _, flags, _, stored = _split(data)
        for header in _mutations(_header_bytes(data), rng, 150):
            load, lean, by_lean = _verdicts(_pack(header, stored, version, flags), sk.grid)
            assert lean == load, header
            decided += by_lean
            cases += 1
    assert decided >= cases // 20  # most edits make a header the general path must refuse; some stay valid


@pytest.mark.parametrize("version", [3, 4])
def test_payload_and_framing_damage_gets_the_load_error(version):
    rng = np.random.default_rng(20 + version)
    sk = _sketch(rng, 800, grid=ProbabilityGrid(mantissa_bits=8, min_exponent=-20))
    data = sk.to_bytes(format_version=version)
    _, flags, _, stored = _split(data)
    header = _header_bytes(data)
    cases = [data[:-1], data + b"\0", data[:40], bytes([data[0] ^ 1]) + data[1:], data[:-4] + bytes(4)]
    for _ in range(120):  # a payload byte changed, the checksum made right
        raw = bytearray(stored)
        i = int(rng.integers(0, len(raw)))
        raw[i] = int(rng.integers(0, 256))
        cases.append(_pack(header, bytes(raw), version, flags))
    counters = json.loads(header)["counters"]
    for name, value in (("n_rows", counters["n_rows"] + 1), ("prob_weight", counters["prob_weight"] * 1.01),
                        ("log_loss_sum", counters["log_loss_sum"] * 1.5), ("n_outside", 5)):
        h = json.loads(header)
        h["counters"][name] = value
        cases.append(_pack(json.dumps(h, sort_keys=True, separators=(",", ":")).encode(), stored, version, flags))
    n_bins = json.loads(header)["n_bins"]
    cases.append(_pack(header.replace(f'"n_bins":{n_bins}'.encode(), f'"n_bins":{n_bins - 1}'.encode()), stored, version, flags))
    refused = 0
    for data in cases:
        load, lean, _ = _verdicts(data, sk.grid)
        assert lean == load
        refused += isinstance(load, str)
    assert refused > len(cases) // 2


def test_a_bad_file_among_many_names_itself_on_threads(tmp_path):
    rng = np.random.default_rng(30)
    paths = [_save(tmp_path, f"s{i:02d}.sevsk", _sketch(rng), 4) for i in range(12)]
    good = paths[7].read_bytes()
    h = json.loads(_header_bytes(good))
    h["counters"]["n_rows"] += 3
    _, flags, _, stored = _split(good)
    paths[7].write_bytes(_pack(json.dumps(h, sort_keys=True, separators=(",", ":")).encode(), stored, 4, flags))
    with pytest.raises(SketchFormatError) as loading:
        streameval.load(paths[7])
    assert "s07.sevsk" in str(loading.value)
    for threads in (1, 2, 3):
        assert _merge(paths, threads)[0] == f"SketchFormatError: {loading.value}"


def test_a_grid_kind_that_is_not_a_string_is_a_format_error():
    data = BinarySketch().to_bytes(format_version=4)
    _, flags, header, stored = _split(data)
    header["grid"]["kind"] = []  # unhashable: once a TypeError out of the kind lookup
    bad = _pack(json.dumps(header, sort_keys=True, separators=(",", ":")).encode(), stored, 4, flags)
    with pytest.raises(SketchFormatError, match=r"unknown grid kind \[\] in header field grid"):
        BinarySketch.from_bytes(bad)


def test_provenance_of_each_shard_is_cut_out_of_the_cached_header(tmp_path):
    rng = np.random.default_rng(40)
    grid = ProbabilityGrid(mantissa_bits=6, min_exponent=-20)
    folder = fold_files.LeanFolder()
    merger = Merger(BinarySketch(grid))
    for i in range(20):  # as the CLI writes shards: each names its own input
        sk = _sketch(rng, grid=grid, inputs=[{"id": f"sha256:{i:032x}", "name": f"part-{i}.parquet", "rows": 400}])
        data = sk.to_bytes(format_version=4)
        static, _, _ = folder.fold(data, f"s{i}.sevsk", merger)
        assert static.inputs == sk.inputs
    assert len(folder._static) == 1  # one checked grid-and-meta text for all twenty


_META_EDITS = [
    '"inputs":[{"id":"a","name":"n","rows":1}]',
    '"inputs":[{"id":"a","name":"n","rows":1},{"id":"b","name":"m","rows":null}]',
    '"inputs":[]',
    '"inputs": [{"id":"a","name":"n","rows":1}]',  # a space: the whole text is checked instead
    '"inputs":[{"id":"a","name":"n","rows":-1}]',
    '"inputs":[{"id":"a","name":"n","rows":1,"x":2}]',
    '"inputs":[{"id":"a","id":"b","name":"n","rows":1}]',  # a key twice inside the list
    '"inputs":[{"id":"a","name":"n","rows":1}],"inputs":[]',
    '"inputs":[1]',
    '"inputs":[{"id":"a","name":"n","rows":1e2}]',
    '"inputs":[{"id":"a","name":"n","rows":' + "9" * 30 + "}]",
    '"inputs":[{"id":"a","name":"\\u00e9\\"inputs\\":[","rows":1}]',  # quotes inside a string
    '"created_by":"inputs","inputs":[{"id":"a","name":"n","rows":1}]',  # "inputs" twice: no cut
    '"inputs":[{"id":"a","name":"n","rows":1}],"inputs_dropped":3',
    '"inputs":[{"id":"a","name":"n","rows":1}],"inputs_dropped":true',
    '"other":{"inputs":[{"id":"a","name":"n","rows":1}]}',  # not meta's member
    '"inputs":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
    '"inputs":[{"id":"a","name":"n","rows":1}',  # not closed
]


@pytest.mark.parametrize("edit", _META_EDITS)
def test_provenance_edits_get_the_load_verdict(edit):
    grid = ProbabilityGrid(mantissa_bits=6, min_exponent=-20)
    sk = _sketch(np.random.default_rng(41), grid=grid)
    data = sk.to_bytes(format_version=4)
    _, flags, _, stored = _split(data)
    header = _header_bytes(data).replace(b'"meta":{', b'"meta":{' + edit.encode() + b",", 1)
    load, lean, _ = _verdicts(_pack(header, stored, 4, flags), grid)
    assert lean == load


def _corpus(tmp_path, rng, n: int = 23):
    """Shards of both layouts, some compressed, a version-1 file and a coarser grid among them."""
    paths = []
    for i in range(n):
        grid = ProbabilityGrid(mantissa_bits=4 if i == 17 else 6, min_exponent=-20)  # small states: fast
        sk = _sketch(rng, 300, weighted=i % 5 == 0, grid=grid)
        p = tmp_path / f"c{i:02d}.sevsk"
        if i in (4, 13):
            p.write_bytes(sk.to_bytes(compress=True, format_version=4 if i == 4 else 3))  # folded alone
        else:
            sk.save(p, format_version=1 if i == 9 else (4 if i % 2 else 3))
        paths.append(p)
    return paths


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("batch", "nbytes"), [(1, 4 << 20), (3, 4 << 20), (32, 4 << 20), (32, 5000)])
def test_batches_of_any_size_give_the_sequential_merge(tmp_path, monkeypatch, threads, batch, nbytes):
    monkeypatch.setattr(fold_files, "BATCH_FILES", batch)
    monkeypatch.setattr(fold_files, "BATCH_BYTES", nbytes)  # 5,000: a batch ends at its second shard or so
    paths = _corpus(tmp_path, np.random.default_rng(50))
    got, got_warnings = _merge(paths, threads)
    want, want_warnings = _reference(paths)
    _assert_same(got, want, exact=threads == 1)
    assert got_warnings == want_warnings


def _damage(path, how: str) -> None:
    data = path.read_bytes()
    version, flags, header, stored = _split(data)
    if how == "counters":
        header["counters"]["n_rows"] += 1
    elif how == "labels":
        header["meta"] = {"created_by": "x", "neg_label": "no", "pos_label": "yes"}
    else:  # the first key of the bins: beyond the grid, or a bad varint
        at = 24 if version == 4 else 0
        stored = stored[:at] + b"\xff" * 4 + stored[at + 4:]
    path.write_bytes(_pack(json.dumps(header, sort_keys=True, separators=(",", ":")).encode(), stored, version, flags))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch", [3])
@pytest.mark.parametrize("hows", [("bins",), ("counters",), ("labels", "bins"), ("bins", "labels"), ("counters", "counters")])
def test_bad_and_clashing_files_in_a_batch_give_the_sequential_error(tmp_path, monkeypatch, threads, batch, hows):
    """The first problem in file order is reported, whichever batch, thread or check meets it:
    a label clash before a damaged file in the same batch is the clash."""
    monkeypatch.setattr(fold_files, "BATCH_FILES", batch)
    paths = _corpus(tmp_path, np.random.default_rng(51))
    for k, how in enumerate(hows):
        _damage(paths[7 + 2 * k], how)  # files 7 and 9 (odd: version 4), or 7 and 11
    want = _reference(paths)
    assert isinstance(want[0], str)
    assert _merge(paths, threads) == want
