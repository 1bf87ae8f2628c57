"""Regressions found by a user-and-attacker trial of the command line and the monitoring store:
windows of nanosecond and local-time logs across changes of clocks, and monitoring periods and
window names in the store's time zone. References: pandas' own flooring and localisation."""

from __future__ import annotations

import datetime as _dt
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from streameval.cli.main import app
from streameval.errors import InputError, UsageError
from streameval.monitor import Store
from streameval.monitor.alerts import parse_period, parse_since
from streameval.windows import parse_window, window_starts


def _as_pandas(arr: pa.Array) -> pd.Series:
    return pd.Series(arr.to_pandas())


def test_nanosecond_timestamps_get_windows():
    """pandas writes nanosecond timestamps; a plain cast to microseconds refused them (a crash)."""
    rng = np.random.default_rng(0)
    ns = pd.Timestamp("2026-10-24", tz="UTC").value + rng.integers(-10**15, 3 * 86400 * 10**9, 500)
    for tz_type in (None, "UTC", "Europe/Berlin"):
        arr = pa.array(ns, pa.timestamp("ns", tz=tz_type))
        for zone, win, freq in ((None, "1h", "h"), ("Europe/Berlin", "1d", None)):
            got = _as_pandas(window_starts(arr, parse_window(win), zone))
            t = pd.Series(pd.to_datetime(ns, utc=True)) if tz_type else pd.Series(pd.to_datetime(ns))
            if tz_type is None:
                t = t.dt.tz_localize(zone or "UTC", ambiguous=np.ones(len(t), bool), nonexistent="shift_forward")
            local = t.dt.tz_convert(zone or "UTC")
            ref = local.dt.floor(freq) if freq else local.dt.tz_localize(None).dt.normalize().dt.tz_localize(zone)
            assert (got.dt.tz_convert("UTC") == ref.dt.tz_convert("UTC")).all(), (tz_type, zone, win)


def test_naive_local_times_in_the_skipped_and_repeated_hour():
    """Naive local times that do not exist or exist twice at a change of clocks were a crash
    (Arrow's assume_timezone raises); now the earlier occurrence and the moment of the jump."""
    naive = pd.Series(pd.to_datetime(["2026-03-29 02:30", "2026-03-29 01:59", "2026-03-29 03:10",
                                      "2026-10-25 02:30", "2026-10-25 03:30", "2026-10-25 01:10"]))
    arr = pa.array(naive.dt.as_unit("us"))
    instants = naive.dt.tz_localize("Europe/Berlin", ambiguous=np.ones(len(naive), bool), nonexistent="shift_forward")
    for win, freq in (("1h", "h"), ("1d", None)):
        got = _as_pandas(window_starts(arr, parse_window(win), "Europe/Berlin")).dt.tz_convert("UTC")
        if freq:
            ref = instants.dt.tz_convert("UTC").dt.floor("h")
        else:
            ref = instants.dt.tz_localize(None).dt.normalize().dt.tz_localize("Europe/Berlin").dt.tz_convert("UTC")
        assert (got == ref).all(), win


def test_daily_windows_where_midnight_is_skipped():
    """In Santiago clocks jump from 00:00 to 01:00 (2026-09-06): that day's window starts at the
    jump (Arrow's zone-aware floor raised 'nonexistent' for every time of that day)."""
    t = pd.Series(pd.date_range("2026-09-05 12:00", "2026-09-07 03:00", freq="37min", tz="America/Santiago"))
    got = _as_pandas(window_starts(pa.array(t.dt.tz_convert("UTC").dt.as_unit("us")), parse_window("1d"),
                                   "America/Santiago"))
    ref = t.dt.tz_localize(None).dt.normalize().dt.tz_localize("America/Santiago", nonexistent="shift_forward")
    assert (got.dt.tz_convert("UTC") == ref.dt.tz_convert("UTC")).all()
    assert got.nunique() == 3


def test_windows_at_clocks_going_back():
    """Zoned times whose floored local reading occurs twice were refused ('ambiguous'): hourly
    windows on the night clocks go back, and daily windows where midnight repeats (Havana,
    2026-11-01: 01:00 back to 00:00). A window is a span of the local clock: it starts at the
    reading's first occurrence, so the repeated hour is one hourly window."""
    times = pd.Series(pd.to_datetime(["2026-10-25 00:10", "2026-10-25 00:50", "2026-10-25 01:10",
                                      "2026-10-25 02:10"], utc=True))  # 01:10, 01:50 BST; 01:10, 02:10 GMT
    got = _as_pandas(window_starts(pa.array(times.dt.as_unit("us")), parse_window("1h"), "Europe/London"))
    assert got.dt.tz_convert("UTC").tolist() == [pd.Timestamp(x, tz="UTC") for x in (
        "2026-10-25 00:00", "2026-10-25 00:00", "2026-10-25 00:00", "2026-10-25 02:00")]
    days = _as_pandas(window_starts(pa.array(times.dt.as_unit("us")), parse_window("1d"), "Europe/London"))
    assert days.nunique() == 1
    havana = pd.Series(pd.date_range("2026-10-31 12:00", "2026-11-02 12:00", freq="17min", tz="America/Havana"))
    got = _as_pandas(window_starts(pa.array(havana.dt.tz_convert("UTC").dt.as_unit("us")), parse_window("1d"),
                                   "America/Havana"))
    first_midnight = havana.dt.tz_localize(None).dt.normalize().dt.tz_localize(
        "America/Havana", ambiguous=np.ones(len(havana), bool))
    assert (got.dt.tz_convert("UTC") == first_midnight.dt.tz_convert("UTC")).all()
    assert got.nunique() == 3


def test_nan_epoch_seconds_are_null_times():
    """A NaN in a float epoch-seconds column crashed the cast; it is a null time (its own window)."""
    got = window_starts(pa.array([1.7e9, None, float("nan")]), parse_window("1d"))
    assert got.null_count == 2 and got[0].as_py() == _dt.datetime(2023, 11, 14, tzinfo=_dt.timezone.utc)
    with pytest.raises(UsageError, match="past the year 9999"):
        window_starts(pa.array([1.7e9, 1e20]), parse_window("1d"))


def test_epoch_milliseconds_given_as_seconds_are_a_clear_error(tmp_path):
    """Epoch milliseconds in a column read as seconds made years past 9999: a traceback
    (OverflowError in the group keys); now an error that suggests the conversion."""
    pd.DataFrame({"score": [0.1, 0.6], "label": [0, 1], "ts": [1.7e12, 1.7e12 + 86400e3]}).to_parquet(tmp_path / "m.parquet")
    runner = CliRunner()
    base = ["eval", str(tmp_path / "m.parquet"), "-s", "score", "-l", "label", "--window", "1d", "-q", "-f", "json"]
    r = runner.invoke(app, [*base, "--time", "ts"])
    assert r.exit_code == 2 and "milliseconds?" in r.output and "to_timestamp(ts / 1000)" in r.output
    ok = runner.invoke(app, [*base, "--time", "to_timestamp(ts / 1000)"])
    assert ok.exit_code == 0, ok.output
    assert [row["window"][:10] for row in json.loads(ok.stdout)["rows"]] == ["2023-11-14", "2023-11-15"]


@pytest.fixture()
def berlin_store(tmp_path):
    rng = np.random.default_rng(1)
    n = 2000
    ts = pd.date_range("2026-03-27", "2026-04-02", periods=n, tz="UTC")
    y = rng.integers(0, 2, n)
    df = pd.DataFrame({"score": np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1).round(2), "label": y, "ts": ts})
    df.to_parquet(tmp_path / "a.parquet")
    path = tmp_path / "m.duckdb"
    with Store(path) as st:
        st.ingest(str(tmp_path / "a.parquet"), score="score", label="label", time="ts", window="1d",
                  tz="Europe/Berlin")
    days = df.ts.dt.tz_convert("Europe/Berlin").dt.tz_localize(None).dt.normalize()
    return path, days.value_counts().sort_index()


def test_monitor_report_names_and_selects_windows_in_the_store_zone(berlin_store):
    """`--since 2026-03-30` on a Europe/Berlin store dropped the local 30 March window (the date
    was read as UTC midnight, two hours after the window's start), the table named daily windows
    by their UTC instants ('2026-03-29 22:00'), and `--since 5d` across the spring change gave 6
    windows."""
    path, per_day = berlin_store
    runner = CliRunner()

    def report(*args):
        r = runner.invoke(app, ["monitor", "report", "--store", str(path), "-f", "json", *args])
        assert r.exit_code == 0, r.output
        return {row["window"]: row["n_rows"] for row in json.loads(r.stdout)["rows"]}

    every = report()
    assert list(every) == [f"{d.date()}T00:00:00+0{1 if d.month == 3 and d.day < 30 else 2}:00" for d in per_day.index]
    assert list(every.values()) == per_day.tolist()
    since = report("--since", "2026-03-30")
    assert list(since.values()) == per_day[per_day.index >= "2026-03-30"].tolist()
    assert len(report("--since", "5d")) == 5
    with Store(path, read_only=True) as st:
        newest = st.newest_window()
        assert newest is not None
        start, end = parse_period("7d", newest, "Europe/Berlin")
        assert start.isoformat() == "2026-03-25T23:00:00.000001+00:00"  # after 26 March's local midnight (CET)
        assert parse_since("2026-03-30", newest, "Europe/Berlin") == _dt.datetime(2026, 3, 29, 22,
                                                                                  tzinfo=_dt.timezone.utc)
        assert parse_since("2026-03-30T00:00+00:00", newest, "Europe/Berlin").hour == 0  # a given zone wins


def test_a_second_name_of_an_ingested_file_is_refused(tmp_path):
    """A symlink (or copy) of an ingested file was added as a new file: every row counted twice."""
    import os
    import shutil

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 500)
    pd.DataFrame({"score": rng.random(500).round(2), "label": y}).to_parquet(tmp_path / "day.parquet")
    os.symlink(tmp_path / "day.parquet", tmp_path / "link.parquet")
    (tmp_path / "copies").mkdir()
    shutil.copy(tmp_path / "day.parquet", tmp_path / "copies" / "day.parquet")
    with Store(tmp_path / "m.duckdb") as st:
        st.ingest(str(tmp_path / "day.parquet"), score="score", label="label")
        for twin in ("link.parquet", "copies/day.parquet"):
            with pytest.raises(InputError, match="same bytes as .*day.parquet.*count its rows twice"):
                st.ingest(str(tmp_path / twin))
        assert st.sketchset().counts(())["n_rows"] == 500
        assert st.forget(tmp_path / "day.parquet")
        assert [r.action for r in st.ingest(str(tmp_path / "link.parquet"))] == ["added"]  # moved: fine
        assert st.sketchset().counts(())["n_rows"] == 500


def test_monitor_check_refuses_an_unknown_format_and_notes_overlapping_periods(berlin_store):
    """`monitor check -f csv` printed the table (no CSV, exit 0); overlapping current and
    reference periods (the default 7d current period over a 3-day reference) were compared without
    a word, though the test assumes separate samples."""
    path, _ = berlin_store
    runner = CliRunner()
    bad = runner.invoke(app, ["monitor", "check", "--store", str(path), "--reference", "2026-03-27:2026-03-30",
                              "-f", "csv"])
    assert bad.exit_code == 2 and "table or json" in bad.output
    overlap = runner.invoke(app, ["monitor", "check", "--store", str(path), "--reference", "2026-03-27:2026-03-30",
                                  "-f", "json"])
    assert overlap.exit_code == 0, overlap.output
    assert any("overlap" in n for n in json.loads(overlap.stdout)["notes"])
    apart = runner.invoke(app, ["monitor", "check", "--store", str(path), "--reference", "2026-03-27:2026-03-30",
                                "--current", "2d", "-f", "json"])
    assert not any("overlap" in n for n in json.loads(apart.stdout)["notes"])


def test_a_slice_named_null_is_told_apart_from_a_null_slice(tmp_path):
    """The table and Markdown showed a null slice and the string 'null' (and '' as blank) alike."""
    rng = np.random.default_rng(4)
    n = 400
    y = rng.integers(0, 2, n)
    seg = pd.Series(rng.choice(["null", "a", ""], n), dtype=object)
    seg[rng.random(n) < 0.25] = None
    pd.DataFrame({"score": rng.random(n).round(2), "label": y, "seg": seg}).to_parquet(tmp_path / "x.parquet")
    runner = CliRunner()
    for fmt in ("table", "markdown"):
        r = runner.invoke(app, ["eval", str(tmp_path / "x.parquet"), "-s", "score", "-l", "label", "--by", "seg",
                                "-f", fmt])
        assert r.exit_code == 0, r.output
        first_cells = [line.strip("│| ").split()[0] for line in r.stdout.splitlines()
                       if line.startswith(("│", "| ")) and "n_rows" not in line and "seg" not in line]
        assert sorted(first_cells) == sorted(['"null"', "a", '""', "null"]), (fmt, first_cells)


def test_fail_under_gates_on_the_lower_bound_and_refuses_misleading_gates(tmp_path):
    """`--fail-under roc_auc=F` compared the binned estimate: on a coarse grid it passed although
    the exact AUC could be far below F (and failed when it was above). fpr/fnr floors failed good
    models, a NaN floor failed everything, and a sliced run gated all rows without saying so."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(6)
    n = 4000
    y = rng.integers(0, 2, n)
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1)
    pd.DataFrame({"score": s, "label": y, "seg": rng.choice(["a", "b"], n)}).to_parquet(tmp_path / "c.parquet")
    exact = roc_auc_score(y, s)
    runner = CliRunner()
    base = ["eval", str(tmp_path / "c.parquet"), "-s", "score", "-l", "label", "-q", "-g", "linear:0:1:10"]
    report = json.loads(runner.invoke(app, [*base, "-f", "json"]).stdout)["metrics"]["roc_auc"]
    assert report["lower"] <= exact <= report["upper"] and report["upper"] - report["lower"] > 0.05
    between = (report["lower"] + report["value"]) / 2  # the estimate clears it, the lower bound does not
    r = runner.invoke(app, [*base, "--fail-under", f"roc_auc={between}"])
    assert r.exit_code == 3 and "lower bound" in r.stderr
    assert runner.invoke(app, [*base, "--fail-under", f"roc_auc={report['lower'] - 1e-9}"]).exit_code == 0
    for gate, words in (("fpr@0.5=0.5", "specificity@0.5"), ("fnr@0.3=0.2", "recall@0.3"), ("roc_auc=nan", "number")):
        bad = runner.invoke(app, [*base, "--fail-under", gate])
        assert bad.exit_code == 2 and words in bad.output, gate
    sliced = runner.invoke(app, [*base, "--by", "seg", "--fail-under", "roc_auc=0.1"])
    assert sliced.exit_code == 0 and "not each slice" in sliced.stderr


def test_report_windows_must_be_made_of_whole_stored_windows(tmp_path):
    """A weekly store reported by month put a week straddling two months wholly into the first
    (silently wrong counts), and a finer window than the store's (1d over weeks, 1h over days)
    gave the stored windows under the asked-for name."""
    rng = np.random.default_rng(8)
    n = 1400
    ts = pd.Series(pd.date_range("2026-03-20", "2026-04-05", periods=n, tz="UTC"))
    y = rng.integers(0, 2, n)
    pd.DataFrame({"score": rng.random(n).round(2), "label": y, "ts": ts}).to_parquet(tmp_path / "a.parquet")
    with Store(tmp_path / "w.duckdb") as st:
        st.ingest(str(tmp_path / "a.parquet"), score="score", label="label", time="ts", window="1d")
    with Store(tmp_path / "w.duckdb", read_only=True) as st:
        monthly = st.sketchset(window="1mo")
        got = {k[0].month: monthly.counts(k)["n_rows"] for k in monthly.keys()}
        assert got == ts.dt.month.value_counts().to_dict()
    with Store(tmp_path / "k.duckdb") as st:
        st.ingest(str(tmp_path / "a.parquet"), score="score", label="label", time="ts", window="1w")
    with Store(tmp_path / "k.duckdb", read_only=True) as st:
        for wanted in ("1mo", "1d", "1q"):
            with pytest.raises(UsageError, match="do not fit whole"):
                st.sketchset(window=wanted)
        assert sum(st.sketchset(window="2w").counts(k)["n_rows"] for k in st.sketchset(window="2w").keys()) == n
    from streameval.monitor.store import _nests

    w = parse_window
    assert all(_nests(w(a), w(b)) for a, b in (("1h", "1d"), ("15min", "1h"), ("6h", "1w"), ("1d", "1mo"),
                                               ("1mo", "1q"), ("1q", "1y"), ("1d", "7d"), ("1w", "2w")))
    assert not any(_nests(w(a), w(b)) for a, b in (("1w", "1mo"), ("7d", "1w"), ("5h", "1d"), ("2d", "1mo"),
                                                   ("1d", "1h"), ("2h", "3h"), ("5mo", "1y")))


def test_periods_of_a_store_without_windows_are_refused(tmp_path):
    """A store filled without --time/--window kept null window starts: `--since DATE` then left out
    every row (an empty report), `monitor check` with dates compared two empty periods and never
    fired (exit 0), and `--window 1d` was ignored."""
    rng = np.random.default_rng(9)
    pd.DataFrame({"score": rng.random(300).round(2), "label": rng.integers(0, 2, 300)}).to_parquet(tmp_path / "a.parquet")
    with Store(tmp_path / "n.duckdb") as st:
        st.ingest(str(tmp_path / "a.parquet"), score="score", label="label")
    runner = CliRunner()
    store = ["--store", str(tmp_path / "n.duckdb")]
    for args in (["report", *store, "--since", "2020-01-01"], ["report", *store, "--window", "1d"],
                 ["report", *store, "--reference", "2020-01-01:2030-01-01"],
                 ["check", *store, "--reference", "2020-01-01:2030-01-01", "--current", "2020-01-01:2030-01-01"]):
        r = runner.invoke(app, ["monitor", *args])
        assert r.exit_code == 2 and "no time windows" in r.output, args
    ok = runner.invoke(app, ["monitor", "report", *store, "--window", "all", "-f", "json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["rows"][0]["n_rows"] == 300


def test_check_names_its_periods_in_the_store_zone_with_the_right_brackets(berlin_store):
    """`monitor check --current 2d` on a Berlin store printed '[2026-03-30 22:00+00:00,
    2026-04-01 22:00+00:00)': UTC instants, and a bracket that reads as 31 March and 1 April
    when it selects the windows of 1 and 2 April (those starting after the first bound, up to
    and including the second)."""
    path, per_day = berlin_store
    r = CliRunner().invoke(app, ["monitor", "check", "--store", str(path), "--reference", "2026-03-27:2026-03-30",
                                 "--current", "2d", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["provenance"]["current"] == "(2026-03-31 00:00+02:00, 2026-04-02 00:00+02:00]"
    assert doc["provenance"]["reference"] == "[2026-03-27 00:00+01:00, 2026-03-30 00:00+02:00)"
    assert doc["overall"]["n_current"] == per_day[per_day.index >= "2026-04-01"].sum()
    assert doc["overall"]["n_reference"] == per_day[per_day.index < "2026-03-30"].sum()


def test_a_list_slice_column_is_a_clear_error(tmp_path):
    """`--by` a list column ended in a traceback from Arrow's dictionary_encode (exit 1 with no
    `error:` line); now a one-line error naming the file, the column and its type."""
    pd.DataFrame({"score": [0.1, 0.8, 0.4], "label": [0, 1, 1], "tags": [[1, 2], [3], []]}).to_parquet(tmp_path / "l.parquet")
    r = CliRunner().invoke(app, ["eval", str(tmp_path / "l.parquet"), "-s", "score", "-l", "label", "--by", "tags", "-q"])
    assert r.exit_code == 1 and "l.parquet: slice column 'tags' has type list" in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


def test_a_period_that_ends_before_it_starts_is_refused(berlin_store):
    """`--reference 2026-03-30:2026-03-27` selected nothing and `monitor check` passed (exit 0)."""
    path, _ = berlin_store
    r = CliRunner().invoke(app, ["monitor", "check", "--store", str(path), "--reference", "2026-03-30:2026-03-27"])
    assert r.exit_code == 2 and "ends before it starts" in r.output
    with pytest.raises(UsageError, match="ends before it starts"):
        parse_period("2026-03-27:2026-03-27", None)
    assert parse_period("2026-03-27:2026-03-28", None)[1] == _dt.datetime(2026, 3, 28, tzinfo=_dt.timezone.utc)


def test_a_failed_first_ingest_does_not_fix_the_job(tmp_path):
    """A first ingest with a typo (`-s scor`) failed, yet stored its job: every later ingest was
    refused ('this store was built with score='scor''), and the store had to be deleted."""
    pd.DataFrame({"score": [0.1, 0.9, 0.4], "label": [0, 1, 1]}).to_parquet(tmp_path / "a.parquet")
    runner = CliRunner()
    store = ["--store", str(tmp_path / "s.duckdb")]
    typo = runner.invoke(app, ["monitor", "ingest", str(tmp_path / "a.parquet"), *store, "-s", "scor", "-l", "label"])
    assert typo.exit_code == 1 and "no column 'scor'" in typo.output
    nothing = runner.invoke(app, ["monitor", "ingest", str(tmp_path / "none*.parquet"), *store, "-s", "x", "-l", "y"])
    assert nothing.exit_code == 1
    ok = runner.invoke(app, ["monitor", "ingest", str(tmp_path / "a.parquet"), *store, "-s", "score", "-l", "label"])
    assert ok.exit_code == 0, ok.output
    with Store(tmp_path / "s.duckdb", read_only=True) as st:
        assert st.job["score"] == "score" and st.sketchset().counts(())["n_rows"] == 3


def test_forget_on_a_missing_store_does_not_create_one(tmp_path):
    """`monitor forget --store typo.duckdb` created an empty 800 kB store, said 'not in the
    store' and exited 0."""
    r = CliRunner().invoke(app, ["monitor", "forget", "x.parquet", "--store", str(tmp_path / "typo.duckdb")])
    assert r.exit_code == 1 and "no such store" in r.output
    assert not (tmp_path / "typo.duckdb").exists()


def test_a_pos_label_of_another_type_names_the_file(tmp_path):
    """`--pos-label fraud` on integer labels said only "pos_label 'fraud' cannot be compared with
    the label column of type int64": no file, no column (with many files, which one?)."""
    pd.DataFrame({"score": [0.1, 0.6], "label": [0, 1], "g": ["a", "b"]}).to_parquet(tmp_path / "ints.parquet")
    r = CliRunner().invoke(app, ["eval", str(tmp_path / "ints.parquet"), "-s", "score", "-l", "label", "--by", "g",
                                 "--pos-label", "fraud", "-q"])
    assert r.exit_code == 1 and "ints.parquet: label 'label': pos_label 'fraud'" in r.output


def test_skipped_and_out_of_range_scores_are_noted_and_ingest_can_skip_nan(tmp_path):
    """A sliced table counted NaN-score rows in n_rows and n_labelled but in no metric, and made
    log_loss/brier null for scores outside [0, 1], without a word; `monitor ingest` refused NaN
    scores and its message pointed to a --skip-nan it did not have."""
    pd.DataFrame({"score": [0.1, np.nan, 0.7, 1.5], "label": [0, 1, 1, 0]}).to_parquet(tmp_path / "n.parquet")
    runner = CliRunner()
    r = runner.invoke(app, ["eval", str(tmp_path / "n.parquet"), "-s", "score", "-l", "label", "--by", "label",
                            "--skip-nan", "-q", "-f", "json"])
    assert r.exit_code == 0, r.output
    notes = " ".join(json.loads(r.stdout)["notes"])
    assert "1 row(s) with a NaN or null score were skipped" in notes and "outside [0, 1]" in notes
    store = ["--store", str(tmp_path / "s.duckdb")]
    refused = runner.invoke(app, ["monitor", "ingest", str(tmp_path / "n.parquet"), *store, "-s", "score", "-l", "label"])
    assert refused.exit_code == 1 and "--skip-nan" in refused.output
    ok = runner.invoke(app, ["monitor", "ingest", str(tmp_path / "n.parquet"), *store, "-s", "score", "-l", "label",
                             "--skip-nan"])
    assert ok.exit_code == 0, ok.output
    rep = json.loads(runner.invoke(app, ["monitor", "report", *store, "-f", "json"]).stdout)
    assert rep["rows"][0]["n_rows"] == 4 and rep["rows"][0]["positives"] + rep["rows"][0]["negatives"] == 3


def test_errors_about_slice_and_time_columns_do_not_name_internal_aliases(tmp_path):
    """A missing --by column was reported as 'asked for as the key_0', a missing --time column as
    'the time_': names of streameval's internals."""
    pd.DataFrame({"score": [0.1, 0.6], "label": [0, 1]}).to_parquet(tmp_path / "a.parquet")
    runner = CliRunner()
    base = ["eval", str(tmp_path / "a.parquet"), "-s", "score", "-l", "label", "-q"]
    by = runner.invoke(app, [*base, "--by", "country"])
    assert by.exit_code == 1 and "no column 'country' (asked for as the slice_column_1)" in by.output
    time = runner.invoke(app, [*base, "--time", "tss", "--window", "1d"])
    assert time.exit_code == 1 and "no column 'tss' (asked for as the time_column)" in time.output


def test_windows_shorter_than_a_minute_are_told_apart_in_the_table(tmp_path):
    """15 s windows were shown to the minute: four rows named '2026-03-01 10:00' alike."""
    ts = pd.Series(pd.date_range("2026-03-01 10:00", periods=8, freq="8s", tz="UTC"))
    pd.DataFrame({"score": np.linspace(0.1, 0.9, 8), "label": [0, 1] * 4, "ts": ts}).to_parquet(tmp_path / "s.parquet")
    r = CliRunner().invoke(app, ["eval", str(tmp_path / "s.parquet"), "-s", "score", "-l", "label", "--time", "ts",
                                 "--window", "15s", "-f", "markdown"])
    assert r.exit_code == 0, r.output
    shown = [line.split("|")[1].strip() for line in r.stdout.splitlines() if line.startswith("| 2026")]
    assert sorted(shown) == ["2026-03-01 10:00", "2026-03-01 10:00:15", "2026-03-01 10:00:30", "2026-03-01 10:00:45"]


@pytest.mark.parametrize("tz", ["utc", "Z", "+05:30"])
def test_stores_in_any_zone_name_windows_accepts_can_be_reported(tmp_path, tz):
    """`--tz utc` (or Z) is accepted by the windows, but naming a store's windows and periods in
    its zone looked it up in zoneinfo, which knows no 'utc': a traceback (found in this trial)."""
    ts = pd.Series(pd.date_range("2026-03-27", "2026-04-02", periods=300, tz="UTC"))
    pd.DataFrame({"score": np.linspace(0, 1, 300).round(2), "label": [0, 1, 1] * 100, "ts": ts}).to_parquet(tmp_path / "a.parquet")
    with Store(tmp_path / "z.duckdb") as st:
        st.ingest(str(tmp_path / "a.parquet"), score="score", label="label", time="ts", window="1d", tz=tz)
    runner = CliRunner()
    r = runner.invoke(app, ["monitor", "report", "--store", str(tmp_path / "z.duckdb"), "--since", "2026-03-30", "-f", "json"])
    assert r.exit_code == 0, r.output
    offset = "+05:30" if tz == "+05:30" else "+00:00"
    assert json.loads(r.stdout)["rows"][0]["window"] == f"2026-03-30T00:00:00{offset}"
    c = runner.invoke(app, ["monitor", "check", "--store", str(tmp_path / "z.duckdb"), "--reference",
                            "2026-03-27:2026-03-30", "--current", "2d"])
    assert c.exit_code in (0, 3), c.output


def test_check_table_names_a_null_slice_as_the_report_does(tmp_path):
    """`monitor check` printed a null slice as 'None' where `monitor report` prints 'null'."""
    rng = np.random.default_rng(10)
    n = 600
    ts = pd.Series(pd.date_range("2026-03-01", "2026-03-10", periods=n, tz="UTC"))
    seg = pd.Series(rng.choice(["a", "b"], n), dtype=object)
    seg[::3] = None
    pd.DataFrame({"score": rng.random(n).round(2), "label": rng.integers(0, 2, n), "seg": seg, "ts": ts}
                 ).to_parquet(tmp_path / "a.parquet")
    with Store(tmp_path / "s.duckdb") as st:
        st.ingest(str(tmp_path / "a.parquet"), score="score", label="label", by=["seg"], time="ts", window="1d")
    r = CliRunner().invoke(app, ["monitor", "check", "--store", str(tmp_path / "s.duckdb"), "--reference",
                                 "2026-03-01:2026-03-05", "--current", "3d"])
    assert r.exit_code in (0, 3), r.output
    first_cells = [line.strip("│ ").split()[0] for line in r.stdout.splitlines() if line.startswith("│")]
    assert "null" in first_cells and "None" not in first_cells


def test_zoned_timestamps_as_slice_keys_keep_the_instants_of_a_repeated_hour_apart():
    # 00:30Z and 01:30Z on 2026-10-25 are both 01:30 on London's clock; Python compares datetimes
    # of one zone by their local reading, so the two instants were one slice
    from streameval.slicing import sketch_slices

    utc = pd.to_datetime(["2026-10-25 00:30Z", "2026-10-25 01:30Z", "2026-10-25 01:30Z", "2026-10-24 12:00Z"])
    t = pa.array(utc.tz_convert("Europe/London"))
    tbl = pa.table({"score": [0.2, 0.7, 0.4, 0.9], "label": [0, 1, 0, 1], "t": t})
    ss, _ = sketch_slices(tbl, score="score", label="label", by=["t"])
    counts = sorted(ss.counts((k,))["n_rows"] for (k,) in ss.keys())
    want = sorted(pd.Series(utc).value_counts().tolist())
    assert counts == want == [1, 1, 2]


def test_a_time_zone_without_windows_is_refused_not_ignored(tmp_path):
    # --tz only aligns windows: without --window it changed nothing, silently
    import streameval
    from streameval.slicing import sketch_slices

    frame = pd.DataFrame({"score": [0.2, 0.8, 0.6, 0.3], "label": [0, 1, 1, 0], "seg": ["a", "a", "b", "b"]})
    with pytest.raises(UsageError, match="tz=.*window"):
        streameval.evaluate(frame, score="score", label="label", tz="Europe/Berlin")
    with pytest.raises(UsageError, match="tz=.*window"):
        sketch_slices(frame, score="score", label="label", by=["seg"], tz="Europe/Berlin")
    frame.to_parquet(tmp_path / "f.parquet")
    r = CliRunner().invoke(app, ["eval", str(tmp_path / "f.parquet"), "-s", "score", "-l", "label", "--by", "seg",
                                 "--tz", "Europe/Berlin"])
    assert r.exit_code == 2 and "--window" in r.output
    ok = streameval.evaluate(frame, score="score", label="label")
    assert ok.metrics["roc_auc"]["value"] == 1.0


def test_monitor_ingest_config_keys_are_used_or_refused(tmp_path):
    # `monitor ingest -c` dropped max_groups (no cap but the default), and require_labels/sql
    # without a word
    rng = np.random.default_rng(8)
    n = 300
    pd.DataFrame({"score": rng.random(n).round(2), "label": rng.integers(0, 2, n),
                  "seg": rng.choice(["a", "b", "c"], n)}).to_parquet(tmp_path / "f.parquet")
    capped = tmp_path / "capped.toml"
    capped.write_text('[eval]\nscore = "score"\nlabel = "label"\nby = ["seg"]\nmax_groups = 2\n')
    r = CliRunner().invoke(app, ["monitor", "ingest", str(tmp_path / "f.parquet"), "--store", str(tmp_path / "a.duckdb"),
                                 "-c", str(capped)])
    assert r.exit_code != 0 and "max_groups" in r.output.replace("-", "_")
    strict = tmp_path / "strict.toml"
    strict.write_text('[eval]\nscore = "score"\nlabel = "label"\nrequire_labels = true\n')
    r = CliRunner().invoke(app, ["monitor", "ingest", str(tmp_path / "f.parquet"), "--store", str(tmp_path / "b.duckdb"),
                                 "-c", str(strict)])
    assert r.exit_code == 2 and "require_labels apply to `eval` only" in r.output
    shared = tmp_path / "shared.toml"  # eval-only output keys (thresholds, format, source) are fine
    shared.write_text('[eval]\nsource = ["f.parquet"]\nscore = "score"\nlabel = "label"\nby = ["seg"]\n'
                      'thresholds = [0.5]\nformat = "table"\nmax_groups = 10\n')
    r = CliRunner().invoke(app, ["monitor", "ingest", str(tmp_path / "f.parquet"), "--store", str(tmp_path / "c.duckdb"),
                                 "-c", str(shared)])
    assert r.exit_code == 0, r.output
    with Store(tmp_path / "c.duckdb") as st:
        ss = st.sketchset()
        assert sum(ss.counts(k)["n_rows"] for k in ss.keys()) == n and len(ss.keys()) == 3
