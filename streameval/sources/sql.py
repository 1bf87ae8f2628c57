"""DuckDB sources, and the checks every user-supplied SQL fragment passes before it runs.

A monitoring job takes ``--where``, ``--sql``, ``--table`` and column expressions from a config
file; they must not be able to run anything but the one read they describe. Three layers:

1. **Parse checks** with DuckDB's own parser (``duckdb.extract_statements`` and
   ``json_serialize_sql``), before anything runs:

   - an expression (``score``, ``label``, ``weight``, extra columns, ``where``) must parse as
     exactly ``SELECT (<expr>\\n)``: one statement, one select item, no FROM, WHERE, GROUP BY,
     ORDER BY, LIMIT, CTE, no subquery anywhere, no table function and no function with a side
     effect (``nextval``, ``setseed``);
   - a query (``sql``) must be exactly one statement of type SELECT, with no data-modifying node
     (``WITH x AS (INSERT ... RETURNING *) SELECT ...``) and no ``nextval``/``setseed``;
   - a table (``table``) must name an existing table; it is spliced as a quoted identifier.

   A refused fragment raises :class:`~streameval.sources.base.SQLRefusedError` (a
   ``SourceError`` and a ``UsageError``) naming the option and the fragment.
2. **Splicing**: expressions go in as ``(<expr>\\n)`` (the newline ends a trailing ``--``
   comment), a query as ``(<query>\\n) AS q``, identifiers double-quoted; the assembled
   statement is parsed again and must be one SELECT.
3. **The connection**: a DuckDB database file is opened ``read_only``. Connections streameval
   opens itself (over files, a database file, Arrow/pandas data) are then locked down:
   ``allowed_paths`` = the input files, ``enable_external_access = false`` (no other file, no
   COPY, ATTACH, INSTALL/LOAD) and ``lock_configuration = true`` (no SET afterwards). Two
   exceptions, documented: a query with no source (``sql=`` alone, which reads its own files
   with ``read_parquet(...)`` and the like) keeps external access, and a connection passed in
   by the caller is not reconfigured (it is the caller's); both still pass layers 1 and 2.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Callable, Iterator, Sequence

from .base import (
    DUCKDB_EXT,
    Chunk,
    Source,
    SourceError,
    SQLRefusedError,
    describe_cols,
    first_line,
    missing,
    quote_ident,
    quote_str,
    select_list,
)

__all__ = [
    "check_expression",
    "check_query",
    "duckdb_module",
    "duckdb_scan",
    "open_duckdb_file",
    "open_duckdb_con",
    "via_duckdb",
    "lock_down",
]

MAX_FRAGMENT_CHARS = 100_000
"""Longest SQL fragment accepted (expression or query)."""
_SIDE_EFFECT_FUNCTIONS = frozenset({"nextval", "setseed"})
_READ_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})

_OPTION = {
    "score": "score= (--score)",
    "label": "label= (--label)",
    "weight": "weight= (--weight)",
    "where": "where= (--where)",
    "sql": "sql= (--sql)",
    "table": "table= (--table)",
}


def duckdb_module() -> Any:
    """Import DuckDB, with an error that says what to install."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "expressions, --where, --sql and DuckDB sources need DuckDB: pip install duckdb"
        ) from None
    return duckdb


def option_name(alias: str) -> str:
    """How messages name the option that supplied ``alias``'s fragment."""
    return _OPTION.get(alias, f"column {alias!r}")


# -- parse checks ----------------------------------------------------------------------------------

_parser_lock = threading.Lock()
_parser: list[Any] = []


def _parse_tree(text: str) -> dict[str, Any]:
    """DuckDB's parse tree of ``text`` (``json_serialize_sql``); nothing is bound or run."""
    duckdb = duckdb_module()
    with _parser_lock:
        if not _parser:
            _parser.append(duckdb.connect())
        rows = _parser[0].execute("SELECT json_serialize_sql(?)", [text]).fetchall()
    tree: dict[str, Any] = json.loads(rows[0][0])
    return tree


def _refuse(option: str, fragment: str, why: str) -> SQLRefusedError:
    shown = fragment if len(fragment) <= 200 else fragment[:200] + "..."
    return SQLRefusedError(f"{option}: refused {shown!r}: {why}")


def _statements(text: str, option: str, fragment: str) -> list[Any]:
    duckdb = duckdb_module()
    try:
        return list(duckdb.extract_statements(text))
    except duckdb.Error as exc:
        raise _refuse(option, fragment, f"not valid SQL ({first_line(exc)})") from None


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _function_name(node: dict[str, Any]) -> str | None:
    name = node.get("function_name")
    return name.lower() if isinstance(name, str) else None


def check_expression(expr: str, alias: str) -> str:
    """Check that ``expr`` is one SQL expression that reads nothing but the row's columns.

    Parameters
    ----------
    expr : str
        The fragment (``"status = 'fraud'"``, ``"p > 0.5 AND segment = 'web'"``).
    alias : str
        What it is for (``"score"``, ``"where"``, ...), named in the message.

    Returns
    -------
    str
        ``"(<expr>\\n)"``, the form to splice into a statement.

    Raises
    ------
    SQLRefusedError
        If ``expr`` is not exactly one expression, or holds a subquery, a table function, a
        clause (FROM, WHERE, ORDER BY, ...), another statement, or a function with a side
        effect. The message names the option and the fragment.
    """
    option = option_name(alias)
    if len(expr) > MAX_FRAGMENT_CHARS:
        raise _refuse(option, expr, f"longer than {MAX_FRAGMENT_CHARS:,} characters")
    wrapped = f"({expr}\n)"
    text = f"SELECT {wrapped}"
    statements = _statements(text, option, expr)
    if len(statements) != 1:
        raise _refuse(option, expr, f"it holds {len(statements)} statements; give one expression")
    tree = _parse_tree(text)
    if tree.get("error"):
        raise _refuse(option, expr, f"not a valid SQL expression ({tree.get('error_message', 'parse error')})")
    node = tree["statements"][0]["node"]
    clauses = [
        name for name, present in (
            ("FROM", node.get("from_table", {}).get("type") != "EMPTY"),
            ("WHERE", node.get("where_clause") is not None),
            ("GROUP BY", bool(node.get("group_expressions"))),
            ("HAVING", node.get("having") is not None),
            ("QUALIFY", node.get("qualify") is not None),
            ("SAMPLE", node.get("sample") is not None),
            ("ORDER BY/LIMIT/DISTINCT", bool(node.get("modifiers"))),
            ("WITH", bool(node.get("cte_map", {}).get("map"))),
        ) if present
    ]
    if node.get("type") != "SELECT_NODE" or len(node.get("select_list", [])) != 1 or clauses:
        extra = f" ({', '.join(clauses)})" if clauses else ""
        raise _refuse(option, expr, f"not a single expression{extra}; give one SQL expression over the columns")
    for item in _walk(node["select_list"]):
        if item.get("class") == "SUBQUERY" or item.get("type") in ("SUBQUERY", "TABLE_FUNCTION"):
            raise _refuse(option, expr, "subqueries are not allowed in an expression")
        name = _function_name(item)
        if name in _SIDE_EFFECT_FUNCTIONS:
            raise _refuse(option, expr, f"function {name}() has a side effect")
    return wrapped


def check_query(sql: str, option: str = _OPTION["sql"]) -> str:
    """Check that ``sql`` is one read-only SELECT statement.

    Parameters
    ----------
    sql : str
        The query (``SELECT * FROM data WHERE ...``); a trailing semicolon is allowed.
    option : str
        How the message names the option.

    Returns
    -------
    str
        ``"(<query>\\n)"``, the form to splice as a subquery.

    Raises
    ------
    SQLRefusedError
        If ``sql`` holds more or less than one statement, is not a SELECT (COPY, ATTACH,
        INSTALL, LOAD, PRAGMA, SET, CALL, EXPLAIN, INSERT, ...), modifies data inside a
        common table expression, or calls a function with a side effect.
    """
    if len(sql) > MAX_FRAGMENT_CHARS:
        raise _refuse(option, sql, f"longer than {MAX_FRAGMENT_CHARS:,} characters")
    statements = _statements(sql, option, sql)
    if len(statements) != 1:
        raise _refuse(option, sql, f"it holds {len(statements)} statements; give exactly one SELECT")
    kind = getattr(statements[0].type, "name", str(statements[0].type))
    if kind != "SELECT":
        raise _refuse(option, sql, f"a {kind} statement; only a SELECT query is allowed")
    body = statements[0].query.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    tree = _parse_tree(body)
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        raise _refuse(option, sql, f"not one SELECT ({tree.get('error_message', 'parse error')})")
    for item in _walk(tree["statements"][0]):
        kind_ = item.get("type")
        if isinstance(kind_, str) and kind_.endswith("_NODE") and kind_ not in _READ_NODES:
            raise _refuse(option, sql, f"it modifies data ({kind_.removesuffix('_NODE').replace('_', ' ')})")
        name = _function_name(item)
        if name in _SIDE_EFFECT_FUNCTIONS:
            raise _refuse(option, sql, f"function {name}() has a side effect")
    return f"({body}\n)"


def _check_assembled(query: str, what: str) -> None:
    """The statement streameval built must still be exactly one SELECT."""
    statements = _statements(query, what, query)
    kinds = [getattr(s.type, "name", str(s.type)) for s in statements]
    if kinds != ["SELECT"]:  # pragma: no cover - the fragment checks make this unreachable
        raise _refuse(what, query, f"the assembled query is {kinds}, not one SELECT")


# -- connections ------------------------------------------------------------------------------------


def lock_down(con: Any, paths: Sequence[str] = ()) -> None:
    """Let ``con`` read only ``paths`` (and what is already attached or registered).

    Sets ``allowed_paths``, then ``enable_external_access = false`` (no other file, COPY,
    ATTACH, INSTALL or LOAD) and ``lock_configuration = true`` (no SET afterwards).
    """
    locked = con.sql("SELECT current_setting('lock_configuration')").fetchall()[0][0]
    if str(locked).lower() in ("true", "1"):
        # The same database file opened twice in one process shares one instance (and its
        # settings): an earlier source locked it already; the parse checks still apply.
        return
    if paths:
        con.sql("SET allowed_paths = [" + ", ".join(quote_str(p) for p in _both_forms(paths)) + "]")
    con.sql("SET enable_external_access = false")
    con.sql("SET lock_configuration = true")


def _both_forms(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        out.extend(dict.fromkeys([p, os.path.abspath(p)]))
    return out


def duckdb_scan(
    con: Any, from_sql: str, cols: dict[str, str], where: str | None, batch_rows: int, what: str
) -> Callable[[], Iterator[Chunk]]:
    """A chunk stream of ``SELECT cols FROM from_sql WHERE where`` run on ``con``.

    ``from_sql`` is streamevals's own text (a quoted table, a checked query, a file reader); the
    column expressions and ``where`` are checked here with :func:`check_expression`.
    """
    duckdb = duckdb_module()
    try:
        available = list(con.sql(f"SELECT * FROM {from_sql} LIMIT 0").columns)
    except duckdb.Error as exc:
        raise SourceError(f"{what}: {first_line(exc)}") from None
    missing(cols, available, what)
    for alias, expr in cols.items():
        if expr not in available:
            check_expression(expr, alias)
    query = f"SELECT {select_list(cols, available)} FROM {from_sql}"
    if where:
        query += f" WHERE {check_expression(where, 'where')}"
    _check_assembled(query, what)
    try:
        con.sql(f"SELECT * FROM ({query}) LIMIT 0")  # bind now: bad expressions fail before reading
    except duckdb.Error as exc:
        raise SourceError(
            f"{what}: cannot evaluate {describe_cols(cols, where)}: {first_line(exc)}; available "
            f"columns: {', '.join(available)}"
        ) from None

    def run() -> Iterator[Chunk]:
        try:
            reader = con.sql(query).to_arrow_reader(batch_rows)
            row = 0
            for batch in reader:
                if batch.num_rows:
                    yield Chunk(batch, what, row)
                    row += batch.num_rows
        except duckdb.Error as exc:
            raise SourceError(f"{what}: query failed: {first_line(exc)}") from None

    return run


def referenced_columns(cols: dict[str, str], where: str | None, available: Sequence[str]) -> list[str]:
    """The columns of ``available`` that ``cols`` and ``where`` use (plain names and the column
    references inside expressions, matched as DuckDB does: case-insensitively)."""
    by_lower = {c.lower(): c for c in available}
    used = [c for c in cols.values() if c in available]
    for expr in [e for e in cols.values() if e not in available] + ([where] if where else []):
        tree = _parse_tree(f"SELECT ({expr}\n)")
        for item in _walk(tree.get("statements", [])):
            if item.get("class") == "COLUMN_REF" and item.get("column_names"):
                name = str(item["column_names"][-1])
                used.append(name if name in available else by_lower.get(name.lower(), name))
    return list(dict.fromkeys(u for u in used if u in available))


def open_files_duckdb(
    files: list[str], fmt: str, hive: bool, desc: str, cols: dict[str, str], where: str | None,
    sql: str | None, batch_rows: int, total: Callable[[], int | None], arrow_dataset: Callable[[], Any],
) -> Source:
    """Files read through DuckDB (expressions, a filter or a query over them).

    Parquet and IPC files are scanned through ``arrow_dataset()`` (a pyarrow dataset with the
    checked column types, Parquet page checksums verified); CSV and NDJSON with DuckDB's readers
    over exactly ``files``. The connection is then locked down to those files.
    """
    query = check_query(sql) if sql is not None else None
    con = duckdb_module().connect()
    if fmt in ("parquet", "ipc"):
        con.register("__streameval_files", arrow_dataset())
        from_sql = "__streameval_files"
    else:
        lst = "[" + ", ".join(quote_str(f) for f in files) + "]"
        fn = "read_ndjson" if fmt == "json" else "read_csv"
        from_sql = f"{fn}({lst}, hive_partitioning = {'true' if hive else 'false'}, union_by_name = true)"
    rows = None
    if query is not None:
        con.sql(f"CREATE VIEW data AS SELECT * FROM {from_sql}")
        from_sql = f"{query} AS q"
    elif where is None and fmt == "parquet":
        rows = total()
    lock_down(con, files)
    return Source(fmt, desc, rows, files, "duckdb", duckdb_scan(con, from_sql, cols, where, batch_rows, desc))


def open_duckdb_file(
    path: str, cols: dict[str, str], where: str | None, sql: str | None, table: str | None, batch_rows: int
) -> Source:
    """A DuckDB database file, opened read-only and locked down (see the module notes)."""
    duckdb = duckdb_module()
    if not os.path.isfile(path):
        raise SourceError(f"{path}: no such DuckDB database file")
    query = check_query(sql) if sql is not None else None  # before opening anything
    try:
        con = duckdb.connect(path, read_only=True)
    except duckdb.Error as exc:
        raise SourceError(f"{path}: cannot open as a DuckDB database ({first_line(exc)})") from None
    lock_down(con)
    return open_duckdb_con(con, path, cols, where, query, table, batch_rows, checked=True)


def _table_names(con: Any) -> list[tuple[str, str, str]]:
    rows = con.sql(
        "SELECT table_catalog, table_schema, table_name FROM information_schema.tables ORDER BY 1, 2, 3"
    ).fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def resolve_table(con: Any, table: str, name: str) -> str:
    """``table`` as a quoted, existing table name (``t``, ``schema.t`` or ``catalog.schema.t``).

    Raises
    ------
    SQLRefusedError
        If no such table exists; the message lists the tables.
    """
    tables = _table_names(con)
    for catalog, schema, tbl in tables:
        for parts in ((tbl,), (schema, tbl), (catalog, schema, tbl)):
            if table == ".".join(parts):
                return ".".join(quote_ident(p) for p in parts)
    listed = ", ".join(t for _, _, t in tables) or "(none)"
    raise _refuse(_OPTION["table"], table, f"{name} has no such table; tables: {listed}")


def open_duckdb_con(
    con: Any, name: str, cols: dict[str, str], where: str | None, sql: str | None, table: str | None,
    batch_rows: int, checked: bool = False,
) -> Source:
    """A DuckDB connection with ``table`` or ``sql`` (``checked``: ``sql`` is already in spliced form)."""
    duckdb = duckdb_module()
    if sql is not None:
        query = sql if checked else check_query(sql)
        from_sql, desc = f"{query} AS q", f"{name}: query"
    else:
        if table is None:
            tables = [t for _, _, t in _table_names(con)]
            if len(tables) != 1:
                raise SourceError(
                    f"{name}: say which table to read (--table) or give a query (--sql); tables: "
                    f"{', '.join(tables) if tables else '(none)'}"
                )
            table = tables[0]
        from_sql, desc = resolve_table(con, table, name), f"{name}: table {table}"
    total = None
    if sql is None and where is None:
        try:
            total = int(con.sql(f"SELECT count(*) FROM {from_sql}").fetchall()[0][0])
        except duckdb.Error:
            total = None
    return Source("duckdb", desc, total, [name] if os.path.isfile(name) else [], "duckdb",
                  duckdb_scan(con, from_sql, cols, where, batch_rows, desc))


def open_sql_only(cols: dict[str, str], where: str | None, sql: str | None, table: str | None,
                  batch_rows: int) -> Source:
    """``sql=`` (or ``table=``) with no source: an in-memory DuckDB query that reads its own files."""
    con = duckdb_module().connect()
    return open_duckdb_con(con, "in-memory DuckDB", cols, where, sql, table, batch_rows)


def via_duckdb(obj: Any, kind: str, desc: str, cols: dict[str, str], where: str | None, sql: str | None,
               batch_rows: int, total: int | None) -> Source:
    """Run expressions/filters over an in-memory object (Arrow, pandas) registered in DuckDB as ``data``."""
    query = check_query(sql) if sql is not None else None
    con = duckdb_module().connect()
    con.register("data", obj)
    lock_down(con)
    from_sql = f"{query} AS q" if query is not None else "data"
    if where is not None or sql is not None:
        total = None
    return Source(kind, desc, total, [], "duckdb", duckdb_scan(con, from_sql, cols, where, batch_rows, desc))


def is_duckdb_path(paths: Sequence[str]) -> bool:
    """True for a single DuckDB database file name."""
    return len(paths) == 1 and paths[0].lower().endswith(DUCKDB_EXT)


__all__ += ["referenced_columns", "open_files_duckdb", "open_sql_only", "resolve_table", "is_duckdb_path", "option_name", "MAX_FRAGMENT_CHARS"]
