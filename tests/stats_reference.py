"""Reference implementations and published data for the tests of ``streameval.stats``.

The references work on raw rows, by definitions written for clarity, not speed: the DeLong
placements by an O(P x N) pair matrix, weights by repeating rows.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import streameval


# Small deterministic discrete data sets (113 rows, like pROC's aSAH example): "s100b"-like
# two-decimal scores with ties, "ndka"-like wide-range scores, "wfns"-like integer grades 1..5.
# pROC's published aSAH values were checked by hand during development; the data set itself is
# not committed (data files from other repositories stay out of this one).
def asah(marker: str) -> tuple[np.ndarray, np.ndarray]:
    """Labels and one marker's values of a deterministic 113-row discrete data set."""
    i = np.arange(113)
    y = ((i * 37 + 11) % 113 < 41).astype(np.int8)
    u = ((i * 53 + 7) % 101) / 100.0
    if marker == "s100b":
        x = np.round(0.05 + 0.4 * u + 0.2 * y * ((i % 3) > 0), 2)
    elif marker == "ndka":
        x = np.round(3 + 60 * u * u + 9 * y * ((i % 4) > 0), 2)
    else:
        x = np.clip(np.round(1 + 3 * u + 1.5 * y), 1, 5)
    return y, np.asarray(x, dtype=np.float64)


# Grids with every distinct value in its own bin (two decimals; grades 1..5).
ASAH_GRIDS = {
    "s100b": streameval.LinearGrid(0, 5, 1000),
    "ndka": streameval.LinearGrid(0, 500, 100_000),
    "wfns": streameval.LinearGrid(0, 10, 20),
}


def asah_table(marker: str) -> streameval.metrics.BinTable:
    y, x = asah(marker)
    return streameval.BinarySketch(ASAH_GRIDS[marker]).update(y, x).table()


def expand(y: np.ndarray, s: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Rows repeated by their integer weights (the frequency-weight reading)."""
    if w is None:
        return y, s
    reps = np.asarray(w).astype(np.int64)
    assert np.all(reps == w), "reference weights must be integers"
    return np.repeat(y, reps), np.repeat(s, reps)


def delong_ref(y: np.ndarray, s: np.ndarray, w: np.ndarray | None = None) -> tuple[float, float]:
    """(AUC, DeLong variance) from raw rows: pair matrix psi = 1 (pos > neg), 1/2 (tie), 0."""
    y, s = expand(y, s, w)
    pos, neg = s[y == 1], s[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    auc = float(psi.mean())
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    m, n = pos.size, neg.size
    s10 = float(np.sum((v10 - auc) ** 2)) / (m - 1)
    s01 = float(np.sum((v01 - auc) ** 2)) / (n - 1)
    return auc, s10 / m + s01 / n


@functools.lru_cache(maxsize=None)
def z_two_sided(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / 2))


def normal_ci(center: float, se: float, level: float = 0.95) -> tuple[float, float]:
    """``center +/- z se`` clipped to [0, 1], as pROC's ci.auc."""
    z = z_two_sided(level)
    return max(center - z * se, 0.0), min(center + z * se, 1.0)


def hm_var_ref(a: float, na: float, nn: float) -> float:
    """Hanley & McNeil (1982), equation 2, written out."""
    q1 = a / (2 - a)
    q2 = 2 * a * a / (1 + a)
    return (a * (1 - a) + (na - 1) * (q1 - a * a) + (nn - 1) * (q2 - a * a)) / (na * nn)


def random_rows(rng: np.random.Generator, n: int, weighted: bool = False):
    """Continuous scores in (0, 1) with a random shift between classes; optional integer weights."""
    y = (rng.random(n) < rng.uniform(0.15, 0.85)).astype(np.int8)
    y[:2], y[2:4] = 1, 0  # at least two rows of each class
    s = 1 / (1 + np.exp(-(rng.normal(0, 1.5, n) + rng.uniform(-1, 3) * y)))
    w = rng.integers(1, 4, n).astype(np.float64) if weighted else None
    return y, s, w


def class_totals(y: np.ndarray, w: np.ndarray | None) -> tuple[float, float]:
    """(P, N): total weight of positives and of negatives."""
    ww = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    return float(ww[y == 1].sum()), float(ww[y == 0].sum())


def close(a: float, b: float, tol: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
