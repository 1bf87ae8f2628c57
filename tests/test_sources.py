"""Tests of streameval.sources: every source kind gives batches of exactly score/label[/weight]."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from streameval import synthetic
from streameval.sources import SourceError, open_source

N = 3000


@pytest.fixture(scope="module")
def log() -> pa.Table:
    return synthetic.generate(N, decimals=3, weight=True, seed=11, chunk_rows=1000)


def _read(src) -> pa.Table:
    batches = [c.batch for c in src.chunks()]
    return pa.Table.from_batches(batches)


def _check(table: pa.Table, log: pa.Table, weight: bool = False, rows=None) -> None:
    names = ["score", "label"] + (["weight"] if weight else [])
    assert table.column_names == names
    expected = log if rows is None else log.filter(rows)
    s = np.sort(table.column("score").to_numpy())
    assert np.allclose(s, np.sort(expected.column("score").to_numpy()))
    assert table.column("label").to_numpy().astype(int).sum() == expected.column("label").to_numpy().sum()


def test_parquet_file_reads_only_needed_columns(tmp_path, log):
    path = tmp_path / "log.parquet"
    pq.write_table(log, path, row_group_size=1000)
    src = open_source(str(path), score="score", label="label", weight="weight", batch_rows=700)
    assert src.engine == "pyarrow.dataset" and src.total_rows == N and src.kind == "parquet"
    chunks = list(src.chunks())
    assert max(c.batch.num_rows for c in chunks) <= 700
    assert all(c.origin == str(path) for c in chunks)
    _check(_read(src), log, weight=True)


def test_parquet_hive_partitioned_directory(tmp_path, log):
    ds.write_dataset(log, tmp_path / "hive", format="parquet", partitioning=["segment"], partitioning_flavor="hive")
    src = open_source(str(tmp_path / "hive"), score="score", label="label")
    assert src.total_rows == N and len(src.files) == 4
    _check(_read(src), log)
    # the partition column is usable in a filter and in expressions (through DuckDB)
    web = open_source(str(tmp_path / "hive"), score="score", label="label", where="segment = 'web'")
    assert web.engine == "duckdb"
    _check(_read(web), log, rows=pa.compute.equal(log.column("segment"), "web"))
    expr = open_source(str(tmp_path / "hive"), score="score", label="segment = 'web'")
    assert _read(expr).column("label").type == pa.bool_()


def test_glob_of_files(tmp_path, log):
    for i in range(3):
        pq.write_table(log.slice(i * 1000, 1000), tmp_path / f"part-{i}.parquet")
    src = open_source(str(tmp_path / "part-*.parquet"), score="score", label="label")
    assert len(src.files) == 3 and src.total_rows == N
    _check(_read(src), log)


def test_csv_gz(tmp_path, log):
    path = synthetic.write_csv(tmp_path / "log.csv.gz", N, decimals=3, weight=True, seed=11, chunk_rows=1000)
    src = open_source(path, score="score", label="label", weight="weight")
    assert src.kind == "csv"
    _check(_read(src), log, weight=True)


def test_tsv_is_tab_separated_and_formats_do_not_mix(tmp_path, log):
    import pyarrow.csv as pcsv

    path = tmp_path / "log.tsv"
    pcsv.write_csv(log, path, pcsv.WriteOptions(delimiter="\t"))
    src = open_source(str(path), score="score", label="label")
    assert src.kind == "tsv"
    _check(_read(src), log)
    _check(_read(open_source(str(path), score="score", label="label = 1")), log)  # through DuckDB
    pcsv.write_csv(log, tmp_path / "other.csv")
    with pytest.raises(SourceError, match="mix file formats"):
        open_source([str(path), str(tmp_path / "other.csv")], score="score", label="label")


def test_arrow_ipc(tmp_path, log):
    path = tmp_path / "log.arrow"
    feather.write_feather(log, path)
    src = open_source(str(path), score="score", label="label")
    assert src.kind == "ipc" and src.total_rows == N
    _check(_read(src), log)
    expr = open_source(str(path), score="score * 1.0", label="label = 1")
    _check(_read(expr), log)


def test_ndjson(tmp_path, log):
    path = tmp_path / "log.ndjson"
    log.select(["score", "label"]).to_pandas().to_json(path, orient="records", lines=True)
    _check(_read(open_source(str(path), score="score", label="label")), log)
    _check(_read(open_source(str(path), score="score", label="label > 0")), log)


def test_duckdb_query_and_table_in_file(tmp_path, log):
    db = tmp_path / "preds.duckdb"
    con = duckdb.connect(str(db))
    con.register("log_view", log)
    con.sql("CREATE TABLE preds AS SELECT * FROM log_view")
    con.close()
    src = open_source(str(db), score="score", label="label", table="preds")
    assert src.total_rows == N
    _check(_read(src), log)
    only = open_source(str(db), score="score", label="label")  # the only table
    _check(_read(only), log)
    q = open_source(str(db), sql="SELECT * FROM preds WHERE segment = 'app'", score="score", label="label")
    _check(_read(q), log, rows=pa.compute.equal(log.column("segment"), "app"))


def test_duckdb_in_memory_query_over_files(tmp_path, log):
    pq.write_table(log, tmp_path / "log.parquet")
    sql = f"SELECT * FROM read_parquet('{tmp_path / 'log.parquet'}')"
    _check(_read(open_source(None, sql=sql, score="score", label="label")), log)
    # with files as SOURCE, the query sees them as the view `data`
    q = open_source(str(tmp_path / "log.parquet"), sql="SELECT * FROM data WHERE label = 1", score="score", label="label")
    assert _read(q).num_rows == log.column("label").to_numpy().sum()


def test_duckdb_connection_and_relation(log):
    con = duckdb.connect()
    con.register("log_view", log)
    con.sql("CREATE TABLE t AS SELECT * FROM log_view")
    _check(_read(open_source(con, table="t", score="score", label="label")), log)
    rel = con.sql("SELECT * FROM t")
    _check(_read(open_source(rel, score="score", label="label = 1")), log)


def test_polars_lazy_and_eager(log):
    df = pl.from_arrow(log)
    _check(_read(open_source(df.lazy(), score="score", label="label", batch_rows=500)), log)
    _check(_read(open_source(df, score="score", label="label", weight="weight")), log, weight=True)
    web = open_source(df.lazy(), score="score", label="label = 1", where="segment = 'web'")
    _check(_read(web), log, rows=pa.compute.equal(log.column("segment"), "web"))


def test_pandas(log):
    df = log.to_pandas()
    src = open_source(df, score="score", label="label", batch_rows=1000)
    assert src.total_rows == N
    assert [c.batch.num_rows for c in src.chunks()] == [1000, 1000, 1000]
    _check(_read(src), log)
    _check(_read(open_source(df, score="score", label="label", where="segment = 'store'")), log,
           rows=pa.compute.equal(log.column("segment"), "store"))


def test_numpy_mapping_and_structured(log):
    s, y = log.column("score").to_numpy(), log.column("label").to_numpy()
    _check(_read(open_source({"p": s, "y": y}, score="p", label="y", batch_rows=999)), log)
    rec = np.zeros(N, dtype=[("p", "f8"), ("y", "i1")])
    rec["p"], rec["y"] = s, y
    _check(_read(open_source(rec, score="p", label="y")), log)


def test_iterable_of_record_batches(log):
    batches = log.to_batches(max_chunksize=400)
    _check(_read(open_source(iter(batches), score="score", label="label")), log)
    _check(_read(open_source(iter(batches), score="score", label="label = 1", where="score >= 0")), log)
    _check(_read(open_source(pa.RecordBatchReader.from_batches(log.schema, batches), score="score", label="label")), log)


def test_missing_column_names_file_and_lists_available(tmp_path, log):
    path = tmp_path / "log.parquet"
    pq.write_table(log, path)
    with pytest.raises(SourceError) as e:
        open_source(str(path), score="prob", label="label").chunks().__next__()
    msg = str(e.value)
    assert str(path) in msg and "'prob'" in msg and "score, label, weight, segment, ts" in msg
    with pytest.raises(SourceError, match="not found|available columns"):
        open_source(str(path), score="prob * 2", label="label")


def test_missing_file_and_empty_glob(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        open_source(str(tmp_path / "nope.parquet"), score="s", label="y")
    with pytest.raises(SourceError, match="no files match"):
        open_source(str(tmp_path / "*.parquet"), score="s", label="y")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="no data files"):
        open_source(str(tmp_path / "empty"), score="s", label="y")


def test_mixed_and_unknown_formats(tmp_path, log):
    pq.write_table(log, tmp_path / "a.parquet")
    feather.write_feather(log, tmp_path / "b.feather")
    (tmp_path / "c.txt").write_text("x")
    with pytest.raises(SourceError, match="mix file formats"):
        open_source([str(tmp_path / "a.parquet"), str(tmp_path / "b.feather")], score="score", label="label")
    with pytest.raises(SourceError, match="unknown file type"):
        open_source(str(tmp_path / "c.txt"), score="score", label="label")


def test_unsupported_source_type():
    from streameval.errors import InputTypeError

    with pytest.raises(InputTypeError):
        open_source(42, score="s", label="y")
    with pytest.raises(InputTypeError, match="mapping"):
        open_source(np.zeros(3), score="s", label="y")


def test_text_files_give_a_row_estimate_for_progress(tmp_path, log):
    import pyarrow.csv as pcsv

    path = tmp_path / "log.csv"
    pcsv.write_csv(log, path)
    src = open_source(str(path), score="score", label="label")
    assert src.total_rows is None
    assert abs(src.rows_estimate - N) <= 0.02 * N
    gz = synthetic.write_csv(tmp_path / "log.csv.gz", 1000, seed=1)
    assert open_source(gz, score="score", label="label").rows_estimate is None


def test_a_file_named_twice_is_an_error_not_double_counted(tmp_path, log):
    path = tmp_path / "day=1" / "a.parquet"
    path.parent.mkdir()
    pq.write_table(log, path)
    for args in ([str(path), str(path)], [str(tmp_path), str(tmp_path / "day=1" / "*.parquet")]):
        with pytest.raises(SourceError, match="named twice"):
            open_source(args, score="score", label="label")


def test_glob_matching_directories_reads_their_files(tmp_path, log):
    for i in range(2):
        d = tmp_path / f"day={i}"
        d.mkdir()
        pq.write_table(log.slice(i * (N // 2), N // 2), d / "part.parquet")
    src = open_source(str(tmp_path / "day=*") + "/", score="score", label="label")
    assert len(src.files) == 2
    _check(_read(src), log)


def test_polars_sql_may_rename_columns():
    import polars as pl

    df = pl.DataFrame({"score": [0.1, 0.9, 0.4], "label": [0, 1, 1]})
    src = open_source(df, score="p", label="y", sql="SELECT score AS p, label AS y FROM data")
    batch = next(iter(src))
    assert batch.column("score").to_pylist() == [0.1, 0.9, 0.4]


def test_partition_columns_survive_globs_and_several_dirs(tmp_path, log):
    for i in range(2):
        d = tmp_path / f"day={i}"
        d.mkdir()
        pq.write_table(log.slice(i * (N // 2), N // 2), d / "part.parquet")
    for args in ([str(tmp_path / "day=*") + "/"], [str(tmp_path / "day=0"), str(tmp_path / "day=1")]):
        src = open_source(args, score="score", label="day")  # the partition column as the label
        days = pa.concat_arrays([b.column("label") for b in src]).to_pylist()
        assert sorted(set(days)) == [0, 1] and len(days) == N


def test_uppercase_gz_extension_is_a_clear_error(tmp_path):
    path = tmp_path / "LOG.CSV.GZ"
    synthetic.write_log(path, 100)
    with open(path, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"  # written gzip-compressed, as the name says
    with pytest.raises(SourceError, match="lowercase '.gz'"):
        open_source(str(path), score="score", label="label")


# -- hardening (issue 14) -------------------------------------------------------------------------


def _two_files(tmp_path, first: pa.Table, second: pa.Table, fmt: str = "parquet") -> list[str]:
    paths = []
    for name, t in (("a", first), ("b", second)):
        p = tmp_path / f"{name}.{fmt}"
        if fmt == "parquet":
            pq.write_table(t, p)
        else:
            import pyarrow.csv as pcsv

            pcsv.write_csv(t, p)
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("order", ["text_last", "text_first"])
@pytest.mark.parametrize("route", ["pyarrow", "duckdb"])
def test_column_type_differing_across_files_is_an_error_naming_both(tmp_path, fmt, order, route):
    num = pa.table({"score": [0.1, 0.9], "label": [0, 1]})
    text = pa.table({"score": ["0.2", "high"], "label": [1, 0]})
    first, second = (num, text) if order == "text_last" else (text, num)
    a, b = _two_files(tmp_path, first, second, fmt)
    kwargs = {"where": "label >= 0"} if route == "duckdb" else {}
    with pytest.raises(SourceError) as info:
        src = open_source(str(tmp_path), score="score", label="label", **kwargs)
        list(src.chunks())
    msg = str(info.value)
    assert "column 'score'" in msg and a in msg and b in msg and "text" in msg and "number" in msg


def test_numeric_widths_across_files_read_as_one_type(tmp_path):
    a = pa.table({"score": pa.array([0.25, 0.75], pa.float32()), "label": pa.array([0, 1], pa.int8())})
    b = pa.table({"score": pa.array([1, 0], pa.int64()), "label": pa.array([1, 0], pa.int64())})
    _two_files(tmp_path, a, b)
    for kwargs in ({}, {"where": "score >= 0"}):
        t = _read(open_source(str(tmp_path), score="score", label="label", **kwargs))
        assert t.column("score").type == pa.float64()
        assert sorted(t.column("score").to_pylist()) == [0.0, 0.25, 0.75, 1.0]


def test_csv_integer_then_float_files_read(tmp_path):
    # the first file's scores look like integers; pyarrow used to force int64 on the second file
    (tmp_path / "a.csv").write_text("score,label\n0,0\n1,1\n")
    (tmp_path / "b.csv").write_text("score,label\n0.5,1\n0.25,0\n")
    t = _read(open_source(str(tmp_path), score="score", label="label"))
    assert sorted(t.column("score").to_pylist()) == [0.0, 0.25, 0.5, 1.0]


PD_CASES = {
    "Float64": (lambda pd: pd.array([0.1, 0.8, 0.4], dtype="Float64"), None),
    "Float64 NA": (lambda pd: pd.array([0.1, None, 0.4], dtype="Float64"), "null"),
    "Int64": (lambda pd: pd.array([1, 0, 1], dtype="Int64"), None),
    "Int64 NA": (lambda pd: pd.array([1, None, 1], dtype="Int64"), "null"),
    "boolean": (lambda pd: pd.array([True, False, True], dtype="boolean"), None),
    "boolean NA": (lambda pd: pd.array([True, None, True], dtype="boolean"), "null"),
    "string": (lambda pd: pd.array(["fraud", "ok", "fraud"], dtype="string"), None),
    "string NA": (lambda pd: pd.array(["fraud", None, "fraud"], dtype="string"), "null"),
}


@pytest.mark.parametrize("case", sorted(PD_CASES))
@pytest.mark.parametrize("container", ["mapping", "frame", "update"])
def test_pandas_extension_arrays(case, container):
    import streameval

    pd = pytest.importorskip("pandas")
    make, null = PD_CASES[case]
    arr = make(pd)
    is_label = not case.startswith("Float")
    scores = arr if not is_label else pd.array([0.1, 0.8, 0.4], dtype="Float64")
    labels = arr if is_label else pd.array([1, 0, 1], dtype="Int64")
    pos_label = "fraud" if case.startswith("string") else None
    if container == "update":
        run = lambda: streameval.BinarySketch(pos_label=pos_label).update(labels, scores)  # noqa: E731
    else:
        data = {"s": scores, "y": labels}
        source = data if container == "mapping" else pd.DataFrame(data)
        run = lambda: streameval.evaluate(source, score="s", label="y", pos_label=pos_label).sketch  # noqa: E731
    if null is None:
        sk = run()
        assert sk.n_rows == 3
        exact = streameval.BinarySketch(pos_label=pos_label).update(
            np.asarray(labels, dtype=object if pos_label else float), np.asarray(scores, dtype=float)
        )
        assert sk.roc_auc() == exact.roc_auc()
    else:
        with pytest.raises(streameval.InputError, match=r"(NaN or null|null).*row 1"):
            run()


def _corrupt_parquet(tmp_path) -> str:
    t = pa.table({"score": np.linspace(0, 1, 1000), "label": (np.arange(1000) % 2).astype(np.int8)})
    p = tmp_path / "ck.parquet"
    pq.write_table(t, p, write_page_checksum=True, compression="none", use_dictionary=False)
    data = bytearray(p.read_bytes())
    pos = data.find(np.float64(t.column("score")[500].as_py()).tobytes())
    assert pos > 0
    data[pos] ^= 0x01  # a flipped bit inside a data page: the value still decodes
    p.write_bytes(bytes(data))
    return str(p)


@pytest.mark.parametrize("kwargs", [{}, {"where": "score >= 0"}, {"score": "score * 1.0"}])
def test_parquet_page_checksums_are_verified(tmp_path, kwargs):
    path = _corrupt_parquet(tmp_path)
    assert pq.ParquetFile(path).read().num_rows == 1000  # unverified, the corruption goes unnoticed
    args = {"score": "score", "label": "label", **kwargs}
    with pytest.raises(SourceError, match="ck.parquet.*(CRC|checksum)"):
        list(open_source(path, **args).chunks())
    src = open_source(path, **args)
    if src.parts() is not None:
        with pytest.raises(SourceError, match="CRC|checksum"):
            for part in src.parts():
                list(part())


# -- text files cut into ranges of lines ------------------------------------------------------
@pytest.fixture
def tiny_ranges(monkeypatch):
    """Ranges of about 50 rows (and no 1 MiB floor), so small files split into many ranges."""
    from streameval.sources import textparts

    monkeypatch.setattr(textparts, "TEXT_PART_ROWS", 50)
    monkeypatch.setattr(textparts, "MIN_PART_BYTES", 1)


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
@pytest.mark.parametrize("trailing", [True, False])
def test_split_file_covers_every_line_once(tmp_path, header, ending, trailing):
    from streameval.sources.textparts import split_file

    rng = np.random.default_rng(5)
    lines = [b"x" * int(k) for k in rng.integers(0, 40, 300)]
    body = ending.join(lines) + (ending if trailing else b"")
    data = (b"a,b" + ending if header else b"") + body
    path = tmp_path / "f.csv"
    path.write_bytes(data)
    for target in (1, 7, 64, 1000, len(data) + 10):
        ranges = split_file(str(path), header=header, target=target)
        assert ranges[0].start == (len(b"a,b" + ending) if header else 0) and ranges[-1].stop == len(data)
        for a, b in zip(ranges[:-1], ranges[1:], strict=True):
            assert a.stop == b.start and data[a.stop - 1:a.stop] == b"\n"  # cut just after a line end
        got = b"".join(bytes(r.read()) for r in ranges)
        assert got == body
        # rows before a range: the lines of the body before it (brute force)
        for r in ranges:
            assert r.rows_before() == data[r.data_start:r.start].count(b"\n")


def test_split_file_of_a_header_only_or_empty_file(tmp_path):
    from streameval.sources.textparts import split_file

    (tmp_path / "h.csv").write_bytes(b"score,label\n")
    (tmp_path / "e.csv").write_bytes(b"")
    for name in ("h.csv", "e.csv"):
        ranges = split_file(str(tmp_path / name), header=True, target=5)
        assert len(ranges) == 1 and bytes(ranges[0].read()) == b""


def test_part_bytes_follow_the_row_width(tmp_path):
    from streameval.sources import textparts

    narrow = tmp_path / "n.csv"
    narrow.write_bytes(b"score,label\n" + b"0.5,1\n" * 10_000)  # 6 bytes a row
    wide = tmp_path / "w.csv"
    wide.write_bytes(b"ts,id,segment,score,label\n" + b"2026-01-01 00:00:00.000,123456789012,web,0.5,1\n" * 10_000)
    n, w = textparts.part_bytes(str(narrow), True, rows=1 << 20), textparts.part_bytes(str(wide), True, rows=1 << 20)
    assert n == 6 << 20 and w == textparts.MAX_PART_BYTES  # 46 MiB wanted, capped
    assert textparts.part_bytes(str(narrow), True, rows=10) == textparts.MIN_PART_BYTES


def _wide_log(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "ts": pa.array(np.arange(n, dtype=np.int64) * 1000, pa.timestamp("ms")),
        "id": rng.integers(0, 1 << 62, n),
        "segment": pa.array(np.array(["web", "mobile", "partner"])[rng.integers(0, 3, n)]),
        "score": np.round(rng.random(n), 4),
        "label": (rng.random(n) < 0.3).astype(np.int64),
    })


@pytest.mark.parametrize("fmt", ["csv", "tsv", "ndjson"])
def test_text_ranges_give_the_rows_of_the_file_in_order(tmp_path, tiny_ranges, fmt):
    import pandas as pd
    import pyarrow.csv as pcsv

    t = _wide_log(2345, seed=3)
    path = tmp_path / f"log.{fmt}"
    if fmt == "ndjson":
        import json

        t.to_pandas().to_json(path, orient="records", lines=True, date_format="iso")
        with open(path) as f:  # Python's json module parses floats exactly (pandas' may not)
            reference = pd.DataFrame([json.loads(line) for line in f])
    else:
        delim = "," if fmt == "csv" else "\t"
        pcsv.write_csv(t, path, pcsv.WriteOptions(delimiter=delim))
        reference = pd.read_csv(path, sep=delim)
    src = open_source(str(path), score="score", label="label", batch_rows=1000)
    parts = src.parts()
    assert parts is not None and len(parts) > 10
    for chunks in ([c for p in parts for c in p()], list(src.chunks())):
        got = pa.Table.from_batches([c.batch for c in chunks])
        assert got.column_names == ["score", "label"]
        np.testing.assert_array_equal(got.column("score").to_numpy(), reference["score"].to_numpy())
        np.testing.assert_array_equal(got.column("label").to_numpy(), reference["label"].to_numpy())
        # each chunk knows the row of the file it starts at
        for c in chunks:
            np.testing.assert_array_equal(c.batch.column("score").to_numpy(),
                                          reference["score"].to_numpy()[c.origin_row:c.origin_row + c.batch.num_rows])


def test_wide_rows_do_not_shrink_the_batches(tmp_path):
    import pyarrow.csv as pcsv

    from streameval.sources import textparts

    t = _wide_log(600_000, seed=4)  # ~60 bytes a row: 1 MiB holds ~17,000 of them
    pcsv.write_csv(t, tmp_path / "wide.csv")
    sizes = [c.batch.num_rows for c in open_source(str(tmp_path / "wide.csv"), score="score", label="label").chunks()]
    assert sum(sizes) == 600_000
    assert min(sizes[:-1]) >= 0.8 * textparts.TEXT_PART_ROWS, sizes


def test_gzipped_csv_batches_are_joined(tmp_path):
    import pyarrow.csv as pcsv

    t = _wide_log(300_000, seed=6)
    with pa.CompressedOutputStream(str(tmp_path / "wide.csv.gz"), "gzip") as out:
        pcsv.write_csv(t, out)
    src = open_source(str(tmp_path / "wide.csv.gz"), score="score", label="label", batch_rows=50_000)
    parts = src.parts()
    assert parts is not None and len(parts) == 1  # a gzip stream cannot be cut
    sizes = [c.batch.num_rows for c in src.chunks()]
    assert sizes == [50_000] * 6  # 1 MiB blocks (~17,000 rows) joined up to batch_rows
    got = pa.Table.from_batches([c.batch for c in src.chunks()])
    assert got.column("score").equals(t.column("score")) and got.column("label").equals(t.column("label"))


def test_a_bad_value_in_a_late_range_names_its_row(tmp_path, monkeypatch):
    from streameval.sources import textparts

    monkeypatch.setattr(textparts, "TEXT_PART_ROWS", 5000)
    monkeypatch.setattr(textparts, "MIN_PART_BYTES", 1)
    path = tmp_path / "bad.csv"
    lines = ["score,label"] + [f"0.{i % 10},{i % 2}" for i in range(200_000)]  # 1.6 MB: the types
    lines[1 + 190_718] = "0.5,abc"  # come from the first MiB; row 190718 (0-based) is no integer
    path.write_text("\n".join(lines) + "\n")
    src = open_source(str(path), score="score", label="label")
    parts = src.parts()
    assert parts is not None and len(parts) > 30
    with pytest.raises(SourceError, match=r"bad\.csv: cannot read the file near row 190\d\d\d \("):
        for p in parts:
            list(p())


def test_numpy_view_is_the_arrow_buffer_without_a_copy():
    from streameval.sources.base import numpy_view

    for values, typ in (([0.5, 1.5, -2.0, 7.0], pa.float32()), ([0.5, 1.5, -2.0, 7.0], pa.float64()),
                        ([1, 0, -1, 5], pa.int8()), ([1, 0, 3, 5], pa.uint16()), ([1, 0, -1, 2**40], pa.int64())):
        a = pa.array(values, typ).slice(1, 3)  # an offset into the buffer
        v = numpy_view(a)
        assert isinstance(v, np.ndarray) and v.dtype == np.dtype(typ.to_pandas_dtype()) and not v.flags.writeable
        np.testing.assert_array_equal(v, np.asarray(values[1:4]).astype(v.dtype))
        assert np.shares_memory(v, np.frombuffer(a.buffers()[1], dtype=v.dtype))
    for other in (pa.array([1.0, None]), pa.array([True, False]), pa.array(["a", "b"]), None):
        assert numpy_view(other) is other  # nulls, bits and text are left to the sketch's own checks


def test_a_plain_file_evaluation_imports_neither_pandas_nor_pyarrow_dataset(tmp_path, log):
    import subprocess
    import sys

    pq.write_table(log, tmp_path / "log.parquet")
    log.to_pandas().to_csv(tmp_path / "log.csv", index=False)
    code = (
        "import sys, streameval\n"
        f"for f in ({str(tmp_path / 'log.parquet')!r}, {str(tmp_path / 'log.csv')!r}):\n"
        "    streameval.evaluate(f, score='score', label='label')\n"
        "print(sorted(m for m in ('pandas', 'pyarrow.dataset') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"  # pandas alone costs ~36 MB of RSS


def test_a_file_without_bounded_lines_is_not_cut(tmp_path, monkeypatch):
    from streameval.sources import textparts
    from streameval.sources.textparts import split_file

    monkeypatch.setattr(textparts, "MAX_PART_BYTES", 1000)
    (tmp_path / "cr.csv").write_bytes(b"score,label\r" + b"0.5,1\r" * 2000)  # '\r' line ends only
    assert split_file(str(tmp_path / "cr.csv"), header=True, target=100) == []
    long_line = b"score,note,label\n" + b"0.5,x,1\n" * 100 + b"0.5," + b"y" * 5000 + b",1\n" + b"0.5,x,1\n" * 100
    (tmp_path / "long.csv").write_bytes(long_line)
    assert split_file(str(tmp_path / "long.csv"), header=True, target=100) == []
    assert len(split_file(str(tmp_path / "long.csv"), header=True, target=10_000)) == 1
    # read whole by the streaming reader instead, with the same rows
    src = open_source(str(tmp_path / "cr.csv"), score="score", label="label")
    assert [len(p and [c for c in p()][0].batch) for p in src.parts()] == [2000]
