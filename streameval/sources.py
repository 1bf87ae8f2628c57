"""Sources: any supported input -> a stream of Arrow record batches holding exactly the needed columns.

This module owns reading. Whatever the input (files, a directory or glob of them, a DuckDB query or
table, a Polars or pandas frame, NumPy arrays, Arrow tables or any iterable of record batches),
:func:`open_source` returns a :class:`Source` whose :meth:`Source.chunks` yields record batches
with the columns ``score``, ``label`` and, if a weight was asked for, ``weight`` -- nothing else is
read. Batches come one at a time, so memory does not grow with the number of rows.

Which engine reads:

- plain column names over Parquet / CSV (also ``.csv.gz``) / Arrow IPC (Feather) / NDJSON files:
  listed with :mod:`pyarrow.dataset` (hive partitions included), read file by file (so errors name
  the file); Parquet and CSV with pyarrow's own streaming readers (bounded memory, see
  :func:`_file_batches`), the other formats with the dataset scanner;
- expressions for score/label/weight (``"status = 'fraud'"``), a ``where`` filter, a SQL query or a
  DuckDB table: DuckDB (``read_parquet``/``read_csv``/``read_ndjson`` over the files, or the
  query), streamed with ``to_arrow_reader``;
- Polars frames: Polars' streaming engine (``collect_batches``); expressions as Polars SQL;
- pandas, NumPy, Arrow tables, iterables of batches: sliced as they are, or through DuckDB when an
  expression or filter is asked for.

DuckDB, Polars and pandas are imported only when a source needs them.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .errors import InputError, InputTypeError, UsageError

__all__ = [
    "Chunk",
    "Source",
    "SourceError",
    "open_source",
    "DEFAULT_BATCH_ROWS",
    "FILE_FORMATS",
]

DEFAULT_BATCH_ROWS = 1 << 20
SCORE, LABEL, WEIGHT = "score", "label", "weight"

# extension -> pyarrow.dataset format name
FILE_FORMATS: dict[str, str] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".csv.gz": "csv",
    ".tsv": "tsv",
    ".tsv.gz": "tsv",
    ".arrow": "ipc",
    ".feather": "ipc",
    ".ipc": "ipc",
    ".ndjson": "json",
    ".jsonl": "json",
    ".json": "json",
    ".ndjson.gz": "json",
    ".jsonl.gz": "json",
}
_FORMAT_NAMES = {"parquet": "Parquet", "csv": "CSV", "tsv": "TSV", "ipc": "Arrow IPC", "json": "NDJSON"}
_DELIMITERS = {"csv": ",", "tsv": "\t"}
_DUCKDB_EXT = (".duckdb", ".ddb", ".db")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SourceError(InputError):
    """A source that cannot be read as asked: missing file or column, unknown format, bad query.

    The message names the file (or source), the column or expression, and what is available.
    """


@dataclass
class Chunk:
    """One record batch and where it came from.

    Attributes
    ----------
    batch : pyarrow.RecordBatch
        Columns ``score``, ``label`` and optionally ``weight``.
    origin : str
        The file (or source description) the rows come from.
    origin_row : int
        Row number, inside ``origin``, of the batch's first row (counting rows after any filter).
    """

    batch: Any
    origin: str
    origin_row: int


@dataclass
class Source:
    """A readable source of (score, label[, weight]) batches.

    Attributes
    ----------
    kind : str
        ``"parquet"``, ``"csv"``, ``"tsv"``, ``"ipc"``, ``"json"``, ``"duckdb"``, ``"polars"``, ``"pandas"``,
        ``"arrow"``, ``"numpy"`` or ``"batches"``.
    description : str
        Human-readable description for reports and messages.
    total_rows : int or None
        Rows the stream will deliver, when known cheaply (file metadata); None otherwise.
    files : list of str
        Files read, if any.
    engine : str
        What reads it: ``"pyarrow.dataset"``, ``"duckdb"``, ``"polars"`` or ``"python"``.
    """

    kind: str
    description: str
    total_rows: int | None
    files: list[str]
    engine: str
    _open: Callable[[], Iterator[Chunk]] = field(repr=False)
    _parts: Callable[[], list[Callable[[], Iterator[Chunk]]]] | None = field(default=None, repr=False)

    @property
    def rows_estimate(self) -> int | None:
        """``total_rows``, or for uncompressed text files (CSV, TSV, NDJSON) an estimate from the
        file sizes and the line density of each file's first MiB; for progress ETAs only."""
        if self.total_rows is not None:
            return self.total_rows
        if self.kind not in ("csv", "tsv", "json") or not self.files:
            return None
        return _estimate_text_rows(self.files, header=self.kind != "json")

    def chunks(self) -> Iterator[Chunk]:
        """Yield :class:`Chunk` objects, one batch at a time."""
        return self._open()

    def parts(self) -> list[Callable[[], Iterator[Chunk]]] | None:
        """Independent streams that together deliver the rows of :meth:`chunks`, or None.

        Each element opens one stream (a run of Parquet row groups, say); concatenated in list
        order they give the same rows as :meth:`chunks`. They can be read on separate threads,
        each decoding and binning its own rows, which is how :func:`streameval.evaluate` uses
        several cores. None for sources that can only be read front to back (CSV, DuckDB, ...).
        """
        return None if self._parts is None else self._parts()

    def __iter__(self) -> Iterator[Any]:
        """Yield the ``pyarrow.RecordBatch`` objects alone."""
        return (c.batch for c in self._open())


# -- helpers ---------------------------------------------------------------------------------
def _estimate_text_rows(files: Sequence[str], header: bool, sample: int = 1 << 20) -> int | None:
    total = 0.0
    for f in files:
        if f.endswith(".gz"):
            return None  # compressed: the size says little about the rows
        try:
            size = os.path.getsize(f)
            with open(f, "rb") as fh:
                head = fh.read(sample)
        except OSError:
            return None
        lines = head.count(b"\n")
        if not head or not lines:
            continue
        total += max(size * lines / len(head) - (1 if header else 0), 0.0)
    return int(total)



def column_map(
    score: str, label: str, weight: str | None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``{alias: column or expression}`` for the score, label, (optional) weight and ``extra``
    columns (slice keys, time; aliases must be plain identifiers), validated."""
    cols = {SCORE: score, LABEL: label}
    if weight is not None:
        cols[WEIGHT] = weight
    for alias, expr in (extra or {}).items():
        if not _IDENTIFIER.fullmatch(alias) or alias in cols:
            raise InputTypeError(f"bad column alias {alias!r}")
        cols[alias] = expr
    for alias, expr in cols.items():
        if not isinstance(expr, str) or not expr.strip():
            raise InputTypeError(f"{alias} must be a column name or expression (a non-empty string), got {expr!r}")
    return cols


def _is_plain(expr: str, available: Sequence[str]) -> bool:
    """True if ``expr`` names a column (present or not); False if it is an expression."""
    return expr in available or bool(_IDENTIFIER.fullmatch(expr))


def _missing(cols: Mapping[str, str], available: Sequence[str], where: str) -> None:
    for alias, expr in cols.items():
        if expr not in available and _IDENTIFIER.fullmatch(expr):
            raise SourceError(
                f"{where}: no column {expr!r} (asked for as the {alias}); available columns: "
                f"{', '.join(available) if available else '(none)'}"
            )


def _needs_sql(cols: Mapping[str, str], available: Sequence[str]) -> bool:
    return any(not _is_plain(e, available) for e in cols.values())


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _select_list(cols: Mapping[str, str], available: Sequence[str]) -> str:
    parts = []
    for alias, expr in cols.items():
        sql = _quote_ident(expr) if expr in available else expr
        parts.append(f"{sql} AS {alias}")
    return ", ".join(parts)


def _ext(path: str) -> str:
    low = path.lower()
    for ext in sorted(FILE_FORMATS, key=len, reverse=True):
        if low.endswith(ext):
            return ext
    return os.path.splitext(low)[1]


def _arrow_rename(batch: Any, cols: Mapping[str, str]) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([batch.column(c) for c in cols.values()], names=list(cols))


# -- files -----------------------------------------------------------------------------------
def _expand(paths: Sequence[str]) -> tuple[list[str], str | None]:
    """Files named by ``paths`` (files, directories, globs) and the common hive base directory."""
    files: list[str] = []
    named_by: dict[str, str] = {}  # real path -> the argument that named it, to catch overlaps
    base: str | None = None

    def add(found: Iterable[str], arg: str) -> None:
        for f in found:
            real = os.path.realpath(f)
            if real in named_by:
                raise SourceError(
                    f"{f}: named twice (by {named_by[real]!r} and by {arg!r}); its rows would be "
                    "counted twice. Give each file once"
                )
            named_by[real] = arg
            files.append(f)

    for p in paths:
        if any(ch in p for ch in "*?["):
            matches = sorted(glob.glob(p, recursive=True))
            found = [f for m in matches for f in (_walk(m) if os.path.isdir(m) else [m]) if os.path.isfile(f)]
            if not found:
                raise SourceError(f"{p}: no files match this pattern")
            add(found, p)
        elif os.path.isdir(p):
            found = _walk(p)
            if not found:
                raise SourceError(
                    f"{p}: directory holds no data files (looked for {', '.join(sorted(set(FILE_FORMATS)))})"
                )
            add(found, p)
            base = p if len(paths) == 1 else None
        elif os.path.isfile(p):
            add([p], p)
        else:
            raise SourceError(f"{p}: no such file or directory")
    return files, base if base is not None else _hive_base(files)


def _hive_base(files: Sequence[str]) -> str | None:
    """The directory above the first ``key=value`` folder, when all files share it (else None).

    Lets files named one by one or through globs (``logs/day=*/``) keep their partition columns,
    as a directory given whole does.
    """
    roots = set()
    for f in files:
        parts = os.path.normpath(f).split(os.sep)
        at = next((i for i, part in enumerate(parts[:-1]) if "=" in part), None)
        if at is None or (at == 0 and not os.path.isabs(f)):
            return None  # no key=value folder, or it starts a relative path (no base to name)
        roots.add(os.sep.join(parts[:at]) or os.sep)
    return roots.pop() if len(roots) == 1 else None


def _walk(directory: str) -> list[str]:
    """Data files under ``directory`` (recursively; hidden and ``_``-prefixed files skipped)."""
    return sorted(
        os.path.join(root, f)
        for root, _dirs, names in os.walk(directory)
        for f in names
        if not f.startswith((".", "_")) and _ext(f) in FILE_FORMATS
    )


def _file_format(files: Sequence[str]) -> str:
    formats: dict[str, str] = {}
    for f in files:
        fmt = FILE_FORMATS.get(_ext(f))
        if fmt is None:
            raise SourceError(
                f"{f}: unknown file type {_ext(f) or '(no extension)'!r}; supported: "
                f"{', '.join(sorted(FILE_FORMATS))} (or pass a DuckDB query with --sql)"
            )
        formats.setdefault(fmt, f)
    if len(formats) > 1:
        kinds = ", ".join(f"{_FORMAT_NAMES[k]} ({v})" for k, v in formats.items())
        raise SourceError(f"the sources mix file formats: {kinds}; evaluate one format at a time")
    return str(next(iter(formats)))


def _pyarrow_format(fmt: str) -> Any:
    import pyarrow.dataset as ds

    if fmt in _DELIMITERS:
        import pyarrow.csv as pcsv

        return ds.CsvFileFormat(parse_options=pcsv.ParseOptions(delimiter=_DELIMITERS[fmt]))
    return fmt


def _open_dataset(files: list[str], fmt: str, base: str | None) -> Any:
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        if base is not None:
            return ds.dataset(files, format=_pyarrow_format(fmt), partitioning="hive", partition_base_dir=base)
        return ds.dataset(files, format=_pyarrow_format(fmt))
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceError(f"cannot read {_FORMAT_NAMES[fmt]} input {', '.join(files[:3])}: {exc}") from None


def _fragment_path(fragment: Any) -> str:
    return str(getattr(fragment, "path", "?"))


def _dataset_total_rows(dataset: Any, fmt: str) -> int | None:
    if fmt == "parquet":
        try:
            return int(sum(f.metadata.num_rows for f in dataset.get_fragments()))
        except Exception:  # noqa: BLE001 - a bad footer is reported when the file is read
            return None
    if fmt == "ipc":
        try:
            return int(dataset.count_rows())
        except Exception:  # noqa: BLE001
            return None
    return None


# Block size of the CSV reader. pyarrow's streaming CSV reader reads raw blocks ahead on its I/O
# thread into a queue of up to 32 blocks, whether or not the consumer keeps up, so its memory is
# about 32-40 x block_size (and, for files smaller than that, the whole file). 1 MiB (pyarrow's
# default) bounds it to ~45 MB and gives batches of ~80,000 rows of a two-column file.
CSV_BLOCK_BYTES = 1 << 20


def _needed_columns(cols: Mapping[str, str]) -> list[str]:
    return list(dict.fromkeys(cols.values()))


def _open_csv_file(path: str, columns: Sequence[str], types: Mapping[str, Any], delimiter: str = ",") -> Any:
    """pyarrow's streaming CSV reader over one file, reading only ``columns``, typed as ``types``."""
    import pyarrow.csv as pcsv

    return pcsv.open_csv(
        path,
        read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES, use_threads=True),
        parse_options=pcsv.ParseOptions(delimiter=delimiter),
        convert_options=pcsv.ConvertOptions(include_columns=list(columns), column_types=dict(types)),
    )


def _file_batches(
    fragment: Any, fmt: str, dataset: Any, columns: list[str], batch_rows: int,
    row_groups: list[int] | None = None, metadata: Any = None,
) -> Iterator[Any]:
    """Record batches of ``columns`` (physical columns of the file) from one file.

    Parquet and CSV files are read with their own pyarrow readers, which read on the caller's
    thread (Parquet) or keep a small bounded read-ahead (CSV): peak memory stays a few batches
    whatever the file size. The ``pyarrow.dataset`` scanner is not used for them because it
    decodes far ahead of a slower consumer (measured: ~500-600 MB of decoded batches buffered on
    a 100M-row file when binning is slower than decoding, so peak memory grew with the file).
    Other formats are scanned with the dataset scanner.

    ``row_groups`` (Parquet only) reads just those row groups, decoding on the calling thread
    alone: it is one of several streams read in parallel (:func:`_parquet_parts`); ``metadata``,
    the file's footer already read, saves parsing it again for each stream.
    """
    import pyarrow.dataset as ds

    path = _fragment_path(fragment)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # pre_buffer=False: with pyarrow's default the reader keeps the column chunks of the
        # whole file, so memory grows with the file.
        file = pq.ParquetFile(path, pre_buffer=False, metadata=metadata)
        if row_groups is None:
            yield from file.iter_batches(batch_size=batch_rows, columns=columns)
        else:
            yield from file.iter_batches(batch_size=batch_rows, columns=columns, row_groups=row_groups, use_threads=False)
        return
    if fmt in _DELIMITERS:
        # Types as the dataset inferred them (from the first file), as the dataset scanner would
        # convert them; explicit types also decode faster than per-block inference.
        types = {c: dataset.schema.field(c).type for c in columns}
        for batch in _open_csv_file(path, columns, types, _DELIMITERS[fmt]):
            for start in range(0, batch.num_rows, batch_rows):
                yield batch.slice(start, batch_rows) if batch.num_rows > batch_rows else batch
        return
    scanner = ds.Scanner.from_fragment(
        fragment, schema=dataset.schema, columns=columns, batch_size=batch_rows, batch_readahead=1,
        use_threads=True,
    )
    yield from scanner.to_batches()


def _partition_values(fragment: Any, dataset: Any) -> dict[str, Any]:
    """Hive partition values of a fragment (from its own key=value folders), as Arrow scalars."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    keys = ds.get_partition_keys(fragment.partition_expression)
    return {n: pa.scalar(v, type=dataset.schema.field(n).type) for n, v in keys.items()}


def _fragment_chunks(
    dataset: Any, fragment: Any, fmt: str, cols: dict[str, str], batch_rows: int,
    row_groups: list[int] | None = None, first_row: int = 0, metadata: Any = None,
) -> Iterator[Chunk]:
    """Chunks of one file (or of ``row_groups`` of one Parquet file, starting at row ``first_row``)."""
    import pyarrow as pa

    path = _fragment_path(fragment)
    try:
        physical = list(fragment.physical_schema.names)
    except (pa.ArrowInvalid, OSError) as exc:
        raise SourceError(f"{path}: cannot read the file ({exc})") from None
    # Partition columns are the fragment's own key=value folders (the dataset's partitioning
    # schema can list data columns too, and a file lacking one must not read it as nulls).
    partition = _partition_values(fragment, dataset)
    available = physical + [p for p in partition if p not in physical]
    _missing(cols, available, path)
    read = [c for c in _needed_columns(cols) if c in physical]
    constants = {c: partition[c] for c in _needed_columns(cols) if c not in physical}
    row = first_row
    try:
        for batch in _file_batches(fragment, fmt, dataset, read, batch_rows, row_groups, metadata):
            n = batch.num_rows
            if not n:
                continue
            arrays = []
            for col in cols.values():
                if col in constants:
                    arrays.append(pa.repeat(constants[col], n))
                else:
                    a = batch.column(col)
                    want = dataset.schema.field(col).type
                    arrays.append(a if a.type == want else a.cast(want))
            yield Chunk(pa.RecordBatch.from_arrays(arrays, names=list(cols)), path, row)
            row += n
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise SourceError(f"{path}: cannot read the file near row {row} ({exc})") from None


def _scan_files(dataset: Any, fmt: str, cols: dict[str, str], batch_rows: int) -> Iterator[Chunk]:
    for fragment in dataset.get_fragments():
        yield from _fragment_chunks(dataset, fragment, fmt, cols, batch_rows)


PART_ROWS = 1 << 20  # rows per part at least (whole row groups): a part's overhead is one file open


def _parquet_parts(dataset: Any, cols: dict[str, str], batch_rows: int) -> list[Callable[[], Iterator[Chunk]]]:
    """Parquet files as runs of whole row groups of at least ``max(batch_rows, PART_ROWS)`` rows
    (or a file's last rows), in file order.

    A file whose footer cannot be read stays one part, so the error is raised (with the file's
    name) when that part is read, as the sequential scan would.
    """
    parts: list[Callable[[], Iterator[Chunk]]] = []
    least = max(batch_rows, PART_ROWS)

    def part(fragment: Any, groups: list[int] | None, first: int, meta: Any) -> Callable[[], Iterator[Chunk]]:
        return lambda: _fragment_chunks(dataset, fragment, "parquet", cols, batch_rows, groups, first, meta)

    for fragment in dataset.get_fragments():
        try:
            meta = fragment.metadata
            sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        except Exception:  # noqa: BLE001 - reported with the file's name when the part is read
            parts.append(part(fragment, None, 0, None))
            continue
        if not sizes:  # no rows, but its columns are still checked
            parts.append(part(fragment, [], 0, meta))
        run: list[int] = []
        first = rows = 0
        for i, size in enumerate(sizes):
            run.append(i)
            rows += size
            if rows - first >= least or i == len(sizes) - 1:
                parts.append(part(fragment, run, first, meta))
                run, first = [], rows
    return parts


# -- DuckDB ------------------------------------------------------------------------------------
def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "expressions, --where, --sql and DuckDB sources need DuckDB: pip install duckdb"
        ) from None
    return duckdb


def _duckdb_scan(
    con: Any, from_sql: str, cols: dict[str, str], where: str | None, batch_rows: int, what: str
) -> Callable[[], Iterator[Chunk]]:
    """A chunk stream of ``SELECT cols FROM from_sql WHERE where`` run on ``con``."""
    duckdb = _duckdb()
    try:
        available = list(con.sql(f"SELECT * FROM {from_sql} LIMIT 0").columns)
    except duckdb.Error as exc:
        raise SourceError(f"{what}: {_first_line(exc)}") from None
    _missing(cols, available, what)
    query = f"SELECT {_select_list(cols, available)} FROM {from_sql}"
    if where:
        query += f" WHERE {where}"
    try:
        con.sql(f"SELECT * FROM ({query}) LIMIT 0")  # bind now: bad expressions fail before reading
    except duckdb.Error as exc:
        raise SourceError(
            f"{what}: cannot evaluate {_describe_cols(cols, where)}: {_first_line(exc)}; available "
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
            raise SourceError(f"{what}: query failed: {_first_line(exc)}") from None

    return run


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _describe_cols(cols: Mapping[str, str], where: str | None) -> str:
    text = ", ".join(f"{alias}={expr!r}" for alias, expr in cols.items())
    return text + (f", where={where!r}" if where else "")


def _duckdb_file_from(con: Any, files: list[str], fmt: str, hive: bool) -> str:
    if fmt == "ipc":
        # DuckDB has no built-in IPC reader: let it scan the pyarrow dataset (projection pushed down).
        con.register("__streameval_ipc", _open_dataset(files, fmt, None))
        return "__streameval_ipc"
    lst = "[" + ", ".join(_quote_str(f) for f in files) + "]"
    fn = {"parquet": "read_parquet", "csv": "read_csv", "tsv": "read_csv", "json": "read_ndjson"}[fmt]
    return f"{fn}({lst}, hive_partitioning = {'true' if hive else 'false'}, union_by_name = true)"


def _open_files(
    paths: Sequence[str], cols: dict[str, str], where: str | None, sql: str | None, batch_rows: int
) -> Source:
    if len(paths) == 1 and paths[0].lower().endswith(_DUCKDB_EXT):
        return _open_duckdb_file(paths[0], cols, where, sql, None, batch_rows)
    files, base = _expand(paths)
    fmt = _file_format(files)
    for f in files:  # pyarrow detects compression from a lowercase extension only
        if f.lower().endswith(".gz") and not f.endswith(".gz"):
            raise SourceError(
                f"{f}: pyarrow recognizes gzip compression only from a lowercase '.gz' extension; "
                "rename the file (e.g. to '.csv.gz')"
            )
    desc = files[0] if len(files) == 1 else f"{len(files)} {_FORMAT_NAMES[fmt]} files under {base or os.path.commonpath(files) or '.'}"
    if sql is None and where is None:
        dataset = _open_dataset(files, fmt, base)
        available = list(dataset.schema.names)
        if not _needs_sql(cols, available):
            total = _dataset_total_rows(dataset, fmt)
            split = (lambda: _parquet_parts(dataset, cols, batch_rows)) if fmt == "parquet" else None
            return Source(fmt, desc, total, files, "pyarrow.dataset", lambda: _scan_files(dataset, fmt, cols, batch_rows),
                          split)
    con = _duckdb().connect()
    hive = base is not None or any("=" in os.path.basename(os.path.dirname(f)) for f in files)
    from_sql = _duckdb_file_from(con, files, fmt, hive)
    total = None
    if sql is not None:
        con.sql(f"CREATE VIEW data AS SELECT * FROM {from_sql}")
        from_sql = f"({sql}) AS q"
    elif where is None and fmt == "parquet":
        total = _dataset_total_rows(_open_dataset(files, fmt, base), fmt)
    run = _duckdb_scan(con, from_sql, cols, where, batch_rows, desc)
    return Source(fmt, desc, total, files, "duckdb", run)


def _open_duckdb_file(
    path: str, cols: dict[str, str], where: str | None, sql: str | None, table: str | None, batch_rows: int
) -> Source:
    duckdb = _duckdb()
    if not os.path.isfile(path):
        raise SourceError(f"{path}: no such DuckDB database file")
    try:
        con = duckdb.connect(path, read_only=True)
    except duckdb.Error as exc:
        raise SourceError(f"{path}: cannot open as a DuckDB database ({_first_line(exc)})") from None
    return _open_duckdb_con(con, path, cols, where, sql, table, batch_rows)


def _open_duckdb_con(
    con: Any, name: str, cols: dict[str, str], where: str | None, sql: str | None, table: str | None,
    batch_rows: int,
) -> Source:
    duckdb = _duckdb()
    if sql is not None:
        from_sql, desc = f"({sql}) AS q", f"{name}: query"
    else:
        if table is None:
            tables = [r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()]
            if len(tables) != 1:
                raise SourceError(
                    f"{name}: say which table to read (--table) or give a query (--sql); tables: "
                    f"{', '.join(tables) if tables else '(none)'}"
                )
            table = tables[0]
        from_sql, desc = table if not _IDENTIFIER.fullmatch(table) else _quote_ident(table), f"{name}: table {table}"
    total = None
    if sql is None and where is None:
        try:
            total = int(con.sql(f"SELECT count(*) FROM {from_sql}").fetchall()[0][0])
        except duckdb.Error:
            total = None
    return Source("duckdb", desc, total, [name] if os.path.isfile(name) else [], "duckdb",
                  _duckdb_scan(con, from_sql, cols, where, batch_rows, desc))


def _via_duckdb(obj: Any, kind: str, desc: str, cols: dict[str, str], where: str | None, sql: str | None,
                batch_rows: int, total: int | None) -> Source:
    """Run expressions/filters over an in-memory object (Arrow, pandas) registered in DuckDB as ``data``."""
    con = _duckdb().connect()
    con.register("data", obj)
    from_sql = f"({sql}) AS q" if sql is not None else "data"
    if where is not None or sql is not None:
        total = None
    return Source(kind, desc, total, [], "duckdb", _duckdb_scan(con, from_sql, cols, where, batch_rows, desc))


# -- in-memory ---------------------------------------------------------------------------------
def _open_arrow_table(table: Any, kind: str, desc: str, cols: dict[str, str], where: str | None,
                      sql: str | None, batch_rows: int) -> Source:
    available = list(table.schema.names)
    if sql is None and where is None and not _needs_sql(cols, available):
        _missing(cols, available, desc)

        def run() -> Iterator[Chunk]:
            row = 0
            for batch in table.select(list(cols.values())).to_batches(max_chunksize=batch_rows):
                if batch.num_rows:
                    yield Chunk(_arrow_rename(batch, cols), desc, row)
                    row += batch.num_rows

        return Source(kind, desc, table.num_rows, [], "python", run)
    return _via_duckdb(table, kind, desc, cols, where, sql, batch_rows, table.num_rows)


def _open_polars(frame: Any, cols: dict[str, str], where: str | None, sql: str | None, batch_rows: int) -> Source:
    import polars as pl

    lazy = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    kind_desc = f"Polars {type(frame).__name__}"
    try:
        available = lazy.collect_schema().names()
    except pl.exceptions.PolarsError as exc:
        raise SourceError(f"{kind_desc}: {_first_line(exc)}") from None
    if sql is not None:
        try:
            lazy = pl.SQLContext(data=lazy).execute(sql, eager=False)
            available = lazy.collect_schema().names()
        except pl.exceptions.PolarsError as exc:
            raise SourceError(f"{kind_desc}: the query failed: {_first_line(exc)}") from None
    _missing(cols, available, kind_desc)  # after the query: it may rename columns
    if where is not None:
        lazy = lazy.filter(pl.sql_expr(where))
    exprs = [
        (pl.col(e) if e in available else pl.sql_expr(e)).alias(alias) for alias, e in cols.items()
    ]
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
            raise SourceError(f"{kind_desc}: cannot evaluate {_describe_cols(cols, where)}: {_first_line(exc)}") from None

    return Source("polars", kind_desc, total, [], "polars", run)


def _open_pandas(df: Any, cols: dict[str, str], where: str | None, sql: str | None, batch_rows: int) -> Source:
    import pyarrow as pa

    desc = "pandas DataFrame"
    available = [str(c) for c in df.columns]
    if sql is None and where is None and not _needs_sql(cols, available):
        _missing(cols, available, desc)

        def run() -> Iterator[Chunk]:
            sub = df[list(cols.values())]
            for start in range(0, len(sub), batch_rows):
                part = sub.iloc[start:start + batch_rows]
                arrays = [pa.array(part[c], from_pandas=True) for c in cols.values()]
                yield Chunk(pa.RecordBatch.from_arrays(arrays, names=list(cols)), desc, start)

        return Source("pandas", desc, len(df), [], "python", run)
    return _via_duckdb(pa.Table.from_pandas(df, preserve_index=False), "pandas", desc, cols, where, sql,
                       batch_rows, len(df))


def _mapping_to_table(data: Mapping[str, Any]) -> Any:
    import pyarrow as pa

    arrays = {}
    n = None
    for name, values in data.items():
        arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else np.asarray(values)
        if isinstance(arr, np.ndarray) and arr.ndim != 1:
            raise InputTypeError(f"array {name!r} must be 1-D, got shape {arr.shape}")
        if n is not None and len(arr) != n:
            raise SourceError(f"arrays differ in length: {name!r} has {len(arr)} rows, earlier ones {n}")
        n = len(arr)
        arrays[str(name)] = arr
    return pa.table(arrays)


def _open_batches(items: Iterable[Any], cols: dict[str, str], where: str | None, sql: str | None,
                  batch_rows: int) -> Source:
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

    if sql is None and where is None and not _needs_sql(cols, available):
        _missing(cols, available, desc)

        def run() -> Iterator[Chunk]:
            row = 0
            for i, b in enumerate(chained()):
                _missing(cols, list(b.schema.names), f"{desc} (batch {i})")
                b = _arrow_rename(b, cols)
                for start in range(0, b.num_rows, batch_rows):
                    part = b.slice(start, batch_rows)
                    if part.num_rows:
                        yield Chunk(part, desc, row)
                        row += part.num_rows

        return Source("batches", desc, None, [], "python", run)
    reader = pa.RecordBatchReader.from_batches(first.schema, chained())
    return _via_duckdb(reader, "batches", desc, cols, where, sql, batch_rows, None)


# -- entry point -------------------------------------------------------------------------------
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
        an expression or query DuckDB rejects.
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
        con = _duckdb().connect()
        return _open_duckdb_con(con, "in-memory DuckDB", cols, where, sql, table, batch_rows)
    if isinstance(source, (list, tuple)) and all(isinstance(s, (str, os.PathLike)) for s in source):
        paths = [os.fspath(s) for s in source]
        if table is not None:
            if len(paths) != 1 or not paths[0].lower().endswith(_DUCKDB_EXT):
                raise UsageError("table= (--table) needs a single DuckDB database file as the source")
            return _open_duckdb_file(paths[0], cols, where, sql, table, batch_rows)
        return _open_files(paths, cols, where, sql, batch_rows)

    module = type(source).__module__.split(".")[0]
    if module in ("duckdb", "_duckdb"):
        duckdb = _duckdb()
        if isinstance(source, duckdb.DuckDBPyConnection):
            return _open_duckdb_con(source, "DuckDB connection", cols, where, sql, table, batch_rows)
        if hasattr(source, "to_arrow_reader"):  # a relation
            if sql is not None:
                raise UsageError("sql= cannot be combined with a DuckDB relation; put the query in the relation")
            con = duckdb.connect()
            con.register("data", source.to_arrow_reader(batch_rows))
            desc = "DuckDB relation"
            return Source("duckdb", desc, None, [], "duckdb", _duckdb_scan(con, "data", cols, where, batch_rows, desc))
    if module == "polars":
        import polars as pl

        if isinstance(source, (pl.LazyFrame, pl.DataFrame)):
            return _open_polars(source, cols, where, sql, batch_rows)
    if module == "pandas":
        import pandas as pd

        if isinstance(source, pd.DataFrame):
            return _open_pandas(source, cols, where, sql, batch_rows)
    if module == "pyarrow":
        import pyarrow as pa

        if isinstance(source, pa.RecordBatch):
            source = pa.Table.from_batches([source])
        if isinstance(source, pa.Table):
            return _open_arrow_table(source, "arrow", "Arrow table", cols, where, sql, batch_rows)
        if isinstance(source, pa.RecordBatchReader):
            return _open_batches(source, cols, where, sql, batch_rows)
    if isinstance(source, np.ndarray):
        if source.dtype.names is None:
            raise InputTypeError(
                "a plain NumPy array is not a source: pass a mapping such as "
                "{'score': scores, 'label': labels}, or a structured array"
            )
        source = {name: source[name] for name in source.dtype.names}
    if isinstance(source, Mapping):
        table_ = _mapping_to_table(source)
        return _open_arrow_table(table_, "numpy", "arrays", cols, where, sql, batch_rows)
    if isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
        return _open_batches(source, cols, where, sql, batch_rows)
    raise InputTypeError(
        f"cannot read a source of type {type(source).__name__}; pass file paths, a DuckDB/Polars/"
        "pandas/Arrow object, a mapping of arrays, or an iterable of pyarrow.RecordBatch"
    )
