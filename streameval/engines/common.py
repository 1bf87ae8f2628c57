"""Engine-neutral steps of a distributed evaluation.

A partition's rows become a serialized :class:`~streameval.BinarySketch` (the bytes of the
versioned sketch format, the same a local run writes), two serialized sketches merge into one,
and the final sketch gives the same :class:`~streameval.Report` a local ``evaluate`` returns.
Sketch merges are exact (counts add; per-bin minima, maxima and sums combine), so the result does
not depend on how the rows were partitioned, beyond floating-point rounding of the sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError

__all__ = ["SketchJob", "job_for", "partition_sketch", "merge_sketches", "evaluate_on", "refuse_slices", "tree_merge",
           "SCORE", "LABEL", "WEIGHT"]

# The columns an engine selects (from names or expressions) before handing rows to a partition.
SCORE, LABEL, WEIGHT = "__se_score", "__se_label", "__se_weight"


@dataclass(frozen=True)
class SketchJob:
    """What every partition needs to build its sketch; small and picklable (sent to executors).

    Attributes
    ----------
    grid : str or None
        The grid as a ``--grid`` text or spec JSON (None: the default grid).
    pos_label : scalar or None
        The positive class when labels are not 0/1 or bool.
    weighted : bool
        Whether a weight column is present.
    nan_policy : {"raise", "skip"}
        What a NaN score does, as in :func:`streameval.evaluate`.
    names : dict of str to str
        The score, label and weight as the user gave them (names or expressions), for errors.
    """

    grid: str | None = None
    pos_label: Any = None
    weighted: bool = False
    nan_policy: str = "raise"
    names: dict[str, str] = field(default_factory=dict)

    def grid_object(self) -> Any:
        from ..grid import DEFAULT_GRID, grid_from_spec, parse_grid

        if self.grid is None:
            return DEFAULT_GRID
        if self.grid.lstrip().startswith("{"):
            import json

            return grid_from_spec(json.loads(self.grid))
        return parse_grid(self.grid)


def job_for(grid: Any, pos_label: Any, score: str, label: str, weight: str | None, nan_policy: str) -> SketchJob:
    """A :class:`SketchJob` from the user's options (a Grid object is sent as its spec)."""
    import json

    from ..grid import Grid
    from ..sources.base import column_map

    if nan_policy not in ("raise", "skip"):
        raise UsageError(f"nan_policy must be 'raise' or 'skip', got {nan_policy!r}")
    text = json.dumps(grid.spec()) if isinstance(grid, Grid) else grid
    if text is not None and not isinstance(text, str):
        raise UsageError(f"grid must be a Grid, a --grid text or None, got {type(grid).__name__}")
    job = SketchJob(text, pos_label, weight is not None, nan_policy, column_map(score, label, weight))
    job.grid_object()  # a bad grid fails on the driver, before any task starts
    return job


def partition_sketch(batches: Sequence[Any], job: SketchJob) -> bytes:
    """One partition's rows (Arrow record batches or tables with the columns :data:`SCORE`,
    :data:`LABEL` and, if weighted, :data:`WEIGHT`) as serialized sketch bytes.

    An empty partition gives an empty sketch. Errors (a non-numeric score, labels that are not
    binary...) are raised as in a local run, naming the column by what the user passed.
    """
    import pyarrow as pa

    from ..evaluate import _consume
    from ..sketch.binary import BinarySketch
    from ..sources import open_source

    sketch = BinarySketch(job.grid_object(), threads=1)
    tables = [b if isinstance(b, pa.Table) else pa.Table.from_batches([b]) for b in batches]
    tables = [t for t in tables if t.num_rows]
    if tables:
        table = pa.concat_tables(tables)
        src = open_source(table, score=SCORE, label=LABEL, weight=WEIGHT if job.weighted else None)
        _consume(src.chunks(), sketch, columns=job.names, pos_label=job.pos_label, nan_policy=job.nan_policy,
                 on_rows=None, read_ahead=False)
    return sketch.to_bytes()


def merge_sketches(*parts: bytes) -> bytes:
    """Merge serialized sketches into one (the engines' reduce step)."""
    from ..sketch.binary import BinarySketch, merge

    if len(parts) == 1:
        return parts[0]
    sketches = [BinarySketch.from_bytes(p) for p in parts]
    # An empty partition's sketch has seen no label, so it carries no positive class to agree on.
    kept = [s for s in sketches if s.n_rows] or sketches[:1]
    return kept[0].to_bytes() if len(kept) == 1 else merge(kept).to_bytes()


def evaluate_on(engine: str, sketch_of: Any, frame: Any, n_partitions: int, *, score: str, label: str,
                weight: str | None, pos_label: Any, thresholds: Sequence[float] | None, positive_if: str, ci: Any,
                by: Any, time: Any, window: Any, **sketch_options: Any) -> Any:
    """An engine's ``evaluate``: refuse what it cannot do yet, build the sketch with
    ``sketch_of(frame, ...)`` on the engine, and return the :class:`~streameval.Report` a local
    ``evaluate`` builds from it."""
    from ..evaluate import _ci_options
    from ..report import Report

    refuse_slices(engine, by, time, window)
    sketch = sketch_of(frame, score=score, label=label, weight=weight, pos_label=pos_label, **sketch_options)
    provenance = {"source": f"{engine} DataFrame ({n_partitions} partitions)", "source_kind": engine.lower(),
                  "engine": engine.lower(), "score": score, "label": label, "weight": weight,
                  "pos_label": None if pos_label is None else str(pos_label), "rows_read": int(sketch.n_rows)}
    return Report.from_sketch(sketch, thresholds=thresholds, provenance=provenance, positive_if=positive_if,
                              ci=_ci_options(ci))


def refuse_slices(engine: str, by: Any, time: Any, window: Any) -> None:
    """Slices and windows on an engine are not supported yet: say so before any task starts."""
    if by or time is not None or window is not None:
        raise UsageError(
            f"by/time/window on {engine} are not supported yet: evaluate slices locally (streameval.evaluate "
            "with by=..., or `streameval monitor ingest`), or filter the DataFrame per slice"
        )


def tree_merge(items: list[Any], merge: Any, fan_in: int = 8) -> Any:
    """Reduce ``items`` with ``merge(*group)`` in a tree: each level merges groups of up to
    ``fan_in``, so no step holds more than ``fan_in`` sketches and the depth is
    ``ceil(log_fan_in(len(items)))``. ``merge`` may build lazy tasks (Dask delayed) or merge bytes.
    """
    if not items:
        raise ValueError("nothing to merge")
    level = list(items)
    while len(level) > 1:
        level = [merge(*level[i : i + fan_in]) for i in range(0, len(level), fan_in)]
    return level[0]
