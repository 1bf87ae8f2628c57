"""Folding a version-3 or version-4 payload into a dense state, with every check of a load.

Shared by :func:`streameval.sketch.io.decode` (``fold_into``) and the lean per-file path of
:func:`streameval.sketch.files.merge_files` (:mod:`streameval.sketch.fold_files`), so both refuse
a file with the same message.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..grid import Grid
from .io_checks import NeedBins, check_consistency, fail
from .io_columnar import decode_columnar, fold_columnar, max_columnar_bytes
from .io_compact import BinSummary, decode_compact, fold_compact, max_compact_bytes

__all__ = ["check_room", "check_folded", "fold_checked"]


def check_room(plen: int, columnar: bool, compressed: bool, k: int, source: str | None) -> None:
    """Refuse a stored payload of ``plen`` bytes longer than ``k`` bins can take (zlib's worst-case
    expansion included when ``compressed``).

    Raises
    ------
    SketchFormatError
        Naming the length and ``k``.
    """
    raw_cap = max_columnar_bytes(k) if columnar else max_compact_bytes(k)
    if plen > (raw_cap + (raw_cap >> 10) + 64 if compressed else raw_cap):
        raise fail(f"payload length {plen} is more than {k} bins can take", source)


def fold_checked(
    stored: bytes | memoryview, columnar: bool, compressed: bool, k: int, grid: Grid, counters: dict[str, Any],
    source: str | None, state: np.ndarray,
) -> tuple[float, float]:
    """Decode, check and add the ``k`` bins of a version-4 (``columnar``) or version-3 payload into
    ``state`` (float64 (grid.n_bins, 2, 4)), then check the counters against them.

    Parameters
    ----------
    stored : bytes or memoryview
        The payload as stored (a zlib stream when ``compressed``).
    columnar, compressed : bool
        Version 4 (else 3); flag bit 0.
    k : int
        The header's ``n_bins``.
    grid : Grid
        The file's grid, the state's.
    counters : dict
        The file's counters, checked (``io_header._counters``).
    source : str, optional
        File name for messages.
    state : ndarray
        The dense state the cells are added to.

    Returns
    -------
    (float, float)
        The bins' negative and positive weights.

    Raises
    ------
    SketchFormatError
        As a load of the file; ``state`` may then hold part of its cells.
    """
    fold = fold_columnar if columnar else fold_compact
    summary = fold(stored, k, grid, compressed, source, state)
    return check_folded(summary, stored, columnar, compressed, k, grid, counters, source)


def check_folded(
    summary: BinSummary, stored: bytes | memoryview, columnar: bool, compressed: bool, k: int, grid: Grid,
    counters: dict[str, Any], source: str | None,
) -> tuple[float, float]:
    """The counter checks of :func:`fold_checked` on the decoder's ``summary`` of the payload
    (the bins decoded again from ``stored`` where a check needs them): the bins' negative and
    positive weights.

    Raises
    ------
    SketchFormatError
        As a load of the file.
    """
    try:
        check_consistency(None, counters, source, summary)
    except NeedBins:  # rare: decode the bins to name the problem or decide exactly
        unpack = decode_columnar if columnar else decode_compact
        check_consistency(unpack(stored, k, grid, compressed, source)[1], counters, source, summary)
    return summary.t0, summary.t1
