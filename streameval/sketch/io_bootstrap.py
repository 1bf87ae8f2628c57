"""The bootstrap-replicate section of a version-2 binary sketch file (``docs/sketch-format.md`` §10).

Header field ``bootstrap``: ``{"replicates": R, "seed": S, "keyed": "row_id" | "position" | null,
"n_bins": kb}``. Payload, after the sketch's own bins (inside the same zlib stream when
compressed): ``kb`` uint32 key deltas, then ``kb * 2 * R`` float64 weights in C order of
``weights[bin, class, replicate]``. Every replicate bin is one of the sketch's occupied bins, and a
replicate cell has weight only where the sketch's cell has rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..grid import Grid
from ..kernels.binary import W
from .bootstrap import KEYED, MAX_REPLICATES, Replicates
from .io_checks import MAX_TOTAL_WEIGHT
from .io_checks import fail as _fail

__all__ = ["MAX_REPLICATE_BYTES", "BootstrapHeader", "encode_replicates", "check_bootstrap_header", "decode_replicates"]

MAX_REPLICATE_BYTES = 1 << 30
"""Largest replicate section a file may hold (1 GiB: e.g. 200 replicates of 330,000 bins)."""


@dataclass(frozen=True)
class BootstrapHeader:
    """The checked ``bootstrap`` header field."""

    replicates: int
    seed: int
    keyed: str | None
    n_bins: int

    @property
    def nbytes(self) -> int:
        """Raw size of the replicate section."""
        return self.n_bins * (4 + 16 * self.replicates)


def encode_replicates(rep: Replicates) -> tuple[dict[str, Any], bytes]:
    """The header field and the raw payload section of ``rep``."""
    keys, weights = rep.compact()
    header = {"replicates": rep.n_replicates, "seed": rep.seed, "keyed": rep.keyed, "n_bins": int(keys.shape[0])}
    deltas = np.diff(keys, prepend=np.int64(0)).astype("<u4")
    return header, deltas.tobytes() + np.ascontiguousarray(weights, dtype="<f8").tobytes()


def _int_in(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def check_bootstrap_header(raw: Any, k: int, source: str | None) -> BootstrapHeader:
    """Check the ``bootstrap`` header field of a file whose sketch has ``k`` occupied bins.

    Raises
    ------
    SketchFormatError
        Unknown or missing keys, values of the wrong type or out of range, a section larger than
        :data:`MAX_REPLICATE_BYTES`.
    """
    fields = {"replicates", "seed", "keyed", "n_bins"}
    if not isinstance(raw, dict) or set(raw) != fields:
        got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise _fail(f"bad header field bootstrap: need exactly the keys {sorted(fields)}, got {got}", source)
    if not _int_in(raw["replicates"], 2, MAX_REPLICATES):
        raise _fail(f"bad header field bootstrap.replicates={raw['replicates']!r}: need 2..{MAX_REPLICATES}", source)
    if not _int_in(raw["seed"], 0, (1 << 64) - 1):
        raise _fail(f"bad header field bootstrap.seed={raw['seed']!r}: need an integer in [0, 2**64)", source)
    if raw["keyed"] is not None and raw["keyed"] not in KEYED:
        raise _fail(f"bad header field bootstrap.keyed={raw['keyed']!r}: need one of {list(KEYED)} or null", source)
    if not _int_in(raw["n_bins"], 0, k):
        raise _fail(f"bad header field bootstrap.n_bins={raw['n_bins']!r}: need an integer in [0, {k}]", source)
    head = BootstrapHeader(raw["replicates"], raw["seed"], raw["keyed"], raw["n_bins"])
    if head.nbytes > MAX_REPLICATE_BYTES:
        raise _fail(
            f"the bootstrap replicates take {head.nbytes:,} bytes, more than the limit of {MAX_REPLICATE_BYTES:,}",
            source,
        )
    return head


def decode_replicates(
    head: BootstrapHeader, raw: bytes | memoryview, grid: Grid, keys: np.ndarray, values: np.ndarray,
    source: str | None, weighted: bool = True,
) -> Replicates:
    """Parse and check the replicate section against the sketch's own bins.

    Raises
    ------
    SketchFormatError
        Wrong length; keys not increasing or not among the sketch's occupied bins; weights that
        are negative, not finite, or present where the sketch's cell is empty; a replicate whose
        total weight exceeds the readers' limit.
    """
    kb, R = head.n_bins, head.replicates
    if len(raw) != head.nbytes:
        raise _fail(f"bootstrap section holds {len(raw)} bytes, {kb} bins of {R} replicates need {head.nbytes}", source)
    rkeys = np.cumsum(np.frombuffer(raw, dtype="<u4", count=kb).astype(np.int64))
    if kb and (np.any(np.diff(rkeys) <= 0) or rkeys[-1] >= grid.n_bins):
        raise _fail("bootstrap bin keys are not increasing inside the grid", source)
    at = np.searchsorted(keys, rkeys)
    if kb and (at[-1] >= keys.shape[0] or not np.array_equal(keys[np.minimum(at, keys.shape[0] - 1)], rkeys)):
        raise _fail("a bootstrap bin is not one of the sketch's occupied bins", source)
    weights = np.frombuffer(raw, dtype="<f8", offset=4 * kb).reshape(kb, 2, R).astype(np.float64)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise _fail("bootstrap weights must be finite and >= 0", source)
    if kb and np.any((weights > 0) & (values[at][:, :, W] <= 0)[:, :, None]):
        raise _fail("a bootstrap cell has weight where the sketch's cell is empty", source)
    if kb and not float(weights.sum(axis=(0, 1)).max()) <= 12.0 * MAX_TOTAL_WEIGHT:
        raise _fail("a bootstrap replicate's total weight exceeds the limit", source)
    if kb and head.keyed is None:
        raise _fail("bootstrap.keyed is null but the section holds bins: say row_id or position", source)
    # A row weighs at most 12 in a replicate (the Poisson weights are capped there), so a replicate
    # cell is at most 12 times the sketch's cell; unweighted rows give whole numbers.
    cell = values[at][:, :, W][:, :, None]
    if kb and np.any(weights > 12.0 * cell * (1 + 1e-9)):
        raise _fail("a bootstrap cell weighs more than 12 times the sketch's cell", source)
    if kb and not weighted and np.any(weights != np.floor(weights)):
        raise _fail("a bootstrap weight of an unweighted sketch is not a whole number", source)
    rep = Replicates(R, head.seed, head.keyed)
    rep.keys, rep.weights = rkeys, weights
    return rep
