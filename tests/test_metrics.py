"""Every metric against independent references.

- Discrete scores (every distinct value in its own bin): equal to scikit-learn to 1e-12, arrays
  identical.
- Continuous scores: scikit-learn's (exact) value inside the reported interval; Hypothesis drives
  heavy ties, one-element classes, weights and out-of-range scores.
- ROC-AUC against a brute-force O(n^2) pair count.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sample_data import make_data
from sklearn import metrics as skm

from streameval import BinarySketch, FloatGrid, InexactThresholdWarning, LinearGrid, ProbabilityGrid
from streameval.metrics.confusion import Confusion

TOL = 1e-12


def brute_force_auc(y, s, w=None):
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    pos, neg = y == 1, y == 0
    sp, wp, sn, wn = s[pos], w[pos], s[neg], w[neg]
    gt = (sp[:, None] > sn[None, :]) + 0.5 * (sp[:, None] == sn[None, :])
    return float((wp[:, None] * wn[None, :] * gt).sum() / (wp.sum() * wn.sum()))


def sketch_of(y, s, w=None, grid=None):
    return BinarySketch(grid).update(y, s, w)


# --------------------------------------------------------------------------- discrete: exact
@pytest.mark.parametrize("kind", ["discrete", "coarse"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_discrete_scores_match_sklearn_exactly(kind, weighted, seed):
    y, s, w = make_data(kind, 3000, seed=seed, weighted=weighted)
    sk = sketch_of(y, s, w)
    auc = sk.roc_auc()
    assert auc.exact
    assert abs(auc.value - skm.roc_auc_score(y, s, sample_weight=w)) < TOL
    for max_fpr in (0.05, 0.1, 0.5):
        p = sk.roc_auc(max_fpr=max_fpr)
        assert p.exact
        assert abs(p.value - skm.roc_auc_score(y, s, sample_weight=w, max_fpr=max_fpr)) < TOL
    ap = sk.average_precision()
    assert ap.exact
    assert abs(ap.value - skm.average_precision_score(y, s, sample_weight=w)) < TOL
    assert abs(sk.gini().value - (2 * skm.roc_auc_score(y, s, sample_weight=w) - 1)) < 2 * TOL

    for drop in (True, False):
        fpr, tpr, thr = sk.roc_curve(drop_intermediate=drop)
        efpr, etpr, ethr = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=drop)
        np.testing.assert_allclose(fpr, efpr, rtol=0, atol=TOL)
        np.testing.assert_allclose(tpr, etpr, rtol=0, atol=TOL)
        np.testing.assert_array_equal(thr, ethr)
        p, r, t = sk.precision_recall_curve(drop_intermediate=drop)
        ep, er, et = skm.precision_recall_curve(y, s, sample_weight=w, drop_intermediate=drop)
        np.testing.assert_allclose(p, ep, rtol=0, atol=TOL)
        np.testing.assert_allclose(r, er, rtol=0, atol=TOL)
        np.testing.assert_array_equal(t, et)
        d1, d2, dt = sk.det_curve(drop_intermediate=drop)
        e1, e2, e3 = skm.det_curve(y, s, sample_weight=w, drop_intermediate=drop)
        np.testing.assert_allclose(d1, e1, rtol=0, atol=TOL)
        np.testing.assert_allclose(d2, e2, rtol=0, atol=TOL)
        np.testing.assert_array_equal(dt, e3)
    ep, er, _ = skm.precision_recall_curve(y, s, sample_weight=w)
    assert abs(sk.pr_auc() - skm.auc(er, ep)) < TOL
    assert abs(sk.brier_score() - skm.brier_score_loss(y, s, sample_weight=w)) < TOL
    assert abs(sk.log_loss() - skm.log_loss(y, s, sample_weight=w)) < 1e-12


@pytest.mark.parametrize("kind", ["discrete", "coarse", "int"])
def test_confusion_rates_match_sklearn_at_every_distinct_threshold(kind):
    y, s, w = make_data(kind, 2000, seed=4, weighted=True)
    grid = LinearGrid(300, 851, 551) if kind == "int" else None
    sk = sketch_of(y, s, w, grid)
    values = np.unique(s)
    for t in list(values[:: max(1, len(values) // 15)]) + [values.max() + 1, values.min() - 1]:
        pred = (s >= t).astype(int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = sk.confusion(t)
            assert c.exact and c.threshold == t
            tn, fp, fn, tp = skm.confusion_matrix(y, pred, sample_weight=w, labels=[0, 1]).ravel()
            np.testing.assert_allclose([c.tp, c.fp, c.fn, c.tn], [tp, fp, fn, tn], rtol=1e-12)
            kw = dict(sample_weight=w, zero_division=0)
            checks = {
                "accuracy": skm.accuracy_score(y, pred, sample_weight=w),
                "balanced_accuracy": skm.balanced_accuracy_score(y, pred, sample_weight=w),
                "precision": skm.precision_score(y, pred, **kw),
                "recall": skm.recall_score(y, pred, **kw),
                "f1": skm.f1_score(y, pred, **kw),
                "jaccard": skm.jaccard_score(y, pred, **kw),
                "mcc": skm.matthews_corrcoef(y, pred, sample_weight=w),
            }
            for name, expected in checks.items():
                assert abs(getattr(c, name) - expected) < 1e-12, (name, t)
            assert abs(c.f_beta(2.0) - skm.fbeta_score(y, pred, beta=2.0, **kw)) < 1e-12
            assert abs(c.specificity - skm.recall_score(1 - y, 1 - pred, **kw)) < 1e-12
            assert abs(c.npv - skm.precision_score(1 - y, 1 - pred, **kw)) < 1e-12 or c.tn + c.fn == 0


def test_confusion_definitions_on_hand_counts():
    c = Confusion(tp=30.0, fp=10.0, fn=20.0, tn=40.0)
    assert c.total == 100 and c.prevalence == 0.5
    assert c.informedness == pytest.approx(0.6 + 0.8 - 1)
    assert c.markedness == pytest.approx(0.75 + 40 / 60 - 1)
    assert c.p4 == pytest.approx(4 / (1 / 0.75 + 1 / 0.6 + 1 / 0.8 + 1 / (40 / 60)))
    assert c.lift == pytest.approx(0.75 / 0.5)
    assert c.baseline_accuracy == 0.5
    assert c.false_accept_rate == c.fpr == pytest.approx(0.2)
    assert c.false_reject_rate == c.fnr == pytest.approx(0.4)
    with pytest.warns(Warning):
        assert Confusion(0.0, 0.0, 5.0, 5.0).precision == 0.0


def test_zero_division_conventions_follow_sklearn():
    y = np.array([0, 0, 1, 1])
    s = np.array([0.1, 0.2, 0.3, 0.4])
    c = sketch_of(y, s).confusion(0.9)  # nothing predicted positive
    with pytest.warns(Warning):
        assert c.precision == skm.precision_score(y, s >= 0.9, zero_division=0)
    assert c.mcc == skm.matthews_corrcoef(y, s >= 0.9)


# --------------------------------------------------------------------------- continuous: bounds
def assert_bounds(sk, y, s, w):
    slack = 1e-12
    auc = sk.roc_auc()
    exact = skm.roc_auc_score(y, s, sample_weight=w)
    assert auc.lower - slack <= exact <= auc.upper + slack, (auc, exact)
    for max_fpr in (0.01, 0.1, 0.3):
        p = sk.roc_auc(max_fpr=max_fpr)
        e = skm.roc_auc_score(y, s, sample_weight=w, max_fpr=max_fpr)
        assert p.lower - slack <= e <= p.upper + slack, (max_fpr, p, e)
    ap = sk.average_precision()
    e = skm.average_precision_score(y, s, sample_weight=w)
    assert ap.lower - slack <= e <= ap.upper + slack, (ap, e)
    assert ap.lower <= ap.value <= ap.upper and auc.lower <= auc.value <= auc.upper


@pytest.mark.parametrize("grid", [None, ProbabilityGrid(4, -8), LinearGrid(0, 1, 7), FloatGrid(2, -4, 4)],
                         ids=["default", "coarse-prob", "linear7", "float-coarse"])
@pytest.mark.parametrize("kind", ["continuous", "rare", "wide", "discrete"])
@pytest.mark.parametrize("weighted", [False, True])
def test_sklearn_inside_interval(grid, kind, weighted):
    y, s, w = make_data(kind, 4000, seed=7, weighted=weighted)
    assert_bounds(sketch_of(y, s, w, grid), y, s, w)


def test_auc_matches_brute_force_pair_count():
    for seed in range(5):
        y, s, w = make_data("coarse", 600, seed=seed, weighted=True)
        sk = sketch_of(y, s, w)
        assert abs(sk.roc_auc().value - brute_force_auc(y, s, w)) < TOL
        y, s, w = make_data("continuous", 600, seed=seed)
        b = sketch_of(y, s, grid=LinearGrid(0, 1, 5)).roc_auc()
        assert b.lower <= brute_force_auc(y, s) <= b.upper and b.width > 0


def test_interval_width_bounded_by_same_bin_pairs():
    y, s, _ = make_data("continuous", 5000, seed=3)
    grid = LinearGrid(0, 1, 16)
    sk = sketch_of(y, s, grid=grid)
    b = grid.bin_index(s)
    pos = np.bincount(b[y == 1], minlength=grid.n_bins).astype(float)
    neg = np.bincount(b[y == 0], minlength=grid.n_bins).astype(float)
    assert sk.roc_auc().width <= (pos * neg).sum() / (pos.sum() * neg.sum()) + 1e-15


scores = st.one_of(
    st.floats(0, 1),
    st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0, 1e-5, 1 - 1e-5]),
    st.floats(-5, 5),
)


@st.composite
def datasets(draw):
    n = draw(st.integers(2, 60))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int8)
    # one-element classes are common this way
    if y.sum() == 0:
        y[draw(st.integers(0, n - 1))] = 1
    if y.sum() == n:
        y[draw(st.integers(0, n - 1))] = 0
    s = np.array(draw(st.lists(scores, min_size=n, max_size=n)))
    w = None
    if draw(st.booleans()):
        w = np.array(draw(st.lists(st.floats(0.01, 10), min_size=n, max_size=n)))
    grid = draw(st.sampled_from([None, ProbabilityGrid(1, -3), LinearGrid(0, 1, 3), LinearGrid(-2, 2, 5),
                                 FloatGrid(1, -2, 2)]))
    return y, s, w, grid


@given(datasets())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_sklearn_inside_interval(data):
    _check_sklearn_inside_interval(data)


@pytest.mark.slow
@given(datasets())
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_sklearn_inside_interval_at_scale(data):
    _check_sklearn_inside_interval(data)


def _check_sklearn_inside_interval(data):
    y, s, w, grid = data
    sk = sketch_of(y, s, w, grid)
    assert_bounds(sk, y, s, w)
    # every returned ROC point is a point of scikit-learn's full curve
    fpr, tpr, thr = sk.roc_curve(drop_intermediate=False)
    efpr, etpr, ethr = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    idx = np.searchsorted(-ethr, -thr)
    np.testing.assert_array_equal(ethr[idx], thr)
    np.testing.assert_allclose(efpr[idx], fpr, atol=1e-12)
    np.testing.assert_allclose(etpr[idx], tpr, atol=1e-12)


@given(datasets(), st.floats(-3, 3))
@settings(max_examples=500, deadline=None)
def test_property_confusion_exact_or_bounded(data, t):
    y, s, w, grid = data
    sk = sketch_of(y, s, w, grid)
    ww = np.ones(len(y)) if w is None else w
    tp = float(ww[(s >= t) & (y == 1)].sum())
    fp = float(ww[(s >= t) & (y == 0)].sum())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        c = sk.confusion(t)
    if c.exact:
        assert abs(c.tp - tp) < 1e-9 and abs(c.fp - fp) < 1e-9
        assert not any(issubclass(r.category, InexactThresholdWarning) for r in rec)
    else:
        assert any(issubclass(r.category, InexactThresholdWarning) for r in rec)
        assert c.tp_bounds[0] - 1e-9 <= tp <= c.tp_bounds[1] + 1e-9
        assert c.fp_bounds[0] - 1e-9 <= fp <= c.fp_bounds[1] + 1e-9
        # the reported counts are exact at the snapped threshold
        t2 = c.threshold
        assert abs(c.tp - ww[(s >= t2) & (y == 1)].sum()) < 1e-9
        assert abs(c.fp - ww[(s >= t2) & (y == 0)].sum()) < 1e-9


@given(datasets())
@settings(max_examples=400, deadline=None)
def test_property_threshold_metrics(data):
    y, s, w, grid = data
    sk = sketch_of(y, s, w, grid)
    ww = np.ones(len(y)) if w is None else w
    P, N = ww[y == 1].sum(), ww[y == 0].sum()
    thr_all = np.r_[np.inf, np.unique(s)[::-1]]
    tpr = np.array([ww[(s >= t) & (y == 1)].sum() / P for t in thr_all])
    fpr = np.array([ww[(s >= t) & (y == 0)].sum() / N for t in thr_all])
    ks = sk.ks_statistic()
    exact_ks = float(np.max(tpr - fpr))
    assert ks.value.lower - 1e-12 <= exact_ks <= ks.value.upper + 1e-12
    assert abs(ks.confusion.tp / P - ks.confusion.fp / N - ks.value.lower) < 1e-12
    eer = sk.equal_error_rate()
    assert eer.value.lower <= eer.value.value <= eer.value.upper
    for k in (1, len(y) // 2, len(y)):
        if w is None:
            top = sk.top_k(k)
            order = np.argsort(-s, kind="stable")
            # any tie-breaking of the exact ranking must be inside the interval
            for perm in (order, np.lexsort((y, -s)), np.lexsort((-y, -s))):
                hits = y[perm[:k]].sum()
                assert top.tp.lower - 1e-9 <= hits <= top.tp.upper + 1e-9


def test_best_threshold_matches_brute_force_on_discrete():
    y, s, w = make_data("discrete", 3000, seed=11, weighted=True)
    sk = sketch_of(y, s, w)
    thr = np.r_[np.inf, np.unique(s)[::-1]]
    for metric, f in [
        ("f1", lambda p: skm.f1_score(y, p, sample_weight=w, zero_division=0)),
        ("mcc", lambda p: skm.matthews_corrcoef(y, p, sample_weight=w)),
        ("accuracy", lambda p: skm.accuracy_score(y, p, sample_weight=w)),
        ("balanced_accuracy", lambda p: skm.balanced_accuracy_score(y, p, sample_weight=w)),
    ]:
        vals = [f((s >= t).astype(int)) for t in thr]
        r = sk.best_threshold(metric)
        assert abs(r.value.value - max(vals)) < 1e-12, metric
    r = sk.best_threshold("cost", cost_fp=1.0, cost_fn=10.0)
    costs = [(w[(s >= t) & (y == 0)].sum() + 10 * w[(s < t) & (y == 1)].sum()) / w.sum() for t in thr]
    assert abs(r.value.value - min(costs)) < 1e-12


def test_threshold_at_targets():
    y, s, _ = make_data("discrete", 3000, seed=12)
    sk = sketch_of(y, s)
    r = sk.threshold_at(recall=0.8)
    assert r.confusion.recall >= 0.8
    higher = np.unique(s)[np.unique(s) > r.threshold]
    assert all(((s >= t) & (y == 1)).sum() / y.sum() < 0.8 for t in higher)
    r = sk.threshold_at(fpr=0.1)
    assert r.confusion.fpr <= 0.1
    lower = np.unique(s)[np.unique(s) < r.threshold]
    assert all(((s >= t) & (y == 0)).sum() / (y == 0).sum() > 0.1 for t in lower)
    r = sk.threshold_at(precision=0.6)
    assert r.confusion.precision >= 0.6
    with pytest.warns(Warning):
        assert sk.threshold_at(precision=1.01) is None
    with pytest.raises(ValueError):
        sk.threshold_at(recall=0.5, fpr=0.1)


def test_r_precision_is_break_even():
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    s = np.linspace(1, 0.1, 8)
    r = sketch_of(y, s).r_precision()
    assert r.exact and r.value == 3 / 4


def test_calibration_matches_sklearn():
    from sklearn.calibration import calibration_curve

    y, s, _ = make_data("discrete", 5000, seed=5)
    cc = sketch_of(y, s).calibration_curve(10)
    pt, pp = calibration_curve(y, s, n_bins=10)
    assert cc.exact
    np.testing.assert_allclose(cc.prob_true, pt, atol=1e-12)
    np.testing.assert_allclose(cc.prob_pred, pp, atol=1e-12)
    ece = np.sum(cc.weight * np.abs(pt - pp)) / len(y)
    assert abs(cc.ece - ece) < 1e-12


def test_probability_metrics_continuous_exact():
    y, s, w = make_data("continuous", 5000, seed=6, weighted=True)
    sk = BinarySketch()
    for i in range(0, 5000, 700):
        sk.update(y[i:i + 700], s[i:i + 700], w[i:i + 700])
    assert abs(sk.log_loss() - skm.log_loss(y, s, sample_weight=w)) < 1e-12
    assert abs(sk.brier_score() - skm.brier_score_loss(y, s, sample_weight=w)) < 1e-12
    with pytest.raises(ValueError, match="eps"):
        sk.log_loss(eps=0.7)


def test_probability_metrics_outside_unit_interval_raise_as_scikit_learn():
    y, s = np.array([0, 1]), np.array([-0.5, 2.0])
    sk = sketch_of(y, s)
    for metric, reference in ((sk.log_loss, skm.log_loss), (sk.brier_score, skm.brier_score_loss)):
        with pytest.raises(ValueError):
            reference(y, s)
        with pytest.raises(ValueError, match="outside"):
            metric()
    with pytest.raises(ValueError):
        sk.calibration_curve()


def test_one_class_warns_and_returns_nan():
    sk = sketch_of(np.array([1, 1, 1]), np.array([0.2, 0.5, 0.7]))
    with pytest.warns(Warning):
        assert np.isnan(sk.roc_auc().value)
    with pytest.warns(Warning):
        fpr, _, _ = sk.roc_curve()
    assert np.isnan(fpr).all()
    assert sk.average_precision().value == 1.0
    # No positives: average precision is 0.0 with a warning, as scikit-learn returns.
    y0, s0 = np.array([0, 0]), np.array([0.2, 0.5])
    sk0 = sketch_of(y0, s0)
    with pytest.warns(Warning):
        assert sk0.average_precision().value == skm.average_precision_score(y0, s0) == 0.0


def test_inexact_threshold_snaps_and_warns():
    y = np.array([0, 1, 0, 1])
    s = np.array([0.50, 0.52, 0.54, 0.56])
    sk = sketch_of(y, s, grid=LinearGrid(0, 1, 10))  # all four in one bin
    with pytest.warns(InexactThresholdWarning):
        c = sk.confusion(0.53)
    assert not c.exact and c.requested_threshold == 0.53
    assert c.threshold in (0.50, 0.56) or c.threshold > 0.56
    assert c.tp_bounds == (0.0, 2.0) and c.fp_bounds == (0.0, 2.0)
    assert sk.confusion(0.4).exact and sk.confusion(0.5).exact


def test_cut_grid_makes_confusion_exact_at_cuts_on_continuous_scores():
    y, s, w = make_data("continuous", 5000, seed=21, weighted=True)
    coarse = LinearGrid(0, 1, 4)
    cuts = (0.3, 0.55, 0.8)
    sk = sketch_of(y, s, w, coarse.with_cuts(*cuts))
    for t in cuts:
        c = sk.confusion(t)
        assert c.exact
        assert abs(c.tp - w[(s >= t) & (y == 1)].sum()) < 1e-9
        assert abs(c.fp - w[(s >= t) & (y == 0)].sum()) < 1e-9
    with pytest.warns(InexactThresholdWarning, match="with_cuts"):
        assert not sk.confusion(0.42).exact
    assert_bounds(sk, y, s, w)
