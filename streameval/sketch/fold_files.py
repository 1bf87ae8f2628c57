"""The lean per-file path of :func:`streameval.sketch.files.merge_files`: a shard folded with no
sketch object in between.

A roll-up folds thousands of shards written by one job: their headers differ only in the
counters and ``n_bins``, while the grid and the labels (and the provenance, when each shard
records its input) take most of the header's parse and checks. :class:`LeanFolder` recognises a
header written in the canonical form :func:`streameval.sketch.io.encode` writes (keys sorted, no
spaces, every counter present), reads its counters and ``n_bins`` with one regular expression,
and checks the rest (grid, labels, provenance) once per distinct text, kept in a small cache.
The bins are then folded and checked by the same decoders as :func:`streameval.sketch.io.decode`
with ``fold_into``, :data:`BATCH_FILES` shards per compiled call (:func:`fold_batch`), the counter
checks by :func:`streameval.sketch.io_fold.check_folded`, and the file's labels and counters go
straight into the running :class:`~streameval.sketch.binary_merge.Merger`.

Whatever the lean path does not recognise (another layout, version or grid, whitespace, a
missing counter, a value the checks refuse) it hands back untouched, and ``merge_files`` loads
the file the general way: so every file gets the verdict and the message a load gives it. Only
valid headers are cached; a header is accepted here only when the general parse would accept it
and build the same values (the same JSON number grammar and conversions, the same field checks).
"""

from __future__ import annotations

import os
import re
import stat
import struct
import threading
from typing import Any, NamedTuple

import numpy as np

from ..errors import SketchFormatError
from ..grid import Grid
from ..inputs import LabelEncoder
from ..kernels.codec import C_CELLS, C_FRAC, C_OUTSIDE, S_B_HI, S_B_LO, S_L_HI, S_L_LO, S_T0, S_T1, S_W_IN, S_W_TOUCH
from . import io
from .io_checks import _NEAR, MAX_TOTAL_WEIGHT, REL_TOL
from .io_columnar import max_columnar_bytes
from .io_compact import BinSummary, check_state, max_compact_bytes
from .io_fold import check_folded, check_room, fold_checked
from .io_header import _DECODER, MAX_COUNT, _meta, _parse_header, _weight_sq, max_grid_bins
from .io_header import _cached_grid as _grid_of

__all__ = ["BatchReader", "LeanFolder", "taken_files", "Static", "Shard", "fold_batch", "fold_payloads", "surely_consistent", "counters_consistent", "BATCH_FILES", "BATCH_BYTES", "READ_MAX"]

# JSON numbers as the json module reads them: an integer (int) unless a fraction or an exponent
# follows (float). Counters are non-negative, so no sign; integers of at most 19 digits (the
# general parser refuses more than 24; beyond 19 the counter checks refuse them).
_INT = rb"(0|[1-9][0-9]{0,18})"
_NUM = rb"((?:0|[1-9][0-9]{0,18})(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
_HEADER = re.compile(
    rb'\{"counters":\{"brier_sum":' + _NUM + rb',"log_loss_sum":' + _NUM + rb',"n_nan":' + _INT
    + rb',"n_outside":' + _INT + rb',"n_rows":' + _INT + rb',"n_zero_weight":' + _INT + rb',"prob_weight":' + _NUM
    + rb',"weighted":(true|false)\},("grid":.*),"n_bins":' + _INT + rb',"sketch":"binary"'
    + rb'(?:,"weight_sq":\[' + _NUM + rb"," + _NUM + rb"\])?\}",
    re.DOTALL,
)
_FLOAT_MAX = MAX_TOTAL_WEIGHT * 40
"""The float counters' upper limit (``io_header._counters``: log loss <= 36.04 x weight)."""
READ_MAX = 1 << 20
"""Files of at most this many bytes are read into a batch buffer (``io.read_sketch_file`` reads
regular files up to this size in one read, too)."""
try:  # as streameval.sketch.io checks it
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - isal is a dependency where it has wheels
    from zlib import crc32 as _crc32
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_CACHE_SIZE = 256
"""Distinct grid-and-meta texts kept per merge (a folder of shards of one job has one)."""


class Static(NamedTuple):
    """What a header's ``"grid"`` and ``"meta"`` members give, checked: the grid, the label
    coding, the provenance entries and their dropped count; ``listed``: meta has an ``inputs``
    member."""

    grid: Grid
    labels: LabelEncoder
    inputs: list[dict[str, Any]]
    dropped: int
    listed: bool
    n_bins: int


def _number(token: bytes) -> int | float:
    """A JSON number token as the json module reads it (digits only: an integer)."""
    return int(token) if token.isdigit() else float(token)


def _counters(g: tuple[Any, ...]) -> dict[str, Any] | None:
    """The counters of a header :data:`_HEADER` matched (groups ``g``), as
    ``io_header._counters`` builds them from the parsed JSON (the same keys in the same order, the
    same values); None where that function may refuse them (then the general path decides).

    The pattern admits only unsigned JSON numbers, so only the upper limits are left to check:
    integers up to 2**63 - 1, the float counters' values (an int token compared as an int, as the
    general check compares it) up to :data:`_FLOAT_MAX` (``1e999`` reads as inf and fails it).
    """
    n_nan, n_outside, n_rows, n_zero = int(g[2]), int(g[3]), int(g[4]), int(g[5])
    pw, brier, log_loss = _number(g[6]), _number(g[0]), _number(g[1])
    if max(n_nan, n_outside, n_rows, n_zero) > MAX_COUNT or not max(pw, brier, log_loss) <= _FLOAT_MAX:
        return None
    return {"n_rows": n_rows, "n_nan": n_nan, "n_zero_weight": n_zero, "n_outside": n_outside,
            "prob_weight": float(pw), "brier_sum": float(brier), "log_loss_sum": float(log_loss),
            "weighted": g[7] == b"true"}


def _cut_inputs(text: bytes) -> tuple[bytes, Any] | None:
    """``text`` with its one ``"inputs"`` member's list written ``[]``, and that list as the
    strict parser reads it; None unless ``"inputs"`` occurs exactly once, followed by ``:[``.

    Inside a JSON string every quote is escaped, so the 8 bytes ``"inputs"`` occur only as a
    member name or the string value "inputs": occurring once and followed by ``:[``, they name the
    member whose list is cut out, and replacing one JSON value by another in a text that parses
    changes nothing else of the parse.
    """
    if text.count(b'"inputs"') != 1 or b'"inputs":[' not in text:
        return None
    try:
        s = text.decode("utf-8")
        i = s.index('"inputs":[') + len('"inputs":')
        value, end = _DECODER.raw_decode(s, i)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return (s[:i] + "[]" + s[end:]).encode(), value


class LeanFolder:
    """Folds binary shards of versions 3 and 4 into the dense states of
    :class:`~streameval.sketch.binary_merge.Merger` objects, one file at a time; one folder serves
    several threads (each with its own merger) and shares the cache of checked headers."""

    def __init__(self) -> None:
        self._static: dict[bytes, Static] = {}
        self._lock = threading.Lock()
        self._max_bins = 0
        self._caps: dict[tuple[int, int], int] = {}
        self.template: tuple[bytes, np.ndarray] | None = None
        """The last grid-and-meta text found valid (whole, not cut), with its bytes as an array:
        what :func:`streameval.sketch.fold_scan.scan_batch` looks for in a batch's headers."""
        self.refresh()

    def refresh(self) -> None:
        """Read the grid-size limit (:func:`~streameval.sketch.io_header.max_grid_bins`, from the
        environment) again; ``merge_files`` calls it once per batch. The lean framing check
        (:meth:`framed`) and the grid check use it; with an unusable limit every file goes the
        general way, which names the problem."""
        try:
            bins = max_grid_bins()
        except Exception:  # noqa: BLE001 - the general path raises it, for each file
            self._max_bins, self._caps = 0, {}
            return
        caps = {}
        for version, raw in ((io.COMPACT_VERSION, max_compact_bytes(bins)), (io.COLUMNAR_VERSION, max_columnar_bytes(bins))):
            caps[version, 0] = raw
            caps[version, io.FLAG_ZLIB] = raw + (raw >> 10) + 64
        self._max_bins, self._caps = bins, caps

    @staticmethod
    def read_into(path: str, view: memoryview, at: int) -> int | None:
        """Read the regular file ``path`` into ``view[at:]`` (uint8) in one read: its length, or
        None when it is not a regular file of 28 to :data:`READ_MAX` bytes that fits there, or
        anything fails or changes on the way (the caller reads it the general way, which names
        any problem; nothing is opened for a file that is not regular, so a named pipe is
        opened once, by the general path)."""
        try:
            st = os.stat(path)
            size = st.st_size
            if not stat.S_ISREG(st.st_mode) or not 28 <= size <= READ_MAX or at + size + 1 > len(view):
                return None
            fd = os.open(path, _OPEN_FLAGS)
            try:
                n = os.readv(fd, [view[at:at + size + 1]])
            finally:
                os.close(fd)
        except OSError:
            return None
        return n if n == size else None

    def framed(self, view: memoryview) -> tuple[int, int, int, int] | None:
        """:func:`streameval.sketch.io.frame` of a whole file's bytes when they are a framed
        version-3 or version-4 file that passes it (the prefix, the lengths against the caps and
        the size, the CRC); None for anything else (nothing raised: the general path decides)."""
        n = len(view)
        if n < 28:
            return None
        magic, version, flags, hlen = io._PREFIX.unpack_from(view, 0)
        cap = self._caps.get((version, flags))
        if cap is None or magic != io.MAGIC or hlen > io._MAX_HEADER or n < 16 + hlen + 12:
            return None
        off = 16 + hlen
        end = off + 8 + _U64.unpack_from(view, off)[0]
        if end - off - 8 > cap or n != end + 4 or _crc32(view[:end]) != _U32.unpack_from(view, end)[0]:
            return None
        return version, flags, off, end

    def static(self, text: bytes, source: str | None) -> Static | None:
        """The checked grid and meta of ``text`` (``"grid":...,"meta":...``), or None when the
        general path must decide (not exactly those two members, or a value it refuses).

        Shards that record their own input (``meta.inputs``, as the CLI writes them) differ in
        that list only: it is cut out (:func:`_cut_inputs`), the rest is checked once, and the
        list on its own."""
        got = self._static.get(text)
        if got is not None:
            return got
        cut = _cut_inputs(text)
        if cut is None:
            got = self._checked(text, source)
            if got is not None:
                self.template = (text, np.frombuffer(text, dtype=np.uint8))
            return got
        rest, listed = cut
        base = self._static.get(rest) or self._checked(rest, source)
        if base is None or not base.listed:  # the one "inputs" was not meta's member (its list is now [])
            return None
        try:
            from .provenance import check_inputs

            return base._replace(inputs=check_inputs(listed, source))
        except SketchFormatError:
            return None

    def _checked(self, text: bytes, source: str | None) -> Static | None:
        """:meth:`static` of ``text`` by the strict parser and the field checks, kept when valid."""
        try:
            both = _parse_header(b"{" + text + b"}", source)
            if len(both) != 2 or "grid" not in both or "meta" not in both:
                return None
            grid = _grid_of(both["grid"], source)
            meta = _meta(both["meta"], source)
            from .provenance import check_inputs

            inputs = check_inputs(meta.get("inputs", []), source)
            dropped = meta.get("inputs_dropped", 0)
            if isinstance(dropped, bool) or not isinstance(dropped, int) or not 0 <= dropped < 1 << 62:
                return None
            labels = LabelEncoder(meta.get("pos_label"), meta.get("neg_label"))
        except Exception:  # noqa: BLE001 - whatever it is, the general path meets it and reports it
            return None
        got = Static(grid, labels, inputs, dropped, "inputs" in meta, grid.n_bins)
        with self._lock:
            if len(self._static) < _CACHE_SIZE:
                self._static[text] = got
        return got

    def prepare(self, data: bytes | memoryview, source: str, merger: Any, framed: tuple[int, int, int, int] | None = None,
                at: int = -1) -> Shard | None:
        """Check the file ``data`` (as :func:`streameval.sketch.io.read_sketch_file` returns it)
        up to its bins, when its header is one the lean path reads and its grid is ``merger``'s.
        ``framed``: what :meth:`framed` gave for ``data``, if called; ``at``: where ``data``
        starts in a batch buffer (:func:`fold_batch`), if it lies in one.

        Returns
        -------
        Shard or None
            What folding it needs; None: load the file (nothing was changed).

        Raises
        ------
        SketchFormatError
            As :func:`streameval.load`, for the framing and the payload's length.
        """
        view = memoryview(data)
        version, flags, off, end = framed or self.framed(view) or io.frame(view, source)
        if version != io.COLUMNAR_VERSION and version != io.COMPACT_VERSION:
            return None
        match = _HEADER.fullmatch(view, 16, off)
        if match is None:
            return None
        g = match.groups()
        static = self.static(g[8], source)
        if static is None or not (static.grid is merger.grid or static.grid == merger.grid):
            return None
        k = int(g[9])
        counters = _counters(g)  # as io_header._counters gives them, or None where it may refuse
        if counters is None or not (static.n_bins <= self._max_bins and k <= static.n_bins):  # the limit read per batch
            return None
        if g[10] is not None:
            try:
                _weight_sq([_number(g[10]), _number(g[11])], counters, source)
            except SketchFormatError:
                return None
        columnar, compressed = version == io.COLUMNAR_VERSION, bool(flags & io.FLAG_ZLIB)
        check_room(end - off - 8, columnar, compressed, k, source)
        return Shard(source, static, counters, view[off + 8:end], k, columnar, compressed,
                     at + off + 8 if at >= 0 else -1)

    def fold(self, data: bytes, source: str, merger: Any) -> tuple[Static, dict[str, Any], tuple[float, float]] | None:
        """:meth:`prepare` the file, then fold its bins into ``merger``'s dense state with every
        check a load makes; the caller adds the rest (:meth:`Merger.add_folded`).

        Returns
        -------
        (Static, dict, (float, float)) or None
            The file's checked grid, labels and provenance; its counters (as a load gives them);
            its bins' negative and positive weights. None, having changed nothing: load the file.

        Raises
        ------
        SketchFormatError
            As :func:`streameval.load` (the framing, the bins, the counters against the bins);
            ``merger``'s state may then hold part of the file.
        """
        shard = self.prepare(data, source, merger)
        if shard is None:
            return None
        return shard.static, shard.counters, shard.fold(merger.dense)


class BatchReader:
    """Reads a thread's files a batch at a time into its buffer, in one compiled call
    (:func:`streameval.kernels.fileread.read_frames`: no GIL, no Python per system call), with
    their frames checked as :meth:`LeanFolder.framed` checks them. Only where that call is
    available (:meth:`create`); files it does not take are read the general way by the caller.
    """

    def __init__(self, paths: list[str], functions: np.ndarray) -> None:
        encoded = [os.fsencode(p) for p in paths]
        self._paths = paths
        self._plain = np.array([b"\0" not in e for e in encoded], dtype=np.bool_)  # (a NUL would cut the name short in C)
        self._names = np.frombuffer(b"".join(e + b"\0" for e in encoded) or b"\0", dtype=np.uint8)
        self._offs = np.zeros(len(paths), dtype=np.int64)
        np.cumsum([len(e) + 1 for e in encoded[:-1]], out=self._offs[1:])
        self._functions = functions

    @classmethod
    def create(cls, paths: list[str]) -> BatchReader | None:
        """A reader of ``paths``, or None where the compiled read is not available."""
        from ..kernels.fileread import FUNCTIONS

        return None if FUNCTIONS is None or not paths else cls(paths, FUNCTIONS)

    def read(self, k: int, buf: np.ndarray, at: int, folder: LeanFolder, files: int, nbytes: int
             ) -> tuple[int, dict[int, tuple[int, int, tuple[int, int, int, int]]]]:
        """Read files ``k, k + 1, ...`` into ``buf`` from ``at`` on: at most ``files`` of them, and
        no more once their sizes reach ``nbytes``. ``buf`` must have room for those bytes plus
        :data:`READ_MAX` + 1.

        Returns
        -------
        (int, dict)
            The next file to read, and for each file taken (by its index in ``paths``): where it
            starts in ``buf``, its length, and what :meth:`LeanFolder.framed` gives for it.
        """
        j, rows = self.read_rows(k, buf, at, folder, files, nbytes)
        return j, taken_files(k, rows)

    def read_rows(self, k: int, buf: np.ndarray, at: int, folder: LeanFolder, files: int, nbytes: int
                  ) -> tuple[int, list[list[int]]]:
        """:meth:`read`, giving for files ``k`` to the next what :func:`~streameval.kernels.fileread.read_frames`
        gives: ``[start, length (-1: not taken), version, flags, header end]`` each."""
        from ..kernels.fileread import read_frames

        if self._functions[4]:  # os.stat's loop, compiled
            from ..kernels.fileread import stat_sizes

            sizes = np.empty(min(files, len(self._paths) - k), dtype=np.int64)
            n = stat_sizes(self._functions, self._names, self._offs[k:k + sizes.shape[0]], self._plain[k:k + sizes.shape[0]],
                           sizes, files, nbytes, 28, READ_MAX)
            sizes, j = sizes[:n], k + n
        else:
            listed: list[int] = []
            total, j = 0, k
            while j < len(self._paths) and len(listed) < files and total < nbytes:
                size = -1
                if self._plain[j]:
                    try:
                        st = os.stat(self._paths[j])
                        if stat.S_ISREG(st.st_mode) and 28 <= st.st_size <= READ_MAX:
                            size = st.st_size
                    except (OSError, ValueError):
                        pass
                listed.append(size)
                total += max(size, 0)
                j += 1
            sizes = np.array(listed, dtype=np.int64)
        caps = np.full((2, 2), -1, dtype=np.int64)
        for (version, flags), cap in folder._caps.items():
            caps[version - io.COMPACT_VERSION, flags] = cap
        out = np.empty((len(sizes), 5), dtype=np.int64)
        read_frames(self._functions, self._names, self._offs[k:j], sizes, buf, at, caps, out)
        return j, out.tolist()


def taken_files(k: int, rows: list[list[int]]) -> dict[int, tuple[int, int, tuple[int, int, int, int]]]:
    """:meth:`BatchReader.read`'s dict of the files taken among ``rows`` (files ``k, k + 1, ...``
    as :meth:`BatchReader.read_rows` gives them)."""
    return {k + t: (start, n, (version, flags, off, n - 4)) for t, (start, n, version, flags, off) in enumerate(rows) if n >= 0}


class Shard(NamedTuple):
    """A shard checked up to its bins by :meth:`LeanFolder.prepare`."""

    source: str
    static: Static
    counters: dict[str, Any]
    stored: memoryview
    k: int
    columnar: bool
    compressed: bool
    at: int
    """Where the payload starts in the batch buffer it was read into, or -1."""

    def fold(self, state: np.ndarray) -> tuple[float, float]:
        """Fold the bins into ``state`` with every check a load makes: their negative and positive
        weights (raises :class:`SketchFormatError` as the load)."""
        return fold_checked(self.stored, self.columnar, self.compressed, self.k, self.static.grid, self.counters,
                            self.source, state)

    def check(self, sums: list[float], counts: list[int]) -> tuple[float, float]:
        """:meth:`fold`'s counter checks, the bins folded by :func:`fold_batch` (which filled
        ``sums`` and ``counts``, here a row of each as a list)."""
        summary = BinSummary(
            sums[S_T0], sums[S_T1], counts[C_CELLS], sums[S_W_IN], sums[S_W_TOUCH], counts[C_OUTSIDE],
            bool(counts[C_FRAC]), (sums[S_B_LO], sums[S_B_HI], sums[S_L_LO], sums[S_L_HI]),
        )  # io_compact._summary of the rows, from Python floats and ints (tolist) at once
        return check_folded(summary, self.stored, self.columnar, self.compressed, self.k, self.static.grid,
                            self.counters, self.source)


BATCH_FILES = 32
"""Shards :func:`streameval.sketch.files.merge_files` folds per compiled call."""
BATCH_BYTES = 4 << 20
"""... or fewer, once their files reach this many bytes (each thread reads them into one buffer of
this size plus :data:`READ_MAX`, reused batch after batch)."""


def fold_batch(buf: np.ndarray, shards: list[Shard], state: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Fold the bins of uncompressed ``shards`` (on one grid, ``state``'s), whose payloads lie in
    ``buf`` (uint8, the batch buffer they were read into: :attr:`Shard.at`), into ``state`` in
    order, in one compiled call (:func:`fold_payloads`).

    Returns
    -------
    done : int
        The shards folded and checked, in order; shard ``done`` (if any) failed a check, and
        :meth:`Shard.fold` names it.
    sums, counts : ndarray, shapes (len(shards), 8) and (len(shards), 4)
        Each shard's sums and counts for :meth:`Shard.check`.
    """
    return fold_payloads(buf, np.array([s.at for s in shards], dtype=np.int64),
                         np.array([len(s.stored) for s in shards], dtype=np.int64),
                         np.array([s.k for s in shards], dtype=np.int64),
                         np.array([s.columnar for s in shards], dtype=np.bool_), shards[0].static.grid, state)


def fold_payloads(buf: np.ndarray, offs: np.ndarray, lens: np.ndarray, ks: np.ndarray, columnar: np.ndarray,
                  grid: Grid, state: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """:func:`fold_batch` of payloads given as arrays (int64 ``offs``, ``lens``, ``ks``; bool
    ``columnar``: version 4, else 3), each ``buf[offs[j]:offs[j] + lens[j]]`` of ``ks[j]`` bins
    on ``grid`` (:func:`streameval.kernels.codec4.fold_many`).

    Raises
    ------
    ValueError
        A payload outside ``buf``, or a ``state`` the compiled fold cannot write safely.
    """
    from ..kernels import codec4

    n = offs.shape[0]
    if n and not (offs.min() >= 0 and (offs + lens).max() <= buf.shape[0]):
        raise ValueError("fold_batch: a payload lies outside the batch buffer")
    sums = np.zeros((n, 8), dtype=np.float64)
    counts = np.zeros((n, 4), dtype=np.int64)
    check_state(state, grid)
    done = codec4.fold_many(buf, offs, lens, ks, columnar, grid.n_bins, *grid.kernel_params(), REL_TOL, state, sums, counts)
    return int(done), sums, counts


def surely_consistent(shards: list[Shard], sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Which shards of a batch pass every counter check of :meth:`Shard.check` without needing
    their bins: :func:`counters_consistent` of their counters."""
    n = len(shards)
    ints = np.array([[c["n_rows"], c["n_nan"], c["n_zero_weight"], c["n_outside"]] for c in (s.counters for s in shards)],
                    dtype=np.float64).reshape(n, 4)
    floats = np.array([[c["prob_weight"], c["brier_sum"], c["log_loss_sum"], float(c["weighted"])]
                       for c in (s.counters for s in shards)], dtype=np.float64).reshape(n, 4)
    return counters_consistent(ints, floats, sums, counts)


def counters_consistent(ints: np.ndarray, floats: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Which files of a batch pass every counter check of :meth:`Shard.check` (rules 9-10,
    ``io_checks.check_consistency``) without needing their bins, decided for the whole batch in a
    compiled call (:func:`streameval.kernels.codec4.surely_consistent`): bool, shape ``(n,)``.

    Only unweighted files whose counters and weights are below 2**53 are decided here. Each rule
    is written with the arithmetic ``check_consistency`` uses (float64 operations in the same order,
    the same constants), so True means that function returns without raising (and without
    :class:`~streameval.sketch.io_checks.NeedBins`): the file's totals are then its bins' weights.
    False decides nothing: :meth:`Shard.check` runs, and names any problem.

    Parameters
    ----------
    ints : ndarray, shape (n, 4)
        float64: each file's ``n_rows``, ``n_nan``, ``n_zero_weight``, ``n_outside``.
    floats : ndarray, shape (n, 4)
        float64: its ``prob_weight``, ``brier_sum``, ``log_loss_sum`` and ``weighted`` (0 or 1).
    sums, counts : ndarray, shapes (n, 8) and (n, 4)
        As :func:`fold_payloads` filled them.
    """
    from ..kernels import codec4

    out = np.zeros(ints.shape[0], dtype=np.bool_)
    codec4.surely_consistent(ints, floats, sums, counts, REL_TOL, _NEAR, out)
    return out
