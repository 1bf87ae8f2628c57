"""What a :class:`~streameval.sketch.sketchset.SketchSet` says of one group's scores before its
labels arrive: the score histogram (for drift) and the estimated performance of the unlabelled
rows under the calibration assumption (CBPE). Apart from the set's state so that each module
holds one idea; the set's methods of the same names call these."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .sketchset import UNLABELLED, SketchSet

if TYPE_CHECKING:
    from .binary import BinarySketch

__all__ = ["score_histogram", "unlabelled_estimate"]


def score_histogram(ss: SketchSet, gid: int, labelled: bool | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(bins, weight, min, max)`` of group ``gid``'s scores, bins ascending (see
    :meth:`SketchSet.score_histogram`); ``labelled=None`` counts every row."""
    code, cell = ss._group_cells(gid)
    cls = code % 3
    keep = np.ones(code.shape[0], bool) if labelled is None else ((cls != UNLABELLED) == labelled)
    bins, inverse = np.unique(code[keep] // 3, return_inverse=True)
    inverse = inverse.reshape(-1)
    lo = np.full(bins.shape[0], np.inf)
    hi = np.full(bins.shape[0], -np.inf)
    np.minimum.at(lo, inverse, cell[keep, 1])
    np.maximum.at(hi, inverse, cell[keep, 2])
    return bins, np.bincount(inverse, weights=cell[keep, 0], minlength=bins.shape[0]), lo, hi


def unlabelled_estimate(ss: SketchSet, gid: int) -> BinarySketch:
    """The estimated (CBPE) sketch of group ``gid``'s unlabelled rows (see
    :meth:`SketchSet.unlabelled_estimate`, which documents the assumption).

    Raises
    ------
    ValueError
        If an unlabelled score lies outside [0, 1] (not a probability).
    """
    from ..kernels.binary import empty_values
    from .binary import BinarySketch

    code, cell = ss._group_cells(gid)
    mine = (code % 3) == UNLABELLED
    code, cell = code[mine], cell[mine]
    if cell.shape[0] and (cell[:, 1].min() < 0 or cell[:, 2].max() > 1):
        raise ValueError("estimated performance needs probabilities; some unlabelled scores lie outside [0, 1]")
    bins = code // 3
    values = empty_values(bins.shape[0])
    pos = np.clip(cell[:, 3], 0.0, cell[:, 0])  # expected positive weight: the score sum
    mean = cell[:, 3] / cell[:, 0]  # cells hold positive weight only
    for c, weight in ((1, pos), (0, cell[:, 0] - pos)):
        has = weight > 0
        values[has, c, 0] = weight[has]
        values[has, c, 1] = cell[has, 1]
        values[has, c, 2] = cell[has, 2]
        values[has, c, 3] = weight[has] * mean[has]
    out = BinarySketch(ss.grid)
    occupied = (values[:, :, 0] > 0).any(axis=1)
    out._keys, out._values = bins[occupied], values[occupied]
    out.counters.update({"n_rows": int(ss._ctr[gid, 4]), "weighted": True})
    return out
