"""Bin tables of a multiclass sketch's one-vs-one problems, built in one pass each.

A report's one-vs-one AUC asks for K(K-1) tables (90 at K = 10), each built, used once and
dropped. :func:`pair_table` fills a table's fields straight from the two single-class cell sets
in one compiled merge, without the ``(k, 2, 4)`` cells of
:func:`~streameval.sketch.multiclass_state.binary_layout` in between; the arrays are those of
``BinTable.from_compact(*binary_layout(neg, pos))``, value for value (tested). Measured on the
90 tables of a 10M-row sketch (about 3,300 bins each), same run: 3.5 ms against 32-36 ms.
"""

from __future__ import annotations

import numpy as np

from ..kernels.binary import MAX, MIN, N_FIELDS, SUM, W
from ..kernels.multiclass_tables import pair_rows
from ..metrics.table import BinTable

__all__ = ["pair_table"]


def pair_table(neg: tuple[np.ndarray, np.ndarray], pos: tuple[np.ndarray, np.ndarray]) -> BinTable:
    """The :class:`BinTable` of a binary problem given each class's cells ``(keys, (m, 4))``.

    ``keys`` of each class are ascending and unique; a bin present in one class only has the
    other class empty (weight 0, min ``+inf``, max ``-inf``, sum 0), as in the compact form.
    One compiled merge of the two runs (:func:`streameval.kernels.multiclass_tables.pair_rows`).
    """
    keys, rows = pair_rows(neg[0], neg[1], pos[0], pos[1])
    return BinTable(
        keys=keys,
        pos=rows[N_FIELDS + W], neg=rows[W],
        pos_min=rows[N_FIELDS + MIN], pos_max=rows[N_FIELDS + MAX],
        neg_min=rows[MIN], neg_max=rows[MAX],
        pos_sum=rows[N_FIELDS + SUM], neg_sum=rows[SUM],
    )
