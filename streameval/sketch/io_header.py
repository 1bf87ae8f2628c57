"""The header of a sketch file: its fields' types and ranges, and the size caps they are checked against.

Split from :mod:`streameval.sketch.io` (framing, payload, encode/decode), which re-exports these
names; :mod:`streameval.sketch.io_multiclass` checks its own header fields with the same helpers.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from ..errors import UsageError
from ..grid import CutGrid, Grid, grid_from_spec
from .io_checks import MAX_TOTAL_WEIGHT
from .io_checks import fail as _fail

DEFAULT_MAX_GRID_BINS = 1 << 22
"""Default cap on a grid's size (its number of bins) in a file read: 4,194,304 bins.

A dense state of the grid (what ``merge``, ``update`` and ``coarsen`` allocate) takes 64 bytes per
bin, so the cap bounds those allocations at 256 MiB, and the stored bins (at most the grid's size)
at 68 bytes each. Raise it with the environment variable ``STREAMEVAL_MAX_GRID_BINS``.
"""
MAX_GRID_BINS_ENV = "STREAMEVAL_MAX_GRID_BINS"
MAX_COUNT = (1 << 63) - 1
"""Largest row counter (``n_rows`` and the other integer counters): int64's maximum."""
MAX_LABEL_CHARS = 4096
"""Longest string label (``pos_label``, ``neg_label``) or ``created_by`` a file may hold."""
_MAX_INT_DIGITS = 24  # integers in a header: counters < 2**63 need 19 digits, grid parameters fewer

INT_COUNTERS = ("n_rows", "n_nan", "n_zero_weight", "n_outside")
FLOAT_COUNTERS = ("prob_weight", "brier_sum", "log_loss_sum")
WEIGHT_SQ_COUNTERS = ("weight_sq_neg", "weight_sq_pos")
"""Sums of squared weights per class (Kish's effective size) of weighted sketches: kept in
``counters`` in memory, written as the optional top-level header key ``weight_sq`` (``[neg,
pos]``), which readers that do not know it ignore (they read the weights as frequency weights),
so weighted sketches stay version 1."""

# -- caps ----------------------------------------------------------------------------------------


def max_grid_bins() -> int:
    """The largest grid (in bins) a sketch file may declare.

    ``STREAMEVAL_MAX_GRID_BINS`` if set (a positive integer, e.g. ``16777216``), else
    :data:`DEFAULT_MAX_GRID_BINS` (2**22). Read at every call, so it can be raised at run time.

    Raises
    ------
    UsageError
        If the environment variable is set but is not a positive integer.
    """
    text = os.environ.get(MAX_GRID_BINS_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_GRID_BINS
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{MAX_GRID_BINS_ENV}={text!r}: expected a positive integer (a number of bins)")
    return value


def check_grid_size(grid: Grid, source: str | None = None) -> None:
    """Refuse a grid larger than :func:`max_grid_bins` (a dense state of it would be too large).

    Parameters
    ----------
    grid : Grid
    source : str, optional
        File name for the message.

    Raises
    ------
    SketchFormatError
        If ``grid.n_bins`` exceeds the cap; the message says how to raise it.
    """
    cap = max_grid_bins()
    if grid.n_bins > cap:
        raise _fail(
            f"grid {grid.describe()} has {grid.n_bins:,} bins, more than the limit of {cap:,} "
            f"(a dense state would take {grid.n_bins * 64 / 2**20:,.0f} MiB); if the file is "
            f"trusted, raise the limit with the environment variable {MAX_GRID_BINS_ENV}",
            source,
        )


# -- header --------------------------------------------------------------------------------------


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(text.lstrip('-'))} digits ({text[:12]}...) is out of range")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


_DECODER = json.JSONDecoder(parse_int=_parse_int, object_pairs_hook=_unique_keys)  # built once, reused


def _parse_header(raw: bytes | memoryview, source: str | None) -> dict[str, Any]:
    try:
        text = bytes(raw).decode("utf-8")
        # NaN/Infinity (and 1e999) parse as floats and fail the field checks, which name the field.
        header = _DECODER.decode(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise _fail(f"unreadable header ({str(exc)[:200]})", source) from None
    if not isinstance(header, dict):
        raise _fail("header is not a JSON object", source)
    return header


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_GRID_PARAMS: dict[str, dict[str, str]] = {
    # kind -> {parameter: "int" | "number" | "grid" | "cuts"}; a trailing "?" marks optional ones
    "linear": {"lo": "number", "hi": "number", "bins": "int"},
    "probability": {"mantissa_bits": "int", "min_exponent": "int", "tail_bits": "int?"},
    "float": {"mantissa_bits": "int", "min_exponent": "int", "max_exponent": "int"},
    "cut": {"base": "grid", "cuts": "cuts"},
}


def _check_grid_spec(spec: Any, source: str | None, where: str = "grid") -> None:
    """Types of a grid spec, strictly: the grid classes would coerce ``"0.5"`` or ``4.0``."""
    if not isinstance(spec, dict):
        raise _fail(f"bad header field {where}: {spec!r} is not a JSON object (grid spec must be a dict)", source)
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in _GRID_PARAMS or (where != "grid" and kind == "cut"):  # [] is unhashable
        raise _fail(f"unknown grid kind {kind!r} in header field {where}", source)
    params = _GRID_PARAMS[kind]
    given = set(spec) - {"kind"}
    required = {p for p, t in params.items() if not t.endswith("?")}
    if not required <= given <= set(params):
        raise _fail(
            f"bad parameters for {kind!r} grid in header field {where}: {sorted(given)} (needs "
            f"{sorted(required)}{', optional ' + str(sorted(set(params) - required)) if set(params) != required else ''})",
            source,
        )
    for name in sorted(given):
        value, want = spec[name], params[name].rstrip("?")
        field = f"{where}.{name}"
        if want == "int" and not _is_int(value):
            raise _fail(f"bad header field {field}={value!r}: must be an integer", source)
        if want == "number" and not _is_number(value):
            raise _fail(f"bad header field {field}={value!r}: must be a number", source)
        if want == "grid":
            _check_grid_spec(value, source, field)
        if want == "cuts":
            if not isinstance(value, list) or not all(_is_number(c) for c in value):
                raise _fail(f"bad header field {field}={value!r}: must be a list of numbers", source)
            if any(b <= a for a, b in zip(value, value[1:], strict=False)):
                raise _fail(f"bad header field {field}={value!r}: cuts must be strictly increasing", source)


def _grid(spec: Any, source: str | None) -> Grid:
    _check_grid_spec(spec, source)
    try:
        grid = grid_from_spec(spec)
    except (ValueError, TypeError, OverflowError) as exc:
        raise _fail(f"bad header field grid={spec!r}: {exc}", source) from None
    if isinstance(grid, CutGrid) and list(grid.cuts) != list(spec["cuts"]):  # pragma: no cover - checked above
        raise _fail(f"bad header field grid.cuts={spec['cuts']!r}", source)
    check_grid_size(grid, source)
    return grid


def _counters(raw: Any, source: str | None) -> dict[str, Any]:
    """Every counter present with its type: int counters in [0, 2**63), float ones finite, >= 0."""
    if not isinstance(raw, dict):
        raise _fail(f"bad header field counters={raw!r}: must be a JSON object", source)
    unknown = sorted(set(raw) - {*INT_COUNTERS, *FLOAT_COUNTERS, "weighted"})
    if unknown:
        raise _fail(f"unknown counter {unknown[0]!r} in the header (a newer format?)", source)
    out: dict[str, Any] = {}
    for name in INT_COUNTERS:
        value = raw.get(name, 0)
        if not _is_int(value) or not 0 <= value <= MAX_COUNT:
            raise _fail(f"counter {name!r} has bad value {value!r}: need an integer in [0, 2**63)", source)
        out[name] = int(value)
    for name in FLOAT_COUNTERS:
        value = raw.get(name, 0.0)
        if not _is_number(value) or not 0 <= value <= MAX_TOTAL_WEIGHT * 40:  # log loss <= 36.04 x weight
            raise _fail(f"counter {name!r} has bad value {value!r}: need a finite number >= 0", source)
        out[name] = float(value)
    weighted = raw.get("weighted", False)
    if not isinstance(weighted, bool):
        raise _fail(f"counter 'weighted' has bad value {weighted!r}: need true or false", source)
    out["weighted"] = weighted
    return out


def _weight_sq(raw: Any, counters: dict[str, Any], source: str | None) -> None:
    """The optional header key ``weight_sq`` (``[neg, pos]``) into ``counters`` (§10)."""
    ok = isinstance(raw, list) and len(raw) == 2 and all(_is_number(v) and 0 <= v < math.inf for v in raw)
    if not ok:
        raise _fail(f"bad header field weight_sq={raw!r}: need [negative, positive] finite numbers >= 0", source)
    if not counters["weighted"]:
        raise _fail("header field weight_sq belongs to weighted sketches only (counter 'weighted' is false)", source)
    counters.update(zip(WEIGHT_SQ_COUNTERS, (float(v) for v in raw), strict=True))


def _label_ok(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= MAX_LABEL_CHARS
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (bool, int))


def _meta(raw: Any, source: str | None) -> dict[str, Any]:
    """Labels: JSON scalars, finite, short; distinct; under the default coding a negative of 0/-1/false."""
    if not isinstance(raw, dict):
        raise _fail(f"bad header field meta={raw!r}: must be a JSON object", source)
    meta = dict(raw)
    for name in ("pos_label", "neg_label"):
        if name in meta and meta[name] is not None and not _label_ok(meta[name]):
            raise _fail(
                f"bad header field meta.{name}={meta[name]!r}: a label must be a string of at most "
                f"{MAX_LABEL_CHARS} characters, an integer, a finite number or a boolean",
                source,
            )
    pos, neg = meta.get("pos_label"), meta.get("neg_label")
    if pos is not None and neg is not None and pos == neg:
        raise _fail(f"bad header fields meta.pos_label={pos!r} and meta.neg_label={neg!r}: the two classes are equal", source)
    if pos is None and neg is not None and not (neg in (0, -1) and not isinstance(neg, str)):
        raise _fail(
            f"bad header field meta.neg_label={neg!r}: without pos_label the negative label is 0, -1 or false",
            source,
        )
    created_by = meta.get("created_by")
    if created_by is not None and not (isinstance(created_by, str) and len(created_by) <= MAX_LABEL_CHARS):
        raise _fail(f"bad header field meta.created_by={str(created_by)[:80]!r}: must be a short string", source)
    return meta


_GRIDS: dict[tuple[Any, ...], Grid] = {}


def _cached_grid(spec: Any, source: str | None) -> Grid:
    """:func:`_grid`, remembered for flat specs (thousands of shard files share one grid).

    The key keeps each value's type and exact value (a float by its hex form), so ``4`` and
    ``4.0`` (refused for an integer parameter) never share an entry, nor ``0.0`` and ``-0.0``
    (equal as floats, but a grid written with ``-0.0`` writes it back); the size cap is checked
    on every call (its environment variable may change).
    """
    if isinstance(spec, dict) and all(type(v) in (int, float, str) for v in spec.values()):
        key = tuple((k, type(v), v.hex() if type(v) is float else v) for k, v in spec.items())
        grid = _GRIDS.get(key)
        if grid is None:
            grid = _grid(spec, source)
            if len(_GRIDS) < 64:
                _GRIDS[key] = grid
        else:
            check_grid_size(grid, source)
        return grid
    return _grid(spec, source)
