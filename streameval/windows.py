"""Time windows: which tumbling window (``1h``, ``1d``, ``1w``, ``1mo``, ...) each row falls in.

A window is named by its start. Windows are tumbling and aligned to the calendar in the chosen
time zone (UTC by default): days start at midnight, weeks on Monday, months on the 1st. A row
whose time is null falls in a null window, which is kept as a group of its own, never dropped.
The flooring itself is Arrow's ``floor_temporal``, which works in local time for a time zone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .errors import UsageError

__all__ = ["Window", "parse_window", "window_starts"]

_UNITS = {
    "s": "second", "min": "minute", "h": "hour", "d": "day", "w": "week", "mo": "month",
    "q": "quarter", "y": "year",
}
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


def window_starts(times: Any, window: Window, tz: str | None = None, *, column: str = "time") -> Any:
    """The start of the window holding each time, as an Arrow timestamp array.

    Parameters
    ----------
    times : pyarrow.Array or ChunkedArray
        Timestamps (naive ones are read as UTC, or as local time in ``tz`` if given: a naive
        timestamp has no zone of its own), dates, or integer/float seconds since the Unix epoch.
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
        if t.tz is None:
            arr = pc.assume_timezone(arr.cast(pa.timestamp("us")), timezone=zone)
        arr = arr.cast(pa.timestamp("us", tz=zone))
    elif pa.types.is_date(t):
        arr = pc.assume_timezone(arr.cast(pa.timestamp("us")), timezone=zone)
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        micros = pc.multiply(arr.cast(pa.float64()), 1e6)
        arr = pc.round(micros).cast(pa.int64()).cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz=zone))
    else:
        raise UsageError(
            f"time column {column!r} has type {t}; it must hold timestamps, dates or seconds since the epoch"
        )
    try:
        floored = pc.floor_temporal(arr, multiple=window.multiple, unit=window.unit, week_starts_monday=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UsageError(f"cannot align time column {column!r} to {window} windows in {zone}: {exc}") from None
    return floored
