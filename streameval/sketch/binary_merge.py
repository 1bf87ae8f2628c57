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
from ..inputs import LabelEncoder
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
    from .binary import BinarySketch

    it = iter(sketches)
    try:
        first = next(it)
    except StopIteration:
        raise ValueError("merge() needs at least one sketch") from None
    if not isinstance(first, BinarySketch):
        raise InputTypeError(f"can only merge BinarySketch objects, got {type(first).__name__}")
    labels = LabelEncoder(first._labels.pos_label, first._labels.neg_label)
    counters: dict[str, Any] = {name: 0 for name in INT_COUNTERS}
    counters.update({name: 0.0 for name in FLOAT_COUNTERS})
    counters["weighted"] = False
    inputs = provenance.InputsFold()
    grid = first.grid
    dense = kernels.empty_state(grid.n_bins)
    replicates: Replicates | None = None
    plain = False  # a sketch with rows and no replicates was seen
    squares: list[tuple[float, float] | None] = []
    for s in itertools.chain([first], it):  # lazily: inputs may be loaded one at a time
        if not isinstance(s, BinarySketch):
            raise InputTypeError(f"can only merge BinarySketch objects, got {type(s).__name__}")
        merge_labels(labels, s._labels)
        keys, values = s._compact()
        key_map = None
        if s.grid != grid:
            to_current = coarsening_map(s.grid, grid)
            if to_current is not None:
                keys = to_current(keys)
                key_map = to_current
            else:  # the accumulator moves to the newcomer's coarser grid, or the grids clash
                to_new = coarsening_map(grid, s.grid)
                if to_new is None:
                    raise IncompatibleGridError(
                        f"cannot merge sketches on different grids {grid.describe()} and {s.grid.describe()}: "
                        "neither is the other with bins 2**d times wider; rebuild one of them on "
                        "the other's grid"
                    )
                acc_keys, acc_values = kernels.compact(dense)
                if replicates is not None:
                    replicates = Replicates.merged([replicates], [to_new])
                grid = s.grid
                dense = kernels.empty_state(grid.n_bins)
                kernels.merge_into(dense, to_new(acc_keys), acc_values)
        fold_inputs(inputs, s.inputs, s.inputs_dropped, strict)
        if keys.size:
            kernels.merge_into(dense, keys, values)
        squares = [merged_weight_sq([*squares, weight_sq_parts(s, values)])]
        if s.replicates is not None:
            both = [s.replicates] if replicates is None else [replicates, s.replicates]
            replicates = Replicates.merged(both, [key_map] if replicates is None else [None, key_map])
        plain = plain or (s.replicates is None and s.n_rows > 0)
        if plain and replicates is not None:
            raise InputError(MIXED_REPLICATES)
        for name in (*INT_COUNTERS, *FLOAT_COUNTERS):
            counters[name] += s.counters[name]
        counters["weighted"] = bool(counters["weighted"] or s.counters["weighted"])
    out = BinarySketch(grid)
    out._labels = labels
    out.counters = counters
    out.inputs, out.inputs_dropped = inputs.entries, inputs.dropped
    out._keys, out._values = kernels.compact(dense)
    out.replicates = replicates
    set_weight_sq(out.counters, squares[0] if squares else None)
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


def merge_labels(into: LabelEncoder, other: LabelEncoder) -> None:
    """Combine label codings as ``update`` would: the same positive class, one negative value."""
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
