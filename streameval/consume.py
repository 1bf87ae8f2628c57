"""Feeding a source's chunks to sketches: one reader (with read-ahead), or parts on threads.

:func:`_consume` takes chunks from a :class:`~streameval.sources.Source` and feeds them to
:meth:`BinarySketch.update`, nothing else (progress goes through a callback); :func:`_consume_parts`
reads a source's parts on threads, each into its own sketch, and joins them. Errors are located in
the file, column and row they come from (:func:`_locate`), as a front-to-back read would raise
them. Split from :mod:`streameval.evaluate`, which re-exports these names.
"""

from __future__ import annotations

import queue
import re
import threading
import time as _time
from typing import Any, Callable, Iterable, Iterator, Sequence

from .errors import InputError, InputTypeError
from .grid import Grid
from .sketch.binary import BinarySketch
from .sources import LABEL, SCORE, WEIGHT, Chunk
from .sources.base import numpy_view

ROW_ID = "row_id"  # the alias the row-id column is delivered under


def _coerce_pos_label(pos_label: Any, arrow_type: Any) -> Any:
    """Give a textual ``pos_label`` (from the command line) the type of the label column."""
    import pyarrow as pa

    if not isinstance(pos_label, str):
        return pos_label
    text = pos_label.strip()
    try:
        if pa.types.is_boolean(arrow_type):
            if text.lower() in ("true", "1", "yes"):
                return True
            if text.lower() in ("false", "0", "no"):
                return False
            raise ValueError(text)
        if pa.types.is_integer(arrow_type):
            return int(text)
        if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
            return float(text)
    except ValueError:
        raise InputError(
            f"pos_label {pos_label!r} cannot be compared with the label column of type {arrow_type}"
        ) from None
    return pos_label


def _as_numpy_ready(batch: Any) -> tuple[Any, Any, Any]:
    """(label, score, weight) arrays of a batch; decimals become float64 (DuckDB's numeric literals)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def col(name: str) -> Any:
        a = batch.column(name)
        if pa.types.is_decimal(a.type) or (name != LABEL and pa.types.is_integer(a.type)):
            a = pc.cast(a, pa.float64())
        return a

    weight = col(WEIGHT) if WEIGHT in batch.schema.names else None
    return batch.column(LABEL), col(SCORE), weight


_ROW = re.compile(r"\brow (\d+)\b")
_ARG_NAMES = {"y_true": LABEL, "y_score": SCORE, "sample_weight": WEIGHT}


def _locate(
    exc: InputError | InputTypeError, chunk: Chunk, stream_row: int, columns: dict[str, str]
) -> InputError | InputTypeError:
    """Re-word a sketch error for a user of this source: name the file, column and row in the file."""
    msg = str(exc)
    for arg, alias in _ARG_NAMES.items():
        if msg.startswith(arg) and alias in columns:
            msg = f"{alias} {columns[alias]!r}" + msg[len(arg):]
            break

    def in_origin(m: re.Match[str]) -> str:
        local = int(m.group(1)) - stream_row + chunk.origin_row
        return f"row {local}"

    msg = _ROW.sub(in_origin, msg)
    msg = msg.replace("pass nan_policy='skip'", "pass nan_policy='skip' (--skip-nan on the command line)")
    if msg.startswith(f"{LABEL} ") and any(k in msg for k in ("outside {0, 1}", "non-numeric", "more than two", "three label")):
        msg += f"; label values seen: {_label_examples(chunk.batch)}"
    return type(exc)(f"{chunk.origin}: {msg}")


def _label_examples(batch: Any, k: int = 5) -> str:
    import pyarrow.compute as pc

    counts = pc.value_counts(batch.column(LABEL)).to_pylist()
    counts.sort(key=lambda d: -d["counts"])
    shown = ", ".join(f"{d['values']!r} ({d['counts']:,} rows)" for d in counts[:k])
    return shown + (f", and {len(counts) - k} more" if len(counts) > k else "")


_DONE = object()


def _read_ahead(chunks: Iterable[Chunk], depth: int = 2) -> Iterator[Chunk]:
    """Iterate ``chunks`` with a background thread keeping up to ``depth`` chunks ready.

    Memory stays bounded (``depth`` batches in flight); an exception in the reader is re-raised
    here, and stopping early (an error while binning) stops the reader.
    """
    ready: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for chunk in chunks:
                while not stop.is_set():
                    try:
                        ready.put(chunk, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ready.put(_DONE)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            ready.put(exc)

    reader = threading.Thread(target=produce, name="streameval-reader", daemon=True)
    reader.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        # Drain so a blocked put() sees `stop`. A reader stuck inside a slow read is not waited
        # for beyond a grace period (it is a daemon thread): Ctrl-C must return promptly.
        deadline = _time.monotonic() + 1.0
        while reader.is_alive() and _time.monotonic() < deadline:
            try:
                ready.get(timeout=0.05)
            except queue.Empty:
                pass


def _consume(
    chunks: Iterable[Chunk],
    sketch: BinarySketch,
    *,
    columns: dict[str, str],
    pos_label: Any = None,
    nan_policy: str = "raise",
    on_rows: Callable[[int], None] | None = None,
    read_ahead: bool = True,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Feed every chunk to ``sketch.update``; return the number of rows read.

    With ``read_ahead``, chunks are read one step ahead on a background thread
    (:func:`_read_ahead`), so decoding the next batch (pyarrow, DuckDB and Polars release the GIL)
    overlaps binning this one (the kernel releases it too). ``should_stop()``, checked after
    each chunk, ends the loop early (another thread failed).
    """
    n = 0
    for chunk in _read_ahead(chunks) if read_ahead else chunks:
        y, s, w = _as_numpy_ready(chunk.batch)
        names = chunk.batch.schema.names
        rid = chunk.batch.column(names.index(ROW_ID)) if ROW_ID in names else None
        if n == 0 and pos_label is not None:
            pos_label = _coerce_pos_label(pos_label, y.type)
        start = sketch.n_rows
        try:
            sketch.update(numpy_view(y), numpy_view(s), numpy_view(w), pos_label=pos_label, nan_policy=nan_policy,
                          row_id=rid)
        except (InputError, InputTypeError) as exc:
            raise _locate(exc, chunk, start, columns) from None
        n += chunk.batch.num_rows
        if on_rows is not None:
            on_rows(chunk.batch.num_rows)
        if should_stop is not None and should_stop():
            break
    return n


def _consume_parts(
    parts: Sequence[Callable[[], Iterator[Chunk]]],
    grid: Grid | None,
    n_threads: int,
    *,
    columns: dict[str, str],
    pos_label: Any = None,
    nan_policy: str = "raise",
    on_rows: Callable[[int], None] | None = None,
    bootstrap: dict[str, int] | None = None,
) -> tuple[BinarySketch, int]:
    """Read ``parts`` on ``n_threads`` threads, each decoding and binning into its own sketch.

    Thread ``k`` takes parts ``k, k + n_threads, ...`` (a fixed assignment, so a rerun adds the
    floating-point sums in the same order and gives the same bits); the sketches are then joined
    into one. Measured on 2 cores: decoding and binning in the same thread, one thread per core,
    beats one reader thread feeding binning threads (see docs/design.md).

    Errors are those a front-to-back read would raise: when part ``i`` fails, the parts after it
    are abandoned but the ones before it are still read, and the error of the earliest failing
    part is raised. Label codings are checked across parts as across chunks.
    """
    n_threads = max(1, min(n_threads, len(parts)))
    sketches = [BinarySketch(grid, threads=1, **(bootstrap or {})) for _ in range(n_threads)]
    rows = [0] * n_threads
    negatives: list[tuple[int, Any, str]] = []  # (part, first negative label, file) per thread
    errors: dict[int, BaseException] = {}
    first_failed = [len(parts)]
    abort = threading.Event()  # Ctrl-C or another non-data exception: stop everything
    lock = threading.Lock()

    def progress(n: int) -> None:
        if on_rows is not None:
            with lock:
                on_rows(n)

    def work(k: int) -> None:
        sketch = sketches[k]
        for i in range(k, len(parts), n_threads):
            if abort.is_set() or first_failed[0] < i:  # an earlier part failed: its error wins
                return
            origin = [""]
            chunks = parts[i]()

            def later_part_failed(i: int = i) -> bool:
                return abort.is_set() or first_failed[0] < i

            had_negative = sketch._labels.neg_label is not None
            try:
                rows[k] += _consume(_tracked(chunks, origin), sketch, columns=columns, pos_label=pos_label,
                                    nan_policy=nan_policy, on_rows=progress, read_ahead=False,
                                    should_stop=later_part_failed)
            except Exception as exc:  # a data error: the earliest failing part's is raised
                with lock:
                    errors[i] = exc
                    first_failed[0] = min(first_failed[0], i)
                return
            except BaseException:
                abort.set()
                raise
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
            if not had_negative and sketch._labels.neg_label is not None:
                negatives.append((i, sketch._labels.neg_label, origin[0]))

    workers = [threading.Thread(target=work, args=(k,), name=f"streameval-part-{k}", daemon=True)
               for k in range(1, n_threads)]
    for t in workers:
        t.start()
    try:
        work(0)
        for t in workers:
            while t.is_alive():  # a timeout keeps Ctrl-C responsive
                t.join(0.1)
    except BaseException:
        abort.set()
        raise
    if errors:
        raise errors[min(errors)]
    _check_negatives(sorted(negatives, key=lambda e: e[0]), columns)
    used = [s for s in sketches if s.n_rows] or sketches[:1]  # a thread may have read no rows
    sketch = used[0]
    for other in used[1:]:
        sketch._absorb(other)
    return sketch, sum(rows)


def _tracked(chunks: Iterator[Chunk], origin: list[str]) -> Iterator[Chunk]:
    """``chunks``, noting the origin of the latest one in ``origin[0]``."""
    for chunk in chunks:
        origin[0] = chunk.origin
        yield chunk


def _check_negatives(negatives: Sequence[tuple[int, Any, str]], columns: dict[str, str]) -> None:
    """Raise if parts read on different threads coded the negative class differently.

    The rule of :meth:`BinarySketch.update` across chunks (``False`` goes with either 0 or -1;
    two different numeric or text negatives do not), applied between threads.
    """
    first: tuple[int, Any, str] | None = None
    for entry in negatives:
        value = entry[1]
        if isinstance(value, bool):
            continue
        if first is None:
            first = entry
        elif value != first[1]:
            raise InputError(
                f"{entry[2]}: label {columns.get(LABEL, LABEL)!r}: the negative class is {value!r} here but "
                f"{first[1]!r} in {first[2]}; labels must take the same two values throughout"
            )
