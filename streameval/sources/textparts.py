"""Uncompressed CSV, TSV and NDJSON files as byte ranges that threads parse on their own.

A local text file is cut at line ends into ranges of about :func:`part_bytes` bytes, sized from
the file's mean line length so that a range holds about :data:`TEXT_PART_ROWS` rows however wide
the rows are (extra columns make the ranges longer, not the blocks smaller). Each range is read
with one positioned read and parsed by pyarrow as one block on the calling thread, so several
threads parse several ranges at once (as they decode Parquet row groups) and memory stays bounded
by one range's bytes and its parsed rows per thread, whatever the file size.

A cut at a line end inside a quoted CSV value (one that holds a line break) is detected: such a
range holds an odd number of quote characters (quotes inside values are doubled), and reading it
raises :class:`TextRangeError`, as does any range pyarrow cannot parse on its own; the caller
then reads the source front to back with pyarrow's streaming reader, which handles such values
and names the real error if there is one. (NDJSON lines never hold a raw line break.) Row numbers
for error messages are counted lazily, from the line ends before a range, only when an error
needs one. :func:`joined` regroups the small batches of the streaming readers (gzipped and
remote text files, which cannot be cut) into batches of a given size.
"""

from __future__ import annotations

import os
import threading
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Sequence

from .base import Chunk, SourceError

__all__ = [
    "TEXT_PART_ROWS",
    "MIN_PART_BYTES",
    "MAX_PART_BYTES",
    "TextRange",
    "Buffers",
    "part_bytes",
    "split_file",
    "read_csv_range",
    "read_json_range",
    "LazyRowChunk",
    "TextRangeError",
    "sliced",
    "joined",
]

TEXT_PART_ROWS = 1 << 16
"""Rows a range should hold (65,536): large enough that per-block costs (parsing set-up, the
sketch's per-update checks) vanish and that the sketch bins them through its dense state, small
enough that each thread holds one range (a 68-byte-wide five-column log: 4.3 MiB of text, its
parsed fields and a batch). Measured on that log, 10M rows, side by side: 65,536 / 131,072 /
262,144 rows per range peaked at 291-317 / 323-349 / 381-397 MB with the same CPU time."""
MIN_PART_BYTES = 1 << 20
MAX_PART_BYTES = 1 << 25
_PROBE = 1 << 16  # bytes read at a cut to find the next line end (longer lines: read more)
_SAMPLE = 1 << 20  # bytes of the file's start used to estimate the line length


class TextRangeError(SourceError):
    """A range of a text file that cannot be parsed on its own: it cuts a quoted value holding a
    line break, or pyarrow rejects it. Read the source front to back instead (its error, if any,
    is the file's)."""


class Buffers:
    """One reusable read buffer per thread, shared by the ranges of one read.

    Reading every range into fresh memory costs a page fault per 4 KiB (measured: ~0.5 s of the
    ~3 s a 680 MB file took on one thread); a buffer reused by the thread's next range does not.
    The buffers live as long as the ranges that share them (one read of a source), and pyarrow's
    parsers copy every value out of them, so no batch refers to a buffer once it is parsed.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, size: int) -> memoryview:
        """A writable view of ``size`` bytes, private to the calling thread."""
        buf = getattr(self._local, "buf", None)
        if buf is None or len(buf) < size:
            buf = bytearray(size)
            self._local.buf = buf
        return memoryview(buf)[:size]


class TextRange:
    """Bytes ``[start, stop)`` of ``path`` holding whole lines, the ``index``-th range of the file.

    ``data_start`` is where the file's first data line starts (after the CSV header line);
    :meth:`rows_before` counts the lines between it and ``start``.
    """

    __slots__ = ("path", "data_start", "start", "stop", "index", "buffers", "_rows_before")

    def __init__(self, path: str, data_start: int, start: int, stop: int, index: int,
                 buffers: Buffers | None = None) -> None:
        self.path, self.data_start, self.start, self.stop, self.index = path, data_start, start, stop, index
        self.buffers = buffers if buffers is not None else Buffers()
        self._rows_before: int | None = None if start > data_start else 0

    def read(self) -> memoryview:
        """The range's bytes (one positioned read into the calling thread's buffer, valid until
        that thread reads its next range)."""
        view = self.buffers.get(self.stop - self.start)
        with open(self.path, "rb", buffering=0) as f:
            f.seek(self.start)
            got = 0
            while got < len(view):
                n = f.readinto(view[got:])
                if not n:
                    break
                got += n
        return view[:got]

    def rows_before(self) -> int:
        """Data lines of the file before this range (counted once, on first call)."""
        if self._rows_before is None:
            count, pos = 0, self.data_start
            with open(self.path, "rb") as f:
                f.seek(pos)
                while pos < self.start:
                    block = f.read(min(1 << 24, self.start - pos))
                    if not block:
                        break
                    count += block.count(b"\n")
                    pos += len(block)
            self._rows_before = count
        return self._rows_before

    def __repr__(self) -> str:
        return f"TextRange({self.path!r}, {self.start}, {self.stop})"


def part_bytes(path: str, header: bool, rows: int | None = None) -> int:
    """Bytes per range for ``path``: ``rows`` lines (default :data:`TEXT_PART_ROWS`) of its mean
    length (from its first MiB), clamped to [:data:`MIN_PART_BYTES`, :data:`MAX_PART_BYTES`]
    (module attributes read at each call, so tests can shrink them).

    Raises
    ------
    OSError
        If the file cannot be read.
    """
    rows = TEXT_PART_ROWS if rows is None else rows
    with open(path, "rb") as f:
        head = f.read(_SAMPLE)
    if header and b"\n" in head:
        head = head[head.index(b"\n") + 1:]
    lines = head.count(b"\n")
    mean = len(head) / lines if lines else float(MAX_PART_BYTES)
    return int(min(MAX_PART_BYTES, max(MIN_PART_BYTES, mean * rows)))


def _line_end(f: BinaryIO, pos: int, size: int, limit: int) -> int:
    """The offset just after the first line end at or after ``pos`` (``size`` if none), or -1 if
    none comes within ``limit`` bytes (lines too long to cut the file into bounded ranges)."""
    f.seek(pos)
    start = pos
    while pos < size and pos - start <= limit:
        block = f.read(_PROBE)
        if not block:
            break
        at: int = block.find(b"\n")
        if at >= 0:
            return pos + at + 1 if pos + at - start <= limit else -1
        pos += len(block)
    return size if size - start <= limit else -1


def split_file(path: str, header: bool, target: int | None = None, buffers: Buffers | None = None) -> list[TextRange]:
    """``path`` cut at line ends into ranges of about ``target`` bytes (default :func:`part_bytes`).

    With ``header``, the first line (a CSV header) belongs to no range. A file with no data lines
    gives one empty range, so its columns are still checked when it is read. The ranges share
    ``buffers`` (default: new ones). A file with a line longer than :data:`MAX_PART_BYTES` (or
    with no ``\n`` line ends at all, such as ``\r``-only files) gives no ranges: read it whole with
    a streaming reader.

    Raises
    ------
    OSError
        If the file cannot be opened or read.
    """
    size = os.path.getsize(path)
    target = max(1, target if target is not None else part_bytes(path, header))
    limit = max(MAX_PART_BYTES, target)
    with open(path, "rb") as f:
        data_start = _line_end(f, 0, size, limit) if header else 0
        cuts = [data_start]
        while cuts[-1] >= 0 and size - cuts[-1] > target:
            cuts.append(_line_end(f, cuts[-1] + target - 1, size, limit))
        if cuts[-1] < 0:
            return []
        if cuts[-1] < size or len(cuts) == 1:
            cuts.append(size)
    buffers = buffers if buffers is not None else Buffers()
    return [TextRange(path, data_start, a, b, i, buffers) for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True))]


def read_csv_range(
    part: TextRange, names: Sequence[str], columns: Sequence[str], types: Mapping[str, Any], delimiter: str
) -> Any:
    """The rows of a CSV range as one ``pyarrow.RecordBatch`` of ``columns``, typed as ``types``
    (None for a range with no data line).

    ``names`` are the file's column names (its header); the options are pyarrow's defaults, as
    :func:`pyarrow.csv.open_csv` uses them for the whole file, so both read the same values.

    Raises
    ------
    pyarrow.ArrowInvalid
        If a line does not parse or a value does not convert to its column's type.
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    data = part.read()
    if not len(data):
        return None
    if _odd_quotes(data):
        raise TextRangeError(f"{part.path}: bytes {part.start}-{part.stop} cut a quoted value that holds a line break")
    table = pcsv.read_csv(
        pa.py_buffer(data),
        read_options=pcsv.ReadOptions(column_names=list(names), use_threads=False, block_size=len(data) + 1),
        parse_options=pcsv.ParseOptions(delimiter=delimiter),
        convert_options=pcsv.ConvertOptions(include_columns=list(columns), column_types=dict(types)),
    )
    return _one_batch(table.select(list(columns)))


def read_json_range(part: TextRange, columns: Sequence[str], types: Mapping[str, Any]) -> Any:
    """The rows of an NDJSON range as one ``pyarrow.RecordBatch`` of ``columns``, typed as ``types``
    (other fields of each object are ignored; None for a range with no data line).

    Raises
    ------
    pyarrow.ArrowInvalid
        If a line is not a JSON object or a value does not convert to its column's type.
    """
    import pyarrow as pa
    import pyarrow.json as pjson

    data = part.read()
    schema = pa.schema([(c, types[c]) for c in columns])
    if not len(data):
        return None
    table = pjson.read_json(
        pa.py_buffer(data),
        read_options=pjson.ReadOptions(use_threads=False, block_size=len(data) + 1),
        parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )
    return _one_batch(table.select(list(columns)))


def _odd_quotes(data: memoryview) -> bool:
    """True if ``data`` holds an odd number of ``"`` (a cut inside a quoted value; ~0.2 ms a MiB)."""
    import numpy as np

    return bool(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == ord('"')) & 1)


def _one_batch(table: Any) -> Any:
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else None


class LazyRowChunk(Chunk):
    """A :class:`Chunk` whose ``origin_row`` is counted only when asked for (an error message):
    the rows of the file before its range, plus ``offset`` rows into the range."""

    def __init__(self, batch: Any, origin: str, rows_before: Callable[[], int], offset: int) -> None:
        self.batch, self.origin = batch, origin
        self._rows_before, self._offset = rows_before, offset

    @property
    def origin_row(self) -> int:  # type: ignore[override]
        return self._rows_before() + self._offset


def sliced(batch: Any, batch_rows: int) -> Iterator[Any]:
    """``batch`` in slices of at most ``batch_rows`` rows (zero-copy)."""
    if batch.num_rows <= batch_rows:
        yield batch
        return
    for start in range(0, batch.num_rows, batch_rows):
        yield batch.slice(start, batch_rows)


def joined(batches: Iterable[Any], rows: int) -> Iterator[Any]:
    """``batches`` regrouped into batches of exactly ``rows`` rows (the last may be shorter).

    Streaming text readers hand out one batch per raw block (about 15,000 rows of a 70-byte-wide
    CSV line per MiB); binning them one by one pays per-update costs on every one of them.
    """
    import pyarrow as pa

    held: list[Any] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        if count < rows:
            continue
        joined = held[0] if len(held) == 1 else pa.concat_batches(held)
        start = 0
        while count - start >= rows:
            yield joined.slice(start, rows)
            start += rows
        held = [joined.slice(start)] if start < count else []
        count -= start
    if count:
        yield held[0] if len(held) == 1 else pa.concat_batches(held)
