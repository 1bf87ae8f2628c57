"""SQL fragments from users and config files: one expression or one SELECT, nothing else runs.

Every refused fragment must (1) raise SQLRefusedError (a SourceError and a UsageError) naming
the option and the fragment, before anything runs, and (2) leave no side effect: no file written,
no database attached, no setting changed.
"""

from __future__ import annotations

import os

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import streameval
from streameval.cli.main import app
from streameval.errors import UsageError
from streameval.sources import SourceError, SQLRefusedError, check_expression, check_query, open_source


@pytest.fixture(scope="module")
def table() -> pa.Table:
    rng = np.random.default_rng(3)
    n = 200
    return pa.table({
        "score": rng.random(n),
        "label": (rng.random(n) < 0.3).astype(np.int8),
        "segment": np.where(rng.random(n) < 0.5, "web", "app"),
    })


@pytest.fixture
def files(tmp_path, table):
    pq.write_table(table, tmp_path / "log.parquet")
    db = tmp_path / "log.duckdb"
    con = duckdb.connect(str(db))
    con.register("t", table)
    con.sql("CREATE TABLE preds AS SELECT * FROM t")
    con.close()
    return tmp_path


def _evil(target: str) -> dict[str, list[str]]:
    """Fragments that would write ``target`` (or otherwise act) if they ran."""
    copy = f"COPY (SELECT 42 AS x) TO '{target}'"
    return {
        "where": [
            f"score > 0.5; {copy}",
            f"score > 0.5) {copy} --",
            f"1=1; ATTACH '{target}' AS x",
            "1=1; INSTALL httpfs",
            "1=1; LOAD httpfs",
            "1=1; PRAGMA version",
            "1=1; SET threads = 1",
            f"score > (SELECT count(*) FROM read_csv('{target}'))",
            f"label IN (SELECT 1 FROM glob('{target}'))",
            f"EXISTS (SELECT * FROM read_text('{target}'))",
            "score > 0.5 /*",
            "score > 0.5 ORDER BY 1",
            "nextval('s') > 0",
        ],
        "sql": [
            copy,
            f"SELECT * FROM data; {copy}",
            f"ATTACH '{target}'",
            "INSTALL httpfs",
            "LOAD httpfs",
            "PRAGMA version",
            "SET threads = 1",
            "CALL pragma_version()",
            "EXPLAIN SELECT 1",
            "CREATE TABLE x AS SELECT 1",
            "WITH x AS (INSERT INTO preds VALUES (1, 1, 'web') RETURNING *) SELECT * FROM x",
            "SELECT 1; SELECT 2",
            "",
        ],
        "score": [
            f"score FROM read_csv('{target}')",
            f"(SELECT 1 FROM read_text('{target}'))",
            f"score; {copy}",
            "score AS s, label",
        ],
        "table": [
            f"preds; {copy}",
            'preds" ; DROP TABLE preds; --',
            "missing_table",
        ],
    }


OPTIONS = {"where": "where= (--where)", "sql": "sql= (--sql)", "score": "score= (--score)", "table": "table= (--table)"}


@pytest.mark.parametrize("option", ["where", "sql", "score"])
@pytest.mark.parametrize("kind", ["parquet", "duckdb", "arrow", "memory"])
def test_refused_fragments_run_nothing(files, table, option, kind):
    target = str(files / "pwned.csv")
    for fragment in _evil(target)[option]:
        if kind == "memory" and option != "sql":
            continue
        args: dict = {"score": "score", "label": "label"}
        if option == "where":
            args["where"] = fragment
        elif option == "score":
            args["score"] = fragment
        else:
            fragment = fragment if kind != "duckdb" else fragment.replace("data", "preds")
            args["sql"] = fragment
        source = {"parquet": str(files / "log.parquet"), "duckdb": str(files / "log.duckdb"), "arrow": table,
                  "memory": None}[kind]
        with pytest.raises(SourceError) as info:
            s = open_source(source, **args)
            list(s.chunks())
            pytest.fail(f"not refused: {fragment!r}")
        if fragment.strip():
            assert isinstance(info.value, SQLRefusedError), (fragment, str(info.value))
            assert isinstance(info.value, UsageError)
            assert OPTIONS[option] in str(info.value)
            assert repr(fragment[:40])[1:-1][:20] in str(info.value)
        assert not os.path.exists(target), fragment


def test_refused_tables(files):
    target = str(files / "pwned.csv")
    for fragment in _evil(target)["table"]:
        with pytest.raises(SQLRefusedError, match=r"table= \(--table\).*no such table; tables: preds"):
            open_source(str(files / "log.duckdb"), score="score", label="label", table=fragment)
    # the table survived, and nothing was written
    con = duckdb.connect(str(files / "log.duckdb"), read_only=True)
    assert con.sql("SELECT count(*) FROM preds").fetchall() == [(200,)]
    con.close()
    assert not os.path.exists(target)


def test_odd_table_names_are_quoted(tmp_path, table):
    db = tmp_path / "odd.duckdb"
    con = duckdb.connect(str(db))
    con.register("t", table)
    con.sql('CREATE TABLE "my preds; x" AS SELECT * FROM t')
    con.sql("CREATE SCHEMA s")
    con.sql("CREATE TABLE s.other AS SELECT * FROM t WHERE label = 1")
    con.close()
    a = open_source(str(db), score="score", label="label", table="my preds; x")
    assert sum(c.batch.num_rows for c in a.chunks()) == 200
    b = open_source(str(db), score="score", label="label", table="s.other")
    assert sum(c.batch.num_rows for c in b.chunks()) == int(np.sum(table.column("label").to_numpy()))


def test_valid_fragments_still_work(files, table):
    src = open_source(str(files / "log.parquet"), score="score * 1.0", label="label = 1",
                      where="segment = 'web' AND score BETWEEN 0 AND 1 -- a trailing comment")
    got = pa.Table.from_batches([c.batch for c in src.chunks()])
    web = table.filter(pa.compute.equal(table.column("segment"), "web"))
    assert got.num_rows == web.num_rows
    np.testing.assert_allclose(np.sort(got.column("score").to_numpy()), np.sort(web.column("score").to_numpy()))
    q = open_source(str(files / "log.duckdb"), score="score", label="label",
                    sql="SELECT * FROM preds WHERE segment = 'app';")
    assert sum(c.batch.num_rows for c in q.chunks()) == table.num_rows - web.num_rows
    # CASE, casts, IN lists, functions and string literals holding SQL words are fine
    e = open_source(table, score="CASE WHEN score > 0.5 THEN score ELSE 0 END", label="segment IN ('web')",
                    where="'; COPY x TO y' <> segment AND abs(score) >= 0")
    assert sum(c.batch.num_rows for c in e.chunks()) == table.num_rows


def test_sql_alone_may_read_files_but_not_write(files):
    path = str(files / "log.parquet")
    src = open_source(None, sql=f"SELECT * FROM read_parquet('{path}')", score="score", label="label")
    assert sum(c.batch.num_rows for c in src.chunks()) == 200
    target = files / "out.csv"
    with pytest.raises(SQLRefusedError, match="COPY statement"):
        open_source(None, sql=f"COPY (SELECT 1) TO '{target}'", score="score", label="label")
    assert not target.exists()


def test_locked_connection_reads_only_its_files(files, tmp_path):
    """A query over files sees the view `data` and nothing else on disk."""
    other = tmp_path / "secret.csv"
    other.write_text("score,label\n0.5,1\n")
    with pytest.raises(SourceError, match="disabled by configuration|Permission"):
        src = open_source(str(files / "log.parquet"), score="score", label="label",
                          sql=f"SELECT * FROM data UNION ALL SELECT * FROM read_csv('{other}')")
        list(src.chunks())


def test_check_expression_and_query_units():
    assert check_expression("a + 1", "score") == "(a + 1\n)"
    assert check_query("SELECT 1;") == "(SELECT 1\n)"
    with pytest.raises(SQLRefusedError, match=r"score= \(--score\): refused 'a\) FROM t WHERE \(1'"):
        check_expression("a) FROM t WHERE (1", "score")
    with pytest.raises(SQLRefusedError, match="PRAGMA statement"):
        check_query("PRAGMA version")
    with pytest.raises(SQLRefusedError, match="2 statements"):
        check_query("SELECT 1; SELECT 2")
    with pytest.raises(SQLRefusedError, match="modifies data"):
        check_query("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x")
    with pytest.raises(SQLRefusedError, match="longer than"):
        check_expression("1" * 200_000, "where")


def test_polars_sources_pass_the_same_checks(table, tmp_path):
    pl = pytest.importorskip("polars")
    frame = pl.from_arrow(table)
    with pytest.raises(SQLRefusedError, match="where"):
        open_source(frame, score="score", label="label", where="score > 0.5; SELECT 1")
    with pytest.raises(SQLRefusedError, match="sql"):
        open_source(frame, score="score", label="label", sql=f"COPY (SELECT 1) TO '{tmp_path / 'x'}'")
    ok = open_source(frame, score="score", label="label", where="segment = 'web'")
    assert sum(c.batch.num_rows for c in ok.chunks()) > 0


def test_user_connection_is_not_reconfigured(table):
    con = duckdb.connect()
    con.register("t", table)
    con.sql("CREATE TABLE preds AS SELECT * FROM t")
    src = open_source(con, score="score", label="label", table="preds", where="score > 0.1")
    assert sum(c.batch.num_rows for c in src.chunks()) > 0
    con.sql("SET threads = 2")  # still the caller's connection to configure
    with pytest.raises(SQLRefusedError):
        open_source(con, score="score", label="label", sql="DROP TABLE preds")
    assert con.sql("SELECT count(*) FROM preds").fetchall() == [(200,)]


def test_cli_refuses_with_exit_2_and_writes_nothing(files, tmp_path):
    target = tmp_path / "pwned.csv"
    runner = CliRunner()
    cfg = tmp_path / "job.toml"
    cfg.write_text(
        f'source = "{files / "log.parquet"}"\nscore = "score"\nlabel = "label"\n'
        f"where = \"score > 0.5; COPY (SELECT 1) TO '{target}'\"\n"
    )
    result = runner.invoke(app, ["eval", "--config", str(cfg)])
    assert result.exit_code == 2, result.output
    assert "where= (--where): refused" in result.stderr
    assert not target.exists()
    result = runner.invoke(app, ["eval", str(files / "log.duckdb"), "--score", "score", "--label", "label",
                                 "--sql", f"ATTACH '{tmp_path / 'new.duckdb'}' AS n"])
    assert result.exit_code == 2 and "ATTACH statement" in result.stderr
    assert not (tmp_path / "new.duckdb").exists()


def test_evaluate_refuses_too(files):
    with pytest.raises(UsageError, match="where"):
        streameval.evaluate(str(files / "log.parquet"), score="score", label="label", where="1=1; PRAGMA version")
