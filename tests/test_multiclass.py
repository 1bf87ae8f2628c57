"""MulticlassSketch against scikit-learn: every metric, on discrete (exact) and continuous (bounded)
scores, with weights, classes missing from chunks or from the data, chunking and merging, and a
3-class example worked by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from streameval import BinarySketch, LinearGrid, ProbabilityGrid
from streameval.errors import IncompatibleGridError, InputError, UsageError
from streameval.sketch.multiclass import MulticlassSketch, auto_pair_grid, merge_multiclass

TOL = 1e-12


def make(rng, n, k, kind, *, weights=False, absent=(), dtype=np.float64):
    """Labels, scores (rows sum to 1) and optional weights.

    "discrete": every score is c/26 for an integer c (many ties, every value in a bin of its own);
    "continuous": softmax of Gaussian logits.
    """
    present = [c for c in range(k) if c not in absent]
    y = rng.choice(present, n)
    if kind == "discrete":
        c = rng.multinomial(20, np.ones(k) / k, size=n)
        c[np.arange(n), y] += 6
        p = c / 26.0
    else:
        z = rng.normal(size=(n, k))
        z[np.arange(n), y] += 1.2
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    w = None
    if weights:
        w = rng.uniform(0.0, 3.0, n)
        w[rng.random(n) < 0.05] = 0.0
    return y, p.astype(dtype), w


def close(a, b, tol=TOL):
    return np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=tol, atol=tol, equal_nan=True)


def inside(est, exact, tol=1e-12):
    return est.lower - tol <= exact <= est.upper + tol


def sketch_of(y, p, w, k, chunks=3, **kw):
    s = MulticlassSketch(classes=np.arange(k), **kw)
    for part in np.array_split(np.arange(len(y)), chunks):
        s.update(y[part], p[part], sample_weight=None if w is None else w[part])
    return s


CASES = [
    # (K, kind, weighted, absent classes)
    (3, "discrete", False, ()),
    (3, "continuous", True, ()),
    (10, "discrete", True, ()),
    (10, "continuous", False, ()),
    (4, "discrete", False, (2,)),
    (5, "continuous", True, (0, 3)),
]


@pytest.mark.parametrize("k,kind,weighted,absent", CASES)
def test_label_metrics_equal_sklearn(k, kind, weighted, absent):
    rng = np.random.default_rng(k * 7 + len(absent))
    y, p, w = make(rng, 900, k, kind, weights=weighted, absent=absent)
    s = sketch_of(y, p, w, k)
    labels = np.arange(k)
    pred = p.argmax(axis=1)
    kw = {"sample_weight": w}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for norm in (None, "true", "pred", "all"):
            ref = skm.confusion_matrix(y, pred, labels=labels, normalize=norm, **kw)
            assert close(s.confusion_matrix(norm), ref)
        assert close(s.accuracy(), skm.accuracy_score(y, pred, **kw))
        for adjusted in (False, True):
            assert close(s.balanced_accuracy(adjusted), skm.balanced_accuracy_score(y, pred, adjusted=adjusted, **kw))
        for beta in (0.5, 1.0, 2.0):
            for avg in (None, "micro", "macro", "weighted"):
                for zd in ("warn", 0.0, 1.0, np.nan):
                    ours = s.precision_recall_fscore_support(beta, avg, zd)
                    ref = skm.precision_recall_fscore_support(
                        y, pred, labels=labels, beta=beta, average=avg, zero_division=zd, **kw
                    )
                    for a, b in zip(ours, ref, strict=True):
                        assert (a is None and b is None) or close(a, b)
        for weights in (None, "linear", "quadratic"):
            ref = skm.cohen_kappa_score(y, pred, labels=labels, weights=weights, **kw)
            assert close(s.cohen_kappa(weights), ref)
        assert close(s.matthews_corrcoef(), skm.matthews_corrcoef(y, pred, **kw))
        ours = s.classification_report(output="dict")
        ref = skm.classification_report(y, pred, labels=labels, output_dict=True, **kw)
        assert ours.keys() == ref.keys()
        for key in ref:
            assert close(ours[key], ref[key]) if key == "accuracy" else all(close(ours[key][f], ref[key][f]) for f in ref[key])
        if not weighted:
            for digits in (2, 4):
                ref_text = skm.classification_report(y, pred, labels=labels, digits=digits)
                assert s.classification_report(digits=digits) == ref_text


@pytest.mark.parametrize("k,kind,weighted,absent", CASES)
def test_score_metrics_equal_or_bound_sklearn(k, kind, weighted, absent):
    rng = np.random.default_rng(k * 11 + len(absent))
    y, p, w = make(rng, 900, k, kind, weights=weighted, absent=absent)
    s = sketch_of(y, p, w, k)
    labels = np.arange(k)
    kw = {"sample_weight": w}
    exact = kind == "discrete"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for top in range(1, k):
            assert close(s.top_k_accuracy(top), skm.top_k_accuracy_score(y, p, k=top, labels=labels, **kw))
        assert close(s.log_loss(), skm.log_loss(y, p, labels=labels, **kw), 1e-11)
        assert close(s.brier_score(), skm.brier_score_loss(y, p, labels=labels, **kw), 1e-11)
        for avg in ("macro", "weighted", "micro", None):
            est = s.roc_auc("ovr", avg)
            ref = skm.roc_auc_score(y, p, multi_class="ovr", average=avg, labels=labels, **kw)
            for e, r in zip(est if avg is None else [est], np.atleast_1d(ref), strict=True):
                if np.isnan(r):  # a class without rows: NaN, as scikit-learn
                    assert np.isnan(e.value)
                    continue
                assert inside(e, r)
                assert e.exact == exact or not exact
                if exact:
                    assert close(e.value, r)
        if not weighted:  # scikit-learn's one-vs-one takes no weights
            for avg in ("macro", "weighted"):
                est = s.roc_auc("ovo", avg)
                ref = skm.roc_auc_score(y, p, multi_class="ovo", average=avg, labels=labels)
                assert inside(est, ref)
                if exact:
                    assert est.exact and close(est.value, ref)
        if not absent:  # scikit-learn's AP needs every class in y_true
            for avg in ("macro", "weighted", "micro", None):
                est = s.average_precision(avg)
                ref = skm.average_precision_score(y, p, average=avg, **kw)
                for e, r in zip(est if avg is None else [est], np.atleast_1d(ref), strict=True):
                    assert inside(e, r, 1e-10)
                    if exact:
                        assert e.exact and close(e.value, r)


def test_many_random_cases_inside_bounds():
    """Continuous scores (float32 and float64), several K: scikit-learn's value is always inside."""
    rng = np.random.default_rng(2024)
    for trial in range(12):
        k = int(rng.integers(3, 8))
        y, p, w = make(rng, int(rng.integers(50, 400)), k, "continuous", dtype=[np.float32, np.float64][trial % 2])
        if len(np.unique(y)) < k:
            continue
        grid = ProbabilityGrid(mantissa_bits=int(rng.integers(3, 9)))
        s = sketch_of(y, p, w, k, chunks=int(rng.integers(1, 5)), grid=grid)
        p64 = p.astype(np.float64)
        for mc, avg in (("ovr", "macro"), ("ovr", "weighted"), ("ovr", "micro"), ("ovo", "macro"), ("ovo", "weighted")):
            assert inside(s.roc_auc(mc, avg), skm.roc_auc_score(y, p64, multi_class=mc, average=avg))
        for avg in ("macro", "weighted", "micro"):
            assert inside(s.average_precision(avg), skm.average_precision_score(y, p64, average=avg), 1e-10)


def test_two_classes():
    """K = 2 with two score columns: label metrics as scikit-learn, one-vs-rest as the binary metric."""
    rng = np.random.default_rng(5)
    y, p, w = make(rng, 500, 2, "discrete", weights=True)
    s = sketch_of(y, p, w, 2)
    pred = p.argmax(axis=1)
    assert close(s.confusion_matrix(), skm.confusion_matrix(y, pred, sample_weight=w))
    assert close(s.matthews_corrcoef(), skm.matthews_corrcoef(y, pred, sample_weight=w))
    assert close(s.brier_score(), skm.brier_score_loss(y, p, labels=[0, 1], sample_weight=w), 1e-11)  # halved
    for c in (0, 1):
        ref = skm.roc_auc_score(y == c, p[:, c], sample_weight=w)
        assert close(s.roc_auc(average=None)[c].value, ref)


def test_hand_worked_example():
    """A 3-class confusion matrix, F1 averages computed on paper.

    Rows true, columns predicted:        C = [[2, 1, 1],
                                              [1, 2, 0],
                                              [0, 1, 2]]
    class 0: tp 2, predicted 2+1+0 = 3, true 4: P = 2/3, R = 1/2, F1 = 2*2 / (4 + 3) = 4/7
    class 1: tp 2, predicted 1+2+1 = 4, true 3: P = 1/2, R = 2/3, F1 = 2*2 / (3 + 4) = 4/7
    class 2: tp 2, predicted 1+0+2 = 3, true 3: P = 2/3, R = 2/3, F1 = 2*2 / (3 + 3) = 2/3
    micro: tp 6 of 10 rows, predicted = true = 10: F1 = 6/10
    macro: (4/7 + 4/7 + 2/3) / 3 = (12 + 12 + 14) / 63 = 38/63
    weighted by support 4, 3, 3: (4*4/7 + 3*4/7 + 3*2/3) / 10 = (16/7 + 12/7 + 2) / 10 = 6/10
    """
    y_true = ["a", "a", "a", "a", "b", "b", "b", "c", "c", "c"]
    y_pred = ["a", "a", "b", "c", "a", "b", "b", "b", "c", "c"]
    s = MulticlassSketch().update(y_true[:6], y_pred=y_pred[:6]).update(y_true[6:], y_pred=y_pred[6:])
    assert s.classes.tolist() == ["a", "b", "c"]
    assert s.confusion_matrix().tolist() == [[2, 1, 1], [1, 2, 0], [0, 1, 2]]
    f1 = s.precision_recall_fscore_support(average=None)[2]
    assert close(f1, [4 / 7, 4 / 7, 2 / 3])
    assert close(s.precision_recall_fscore_support(average="micro")[2], 6 / 10)
    assert close(s.precision_recall_fscore_support(average="macro")[2], 38 / 63)
    assert close(s.precision_recall_fscore_support(average="weighted")[2], 6 / 10)
    assert s.accuracy() == 0.6
    with pytest.raises(UsageError, match="needs scores"):
        s.roc_auc()
    with pytest.raises(UsageError, match="needs scores"):
        s.top_k_accuracy(2)


def test_labels_only_learns_classes_across_chunks():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 6, 400)
    pred = np.where(rng.random(400) < 0.6, y, rng.integers(0, 6, 400))
    s = MulticlassSketch()
    s.update(y[:50] % 3, y_pred=pred[:50] % 3)  # first chunk: classes 0..2 only
    s.update(y[50:], y_pred=pred[50:])
    y_all = np.r_[y[:50] % 3, y[50:]]
    p_all = np.r_[pred[:50] % 3, pred[50:]]
    assert s.classes.tolist() == list(range(6))
    assert close(s.confusion_matrix(), skm.confusion_matrix(y_all, p_all))
    assert close(s.cohen_kappa("quadratic"), skm.cohen_kappa_score(y_all, p_all, weights="quadratic"))


def test_y_pred_with_scores_replaces_argmax():
    rng = np.random.default_rng(3)
    y, p, _ = make(rng, 300, 4, "continuous")
    pred = (p.argmax(axis=1) + (rng.random(300) < 0.2)) % 4
    s = MulticlassSketch(classes=range(4)).update(y, p, y_pred=pred)
    assert close(s.confusion_matrix(), skm.confusion_matrix(y, pred))
    assert close(s.top_k_accuracy(1), skm.top_k_accuracy_score(y, p, k=1))


def test_top_k_tie_rule():
    """Rows of equal scores: scikit-learn ranks tied columns by descending index."""
    y = np.array([0, 1, 2, 2, 0, 1])
    p = np.array([[1, 1, 1], [1, 1, 1], [1, 1, 1], [0.5, 0.5, 0], [0.2, 0.4, 0.4], [0.3, 0.3, 0.4]]) / 1.0
    s = MulticlassSketch(classes=[0, 1, 2]).update(y, p)
    for k in (1, 2):
        assert s.top_k_accuracy(k) == skm.top_k_accuracy_score(y, p, k=k)
    # argmax ties take the first maximum, as np.argmax
    assert s.confusion_matrix()[:, 0].sum() == np.sum(p.argmax(axis=1) == 0)


def test_chunking_and_merge_invariance():
    rng = np.random.default_rng(11)
    y, p, w = make(rng, 2000, 6, "continuous", weights=True)
    whole = sketch_of(y, p, w, 6, chunks=1)
    parts = [sketch_of(y[i], p[i], w[i], 6, chunks=1) for i in np.array_split(rng.permutation(2000), 4)]
    chunked = sketch_of(y, p, w, 6, chunks=7)
    merged = merge_multiclass(parts)
    assoc = parts[0].merge(parts[1]).merge(parts[2].merge(parts[3]))
    rev = merge_multiclass(parts[::-1])
    for other in (chunked, merged, assoc, rev):
        assert_same_state(whole, other)
    # empty sketch is the identity; inputs unchanged
    before = [q._parts() for q in parts]
    assert_same_state(whole, merge_multiclass([MulticlassSketch(), merged, MulticlassSketch(classes=range(6))]))
    merge_multiclass(parts)
    for q, b in zip(parts, before, strict=True):
        assert_same_state_parts(q._parts(), b)


def assert_same_state(a, b):
    assert_same_state_parts(a._parts(), b._parts())
    assert a.roc_auc("ovo").lower == pytest.approx(b.roc_auc("ovo").lower, abs=1e-12)


def assert_same_state_parts(pa, pb):
    for key in ("ovr_keys", "pair_keys", "classes", "mode", "grid", "pair_grid"):
        assert np.array_equal(pa[key], pb[key]) if isinstance(pa[key], np.ndarray) else pa[key] == pb[key]
    for key in ("ovr_values", "pair_values"):
        va, vb = pa[key], pb[key]
        assert np.array_equal(va[..., 1:3], vb[..., 1:3])  # min/max exactly
        assert np.allclose(va[..., [0, 3]], vb[..., [0, 3]], rtol=1e-12, atol=1e-12)
    assert np.allclose(pa["confusion"], pb["confusion"], rtol=1e-12) and np.allclose(pa["ranks"], pb["ranks"], rtol=1e-12)
    for key, v in pa["counters"].items():
        assert np.allclose(v, pb["counters"][key], rtol=1e-10, atol=1e-9), key


def test_unweighted_chunking_is_bit_exact():
    rng = np.random.default_rng(4)
    y, p, _ = make(rng, 1500, 4, "discrete")
    a, b = sketch_of(y, p, None, 4, chunks=1), sketch_of(y, p, None, 4, chunks=5)
    big = MulticlassSketch(classes=range(4)).update(y[:1], p[:1])
    big._writing()  # the dense / hashed writing path, as for large chunks
    big.update(y[1:], p[1:])
    for other in (b, big):
        pa, pb = a._parts(), other._parts()
        for key in ("ovr_keys", "pair_keys", "confusion", "ranks"):
            assert np.array_equal(pa[key], pb[key]), key
        for key in ("ovr_values", "pair_values"):  # counts, min, max exactly; score sums to rounding
            assert np.array_equal(pa[key][..., :3], pb[key][..., :3]), key
            assert np.allclose(pa[key][..., 3], pb[key][..., 3], rtol=1e-13, atol=1e-13)


def test_one_vs_rest_is_the_binary_sketch():
    rng = np.random.default_rng(6)
    y, p, w = make(rng, 800, 5, "continuous", weights=True)
    s = sketch_of(y, p, w, 5)
    for c in range(5):
        ovr = s.one_vs_rest(c)
        ref = BinarySketch().update(y == c, p[:, c], w)
        assert np.array_equal(ovr._compact()[0], ref._compact()[0])
        assert np.array_equal(ovr._compact()[1][..., 1:3], ref._compact()[1][..., 1:3])
        assert ovr.roc_auc() == ref.roc_auc()
        assert close(ovr.log_loss(), skm.log_loss(y == c, p[:, c], sample_weight=w), 1e-11)
        assert close(ovr.brier_score(), skm.brier_score_loss(y == c, p[:, c], sample_weight=w), 1e-11)
        assert ovr.confusion(0.3).tp == pytest.approx(float(np.sum(w[(y == c) & (p[:, c] >= 0.3)])))


def test_one_vs_one_is_hand_till_pair():
    rng = np.random.default_rng(8)
    y, p, _ = make(rng, 700, 4, "discrete")
    s = sketch_of(y, p, None, 4)
    for a, b in ((0, 1), (2, 3), (3, 0)):
        m = (y == a) | (y == b)
        ref = skm.roc_auc_score(y[m] == a, p[m, a])
        est = s.one_vs_one(a, b).roc_auc()
        assert est.exact and close(est.value, ref)
    with pytest.raises(InputError):
        s.one_vs_one(1, 1)
    with pytest.raises(InputError, match="not one of the classes"):
        s.one_vs_rest(7)


def test_auto_pair_grid_and_no_pairs():
    g = ProbabilityGrid()
    assert auto_pair_grid(g, 4) == g
    assert auto_pair_grid(g, 10) == ProbabilityGrid(8, -30, 6)
    assert auto_pair_grid(g, 100) == ProbabilityGrid(7, -30, 5)
    assert auto_pair_grid(LinearGrid(0, 1, 100), 50) == LinearGrid(0, 1, 100)  # 100 / 2**4 is not whole
    rng = np.random.default_rng(12)
    y, p, _ = make(rng, 600, 20, "continuous")
    s = sketch_of(y, p, None, 20)
    assert s.pair_grid == ProbabilityGrid(8, -30, 6)
    assert inside(s.roc_auc("ovo"), skm.roc_auc_score(y, p, multi_class="ovo", labels=range(20)))
    none = sketch_of(y, p, None, 20, pair_grid=None)
    assert none.roc_auc("ovr") == s.roc_auc("ovr")
    with pytest.raises(UsageError, match="pair_grid=None"):
        none.roc_auc("ovo")


def test_merge_rules():
    rng = np.random.default_rng(13)
    y, p, _ = make(rng, 400, 3, "continuous")
    fine = MulticlassSketch(classes=range(3), grid=ProbabilityGrid(10)).update(y[:200], p[:200])
    coarse = MulticlassSketch(classes=range(3), grid=ProbabilityGrid(8)).update(y[200:], p[200:])
    merged = fine.merge(coarse)
    direct = MulticlassSketch(classes=range(3), grid=ProbabilityGrid(8)).update(y, p)
    assert merged.grid == ProbabilityGrid(8)
    assert_same_state_parts(merged._parts(), direct._parts())
    with pytest.raises(InputError, match="different classes"):
        fine.merge(MulticlassSketch(classes=[1, 2, 3]).update([1], [[1.0, 0, 0]]))
    with pytest.raises(InputError, match="cannot merge"):
        fine.merge(MulticlassSketch(classes=range(3)).update([0], y_pred=[1]))
    with pytest.raises(IncompatibleGridError):
        fine.merge(MulticlassSketch(classes=range(3), grid=LinearGrid(0, 1, 10)).update([0], [[1.0, 0, 0]]))


def test_merge_keeps_given_class_order():
    y = np.array(["b", "a", "c", "c"])
    p = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
    one = MulticlassSketch(classes=["b", "a", "c"]).update(y, p)
    two = merge_multiclass([MulticlassSketch(classes=["b", "a", "c"]).update(y[:2], p[:2]),
                            MulticlassSketch(classes=["b", "a", "c"]).update(y[2:], p[2:])])
    assert_same_state(one, two)
    assert two.confusion_matrix().tolist() == [[1, 0, 0], [0, 1, 0], [0, 1, 1]]


def test_classification_report_arrow():
    s = MulticlassSketch(classes=["x", "y", "z"]).update(np.array(["x", "y", "z", "z", "x"]), y_pred=np.array(["x", "y", "z", "y", "x"]))
    t = s.classification_report(output="arrow")
    assert t.column_names == ["class", "precision", "recall", "f1-score", "support"]
    assert t.column("class").to_pylist() == ["x", "y", "z", "accuracy", "macro avg", "weighted avg"]
    d = s.classification_report(output="dict")
    assert t.column("f1-score").to_pylist()[3] == d["accuracy"] == 0.8
    assert t.column("precision").to_pylist()[3] is None


@pytest.mark.parametrize("budget", [0, 1 << 40])
def test_writing_paths_agree(monkeypatch, budget):
    """Hash tables (budget 0: growth from 64 slots, two threads) and dense states hold the same
    cells as the sort-based small-chunk path."""
    import streameval.sketch.multiclass_state as ms

    monkeypatch.setattr(ms, "DENSE_BUDGET", budget)
    rng = np.random.default_rng(21)
    y, p, w = make(rng, 70_000, 3, "continuous", weights=True)
    grid = ProbabilityGrid(mantissa_bits=6)
    small = sketch_of(y, p, w, 3, chunks=4, grid=grid)
    big = MulticlassSketch(classes=range(3), grid=grid, threads=2).update(y[:10], p[:10], sample_weight=w[:10])
    big._writing()
    big.update(y[10:], p[10:], sample_weight=w[10:])
    assert big._tables is not None and big._tables.dense == (budget > 0) and big._tables.pair_dense == (budget > 0)
    assert_same_state(small, big)


def test_parts_round_trip():
    """``_parts`` (what the file format will carry) rebuilds the same sketch, for every kind."""
    rng = np.random.default_rng(31)
    y, p, w = make(rng, 500, 4, "continuous", weights=True)
    sketches = [
        sketch_of(y, p, w, 4),
        sketch_of(y, p, None, 4, pair_grid=None),
        MulticlassSketch().update(np.array(["b", "a"]), y_pred=np.array(["a", "c"])),
        MulticlassSketch(classes=["x", "y"]),
    ]
    for s in sketches:
        back = MulticlassSketch._from_parts(s._parts())
        assert back == s
        if s.mode == "scores":
            assert back.roc_auc("ovr") == s.roc_auc("ovr") and back.log_loss() == s.log_loss()
    parts = sketches[0]._parts()
    parts["ovr_keys"] = parts["ovr_keys"][::-1].copy()
    with pytest.raises(ValueError, match="keys must increase"):
        MulticlassSketch._from_parts(parts)


def test_golden_builders_round_trip_their_parts():
    """The sketches the golden files will hold are deterministic and survive ``_parts``."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent / "golden" / "make_golden_multiclass.py"
    spec = importlib.util.spec_from_file_location("make_golden_multiclass", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    first, second = mod.build(), mod.build()
    assert sorted(first) == ["coarse-pairs", "labels", "no-pairs", "scores", "weighted"]
    for name, sketch in first.items():
        assert sketch == second[name] == MulticlassSketch._from_parts(sketch._parts()), name
    assert first["coarse-pairs"].pair_grid != first["coarse-pairs"].grid
