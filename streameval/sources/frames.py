"""In-memory sources: Polars, pandas, Arrow tables and readers, NumPy arrays, iterables of batches.

Plain columns are sliced as they are; expressions, a filter or a query run through DuckDB over
the registered object (:func:`.sql.via_duckdb`; Polars sources use Polars' own SQL), after the
same checks as any SQL fragment. pandas extension arrays (``Float64``, ``Int64``, ``boolean``,
``string``), with or without missing values, convert to Arrow with their nulls.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from ..errors import InputTypeError
from .base import Chunk, Source, SourceError, arrow_rename, describe_cols, first_line, missing, needs_sql
from .sql import check_expression, check_query, via_duckdb

__all__ = ["open_arrow_table", "open_polars", "open_pandas", "mapping_to_table", "open_batches"]


def open_arrow_table(table: Any, kind: str, desc: str, cols: dict[str, str], where: str | None,
                      sql: str | None, batch_rows: int) -> Source:
    """An Arrow table (also NumPy arrays and mappings, as a table): sliced, or through DuckDB."""
    available = list(table.schema.names)
    if sql is None and where is None and not needs_sql(cols, available):
        missing(cols, available, desc)

        def run() -> Iterator[Chunk]:
            row = 0
            # one column may serve two roles (weight = score, two models' scores): select it once
            for batch in table.select(list(dict.fromkeys(cols.values()))).to_batches(max_chunksize=batch_rows):
                if batch.num_rows:
                    yield Chunk(arrow_rename(batch, cols), desc, row)
                    row += batch.num_rows

        return Source(kind, desc, table.num_rows, [], "python", run)
    return via_duckdb(table, kind, desc, cols, where, sql, batch_rows, table.num_rows)


def open_polars(frame: Any, cols: dict[str, str], where: str | None, sql: str | None, batch_rows: int) -> Source:
    """A Polars DataFrame or LazyFrame, streamed by Polars (expressions as Polars SQL, checked first)."""
    import polars as pl

    lazy = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    kind_desc = f"Polars {type(frame).__name__}"
    try:
        available = lazy.collect_schema().names()
    except pl.exceptions.PolarsError as exc:
        raise SourceError(f"{kind_desc}: {first_line(exc)}") from None
    if sql is not None:
        check_query(sql)
        try:
            lazy = pl.SQLContext(data=lazy).execute(sql, eager=False)
            available = lazy.collect_schema().names()
        except pl.exceptions.PolarsError as exc:
            raise SourceError(f"{kind_desc}: the query failed: {first_line(exc)}") from None
    missing(cols, available, kind_desc)  # after the query: it may rename columns
    for alias, expr in cols.items():
        if expr not in available:
            check_expression(expr, alias)
    try:
        if where is not None:
            check_expression(where, "where")
            lazy = lazy.filter(pl.sql_expr(where))
        exprs = [
            (pl.col(e) if e in available else pl.sql_expr(e)).alias(alias) for alias, e in cols.items()
        ]
    except pl.exceptions.PolarsError as exc:
        raise SourceError(f"{kind_desc}: cannot evaluate {describe_cols(cols, where)}: {first_line(exc)}") from None
    lazy = lazy.select(exprs)
    total = frame.height if isinstance(frame, pl.DataFrame) and where is None and sql is None else None

    def run() -> Iterator[Chunk]:
        row = 0
        try:
            for df in lazy.collect_batches(chunk_size=batch_rows):
                for batch in df.to_arrow().to_batches():
                    if batch.num_rows:
                        yield Chunk(batch, kind_desc, row)
                        row += batch.num_rows
        except pl.exceptions.PolarsError as exc:
            raise SourceError(f"{kind_desc}: cannot evaluate {describe_cols(cols, where)}: {first_line(exc)}") from None

    return Source("polars", kind_desc, total, [], "polars", run)


def open_pandas(df: Any, cols: dict[str, str], where: str | None, sql: str | None, batch_rows: int) -> Source:
    """A pandas DataFrame: sliced into Arrow batches (nulls kept), or through DuckDB."""
    import pyarrow as pa

    desc = "pandas DataFrame"
    available = [str(c) for c in df.columns]
    if sql is None and where is None and not needs_sql(cols, available):
        missing(cols, available, desc)

        # the frame's own labels (columns may be numbers; named here by their text), each once even
        # when it serves two roles: df[["p", "p"]] has two columns "p", and part["p"] is then a frame
        label_of = {str(c): c for c in df.columns}
        used = [label_of[c] for c in dict.fromkeys(cols.values())]
        for c in cols.values():
            if available.count(c) > 1:
                raise SourceError(f"{desc}: column {c!r} appears {available.count(c)} times; rename the duplicates")

        def run() -> Iterator[Chunk]:
            sub = df[used]
            for start in range(0, len(sub), batch_rows):
                part = sub.iloc[start:start + batch_rows]
                try:
                    arrays = [pa.array(part[label_of[c]], from_pandas=True) for c in cols.values()]
                except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                    raise SourceError(f"{desc}: cannot convert rows {start}.. to Arrow ({first_line(exc)})") from None
                yield Chunk(pa.RecordBatch.from_arrays(arrays, names=list(cols)), desc, start)

        return Source("pandas", desc, len(df), [], "python", run)
    return via_duckdb(pa.Table.from_pandas(df, preserve_index=False), "pandas", desc, cols, where, sql,
                       batch_rows, len(df))


def mapping_to_table(data: Mapping[str, Any]) -> Any:
    """A mapping of column name to 1-D array (NumPy, Arrow, pandas) as an Arrow table."""
    import pyarrow as pa

    arrays = {}
    n = None
    for name, values in data.items():
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            arr = values
        elif hasattr(values, "__arrow_array__") or type(values).__module__.split(".")[0] == "pandas":
            # pandas Series and extension arrays (Float64, Int64, boolean, string): their nulls
            # become Arrow nulls (np.asarray would give objects holding pd.NA)
            try:
                arr = pa.array(values, from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise SourceError(f"array {name!r}: cannot convert to Arrow ({first_line(exc)})") from None
        else:
            arr = np.asarray(values)
        if isinstance(arr, np.ndarray) and arr.ndim != 1:
            raise InputTypeError(f"array {name!r} must be 1-D, got shape {arr.shape}")
        if n is not None and len(arr) != n:
            raise SourceError(f"arrays differ in length: {name!r} has {len(arr)} rows, earlier ones {n}")
        n = len(arr)
        arrays[str(name)] = arr
    return pa.table(arrays)


def open_batches(items: Iterable[Any], cols: dict[str, str], where: str | None, sql: str | None,
                  batch_rows: int) -> Source:
    """Any iterable of ``pyarrow.RecordBatch`` (a RecordBatchReader too), read once."""
    import pyarrow as pa

    desc = "record batches"
    it = iter(items)
    first = next(it, None)
    if first is None:
        return Source("batches", desc, 0, [], "python", lambda: iter(()))
    if not isinstance(first, pa.RecordBatch):
        raise InputTypeError(f"an iterable source must yield pyarrow.RecordBatch objects, got {type(first).__name__}")
    available = list(first.schema.names)

    def chained() -> Iterator[Any]:
        yield first
        for i, b in enumerate(it, start=1):
            if not isinstance(b, pa.RecordBatch):
                raise InputTypeError(f"item {i} of the batch iterable is a {type(b).__name__}, not a pyarrow.RecordBatch")
            yield b

    if sql is None and where is None and not needs_sql(cols, available):
        missing(cols, available, desc)

        def run() -> Iterator[Chunk]:
            row = 0
            for i, b in enumerate(chained()):
                missing(cols, list(b.schema.names), f"{desc} (batch {i})")
                b = arrow_rename(b, cols)
                for start in range(0, b.num_rows, batch_rows):
                    part = b.slice(start, batch_rows)
                    if part.num_rows:
                        yield Chunk(part, desc, row)
                        row += part.num_rows

        return Source("batches", desc, None, [], "python", run)
    reader = pa.RecordBatchReader.from_batches(first.schema, chained())
    return via_duckdb(reader, "batches", desc, cols, where, sql, batch_rows, None)
