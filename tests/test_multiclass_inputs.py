"""MulticlassSketch inputs: accepted containers, and clear errors (argument, row, value) for bad ones."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from sklearn import metrics as skm

from streameval import InputError, InputTypeError
from streameval.sketch.multiclass import MulticlassSketch

P = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
Y = np.array([0, 1, 2, 2])


def reference() -> MulticlassSketch:
    return MulticlassSketch(classes=[0, 1, 2]).update(Y, P)


@pytest.mark.parametrize(
    "make",
    [
        lambda: P.tolist(),
        lambda: pa.array(P.tolist(), type=pa.list_(pa.float64(), 3)),
        lambda: pa.array(P.tolist(), type=pa.list_(pa.float64())),
        lambda: pa.chunked_array([pa.array(P[:2].tolist()), pa.array(P[2:].tolist())]),
        lambda: pl.Series(P.tolist(), dtype=pl.Array(pl.Float64, 3)),
        lambda: pl.Series(P.tolist()),
        lambda: pd.DataFrame(P),
        lambda: P.astype(np.float32),
        lambda: np.asfortranarray(P),
    ],
)
def test_score_containers(make):
    s = MulticlassSketch(classes=[0, 1, 2]).update(pa.array(Y), make())
    ref = reference()
    assert np.array_equal(s.confusion_matrix(), ref.confusion_matrix())
    assert s.top_k_accuracy(2) == ref.top_k_accuracy(2)
    assert s.roc_auc().value == pytest.approx(ref.roc_auc().value, abs=1e-7)


def test_string_labels_from_arrow_and_learned_classes():
    y = pa.array(["cat", "dog", "emu", "emu"])
    s = MulticlassSketch().update(y, P)
    assert s.classes.tolist() == ["cat", "dog", "emu"]
    assert s.roc_auc().value == reference().roc_auc().value
    # integer labels 0..K-1 need not all appear in the first chunk
    s = MulticlassSketch().update([0, 0], P[:2]).update([2, 1], P[2:])
    assert s.classes.tolist() == [0, 1, 2]


def test_given_class_order_is_column_order():
    y = np.array(["b", "a", "c", "c"])  # classes in a non-sorted order: columns follow it
    s = MulticlassSketch(classes=["b", "a", "c"]).update(y, P)
    assert s.confusion_matrix().tolist() == reference().confusion_matrix().tolist()


def test_log_loss_unnormalized_warns_like_sklearn():
    p = P * 1.1
    p = np.minimum(p, 1.0)
    s = MulticlassSketch(classes=[0, 1, 2]).update(Y, p)
    with pytest.warns(UserWarning, match="do not sum to one"):
        ours = s.log_loss()
    with pytest.warns(UserWarning, match="do not sum to one"):
        ref = skm.log_loss(Y, p)
    assert ours == pytest.approx(ref, rel=1e-12)  # scikit-learn 1.9 uses the scores as they are
    s = MulticlassSketch(classes=[0, 1, 2]).update(Y, P * 2)
    with pytest.raises(ValueError, match="outside"):
        s.log_loss()
    with pytest.raises(ValueError):
        skm.log_loss(Y, P * 2)
    assert 0 <= s.roc_auc().value <= 1  # ranking metrics take any real scores


def expect(match, fn):
    with pytest.raises((InputError, InputTypeError), match=match):
        fn()


def test_bad_inputs_name_argument_row_and_value():
    s = MulticlassSketch(classes=[0, 1, 2]).update(Y, P)
    before = s._parts()
    expect("3 columns|2 columns", lambda: s.update([0, 1], P[:2, :2]))
    expect(r"row 5 has 2", lambda: s.update([0, 1], [[0.5, 0.2, 0.3], [0.5, 0.5]]))
    expect(r"row 5 has 2", lambda: s.update([0, 1], pa.array([[0.5, 0.2, 0.3], [0.5, 0.5]])))
    bad = P.copy()
    bad[3, 1] = np.nan
    expect(r"NaN.*first nan at row 7, column 1", lambda: s.update(Y, bad))
    bad[3, 1] = np.inf
    expect(r"infinite.*first inf at row 7, column 1", lambda: s.update(Y, bad))
    expect(r"not in classes.*first 7 at row 6", lambda: s.update([0, 1, 7], P[:3]))
    expect(r"y_pred has .*not in classes.*first 9", lambda: MulticlassSketch(classes=[0, 1]).update([0, 1], y_pred=[0, 9]))
    expect(r"sample_weight.*-1.0 at row 5", lambda: s.update([0, 1], P[:2], sample_weight=[1.0, -1.0]))
    expect(r"null or NaN label.*row 4", lambda: s.update([np.nan, 1.0], P[:2]))
    expect("needs y_score", lambda: s.update(Y))
    expect("hard predictions", lambda: s.update(Y, y_pred=Y))
    expect("rows but y_score", lambda: s.update(Y[:3], P))
    # the sketch is unchanged by every rejected chunk
    after = s._parts()
    assert all(np.array_equal(before[k], after[k]) if isinstance(before[k], np.ndarray) else before[k] == after[k] for k in before)


def test_class_count_guards():
    expect("at least 2 classes", lambda: MulticlassSketch(classes=[1]))
    expect("1 column", lambda: MulticlassSketch().update([0, 0], [[1.0], [1.0]]))
    expect("duplicate", lambda: MulticlassSketch(classes=[1, 2, 1]))
    expect("exceed max_classes=3", lambda: MulticlassSketch(classes=range(4), max_classes=3))
    expect("exceed max_classes=3", lambda: MulticlassSketch(max_classes=3).update(range(4), y_pred=range(4)))
    expect("pass classes=", lambda: MulticlassSketch().update(["a", "b"], P[:2]))
    s = MulticlassSketch(classes=range(1024)).update([5], np.eye(1024)[[5]])
    assert s.accuracy() == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert s.top_k_accuracy(1) == 1.0


def test_fortran_ordered_scores_give_the_same_sketch():
    """evaluate() hands the kernels column-major score matrices; they must bin identically."""
    rng = np.random.default_rng(11)
    for n in (1_000, 200_000):  # the small-chunk path and the writing-state path
        y = rng.integers(0, 4, n)
        p = rng.dirichlet(np.ones(4), n).astype(np.float32)
        c = MulticlassSketch(classes=range(4)).update(y, p)
        f = MulticlassSketch(classes=range(4)).update(y, np.asfortranarray(p))
        assert c.to_bytes() == f.to_bytes()


# -- ScoreColumns: K columns kept apart (what the evaluation of a file passes) -------------------


def _columns_case(seed: int, n: int, k: int, dtype: str):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    p = rng.dirichlet(np.ones(k), n).astype(dtype)
    return y, p


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["dense", "small-chunks", "hashed", "weighted", "bootstrap"])
def test_score_columns_update_equals_the_matrix(case, dtype):
    """A sketch fed the columns apart holds the same bytes as one fed the (n, K) matrix, on every
    path: dense one-pass kernel, small chunks binned by sorting, hashed histograms (many bins),
    weights, bootstrap replicates."""
    from streameval import LinearGrid
    from streameval.sketch.multiclass_inputs import ScoreColumns

    k = 5
    n = 70_000  # above the row count from which a chunk's columns are shared by threads
    y, p = _columns_case(11, n, k, dtype)
    kw: dict = {"classes": range(k)}
    chunks = [(0, n)]
    w = None
    if case == "small-chunks":
        chunks = [(a, min(a + 3_000, 30_000)) for a in range(0, 30_000, 3_000)]
    elif case == "hashed":
        kw["grid"] = LinearGrid(0.0, 1.0, 1 << 20)  # K x grid x 64 B beyond the dense budget
    elif case == "weighted":
        w = np.random.default_rng(2).integers(0, 3, y.shape[0]).astype(np.float64)
    elif case == "bootstrap":
        kw["bootstrap"] = 4
        chunks = [(0, 20_000), (20_000, n)]
    a, b = MulticlassSketch(**kw), MulticlassSketch(**kw)
    for lo, hi in chunks:
        ww = None if w is None else w[lo:hi]
        a.update(y[lo:hi], p[lo:hi], sample_weight=ww)
        b.update(y[lo:hi], ScoreColumns([p[lo:hi, j].copy() for j in range(k)]), sample_weight=ww)
    assert a == b and a.to_bytes() == b.to_bytes()
    assert b.log_loss() == a.log_loss() and b.top_k_accuracy(2) == a.top_k_accuracy(2)


def test_score_columns_checked_as_the_matrix():
    from streameval.sketch.multiclass_inputs import ScoreColumns

    y, p = _columns_case(3, 50, 3, "float64")
    bad = p.copy()
    bad[17, 2] = np.nan
    bad[30, 0] = np.inf
    for scores in (bad, ScoreColumns([bad[:, j].copy() for j in range(3)])):
        with pytest.raises(InputError, match=r"2 NaN, null or infinite value\(s\), first nan at row 17, column 2"):
            MulticlassSketch(classes=[0, 1, 2]).update(y, scores)
    with pytest.raises(InputError, match="y_true has 49 rows but y_score has 50"):
        MulticlassSketch(classes=[0, 1, 2]).update(y[:49], ScoreColumns([p[:, j].copy() for j in range(3)]))
    with pytest.raises(InputError, match="2 columns but there are 3 classes"):
        MulticlassSketch(classes=[0, 1, 2]).update(y, ScoreColumns([p[:, j].copy() for j in range(2)]))
    with pytest.raises(TypeError, match="one dtype"):
        ScoreColumns([p[:, 0].copy(), p[:, 1].astype(np.float32)])
    with pytest.raises(TypeError, match="one length"):
        ScoreColumns([p[:, 0].copy(), p[:10, 1].copy()])
