"""MulticlassSketch: mergeable histograms of a K-class classifier's scores, and every multiclass metric.

State (every metric exact on discrete scores and bounded otherwise; memory proportional to
occupied cells; layout in :mod:`streameval.sketch.multiclass_state`):

- **one-vs-rest histograms**, one per score column ``j`` on the sketch's grid, in the binary
  sketch's cell layout ``[weight, min, max, score_sum]`` x (rows of other classes, rows of class
  ``j``) per occupied bin: a stack of K binary sketches' bins. ``one_vs_rest(label)`` is a real
  :class:`~streameval.BinarySketch` on them, so per-class ROC-AUC, AP, curves, thresholds and
  calibration come from the binary code; "micro" averages from the pooled cells.
- **pairwise histograms**, one per (true class ``t``, column ``j != t``) on the *pair grid* (the
  grid itself, or an exact power-of-two coarsening of it so that K^2 histograms stay affordable:
  :func:`~streameval.sketch.multiclass_state.auto_pair_grid`). With column ``a``'s one-vs-rest positives
  they give the one-vs-one histograms ``a|b`` of Hand & Till's measure.
- ``confusion`` ``(K, K)``: weight per (true class, predicted class), the prediction being
  ``y_pred`` or the row's first argmax (``np.argmax``).
- ``ranks`` ``(K, K)``: weight per (true class, rank of its score in the row) in
  ``top_k_accuracy_score``'s order (descending score, ties by descending column): top-k accuracy
  for every k, exactly.
- counters: rows, zero-weight rows, rows per class, the log-loss and Brier running sums, score
  cells outside [0, 1], rows not summing to 1, and per column the binary sketch's probability sums.
- with ``bootstrap=R``: Poisson-bootstrap replicates of the confusion matrix and of each column's
  one-vs-rest histogram, for :meth:`ci` (:mod:`streameval.sketch.multiclass_bootstrap`).

Rows are binned into dense states or hash tables for large chunks, by sorting for small ones;
reading, merging or saving compacts the state.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import IncompatibleGridError, InputError, InputTypeError, UsageError
from ..grid import DEFAULT_GRID, Grid, coarsening_map
from ..inputs import as_1d_array
from ..kernels import binary as kernels
from ..kernels import multiclass as mk
from ..kernels.multiclass_dense import column_addresses, row_stats
from ..metrics.table import BinTable
from . import multiclass_state as ms
from .binary import SMALL_CHUNK_ROWS, BinarySketch, cpu_count
from .multiclass_bootstrap import MulticlassReplicates
from .multiclass_inputs import ScoreColumns, as_matrix, learn_classes, plain, score_columns, validate_chunk
from .multiclass_metrics import MulticlassMetrics
from .multiclass_state import COLUMN_COUNTERS as _COLUMNS
from .multiclass_state import FLOAT_COUNTERS as _FLOAT
from .multiclass_state import INT_COUNTERS as _INT
from .multiclass_state import auto_pair_grid, merge_multiclass
from .multiclass_tables import pair_table

__all__ = ["MulticlassSketch", "merge_multiclass", "auto_pair_grid", "DEFAULT_MAX_CLASSES"]

DEFAULT_MAX_CLASSES = 1024


class MulticlassSketch(MulticlassMetrics):
    """Mergeable histograms of a multiclass classifier's scores (or hard predictions).

    Parameters
    ----------
    classes : array-like, optional
        The class labels, in the order of the score columns. Default: learned from the data,
        sorted as scikit-learn's ``unique_labels`` (with scores: from the first chunk, which must
        show every class unless the labels are the integers ``0..K-1``; with ``y_pred`` only: the
        sorted union of every label seen).
    grid : Grid, optional
        Grid of the one-vs-rest histograms; default :data:`streameval.DEFAULT_GRID`.
    pair_grid : Grid, "auto" or None, default "auto"
        Grid of the pairwise histograms behind the one-vs-one metrics: ``grid`` itself or an exact
        coarsening of it; "auto" is :func:`auto_pair_grid`; None keeps no pairwise histograms
        (one-vs-one metrics then raise; memory O(K) histograms instead of O(K^2)).
    max_classes : int, default 1024
        Guard on the number of classes.
    threads : int, optional
        Threads that bin a large chunk (default: the CPUs available): its columns are shared
        among them, each column's cells filled by one thread, so the result does not depend on
        the number.
    bootstrap : int, optional
        Keep this many Poisson-bootstrap replicates (2 to 10,000) of the confusion matrix and of
        each class's one-vs-rest histogram, for :meth:`ci` and ``one_vs_rest(label).ci(...,
        method="bootstrap")``; pass ``row_id=`` to :meth:`update` so that shards and reruns give
        the same replicates (:mod:`streameval.sketch.multiclass_bootstrap`). Costs ``8 R K^2``
        bytes plus ``16 R`` bytes per occupied one-vs-rest bin.
    seed : int, default 0
        Seed of the bootstrap weights.

    Examples
    --------
    >>> import numpy as np, streameval
    >>> s = streameval.MulticlassSketch().update([0, 1, 2, 2], np.array(
    ...     [[.7, .2, .1], [.2, .5, .3], [.1, .3, .6], [.3, .4, .3]]))
    >>> s.accuracy()
    0.75
    >>> float(s.roc_auc(multi_class="ovr"))
    0.9583333333333334
    """

    def __init__(
        self,
        classes: npt.ArrayLike | None = None,
        grid: Grid | None = None,
        *,
        pair_grid: Grid | str | None = "auto",
        max_classes: int = DEFAULT_MAX_CLASSES,
        threads: int | None = None,
        bootstrap: int | None = None,
        seed: int = 0,
    ) -> None:
        grid = DEFAULT_GRID if grid is None else grid
        if not isinstance(grid, Grid):
            raise InputTypeError(f"grid must be a streameval Grid, got {type(grid).__name__}")
        if not (pair_grid is None or pair_grid == "auto" or isinstance(pair_grid, Grid)):
            raise InputTypeError(f"pair_grid must be a Grid, 'auto' or None, got {pair_grid!r}")
        if isinstance(pair_grid, Grid) and coarsening_map(grid, pair_grid) is None:
            raise IncompatibleGridError(
                f"pair_grid {pair_grid.describe()} is not {grid.describe()} or a power-of-two coarsening of it"
            )
        self.grid: Grid = grid
        self._pair_request: Grid | str | None = pair_grid
        self.pair_grid: Grid | None = None
        self.max_classes = int(max_classes)
        self._classes: np.ndarray | None = None
        self._learned = classes is None
        self.mode: str | None = None  # "scores" or "labels", fixed by the first update
        self.prediction: str | None = None  # "argmax" or "y_pred"
        self.counters: dict[str, Any] = {name: 0 for name in _INT}
        self.counters.update({name: 0.0 for name in _FLOAT})
        self.counters["weighted"] = False
        self.threads = threads
        self._tables: ms.Shards | None = None
        self._cache: dict[Any, Any] = {}
        self.replicates: MulticlassReplicates | None = None if bootstrap is None else MulticlassReplicates(bootstrap, seed)
        if classes is not None:
            self._set_classes(learn_classes(None, classes, None, self.max_classes, given=True))

    # -- classes and state -------------------------------------------------------------------
    def _set_classes(self, classes: np.ndarray) -> None:
        k = classes.shape[0]
        old = self._classes
        self._classes = classes
        if old is None:
            self.confusion = np.zeros((k, k))
            self.ranks = np.zeros((k, k))
            for name in _COLUMNS:
                self.counters[name] = np.zeros(k)
            self._ovr_keys = np.empty(0, dtype=np.int64)
            self._ovr_values = kernels.empty_values(0)
            self._pair_keys = np.empty(0, dtype=np.int64)
            self._pair_values = mk.empty_cells(0)
            req = self._pair_request
            self.pair_grid = auto_pair_grid(self.grid, k) if req == "auto" else req if isinstance(req, Grid) else None
            if self.replicates is not None:
                self.replicates.resize(np.empty(0, dtype=np.int64), k, False)
        elif k != old.shape[0]:  # labels mode learned new labels: re-index the counts
            at = np.searchsorted(classes, old)
            conf = np.zeros((k, k))
            conf[np.ix_(at, at)] = self.confusion
            self.confusion, self.ranks = conf, np.zeros((k, k))
            for name in _COLUMNS:
                col = np.zeros(k)
                col[at] = self.counters[name]
                self.counters[name] = col
            if self.replicates is not None:
                self.replicates.resize(at, k, False)
        self._cache.clear()

    @property
    def classes(self) -> np.ndarray | None:
        """The class labels in column order (None until known)."""
        return None if self._classes is None else self._classes.copy()

    @property
    def n_classes(self) -> int:
        """Number of classes K (0 until known)."""
        return 0 if self._classes is None else int(self._classes.shape[0])

    @property
    def n_rows(self) -> int:
        """Rows passed to :meth:`update`, zero-weight rows included."""
        return int(self.counters["n_rows"])

    @property
    def _pairs_on(self) -> bool:
        return self.pair_grid is not None and self.mode == "scores"

    def _n_pair(self) -> int:
        return (self.pair_grid or self.grid).n_bins

    def _writing(self) -> ms.Shards:
        """The writing form (dense or hashed shards), rebuilt from the compact form if needed."""
        if self._tables is None:
            compact = (self._ovr_keys, self._ovr_values, self._pair_keys, self._pair_values)
            pair_grid = self.pair_grid if self._pairs_on else None
            self._tables = ms.Shards(self.grid, pair_grid, self.n_classes, compact)
            # fresh empty arrays, not [:0] views: a view would keep the compact arrays alive
            self._ovr_keys, self._ovr_values = np.empty(0, dtype=np.int64), kernels.empty_values(0)
            self._pair_keys, self._pair_values = np.empty(0, dtype=np.int64), mk.empty_cells(0)
        self._cache.clear()
        return self._tables

    def _compact(self) -> None:
        if self._tables is not None:
            self._ovr_keys, self._ovr_values, self._pair_keys, self._pair_values = self._tables.compact()
            self._tables = None

    # -- update ------------------------------------------------------------------------------
    def update(
        self, y_true: Any, y_score: Any = None, *, y_pred: Any = None, sample_weight: Any = None, row_id: Any = None
    ) -> "MulticlassSketch":
        """Add a chunk of rows.

        Parameters
        ----------
        y_true : array-like of shape (n,)
            True labels, each one of ``classes``.
        y_score : array-like of shape (n, K), optional
            Scores per class in ``classes`` order (probabilities for log loss and Brier score; any
            real values for the ranking metrics): a 2-D NumPy array, a sequence of rows, an Arrow
            fixed-size-list or list array, a Polars Array or List series, or a table with one
            column per class (pandas or Polars DataFrame, Arrow table or record batch). A table
            whose column names end with the class names (``p_cat``) must list them in class
            order, or ``UsageError`` says which order to use.
        y_pred : array-like of shape (n,), optional
            Hard predictions. Without ``y_score`` only the label metrics are available; with it,
            they replace the argmax for the label metrics.
        sample_weight : array-like of shape (n,), optional
            Finite weights >= 0; zero-weight rows are counted but not binned.
        row_id : array-like of shape (n,), optional
            Row identifiers (integers or strings, no nulls) that key the bootstrap replicates'
            weights; only with ``bootstrap=``. Without it rows are keyed by stream position.

        Returns
        -------
        MulticlassSketch
            ``self``.

        Raises
        ------
        InputError
            No ``y_score`` nor ``y_pred``; lengths that differ; a label not in ``classes``; null
            labels; NaN, null or infinite scores; rows of the wrong width; fewer than 2 or more than
            ``max_classes`` classes; negative or non-finite weights; a chunk whose kind (scores or
            predictions only) differs from the earlier ones; ``row_id`` without ``bootstrap=``,
            of the wrong length, with nulls, or given to a sketch keyed by position (or missing
            from one keyed by row id). The message names the argument, the
            first bad row (counted from the start of the stream) and its value. The sketch is
            then unchanged.
        """
        offset = self.n_rows
        y = as_1d_array(y_true, "y_true")
        n = y.shape[0]
        if y_score is None and y_pred is None:
            raise InputError("update() needs y_score (n_samples, n_classes) or y_pred (hard predictions)")
        mode = "scores" if y_score is not None else "labels"
        source = "y_pred" if y_pred is not None else "argmax"
        if self.mode is not None and (mode, source) != (self.mode, self.prediction):
            raise InputError(
                f"this sketch was fed {self._kind_text(self.mode, self.prediction)}; this chunk has "
                f"{self._kind_text(mode, source)}: every chunk must give the same inputs"
            )
        learn = self._classes is None or (self._learned and mode == "labels")
        scores, labels, preds, weights, classes = validate_chunk(
            y, y_score, y_pred, sample_weight, self._classes, learn, self.max_classes, offset
        )
        keys = None
        if self.replicates is not None:
            keys = self.replicates.row_keys(row_id, n, offset)
        elif row_id is not None:
            raise InputError("row_id keys the bootstrap replicates: build the sketch with bootstrap=R to use it")
        # Everything is valid: commit.
        if self._classes is None or classes.shape[0] != self._classes.shape[0]:
            self._set_classes(classes)
        self.mode, self.prediction = mode, source
        if self.replicates is not None and keys is not None:
            self.replicates.resize(np.arange(self.n_classes), self.n_classes, mode == "scores")
            threads = self.threads if self.threads is not None else cpu_count()
            self.replicates.add(self.grid, None if scores is None else as_matrix(scores), labels, preds, weights, keys,
                                row_id is not None, ms._run, threads)
        if scores is not None:
            self._add_scores(scores, labels, preds, weights)
        else:
            assert preds is not None
            k = self.n_classes
            cells = np.bincount(labels * k + preds, weights=weights, minlength=k * k)
            self.confusion += cells.reshape(k, k)
        c = self.counters
        c["class_rows"] += np.bincount(labels, minlength=self.n_classes)
        c["n_rows"] += n
        c["n_zero_weight"] += 0 if weights is None else int(np.count_nonzero(weights == 0))
        c["weighted"] = bool(c["weighted"] or weights is not None)
        self._cache.clear()
        return self

    @staticmethod
    def _kind_text(mode: str | None, source: str | None) -> str:
        if mode == "labels":
            return "hard predictions (y_pred) without scores"
        return "scores (y_score)" + (" with y_pred" if source == "y_pred" else "")

    def _add_scores(
        self, scores: np.ndarray | ScoreColumns, labels: np.ndarray, preds: np.ndarray | None, weights: np.ndarray | None
    ) -> None:
        n = scores.shape[0]
        weighted = weights is not None
        w = weights if weights is not None else np.empty(0)
        s_true = np.empty(n)
        unnormalized = [0]
        true_sums: list[tuple[int, float, float, float]] = []
        cols = score_columns(scores)

        def rows() -> None:  # one task, run beside the column tasks
            p = preds if preds is not None else np.empty(0, dtype=np.int64)
            tol = 1e-8 + math.sqrt(float(np.finfo(scores.dtype).eps))  # scikit-learn's isclose(sum, 1)
            addresses, like = column_addresses(cols)  # cols stays alive in this frame
            unnormalized[0] = row_stats(
                addresses, like, labels, w, weighted, p, preds is not None, self.confusion, self.ranks, s_true, tol
            )
            # The log loss of the true-class probabilities: the binary kernel's accurate sums, each
            # row a "positive" whose probability is its true class's score.
            true_sums.append(kernels.probability_sums(s_true, np.ones(n, dtype=np.uint8), w, weighted))

        cells = self._ovr_keys.shape[0] + self._pair_keys.shape[0]
        if self._tables is None and n <= SMALL_CHUNK_ROWS and cells <= 8 * n * self.n_classes:
            # Small chunk into a compact sketch: bin by sorting, no writing state (as BinarySketch).
            pair_grid = self.pair_grid if self._pairs_on else None
            new = ms.bin_small(self.grid, pair_grid, as_matrix(scores), labels, weights)
            old = (self._ovr_keys, self._ovr_values, self._pair_keys, self._pair_values)
            self._ovr_keys, self._ovr_values, self._pair_keys, self._pair_values = ms.merge_compact(old, new)
            rows()
            col = np.array([kernels.probability_sums(cols[j], (labels == j).view(np.uint8), w, weighted) for j in range(self.n_classes)])
        else:
            threads = self.threads if self.threads is not None else cpu_count()
            col = self._writing().add(ScoreColumns(cols), labels, weights, threads, rows)
        _, w_in, _, logloss = true_sums[0]
        c = self.counters
        c["log_loss_sum"] += logloss
        c["prob_weight"] += w_in
        c["n_unnormalized"] += int(unnormalized[0])
        for i, name in enumerate(("col_n_outside", "col_prob_weight", "col_brier_sum", "col_log_loss_sum")):
            c[name] += col[:, i]
        c["n_outside"] += int(col[:, 0].sum())
        c["brier_sum"] = float(np.sum(c["col_brier_sum"]))

    # -- merge -------------------------------------------------------------------------------
    def merge(self, other: "MulticlassSketch") -> "MulticlassSketch":
        """A new sketch holding the rows of both; inputs unchanged. See :func:`merge_multiclass`."""
        return merge_multiclass([self, other])

    def copy(self) -> "MulticlassSketch":
        """An independent copy."""
        return merge_multiclass([self])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MulticlassSketch):
            return False
        a, b = self._parts(), other._parts()
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"MulticlassSketch(classes={self.n_classes}, rows={self.n_rows}, mode={self.mode}, "
            f"grid={self.grid.describe()}, pair_grid={None if self.pair_grid is None else self.pair_grid.describe()})"
        )

    def _parts(self) -> dict[str, Any]:
        """Everything the sketch holds, as plain values and arrays (for files and equality)."""
        self._compact()
        counters = {key: (v.tolist() if isinstance(v, np.ndarray) else v) for key, v in self.counters.items()}
        return {
            "grid": self.grid.spec(),
            "pair_grid": self._pair_spec(),
            "classes": None if self._classes is None else plain(self._classes),
            "learned": self._learned,
            "mode": self.mode,
            "prediction": self.prediction,
            "max_classes": self.max_classes,
            "counters": counters,
            "confusion": getattr(self, "confusion", np.zeros((0, 0))),
            "ranks": getattr(self, "ranks", np.zeros((0, 0))),
            "ovr_keys": self._ovr_keys if self._classes is not None else np.empty(0, dtype=np.int64),
            "ovr_values": self._ovr_values if self._classes is not None else kernels.empty_values(0),
            "pair_keys": self._pair_keys if self._classes is not None else np.empty(0, dtype=np.int64),
            "pair_values": self._pair_values if self._classes is not None else mk.empty_cells(0),
            "replicates": self.replicates,
            **({"pair_grid_given": True} if self._pair_given() else {}),
        }

    def _pair_spec(self) -> dict[str, Any] | None:
        """The pair grid as stored: resolved once the classes are known; before that, the request
        (``"auto"`` is stored as the grid itself, which is what "auto" picks for few classes), so
        that an empty sketch read back from a file updates as the one that was saved. An explicit
        ``pair_grid`` equal to the grid, stored the same way before any class is known, is told
        apart from "auto" by the part ``pair_grid_given`` (:meth:`_pair_given`)."""
        if self._classes is None:
            req = self._pair_request
            return self.grid.spec() if req == "auto" else req.spec() if isinstance(req, Grid) else None
        return None if self.pair_grid is None else self.pair_grid.spec()

    def _pair_given(self) -> bool:
        """True for the one request that the stored pair grid alone cannot tell from "auto": an
        explicit ``pair_grid`` equal to the grid, before any class is known (the header field
        ``pair_grid_given``, docs/sketch-format.md §9.1). Once the classes are known the pair grid
        is resolved and the request no longer matters."""
        req = self._pair_request
        return self._classes is None and isinstance(req, Grid) and req == self.grid

    @classmethod
    def _from_parts(cls, parts: dict[str, Any], source: str | None = None) -> "MulticlassSketch":
        """The sketch whose :meth:`_parts` are ``parts`` (what a file reader hands back).

        Raises
        ------
        SketchFormatError
            If the parts are not those of a possible sketch (see :func:`multiclass_state.check_parts`).
        """
        v = ms.check_parts(parts, source)
        request: Grid | str | None = v["pair_grid"]
        if v["classes"] is None and request == v["grid"] and not v["pair_grid_given"]:  # see _pair_spec
            request = "auto"
        out = cls(None, v["grid"], pair_grid=request, max_classes=v["max_classes"])
        out._learned = v["learned"]
        if v["classes"] is not None:
            out._set_classes(v["classes"])
            for name in ("pair_grid", "mode", "prediction", "confusion", "ranks"):
                setattr(out, name, v[name])
            out.counters.update(v["counters"])
            out._ovr_keys, out._ovr_values, out._pair_keys, out._pair_values = v["cells"]
        out.replicates = parts.get("replicates")
        return out

    # -- files -------------------------------------------------------------------------------
    def to_bytes(self, compress: bool = True) -> bytes:
        """Serialize in the versioned sketch format, kind "multiclass" (``docs/sketch-format.md`` §9).

        Raises
        ------
        SketchFormatError
            If a counter is not finite (it could not be read back).
        """
        from .io_multiclass import encode_multiclass

        return encode_multiclass(self._parts(), compress=compress)

    @classmethod
    def from_bytes(cls, data: bytes, source: str | None = None) -> "MulticlassSketch":
        """Read a sketch written by :meth:`to_bytes`.

        Raises
        ------
        SketchFormatError
            If ``data`` is not a valid multiclass sketch (not a sketch, a binary sketch, future
            version, truncated, corrupt, beyond a size cap, or inconsistent).
        InputTypeError
            If ``data`` is not bytes-like.
        """
        from ..errors import SketchFormatError
        from . import io

        parts = io.decode(data, source)
        if not isinstance(parts, dict):
            raise SketchFormatError(
                f"{source + ': ' if source else ''}this is a binary sketch: read it with "
                "BinarySketch.from_bytes or streameval.load"
            )
        return cls._from_parts(parts, source)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the sketch to ``path`` atomically and durably (as :meth:`BinarySketch.save`).

        Raises
        ------
        OSError
            If the file cannot be written; ``path`` is then unchanged.
        SketchFormatError
            If a counter is not finite.
        """
        from ..atomic import write_bytes_atomic

        write_bytes_atomic(path, self.to_bytes())

    @property
    def nbytes(self) -> int:
        """Bytes of the compact state (histograms, confusion, ranks, per-class counters)."""
        p = self._parts()
        boot = 0 if self.replicates is None else self.replicates.nbytes
        return int(sum(v.nbytes for v in p.values() if isinstance(v, np.ndarray))) + 40 * self.n_classes + boot

    # -- binary views --------------------------------------------------------------------------
    def _index(self, label: Any) -> int:
        if self._classes is None:
            raise UsageError("this sketch has no classes yet: add rows first")
        hit: list[int] = [] if isinstance(label, np.ndarray) else np.flatnonzero(self._classes == label).tolist()
        if len(hit) != 1:
            raise InputError(f"{label!r} is not one of the classes {plain(self._classes)}")
        return int(hit[0])

    def _need_scores(self, what: str) -> None:
        if self.mode != "scores":
            raise UsageError(
                f"{what} needs scores: this sketch was fed "
                + ("no rows" if self.mode is None else "hard predictions (y_pred) only")
            )

    def _ovr(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        self._compact()
        return ms.column(self._ovr_keys, self._ovr_values, j, self.grid.n_bins)

    def one_vs_rest(self, label: Any) -> BinarySketch:
        """Class ``label`` against all others, as a :class:`BinarySketch` (score: its column).

        Every binary metric, curve, threshold tool and calibration of that sketch equals
        scikit-learn's on ``(y_true == label, y_score[:, k])``; its log loss and Brier score are
        those of that binary problem.
        """
        self._need_scores("one_vs_rest")
        j = self._index(label)
        c = self.counters
        view = ms.binary_view(
            self.grid, self._ovr(j), plain(self.classes)[j], n_rows=self.n_rows, n_zero_weight=int(c["n_zero_weight"]),
            n_outside=int(c["col_n_outside"][j]), prob_weight=float(c["col_prob_weight"][j]),
            brier_sum=float(c["col_brier_sum"][j]), log_loss_sum=float(c["col_log_loss_sum"][j]), weighted=bool(c["weighted"]),
        )
        if self.replicates is not None and self.replicates.ovr:
            view.replicates = self.replicates.ovr[j].copy()
        return view

    def _pair_cells(self, a: int, b: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """``(negatives, positives)`` of ``a|b`` on the pair grid, each ``(bins, (m, 4))``: the
        pairwise cells (true class ``b``, column ``a``) and column ``a``'s class-``a`` cells."""
        if self.pair_grid is None:
            raise UsageError("one-vs-one metrics need pairwise histograms: this sketch has pair_grid=None")
        if ("pos", a) not in self._cache:  # reused by the K - 1 pairs of class a
            self._cache[("pos", a)] = ms.pair_positives(self._ovr(a), self.grid, self.pair_grid)
        n_pair = self.pair_grid.n_bins
        base = (b * self.n_classes + a) * n_pair
        lo, hi = np.searchsorted(self._pair_keys, [base, base + n_pair])
        return (self._pair_keys[lo:hi] - base, self._pair_values[lo:hi]), self._cache[("pos", a)]

    def _pair_layout(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        return ms.binary_layout(*self._pair_cells(a, b))

    def one_vs_one(self, a: Any, b: Any) -> BinarySketch:
        """Rows of classes ``a`` and ``b`` only, ``a`` positive, scored by column ``a`` (on the pair grid).

        ``one_vs_one(a, b).roc_auc()`` is Hand & Till's ``A(a|b)``. The sketch carries bins and
        counts only: its log loss and Brier score are not kept (NaN with a warning).
        """
        self._need_scores("one_vs_one")
        i, j = self._index(a), self._index(b)
        if i == j:
            raise InputError(f"one_vs_one needs two different classes, got {a!r} twice")
        self._compact()
        rows = self.counters["class_rows"]
        assert self.pair_grid is not None
        return ms.binary_view(
            self.pair_grid, self._pair_layout(i, j), plain(self.classes)[i],
            n_rows=int(rows[i] + rows[j]), weighted=bool(self.counters["weighted"]),
        )

    def _table(self, key: Any) -> BinTable:
        if key not in self._cache:
            self._compact()
            if key == "pooled":
                self._cache[key] = BinTable.from_compact(*ms.pooled(self._ovr_keys, self._ovr_values, self.grid.n_bins))
            elif key[0] == "ovr":
                self._cache[key] = BinTable.from_compact(*self._ovr(key[1]))
            else:  # K(K-1) one-vs-one tables are built as needed, not kept
                return pair_table(*self._pair_cells(key[1], key[2]))
        table: BinTable = self._cache[key]
        return table


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return bool(a == b)


def load_multiclass(path: str | os.PathLike[str]) -> MulticlassSketch:
    """Read a file written by :meth:`MulticlassSketch.save` (header and caps checked first).

    Raises
    ------
    FileNotFoundError, OSError
        If the file cannot be read.
    SketchFormatError
        If it is not a valid multiclass sketch file; the message names the file.
    """
    from . import io

    source = os.fspath(path)
    return MulticlassSketch.from_bytes(io.read_sketch_file(source), source=source)
