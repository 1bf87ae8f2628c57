"""Input validation for :class:`~streameval.MulticlassSketch`: score matrices, labels, classes.

Score matrices arrive as 2-D NumPy arrays, sequences of rows, Arrow fixed-size-list or list arrays
(chunked or not), Polars Array or List series, or pandas DataFrames, and leave as C-contiguous
``float32``/``float64`` ``(n, K)`` arrays. Labels leave as ``int64`` indices into ``classes``.
Every rejection is an :class:`~streameval.errors.InputError` naming the argument, the first bad row
(counted from the start of the stream), its value, and what to do.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import InputError, InputTypeError, UsageError
from ..inputs import as_1d_array, clean_weights

__all__ = ["ScoreColumns", "as_matrix", "as_scores", "check_column_order", "encode_labels", "table_column_names", "learn_classes", "plain", "score_columns",
           "validate_chunk"]


def plain(values: Any) -> list[Any]:
    """Labels as plain Python values (for messages, JSON and ``str``)."""
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def _module(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def _from_arrow(arr: Any, n: int, offset: int) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not (pa.types.is_fixed_size_list(arr.type) or pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        raise InputTypeError(f"y_score must be a list or fixed-size-list column, got Arrow type {arr.type}")
    if arr.null_count:
        bad = int(np.argmax(arr.is_null().to_numpy(zero_copy_only=False)))
        raise InputError(f"y_score has {arr.null_count} null row(s), first at row {offset + bad}; drop or fill those rows")
    lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
    if lengths.size and np.any(lengths != lengths[0]):
        bad = int(np.argmax(lengths != lengths[0]))
        raise InputError(
            f"y_score rows have different widths: row {offset} has {int(lengths[0])} scores, row "
            f"{offset + bad} has {int(lengths[bad])}; every row needs one score per class"
        )
    width = int(lengths[0]) if lengths.size else 0
    values = arr.flatten().to_numpy(zero_copy_only=False)  # nulls inside rows become NaN
    return np.asarray(values).reshape(len(arr), width)


def _ragged(rows: Any, offset: int) -> InputError:
    widths = [len(r) if hasattr(r, "__len__") else 1 for r in rows]
    bad = next(i for i, w in enumerate(widths) if w != widths[0])
    return InputError(
        f"y_score rows have different widths: row {offset} has {widths[0]} scores, row {offset + bad} has "
        f"{widths[bad]}; every row needs one score per class"
    )


class ScoreColumns:
    """The K score columns of a chunk, kept apart (each contiguous, all of one length and one
    dtype, float32 or float64): what the multiclass evaluation of a file hands to
    :meth:`MulticlassSketch.update` as ``y_score``, straight from the decoded Arrow buffers,
    instead of copying them into one ``(n, K)`` matrix (0.1 s of CPU per 10M rows x 10 columns).
    The dense kernels read the columns where they are; other paths take :meth:`matrix`.

    Raises
    ------
    InputTypeError
        No columns, columns that are not 1-D float32/float64 of one dtype, or of different lengths.
    """

    __slots__ = ("columns",)

    def __init__(self, columns: Any) -> None:
        cols = [np.ascontiguousarray(c) for c in columns]
        if not cols or any(c.ndim != 1 for c in cols) or len({c.shape[0] for c in cols}) != 1:
            raise InputTypeError("ScoreColumns needs one or more 1-D score columns of one length")
        if len({c.dtype for c in cols}) != 1 or cols[0].dtype not in (np.float32, np.float64):
            raise InputTypeError(f"ScoreColumns needs float32 or float64 columns of one dtype, got {sorted({str(c.dtype) for c in cols})}")
        self.columns: list[np.ndarray] = cols

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_samples, n_classes)``."""
        return self.columns[0].shape[0], len(self.columns)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The columns' dtype."""
        return self.columns[0].dtype

    def matrix(self) -> np.ndarray:
        """The columns as one ``(n, K)`` array in Fortran order (a copy)."""
        out = np.empty(self.shape, dtype=self.dtype, order="F")
        for j, c in enumerate(self.columns):
            out[:, j] = c
        return out


def as_matrix(scores: np.ndarray | ScoreColumns) -> np.ndarray:
    """``scores`` as an ``(n, K)`` array (a :class:`ScoreColumns` is copied into one)."""
    return scores.matrix() if isinstance(scores, ScoreColumns) else scores


def score_columns(scores: np.ndarray | ScoreColumns) -> list[np.ndarray]:
    """``scores`` as K contiguous columns: a :class:`ScoreColumns`' own, views of a Fortran-order
    matrix, or of one Fortran-order copy of a C-order matrix (one transposing copy, instead of
    a strided gather per column in each kernel)."""
    if isinstance(scores, ScoreColumns):
        return scores.columns
    f = np.asfortranarray(scores)
    return [f[:, j] for j in range(f.shape[1])]


def _check_finite_columns(cols: list[np.ndarray], offset: int) -> None:
    """As the matrix check in :func:`as_scores`: one sum per column proves it finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        totals = [float(c.sum()) for c in cols]
    bad_cols = [j for j, t in enumerate(totals) if not np.isfinite(t)]
    firsts = [(int(np.argmax(~np.isfinite(cols[j]))), j) for j in bad_cols if not np.all(np.isfinite(cols[j]))]
    if firsts:
        r, c = min(firsts)
        count = sum(int(np.count_nonzero(~np.isfinite(cols[j]))) for j in bad_cols)
        raise InputError(
            f"y_score has {count} NaN, null or infinite value(s), first {float(cols[c][r])!r} at "
            f"row {offset + r}, column {c}; scores must be finite numbers: fix or drop those rows"
        )


def as_scores(y_score: Any, n: int, offset: int) -> np.ndarray | ScoreColumns:
    """The score matrix as a contiguous (C or Fortran order) float32/float64 ``(n, K)`` array,
    checked for NaN; a :class:`ScoreColumns` is checked and returned as it is. A table (pandas or
    Polars DataFrame, Arrow table or record batch) gives one column per class.

    Raises
    ------
    InputError
        Rows of different widths, a row count other than ``n``, NaN, null or infinite scores (the
        first one's row, column and value are named).
    InputTypeError
        Input that is not a 2-D numeric matrix.
    """
    if isinstance(y_score, ScoreColumns):
        if y_score.shape[0] != n:
            raise InputError(f"inconsistent numbers of samples: y_true has {n} rows but y_score has {y_score.shape[0]}")
        _check_finite_columns(y_score.columns, offset)
        return y_score
    mod = _module(y_score)
    if isinstance(y_score, np.ndarray):
        arr = y_score
    elif mod == "pyarrow" and hasattr(y_score, "column_names"):  # a table or batch: a column per class
        arr = np.column_stack([np.asarray(c.to_numpy(zero_copy_only=False)) for c in y_score.columns]) \
            if y_score.num_columns else np.empty((y_score.num_rows, 0))
    elif mod == "pyarrow":
        arr = _from_arrow(y_score, n, offset)
    elif mod == "polars" and not hasattr(y_score, "dtype"):  # a DataFrame: a column per class
        arr = y_score.to_numpy()
    elif mod == "polars" and hasattr(y_score, "to_arrow"):
        dtype = str(getattr(y_score, "dtype", ""))
        arr = y_score.to_numpy() if dtype.startswith("Array") else _from_arrow(y_score.to_arrow(), n, offset)
    elif mod == "pandas" and hasattr(y_score, "to_numpy"):
        dtypes = list(getattr(y_score, "dtypes", [getattr(y_score, "dtype", None)]))
        nullable = any(not isinstance(d, np.dtype) and getattr(d, "kind", "O") in "iuf" for d in dtypes)
        # nullable numbers (Float64, Int64): pd.NA becomes NaN, which the check below names by row
        arr = y_score.to_numpy(dtype=np.float64, na_value=np.nan) if nullable else y_score.to_numpy()
    else:
        try:
            arr = np.asarray(y_score)
        except ValueError:
            raise _ragged(y_score, offset) from None
        if arr.dtype == object and arr.ndim == 1 and arr.size and hasattr(arr[0], "__len__"):
            raise _ragged(y_score, offset)
    if arr.ndim != 2:
        raise InputTypeError(f"y_score must be 2-D (n_samples, n_classes), got an array of shape {arr.shape}")
    if arr.shape[0] != n:
        raise InputError(f"inconsistent numbers of samples: y_true has {n} rows but y_score has {arr.shape[0]}")
    if arr.dtype not in (np.float32, np.float64):
        if arr.dtype.kind not in "iufbO":
            raise InputTypeError(f"y_score must be numeric, got dtype {arr.dtype}")
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise InputTypeError("y_score must be numeric; it holds values that are not numbers") from None
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        arr = np.ascontiguousarray(arr)
    # A finite total proves every score finite in one pass without a temporary (NaN and inf
    # propagate into it); only a total that is not finite (bad scores, or an overflow) looks closer.
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(arr.sum())
    bad = np.zeros(0, dtype=bool) if np.isfinite(total) else ~np.isfinite(arr)
    if bad.any():  # NaN, null or infinite: scikit-learn's check_array rejects them too
        r, c = np.unravel_index(int(np.argmax(bad)), arr.shape)
        raise InputError(
            f"y_score has {int(np.count_nonzero(bad))} NaN, null or infinite value(s), first {float(arr[r, c])!r} at "
            f"row {offset + int(r)}, column {int(c)}; scores must be finite numbers: fix or drop those rows"
        )
    return arr


def _class_named(column: str, names: list[str]) -> int | None:
    """The one class whose name ends ``column`` after a separator (``p_cat`` -> ``cat``), or None."""
    found = [j for j, c in enumerate(names)
             if column == c or (column.endswith(c) and not column[-len(c) - 1].isalnum())]
    return found[0] if len(found) == 1 else None


def check_column_order(columns: Sequence[str], classes: Sequence[Any]) -> None:
    """Refuse score columns named after the classes but listed in another order than the classes'.

    The columns are matched to the classes by position (the classes being the sorted labels), so
    ``p_fox,p_cat`` would score class "cat" with ``p_fox``: a silent wrong answer for every
    metric. Names are compared after removing the columns' common suffix (``p_cat_prob``).

    Raises
    ------
    UsageError
        Each column names a different class and they are not in class order; the message gives
        the order to use.
    """
    names = [str(c.item() if isinstance(c, np.generic) else c) for c in classes]
    if len(columns) != len(names):
        return
    suffix = os.path.commonprefix([c[::-1] for c in columns])[::-1]
    stems = [c[: len(c) - len(suffix)] if suffix and len(c) > len(suffix) else c for c in columns]
    owners = [_class_named(s, names) for s in stems]
    if None in owners or sorted(owners) != list(range(len(names))):  # type: ignore[type-var]
        return
    if owners != list(range(len(names))):
        wanted = [columns[owners.index(j)] for j in range(len(names))]
        raise UsageError(
            f"the score columns {', '.join(columns)} are named after the classes but are not in class order "
            f"({', '.join(names)}: the sorted labels), so {columns[0]!r} would score class {names[0]!r}; list "
            f"them in class order: {','.join(wanted)}"
        )


def table_column_names(table: Any) -> list[str] | None:
    """The column names of a pandas or Polars DataFrame or an Arrow table or batch (None for arrays,
    series and anything else): Arrow's ``columns`` are the data, pandas' an Index."""
    mod = _module(table)
    if mod == "pyarrow":
        names = getattr(table, "column_names", None)
    elif mod in ("pandas", "polars") and not hasattr(table, "dtype"):  # a DataFrame, not a Series
        names = getattr(table, "columns", None)
    else:
        names = None
    return None if names is None else [str(c) for c in names]


def _nulls(y: np.ndarray) -> npt.NDArray[np.bool_]:
    if y.dtype.kind == "f":
        return np.asarray(np.isnan(y), dtype=bool)
    if y.dtype.kind == "O":
        return np.fromiter((v is None or (isinstance(v, float) and v != v) for v in y), dtype=bool, count=y.shape[0])
    return np.zeros(y.shape[0], dtype=bool)


def _check_nulls(y: np.ndarray, name: str, offset: int) -> None:
    null = _nulls(y)
    if null.any():
        raise InputError(
            f"{name} has {int(np.count_nonzero(null))} null or NaN label(s), first at row "
            f"{offset + int(np.argmax(null))}; drop or fill those rows first"
        )


def _unique(y: np.ndarray, name: str) -> np.ndarray:
    try:
        return np.unique(y)
    except TypeError:
        raise InputError(f"{name} mixes label types (for example strings and numbers); use one type") from None


def learn_classes(
    current: np.ndarray | None,
    y: Any,
    pred: np.ndarray | None,
    max_classes: int,
    *,
    width: int | None = None,
    offset: int = 0,
    given: bool = False,
) -> np.ndarray:
    """The class labels after this chunk.

    ``given``: ``y`` is the user's ``classes`` (order kept). Scores (``width`` set, no classes
    yet): the chunk's labels if it shows ``width`` of them, else ``0..width-1`` if the labels
    are such integers. Predictions only: the sorted union of ``current``, ``y`` and ``pred``.

    Raises
    ------
    InputError
        Duplicate, null or too few/many classes; labels that cannot say which column is which.
    """
    if given:
        arr = np.asarray(y)
        if arr.ndim != 1:
            raise InputTypeError(f"classes must be 1-D, got shape {arr.shape}")
        _check_nulls(arr, "classes", 0)
        if _unique(arr, "classes").shape[0] != arr.shape[0]:
            raise InputError(f"classes has duplicate labels: {plain(arr)}")
        out = arr
    elif width is not None:
        _check_nulls(y, "y_true", offset)
        if width < 2:
            raise InputError(f"y_score has {width} column(s); a multiclass sketch needs at least 2 classes")
        uniq = _unique(y, "y_true")
        integral = uniq.dtype.kind in "iub" or (uniq.dtype.kind == "f" and np.all(uniq == np.round(uniq)))
        if uniq.shape[0] == width:
            out = uniq
        elif uniq.shape[0] < width and integral and (uniq.size == 0 or (uniq.min() >= 0 and uniq.max() < width)):
            out = np.arange(width, dtype=np.int64)
        else:
            raise InputError(
                f"y_score has {width} columns but y_true's first chunk holds {uniq.shape[0]} classes "
                f"({', '.join(map(repr, plain(uniq[:10])))}{'...' if uniq.shape[0] > 10 else ''}), so which column "
                "scores which class is unknown; pass classes=[...] in column order"
            )
    else:
        _check_nulls(y, "y_true", offset)
        values = y if pred is None else np.concatenate([y, pred]) if y.dtype == pred.dtype else np.concatenate([y.astype(object), pred.astype(object)])
        if pred is not None:
            _check_nulls(pred, "y_pred", offset)
        out = _unique(values, "y_true and y_pred")
        if current is not None:
            try:
                out = np.union1d(current, out)
            except TypeError:
                raise InputError(f"new labels {plain(out[:5])} do not compare with the earlier ones {plain(current[:5])}") from None
    if out.shape[0] > max_classes:
        raise InputError(
            f"{out.shape[0]} classes exceed max_classes={max_classes}; pass a larger max_classes if this is intended "
            "(memory grows with K^2 pairwise histograms; pair_grid=None keeps it O(K))"
        )
    if (given or width is not None) and out.shape[0] < 2:
        raise InputError(f"a multiclass sketch needs at least 2 classes, got {plain(out)}")
    return out


def _small_int_codes(y: np.ndarray, classes: np.ndarray) -> npt.NDArray[np.int64] | None:
    """Indices of integer labels among small non-negative integer classes by a lookup table
    (a few passes over ``y`` instead of a binary search per row), or None if some label is not a
    class or the labels are not such integers (the general path then explains the error)."""
    if y.dtype.kind not in "iu" or classes.dtype.kind not in "iu" or not y.size or not classes.size:
        return None
    top = int(classes.max())
    if int(classes.min()) < 0 or top >= 1 << 16 or int(y.min()) < 0 or int(y.max()) > top:
        return None
    if top == classes.shape[0] - 1 and bool(np.all(classes == np.arange(classes.shape[0]))):
        return y.astype(np.int64)  # classes 0..K-1 in order: the labels are their own codes
    lut = np.full(top + 1, -1, dtype=np.int64)
    lut[classes] = np.arange(classes.shape[0])
    codes = lut[y]
    return codes if bool(np.all(codes >= 0)) else None


def encode_labels(y: np.ndarray, classes: np.ndarray, name: str, offset: int) -> npt.NDArray[np.int64]:
    """Index of each label in ``classes``.

    Raises
    ------
    InputError
        A null label, or one that is not in ``classes`` (count, first row and value named).
    """
    fast = _small_int_codes(y, classes)
    if fast is not None:
        return fast
    _check_nulls(y, name, offset)
    order = np.argsort(classes, kind="stable")
    ordered = classes[order]
    try:
        idx = np.minimum(np.searchsorted(ordered, y), classes.shape[0] - 1)
        ok = np.asarray(ordered[idx] == y, dtype=bool)
    except TypeError:
        ok = np.zeros(y.shape[0], dtype=bool)
        idx = np.zeros(y.shape[0], dtype=np.int64)
    if ok.shape != y.shape:
        ok = np.zeros(y.shape[0], dtype=bool)
    if not ok.all():
        bad = int(np.argmin(ok))
        value = y[bad].item() if isinstance(y[bad], np.generic) else y[bad]
        shown = plain(classes[:10])
        raise InputError(
            f"{name} has {int(np.count_nonzero(~ok))} label(s) not in classes {shown}{'...' if classes.shape[0] > 10 else ''}, "
            f"first {value!r} at row {offset + bad}; pass classes=[...] listing every label"
        )
    return np.ascontiguousarray(order[idx], dtype=np.int64)


def validate_chunk(
    y: np.ndarray, y_score: Any, y_pred: Any, sample_weight: Any, classes: np.ndarray | None, learn: bool,
    max_classes: int, offset: int,
) -> tuple[np.ndarray | ScoreColumns | None, npt.NDArray[np.int64], npt.NDArray[np.int64] | None, np.ndarray | None, np.ndarray]:
    """Validate a whole chunk before anything changes: ``(scores, labels, preds, weights, classes)``.

    ``classes`` are the sketch's (None if unknown); with ``learn`` they are learned or extended from
    this chunk (see :func:`learn_classes`). Raises as :func:`as_scores`, :func:`encode_labels`,
    :func:`learn_classes` and :func:`streameval.inputs.clean_weights`.
    """
    n = y.shape[0]
    scores = None if y_score is None else as_scores(y_score, n, offset)
    pred = None if y_pred is None else as_1d_array(y_pred, "y_pred")
    if pred is not None and pred.shape[0] != n:
        raise InputError(f"inconsistent numbers of samples: y_true has {n} rows but y_pred has {pred.shape[0]}")
    weights = None
    if sample_weight is not None:
        weights = clean_weights(as_1d_array(sample_weight, "sample_weight"), n, offset)
    if classes is None or learn:
        width = None if scores is None else scores.shape[1]
        classes = learn_classes(classes, y, pred, max_classes, width=width, offset=offset)
    if scores is not None and scores.shape[1] != classes.shape[0]:
        raise InputError(
            f"y_score has {scores.shape[1]} columns but there are {classes.shape[0]} classes "
            f"({', '.join(map(repr, plain(classes[:10])))}{'...' if classes.shape[0] > 10 else ''}); "
            "each row needs one score per class, in the order of `classes`"
        )
    names = None if y_score is None else table_column_names(y_score)
    if names is not None:  # columns named after the classes must be in the classes' order
        check_column_order(names, plain(classes))
    labels = encode_labels(y, classes, "y_true", offset)
    preds = None if pred is None else encode_labels(pred, classes, "y_pred", offset)
    return scores, labels, preds, weights, classes
