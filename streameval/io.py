"""The sketch file format: encode and decode a sketch's parts, with checks before trust.

Layout (all integers little-endian; specified in ``docs/sketch-format.md``)::

    offset  size  field
    0       8     magic  b"\\x89SEVSK\\r\\n"
    8       2     format version (uint16), currently 1
    10      2     flags (uint16): bit 0 = payload is zlib-compressed; other bits must be 0
    12      4     header length H (uint32), at most 1 MiB
    16      H     header: UTF-8 JSON object (sketch kind, grid spec, bin count, counters, labels)
    16+H    8     payload length L (uint64)
    24+H    L     payload: k uint32 key deltas, then k*2*4 float64 values (bin, class, field)
    24+H+L  4     CRC-32 of bytes [0, 24+H+L)

Decoding checks the magic, version, flags, lengths and CRC before reading anything else, then the
payload's shape and invariants (keys increasing and inside the grid, weights finite and >= 0,
min <= max). Nothing is ever unpickled or executed.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import SketchFormatError
from .grid import Grid, grid_from_spec
from .kernels import MAX, MIN, N_FIELDS, SUM, W

MAGIC = b"\x89SEVSK\r\n"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)
FLAG_ZLIB = 1
_MAX_HEADER = 1 << 20
_PREFIX = struct.Struct("<8sHHI")

__all__ = ["SketchParts", "encode", "decode", "MAGIC", "FORMAT_VERSION"]


@dataclass
class SketchParts:
    """Everything a sketch file holds, as plain values."""

    kind: str
    grid: Grid
    keys: np.ndarray  # int64, ascending
    values: np.ndarray  # float64, (k, 2, 4)
    counters: dict[str, Any]
    meta: dict[str, Any]


def encode(parts: SketchParts, compress: bool = True) -> bytes:
    """Serialize ``parts`` to bytes in the current format version."""
    k = int(parts.keys.shape[0])
    header = {
        "sketch": parts.kind,
        "grid": parts.grid.spec(),
        "n_bins": k,
        "counters": parts.counters,
        "meta": parts.meta,
    }
    hbytes = json.dumps(header, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    deltas = np.diff(parts.keys, prepend=np.int64(0)).astype("<u4")
    payload = deltas.tobytes() + np.ascontiguousarray(parts.values, dtype="<f8").tobytes()
    flags = 0
    if compress:
        payload = zlib.compress(payload, 6)
        flags |= FLAG_ZLIB
    body = _PREFIX.pack(MAGIC, FORMAT_VERSION, flags, len(hbytes)) + hbytes + struct.pack("<Q", len(payload)) + payload
    return body + struct.pack("<I", zlib.crc32(body))


def _fail(msg: str, source: str | None) -> SketchFormatError:
    where = f"{source}: " if source else ""
    return SketchFormatError(f"{where}{msg}")


def decode(data: bytes, source: str | None = None) -> SketchParts:
    """Parse and validate sketch bytes.

    Parameters
    ----------
    data : bytes
    source : str, optional
        File name for error messages.

    Raises
    ------
    SketchFormatError
        If the bytes are not a sketch, come from a newer format version, are truncated or
        corrupted, or describe an impossible sketch.
    """
    data = bytes(data)
    if len(data) < _PREFIX.size:
        raise _fail(f"not a streameval sketch: only {len(data)} bytes", source)
    magic, version, flags, hlen = _PREFIX.unpack_from(data, 0)
    if magic != MAGIC:
        raise _fail(f"not a streameval sketch (magic bytes {magic!r}, expected {MAGIC!r})", source)
    if version not in SUPPORTED_VERSIONS:
        raise _fail(
            f"sketch format version {version} is not supported: this streameval reads versions "
            f"{', '.join(map(str, SUPPORTED_VERSIONS))}"
            + ("; upgrade streameval to read it" if version > FORMAT_VERSION else ""),
            source,
        )
    if flags & ~FLAG_ZLIB:
        raise _fail(f"unknown flags 0x{flags:04x} in sketch header", source)
    if hlen > _MAX_HEADER:
        raise _fail(f"header length {hlen} exceeds the 1 MiB limit; the file is corrupt", source)
    off = _PREFIX.size + hlen
    if len(data) < off + 8 + 4:
        raise _fail(f"truncated: {len(data)} bytes, header alone needs {off + 12}", source)
    (plen,) = struct.unpack_from("<Q", data, off)
    end = off + 8 + plen
    if len(data) != end + 4:
        raise _fail(f"truncated or padded: {len(data)} bytes, the header says {end + 4}", source)
    (crc,) = struct.unpack_from("<I", data, end)
    if zlib.crc32(data[:end]) != crc:
        raise _fail("checksum mismatch: the file is corrupt", source)
    try:
        header = json.loads(data[_PREFIX.size:off].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # deep nesting too
        raise _fail(f"unreadable header ({exc})", source) from None
    if not isinstance(header, dict):
        raise _fail("header is not a JSON object", source)
    try:
        kind = header["sketch"]
        grid = grid_from_spec(header["grid"])
        k = header["n_bins"]
        counters = dict(header["counters"])
        meta = dict(header.get("meta", {}))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        # OverflowError: a grid parameter of Infinity (json accepts it) reaches int(); it must
        # still be reported as a format error.
        raise _fail(f"bad header field ({exc})", source) from None
    # int(header["n_bins"]) accepted 3.7, "5" and true; the count of stored bins must be an
    # integer, and at most the grid's size (checked before decompressing anything).
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= grid.n_bins:
        raise _fail(f"bad header field n_bins={k!r}: need an integer in [0, {grid.n_bins}]", source)
    if kind != "binary":
        raise _fail(f"unknown sketch kind {kind!r}", source)
    payload = data[off + 8:end]
    if flags & FLAG_ZLIB:
        try:
            # Bounded: a crafted payload must not inflate to more than the k bins it claims.
            inflater = zlib.decompressobj()
            payload = inflater.decompress(payload, k * (4 + 2 * N_FIELDS * 8) + 1)
            if not inflater.eof:
                raise _fail("payload is longer than its header says, or incomplete", source)
        except zlib.error as exc:
            raise _fail(f"payload does not decompress ({exc})", source) from None
    if len(payload) != k * (4 + 2 * N_FIELDS * 8):
        raise _fail(f"payload holds {len(payload)} bytes, {k} bins need {k * (4 + 2 * N_FIELDS * 8)}", source)
    keys = np.cumsum(np.frombuffer(payload, dtype="<u4", count=k).astype(np.int64))
    values = np.frombuffer(payload, dtype="<f8", offset=4 * k).reshape(k, 2, N_FIELDS).astype(np.float64)
    _validate(grid, keys, values, source)
    return SketchParts(kind, grid, keys, values, counters, meta)


def _validate(grid: Grid, keys: np.ndarray, values: np.ndarray, source: str | None) -> None:
    if keys.size and (keys[0] < 0 or keys[-1] >= grid.n_bins or np.any(np.diff(keys) <= 0)):
        raise _fail("bin keys are not increasing inside the grid", source)
    w = values[:, :, W]
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise _fail("a bin weight is negative or not finite", source)
    if np.any((w[:, 0] <= 0) & (w[:, 1] <= 0)):
        raise _fail("a stored bin is empty", source)
    filled = w > 0
    lo, hi = values[:, :, MIN], values[:, :, MAX]
    if np.any(filled & ~(lo <= hi)) or np.any(np.isnan(values)):
        raise _fail("a bin's min/max are inconsistent", source)
    # An empty class cell must be exactly [0, +inf, -inf, 0]: merging takes min/max over cells
    # whatever their weight, so a stray min in an empty cell would corrupt merged sketches.
    if np.any(~filled & ((lo != np.inf) | (hi != -np.inf) | (values[:, :, SUM] != 0))):
        raise _fail("an empty class cell of a stored bin holds a min, max or sum", source)
    if np.any(filled & (grid.bin_index(np.where(filled, lo, 0.0)) != keys[:, None])) or np.any(
        filled & (grid.bin_index(np.where(filled, hi, 0.0)) != keys[:, None])
    ):
        raise _fail("a bin's min/max do not belong to the bin", source)
