"""Reading a sketch set's cells a range of groups at a time.

A set built from a large sliced log keeps its one-row cells compact (a code and a score, 16 bytes;
:mod:`streameval.kernels.pairsort`), and :meth:`SketchSet.cell_columns` turns all of them into full
cells (40 bytes) at once: at 100M rows in 30,000 groups that is ~94M cells, gigabytes that a table
of per-group metrics does not need at once. :func:`cell_batches` expands one range of groups at a
time, so memory holds the compact set and one batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import numpy as np

from ..lazy import lazy_module
from .sketchset import SketchSet

if TYPE_CHECKING:
    from ..kernels import pairsort
else:  # compiled, loaded on first use (only sets holding one-row cells apart need it)
    pairsort = lazy_module("streameval.kernels.pairsort")

__all__ = ["cell_batches", "store_batches"]

CellBatch = tuple[int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def cell_batches(ss: SketchSet, max_cells: int) -> Iterator[CellBatch]:
    """The set's cells in consecutive group ranges ``[g0, g1)`` of about ``max_cells`` cells each.

    Parameters
    ----------
    ss : SketchSet
    max_cells : int
        Cells per batch aimed at (a group is never split: a batch holds at least one group).

    Yields
    ------
    (g0, g1, group, bin, class, cells)
        ``group`` (int64 (k,)) counts from ``g0``; ``bin``, ``class`` and ``cells`` (float64 (k, 4))
        as :meth:`SketchSet.cell_columns`, whose rows for groups ``[g0, g1)`` these are, in the same
        order. A set without groups yields one empty batch ``(0, 0, ...)``. The arrays are fresh
        or views of the set's own: do not modify them.
    """
    ranges = _group_ranges(ss, max_cells)  # consolidates: the set's tables are read after
    one = ss._one
    span = 3 * ss.grid.n_bins
    for g0, g1 in ranges:
        lo, hi = g0 * span, g1 * span
        if one is not None:
            code, cell = pairsort.group_slice(one[0], one[1], ss._code, ss._cell, lo, hi)
        else:
            a, b = np.searchsorted(ss._code, [lo, hi])
            code, cell = ss._code[a:b], ss._cell[a:b]
        rest = code - lo
        group = rest // span
        rest = rest % span
        yield g0, g1, group, rest // 3, rest % 3, cell


def store_batches(ss: SketchSet, max_cells: int) -> Iterator[tuple[int, int, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]]:
    """The set's cells in the group ranges of :func:`cell_batches`, as the columns a store writes.

    Yields
    ------
    (g0, g1, full, single)
        ``full`` is ``(group, bin, class, weight, min, max, score_sum)`` (int32, int32, int8 and
        four float64 arrays) of the batch's cells other than single ones; ``single`` is
        ``(group, bin, class, score)`` (int32, int32, int8, float64) of its *single* cells, those
        of weight 1 whose min, max and score sum are one value (one row's cell: almost every cell
        of a finely sliced log). Groups are the set's indices, in ``[g0, g1)``; each part is in
        (group, bin, class) order, and together they are the cells :func:`cell_batches` gives for
        the range. Made in one compiled pass (:func:`streameval.kernels.pairsort.store_columns`).
    """
    ranges = _group_ranges(ss, max_cells)  # consolidates: the set's tables are read after
    one = ss._one
    span = 3 * ss.grid.n_bins
    if one is None:
        one = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64))
    for g0, g1 in ranges:
        full, single = pairsort.store_columns(one[0], one[1], ss._code, ss._cell, g0 * span, g1 * span, span)
        yield g0, g1, full, single


def _group_ranges(ss: SketchSet, max_cells: int) -> list[tuple[int, int]]:
    """Consecutive group ranges ``[g0, g1)`` of about ``max_cells`` cells each (one empty range
    ``(0, 0)`` for a set without groups); the set is consolidated first."""
    ss._consolidate()
    n = len(ss)
    span = 3 * ss.grid.n_bins
    one = ss._one
    bounds = np.arange(n + 1, dtype=np.int64) * span
    ends = np.searchsorted(ss._code, bounds[1:])
    if one is not None:
        ends = ends + np.searchsorted(one[0], bounds[1:])
    total = int(ends[-1]) if n else 0
    cuts = np.unique(np.searchsorted(ends, np.arange(max_cells, total, max_cells)) + 1)
    edges = [0] + [int(c) for c in cuts if 0 < c < n] + [n]
    return list(zip(edges[:-1], edges[1:], strict=True))
