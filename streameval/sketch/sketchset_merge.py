"""Re-keying sketch sets: groups merged under new keys, or matched to a reference's groups.

:meth:`SketchSet.merge` and :meth:`SketchSet.rollup` are both a map from each input group's key
to an output key followed by one compiled sort-and-reduce of all cells
(:func:`streameval.kernels.grouped.sort_reduce`); :meth:`SketchSet.psi` matches each group to the
reference group of the same slice values. Split from :mod:`.sketchset`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..errors import IncompatibleGridError, InputError, UsageError
from ..inputs import LabelEncoder
from ..inputs import merge_labels as _merge_labels
from ..lazy import lazy_module
from .sketchset import SketchSet

if TYPE_CHECKING:
    from ..kernels import grouped
else:  # compiled, loaded by the first merge: psi (a report's drift column) needs no Numba
    grouped = lazy_module("streameval.kernels.grouped")

__all__ = ["remap", "psi"]

Key = tuple[Any, ...]


def remap(sets: Sequence[SketchSet], names: tuple[str, ...], key_of: Callable[[Key], Key], max_groups: int) -> SketchSet:
    """A set of the groups of ``sets`` re-keyed by ``key_of`` (groups with one new key merge).

    Raises
    ------
    IncompatibleGridError
        If the sets' grids differ.
    InputError
        If their key names or positive classes differ, or the new keys pass ``max_groups``.
    """
    first = sets[0]
    out = SketchSet(names, first.grid, max_groups=max_groups)
    out._labels = LabelEncoder(first._labels.pos_label, first._labels.neg_label)
    span = 3 * first.grid.n_bins
    groups, local, cells = [], [], []
    for s in sets:
        if s.grid != first.grid:
            raise IncompatibleGridError(f"cannot merge sketch sets on {s.grid.describe()} and {first.grid.describe()}")
        if s.key_names != first.key_names:
            raise InputError(f"cannot merge sketch sets keyed by {list(s.key_names)} and {list(first.key_names)}")
        _merge_labels(out._labels, s._labels)
        s._consolidate()
        s._expand()
        gmap = np.array([out._group(key_of(k)) for k in s._keys], dtype=np.int64)
        if gmap.size:
            np.add.at(out._ctr, gmap, s._ctr[: len(gmap)])
        g = s._code // span
        groups.append(gmap[g] if g.size else g)
        local.append(s._code % span)
        cells.append(s._cell)
        out.weighted = out.weighted or s.weighted
    out._code, out._cell = grouped.sort_reduce(np.concatenate(groups), np.concatenate(local), np.concatenate(cells),
                                               len(out._keys), span)
    return out



def rollup(ss: SketchSet, by: Sequence[str] | None, window: Callable[[Any], Any] | None) -> SketchSet:
    """:meth:`SketchSet.rollup`: the groups merged into those of the key parts ``by`` (all when
    None), the first part mapped by ``window`` when given.

    Raises
    ------
    UsageError
        A name in ``by`` that is not one of the set's keys.
    """
    names = ss.key_names if by is None else tuple(by)
    unknown = [n for n in names if n not in ss.key_names]
    if unknown:
        raise UsageError(f"cannot roll up by {unknown}: the keys are {list(ss.key_names)}")
    pos = [ss.key_names.index(n) for n in names]

    def coarser(key: Key) -> Key:
        if window is not None and key:
            key = (window(key[0]), *key[1:])
        return tuple(key[i] for i in pos)

    return remap([ss], names, coarser, ss.max_groups)

def psi(current: SketchSet, reference: SketchSet, buckets: int) -> np.ndarray:
    """:meth:`SketchSet.psi`: each group of ``current`` against the reference group of its slice values."""
    from ..metrics.segmented import score_histograms, segmented_psi

    if reference.grid != current.grid:
        raise IncompatibleGridError(f"the reference is on {reference.grid.describe()}, this set on {current.grid.describe()}")
    positions = [i for i, k in enumerate(current.key_names) if k != "window" or k in reference.key_names]
    if list(reference.key_names) != [current.key_names[i] for i in positions]:
        raise InputError(f"the reference must be keyed by {[current.key_names[i] for i in positions]}, "
                         f"not {list(reference.key_names)}")
    index = {k: i for i, k in enumerate(reference.keys())}
    reference_of = np.array([index.get(tuple(key[i] for i in positions), -1) for key in current._keys], dtype=np.int64)
    g, b, _, c = current.cell_columns()
    rg, rb, _, rc = reference.cell_columns()
    return segmented_psi(*score_histograms(g, b, np.ascontiguousarray(c[:, 0])), reference_of,
                         *score_histograms(rg, rb, np.ascontiguousarray(rc[:, 0])), len(index), buckets=buckets)
