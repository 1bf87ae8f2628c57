"""Grids: the monotone map from a score to a bin index.

A grid owns one thing: which bin a score lands in. It is immutable, compares by value (equal grids
are exactly the grids whose sketches merge), and round-trips through :meth:`Grid.spec`.

Every grid here is *monotone* (``s1 <= s2`` implies ``bin(s1) <= bin(s2)``) and *total* (every
non-NaN float, including ``-inf`` and ``+inf``, lands in some bin). Monotonicity is all the metrics
need: a score in a higher bin is strictly greater than a score in a lower bin, so only pairs and
thresholds inside one bin are ever in doubt, and the per-bin minimum and maximum kept by the sketch
settle most of those.

The same formula is implemented twice: vectorized in NumPy here (:meth:`Grid.bin_index`, used for
thresholds and as the reference) and scalar in :mod:`streameval.kernels.binary` (the hot loop). The two
are tested to agree bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "Grid",
    "LinearGrid",
    "ProbabilityGrid",
    "FloatGrid",
    "CutGrid",
    "DEFAULT_GRID",
    "grid_from_spec",
    "coarsening_map",
]

# Kernel grid kinds. Stored in files through the spec's "kind" name, never by number.
KIND_LINEAR = 0
KIND_PROBABILITY = 1
KIND_FLOAT = 2

_MANTISSA_BITS = 52  # float64
_NO_CUTS = np.empty(0, dtype=np.float64)
_MAX_CUTS = 256
TAIL_MAX_EXPONENT = 32  # ProbabilityGrid tails resolve magnitudes below 2**32


def _float_bits(values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.int64)


class Grid:
    """Base class of all grids.

    Subclasses are frozen dataclasses; they define ``n_bins``, :meth:`bin_index`, :meth:`spec` and
    the numeric parameters handed to the compiled kernel.
    """

    kind: ClassVar[str]

    @property
    def n_bins(self) -> int:  # pragma: no cover - overridden
        """Number of bins, end bins included: bin indices are ``0 .. n_bins - 1``."""
        raise NotImplementedError

    def bin_index(self, scores: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Bin index of each score.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Scores as float64 (float32 values are converted exactly). NaN is not allowed.

        Returns
        -------
        ndarray of int64, shape (n,)
            Indices in ``[0, n_bins)``, non-decreasing in the score.
        """
        raise NotImplementedError  # pragma: no cover

    def spec(self) -> dict[str, Any]:
        """JSON-serializable description; ``grid_from_spec(g.spec()) == g``."""
        raise NotImplementedError  # pragma: no cover

    def kernel_params(self) -> tuple[int, float, float, float, int, int, int, npt.NDArray[np.float64]]:
        """``(kind, f0, f1, f2, i0, i1, i2, cuts)``: what the compiled kernel needs."""
        raise NotImplementedError  # pragma: no cover

    def with_cuts(self, *cuts: float) -> "CutGrid":
        """This grid with extra bin edges at ``cuts``, so confusion counts there are exact.

        See :class:`CutGrid`.
        """
        return CutGrid(self, tuple(float(c) for c in cuts))

    def cli_spec(self) -> str | None:
        """The ``--grid`` text that builds exactly this grid (see :func:`parse_grid`), e.g.
        ``"probability:12"`` or ``"linear:300.0:851.0:551@0.5"``; None when the grid has
        parameters that text cannot express (set them in Python or a config file)."""
        spec = self.spec()
        base, cuts = (spec["base"], spec["cuts"]) if spec["kind"] == "cut" else (spec, [])
        kind = base["kind"]
        if kind == "linear":
            text = f"linear:{base['lo']!r}:{base['hi']!r}:{base['bins']}"
        elif kind in ("probability", "float"):
            text = f"{kind}:{base['mantissa_bits']}"
        else:  # pragma: no cover - every kind is listed above
            return None
        if cuts:
            text += "@" + ",".join(repr(float(c)) for c in cuts)
        try:
            return text if parse_grid(text) == self else None
        except ValueError:
            return None

    def describe(self) -> str:
        """Short human-readable description, used in reports and error messages: the ``--grid``
        text when there is one (:meth:`cli_spec`), else the constructor call."""
        text = self.cli_spec()
        if text is not None:
            return text
        args = ", ".join(f"{k}={v!r}" for k, v in self.spec().items() if k != "kind")
        return f"{type(self).__name__}({args})"


@dataclass(frozen=True)
class LinearGrid(Grid):
    """Equal-width bins over ``[lo, hi]`` plus two end bins.

    Bin 0 holds scores below ``lo`` and bin ``bins + 1`` scores above ``hi`` (they keep their own
    min/max, so they are still ordered and counted); bins ``1 .. bins`` split ``[lo, hi]`` evenly,
    the last one closed on the right.

    Use it for scores with a known range: probabilities when the mass is spread out, or integer
    scores such as credit scores 300..850 (``LinearGrid(300, 851, 551)`` puts every integer in a bin
    of its own, so every metric is exact).

    Parameters
    ----------
    lo, hi : float
        Range covered by the interior bins; finite, ``lo < hi``.
    bins : int
        Number of interior bins, ``1 <= bins <= 2**26``.

    Raises
    ------
    ValueError
        If the range is empty or not finite, or ``bins`` is out of bounds.
    """

    lo: float
    hi: float
    bins: int

    kind: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        lo, hi = float(self.lo), float(self.hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"LinearGrid needs finite lo < hi, got lo={self.lo!r}, hi={self.hi!r}")
        if int(self.bins) != self.bins or not 1 <= int(self.bins) <= 1 << 26:
            raise ValueError(f"LinearGrid bins must be an integer in [1, 2**26], got {self.bins!r}")
        scale = int(self.bins) / (hi - lo)
        if not (math.isfinite(hi - lo) and math.isfinite(scale) and scale > 0):
            raise ValueError(
                f"LinearGrid range [{lo!r}, {hi!r}] with {self.bins} bins is too wide or too narrow "
                "for float64 arithmetic; choose a range whose width and bins/width are finite"
            )
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "bins", int(self.bins))

    @property
    def n_bins(self) -> int:
        return self.bins + 2

    @property
    def _scale(self) -> float:
        return self.bins / (self.hi - self.lo)

    def bin_index(self, scores: npt.ArrayLike) -> npt.NDArray[np.int64]:
        s = np.asarray(scores, dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            inner = np.floor((s - self.lo) * self._scale)
            inner = np.clip(np.nan_to_num(inner, nan=0.0), 0, self.bins - 1).astype(np.int64) + 1
        return np.where(s < self.lo, 0, np.where(s > self.hi, self.bins + 1, inner)).astype(np.int64)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "lo": self.lo, "hi": self.hi, "bins": self.bins}

    def kernel_params(self) -> tuple[int, float, float, float, int, int, int, npt.NDArray[np.float64]]:
        return (KIND_LINEAR, self.lo, self._scale, self.hi, self.bins, 0, 0, _NO_CUTS)


@dataclass(frozen=True)
class ProbabilityGrid(Grid):
    """Relative-precision bins for probabilities, fine near both 0 and 1, safe for any real score.

    A score ``p`` in ``[0, 1]`` is binned by the IEEE-754 bit pattern of ``q = min(p, 1 - p)``
    (``1 - p`` is exact in floating point for ``p >= 0.5``), keeping the exponent and the top
    ``mantissa_bits`` bits of the mantissa. Each bin therefore spans a relative width of at most
    ``2**-mantissa_bits`` in ``q``: about 0.024% of the distance to the nearer end at the default 12
    bits, at 1e-6 as at 0.3 or 0.999999. This is the float bit-pattern idea of HDR histograms and
    DDSketch [1]_, mirrored at 0.5; it needs integer operations only. Values of ``q`` below
    ``2**min_exponent`` share the bin next to 0 (or next to 1).

    Scores outside ``[0, 1]`` (logits, margins, credit scores, percentages passed to the default
    grid by mistake or by design) land in two *tails* with relative precision ``2**-tail_bits``:
    below 0 by the bit pattern of ``|s|`` for ``|s|`` in ``[2**min_exponent, 2**32)``, above 1 by
    the bit pattern of ``s`` for ``s`` in ``(1, 2**32)``. Integers up to 2**tail_bits are each in a
    bin of their own, so credit scores 300..850 stay exact; ``N(0, 3)`` logits get an AUC interval
    about 1e-4 wide. Magnitudes beyond ``2**32`` share the two end bins. With ``tail_bits=None``
    (sketches written before the tails existed) each tail is one end bin; that grid is an exact
    coarsening of the tailed one, so old and new sketches still merge.

    All bins keep their own min/max, so nothing is dropped and ordering stays exact between bins.

    Parameters
    ----------
    mantissa_bits : int, default 12
        Mantissa bits kept inside ``[0, 1]``, 0..20. Each extra bit halves bin widths and doubles
        the number of bins there.
    min_exponent : int, default -30
        Smallest resolved power of two for ``q`` and for ``|s|`` of negative scores (``2**-30``
        is about 9.3e-10), -1022..-2.
    tail_bits : int or None, default 10
        Mantissa bits kept outside ``[0, 1]``, 0..20; None for single end bins (the format of
        sketches from streameval 0.1).

    Notes
    -----
    ``n_bins = (1 + 2 * (-min_exponent - 1) * 2**mantissa_bits) + (32 - min_exponent) *
    2**tail_bits + 32 * 2**tail_bits`` (333,825 for the defaults; 237,571 without tails).

    References
    ----------
    .. [1] Masson, Rim, Lee (2019). "DDSketch: A fast and fully-mergeable quantile sketch with
       relative-error guarantees". PVLDB 12(12).
    """

    mantissa_bits: int = 12
    min_exponent: int = -30
    tail_bits: int | None = 10

    kind: ClassVar[str] = "probability"

    def __post_init__(self) -> None:
        if int(self.mantissa_bits) != self.mantissa_bits or not 0 <= self.mantissa_bits <= 20:
            raise ValueError(f"mantissa_bits must be an integer in [0, 20], got {self.mantissa_bits!r}")
        if int(self.min_exponent) != self.min_exponent or not -1022 <= self.min_exponent <= -2:
            raise ValueError(f"min_exponent must be an integer in [-1022, -2], got {self.min_exponent!r}")
        if self.tail_bits is not None and (
            isinstance(self.tail_bits, bool) or int(self.tail_bits) != self.tail_bits or not 0 <= self.tail_bits <= 20
        ):
            raise ValueError(f"tail_bits must be None or an integer in [0, 20], got {self.tail_bits!r}")
        if (-self.min_exponent - 1) << self.mantissa_bits > 1 << 26:
            raise ValueError("ProbabilityGrid too fine: more than 2**27 bins")
        if self.tail_bits is not None and (TAIL_MAX_EXPONENT - self.min_exponent) << int(self.tail_bits) > 1 << 26:
            raise ValueError("ProbabilityGrid tails too fine: more than 2**26 bins below 0")
        object.__setattr__(self, "mantissa_bits", int(self.mantissa_bits))
        object.__setattr__(self, "min_exponent", int(self.min_exponent))
        if self.tail_bits is not None:
            object.__setattr__(self, "tail_bits", int(self.tail_bits))

    @property
    def _half(self) -> int:
        return (-self.min_exponent - 1) << self.mantissa_bits

    @property
    def _n_low(self) -> int:
        """Bins below 0 (the negative tail)."""
        return 1 if self.tail_bits is None else (TAIL_MAX_EXPONENT - self.min_exponent) << self.tail_bits

    @property
    def _n_high(self) -> int:
        """Bins above 1 (the upper tail)."""
        return 1 if self.tail_bits is None else TAIL_MAX_EXPONENT << self.tail_bits

    @property
    def n_bins(self) -> int:
        return self._n_low + 1 + 2 * self._half + self._n_high

    @property
    def _base(self) -> int:
        return (1023 + self.min_exponent) << self.mantissa_bits

    def bin_index(self, scores: npt.ArrayLike) -> npt.NDArray[np.int64]:
        s = np.asarray(scores, dtype=np.float64)
        low = s < 0.5
        q = np.where(low, s, 1.0 - s)
        with np.errstate(invalid="ignore"):
            k = (_float_bits(q) >> (_MANTISSA_BITS - self.mantissa_bits)) - self._base
        k = np.maximum(k, 0)
        half, n_low, n_high = self._half, self._n_low, self._n_high
        tb = self.tail_bits or 0
        idx = np.where(low, n_low + k, n_low + 2 * half - k)
        t = _float_bits(np.abs(s)) >> (_MANTISSA_BITS - tb)
        below = n_low - 1 - np.clip(t - ((1023 + self.min_exponent) << tb), 0, n_low - 1)
        above = n_low + 2 * half + 1 + np.clip(t - (1023 << tb), 0, n_high - 1)
        idx = np.where(s < 0.0, below, idx)
        out: npt.NDArray[np.int64] = np.where(s > 1.0, above, idx).astype(np.int64)
        return out

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"kind": self.kind, "mantissa_bits": self.mantissa_bits, "min_exponent": self.min_exponent}
        if self.tail_bits is not None:  # absent in files written before the tails existed
            spec["tail_bits"] = self.tail_bits
        return spec

    def kernel_params(self) -> tuple[int, float, float, float, int, int, int, npt.NDArray[np.float64]]:
        # The tails' three small integers travel in the float slots (exact in float64).
        tails = (float(self.tail_bits or 0), float(self._n_low), float(self._n_high))
        return (KIND_PROBABILITY, *tails, self.mantissa_bits, self._base, self._half, _NO_CUTS)


@dataclass(frozen=True)
class FloatGrid(Grid):
    """Relative-precision bins over the whole real line, for unbounded scores (logits, margins).

    A score ``x`` is binned by the bit pattern of ``|x|`` (exponent and top ``mantissa_bits``
    mantissa bits), mirrored for negative ``x``. Magnitudes below ``2**min_exponent`` share the two
    bins next to 0; magnitudes at or above ``2**max_exponent`` (and infinities) share the two end
    bins. Relative bin width is at most ``2**-mantissa_bits``.

    Parameters
    ----------
    mantissa_bits : int, default 10
        Mantissa bits kept, 0..20.
    min_exponent, max_exponent : int, default -20, 20
        Resolved magnitude range ``[2**min_exponent, 2**max_exponent)``.

    Notes
    -----
    ``n_bins = 2 * (max_exponent - min_exponent) * 2**mantissa_bits`` (81,920 for the defaults).
    """

    mantissa_bits: int = 10
    min_exponent: int = -20
    max_exponent: int = 20

    kind: ClassVar[str] = "float"

    def __post_init__(self) -> None:
        if int(self.mantissa_bits) != self.mantissa_bits or not 0 <= self.mantissa_bits <= 20:
            raise ValueError(f"mantissa_bits must be an integer in [0, 20], got {self.mantissa_bits!r}")
        lo, hi = self.min_exponent, self.max_exponent
        if int(lo) != lo or int(hi) != hi or not -1022 <= lo < hi <= 1023:
            raise ValueError(f"need integers -1022 <= min_exponent < max_exponent <= 1023, got {lo!r}, {hi!r}")
        if (hi - lo) << self.mantissa_bits > 1 << 26:
            raise ValueError("FloatGrid too fine: more than 2**27 bins")
        object.__setattr__(self, "mantissa_bits", int(self.mantissa_bits))
        object.__setattr__(self, "min_exponent", int(lo))
        object.__setattr__(self, "max_exponent", int(hi))

    @property
    def _half(self) -> int:
        return (self.max_exponent - self.min_exponent) << self.mantissa_bits

    @property
    def n_bins(self) -> int:
        return 2 * self._half

    @property
    def _base(self) -> int:
        return (1023 + self.min_exponent) << self.mantissa_bits

    def bin_index(self, scores: npt.ArrayLike) -> npt.NDArray[np.int64]:
        s = np.asarray(scores, dtype=np.float64)
        k = (_float_bits(np.abs(s)) >> (_MANTISSA_BITS - self.mantissa_bits)) - self._base
        k = np.clip(k, 0, self._half - 1)
        out: npt.NDArray[np.int64] = np.where(s < 0.0, self._half - 1 - k, self._half + k).astype(np.int64)
        return out

    def spec(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mantissa_bits": self.mantissa_bits,
            "min_exponent": self.min_exponent,
            "max_exponent": self.max_exponent,
        }

    def kernel_params(self) -> tuple[int, float, float, float, int, int, int, npt.NDArray[np.float64]]:
        return (KIND_FLOAT, 0.0, 0.0, 0.0, self.mantissa_bits, self._base, self._half, _NO_CUTS)


@dataclass(frozen=True)
class CutGrid(Grid):
    """A grid with extra bin edges at chosen thresholds.

    ``bin(s) = base.bin(s) + #{c in cuts : c <= s}``: every cut splits the bin it falls in, so
    every score in the bin holding ``c`` is ``>= c`` and confusion counts at ``c`` are exact
    whatever the data. Use it for the operating thresholds a monitoring job reports every day.
    Sketches merge only with sketches on the same base grid *and* the same cuts.

    Parameters
    ----------
    base : Grid
        Any grid except a CutGrid.
    cuts : tuple of float
        Finite thresholds (sorted and de-duplicated here); at most 256.

    Raises
    ------
    ValueError
        If ``cuts`` is empty, has a non-finite value or too many values, or ``base`` is a CutGrid.
    """

    base: Grid
    cuts: tuple[float, ...]

    kind: ClassVar[str] = "cut"

    def __post_init__(self) -> None:
        if not isinstance(self.base, Grid) or isinstance(self.base, CutGrid):
            raise ValueError("CutGrid needs a base grid that is not itself a CutGrid")
        cuts = tuple(sorted({float(c) for c in self.cuts}))
        if not cuts or len(cuts) > _MAX_CUTS or not all(math.isfinite(c) for c in cuts):
            raise ValueError(f"cuts must be 1 to {_MAX_CUTS} finite numbers, got {self.cuts!r}")
        object.__setattr__(self, "cuts", cuts)

    @property
    def n_bins(self) -> int:
        return self.base.n_bins + len(self.cuts)

    def bin_index(self, scores: npt.ArrayLike) -> npt.NDArray[np.int64]:
        s = np.asarray(scores, dtype=np.float64)
        extra = np.searchsorted(np.asarray(self.cuts), s, side="right")
        out: npt.NDArray[np.int64] = (self.base.bin_index(s) + extra).astype(np.int64)
        return out

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "base": self.base.spec(), "cuts": list(self.cuts)}

    def kernel_params(self) -> tuple[int, float, float, float, int, int, int, npt.NDArray[np.float64]]:
        return (*self.base.kernel_params()[:7], np.asarray(self.cuts, dtype=np.float64))

    def describe(self) -> str:
        return f"{self.base.describe()} with cuts at {', '.join(f'{c:g}' for c in self.cuts)}"


DEFAULT_GRID: Grid = ProbabilityGrid()
"""The grid used when none is given: ``ProbabilityGrid(mantissa_bits=12, min_exponent=-30)``."""

_GRID_KINDS: dict[str, type[Grid]] = {g.kind: g for g in (LinearGrid, ProbabilityGrid, FloatGrid, CutGrid)}


KeyMap = Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]]


def coarsening_map(fine: Grid, coarse: Grid) -> KeyMap | None:
    """The map from ``fine``'s bin indices to ``coarse``'s, if ``coarse`` is an exact coarsening.

    ``coarse`` is an exact power-of-two coarsening of ``fine`` when it is the same kind of grid with
    the same range and each of its bins is the union of ``2**d`` consecutive bins of ``fine``
    (``d >= 0``; ``d = 0`` is equality): a ProbabilityGrid or FloatGrid with fewer mantissa bits
    and the same exponents, or a LinearGrid over the same ``[lo, hi]`` with ``bins / 2**d`` bins.
    Every score then lands, in ``coarse``, in the image of its bin in ``fine``, so sketches of both
    merge exactly on ``coarse``. CutGrids coarsen only to themselves.

    Returns
    -------
    callable or None
        ``f(keys) -> keys`` (vectorized), or None when ``coarse`` is not a coarsening of ``fine``.
    """
    if fine == coarse:
        return lambda keys: keys
    if type(fine) is not type(coarse) or isinstance(fine, CutGrid):
        return None
    if isinstance(fine, LinearGrid) and isinstance(coarse, LinearGrid):
        ratio = _power_of_two_ratio(fine.bins, coarse.bins)
        if ratio is None or (fine.lo, fine.hi) != (coarse.lo, coarse.hi):
            return None
        d = ratio
        last_f, last_c = fine.bins + 1, coarse.bins + 1

        def linear(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
            inner = 1 + ((keys - 1) >> d)
            out: npt.NDArray[np.int64] = np.where(keys == 0, 0, np.where(keys == last_f, last_c, inner))
            return out

        return linear
    if isinstance(fine, ProbabilityGrid) and isinstance(coarse, ProbabilityGrid):
        d = fine.mantissa_bits - coarse.mantissa_bits
        if d < 0 or fine.min_exponent != coarse.min_exponent:
            return None
        if coarse.tail_bits is not None and (fine.tail_bits is None or fine.tail_bits < coarse.tail_bits):
            return None
        # Tails: the same prefix rule on |s|'s bits; a grid without tails has one end bin each side.
        dt = 0 if coarse.tail_bits is None else (fine.tail_bits or 0) - coarse.tail_bits
        hf, hc = fine._half, coarse._half
        lf, lc = fine._n_low, coarse._n_low
        top_f = lf + 2 * hf  # last interior bin (q = 1 - p at its smallest)

        def probability(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
            below = lc - 1 - np.minimum((lf - 1 - keys) >> dt, lc - 1)
            low = lc + ((keys - lf) >> d)  # q = p < 0.5
            high = lc + 2 * hc - ((top_f - keys) >> d)  # q = 1 - p
            above = lc + 2 * hc + 1 + np.minimum((keys - top_f - 1) >> dt, coarse._n_high - 1)
            out = np.where(keys <= lf + hf - 1, low, high)
            out = np.where(keys < lf, below, out)
            result: npt.NDArray[np.int64] = np.where(keys > top_f, above, out)
            return result

        return probability
    if isinstance(fine, FloatGrid) and isinstance(coarse, FloatGrid):
        d = fine.mantissa_bits - coarse.mantissa_bits
        same_range = (fine.min_exponent, fine.max_exponent) == (coarse.min_exponent, coarse.max_exponent)
        if d < 0 or not same_range:
            return None
        kf, kc = fine._half, coarse._half

        def floating(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
            out: npt.NDArray[np.int64] = np.where(
                keys >= kf, kc + ((keys - kf) >> d), kc - 1 - ((kf - 1 - keys) >> d)
            )
            return out

        return floating
    return None


def _power_of_two_ratio(fine: int, coarse: int) -> int | None:
    if coarse <= 0 or fine % coarse:
        return None
    ratio = fine // coarse
    return ratio.bit_length() - 1 if ratio & (ratio - 1) == 0 else None


def grid_from_spec(spec: dict[str, Any]) -> Grid:
    """Rebuild a grid from :meth:`Grid.spec` output.

    Raises
    ------
    ValueError
        If the kind is unknown or a parameter is missing or invalid.
    """
    if not isinstance(spec, dict) or "kind" not in spec:
        raise ValueError(f"grid spec must be a dict with a 'kind', got {spec!r}")
    kind = spec["kind"]
    cls = _GRID_KINDS.get(kind)
    if cls is None:
        raise ValueError(f"unknown grid kind {kind!r}; known kinds: {sorted(_GRID_KINDS)}")
    params = {k: v for k, v in spec.items() if k != "kind"}
    if cls is ProbabilityGrid:
        params.setdefault("tail_bits", None)  # files from before the tails: one end bin each side
    if cls is CutGrid:
        try:
            base = grid_from_spec(params.pop("base"))
            return CutGrid(base, tuple(params.pop("cuts")), **params)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"bad parameters for 'cut' grid: {spec!r} ({exc})") from None
    try:
        return cls(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for {kind!r} grid: {params!r} ({exc})") from None


def parse_grid(text: str) -> Grid:
    """Parse a grid from a short string, as used by the CLI and config files.

    Forms: ``probability``, ``probability:MANTISSA_BITS``, ``float``, ``float:MANTISSA_BITS``,
    ``linear:LO:HI:BINS`` (e.g. ``linear:300:851:551``), each optionally followed by
    ``@T1,T2,...`` to add cuts at thresholds (``probability@0.5,0.8``, see :class:`CutGrid`).

    Raises
    ------
    ValueError
        If the text is not one of these forms.
    """
    text, _, cut_text = text.partition("@")
    if cut_text:
        try:
            cuts = tuple(float(c) for c in cut_text.split(","))
        except ValueError:
            raise ValueError(f"bad cuts {cut_text!r}: expected numbers separated by commas") from None
        return parse_grid(text).with_cuts(*cuts)
    parts = text.strip().split(":")
    name, args = parts[0].lower(), parts[1:]
    try:
        if name == "probability" and len(args) <= 1:
            return ProbabilityGrid(*(int(a) for a in args))
        if name == "float" and len(args) <= 1:
            return FloatGrid(*(int(a) for a in args))
        if name == "linear" and len(args) == 3:
            return LinearGrid(float(args[0]), float(args[1]), int(args[2]))
    except ValueError as exc:
        raise ValueError(f"bad grid {text!r}: {exc}") from None
    raise ValueError(
        f"bad grid {text!r}; expected 'probability[:BITS]', 'float[:BITS]' or 'linear:LO:HI:BINS'"
    )
