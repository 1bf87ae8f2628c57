"""Named score distributions for tests: a small library crossed with sizes."""

from __future__ import annotations

import numpy as np


def make_data(kind: str, n: int, seed: int = 0, prevalence: float = 0.3, weighted: bool = False):
    """Labels (int8), scores (float64) and optional weights for a named distribution.

    Kinds: "continuous" (logit-normal, distinct scores), "discrete" (rounded to 2 decimals: heavy
    ties), "coarse" (5 distinct values), "rare" (0.5% positives near 1e-4), "wide" (normal scores,
    many outside [0, 1]), "int" (integer scores 300..850).
    """
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < (0.005 if kind == "rare" else prevalence)).astype(np.int8)
    if kind == "rare":
        logit = np.log(1e-4 / (1 - 1e-4)) + rng.normal(0, 1, n) + 2.5 * y
        s = 1 / (1 + np.exp(-logit))
    elif kind == "wide":
        s = rng.normal(0.5 + 0.5 * y, 1.0, n)
    elif kind == "int":
        s = np.round(rng.normal(575.0 + 60.0 * y, 80, n)).clip(300, 850)
    else:
        s = 1 / (1 + np.exp(-(rng.normal(0, 1.5, n) + 1.2 * y)))
        if kind == "discrete":
            s = np.round(s, 2)
        elif kind == "coarse":
            s = np.round(s * 4) / 4
    w = rng.exponential(1.0, n) if weighted else None
    return y, s, w
