"""Provenance: sketches record their input files; merging one twice warns, or fails with strict."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import streameval
from streameval import BinarySketch
from streameval.cli.main import app
from streameval.errors import InputError, SketchFormatError
from streameval.sketch.provenance import MAX_INPUTS, DuplicateInputWarning


def _day(path, seed):
    rng = np.random.default_rng(seed)
    y = rng.random(3000) < 0.3
    pq.write_table(pa.table({"score": np.round(rng.random(3000), 3), "label": y}), path)


def test_inputs_are_recorded_saved_and_duplicates_caught(tmp_path):
    for d in (1, 2):
        _day(tmp_path / f"d{d}.parquet", d)
    a = streameval.evaluate(str(tmp_path / "d1.parquet"), score="score", label="label").sketch
    both = streameval.evaluate(str(tmp_path / "*.parquet"), score="score", label="label").sketch
    assert [e["rows"] for e in a.inputs] == [3000] and a.inputs[0]["id"].startswith("sha256:")
    assert len(both.inputs) == 2
    a.save(tmp_path / "a.sketch")
    loaded = streameval.load(tmp_path / "a.sketch")
    assert loaded.inputs == a.inputs
    with pytest.warns(DuplicateInputWarning, match="d1.parquet"):
        twice = streameval.merge([loaded, both])
    assert len(twice.inputs) == 2  # the union, not a list with repeats
    with pytest.raises(InputError, match="counted twice"):
        streameval.merge([loaded, both], strict=True)
    b = streameval.evaluate(str(tmp_path / "d2.parquet"), score="score", label="label").sketch
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(streameval.merge([a, b]).inputs) == 2  # different files: no warning


def test_the_record_stays_bounded_over_many_merges():
    shards = []
    for i in range(3 * MAX_INPUTS):
        s = BinarySketch().update([0, 1], [0.2, 0.8])
        s.inputs = [{"id": f"sha256:{i:032x}", "name": f"shard{i}", "rows": 2}]
        shards.append(s)
    total = streameval.merge(shards[:10]).merge(streameval.merge(shards[10:]))
    assert len(total.inputs) == MAX_INPUTS and total.inputs_dropped == 2 * MAX_INPUTS
    again = BinarySketch.from_bytes(total.to_bytes())
    assert again.inputs == total.inputs and again.inputs_dropped == total.inputs_dropped
    assert len(total.to_bytes()) < 200_000


@pytest.mark.parametrize("bad", [{"inputs": "x"}, {"inputs": [{"id": 5}]}, {"inputs": [{"rows": -1}]},
                                 {"inputs": [{"extra": 1}]}, {"inputs_dropped": -3}, {"inputs_dropped": True}])
def test_bad_inputs_in_a_file_are_a_format_error(bad):
    from streameval.sketch import io

    s = BinarySketch().update([0, 1], [0.2, 0.8])
    parts = s._parts()
    parts.meta.update(bad)
    with pytest.raises(SketchFormatError):
        BinarySketch.from_bytes(io.encode(parts))


def test_cli_merge_strict(tmp_path):
    _day(tmp_path / "d1.parquet", 1)
    runner = CliRunner()
    r = runner.invoke(app, ["eval", str(tmp_path / "d1.parquet"), "-s", "score", "-l", "label", "-q",
                            "--save-sketch", str(tmp_path / "a.sketch")])
    assert r.exit_code == 0, r.stderr
    warn = runner.invoke(app, ["merge", str(tmp_path / "a.sketch"), str(tmp_path / "a.sketch"), "-o", str(tmp_path / "m.sketch")])
    assert warn.exit_code == 0 and "counted twice" in warn.stderr
    strict = runner.invoke(app, ["merge", str(tmp_path / "a.sketch"), str(tmp_path / "a.sketch"), "-o",
                                 str(tmp_path / "n.sketch"), "--strict"])
    assert strict.exit_code == 1 and "counted twice" in strict.stderr
    assert json.loads(runner.invoke(app, ["report", str(tmp_path / "m.sketch"), "-f", "json"]).stdout)["metrics"]["n_rows"] == 6000


def test_a_huge_grid_built_in_code_is_refused_with_the_way_out():
    from streameval.errors import UsageError

    with pytest.raises(UsageError, match="STREAMEVAL_MAX_GRID_BINS"):
        BinarySketch(streameval.FloatGrid(20))


def test_inputs_fold_equals_folding_with_union():
    """InputsFold (O(entries) per sketch) gives what folding with union gives: entries, duplicates, dropped."""
    import random

    from streameval.sketch import provenance

    rng = random.Random(5)
    for trial in range(200):
        fold = provenance.InputsFold()
        acc: list = []
        dropped = 0
        for _ in range(rng.randint(1, 12)):
            more = [{"id": (f"sha256:{rng.randint(0, 40):032x}" if rng.random() < 0.9 else None), "name": "f", "rows": 1}
                    for _ in range(rng.randint(0, 300 if trial % 5 == 0 else 4))]
            more_dropped = rng.randint(0, 2)
            acc, dup, dropped = provenance.union(acc, more, dropped + more_dropped)
            assert fold.add(more, more_dropped) == dup
            assert fold.entries == acc and fold.dropped == dropped
