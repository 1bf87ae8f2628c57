"""Turning user arrays into the three clean NumPy arrays the kernel reads.

This module owns input validation for :meth:`BinarySketch.update`: it accepts NumPy arrays, Arrow
arrays and chunked arrays, Polars and pandas Series and plain sequences, and returns contiguous
``float32``/``float64`` scores, ``uint8`` labels (1 = positive) and optional ``float64`` weights.
Anything it cannot take as given raises an :class:`~streameval.errors.InputError` that names the
argument, the offending value, how many rows are affected, the first row, and what to do. Row
numbers count from the start of the stream (``row_offset`` plus the position in this chunk).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import InputError, InputTypeError

__all__ = ["LabelEncoder", "as_1d_array", "clean_scores", "clean_weights", "merge_labels", "plain_value"]


def _is_from(obj: Any, module: str) -> bool:
    return type(obj).__module__.split(".")[0] == module


def as_1d_array(x: Any, name: str) -> np.ndarray:
    """Convert ``x`` to a 1-D NumPy array, zero-copy where the source allows it.

    Nulls in Arrow, Polars or pandas inputs become NaN (floats) or ``None`` (objects); callers
    report them like NaN.

    Raises
    ------
    InputTypeError
        If ``x`` is a scalar, or not one-dimensional.
    """
    if isinstance(x, np.ndarray):
        arr = x
    elif _is_from(x, "pyarrow"):
        import pyarrow as pa

        if isinstance(x, pa.ChunkedArray):
            x = x.combine_chunks() if x.num_chunks != 1 else x.chunk(0)
        arr = x.to_numpy(zero_copy_only=False)
    elif _is_from(x, "pandas"):
        dtype = getattr(x, "dtype", None)
        if dtype is not None and not isinstance(dtype, np.dtype) and getattr(dtype, "kind", "O") in "iufb":
            # Nullable extension dtypes: keep numbers numeric, nulls as NaN.
            # (bool(isna().any()), not .hasnans: extension arrays such as pd.array(..., "Float64") lack it)
            has_na = bool(np.asarray(x.isna()).any())
            arr = x.to_numpy(dtype="float64", na_value=np.nan) if has_na else x.to_numpy(dtype=dtype.numpy_dtype)
        else:
            arr = x.to_numpy()
    elif hasattr(x, "to_numpy") and _is_from(x, "polars"):
        arr = x.to_numpy()
    elif isinstance(x, (str, bytes)) or np.isscalar(x):
        raise InputTypeError(f"{name} must be a 1-D array-like, got a scalar {x!r}")
    else:
        arr = np.asarray(x)
    if arr.ndim != 1:
        raise InputTypeError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    return arr


def _first(mask: npt.NDArray[np.bool_]) -> int:
    return int(np.argmax(mask))


def clean_scores(scores: np.ndarray, row_offset: int, nan_policy: str) -> tuple[np.ndarray, int]:
    """Validate scores; return them as contiguous float32/float64 and the number of NaN rows.

    With ``nan_policy="raise"`` a NaN (or null) score raises; with ``"skip"`` NaN rows are left in
    place for the kernel to skip and count.

    Raises
    ------
    InputTypeError
        If the scores are not numeric.
    InputError
        If a score is infinite (always, as in scikit-learn), or NaN or null and
        ``nan_policy="raise"``. The message names the first row.
    """
    if scores.dtype.kind == "O":
        # NumPy's object->float cast parses strings ("0.5" -> 0.5), which would let a pandas/object
        # column of text through while a str array is rejected; refuse text consistently.
        text = np.fromiter((isinstance(v, (str, bytes)) for v in scores), dtype=bool, count=scores.shape[0])
        if text.any():
            raise InputTypeError(_text_scores(scores, text, row_offset))
        try:
            scores = scores.astype(np.float64)
        except (TypeError, ValueError):
            bad = next((i for i, v in enumerate(scores) if not _floatable(v)), 0)
            raise InputTypeError(
                f"y_score must be numeric; row {row_offset + bad} holds {scores[bad]!r}"
            ) from None
    elif scores.dtype.kind in "US":
        raise InputTypeError(_text_scores(scores, np.ones(scores.shape[0], dtype=bool), row_offset))
    elif scores.dtype.kind not in "iuf":
        raise InputTypeError(f"y_score must be numeric, got dtype {scores.dtype}")
    if scores.dtype not in (np.float32, np.float64):
        scores = scores.astype(np.float64)
    scores = np.ascontiguousarray(scores)
    if np.isfinite(scores).all():
        return scores, 0
    nan = np.isnan(scores)
    inf = np.isinf(scores)
    if inf.any():  # scikit-learn's policy: an infinite score is an error, whatever nan_policy says
        first = _first(inf)
        raise InputError(
            f"y_score has {int(np.count_nonzero(inf))} infinite value(s), first {float(scores[first])!r} at "
            f"row {row_offset + first}; scores must be finite: replace them (e.g. clip logits to a "
            "finite range) or drop those rows"
        )
    n_nan = int(np.count_nonzero(nan))
    if n_nan and nan_policy == "raise":
        first = _first(nan)
        raise InputError(
            f"y_score has {n_nan} NaN or null value(s), first at row {row_offset + first}; "
            "fix the input, or pass nan_policy='skip' to skip those rows (they are counted "
            "in the sketch as skipped)"
        )
    return scores, n_nan


def _text_scores(scores: np.ndarray, text: npt.NDArray[np.bool_], row_offset: int) -> str:
    # A reader types a whole column as text for one bad cell: name the first value that is not a
    # number, not the first row (which may hold a good "0.1").
    n_text = int(np.count_nonzero(text))
    for i in np.flatnonzero(text):
        v = scores[i]
        if not _floatable(v.decode() if isinstance(v, bytes) else v):
            return (f"y_score must be numeric, got text in {n_text} row(s); row {row_offset + int(i)} holds "
                    f"{_py(v)!r}, which is not a number; fix or drop those rows, then convert the column to numbers")
    first = _first(text)
    return (f"y_score must be numeric, got numbers stored as text in {n_text} row(s) (row {row_offset + first} "
            f"holds {_py(scores[first])!r}); convert the column to numbers first")


def _floatable(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


MAX_TOTAL_WEIGHT = 1e300
"""Largest total sample weight of one chunk (and of a sketch file's classes): sums of such totals,
``tp + fp`` and the log-loss sum (at most 36 x the weight) stay finite in float64. Weights are
scale-free (only their ratios matter), so rescale weights that exceed it."""


def clean_weights(
    weights: np.ndarray, n: int, row_offset: int, skipped: npt.NDArray[np.bool_] | None = None
) -> npt.NDArray[np.float64]:
    """Validate sample weights: finite, non-negative, one per row, summing to at most :data:`MAX_TOTAL_WEIGHT`.

    Rows in ``skipped`` (NaN scores under ``nan_policy="skip"``) are never binned: a NaN, null or
    negative weight there is not an error (it is replaced by 1, which nothing uses).

    Raises
    ------
    InputError
        If a weight is negative, NaN, infinite or null, the weights add up to more than
        ``MAX_TOTAL_WEIGHT`` (1e300: their sums would overflow float64), or the length differs
        from the scores'. The message names the first row.
    """
    if weights.shape[0] != n:
        raise InputError(f"inconsistent numbers of samples: sample_weight has {weights.shape[0]} rows but y_score has {n}")
    text = weights.dtype.kind in "US"
    if weights.dtype.kind == "O":  # NumPy's cast parses strings: refuse text as for scores
        text = any(isinstance(v, (str, bytes)) for v in weights)
    if text:
        raise InputTypeError(
            f"sample_weight must be numeric, got text (dtype {weights.dtype}); convert the weights to numbers first"
        )
    try:
        w = np.ascontiguousarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputTypeError(f"sample_weight must be numeric, got dtype {weights.dtype}") from None
    bad = ~np.isfinite(w) | (w < 0)
    if skipped is not None and bad.any():
        w = np.where(bad & skipped, 1.0, w)
        bad &= ~skipped
    if bad.any():
        first = _first(bad)
        raise InputError(
            f"sample_weight has {int(np.count_nonzero(bad))} negative, NaN, infinite or null "
            f"value(s), first {float(w[first])!r} at row {row_offset + first}; weights must be finite "
            "and >= 0"
        )
    with np.errstate(over="ignore"):
        total = float(np.sum(w))
    if not total <= MAX_TOTAL_WEIGHT:
        with np.errstate(over="ignore"):
            first = _first(np.cumsum(w) > MAX_TOTAL_WEIGHT)
        raise InputError(
            f"sample_weight adds up to more than {MAX_TOTAL_WEIGHT:g} at row {row_offset + first} "
            f"(weight {float(w[first])!r}); such sums overflow float64: rescale the weights (only "
            "their ratios matter)"
        )
    return w


@dataclass
class LabelEncoder:
    """Maps labels to 1 (positive) / 0 (negative), consistently across chunks.

    Without ``pos_label``, labels must be bool, {0, 1} or {-1, 1} (as numbers of any dtype), the
    positive class being ``True``/``1``; the stream may not mix 0 and -1. With ``pos_label``, rows
    equal to it are positive and all other rows must share one single other value.

    The encoder remembers the negative value it has seen, so a later chunk that brings a third
    value is caught even when each chunk alone is binary.
    """

    pos_label: Any = None
    neg_label: Any = None

    def encode(self, y: np.ndarray, row_offset: int) -> npt.NDArray[np.uint8]:
        """Return ``uint8`` labels, 1 for the positive class.

        Raises
        ------
        InputError
            If a label is null or NaN, or the labels are not binary as described above.
        """
        if self.pos_label is None:
            return self._encode_default(y, row_offset)
        return self._encode_pos_label(y, row_offset)

    def _encode_default(self, y: np.ndarray, row_offset: int) -> npt.NDArray[np.uint8]:
        kind = y.dtype.kind
        if kind == "b":
            self._note_negative(False, y, row_offset)
            u = np.ascontiguousarray(y).view(np.uint8)
            # a bool array made by a view may hold bytes other than 0/1; the kernel indexes by them
            return (u != 0).view(np.uint8) if u.size and u.max() > 1 else u
        if kind not in "iuf":
            if kind == "O":
                # Arrow/Polars bool columns with nulls arrive as objects with None: report the
                # nulls as such rather than as "non-numeric labels".
                null = _null_mask(y)
                if null.any():
                    raise InputError(
                        f"y_true has {int(np.count_nonzero(null))} null label(s), first at row "
                        f"{row_offset + _first(null)}; drop or fill those rows first"
                    )
            if kind == "O" and _all_bool(y):
                return self._encode_default(y.astype(bool), row_offset)
            sample = ", ".join(repr(v) for v in _distinct_sample(y))
            raise InputError(
                f"y_true holds non-numeric labels ({sample}); pass pos_label=... to say which "
                "value is the positive class"
            )
        if kind == "f":
            nan = np.isnan(y)
            if nan.any():
                raise InputError(
                    f"y_true has {int(np.count_nonzero(nan))} NaN or null label(s), first at row "
                    f"{row_offset + _first(nan)}; drop or fill those rows first"
                )
        if y.dtype.itemsize == 1 and kind in "iu":
            u = np.ascontiguousarray(y).view(np.uint8)
            if u.shape[0] == 0 or u.max() <= 1:  # fast path: int8/uint8 0/1 labels
                if u.shape[0] and u.min() == 0:
                    self._note_negative(0, y, row_offset, _first(u == 0))
                return u
        pos = y == 1
        zero = y == 0
        minus = y == -1
        bad = ~(pos | zero | minus)
        if bad.any():
            first = _first(bad)
            raise InputError(
                f"y_true has {int(np.count_nonzero(bad))} label(s) outside {{0, 1}} / {{-1, 1}}, "
                f"first {_py(y[first])!r} at row {row_offset + first}; labels must be binary (bool, "
                "0/1 or -1/1), or pass pos_label=... for other codings"
            )
        if zero.any() and minus.any():
            raise InputError(
                f"y_true mixes 0 (row {row_offset + _first(zero)}) and -1 (row "
                f"{row_offset + _first(minus)}) with 1: three label values; labels must be binary"
            )
        if zero.any():
            self._note_negative(0, y, row_offset, _first(zero))
        elif minus.any():
            self._note_negative(-1, y, row_offset, _first(minus))
        out: npt.NDArray[np.uint8] = pos.view(np.uint8)
        return out

    def _encode_pos_label(self, y: np.ndarray, row_offset: int) -> npt.NDArray[np.uint8]:
        if isinstance(self.pos_label, (list, tuple, set, frozenset, dict, np.ndarray)):
            # compared with ``==`` it would broadcast: (1, 2) against rows [1, 2] made both positive
            raise InputTypeError(
                f"pos_label must be a single label value (a string, number or bool), got {self.pos_label!r}"
            )
        if y.dtype.kind == "f" and np.isnan(y).any():
            nan = np.isnan(y)
            raise InputError(
                f"y_true has {int(np.count_nonzero(nan))} NaN or null label(s), first at row "
                f"{row_offset + _first(nan)}; drop or fill those rows first"
            )
        if y.dtype.kind == "O":
            null = _null_mask(y)
            if null.any():
                raise InputError(
                    f"y_true has {int(np.count_nonzero(null))} null label(s), first at row "
                    f"{row_offset + _first(null)}; drop or fill those rows first"
                )
        pos = np.asarray(y == self.pos_label, dtype=bool)
        if pos.shape != y.shape:
            raise InputError(f"cannot compare y_true of dtype {y.dtype} with pos_label={self.pos_label!r}")
        neg_idx = np.flatnonzero(~pos)
        if neg_idx.size:
            first = int(neg_idx[0])
            neg_value = y[first]
            if not pos.any():
                self._check_comparable(neg_value, y, row_offset + first)
            other = y[neg_idx] != neg_value
            if np.any(other):
                k = int(neg_idx[_first(np.asarray(other))])
                hint = (
                    f"; pos_label={self.pos_label!r} does not occur in this chunk: check its spelling and type"
                    if not pos.any()
                    else ""
                )
                raise InputError(
                    f"y_true has more than two values with pos_label={self.pos_label!r}: "
                    f"{_py(neg_value)!r} (row {row_offset + first}) and {_py(y[k])!r} (row {row_offset + k}); "
                    f"labels must be binary{hint}"
                )
            self._note_negative(_py(neg_value), y, row_offset, first)
        return np.ascontiguousarray(pos).view(np.uint8)

    def _check_comparable(self, value: Any, y: np.ndarray, row: int) -> None:
        # A text pos_label never equals a numeric label (nor a number a text one): every row would
        # be a silent negative, and a chunk of one label value would pass unnoticed.
        mine, theirs = _label_kind(self.pos_label), _label_kind(value)
        if mine != theirs and "other" not in (mine, theirs):
            raise InputError(
                f"pos_label={self.pos_label!r} is {_KIND_TEXT[mine]} but y_true holds {_KIND_TEXT[theirs]} "
                f"(dtype {y.dtype}; row {row} holds {_py(value)!r}), so no row can equal it; pass "
                f"pos_label as {_KIND_TEXT[theirs]}"
            )

    def _note_negative(self, value: Any, y: np.ndarray, row_offset: int, at: int = 0) -> None:
        # False is compatible with both 0 and -1, so a bool chunk must not pin the coding: the
        # first numeric negative replaces it. (Keeping False let bool, then -1/1, then 0/1 chunks
        # mix 0 and -1 without an error.)
        if self.neg_label is None or (isinstance(self.neg_label, bool) and not isinstance(value, bool)):
            self.neg_label = value
        elif self.neg_label != value and not (isinstance(value, bool) or isinstance(self.neg_label, bool)):
            raise InputError(
                f"y_true's negative class changed: earlier rows used {self.neg_label!r}, row "
                f"{row_offset + at} uses {value!r}; labels must take the same two values throughout"
            )



def merge_labels(into: LabelEncoder, other: LabelEncoder) -> None:
    """Combine label codings as ``update`` would: the same positive class, one negative value.

    Raises
    ------
    InputError
        The positive classes differ, or the two codings hold three label values together.
    """
    # Under the default coding the positive class is 1 (== True); 0, -1 and False are negatives.
    mine = 1 if into.pos_label is None else into.pos_label
    theirs = 1 if other.pos_label is None else other.pos_label
    if mine != theirs:
        raise InputError(
            f"cannot merge sketches whose positive classes differ ({mine!r} and {theirs!r}); the "
            "positive class would mean different things"
        )
    if into.pos_label is None:
        into.pos_label = other.pos_label
    a, b = into.neg_label, other.neg_label
    if a is None or isinstance(a, bool):
        into.neg_label = b if b is not None else a
    elif b is not None and not isinstance(b, bool) and a != b and into.pos_label is not None:
        raise InputError(
            f"cannot merge sketches with different negative labels {a!r} and {b!r}: together they "
            "hold three label values"
        )


_KIND_TEXT = {"text": "text", "bytes": "bytes", "number": "a number"}


def _label_kind(v: Any) -> str:
    if isinstance(v, (str, np.str_)):
        return "text"
    if isinstance(v, (bytes, np.bytes_)):
        return "bytes"
    if isinstance(v, (bool, int, float, np.bool_, np.number)):
        return "number"
    return "other"  # dates, decimals, categories...: compared as they are


def plain_value(value: Any) -> Any:
    """NumPy scalars as Python values, so labels compare, print and serialize plainly."""
    return value.item() if isinstance(value, np.generic) else value

def _is_null(v: Any) -> bool:
    # None (Arrow, Polars), NaN (pandas' "str" dtype stores missing text as NaN), pd.NA / NaT.
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(v != v)
    return type(v).__name__ in ("NAType", "NaTType")


def _null_mask(y: np.ndarray) -> npt.NDArray[np.bool_]:
    return np.fromiter((_is_null(v) for v in y), dtype=bool, count=y.shape[0])


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _all_bool(y: np.ndarray) -> bool:
    return all(isinstance(v, (bool, np.bool_)) for v in y[:1000]) and all(
        isinstance(v, (bool, np.bool_)) for v in y
    )


def _distinct_sample(y: np.ndarray, k: int = 3) -> list[Any]:
    seen: list[Any] = []
    for v in y:
        if v not in seen:
            seen.append(v)
            if len(seen) == k:
                break
    return seen


def null_labels(y: np.ndarray) -> npt.NDArray[np.bool_]:
    """Rows whose label is missing (NaN in a float column, None/NaN in an object column)."""
    if y.dtype.kind == "f":
        nan: npt.NDArray[np.bool_] = np.isnan(y)
        return nan
    if y.dtype.kind == "O":
        return np.fromiter((v is None or (isinstance(v, float) and math.isnan(v)) for v in y), bool, y.shape[0])
    return np.zeros(y.shape[0], dtype=bool)
