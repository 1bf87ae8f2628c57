"""Shared pieces of every source: :class:`Source`, :class:`Chunk`, :class:`SourceError`, column maps.

A source turns an input into a stream of Arrow record batches holding exactly the columns
``score``, ``label`` and, if asked, ``weight`` (plus extra aliased columns). The readers live in
:mod:`.files` (Parquet/CSV/IPC/NDJSON through pyarrow), :mod:`.sql` (DuckDB, with the SQL
safety checks) and :mod:`.frames` (Polars, pandas, Arrow, NumPy, batch iterables).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..errors import InputError, InputTypeError, UsageError

__all__ = [
    "Chunk",
    "Source",
    "SourceError",
    "SQLRefusedError",
    "column_map",
    "DEFAULT_BATCH_ROWS",
    "FILE_FORMATS",
    "SCORE",
    "LABEL",
    "WEIGHT",
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
FORMAT_NAMES = {"parquet": "Parquet", "csv": "CSV", "tsv": "TSV", "ipc": "Arrow IPC", "json": "NDJSON"}
DELIMITERS = {"csv": ",", "tsv": "\t"}
DUCKDB_EXT = (".duckdb", ".ddb", ".db")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SourceError(InputError):
    """A source that cannot be read as asked: missing file or column, unknown format, bad query.

    The message names the file (or source), the column or expression, and what is available.
    """


class SQLRefusedError(SourceError, UsageError):
    """A SQL fragment (``where``, ``sql``, ``table``, a column expression) that was refused
    before anything ran: more than one statement, not a SELECT, a subquery or table function in
    an expression, a side effect. The message names the option and the fragment.
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
        Files read, if any (URIs for remote files).
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
    file_ids: list[str] | None = field(default=None, repr=False)
    """Provenance identities of ``files`` when they cannot be read locally (remote objects)."""

    @property
    def rows_estimate(self) -> int | None:
        """``total_rows``, or for uncompressed text files (CSV, TSV, NDJSON) an estimate from the
        file sizes and the line density of each file's first MiB; for progress ETAs only."""
        if self.total_rows is not None:
            return self.total_rows
        if self.kind not in ("csv", "tsv", "json") or not self.files:
            return None
        return estimate_text_rows(self.files, header=self.kind != "json")

    def chunks(self) -> Iterator[Chunk]:
        """Yield :class:`Chunk` objects, one batch at a time."""
        return self._open()

    def parts(self) -> list[Callable[[], Iterator[Chunk]]] | None:
        """Independent streams that together deliver the rows of :meth:`chunks`, or None.

        Each element opens one stream (a run of Parquet row groups, or a range of lines of an
        uncompressed local CSV, TSV or NDJSON file); concatenated in list order they give the
        same rows as :meth:`chunks`. They can be read on separate threads, each decoding and
        binning its own rows, which is how :func:`streameval.evaluate` uses several cores. None
        for sources that can only be read front to back (DuckDB, frames, ...); a gzipped or
        remote text file is one part.
        """
        return None if self._parts is None else self._parts()

    def __iter__(self) -> Iterator[Any]:
        """Yield the ``pyarrow.RecordBatch`` objects alone."""
        return (c.batch for c in self._open())


# -- helpers ---------------------------------------------------------------------------------
def estimate_text_rows(files: Sequence[str], header: bool, sample: int = 1 << 20) -> int | None:
    """Rows of uncompressed text files, estimated from their sizes and their first ``sample`` bytes."""
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
        if not IDENTIFIER.fullmatch(alias) or alias in cols:
            raise InputTypeError(f"bad column alias {alias!r}")
        cols[alias] = expr
    for alias, expr in cols.items():
        if not isinstance(expr, str) or not expr.strip():
            raise InputTypeError(f"{alias} must be a column name or expression (a non-empty string), got {expr!r}")
    return cols


def is_plain(expr: str, available: Sequence[str]) -> bool:
    """True if ``expr`` names a column (present or not); False if it is an expression."""
    return expr in available or bool(IDENTIFIER.fullmatch(expr))


def missing(cols: Mapping[str, str], available: Sequence[str], where: str) -> None:
    """Raise :class:`SourceError` for the first plain column name of ``cols`` not in ``available``."""
    for alias, expr in cols.items():
        if expr not in available and IDENTIFIER.fullmatch(expr):
            raise SourceError(
                f"{where}: no column {expr!r} (asked for as the {alias}); available columns: "
                f"{', '.join(available) if available else '(none)'}"
            )


def needs_sql(cols: Mapping[str, str], available: Sequence[str]) -> bool:
    """True if some column of ``cols`` is an expression (not a plain column name)."""
    return any(not is_plain(e, available) for e in cols.values())


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def quote_str(s: str) -> str:
    """``s`` as a single-quoted SQL string literal."""
    return "'" + s.replace("'", "''") + "'"


def select_list(cols: Mapping[str, str], available: Sequence[str]) -> str:
    """``"col" AS score, (expr\n) AS label, ...``: columns quoted, expressions parenthesized.

    Expressions must have passed :func:`streameval.sources.sql.check_expression`; the newline
    before the closing parenthesis ends a trailing ``--`` comment inside the expression.
    """
    parts = []
    for alias, expr in cols.items():
        sql = quote_ident(expr) if expr in available else f"({expr}\n)"
        parts.append(f"{sql} AS {quote_ident(alias)}")
    return ", ".join(parts)


def ext(path: str) -> str:
    """The file's extension as :data:`FILE_FORMATS` knows it (``.csv.gz``), lower case."""
    low = path.lower()
    for known in sorted(FILE_FORMATS, key=len, reverse=True):
        if low.endswith(known):
            return known
    return os.path.splitext(low)[1]


def arrow_rename(batch: Any, cols: Mapping[str, str]) -> Any:
    """A record batch of ``batch``'s columns ``cols.values()`` named ``cols.keys()``."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([batch.column(c) for c in cols.values()], names=list(cols))


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB's span several)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def describe_cols(cols: Mapping[str, str], where: str | None) -> str:
    """``score='p', label='y', where='...'`` for messages."""
    text = ", ".join(f"{alias}={expr!r}" for alias, expr in cols.items())
    return text + (f", where={where!r}" if where else "")


def numpy_view(a: Any) -> Any:
    """A fixed-width numeric Arrow array without nulls as a read-only NumPy view of its buffer; any
    other array (or None) as it is.

    pyarrow's own ``to_numpy`` imports pandas on first use (measured: +44 MB of resident memory
    and ~0.2 s in a fresh process, for nothing here); the view is the same zero-copy array.

    Parameters
    ----------
    a : pyarrow.Array, any other array-like, or None
        A column of a batch.

    Returns
    -------
    numpy.ndarray of shape (len(a),) or the input unchanged
        A view sharing ``a``'s data buffer (read-only), when ``a`` is an Arrow array of
        float32, float64 or an integer type with no nulls.
    """
    import numpy as np
    import pyarrow as pa

    if not isinstance(a, pa.Array) or a.null_count:
        return a
    t = a.type
    if pa.types.is_floating(t) and t.bit_width in (32, 64):
        dtype = np.dtype(f"float{t.bit_width}")
    elif pa.types.is_integer(t):
        dtype = np.dtype(f"{'int' if pa.types.is_signed_integer(t) else 'uint'}{t.bit_width}")
    else:
        return a
    view = np.frombuffer(a.buffers()[1], dtype=dtype, count=len(a), offset=a.offset * dtype.itemsize)
    view.flags.writeable = False  # Arrow data is immutable (and to_numpy's views are read-only)
    return view
