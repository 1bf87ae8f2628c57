"""Poisson-bootstrap replicates of a binary sketch: state, update, merge and replicate views.

A sketch built with ``bootstrap=R`` keeps, beside its own bins, ``R`` replicate histograms: the
weight per (occupied bin, class) each replicate gives the rows, every row weighted in replicate
``r`` by an integer ``k ~ Poisson(1)`` that is a hash of ``(seed, row key, r)``
(:mod:`streameval.kernels.bootstrap`). A replicate is then a sketch of a resample of the rows, and
any metric computed on the ``R`` replicates gives its bootstrap distribution
(:func:`streameval.stats.bootstrap.bootstrap_ci`).

Row keys: with ``row_id`` the key is the identifier, so the same row gets the same weights in any
shard, thread, order or rerun, and sketches of disjoint shards merge into the replicates one pass
over all rows gives (exactly for unweighted rows; weighted sums up to rounding). Without
``row_id`` the key is the row's position in the sketch's stream: reruns of the same input in the
same order give the same replicates, but two shards give their first rows the same weights, which
correlates the shards' resamples (``merge`` warns; use a ``row_id`` for sharded work).

Replicates keep no min/max or score sums of their own: a replicate's cell holds a subset of the
sketch's cell's rows, so the sketch's min/max bound it, and every binning bound computed on a
replicate view stays rigorous.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import InputError, InputTypeError
from ..grid import Grid
from ..kernels import bootstrap as kb
from ..kernels.binary import MAX, MIN, SUM, W, empty_values

__all__ = ["Replicates", "MAX_REPLICATES", "CorrelatedReplicatesWarning"]

MAX_REPLICATES = 10_000
KEYED = ("row_id", "position")


class CorrelatedReplicatesWarning(UserWarning):
    """Two position-keyed replicate sets with the same seed were merged: their rows share weights."""


def check_replicates(n: Any, seed: Any) -> tuple[int, int]:
    """Validate ``bootstrap=`` and ``seed=``; return them as ints.

    Raises
    ------
    InputError
        If ``n`` is not an integer in [2, 10,000] or ``seed`` is not an integer in [0, 2**64).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= int(n) <= MAX_REPLICATES:
        raise InputError(f"bootstrap must be a number of replicates from 2 to {MAX_REPLICATES:,}, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 1 << 64:
        raise InputError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return int(n), int(seed)


def row_keys(row_id: Any, n: int, seed: int, offset: int) -> npt.NDArray[np.uint64]:
    """64-bit row keys: of ``row_id`` (integers or strings), else of positions ``offset..``.

    Raises
    ------
    InputError
        If ``row_id`` has another length than the chunk, or holds nulls.
    InputTypeError
        If ``row_id`` is neither integer nor string.
    """
    if row_id is None:
        return kb.position_hashes(offset, n, seed)  # type: ignore[no-any-return]
    import pyarrow as pa

    arr = row_id if isinstance(row_id, (pa.Array, pa.ChunkedArray)) else None
    if arr is None:
        values = np.asarray(row_id)
        if values.ndim != 1:
            raise InputTypeError(f"row_id must be 1-D, got shape {values.shape}")
        if values.dtype.kind in "iub":
            if values.shape[0] != n:
                raise InputError(f"row_id has {values.shape[0]} rows but the chunk has {n}")
            return kb.row_hashes(values.astype(np.int64, copy=False).view(np.uint64), seed)  # type: ignore[no-any-return]
        arr = pa.array(values.tolist())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):  # Parquet dictionary columns, categoricals
        arr = arr.dictionary_decode()
    if len(arr) != n:
        raise InputError(f"row_id has {len(arr)} rows but the chunk has {n}")
    if arr.null_count:
        first = int(np.flatnonzero(np.asarray(arr.is_null()))[0])
        raise InputError(f"row_id is null in {arr.null_count} row(s), first at row {offset + first}; every row needs an id")
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        # the bits as int64 (uint64 ids above 2**63 wrap, as NumPy's astype does): one key per value
        ints = np.asarray(arr.cast(pa.int64(), safe=False)).view(np.uint64)
        return kb.row_hashes(ints, seed)  # type: ignore[no-any-return]
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        arr = arr.cast(pa.large_binary())
        _, offsets_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=len(arr) + 1 + arr.offset)[arr.offset:]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(1, np.uint8)
        return kb.string_hashes(offsets, data, seed)  # type: ignore[no-any-return]
    raise InputTypeError(f"row_id must hold integers or strings, got Arrow type {t}")


def replicate_clash(a: Any, b: Any) -> str | None:
    """Why two replicate sets (anything with ``n_replicates``, ``seed`` and ``keyed``) cannot
    merge, or None when they can; shared by binary and multiclass replicates."""
    if b.n_replicates != a.n_replicates or b.seed != a.seed:
        return (f"bootstrap replicates differ (R={a.n_replicates}, seed={a.seed} vs "
                f"R={b.n_replicates}, seed={b.seed}); build every shard with the same bootstrap= and seed=")
    if None not in (a.keyed, b.keyed) and a.keyed != b.keyed:
        return "one sketch's replicates are keyed by row_id and the other's by position; use row_id everywhere"
    return None


class Replicates:
    """``R`` Poisson-bootstrap replicate histograms over one grid (see the module docstring).

    Parameters
    ----------
    n_replicates : int
        ``R``, from 2 to 10,000.
    seed : int
        Seed of the replicate weights, in [0, 2**64).
    keyed : {"row_id", "position"}, optional
        What row keys are made of; fixed by the first update when not given.

    Notes
    -----
    Memory: 16 x R bytes per occupied bin (float64 weights per class and replicate), plus 8 bytes
    per grid bin for the index while rows are added. R = 100 on the default grid: 1.6 KB per
    occupied bin, about 100 MB at 62,000 occupied bins (10M rows of a spread score).
    """

    def __init__(self, n_replicates: int, seed: int = 0, keyed: str | None = None) -> None:
        self.n_replicates, self.seed = check_replicates(n_replicates, seed)
        if keyed is not None and keyed not in KEYED:
            raise InputError(f"keyed must be one of {KEYED}, got {keyed!r}")
        self.keyed = keyed
        self._index: npt.NDArray[np.int64] | None = None
        self._table = np.zeros((0, 2, self.n_replicates))
        self._used = 0
        self.keys = np.empty(0, dtype=np.int64)
        self.weights = np.zeros((0, 2, self.n_replicates))

    # -- update ------------------------------------------------------------------------------
    def row_keys(self, row_id: Any, n: int, offset: int) -> npt.NDArray[np.uint64]:
        """Check ``row_id`` against this set's keying and hash it (before the chunk is added).

        Raises
        ------
        InputError
            If this set was keyed by row ids and ``row_id`` is missing, or the other way round;
            or ``row_id`` is malformed (see :func:`row_keys`).
        """
        keyed = "position" if row_id is None else "row_id"
        if self.keyed is not None and keyed != self.keyed:
            raise InputError(
                f"this sketch's bootstrap replicates are keyed by {self.keyed}; pass "
                + ("row_id= with every update" if self.keyed == "row_id" else "no row_id (or start a new sketch)")
            )
        return row_keys(row_id, n, self.seed, offset)

    def add(self, grid: Grid, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, weighted: bool,
            keys: npt.NDArray[np.uint64], by_row_id: bool, threads: int = 1) -> None:
        """Add a validated chunk (the arrays :meth:`BinarySketch.update` bins) to every replicate.

        With ``threads > 1`` the replicates are split into ranges, one per thread (each range's
        weights are computed and added by one thread: the result does not depend on the split).
        """
        self.keyed = "row_id" if by_row_id else "position"
        from .binary import _executor

        def on_threads(calls: Sequence[Callable[[], Any]]) -> list[Any]:
            return list(_executor().map(lambda call: call(), calls)) if len(calls) > 1 else [c() for c in calls]

        rows = self.table_rows(grid, scores, weights, weighted)
        # Grouped by table row, adding walks the table once instead of jumping across it (2-3x).
        starts, labels, keys, weights = kb.group_by_row(rows, self._used, labels, keys, weights, weighted,
                                                        on_threads if threads > 1 else None)
        R = self.n_replicates
        parts = max(1, min(threads, R // kb.LANES, keys.shape[0] // 16_384))
        cuts = kb.replicate_cuts(R, parts)
        on_threads([partial(kb.add_replicates, self._table, starts, labels, weights, weighted, keys, int(cuts[k]),
                            int(cuts[k + 1])) for k in range(parts)])

    def table_rows(self, grid: Grid, scores: np.ndarray, weights: np.ndarray, weighted: bool) -> npt.NDArray[np.int64]:
        """Each row's replicate-table row (-1: skipped), allocating and growing the table (the
        writing form: grid bin -> table row) as new bins appear."""
        if self._index is None:
            self._index = np.full(grid.n_bins, -1, dtype=np.int64)
            self._table = np.zeros((max(64, 2 * self.keys.shape[0]), 2, self.n_replicates))
            self._used = self.keys.shape[0]
            self._index[self.keys] = np.arange(self._used)
            self._table[: self._used] = self.weights
        rows, used = kb.assign_rows(self._index, self._used, *grid.kernel_params(), scores, weights, weighted)
        if used > self._table.shape[0]:
            bigger = np.zeros((max(used, 2 * self._table.shape[0]), 2, self.n_replicates))
            bigger[: self._used] = self._table[: self._used]
            self._table = bigger
        self._used = used
        return rows  # type: ignore[no-any-return]

    def compact(self) -> tuple[npt.NDArray[np.int64], np.ndarray]:
        """``(keys ascending, weights (k, 2, R))`` of the occupied bins; ends the dense phase."""
        if self._index is not None:
            keys = np.flatnonzero(self._index >= 0).astype(np.int64)
            self.keys, self.weights = keys, self._table[self._index[keys]]
            self._index, self._table, self._used = None, np.zeros((0, 2, self.n_replicates)), 0
        return self.keys, self.weights

    # -- merge -------------------------------------------------------------------------------
    def same_kind(self, other: "Replicates") -> str | None:
        """Why ``other`` cannot merge with this set (None when it can)."""
        return replicate_clash(self, other)

    @classmethod
    def merged(cls, sets: Sequence["Replicates"], key_maps: Sequence[Any] | None = None) -> "Replicates":
        """One set holding every input's rows (inputs unchanged); ``key_maps`` re-bin keys.

        Raises
        ------
        InputError
            If the sets differ in R, seed or keying.
        """
        first = sets[0]
        keyed = next((s.keyed for s in sets if s.keyed is not None), None)
        for s in sets[1:]:
            why = first.same_kind(s)
            if why:
                raise InputError(f"cannot merge: {why}")
        if keyed == "position" and sum(1 for s in sets if s.keys.size or s._index is not None) > 1:
            warnings.warn(
                "merging bootstrap replicates keyed by stream position: the shards' first rows share their "
                "replicate weights, so the shards' resamples are correlated and the bootstrap intervals are "
                "off; build sharded sketches with row_id= (--row-id) so every row has its own weights",
                CorrelatedReplicatesWarning,
                stacklevel=3,
            )
        all_keys, all_w = [], []
        for i, s in enumerate(sets):
            k, w = s.compact()
            if key_maps is not None and key_maps[i] is not None:
                k = key_maps[i](k)
            all_keys.append(k)
            all_w.append(w)
        out = cls(first.n_replicates, first.seed, keyed)
        if all_keys:
            keys = np.concatenate(all_keys)
            order = np.argsort(keys, kind="stable")
            keys = keys[order]
            if keys.size:
                starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
                out.keys = keys[starts]
                out.weights = np.add.reduceat(np.concatenate(all_w)[order], starts, axis=0)
        return out

    def copy(self) -> "Replicates":
        out = Replicates(self.n_replicates, self.seed, self.keyed)
        keys, weights = self.compact()
        out.keys, out.weights = keys.copy(), weights.copy()
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Replicates):
            return False
        k1, w1 = self.compact()
        k2, w2 = other.compact()
        return (self.n_replicates, self.seed, self.keyed) == (other.n_replicates, other.seed, other.keyed) and bool(
            np.array_equal(k1, k2) and np.array_equal(w1, w2)
        )

    __hash__ = None  # type: ignore[assignment]

    # -- replicate views ---------------------------------------------------------------------
    def replicate_values(self, keys: npt.NDArray[np.int64], values: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield compact ``(keys, values)`` of each replicate, given the sketch's own compact bins.

        Each replicate cell takes the sketch cell's min/max (a bound for its subset of rows) and
        its mean score times the replicate weight as the score sum.
        """
        rkeys, rw = self.compact()
        base = values[np.searchsorted(keys, rkeys)]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(base[:, :, W] > 0, base[:, :, SUM] / base[:, :, W], 0.0)
        by_replicate = np.ascontiguousarray(np.moveaxis(rw, 2, 0))  # (R, k, 2): one slice per replicate
        for w in by_replicate:
            occupied = (w[:, 0] > 0) | (w[:, 1] > 0)
            wk, bk, mk = w[occupied], base[occupied], mean[occupied]
            has = wk > 0
            out = empty_values(wk.shape[0])
            out[:, :, W] = wk
            out[:, :, MIN] = np.where(has, bk[:, :, MIN], np.inf)
            out[:, :, MAX] = np.where(has, bk[:, :, MAX], -np.inf)
            out[:, :, SUM] = np.where(has, wk * mk, 0.0)
            yield rkeys[occupied], out
