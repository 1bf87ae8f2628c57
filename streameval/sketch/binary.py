"""BinarySketch: per-class score histograms on a grid, and every binary metric derived from them.

The sketch owns its state (bins and exact running counters) and the rules for changing it:
``update`` bins a chunk, ``merge`` adds two sketches on the same grid, ``to_bytes``/``from_bytes``
round-trip it. The metric methods are thin: each builds (once per state) the bin table and calls a
pure function of :mod:`streameval.metrics`.

State lives in one of two forms. While rows are being added it is *dense* (one 64-byte cell per
grid bin, so the kernel indexes it directly); as soon as it is read, merged or saved it becomes
*compact* (only occupied bins, sorted), which is what metrics, merging and files use and what keeps
thousands of sketches cheap.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import IncompatibleGridError, InputError, InputTypeError, SketchFormatError
from ..grid import DEFAULT_GRID, Grid, coarsening_map
from ..inputs import LabelEncoder, as_1d_array, clean_scores, clean_weights
from ..inputs import plain_value as _plain
from ..kernels import binary as kernels
from ..metrics.table import BinTable
from . import io, provenance
from .binary_merge import FLOAT_COUNTERS as _FLOAT_COUNTERS
from .binary_merge import INT_COUNTERS as _INT_COUNTERS
from .binary_merge import MIXED_REPLICATES as _MIXED_REPLICATES
from .binary_merge import add_weight_sq as _add_weight_sq
from .binary_merge import merge
from .binary_merge import merge_labels as _merge_labels
from .binary_merge import merged_weight_sq as _merged_weight_sq
from .binary_merge import set_weight_sq as _set_weight_sq
from .binary_merge import weight_sq_parts as _weight_sq_parts
from .binary_metrics import BinaryMetrics
from .bootstrap import Replicates

if TYPE_CHECKING:
    from .multiclass import MulticlassSketch

__all__ = ["BinarySketch", "merge", "load"]

NAN_POLICIES = ("raise", "skip")


def _version() -> str:
    from .. import __version__

    return __version__


class BinarySketch(BinaryMetrics):
    """Mergeable per-class histograms of a binary classifier's scores.

    Parameters
    ----------
    grid : Grid, optional
        How scores are binned. Default :data:`streameval.DEFAULT_GRID`,
        ``ProbabilityGrid(mantissa_bits=12, min_exponent=-30)``: relative precision 2**-12 near 0
        and near 1, for probabilities (scores outside [0, 1] are still counted, in end bins). For
        integer scores use a :class:`LinearGrid` with one bin per value; for logits or margins a
        :class:`FloatGrid`.
    pos_label : scalar, optional
        The label value of the positive class, when labels are not bool, 0/1 or -1/1.
    threads : int, optional
        Threads used to bin one large chunk (at least ``MIN_ROWS_PER_THREAD`` rows per thread).
        Default: the number of CPUs. Each extra thread keeps its own dense state while rows are
        added (the grid's size x 64 bytes), merged into one when the sketch is read.
    bootstrap : int, optional
        Keep this many Poisson-bootstrap replicates (2 to 10,000; e.g. 200) for
        ``ci(..., method="bootstrap")`` on any metric (Chamandy et al. 2012). Each row's weight in
        each replicate is a hash of ``(seed, row_id, replicate)``: pass ``row_id=`` to
        :meth:`update` so that shards and reruns give the same replicates and merges stay exact
        (see :mod:`streameval.sketch.bootstrap`). Costs 16 x ``bootstrap`` bytes per occupied bin.
    seed : int, default 0
        Seed of the bootstrap weights.

    Examples
    --------
    >>> import numpy as np, streameval
    >>> s = streameval.BinarySketch().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> float(s.roc_auc())
    0.75
    >>> s.roc_auc().exact
    True
    """

    def __init__(
        self,
        grid: Grid | None = None,
        *,
        pos_label: Any = None,
        threads: int | None = None,
        bootstrap: int | None = None,
        seed: int = 0,
    ) -> None:
        pos_label = _plain(pos_label)
        grid = DEFAULT_GRID if grid is None else grid
        if not isinstance(grid, Grid):
            raise InputTypeError(f"grid must be a streameval Grid, got {type(grid).__name__}")
        cap = io.max_grid_bins()
        if grid.n_bins > cap:
            from ..errors import UsageError

            raise UsageError(
                f"grid {grid.describe()} has {grid.n_bins:,} bins, more than the limit of {cap:,} (a dense "
                f"state would take {grid.n_bins * 64 / 2**20:,.0f} MiB per thread); use fewer mantissa bits or "
                f"bins, or raise the limit with the environment variable {io.MAX_GRID_BINS_ENV}"
            )
        self.grid: Grid = grid
        self._labels = LabelEncoder(pos_label=pos_label)
        self._dense: np.ndarray | None = None
        self._aux: list[np.ndarray] = []  # extra dense states of the other binning threads
        self.threads = threads
        self._keys = np.empty(0, dtype=np.int64)
        self._values = kernels.empty_values(0)
        self._table: BinTable | None = None
        # (values array, (negative weight, positive weight)) from a decoded file: valid while
        # self._values is that array (every change of the bins replaces the array)
        self._totals: tuple[np.ndarray, tuple[float, float]] | None = None
        self.counters: dict[str, Any] = {name: 0 for name in _INT_COUNTERS}
        self.counters.update({name: 0.0 for name in _FLOAT_COUNTERS})
        self.counters["weighted"] = False
        self._created_by: str | None = None  # kept from a loaded file until the sketch changes
        self.inputs: list[dict[str, Any]] = []  # provenance: see streameval.sketch.provenance
        self.inputs_dropped = 0
        self.replicates: Replicates | None = None if bootstrap is None else Replicates(bootstrap, seed)

    # -- state -------------------------------------------------------------------------------
    def _densify(self) -> np.ndarray:
        if self._dense is None:
            dense = kernels.empty_state(self.grid.n_bins)
            if self._keys.size:
                kernels.merge_into(dense, self._keys, self._values)
            self._dense = dense
            self._keys = np.empty(0, dtype=np.int64)
            self._values = kernels.empty_values(0)
        self._table = None
        self._created_by = None
        return self._dense

    def _compact(self) -> tuple[npt.NDArray[np.int64], np.ndarray]:
        if self._dense is not None:
            for aux in self._aux:
                kernels.merge_dense(self._dense, aux)
            self._aux = []
            self._keys, self._values = kernels.compact(self._dense)
            self._dense = None
        return self._keys, self._values

    def table(self) -> BinTable:
        """The occupied bins in descending score order with running counts (see :class:`BinTable`)."""
        if self._table is None:
            keys, values = self._compact()
            self._table = BinTable.from_compact(keys, values)
        return self._table

    @property
    def n_rows(self) -> int:
        """Rows passed to :meth:`update` (including skipped NaN rows and zero-weight rows)."""
        return int(self.counters["n_rows"])

    @property
    def n_occupied_bins(self) -> int:
        """Number of non-empty bins."""
        return int(self._compact()[0].shape[0])

    @property
    def pos_label(self) -> Any:
        """The positive label, if one was given."""
        return self._labels.pos_label

    @property
    def positive_weight(self) -> float:
        """Total weight (row count when unweighted) of positive rows binned."""
        return self.table().P

    @property
    def negative_weight(self) -> float:
        """Total weight (row count when unweighted) of negative rows binned."""
        return self.table().N

    # -- update ------------------------------------------------------------------------------
    def update(
        self,
        y_true: Any,
        y_score: Any,
        sample_weight: Any = None,
        *,
        pos_label: Any = None,
        nan_policy: str = "raise",
        row_id: Any = None,
    ) -> "BinarySketch":
        """Add a chunk of rows.

        Parameters
        ----------
        y_true : array-like of shape (n,)
            Labels: bool, 0/1 or -1/1 (positive = True/1), or any two values with ``pos_label``.
            NumPy arrays, Arrow arrays, Polars/pandas Series and sequences are accepted.
        y_score : array-like of shape (n,)
            Scores, higher meaning more positive; any real values (float32 and float64 are read
            without a copy).
        sample_weight : array-like of shape (n,), optional
            Non-negative finite weights. Zero-weight rows are counted but not binned.
        pos_label : scalar, optional
            The positive class's label value; must agree with the sketch's if both are set.
        nan_policy : {"raise", "skip"}, default "raise"
            What to do with NaN (or null) scores: raise, or skip the rows and count them in
            ``counters["n_nan"]``.
        row_id : array-like of shape (n,), optional
            Row identifiers (integers or strings, no nulls) that key the bootstrap replicates'
            weights; only with ``bootstrap=``. Without it rows are keyed by stream position.

        Returns
        -------
        BinarySketch
            ``self``, so that calls chain.

        Raises
        ------
        InputError
            Mismatched lengths, NaN/null scores (with ``nan_policy="raise"``), labels that are
            null or not binary, negative/NaN/infinite weights. The message gives the count and the
            first offending row, counted from the start of the stream. The sketch is unchanged.
        InputTypeError
            Inputs that are not 1-D or not numeric.
        """
        if nan_policy not in NAN_POLICIES:
            raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
        pos_label = _plain(pos_label)
        # Validate the whole chunk on a copy of the label state first: a rejected chunk leaves
        # the sketch exactly as it was.
        encoder = LabelEncoder(self._labels.pos_label, self._labels.neg_label)
        if pos_label is not None:
            if encoder.pos_label is None and self.counters["n_rows"] == 0:
                encoder.pos_label = pos_label
            elif encoder.pos_label != pos_label:
                raise InputError(f"pos_label={pos_label!r} differs from this sketch's {encoder.pos_label!r}")
        offset = int(self.counters["n_rows"])
        y = as_1d_array(y_true, "y_true")
        s = as_1d_array(y_score, "y_score")
        if y.shape[0] != s.shape[0]:
            raise InputError(f"inconsistent numbers of samples: y_true has {y.shape[0]} rows but y_score has {s.shape[0]}")
        scores, _ = clean_scores(s, offset, nan_policy)
        labels = encoder.encode(y, offset)
        weighted = sample_weight is not None
        if weighted:
            skipped = np.isnan(scores) if nan_policy == "skip" else None
            weights = clean_weights(as_1d_array(sample_weight, "sample_weight"), s.shape[0], offset, skipped)
            n_zero = int(np.count_nonzero(weights == 0))
            with np.errstate(over="ignore", under="ignore"):
                w2 = np.bincount(labels, weights=np.where(np.isnan(scores), 0.0, weights) ** 2, minlength=2)
            positive = weights[weights > 0]
            if positive.size and (positive.min() < 1e-150 or positive.max() > 1e150):
                w2 = np.array([np.inf, np.inf])  # squares under- or overflow: Kish unknown from here on
        else:
            weights = np.empty(0, dtype=np.float64)
            n_zero = 0
        keys = None
        if self.replicates is not None:
            keys = self.replicates.row_keys(row_id, int(s.shape[0]), offset)
        elif row_id is not None:
            raise InputError("row_id keys the bootstrap replicates: build the sketch with bootstrap=R to use it")
        self._labels = encoder
        if weighted and not self.counters["weighted"]:  # rows so far had weight 1: sum w**2 = count
            t = self.table()
            self.counters.update(weight_sq_neg=float(t.N), weight_sq_pos=float(t.P))
        self._add(scores, labels, weights, weighted)
        if self.replicates is not None and keys is not None:
            self.replicates.add(self.grid, scores, labels, weights, weighted, keys, row_id is not None,
                                threads=self.threads or cpu_count())
        c = self.counters
        c["n_rows"] += int(s.shape[0])
        c["n_zero_weight"] += n_zero
        c["weighted"] = bool(c["weighted"] or weighted)
        if "weight_sq_pos" in c:  # an unweighted chunk of a weighted sketch: w = 1, w**2 = 1 per binned row
            if not weighted:
                w2 = np.bincount(labels[~np.isnan(scores)], minlength=2).astype(np.float64)
            _add_weight_sq(c, float(w2[0]), float(w2[1]))
        return self

    def _add(self, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, weighted: bool) -> None:
        n = scores.shape[0]
        # Small chunk into a compact sketch no larger than the chunk: sort-based, no dense state,
        # the merge costing O(chunk). A sketch with more bins than the chunk has rows goes dense
        # instead (merging into its compact bins would cost O(bins) per chunk: a 60,000-bin sketch
        # fed 15,000-row chunks took 27 ms per chunk).
        if self._dense is None and n <= SMALL_CHUNK_ROWS and self._keys.shape[0] <= n:
            self._add_small(scores, labels, weights, weighted)
            return
        params = self.grid.kernel_params()
        parts = _n_threads(n, self.threads)
        states = [self._densify()]
        while len(self._aux) < parts - 1:  # one private state per extra thread, merged when read
            self._aux.append(kernels.empty_state(self.grid.n_bins))
        states += self._aux[: parts - 1]
        cuts = np.linspace(0, n, parts + 1).astype(np.int64)

        def run(k: int) -> tuple[int, int, float, float, float]:
            a, b = int(cuts[k]), int(cuts[k + 1])
            w = weights[a:b] if weighted else weights
            return kernels.update_state(states[k], *params, scores[a:b], labels[a:b], w, weighted)  # type: ignore[no-any-return]

        results = [run(0)] if parts == 1 else list(_executor().map(run, range(parts)))
        self._count(results)

    def _add_small(self, scores: np.ndarray, labels: np.ndarray, weights: np.ndarray, weighted: bool) -> None:
        # A small chunk into a compact sketch: bin by sorting, merge into the compact bins. No
        # dense state is allocated, so a sketch that only ever sees small chunks stays small.
        nan = np.isnan(scores)
        keep = ~nan
        if weighted:
            keep &= weights > 0
        if keep.any():
            w = weights[keep] if weighted else None
            keys = self.grid.bin_index(scores[keep])
            new_keys, new_values = kernels.bin_compact(keys, labels[keep], scores[keep], w)
            self._keys, self._values = kernels.merge_compact(self._keys, self._values, new_keys, new_values)
        self._table = None
        self._created_by = None
        n_out, w_in, brier, logloss = kernels.probability_sums(scores, labels, weights, weighted)
        self._count([(int(np.count_nonzero(nan)), n_out, w_in, brier, logloss)])

    def _count(self, results: list[tuple[int, int, float, float, float]]) -> None:
        c = self.counters
        for n_nan, n_out, w_in, brier, logloss in results:
            c["n_nan"] += int(n_nan)
            c["n_outside"] += int(n_out)
            c["prob_weight"] += float(w_in)
            c["brier_sum"] += float(brier)
            c["log_loss_sum"] += float(logloss)

    def _absorb(self, other: "BinarySketch") -> None:
        """Add ``other``'s rows to this sketch by taking over its state; ``other`` is used up.

        For the parallel readers of :func:`streameval.evaluate`, which fill one sketch per
        thread: a dense state is adopted as one more private state (merged when read), not copied.
        """
        if other.grid != self.grid:
            raise IncompatibleGridError(f"cannot absorb a sketch on {other.grid.describe()} into {self.grid.describe()}")
        _merge_labels(self._labels, other._labels)
        if (self.replicates is None) != (other.replicates is None):
            raise InputError(_MIXED_REPLICATES)
        sq = _merged_weight_sq([_weight_sq_parts(self), _weight_sq_parts(other)])  # before the states join
        dense = self._densify()
        if other._dense is not None:
            self._aux += [other._dense, *other._aux]
        elif other._keys.size:
            kernels.merge_into(dense, other._keys, other._values)
        other._dense, other._aux = None, []
        if self.replicates is not None and other.replicates is not None:
            self.replicates = Replicates.merged([self.replicates, other.replicates])
        for name in (*_INT_COUNTERS, *_FLOAT_COUNTERS):
            self.counters[name] += other.counters[name]
        self.counters["weighted"] = bool(self.counters["weighted"] or other.counters["weighted"])
        _set_weight_sq(self.counters, sq)

    # -- merge -------------------------------------------------------------------------------
    def merge(self, other: "BinarySketch", *, strict: bool = False) -> "BinarySketch":
        """A new sketch holding the rows of both; the inputs are unchanged.

        Equivalent to running ``other``'s updates on a copy of this sketch: counts and min/max are
        identical, floating-point sums (weights, score sums, log loss) agree up to rounding. If one
        grid is a power-of-two coarsening of the other, the result is on the coarser grid.

        Raises
        ------
        IncompatibleGridError
            If the grids are neither equal nor coarsenings of one another (the message names both).
        InputError
            With ``strict=True``, if both sketches hold the same input (see :func:`merge`).
        """
        return merge([self, other], strict=strict)

    def coarsen(self, grid: Grid) -> "BinarySketch":
        """This sketch re-binned on ``grid``, an exact power-of-two coarsening of its own grid.

        The result equals the sketch built from the same rows on ``grid`` (counts and min/max
        exactly). Use it to shrink a sketch or to line it up with older, coarser sketches.

        Raises
        ------
        IncompatibleGridError
            If ``grid`` is not a coarsening of this sketch's grid.
        """
        if coarsening_map(self.grid, grid) is None:
            raise IncompatibleGridError(
                f"{grid.describe()} is not a power-of-two coarsening of {self.grid.describe()}"
            )
        return merge([BinarySketch(grid), self])

    def copy(self) -> "BinarySketch":
        """An independent copy."""
        return merge([self])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinarySketch) or other.grid != self.grid:
            return False
        k1, v1 = self._compact()
        k2, v2 = other._compact()
        return bool(np.array_equal(k1, k2) and np.array_equal(v1, v2) and self.counters == other.counters
                    and self.replicates == other.replicates)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        t = self.table()
        return (
            f"BinarySketch(grid={self.grid.describe()}, rows={self.n_rows}, positive={t.P:g}, "
            f"negative={t.N:g}, occupied_bins={len(t)})"
        )

    # -- files -------------------------------------------------------------------------------
    def _parts(self) -> io.SketchParts:
        keys, values = self._compact()
        meta: dict[str, Any] = {"created_by": self._created_by or f"streameval {_version()}"}
        for name in ("pos_label", "neg_label"):
            value = getattr(self._labels, name)
            if value is not None:
                meta[name] = value if isinstance(value, (bool, int, float, str)) else repr(value)
        if self.inputs:
            meta["inputs"] = self.inputs
        if self.inputs_dropped:
            meta["inputs_dropped"] = self.inputs_dropped
        return io.SketchParts("binary", self.grid, keys, values, dict(self.counters), meta, self.replicates)

    def to_bytes(self, compress: bool | None = None, format_version: int | None = None) -> bytes:
        """Serialize in the versioned sketch format (see ``docs/sketch-format.md``).

        Parameters
        ----------
        compress : bool, optional
            zlib-compress the payload; default: for format versions 1 and 2, and for version-3
            payloads over 1 MiB (from ~15,000 occupied bins of float64
            weights and scores to ~115,000 of counts of float32 scores).
        format_version : {3, 4, 1}, optional
            Default: 3 (compact bins; 2 for a sketch with bootstrap replicates). 4 writes the
            columnar layout, whose files fold into a roll-up (:func:`streameval.merge_files`)
            ~2.3x faster and take up to ~1.4x the bytes for float32 scores. 1 writes the layout
            older streameval releases read.

        Raises
        ------
        SketchFormatError
            If a counter is not finite (it could not be read back).
        ValueError
            If ``format_version`` is not 1, 3 or 4, or the sketch has replicates and a version is given.
        """
        return io.encode(self._parts(), compress=compress, format_version=format_version)

    @classmethod
    def from_bytes(cls, data: bytes, source: str | None = None) -> "BinarySketch":
        """Read a sketch written by :meth:`to_bytes`.

        Raises
        ------
        SketchFormatError
            If ``data`` is not a valid sketch (wrong magic, future version, truncated, corrupt,
            beyond a size cap, or inconsistent); see ``docs/sketch-format.md`` §6. No other
            exception escapes for any bytes.
        InputTypeError
            If ``data`` is not bytes-like.
        UsageError
            If the environment variable ``STREAMEVAL_MAX_GRID_BINS`` is set to a non-integer.
        """
        parts = io.decode(data, source)
        if not isinstance(parts, io.SketchParts):
            raise SketchFormatError(
                f"{source + ': ' if source else ''}this is a multiclass sketch: read it with "
                "MulticlassSketch.from_bytes or streameval.load"
            )
        return cls._from_parts(parts, source)

    @classmethod
    def _from_parts(cls, parts: io.SketchParts, source: str | None) -> "BinarySketch":
        sketch = cls(parts.grid)
        sketch._labels = LabelEncoder(parts.meta.get("pos_label"), parts.meta.get("neg_label"))
        sketch._keys, sketch._values = parts.keys, parts.values
        sketch.replicates = parts.replicates
        created_by = parts.meta.get("created_by")
        sketch._created_by = created_by if isinstance(created_by, str) else None
        sketch.inputs = provenance.check_inputs(parts.meta.get("inputs", []), source)
        dropped = parts.meta.get("inputs_dropped", 0)
        if isinstance(dropped, bool) or not isinstance(dropped, int) or not 0 <= dropped < 1 << 62:
            raise SketchFormatError(f"{source + ': ' if source else ''}bad header field meta.inputs_dropped={dropped!r}")
        sketch.inputs_dropped = dropped
        # io.decode checked every counter's type and range (io_header._counters)
        c = parts.counters
        sketch.counters.update({name: c[name] for name in (*_INT_COUNTERS, *_FLOAT_COUNTERS, "weighted")})
        for name in io.WEIGHT_SQ_COUNTERS:
            if name in c:
                sketch.counters[name] = float(c[name])
        if c["n_nan"] + c["n_zero_weight"] > 2 * c["n_rows"]:
            raise SketchFormatError(f"{source + ': ' if source else ''}counters are inconsistent (more skipped rows than rows)")
        if parts.class_totals is not None:
            sketch._totals = (parts.values, parts.class_totals)
        return sketch

    def save(self, path: str | os.PathLike[str], *, format_version: int | None = None) -> None:
        """Write the sketch to ``path`` atomically and durably.

        Readers see the old file or the new one, never a mix, whatever happens during the save
        (concurrent saves, a crash, a full disk): see :func:`streameval.atomic.write_bytes_atomic`.
        An existing file's permission bits are kept.

        Parameters
        ----------
        path : str or path-like
        format_version : {3, 4, 1}, optional
            As :meth:`to_bytes`: 4 for shards that fold faster, 1 for streameval releases that
            read only versions 1 and 2.

        Raises
        ------
        OSError
            If the file cannot be written; the message names ``path``, which is then unchanged.
        SketchFormatError
            If a counter is not finite (it could not be read back).
        ValueError
            As :meth:`to_bytes`, for ``format_version``.
        """
        from ..atomic import write_bytes_atomic

        write_bytes_atomic(path, self.to_bytes(format_version=format_version))



MIN_ROWS_PER_THREAD = 1 << 19
SMALL_CHUNK_ROWS = 1 << 15  # chunks up to this size go into a compact sketch without a dense state
_EXECUTOR: ThreadPoolExecutor | None = None


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _n_threads(n_rows: int, threads: int | None) -> int:
    limit = threads if threads is not None else cpu_count()
    return max(1, min(limit, n_rows // MIN_ROWS_PER_THREAD))


def _executor() -> ThreadPoolExecutor:
    global _EXECUTOR
    if _EXECUTOR is None:
        _EXECUTOR = ThreadPoolExecutor(max_workers=max(2, cpu_count()), thread_name_prefix="streameval-bin")
    return _EXECUTOR


def load(path: str | os.PathLike[str]) -> BinarySketch | MulticlassSketch:
    """Read a sketch file written by :meth:`BinarySketch.save` or :meth:`MulticlassSketch.save`.

    The header is read and checked first: a file that is not a sketch fails after 16 bytes
    whatever its size, and a declared payload beyond the caps is refused before it is read.

    Returns
    -------
    BinarySketch or MulticlassSketch
        A :class:`~streameval.MulticlassSketch` when the file's header says ``"sketch":
        "multiclass"`` (``docs/sketch-format.md`` §9), else a :class:`BinarySketch`.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    OSError
        If it cannot be read.
    SketchFormatError
        If it is not a valid sketch file; the message names the file.
    UsageError
        If the environment variable ``STREAMEVAL_MAX_GRID_BINS`` is set to a non-integer.
    """
    path = os.fspath(path)
    parts = io.decode(io.read_sketch_file(path), path)
    if isinstance(parts, dict):  # "multiclass"
        from .multiclass import MulticlassSketch

        return MulticlassSketch._from_parts(parts, path)
    return BinarySketch._from_parts(parts, path)
