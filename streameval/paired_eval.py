"""Compare two models scored on the same rows: DeLong's paired test in two passes over a source.

Pass 1 reads the label, both score columns (and the weight) once and builds one sketch per model;
with ``bootstrap=R`` each sketch also keeps R Poisson replicates whose weights are the *same* for
both models (same seed, same row keys), which gives the one-pass paired bootstrap of any metric.
Pass 2 reads the rows again and accumulates the cross sums DeLong's paired covariance needs
(:mod:`streameval.stats.paired`). The source must not change between the passes (checked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from .errors import InputError, InputTypeError, UsageError
from .grid import Grid
from .sketch.binary import BinarySketch
from .sources import DEFAULT_BATCH_ROWS, LABEL, SCORE, WEIGHT, open_source
from .stats.comparison import Comparison

__all__ = ["PairedComparison", "compare_paired"]

_SECOND, _ROW_ID = "score_2", "row_id"


@dataclass
class PairedComparison:
    """Two models on the same rows: their sketches, DeLong's paired test, a paired bootstrap.

    Attributes
    ----------
    first, second : BinarySketch
        The models' sketches (save or report them as any sketch).
    delong : Comparison
        ``AUC(first) - AUC(second)``: DeLong's paired test.
    bootstrap : Comparison or None
        The paired Poisson bootstrap of ``metric`` (with ``bootstrap=R``).
    names : tuple of str
        The two score columns.
    rows : int
        Rows read per pass.
    """

    first: BinarySketch
    second: BinarySketch
    delong: Comparison
    bootstrap: Comparison | None
    names: tuple[str, str]
    rows: int

    def verdict(self) -> str:
        """One line: which model is better and whether the difference is significant."""
        c = self.delong
        a, b = self.names
        if math.isnan(c.p_value.value):
            return f"{a} vs {b}: the paired test is undefined (see the warnings)"
        alpha = 1.0 - c.level
        if c.p_value.upper < alpha:
            better = a if c.estimate.value > 0 else b
            return f"{better} has the higher ROC AUC (paired DeLong p={c.p_value.upper:.3g} < {alpha:g})"
        if c.p_value.lower >= alpha:
            return f"no significant difference in ROC AUC between {a} and {b} (paired DeLong p={c.p_value.lower:.3g})"
        return f"{a} vs {b}: undecided at this grid's resolution (p in [{c.p_value.lower:.3g}, {c.p_value.upper:.3g}])"

    def __str__(self) -> str:
        lines = [self.verdict(), f"  {self.names[0]}: ROC AUC {self.first.roc_auc()}",
                 f"  {self.names[1]}: ROC AUC {self.second.roc_auc()}", f"  {self.delong}"]
        if self.bootstrap is not None:
            lines.append(f"  {self.bootstrap}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the verdict, both AUCs with bounds, the tests."""
        out: dict[str, Any] = {
            "verdict": self.verdict(), "models": list(self.names), "rows": self.rows,
            "roc_auc": [self.first.roc_auc().to_dict(), self.second.roc_auc().to_dict()],
            "delong": self.delong.to_dict(),
        }
        if self.bootstrap is not None:
            out["bootstrap"] = self.bootstrap.to_dict()
        return out


def _batches(src: Any) -> Iterator[tuple[Any, Any, Any, Any, Any, Any]]:
    for chunk in src.chunks():
        b = chunk.batch
        names = b.schema.names
        yield (chunk, b.column(names.index(LABEL)), b.column(names.index(SCORE)), b.column(names.index(_SECOND)),
               b.column(names.index(WEIGHT)) if WEIGHT in names else None,
               b.column(names.index(_ROW_ID)) if _ROW_ID in names else None)


def compare_paired(
    source: Any,
    *,
    scores: tuple[str, str] | list[str],
    label: str,
    weight: str | None = None,
    grid: Grid | str | None = None,
    pos_label: Any = None,
    where: str | None = None,
    sql: str | None = None,
    table: str | None = None,
    nan_policy: str = "raise",
    level: float = 0.95,
    bootstrap: int | None = None,
    seed: int = 0,
    row_id: str | None = None,
    metric: str | Callable[[BinarySketch], Any] = "roc_auc",
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> PairedComparison:
    """Compare two models' scores on the same rows (two passes over ``source``).

    Parameters
    ----------
    source
        Anything :func:`streameval.evaluate` reads; it is read twice, so an iterator of batches
        is refused.
    scores : pair of str
        The two models' score columns (or SQL expressions).
    label, weight, grid, pos_label, where, sql, table
        As for :func:`streameval.evaluate`. Weights are read as frequency weights by the paired
        DeLong test (its covariance has no Kish form here; the single-model intervals of the two
        sketches do use Kish's effective size).
    nan_policy : {"raise", "skip"}
        ``"skip"`` drops a row whose score is NaN in either model (both sketches skip it).
    level : float in (0, 1), default 0.95
    bootstrap : int, optional
        Also keep R Poisson replicates with the same weights for both models and return the
        paired bootstrap of ``metric`` (percentile interval of the per-replicate differences).
    seed : int, default 0
    row_id : str, optional
        Column keying the bootstrap weights (reproducible across shardings).
    metric : str or callable, default "roc_auc"
        Metric of the paired bootstrap (see :func:`streameval.stats.bootstrap.metric_function`).
    batch_rows : int

    Returns
    -------
    PairedComparison

    Raises
    ------
    UsageError
        Not exactly two score columns, or a one-shot iterator as the source.
    EmptyInputError
        No rows.
    InputError, SourceError
        As :func:`streameval.evaluate`; also when the source changed between the passes.

    References
    ----------
    .. [1] DeLong, DeLong & Clarke-Pearson (1988). Biometrics 44(3), 837-845.
    .. [2] Chamandy et al. (2012), Google: the Poisson bootstrap.
    """
    import pyarrow as pa

    from .consume import _coerce_pos_label, _locate
    from .evaluate import EmptyInputError, _grid
    from .inputs import LabelEncoder, as_1d_array
    from .stats.bootstrap import compare_bootstrap
    from .stats.paired import PairedPlacements, paired_delong

    if isinstance(scores, str):  # "p_old,p_new", as on the command line (not its characters)
        scores = [s.strip() for s in scores.split(",") if s.strip()]
    if len(scores) != 2:
        raise UsageError(f"a paired comparison takes exactly two score columns, got {len(scores)}: {list(scores)}")
    if str(scores[0]).strip() == str(scores[1]).strip():
        raise UsageError(f"a paired comparison needs two different score columns, got {scores[0]!r} twice")
    if isinstance(source, Iterator):
        raise UsageError("a paired comparison reads its source twice: pass files, a table or a query, not an iterator")
    g = _grid(grid)
    extra = {_SECOND: scores[1], **({_ROW_ID: row_id} if row_id else {})}

    def opened() -> Any:
        return open_source(source, score=scores[0], label=label, weight=weight, where=where, sql=sql, table=table,
                           batch_rows=batch_rows, extra_columns=extra)

    kw: dict[str, Any] = {"bootstrap": bootstrap, "seed": seed} if bootstrap else {}
    first, second = BinarySketch(g, **kw), BinarySketch(g, **kw)
    rows = 0
    src = opened()
    for chunk, y, s1, s2, w, rid in _batches(src):
        if rows == 0 and pos_label is not None:
            pos_label = _coerce_pos_label(pos_label, y.type)
        # errors name the source, the model's column and the row in the file, as evaluate()'s
        for col, name in ((s1, scores[0]), (s2, scores[1])):
            if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_decimal(col.type)
                    or pa.types.is_null(col.type)):
                raise InputTypeError(f"{chunk.origin}: score {name!r} must be numeric, got {col.type}")
        s1n, s2n = _float(s1), _float(s2)
        if nan_policy == "skip":  # a row skipped by one model is skipped by both
            both = np.isnan(s1n) | np.isnan(s2n)
            s1n, s2n = np.where(both, np.nan, s1n), np.where(both, np.nan, s2n)
        for sketch, values, name in ((first, s1n, scores[0]), (second, s2n, scores[1])):
            try:
                sketch.update(y, values, w, pos_label=pos_label, nan_policy=nan_policy, row_id=rid if bootstrap else None)
            except (InputError, InputTypeError) as exc:
                columns = {SCORE: str(name), LABEL: label, **({WEIGHT: weight} if weight is not None else {})}
                raise _locate(exc, chunk, rows, columns) from None
        rows += len(s1)
    if rows == 0:
        raise EmptyInputError(f"{src.description}: no rows to compare")
    acc = PairedPlacements(first, second)
    encoder = LabelEncoder(first._labels.pos_label, first._labels.neg_label)
    offset = 0
    for _, y, s1, s2, w, _ in _batches(opened()):
        labels = encoder.encode(as_1d_array(y, "y_true"), offset)
        acc.add(labels, _float(s1), _float(s2), None if w is None else _float(w))
        offset += len(s1)
    delong = paired_delong(first, second, acc, level)
    boot = compare_bootstrap(first, second, metric, level, paired=True) if bootstrap else None
    return PairedComparison(first, second, delong, boot, (str(scores[0]), str(scores[1])), rows)


def _float(col: Any) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if arr.null_count:
        arr = pc.fill_null(arr.cast(pa.float64()), float("nan"))
    return np.asarray(arr.cast(pa.float64()) if not pa.types.is_floating(arr.type) else arr, dtype=np.float64)
