"""Time windows: which tumbling window (``1h``, ``1d``, ``1w``, ``1mo``, ...) each row falls in.

A window is named by its start. Windows are tumbling and aligned to the calendar in the chosen
time zone (UTC by default): days start at midnight, weeks on Monday, months on the 1st. A row
whose time is null falls in a null window, which is kept as a group of its own, never dropped.
In a time zone, a time is floored on the local clock (Arrow's ``floor_temporal`` of the local
wall-clock time) and the floored clock reading is turned back into an instant: windows are spans
of the local clock. When the reading does not occur (clocks going forward) the window starts
when the clock jumps; when it occurs twice (clocks going back) the window starts at its first
occurrence, so the repeated span belongs to one window (on that night the hourly window of the
repeated hour holds two hours of rows; a day whose midnight repeats starts at the first one).
In UTC, windows are floored with integer arithmetic instead (Arrow's zone-aware flooring costs
~0.2-0.3 s per million rows, the arithmetic ~5-20 ms), which a test keeps equal to Arrow's.
Naive timestamps (and dates) given with a time zone are local clock readings: one that occurs
twice is read as its earlier occurrence, one that does not occur (skipped when clocks go
forward) as the moment the clock jumps. Nanosecond timestamps are floored to the microsecond
first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import UsageError

__all__ = ["Window", "parse_window", "window_starts", "window_keys"]

_UNITS = {
    "s": "second", "min": "minute", "h": "hour", "d": "day", "w": "week", "mo": "month",
    "q": "quarter", "y": "year",
}
_MICROS = {"second": 10**6, "minute": 60 * 10**6, "hour": 3600 * 10**6, "day": 86400 * 10**6,
           "week": 7 * 86400 * 10**6}
_MONDAY = -3 * 86400 * 10**6  # 1969-12-29, a Monday: Arrow's week origin with week_starts_monday
_MONTHS = {"month": 1, "quarter": 3, "year": 12}
_UTC = ("UTC", "Etc/UTC", "utc", "Z", "+00:00")
_LAST_SECOND = 253402300800 - 86400 * 14  # seconds from the epoch to 9999-12-18: windows must end in 9999
_SPEC = re.compile(r"^\s*(\d*)\s*(s|min|h|d|w|mo|q|y)\s*$")


@dataclass(frozen=True)
class Window:
    """A tumbling window length: ``multiple`` calendar ``unit``s (``unit`` as Arrow names it).

    Attributes
    ----------
    multiple : int
        How many units per window (>= 1).
    unit : str
        ``"second"``, ``"minute"``, ``"hour"``, ``"day"``, ``"week"``, ``"month"``, ``"quarter"``
        or ``"year"``.
    """

    multiple: int
    unit: str

    def __str__(self) -> str:
        short = {v: k for k, v in _UNITS.items()}[self.unit]
        return f"{self.multiple}{short}"


def parse_window(text: str | Window) -> Window:
    """Parse a window length such as ``"1h"``, ``"15min"``, ``"1d"``, ``"7d"``, ``"1w"``, ``"1mo"``.

    Units: ``s``, ``min``, ``h``, ``d``, ``w`` (weeks start on Monday), ``mo`` (calendar months),
    ``q`` (quarters), ``y``. A missing number means 1.

    Raises
    ------
    UsageError
        If the text is not of that form.
    """
    if isinstance(text, Window):
        return text
    m = _SPEC.match(str(text))
    if not m or (m.group(1) and int(m.group(1)) < 1):
        raise UsageError(
            f"bad window {text!r}: expected a length such as 1h, 15min, 1d, 7d, 1w or 1mo "
            "(units s, min, h, d, w, mo, q, y)"
        )
    return Window(int(m.group(1) or 1), _UNITS[m.group(2)])



def check_tz(tz: str | None, window: str | None) -> None:
    """Refuse a time zone given without windows: it aligns windows only, so it would change nothing.

    Raises
    ------
    UsageError
        ``tz`` given and ``window`` not.
    """
    if tz is not None and window is None:
        raise UsageError("tz= (--tz) is the time zone windows are aligned in; give it with time= and window= "
                         "(--time, --window), or drop it")

def window_starts(times: Any, window: Window, tz: str | None = None, *, column: str = "time") -> Any:
    """The start of the window holding each time, as an Arrow timestamp array.

    Parameters
    ----------
    times : pyarrow.Array or ChunkedArray
        Timestamps (naive ones are read as UTC, or as local time in ``tz`` if given: a naive
        timestamp has no zone of its own), dates, or integer/float seconds since the Unix epoch
        (NaN is a null time).
    window : Window
    tz : str, optional
        IANA time zone the windows are aligned in (``"Europe/Paris"``); default UTC.
    column : str
        The time column's name, for error messages.

    Returns
    -------
    pyarrow.TimestampArray
        ``timestamp[us, tz]`` window starts; null where the time is null.

    Raises
    ------
    UsageError
        If the column is not a time, or ``tz`` is not a known time zone.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = times.combine_chunks() if isinstance(times, pa.ChunkedArray) else times
    zone = tz or "UTC"
    t = arr.type
    if pa.types.is_timestamp(t):
        if t.unit == "ns":  # floor to the microsecond (a plain cast refuses to drop nanoseconds)
            arr = pc.floor_temporal(arr if t.tz is None else arr.cast(pa.timestamp("ns", tz="UTC")),
                                    unit="microsecond")
        if t.tz is None:  # naive: local time in the zone (in UTC that is a relabelling, no arithmetic)
            arr = arr.cast(pa.timestamp("us"))
            arr = arr.cast(pa.timestamp("us", tz="UTC")) if zone in _UTC else _assume(arr, zone, column)
        arr = arr.cast(pa.timestamp("us", tz=zone))
    elif pa.types.is_date(t):
        arr = arr.cast(pa.timestamp("us"))
        arr = arr.cast(pa.timestamp("us", tz="UTC")) if zone in _UTC else _assume(arr, zone, column)
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        micros = pc.multiply(arr.cast(pa.float64()), 1e6)
        micros = pc.if_else(pc.is_finite(micros), micros, pa.scalar(None, pa.float64()))  # NaN: no time, as null
        outside = pc.greater_equal(pc.abs(micros), _LAST_SECOND * 1e6)
        if pc.any(outside).as_py():  # past the year 9999 (or before 1): not seconds
            i = pc.index(outside, True).as_py()
            raise UsageError(f"time column {column!r}: {arr[i]} is not a time in seconds since the epoch (that "
                             "is past the year 9999); milliseconds? give --time an SQL expression such as "
                             f"to_timestamp({column} / 1000)")
        arr = pc.round(micros).cast(pa.int64()).cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz=zone))
    else:
        raise UsageError(
            f"time column {column!r} has type {t}; it must hold timestamps, dates or seconds since the epoch"
        )
    if zone in _UTC and (window.unit in _MICROS or window.unit in _MONTHS):
        return _floor_utc(arr, window)
    try:
        local = pc.floor_temporal(pc.local_timestamp(arr), multiple=window.multiple, unit=window.unit,
                                  week_starts_monday=True)
        early = pc.assume_timezone(local, timezone=zone, ambiguous="earliest", nonexistent="latest")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UsageError(f"cannot align time column {column!r} to {window} windows in {zone}: {exc}") from None
    # a floored clock reading that occurs twice starts its window at its first occurrence
    return early.cast(pa.timestamp("us", tz=zone))


def _assume(arr: Any, zone: str, column: str) -> Any:
    """Naive ``timestamp[us]`` clock readings in ``zone`` as instants: a reading that occurs twice
    is its earlier occurrence, one that does not occur is the moment the clock jumps past it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.assume_timezone(arr, timezone=zone, ambiguous="earliest", nonexistent="latest")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UsageError(f"cannot read time column {column!r} as local times in {zone}: {exc}") from None


def _floor_utc(arr: Any, window: Window) -> Any:
    """``floor_temporal`` in UTC by integer arithmetic: on microseconds for fixed lengths, on
    month numbers (NumPy ``datetime64[M]``) for months and quarters, on year numbers for years
    (Arrow counts multiples of years from year 0, of months and quarters from 1970)."""
    import numpy as np
    import pyarrow as pa

    from .sources.base import numpy_view

    micros = arr.cast(pa.int64())
    valid = None
    v = numpy_view(micros)  # a view of the buffer without nulls: pyarrow's fill_null and to_numpy import pandas
    if not isinstance(v, np.ndarray):
        valid = np.asarray(micros.is_valid())
        v = np.asarray(micros.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if window.unit in _MICROS:
        length = window.multiple * _MICROS[window.unit]
        origin = _MONDAY if window.unit == "week" else 0
        floored = (v - origin) // length * length + origin
    else:
        months = _months_since_1970(v // _MICROS["day"])
        if window.unit == "year":
            years = 1970 + months // 12
            months = (years // window.multiple * window.multiple - 1970) * 12
        else:
            length = window.multiple * _MONTHS[window.unit]
            months = months // length * length
        floored = _first_day_of_month(months) * _MICROS["day"]
    if valid is None:
        return utc_micros(floored)
    return pa.array(floored, pa.timestamp("us", tz="UTC"), mask=~valid)


def utc_micros(micros: Any) -> Any:
    """Microseconds since the epoch (an integer NumPy array, no nulls) as an Arrow
    ``timestamp("us", tz="UTC")`` array built from their buffer (``pa.array`` imports pandas)."""
    import numpy as np
    import pyarrow as pa

    values = np.ascontiguousarray(micros, dtype=np.int64)
    return pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), values.shape[0], [None, pa.py_buffer(values)])


def _months_since_1970(days: Any) -> Any:
    """Months since 1970-01 of days since 1970-01-01 (proleptic Gregorian; integer arithmetic after
    H. Hinnant's ``civil_from_days``)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153  # months since March
    year = yoe + era * 400 + (mp >= 10)
    month0 = (mp + 2) % 12  # 0 = January
    return (year - 1970) * 12 + month0


def _first_day_of_month(months: Any) -> Any:
    """Days since 1970-01-01 of the first day of each month (months since 1970-01);
    Hinnant's ``days_from_civil``."""
    year = 1970 + months // 12
    month0 = months % 12
    year = year - (month0 < 2)
    era = year // 400
    yoe = year - era * 400
    mp = (month0 + 10) % 12
    doy = (153 * mp + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def window_keys(times: Any, window: Window, tz: str | None = None, *, column: str = "time") -> Any:
    """Window starts as a group key column: :func:`window_starts`, dictionary-encoded.

    Fixed-length windows in UTC are numbered by integer arithmetic (no hashing); other windows
    are floored by Arrow and then dictionary-encoded. Nulls stay null.

    Returns
    -------
    pyarrow.DictionaryArray
        Indices into a dictionary of ``timestamp[us, tz]`` window starts (unused entries may occur).

    Raises
    ------
    UsageError
        As :func:`window_starts`.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    zone = tz or "UTC"
    if zone in _UTC and window.unit in _MICROS:
        direct = _utc_fixed_keys(times, window)
        if direct is not None:
            return direct
    starts = window_starts(times, window, tz, column=column)
    if not (zone in _UTC and window.unit in _MICROS) or starts.null_count == len(starts):
        return starts.dictionary_encode(null_encoding="encode")
    length = window.multiple * _MICROS[window.unit]
    micros = starts.cast(pa.int64())
    lo, hi = (int(x) for x in (pc.min(micros).as_py(), pc.max(micros).as_py()))
    count = (hi - lo) // length + 1
    if count > max(len(starts), 1 << 16):  # sparse windows over a long span: hash them instead
        return starts.dictionary_encode(null_encoding="encode")
    valid = None if micros.null_count == 0 else np.asarray(micros.is_valid())
    v = np.asarray(micros.fill_null(lo).to_numpy(zero_copy_only=False), dtype=np.int64)
    indices = pa.array(((v - lo) // length).astype(np.int32), mask=None if valid is None else ~valid)
    dictionary = pa.array(lo + length * np.arange(count, dtype=np.int64), pa.timestamp("us", tz="UTC"))
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def _utc_fixed_keys(times: Any, window: Window) -> Any:
    """:func:`window_keys` of second, millisecond or microsecond timestamps for a fixed-length
    window in UTC, straight from the int64 values (no conversion of the column, one floor
    division); None when another path must answer (other types, nanoseconds, all nulls, or
    windows too sparse to number densely)."""
    import numpy as np
    import pyarrow as pa

    arr = times.combine_chunks() if isinstance(times, pa.ChunkedArray) else times
    if not isinstance(arr, pa.Array) or not pa.types.is_timestamp(arr.type) or arr.type.unit == "ns":
        return None
    n = len(arr)
    if n == 0 or arr.null_count == n:
        return None
    per = {"s": 10**6, "ms": 10**3, "us": 1}[arr.type.unit]  # microseconds per stored unit
    length = window.multiple * _MICROS[window.unit]
    origin = _MONDAY if window.unit == "week" else 0
    if length % per or origin % per:
        return None
    # naive timestamps are read as UTC and zoned ones are stored as UTC instants: the stored
    # integers are UTC either way
    v = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=n, offset=arr.offset * 8)
    floored = (v - origin // per) // (length // per)
    valid = None if arr.null_count == 0 else np.asarray(arr.is_valid())
    seen = floored if valid is None else floored[valid]
    lo, hi = int(seen.min()), int(seen.max())
    count = hi - lo + 1
    if count > max(n, 1 << 16):  # sparse windows over a long span: hashed by the other path
        return None
    indices = pa.array((floored - lo).astype(np.int32), mask=None if valid is None else ~valid)
    dictionary = pa.array((lo + np.arange(count, dtype=np.int64)) * length + origin, pa.timestamp("us", tz="UTC"))
    return pa.DictionaryArray.from_arrays(indices, dictionary)
