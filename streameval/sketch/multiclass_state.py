"""The histogram state of a multiclass sketch: its writing form, its compact form, and the moves between them.

Compact form (what metrics, merging and files use): ``ovr_keys = j * n_bins + bin`` ascending with
``ovr_values`` ``(k, 2, 4)`` (per score column ``j`` the binary sketch's bins: negatives = rows of
other classes, positives = rows of class ``j``), and ``pair_keys = (t * K + j) * n_pair + bin``
ascending with ``pair_values`` ``(m, 4)`` (per true class ``t`` and column ``j != t``, on the pair
grid). Writing form (:class:`Shards`): dense states or hash tables (see
:mod:`streameval.kernels.multiclass`), used for large chunks; small chunks are binned by sorting
straight into the compact form (:func:`bin_small`), so small sketches never allocate a dense state.
Also here: the one-vs-rest and one-vs-one binary views of the compact cells, merging
(:func:`merge_multiclass`), and the checks on a sketch's parts read back from a file.

Sketch size: 72 bytes per occupied one-vs-rest bin (8-byte key, two 32-byte cells) and 40 per
occupied pairwise cell, plus ``2 x K x K x 8`` bytes (confusion, ranks). Measured on softmax
scores: K = 10, 2M rows: 38.7 MB (3.9 MB per class); K = 100, 1M rows: 650 MB (6.5 MB per class,
pair grid 32x coarser), peak RSS 1.8 GiB while writing.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from ..errors import IncompatibleGridError, InputError, InputTypeError, SketchFormatError
from ..grid import FloatGrid, Grid, LinearGrid, ProbabilityGrid, coarsening_map, grid_from_spec
from ..inputs import LabelEncoder
from ..kernels import binary as kernels
from ..kernels import multiclass_dense as dense
from ..kernels import multiclass_pages
from ..kernels.binary import BLOCK, MAX, MIN, SUM, W
from ..kernels.multiclass import (
    MIN_CAPACITY,
    compact_table,
    empty_cells,
    grow,
    insert_cells,
    limit,
    new_table,
    ovr_chunk,
    pair_chunk,
)
from .binary import BinarySketch, cpu_count
from .multiclass_inputs import ScoreColumns, as_matrix, plain, score_columns

if TYPE_CHECKING:
    from .multiclass import MulticlassSketch

__all__ = ["DENSE_BUDGET", "Shards", "auto_pair_grid", "bin_small", "merge_compact", "reduce_sorted", "binary_layout", "merge_multiclass"]

INT_COUNTERS = ("n_rows", "n_zero_weight", "n_outside", "n_unnormalized")
FLOAT_COUNTERS = ("prob_weight", "log_loss_sum", "brier_sum")
COLUMN_COUNTERS = ("col_n_outside", "col_prob_weight", "col_brier_sum", "col_log_loss_sum", "class_rows")
DENSE_BUDGET = 256 << 20  # bytes of dense one-vs-rest states while writing (K x grid bins x 64 B)
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, cpu_count() - 1), thread_name_prefix="streameval-mc")
    return _POOL


def _run(tasks: list[Callable[[], None]], threads: int) -> None:
    """Run ``tasks`` on this thread and up to ``threads - 1`` pool threads, each taking the next
    task as it finishes one (the kernels release the GIL); the first error is raised after all
    threads stop taking tasks."""
    lock = threading.Lock()
    todo = iter(tasks)
    failed: list[BaseException] = []

    def drain() -> None:
        while True:
            with lock:
                task = None if failed else next(todo, None)
            if task is None:
                return
            try:
                task()
            except BaseException as exc:
                with lock:
                    failed.append(exc)
                return

    helpers = [_pool().submit(drain) for _ in range(min(threads, len(tasks)) - 1)]
    drain()
    for h in helpers:
        h.result()
    if failed:
        raise failed[0]


Compact = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_FREED = (np.empty(0, dtype=np.int64), np.empty(0))


class Shards:
    """The writing form of a multiclass sketch's histograms; built from and returned to the compact form.

    One-vs-rest histograms are one dense state ``(K * n_bins, 2, 4)`` (per column the binary
    sketch's cells, row ``j * n_bins + bin``) when ``K x n_bins x 64 B`` fits :data:`DENSE_BUDGET`,
    else one hash table per column. Pairwise histograms are one dense array ``(K * K * n_pair, 4)``
    when it fits the budget, else one hash table per true class. Dense states are filled in one
    pass per column by :func:`streameval.kernels.multiclass_dense.dense_column`. Compact codes: ``j * n_bins + bin`` (one-vs-rest, values ``(k, 2, 4)``)
    and ``(t * K + j) * n_pair + bin`` (pairs, values ``(m, 4)``).
    """

    def __init__(self, grid: Grid, pair_grid: Grid | None, n_classes: int, compact: Compact) -> None:
        self.grid, self.pair_grid, self.k = grid, pair_grid, n_classes
        self.nf = grid.n_bins
        self.np = (pair_grid or grid).n_bins
        k = n_classes
        self.dense = k * self.nf * 64 <= DENSE_BUDGET
        self.pair_dense = pair_grid is not None and k * k * self.np * 32 <= DENSE_BUDGET
        ok, ov, pk, pv = compact
        # Dense states start as zero pages (see kernels.multiclass_dense): only touched pages cost
        # memory, and the compact cells go straight to their codes (code = row of the state).
        self.ovr_state = dense.zeros((k * self.nf, 2, 4) if self.dense else (0, 2, 4))
        self.ovr: list[tuple[np.ndarray, np.ndarray]] = []  # hashed: per column (keys, cells)
        self.ovr_count = [0] * k
        self.ovr_pages = dense.pages(self.ovr_state)
        if self.dense:
            self.ovr_state[ok] = ov
            dense.mark(self.ovr_pages, self.ovr_state, ok)
        else:
            ob = np.searchsorted(ok, np.arange(k + 1) * self.nf)
            for j in range(k):
                bins, values = ok[ob[j]:ob[j + 1]] - j * self.nf, ov[ob[j]:ob[j + 1]]
                keys, cells, self.ovr_count[j] = insert_cells(*new_table(_capacity(bins.shape[0]), 2), 0, bins, values)
                self.ovr.append((keys, cells))
        # one scratch cell past the pairwise cells (see dense_column); never compacted
        self.pair_state = dense.zeros((k * k * self.np + 1, 4) if self.pair_dense else (1, 4))
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []
        self.pair_count = [0] * k
        self.pair_pages = dense.pages(self.pair_state)
        if self.pair_dense:
            self.pair_state[pk] = pv
            dense.mark(self.pair_pages, self.pair_state, pk)
        elif pair_grid is not None:
            pb = np.searchsorted(pk, np.arange(k + 1) * k * self.np)
            for t in range(k):
                a, b = pb[t], pb[t + 1]
                keys, cells, self.pair_count[t] = insert_cells(*new_table(_capacity(b - a), 1), 0, pk[a:b] - t * k * self.np, pv[a:b])
                self.pairs.append((keys, cells))
        # Rows mark the pages they reach only when the OS cannot say which pages were written.
        self.marking = not (multiclass_pages.knows(self.ovr_state) and multiclass_pages.knows(self.pair_state))

    def add(
        self, scores: np.ndarray | ScoreColumns, labels: np.ndarray, weights: np.ndarray | None, threads: int,
        also: Callable[[], None],
    ) -> np.ndarray:
        """Bin a validated chunk, and run ``also`` (the per-row statistics).

        The work is a list of independent tasks: per column, its one-vs-rest histogram and its
        pairwise cells ``(t, j)`` (dense: :func:`~streameval.kernels.multiclass_dense.dense_column`;
        hashed: its own table), the hashed pairwise tables (one task), and ``also``. With
        ``threads > 1`` and a large chunk, that many threads take the tasks in turn; each task
        owns its cells, so the result does not depend on which thread ran it. Returns per column
        the binary sketch's probability sums ``[n_outside, weight_01, brier_sum, log_loss_sum]``.
        """
        sums = np.zeros((self.k, 4))
        cols = score_columns(scores)  # the kernels read each column in place
        tasks: list[Callable[[], None]] = []
        if self.pair_grid is not None and not self.pair_dense:  # the largest task first
            tasks.append(lambda: self._add_pairs(as_matrix(scores), labels, weights))
        # Then the row statistics (K = 10: ~23 ms per 1M rows against ~16 per column): the last
        # task taken is then a short one, and the threads finish a batch closer together.
        tasks.append(also)
        for j in range(self.k):
            if self.dense or self.pair_dense:
                tasks.append(lambda j=j: self._add_dense(cols[j], labels, weights, sums, j))  # type: ignore[misc]
            if not self.dense:
                tasks.append(lambda j=j: self._add_ovr(cols[j], labels, weights, sums, j))  # type: ignore[misc]
        _run(tasks, threads if scores.shape[0] >= 1 << 16 else 1)
        return sums

    def _add_dense(self, col: np.ndarray, labels: np.ndarray, weights: np.ndarray | None, sums: np.ndarray, j: int) -> None:
        weighted = weights is not None
        w = weights if weights is not None else np.empty(0)
        pair_params = (self.pair_grid or self.grid).kernel_params()
        dense.dense_column(
            col, j, self.k, labels, w, weighted, self.ovr_state.reshape(-1), self.dense, self.nf,
            self.pair_state.reshape(-1), self.np, self.pair_dense, self.ovr_pages, self.pair_pages, self.marking,
            *self.grid.kernel_params(), *pair_params, sums,
        )

    def _add_ovr(self, col: np.ndarray, labels: np.ndarray, weights: np.ndarray | None, sums: np.ndarray, j: int) -> None:
        """Column ``j``'s one-vs-rest hash table (many classes): the binary problem "class j or not"."""
        weighted = weights is not None
        w = weights if weights is not None else np.empty(0)
        params = self.grid.kernel_params()
        pos = (labels == j).view(np.uint8)
        row, n = 0, col.shape[0]
        while row < n:
            keys, cells = self.ovr[j]
            row, self.ovr_count[j] = ovr_chunk(col, pos, w, weighted, row, keys, cells, self.ovr_count[j], *params)
            if row < n:
                self.ovr[j] = grow(keys, cells, self.ovr_count[j] + BLOCK)
        if not self.pair_dense:  # else dense_column gave them
            sums[j] = kernels.probability_sums(col, pos, w, weighted)

    def _add_pairs(self, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None) -> None:
        assert self.pair_grid is not None
        weighted = weights is not None
        w = weights if weights is not None else np.empty(0)
        params = self.pair_grid.kernel_params()
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(self.k + 1))
        for t in range(self.k):
            rows = order[bounds[t]:bounds[t + 1]]
            pos, n = 0, rows.shape[0]
            while pos < n:
                keys, cells = self.pairs[t]
                pos, self.pair_count[t] = pair_chunk(scores, rows, t, w, weighted, pos, keys, cells, self.pair_count[t], self.np, *params)
                if pos < n:
                    self.pairs[t] = grow(keys, cells, self.pair_count[t] + BLOCK)

    def _written(self, state: np.ndarray, marks: np.ndarray) -> np.ndarray:
        """The page marks of ``state`` for compaction: the kernel's, or the OS's (see ``marking``)."""
        if self.marking:
            return marks
        pages = multiclass_pages.written(state)
        if pages is None:  # knows() said yes at the start; only a failed read of /proc lands here:
            return np.ones_like(marks)  # read every page (slow, still exact)
        both: np.ndarray = np.maximum(pages, marks)  # marks: the pages of compact cells put there (mark())
        return both

    def compact(self) -> Compact:
        """The compact form. Each shard is freed as soon as it is compacted, the largest set (the
        pairwise tables) first and straight into preallocated output, so the peak stays near the
        tables' own size."""
        if self.pair_dense:
            cells = self.pair_state[:-1]
            pair_keys = dense.occupied(cells, self._written(self.pair_state, self.pair_pages))
            pair_values = dense.gather(cells, pair_keys)
            self.pair_state = _FREED[1].reshape(0, 4)
        else:
            total = int(sum(self.pair_count))
            pair_keys, pair_values = np.empty(total, dtype=np.int64), np.empty((total, 4))
            at = 0
            for t in range(len(self.pairs)):
                keys, cells = compact_table(*self.pairs[t])
                self.pairs[t] = _FREED
                pair_keys[at:at + keys.shape[0]] = keys + t * self.k * self.np
                pair_values[at:at + keys.shape[0]] = cells
                at += keys.shape[0]
                del keys, cells
        if self.dense:
            ovr_keys = dense.occupied(self.ovr_state, self._written(self.ovr_state, self.ovr_pages))
            ovr_values = dense.gather(self.ovr_state, ovr_keys)
            self.ovr_state = kernels.empty_values(0)
            return ovr_keys, ovr_values, pair_keys, pair_values
        ok, ov = [], []
        for j in range(self.k):
            bins, values = compact_table(*self.ovr[j])
            self.ovr[j] = _FREED
            ok.append(bins + j * self.nf)
            ov.append(values)
        ovr_keys, ovr_values = np.concatenate(ok), np.concatenate(ov)
        return ovr_keys, ovr_values, pair_keys, pair_values


def _capacity(n: int) -> int:
    cap = MIN_CAPACITY
    while limit(cap) < n:
        cap *= 2
    return cap


def auto_pair_grid(grid: Grid, n_classes: int) -> Grid:
    """The pair grid that ``pair_grid="auto"`` picks for ``n_classes`` classes.

    ``grid`` itself while the K^2 dense pairwise states fit :data:`multiclass_kernels.DENSE_BUDGET`
    (K <= 4 on the default grid), else ``grid`` with bins ``2**d`` times wider, ``d = 4`` up to 32
    classes and one more per factor 4 beyond (K = 100: 32x), where that is an exact coarsening
    (ProbabilityGrid, FloatGrid, a LinearGrid whose bin count allows it). Measured on K = 10,
    continuous scores: 16x wider pair bins make the pairwise states small enough to stay dense
    while writing (60 MB instead of 1 GB), 5x faster to fill than full-resolution hash tables; the
    price is one-vs-one intervals about 16x wider than one-vs-rest ones (still exact on discrete
    scores whose values are 2**-8 apart relative to the nearer end).
    """
    if n_classes * n_classes * grid.n_bins * 32 <= DENSE_BUDGET:
        return grid
    d = 4 + max(0, math.ceil(math.log2(n_classes / 32) / 2))
    coarse: Grid = grid
    if isinstance(grid, ProbabilityGrid):
        tail = None if grid.tail_bits is None else max(0, grid.tail_bits - d)
        coarse = ProbabilityGrid(max(0, grid.mantissa_bits - d), grid.min_exponent, tail)
    elif isinstance(grid, FloatGrid):
        coarse = FloatGrid(max(0, grid.mantissa_bits - d), grid.min_exponent, grid.max_exponent)
    elif isinstance(grid, LinearGrid) and grid.bins % (1 << d) == 0:
        coarse = LinearGrid(grid.lo, grid.hi, grid.bins >> d)
    return coarse if coarsening_map(grid, coarse) is not None else grid


def reduce_sorted(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Combine cells of equal (adjacent) keys: weights and sums add, min/max combine."""
    if keys.size < 2:
        return keys, values
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    if starts.size == keys.size:
        return keys, values
    out = values[starts].copy()
    out[..., W] = np.add.reduceat(values[..., W], starts, axis=0)
    out[..., MIN] = np.minimum.reduceat(values[..., MIN], starts, axis=0)
    out[..., MAX] = np.maximum.reduceat(values[..., MAX], starts, axis=0)
    out[..., SUM] = np.add.reduceat(values[..., SUM], starts, axis=0)
    return keys[starts], out


def binary_layout(neg: tuple[np.ndarray, np.ndarray], pos: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, values (k, 2, 4))`` from single-class cells ``(keys, (m, 4))`` of each class."""
    # Both key sets are sorted and unique: a merge sort of the two runs and one pass to drop
    # repeats (np.union1d hashes and sorts from scratch: measured 6 ms against 0.13 ms on 20K + 3K
    # keys, for each of the 90 one-vs-one tables of K = 10).
    keys = np.concatenate([neg[0], pos[0]]).astype(np.int64)
    keys.sort(kind="stable")
    keys = keys[np.r_[True, keys[1:] != keys[:-1]]] if keys.size else keys
    values = kernels.empty_values(keys.shape[0])
    values[np.searchsorted(keys, neg[0]), 0] = neg[1]
    values[np.searchsorted(keys, pos[0]), 1] = pos[1]
    return keys, values


def bin_small(
    grid: Grid, pair_grid: Grid | None, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray | None
) -> Compact:
    """The compact cells of one small chunk, binned by sorting (no writing state is allocated).

    The same cells as :class:`Shards` would hold (counts and min/max exactly; float sums up to
    rounding), through the binary sketch's own sort-based binning (:func:`kernels.bin_compact`).
    """
    k = scores.shape[1]
    if weights is not None:  # zero-weight rows leave no trace in the bins
        keep = weights > 0
        scores, labels, weights = scores[keep], labels[keep], weights[keep]
    n, nf = scores.shape[0], grid.n_bins
    cols = [np.ascontiguousarray(scores[:, j]) for j in range(k)]
    bins = np.empty(n, dtype=np.int64)
    ok, ov = [], []
    for j in range(k):
        kernels.bin_indices(*grid.kernel_params(), cols[j], bins)
        keys, values = kernels.bin_compact(bins, (labels == j).view(np.uint8), cols[j], weights)
        ok.append(keys + j * nf)
        ov.append(values)
    pk, pv = np.empty(0, dtype=np.int64), empty_cells(0)
    if pair_grid is not None and n:
        npair = pair_grid.n_bins
        pbins = np.empty((k, n), dtype=np.int64)
        for j in range(k):
            kernels.bin_indices(*pair_grid.kernel_params(), cols[j], pbins[j])
        codes = (labels[None, :] * k + np.arange(k)[:, None]) * npair + pbins
        other = labels[None, :] != np.arange(k)[:, None]
        vals = np.stack(cols)[other]
        w = None if weights is None else np.broadcast_to(weights, (k, n))[other]
        keys, values = kernels.bin_compact(codes[other], np.zeros(vals.shape[0], dtype=np.uint8), vals, w)
        pk, pv = keys, np.ascontiguousarray(values[:, 0])
    return np.concatenate(ok), np.concatenate(ov), pk, pv


def merge_compact(a: Compact, b: Compact) -> Compact:
    """Union of two compact states on the same grids (as binning both sets of rows)."""
    ok, ov = kernels.merge_compact(a[0], a[1], b[0], b[1])
    codes = np.concatenate([a[2], b[2]])
    order = np.argsort(codes, kind="stable")
    pk, pv = reduce_sorted(codes[order], np.concatenate([a[3], b[3]])[order])
    return ok, ov, pk, pv


def column(keys: np.ndarray, values: np.ndarray, j: int, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Column ``j``'s one-vs-rest bins ``(bins, (k, 2, 4))`` out of the compact one-vs-rest cells."""
    a, b = np.searchsorted(keys, [j * n_bins, (j + 1) * n_bins])
    return keys[a:b] - j * n_bins, values[a:b]


def pair_positives(ovr_a: tuple[np.ndarray, np.ndarray], grid: Grid, pair_grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Column ``a``'s one-vs-rest positives (rows of class ``a``) coarsened to the pair grid."""
    to_pair = coarsening_map(grid, pair_grid)
    assert to_pair is not None
    keys, values = ovr_a
    has = values[:, 1, W] > 0
    return reduce_sorted(to_pair(keys[has]), values[has, 1])


def pooled(keys: np.ndarray, values: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The one-vs-rest cells of every column pooled by bin (micro averages): ``(bins, (k, 2, 4))``.

    Cells are folded in code order (column by column) into one dense binary state, which is then
    compacted: the same sums, in the same order, as :func:`combine` of the columns, without its
    sort (measured at K = 10, 30M rows: 0.23 s sorting 390K codes)."""
    if n_bins * 64 > DENSE_BUDGET:
        return combine([(keys % n_bins, values)])
    state = kernels.empty_state(n_bins)
    kernels.merge_into(state, keys % n_bins, values)
    return kernels.compact(state)


def combine(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Cells of several compact sets as one: sorted by code, equal codes combined in input order."""
    codes = np.concatenate([p[0] for p in parts])
    order = np.argsort(codes, kind="stable")
    return reduce_sorted(codes[order], np.concatenate([p[1] for p in parts])[order])


def coarsest(grids: list[Grid], what: str) -> Grid:
    """The grid every one of ``grids`` coarsens to exactly (one of them).

    Raises
    ------
    IncompatibleGridError
        If there is none; the message names the grids.
    """
    for target in grids:
        if all(coarsening_map(g, target) is not None for g in grids):
            return target
    raise IncompatibleGridError(
        f"cannot merge sketches on {what}s {', '.join(sorted({g.describe() for g in grids}))}: "
        "none is a power-of-two coarsening of all the others"
    )


def check_parts(parts: dict[str, Any], source: str | None = None) -> dict[str, Any]:
    """Validated values of a multiclass sketch's parts (grids, classes, counts, cells).

    Raises
    ------
    SketchFormatError
        Unknown grids or settings, bad classes, unknown input kind or counters, confusion or ranks
        not ``K x K`` finite weights >= 0, cell keys not increasing inside their range, value
        blocks of the wrong shape.
    """

    def bad(what: str) -> SketchFormatError:
        return SketchFormatError(f"{source + ': ' if source else ''}multiclass sketch: {what}")

    try:
        out: dict[str, Any] = {
            "grid": grid_from_spec(parts["grid"]),
            "pair_grid": None if parts["pair_grid"] is None else grid_from_spec(parts["pair_grid"]),
            "max_classes": int(parts["max_classes"]),
            "learned": bool(parts["learned"]),
            "classes": None if parts["classes"] is None else np.asarray(parts["classes"]),
            "mode": parts["mode"],
            "prediction": parts["prediction"],
            "pair_grid_given": parts.get("pair_grid_given", False),
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise bad(f"bad grid or settings ({exc})") from None
    classes = out["classes"]
    if out["pair_grid_given"] is not False and not (
        out["pair_grid_given"] is True and classes is None and out["pair_grid"] == out["grid"]
    ):  # only an empty sketch's explicit pair grid equal to its grid needs saying (see MulticlassSketch._pair_given)
        raise bad(f"pair_grid_given={parts['pair_grid_given']!r} is only for a sketch without classes whose pair grid is its grid")
    if classes is None:
        return out
    k = classes.shape[0]
    too_few = k < 2 and out["mode"] != "labels"
    if classes.ndim != 1 or too_few or k > out["max_classes"] or np.unique(classes).shape[0] != k:
        raise bad(f"bad classes {parts['classes']!r}")
    if (out["mode"], out["prediction"]) not in ((None, None), ("scores", "argmax"), ("scores", "y_pred"), ("labels", "y_pred")):
        raise bad(f"bad input kind {out['mode']!r} / {out['prediction']!r}")
    counters: dict[str, Any] = {}
    for name, value in parts["counters"].items():
        if name not in (*INT_COUNTERS, *FLOAT_COUNTERS, *COLUMN_COUNTERS, "weighted"):
            raise bad(f"unknown counter {name!r}")
        counters[name] = np.asarray(value, dtype=np.float64) if name in COLUMN_COUNTERS else value
        if name in COLUMN_COUNTERS and counters[name].shape != (k,):
            raise bad(f"counter {name!r} needs {k} values")
    out["counters"] = counters
    for name in ("confusion", "ranks"):
        arr = np.array(parts[name], dtype=np.float64)
        if arr.shape != (k, k) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise bad(f"{name} must be {k} x {k} finite weights >= 0")
        out[name] = arr
    npair = (out["pair_grid"] or out["grid"]).n_bins
    cells = []
    for name, top, shape in (("ovr", k * out["grid"].n_bins, (2, 4)), ("pair", k * k * npair, (4,))):
        keys = np.array(parts[f"{name}_keys"], dtype=np.int64)
        values = np.array(parts[f"{name}_values"], dtype=np.float64)
        if values.shape != (keys.shape[0], *shape) or (keys.size and (keys[0] < 0 or keys[-1] >= top or np.any(np.diff(keys) <= 0))):
            raise bad(f"{name} cells: keys must increase inside [0, {top}) with one value block each")
        cells += [keys, values]
    out["cells"] = tuple(cells)
    return out


def moved(keys: np.ndarray, values: np.ndarray, source: Grid, target: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Compact cells with codes ``block * n_bins + bin`` re-keyed from ``source`` to ``target``, an
    exact coarsening of it (cells may then share a code: combine them with :func:`combine`)."""
    to_target = coarsening_map(source, target)
    assert to_target is not None
    block, bins = np.divmod(keys, source.n_bins)
    return block * target.n_bins + to_target(bins), values


def binary_view(grid: Grid, bins: tuple[np.ndarray, np.ndarray], pos_label: Any, **counters: Any) -> BinarySketch:
    """A real :class:`BinarySketch` on compact binary bins ``(keys, (k, 2, 4))``, as
    ``BinarySketch.from_bytes`` fills one: bins, positive label, counters."""
    out = BinarySketch(grid)
    out._keys, out._values = bins[0].copy(), bins[1].copy()
    out._labels = LabelEncoder(pos_label=pos_label)
    out.counters.update(counters)
    return out


def merge_multiclass(sketches: Iterable["MulticlassSketch"]) -> "MulticlassSketch":
    """Merge multiclass sketches into a new one; the inputs are unchanged.

    Equivalent to feeding every sketch's rows to one sketch: counts, min/max, confusion and ranks
    are identical, floating-point sums agree up to rounding. Associative and commutative; an
    empty sketch is the identity. Sketches must agree on classes (labels-only sketches with
    learned classes take the union), on their kind of input, and on grids (equal, or exact
    power-of-two coarsenings: the result is on the coarsest).

    Raises
    ------
    ValueError
        If no sketch is given.
    InputError, IncompatibleGridError
        If the classes, input kinds or grids differ (the message names both).
    """
    from .multiclass import MulticlassSketch as sketch_class  # the facade imports this module

    items = list(sketches)
    if not items:
        raise ValueError("merge_multiclass() needs at least one sketch")
    for s in items:
        if not isinstance(s, sketch_class):
            raise InputTypeError(f"can only merge MulticlassSketch objects, got {type(s).__name__}")
    full = [s for s in items if s.n_rows > 0 or s._classes is not None]
    first = full[0] if full else items[0]
    grid = coarsest([s.grid for s in items], "grid")
    out = sketch_class(None, grid, pair_grid=first._pair_request, max_classes=first.max_classes)
    out._learned = first._learned
    classes: np.ndarray | None = None
    for s in full:
        if s.mode is not None and out.mode is not None and (s.mode, s.prediction) != (out.mode, out.prediction):
            raise InputError(f"cannot merge a sketch of {s._kind_text(s.mode, s.prediction)} with one of {out._kind_text(out.mode, out.prediction)}")
        out.mode, out.prediction = out.mode or s.mode, out.prediction or s.prediction
        assert s._classes is not None
        if classes is None:
            classes = s._classes
        elif not np.array_equal(classes, s._classes):
            if out.mode == "labels" and out._learned and s._learned:
                classes = np.union1d(classes, s._classes)
            else:
                raise InputError(f"cannot merge sketches with different classes {plain(classes)} and {plain(s._classes)}")
    if classes is None:
        boot = next((s.replicates for s in items if s.replicates is not None), None)
        out.replicates = None if boot is None else type(boot)(boot.n_replicates, boot.seed, boot.keyed)
        return out
    out._set_classes(classes)
    pair_grids = [s.pair_grid for s in full if s.mode == "scores"]
    if pair_grids:
        with_pairs = [g for g in pair_grids if g is not None]
        if with_pairs and len(with_pairs) != len(pair_grids):
            raise InputError("cannot merge a sketch with pairwise histograms and one without (pair_grid=None)")
        out.pair_grid = coarsest(with_pairs, "pair grid") if with_pairs else None
    if out.pair_grid is not None and coarsening_map(out.grid, out.pair_grid) is None:
        raise IncompatibleGridError(f"merged pair grid {out.pair_grid.describe()} is not a coarsening of {out.grid.describe()}")
    k = out.n_classes
    ovr: list[tuple[np.ndarray, np.ndarray]] = []
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    for s in full:
        s._compact()
        assert s._classes is not None
        # equal classes keep their (possibly unsorted) order; a learned union is sorted
        at = np.arange(k) if np.array_equal(classes, s._classes) else np.searchsorted(classes, s._classes)
        out.confusion[np.ix_(at, at)] += s.confusion
        out.ranks[np.ix_(at, at)] += s.ranks if s.ranks.shape[0] == k else 0.0
        for name in (*INT_COUNTERS, *FLOAT_COUNTERS):
            out.counters[name] += s.counters[name]
        for name in COLUMN_COUNTERS:
            out.counters[name][at] += s.counters[name]
        out.counters["weighted"] = bool(out.counters["weighted"] or s.counters["weighted"])
        if s.mode != "scores":
            continue
        ovr.append(moved(s._ovr_keys, s._ovr_values, s.grid, out.grid))
        if out.pair_grid is not None and s.pair_grid is not None:
            pairs.append(moved(s._pair_keys, s._pair_values, s.pair_grid, out.pair_grid))
    if ovr:  # all cells at once: one sort, then equal codes combined (in input order)
        out._ovr_keys, out._ovr_values = combine(ovr)
    if pairs:
        out._pair_keys, out._pair_values = combine(pairs)
    from .multiclass_bootstrap import merge_replicates

    out.replicates = merge_replicates(out, full)
    return out
