"""The one-vs-one tables built by one compiled merge equal those of the NumPy layout."""

from __future__ import annotations

import numpy as np
import pytest

from streameval import MulticlassSketch
from streameval.metrics.table import BinTable
from streameval.sketch.multiclass_state import binary_layout
from streameval.sketch.multiclass_tables import pair_table

FIELDS = ("keys", "pos", "neg", "pos_min", "pos_max", "neg_min", "neg_max", "pos_sum", "neg_sum")


def _cells(rng: np.random.Generator, n: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    keys = np.sort(rng.choice(top, size=n, replace=False)).astype(np.int64)
    lo = rng.random(n)
    hi = lo + rng.random(n)
    w = rng.integers(1, 5, n).astype(np.float64)
    return keys, np.column_stack([w, lo, hi, w * (lo + hi) / 2])


def _same(a: BinTable, b: BinTable) -> None:
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f


@pytest.mark.parametrize("n_neg,n_pos", [(0, 0), (0, 5), (7, 0), (1, 1), (50, 40), (300, 2000)])
def test_pair_table_equals_the_numpy_layout(n_neg, n_pos):
    rng = np.random.default_rng(n_neg * 7 + n_pos)
    top = max(4, 2 * (n_neg + n_pos))
    neg, pos = _cells(rng, n_neg, top), _cells(rng, n_pos, top)  # overlapping and disjoint keys
    _same(pair_table(neg, pos), BinTable.from_compact(*binary_layout(neg, pos)))


def test_one_vs_one_tables_of_a_sketch_equal_the_layout_and_bound_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    k = 6
    y = rng.integers(0, k, 20_000)
    p = rng.dirichlet(np.ones(k), y.shape[0])
    s = MulticlassSketch(classes=range(k)).update(y, p)
    for a in range(k):
        for b in range(k):
            if a != b:
                _same(s._table(("ovo", a, b)), BinTable.from_compact(*binary_layout(*s._pair_cells(a, b))))
    ovo = s.roc_auc("ovo")
    ref = roc_auc_score(y, p, multi_class="ovo")
    assert ovo.lower <= ref <= ovo.upper and ovo.width < 1e-2


def test_per_class_values_are_kept_until_the_sketch_changes_and_warn_every_time():
    """roc_auc / average_precision per class are computed once per state (a report asks for the
    macro, weighted and per-class values): every call still warns about a class without rows, as
    scikit-learn does, and an update (or a merge) gives fresh values that match scikit-learn."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    from streameval.errors import UndefinedMetricWarning

    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 500)  # class 2 has no rows yet
    def discrete(n: int) -> np.ndarray:  # few distinct values: exact results
        c = rng.integers(1, 6, (n, 3)).astype(np.float64)
        return c / c.sum(axis=1, keepdims=True)

    p = discrete(500)
    s = MulticlassSketch(classes=[0, 1, 2]).update(y, p)
    for _ in range(2):
        with pytest.warns(UndefinedMetricWarning):
            first = s.roc_auc("ovr", None)
        with pytest.warns(UndefinedMetricWarning):
            s.average_precision(None)
    assert np.isnan(float(first[2]))
    y2 = np.r_[y, np.full(100, 2)]
    p2 = np.r_[p, discrete(100)]
    for t in (s.copy().update(y2[500:], p2[500:]), s.merge(MulticlassSketch(classes=[0, 1, 2]).update(y2[500:], p2[500:]))):
        onehot = np.eye(3)[y2]
        aucs = [float(v) for v in t.roc_auc("ovr", None)]
        aps = [float(v) for v in t.average_precision(None)]
        assert np.allclose(aucs, [roc_auc_score(onehot[:, j], p2[:, j]) for j in range(3)], atol=1e-12, rtol=0)
        assert np.allclose(aps, [average_precision_score(onehot[:, j], p2[:, j]) for j in range(3)], atol=1e-12, rtol=0)
        assert float(t.roc_auc("ovr", "weighted")) == pytest.approx(roc_auc_score(y2, p2, multi_class="ovr", average="weighted"), abs=1e-12)
