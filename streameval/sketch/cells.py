"""Score cells: ``code -> [weight, min, max, score_sum]`` tables, built from rows, reduced, stored.

A cell table is a sorted int64 code array (whatever the caller packs into it: for a
:class:`~streameval.sketch.sketchset.SketchSet`, ``(group * n_bins + bin) * 3 + class``) and a ``(k, 4)``
float64 array. This module combines tables (sort and ``reduceat``) and encodes the cells of one
histogram as bytes (the store's ``unlabelled`` column). Rows become cells in the compiled
:mod:`streameval.kernels.grouped`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["reduce_cells", "encode_cells", "decode_cells"]

_CELLS_MAGIC = b"SEVCELL1"


def encode_cells(bins: np.ndarray, cells: np.ndarray) -> bytes:
    """A score histogram as bytes: magic ``SEVCELL1``, uint64 count k, k int64 bin indices
    (strictly increasing), k x 4 float64 ``[weight, min, max, score_sum]``; little-endian."""
    k = int(bins.shape[0])
    out: bytes = (_CELLS_MAGIC + np.uint64(k).astype("<u8").tobytes() + np.asarray(bins, "<i8").tobytes()
                  + np.asarray(cells, "<f8").tobytes())
    return out


def decode_cells(data: bytes, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`encode_cells`, checked: bins increasing and inside the grid, weights
    finite and positive, ``min <= max``.

    Raises
    ------
    SketchFormatError
        If the bytes are not such a block.
    """
    from ..errors import SketchFormatError

    head = len(_CELLS_MAGIC) + 8
    if len(data) < head or data[: len(_CELLS_MAGIC)] != _CELLS_MAGIC:
        raise SketchFormatError("not a streameval cell block (bad magic)")
    k = int(np.frombuffer(data[len(_CELLS_MAGIC):head], "<u8")[0])
    if k > n_bins or len(data) != head + 40 * k:
        raise SketchFormatError(f"cell block of {len(data)} bytes does not hold the {k} cells it declares")
    bins = np.frombuffer(data, "<i8", k, head).astype(np.int64)
    cells = np.frombuffer(data, "<f8", 4 * k, head + 8 * k).reshape(k, 4).astype(np.float64)
    ok = (k == 0 or (bins[0] >= 0 and bins[-1] < n_bins)) and bool(np.all(np.diff(bins) > 0))
    ok = ok and bool(np.all(np.isfinite(cells[:, 0]) & (cells[:, 0] > 0) & (cells[:, 1] <= cells[:, 2])))
    if not ok:
        raise SketchFormatError("cell block is inconsistent (bins out of order or range, bad weights or min > max)")
    return bins, cells


def reduce_cells(code: np.ndarray, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Combine cells with equal codes (weights and sums add, min/max combine), sorted by code."""
    if code.shape[0] == 0:
        return code.astype(np.int64), cell.reshape(0, 4)
    order = np.argsort(code, kind="stable")
    code, cell = code[order], cell[order]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    if starts.shape[0] == code.shape[0]:
        return code, cell
    out = np.empty((starts.shape[0], 4))
    out[:, 0] = np.add.reduceat(cell[:, 0], starts)
    out[:, 1] = np.minimum.reduceat(cell[:, 1], starts)
    out[:, 2] = np.maximum.reduceat(cell[:, 2], starts)
    out[:, 3] = np.add.reduceat(cell[:, 3], starts)
    return code[starts], out
