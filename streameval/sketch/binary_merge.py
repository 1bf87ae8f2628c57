"""Merging binary sketches: bins, counters, label codings, provenance and bootstrap replicates.

:func:`merge` is the one place sketches combine (``BinarySketch.merge``, ``copy``, ``coarsen`` and
``streameval.merge`` call it); it folds inputs one at a time into one dense state, so a merge over
thousands of loaded files holds one input at a time beside the result.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ..errors import IncompatibleGridError, InputError, InputTypeError
from ..grid import coarsening_map
from ..inputs import LabelEncoder, merge_labels
from ..kernels import binary as kernels
from ..kernels.binary import W
from . import io, provenance
from .bootstrap import Replicates

if TYPE_CHECKING:
    from .binary import BinarySketch

__all__ = ["merge", "merge_labels", "fold_inputs"]

INT_COUNTERS = ("n_rows", "n_nan", "n_zero_weight", "n_outside")
FLOAT_COUNTERS = ("prob_weight", "brier_sum", "log_loss_sum")


def merge(sketches: Iterable["BinarySketch"], *, strict: bool = False) -> "BinarySketch":
    """Merge any number of sketches on one grid into a new sketch; the inputs are unchanged.

    Merging is associative and commutative, and an empty sketch is its identity (counts and
    min/max exactly; floating-point sums up to rounding). Sketches on different grids merge when
    one grid is an exact power-of-two coarsening of the other (see
    :func:`streameval.grid.coarsening_map`): the result is on the coarsest grid, exactly as if
    every row had been binned there.

    The result records the union of the inputs' provenance (:mod:`streameval.sketch.provenance`). When
    two sketches hold the same input file (same content id), its rows are counted twice: a
    :class:`~streameval.sketch.provenance.DuplicateInputWarning` names it, or with ``strict=True`` an
    :class:`InputError` is raised.

    Raises
    ------
    ValueError
        If no sketch is given.
    IncompatibleGridError
        If two grids are neither equal nor coarsenings of one another (the message names both).
    InputError
        With ``strict=True``, if an input would be counted twice.
    """
    it = iter(sketches)
    try:
        first = next(it)
    except StopIteration:
        raise ValueError("merge() needs at least one sketch") from None
    fold = Merger(first)
    for s in itertools.chain([first], it):  # lazily: inputs may be loaded one at a time
        fold.add(s, strict)
    return fold.result()


class Merger:
    """The running state of :func:`merge`: sketches are added one at a time, in order.

    :func:`streameval.sketch.files.merge_files` also adds files whose bins were decoded straight
    into :attr:`dense` (:func:`streameval.sketch.io.decode` with ``fold_into``), which then
    arrive without bins.

    Raises
    ------
    InputTypeError
        If ``first`` (or a sketch added) is not a :class:`BinarySketch`.
    """

    def __init__(self, first: "BinarySketch") -> None:
        from .binary import BinarySketch

        if not isinstance(first, BinarySketch):
            raise InputTypeError(f"can only merge BinarySketch objects, got {type(first).__name__}")
        self.labels = LabelEncoder(first._labels.pos_label, first._labels.neg_label)
        self.counters: dict[str, Any] = {name: 0 for name in INT_COUNTERS}
        self.counters.update({name: 0.0 for name in FLOAT_COUNTERS})
        self.counters["weighted"] = False
        self.inputs = provenance.InputsFold()
        self.grid = first.grid
        self.dense = kernels.empty_state(self.grid.n_bins)
        self.replicates: Replicates | None = None
        self.plain = False  # a sketch with rows and no replicates was seen
        self.squares: tuple[float, float] | None = None  # sum w**2 per class (None: unknown)
        self.n_added = 0

    def add(self, s: "BinarySketch", strict: bool = False, folded: tuple[float, float] | None = None) -> None:
        """Fold ``s`` in: its bins, or with ``folded`` (its class totals) none, since they are
        already in :attr:`dense` (on the same grid)."""
        from .binary import BinarySketch

        if not isinstance(s, BinarySketch):
            raise InputTypeError(f"can only merge BinarySketch objects, got {type(s).__name__}")
        merge_labels(self.labels, s._labels)
        key_map = None
        if folded is None:
            keys, values = s._compact()
            key_map = self._to_grid(s, keys)
            fold_inputs(self.inputs, s.inputs, s.inputs_dropped, strict)
            if keys.size:
                kernels.merge_into(self.dense, keys if key_map is None else key_map(keys), values)
            part = weight_sq_parts(s, values)
        else:
            fold_inputs(self.inputs, s.inputs, s.inputs_dropped, strict)
            part = weight_sq_parts(s) if s.counters["weighted"] else folded  # unit weights: w**2 = w
        self.squares = merged_weight_sq([self.squares, part]) if self.n_added else part
        self.n_added += 1
        if s.replicates is not None:
            both = [s.replicates] if self.replicates is None else [self.replicates, s.replicates]
            self.replicates = Replicates.merged(both, [key_map] if self.replicates is None else [None, key_map])
        self._add_counters(s.counters, s.replicates is None)

    def add_folded(self, labels: LabelEncoder, counters: dict[str, Any], totals: tuple[float, float]) -> None:
        """:meth:`add` of a sketch without replicates or provenance whose bins are already in
        :attr:`dense` (``folded``), given only its label coding and its counters (as
        ``io_header._counters`` returns them, with the squared weights when recorded).

        Raises
        ------
        InputError
            As :meth:`add`: label codings that clash, or rows after a sketch with replicates.
        """
        if counters["weighted"]:
            part = (counters["weight_sq_neg"], counters["weight_sq_pos"]) if "weight_sq_pos" in counters else None
        else:
            part = totals  # unit weights: w**2 = w
        self.add_folded_many(labels, [[counters[name] for name in INT_COUNTERS]],
                             [[counters[name] for name in FLOAT_COUNTERS]], [counters["weighted"]], [part])

    def add_folded_many(self, labels: LabelEncoder, ints: list[list[int]], floats: list[list[float]], weighted: list[bool],
                        squares: list[tuple[float, float] | None]) -> None:
        """:meth:`add_folded` of several files of one label coding, in order, with the same result
        bit for bit: per file its ``n_rows``, ``n_nan``, ``n_zero_weight``, ``n_outside``
        (``ints``), its ``prob_weight``, ``brier_sum``, ``log_loss_sum`` (``floats``), whether it
        is weighted, and its sums of squared weights per class (``squares``: its bins' class
        weights when unweighted, None when not recorded).

        Raises
        ------
        InputError
            As :meth:`add`, for the first file: a label coding that clashes; rows after a sketch
            with replicates.
        """
        if not ints:
            return
        merge_labels(self.labels, labels)  # (again for the next files: no change, no error)
        sq, n_added = self.squares, self.n_added
        for part in squares:
            if not n_added:
                sq = part
            elif sq is None or part is None:
                sq = None
            else:  # merged_weight_sq's additions, in its order (sum() starts from 0)
                sq = (0 + sq[0] + part[0], 0 + sq[1] + part[1])
            n_added += 1
        self.squares, self.n_added = sq, n_added
        self.plain = self.plain or any(row[0] > 0 for row in ints)
        if self.plain and self.replicates is not None:
            raise InputError(MIXED_REPLICATES)
        c = self.counters
        for col, name in enumerate(INT_COUNTERS):  # exact: Python ints
            c[name] += sum(row[col] for row in ints)
        for col, name in enumerate(FLOAT_COUNTERS):  # in file order, one addition each
            acc = c[name]
            for row in floats:
                acc += row[col]
            c[name] = acc
        c["weighted"] = bool(c["weighted"] or any(weighted))

    def _add_counters(self, counters: dict[str, Any], plain: bool) -> None:
        self.plain = self.plain or (plain and counters["n_rows"] > 0)
        if self.plain and self.replicates is not None:
            raise InputError(MIXED_REPLICATES)
        c = self.counters
        for name in (*INT_COUNTERS, *FLOAT_COUNTERS):
            c[name] += counters[name]
        c["weighted"] = bool(c["weighted"] or counters["weighted"])

    def _to_grid(self, s: "BinarySketch", keys: np.ndarray) -> Any:
        """The map of ``s``'s keys onto the running grid (None when the grids are equal); when
        ``s``'s grid is the coarser, the running state moves to it first.

        Raises
        ------
        IncompatibleGridError
            If neither grid is a power-of-two coarsening of the other.
        """
        if s.grid == self.grid:
            return None
        to_current = coarsening_map(s.grid, self.grid)
        if to_current is not None:
            return to_current
        to_new = coarsening_map(self.grid, s.grid)
        if to_new is None:
            raise IncompatibleGridError(
                f"cannot merge sketches on different grids {self.grid.describe()} and {s.grid.describe()}: "
                "neither is the other with bins 2**d times wider; rebuild one of them on "
                "the other's grid"
            )
        acc_keys, acc_values = kernels.compact(self.dense)
        if self.replicates is not None:
            self.replicates = Replicates.merged([self.replicates], [to_new])
        self.grid = s.grid
        self.dense = kernels.empty_state(self.grid.n_bins)
        kernels.merge_into(self.dense, to_new(acc_keys), acc_values)
        return None

    def result(self) -> "BinarySketch":
        """The merged sketch (the running state is handed over: add nothing afterwards)."""
        from .binary import BinarySketch

        out = BinarySketch(self.grid)
        out._labels = self.labels
        out.counters = self.counters
        out.inputs, out.inputs_dropped = self.inputs.entries, self.inputs.dropped
        out._keys, out._values = kernels.compact(self.dense)
        out.replicates = self.replicates
        set_weight_sq(out.counters, self.squares)
        return out


def fold_inputs(fold: provenance.InputsFold, more: list[dict[str, Any]], more_dropped: int, strict: bool) -> None:
    """Fold a sketch's provenance ``more`` (and ``more_dropped``) into ``fold``.

    Raises
    ------
    InputError
        With ``strict``, if an input of ``more`` is already in ``fold`` (else a
        :class:`~streameval.sketch.provenance.DuplicateInputWarning`).
    """
    dup = fold.add(more, more_dropped)
    if dup:
        names = ", ".join(str(e.get("name")) for e in dup[:3]) + (f" and {len(dup) - 3} more" if len(dup) > 3 else "")
        msg = f"the same input is merged twice and its rows would be counted twice: {names}"
        if strict:
            raise InputError(msg + "; merge each input once")
        warnings.warn(msg, provenance.DuplicateInputWarning, stacklevel=3)  # merge()'s caller


def weight_sq_parts(s: "BinarySketch", values: np.ndarray | None = None) -> tuple[float, float] | None:
    """``(sum w**2 of negatives, of positives)`` of a sketch's rows, or None when not recorded."""
    if s.counters["weighted"]:
        c = s.counters
        return (c["weight_sq_neg"], c["weight_sq_pos"]) if "weight_sq_pos" in c else None
    v = s._compact()[1] if values is None else values
    if s._totals is not None and s._totals[0] is v:  # computed when the file was decoded
        return s._totals[1]
    return float(v[:, 0, W].sum()), float(v[:, 1, W].sum())  # unit weights: the counts


def merged_weight_sq(parts: list[tuple[float, float] | None]) -> tuple[float, float] | None:
    if any(p is None for p in parts):
        return None
    known = [p for p in parts if p is not None]
    return sum(p[0] for p in known), sum(p[1] for p in known)


def set_weight_sq(counters: dict[str, Any], sq: tuple[float, float] | None) -> None:
    for name in io.WEIGHT_SQ_COUNTERS:
        counters.pop(name, None)
    if counters["weighted"] and sq is not None and math.isfinite(sq[0] + sq[1]):
        counters["weight_sq_neg"], counters["weight_sq_pos"] = sq


def add_weight_sq(counters: dict[str, Any], neg: float, pos: float) -> None:
    set_weight_sq(counters, (counters["weight_sq_neg"] + neg, counters["weight_sq_pos"] + pos))


MIXED_REPLICATES = (
    "cannot merge a sketch with bootstrap replicates and a non-empty one without: the replicates would miss "
    "rows; build every shard with the same bootstrap= and seed="
)

