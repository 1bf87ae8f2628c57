"""The scikit-learn-shaped functions equal scikit-learn's on discrete scores, for drop-in use."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from streameval import metrics as sem


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weighted", [False, True])
def test_drop_in_functions_equal_scikit_learn(seed, weighted):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 3000))
    y = (rng.random(n) < rng.uniform(0.05, 0.6)).astype(int)
    s = np.round(np.clip(rng.normal(0.4 + 0.2 * y, 0.25), 0, 1), int(rng.integers(1, 4)))
    w = rng.uniform(0.1, 3, n) if weighted else None
    pred = (s >= 0.5).astype(int)
    for name in ("roc_auc_score", "average_precision_score", "log_loss", "brier_score_loss"):
        assert getattr(sem, name)(y, s, sample_weight=w) == pytest.approx(
            getattr(skm, name)(y, s, sample_weight=w), abs=1e-12), name
    assert sem.roc_auc_score(y, s, sample_weight=w, max_fpr=0.2) == pytest.approx(
        skm.roc_auc_score(y, s, sample_weight=w, max_fpr=0.2), abs=1e-12)
    for name in ("precision_score", "recall_score", "f1_score", "accuracy_score", "balanced_accuracy_score",
                 "matthews_corrcoef"):
        assert getattr(sem, name)(y, pred, sample_weight=w) == pytest.approx(
            getattr(skm, name)(y, pred, sample_weight=w), abs=1e-12), name
    assert sem.fbeta_score(y, pred, beta=2.0, sample_weight=w) == pytest.approx(
        skm.fbeta_score(y, pred, beta=2.0, sample_weight=w), abs=1e-12)
    np.testing.assert_allclose(sem.confusion_matrix(y, pred, sample_weight=w),
                               skm.confusion_matrix(y, pred, sample_weight=w), atol=1e-9)
    for mine, theirs in zip(sem.roc_curve(y, s, sample_weight=w), skm.roc_curve(y, s, sample_weight=w), strict=True):
        np.testing.assert_allclose(mine, theirs, atol=1e-12)
    for mine, theirs in zip(sem.precision_recall_curve(y, s, sample_weight=w),
                            skm.precision_recall_curve(y, s, sample_weight=w), strict=True):
        np.testing.assert_allclose(mine, theirs, atol=1e-12)


def test_predict_proba_columns_string_labels_and_estimates():
    rng = np.random.default_rng(9)
    y = np.where(rng.random(500) < 0.3, "fraud", "ok")
    p = np.round(rng.random(500), 2)
    proba = np.c_[p, 1 - p]  # predict_proba's columns follow the sorted labels: "fraud", then "ok"
    assert sem.roc_auc_score(y, proba, pos_label="fraud") == pytest.approx(
        skm.roc_auc_score(y == "fraud", p), abs=1e-12)
    assert sem.roc_auc_score(y, proba, pos_label="ok") == pytest.approx(
        skm.roc_auc_score(y == "ok", 1 - p), abs=1e-12)
    e = sem.roc_auc_score(y == "fraud", rng.random(500), return_estimate=True)
    assert e.lower <= e.value <= e.upper
    with pytest.raises(ValueError):
        sem.log_loss([0, 1], [0.5, 1.5])


@pytest.mark.parametrize("pos_label", ["a", "b"])
def test_two_column_probabilities_take_the_positive_class_column_as_scikit_learn(pos_label):
    # (n, 2) probabilities are predict_proba's: column j is the j-th sorted label, whichever is positive
    rng = np.random.default_rng(4)
    y = np.where(rng.random(400) < 0.4, "a", "b")
    p_a = np.round(np.clip(np.where(y == "a", 0.7, 0.3) + rng.normal(0, 0.2, 400), 0.01, 0.99), 2)
    proba = np.c_[p_a, 1 - p_a]
    col = 0 if pos_label == "a" else 1
    assert sem.log_loss(y, proba, pos_label=pos_label) == pytest.approx(skm.log_loss(y, proba), abs=1e-12)
    assert sem.brier_score_loss(y, proba, pos_label=pos_label) == pytest.approx(
        skm.brier_score_loss(y, proba[:, col], pos_label=pos_label), abs=1e-12)
    assert sem.roc_auc_score(y, proba, pos_label=pos_label) == pytest.approx(
        skm.roc_auc_score(y == pos_label, proba[:, col]), abs=1e-12)
    only = np.full(50, "b" if pos_label == "a" else "a")  # negatives only: pos_label's place decides
    q = proba[:50]
    assert sem.log_loss(only, q, pos_label=pos_label) == pytest.approx(
        skm.log_loss(only, q, labels=["a", "b"]), abs=1e-12)
