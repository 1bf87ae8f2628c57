"""The zlib payload of sketch format versions 1 and 2, inflated a run of bins at a time and checked
as it goes (``docs/sketch-format.md`` §4)."""

from __future__ import annotations

import zlib

import numpy as np

from ..grid import Grid
from ..kernels.binary import N_FIELDS
from .io_checks import check_cells, check_keys, fail

__all__ = ["inflate_v1"]

BIN_BYTES = 4 + 2 * N_FIELDS * 8  # one key delta and 8 float64 values per stored bin

_INFLATE_BINS = 1 << 14  # bins inflated and checked at a time (1 MiB of values)


def inflate_v1(
    stored: memoryview, k: int, grid: Grid, source: str | None, extra: int = 0
) -> tuple[np.ndarray, np.ndarray, bytes]:
    """Inflate a zlib payload of ``k`` bins, checking as it goes.

    The key deltas come first and are checked whole; the values are inflated a run of bins at a
    time, each run checked (rule 8) before the next is inflated. So a crafted payload fails
    after at most one run of garbage: memory grows with the valid-looking prefix, not with what
    the header claims. The output never exceeds ``68 * k`` bytes.
    """
    inflater = zlib.decompressobj()
    pos, pending = 0, b""
    step = 1 << 16

    def take(n: int) -> bytes:
        nonlocal pos, pending
        parts = []
        try:
            while n > 0:
                if not pending:
                    if pos >= len(stored) or inflater.eof:
                        break
                    pending, pos = bytes(stored[pos:pos + step]), pos + step
                chunk = inflater.decompress(pending, n)
                pending = inflater.unconsumed_tail
                parts.append(chunk)
                n -= len(chunk)
        except zlib.error as exc:
            raise fail(f"payload does not decompress ({exc})", source) from None
        return b"".join(parts)

    raw_keys = take(4 * k)
    if len(raw_keys) != 4 * k:
        raise fail(f"payload holds {len(raw_keys)} bytes, {k} bins need {k * BIN_BYTES}", source)
    keys = np.cumsum(np.frombuffer(raw_keys, dtype="<u4").astype(np.int64))
    check_keys(grid, keys, source)
    runs = []  # allocated as they pass their checks, never all at once from the header's word
    for start in range(0, k, _INFLATE_BINS):
        stop = min(start + _INFLATE_BINS, k)
        raw = take((stop - start) * 2 * N_FIELDS * 8)
        if len(raw) != (stop - start) * 2 * N_FIELDS * 8:
            got = 4 * k + start * 2 * N_FIELDS * 8 + len(raw)
            raise fail(f"payload holds {got} bytes, {k} bins need {k * BIN_BYTES}", source)
        run = np.frombuffer(raw, dtype="<f8").reshape(stop - start, 2, N_FIELDS).astype(np.float64)
        check_cells(grid, keys[start:stop], run, source)
        runs.append(run)
    values = np.concatenate(runs) if len(runs) > 1 else runs[0] if runs else np.empty((0, 2, N_FIELDS))
    tail = take(extra) if extra else b""  # the replicate section, bounded by the header's word
    if len(tail) != extra:
        raise fail(f"payload ends {extra - len(tail)} bytes before the end of its bootstrap replicates", source)
    unfed = max(len(stored) - pos, 0)
    rest = b""
    if not inflater.eof:
        try:
            rest = inflater.decompress(pending + bytes(stored[pos:]), 1)
        except zlib.error as exc:
            raise fail(f"payload does not decompress ({exc})", source) from None
        unfed = 0
    if rest or not inflater.eof:
        raise fail("payload is longer than its header says, or incomplete", source)
    if inflater.unused_data or unfed:
        raise fail(f"{len(inflater.unused_data) + unfed} trailing byte(s) after the compressed payload", source)
    return keys, values, tail
