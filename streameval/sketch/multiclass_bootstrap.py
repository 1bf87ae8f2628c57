"""Poisson-bootstrap replicates of a multiclass sketch: state, update and merge.

A :class:`~streameval.MulticlassSketch` built with ``bootstrap=R`` keeps, beside its own state:

- ``confusion``, shape ``(R, K, K)``: replicate ``r``'s weight per (true class, predicted class);
- ``ovr``: per score column ``j`` a binary :class:`~streameval.sketch.bootstrap.Replicates` over
  the one-vs-rest histogram of column ``j`` (scores = column ``j``, positives = rows of class
  ``j``), so that ``one_vs_rest(j)`` is a binary sketch with its own replicates (kept for score
  input only).

Every part weighs a row in replicate ``r`` by the same Poisson(1) integer, a hash of ``(seed, row
key, r)`` (:mod:`streameval.kernels.bootstrap`), the row key being the ``row_id`` or the row's
position in the sketch's stream. With ``row_id`` the replicates do not depend on chunking, thread
count, shard or order, and sketches of disjoint shards merge into the replicates of one pass (the
guarantees and the caveat without ``row_id`` are those of :mod:`streameval.sketch.bootstrap`).

Memory: ``8 R K^2`` bytes for the confusion replicates plus ``16 R`` bytes per occupied
one-vs-rest bin (and, while rows are added, an 8-byte index per grid bin and column).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from ..grid import Grid, coarsening_map
from ..kernels import bootstrap as kb
from ..kernels import multiclass_bootstrap as kmb
from .bootstrap import CorrelatedReplicatesWarning, Replicates, check_replicates, replicate_clash, row_keys

if TYPE_CHECKING:
    from .multiclass import MulticlassSketch

__all__ = ["MulticlassReplicates", "merge_replicates"]


class MulticlassReplicates:
    """``R`` Poisson-bootstrap replicates of a multiclass sketch's confusion matrix and one-vs-rest
    histograms (see the module docstring).

    Parameters
    ----------
    n_replicates : int
        ``R``, from 2 to 10,000.
    seed : int
        Seed of the replicate weights, in [0, 2**64).
    keyed : {"row_id", "position"}, optional
        What the row keys are made of; fixed by the first update when not given.

    Raises
    ------
    InputError
        If ``n_replicates`` or ``seed`` is out of range.
    """

    def __init__(self, n_replicates: int, seed: int = 0, keyed: str | None = None) -> None:
        self.n_replicates, self.seed = check_replicates(n_replicates, seed)
        self.keyed = keyed
        self.confusion = np.zeros((self.n_replicates, 0, 0))
        self.ovr: list[Replicates] = []

    @property
    def n_classes(self) -> int:
        """K (0 until the classes are known)."""
        return int(self.confusion.shape[1])

    def resize(self, at: npt.NDArray[np.int64], k: int, scores: bool) -> None:
        """Move to ``k`` classes, old class ``i`` becoming ``at[i]`` (labels learned as they come);
        with ``scores`` keep one (empty) one-vs-rest replicate set per class."""
        if self.confusion.shape[1] != k:
            conf = np.zeros((self.n_replicates, k, k))
            if self.confusion.shape[1]:
                conf[:, at[:, None], at[None, :]] = self.confusion
            self.confusion = conf
        if scores and len(self.ovr) != k:
            self.ovr = [Replicates(self.n_replicates, self.seed, self.keyed) for _ in range(k)]

    # -- update ------------------------------------------------------------------------------
    def row_keys(self, row_id: Any, n: int, offset: int) -> npt.NDArray[np.uint64]:
        """Check ``row_id`` against this set's keying and hash the chunk's rows (before any change).

        Raises
        ------
        InputError
            If the set is keyed by row ids and ``row_id`` is missing, or the other way round; a
            ``row_id`` of the wrong length or with nulls.
        InputTypeError
            If ``row_id`` is neither integer nor string.
        """
        keyed = "position" if row_id is None else "row_id"
        if self.keyed is not None and keyed != self.keyed:
            raise InputError(
                f"this sketch's bootstrap replicates are keyed by {self.keyed}; pass "
                + ("row_id= with every update" if self.keyed == "row_id" else "no row_id (or start a new sketch)")
            )
        return row_keys(row_id, n, self.seed, offset)

    def add(self, grid: Grid, scores: np.ndarray | None, labels: np.ndarray, preds: np.ndarray | None,
            weights: np.ndarray | None, keys: npt.NDArray[np.uint64], by_row_id: bool,
            run: Callable[[list[Callable[[], None]], int], None], threads: int) -> None:
        """Add a validated chunk: its confusion replicates and, with ``scores``, each column's
        one-vs-rest replicates. ``run(tasks, threads)`` runs independent tasks (each task owns
        its cells: the result does not depend on the threads).

        The rows' Poisson weights are computed once per block of rows (a uint8 matrix of at most
        32 MiB) and read by the confusion and by every column, instead of hashing each row
        ``K + 1`` times.
        """
        self.keyed = "row_id" if by_row_id else "position"
        for rep in self.ovr:
            rep.keyed = self.keyed
        R, n = self.n_replicates, labels.shape[0]
        block = max(1024, (1 << 25) // R)
        for a in range(0, n, block):
            b = min(n, a + block)
            self._add_block(grid, None if scores is None else scores[a:b], labels[a:b],
                            None if preds is None else preds[a:b], None if weights is None else weights[a:b],
                            keys[a:b], run, threads if b - a >= 1 << 14 else 1)

    def _add_block(self, grid: Grid, scores: np.ndarray | None, labels: np.ndarray, preds: np.ndarray | None,
                   weights: np.ndarray | None, keys: npt.NDArray[np.uint64],
                   run: Callable[[list[Callable[[], None]], int], None], threads: int) -> None:
        R, n = self.n_replicates, labels.shape[0]
        kmat = np.empty((n, R), dtype=np.uint8)
        cuts = np.linspace(0, n, threads + 1).astype(np.int64)
        run([lambda a=int(cuts[i]), b=int(cuts[i + 1]): kmb.poisson_matrix(keys, kb.POISSON_THRESHOLDS, R, kmat, a, b)  # type: ignore[misc]
             for i in range(threads)], threads)
        weighted = weights is not None
        w = weights if weights is not None else np.empty(0)
        use_preds = preds is not None
        p = preds if preds is not None else np.empty(0, dtype=np.int64)
        s = scores if scores is not None else np.empty((0, max(1, self.n_classes)))
        parts = max(1, min(threads, R // 8))
        rcuts = np.linspace(0, R, parts + 1).astype(np.int64)
        tasks: list[Callable[[], None]] = [
            lambda a=int(rcuts[i]), b=int(rcuts[i + 1]): kmb.add_confusion_replicates(  # type: ignore[misc]
                self.confusion, labels, p, use_preds, s, w, weighted, kmat, a, b)
            for i in range(parts)
        ]
        if scores is not None:
            for j, rep in enumerate(self.ovr):
                def column(j: int = j, rep: Replicates = rep) -> None:
                    _add_column(rep, grid, np.ascontiguousarray(scores[:, j]), (labels == j).view(np.uint8), w, weighted, kmat)

                tasks.append(column)
        run(tasks, threads)

    def compact(self) -> None:
        """End the writing phase of every column's replicates."""
        for rep in self.ovr:
            rep.compact()

    # -- comparison --------------------------------------------------------------------------
    def same_kind(self, other: "MulticlassReplicates") -> str | None:
        """Why ``other`` cannot merge with this set (None when it can)."""
        return replicate_clash(self, other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MulticlassReplicates):
            return False
        return ((self.n_replicates, self.seed, self.keyed) == (other.n_replicates, other.seed, other.keyed)
                and bool(np.array_equal(self.confusion, other.confusion)) and self.ovr == other.ovr)

    __hash__ = None  # type: ignore[assignment]

    @property
    def nbytes(self) -> int:
        """Bytes of the compact replicates."""
        self.compact()
        return int(self.confusion.nbytes + sum(r.keys.nbytes + r.weights.nbytes for r in self.ovr))


def _add_column(rep: Replicates, grid: Grid, col: np.ndarray, positive: np.ndarray, w: np.ndarray, weighted: bool,
                kmat: np.ndarray) -> None:
    """What :meth:`Replicates.add` does for one column, with the rows' Poisson weights given
    (``kmat``) instead of hashed again: the same table rows, the same order of additions, hence the
    same sums bit for bit (``tests/test_multiclass_bootstrap.py`` compares with a BinarySketch)."""
    rows = rep.table_rows(grid, col, w, weighted)
    kmb.add_column_replicates(rep._table, rows, kb.order_by_row(rows, rep._used), positive, w, weighted, kmat)


def merge_replicates(out: "MulticlassSketch", full: Sequence["MulticlassSketch"]) -> MulticlassReplicates | None:
    """The replicates of ``out``, the merge of the sketches ``full`` (those with classes).

    Confusion replicates add cell by cell (classes re-indexed into ``out``'s), each column's
    one-vs-rest replicates merge as binary ones (re-binned to ``out``'s grid).

    Raises
    ------
    InputError
        If some sketches have replicates and others with rows have none, or the replicates
        differ in R, seed or keying.

    Warns
    -----
    CorrelatedReplicatesWarning
        When more than one sketch with rows is keyed by stream position.
    """
    sets = [s.replicates for s in full if s.replicates is not None]
    if not sets:
        return None
    if any(s.replicates is None and s.n_rows > 0 for s in full):
        raise InputError(
            "cannot merge a sketch with bootstrap replicates and one without: build every shard with the same "
            "bootstrap= and seed="
        )
    first = sets[0]
    for other in sets[1:]:
        why = first.same_kind(other)
        if why:
            raise InputError(f"cannot merge: {why}")
    keyed = next((r.keyed for r in sets if r.keyed is not None), None)
    if keyed == "position" and sum(1 for s in full if s.n_rows > 0) > 1:
        warnings.warn(
            "merging bootstrap replicates keyed by stream position: the shards' first rows share their replicate "
            "weights, so the shards' resamples are correlated and the bootstrap intervals are off; build sharded "
            "sketches with row_id= so every row has its own weights",
            CorrelatedReplicatesWarning,
            stacklevel=4,
        )
    assert out._classes is not None
    k = out.n_classes
    merged = MulticlassReplicates(first.n_replicates, first.seed, keyed)
    merged.resize(np.empty(0, dtype=np.int64), k, out.mode == "scores")
    columns: list[list[Replicates]] = [[] for _ in range(k)]
    maps: list[list[Any]] = [[] for _ in range(k)]
    for s in full:
        if s.replicates is None:  # no rows (checked above)
            continue
        rep = s.replicates
        assert s._classes is not None
        at = np.arange(k) if np.array_equal(out._classes, s._classes) else np.searchsorted(out._classes, s._classes)
        merged.confusion[:, at[:, None], at[None, :]] += rep.confusion
        key_map = None if s.grid == out.grid else coarsening_map(s.grid, out.grid)
        for i, col in enumerate(rep.ovr):
            columns[int(at[i])].append(col)
            maps[int(at[i])].append(key_map)
    if out.mode == "scores":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CorrelatedReplicatesWarning)  # warned above, once
            merged.ovr = [Replicates.merged(cols, maps[j]) if cols else Replicates(first.n_replicates, first.seed, keyed)
                          for j, cols in enumerate(columns)]
        for col in merged.ovr:
            col.keyed = keyed
    return merged
