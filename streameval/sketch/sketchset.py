"""SketchSet: one binary sketch per key (window, slice values...), built in one pass, all on one grid.

Monitoring asks the same question of many groups at once: AUC per country per day, per model
version per hour. A :class:`SketchSet` answers them from one read: each chunk's rows are grouped
by key and binned into per-group histograms. Keys are tuples of plain Python values named by
``key_names`` (a window start first, when there is one); a null key value is a group of its own.

State is one sorted table of *cells*, ``(group, bin, class) -> [weight, min, max, score_sum]``,
with class 0/1 for labelled negatives/positives and 2 for rows whose label has not arrived yet.
Rows get group ids from vectorized Arrow/NumPy code (:mod:`.groupkeys`) and are binned by the
compiled :func:`~streameval.kernels.grouped.grouped_update` into a hash table of cells or, when
most rows are cells of their own, into a buffer of rows (:mod:`~streameval.kernels.grouped_sort`)
sorted once, when the set is read; one-row cells then stay ``(code, score)`` pairs until all cells
are asked for (:mod:`~streameval.kernels.pairsort`). Memory is proportional to occupied cells, not
to groups x grid bins. A group's :class:`~streameval.BinarySketch` is materialized on demand.

Unlabelled rows (null label: the label arrives days later) keep their score histogram, so score
drift and estimated performance are available before the labels, and exact metrics after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import IncompatibleGridError, InputError, InputTypeError, UsageError
from ..grid import DEFAULT_GRID, Grid
from ..inputs import LabelEncoder, as_1d_array, clean_scores, clean_weights, null_labels
from ..inputs import merge_labels as _merge_labels
from ..inputs import plain_value as _plain
from ..lazy import lazy_module
from .cells import decode_cells, encode_cells
from .cells import reduce_cells as _reduce

if TYPE_CHECKING:
    from ..kernels import binary as kernels
    from ..kernels import grouped, grouped_sort, pairsort
    from .binary import BinarySketch
    from .groupkeys import KeyEncoder
else:  # compiled kernels load on first use: a set read from a store and reported needs none
    kernels = lazy_module("streameval.kernels.binary")
    grouped = lazy_module("streameval.kernels.grouped")
    grouped_sort = lazy_module("streameval.kernels.grouped_sort")
    pairsort = lazy_module("streameval.kernels.pairsort")

__all__ = ["SketchSet", "DEFAULT_MAX_GROUPS", "UNLABELLED"]

DEFAULT_MAX_GROUPS = 1_000_000
"""Most groups a SketchSet holds unless ``max_groups`` says otherwise (each costs its occupied cells)."""
UNLABELLED = 2
"""The cell class of rows whose label is null (not arrived yet)."""

_INT = ("n_rows", "n_nan", "n_zero_weight", "n_outside", "n_unlabelled")
_FLOAT = ("prob_weight", "brier_sum", "log_loss_sum")
_CONSOLIDATE_CELLS = 1 << 21
Key = tuple[Any, ...]


class SketchSet:
    """Binary sketches keyed by (window, slice values...), on one grid, built in one pass.

    Parameters
    ----------
    key_names : sequence of str
        Names of the key's parts, e.g. ``("window", "country")``. May be empty (one group).
    grid : Grid, optional
        The grid of every sketch; default :data:`streameval.DEFAULT_GRID`.
    pos_label : scalar, optional
        The positive label value, as for :class:`~streameval.BinarySketch`.
    max_groups : int, default 1,000,000
        Refuse to create more groups than this (a slice column with a value per row would
        otherwise make one group per row).

    Examples
    --------
    >>> import numpy as np, streameval
    >>> ss = streameval.SketchSet(["country"])
    >>> ss.update({"country": ["fr", "fr", "de", "de"]}, [0, 1, 0, 1], [0.2, 0.7, 0.6, 0.4])
    SketchSet(key_names=('country',), groups=2, rows=4)
    >>> float(ss.sketch(("fr",)).roc_auc()), float(ss.sketch(("de",)).roc_auc())
    (1.0, 0.0)
    """

    def __init__(
        self,
        key_names: Sequence[str],
        grid: Grid | None = None,
        *,
        pos_label: Any = None,
        max_groups: int = DEFAULT_MAX_GROUPS,
    ) -> None:
        if isinstance(key_names, str):
            key_names = (key_names,)
        self.key_names: tuple[str, ...] = tuple(str(k) for k in key_names)
        if len(set(self.key_names)) != len(self.key_names):
            raise UsageError(f"key names must be distinct, got {self.key_names}")
        self.grid: Grid = DEFAULT_GRID if grid is None else grid
        if not isinstance(self.grid, Grid):
            raise InputTypeError(f"grid must be a streameval Grid, got {type(self.grid).__name__}")
        if isinstance(max_groups, bool) or not isinstance(max_groups, int) or max_groups < 1:
            raise UsageError(f"max_groups must be a positive integer, got {max_groups!r}")
        self.max_groups = max_groups
        self._labels = LabelEncoder(pos_label=_plain(pos_label))
        self._keys: list[Key] = []
        self._index: dict[Key, int] = {}
        self._code = np.empty(0, dtype=np.int64)  # sorted, unique: (group * n_bins + bin) * 3 + class
        self._cell = np.empty((0, 4), dtype=np.float64)
        self._one: tuple[np.ndarray, np.ndarray] | None = None  # one-row cells (code, score), apart from _code
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # cells added by add_group
        self._pending_cells = 0
        # made by the first update (their modules import Numba):
        self._table: np.ndarray | None = None  # cells added by update, not yet sorted (see kernels.grouped)
        self._used = 0
        self._row_buffer: grouped_sort.RowBuffer | None = None  # see _rows
        self._encoder: KeyEncoder | None = None
        # per group, one 64-byte line: the _INT counters then the _FLOAT sums (counts exact below 2**53)
        self._ctr = np.zeros((0, len(_INT) + len(_FLOAT)), dtype=np.float64)
        self.weighted = False

    @classmethod
    def from_cells(
        cls,
        key_names: Sequence[str],
        grid: Grid,
        keys: Sequence[Key],
        counters: np.ndarray,
        codes: np.ndarray,
        cells: np.ndarray,
        *,
        pos_label: Any = None,
        neg_label: Any = None,
        weighted: bool = False,
        max_groups: int = DEFAULT_MAX_GROUPS,
    ) -> "SketchSet":
        """A set from its parts, as :meth:`cell_columns` and :meth:`group_counters` give them.

        Parameters
        ----------
        key_names, grid, max_groups
            As for the constructor.
        keys : sequence of tuple
            The distinct group keys; group ``g`` is ``keys[g]``.
        counters : float64 array of shape (len(keys), 8)
            Per group: ``n_rows, n_nan, n_zero_weight, n_outside, n_unlabelled, prob_weight,
            brier_sum, log_loss_sum``.
        codes : int64 array of shape (k,)
            Cell codes ``(group * n_bins + bin) * 3 + class``, strictly increasing.
        cells : float64 array of shape (k, 4)
        pos_label, neg_label, weighted
            The label values and whether any row was weighted.

        Raises
        ------
        InputError
            More keys than ``max_groups``, duplicate keys, or parts of mismatched shapes.
        """
        out = cls(key_names, grid, pos_label=pos_label, max_groups=max_groups)
        keys = [tuple(k) for k in keys]
        if len(keys) > max_groups:
            raise InputError(f"{len(keys):,} groups is more than max_groups={max_groups:,}")
        out._index = {k: i for i, k in enumerate(keys)}
        if len(out._index) != len(keys):
            raise InputError("group keys must be distinct")
        if counters.shape != (len(keys), len(_INT) + len(_FLOAT)) or cells.shape != (codes.shape[0], 4):
            raise InputError(f"parts do not fit: {len(keys)} keys, counters {counters.shape}, "
                             f"{codes.shape[0]} codes, cells {cells.shape}")
        out._keys = keys
        out._ctr = np.array(counters, dtype=np.float64)
        out._code, out._cell = np.asarray(codes, dtype=np.int64), np.asarray(cells, dtype=np.float64)
        out._labels.neg_label = neg_label
        out.weighted = bool(weighted)
        return out

    # -- groups -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def keys(self) -> list[Key]:
        """The group keys, in order of first appearance."""
        return list(self._keys)

    @property
    def n_rows(self) -> int:
        """Rows passed to :meth:`update`, in all groups."""
        return int(self._ctr[:, 0].sum())

    def _group(self, key: Key) -> int:
        gid = self._index.get(key)
        return int(self._new_groups([key])[0]) if gid is None else gid

    def _new_groups(self, keys: list[Key]) -> np.ndarray:
        """Indices of distinct keys, creating the groups of new ones in order (in bulk when all are new)."""
        if not self._index.keys().isdisjoint(keys):  # some exist: one at a time (each new one checks the cap)
            return np.array([self._group(k) for k in keys], dtype=np.int64)
        start = len(self._keys)
        if start + len(keys) > self.max_groups:
            raise InputError(
                f"more than {self.max_groups:,} groups of {', '.join(self.key_names) or 'rows'} "
                f"(the newest is {keys[max(self.max_groups - start, 0)]!r}); a slice column with very many "
                "values (an id?) makes a group per value: slice by a coarser column, or raise max_groups (--max-groups)"
            )
        self._keys.extend(keys)
        self._index.update(zip(keys, range(start, len(self._keys)), strict=True))
        if len(self._keys) > self._ctr.shape[0]:
            cap = max(16, 2 * self._ctr.shape[0], len(self._keys))
            self._ctr = np.pad(self._ctr, ((0, cap - self._ctr.shape[0]), (0, 0)))
        return np.arange(start, len(self._keys), dtype=np.int64)

    # -- update -------------------------------------------------------------------------------
    def update(
        self,
        keys: Mapping[str, Any] | Sequence[Any],
        y_true: Any,
        y_score: Any,
        sample_weight: Any = None,
        *,
        nan_policy: str = "raise",
        require_labels: bool = False,
    ) -> "SketchSet":
        """Add a chunk of rows to their groups.

        Parameters
        ----------
        keys : mapping of key name -> array-like of shape (n,), or a sequence in ``key_names`` order
            The key value of every row (NumPy, Arrow, Polars, pandas or lists). Nulls are a group.
        y_true : array-like of shape (n,)
            Labels as for :meth:`BinarySketch.update`; a null (None, NaN, Arrow null) is a label
            that has not arrived: the row is counted as unlabelled and its score kept.
        y_score : array-like of shape (n,)
        sample_weight : array-like of shape (n,), optional
        nan_policy : {"raise", "skip"}
            NaN/null scores raise, or are skipped and counted per group.
        require_labels : bool, default False
            Refuse null labels (one-off evaluation) instead of counting them as unlabelled.

        Returns
        -------
        SketchSet
            ``self``.

        Raises
        ------
        InputError
            As :meth:`BinarySketch.update`, plus keys of the wrong length, too many groups, or a
            null label with ``require_labels=True``. The set is unchanged on error, except that
            groups seen in the chunk may have been created (empty).
        """
        if nan_policy not in ("raise", "skip"):
            raise UsageError(f"nan_policy must be 'raise' or 'skip', got {nan_policy!r}")
        offset = self.n_rows
        y = as_1d_array(y_true, "y_true")
        s = as_1d_array(y_score, "y_score")
        n = s.shape[0]
        if y.shape[0] != n:
            raise InputError(f"y_true has {y.shape[0]} rows but y_score has {n}")
        scores, _ = clean_scores(s, offset, nan_policy)
        scores = scores.astype(np.float64, copy=False)
        null = null_labels(y)
        if null.any() and require_labels:
            first = int(np.argmax(null))
            raise InputError(
                f"y_true has {int(null.sum())} null label(s), first at row {offset + first}; labels are "
                "required here (drop require_labels / --require-labels to count such rows as unlabelled)"
            )
        encoder = LabelEncoder(self._labels.pos_label, self._labels.neg_label)
        filled = np.where(null, y[int(np.argmin(null))], y) if null.any() and not null.all() else y
        cls: np.ndarray = np.full(n, UNLABELLED, dtype=np.int64) if null.all() else encoder.encode(filled, offset)
        if null.any():  # labels not arrived: class 2 (filled with a label above, so errors name the right row)
            cls = np.where(null, UNLABELLED, cls)
        weighted = sample_weight is not None
        w = clean_weights(as_1d_array(sample_weight, "sample_weight"), n, offset) if weighted else np.empty(0)
        if self._encoder is None:
            from .groupkeys import KeyEncoder

            self._encoder = KeyEncoder(self.key_names, self._group, self._new_groups)
        gid = self._encoder.group_ids(keys, n)
        if (len(self._keys) + 1) * 3 * self.grid.n_bins >= grouped.MAX_CODE:
            raise InputError(f"{len(self._keys):,} groups x {self.grid.n_bins:,} bins is too many cells to index; "
                             "use a coarser grid or fewer groups")
        self._labels = encoder
        self.weighted = self.weighted or weighted
        args = (*self.grid.kernel_params(), self.grid.n_bins, gid, np.ascontiguousarray(scores, dtype=np.float64), cls,
                np.ascontiguousarray(w, dtype=np.float64), weighted, self._ctr)
        if self._rows.takes(n):
            self._rows.add(*args, narrow=s.dtype == np.float32)
        else:
            self._table = grouped.reserve(grouped.new_table() if self._table is None else self._table, self._used, n)
            self._table, self._used = grouped.grouped_update(self._table, self._used, *args)
        return self

    @property
    def _rows(self) -> grouped_sort.RowBuffer:
        """Rows buffered to be sorted, when most rows are cells of their own (made on first use)."""
        if self._row_buffer is None:
            self._row_buffer = grouped_sort.RowBuffer()
        return self._row_buffer

    def _consolidate(self) -> None:
        """Fold the cell table, the buffered rows and the pending cells into the sorted cells."""
        buffer = self._row_buffer
        rows = buffer is not None and bool(buffer.runs or buffer.rows or buffer.compact is not None)
        if rows and not (self._used or self._pending or self._code.shape[0] or self._one is not None):
            assert buffer is not None
            self._code, self._cell, self._one = buffer.drain()  # the common case: kept compact
            return
        if rows or self._used or self._pending:
            self._expand()
        if self._used:
            assert self._table is not None
            code, cell = grouped.drain(self._table, self._used, 3 * self.grid.n_bins, max(len(self._keys), 1))
            self._table, self._used = None, 0
            self._code, self._cell = grouped.merge_sorted(self._code, self._cell, code, cell)
        if rows:
            assert buffer is not None
            code, cell, one = buffer.drain()
            if one is not None:
                code, cell = pairsort.expand(*one, code, cell)
            self._code, self._cell = grouped.merge_sorted(self._code, self._cell, code, cell)
        if self._pending:
            code, cell = _reduce(np.concatenate([c for c, _ in self._pending]), np.concatenate([v for _, v in self._pending]))
            self._pending, self._pending_cells = [], 0
            self._code, self._cell = grouped.merge_sorted(self._code, self._cell, code, cell)

    def _expand(self) -> None:  # one-row cells (16 bytes) joined to the full cells (40 bytes)
        if self._one is not None:
            self._code, self._cell = pairsort.expand(*self._one, self._code, self._cell)
            self._one = None

    # -- reading ------------------------------------------------------------------------------
    @property
    def n_cells(self) -> int:
        """Occupied ``(group, bin, class)`` cells, the size of the state."""
        self._consolidate()
        return int(self._code.shape[0]) + (0 if self._one is None else int(self._one[0].shape[0]))

    def _group_cells(self, gid: int) -> tuple[np.ndarray, np.ndarray]:
        self._consolidate()
        span = 3 * self.grid.n_bins
        if self._one is not None:
            code, cell = pairsort.group_slice(*self._one, self._code, self._cell, gid * span, (gid + 1) * span)
            return code - gid * span, cell
        a, b = np.searchsorted(self._code, [gid * span, (gid + 1) * span])
        return self._code[a:b] - gid * span, self._cell[a:b]

    def cell_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All cells as columns ``(group, bin, class, cells)``, sorted by (group, bin, class).

        ``group`` indexes :meth:`keys`; ``class`` is 0 (negative), 1 (positive) or 2 (label not
        arrived, :data:`UNLABELLED`); ``cells`` has shape (k, 4): ``[weight, min, max, score_sum]``.
        The arrays are the set's own: do not modify them. One-row cells kept as (code, score)
        pairs (16 bytes) become full cells (40 bytes) here, for good.
        """
        self._consolidate()
        self._expand()
        span = 3 * self.grid.n_bins
        rest = self._code % span
        return self._code // span, rest // 3, rest % 3, self._cell

    def group_counters(self) -> dict[str, np.ndarray]:
        """Every group's counters as arrays in :meth:`keys` order (see :meth:`counts`)."""
        n = len(self._keys)
        out: dict[str, np.ndarray] = {name: self._ctr[:n, i].astype(np.int64) for i, name in enumerate(_INT)}
        out.update({name: self._ctr[:n, len(_INT) + i].copy() for i, name in enumerate(_FLOAT)})
        return out

    def _gid(self, key: Key | Any) -> int:
        key = key if isinstance(key, tuple) else (key,)
        if key not in self._index:
            raise KeyError(f"no group {key!r}; groups are keyed by {list(self.key_names)}")
        return self._index[key]

    def sketch(self, key: Key | Any) -> BinarySketch:
        """The labelled rows of one group as a :class:`~streameval.BinarySketch`.

        Raises
        ------
        KeyError
            If there is no such group.
        """
        gid = self._gid(key)
        code, cell = self._group_cells(gid)
        labelled = (code % 3) != UNLABELLED
        return self._binary(code[labelled], cell[labelled], gid)

    def _binary(self, code: np.ndarray, cell: np.ndarray, gid: int | None) -> BinarySketch:
        bins = code // 3
        keys = np.unique(bins)
        values = kernels.empty_values(keys.shape[0])
        values[np.searchsorted(keys, bins), code % 3] = cell
        from .binary import BinarySketch

        out = BinarySketch(self.grid)
        out._labels = LabelEncoder(self._labels.pos_label, self._labels.neg_label)
        out._keys, out._values = keys, values
        cols = slice(None) if gid is None else slice(gid, gid + 1)
        totals = self._ctr[cols].sum(axis=0)
        ints, floats = totals[: len(_INT)], totals[len(_INT):]
        unlabelled = int(ints[4])
        out.counters.update({"n_rows": int(ints[0]) - unlabelled, "n_nan": int(ints[1]),
                             "n_zero_weight": int(ints[2]), "n_outside": int(ints[3]),
                             "prob_weight": float(floats[0]), "brier_sum": float(floats[1]),
                             "log_loss_sum": float(floats[2]), "weighted": self.weighted})
        return out

    def overall(self) -> BinarySketch:
        """All labelled rows of all groups in one sketch (the cells are stored full, see :meth:`cell_columns`)."""
        self._consolidate()
        self._expand()
        span = 3 * self.grid.n_bins
        code = self._code % span
        keep = (code % 3) != UNLABELLED
        code, cell = _reduce(code[keep], self._cell[keep])
        return self._binary(code, cell, None)

    def score_histogram(
        self, key: Key | Any, *, labelled: bool | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(bins, weight, min, max)`` of one group's scores, for drift; bins ascending.

        ``labelled=None`` counts every row, True only labelled rows, False only unlabelled ones.
        See :func:`streameval.stats.score_drift`.
        """
        from .sketchset_estimate import score_histogram

        return score_histogram(self, self._gid(key), labelled)

    def unlabelled_estimate(self, key: Key | Any) -> BinarySketch:
        """Estimated performance of a group's unlabelled rows, assuming calibrated scores.

        Confidence-based performance estimation (CBPE, as NannyML names it): a row scored ``p``
        counts as ``p`` of a positive and ``1 - p`` of a negative, so each bin holds an expected
        positive weight equal to its score sum. Every metric of the returned sketch (AUC,
        confusion counts and rates at a threshold) is then the expected value under the
        assumption that the scores are calibrated probabilities; it is an estimate, not a
        measurement, and wrong when that assumption is.

        Raises
        ------
        ValueError
            If an unlabelled score lies outside [0, 1] (not a probability).
        """
        from .sketchset_estimate import unlabelled_estimate

        return unlabelled_estimate(self, self._gid(key))

    def counts(self, key: Key | Any) -> dict[str, int | float]:
        """A group's row counters: rows, NaN scores, zero weights, unlabelled rows, ..."""
        gid = self._gid(key)
        out: dict[str, int | float] = {name: int(self._ctr[gid, i]) for i, name in enumerate(_INT)}
        out.update({name: float(self._ctr[gid, len(_INT) + i]) for i, name in enumerate(_FLOAT)})
        return out

    def items(self) -> Iterator[tuple[Key, BinarySketch]]:
        """``(key, sketch of its labelled rows)`` for every group."""
        for key in self._keys:
            yield key, self.sketch(key)

    def psi(self, reference: "SketchSet", *, buckets: int = 10) -> np.ndarray:
        """Score drift of every group against a reference: the population stability index.

        Parameters
        ----------
        reference : SketchSet
            Keyed like this set, or by the same key without ``"window"`` (e.g. a reference
            period merged per slice); each group is compared with the reference group of the
            same key (slice values).
        buckets : int, default 10
            Reference-quantile buckets (deciles), as :func:`streameval.stats.score_drift`.

        Returns
        -------
        ndarray of float64, shape (len(self),)
            PSI of each group's score histogram (labelled and unlabelled rows) in :meth:`keys`
            order; NaN where the reference has no such group.

        Raises
        ------
        IncompatibleGridError
            If the grids differ.
        InputError
            If the reference is keyed otherwise.
        """
        from .sketchset_merge import psi

        return psi(self, reference, buckets)

    # -- storage ------------------------------------------------------------------------------
    def group_parts(self, key: Key | Any) -> tuple[BinarySketch, bytes | None, dict[str, int | float]]:
        """One group as plain parts for storage: ``(labelled, unlabelled, counts)``.

        ``labelled`` is the group's sketch (:meth:`sketch`); ``unlabelled`` the cells of its rows
        whose label is null, encoded by :func:`encode_cells` (None when there are none);
        ``counts`` its counters (:meth:`counts`). :meth:`add_group` is the inverse.
        """
        gid = self._gid(key)
        code, cell = self._group_cells(gid)
        mine = (code % 3) == UNLABELLED
        unlabelled = encode_cells(code[mine] // 3, cell[mine]) if mine.any() else None
        return self.sketch(key), unlabelled, self.counts(key)

    def add_group(
        self, key: Key, labelled: BinarySketch, unlabelled: bytes | None, counts: Mapping[str, Any]
    ) -> None:
        """Add a stored group's parts (see :meth:`group_parts`) to the group ``key``, merging.

        Raises
        ------
        IncompatibleGridError
            If the labelled sketch is on another grid.
        InputError
            If the positive classes differ.
        SketchFormatError
            If ``unlabelled`` is not a valid cell block for this grid.
        """
        if labelled.grid != self.grid:
            raise IncompatibleGridError(f"cannot add a group on {labelled.grid.describe()} to a set on {self.grid.describe()}")
        _merge_labels(self._labels, labelled._labels)
        gid = self._group(tuple(key))
        span = self.grid.n_bins
        keys, values = labelled._compact()
        for c in (0, 1):
            has = values[:, c, 0] > 0
            if has.any():
                self._pending.append(((gid * span + keys[has]) * 3 + c, values[has, c, :].copy()))
                self._pending_cells += int(has.sum())
        if unlabelled is not None:
            bins, cells = decode_cells(unlabelled, span)
            self._pending.append(((gid * span + bins) * 3 + UNLABELLED, cells))
            self._pending_cells += bins.shape[0]
        for i, name in enumerate(_INT):
            self._ctr[gid, i] += int(counts.get(name, 0))
        for i, name in enumerate(_FLOAT):
            self._ctr[gid, len(_INT) + i] += float(counts.get(name, 0.0))
        self.weighted = self.weighted or bool(labelled.counters.get("weighted", False))
        if self._pending_cells > max(_CONSOLIDATE_CELLS, self._code.shape[0]):
            self._consolidate()

    # -- merge and roll-up --------------------------------------------------------------------
    def merge(self, other: "SketchSet") -> "SketchSet":
        """A new set holding both sets' rows, group by group; the inputs are unchanged.

        Raises
        ------
        IncompatibleGridError
            If the grids differ.
        InputError
            If the key names or the positive classes differ.
        """
        from .sketchset_merge import remap

        return remap([self, other], self.key_names, lambda k: k, self.max_groups)

    def rollup(self, by: Sequence[str] | None = None, *, window: Callable[[Any], Any] | None = None) -> "SketchSet":
        """Merge groups into coarser ones: keep only the key parts ``by``, and/or map the window.

        Parameters
        ----------
        by : sequence of str, optional
            Key names to keep, in this order (default: all). ``rollup([])`` merges every group.
        window : callable, optional
            Maps the first key part (a window start) to a coarser one, e.g. a day to its week.

        Returns
        -------
        SketchSet
            Exactly the set that grouping the same rows by the coarser key would have built.
        """
        from .sketchset_merge import rollup

        return rollup(self, by, window)

    def to_bytes(self) -> bytes:
        """The set as versioned, checked bytes (:mod:`streameval.sketch.sketchset_io`)."""
        from .sketchset_io import sketchset_to_bytes

        return sketchset_to_bytes(self)

    @classmethod
    def from_bytes(cls, data: bytes, source: str | None = None) -> "SketchSet":
        """Read :meth:`to_bytes` output; raises ``SketchFormatError`` on anything else."""
        from .sketchset_io import sketchset_from_bytes

        return sketchset_from_bytes(data, source)

    def __repr__(self) -> str:
        return f"SketchSet(key_names={self.key_names}, groups={len(self)}, rows={self.n_rows})"

