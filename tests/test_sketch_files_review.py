"""merge_files on threads against the sequential merge of the same files (``threads=1``): the same
bins (counts, min, max exactly), the same provenance in the same order, the same warnings, and the
same error for the same bad inputs (the first in file order, whatever the thread that met it)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streameval
from streameval.errors import IncompatibleGridError, InputError, SketchFormatError
from streameval.sketch.files import merge_files
from streameval.sketch.provenance import DuplicateInputWarning


def _entry(i: int) -> dict:
    return {"id": "sha256:" + f"{i:032x}", "name": f"hour-{i}.parquet", "rows": 100}


def _folder(tmp_path, n: int, grid=None, inputs=True):
    rng = np.random.default_rng(n)
    day = tmp_path / "day"
    day.mkdir()
    for i in range(n):
        y = (rng.random(100) < 0.3).astype(int)
        sk = streameval.BinarySketch(grid).update(y, np.round(rng.random(100), 3))
        if inputs:
            sk.inputs = [_entry(i)]
        sk.save(day / f"h{i:02d}.sevsk")
    return day


def _run(day, threads, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = merge_files([day], threads=threads, **kw)
        except Exception as exc:  # noqa: BLE001 - compared below
            out = exc
    return out, sorted(str(w.message) for w in caught if issubclass(w.category, DuplicateInputWarning))


def _same(a, b) -> None:
    (ra, wa), (rb, wb) = a, b
    assert wa == wb
    if isinstance(ra, Exception):
        assert type(ra) is type(rb) and str(ra) == str(rb)
        return
    ka, va = ra._compact()
    kb, vb = rb._compact()
    assert np.array_equal(ka, kb) and np.array_equal(va[:, :, :3], vb[:, :, :3])
    assert ra.inputs == rb.inputs and ra.inputs_dropped == rb.inputs_dropped
    assert {k: v for k, v in ra.counters.items() if k.startswith("n_")} == {k: v for k, v in rb.counters.items() if k.startswith("n_")}


@pytest.mark.parametrize("threads", [2, 3])
def test_provenance_keeps_the_file_order(tmp_path, threads):
    day = _folder(tmp_path, 14)
    seq, par = _run(day, 1), _run(day, threads)
    assert [e["name"] for e in seq[0].inputs] == [f"hour-{i}.parquet" for i in range(14)]
    _same(seq, par)


@pytest.mark.parametrize("threads", [2, 3])
def test_duplicates_warn_as_sequentially(tmp_path, threads):
    day = _folder(tmp_path, 14)
    for i in (3, 8, 13):  # hour-0 again, in every thread's share, and hour-5 once more
        sk = streameval.load(day / f"h{i:02d}.sevsk")
        sk.inputs = [_entry(0), _entry(5)] if i == 8 else [_entry(0)]
        sk.save(day / f"h{i:02d}.sevsk")
    _same(_run(day, 1), _run(day, threads))
    _same(_run(day, 1, strict=True), _run(day, threads, strict=True))


@pytest.mark.parametrize("threads", [2, 3])
def test_a_duplicate_before_a_corrupt_file_is_the_error(tmp_path, threads):
    day = _folder(tmp_path, 14)
    sk = streameval.load(day / "h01.sevsk")
    sk.inputs = [_entry(0)]
    sk.save(day / "h01.sevsk")
    (day / "h10.sevsk").write_bytes(b"garbage")
    seq = _run(day, 1, strict=True)
    assert isinstance(seq[0], InputError)
    _same(seq, _run(day, threads, strict=True))


@pytest.mark.parametrize("threads", [2, 3])
def test_a_label_clash_before_a_corrupt_file_is_the_error(tmp_path, threads):
    day = _folder(tmp_path, 14)
    streameval.BinarySketch(pos_label="yes").update(["yes", "no"], [0.8, 0.1]).save(day / "h02.sevsk")
    (day / "h11.sevsk").write_bytes(b"garbage")
    seq = _run(day, 1)
    assert isinstance(seq[0], InputError)
    _same(seq, _run(day, threads))


@pytest.mark.parametrize("threads", [2, 3])
def test_a_grid_clash_before_a_corrupt_file_is_the_error(tmp_path, threads):
    day = _folder(tmp_path, 14)
    streameval.BinarySketch(streameval.LinearGrid(0, 1, 10)).update([0, 1], [0.2, 0.9]).save(day / "h05.sevsk")
    (day / "h12.sevsk").write_bytes(b"garbage")
    seq = _run(day, 1)
    assert isinstance(seq[0], IncompatibleGridError)
    _same(seq, _run(day, threads))


@pytest.mark.parametrize("threads", [2, 3])
def test_coarser_grid_mid_stream(tmp_path, threads):
    fine = streameval.ProbabilityGrid(12, -30)
    day = _folder(tmp_path, 14, grid=fine)
    sk = streameval.load(day / "h07.sevsk").coarsen(streameval.ProbabilityGrid(10, -30))
    sk.save(day / "h07.sevsk")
    seq, par = _run(day, 1), _run(day, threads)
    assert seq[0].grid == streameval.ProbabilityGrid(10, -30)
    _same(seq, par)


def test_one_file_and_more_threads_than_files(tmp_path):
    day = _folder(tmp_path, 1)
    one = streameval.load(day / "h00.sevsk")
    for threads in (1, 8):
        got = merge_files([day], threads=threads)
        assert got == one and got.inputs == one.inputs
    (tmp_path / "five").mkdir()
    day5 = _folder(tmp_path / "five", 5)
    _same(_run(day5, 1), _run(day5, 16))


def test_corrupt_file_alone_is_reported(tmp_path):
    day = _folder(tmp_path, 14)
    (day / "h09.sevsk").write_bytes(b"garbage")
    seq, par = _run(day, 1), _run(day, 3)
    assert isinstance(seq[0], SketchFormatError) and "h09" in str(seq[0])
    _same(seq, par)


def test_multiclass_files_merge_on_threads(tmp_path):
    rng = np.random.default_rng(1)
    day = tmp_path / "mc"
    day.mkdir()
    for i in range(9):
        y = rng.integers(0, 3, 60)
        p = rng.dirichlet(np.ones(3), 60)
        streameval.MulticlassSketch(classes=[0, 1, 2]).update(y, p).save(day / f"m{i}.sevsk")
    a, b = merge_files([day], threads=1), merge_files([day], threads=4)
    assert a.n_rows == b.n_rows == 540
    assert float(a.roc_auc()) == pytest.approx(float(b.roc_auc()), abs=0.0)


def _boot_folder(tmp_path, n: int, seeds=None):
    rng = np.random.default_rng(2)
    day = tmp_path / "boot"
    day.mkdir()
    for i in range(n):
        y = (rng.random(50) < 0.4).astype(int)
        seed = 7 if seeds is None else seeds[i]
        sk = streameval.BinarySketch(bootstrap=3, seed=seed).update(y, rng.random(50), row_id=np.arange(50) + 50 * i)
        sk.inputs = [_entry(i)]
        sk.save(day / f"b{i:02d}.sevsk")
    return day


def test_bootstrap_shards_merge_on_threads_as_sequentially(tmp_path):
    day = _boot_folder(tmp_path, 12)
    seq, par = _run(day, 1), _run(day, 3)
    _same(seq, par)
    a, b = seq[0].replicates, par[0].replicates
    assert np.array_equal(a.keys, b.keys) and np.allclose(a.weights, b.weights, rtol=1e-12, atol=0)


def test_replicate_clash_before_a_corrupt_file_is_the_error(tmp_path):
    day = _boot_folder(tmp_path, 12, seeds=[7] * 4 + [8] + [7] * 7)
    streameval.BinarySketch().update([0, 1], [0.2, 0.9]).save(day / "b02.sevsk")  # no replicates
    (day / "b10.sevsk").write_bytes(b"garbage")
    seq = _run(day, 1)
    assert isinstance(seq[0], InputError)
    _same(seq, _run(day, 3))


_KINDS = ["plain", "plain", "plain", "dup-input", "other-pos-label", "coarser", "other-grid", "garbage", "truncated", "empty"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_KINDS), min_size=12, max_size=18), st.booleans(), st.integers(2, 4))
def test_any_folder_merges_on_threads_as_sequentially(tmp_path_factory, kinds, strict, threads):
    day = tmp_path_factory.mktemp("day")
    rng = np.random.default_rng(len(kinds))
    fine, coarse = streameval.ProbabilityGrid(12, -30), streameval.ProbabilityGrid(11, -30)
    for i, kind in enumerate(kinds):
        path = day / f"f{i:02d}.sevsk"
        y = (rng.random(40) < 0.5).astype(int)
        s = rng.random(40)
        if kind in ("garbage", "truncated"):
            good = streameval.BinarySketch(fine).update(y, s).to_bytes()
            path.write_bytes(b"garbage" if kind == "garbage" else good[: len(good) // 2])
            continue
        grid = {"coarser": coarse, "other-grid": streameval.LinearGrid(0, 1, 7)}.get(kind, fine)
        if kind == "other-pos-label":
            sk = streameval.BinarySketch(grid, pos_label="p").update(np.where(y == 1, "p", "n"), s)
        elif kind == "empty":
            sk = streameval.BinarySketch(grid)
        else:
            sk = streameval.BinarySketch(grid).update(y, s)
        sk.inputs = [_entry(0 if kind == "dup-input" else i + 1)]
        sk.save(path)
    _same(_run(day, 1, strict=strict), _run(day, threads, strict=strict))


@pytest.mark.parametrize("threads", [2, 4])
def test_a_failed_merge_leaves_no_loading_threads(tmp_path, threads):
    """A merge that stops early (a label clash at the third of six files: the read-ahead path)
    used to leave the loader suspended with its idle pool, to be shut down by whichever thread
    collected it (a pool thread: "RuntimeError: cannot join current thread", unraisable)."""
    import threading

    day = _folder(tmp_path, 6)
    streameval.BinarySketch(pos_label="yes").update(["yes", "no"], [0.8, 0.1]).save(day / "h02.sevsk")
    with pytest.raises(InputError, match="positive classes differ") as caught:
        merge_files([day], threads=threads)
    assert caught.value.__traceback__ is not None  # the traceback (and its frames) is still alive here
    for t in threading.enumerate():
        if t.name.startswith("streameval-load"):
            t.join(timeout=10)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("streameval-load")]
