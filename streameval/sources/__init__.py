"""Sources: any supported input -> a stream of Arrow record batches holding exactly the needed columns.

This module owns reading. Whatever the input (files, a directory or glob of them, a DuckDB query or
table, a Polars or pandas frame, NumPy arrays, Arrow tables or any iterable of record batches),
:func:`open_source` returns a :class:`Source` whose :meth:`Source.chunks` yields record batches
with the columns ``score``, ``label`` and, if a weight was asked for, ``weight`` -- nothing else is
read. Batches come one at a time, so memory does not grow with the number of rows.

Which engine reads:

- plain column names over Parquet / CSV (also ``.csv.gz``) / Arrow IPC (Feather) / NDJSON files:
  listed with :mod:`pyarrow.dataset` (hive partitions included), read file by file (so errors name
  the file); with several threads, Parquet in runs of row groups and uncompressed local
  CSV/TSV/NDJSON in ranges of lines (:mod:`.textparts`), each part decoded on one thread
  (bounded memory, see :func:`.files._file_batches`); text files read front to back (one thread,
  gzipped or remote files, values holding line breaks) with pyarrow's streaming readers, Arrow
  IPC with the dataset scanner;
- expressions for score/label/weight (``"status = 'fraud'"``), a ``where`` filter, a SQL query or a
  DuckDB table: DuckDB (over a pyarrow dataset of Parquet/IPC files, ``read_csv``/``read_ndjson``
  over text files, or the query), streamed with ``to_arrow_reader``; every SQL fragment is
  checked first and the connection locked down (:mod:`.sql`);
- Polars frames: Polars' streaming engine (``collect_batches``); expressions as Polars SQL;
- pandas, NumPy, Arrow tables, iterables of batches: sliced as they are, or through DuckDB when an
  expression or filter is asked for.

DuckDB, Polars and pandas are imported only when a source needs them.

The package's modules: :mod:`.base` (Source, Chunk, errors, column maps), :mod:`.files`,
:mod:`.textparts` (text files cut into ranges of lines),
:mod:`.sql` (DuckDB and the SQL checks), :mod:`.frames` (in-memory data).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import InputTypeError, UsageError
from . import sql as sql_sources
from .base import (
    DEFAULT_BATCH_ROWS,
    FILE_FORMATS,
    LABEL,
    SCORE,
    WEIGHT,
    Chunk,
    Source,
    SourceError,
    SQLRefusedError,
    column_map,
)
from .files import CSV_BLOCK_BYTES, PART_ROWS, column_types, expand_files, open_files
from .frames import mapping_to_table, open_arrow_table, open_batches, open_pandas, open_polars
from .sql import check_expression, check_query

__all__ = [
    "Chunk",
    "Source",
    "SourceError",
    "SQLRefusedError",
    "open_source",
    "column_map",
    "check_expression",
    "check_query",
    "column_types",
    "expand_files",
    "DEFAULT_BATCH_ROWS",
    "FILE_FORMATS",
    "CSV_BLOCK_BYTES",
    "PART_ROWS",
    "SCORE",
    "LABEL",
    "WEIGHT",
]


def open_source(
    source: Any,
    *,
    score: str,
    label: str,
    weight: str | None = None,
    where: str | None = None,
    sql: str | None = None,
    table: str | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    extra_columns: Mapping[str, str] | None = None,
) -> Source:
    """Open a source for streaming ``(score, label[, weight])`` batches.

    Parameters
    ----------
    source : str, path-like, sequence of them, or a data object
        - a path, directory (hive partitions are read as columns) or glob of Parquet, CSV
          (``.csv``, ``.csv.gz``), Arrow IPC/Feather or NDJSON files, or a list of them;
        - a ``.duckdb`` database file (with ``table`` or ``sql``);
        - ``None`` with ``sql`` (an in-memory DuckDB query, e.g. over ``read_parquet(...)``);
        - a DuckDB connection (with ``table`` or ``sql``) or relation;
        - a Polars ``LazyFrame`` or ``DataFrame``; a pandas ``DataFrame``;
        - a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``;
        - a mapping of column name to 1-D array (NumPy or Arrow), or a NumPy structured array;
        - any iterable of ``pyarrow.RecordBatch``.
    score, label : str
        Column names, or SQL expressions (``"status = 'fraud'"``) evaluated by DuckDB (by Polars
        for Polars sources).
    weight : str, optional
        Column name or expression for sample weights.
    where : str, optional
        SQL filter applied before evaluation.
    sql : str, optional
        A query whose result is the input. Over files, the files are the view ``data``; over a
        DuckDB database, its tables are visible.
    table : str, optional
        Table to read from a DuckDB database or connection.
    batch_rows : int
        Maximum rows per batch.
    extra_columns : mapping of alias -> column or expression, optional
        More columns to deliver under the given aliases (slice keys, a time column).

    Returns
    -------
    Source

    Raises
    ------
    SourceError
        Missing file, unknown format, missing column (the message lists the available columns),
        a column typed differently across files (the message names both files), an expression
        or query DuckDB rejects.
    SQLRefusedError
        A ``where``, ``sql``, ``table`` or column expression refused before anything ran (more
        than one statement, not a SELECT, a subquery or table function in an expression, a side
        effect); a subclass of both ``SourceError`` and ``UsageError``. See
        :mod:`streameval.sources.sql` for the rules.
    InputTypeError
        A source of a type that cannot be read.
    """
    cols = column_map(score, label, weight, extra_columns)
    if batch_rows < 1:
        raise UsageError(f"batch_rows must be >= 1, got {batch_rows!r}")
    if table is not None and sql is not None:
        raise UsageError("give either table= (--table) or sql= (--sql), not both")
    if isinstance(source, (str, os.PathLike)):
        source = [source]
    if source is None or (isinstance(source, (list, tuple)) and not source):
        if sql is None and table is None:
            raise InputTypeError("no source given: pass files, a data object, or sql=...")
        return sql_sources.open_sql_only(cols, where, sql, table, batch_rows)
    if isinstance(source, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in source):
        paths = [os.fspath(s) for s in source]
        if table is not None:
            if not sql_sources.is_duckdb_path(paths):
                raise UsageError("table= (--table) needs a single DuckDB database file as the source")
            return sql_sources.open_duckdb_file(paths[0], cols, where, sql, table, batch_rows)
        return open_files(paths, cols, where, sql, batch_rows)

    module = type(source).__module__.split(".")[0]
    if module in ("duckdb", "_duckdb"):
        duckdb = sql_sources.duckdb_module()
        if isinstance(source, duckdb.DuckDBPyConnection):
            return sql_sources.open_duckdb_con(source, "DuckDB connection", cols, where, sql, table, batch_rows)
        if hasattr(source, "to_arrow_reader"):  # a relation
            if sql is not None:
                raise UsageError("sql= cannot be combined with a DuckDB relation; put the query in the relation")
            con = duckdb.connect()
            con.register("data", source.to_arrow_reader(batch_rows))
            sql_sources.lock_down(con)
            desc = "DuckDB relation"
            return Source("duckdb", desc, None, [], "duckdb", sql_sources.duckdb_scan(con, "data", cols, where, batch_rows, desc))
    if module == "polars":
        import polars as pl

        if isinstance(source, (pl.LazyFrame, pl.DataFrame)):
            return open_polars(source, cols, where, sql, batch_rows)
    if module == "pandas":
        import pandas as pd

        if isinstance(source, pd.DataFrame):
            return open_pandas(source, cols, where, sql, batch_rows)
    if module == "pyarrow":
        import pyarrow as pa

        if isinstance(source, pa.RecordBatch):
            source = pa.Table.from_batches([source])
        if isinstance(source, pa.Table):
            return open_arrow_table(source, "arrow", "Arrow table", cols, where, sql, batch_rows)
        if isinstance(source, pa.RecordBatchReader):
            return open_batches(source, cols, where, sql, batch_rows)
    if isinstance(source, np.ndarray):
        if source.dtype.names is None:
            raise InputTypeError(
                "a plain NumPy array is not a source: pass a mapping such as "
                "{'score': scores, 'label': labels}, or a structured array"
            )
        source = {name: source[name] for name in source.dtype.names}
    if isinstance(source, Mapping):
        table_ = mapping_to_table(source)
        return open_arrow_table(table_, "numpy", "arrays", cols, where, sql, batch_rows)
    if isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
        return open_batches(source, cols, where, sql, batch_rows)
    raise InputTypeError(
        f"cannot read a source of type {type(source).__name__}; pass file paths, a DuckDB/Polars/"
        "pandas/Arrow object, a mapping of arrays, or an iterable of pyarrow.RecordBatch"
    )
