"""File sources: Parquet, CSV/TSV (also gzipped), Arrow IPC/Feather and NDJSON files, directories and globs.

Plain column names are read with pyarrow, file by file (so errors name the file): Parquet and CSV
with their own streaming readers (bounded memory), the other formats with the dataset scanner.
Expressions, a filter or a query go through DuckDB (:mod:`.sql`), over the same files.

Checks before reading: every file named once; one format; a column's type the same kind (number,
text, boolean, ...) in every file that has it, whatever the file order (numbers of different
widths are read as one type); Parquet page checksums verified where the writer stored them.
"""

from __future__ import annotations

import glob
import os
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .base import (
    DELIMITERS,
    FILE_FORMATS,
    FORMAT_NAMES,
    Chunk,
    Source,
    SourceError,
    ext,
    missing,
    needs_sql,
)
from .localfiles import LOCAL_FORMATS, LocalDataset, LocalFile
from .remote import expand_remote, is_remote, remote_file_id
from .textparts import (
    TEXT_PART_ROWS,
    Buffers,
    LazyRowChunk,
    TextRange,
    TextRangeError,
    joined,
    read_csv_range,
    read_json_range,
    sliced,
    split_file,
)

__all__ = ["open_files", "expand_files", "CSV_BLOCK_BYTES", "PART_ROWS"]


def expand_files(paths: Sequence[str]) -> tuple[list[str], str | None]:
    """Files named by ``paths`` (files, directories, globs) and the common hive base directory.

    Raises
    ------
    SourceError
        If a path matches nothing, a directory holds no data file, or a file is named twice.
    """
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
        if not f.startswith((".", "_")) and ext(f) in FILE_FORMATS
    )


def _file_format(files: Sequence[str]) -> str:
    formats: dict[str, str] = {}
    for f in files:
        fmt = FILE_FORMATS.get(ext(f))
        if fmt is None:
            raise SourceError(
                f"{f}: unknown file type {ext(f) or '(no extension)'!r}; supported: "
                f"{', '.join(sorted(FILE_FORMATS))} (or pass a DuckDB query with --sql)"
            )
        formats.setdefault(fmt, f)
    if len(formats) > 1:
        kinds = ", ".join(f"{FORMAT_NAMES[k]} ({v})" for k, v in formats.items())
        raise SourceError(f"the sources mix file formats: {kinds}; evaluate one format at a time")
    return str(next(iter(formats)))


def _pyarrow_format(fmt: str) -> Any:
    import pyarrow.dataset as ds

    if fmt in DELIMITERS:
        import pyarrow.csv as pcsv

        return ds.CsvFileFormat(parse_options=pcsv.ParseOptions(delimiter=DELIMITERS[fmt]))
    if fmt == "parquet":  # verify page checksums where the writer stored them
        options = ds.ParquetFragmentScanOptions(page_checksum_verification=True)
        return ds.ParquetFileFormat(default_fragment_scan_options=options)
    return fmt


def _open_dataset(files: list[str], fmt: str, base: str | None, schema: Any = None, filesystem: Any = None,
                  light: bool = False) -> Any:
    """The files as a ``pyarrow.dataset`` dataset, or with ``light`` (local files of a format in
    :data:`.localfiles.LOCAL_FORMATS`, no hive base) as a :class:`.localfiles.LocalDataset`."""
    import pyarrow as pa

    try:
        if light and base is None and filesystem is None and schema is None and fmt in LOCAL_FORMATS:
            return LocalDataset(files, fmt)
        import pyarrow.dataset as ds

        if base is not None:
            return ds.dataset(files, schema=schema, format=_pyarrow_format(fmt), partitioning="hive",
                              partition_base_dir=base, filesystem=filesystem)
        return ds.dataset(files, schema=schema, format=_pyarrow_format(fmt), filesystem=filesystem)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise SourceError(f"cannot read {FORMAT_NAMES[fmt]} input {', '.join(files[:3])}: {exc}") from None


def _family(t: Any) -> str | None:
    """The kind of an Arrow type: types of one kind convert into each other without surprises."""
    import pyarrow.types as pt

    if pt.is_dictionary(t):
        t = t.value_type
    if pt.is_null(t):
        return None
    if pt.is_integer(t) or pt.is_floating(t) or pt.is_decimal(t):
        return "number"
    if pt.is_boolean(t):
        return "boolean"
    if pt.is_string(t) or pt.is_large_string(t) or getattr(pt, "is_string_view", lambda _: False)(t):
        return "text"
    for kind in ("timestamp", "date", "time", "duration", "binary", "large_binary"):
        if getattr(pt, f"is_{kind}")(t):
            return kind
    return str(t)


def _unified(col: str, seen: list[tuple[str, Any]]) -> Any:
    """One type for ``col`` from its type in each file (``seen``: (path, type)), or an error
    naming two files that disagree, whatever their order."""
    import pyarrow as pa
    import pyarrow.types as pt

    typed = [(path, t) for path, t in seen if _family(t) is not None]
    if not typed:
        return seen[0][1] if seen else pa.null()
    first_path, first_type = typed[0]
    for path, t in typed[1:]:
        if _family(t) != _family(first_type):
            raise SourceError(
                f"column {col!r} is {first_type} ({_family(first_type)}) in {first_path} but {t} "
                f"({_family(t)}) in {path}; the files of one input must agree on a column's type: "
                "rewrite the odd file(s) with the same type"
            )
    types = {t for _, t in typed}
    if len(types) == 1:
        return first_type
    if _family(first_type) == "number":
        return pa.float64() if any(pt.is_floating(t) or pt.is_decimal(t) for t in types) else pa.int64()
    if _family(first_type) == "text":
        return pa.large_string()
    return first_type  # e.g. timestamps of different units: the scanner converts to the first


def column_types(dataset: Any, columns: Iterable[str] | None = None) -> dict[str, Any]:
    """The type each of ``columns`` (default: every column) is read as, checked across files.

    Reads each file's schema (Parquet footers, the first block of text files). A file whose
    schema cannot be read is skipped here and reported, with its name, when it is read.

    Raises
    ------
    SourceError
        If two files give a column types of different kinds (number and text, say); the message
        names the column, both files and both types.
    """
    import pyarrow as pa

    wanted = None if columns is None else set(columns)
    seen: dict[str, list[tuple[str, Any]]] = {}
    for fragment in dataset.get_fragments():
        try:
            schema = fragment.physical_schema
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
            continue
        for fld in schema:
            if wanted is None or fld.name in wanted:
                seen.setdefault(fld.name, []).append((_fragment_path(fragment), fld.type))
    return {col: _unified(col, found) for col, found in seen.items()}


def _fragment_path(fragment: Any) -> str:
    return str(getattr(fragment, "path", "?"))


def _remote_input(fragment: Any, path: str, random_access: bool) -> Any:
    """``path`` for a local file; an open pyarrow file for a fragment on a remote filesystem."""
    from pyarrow import fs as pafs

    filesystem = getattr(fragment, "filesystem", None)
    if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem):
        return path
    return filesystem.open_input_file(path) if random_access else filesystem.open_input_stream(path)


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


# Block size of the CSV reader for files that cannot be cut into ranges (gzipped or remote files;
# local uncompressed text files are read in ranges, see .textparts). pyarrow's streaming CSV
# reader reads raw blocks ahead on its I/O thread into a queue of up to 32 blocks, whether or not
# the consumer keeps up, so its memory is about 32-40 x block_size (and, for files smaller than
# that, the whole file). 1 MiB (pyarrow's default) bounds it to ~45 MB; its small batches are
# joined into batches of TEXT_PART_ROWS rows before they are binned.
CSV_BLOCK_BYTES = 1 << 20


def _needed_columns(cols: Mapping[str, str]) -> list[str]:
    return list(dict.fromkeys(cols.values()))


def _open_csv_file(path: Any, columns: Sequence[str], types: Mapping[str, Any], delimiter: str = ",") -> Any:
    """pyarrow's streaming CSV reader over one file, reading only ``columns``, typed as ``types``."""
    import pyarrow.csv as pcsv

    return pcsv.open_csv(
        path,
        read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES, use_threads=True),
        parse_options=pcsv.ParseOptions(delimiter=delimiter),
        convert_options=pcsv.ConvertOptions(include_columns=list(columns), column_types=dict(types)),
    )


def _file_batches(
    fragment: Any, fmt: str, dataset: Any, columns: list[str], batch_rows: int, types: Mapping[str, Any],
    row_groups: list[int] | None = None, metadata: Any = None, text_range: TextRange | None = None,
    names: Sequence[str] = (),
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
    the file's footer already read, saves parsing it again for each stream. ``text_range`` (CSV,
    TSV and NDJSON only) reads just those lines, parsed as one block on the calling thread;
    ``names`` are the file's column names (its CSV header).
    """

    if text_range is not None:
        typed = {c: types.get(c, dataset.schema.field(c).type) for c in columns}
        if fmt in DELIMITERS:
            batch = read_csv_range(text_range, names, columns, typed, DELIMITERS[fmt])
        else:
            batch = read_json_range(text_range, columns, typed)
        if batch is not None:
            yield from sliced(batch, batch_rows)
        return

    path = _fragment_path(fragment)
    source = _remote_input(fragment, path, random_access=fmt == "parquet")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # pre_buffer=False: with pyarrow's default the reader keeps the column chunks of the
        # whole file, so memory grows with the file.
        file = pq.ParquetFile(source, pre_buffer=False, metadata=metadata, page_checksum_verification=True)
        if row_groups is None:
            yield from file.iter_batches(batch_size=batch_rows, columns=columns)
        else:
            yield from file.iter_batches(batch_size=batch_rows, columns=columns, row_groups=row_groups, use_threads=False)
        return
    if fmt in DELIMITERS:
        # Types as checked across the files (column_types); explicit types also decode faster
        # than per-block inference.
        typed = {c: types.get(c, dataset.schema.field(c).type) for c in columns}
        yield from joined(_open_csv_file(source, columns, typed, DELIMITERS[fmt]), min(batch_rows, TEXT_PART_ROWS))
        return
    if fmt == "json" and isinstance(fragment, LocalFile):  # pyarrow's streaming JSON reader
        import pyarrow as pa
        import pyarrow.json as pjson

        schema = pa.schema([(c, types.get(c, dataset.schema.field(c).type)) for c in columns])
        options = pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        yield from joined(pjson.open_json(source, parse_options=options), min(batch_rows, TEXT_PART_ROWS))
        return
    import pyarrow.dataset as ds

    scanner = ds.Scanner.from_fragment(
        fragment, schema=dataset.schema, columns=columns, batch_size=batch_rows, batch_readahead=1,
        use_threads=True,
    )
    batches = scanner.to_batches()
    yield from joined(batches, min(batch_rows, TEXT_PART_ROWS)) if fmt == "json" else batches


def _partition_values(fragment: Any, dataset: Any) -> dict[str, Any]:
    """Hive partition values of a fragment (from its own key=value folders), as Arrow scalars."""
    import pyarrow as pa

    if fragment.partition_expression is None:  # a LocalFile: no key=value folders
        return {}
    import pyarrow.dataset as ds

    keys = ds.get_partition_keys(fragment.partition_expression)
    return {n: pa.scalar(v, type=dataset.schema.field(n).type) for n, v in keys.items()}


def _fragment_chunks(
    dataset: Any, fragment: Any, fmt: str, cols: dict[str, str], batch_rows: int, types: Mapping[str, Any],
    row_groups: list[int] | None = None, first_row: int = 0, metadata: Any = None,
    text_range: TextRange | None = None,
) -> Iterator[Chunk]:
    """Chunks of one file (or of ``row_groups`` of one Parquet file, starting at row ``first_row``,
    or of the lines ``text_range`` of a text file, whose first row is counted when an error needs it)."""
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
    missing(cols, available, path)
    read = [c for c in _needed_columns(cols) if c in physical]
    constants = {c: partition[c] for c in _needed_columns(cols) if c not in physical}
    row = first_row
    lazy = text_range is not None and text_range.start > text_range.data_start
    try:
        for batch in _file_batches(fragment, fmt, dataset, read, batch_rows, types, row_groups, metadata,
                                   text_range, physical):
            n = batch.num_rows
            if not n:
                continue
            arrays = []
            for col in cols.values():
                if col in constants:
                    arrays.append(pa.repeat(constants[col], n))
                else:
                    a = batch.column(col)
                    want = types.get(col, a.type)
                    arrays.append(a if a.type == want else a.cast(want))
            out = pa.RecordBatch.from_arrays(arrays, names=list(cols))
            yield LazyRowChunk(out, path, text_range.rows_before, row) if lazy else Chunk(out, path, row)  # type: ignore[union-attr]
            row += n
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        near = row + (text_range.rows_before() if lazy else 0)  # type: ignore[union-attr]
        error = SourceError if text_range is None else TextRangeError  # a range: retried front to back
        raise error(f"{path}: cannot read the file near row {near} ({exc})") from None


def _scan_files(
    dataset: Any, fmt: str, cols: dict[str, str], batch_rows: int, types: Mapping[str, Any]
) -> Iterator[Chunk]:
    # Text files front to back with pyarrow's streaming readers (values holding line breaks
    # included), not in ranges: see .textparts.
    for fragment in dataset.get_fragments():
        yield from _fragment_chunks(dataset, fragment, fmt, cols, batch_rows, types)


TEXT_FORMATS = ("csv", "tsv", "json")


def _text_parts(
    dataset: Any, fmt: str, cols: dict[str, str], batch_rows: int, types: Mapping[str, Any]
) -> list[Callable[[], Iterator[Chunk]]]:
    """Text files as ranges of whole lines (:mod:`.textparts`), in file order.

    Gzipped and remote files cannot be cut and stay one part each, read by pyarrow's streaming
    reader; so does a local file that cannot be opened (its error is raised, with its name, when
    the part is read).
    """
    from pyarrow import fs as pafs

    parts: list[Callable[[], Iterator[Chunk]]] = []
    buffers = Buffers()

    def part(fragment: Any, text_range: TextRange | None) -> Callable[[], Iterator[Chunk]]:
        return lambda: _fragment_chunks(dataset, fragment, fmt, cols, batch_rows, types, text_range=text_range)

    for fragment in dataset.get_fragments():
        path = _fragment_path(fragment)
        filesystem = getattr(fragment, "filesystem", None)
        local = filesystem is None or isinstance(filesystem, pafs.LocalFileSystem)
        ranges: list[TextRange] = []
        if local and not path.lower().endswith(".gz"):
            try:
                ranges = split_file(path, header=fmt in DELIMITERS, buffers=buffers)
            except OSError:
                ranges = []
        parts += [part(fragment, r) for r in ranges] if ranges else [part(fragment, None)]
    return parts


PART_ROWS = 1 << 20
"""Rows per part at least (whole row groups): a part's overhead is one file open. The knob is
``streameval.sources.PART_ROWS`` (the package attribute, read at each call)."""


def _parquet_parts(
    dataset: Any, cols: dict[str, str], batch_rows: int, types: Mapping[str, Any]
) -> list[Callable[[], Iterator[Chunk]]]:
    """Parquet files as runs of whole row groups of at least ``max(batch_rows, PART_ROWS)`` rows
    (or a file's last rows), in file order.

    A file whose footer cannot be read stays one part, so the error is raised (with the file's
    name) when that part is read, as the sequential scan would.
    """
    from .. import sources as package  # the public knob lives on the package

    parts: list[Callable[[], Iterator[Chunk]]] = []
    least = max(batch_rows, int(getattr(package, "PART_ROWS", PART_ROWS)))

    def part(fragment: Any, groups: list[int] | None, first: int, meta: Any) -> Callable[[], Iterator[Chunk]]:
        return lambda: _fragment_chunks(dataset, fragment, "parquet", cols, batch_rows, types, groups, first, meta)

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


def open_files(
    paths: Sequence[str], cols: dict[str, str], where: str | None, sql: str | None, batch_rows: int
) -> Source:
    """Files, directories or globs (or one DuckDB database file) as a :class:`Source`.

    Raises
    ------
    SourceError
        Missing files, mixed formats, a column missing or typed differently across files, an
        expression or query DuckDB rejects; SQLRefusedError for a refused SQL fragment.
    """
    from . import sql as sqlsrc

    if sqlsrc.is_duckdb_path(paths):
        return sqlsrc.open_duckdb_file(paths[0], cols, where, sql, None, batch_rows)
    filesystem, shown, ids = None, None, None
    if any(is_remote(str(p)) for p in paths):
        remote = expand_remote([str(p) for p in paths])
        files, filesystem, shown = remote.paths, remote.filesystem, remote.uris
        base = _hive_base(["/" + f for f in files])
        base = None if base is None else base[1:]
        ids = [remote_file_id(u, n, t) for u, n, t in zip(remote.uris, remote.sizes, remote.mtimes, strict=True)]
        if (where is not None or sql is not None) and _file_format(files) not in ("parquet", "ipc"):
            raise SourceError(
                f"{paths[0]}: --where, --sql and column expressions over remote CSV or NDJSON files are not "
                "supported (DuckDB reads them by path); copy the files locally, or use Parquet or Arrow IPC"
            )
    else:
        files, base = expand_files(paths)
    fmt = _file_format(files)
    for f in files:  # pyarrow detects compression from a lowercase extension only
        if f.lower().endswith(".gz") and not f.endswith(".gz"):
            raise SourceError(
                f"{f}: pyarrow recognizes gzip compression only from a lowercase '.gz' extension; "
                "rename the file (e.g. to '.csv.gz')"
            )
    if shown is None:
        desc = files[0] if len(files) == 1 else f"{len(files)} {FORMAT_NAMES[fmt]} files under {base or os.path.commonpath(files) or '.'}"
    else:
        desc = shown[0] if len(shown) == 1 else f"{len(shown)} {FORMAT_NAMES[fmt]} files under {os.path.commonpath(shown)}"
    plain = sql is None and where is None
    dataset = _open_dataset(files, fmt, base, filesystem=filesystem, light=plain)
    available = list(dataset.schema.names)
    if plain and needs_sql(cols, available) and isinstance(dataset, LocalDataset):
        dataset = _open_dataset(files, fmt, base, filesystem=filesystem)  # expressions: DuckDB's path
    if sql is None and where is None and not needs_sql(cols, available):
        types = column_types(dataset, _needed_columns(cols))
        total = _dataset_total_rows(dataset, fmt)
        split: Callable[[], list[Callable[[], Iterator[Chunk]]]] | None = None
        if fmt == "parquet":
            split = lambda: _parquet_parts(dataset, cols, batch_rows, types)  # noqa: E731
        elif fmt in TEXT_FORMATS:
            split = lambda: _text_parts(dataset, fmt, cols, batch_rows, types)  # noqa: E731
        return Source(fmt, desc, total, shown or files, "pyarrow.dataset",
                      lambda: _scan_files(dataset, fmt, cols, batch_rows, types), split, ids)
    # DuckDB evaluates expressions, the filter or the query. The columns they use must agree
    # across files too; Parquet and IPC are read through pyarrow (page checksums verified, one
    # schema), CSV and NDJSON with DuckDB's readers over exactly these files.
    used = None if sql is not None else sqlsrc.referenced_columns(cols, where, available)
    types = column_types(dataset, used)
    hive = base is not None or any("=" in os.path.basename(os.path.dirname(f)) for f in files)

    def arrow_dataset() -> Any:
        import pyarrow as pa

        fields = [pa.field(f.name, types.get(f.name, f.type)) for f in dataset.schema]
        names = {f.name for f in fields}
        fields += [pa.field(n, t) for n, t in types.items() if n not in names]
        return _open_dataset(files, fmt, base, schema=pa.schema(fields), filesystem=filesystem)

    return sqlsrc.open_files_duckdb(
        files, fmt, hive, desc, cols, where, sql, batch_rows,
        total=lambda: _dataset_total_rows(dataset, fmt), arrow_dataset=arrow_dataset,
    )
