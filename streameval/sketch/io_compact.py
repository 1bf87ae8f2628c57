"""The compact bin payload of sketch format version 3: bytes in, checked bins and their summary out.

The byte layout and every check live in the compiled :mod:`streameval.kernels.codec`; this
module turns its status codes into :class:`~streameval.errors.SketchFormatError` messages that
name the bin and the byte, and hands :func:`streameval.sketch.io_checks.check_consistency` the
sums it would otherwise recompute (``docs/sketch-format.md`` §4.1).
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

import numpy as np

from ..grid import Grid
from ..kernels import codec
from .io_checks import REL_TOL, check_cells, fail

__all__ = ["encode_compact", "decode_compact", "fold_compact", "max_compact_bytes", "check_state", "BinSummary"]

CELL_MAX_BYTES = 8 + 8 + 8 + 8  # a float64 weight, min, max and sum
BIN_MAX_BYTES = codec.KEY_VARINT_BYTES + 1 + 2 * CELL_MAX_BYTES


class BinSummary(NamedTuple):
    """What the counter checks need from the bins (``io_checks._aggregates`` and
    ``io_checks._probability_bounds`` in one tuple), computed while decoding."""

    t0: float
    t1: float
    cells: int
    w_inside: float
    w_touch: float
    n_outside_cells: int
    frac: bool
    bounds: tuple[float, float, float, float]


def max_compact_bytes(k: int) -> int:
    """The longest compact payload ``k`` bins can take (before compression)."""
    return k * BIN_MAX_BYTES


def encode_compact(keys: np.ndarray, values: np.ndarray) -> bytes:
    """The compact payload of compact bins ``keys`` (int64 (k,)) and ``values`` (float64 (k, 2, 4))."""
    return bytes(codec.encode_bins(np.ascontiguousarray(keys, dtype=np.int64), np.ascontiguousarray(values, dtype=np.float64)))


_MESSAGES = {
    codec.TRUNCATED: "the payload ends inside bin {j}",
    codec.BAD_KEY_VARINT: "bin {j}'s key delta is not a canonical varint of at most 4 bytes",
    codec.KEY_NOT_INCREASING: "bin keys are not increasing inside the grid: bin {j} repeats the previous key",
    codec.KEY_OUTSIDE_GRID: "bin keys are not increasing inside the grid: bin {j}'s key is beyond the grid (size {n_bins})",
    codec.EMPTY_BIN: "a stored bin is empty: bin {j} has tag 0",
    codec.BAD_NIBBLE: "bin {j}'s tag has flags for a class it does not hold",
    codec.BAD_INT_WEIGHT: "bin {j}'s integer weight is not a canonical varint in [1, 2**53]",
    codec.TRAILING: "{extra} trailing byte(s) after the {j} bins",
    codec.ZERO_WEIGHT: "bin {j} holds the empty cell [0, +inf, -inf, 0] as a present cell (an empty cell has nibble 0)",
}


def decode_compact(
    stored: bytes | memoryview, k: int, grid: Grid, compressed: bool, source: str | None
) -> tuple[np.ndarray, np.ndarray, BinSummary]:
    """Decode and check ``k`` bins of a compact payload.

    Parameters
    ----------
    stored : bytes or memoryview
        The payload as stored (zlib stream if ``compressed``).
    k : int
        The header's ``n_bins``.
    grid : Grid
        The sketch's grid (keys must be inside it; a cell's min and max in its bin).
    compressed : bool
        Flag bit 0.
    source : str, optional
        File name for messages.

    Returns
    -------
    keys : ndarray of int64, shape (k,)
    values : ndarray of float64, shape (k, 2, 4)
    summary : BinSummary

    Raises
    ------
    SketchFormatError
        Naming the bin and the byte offset of the first problem.
    """
    buf = _raw(stored, k, compressed, source)
    keys = np.empty(k, dtype=np.int64)
    values = np.empty((k, 2, 4), dtype=np.float64)
    sums = np.empty(8, dtype=np.float64)
    counts = np.empty(4, dtype=np.int64)
    status, j, at = codec.decode_checked(buf, k, grid.n_bins, *grid.kernel_params(), REL_TOL, keys, values, sums, counts)
    if status != codec.OK:
        msg = _MESSAGES[int(status)].format(j=int(j), n_bins=grid.n_bins, extra=buf.shape[0] - int(at))
        raise fail(f"{msg} (payload byte {int(at)})", source)
    if not counts[codec.C_CELLS_OK]:
        check_cells(grid, keys, values, source)  # names the cell
        raise fail("a bin's cells are inconsistent", source)  # pragma: no cover - check_cells names it
    return keys, values, _summary(sums, counts)


def fold_compact(
    stored: bytes | memoryview, k: int, grid: Grid, compressed: bool, source: str | None, state: np.ndarray
) -> BinSummary:
    """Decode and check ``k`` bins of a compact payload as :func:`decode_compact` does, folding
    them into the dense ``state`` (float64 (grid.n_bins, 2, 4)) instead of returning them.

    Raises
    ------
    SketchFormatError
        As :func:`decode_compact` (the file is decoded again for the message); ``state`` then
        holds part of the file's bins, and the caller discards it.
    ValueError
        If ``state`` is not a writable C-ordered float64 array of shape ``(grid.n_bins, 2, 4)``
        (nothing is written: the kernel checks keys against the grid, not the state's bounds).
    """
    check_state(state, grid)
    buf = _raw(stored, k, compressed, source)
    sums = np.empty(8, dtype=np.float64)
    counts = np.empty(4, dtype=np.int64)
    status, _, _ = codec.decode_fold(buf, k, grid.n_bins, *grid.kernel_params(), REL_TOL, state, sums, counts)
    if status != codec.OK or not counts[codec.C_CELLS_OK]:
        decode_compact(buf.data, k, grid, False, source)  # raises the message
        raise fail("a bin's cells are inconsistent", source)  # pragma: no cover - decode_compact raises
    return _summary(sums, counts)


def check_state(state: np.ndarray, grid: Grid) -> None:
    """Refuse a dense state the compiled folds cannot write safely (they check keys against the
    grid, not the state's bounds).

    Raises
    ------
    ValueError
        If ``state`` is not a writable C-ordered float64 array of shape ``(grid.n_bins, 2, 4)``.
    """
    if not (
        isinstance(state, np.ndarray) and state.shape == (grid.n_bins, 2, 4) and state.dtype == np.float64
        and state.flags.c_contiguous and state.flags.writeable
    ):
        raise ValueError(
            f"folding a sketch file needs a writable C-ordered float64 dense state of shape ({grid.n_bins}, 2, 4) "
            f"for {grid.describe()}, got {getattr(state, 'dtype', type(state).__name__)} {getattr(state, 'shape', '')}"
        )


def _raw(stored: bytes | memoryview, k: int, compressed: bool, source: str | None) -> np.ndarray:
    return _raw_payload(stored, max_compact_bytes(k), k, compressed, source)


def _raw_payload(stored: bytes | memoryview, cap: int, k: int, compressed: bool, source: str | None) -> np.ndarray:
    """The payload's bytes as uint8, inflated (to at most ``cap``, what ``k`` bins can take)
    when compressed."""
    if not compressed:
        return np.frombuffer(stored, dtype=np.uint8)
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(stored, cap + 1)
    except zlib.error as exc:
        raise fail(f"payload does not decompress ({exc})", source) from None
    if len(raw) > cap or not inflater.eof or inflater.unused_data:
        raise fail(f"payload is longer than {k} bins can take, or incomplete, or followed by trailing bytes", source)
    return np.frombuffer(raw, dtype=np.uint8)


def _summary(sums: np.ndarray, counts: np.ndarray) -> BinSummary:
    s = sums
    return BinSummary(
        float(s[codec.S_T0]), float(s[codec.S_T1]), int(counts[codec.C_CELLS]), float(s[codec.S_W_IN]),
        float(s[codec.S_W_TOUCH]), int(counts[codec.C_OUTSIDE]), bool(counts[codec.C_FRAC]),
        (float(s[codec.S_B_LO]), float(s[codec.S_B_HI]), float(s[codec.S_L_LO]), float(s[codec.S_L_HI])),
    )
