"""Multiclass evaluation of a source: K score columns and a label column into a MulticlassSketch.

The score columns are given in class order (``["p_cat", "p_dog", "p_eel"]``), or as a glob over
the source's columns (``"p_*"``, expanded in natural order: ``p_2`` before ``p_10``). Their order
is the class order: pass ``classes`` to name the classes, else they are the sorted label values,
as scikit-learn orders them.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any, Callable, Iterable, Iterator, Sequence, cast

import numpy as np

from .errors import InputError, InputTypeError, UsageError
from .progress import progress_callback
from .sources import DEFAULT_BATCH_ROWS, LABEL, SCORE, WEIGHT, open_source

__all__ = ["is_multiclass_score", "expand_score_columns", "sketch_multiclass", "MATRIX_CELLS"]

MATRIX_CELLS = 1 << 22  # scores per batch (rows x K): 16 MiB of float32 columns


def is_multiclass_score(score: Any) -> bool:
    """True for several score columns: a list/tuple of more than one, a comma list or a glob."""
    if isinstance(score, (list, tuple)):
        return len(score) > 1
    return isinstance(score, str) and ("," in score or any(c in score for c in "*?["))


def _natural(name: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def expand_score_columns(score: Any, source: Any) -> list[str]:
    """The score columns named by ``score`` (list, comma list or glob over ``source``'s columns).

    Raises
    ------
    UsageError
        A glob that matches fewer than two columns, or a source whose columns cannot be listed.
    """
    if isinstance(score, (list, tuple)):
        return [str(s) for s in score]
    if "," in score:
        return [s.strip() for s in score.split(",") if s.strip()]
    columns = _columns_of(source)
    found = sorted((c for c in columns if fnmatch.fnmatchcase(c, score)), key=_natural)
    if len(found) < 2:
        raise UsageError(f"score pattern {score!r} matches {len(found)} column(s) of {', '.join(columns)}; "
                         "a multiclass evaluation needs one score column per class")
    return found


def _is_path(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def _columns_of(source: Any) -> list[str]:
    if isinstance(source, (list, tuple)) and source and not all(_is_path(s) for s in source):
        # a list of Arrow record batches (or tables): the first one's schema
        names = getattr(getattr(source[0], "schema", None), "names", None)
        if names is None:
            raise UsageError("cannot list this source's columns to expand a score pattern; give the columns as a list")
        return [str(n) for n in names]
    if _is_path(source) or (isinstance(source, (list, tuple)) and source):
        from .sources.files import _file_format, _open_dataset, expand_files
        from .sources.remote import expand_remote, is_remote

        paths = [os.fspath(source)] if _is_path(source) else [os.fspath(s) for s in source]
        if any(is_remote(p) for p in paths):
            remote = expand_remote(paths)
            first = remote.paths[:1]
            return list(_open_dataset(first, _file_format(first), None, filesystem=remote.filesystem).schema.names)
        files, _ = expand_files(paths)
        # light: local files' schemas without pyarrow.dataset, whose import pulls in pandas (0.7 s
        # once per process; a binary evaluation loads neither)
        return list(_open_dataset(files[:1], _file_format(files[:1]), None, light=True).schema.names)
    from .sketch.multiclass_inputs import table_column_names

    names = table_column_names(source)  # pandas, Polars and Arrow tables
    if names is None:
        names = getattr(source, "columns", None)  # a DuckDB relation, ...
    if names is None:
        names = getattr(getattr(source, "schema", None), "names", None)
    if names is None and isinstance(source, dict):
        names = list(source)
    if names is None:
        raise UsageError("cannot list this source's columns to expand a score pattern; give the columns as a list")
    return [str(n) for n in names]


def _numpy_view(arr: Any) -> np.ndarray | None:
    """A read-only NumPy view of an Arrow integer or float column without nulls, straight from
    its data buffer; None for any other column (the caller then passes the Arrow array on).

    Why not ``to_numpy``: any pyarrow ``to_numpy`` (even zero-copy) and ``np.asarray`` of an
    Arrow array import pandas, 0.7 s once per process (measured with ``-X importtime``), which a
    decode-only pass never pays.
    """
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks != 1:
            return None
        arr = arr.chunk(0)
    t = arr.type
    if arr.null_count or not (pa.types.is_integer(t) or pa.types.is_floating(t)) or pa.types.is_float16(t):
        return None
    kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
    dtype = np.dtype(f"<{kind}{t.bit_width // 8}")
    data = arr.buffers()[1]
    if len(arr) == 0 or data is None:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(data, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _column(arr: Any) -> Any:
    """``arr`` as a NumPy view when :func:`_numpy_view` can give one, else ``arr`` itself."""
    view = _numpy_view(arr)
    return arr if view is None else view


def _score_columns(arrays: list[Any]) -> Any:
    """The K score columns of a batch as a :class:`~streameval.sketch.multiclass_inputs.ScoreColumns`,
    each read in place from its Arrow buffer when it can be.

    float32 columns stay float32 (the kernels widen each value exactly); with any other type
    among them every column becomes float64. No ``(n, K)`` matrix is assembled: the dense kernels
    read each column where it is (copying 10 columns into one matrix took 0.1 s of CPU per 10M
    rows; the earlier row-major matrix 1.6 s of 5 s).
    """
    import pyarrow as pa

    from .sketch.multiclass_inputs import ScoreColumns

    f32 = all(a.type == pa.float32() for a in arrays)
    cols = []
    for a in arrays:
        view = _numpy_view(a)
        if view is None:  # nulls (NaN here, refused with their row by update) or another type
            view = np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.float32 if f32 else np.float64)
        cols.append(view if f32 or view.dtype == np.float64 else view.astype(np.float64))
    return ScoreColumns(cols)


def _prepared(chunks: Iterator[Any], extra: dict[str, str]) -> Iterator[tuple[Any, Any]]:
    """``(chunk, score columns or the error gathering them)`` per chunk: run on the reader thread,
    so that decoding the next batch overlaps binning this one."""
    for chunk in chunks:
        b = chunk.batch
        try:
            yield chunk, _score_columns([b.column(SCORE), *(b.column(a) for a in extra)])
        except (InputError, InputTypeError, ValueError) as exc:
            yield chunk, exc


def sketch_multiclass(
    source: Any,
    *,
    score: Any,
    label: str,
    weight: str | None = None,
    classes: Sequence[Any] | None = None,
    grid: Any = None,
    where: str | None = None,
    sql: str | None = None,
    table: str | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: bool | Callable[[int, int | None], None] | None = False,
    threads: int | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Read a source into a :class:`~streameval.MulticlassSketch`, batch by batch.

    With more than one thread (default: the CPUs available) a reader thread decodes the next
    batch while the sketch bins this one, its columns shared
    among ``threads`` threads (:meth:`MulticlassSketch.update`). The rows are binned in their
    order whatever the thread count, so results do not depend on it. Batches hold at most
    ``batch_rows`` rows and at most ``MATRIX_CELLS // K`` (a K-column batch is K times wider
    than a binary one; smaller matrices also stay in cache while their columns are binned).

    Returns
    -------
    sketch : MulticlassSketch
    provenance : dict

    Raises
    ------
    UsageError, SourceError, InputError
        As :func:`streameval.evaluate`; errors name the file.
    """
    from .consume import _read_ahead
    from .evaluate import EmptyInputError, _n_threads
    from .grid import parse_grid
    from .sketch.multiclass import MulticlassSketch

    n_threads = _n_threads(threads)
    cols = expand_score_columns(score, source)
    extra = {f"score_{i}": c for i, c in enumerate(cols[1:], start=1)}
    rows_per_batch = max(1, min(batch_rows, MATRIX_CELLS // len(cols)))
    src = open_source(source, score=cols[0], label=label, weight=weight, where=where, sql=sql, table=table,
                      batch_rows=rows_per_batch, extra_columns=extra)
    g = parse_grid(grid) if isinstance(grid, str) else grid
    sketch = MulticlassSketch(classes=None if classes is None else list(classes), grid=g, threads=n_threads)
    rows = 0
    with progress_callback(progress, src.rows_estimate, src.description) as on_rows:
        prepared = _prepared(src.chunks(), extra)
        batches = cast(Iterator[tuple[Any, Any]], _read_ahead(cast(Iterable[Any], prepared))) if n_threads > 1 else prepared
        for chunk, y_score in batches:
            b = chunk.batch
            try:
                if isinstance(y_score, Exception):
                    raise y_score
                w = _column(b.column(WEIGHT)) if WEIGHT in b.schema.names else None
                sketch.update(_column(b.column(LABEL)), y_score, sample_weight=w)
            except (InputError, InputTypeError, ValueError) as exc:
                raise type(exc)(f"{chunk.origin}: {exc}") from None
            if rows == 0 and sketch.classes is not None:
                from .sketch.multiclass_inputs import check_column_order

                check_column_order(cols, list(sketch.classes))
            rows += b.num_rows
            if on_rows is not None:
                on_rows(b.num_rows)
    if rows == 0:
        raise EmptyInputError(f"{src.description}: no rows to evaluate")
    return sketch, {"source": src.description, "files": src.files[:1000], "score": cols, "label": label,
                    "weight": weight, "where": where, "sql": sql, "rows_read": rows}
