"""Regressions found by a user-and-attacker trial of the Python API.

Each test pins one finding: an input that used to give a silent wrong answer, a crash or an
unclear error. References are independent (scikit-learn, or the counts written by hand).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import streameval
from streameval import BinarySketch, InputError, InputTypeError, UsageError

S4 = [0.1, 0.8, 0.3, 0.6]


# -- pos_label of another type than the labels ---------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "pos_label"),
    [
        (np.array([1, 1, 1, 1]), "1"),  # text positive, numeric labels: no row could ever match
        (np.array([True, True, True, True]), "True"),
        (np.array(["1", "1", "1", "1"]), 1),  # numeric positive, text labels
        (np.array(["a", "a", "a", "a"], dtype=object), 0),
        (pd.Series([1.0, 1.0, 1.0, 1.0]), "1.0"),
    ],
)
def test_pos_label_of_another_type_is_refused_not_silently_all_negative(labels, pos_label):
    # Before: every row was taken as a negative (positive weight 0) without a word when the chunk
    # held one label value; the error came only at a later chunk, or never.
    sk = BinarySketch(pos_label=pos_label)
    with pytest.raises(InputError, match=r"pos_label=.*(text|number)"):
        sk.update(labels, S4)
    assert sk.n_rows == 0


def test_pos_label_of_the_same_type_absent_from_a_chunk_is_still_accepted():
    # a first chunk of negatives only is legitimate: the positive class comes later
    sk = BinarySketch(pos_label="fraud").update(np.array(["ok", "ok"]), [0.1, 0.2])
    sk.update(np.array(["fraud", "ok"]), [0.9, 0.3])
    assert sk.positive_weight == 1.0 and sk.negative_weight == 3.0
    assert float(sk.roc_auc()) == roc_auc_score([0, 0, 1, 0], [0.1, 0.2, 0.9, 0.3])
    # numbers of different widths are one type: pos_label=1 on float labels, True on 0/1
    assert float(BinarySketch(pos_label=1).update([0.0, 1.0, 0.0, 1.0], S4).roc_auc()) == 1.0
    assert float(BinarySketch(pos_label=True).update([0, 1, 0, 1], S4).roc_auc()) == 1.0


@pytest.mark.parametrize("pos_label", [(1, 2), [1], np.array([1, 2])])
def test_non_scalar_pos_label_is_refused(pos_label):
    # Before: pos_label=(1, 2) broadcast against two rows [1, 2] made both rows positive.
    with pytest.raises(InputTypeError, match="pos_label must be a single label value"):
        BinarySketch(pos_label=pos_label).update(np.array([1, 2]), [0.1, 0.2])


# -- text weights -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "weights", [["1", "2", "1", "1"], np.array(["1", "2", "1", "1"]), np.array([1.0, "2", 1.0, 1.0], dtype=object)]
)
def test_text_weights_are_refused_like_text_scores(weights):
    # Before: NumPy parsed the strings, while text scores were refused.
    with pytest.raises(InputTypeError, match="sample_weight must be numeric"):
        BinarySketch().update([0, 1, 0, 1], S4, weights)


def test_numeric_object_weights_are_still_accepted():
    w = np.array([1.0, 2, 1.5, 1], dtype=object)
    got = BinarySketch().update([0, 1, 0, 1], S4, w).roc_auc()
    assert float(got) == roc_auc_score([0, 1, 0, 1], S4, sample_weight=w.astype(float))


# -- evaluate(): options a multiclass evaluation does not take ----------------------------------

MC = pd.DataFrame({"a": [0.7, 0.2, 0.1, 0.3], "b": [0.2, 0.5, 0.3, 0.4], "c": [0.1, 0.3, 0.6, 0.3], "y": [0, 1, 2, 2]})


@pytest.mark.parametrize(
    "option",
    [
        {"ci": True},
        {"bootstrap": 20},
        {"row_id": "y"},
        {"pos_label": 1},
        {"thresholds": [0.3]},
        {"positive_if": ">"},
        {"nan_policy": "skip"},
    ],
)
def test_multiclass_evaluate_refuses_binary_only_options(option):
    # Before: silently ignored (no intervals, no replicates, NaN rows not skipped, ...).
    with pytest.raises(UsageError, match=next(iter(option))):
        streameval.evaluate(MC, score=["a", "b", "c"], label="y", **option)


def test_multiclass_evaluate_default_options_still_work():
    r = streameval.evaluate(MC, score=["a", "b", "c"], label="y", nan_policy="raise", positive_if=">=", ci=False)
    assert r.metrics["accuracy"] == 0.75


def test_multiclass_score_glob_over_a_pandas_frame():
    # Before: "The truth value of a Index is ambiguous" (a ValueError from pandas).
    got = streameval.evaluate(MC, score="[abc]", label="y")
    want = streameval.evaluate(MC, score=["a", "b", "c"], label="y")
    assert got.metrics == want.metrics
    with pytest.raises(UsageError, match="matches 0 column"):
        streameval.evaluate(MC, score="p_*", label="y")


# -- evaluate(): thresholds ----------------------------------------------------------------------

DF = pd.DataFrame({"p": [0.1, 0.8, 0.3, 0.6, 0.5], "y": [0, 1, 0, 1, 1]})


def test_evaluate_accepts_one_number_as_thresholds():
    # Before: TypeError "'float' object is not iterable".
    one = streameval.evaluate(DF, score="p", label="y", thresholds=0.5)
    listed = streameval.evaluate(DF, score="p", label="y", thresholds=[0.5])
    assert one.confusion == listed.confusion
    assert (one.confusion[0]["tp"], one.confusion[0]["fp"]) == (3.0, 0.0)


@pytest.mark.parametrize("thresholds", ["0.5", ["0.5"], [None], [0.5, "x"]])
def test_evaluate_refuses_text_thresholds_clearly(thresholds):
    # Before: "could not convert string to float: '.'" (a string iterated character by character).
    with pytest.raises(UsageError, match="thresholds must be"):
        streameval.evaluate(DF, score="p", label="y", thresholds=thresholds)


def _mc_sources(tmp_path):
    import duckdb
    import polars as pl
    import pyarrow as pa

    frame = MC.rename(columns={"a": "p_a", "b": "p_b", "c": "p_c"})
    path = tmp_path / "mc.parquet"
    frame.to_parquet(path)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return frame, {
        "pandas": frame,
        "polars": pl.from_pandas(frame),
        "arrow_table": table,  # Table.columns are the data, not the names
        "record_batches": table.to_batches(max_chunksize=2),  # a list, but not of paths
        "duckdb": duckdb.from_arrow(table),
        "path": str(path),
        "pathlib": path,
        "dict": {c: frame[c].to_numpy() for c in frame},
    }


def test_multiclass_score_glob_over_every_source_kind(tmp_path):
    # Before: pandas raised "truth value of an Index is ambiguous", an Arrow table matched 0 columns
    # (its arrays were taken for names), a list of record batches was read as file names.
    from sklearn.metrics import accuracy_score

    frame, sources = _mc_sources(tmp_path)
    want = accuracy_score(frame["y"], frame[["p_a", "p_b", "p_c"]].to_numpy().argmax(axis=1))
    for kind, source in sources.items():
        got = streameval.evaluate(source, score="p_*", label="y")
        assert got.metrics["accuracy"] == want, kind
        assert list(got.sketch.classes) == [0, 1, 2], kind


# -- average precision with subnormal weights ------------------------------------------------------


@pytest.mark.parametrize("weight", [5e-324, 1e-310, 3e-320])
def test_average_precision_is_scale_free_down_to_subnormal_weights(weight):
    # Before: 0.75 against scikit-learn's 0.5845 for weights 5e-324, reported as exact: each
    # positive's share p * precision was rounded in the subnormal range.
    from sklearn.metrics import average_precision_score

    y = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    s = np.linspace(0.0, 1.0, 8)
    w = np.full(8, weight)
    got = BinarySketch().update(y, s, w).average_precision()
    want = average_precision_score(y, s)  # unit weights: AP depends on weight ratios only
    assert got.exact
    assert abs(got.value - want) < 1e-12
    assert abs(got.value - average_precision_score(y, s, sample_weight=w)) < 1e-12
    # continuous bins: the bounds too are scale-free
    coarse = streameval.LinearGrid(0, 1, 2)
    unit = BinarySketch(coarse).update(y, s).average_precision()
    tiny = BinarySketch(coarse).update(y, s, w).average_precision()
    assert not unit.exact
    assert abs(tiny.lower - unit.lower) < 1e-12 and abs(tiny.upper - unit.upper) < 1e-12


# -- a score column read as text --------------------------------------------------------------------


def test_text_scores_name_the_first_value_that_is_not_a_number():
    # Before: "got text in 4 row(s); row 0 holds '0.1'": a CSV reader types the whole column as
    # text for one bad cell, and the message pointed at a good row.
    scores = np.array(["0.1", "0.8", "abc", "0.6"], dtype=object)
    with pytest.raises(InputTypeError, match=r"row 2 holds 'abc'"):
        BinarySketch().update([0, 1, 0, 1], scores)


def test_scores_that_are_all_numbers_stored_as_text_say_so():
    scores = np.array(["0.1", "0.8", "0.3", "0.6"], dtype=object)
    with pytest.raises(InputTypeError, match="numbers stored as text"):
        BinarySketch().update([0, 1, 0, 1], scores)


def test_csv_with_one_bad_score_cell_names_it(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("p,y\n0.1,0\n0.8,1\nabc,0\n0.6,1\n")
    with pytest.raises(InputTypeError, match=r"bad\.csv.*row 2 holds 'abc'"):
        streameval.evaluate(str(path), score="p", label="y")


# -- compare_paired --------------------------------------------------------------------------------

PAIRED = pd.DataFrame({"a": [0.1, 0.8, 0.3, 0.6, 0.7, 0.2], "b": [0.2, 0.6, 0.4, 0.5, 0.3, 0.1], "y": [0, 1, 0, 1, 1, 0]})


def test_compare_paired_takes_a_comma_string_of_two_columns():
    # Before: "got 3: ['a', ',', 'b']" (the string's characters)
    got = streameval.compare_paired(PAIRED, scores="a, b", label="y")
    want = streameval.compare_paired(PAIRED, scores=["a", "b"], label="y")
    assert got.names == ("a", "b")
    assert got.delong.estimate.value == want.delong.estimate.value
    assert got.delong.estimate.value == pytest.approx(
        roc_auc_score(PAIRED["y"], PAIRED["a"]) - roc_auc_score(PAIRED["y"], PAIRED["b"]), abs=1e-12
    )


def test_compare_paired_refuses_one_column_twice():
    # Before: KeyError: 0
    with pytest.raises(UsageError, match="two different score columns"):
        streameval.compare_paired(PAIRED, scores=["a", "a"], label="y")


def test_compare_paired_on_no_rows_names_the_source_in_one_line():
    # Before: the DataFrame's repr, over several lines
    with pytest.raises(streameval.EmptyInputError, match=r"^pandas DataFrame: no rows to compare$"):
        streameval.compare_paired(PAIRED.iloc[:0], scores=["a", "b"], label="y")


# -- one column in two roles ------------------------------------------------------------------------


def _frames(df):
    import polars as pl
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    return {"pandas": df, "polars": pl.from_pandas(df), "arrow": table, "dict": {c: df[c].to_numpy() for c in df},
            "batches": table.to_batches()}


def test_one_column_as_score_and_weight_in_every_frame_source():
    # Before: KeyError 0 (pandas) or 'Field "p" exists 2 times in schema' (Arrow tables, mappings)
    df = pd.DataFrame({"p": [0.1, 0.8, 0.3, 0.6, 0.5], "y": [0, 1, 0, 1, 0]})
    want = roc_auc_score(df["y"], df["p"], sample_weight=df["p"])
    for kind, source in _frames(df).items():
        got = streameval.evaluate(source, score="p", label="y", weight="p")
        assert got.metrics["roc_auc"]["value"] == pytest.approx(want, abs=1e-12), kind


def test_compare_paired_with_the_weight_a_score_column():
    # Before: KeyError 0 (the second model's score column also given as the weight)
    df = PAIRED.assign(b=PAIRED["b"] * 10)  # weights read as frequencies: more than one row per class
    got = streameval.compare_paired(df, scores=["a", "b"], label="y", weight="b")
    want = roc_auc_score(df["y"], df["a"], sample_weight=df["b"]) - roc_auc_score(df["y"], df["b"], sample_weight=df["b"])
    assert got.delong.estimate.value == pytest.approx(want, abs=1e-12)


def test_pandas_frame_with_number_column_names():
    # Before: KeyError '0' (columns are matched by their text)
    df = pd.DataFrame({0: [0.1, 0.8, 0.3, 0.6], 1: [0, 1, 0, 1]})
    assert streameval.evaluate(df, score="0", label="1").metrics["roc_auc"]["value"] == 1.0


def test_pandas_frame_with_a_duplicated_column_says_so():
    df = pd.DataFrame([[0.1, 0.2, 0], [0.8, 0.1, 1]], columns=["p", "p", "y"])
    with pytest.raises(streameval.SourceError, match="column 'p' appears 2 times"):
        streameval.evaluate(df, score="p", label="y")


def test_compare_paired_errors_name_the_source_and_the_model_column(tmp_path):
    # Before: "y_score has 1 NaN or null value(s), first at row 1" - which of the two models?
    df = PAIRED.assign(b=[0.2, 0.6, np.nan, 0.5, 0.3, 0.1])
    path = tmp_path / "two.parquet"
    df.to_parquet(path)
    with pytest.raises(InputError, match=r"two\.parquet: score 'b' has 1 NaN or null value\(s\), first at row 2"):
        streameval.compare_paired(str(path), scores=["a", "b"], label="y")
    with pytest.raises(InputTypeError, match=r"pandas DataFrame: score 'b' must be numeric, got (large_)?string"):
        streameval.compare_paired(df.assign(b=df["b"].astype(str)), scores=["a", "b"], label="y")
    with pytest.raises(InputError, match=r"pandas DataFrame: label 'y' has 1 label\(s\) outside"):
        streameval.compare_paired(PAIRED.assign(y=[0, 1, 2, 1, 1, 0]), scores=["a", "b"], label="y")



# -- multiclass score columns named after the classes, in another order ---------------------------


def test_score_columns_named_after_classes_in_another_order_are_refused():
    # Before: p_fox scored class "cat" (columns are matched to the sorted labels by position):
    # accuracy 0.0 here for the true 1.0, and every other metric as wrong, without a word.
    df = pd.DataFrame({"p_fox": [0.1, 0.1, 0.7], "p_cat": [0.8, 0.2, 0.1], "p_dog": [0.1, 0.7, 0.2],
                       "y": ["cat", "dog", "fox"]})
    with pytest.raises(UsageError, match="list them in class order: p_cat,p_dog,p_fox"):
        streameval.evaluate(df, score="p_fox,p_cat,p_dog", label="y")
    right = streameval.evaluate(df, score="p_cat,p_dog,p_fox", label="y")
    assert right.metrics["accuracy"] == 1.0
    # a common suffix, and integer classes
    ints = pd.DataFrame({"p_2_prob": [0.1, 0.2, 0.7], "p_0_prob": [0.8, 0.1, 0.1], "p_1_prob": [0.1, 0.7, 0.2], "y": [0, 1, 2]})
    with pytest.raises(UsageError, match="p_0_prob,p_1_prob,p_2_prob"):
        streameval.evaluate(ints, score="p_2_prob,p_0_prob,p_1_prob", label="y")


def test_score_columns_not_named_after_classes_keep_their_order():
    df = pd.DataFrame({"a": [0.8, 0.2, 0.1], "b": [0.1, 0.7, 0.2], "c": [0.1, 0.1, 0.7], "y": ["cat", "dog", "fox"]})
    assert streameval.evaluate(df, score="a,b,c", label="y").metrics["accuracy"] == 1.0
    # names that match no class, or two classes, are not judged
    from streameval.sketch.multiclass_inputs import check_column_order

    check_column_order(["x_b", "x_a"], ["a", "b_a"])  # "x_a" ends with "a" only; "x_b" with no class
    check_column_order(["p_2", "p_1"], [1, 2, 3])  # another number of columns


# -- comparisons of weighted sketches: only the weights' ratios matter -----------------------------


def _two_samples():
    rng = np.random.default_rng(0)
    n = 2000
    s = np.round(rng.random(n), 2)
    s2 = np.round(np.clip(s + rng.normal(0, 0.2, n), 0, 1), 2)
    y = (rng.random(n) < s).astype(int)
    return s, s2, y


@pytest.mark.parametrize("metric", ["roc_auc", "recall@0.5", "precision@0.5"])
def test_compare_is_scale_free_in_the_weights(metric):
    # Before: weights read as frequencies: x1000 made p 7.5e-06 out of p 0.887, weights summing
    # to 1 gave NaN, while each sketch's own ci() (Kish) did not move.
    s, s2, y = _two_samples()
    rng = np.random.default_rng(1)
    w = rng.random(s.shape[0]) + 0.5

    def comparison(scale):
        a = BinarySketch().update(y[:1000], s[:1000], w[:1000] * scale)
        b = BinarySketch().update(y[1000:], s2[1000:], w[1000:] * scale)
        return streameval.compare(a, b, metric)

    ref = comparison(1.0)
    assert ref.method.endswith("Kish n_eff")
    for scale in (1000.0, 1.0 / w.sum(), 1e-6):
        c = comparison(scale)
        assert c.estimate.value == pytest.approx(ref.estimate.value, abs=1e-12)
        assert (c.ci_lower, c.ci_upper) == pytest.approx((ref.ci_lower, ref.ci_upper), abs=1e-9)
        assert c.p_value.value == pytest.approx(ref.p_value.value, rel=1e-9)
    # unit weights give the unweighted test
    unit = BinarySketch().update(y[:1000], s[:1000], np.ones(1000))
    plain = BinarySketch().update(y[:1000], s[:1000])
    other = BinarySketch().update(y[1000:], s2[1000:])
    got, want = streameval.compare(unit, other, metric), streameval.compare(plain, other, metric)
    assert (got.ci_lower, got.ci_upper, got.p_value.value) == pytest.approx(
        (want.ci_lower, want.ci_upper, want.p_value.value), abs=1e-12)



def test_sliced_average_precision_with_subnormal_weights_equals_scikit_learn():
    # the per-slice path (metrics.segmented) scales each group like average_precision does
    from sklearn.metrics import average_precision_score

    y = np.array([0, 1, 0, 1, 0, 1, 1, 0] * 2)
    s = np.r_[np.linspace(0.0, 1.0, 8), np.linspace(0.05, 0.95, 8)]
    g = np.repeat(["a", "b"], 8)
    df = pd.DataFrame({"p": s, "y": y, "w": np.full(16, 5e-324), "g": g})
    table = streameval.evaluate(df, score="p", label="y", weight="w", by="g").to_pandas()
    for key, part in df.groupby("g"):
        got = table.loc[table["g"] == key, "average_precision"].item()
        assert abs(got - average_precision_score(part["y"], part["p"])) < 1e-12, key


def test_numpy_integer_threads_are_accepted():
    # Before: "threads must be a positive integer, got np.int64(2)"
    want = streameval.evaluate(DF, score="p", label="y", threads=2).metrics
    assert streameval.evaluate(DF, score="p", label="y", threads=np.int64(2)).metrics == want
    assert streameval.evaluate(MC, score="a,b,c", label="y", threads=np.int32(1)).metrics["accuracy"] == 0.75
    for bad in (0, 2.0, True, np.int64(-1)):
        with pytest.raises(UsageError, match="threads must be a positive integer"):
            streameval.evaluate(DF, score="p", label="y", threads=bad)


def test_sketch_update_refuses_a_frame_of_class_columns_in_another_order():
    # MulticlassSketch.update matches y_score's columns to the sorted classes by position: a
    # DataFrame whose columns name the classes in another order was scored against the wrong class
    import polars as pl
    import pyarrow as pa

    y = ["cat", "dog", "fox"]
    cols = {"fox": [0.1, 0.1, 0.7], "cat": [0.8, 0.2, 0.1], "dog": [0.1, 0.7, 0.2]}
    for frame in (pd.DataFrame(cols), pl.DataFrame(cols), pa.table(cols)):
        with pytest.raises(UsageError, match="cat,dog,fox"):
            streameval.MulticlassSketch().update(y, frame)
    ordered = pd.DataFrame({k: cols[k] for k in ("cat", "dog", "fox")})
    s = streameval.MulticlassSketch().update(y, ordered)
    from sklearn.metrics import accuracy_score

    assert s.accuracy() == pytest.approx(accuracy_score(y, np.array(y)[ordered.to_numpy().argmax(1)]))
    assert s.accuracy() == 1.0


def test_sketch_update_takes_tables_of_class_columns_as_scikit_learn_takes_the_matrix():
    # pandas, Polars and Arrow tables with one column per class (in class order) are y_score matrices
    import polars as pl
    import pyarrow as pa
    from sklearn.metrics import log_loss

    rng = np.random.default_rng(3)
    y = rng.choice(["cat", "dog", "fox"], 300)
    p = rng.dirichlet(np.ones(3), 300).round(2)
    p[:, 2] = 1 - p[:, 0] - p[:, 1]
    cols = {"p_cat": p[:, 0], "p_dog": p[:, 1], "p_fox": p[:, 2]}
    want = log_loss(y, p, labels=["cat", "dog", "fox"])
    for frame in (pd.DataFrame(cols), pl.DataFrame(cols), pa.table(cols), pa.RecordBatch.from_pydict(cols)):
        s = streameval.MulticlassSketch().update(y, frame)
        assert float(s.log_loss()) == pytest.approx(want, abs=1e-12)
    with pytest.raises(InputError, match="NaN, null or infinite"):
        streameval.MulticlassSketch().update(y[:2], pa.table({"a": [0.5, None], "b": [0.5, 0.5], "c": [0.0, 0.5]}))


def test_multiclass_chunks_of_zero_weights_or_no_rows_add_nothing():
    # a small chunk whose weights are all 0 (or no rows at all) raised IndexError in the sort binning
    from sklearn.metrics import accuracy_score, log_loss

    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 200)
    p = rng.dirichlet(np.ones(3), 200).round(2)
    p[:, 2] = 1 - p[:, 0] - p[:, 1]
    w = np.r_[rng.random(150) + 0.5, np.zeros(50)]
    s = streameval.MulticlassSketch(classes=[0, 1, 2])
    s.update(y[:150], p[:150], sample_weight=w[:150])
    s.update(y[150:], p[150:], sample_weight=w[150:])  # every weight 0
    s.update(y[:0], p[:0])  # no rows
    assert float(s.log_loss()) == pytest.approx(log_loss(y, p, sample_weight=w, labels=[0, 1, 2]), abs=1e-12)
    assert s.accuracy() == pytest.approx(accuracy_score(y, p.argmax(1), sample_weight=w), abs=1e-12)
    empty = streameval.MulticlassSketch()
    empty.update(np.array([], dtype=int), np.empty((0, 3)))
    assert empty.n_rows == 0


def test_multiclass_nullable_frame_names_the_null_score():
    # a pandas Float64 frame holding pd.NA said "not numbers"; the null is named with its row and column
    y = [0, 1, 2, 1]
    frame = pd.DataFrame({"a": [0.5, 0.2, 0.1, 0.3], "b": [0.3, pd.NA, 0.2, 0.4], "c": [0.2, 0.3, 0.7, 0.3]},
                         dtype="Float64")
    with pytest.raises(InputError, match=r"row 1, column 1"):
        streameval.MulticlassSketch().update(y, frame)
    good = frame.fillna(0.5)
    s = streameval.MulticlassSketch().update(y, good)
    assert s.accuracy() == pytest.approx(np.mean(np.array(y) == good.to_numpy(dtype=float).argmax(1)))
