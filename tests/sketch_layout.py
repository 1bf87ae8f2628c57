"""A pure-Python reading of the documented version-3 and version-4 bin payloads
(docs/sketch-format.md §4.1 and §4.2).

Written from the specification, not from streameval's code, so tests can check the compiled codec
against it, and craft payloads the writer would never produce (invalid cells, odd but valid
encodings) to check the reader's refusals.
"""

from __future__ import annotations

import math
import struct

import numpy as np

PRESENT, INT, SINGLE, F32 = 1, 2, 4, 8


def varint(x: int) -> bytes:
    """Unsigned LEB128 of ``x`` (a negative ``x`` as its 64-bit two's complement: 10 bytes)."""
    x &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        if x:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _f32_exact(x: float) -> bool:
    try:
        return _bits(struct.unpack("<f", struct.pack("<f", x))[0]) == _bits(x)
    except OverflowError:
        return False


def nibble(cell: np.ndarray, general: bool = False) -> int:
    """The writer's nibble for one cell ``[w, min, max, sum]`` (``general``: PRESENT only)."""
    w, lo, hi, sm = (float(v) for v in cell)
    if w == 0.0 and lo == math.inf and hi == -math.inf and sm == 0.0:
        return 0
    if general:
        return PRESENT
    nib = PRESENT
    if 1.0 <= w <= 2.0**53 and w == math.floor(w):
        nib |= INT
    if _bits(lo) == _bits(hi) and _bits(sm) == _bits(w * lo):
        nib |= SINGLE
    if _f32_exact(lo) and _f32_exact(hi):
        nib |= F32
    return nib


def encode_payload(keys: np.ndarray, values: np.ndarray, general: bool = False) -> bytes:
    """Encode bins as the specification says (``general``: every cell as weight, min, max, sum in
    float64, which is valid but never what the writer picks)."""
    out = bytearray()
    prev = 0
    for j, key in enumerate(int(x) for x in keys):
        out += varint(key - prev if j else key)
        prev = key
        nibs = [nibble(values[j, c], general) for c in range(2)]
        out.append(nibs[0] | (nibs[1] << 4))
        for c, nib in enumerate(nibs):
            if not nib:
                continue
            w, lo, hi, sm = (float(v) for v in values[j, c])
            out += varint(int(w)) if nib & INT else struct.pack("<d", w)
            fmt = "<f" if nib & F32 else "<d"
            out += struct.pack(fmt, lo)
            if not nib & SINGLE:
                out += struct.pack(fmt, hi) + struct.pack("<d", sm)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        b = data[pos]
        pos += 1
        x |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return x, pos


def decode_payload(data: bytes, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Decode ``k`` bins (no checks beyond the layout): ``(keys, values)``."""
    keys = np.empty(k, dtype=np.int64)
    values = np.empty((k, 2, 4))
    values[...] = [0.0, np.inf, -np.inf, 0.0]
    pos = key = 0
    for j in range(k):
        d, pos = _read_varint(data, pos)
        key = d if j == 0 else key + d
        keys[j] = key
        tag = data[pos]
        pos += 1
        for c in range(2):
            nib = (tag >> (4 * c)) & 15
            if not nib:
                continue
            if nib & INT:
                n, pos = _read_varint(data, pos)
                w = float(n)
            else:
                (w,) = struct.unpack_from("<d", data, pos)
                pos += 8
            fmt, size = ("<f", 4) if nib & F32 else ("<d", 8)
            (lo,) = struct.unpack_from(fmt, data, pos)
            pos += size
            if nib & SINGLE:
                hi, sm = lo, w * lo
            else:
                (hi,) = struct.unpack_from(fmt, data, pos)
                (sm,) = struct.unpack_from("<d", data, pos + size)
                pos += size + 8
            values[j, c] = [w, lo, hi, sm]
    assert pos == len(data), (pos, len(data))
    return keys, values


def encode_columnar_payload(keys: np.ndarray, values: np.ndarray, general: bool = False) -> bytes:
    """The version-4 payload (§4.2), one cell at a time: a cell that is not exactly the empty cell
    goes to U32 (weight 1.0, min, max and sum with the same bits, min a float32 value), U64 (the
    same with another min) or GEN; ``general`` puts every cell in GEN (valid, never what the
    writer picks)."""
    lists = []
    for c in range(2):
        u32, u64, gen = [], [], []
        for key, cell in zip(keys.tolist(), values[:, c].tolist(), strict=True):
            w, lo, hi, sm = cell
            if nibble(np.array(cell)) == 0:
                continue
            unit = not general and _bits(w) == _bits(1.0) and _bits(lo) == _bits(hi) == _bits(sm)
            if unit and _f32_exact(lo):
                u32.append((key, lo))
            elif unit:
                u64.append((key, lo))
            else:
                gen.append((key, w, lo, hi, sm))
        lists += [u32, u64, gen]
    out = b"".join(struct.pack("<I", len(x)) for x in lists)
    for i, cells in enumerate(lists):
        out += b"".join(struct.pack("<I", cell[0]) for cell in cells)
        if i % 3 == 0:
            out += b"".join(struct.pack("<f", cell[1]) for cell in cells)
        elif i % 3 == 1:
            out += b"".join(struct.pack("<d", cell[1]) for cell in cells)
        else:
            for field in range(1, 5):
                out += b"".join(struct.pack("<d", cell[field]) for cell in cells)
    return out
