"""The field layout of a sketch cell, without the compiled kernels that use it.

A cell is four float64 fields ``[weight, min, max, score_sum]`` (:mod:`.binary` describes the
dense and compact states built of them). Code that only reads cells (the store, the report, the
metric tables) takes the constants from here, so it does not import Numba.
"""

from __future__ import annotations

__all__ = ["W", "MIN", "MAX", "SUM", "N_FIELDS", "LOG_LOSS_EPS"]

W, MIN, MAX, SUM = 0, 1, 2, 3
"""Positions of a cell's weight, smallest score, largest score and score sum."""
N_FIELDS = 4
"""Fields per cell."""
LOG_LOSS_EPS = 2.0**-52
"""Probabilities are clipped to ``[EPS, 1 - EPS]`` for the log loss, as scikit-learn does for
float64 (``numpy.finfo(numpy.float64).eps``)."""
