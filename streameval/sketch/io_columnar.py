"""The columnar bin payload of sketch format version 4: bins in, bytes out, and back, checked.

Each class's cells are written in three lists of flat little-endian columns (unit cells with a
float32 score, unit cells with a float64 score, every other cell with its weight, min, max and
sum; ``docs/sketch-format.md`` §4.2), so the compiled decoder
(:func:`streameval.kernels.codec4.decode4`) runs branch-free loops over each list instead of
parsing one record at a time. This module encodes (in NumPy), turns the decoder's status codes into
:class:`~streameval.errors.SketchFormatError` messages that name the list, the cell and the byte,
and hands :func:`streameval.sketch.io_checks.check_consistency` the sums it needs.
"""

from __future__ import annotations

import numpy as np

from ..grid import Grid
from ..kernels import codec4
from .io_checks import REL_TOL, check_cells, fail
from .io_compact import BinSummary, _raw_payload, _summary

__all__ = ["encode_columnar", "decode_columnar", "fold_columnar", "max_columnar_bytes"]

_LIST_NAMES = ("U32", "U64", "GEN")


def max_columnar_bytes(k: int) -> int:
    """The longest columnar payload ``k`` bins can take (before compression): two GEN cells a bin."""
    return codec4.PROLOGUE + 2 * k * codec4.CELL_BYTES[codec4.GEN]


def encode_columnar(keys: np.ndarray, values: np.ndarray) -> bytes:
    """The columnar payload of compact bins.

    Parameters
    ----------
    keys : ndarray of int64, shape (k,)
        Occupied bins, strictly increasing, below 2**32.
    values : ndarray of float64, shape (k, 2, 4)
        ``values[bin, class, field]`` (weight, min, max, sum); empty cells ``[0, +inf, -inf, 0]``.

    Returns
    -------
    bytes
        Every cell in the list that holds it exactly: a unit cell (weight 1.0, min and max and sum
        with the same bits) in U32 when its score is a float32 value, else in U64; any other
        non-empty cell in GEN.
    """
    keys = np.asarray(keys, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    bits = values.view(np.uint64)
    lengths, columns = [], []
    for c in range(2):
        w, lo, hi, sm = (values[:, c, f] for f in range(4))
        present = w > 0.0
        unit = present & (w == 1.0) & (bits[:, c, 1] == bits[:, c, 2]) & (bits[:, c, 3] == bits[:, c, 1])
        with np.errstate(over="ignore"):  # a score beyond float32's range is no float32 value
            f32 = lo.astype(np.float32).astype(np.float64).view(np.uint64) == bits[:, c, 1]
        for form, sel in ((codec4.U32, unit & f32), (codec4.U64, unit & ~f32), (codec4.GEN, present & ~unit)):
            lengths.append(int(sel.sum()))
            columns.append(keys[sel].astype("<u4").tobytes())
            if form == codec4.U32:
                columns.append(lo[sel].astype("<f4").tobytes())
            elif form == codec4.U64:
                columns.append(lo[sel].astype("<f8").tobytes())
            else:
                columns.extend(f[sel].astype("<f8").tobytes() for f in (w, lo, hi, sm))
    return np.asarray(lengths, dtype="<u4").tobytes() + b"".join(columns)


def _message(status: int, li: int, i: int, at: int, n: int, need: int, k: int, n_bins: int) -> str:
    where = f"class {li // 3}'s {_LIST_NAMES[li % 3]} cell {i}" if li >= 0 else ""
    if status == codec4.LENGTH:
        if need < 0:
            return f"the payload holds {n} bytes, less than the {codec4.PROLOGUE} of its list lengths"
        return f"the payload holds {n} bytes, its list lengths need {need}"
    if status == codec4.TOO_MANY_CELLS:
        return f"the lists hold more cells than {k} bins can (two a bin)"
    if status == codec4.KEY_NOT_INCREASING:
        return f"bin keys are not increasing inside the grid: {where} repeats or precedes the previous key (payload byte {at})"
    if status == codec4.KEY_OUTSIDE_GRID:
        return f"bin keys are not increasing inside the grid: {where}'s key is beyond the grid (size {n_bins}; payload byte {at})"
    if status == codec4.DUPLICATE_CELL:
        return f"{where}'s key is in another list of the same class (payload byte {at})"
    if status == codec4.BIN_COUNT:
        return f"the lists hold another number of distinct bins than n_bins={k}"
    return f"{where} holds the empty cell [0, +inf, -inf, 0] as a present cell (payload byte {at})"


def _run(buf: np.ndarray, k: int, grid: Grid, source: str | None, keys: np.ndarray, values: np.ndarray,
         state: np.ndarray, fold: bool) -> tuple[bool, BinSummary]:
    sums = np.empty(8, dtype=np.float64)
    counts = np.empty(4, dtype=np.int64)
    status, li, i, at = codec4.decode4(
        buf, k, grid.n_bins, *grid.kernel_params(), REL_TOL, keys, values, state, fold, sums, counts
    )
    if status != codec4.OK:
        _, need = codec4.list_lengths(buf)
        msg = _message(int(status), int(li), int(i), int(at), buf.shape[0], int(need), k, grid.n_bins)
        raise fail(msg, source)
    return bool(counts[3]), _summary(sums, counts)


def decode_columnar(
    stored: bytes | memoryview, k: int, grid: Grid, compressed: bool, source: str | None
) -> tuple[np.ndarray, np.ndarray, BinSummary]:
    """Decode and check ``k`` bins of a columnar payload: as
    :func:`streameval.sketch.io_compact.decode_compact` (the same parameters, returns and
    errors), for the layout of ``docs/sketch-format.md`` §4.2.

    Raises
    ------
    SketchFormatError
        Naming the list, the cell and the payload byte of the first problem.
    """
    buf = _raw_payload(stored, max_columnar_bytes(k), k, compressed, source)
    keys = np.empty(k, dtype=np.int64)
    values = np.empty((k, 2, 4), dtype=np.float64)
    cells_ok, summary = _run(buf, k, grid, source, keys, values, _NO_STATE, False)
    if not cells_ok:
        check_cells(grid, keys, values, source)  # names the cell
        raise fail("a bin's cells are inconsistent", source)  # pragma: no cover - check_cells names it
    return keys, values, summary


def fold_columnar(
    stored: bytes | memoryview, k: int, grid: Grid, compressed: bool, source: str | None, state: np.ndarray
) -> BinSummary:
    """Decode and check ``k`` bins of a columnar payload as :func:`decode_columnar` does, adding
    them into the dense ``state`` (float64 (grid.n_bins, 2, 4)) instead of returning them.

    Raises
    ------
    SketchFormatError
        As :func:`decode_columnar`; ``state`` may then hold part of the file's cells, and the
        caller discards it.
    ValueError
        If ``state`` is not a writable C-ordered float64 array of shape ``(grid.n_bins, 2, 4)``.
    """
    from .io_compact import check_state

    check_state(state, grid)
    buf = _raw_payload(stored, max_columnar_bytes(k), k, compressed, source)
    cells_ok, summary = _run(buf, k, grid, source, _NO_KEYS, _NO_VALUES, state, True)
    if not cells_ok:
        decode_columnar(buf.data, k, grid, False, source)  # raises the message
        raise fail("a bin's cells are inconsistent", source)  # pragma: no cover - decode_columnar raises
    return summary


_NO_KEYS = np.empty(0, dtype=np.int64)
_NO_VALUES = np.empty((0, 2, 4), dtype=np.float64)
_NO_STATE = np.empty((0, 2, 4), dtype=np.float64)
