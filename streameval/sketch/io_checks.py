"""The consistency rules of a decoded sketch (``docs/sketch-format.md`` §6, rules 8-10).

:func:`check_payload` checks the stored bins alone (keys, weights, min/max/sum of every cell);
:func:`check_consistency` checks the counters against the bins (row counts, weights, the ranges
of the Brier and log-loss sums). Each failure is a :class:`~streameval.errors.SketchFormatError`
naming the bin, the class, the field and the value. Float sums are compared with a relative
tolerance of :data:`REL_TOL`, for summation order and merges.
"""

from __future__ import annotations

import math
from typing import Any

import numba as nb
import numpy as np

from ..errors import SketchFormatError
from ..grid import Grid
from ..inputs import MAX_TOTAL_WEIGHT as _INPUT_MAX_TOTAL_WEIGHT
from ..kernels.binary import LOG_LOSS_EPS, MAX, MIN, SUM, W
from ..kernels.cache import ENABLED as CACHE

__all__ = ["check_payload", "check_keys", "check_cells", "check_consistency", "fail", "MAX_TOTAL_WEIGHT", "REL_TOL"]

MAX_TOTAL_WEIGHT = _INPUT_MAX_TOTAL_WEIGHT
"""Largest total weight (both classes together, and ``prob_weight``) a file may hold: 1e300, the
limit :func:`streameval.inputs.clean_weights` puts on a chunk, so sums such as ``tp + fp`` and
the log-loss sum stay finite."""
REL_TOL = 1e-6
"""Relative tolerance of float sums checked against bounds (summation order, merges)."""


def fail(msg: str, source: str | None) -> SketchFormatError:
    """A :class:`SketchFormatError` whose message starts with the file name, if known."""
    where = f"{source}: " if source else ""
    return SketchFormatError(f"{where}{msg}")


def _first_bad(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


_CLASS = ("negative", "positive")


def check_payload(grid: Grid, keys: np.ndarray, values: np.ndarray, source: str | None) -> None:
    """Rule 8: keys strictly increasing inside the grid; every cell's weight, min, max, sum valid.

    Raises
    ------
    SketchFormatError
    """
    check_keys(grid, keys, source)
    check_cells(grid, keys, values, source)


def check_keys(grid: Grid, keys: np.ndarray, source: str | None) -> None:
    """Keys strictly increasing and inside the grid.

    Raises
    ------
    SketchFormatError
    """
    if keys.size:
        steps = np.diff(keys)
        if keys[0] < 0 or keys[-1] >= grid.n_bins or np.any(steps <= 0):
            at = int(np.argmax(steps <= 0)) + 1 if np.any(steps <= 0) else keys.size - 1
            raise fail(
                f"bin keys are not increasing inside the grid: key {int(keys[at])} at position {at} "
                f"(grid size {grid.n_bins})",
                source,
            )


def _bins_of(grid: Grid, x: np.ndarray) -> np.ndarray:
    """``grid.bin_index`` of an array of any shape, by the compiled kernel (its tested twin)."""
    from ..kernels.binary import bin_indices

    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    out = np.empty(flat.shape[0], dtype=np.int64)
    bin_indices(*grid.kernel_params(), flat, out)
    return out.reshape(x.shape)


@nb.njit(nogil=True, cache=CACHE)
def _cells_ok(keys, values, min_bins, max_bins):  # type: ignore[no-untyped-def]
    """Every predicate of :func:`check_cells` in one compiled pass: True when all hold.

    The NumPy checks below stay the specification and write the error message; this pass only
    lets a valid file skip them (a file it refuses goes through them).
    """
    for i in range(values.shape[0]):
        w0, w1 = values[i, 0, W], values[i, 1, W]
        if not (w0 > 0.0 or w1 > 0.0):
            return False
        for c in range(2):
            w, lo, hi, sm = values[i, c, W], values[i, c, MIN], values[i, c, MAX], values[i, c, SUM]
            if not (w >= 0.0 and w < math.inf) or lo != lo or hi != hi or sm != sm:
                return False
            if w > 0.0:
                if not lo <= hi or min_bins[i, c] != keys[i] or max_bins[i, c] != keys[i]:
                    return False
                low, high = w * lo, w * hi
                slack = REL_TOL * max(abs(low), abs(high))
                slack = (slack if slack < math.inf else 0.0) + 1e-300
                if not (sm >= low - slack and sm <= high + slack):
                    return False
            elif lo != math.inf or hi != -math.inf or sm != 0.0:
                return False
    return True


def check_cells(grid: Grid, keys: np.ndarray, values: np.ndarray, source: str | None) -> None:
    """Every cell of the bins ``keys`` (any run of a sketch's bins): weight, min, max, sum valid.

    Raises
    ------
    SketchFormatError
    """
    filled = values[:, :, W] > 0
    bins = [_bins_of(grid, np.where(filled, values[:, :, f], 0.0)) for f in (MIN, MAX)]
    if _cells_ok(keys, np.ascontiguousarray(values), bins[0], bins[1]):
        return
    _refuse_cells(keys, values, bins, source)
    raise fail("a bin's cells are inconsistent", source)  # the checks above name the cause


def _refuse_cells(keys: np.ndarray, values: np.ndarray, bins: list[np.ndarray], source: str | None) -> None:
    w = values[:, :, W]
    bad = ~np.isfinite(w) | (w < 0)
    if np.any(bad):
        b, c = _first_bad(bad)
        raise fail(f"a bin weight is negative or not finite: bin {int(keys[b])} {_CLASS[c]} weight {float(w[b, c])!r}", source)
    empty = (w[:, 0] <= 0) & (w[:, 1] <= 0)
    if np.any(empty):
        raise fail(f"a stored bin is empty: bin {int(keys[int(np.argmax(empty))])} has weight 0 in both classes", source)
    filled = w > 0
    lo, hi, sums = values[:, :, MIN], values[:, :, MAX], values[:, :, SUM]
    bad = (filled & ~(lo <= hi)) | np.isnan(values).any(axis=2)
    if np.any(bad):
        b, c = _first_bad(bad)
        raise fail(
            f"a bin's min/max are inconsistent: bin {int(keys[b])} {_CLASS[c]} min {float(lo[b, c])!r}, "
            f"max {float(hi[b, c])!r}, sum {float(sums[b, c])!r}",
            source,
        )
    # An empty class cell must be exactly [0, +inf, -inf, 0]: merging takes min/max over cells
    # whatever their weight, so a stray min in an empty cell would corrupt merged sketches.
    bad = ~filled & ((lo != np.inf) | (hi != -np.inf) | (sums != 0))
    if np.any(bad):
        b, c = _first_bad(bad)
        raise fail(
            f"an empty class cell of a stored bin holds a min, max or sum: bin {int(keys[b])} "
            f"{_CLASS[c]} [{float(w[b, c])!r}, {float(lo[b, c])!r}, {float(hi[b, c])!r}, {float(sums[b, c])!r}]",
            source,
        )
    for field, arr, where in (("min", lo, bins[0]), ("max", hi, bins[1])):
        bad = filled & (where != keys[:, None])
        if np.any(bad):
            b, c = _first_bad(bad)
            raise fail(
                f"a bin's min/max do not belong to the bin: bin {int(keys[b])} {_CLASS[c]} {field} "
                f"{float(arr[b, c])!r} is in bin {int(where[b, c])}",
                source,
            )
    # The score sum of a cell lies between weight x min and weight x max (up to rounding).
    with np.errstate(over="ignore", invalid="ignore"):
        low, high = w * lo, w * hi
        slack = REL_TOL * np.maximum(np.abs(low), np.abs(high))
        slack = np.where(np.isfinite(slack), slack, 0.0) + 1e-300
        bad = filled & ~((sums >= low - slack) & (sums <= high + slack))
    if np.any(bad):
        b, c = _first_bad(bad)
        raise fail(
            f"a bin's score sum is outside [weight x min, weight x max]: bin {int(keys[b])} "
            f"{_CLASS[c]} sum {float(sums[b, c])!r}, weight {float(w[b, c])!r}, min {float(lo[b, c])!r}, max {float(hi[b, c])!r}",
            source,
        )


@nb.njit(nogil=True, cache=CACHE)
def _aggregates(values):  # type: ignore[no-untyped-def]
    """One compiled pass for rules 9-10: ``(neg total, pos total, non-empty cells, weight of the
    cells inside [0, 1], weight of the cells reaching it, cells outside it, a non-integer weight)``."""
    t0 = t1 = w_in = w_touch = 0.0
    cells = outside = 0
    frac = False
    for i in range(values.shape[0]):
        for c in range(2):
            w = values[i, c, W]
            if c == 0:
                t0 += w
            else:
                t1 += w
            if not w > 0.0:
                continue
            cells += 1
            lo, hi = values[i, c, MIN], values[i, c, MAX]
            if hi >= 0.0 and lo <= 1.0:
                w_touch += w
                if lo >= 0.0 and hi <= 1.0:
                    w_in += w
            else:
                outside += 1
            frac = frac or w != np.floor(w)
    return t0, t1, cells, w_in, w_touch, outside, frac


class NeedBins(Exception):
    """:func:`check_consistency` was called without the bins (``values=None``) and needs them: to
    name a problem, or to decide a probability sum at the edge of its range exactly."""


def check_consistency(values: np.ndarray | None, c: dict[str, Any], source: str | None, summary: Any = None) -> None:
    """Rules 9-10: counters against the bins (row counts, weights, the probability sums' ranges).

    ``c`` holds every counter with its documented type (as ``io.decode`` builds it). ``summary``,
    when given, is the :class:`~streameval.sketch.io_compact.BinSummary` the version-3 decoder
    computed from the same bins (so they are not read again); then ``values`` may be None.

    Raises
    ------
    SketchFormatError
    NeedBins
        Without ``values``, where they are needed (the caller decodes them and calls again).
    """
    if summary is None:
        if values is None:
            raise ValueError("check_consistency needs the bins or the decoder's summary of them")
        t0, t1, cells, w_inside, w_touch, n_outside_cells, frac_any = _aggregates(np.ascontiguousarray(values))
        bounds = None
    else:
        t0, t1, cells, w_inside, w_touch, n_outside_cells, frac_any, bounds = summary
    totals = (float(t0), float(t1))
    grand = totals[0] + totals[1]  # Python floats: an overflow is inf, without a warning
    if not grand <= MAX_TOTAL_WEIGHT:
        raise fail(
            f"total weight {grand!r} (negative {totals[0]!r}, positive {totals[1]!r}) "
            f"exceeds {MAX_TOTAL_WEIGHT:g}: sums of such weights overflow float64",
            source,
        )
    n_rows, n_nan, n_zero = c["n_rows"], c["n_nan"], c["n_zero_weight"]
    for name in ("n_nan", "n_zero_weight", "n_outside"):
        if c[name] > n_rows:
            raise fail(f"counters are inconsistent: {name}={c[name]} exceeds n_rows={n_rows}", source)
    binned_max = n_rows - n_nan - n_zero + min(n_nan, n_zero)  # rows with a score and weight > 0
    if binned_max < 0 or cells > binned_max:
        raise fail(
            f"counters are inconsistent: {cells} non-empty bin cells but at most {max(binned_max, 0)} "
            f"binned rows (n_rows={n_rows}, n_nan={n_nan}, n_zero_weight={n_zero})",
            source,
        )
    for k, name in enumerate(("weight_sq_neg", "weight_sq_pos")):
        # Cauchy-Schwarz over the class's n <= binned_max rows: W**2 / n <= sum w**2 <= W**2.
        if name in c:
            sq, wk = c[name], float(totals[k])
            top = wk * wk  # inf above 1.3e154, where sum w**2 may still be finite (`**` raised OverflowError)
            low = wk * (wk / max(binned_max, 1)) * (1 - REL_TOL)
            if low == math.inf:
                raise fail(
                    f"header field weight_sq: {name}={sq!r} is given, but the class's weight {wk!r} over at most "
                    f"{binned_max} rows has no finite sum of squares (writers leave weight_sq out then)",
                    source,
                )
            if not (low <= sq <= top * (1 + REL_TOL) + 1e-300) or (top > 0 and sq <= 0):
                raise fail(
                    f"header field weight_sq: {name}={sq!r} is outside [{low!r}, {top!r}], the range the class's "
                    f"weight {float(totals[k])!r} over at most {binned_max} rows allows",
                    source,
                )
    if c["n_outside"] > binned_max:
        raise fail(f"counters are inconsistent: n_outside={c['n_outside']} exceeds the {binned_max} binned rows", source)
    total = grand
    pw = c["prob_weight"]
    slack = REL_TOL * max(total, pw) + 1e-300
    if not w_inside - slack <= pw <= w_touch + slack:
        raise fail(
            f"counters are inconsistent: prob_weight={pw!r} but the bins inside [0, 1] weigh "
            f"{w_inside!r} and those reaching it {w_touch!r}",
            source,
        )
    if c["n_outside"] < n_outside_cells:
        raise fail(
            f"counters are inconsistent: n_outside={c['n_outside']} but {n_outside_cells} "
            "non-empty bin cells lie outside [0, 1]",
            source,
        )
    if not c["weighted"]:
        # Unweighted: weights are row counts, hence whole numbers adding up to the binned rows.
        if n_zero:
            raise fail(f"counters are inconsistent: n_zero_weight={n_zero} in an unweighted sketch", source)
        if frac_any:
            if values is None:
                raise NeedBins
            w = values[:, :, W]
            b, cls = _first_bad((w > 0) & (w != np.floor(w)))
            raise fail(f"a bin weight of an unweighted sketch is not a row count: {_CLASS[cls]} weight {float(w[b, cls])!r}", source)
        binned = n_rows - n_nan
        exact = total <= 2.0**53
        if (total != binned) if exact else abs(total - binned) > REL_TOL * binned:
            raise fail(
                f"counters are inconsistent: the bins hold {total:.17g} rows but n_rows - n_nan = {binned}",
                source,
            )
        if pw != math.floor(pw) or (abs(pw + c["n_outside"] - total) > (0 if exact else REL_TOL * total)):
            raise fail(
                f"counters are inconsistent: prob_weight={pw!r} + n_outside={c['n_outside']} should be the "
                f"{total:.17g} binned rows",
                source,
            )
    _check_probability_sums(values, c, source, bounds, w_touch)


@nb.njit(nogil=True, cache=CACHE)
def _probability_bounds(values):  # type: ignore[no-untyped-def]
    """``(brier_lo, brier_hi, log_loss_lo, log_loss_hi)``: the sums the cells' score ranges allow.

    Per row the Brier term (``s**2`` for negatives, ``(1 - s)**2`` for positives) and the log-loss
    term (``-log(1 - s)``, ``-log(s)``, ``s`` clipped to [eps, 1 - eps]) are monotone in the score:
    cells inside [0, 1] contribute between weight x the term at one end and at the other; cells
    reaching into [0, 1] between 0 and weight x the larger end (their score range clipped to it).
    """
    eps = LOG_LOSS_EPS
    b_lo = b_hi = l_lo = l_hi = 0.0
    for i in range(values.shape[0]):
        for c in range(2):
            w = values[i, c, W]
            if not w > 0.0:
                continue
            a, b = values[i, c, MIN], values[i, c, MAX]
            if b < 0.0 or a > 1.0:
                continue  # outside [0, 1]: no term
            inside = a >= 0.0 and b <= 1.0
            a, b = min(max(a, 0.0), 1.0), min(max(b, 0.0), 1.0)
            ca, cb = min(max(a, eps), 1.0 - eps), min(max(b, eps), 1.0 - eps)
            if c == 0:
                bl, bh = a * a, b * b
                ll, lh = -math.log1p(-ca), -math.log1p(-cb)
            else:
                bl, bh = (1.0 - b) ** 2, (1.0 - a) ** 2
                ll, lh = -math.log(cb), -math.log(ca)
            if inside:
                b_lo += w * bl
                l_lo += w * ll
            b_hi += w * bh
            l_hi += w * lh
    return b_lo, b_hi, l_lo, l_hi


_NEAR = 1e-8
"""Relative distance to an edge of a probability sum's accepted range below which the version-3
decoder's approximate bounds are replaced by the exact ones (their error is below 1e-9: a sum of
at most 2**23 positive terms, each within 2 ulp)."""


def _within(lower: float, upper: float, value: float, pw: float) -> tuple[bool, float]:
    """``(lower - slack <= value <= upper + slack, distance of value to the nearer edge)``."""
    slack = REL_TOL * max(upper, value) + 1e-9 * pw + 1e-300
    lo_edge, hi_edge = lower - slack, upper + slack
    return lo_edge <= value <= hi_edge, min(abs(value - lo_edge), abs(value - hi_edge))


def _check_probability_sums(
    values: np.ndarray | None,
    c: dict[str, Any],
    source: str | None,
    bounds: tuple[float, float, float, float] | None = None,
    w_touch: float = 0.0,
) -> None:
    """Brier and log-loss sums within the bounds the bins allow (each row's term is monotone in its score).

    ``bounds``, when given, are the version-3 decoder's: a vectorized log and another summation
    order make them differ from :func:`_probability_bounds` by far less than :data:`_NEAR` (relative)
    plus ``3e-15`` per unit of ``w_touch`` (the weight reaching [0, 1]). A sum that close to an edge
    of its accepted range is decided with the exact bounds, so both layouts get the same verdict.
    """
    pw = c["prob_weight"]
    exact = bounds is None
    b_lo, b_hi, l_lo, l_hi = _probability_bounds(np.ascontiguousarray(values)) if bounds is None else bounds
    for name, i in (("brier_sum", 0), ("log_loss_sum", 1)):
        value = c[name]
        lower, upper = (b_lo, b_hi) if i == 0 else (l_lo, l_hi)
        ok, margin = _within(lower, upper, value, pw)
        if not exact and margin <= _NEAR * max(abs(lower), abs(upper), value) + 3e-15 * w_touch + 1e-300:
            if values is None:
                raise NeedBins
            b_lo, b_hi, l_lo, l_hi = _probability_bounds(np.ascontiguousarray(values))
            exact = True
            lower, upper = (b_lo, b_hi) if i == 0 else (l_lo, l_hi)
            ok, _ = _within(lower, upper, value, pw)
        if not ok:
            raise fail(
                f"counters are inconsistent: {name}={value!r} is outside [{lower!r}, {upper!r}], the "
                "range the bins' scores allow",
                source,
            )
    if c["brier_sum"] > pw * (1.0 + REL_TOL) + 1e-300:
        raise fail(f"counters are inconsistent: brier_sum={c['brier_sum']!r} exceeds prob_weight={pw!r}", source)
