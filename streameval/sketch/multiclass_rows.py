"""The per-row statistics of a multiclass chunk, as tasks that run beside the column tasks.

Per row: the prediction (``y_pred``, or the argmax), the rank of the true class's score, whether
the scores sum to 1, and the true class's score, whose log loss is summed once the rows are done
(:func:`streameval.kernels.multiclass_dense.row_stats`, then the binary kernel's accurate
probability sums). The sketch's ``confusion`` and ``ranks`` tables receive the rows' weights.

Unweighted rows are counted into tables of the chunk's own, added to the sketch's by
:meth:`RowStats.finish`: they add 1.0, and integer counts are exact in any order, so the tables
hold the same bits as one pass in row order. A chunk of at least :data:`SPLIT_ROWS` such rows is
counted in two halves, two tasks: half-size tasks end the chunk's list of tasks, so the threads
that share it finish together (one whole row task, larger than a column's, left one thread idle
at the end of every chunk). Weighted rows keep one task that adds to the sketch's tables in row
order (the caller must not add to them meanwhile: see :meth:`MulticlassSketch._add_scores`).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from ..kernels import binary as kernels
from ..kernels.multiclass_dense import column_addresses, row_stats

__all__ = ["RowStats", "SPLIT_ROWS"]

SPLIT_ROWS = 1 << 16  # unweighted chunks at least this long are counted in two halves
MAX_SPARE = 3  # true-class score buffers kept for the next chunks (two in flight on a pipeline)


class RowStats:
    """The per-row statistics of one chunk: :attr:`tasks` to run (any thread, any order), then
    :meth:`finish` (once, after every task) for the totals.

    Parameters
    ----------
    cols : list of K contiguous arrays of shape (n,), one dtype (float32 or float64)
        The chunk's score columns, in class order; kept alive until :meth:`finish`.
    labels : ndarray of shape (n,), int64
        True class indices.
    weights : ndarray of shape (n,) or None
    preds : ndarray of shape (n,), int64, or None
        Hard predictions replacing the argmax for the confusion table.
    confusion, ranks : ndarray of shape (K, K), float64
        The sketch's tables, added to in place (by the tasks, or by :meth:`finish`).
    spare : list of float64 arrays, optional
        Buffers for the true-class scores: one at least ``n`` long is taken, and given back by
        :meth:`finish` (the caller's thread only). A fresh 3 MB array per batch cost page
        faults and system time on every batch (see ``multiclass_eval._prepared``).
    """

    def __init__(
        self, cols: list[np.ndarray], labels: np.ndarray, weights: np.ndarray | None, preds: np.ndarray | None,
        confusion: np.ndarray, ranks: np.ndarray, spare: list[np.ndarray] | None = None,
    ) -> None:
        n = labels.shape[0]
        self.cols, self.labels, self.weights, self.preds = cols, labels, weights, preds
        self.confusion, self.ranks = confusion, ranks
        fits = [i for i, b in enumerate(spare or []) if b.shape[0] >= n]
        self._spare = spare
        self._buffer = spare.pop(fits[0]) if spare is not None and fits else np.empty(n)
        self.s_true = self._buffer[:n]
        self.tol = 1e-8 + math.sqrt(float(np.finfo(cols[0].dtype).eps))  # scikit-learn's isclose(sum, 1)
        half = n // 2 if weights is None and n >= SPLIT_ROWS else n
        self.parts = [(0, half)] + ([(half, n)] if half < n else [])
        # Unweighted: tables of their own, added by finish (integer counts: the same bits), so
        # no task writes the sketch's tables while the caller's thread adds an earlier chunk's
        # (chunks overlap on a Pipeline). Weighted: one task adding to them in row order.
        self.direct = weights is not None
        if self.direct:
            self.tables = [(confusion, ranks)]
        else:
            self.tables = [(np.zeros_like(confusion), np.zeros_like(ranks)) for _ in self.parts]
        self.unnormalized = [0] * len(self.parts)
        self.tasks: list[Callable[[], None]] = [functools.partial(self._rows, i) for i in range(len(self.parts))]

    def _rows(self, i: int) -> None:
        a, b = self.parts[i]
        weighted = self.weights is not None
        w = self.weights[a:b] if self.weights is not None else np.empty(0)
        p = self.preds[a:b] if self.preds is not None else np.empty(0, dtype=np.int64)
        addresses, like = column_addresses(self.cols)
        addresses += a * self.cols[0].dtype.itemsize  # the columns from row a on
        confusion, ranks = self.tables[i]
        self.unnormalized[i] = int(row_stats(
            addresses, like, self.labels[a:b], w, weighted, p, self.preds is not None, confusion, ranks,
            self.s_true[a:b], self.tol,
        ))

    def finish(self) -> tuple[int, float, float]:
        """Add the halves' tables (if any) and sum the true-class log loss.

        Returns
        -------
        n_unnormalized : int
            Rows whose scores do not sum to 1 within scikit-learn's tolerance.
        prob_weight, log_loss_sum : float
            The weight of the rows whose true-class score lies in [0, 1], and their weighted
            ``-log(clip(p_true))`` sum (each row a "positive" of the binary kernel's sums).
        """
        if not self.direct:
            for confusion, ranks in self.tables:
                self.confusion += confusion
                self.ranks += ranks
        n = self.labels.shape[0]
        w = self.weights if self.weights is not None else np.empty(0)
        _, w_in, _, logloss = kernels.probability_sums(self.s_true, np.ones(n, dtype=np.uint8), w, self.weights is not None)
        if self._spare is not None and len(self._spare) < MAX_SPARE:
            self._spare.append(self._buffer)
        return sum(self.unnormalized), float(w_in), float(logloss)

    def add_totals(self, counters: dict[str, Any], col: np.ndarray) -> None:
        """:meth:`finish`, and add the chunk's totals to a sketch's ``counters``: these and the
        per-column probability sums ``col`` (K, 4) of the column tasks."""
        unnormalized, w_in, logloss = self.finish()
        c = counters
        c["log_loss_sum"] += logloss
        c["prob_weight"] += w_in
        c["n_unnormalized"] += unnormalized
        for i, name in enumerate(("col_n_outside", "col_prob_weight", "col_brier_sum", "col_log_loss_sum")):
            c[name] += col[:, i]
        c["n_outside"] += int(col[:, 0].sum())
        c["brier_sum"] = float(np.sum(c["col_brier_sum"]))
