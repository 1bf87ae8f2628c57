"""The byte form of a :class:`~streameval.sketch.sketchset.SketchSet`: versioned, checked, no pickle.

A SketchSet travels between processes (a Spark executor's partition to the reduce, a Dask worker
to the client) as these bytes. The layout (little-endian)::

    offset  size  field
    0       8     magic b"SEVSSET\\x00"
    8       2     format version (uint16), currently 1
    10      2     flags (uint16), must be 0
    12      4     CRC-32 (zlib) of the payload
    16      8     payload length in bytes (uint64)
    24      8     length of the groups stream (uint64)
    32      ...   groups: an Arrow IPC stream; then cells: an Arrow IPC stream (to the end)

The two tables are the plain rows the monitoring store keeps (``docs/monitoring-store.md``), so
any Arrow reader can inspect them without streameval:

- ``groups``: one row per group in :meth:`SketchSet.keys` order; columns ``key_0 ... key_{m-1}``
  (the key parts, Arrow types inferred from the values: strings, integers, timestamps with
  their zone...), then ``n_rows``, ``n_nan``, ``n_zero_weight``, ``n_outside``,
  ``n_unlabelled`` (int64) and ``prob_weight``, ``brier_sum``, ``log_loss_sum`` (float64). The
  schema's metadata key ``streameval.sketchset`` holds JSON: ``format``, ``version``,
  ``key_names``, ``grid`` (the grid's spec), ``pos_label``, ``neg_label``, ``weighted``,
  ``max_groups``.
- ``cells``: ``group`` (int32, a row of ``groups``), ``bin`` (int32), ``class`` (int8: 0
  negative, 1 positive, 2 label not arrived), ``weight``, ``min``, ``max``, ``score_sum``
  (float64); sorted by (group, bin, class), one row per occupied cell.

Buffers are zstd-compressed by Arrow when the codec is available (the flag lives in the IPC
stream itself, so a reader needs nothing else). Reading checks the header first (magic, version,
flags, length, CRC) and then every field a merge or a metric relies on: the schemas, the grid,
the labels, counters that are finite and whole where they count rows, cells inside the grid and
strictly ordered, weights finite and positive, ``min <= max``. Any failure is a
:class:`~streameval.errors.SketchFormatError` naming the field.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, SketchFormatError

if TYPE_CHECKING:
    from .sketchset import SketchSet

__all__ = ["sketchset_to_bytes", "sketchset_from_bytes", "FORMAT_VERSION", "MAGIC", "COUNTERS"]

MAGIC = b"SEVSSET\x00"
FORMAT_VERSION = 1
_HEAD = struct.Struct("<8sHHIQQ")  # magic, version, flags, crc32, payload length, groups length
_META = "streameval.sketchset"
INT_COUNTERS = ("n_rows", "n_nan", "n_zero_weight", "n_outside", "n_unlabelled")
FLOAT_COUNTERS = ("prob_weight", "brier_sum", "log_loss_sum")
COUNTERS = INT_COUNTERS + FLOAT_COUNTERS
"""Counter columns, in the order :meth:`SketchSet.from_cells` takes them."""
_CELL_COLUMNS = ("group", "bin", "class", "weight", "min", "max", "score_sum")


def _codec() -> str | None:
    import pyarrow as pa

    return "zstd" if pa.Codec.is_available("zstd") else None


def _ipc(table: Any) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=_codec())) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def _key_column(values: list[Any], name: str) -> Any:
    """One key part as an Arrow array whose values read back as the same Python values and types."""
    import pyarrow as pa

    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, OverflowError) as exc:
        raise InputError(f"slice key {name!r} cannot be serialized: its values mix types or are not plain "
                         f"values ({exc}); slice by a column of one type") from None
    back = arr.to_pylist()
    for a, b in zip(values, back, strict=True):
        if type(a) is not type(b) or a != b:
            raise InputError(f"slice key {name!r} cannot be serialized: its values mix types ({a!r} and the "
                             f"column's {arr.type}); slice by a column of one type")
    return arr


def sketchset_to_bytes(ss: "SketchSet") -> bytes:
    """Serialize a :class:`SketchSet` (layout in this module's docstring).

    Parameters
    ----------
    ss : SketchSet

    Returns
    -------
    bytes
        ``sketchset_from_bytes(b)`` equals ``ss``: same keys in the same order, counters, cells,
        labels, grid and ``max_groups``.

    Raises
    ------
    InputError
        A key part whose values mix types (e.g. ``1`` and ``"1"``), or a label that JSON cannot
        hold.
    """
    import pyarrow as pa

    keys = ss.keys()
    counters = ss.group_counters()
    columns: dict[str, Any] = {f"key_{i}": _key_column([k[i] for k in keys], name)
                               for i, name in enumerate(ss.key_names)}
    for name in INT_COUNTERS:
        columns[name] = pa.array(counters[name], pa.int64())
    for name in FLOAT_COUNTERS:
        columns[name] = pa.array(counters[name], pa.float64())
    labels = ss._labels
    meta = {"format": _META, "version": FORMAT_VERSION, "key_names": list(ss.key_names), "grid": ss.grid.spec(),
            "pos_label": labels.pos_label, "neg_label": labels.neg_label, "weighted": bool(ss.weighted),
            "max_groups": int(ss.max_groups)}
    try:
        meta_text = json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"this sketch set's labels cannot be serialized ({exc})") from None
    groups = pa.table(columns) if columns else pa.table({"n_rows": pa.array([], pa.int64())})
    groups = groups.replace_schema_metadata({_META: meta_text})
    group, bins, klass, cell = ss.cell_columns()
    cells = pa.table({
        "group": pa.array(group.astype(np.int32)), "bin": pa.array(bins.astype(np.int32)),
        "class": pa.array(klass.astype(np.int8)),
        **{name: pa.array(np.ascontiguousarray(cell[:, i])) for i, name in enumerate(_CELL_COLUMNS[3:])},
    })
    first = _ipc(groups)
    payload = first + _ipc(cells)
    return _HEAD.pack(MAGIC, FORMAT_VERSION, 0, zlib.crc32(payload), len(payload), len(first)) + payload


def _fail(message: str, source: str | None) -> SketchFormatError:
    return SketchFormatError(f"{source + ': ' if source else ''}sketch set: {message}")


def _read_ipc(data: memoryview, what: str, source: str | None) -> Any:
    import pyarrow as pa

    try:
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowIOError, OSError) as exc:
        raise _fail(f"the {what} table is not a valid Arrow IPC stream ({exc})", source) from None


def _header(data: bytes, source: str | None) -> tuple[memoryview, memoryview]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        from ..errors import InputTypeError

        raise InputTypeError(f"sketch set bytes must be bytes-like, got {type(data).__name__}")
    view = memoryview(data).cast("B")
    if len(view) < _HEAD.size or bytes(view[:8]) != MAGIC:
        raise _fail("not a streameval sketch set (bad magic)", source)
    _, version, flags, crc, length, first = _HEAD.unpack(view[: _HEAD.size])
    if version != FORMAT_VERSION:
        raise _fail(f"format version mismatch: expected {FORMAT_VERSION}, got {version}"
                    + ("; upgrade streameval to read it" if version > FORMAT_VERSION else ""), source)
    if flags != 0:
        raise _fail(f"unknown flags {flags:#06x}", source)
    payload = view[_HEAD.size:]
    if len(payload) != length or first > length:
        raise _fail(f"truncated or padded: the header declares {length} payload bytes, {len(payload)} follow", source)
    if zlib.crc32(payload) != crc:
        raise _fail("checksum mismatch (the bytes were corrupted)", source)
    return payload[:first], payload[first:]


def _meta(groups: Any, source: str | None) -> dict[str, Any]:
    from .io_header import _meta as check_labels

    raw = (groups.schema.metadata or {}).get(_META.encode())
    try:
        meta = json.loads(raw) if raw is not None else None
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != _META or meta.get("version") != FORMAT_VERSION:
        raise _fail(f"the groups table lacks valid {_META!r} metadata", source)
    names = meta.get("key_names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _fail(f"bad key_names {names!r}", source)
    max_groups = meta.get("max_groups")
    if isinstance(max_groups, bool) or not isinstance(max_groups, int) or max_groups < 1:
        raise _fail(f"bad max_groups {max_groups!r}", source)
    if not isinstance(meta.get("weighted"), bool):
        raise _fail(f"bad weighted {meta.get('weighted')!r}", source)
    check_labels({"pos_label": meta.get("pos_label"), "neg_label": meta.get("neg_label")}, source)
    return meta


def _schema_is(table: Any, expected: list[tuple[str, Any]], what: str, source: str | None) -> None:
    got = [(f.name, f.type) for f in table.schema]
    if got != expected:
        raise _fail(f"the {what} table has columns {[f'{n}: {t}' for n, t in got]}, expected "
                    f"{[f'{n}: {t}' for n, t in expected]}", source)


def sketchset_from_bytes(data: bytes, source: str | None = None) -> "SketchSet":
    """Read a :class:`SketchSet` written by :func:`sketchset_to_bytes`, checking everything.

    Parameters
    ----------
    data : bytes-like
    source : str, optional
        Where the bytes came from, for messages.

    Returns
    -------
    SketchSet

    Raises
    ------
    SketchFormatError
        Not a sketch set, another format version, unknown flags, truncated or corrupted bytes
        (CRC-32), malformed tables, or contents no sketch set can hold (cells outside the grid or
        out of order, bad weights, ``min > max``, counters that are negative, fractional or not
        finite, duplicate keys).
    InputTypeError
        ``data`` is not bytes-like.
    """
    import pyarrow as pa

    from ..grid import grid_from_spec
    from .sketchset import SketchSet

    head, tail = _header(data, source)
    groups, cells = _read_ipc(head, "groups", source), _read_ipc(tail, "cells", source)
    meta = _meta(groups, source)
    try:
        grid = grid_from_spec(meta["grid"])
    except Exception as exc:  # noqa: BLE001 - any malformed spec is a format error
        raise _fail(f"bad grid spec ({exc})", source) from None
    m = len(meta["key_names"])
    key_fields = [(f"key_{i}", groups.schema.field(i).type if i < len(groups.schema) else None) for i in range(m)]
    _schema_is(groups, key_fields + [(n, pa.int64()) for n in INT_COUNTERS] + [(n, pa.float64()) for n in FLOAT_COUNTERS],
               "groups", source)
    types = [pa.int32(), pa.int32(), pa.int8()] + [pa.float64()] * 4
    _schema_is(cells, list(zip(_CELL_COLUMNS, types, strict=True)), "cells", source)
    n = groups.num_rows
    keys = list(zip(*(groups.column(f"key_{i}").to_pylist() for i in range(m)), strict=True)) if m else [()] * n
    if any(groups.column(c).null_count for c in COUNTERS) or any(cells.column(c).null_count for c in _CELL_COLUMNS):
        raise _fail("null counters or cell values", source)
    counters = np.column_stack([groups.column(c).to_numpy().astype(np.float64) for c in COUNTERS]) if n else \
        np.zeros((0, len(COUNTERS)))
    ints = counters[:, : len(INT_COUNTERS)]
    if np.any(ints < 0) or np.any(ints >= 2.0**53) or not np.all(np.isfinite(counters)) \
            or np.any(counters[:, len(INT_COUNTERS):len(INT_COUNTERS) + 2] < 0):
        raise _fail("counters must be finite, row counts whole and non-negative, weights and Brier sums >= 0", source)
    if np.any(counters[:, 4] > counters[:, 0]):
        raise _fail("a group has more unlabelled rows than rows", source)
    g = cells.column("group").to_numpy().astype(np.int64)
    b = cells.column("bin").to_numpy().astype(np.int64)
    c = cells.column("class").to_numpy().astype(np.int64)
    values = np.column_stack([cells.column(name).to_numpy() for name in _CELL_COLUMNS[3:]]) if cells.num_rows else \
        np.zeros((0, 4))
    if cells.num_rows and (g.min() < 0 or g.max() >= n or b.min() < 0 or b.max() >= grid.n_bins
                           or c.min() < 0 or c.max() > 2):
        raise _fail(f"cells outside the {n} groups, the grid's {grid.n_bins} bins or the classes 0-2", source)
    codes = (g * grid.n_bins + b) * 3 + c
    if np.any(np.diff(codes) <= 0):
        raise _fail("cells are not strictly ordered by (group, bin, class)", source)
    w = values[:, 0]
    if not np.all(np.isfinite(w) & (w > 0)) or not np.all(values[:, 1] <= values[:, 2]):
        raise _fail("cells need finite positive weights and min <= max", source)
    try:
        return SketchSet.from_cells(meta["key_names"], grid, keys, counters, codes, np.ascontiguousarray(values),
                                    pos_label=meta["pos_label"], neg_label=meta["neg_label"],
                                    weighted=meta["weighted"], max_groups=meta["max_groups"])
    except Exception as exc:  # noqa: BLE001 - duplicate keys, mismatched parts
        raise _fail(str(exc), source) from None
