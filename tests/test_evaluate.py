"""Tests of streameval.evaluate: numbers against scikit-learn, shard merging, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import average_precision_score, confusion_matrix, roc_auc_score

import streameval
from streameval import synthetic
from streameval.errors import InputError
from streameval.evaluate import EmptyInputError, evaluate, sketch_source
from streameval.report import Report


def assert_same_report(a: Report, b: Report) -> None:
    """Every bin-derived number identical; floating-point running sums equal up to rounding."""
    for key, v in b.metrics.items():
        if key in ("log_loss", "brier", "ece"):
            assert a.metrics[key]["value"] == pytest.approx(v["value"], rel=1e-12)
        else:
            assert a.metrics[key] == v, key
    assert a.confusion == b.confusion


def _arrays(table):
    return table.column("label").to_numpy(), table.column("score").to_numpy()


@pytest.mark.parametrize("weighted", [False, True])
def test_discrete_scores_match_sklearn_exactly(weighted):
    t = synthetic.generate(20_000, decimals=3, weight=weighted, seed=5)
    y, s = _arrays(t)
    w = t.column("weight").to_numpy() if weighted else None
    r = evaluate(t, score="score", label="label", weight="weight" if weighted else None, thresholds=[0.2, 0.5])
    m = r.metrics
    assert m["roc_auc"]["exact"] and m["average_precision"]["exact"]
    assert m["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
    assert m["partial_roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s, sample_weight=w, max_fpr=0.1), abs=1e-12)
    assert m["average_precision"]["value"] == pytest.approx(average_precision_score(y, s, sample_weight=w), abs=1e-12)
    assert m["gini"]["value"] == pytest.approx(2 * roc_auc_score(y, s, sample_weight=w) - 1, abs=1e-12)
    for c, th in zip(r.confusion, [0.2, 0.5], strict=False):
        tn, fp, fn, tp = confusion_matrix(y, s >= th, sample_weight=w).ravel()
        assert c["exact"]
        assert (c["tp"], c["fp"], c["fn"], c["tn"]) == pytest.approx((tp, fp, fn, tn), rel=1e-12)
    assert m["n_rows"] == 20_000
    assert m["positives"]["value"] == pytest.approx(w[y == 1].sum() if weighted else y.sum(), rel=1e-12)


def test_continuous_scores_inside_interval():
    t = synthetic.generate(50_000, seed=6)
    y, s = _arrays(t)
    m = evaluate(t, score="score", label="label").metrics
    for key, ref in (("roc_auc", roc_auc_score(y, s)), ("average_precision", average_precision_score(y, s))):
        assert m[key]["lower"] - 1e-12 <= ref <= m[key]["upper"] + 1e-12
        assert m[key]["upper"] - m[key]["lower"] < 1e-3


def test_rare_distribution_inside_interval():
    t = synthetic.generate(200_000, distribution="rare", seed=9)
    y, s = _arrays(t)
    m = evaluate(t, score="score", label="label").metrics
    ref = roc_auc_score(y, s)
    assert m["roc_auc"]["lower"] - 1e-12 <= ref <= m["roc_auc"]["upper"] + 1e-12
    assert m["roc_auc"]["upper"] - m["roc_auc"]["lower"] < 1e-3


def test_shard_merge_equals_whole(tmp_path):
    t = synthetic.generate(12_000, decimals=4, weight=True, seed=12, chunk_rows=4000)
    paths = []
    for i in range(3):
        p = tmp_path / f"shard-{i}.parquet"
        pq.write_table(t.slice(4000 * i, 4000), p)
        paths.append(p)
    whole = evaluate([str(p) for p in paths], score="score", label="label", weight="weight")
    sketches = [sketch_source(str(p), score="score", label="label", weight="weight")[0] for p in paths]
    for i, s in enumerate(sketches):
        s.save(tmp_path / f"{i}.sketch")
    merged = streameval.merge(streameval.load(tmp_path / f"{i}.sketch") for i in (2, 0, 1))
    assert_same_report(Report.from_sketch(merged), whole)


def test_batch_size_does_not_change_results():
    t = synthetic.generate(9000, seed=13)
    a = evaluate(t, score="score", label="label", batch_rows=1000)
    b = evaluate(t, score="score", label="label", batch_rows=1 << 20)
    assert a.sketch.table().P == b.sketch.table().P
    assert a.metrics["roc_auc"] == b.metrics["roc_auc"]


def test_expressions_where_and_pos_label(tmp_path):
    t = synthetic.generate(5000, decimals=3, seed=14)
    status = np.where(t.column("label").to_numpy() == 1, "fraud", "ok")
    t = t.append_column("status", pa.array(status))
    pq.write_table(t, tmp_path / "log.parquet")
    path = str(tmp_path / "log.parquet")
    by_expr = evaluate(path, score="score", label="status = 'fraud'")
    by_pos = evaluate(path, score="score", label="status", pos_label="fraud")
    plain = evaluate(path, score="score", label="label")
    assert by_expr.metrics["roc_auc"] == by_pos.metrics["roc_auc"] == plain.metrics["roc_auc"]
    web = evaluate(path, score="score", label="label", where="segment = 'web'")
    mask = t.column("segment").to_numpy(zero_copy_only=False) == "web"
    y, s = _arrays(t)
    assert web.metrics["roc_auc"]["value"] == pytest.approx(roc_auc_score(y[mask], s[mask]), abs=1e-12)
    assert web.provenance["rows_read"] == mask.sum() and web.provenance["where"] == "segment = 'web'"
    # a textual pos_label (from the command line) is converted to the label column's type
    assert evaluate(path, score="score", label="label", pos_label="1").metrics["roc_auc"] == plain.metrics["roc_auc"]


def test_provenance():
    t = synthetic.generate(1000, seed=1)
    r = evaluate(t, score="score", label="label", grid="linear:0:1:1000")
    p = r.provenance
    assert p["rows_read"] == 1000 and p["rows_skipped"] == {"nan_score": 0}
    assert p["grid"] == {"kind": "linear", "lo": 0.0, "hi": 1.0, "bins": 1000}
    assert p["streameval_version"] == streameval.__version__
    assert p["elapsed_seconds"] >= 0 and p["source_kind"] == "arrow"


def test_nan_scores_raise_or_skip(tmp_path):
    s = np.array([0.1, np.nan, 0.7, 0.4, np.nan])
    y = np.array([0, 1, 1, 0, 0])
    pq.write_table(pa.table({"score": s, "label": y}), tmp_path / "nan.parquet")
    path = str(tmp_path / "nan.parquet")
    with pytest.raises(InputError) as e:
        evaluate(path, score="score", label="label")
    assert path in str(e.value) and "score 'score'" in str(e.value) and "row 1" in str(e.value)
    r = evaluate(path, score="score", label="label", nan_policy="skip")
    assert r.provenance["rows_skipped"] == {"nan_score": 2}
    assert r.metrics["roc_auc"]["value"] == 1.0


def test_error_row_is_counted_inside_the_file(tmp_path):
    for i in range(2):
        y = np.zeros(100, dtype=np.int64)
        y[50] = 1
        if i == 1:
            y[70] = 3
        pq.write_table(pa.table({"score": np.linspace(0, 1, 100), "label": y}), tmp_path / f"p{i}.parquet")
    with pytest.raises(InputError) as e:
        evaluate(str(tmp_path), score="score", label="label")
    msg = str(e.value)
    assert "p1.parquet" in msg and "row 70" in msg and "label 'label'" in msg and "3 (1 rows)" in msg


def test_non_binary_labels_show_examples():
    with pytest.raises(InputError, match=r"label values seen: 0 .*2 \(1 rows\)"):
        evaluate({"s": np.array([0.1, 0.2, 0.3]), "y": np.array([0, 1, 2])}, score="s", label="y")


def test_empty_input(tmp_path):
    pq.write_table(pa.table({"score": pa.array([], pa.float64()), "label": pa.array([], pa.int8())}), tmp_path / "e.parquet")
    with pytest.raises(EmptyInputError, match="no rows"):
        evaluate(str(tmp_path / "e.parquet"), score="score", label="label")
    t = synthetic.generate(100)
    with pytest.raises(EmptyInputError, match="matched none"):
        evaluate(t, score="score", label="label", where="score > 2")


def test_one_class_is_reported_not_crashed():
    r = evaluate({"s": np.array([0.1, 0.4, 0.8]), "y": np.array([0, 0, 0])}, score="s", label="y")
    assert r.metrics["roc_auc"]["value"] is None and r.metrics["ks"]["value"] is None
    assert any("one class" in n or "both classes" in n for n in r.notes)
    r.to_json()  # strict JSON


def test_progress_callback():
    calls = []
    evaluate(synthetic.generate(2500), score="score", label="label", batch_rows=1000,
             progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1000, 2500), (2000, 2500), (2500, 2500)]


def test_integer_scores_on_linear_grid_are_exact():
    t = synthetic.generate(20_000, distribution="credit", seed=3)
    y, s = _arrays(t)
    r = evaluate(t, score="score", label="label", grid="linear:300:851:551", thresholds=[600, 700])
    assert r.metrics["roc_auc"]["exact"]
    assert r.metrics["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    tn, fp, fn, tp = confusion_matrix(y, s >= 600).ravel()
    assert (r.confusion[0]["tp"], r.confusion[0]["fp"]) == (tp, fp) and r.confusion[0]["exact"]
    assert not math.isnan(r.metrics["ks"]["value"])


def test_read_ahead_preserves_order_propagates_errors_and_stops_early():
    import importlib

    ev = importlib.import_module("streameval.consume")  # the reading loops (split from evaluate)
    assert list(ev._read_ahead(iter(range(100)))) == list(range(100))

    def failing():
        yield 1
        raise OSError("disk gone")

    it = ev._read_ahead(failing())
    assert next(it) == 1
    with pytest.raises(OSError, match="disk gone"):
        next(it)

    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    it = ev._read_ahead(endless(), depth=2)
    assert next(it) == 0
    it.close()  # the consumer stops: the reader thread must stop too
    n = len(produced)
    import time

    time.sleep(0.3)
    assert len(produced) == n and n <= 5


def test_type_errors_name_the_file_and_column_and_cli_hint(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    import streameval

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"seg": ["a", "b"], "label": [0, 1], "score": [0.1, float("nan")]}), path)
    with pytest.raises(streameval.InputTypeError, match=r"t\.parquet.*score 'seg'"):
        streameval.evaluate(str(path), score="seg", label="label")
    with pytest.raises(streameval.InputError, match="--skip-nan"):
        streameval.evaluate(str(path), score="score", label="label")


def test_pos_label_absent_says_so():
    import streameval

    with pytest.raises(streameval.InputError, match="does not occur"):
        streameval.BinarySketch().update(["fraud", "ok", "maybe"], [0.1, 0.2, 0.3], pos_label="Fraud")


@pytest.fixture
def small_parts(monkeypatch):
    """Parts of one row-group run of batch_rows rows, so that small files split into many parts."""
    from streameval import sources

    monkeypatch.setattr(sources, "PART_ROWS", 1)


def _write_row_groups(path, table, row_group_size):
    pq.write_table(table, path, row_group_size=row_group_size)
    return str(path)


def test_parquet_parts_deliver_the_same_rows_as_the_stream(tmp_path, small_parts):
    from streameval.sources import open_source

    t = synthetic.generate(50_000, seed=21, weight=True)
    paths = [_write_row_groups(tmp_path / f"p{i}.parquet", t.slice(i * 25_000, 25_000), 3000) for i in range(2)]
    src = open_source(paths, score="score", label="label", weight="weight", batch_rows=7000)
    parts = src.parts()
    assert parts is not None and len(parts) == 2 * 3  # 25,000 rows: 3 runs of >= 7,000 rows per file
    streamed = [(c.origin, c.origin_row, c.batch) for c in src.chunks()]
    split = [(c.origin, c.origin_row, c.batch) for p in parts for c in p()]
    assert pa.Table.from_batches([b for *_, b in split]).equals(pa.Table.from_batches([b for *_, b in streamed]))
    # every chunk knows its file and the row of its first row in that file
    for origin, row, batch in split:
        i = paths.index(origin)
        assert batch.column("score").equals(t.slice(i * 25_000 + row, batch.num_rows).column("score").combine_chunks())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_threads_do_not_change_results(tmp_path, threads, small_parts):
    t = synthetic.generate(40_000, decimals=4, seed=22, weight=True)
    path = _write_row_groups(tmp_path / "log.parquet", t, 4000)
    y, s = _arrays(t)
    w = t.column("weight").to_numpy()
    r = evaluate(path, score="score", label="label", weight="weight", batch_rows=4000, threads=threads)
    assert r.metrics["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
    assert r.metrics["average_precision"]["value"] == pytest.approx(average_precision_score(y, s, sample_weight=w), abs=1e-12)
    assert r.provenance["rows_read"] == 40_000
    # weighted bins are floating-point sums, so a different split changes only their last bits
    one = evaluate(path, score="score", label="label", weight="weight", batch_rows=4000, threads=1)
    for key, v in one.metrics.items():
        if isinstance(v, dict) and isinstance(v.get("value"), float):
            assert r.metrics[key]["value"] == pytest.approx(v["value"], rel=1e-12), key
    # unweighted counts are integers: every bin-derived number is identical
    a = evaluate(path, score="score", label="label", batch_rows=4000, threads=threads)
    b = evaluate(path, score="score", label="label", batch_rows=4000, threads=1)
    assert_same_report(a, b)


def test_parallel_read_names_the_file_and_row_of_a_bad_label(tmp_path, small_parts):
    y = np.zeros(30_000, dtype=np.int64)
    y[::7] = 1
    y[23_456] = 5
    t = pa.table({"score": np.linspace(0, 1, 30_000), "label": y})
    path = _write_row_groups(tmp_path / "bad.parquet", t, 2000)
    for threads in (1, 2):
        with pytest.raises(InputError) as e:
            evaluate(path, score="score", label="label", batch_rows=2000, threads=threads)
        assert "bad.parquet" in str(e.value) and "row 23456" in str(e.value), str(e.value)


@pytest.mark.parametrize("rows", [0, 3])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_file_without_the_label_column_is_an_error_not_nulls(tmp_path, rows, threads, small_parts):
    from streameval.sources import SourceError

    _write_row_groups(tmp_path / "a.parquet", synthetic.generate(5000, seed=1).select(["score", "label"]), 1000)
    pq.write_table(pa.table({"score": pa.array(np.linspace(0, 1, rows))}), tmp_path / "b.parquet")
    with pytest.raises(SourceError, match=r"b\.parquet: no column 'label'"):
        evaluate(str(tmp_path), score="score", label="label", batch_rows=1000, threads=threads)


def test_threads_must_be_positive():
    from streameval.errors import UsageError

    with pytest.raises(UsageError, match="threads"):
        evaluate(synthetic.generate(100), score="score", label="label", threads=0)


def test_default_parts_are_about_a_million_rows(tmp_path):
    from streameval.sources import open_source

    t = synthetic.generate(30_000, seed=2)
    path = _write_row_groups(tmp_path / "log.parquet", t, 1000)
    assert len(open_source(path, score="score", label="label", batch_rows=100).parts()) == 1


@pytest.mark.parametrize("pos_label", ["fraud", None])
def test_a_thread_that_reads_no_rows_does_not_break_the_labels(tmp_path, small_parts, pos_label):
    # file b is empty: the thread that reads it sees no label and must not vote on the coding
    status = np.where(np.arange(1000) % 3 == 0, "fraud", "ok") if pos_label else np.arange(1000) % 3 == 0
    t = pa.table({"score": np.linspace(0, 1, 1000), "label": status})
    pq.write_table(t, tmp_path / "a.parquet")
    pq.write_table(t.slice(0, 0), tmp_path / "b.parquet")
    for threads in (1, 2):
        r = evaluate(str(tmp_path), score="score", label="label", pos_label=pos_label, threads=threads)
        assert r.provenance["rows_read"] == 1000


def test_label_codings_must_agree_across_threads(tmp_path, small_parts):
    y = np.arange(1000) % 2
    pq.write_table(pa.table({"score": np.linspace(0, 1, 1000), "label": y}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"score": np.linspace(0, 1, 1000), "label": 2 * y - 1}), tmp_path / "b.parquet")
    for threads in (1, 2):
        with pytest.raises(InputError, match="b.parquet") as e:
            evaluate(str(tmp_path), score="score", label="label", threads=threads)
        assert "-1" in str(e.value)


def test_the_earliest_error_wins_whatever_the_threads(tmp_path, small_parts):
    # a: one long part whose last row is bad; b: a short part whose first row is bad
    s = np.linspace(0, 1, 200_000)
    s[-1] = np.nan
    pq.write_table(pa.table({"score": s, "label": np.arange(200_000) % 2}), tmp_path / "a.parquet")
    s = np.linspace(0, 1, 1000)
    s[0] = np.nan
    pq.write_table(pa.table({"score": s, "label": np.arange(1000) % 2}), tmp_path / "b.parquet")
    for threads in (1, 2):
        with pytest.raises(InputError) as e:
            evaluate(str(tmp_path), score="score", label="label", threads=threads, batch_rows=10_000)
        assert "a.parquet" in str(e.value) and "row 199999" in str(e.value), str(e.value)


@pytest.fixture
def small_text_ranges(monkeypatch):
    """Text files cut into ranges of about 2,000 rows, so small files split into many parts."""
    from streameval.sources import textparts

    monkeypatch.setattr(textparts, "TEXT_PART_ROWS", 2000)
    monkeypatch.setattr(textparts, "MIN_PART_BYTES", 1)


@pytest.mark.parametrize("fmt", ["csv", "ndjson"])
@pytest.mark.parametrize("threads", [1, 2])
def test_text_files_read_in_ranges_match_sklearn(tmp_path, small_text_ranges, fmt, threads):
    import pyarrow.csv as pcsv

    t = synthetic.generate(30_000, decimals=4, seed=23, weight=True)
    path = tmp_path / f"log.{fmt}"
    if fmt == "csv":
        pcsv.write_csv(t, path)
    else:
        t.to_pandas().to_json(path, orient="records", lines=True, date_format="iso")
    y, s = _arrays(t)
    w = t.column("weight").to_numpy()
    r = evaluate(str(path), score="score", label="label", weight="weight", threads=threads)
    assert r.provenance["rows_read"] == 30_000
    assert r.metrics["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
    assert r.metrics["average_precision"]["value"] == pytest.approx(average_precision_score(y, s, sample_weight=w), abs=1e-12)
    # unweighted counts are integers: every bin-derived number equals the in-memory update's
    a = evaluate(str(path), score="score", label="label", threads=threads)
    assert_same_report(a, evaluate(t, score="score", label="label", threads=1))


@pytest.mark.parametrize("threads", [1, 2])
def test_csv_ranges_name_the_file_and_row_of_a_nan_score(tmp_path, small_text_ranges, threads):
    s = np.round(np.linspace(0, 1, 30_000), 5).astype(object)
    s[23_456] = "NaN"
    lines = ["score,label"] + [f"{v},{i % 2}" for i, v in enumerate(s)]
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        evaluate(str(tmp_path / "bad.csv"), score="score", label="label", threads=threads)
    assert "bad.csv" in str(e.value) and "row 23456" in str(e.value), str(e.value)


@pytest.mark.parametrize("threads", [1, 2])
def test_text_labels_survive_the_reused_range_buffers(tmp_path, small_text_ranges, threads):
    # Ranges are read into one reused buffer per thread; parsed columns (text included) must
    # not point into it, or a later range would rewrite labels already handed out.
    import pyarrow.csv as pcsv

    rng = np.random.default_rng(31)
    n = 20_000
    status = np.where(rng.random(n) < 0.3, "fraud", "ok-" + "x" * 7)
    score = np.round(rng.random(n), 4)
    pcsv.write_csv(pa.table({"score": score, "status": status}), tmp_path / "log.csv")
    r = evaluate(str(tmp_path / "log.csv"), score="score", label="status", pos_label="fraud", threads=threads)
    y = (status == "fraud").astype(int)
    assert r.provenance["rows_read"] == n
    assert r.metrics["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, score), abs=1e-12)
    assert r.metrics["average_precision"]["value"] == pytest.approx(average_precision_score(y, score), abs=1e-12)
    # all chunks held at once (as a reader thread running ahead would hold them): still intact
    from streameval.sources import open_source

    parts = open_source(str(tmp_path / "log.csv"), score="score", label="status").parts()
    chunks = [c for part in parts for c in part()]  # every range read on this one thread
    assert len(chunks) > 5
    got = pa.Table.from_batches([c.batch for c in chunks])
    assert got.column("label").to_pylist() == status.tolist() and got.column("score").to_pylist() == score.tolist()


@pytest.mark.parametrize("threads", [1, 2])
def test_quoted_values_holding_line_breaks_are_read_whole(tmp_path, small_text_ranges, threads, monkeypatch):
    # ranges cut at line ends, some inside a quoted note: detected, and the file read front to back
    from streameval.sources import textparts

    monkeypatch.setattr(textparts, "TEXT_PART_ROWS", 100)  # ~80 cuts, about half inside quotes
    rng = np.random.default_rng(41)
    n = 6000
    score = np.round(rng.random(n), 4)
    y = (rng.random(n) < 0.4).astype(int)
    notes = ['"first line\nsecond, with a comma"' if i % 3 == 0 else '"one line"' for i in range(n)]
    lines = ["score,note,label"] + [f"{s},{note},{lab}" for s, note, lab in zip(score, notes, y, strict=True)]
    (tmp_path / "notes.csv").write_text("\n".join(lines) + "\n")
    from streameval.sources import open_source
    from streameval.sources.textparts import TextRangeError

    parts = open_source(str(tmp_path / "notes.csv"), score="score", label="label").parts()
    assert parts is not None and len(parts) > 40
    with pytest.raises(TextRangeError, match="quoted value"):
        for part in parts:
            list(part())
    r = evaluate(str(tmp_path / "notes.csv"), score="score", label="label", threads=threads)
    assert r.provenance["rows_read"] == n
    assert r.metrics["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, score), abs=1e-12)


def test_a_bad_line_found_by_a_range_is_reported_by_the_front_to_back_read(tmp_path, small_text_ranges):
    lines = ["score,label"] + [f"0.{i % 10},{i % 2}" for i in range(250_000)]  # 2 MB: the
    lines[1 + 210_000] = "0.5,1,extra"  # types come from the first MiB; a field too many later
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    from streameval.sources import SourceError

    with pytest.raises(SourceError, match=r"bad\.csv: cannot read the file near row .*Expected 2 columns, got 3"):
        evaluate(str(tmp_path / "bad.csv"), score="score", label="label", threads=2)
