"""A batch of shards folded with no Python per file: the common case of a roll-up.

:mod:`streameval.sketch.fold_files` checks each shard's header in Python (a regular expression,
the counters converted, a :class:`~streameval.sketch.fold_files.Shard` built, the counters added
to the merger): about 30 us a file, a fifth of a 10,000-shard merge. Shards of one job have
headers that differ only in their counters and ``n_bins``, so once one header's grid and meta
text is checked (:attr:`LeanFolder.template <streameval.sketch.fold_files.LeanFolder.template>`),
:func:`scan_batch` reads a whole batch's headers in one compiled call
(:func:`streameval.kernels.headscan.scan_headers`) into arrays, and the batch is folded, checked
and added to the merger as arrays (:meth:`ScannedBatch.fold`,
:meth:`Merger.add_folded_many <streameval.sketch.binary_merge.Merger.add_folded_many>`).

It takes a batch only when every one of its files would take the lean path with a header the
regular expression reads the same way; a file that fails a check after folding (its bins, or
counter checks the compiled pass cannot decide) sends the batch through the per-file checks
(:meth:`ScannedBatch.shards`), which name the problem. So results, verdicts and messages are
those of the per-file path, bit for bit.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..grid import Grid
from . import io
from .fold_files import _FLOAT_MAX, LeanFolder, Shard, Static, counters_consistent, fold_payloads
from .io_columnar import max_columnar_bytes
from .io_compact import max_compact_bytes

__all__ = ["ScannedBatch", "scan_batch"]


class ScannedBatch(NamedTuple):
    """A batch of files read into one buffer whose headers :func:`scan_batch` read, all of them
    canonical with one checked grid and meta (``static``). Arrays have one row per file."""

    static: Static
    payloads: np.ndarray
    """int64: where each file's payload starts in the buffer."""
    lengths: np.ndarray
    """int64: each payload's length."""
    n_bins: np.ndarray
    """int64: each header's ``n_bins``."""
    columnar: np.ndarray
    """bool: version 4 (else 3)."""
    ints: list[list[int]]
    """Per file: ``n_rows``, ``n_nan``, ``n_zero_weight``, ``n_outside`` (Python ints)."""
    floats: list[list[float]]
    """Per file: ``prob_weight``, ``brier_sum``, ``log_loss_sum``."""
    weighted: list[bool]

    def fold(self, buf: np.ndarray, state: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, list[bool]]:
        """Fold the payloads in ``buf`` into ``state`` in order, in one compiled call
        (:func:`~streameval.sketch.fold_files.fold_payloads`), and decide the counter checks where
        they surely pass (:func:`~streameval.sketch.fold_files.counters_consistent`).

        Returns
        -------
        done : int
            The files folded and checked, in order (file ``done``, if any, failed a check).
        sums, counts : ndarray, shapes (n, 8) and (n, 4)
        sure : list of bool
            Which files pass every counter check (meaningful below ``done``).
        """
        n = len(self.ints)
        done, sums, counts = fold_payloads(buf, self.payloads, self.lengths, self.n_bins, self.columnar,
                                           self.static.grid, state)
        ints = np.array(self.ints, dtype=np.float64).reshape(n, 4)
        floats = np.empty((n, 4), dtype=np.float64)
        floats[:, :3] = self.floats
        floats[:, 3] = self.weighted
        return done, sums, counts, counters_consistent(ints, floats, sums, counts).tolist()

    def counters(self, t: int) -> dict[str, Any]:
        """File ``t``'s counters, as ``io_header._counters`` gives them (the same keys in the same
        order, the same values)."""
        (n_rows, n_nan, n_zero, n_outside), (pw, brier, log_loss) = self.ints[t], self.floats[t]
        return {"n_rows": n_rows, "n_nan": n_nan, "n_zero_weight": n_zero, "n_outside": n_outside,
                "prob_weight": pw, "brier_sum": brier, "log_loss_sum": log_loss, "weighted": self.weighted[t]}

    def shards(self, sources: list[str], view: memoryview) -> list[Shard]:
        """The batch's files as :meth:`LeanFolder.prepare <streameval.sketch.fold_files.LeanFolder.prepare>`
        gives them (``view``: the buffer's bytes), for the per-file checks."""
        out = []
        for t, source in enumerate(sources):
            at, length = int(self.payloads[t]), int(self.lengths[t])
            out.append(Shard(source, self.static, self.counters(t), view[at:at + length], int(self.n_bins[t]),
                             bool(self.columnar[t]), False, at))
        return out

    def heads(self) -> list[Any]:
        """What ``merge_files`` keeps of each file besides its bins (its ``_head``)."""
        s = self.static
        return [(s.grid, s.labels, [dict(e) for e in s.inputs], s.dropped, row[0], None) for row in self.ints]


def scan_batch(buf: np.ndarray, rows: list[list[int]], folder: LeanFolder, grid: Grid) -> ScannedBatch | None:
    """The batch of files ``rows`` (as :meth:`BatchReader.read_rows
    <streameval.sketch.fold_files.BatchReader.read_rows>` gives them) as arrays, when every one of
    them was read whole with its frame checked, uncompressed, and has a canonical header holding
    ``folder``'s template and a ``weight_sq``-free, valid set of counters on ``grid``; else None
    (the files then go one by one).
    """
    from ..kernels.headscan import LIT_ENDS, LITERALS, gather_tokens, scan_headers

    template = folder.template
    n = len(rows)
    if template is None or not n:
        return None
    for _, size, version, flags, _ in rows:  # (these checks in Python: ~3x faster on 32 rows)
        if size < 0 or flags != 0 or not io.COMPACT_VERSION <= version <= io.COLUMNAR_VERSION:
            return None
    static = folder.static(template[0], None)
    if static is None or not (static.grid is grid or static.grid == grid) or static.n_bins > folder._max_bins:
        return None
    where = np.array(rows, dtype=np.int64)
    start, length, head_end = where[:, 0], where[:, 1], where[:, 4]
    ints = np.empty((n, 5), dtype=np.int64)
    spans = np.empty((n, 3, 2), dtype=np.int64)
    weighted = np.empty(n, dtype=np.bool_)
    ok = np.empty(n, dtype=np.bool_)
    scan_headers(buf, start + 16, start + head_end, LITERALS, LIT_ENDS, template[1], ints, spans, weighted, ok)
    k = np.ascontiguousarray(ints[:, 4])  # (a strided view would compile fold_many once more)
    if not (ok.all() and k.max() <= static.n_bins):
        return None
    # the payload's length against what k bins can take (io_fold.check_room; uncompressed)
    plen = length - 4 - head_end - 8
    columnar = where[:, 2] == io.COLUMNAR_VERSION
    if np.any(plen > np.where(columnar, max_columnar_bytes(k), max_compact_bytes(k))):  # type: ignore[arg-type]
        return None
    text = np.empty(n * 96, dtype=np.uint8)  # canonical tokens take at most ~25 bytes
    used = gather_tokens(buf, spans, text)
    if used < 0:
        return None
    values = list(map(float, text[:used].tobytes().split()))  # as the JSON parser converts them (an integer exactly)
    if not max(values) <= _FLOAT_MAX:  # io_header's limit on the float counters (inf: 1e999)
        return None
    floats = [[values[3 * t + 2], values[3 * t], values[3 * t + 1]] for t in range(n)]  # prob_weight, brier, log loss
    counts = ints[:, [2, 0, 3, 1]].tolist()  # n_rows, n_nan, n_zero_weight, n_outside
    return ScannedBatch(static, start + head_end + 8, plen, k, columnar, counts, floats, weighted.tolist())
