"""Input handling of BinarySketch.update: accepted kinds, label codings, and every bad input.

Every rejected input must raise InputError / InputTypeError (ValueError / TypeError subclasses)
with a message that names the problem, the count and the first offending row, counted from the
start of the stream, and must leave the sketch unchanged.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from sklearn.metrics import roc_auc_score

from streameval import BinarySketch, FloatGrid, InputError, InputTypeError, LinearGrid

Y = [0, 1, 1, 0, 1, 0]
S = [0.1, 0.8, 0.35, 0.4, 0.9, 0.05]
W8 = [1.0, 2.0, 0.5, 1.5, 1.0, 3.0]


def _ref(y=Y, s=S, w=None) -> BinarySketch:
    return BinarySketch().update(np.asarray(y, dtype=np.int64), np.asarray(s, dtype=np.float64), w)


def _state(s: BinarySketch) -> bytes:
    return s.to_bytes(compress=False)


def _raises(exc, sketch: BinarySketch, *args, match: str, **kwargs) -> str:
    """Update must raise ``exc`` matching ``match`` and leave the sketch's bytes unchanged."""
    before = _state(sketch)
    rows = sketch.n_rows
    with pytest.raises(exc, match=match) as info:
        sketch.update(*args, **kwargs)
    assert _state(sketch) == before
    assert sketch.n_rows == rows
    return str(info.value)


# -- accepted kinds ---------------------------------------------------------------------------

LABEL_KINDS = {
    "int8": lambda: np.array(Y, dtype=np.int8),
    "uint8": lambda: np.array(Y, dtype=np.uint8),
    "int64": lambda: np.array(Y, dtype=np.int64),
    "float": lambda: np.array(Y, dtype=np.float64),
    "bool": lambda: np.array(Y, dtype=bool),
    "list": lambda: list(Y),
    "list_bool": lambda: [bool(v) for v in Y],
    "arrow": lambda: pa.array(Y, type=pa.int8()),
    "arrow_bool": lambda: pa.array([bool(v) for v in Y]),
    "arrow_chunked": lambda: pa.chunked_array([Y[:2], Y[2:]], type=pa.int64()),
    "arrow_chunked_one": lambda: pa.chunked_array([Y], type=pa.int32()),
    "polars": lambda: pl.Series(Y, dtype=pl.Int8),
    "polars_bool": lambda: pl.Series([bool(v) for v in Y]),
    "pandas": lambda: pd.Series(Y),
    "pandas_Int64": lambda: pd.Series(Y, dtype="Int64"),
    "pandas_boolean": lambda: pd.Series([bool(v) for v in Y], dtype="boolean"),
    "minus_one": lambda: np.array([1 if v else -1 for v in Y], dtype=np.int64),
    "minus_one_int8": lambda: np.array([1 if v else -1 for v in Y], dtype=np.int8),
    "minus_one_float": lambda: np.array([1.0 if v else -1.0 for v in Y]),
}

SCORE_KINDS = {
    "float64": lambda: np.array(S, dtype=np.float64),
    "float32": lambda: np.array(S, dtype=np.float32),
    "list": lambda: list(S),
    "arrow": lambda: pa.array(S),
    "arrow_f32": lambda: pa.array(S, type=pa.float32()),
    "arrow_chunked": lambda: pa.chunked_array([S[:3], S[3:]]),
    "polars": lambda: pl.Series(S),
    "pandas": lambda: pd.Series(S),
    "pandas_Float64": lambda: pd.Series(S, dtype="Float64"),
    "pandas_object": lambda: pd.Series(S, dtype=object),
}


@pytest.mark.parametrize("kind", sorted(LABEL_KINDS))
def test_label_kinds_equal_reference(kind):
    s = BinarySketch().update(LABEL_KINDS[kind](), np.array(S))
    assert s == _ref()
    assert s.positive_weight == 3 and s.negative_weight == 3


@pytest.mark.parametrize("kind", sorted(SCORE_KINDS))
def test_score_kinds_equal_reference(kind):
    s = BinarySketch().update(np.array(Y), SCORE_KINDS[kind]())
    if kind.endswith("f32") or kind == "float32":
        # float32 scores are binned as their exact float32 values.
        ref = _ref(s=np.array(S, dtype=np.float32).astype(np.float64))
    else:
        ref = _ref()
    assert s == ref
    assert float(s.roc_auc()) == pytest.approx(roc_auc_score(Y, S), abs=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda v: np.array(v, dtype=np.int64),
        lambda v: np.array(v, dtype=np.int32),
        lambda v: np.array(v, dtype=np.uint16),
        lambda v: list(v),
        lambda v: pa.array(v, type=pa.int64()),
        lambda v: pl.Series(v),
        lambda v: pd.Series(v, dtype="Int64"),
    ],
)
def test_integer_scores(make):
    ints = [300, 820, 640, 640, 851, 299]
    s = BinarySketch(LinearGrid(300, 851, 551)).update(Y, make(ints))
    ref = BinarySketch(LinearGrid(300, 851, 551)).update(Y, np.array(ints, dtype=np.float64))
    assert s == ref
    assert s.roc_auc().exact
    assert float(s.roc_auc()) == pytest.approx(roc_auc_score(Y, ints), abs=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda w: np.array(w),
        lambda w: np.array(w, dtype=np.float32),
        lambda w: list(w),
        lambda w: pa.array(w),
        lambda w: pl.Series(w),
        lambda w: pd.Series(w),
        lambda w: pd.Series(w, dtype="Float64"),
    ],
)
def test_weight_kinds(make):
    s = BinarySketch().update(Y, S, make(W8))
    ref = _ref(w=np.array(W8))
    assert s == ref
    assert s.counters["weighted"] is True
    assert s.positive_weight == pytest.approx(2.0 + 0.5 + 1.0)
    assert float(s.roc_auc()) == pytest.approx(roc_auc_score(Y, S, sample_weight=W8), abs=1e-12)


def test_integer_weights_are_weights():
    s = BinarySketch().update(Y, S, np.array([1, 2, 1, 1, 1, 4], dtype=np.int64))
    assert s.negative_weight == 6.0 and s.positive_weight == 4.0


def test_inputs_not_modified():
    y = np.array(Y, dtype=np.int8)
    sc = np.array(S, dtype=np.float32)
    w = np.array(W8)
    copies = (y.copy(), sc.copy(), w.copy())
    BinarySketch().update(y, sc, w)
    for a, b in zip((y, sc, w), copies, strict=False):
        assert np.array_equal(a, b)


def test_empty_chunk():
    s = BinarySketch().update(np.array([], dtype=np.int8), np.array([], dtype=np.float64))
    assert s.n_rows == 0 and s.n_occupied_bins == 0
    s.update(pa.array([], type=pa.int64()), pa.array([], type=pa.float64()), pa.array([], type=pa.float64()))
    assert s.n_rows == 0


def test_non_contiguous_views():
    y = np.array(Y * 2, dtype=np.int64)[::2]
    sc = np.array(S * 2)[::2]
    assert not sc.flags.c_contiguous
    assert BinarySketch().update(y, sc) == BinarySketch().update(y.copy(), sc.copy())


# -- label codings --------------------------------------------------------------------------


def test_codings_agree():
    bools = np.array(Y, dtype=bool)
    ref = _ref()
    assert BinarySketch().update(bools, S) == ref
    assert BinarySketch().update(np.where(bools, 1, -1), S) == ref
    assert BinarySketch().update(np.where(bools, "yes", "no"), S, pos_label="yes") == ref
    assert BinarySketch(pos_label="yes").update(list(np.where(bools, "yes", "no")), S) == ref
    assert BinarySketch().update(np.where(bools, 7, 3), S, pos_label=7) == ref
    # pos_label names the positive class even when it is the smaller value.
    flipped = BinarySketch().update(np.where(bools, 3, 7), S, pos_label=7)
    assert flipped == BinarySketch().update(~bools, S)


@pytest.mark.parametrize(
    "make",
    [
        lambda v: pa.array(v),
        lambda v: pa.chunked_array([v[:2], v[2:]]),
        lambda v: pl.Series(v),
        lambda v: pd.Series(v),
        lambda v: pd.Series(v, dtype="string"),
        lambda v: pd.Series(v, dtype="category"),
        lambda v: np.array(v, dtype=object),
    ],
)
def test_string_labels_with_pos_label(make):
    labels = ["fraud" if v else "ok" for v in Y]
    assert BinarySketch().update(make(labels), S, pos_label="fraud") == _ref()


def test_string_labels_without_pos_label():
    msg = _raises(InputError, BinarySketch(), ["a", "b"], [0.1, 0.2], match="pos_label")
    assert "non-numeric" in msg


def test_all_one_class_chunks():
    s = BinarySketch().update([1, 1], [0.8, 0.9]).update([0, 0], [0.1, 0.2])
    assert s == BinarySketch().update([1, 1, 0, 0], [0.8, 0.9, 0.1, 0.2])
    assert float(s.roc_auc()) == 1.0


def test_pos_label_and_sketch_agree():
    s = BinarySketch(pos_label="p").update(["p", "n"], [0.9, 0.1], pos_label="p")
    _raises(InputError, s, ["x", "n"], [0.9, 0.1], pos_label="x", match="pos_label='x' differs")


@pytest.mark.parametrize(
    "first, second, value",
    [
        ([0, 1], [-1, 1], "-1"),
        ([-1, 1], [0, 1], "0"),
        (np.array([0, 1], dtype=np.int8), np.array([-1, 1], dtype=np.int8), "-1"),
        (np.array([0.0, 1.0]), np.array([-1.0, 1.0]), "-1"),
        ([1, 1, 0], [1, -1], "-1"),
    ],
)
def test_switching_negative_coding_raises(first, second, value):
    s = BinarySketch().update(first, np.linspace(0.1, 0.9, len(first)))
    msg = _raises(InputError, s, second, [0.2, 0.3][: len(second)], match="negative class changed")
    n = len(first)
    # Row of the first offending negative, counted from the start of the stream.
    bad_row = n + [i for i, v in enumerate(second) if v != 1][0]
    assert f"row {bad_row}" in msg and value in msg


def test_bool_then_minus_one_then_zero_raises():
    # bool is compatible with either coding, but once -1 is seen, 0 is a third value.
    s = BinarySketch().update(np.array([True, True]), [0.5, 0.6])
    s.update([-1, 1], [0.1, 0.2])
    msg = _raises(InputError, s, [1, 0, 1], [0.3, 0.4, 0.5], match="negative class changed")
    assert "row 5" in msg
    # while bool after a numeric coding is fine
    t = BinarySketch().update([0, 1], [0.1, 0.2]).update(np.array([False, True]), [0.3, 0.4])
    assert t.negative_weight == 2


def test_three_values_in_one_chunk():
    msg = _raises(InputError, BinarySketch(), [0, 1, -1, 1], [0.1] * 4, match="mixes 0")
    assert "row 0" in msg and "row 2" in msg


def test_third_value_with_pos_label_across_chunks():
    s = BinarySketch(pos_label="a").update(["a", "b", "b"], [0.1, 0.2, 0.3])
    msg = _raises(InputError, s, ["a", "c"], [0.4, 0.5], match="negative class changed")
    assert "row 4" in msg and "'c'" in msg and "'b'" in msg


def test_third_value_with_pos_label_in_chunk():
    s = BinarySketch().update(["x", "a"], [0.1, 0.2], pos_label="a")
    msg = _raises(InputError, s, ["a", "x", "y", "y"], [0.1] * 4, match="more than two values")
    assert "'x' (row 3)" in msg and "'y' (row 4)" in msg


def test_int_pos_label_third_value():
    s = BinarySketch(pos_label=2)
    msg = _raises(InputError, s, np.array([2, 1, 0, 2]), [0.1] * 4, match="more than two values")
    assert "1 (row 1)" in msg and "0 (row 2)" in msg and "np." not in msg


@pytest.mark.parametrize(
    "labels, bad_value, bad_count, bad_row",
    [
        ([0, 1, 2, 1, 2], "2", 2, 2),
        (np.array([0, 1, 5, 1], dtype=np.int8), "5", 1, 2),
        (np.array([0.0, 1.0, 0.5, 1.0]), "0.5", 1, 2),
        ([1, -2, 0, 1], "-2", 1, 1),
    ],
)
def test_non_binary_labels(labels, bad_value, bad_count, bad_row):
    s = BinarySketch().update([0, 1, 1], [0.1, 0.2, 0.3])
    msg = _raises(InputError, s, labels, np.linspace(0, 1, len(labels)), match="outside")
    assert f"has {bad_count} label(s)" in msg
    assert f"first {bad_value} at row {3 + bad_row}" in msg


# -- NaN / null ----------------------------------------------------------------------------


def test_nan_scores_raise_counts_and_row_across_chunks():
    s = BinarySketch().update([0, 1, 1], [0.1, 0.2, 0.3])
    msg = _raises(
        InputError, s, [0, 1, 0, 1], [0.5, np.nan, 0.7, np.nan], match="y_score has 2 NaN"
    )
    assert "first at row 4" in msg and "nan_policy='skip'" in msg


def test_nan_float32_scores_raise():
    msg = _raises(InputError, BinarySketch(), [0, 1], np.array([0.5, np.nan], dtype=np.float32), match="NaN")
    assert "row 1" in msg


def test_nan_skip():
    y = np.array([0, 1, 1, 0, 1])
    sc = np.array([0.1, np.nan, 0.3, np.nan, 0.9])
    s = BinarySketch().update(y, sc, nan_policy="skip")
    keep = ~np.isnan(sc)
    assert s.counters["n_nan"] == 2
    assert s.n_rows == 5
    ref = BinarySketch().update(y[keep], sc[keep])
    assert s.table().P == ref.table().P == 2 and s.table().N == ref.table().N == 1
    assert np.array_equal(s._compact()[0], ref._compact()[0])
    assert np.array_equal(s._compact()[1], ref._compact()[1])
    assert float(s.roc_auc()) == roc_auc_score(y[keep], sc[keep])


def test_nan_skip_weighted():
    s = BinarySketch().update([0, 1, 1], [0.1, np.nan, 0.8], [2.0, 5.0, 1.0], nan_policy="skip")
    assert s.counters["n_nan"] == 1
    assert s.positive_weight == 1.0 and s.negative_weight == 2.0


def test_bad_nan_policy():
    with pytest.raises(ValueError, match="nan_policy"):
        BinarySketch().update([0, 1], [0.1, 0.2], nan_policy="ignore")


NULL_SCORES = {
    "arrow": lambda: pa.array([0.1, None, 0.3, None]),
    "arrow_chunked": lambda: pa.chunked_array([[0.1, None], [0.3, None]]),
    "polars": lambda: pl.Series([0.1, None, 0.3, None]),
    "pandas_Float64": lambda: pd.Series([0.1, None, 0.3, None], dtype="Float64"),
    "pandas_Int64": lambda: pd.Series([1, None, 3, None], dtype="Int64"),
    "pandas_object": lambda: pd.Series([0.1, None, 0.3, None], dtype=object),
    "list": lambda: [0.1, None, 0.3, None],
}


@pytest.mark.parametrize("kind", sorted(NULL_SCORES))
def test_null_scores(kind):
    s = BinarySketch(FloatGrid()).update([1], [0.5])
    msg = _raises(InputError, s, [0, 1, 0, 1], NULL_SCORES[kind](), match="y_score has 2 NaN or null")
    assert "first at row 2" in msg
    s.update([0, 1, 0, 1], NULL_SCORES[kind](), nan_policy="skip")
    assert s.counters["n_nan"] == 2 and s.n_rows == 5
    assert s.table().P + s.table().N == 3


NULL_LABELS = {
    "arrow_int": lambda: pa.array([0, None, 1, None]),
    "arrow_bool": lambda: pa.array([False, None, True, None]),
    "arrow_chunked": lambda: pa.chunked_array([[0, None], [1, None]]),
    "polars_int": lambda: pl.Series([0, None, 1, None]),
    "polars_bool": lambda: pl.Series([False, None, True, None]),
    "pandas_Int64": lambda: pd.Series([0, None, 1, None], dtype="Int64"),
    "pandas_boolean": lambda: pd.Series([False, None, True, None], dtype="boolean"),
    "float_nan": lambda: np.array([0.0, np.nan, 1.0, np.nan]),
    "list_none": lambda: [0, None, 1, None],
}


@pytest.mark.parametrize("kind", sorted(NULL_LABELS))
def test_null_labels(kind):
    s = BinarySketch().update([1], [0.5])
    msg = _raises(InputError, s, NULL_LABELS[kind](), [0.1, 0.2, 0.3, 0.4], match="2 (NaN or )?null label")
    assert "first at row 2" in msg


@pytest.mark.parametrize("kind", ["arrow", "pandas"])
def test_null_labels_with_pos_label(kind):
    labels = ["a", None, "b", None]
    y = pa.array(labels) if kind == "arrow" else pd.Series(labels)
    s = BinarySketch(pos_label="a").update(["a"], [0.5])
    msg = _raises(InputError, s, y, [0.1, 0.2, 0.3, 0.4], match="2 (NaN or )?null label")
    assert "first at row 2" in msg


# -- weights -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "weights, first",
    [
        ([1.0, -1.0, 1.0, -2.0], "-1.0"),
        ([1.0, np.nan, 1.0, np.nan], "nan"),
        ([1.0, np.inf, 1.0, -np.inf], "inf"),
        (pa.array([1.0, None, 1.0, None]), "nan"),
        (pd.Series([1.0, None, 1.0, None], dtype="Float64"), "nan"),
        (pl.Series([1.0, None, 1.0, None]), "nan"),
    ],
)
def test_bad_weights(weights, first):
    s = BinarySketch().update([0, 1], [0.1, 0.2], [1.0, 1.0])
    msg = _raises(InputError, s, [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], weights, match="sample_weight has 2")
    assert f"first {first} at row 3" in msg
    assert ">= 0" in msg


def test_bad_weight_on_first_update_leaves_sketch_unchanged():
    # The label encoder must not remember labels from a chunk that was rejected.
    s = BinarySketch()
    _raises(InputError, s, [0, 1], [0.1, 0.2], [1.0, -1.0], match="sample_weight")
    # ... so the rejected chunk's coding does not constrain the next one either.
    s.update([-1, 1], [0.1, 0.2])
    assert s.negative_weight == 1


def test_zero_weights_counted_not_binned():
    y = np.array([0, 1, 1, 0])
    sc = np.array([0.1, 0.2, 0.9, 0.7])
    w = np.array([1.0, 0.0, 2.0, 0.0])
    s = BinarySketch().update(y, sc, w)
    assert s.counters["n_zero_weight"] == 2
    assert s.n_rows == 4
    assert s.n_occupied_bins == 2
    ref = BinarySketch().update(y[w > 0], sc[w > 0], w[w > 0])
    assert np.array_equal(s._compact()[1], ref._compact()[1])
    assert float(s.roc_auc()) == roc_auc_score(y, sc, sample_weight=w)
    s.update([1], [0.3], [0.0])
    assert s.counters["n_zero_weight"] == 3


def test_weights_wrong_length():
    s = BinarySketch().update([0, 1], [0.1, 0.2])
    msg = _raises(InputError, s, [0, 1, 1], [0.1, 0.2, 0.3], [1.0, 2.0], match="sample_weight has 2 rows")
    assert "3" in msg


def test_string_weights():
    s = BinarySketch().update([0, 1], [0.1, 0.2])
    _raises(InputTypeError, s, [0, 1], [0.1, 0.2], ["a", "b"], match="sample_weight must be numeric")
    _raises(
        InputTypeError, s, [0, 1], [0.1, 0.2], np.array(["a", "b"], dtype=object),
        match="sample_weight must be numeric",
    )


# -- shapes and types --------------------------------------------------------------------------


def test_mismatched_lengths():
    msg = _raises(InputError, BinarySketch(), [0, 1, 1], [0.1, 0.2], match="y_true has 3 rows but y_score has 2")
    assert msg


@pytest.mark.parametrize("which", ["y_true", "y_score", "sample_weight"])
def test_two_dimensional(which):
    args = {"y_true": np.array([0, 1]), "y_score": np.array([0.1, 0.2]), "sample_weight": np.ones(2)}
    args[which] = args[which].reshape(1, 2)
    s = BinarySketch().update([0, 1], [0.1, 0.2])
    _raises(InputTypeError, s, args["y_true"], args["y_score"], args["sample_weight"],
            match=rf"{which} must be 1-D.*\(1, 2\)")


def test_two_dimensional_frames():
    df = pd.DataFrame({"a": [0.1, 0.2], "b": [0.3, 0.4]})
    _raises(InputTypeError, BinarySketch(), [0, 1], df, match="y_score must be 1-D")
    _raises(InputTypeError, BinarySketch(), [0, 1], [[0.1], [0.2]], match="y_score must be 1-D")


def test_scalars():
    _raises(InputTypeError, BinarySketch(), 1, 0.5, match="y_true must be a 1-D array-like, got a scalar")
    _raises(InputTypeError, BinarySketch(), [1], "0.5", match="y_score must be a 1-D array-like")


@pytest.mark.parametrize(
    "scores",
    [
        ["0.1", "0.2", "0.3"],
        np.array(["0.1", "0.2", "0.3"]),
        pa.array(["0.1", "0.2", "0.3"]),
        pl.Series(["0.1", "0.2", "0.3"]),
        pd.Series(["0.1", "0.2", "0.3"]),
        pd.Series(["0.1", "0.2", "0.3"], dtype="string"),
        np.array([0.1, "x", 0.3], dtype=object),
        np.array([True, False, True]),
    ],
)
def test_string_or_bool_scores_rejected(scores):
    msg = _raises(InputTypeError, BinarySketch(), [0, 1, 1], scores, match="y_score must be numeric")
    assert msg


def test_object_score_error_names_row():
    s = BinarySketch().update([0], [0.1])
    msg = _raises(InputTypeError, s, [0, 1, 1], np.array([0.1, 0.2, "x"], dtype=object), match="row 3")
    assert "'x'" in msg


def test_errors_are_builtin_subclasses():
    with pytest.raises(ValueError):
        BinarySketch().update([0, 1], [np.nan, 0.2])
    with pytest.raises(TypeError):
        BinarySketch().update([0, 1], ["a", "b"])


def test_row_offset_counts_skipped_and_zero_weight_rows():
    # Row numbers count every row passed so far, including skipped NaN and zero-weight rows.
    s = BinarySketch()
    s.update([0, 1], [np.nan, 0.2], nan_policy="skip")
    s.update([0, 1], [0.1, 0.2], [0.0, 1.0])
    msg = _raises(InputError, s, [0, 1, 1], [0.1, 0.2, np.nan], match="first at row 6")
    assert "1 NaN" in msg


def test_chunking_matches_one_update_for_all_kinds():
    rng = np.random.default_rng(3)
    y = rng.random(500) < 0.3
    sc = rng.random(500)
    whole = BinarySketch().update(y, sc)
    parts = BinarySketch()
    for lo, hi, make in [(0, 100, pa.array), (100, 250, pl.Series), (250, 400, pd.Series), (400, 500, list)]:
        parts.update(make(y[lo:hi].tolist()), make(sc[lo:hi].tolist()))
    assert np.array_equal(whole._compact()[0], parts._compact()[0])
    v1, v2 = whole._compact()[1], parts._compact()[1]
    assert np.array_equal(v1[:, :, :3], v2[:, :, :3])
    assert np.allclose(v1[:, :, 3], v2[:, :, 3], rtol=1e-12)
    assert re.search(r"rows=500\b", repr(parts))


def test_bool_labels_with_non_canonical_bytes_count_as_true():
    from streameval import BinarySketch

    raw = np.array([0, 2, 1, 255, 0, 7], dtype=np.uint8)
    y = raw.view(bool)  # NumPy keeps the bytes: 2, 255 and 7 are True but not 1
    s = BinarySketch().update(y, np.array([0.1, 0.9, 0.8, 0.7, 0.2, 0.6]))
    assert s.table().P == 4 and s.table().N == 2
    assert float(s.roc_auc()) == 1.0
