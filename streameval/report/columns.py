"""Columns of a tidy result as Arrow arrays and CSV text, built from NumPy without pyarrow's pandas import.

A :class:`~streameval.report.SliceTable` of 90,000 groups keeps its values by column: NumPy
arrays for counts and metrics (a non-finite float meaning null) and lists of Python values for
the key columns. ``pa.array`` would convert them, but its first call imports pandas (~0.2-0.5 s
of a fresh process, for nothing here) and converting Python lists costs ~0.3 s more; the arrays
here are built from buffers instead, with the types ``pa.array`` infers for the same values
(tests compare them), and anything else falls back to ``pa.array``.

CSV goes through Arrow's writer, so the text is Arrow's; one shortcut: Arrow formats a time-zoned
timestamp (the ``window`` column) through its time-zone database at ~3 us a value, so that
column is formatted once per distinct value and joined to the other columns' text.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Sequence

import numpy as np

__all__ = ["arrow_column", "float_values", "write_csv_text"]

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=_dt.timezone.utc)
_US = _dt.timedelta(microseconds=1)


def float_values(values: np.ndarray) -> list[float | None]:
    """Floats as JSON-ready values: NaN and infinities become None (undefined)."""
    values = np.asarray(values, dtype=np.float64)
    out = values.astype(object)
    out[~np.isfinite(values)] = None
    listed: list[float | None] = out.tolist()
    return listed


def _validity(valid: np.ndarray) -> Any:
    import pyarrow as pa

    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _fixed(values: np.ndarray, valid: np.ndarray | None, arrow_type: Any) -> Any:
    import pyarrow as pa

    data = np.ascontiguousarray(values)
    return pa.Array.from_buffers(arrow_type, data.shape[0],
                                 [None if valid is None else _validity(valid), pa.py_buffer(data)])


def _zone_name(tz: Any) -> str | None:
    """The time-zone name pyarrow gives aware datetimes of ``tz``, or None when unsure."""
    import zoneinfo

    if isinstance(tz, zoneinfo.ZoneInfo):
        return str(tz.key)
    if tz is _dt.timezone.utc:
        return "UTC"
    return None


def _timestamps(values: Sequence[Any]) -> Any:
    """Aware datetimes of one zone (or None) as ``timestamp[us, tz]``; None when not that case."""
    import pyarrow as pa

    zones = {v.tzinfo for v in values if v is not None}
    if len(zones) != 1:
        return None
    zone = zones.pop()
    name = _zone_name(zone)
    if name is None:
        return None
    # keys share their window objects: each distinct object converted once, found by identity
    # (the list keeps them alive; hashing an aware datetime asks its zone for the offset)
    ids = np.fromiter(map(id, values), dtype=np.uint64, count=len(values))
    distinct, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    objects = [values[i] for i in first.tolist()]
    micros = np.array([0 if v is None else (v - _EPOCH_UTC) // _US for v in objects], dtype=np.int64)
    valid = np.array([v is not None for v in objects], dtype=bool)
    inverse = inverse.reshape(-1)
    return _fixed(micros[inverse], valid[inverse], pa.timestamp("us", tz=name))


def _strings(values: Sequence[Any]) -> Any:
    import pyarrow as pa

    encoded = [b"" if v is None else v.encode() for v in values]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:
        return None
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    return pa.Array.from_buffers(pa.string(), len(encoded), [_validity(valid), pa.py_buffer(offsets.astype(np.int32)),
                                                              pa.py_buffer(b"".join(encoded))])


def _python_column(values: Sequence[Any]) -> Any:
    """A list of Python values as ``pa.array`` would infer it, for the common key types
    (int, float, str, aware datetimes, None); anything else through ``pa.array``."""
    import pyarrow as pa

    kinds = set(map(type, values)) - {type(None)}
    built = None
    if not kinds:
        built = pa.nulls(len(values))
    elif kinds == {int}:
        nulls = None in values
        valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values)) if nulls else None
        try:
            ints = np.array([0 if v is None else v for v in values] if nulls else values, dtype=np.int64)
        except OverflowError:
            ints = None
        if ints is not None:
            built = _fixed(ints, valid, pa.int64())
    elif kinds == {float}:
        valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
        built = _fixed(np.array([0.0 if v is None else v for v in values], dtype=np.float64), valid, pa.float64())
    elif kinds == {str}:
        built = _strings(values)
    elif kinds == {_dt.datetime}:
        built = _timestamps(values)
    return built if built is not None else pa.array(list(values))


def arrow_column(values: Any) -> Any:
    """One column as a ``pyarrow.Array``.

    Parameters
    ----------
    values : ndarray of int64 or float64, shape (n,), or list of Python values
        Floats: a non-finite value is null, and a column with no finite value has Arrow's
        ``null`` type (as ``pa.array`` infers for all-None); lists: as ``pa.array`` infers them.

    Returns
    -------
    pyarrow.Array
    """
    import pyarrow as pa

    if isinstance(values, np.ndarray):
        if values.dtype == np.float64:
            valid = np.isfinite(values)
            if not valid.any():
                return pa.nulls(values.shape[0])
            return _fixed(values, valid, pa.float64())
        if values.dtype == np.int64:
            return _fixed(values, None, pa.int64())
        return pa.array(values)
    return _python_column(values)


def write_csv_text(table: Any) -> str:
    """``table`` as CSV text, exactly as ``pyarrow.csv.write_csv`` writes it.

    When the first column is a time-zoned timestamp, its distinct values are formatted by Arrow
    once each and joined to the text Arrow writes for the other columns (the same text, ~10x
    faster for the 90 distinct windows of 90,000 rows); when the other columns' text has line
    breaks inside values, or no other column exists, the whole table goes through Arrow.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    def arrow_bytes(t: Any, header: bool = True) -> bytes:
        sink = pa.BufferOutputStream()
        pacsv.write_csv(t, sink, pacsv.WriteOptions(include_header=header))
        return sink.getvalue().to_pybytes()  # type: ignore[no-any-return]

    first = table.schema.field(0) if table.num_columns else None
    if first is None or table.num_columns < 2 or table.num_rows == 0 or not pa.types.is_timestamp(first.type) \
            or first.type.tz is None:
        return arrow_bytes(table).decode()
    rest = arrow_bytes(table.select(table.column_names[1:]))
    ends = np.flatnonzero(np.frombuffer(rest, dtype=np.uint8) == 10)  # header, rows: one newline each
    if ends.shape[0] != table.num_rows + 1 or int(ends[-1]) != len(rest) - 1:
        return arrow_bytes(table).decode()
    column = table.column(0).combine_chunks()
    stamps = np.frombuffer(column.buffers()[1], dtype=np.int64, count=len(column), offset=column.offset * 8)
    valid = np.ones(len(column), dtype=bool) if column.null_count == 0 else np.unpackbits(
        np.frombuffer(column.buffers()[0], dtype=np.uint8), bitorder="little")[column.offset:column.offset + len(column)] > 0
    distinct, codes = np.unique(np.where(valid, stamps, 0), return_inverse=True)
    names = arrow_bytes(pa.table({"w": _fixed(distinct, None, first.type)}), header=False).split(b"\n")[:-1]
    prefixes = [name + b"," for name in names]
    null_prefix = b","
    head = arrow_bytes(pa.table({first.name: column.slice(0, 0)})).rstrip(b"\n")
    view = memoryview(rest)
    starts = (ends[:-1] + 1).tolist()
    stops = (ends[1:] + 1).tolist()  # each row's text with its newline
    pieces: list[Any] = [head, b",", view[: int(ends[0]) + 1]]
    for c, ok, a, b in zip(codes.reshape(-1).tolist(), valid.tolist(), starts, stops, strict=True):
        pieces.append(prefixes[c] if ok else null_prefix)
        pieces.append(view[a:b])
    return b"".join(pieces).decode()
