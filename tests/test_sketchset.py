"""SketchSet and SliceTable: every group equals scikit-learn on a pandas group-by of the same rows."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn import metrics as skm

from streameval import LinearGrid
from streameval.errors import InputError
from streameval.report import SliceTable
from streameval.sketch.sketchset import SketchSet
from streameval.windows import parse_window, window_starts


def _frame(n: int = 30000, seed: int = 0, decimals: int | None = 3, unlabelled: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "country": rng.choice(["fr", "de", "us", None], n),
        "model": rng.integers(0, 3, n),
        "y": (rng.random(n) < 0.3).astype(float),
        "w": rng.uniform(0.5, 2.0, n),
    })
    s = np.clip(rng.normal(0.4 + 0.2 * df.y, 0.2), 0, 1)
    df["s"] = np.round(s, decimals) if decimals is not None else s
    if unlabelled:
        df.loc[rng.random(n) < unlabelled, "y"] = np.nan
    return df


def _key(k1, k2):
    return (None if pd.isna(k1) else k1, int(k2))


def _build(df: pd.DataFrame, chunk: int, weighted: bool = False, grid=None) -> SketchSet:
    ss = SketchSet(["country", "model"], grid)
    for i in range(0, len(df), chunk):
        c = df.iloc[i:i + chunk]
        ss.update({"country": c.country.values, "model": c.model.values}, c.y.values, c.s.values,
                  c.w.values if weighted else None)
    return ss


@pytest.mark.parametrize("weighted", [False, True])
def test_every_group_equals_scikit_learn_on_discrete_scores(weighted):
    df = _frame()
    ss = _build(df, 7000, weighted)
    assert len(ss) == 12 and ss.n_rows == len(df)
    for (k1, k2), g in df.groupby(["country", "model"], dropna=False):
        sk = ss.sketch(_key(k1, k2))
        w = g.w if weighted else None
        auc, ap = sk.roc_auc(), sk.average_precision()
        assert auc.exact and auc.value == pytest.approx(skm.roc_auc_score(g.y, g.s, sample_weight=w), abs=1e-12)
        assert ap.value == pytest.approx(skm.average_precision_score(g.y, g.s, sample_weight=w), abs=1e-12)
        assert sk.log_loss() == pytest.approx(skm.log_loss(g.y, g.s, sample_weight=w), abs=1e-12)
        assert sk.brier_score() == pytest.approx(skm.brier_score_loss(g.y, g.s, sample_weight=w), abs=1e-12)
        c = sk.confusion(0.5)
        tn, fp, fn, tp = skm.confusion_matrix(g.y, g.s >= 0.5, sample_weight=w).ravel()
        assert (c.tp, c.fp, c.fn, c.tn) == pytest.approx((tp, fp, fn, tn), abs=1e-9)


def test_continuous_scores_lie_inside_the_bounds_and_chunking_does_not_matter():
    df = _frame(decimals=None, seed=1)
    grid = LinearGrid(0, 1, 64)
    a, b = _build(df, 30000, grid=grid), _build(df, 997, grid=grid)
    for (k1, k2), g in df.groupby(["country", "model"], dropna=False):
        sa, sb = a.sketch(_key(k1, k2)), b.sketch(_key(k1, k2))
        ka, va = sa._compact()
        kb, vb = sb._compact()
        assert np.array_equal(ka, kb)
        assert np.array_equal(va[:, :, :3], vb[:, :, :3])  # counts and min/max exactly
        np.testing.assert_allclose(va[:, :, 3], vb[:, :, 3], rtol=1e-12)  # score sums: rounding
        exact = skm.roc_auc_score(g.y, g.s)
        e = sa.roc_auc()
        assert e.lower - 1e-12 <= exact <= e.upper + 1e-12 and e.width > 0


def test_merge_rollup_and_overall_equal_grouping_by_the_coarser_key():
    df = _frame(seed=2)
    half = len(df) // 2
    a, b = _build(df.iloc[:half], 5000), _build(df.iloc[half:], 5000)
    both = a.merge(b)
    assert a.n_rows == half  # inputs unchanged
    whole = _build(df, 5000)
    for key in whole.keys():
        (k1, v1), (k2, v2) = both.sketch(key)._compact(), whole.sketch(key)._compact()
        assert np.array_equal(k1, k2) and np.array_equal(v1[:, :, :3], v2[:, :, :3])
    by_country = whole.rollup(["country"])
    assert sorted(by_country.keys(), key=str) == sorted([(k,) for k in (None, "de", "fr", "us")], key=str)
    for k, g in df.groupby("country", dropna=False):
        key = (None if pd.isna(k) else k,)
        assert by_country.sketch(key).roc_auc().value == pytest.approx(skm.roc_auc_score(g.y, g.s), abs=1e-12)
    assert whole.overall().roc_auc().value == pytest.approx(skm.roc_auc_score(df.y, df.s), abs=1e-12)
    assert whole.rollup([]).sketch(()).roc_auc().value == pytest.approx(skm.roc_auc_score(df.y, df.s), abs=1e-12)


def test_unlabelled_rows_are_counted_kept_and_estimated():
    df = _frame(seed=3, unlabelled=0.25)
    ss = _build(df, 8000)
    for (k1, k2), g in df.groupby(["country", "model"], dropna=False):
        key = _key(k1, k2)
        lab = g[g.y.notna()]
        counts = ss.counts(key)
        assert counts["n_rows"] == len(g) and counts["n_unlabelled"] == g.y.isna().sum()
        assert ss.sketch(key).roc_auc().value == pytest.approx(skm.roc_auc_score(lab.y, lab.s), abs=1e-12)
        bins, weight, _, _ = ss.score_histogram(key)
        assert weight.sum() == len(g)
        _, wu, _, _ = ss.score_histogram(key, labelled=False)
        assert wu.sum() == g.y.isna().sum()
    with pytest.raises(InputError, match="null label"):
        SketchSet(["c"]).update({"c": ["a", "b"]}, [1.0, np.nan], [0.2, 0.3], require_labels=True)


def test_estimated_performance_matches_truth_on_calibrated_scores():
    """CBPE: with calibrated scores the estimate is close to the measured value."""
    rng = np.random.default_rng(4)
    n = 200_000
    p = 1 / (1 + np.exp(-rng.normal(-1, 1.5, n)))
    y = (rng.random(n) < p).astype(float)
    ss = SketchSet([]).update([], np.full(n, np.nan), p)  # labels not arrived yet
    est = ss.unlabelled_estimate(())
    truth = skm.roc_auc_score(y, p)
    assert abs(est.roc_auc().value - truth) < 0.01
    c, true_pred = est.confusion(0.5), p >= 0.5
    assert abs(c.precision - y[true_pred].mean()) < 0.01
    assert abs(c.tp - y[true_pred].sum()) / y[true_pred].sum() < 0.02


def test_slice_table_is_tidy_and_agrees_with_group_by():
    df = _frame(seed=5, unlabelled=0.1)
    ss = _build(df, 10000)
    t = SliceTable.from_sketchset(ss, thresholds=[0.5])
    arrow = t.to_arrow()
    assert arrow.num_rows == 12 and arrow.column_names == t.columns
    assert t.to_polars().shape == (12, len(t.columns)) and len(t.to_pandas()) == 12
    for row in t.rows:
        g = df[(df.country.isna() if row["country"] is None else df.country == row["country"]) & (df.model == row["model"])]
        lab = g[g.y.notna()]
        assert row["n_rows"] == len(g) and row["n_labelled"] == len(lab)
        assert row["roc_auc"] == pytest.approx(skm.roc_auc_score(lab.y, lab.s), abs=1e-12)
        assert row["recall@0.5"] == pytest.approx(skm.recall_score(lab.y, lab.s >= 0.5), abs=1e-12)
        assert row["est_roc_auc"] is not None
    assert '"schema": "streameval.slices"' in t.to_json()
    text = t.to_text(width=200, limit=4)
    assert "12 rows; showing the 2 lowest and 2 highest by roc_auc" in text


def test_one_class_slice_gives_null_not_an_error():
    ss = SketchSet(["c"]).update({"c": ["a", "a", "b", "b"]}, [1, 1, 0, 1], [0.2, 0.3, 0.1, 0.9])
    t = SliceTable.from_sketchset(ss)
    row = {r["c"]: r for r in t.rows}
    assert row["a"]["roc_auc"] is None and row["b"]["roc_auc"] == 1.0


def test_group_cap_is_a_clear_error():
    ss = SketchSet(["id"], max_groups=10)
    with pytest.raises(InputError, match="more than 10 groups"):
        ss.update({"id": np.arange(50)}, np.zeros(50), np.linspace(0, 1, 50))


def test_windows_group_rows_by_calendar_period_and_null_times_are_kept():
    times = pa.array([dt.datetime(2026, 11, 20, 23, 59), dt.datetime(2026, 11, 21, 0, 0), None,
                      dt.datetime(2026, 11, 2, 8, 0)], pa.timestamp("us"))
    days = window_starts(times, parse_window("1d"))
    ss = SketchSet(["window"]).update({"window": days}, [0, 1, 1, 0], [0.1, 0.9, 0.5, 0.3])
    utc = dt.timezone.utc
    keys = {k[0].astimezone(utc) if k[0] else None for k in ss.keys()}
    assert keys == {dt.datetime(2026, 11, 20, tzinfo=utc), dt.datetime(2026, 11, 21, tzinfo=utc),
                    dt.datetime(2026, 11, 2, tzinfo=utc), None}
    months = window_starts(times, parse_window("1mo"), "Europe/Paris")
    assert {v.month if v else None for v in months.to_pylist()} == {11, None}
    with pytest.raises(ValueError, match="bad window"):
        parse_window("1 fortnight")


def _reference_cells(gid, y, s, w, n_bins, grid):
    """Cells and counters by brute force: one Python dict entry per (group, bin, class)."""
    cls = np.where(np.isnan(y), 2, y).astype(np.int64)
    bins = grid.bin_index(s)
    cells: dict[int, list[float]] = {}
    ctr = np.zeros((int(gid.max()) + 1, 8))
    for g, c, b, sc, wt in zip(gid, cls, bins, s, w, strict=True):
        ctr[g, 0] += 1
        ctr[g, 4] += c == 2
        ctr[g, 2] += wt == 0
        if np.isnan(sc):
            ctr[g, 1] += 1
            continue
        if wt == 0:
            continue
        if c != 2:
            if 0 <= sc <= 1:
                p = min(max(sc if c == 1 else 1 - sc, 2.0**-52), 1 - 2.0**-52)
                ctr[g, 5:] += (wt, wt * (1 - (sc if c == 1 else 1 - sc)) ** 2, -wt * np.log(p))
            else:
                ctr[g, 3] += 1
        code = (int(g) * n_bins + int(b)) * 3 + int(c)
        cell = cells.setdefault(code, [0.0, np.inf, -np.inf, 0.0])
        cell[0] += wt
        cell[1], cell[2] = min(cell[1], sc), max(cell[2], sc)
        cell[3] += wt * sc
    codes = np.array(sorted(cells), dtype=np.int64)
    return codes, np.array([cells[c] for c in codes]).reshape(-1, 4), ctr


@pytest.mark.parametrize("n_bins_grid", [None, LinearGrid(-1, 2, 30)])
def test_grouped_kernel_equals_a_brute_force_reference(n_bins_grid):
    """The hash-table kernel (growing from its smallest size, several chunks) gives exactly the
    cells and counters of a dict built row by row: NaN scores, zero weights, scores outside
    [0, 1], unlabelled rows and weights included."""
    from streameval import DEFAULT_GRID
    from streameval.kernels import grouped

    grid = n_bins_grid or DEFAULT_GRID
    rng = np.random.default_rng(11)
    n = 20_000
    gid = rng.integers(0, 37, n)
    y = rng.choice([0.0, 1.0, np.nan], n, p=[0.6, 0.3, 0.1])
    s = np.round(rng.normal(0.5, 0.4, n), 2)
    s[rng.random(n) < 0.01] = np.nan
    w = np.where(rng.random(n) < 0.05, 0.0, rng.choice([0.5, 1.0, 2.0], n))
    codes, cells, ctr = _reference_cells(gid, y, s, w, grid.n_bins, grid)
    table, used, counters = grouped.new_table(), 0, np.zeros((37, 8))
    cls = np.where(np.isnan(y), 2, y).astype(np.int64)
    for a in range(0, n, 3001):  # uneven chunks; the table grows from 1,024 slots
        b = min(a + 3001, n)
        table = grouped.reserve(table, used, b - a) if a % 2 else table  # and grows inside the kernel
        table, used = grouped.grouped_update(table, used, *grid.kernel_params(), grid.n_bins, gid[a:b], s[a:b],
                                             cls[a:b], w[a:b], True, counters)
    got_codes, got_cells = grouped.drain(table, used, 3 * grid.n_bins, 37)
    assert np.array_equal(got_codes, codes)
    assert np.array_equal(got_cells[:, :3], cells[:, :3])
    np.testing.assert_allclose(got_cells[:, 3], cells[:, 3], rtol=1e-12, atol=1e-12)
    assert np.array_equal(counters[:, :5], ctr[:, :5])
    np.testing.assert_allclose(counters[:, 5:], ctr[:, 5:], rtol=1e-12)
    # merging two sorted halves equals the whole
    half = len(codes) // 2
    mc, mv = grouped.merge_sorted(codes[:half], cells[:half], codes[half // 2:], cells[half // 2:])
    assert np.array_equal(mc, codes)
    overlap = slice(half // 2, half)
    assert np.array_equal(mv[overlap, 0], 2 * cells[overlap, 0]) and np.array_equal(mv[overlap, 1:3], cells[overlap, 1:3])


@pytest.mark.parametrize("spec", ["1s", "15min", "1h", "6h", "1d", "7d", "1w", "2w", "1mo", "2mo", "1q", "1y", "3y"])
def test_integer_window_flooring_equals_arrow(spec):
    """Windows in UTC are floored by integer arithmetic; Arrow's floor_temporal is the reference,
    over 1700-2300, with nulls, naive and zoned timestamps, and dates."""
    import pyarrow.compute as pc

    from streameval.windows import window_keys

    rng = np.random.default_rng(12)
    micros = rng.integers(-8_500_000_000, 10_400_000_000, 50_000) * 1_000_000 + rng.integers(0, 1_000_000, 50_000)
    times = pa.array(micros.astype("datetime64[us]"), mask=rng.random(50_000) < 0.01)
    win = parse_window(spec)
    expected = pc.floor_temporal(times.cast(pa.timestamp("us", tz="UTC")), multiple=win.multiple, unit=win.unit,
                                 week_starts_monday=True)
    assert window_starts(times, win).equals(expected)
    assert window_starts(times.cast(pa.timestamp("us", tz="UTC")), win).equals(expected)
    keys = window_keys(times[:2000], win)
    assert keys.cast(expected.type).equals(expected[:2000])
    days = pa.array(rng.integers(-3000, 3000, 1000).astype("datetime64[D]"))
    ref = pc.floor_temporal(days.cast(pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC")), multiple=win.multiple,
                            unit=win.unit, week_starts_monday=True)
    assert window_starts(days, win).equals(ref)


def _per_group_reference(ss: SketchSet, thresholds, positive_if):
    """Each group's columns from its own BinarySketch (the one-sketch metric code)."""
    import math
    import warnings

    from streameval import BinarySketch

    def num(x):
        return None if x is None or not math.isfinite(x) else float(x)

    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key in ss.keys():
            row = {}
            counts = ss.counts(key)
            try:
                est = ss.unlabelled_estimate(key) if counts["n_unlabelled"] else BinarySketch(ss.grid)
            except ValueError:
                est = BinarySketch(ss.grid)
            for prefix, sk in (("", ss.sketch(key)), ("est_", est)):
                t = sk.table()
                row[prefix + "positives"], row[prefix + "negatives"] = t.P, t.N
                row[prefix + "prevalence"] = t.P / (t.P + t.N) if t.P + t.N > 0 else None
                for name in ("roc_auc", "average_precision"):
                    e = getattr(sk, name)() if t.P > 0 and t.N > 0 else None
                    for suffix, attr in (("", "value"), ("_lower", "lower"), ("_upper", "upper")):
                        row[prefix + name + suffix] = None if e is None else num(getattr(e, attr))
                for th in thresholds:
                    c = sk.confusion(th, positive_if=positive_if) if t.P + t.N > 0 else None
                    for rate in ("precision", "recall", "fpr", "f1"):
                        row[f"{prefix}{rate}@{th:g}"] = None if c is None else num(getattr(c, rate))
            for name in ("log_loss", "brier_score"):
                try:
                    row[name.replace("_score", "")] = num(getattr(ss.sketch(key), name)())
                except ValueError:
                    row[name.replace("_score", "")] = None
            out[key] = row
    return out


@pytest.mark.parametrize("weighted,decimals,positive_if", [(False, 3, ">="), (True, None, ">="), (False, None, ">")])
def test_vectorized_table_equals_each_groups_binary_sketch(weighted, decimals, positive_if, monkeypatch):
    """The table's columns, computed for all groups at once, equal each group's BinarySketch
    results bit for bit, with unit or real weights (sums are added in NumPy's order).
    Covers unlabelled rows (est_ columns), one-class and label-less groups, thresholds inside
    bins (nearest exact threshold) and a group with scores outside [0, 1]."""
    df = _frame(n=20_000, seed=21, decimals=decimals, unlabelled=0.2)
    df.loc[(df.country == "us") & (df.model == 2), "y"] = 1.0  # one class
    df.loc[(df.country == "de") & (df.model == 1), "y"] = np.nan  # labels not arrived at all
    odd = (df.country == "fr") & (df.model == 0)
    df.loc[odd, "s"] = df.loc[odd, "s"] * 3 - 1  # outside [0, 1]: no log loss, no estimate
    ss = _build(df, 6000, weighted, grid=None if decimals == 3 else LinearGrid(-1, 2, 50))
    thresholds = [0.5, 0.2371]
    monkeypatch.setattr("streameval.report.slices._BATCH", 997)  # groups in several batches
    table = SliceTable.from_sketchset(ss, thresholds=thresholds, positive_if=positive_if)
    expected = _per_group_reference(ss, thresholds, positive_if)
    assert len(table.rows) == len(expected) == 12
    compared = 0
    for row in table.rows:
        want = expected[tuple(row[k] for k in ss.key_names)]
        for col, value in want.items():
            got = row[col]
            assert got == value, (col, got, value)  # bit for bit, weighted or not
            compared += value is not None
    assert compared > 12 * 30  # most columns are defined and were compared
    assert any("nearest exact threshold" in n for n in table.notes) or decimals == 3


def test_segment_sums_add_in_numpys_order():
    from streameval.kernels.grouped import segment_cumsum, segment_sum

    rng = np.random.default_rng(22)
    x = rng.random(50_000) * rng.choice([1.0, 1e-9, 1e9], 50_000)
    starts = np.unique(np.r_[0, rng.choice(50_000, 60), np.arange(7, 30), 1000, 1001, 50_000])
    starts = np.r_[starts[:3], starts[2], starts[3:]]  # an empty segment
    sums, runs = segment_sum(x, starts), segment_cumsum(x, starts)
    for g, (a, b) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
        assert sums[g] == np.sum(x[a:b])
        assert np.array_equal(runs[a:b], np.cumsum(x[a:b]))


def test_psi_column_equals_score_drift_group_by_group():
    """The table's psi (all groups at once) equals stats.score_drift on each group's histogram
    against its slice's reference histogram; slices without a reference get null."""
    from streameval.stats import score_drift

    df = _frame(n=30_000, seed=23, decimals=None, unlabelled=0.3)
    df["day"] = pd.Timestamp("2026-11-01") + pd.to_timedelta(np.random.default_rng(1).integers(0, 4, len(df)), "D")
    ref_rows = df[df.country != "fr"].sample(8000, random_state=2)
    ref = SketchSet(["country"]).update({"country": ref_rows.country.values}, ref_rows.y.values, ref_rows.s.values)
    df.loc[df.country == "us", "s"] **= 2  # drifted scores for one country
    ss = SketchSet(["window", "country"])
    ss.update({"window": pa.array(df.day.values), "country": df.country.values}, df.y.values, df.s.values)
    table = SliceTable.from_sketchset(ss, reference=ref)
    checked = 0
    for row in table.rows:
        key = (row["window"], row["country"])
        if row["country"] == "fr":
            assert row["psi"] is None
            continue
        b, w, lo, hi = ss.score_histogram(key)
        rb, rw, rlo, rhi = ref.score_histogram((row["country"],))
        want = score_drift(b, w, rb, rw, ranges=(lo, hi, rlo, rhi)).psi
        assert row["psi"] == pytest.approx(want, rel=1e-12, abs=1e-15)
        checked += 1
    assert checked == 12 and any("population stability index" in n for n in table.notes)
    assert max(r["psi"] for r in table.rows if r["country"] == "us") > 0.1 > max(
        r["psi"] for r in table.rows if r["country"] == "de")


def test_to_arrow_from_columns_equals_the_rows():
    df = _frame(n=5000, seed=24, unlabelled=0.1)
    t = SliceTable.from_sketchset(_build(df, 2000), thresholds=[0.5])
    fast = t.to_arrow()
    assert fast.equals(pa.Table.from_pylist(t.rows)) and fast.column_names == t.columns
    t.rows = t.rows[:3]  # rows replaced: built from the rows again
    assert t.to_arrow().num_rows == 3


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
@pytest.mark.parametrize("tz", [None, "UTC", "America/New_York"])
def test_fixed_windows_from_stored_integers_equal_arrows_flooring(unit, tz):
    """UTC windows of 1h/1d/1w... are numbered straight from the stored integers of second,
    milli- and microsecond timestamps (naive or zoned, with nulls, sliced arrays); Arrow's
    floor_temporal of the UTC instants is the reference."""
    import pyarrow.compute as pc

    from streameval.windows import _utc_fixed_keys, window_keys

    rng = np.random.default_rng(13)
    micros = rng.integers(-40_000_000, 60_000_000, 20_000) * 1_000_000 + rng.integers(0, 1_000_000, 20_000)
    per = {"s": 10**6, "ms": 10**3, "us": 1}[unit]
    times = pa.array(micros // per, pa.timestamp(unit, tz=tz), mask=rng.random(20_000) < 0.02).slice(11)
    for spec in ("1h", "6h", "1d", "7d", "1w", "2w"):
        win = parse_window(spec)
        keys = _utc_fixed_keys(times, win)
        assert keys is not None
        assert keys.equals(window_keys(times, win))
        expected = pc.floor_temporal(times.cast(pa.timestamp("us", tz=tz)).cast(pa.timestamp("us", tz="UTC")),
                                     multiple=win.multiple, unit=win.unit, week_starts_monday=True)
        assert keys.cast(expected.type).equals(expected), spec
    assert _utc_fixed_keys(times.cast(pa.timestamp("ns", tz=tz)), parse_window("1d")) is None  # the other path


def test_key_codes_combined_in_one_pass_equal_the_ids_taken_apart(monkeypatch):
    """Codes combined column by column through each column's id table (``FUSED``) give the same
    groups, created in the same order, as ids materialized per column first; every row's group
    is its own key (brute force), over chunks of small-range integers (int8, uint32), strings
    with nulls, dictionary-encoded columns and a wide-range integer column, with new values
    arriving in later chunks."""
    from streameval.sketch import groupkeys
    from streameval.sketch.groupkeys import KeyEncoder

    rng = np.random.default_rng(21)
    chunks = []
    for i in range(5):
        n = 3000 + 500 * i
        small = rng.integers(-5, 20 + 10 * i, n).astype("int8")
        wide = rng.choice(np.array([10**12, -(10**12), 7, 10**15 + i]), n)  # range too wide for a table
        text = pa.array(rng.choice(["fr", "de", None, f"x{i}"], n).tolist())
        dct = pa.array(rng.choice(["p", "q", f"r{i % 2}"], n).tolist()).dictionary_encode()
        u32 = rng.integers(0, 3 + i, n).astype("uint32")
        chunks.append((small, wide, text, dct, u32))

    def encode(fused: bool):
        monkeypatch.setattr(groupkeys, "FUSED", fused)
        keys: list[tuple] = []
        enc = KeyEncoder(["s", "w", "t", "d", "u"], lambda key: keys.append(key) or len(keys) - 1)
        ids = [enc.group_ids([pa.array(c[0]), pa.array(c[1]), c[2], c[3], pa.array(c[4])], len(c[0])) for c in chunks]
        return keys, ids

    (k1, i1), (k2, i2) = encode(True), encode(False)
    assert k1 == k2 and all(np.array_equal(a, b) for a, b in zip(i1, i2, strict=True))
    assert len(set(k1)) == len(k1) > 100
    for ids, (small, wide, text, dct, u32) in zip(i1, chunks, strict=True):
        rows = list(zip(small.tolist(), wide.tolist(), text.to_pylist(), dct.to_pylist(), u32.tolist(), strict=True))
        assert [k1[g] for g in ids.tolist()] == rows


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint32"])
def test_integer_keys_by_lookup_table_equal_arrows_dictionary(dtype, monkeypatch):
    """Integer key columns without nulls take ids from a lookup table over their range; the
    groups, their order of creation and every row's group equal those of Arrow's dictionary
    encoding, over chunks that bring new values."""
    from streameval.sketch.groupkeys import KeyEncoder

    rng = np.random.default_rng(14)
    lo = 0 if dtype == "uint32" else -60
    chunks = [rng.integers(lo, lo + 50 + 20 * i, 5000).astype(dtype) for i in range(4)]
    other = [rng.choice(["a", "b", None], 5000) for _ in range(4)]

    def encode(fast: bool):
        keys: list[tuple] = []
        enc = KeyEncoder(["k", "c"], lambda key: keys.append(key) or len(keys) - 1)
        if not fast:
            monkeypatch.setattr(enc, "_small_int_ids", lambda i, arr: None)
        ids = [enc.group_ids({"k": pa.array(k), "c": c}, len(k)) for k, c in zip(chunks, other, strict=True)]
        return keys, ids

    (k1, i1), (k2, i2) = encode(True), encode(False)
    assert k1 == k2 and all(np.array_equal(a, b) for a, b in zip(i1, i2, strict=True))
    for ids, k, c in zip(i1, chunks, other, strict=True):
        assert [k1[g] for g in ids[:50]] == [(int(a), b) for a, b in zip(k[:50], c[:50], strict=True)]
