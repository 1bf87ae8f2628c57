"""Regression tests for the silent-wrong-answer traps and scikit-learn conventions (issue 15).

Each test compares with scikit-learn (or with a brute-force count over the raw rows) on the case
that used to go wrong.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

import streameval
from streameval import BinarySketch, LinearGrid
from streameval.report import WIDE_BOUNDS, Report


def _discrete(seed: int = 0, n: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    s = np.round(np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1), 2)
    return y, s


@pytest.mark.parametrize("rule", [">=", ">"])
@pytest.mark.parametrize("t", [0.0, 0.37, 0.5, 0.505, 1.0, -3.0, 7.0])
def test_confusion_under_both_threshold_rules_matches_scikit_learn(rule, t):
    y, s = _discrete()
    c = BinarySketch().update(y, s).confusion(t, positive_if=rule)
    pred = s >= t if rule == ">=" else s > t
    tn, fp, fn, tp = skm.confusion_matrix(y, pred, labels=[False, True]).ravel()
    assert (c.tp, c.fp, c.fn, c.tn) == (tp, fp, fn, tn)
    assert c.exact and c.positive_if == rule and c.requested_threshold == t


def test_strict_rule_thresholds_select_the_same_rows():
    y, s = _discrete(1)
    sk = BinarySketch().update(y, s)
    for metric in ("f1", "mcc", "accuracy"):
        ge = sk.best_threshold(metric)
        gt = sk.best_threshold(metric, positive_if=">")
        assert np.array_equal(s >= ge.threshold, s > gt.threshold)
        assert gt.value == ge.value and gt.confusion.tp == ge.confusion.tp
        assert gt.threshold in set(s.tolist())  # stated as a real score: the largest one left out
    for get in (lambda **k: sk.ks_statistic(**k), lambda **k: sk.equal_error_rate(**k),
                lambda **k: sk.threshold_at(recall=0.8, **k)):
        ge, gt = get(), get(positive_if=">")
        assert np.array_equal(s >= ge.threshold, s > gt.threshold)
    fpr, tpr, thr = sk.roc_curve(positive_if=">")
    for f, r, x in zip(fpr, tpr, thr, strict=True):
        pred = s > x
        assert r == (pred & y).sum() / y.sum() and f == (pred & ~y).sum() / (~y).sum()
    with pytest.raises(ValueError, match="positive_if"):
        sk.confusion(0.5, positive_if="=>")


def test_f_beta_infinite_beta_is_recall():
    y, s = _discrete(2)
    sk = BinarySketch().update(y, s)
    c = sk.confusion(0.5)
    pred = s >= 0.5
    assert c.f_beta(math.inf) == pytest.approx(skm.fbeta_score(y, pred, beta=math.inf), abs=1e-15)
    assert c.f_beta(math.inf) == pytest.approx(skm.recall_score(y, pred), abs=1e-15)
    assert c.f_beta(0.0) == pytest.approx(skm.precision_score(y, pred), abs=1e-15)
    r = sk.best_threshold("f_beta", beta=math.inf)
    assert r.value.value == 1.0  # recall is maximal (1) ...
    assert r.threshold == s[y].min()  # ... first at the lowest positive score
    with pytest.raises(ValueError, match="beta"):
        sk.best_threshold("f_beta", beta=-1.0)
    with pytest.raises(ValueError, match="beta"):
        c.f_beta(math.nan)


def test_wide_bounds_get_a_note_that_names_the_grid_option():
    rng = np.random.default_rng(3)
    y = rng.random(20000) < 0.2
    logits = rng.normal(0, 3, y.size) + 1.5 * y
    coarse = Report.from_sketch(BinarySketch(LinearGrid(0, 1, 100)).update(y, logits))
    assert coarse.metrics["roc_auc"]["upper"] - coarse.metrics["roc_auc"]["lower"] > WIDE_BOUNDS
    assert any("--grid" in n and "ROC AUC" in n for n in coarse.notes)
    fine = Report.from_sketch(BinarySketch().update(y, logits))  # the default grid has tails
    assert fine.metrics["roc_auc"]["upper"] - fine.metrics["roc_auc"]["lower"] < 1e-3
    assert not any("binning bounds" in n for n in fine.notes)
    lo, hi = fine.metrics["roc_auc"]["lower"], fine.metrics["roc_auc"]["upper"]
    assert lo - 1e-12 <= skm.roc_auc_score(y, logits) <= hi + 1e-12


def test_report_states_the_rule():
    y, s = _discrete(4)
    r = streameval.evaluate({"s": s, "y": y.astype(np.int8)}, score="s", label="y", thresholds=[0.5],
                            positive_if=">")
    assert r.provenance["positive_if"] == ">"
    c = r.confusion[0]
    assert c["positive_if"] == ">" and c["tp"] == int(((s > 0.5) & y).sum())
    assert "score > threshold" in r.to_text(width=120)
    with pytest.raises(ValueError, match="positive_if"):
        streameval.evaluate({"s": s, "y": y.astype(np.int8)}, score="s", label="y", positive_if="gt")


def test_log_loss_and_brier_match_scikit_learn_on_saturated_float32():
    y = np.array([0, 1, 0, 1] * 10)
    s = np.array([1.0, 0.0, 0.25, 1.0] * 10, dtype=np.float32)
    sk = BinarySketch().update(y, s)
    # widened to float64 first: equal to scikit-learn on the float64 values (documented difference
    # from scikit-learn on float32 input, which clips at float32's epsilon)
    assert sk.log_loss() == pytest.approx(skm.log_loss(y, s.astype(np.float64)), rel=1e-12)
    assert sk.brier_score() == pytest.approx(skm.brier_score_loss(y, s.astype(np.float64)), rel=1e-12)


def test_no_warning_noise_on_a_clean_report():
    y, s = _discrete(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Report.from_sketch(BinarySketch().update(y, s), thresholds=[0.5])


def test_estimate_behaves_as_its_value():
    auc = BinarySketch().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]).roc_auc()
    assert auc > 0.7 and auc >= 0.75 and auc < 0.8 and auc <= 0.75 and auc == 0.75 and auc != 0.7
    assert round(auc, 1) == 0.8 and abs(auc - 0.5) == pytest.approx(0.25) and 2 * auc == 1.5 and 1 - auc == 0.25
    assert bool(np.isclose(auc, 0.75)) and float(np.asarray(auc)) == 0.75 and f"{auc:.2f}" == "0.75"
    assert (auc.lower, auc.upper, auc.exact) == (0.75, 0.75, True)
    assert auc == streameval.Estimate(0.75, 0.75, 0.75) and len({auc, streameval.Estimate(0.75, 0.75, 0.75)}) == 1
    assert sorted([auc, streameval.Estimate(0.5, 0.4, 0.6)], key=float)[0].value == 0.5


def test_more_threshold_objectives_equal_a_brute_force_search():
    y, s = _discrete(11, 3000)
    sk = BinarySketch().update(y, s)
    cands = np.r_[np.unique(s), np.inf]

    def brute(f):
        vals = []
        for t in cands:
            p = s >= t
            tp, fp = (p & y).sum(), (p & ~y).sum()
            fn, tn = y.sum() - tp, (~y).sum() - fp
            vals.append(f(tp, fp, fn, tn))
        return np.nanmax(vals)

    def prec(tp, fp):
        return tp / (tp + fp) if tp + fp else 1.0

    checks = {
        "g_mean": lambda tp, fp, fn, tn: np.sqrt(tp / (tp + fn) * tn / (tn + fp)),
        "fowlkes_mallows": lambda tp, fp, fn, tn: np.sqrt((tp / (tp + fp) if tp + fp else 0.0) * tp / (tp + fn)),
        "roc_closest": lambda tp, fp, fn, tn: -np.hypot(fp / (fp + tn), 1 - tp / (tp + fn)),
        "pr_closest": lambda tp, fp, fn, tn: -np.hypot(1 - prec(tp, fp), 1 - tp / (tp + fn)),
    }
    for name, f in checks.items():
        best = brute(f)
        got = sk.best_threshold(name).value.value
        assert got == pytest.approx(abs(best) if name.endswith("closest") else best, abs=1e-12), name
    # a callable objective, and expected cost at a deployment prevalence
    r = sk.best_threshold(lambda tpr, fpr, **_: tpr - 2 * fpr)
    assert r.value.value == pytest.approx(brute(lambda tp, fp, fn, tn: tp / (tp + fn) - 2 * fp / (fp + tn)), abs=1e-12)
    c = sk.best_threshold("cost", cost_fp=1, cost_fn=20, prevalence=0.01)
    ref = -brute(lambda tp, fp, fn, tn: -(1 * 0.99 * fp / (fp + tn) + 20 * 0.01 * fn / (fn + tp)))
    assert c.value.value == pytest.approx(ref, abs=1e-12)
    conf = sk.confusion(0.5)
    assert conf.g_mean == pytest.approx(np.sqrt(conf.recall * conf.specificity))
    assert conf.fowlkes_mallows == pytest.approx(np.sqrt(conf.precision * conf.recall))


def test_relative_error_reduction_and_trapezoid_name():
    from streameval.stats import relative_error_reduction

    y, s = _discrete(12)
    good = BinarySketch().update(y, s)
    base = BinarySketch().update(y, np.full(s.size, y.mean()))
    rer = relative_error_reduction(good, base, "log_loss")
    expected = 1 - skm.log_loss(y, s) / skm.log_loss(y, np.full(s.size, y.mean()))
    assert rer.value == pytest.approx(expected, abs=1e-12) and rer.exact
    assert relative_error_reduction(good, base, "roc_auc").value == pytest.approx(
        (0.5 - (1 - skm.roc_auc_score(y, s))) / 0.5, abs=1e-12)
    assert good.pr_auc_trapezoid() == good.pr_auc()
