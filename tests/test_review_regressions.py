"""Regressions found in review: each test failed before its fix."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from sklearn import metrics as skm

from streameval import BinarySketch, InputError, LinearGrid
from streameval.kernels import binary as kernels


def test_linear_grid_nonfinite_scale_is_rejected_or_binned_in_range():
    for lo, hi in ((0.0, 1e-320), (-1e308, 1e308)):
        try:
            g = LinearGrid(lo, hi, 4)
        except ValueError:
            continue  # rejecting the grid is an acceptable fix
        s = np.array([lo, hi, 0.5 * lo + 0.5 * hi])
        out = np.empty(3, np.int64)
        kernels.bin_indices(*g.kernel_params(), s, out)
        assert np.array_equal(out, g.bin_index(s))
        assert out.min() >= 0 and out.max() < g.n_bins
        sk = BinarySketch(g).update([0, 1, 1], s)
        assert sk.positive_weight == 2 and sk.negative_weight == 1


def _exact_ap(y, s, w):
    P = sum(Fraction(float(x)) for x, label in zip(w, y, strict=True) if label == 1)
    tp = fp = ap = Fraction(0)
    for v in np.unique(s)[::-1]:
        m = s == v
        dp = sum(Fraction(float(x)) for x in w[m & (y == 1)])
        tp += dp
        fp += sum(Fraction(float(x)) for x in w[m & (y == 0)])
        if dp:
            ap += dp / P * tp / (tp + fp)
    return float(ap)



def test_ap_lower_bound_no_cancellation():
    # one heavy negative on top, then 10 light positives at distinct scores in one bin
    s = np.r_[0.99, np.linspace(0.1, 0.2, 10)]
    y = np.r_[0, np.ones(10, int)]
    w = np.r_[1e10, np.full(10, 1e-6)]
    ap = BinarySketch(LinearGrid(0, 1, 1)).update(y, s, w).average_precision()
    exact = _exact_ap(y, s, w)  # 5.5e-16; sklearn agrees
    assert ap.lower <= exact * (1 + 1e-9) and exact <= ap.upper * (1 + 1e-9), (ap, exact)



def test_extreme_weights_scale_invariant():
    y = np.array([0, 1, 0, 1])
    s = np.array([0.9, 0.4, 0.35, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for scale in (1e155, 1e-160, 1e-170):
            sk = BinarySketch().update(y, s, np.full(4, scale))
            assert sk.roc_auc().value == pytest.approx(0.25, abs=1e-12)
            assert sk.average_precision().value == pytest.approx(0.5, abs=1e-12)



def test_merge_rejects_conflicting_positive_class():
    a = BinarySketch().update([0, 1], [0.1, 0.9])  # positive class: label 1
    b = BinarySketch(pos_label=0).update([0, 1], [0.9, 0.1])  # positive class: label 0
    with pytest.raises(InputError, match="positive"):
        a.merge(b)


def test_merge_rejects_three_label_values():
    a = BinarySketch(pos_label="dog").update(["dog", "cat"], [0.9, 0.1])
    b = BinarySketch(pos_label="dog").update(["dog", "bird"], [0.8, 0.2])
    with pytest.raises(InputError, match="negative class changed"):
        a.copy().update(["bird"], [0.3])  # what merge claims to be equivalent to
    with pytest.raises(InputError, match="three label values"):
        a.merge(b)


def test_roc_drop_intermediate_fractional_weights_same_curve_as_sklearn():
    # With fractional weights the sketch sums weights bin by bin, scikit-learn row by row, so a
    # point collinear "up to rounding" may be kept by one and dropped by the other (documented in
    # roc_curve). The curves are still the same piecewise-linear function through the same points.
    s = np.array([0.7, 0.9, 0.7, 0.8])
    y = np.array([1, 0, 1, 1])
    w = np.array([0.2, 0.1, 0.1, 0.3])
    sk = BinarySketch().update(y, s, w)
    fpr, tpr, thr = sk.roc_curve(drop_intermediate=True)
    efpr, etpr, ethr = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    assert set(thr) <= set(ethr)
    grid = np.linspace(0, 1, 101)
    np.testing.assert_allclose(np.interp(grid, fpr, tpr), np.interp(grid, efpr, etpr), atol=1e-12)
    a, b, c = sk.roc_curve(drop_intermediate=False)
    np.testing.assert_array_equal(c, ethr)


def test_skip_nan_accepts_a_nan_weight_on_a_skipped_row():
    """--skip-nan: a row skipped for its NaN score may have a NaN or null weight (session 5)."""
    import numpy as np

    import streameval
    from streameval.errors import InputError

    y = np.array([0, 1, 1, 0])
    s = np.array([0.2, np.nan, 0.7, 0.4])
    w = np.array([1.0, np.nan, 2.0, 1.0])
    sk = streameval.BinarySketch().update(y, s, w, nan_policy="skip")
    assert sk.counters["n_nan"] == 1 and sk.counters["n_zero_weight"] == 0
    ref = streameval.BinarySketch().update(y[[0, 2, 3]], s[[0, 2, 3]], w[[0, 2, 3]])
    assert float(sk.roc_auc()) == float(ref.roc_auc()) and sk.positive_weight == 2.0
    with pytest.raises(InputError, match="sample_weight"):
        streameval.BinarySketch().update(y, np.array([0.2, 0.5, 0.7, 0.4]), w, nan_policy="skip")


def test_a_sketch_larger_than_its_chunks_goes_dense():
    """A sketch with more bins than a small chunk has rows bins it densely (the compact merge cost
    O(bins) per chunk: 15,000-row chunks into a 60,000-bin sketch took 27 ms each); counts equal."""
    import numpy as np

    import streameval

    rng = np.random.default_rng(0)
    y = (rng.random(60_000) < 0.3).astype(np.int8)
    p = rng.random(60_000)
    sk = streameval.BinarySketch(threads=1)
    for a in range(0, 60_000, 15_000):
        sk.update(y[a:a + 15_000], p[a:a + 15_000])
    assert sk._dense is not None  # went dense once its bins outnumbered a chunk's rows
    one = streameval.BinarySketch(threads=1).update(y, p)
    k1, v1 = sk._compact()
    k2, v2 = one._compact()
    assert np.array_equal(k1, k2) and np.array_equal(v1[:, :, :3], v2[:, :, :3])
    small = streameval.BinarySketch().update(y[:600], p[:600]).update(y[600:1200], p[600:1200])
    assert small._dense is None  # small sketches stay compact
