"""report.columns and SliceTable's columnar values: the same Arrow arrays as pa.array, the same
CSV text as pyarrow's writer, the same rows, views and files as building from row dicts."""

from __future__ import annotations

import datetime as dt
import io
import zoneinfo

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from test_monitor_layout import imported_by

from streameval.report import SliceTable
from streameval.report.columns import arrow_column, float_values, write_csv_text
from streameval.sketch.sketchset import SketchSet

UTC = dt.timezone.utc
PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def _csv(table: pa.Table) -> str:
    buf = io.BytesIO()
    pacsv.write_csv(table, buf)
    return buf.getvalue().decode()


@pytest.mark.parametrize("values", [
    [1, 2, None, -3, 2**62],
    [0.5, None, -0.0, 1e300],
    ["fr", None, "", "ümlaut", "a,b", 'say "hi"'],
    [dt.datetime(2026, 11, 1, tzinfo=UTC), None, dt.datetime(1969, 12, 31, 23, 59, 59, 999, tzinfo=UTC)],
    [dt.datetime(2026, 11, 1, tzinfo=zoneinfo.ZoneInfo("UTC"))] * 3,
    [dt.datetime(2026, 3, 29, 1, 30, tzinfo=PARIS), dt.datetime(2026, 10, 25, 2, 30, tzinfo=PARIS)],
    [dt.datetime(2026, 11, 1, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30)))],  # fallback
    [dt.datetime(2026, 11, 1), None],  # naive: fallback
    [True, False, None],  # fallback
    [1, 2.5],  # mixed: fallback
    [dt.date(2026, 11, 1)],  # fallback
    [None, None],
])
def test_python_columns_equal_pa_array(values):
    mine, theirs = arrow_column(values), pa.array(values)
    assert mine.type == theirs.type
    assert mine.equals(theirs)
    assert mine.to_pylist() == theirs.to_pylist()


def test_ints_no_arrow_type_holds_fail_as_with_pa_array():
    with pytest.raises(OverflowError):
        pa.array([2**63 + 5, -1])
    with pytest.raises(OverflowError):
        arrow_column([2**63 + 5, -1])


def test_numpy_columns_equal_pa_array_of_their_python_values():
    floats = np.array([0.25, np.nan, np.inf, -np.inf, -0.0, 3.0])
    got = arrow_column(floats)
    want = pa.array(float_values(floats))
    assert got.type == want.type == pa.float64() and got.equals(want)
    assert float_values(floats) == [0.25, None, None, None, -0.0, 3.0]
    assert arrow_column(np.full(3, np.nan)).type == pa.null() == pa.array([None] * 3).type
    ints = np.array([5, -1, 2**40], dtype=np.int64)
    assert arrow_column(ints).equals(pa.array(ints.tolist()))


@pytest.mark.parametrize("tz", ["UTC", "Europe/Paris", "+05:30"])
@pytest.mark.parametrize("nulls", [False, True])
def test_csv_text_equals_arrows_writer(tz, nulls):
    rng = np.random.default_rng(1)
    n = 500
    micros = (1_790_000_000 + rng.integers(0, 40, n) * 86_400) * 10**6
    window = pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz=tz))
    if nulls:
        window = pa.array([None if i % 7 == 0 else v for i, v in enumerate(window.to_pylist())], window.type)
    table = pa.table({"window": window, "seg": pa.array(rng.choice(["a", "b,c", None], n)),
                      "n_rows": pa.array(rng.integers(0, 100, n)), "auc": pa.array(rng.random(n)),
                      "none": pa.nulls(n)})
    assert write_csv_text(table) == _csv(table)
    assert write_csv_text(table.slice(0, 0)) == _csv(table.slice(0, 0))
    assert write_csv_text(table.select(["window"])) == _csv(table.select(["window"]))


def test_csv_text_with_line_breaks_inside_values_falls_back():
    table = pa.table({"window": pa.array([0, 86_400_000_000], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                      "seg": pa.array(["two\nlines", "x"])})
    assert write_csv_text(table) == _csv(table)


def _sliced_table(reference: bool = False) -> tuple[SliceTable, SketchSet]:
    rng = np.random.default_rng(7)
    n = 20_000
    ss = SketchSet(["window", "seg"])
    days = [dt.datetime(2026, 11, d, tzinfo=UTC) for d in range(1, 8)]
    y = rng.random(n) < 0.2
    labels = np.where(rng.random(n) < 0.1, np.nan, y.astype(float))  # some labels not arrived
    score = np.clip(rng.normal(0.3 + 0.3 * y, 0.2), 0, 1).round(3)
    ss.update({"window": [days[i] for i in rng.integers(0, 7, n)],
               "seg": rng.choice(["a", "b", "c", None], n).tolist()}, labels, score,
              sample_weight=rng.integers(1, 4, n).astype(float))
    ref = None
    if reference:
        ref = SketchSet(["seg"]).update({"seg": rng.choice(["a", "b"], 3000).tolist()}, rng.random(3000) < 0.2,
                                        rng.random(3000))
    return SliceTable.from_sketchset(ss, thresholds=[0.3, 0.5], reference=ref), ss


@pytest.mark.parametrize("reference", [False, True])
def test_slice_table_columns_give_what_its_rows_give(reference):
    table, _ = _sliced_table(reference)
    rows = table.rows
    assert len(rows) == table.provenance["groups"] and list(rows[0]) == table.columns
    from_rows = pa.Table.from_pylist(rows)  # the row-dict path, independent of the columns
    arrow = table.to_arrow()
    assert arrow.schema == from_rows.schema and arrow.equals(from_rows)
    assert table.to_csv() == _csv(from_rows)
    for sort_by in ("roc_auc", "n_rows", "brier", "est_roc_auc", "seg"):
        for limit in (4, 9, 200):
            defined = sorted((r for r in rows if r.get(sort_by) is not None), key=lambda r: r[sort_by])
            half = limit // 2
            want = rows if len(rows) <= limit else (
                defined[:half] + defined[-(limit - half):] if len(defined) > limit else defined)
            assert table.view(sort_by, limit) == want


def test_slice_table_rows_are_built_once_and_replacing_them_replaces_the_values():
    table, _ = _sliced_table()
    text = table.to_text(sort_by="roc_auc", limit=6)
    assert table._rows is None  # the terminal view built only the rows it shows
    rows = table.rows
    assert table.rows is rows and table.to_text(sort_by="roc_auc", limit=6) == text
    table.rows = rows[:3]
    assert table.to_arrow().num_rows == 3 and pa.Table.from_pylist(rows[:3]).equals(table.to_arrow())
    assert len(table.view("roc_auc", 2)) == 2


def test_a_csv_report_does_not_import_pandas():
    """A table computed and written as CSV and as a terminal view never calls pa.array (whose
    first call imports pandas); the set is built from its parts (SketchSet.update would)."""
    code = (
        "import sys, datetime as dt, numpy as np\n"
        "from streameval.grid import DEFAULT_GRID\n"
        "from streameval.report import SliceTable\n"
        "from streameval.sketch.sketchset import SketchSet\n"
        "d = [dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc), dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc)]\n"
        "keys = [(d[i % 2], f's{i}') for i in range(30)]\n"
        "counters = np.zeros((30, 8)); counters[:, 0] = 4; counters[:, 5] = 4\n"
        "span = 3 * DEFAULT_GRID.n_bins\n"
        "g = np.repeat(np.arange(30), 4); b = DEFAULT_GRID.bin_index(np.tile([0.1, 0.4, 0.6, 0.9], 30))\n"
        "c = np.tile([0, 1, 0, 1], 30); order = np.argsort(g * span + b * 3 + c, kind='stable')\n"
        "cells = np.column_stack([np.ones(120), np.tile([0.1, 0.4, 0.6, 0.9], 30)[order].repeat(1), "
        "np.tile([0.1, 0.4, 0.6, 0.9], 30)[order], np.tile([0.1, 0.4, 0.6, 0.9], 30)[order]])\n"
        "ss = SketchSet.from_cells(['window', 'seg'], DEFAULT_GRID, keys, counters, "
        "(g * span + b * 3 + c)[order], cells, pos_label=1, neg_label=0)\n"
        "t = SliceTable.from_sketchset(ss, thresholds=[0.5])\n"
        "assert t.to_csv().count('\\n') == 31\n"
        "t.to_text()\n"
    )
    assert not imported_by(code, ["pandas"])
