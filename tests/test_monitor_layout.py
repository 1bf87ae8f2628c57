"""The store layout's Arrow helpers: the same values as pyarrow's own conversions, without pandas."""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from streameval.monitor.layout import _codes, _np, _pylist


@pytest.mark.parametrize("tz", [None, "UTC", "Etc/UTC", "Europe/Berlin", "America/New_York", "+05:30", "-03:00"])
@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_timestamps_equal_pyarrow(tz, unit):
    micros = np.array([0, 1_700_000_000_000_000, -86_400_000_000, 1_774_000_000_123_000], dtype=np.int64)
    per = {"s": 10**6, "ms": 10**3, "us": 1}[unit]
    arr = pa.array(list(micros // per) + [None], pa.int64()).cast(pa.timestamp(unit, tz=tz))
    mine, theirs = _pylist(arr), arr.to_pylist()
    assert mine == theirs
    assert [None if v is None else (v.tzinfo is None, v.utcoffset()) for v in mine] == \
        [None if v is None else (v.tzinfo is None, v.utcoffset()) for v in theirs]


def test_codes_and_numbers():
    col = pa.chunked_array([pa.array([3, 1, None, 3], pa.int32()), pa.array([1], pa.int32())])
    codes, values = _codes(col)
    assert [values[c] for c in codes] == [3, 1, None, 3, 1]
    assert np.array_equal(_np(pa.chunked_array([pa.array([1.5, 2.5]), pa.array([3.5])])), [1.5, 2.5, 3.5])
    assert np.array_equal(_np(pa.array([1, None, 3])), np.array([1, np.nan, 3]), equal_nan=True)  # nulls: pyarrow's path
    assert _codes(pa.chunked_array([], pa.int32()))[1] == []


def test_reading_windows_does_not_import_pandas():
    code = (
        "import sys, numpy as np, pyarrow as pa\n"
        "from streameval.monitor.layout import _codes\n"
        "data = pa.py_buffer(np.array([0, 86_400_000_000, 0], dtype=np.int64).tobytes())\n"
        "valid = pa.py_buffer(bytes([0b011]))\n"  # pa.array itself would import pandas
        "a = pa.Array.from_buffers(pa.timestamp('us', tz='Etc/UTC'), 3, [valid, data])\n"
        "codes, values = _codes(pa.chunked_array([a]))\n"
        "assert len(values) == 3\n"
    )
    assert not imported_by(code, ["pandas"])


def imported_by(code: str, modules: list[str]) -> list[str]:
    """Which of ``modules`` running ``code`` in a fresh interpreter imports (``code`` must succeed;
    a name matches the module and its submodules: ``"numba"`` finds ``numba.core``)."""
    code += (f"\nimport json, sys\nprint('imported:', json.dumps([m for m in {modules!r} "
             "if any(k == m or k.startswith(m + '.') for k in sys.modules)]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    line = out.stdout.strip().splitlines()[-1]
    assert line.startswith("imported: "), out.stdout[-2000:]
    found: list[str] = json.loads(line[len("imported: "):])
    return found


def test_cells_without_their_group_row_are_an_error_naming_them(tmp_path):
    import pandas as pd

    from streameval.monitor import Store
    from streameval.monitor.layout import StoreReadError

    rng = np.random.default_rng(0)
    pd.DataFrame({"score": rng.random(200), "label": rng.random(200) < 0.3,
                  "seg": rng.choice(["a", "b"], 200)}).to_parquet(tmp_path / "d.parquet")
    with Store(tmp_path / "m.duckdb") as st:
        st.ingest([str(tmp_path / "d.parquet")], score="score", label="label", by=["seg"])
        assert len(st.sketchset()) == 2
        st._con.execute("DELETE FROM groups WHERE gid = 1")
        with pytest.raises(StoreReadError, match="file_id 0, gid 1 have no row"):
            st.sketchset()


def test_monitor_report_imports_neither_pydantic_nor_the_modules_it_does_not_use(tmp_path):
    """`streameval monitor report` (option parsing, store read, table, CSV) in a fresh process: no
    pydantic (typer's validators), pandas, Numba (no kernel runs: ~0.3 s of imports), statistics,
    single-sketch or multiclass reports; and the CSV it writes is the one the library gives."""
    import pandas as pd

    from streameval.monitor import Store
    from streameval.report import SliceTable

    rng = np.random.default_rng(3)
    n = 3000
    pd.DataFrame({"score": rng.random(n), "label": rng.random(n) < 0.3, "seg": rng.choice(["a", "b", "c"], n),
                  "ts": pd.Timestamp("2026-11-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 3 * 86400, n), unit="s")}
                 ).to_parquet(tmp_path / "d.parquet")
    store, out, recent, weekly = tmp_path / "m.duckdb", tmp_path / "r.csv", tmp_path / "since.csv", tmp_path / "1w.csv"
    with Store(store) as st:
        st.ingest([str(tmp_path / "d.parquet")], score="score", label="label", by=["seg"], time="ts", window="1d")
    code = (
        "import os, sys\n"
        "os.environ.pop('NUMPY_MADVISE_HUGEPAGE', None)\n"
        "os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
        "from streameval.cli.main import main\n"
        f"sys.argv = ['streameval', 'monitor', 'report', '--store', {str(store)!r}, '-t', '0.3,0.5', '-f', 'csv', "
        f"'-o', {str(out)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        "assert os.environ['NUMPY_MADVISE_HUGEPAGE'] == '0'  # set before NumPy's import: no huge-page advice\n"
        "assert os.environ['OPENBLAS_NUM_THREADS'] == '1'  # and one BLAS thread\n"
        # issue 11's example has --since: the newest window is read back (its to_pylist imported pandas)
        f"sys.argv = ['streameval', 'monitor', 'report', '--store', {str(store)!r}, '--since', '2d', '-f', 'csv', "
        f"'-o', {str(recent)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        # and days rolled up to weeks in UTC (windows' integer flooring: pyarrow's to_numpy and pa.array import pandas)
        f"sys.argv = ['streameval', 'monitor', 'report', '--store', {str(store)!r}, '--window', '1w', '-f', 'csv', "
        f"'--reference', '2d', '-o', {str(weekly)!r}]\n"  # psi against the last 2 days: no compiled merge
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
    )
    unwanted = ["pydantic", "pandas", "numba", "streameval.kernels.binary", "streameval.stats", "streameval.report.binary", "streameval.report.multiclass",
                "streameval.sketch.multiclass", "streameval.metrics.functional"]
    assert imported_by(code, unwanted) == []
    with Store(store, read_only=True) as st:
        expected = SliceTable.from_sketchset(st.sketchset(), thresholds=[0.3, 0.5]).to_csv()
    assert out.read_text() == expected and expected.count("\n") == 3 * 3 + 1
    with Store(store, read_only=True) as st:  # 2d before the newest window: the days 2026-11-02 and 11-03
        assert st.newest_window() == _dt.datetime(2026, 11, 3, tzinfo=_dt.timezone.utc)
        expected = SliceTable.from_sketchset(st.sketchset(since=_dt.datetime(2026, 11, 2, tzinfo=_dt.timezone.utc))).to_csv()
    assert recent.read_text() == expected and expected.count("\n") == 2 * 3 + 1
    assert "2026-11-01" not in expected
    with Store(store, read_only=True) as st:  # Sunday 2026-11-01 in the week of 10-26; 11-02 and 11-03 in the next
        last_days = st.sketchset(window="all", since=_dt.datetime(2026, 11, 2, tzinfo=_dt.timezone.utc))
        expected = SliceTable.from_sketchset(st.sketchset(window="1w"), reference=last_days).to_csv()
    assert weekly.read_text() == expected and expected.count("\n") == 2 * 3 + 1 and ',"psi"' in expected
    assert "\n2026-10-26 00:00:00.000000Z," in expected and "\n2026-11-02 00:00:00.000000Z," in expected


def test_the_cell_layout_constants_are_the_kernels_and_numpys():
    """The Numba-free field constants (read by the store and the tables) are the kernels' own, and
    the log-loss clip is NumPy's float64 epsilon, as scikit-learn's."""
    from streameval.kernels import binary, fields

    assert (fields.W, fields.MIN, fields.MAX, fields.SUM, fields.N_FIELDS) == (binary.W, binary.MIN, binary.MAX,
                                                                               binary.SUM, binary.N_FIELDS) == (0, 1, 2, 3, 4)
    assert fields.LOG_LOSS_EPS == binary.LOG_LOSS_EPS == float(np.finfo(np.float64).eps)

