"""Merging many sketch files: expand folders and globs, load on threads, fold into one running sketch.

A monthly roll-up of hourly shards is thousands of files. :func:`merge_files` keeps at most a few
loaded sketches beside the running result (a bounded read-ahead on ``threads`` threads: reading,
inflating and checking release the GIL), so memory grows with the number of files only by
their labels and provenance. Shards in the form a job writes them (versions 3 and 4, canonical
headers) take the lean path of :mod:`streameval.sketch.fold_files`: no sketch object per file, the
header's grid and labels checked once per distinct text.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generator, Iterator, Sequence

__all__ = ["SKETCH_SUFFIXES", "expand_sketch_paths", "file_kind", "iter_loaded", "merge_files"]

SKETCH_SUFFIXES = (".sketch", ".sevsk")
"""File name endings taken from a folder (files named explicitly may have any name)."""


def expand_sketch_paths(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Files named, in order: a folder gives its ``*.sketch``/``*.sevsk`` files (sorted, recursively),
    a glob its matches (sorted).

    Raises
    ------
    FileNotFoundError
        A path or glob that matches nothing, or a folder without sketch files.
    OSError
        A folder (or one inside it) that cannot be listed: its files are not skipped silently.
    """
    out: list[str] = []
    for p in (os.fspath(x) for x in paths):
        if os.path.isdir(p):
            found = _folder_files(p)
            if not found:
                raise FileNotFoundError(f"{p}: no sketch files ({', '.join('*' + s for s in SKETCH_SUFFIXES)}) in this folder")
            out += found
        elif any(c in p for c in "*?[") and not os.path.exists(p):
            found = sorted(glob.glob(p, recursive=True))
            if not found:
                raise FileNotFoundError(f"{p}: no file matches this pattern")
            out += found
        else:
            out.append(p)
    return out


def _folder_files(top: str) -> list[str]:
    """The ``*.sketch``/``*.sevsk`` files under ``top``, sorted: those ``os.walk(top)`` lists (links
    to folders are not followed), with half its time for 10,000 files (no join per name) and an
    error for a folder it cannot list, where ``os.walk`` skips it."""
    found: list[str] = []
    folders = [top]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:  # as os.walk: a name that cannot be examined is not a folder
                    is_dir = False
                if is_dir:
                    if not entry.is_symlink():
                        folders.append(entry.path)
                elif entry.name.lower().endswith(SKETCH_SUFFIXES):
                    found.append(entry.path)
    found.sort()
    return found


def file_kind(path: str | os.PathLike[str]) -> Any:
    """The ``sketch`` field of a sketch file's header (``"binary"``, ``"multiclass"``), reading only
    the 16-byte prefix and the header: a command can refuse an option that does not apply to the
    files before it loads them.

    Raises
    ------
    SketchFormatError
        If the prefix or the header is unreadable (the message names the file).
    OSError
        If the file cannot be opened.
    """
    from .io import _PREFIX, _check_prefix, sketch_kind

    source = os.fspath(path)
    with open(source, "rb") as f:
        prefix = f.read(_PREFIX.size)
        _, hlen = _check_prefix(prefix, source)
        return sketch_kind(prefix + f.read(hlen), source)


def iter_loaded(paths: Sequence[str], threads: int | None = None, ahead: int | None = None) -> Generator[Any, None, None]:
    """Load ``paths`` in order on ``threads`` threads, at most ``ahead`` files read ahead.

    Raises
    ------
    OSError, SketchFormatError
        As :func:`streameval.load`, for the first bad file in order.
    """
    from .binary import cpu_count, load

    n = max(1, threads if threads is not None else cpu_count())
    if n == 1 or len(paths) < 2:
        for p in paths:
            yield load(p)
        return
    window = ahead or 4 * n
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix=_LOADER)
    try:
        pending: deque[Future[Any]] = deque()
        it = iter(paths)
        for p in it:
            pending.append(pool.submit(load, p))
            if len(pending) >= window:
                break
        while pending:
            sketch = pending.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(load, nxt))
            yield sketch
    finally:
        # Also when the consumer stops early (an error, or close()): drop the read-ahead. A
        # generator abandoned without close() may be collected on one of its own threads,
        # which cannot wait for itself.
        pool.shutdown(wait=not threading.current_thread().name.startswith(_LOADER), cancel_futures=True)


_LOADER = "streameval-load"
_SKEW = 64
"""Where a batch buffer's first file goes: not at a page boundary, where the kernel's copy out of
the page cache (source and destination at the same offset in their pages) ran ~3x slower here."""


def merge_files(paths: Sequence[str | os.PathLike[str]], *, strict: bool = False, threads: int | None = None) -> Any:
    """Merge sketch files (folders and globs expanded) into one sketch, streaming.

    Binary sketches fold into running dense states as they load (see :func:`streameval.merge`):
    with several threads each folds its own share of the files (memory: one dense state per
    thread, plus each file's labels and provenance, a few hundred bytes, kept to redo in file
    order what depends on it), and the partial results are merged at the end.
    Multiclass sketch files merge with their own rule, one at a time. Whatever the threads, the
    result is the sequential merge's: the same bins (counts, min and max exactly; floating-point
    sums such as weights, score sums and log loss up to rounding, since the order of the additions
    changes), the same provenance in file order, the same duplicate warnings, and of several bad
    files or clashing sketches the error the sequential merge meets first.

    Parameters
    ----------
    paths : sequence of str or path-like
    strict : bool, default False
        Refuse an input file counted twice (see :func:`streameval.merge`).
    threads : int, optional
        Threads that load and fold (default: the CPUs).

    Returns
    -------
    BinarySketch or MulticlassSketch

    Raises
    ------
    FileNotFoundError, OSError, SketchFormatError
        As :func:`streameval.load`.
    UsageError
        Binary and multiclass sketches mixed.
    IncompatibleGridError, InputError
        As :func:`streameval.merge`.
    """
    import numpy as np

    from ..errors import UsageError
    from ..kernels.codec import S_T0, S_T1
    from .binary import BinarySketch, cpu_count, load, merge
    from .binary_merge import Merger, fold_inputs
    from .fold_files import (
        BATCH_BYTES,
        BATCH_FILES,
        READ_MAX,
        BatchReader,
        LeanFolder,
        Shard,
        fold_batch,
        surely_consistent,
        taken_files,
    )
    from .fold_scan import ScannedBatch, scan_batch
    from .io import read_sketch_file
    from .multiclass import MulticlassSketch
    from .provenance import InputsFold

    files = expand_sketch_paths(paths)
    if not files:
        raise UsageError("nothing to merge: give sketch files, folders or globs")
    n = max(1, threads if threads is not None else cpu_count())
    first = load(files[0])
    if isinstance(first, MulticlassSketch):
        from .multiclass_state import merge_multiclass

        acc = first
        with contextlib.closing(iter_loaded(files[1:], n)) as rest:
            for s in rest:  # folded one at a time, like binary sketches
                if not isinstance(s, MulticlassSketch):
                    raise UsageError("cannot merge binary and multiclass sketches together")
                acc = merge_multiclass([acc, s])
        return acc

    def binary_only(sketches: Iterator[Any]) -> Iterator[BinarySketch]:
        for s in sketches:
            if not isinstance(s, BinarySketch):
                raise UsageError("cannot merge binary and multiclass sketches together")
            yield s

    n = max(1, min(n, len(files) // 4))  # a thread folds at least 4 files
    # Each thread loads and folds its own share (files i, i + n, i + 2n, ...) into a partial sketch:
    # reading, decoding and folding release the GIL, so both the decoding and the folding run in
    # parallel. The partials are merged at the end (merging is associative and commutative). What
    # depends on the order of the files is redone in file order from what each file's sketch
    # holds besides its bins: the provenance (and its duplicate warnings) always; on an error, the
    # merge of every file's shell up to the first file that failed, which meets the sequential
    # merge's error first.
    indexed = list(enumerate(files))
    folder = LeanFolder()
    failures: list[tuple[int, BaseException]] = []  # (file index, error), in any order
    heads: dict[int, Any] = {0: _head(first)}
    _strip(first)

    def run(part: int) -> Any:
        current = -1  # the file being folded: a merge error is that file's
        merger = Merger(first)
        batch: list[tuple[int, Shard]] = []  # shards read and checked up to their bins, in order
        # The batch's files are read into one buffer, reused batch after batch (no allocation, no
        # page faults, no copy per file); a file fits whenever the batch is below BATCH_BYTES.
        buf = np.empty(BATCH_BYTES + READ_MAX + 1, dtype=np.uint8)
        view = buf.data
        used = [_SKEW]  # where the batch's next file goes in buf

        def add(i: int, shard: Shard, totals: tuple[float, float]) -> None:
            nonlocal current
            current = i
            static = shard.static
            heads[i] = (static.grid, static.labels, [dict(e) for e in static.inputs], static.dropped,
                        shard.counters["n_rows"], None)
            merger.add_folded(static.labels, shard.counters, totals)

        def flush() -> bool:
            """Fold the batch in one compiled call, then add its files in order; False when one
            failed (recorded). A merge error (labels) of one of them is raised."""
            if not batch:
                return True
            items = list(batch)
            batch.clear()
            used[0] = _SKEW
            folder.refresh()
            shards = [shard for _, shard in items]
            done, sums, counts = fold_batch(buf, shards, merger.dense)
            return settle(items, done, sums, counts, surely_consistent(shards, sums, counts).tolist())

        def settle(items: list[tuple[int, Shard]], done: int, sums_array: np.ndarray, counts_array: np.ndarray,
                   sure: list[bool]) -> bool:
            """Check and add folded files in order (flush's second half)."""
            sums, counts = sums_array.tolist(), counts_array.tolist()
            for j, (i, shard) in enumerate(items):
                try:
                    if j == done:  # it failed a check: its own fold names the problem
                        shard.fold(merger.dense)
                        raise RuntimeError(f"{shard.source}: folded alone, yet not in a batch")  # pragma: no cover
                    # the counter checks, decided for the batch where they surely pass
                    totals = (sums[j][S_T0], sums[j][S_T1]) if sure[j] else shard.check(sums[j], counts[j])
                except BaseException as exc:
                    failures.append((i, exc))
                    return False
                add(i, shard, totals)
            return True

        def fold_scanned(k: int, scanned: ScannedBatch) -> bool:
            """Fold, check and add the batch of files ``mine[k:]`` :func:`scan_batch` read; False
            when one failed (recorded)."""
            nonlocal current
            n_files = len(scanned.ints)
            index = [i for i, _ in mine[k:k + n_files]]
            done, sums, counts, sure = scanned.fold(buf, merger.dense)
            if done < n_files or not all(sure):  # the per-file checks name the problem
                return settle(list(zip(index, scanned.shards([p for _, p in mine[k:k + n_files]], view), strict=True)),
                              done, sums, counts, sure)
            heads.update(zip(index, scanned.heads(), strict=True))
            current = index[0]  # (a label clash is the first file's)
            totals = sums[:, [S_T0, S_T1]].tolist()  # unit weights: w**2 = w; weighted: not recorded in the header
            merger.add_folded_many(scanned.static.labels, scanned.ints, scanned.floats, scanned.weighted,
                                   [None if w else (t[0], t[1]) for w, t in zip(scanned.weighted, totals, strict=True)])
            current = index[-1]
            return True

        mine = [(i, path) for i, path in indexed[part::n] if i != 0]
        reader = BatchReader.create([path for _, path in mine])  # None: file by file, below
        taken: dict[int, tuple[int, int, tuple[int, int, int, int]]] = {}  # read ahead into buf
        upto = [0]  # the next file of `mine` to read ahead
        skip = [0]  # files of `mine` before this one were folded as a batch

        def read(path: str, k: int) -> tuple[bytes | memoryview, Shard | None]:
            """The file's bytes (in ``buf`` when they could be read there) and its shard, if the
            lean path takes it (raises as a load: the framing, the payload's length)."""
            data: bytes | memoryview
            got = taken.pop(k, None)
            if got is not None:  # read ahead, its frame checked
                at, size, framed = got
                data = view[at:at + size]
                return data, folder.prepare(data, path, merger, framed, at)
            if reader is None:  # (with a reader, buf holds files read ahead: not here)
                start = used[0]
                length = folder.read_into(path, view, start)
                if length is not None:
                    data = view[start:start + length]
                    checked = folder.framed(data)
                    if checked is not None:
                        return data, folder.prepare(data, path, merger, checked, start)
            data = read_sketch_file(path)  # anything else: the general way, which names problems
            return data, folder.prepare(data, path, merger)

        try:
            if part == 0:
                current = 0
                merger.add(first, strict)
            for k, (i, path) in enumerate(mine):
                if failures and min(f[0] for f in failures) < i:
                    flush()  # the replay of the files before the failure needs their heads
                    return None  # an earlier file already failed: that error is the one reported
                if k < skip[0]:  # folded with its batch (fold_scanned)
                    continue
                if reader is not None and k >= upto[0]:  # read the next batch's files ahead
                    if not flush():  # (their bytes are in buf)
                        return None
                    folder.refresh()
                    upto[0], rows = reader.read_rows(k, buf, _SKEW, folder, BATCH_FILES, BATCH_BYTES - _SKEW)
                    scanned = scan_batch(buf, rows, folder, merger.grid) if merger.replicates is None else None
                    if scanned is not None:  # every file canonical: folded as arrays
                        if not fold_scanned(k, scanned):
                            return None
                        skip[0] = upto[0]
                        continue
                    taken.clear()
                    taken.update(taken_files(k, rows))
                error: BaseException | None = None
                try:
                    data, shard = read(path, k)
                except BaseException as exc:
                    error = exc
                if error is not None:
                    if flush():  # the files before it first
                        failures.append((i, error))
                    return None
                if shard is not None and shard.at >= 0 and not shard.compressed:  # the common case: batched
                    batch.append((i, shard))
                    used[0] = shard.at + len(shard.stored) + 4
                    if (len(batch) >= BATCH_FILES or used[0] >= BATCH_BYTES) and not flush():
                        return None
                    continue
                if not flush():  # in file order: a file loaded whole may change the grid
                    return None
                try:  # (flush left the buffer's bytes as they were: data, a view into it, holds)
                    if shard is not None:  # a compressed shard, or one read the general way: folded alone
                        totals = shard.fold(merger.dense)
                    else:
                        s, folded = _load_folding(path, merger, bytes(data))
                except BaseException as exc:
                    failures.append((i, exc))
                    return None
                if shard is not None:
                    add(i, shard, totals)
                    continue
                current = i
                heads[i] = _head(s)
                _strip(s)
                if not isinstance(s, BinarySketch):
                    raise UsageError("cannot merge binary and multiclass sketches together")
                merger.add(s, strict, folded)
            if not flush():
                return None
            return merger if part == 0 else merger.result()  # (thread 0's state takes the others' in)
        except BaseException as exc:  # a merge error (grids, labels, kinds) at file `current`
            if current >= 0:
                failures.append((current, exc))
            return None

    def replay(upto: int) -> None:
        """The sequential merge of the shells of files ``[0, upto)`` (raises its first error)."""
        merge(binary_only(_shell(heads[i]) for i in range(upto) if i in heads), strict=strict)

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="streameval-merge") as pool:
        partials = list(pool.map(run, range(n)))
    if failures:
        first_bad, exc = min(failures, key=lambda f: f[0])
        replay(first_bad + 1)  # every file before it loaded: an error the sequential merge meets first
        raise exc
    head, others = partials[0], partials[1:]
    try:
        if head.replicates is None and all(p.replicates is None for p in others):
            # the others' bins folded into thread 0's dense state, then one compaction: what
            # merge(partials) gives bit for bit, without a fresh state and thread 0's compaction
            for p in others:
                head.add(p, strict)
            out = head.result()
        else:
            out = merge([head.result(), *others], strict=strict)
    except BaseException:
        replay(len(files))  # grids or labels of two threads' files clash: the sequential error
        raise
    fold = InputsFold()
    for i in range(len(files)):  # provenance in file order, with the sequential merge's warnings
        head = heads[i]
        if head[2] or head[3]:  # (a file without entries or a dropped count changes nothing)
            fold_inputs(fold, head[2], head[3], strict)
    out.inputs, out.inputs_dropped = fold.entries, fold.dropped
    return out


def _load_folding(path: str, merger: Any, data: bytes | None = None) -> tuple[Any, tuple[float, float] | None]:
    """:func:`streameval.load` (of ``data``, the file's bytes, when given), with a version-3 or
    version-4 binary sketch's bins folded into ``merger``'s state as they are decoded: ``(sketch,
    its class totals)``, the sketch then without bins; or ``(sketch, None)`` for any other file,
    loaded whole."""
    from . import io
    from .binary import BinarySketch
    from .multiclass import MulticlassSketch

    parts = io.decode(io.read_sketch_file(path) if data is None else data, path, fold_into=(merger.grid, merger.dense))
    if isinstance(parts, dict):
        return MulticlassSketch._from_parts(parts, path), None
    return BinarySketch._from_parts(parts, path), (parts.class_totals if parts.folded else None)


def _head(s: Any) -> Any:
    """What :func:`streameval.merge` reads of a sketch besides its bins: ``(grid, labels, inputs,
    inputs dropped, rows, (replicates, seed, keyed) or None)``; a sketch of another kind as it is."""
    from .binary import BinarySketch

    if not isinstance(s, BinarySketch):
        return s
    r = s.replicates
    return (s.grid, s._labels, s.inputs, s.inputs_dropped, s.counters["n_rows"],
            None if r is None else (r.n_replicates, r.seed, r.keyed))


def _shell(head: Any) -> Any:
    """A sketch without bins that :func:`streameval.merge` reads as the one ``head`` came from."""
    from .binary import BinarySketch
    from .bootstrap import Replicates

    if not isinstance(head, tuple):
        return head
    grid, labels, inputs, dropped, n_rows, reps = head
    shell = BinarySketch(grid)
    shell._labels = labels
    shell.inputs, shell.inputs_dropped = inputs, dropped
    shell.counters["n_rows"] = n_rows
    if reps is not None:
        shell.replicates = Replicates(*reps)
    return shell


def _strip(s: Any) -> None:
    """Drop a loaded sketch's provenance: the replay on the shells merges it, in file order."""
    if hasattr(s, "inputs_dropped"):
        s.inputs, s.inputs_dropped = [], 0
