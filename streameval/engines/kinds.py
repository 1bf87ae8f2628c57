"""The sliced and multiclass kinds of a distributed evaluation: per-partition build and merge.

A partition's rows arrive as Arrow batches whose columns carry fixed aliases (the engine
computed them from the user's names or expressions). They are renamed back to what the user
wrote and read by the very function a local run uses (:func:`streameval.slicing.sketch_slices`,
:func:`streameval.multiclass_eval.sketch_multiclass`), so the per-partition sketch is the one a
local run over those rows builds, and errors name the user's columns. Sketches leave as bytes
(:meth:`SketchSet.to_bytes`, :meth:`MulticlassSketch.to_bytes`) and merge exactly.

The binary kind lives in :mod:`.common`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..sources.base import LABEL as _LABEL
from ..sources.base import SCORE as _SCORE
from ..sources.base import WEIGHT as _WEIGHT
from .common import LABEL, SCORE, WEIGHT, SketchJob

__all__ = ["SliceJob", "MulticlassJob", "partition_sketchset", "merge_sketchsets", "partition_multiclass",
           "merge_multiclass_bytes", "user_table"]

_KEY = "__se_key_{}"
_TIME = "__se_time"


def user_table(batches: Sequence[Any], columns: Sequence[tuple[str, str]]) -> Any:
    """A partition's non-empty batches as one Arrow table with the user's column names, or None.

    ``columns`` pairs each alias with the user's text; texts given twice (a slice column that is
    also the label, say) were computed from the same expression, so one copy is kept.
    """
    import pyarrow as pa

    tables = [b if isinstance(b, pa.Table) else pa.Table.from_batches([b]) for b in batches]
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return None
    table = pa.concat_tables(tables).combine_chunks()  # one chunk, as in common.partition_sketch
    kept: dict[str, Any] = {}
    for alias, text in columns:
        if text not in kept:
            kept[text] = table.column(alias)
    return pa.table(kept)


@dataclass(frozen=True)
class SliceJob:
    """What a partition needs to build its :class:`~streameval.SketchSet` (picklable).

    Attributes
    ----------
    job : SketchJob
        Grid, positive label, weighting, NaN policy and the score/label/weight names.
    by : tuple of str
        Slice columns or expressions, as the user gave them.
    time, window, tz : str or None
        As for :func:`streameval.evaluate`.
    require_labels : bool
    max_groups : int
    """

    job: SketchJob
    by: tuple[str, ...] = ()
    time: str | None = None
    window: str | None = None
    tz: str | None = None
    require_labels: bool = False
    max_groups: int = 1_000_000

    @property
    def key_names(self) -> list[str]:
        from ..slicing import WINDOW_KEY

        return ([WINDOW_KEY] if self.window is not None else []) + list(self.by)

    def columns(self) -> list[tuple[str, str]]:
        """``(alias, user text)`` of every column a partition needs."""
        names = self.job.names  # keyed by the source aliases
        out = [(SCORE, names[_SCORE]), (LABEL, names[_LABEL])]
        if self.job.weighted:
            out.append((WEIGHT, names[_WEIGHT]))
        out += [(_KEY.format(i), text) for i, text in enumerate(self.by)]
        if self.time is not None:
            out.append((_TIME, self.time))
        return out


def slice_job(job: SketchJob, by: Any, time: str | None, window: str | None, tz: str | None,
              require_labels: bool, max_groups: int | None) -> SliceJob:
    """A checked :class:`SliceJob`: a bad window, a lone ``time``/``window`` or repeated slice
    columns fail on the driver, before any task starts."""
    from ..sketch.sketchset import DEFAULT_MAX_GROUPS
    from ..slicing import WINDOW_KEY
    from ..windows import parse_window

    if isinstance(by, str):
        by = [b.strip() for b in by.split(",") if b.strip()]
    by = tuple(str(b) for b in (by or ()))
    if (time is None) != (window is None):
        raise UsageError("give both time= (--time) and window= (--window), or neither")
    if window is not None:
        window = str(parse_window(window))
    names = ([WINDOW_KEY] if window is not None else []) + list(by)
    if len(set(names)) != len(names):
        raise UsageError(f"slice columns must be distinct (and not named {WINDOW_KEY!r} with a window): {names}")
    limit = DEFAULT_MAX_GROUPS if max_groups is None else max_groups
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"max_groups must be a positive integer, got {max_groups!r}")
    return SliceJob(job, by, time, window, tz, bool(require_labels), limit)


def partition_sketchset(batches: Sequence[Any], sj: SliceJob) -> bytes:
    """One partition's rows as the bytes of its :class:`~streameval.SketchSet` (empty: no groups)."""
    from ..sketch.sketchset import SketchSet
    from ..slicing import sketch_slices

    table = user_table(batches, sj.columns())
    job = sj.job
    if table is None:
        return SketchSet(sj.key_names, job.grid_object(), max_groups=sj.max_groups).to_bytes()
    ss, _ = sketch_slices(table, score=job.names[_SCORE], label=job.names[_LABEL], weight=job.names.get(_WEIGHT),
                          by=list(sj.by), time=sj.time, window=sj.window, tz=sj.tz, grid=job.grid_object(),
                          pos_label=job.pos_label, nan_policy=job.nan_policy, require_labels=sj.require_labels,
                          max_groups=sj.max_groups)
    data: bytes = ss.to_bytes()
    return data


def merge_sketchsets(*parts: bytes) -> bytes:
    """Merge serialized sketch sets into one (groups in order of first appearance along ``parts``)."""
    from ..sketch.sketchset import SketchSet

    if len(parts) == 1:
        return parts[0]
    sets = [SketchSet.from_bytes(p) for p in parts]
    # An empty partition's set has seen no label, so it carries no classes to agree on.
    kept = [s for s in sets if len(s)] or sets[:1]
    # Merge neighbours pairwise, level by level: each merge re-sorts both cell tables, so folding
    # into one running set would cost O(k^2) cell passes for k sets instead of O(k log k). The
    # neighbours keep their order, so groups stay in order of first appearance.
    while len(kept) > 1:
        kept = [kept[i].merge(kept[i + 1]) if i + 1 < len(kept) else kept[i] for i in range(0, len(kept), 2)]
    data: bytes = kept[0].to_bytes()
    return data


@dataclass(frozen=True)
class MulticlassJob:
    """What a partition needs to build its :class:`~streameval.MulticlassSketch` (picklable).

    Attributes
    ----------
    scores : tuple of str
        The score columns in class order, as the user gave them (after glob expansion).
    label : str
    weight : str or None
    classes : pyarrow.Array
        The classes, learned on the driver from the distinct labels of all partitions.
    grid : str or None
        As :attr:`SketchJob.grid`.
    """

    scores: tuple[str, ...]
    label: str
    weight: str | None
    classes: Any
    grid: str | None = None

    def columns(self) -> list[tuple[str, str]]:
        out = [(score_alias(j), text) for j, text in enumerate(self.scores)] + [(LABEL, self.label)]
        return out + ([(WEIGHT, self.weight)] if self.weight is not None else [])

    def class_array(self) -> Any:
        from ..inputs import as_1d_array

        return as_1d_array(self.classes, "classes")


def score_alias(j: int) -> str:
    """The alias of score column ``j`` of a multiclass job."""
    return SCORE if j == 0 else f"{SCORE}_{j}"


def learned_classes(labels: Any, k: int) -> Any:
    """The classes a local run learns for ``k`` score columns, from all distinct labels (an Arrow
    array without nulls): the sorted labels, or ``0..k-1`` for integer labels in that range.

    Raises
    ------
    InputError
        The labels cannot say which column is which (as a local run's first chunk).
    """
    import pyarrow as pa

    from ..inputs import as_1d_array
    from ..sketch.multiclass import DEFAULT_MAX_CLASSES
    from ..sketch.multiclass_inputs import learn_classes

    classes = learn_classes(None, as_1d_array(labels, "y_true"), None, DEFAULT_MAX_CLASSES, width=k)
    return pa.array(classes.tolist(), type=labels.type if len(classes) == len(labels) else None)


def partition_multiclass(batches: Sequence[Any], mj: MulticlassJob) -> bytes:
    """One partition's rows as the bytes of its :class:`~streameval.MulticlassSketch`."""
    from ..multiclass_eval import sketch_multiclass
    from ..sketch.multiclass import MulticlassSketch

    grid = SketchJob(mj.grid).grid_object()
    table = user_table(batches, mj.columns())
    if table is None:
        sketch = MulticlassSketch(mj.class_array(), grid, threads=1)
    else:
        sketch, _ = sketch_multiclass(table, score=list(mj.scores), label=mj.label, weight=mj.weight,
                                      classes=mj.class_array(), grid=grid, threads=1)
    data: bytes = sketch.to_bytes(compress=False)  # as in common.partition_sketch
    return data


def merge_multiclass_bytes(*parts: bytes) -> bytes:
    """Merge serialized multiclass sketches into one."""
    from ..sketch.multiclass import MulticlassSketch, merge_multiclass

    if len(parts) == 1:
        return parts[0]
    data: bytes = merge_multiclass([MulticlassSketch.from_bytes(p) for p in parts]).to_bytes(compress=False)
    return data
