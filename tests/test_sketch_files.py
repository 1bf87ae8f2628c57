"""Merging many sketch files: folders, globs, threaded streaming loads."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import streameval
from streameval.cli.main import app
from streameval.errors import UsageError
from streameval.sketch.files import expand_sketch_paths, iter_loaded, merge_files


def _shards(tmp_path, n=12):
    rng = np.random.default_rng(0)
    y_all, p_all = [], []
    (tmp_path / "day").mkdir()
    for i in range(n):
        y = (rng.random(500) < 0.2).astype(int)
        p = np.round(rng.random(500), 3)
        streameval.BinarySketch().update(y, p).save(tmp_path / "day" / f"h{i:02d}.sketch")
        y_all.append(y)
        p_all.append(p)
    (tmp_path / "day" / "notes.txt").write_text("not a sketch")
    return np.concatenate(y_all), np.concatenate(p_all)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_merge_files_equals_one_pass(tmp_path, threads) -> None:
    y, p = _shards(tmp_path)
    merged = merge_files([tmp_path / "day"], threads=threads)
    whole = streameval.BinarySketch().update(y, p)
    k1, v1 = merged._compact()
    k2, v2 = whole._compact()
    assert np.array_equal(k1, k2) and np.array_equal(v1[:, :, :3], v2[:, :, :3])  # counts, min, max exactly
    assert float(merged.roc_auc()) == float(whole.roc_auc())


def test_a_folder_lists_what_os_walk_lists(tmp_path) -> None:
    """Nested folders, both suffixes in any case, a link to a folder (not followed), links to a file
    and to nothing, a named pipe: the same sorted list as ``os.walk``."""
    import os

    for name in ("x.sevsk", "a/y.SKETCH", "a/b/z.sevsk", "a/b/no.txt", "c/w.sketch", "a/b/c.Sevsk", "d/e/f/g.sketch"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    os.symlink(tmp_path / "a", tmp_path / "link-to-a")
    os.symlink(tmp_path / "nowhere.sevsk", tmp_path / "broken.sevsk")
    os.symlink(tmp_path / "x.sevsk", tmp_path / "l.sevsk")
    os.mkfifo(tmp_path / "fifo.sketch")
    want = sorted(os.path.join(root, f) for root, _, files in os.walk(tmp_path) for f in files
                  if f.lower().endswith((".sketch", ".sevsk")))
    assert expand_sketch_paths([tmp_path]) == want
    assert len(want) == 9  # 6 files, 2 links and the pipe


def test_expand_paths_and_order(tmp_path) -> None:
    _shards(tmp_path, n=3)
    files = expand_sketch_paths([tmp_path / "day"])
    assert [f.rsplit("/", 1)[1] for f in files] == ["h00.sketch", "h01.sketch", "h02.sketch"]
    assert expand_sketch_paths([str(tmp_path / "day" / "h0[12].sketch")]) == files[1:]
    with pytest.raises(FileNotFoundError, match="no file matches"):
        expand_sketch_paths([str(tmp_path / "*.nothing")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no sketch files"):
        expand_sketch_paths([empty])
    loaded = list(iter_loaded(files, threads=2, ahead=1))
    assert [s.n_rows for s in loaded] == [500, 500, 500]


def test_errors_in_order_and_mixed_kinds(tmp_path) -> None:
    _shards(tmp_path, n=3)
    bad = tmp_path / "day" / "h01.sketch"
    bad.write_bytes(b"garbage")
    with pytest.raises(streameval.SketchFormatError, match="h01"):
        merge_files([tmp_path / "day"], threads=2)
    mc = streameval.MulticlassSketch().update([0, 1, 2], np.eye(3))
    bad.unlink()
    mc.save(tmp_path / "day" / "h03.sketch")
    with pytest.raises(UsageError, match="binary and multiclass"):
        merge_files([tmp_path / "day"])


@pytest.mark.parametrize("threads", [2, 3])
def test_first_bad_file_in_order_is_reported_with_threads(tmp_path, threads) -> None:
    _shards(tmp_path, n=16)
    for name in ("h11.sketch", "h05.sketch", "h14.sketch"):
        (tmp_path / "day" / name).write_bytes(b"garbage")
    with pytest.raises(streameval.SketchFormatError, match="h05"):
        merge_files([tmp_path / "day"], threads=threads)


def test_duplicate_files_are_caught_across_threads(tmp_path) -> None:
    _shards(tmp_path, n=13)  # h99 is file 13: the second thread's share, h00 the first's
    shard = tmp_path / "day" / "h00.sketch"
    sk = streameval.load(shard)
    sk.inputs = [{"id": "sha256:" + "ab" * 16, "name": "hour-0.parquet", "rows": 500}]
    sk.save(shard)
    sk.save(tmp_path / "day" / "h99.sketch")  # the same input again, in another thread's share
    with pytest.warns(streameval.sketch.provenance.DuplicateInputWarning, match="hour-0.parquet"):
        merge_files([tmp_path / "day"], threads=2)
    with pytest.raises(streameval.InputError, match="counted twice"):
        merge_files([tmp_path / "day"], threads=2, strict=True)


def test_cli_merges_a_folder(tmp_path) -> None:
    _shards(tmp_path, n=4)
    r = CliRunner().invoke(app, ["merge", str(tmp_path / "day"), "-o", str(tmp_path / "all.sketch"), "-j", "2"])
    assert r.exit_code == 0, r.output
    assert "merged 4 sketches (2,000 rows)" in r.output
    assert streameval.load(tmp_path / "all.sketch").n_rows == 2000


def test_cli_merge_writes_the_requested_format_version(tmp_path) -> None:
    _shards(tmp_path, n=2)
    one = tmp_path / "day" / "h00.sketch"
    assert one.read_bytes()[8:10] == (3).to_bytes(2, "little")  # written as version 3 by default
    r = CliRunner().invoke(app, ["merge", str(one), "-o", str(tmp_path / "old.sketch"), "--format-version", "1"])
    assert r.exit_code == 0, r.output
    old = (tmp_path / "old.sketch").read_bytes()
    assert old[8:10] == (1).to_bytes(2, "little")
    assert streameval.load(tmp_path / "old.sketch") == streameval.load(one)
    r = CliRunner().invoke(app, ["merge", str(one), "-o", str(tmp_path / "new.sketch"), "--format-version", "4"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "new.sketch").read_bytes()[8:10] == (4).to_bytes(2, "little")
    assert streameval.load(tmp_path / "new.sketch") == streameval.load(one)
    r = CliRunner().invoke(app, ["merge", str(one), "-o", str(tmp_path / "x.sketch"), "--format-version", "2"])
    assert r.exit_code != 0 and "3, 4 or 1" in r.output


def test_cli_merge_refuses_format_version_for_multiclass_before_loading(tmp_path, monkeypatch) -> None:
    """--format-version on multiclass sketches is a usage error given from the first file's header,
    before any file is loaded or merged (it used to fail only after the whole merge)."""
    rng = np.random.default_rng(1)
    for i in range(2):
        y = rng.integers(0, 3, 200)
        p = rng.dirichlet(np.ones(3), 200)
        streameval.MulticlassSketch().update(y, p).save(tmp_path / f"m{i}.sketch")
    import streameval.sketch.files as files

    def never(*args, **kwargs):
        raise AssertionError("merge_files called")

    monkeypatch.setattr(files, "merge_files", never)
    out = tmp_path / "all.sketch"
    r = CliRunner().invoke(app, ["merge", str(tmp_path / "m0.sketch"), str(tmp_path / "m1.sketch"), "-o", str(out),
                                 "--format-version", "4"])
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert "multiclass" in r.output and "m0.sketch" in r.output and "--format-version" in r.output
    assert not out.exists()
    monkeypatch.undo()
    r = CliRunner().invoke(app, ["merge", str(tmp_path / "m0.sketch"), str(tmp_path / "m1.sketch"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert streameval.load(out).n_rows == 400


def test_file_kind_reads_the_header_only(tmp_path) -> None:
    from streameval.errors import SketchFormatError
    from streameval.sketch.files import file_kind

    _shards(tmp_path, n=1)
    assert file_kind(tmp_path / "day" / "h00.sketch") == "binary"
    streameval.MulticlassSketch().update([0, 1, 2], np.eye(3)).save(tmp_path / "m.sketch")
    assert file_kind(tmp_path / "m.sketch") == "multiclass"
    head = (tmp_path / "m.sketch").read_bytes()
    (tmp_path / "cut.sketch").write_bytes(head[:20])
    with pytest.raises(SketchFormatError, match="cut.sketch"):
        file_kind(tmp_path / "cut.sketch")
    with pytest.raises(SketchFormatError, match="notes.txt"):
        file_kind(tmp_path / "day" / "notes.txt")
