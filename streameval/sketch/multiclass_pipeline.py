"""Chunks binned one after another without a barrier between them: ordered chains of tasks per key.

:meth:`MulticlassSketch.update` splits a chunk into tasks, each owning some cells (a column's
histograms, a half of the per-row tables), and used to wait for all of them before returning: at
the end of every chunk one thread ran the last task while the other waited, and while the caller
validated the next chunk both threads waited. A :class:`Pipeline` (what the evaluation of a file
uses) lets the caller go on instead: each task carries a key (what it writes), a task starts only
after every task of an earlier chunk with the same key has finished, so each key's cells still
see the rows in order and the results are bit for bit those of the barrier; a thread free at
the end of a chunk takes the next chunk's task of a column already done. A chunk's own totals
(``finish``: the counters its tasks filled) are added in chunk order, on the caller's thread,
when it waits for the chunk.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Hashable

__all__ = ["Pipeline"]


class _Chunk:
    __slots__ = ("left", "finish")

    def __init__(self, left: int, finish: Callable[[], None]) -> None:
        self.left = left
        self.finish = finish


class Pipeline:
    """Worker threads running keyed tasks in chunk order per key (see the module notes).

    Parameters
    ----------
    threads : int
        Worker threads (started on the first chunk, stopped by :meth:`close`).

    Notes
    -----
    :meth:`submit` queues a chunk's tasks; :meth:`wait` (the caller's thread) returns once at
    most ``keep`` chunks are unfinished, running the ``finish`` of every finished chunk in chunk
    order; :meth:`close` waits for every chunk and stops the threads. A task's error is raised
    by the next :meth:`wait` or :meth:`close` (the chunks after it are then not finished: the
    sketch is to be dropped, as after any error inside ``update``).
    """

    def __init__(self, threads: int) -> None:
        self.threads = max(1, int(threads))
        self._cond = threading.Condition()
        self._queue: deque[tuple[Hashable, Callable[[], None], _Chunk]] = deque()
        self._busy: set[Hashable] = set()
        self._chunks: deque[_Chunk] = deque()
        self._workers: list[threading.Thread] = []
        self._error: BaseException | None = None
        self._stop = False

    def submit(self, tasks: list[tuple[Hashable, Callable[[], None]]], finish: Callable[[], None]) -> None:
        """Queue one chunk: its ``(key, task)`` pairs, then ``finish`` once they have all run."""
        chunk = _Chunk(len(tasks), finish)
        with self._cond:
            self._chunks.append(chunk)
            self._queue.extend((key, task, chunk) for key, task in tasks)
            self._cond.notify_all()
        if not self._workers:
            for i in range(self.threads):
                t = threading.Thread(target=self._work, name=f"streameval-mc-{i}", daemon=True)
                t.start()
                self._workers.append(t)

    def _next(self) -> tuple[Hashable, Callable[[], None], _Chunk] | None:
        """The first queued task whose key is neither running nor queued for an earlier chunk."""
        seen: set[Hashable] = set()
        for i, item in enumerate(self._queue):
            key = item[0]
            if key not in self._busy and key not in seen:
                del self._queue[i]
                return item
            seen.add(key)
        return None

    def _work(self) -> None:
        while True:
            with self._cond:
                item = None
                while not self._stop and self._error is None and (item := self._next()) is None:
                    self._cond.wait()
                if item is None:
                    return
                self._busy.add(item[0])
            key, task, chunk = item
            error = None
            try:
                task()
            except BaseException as exc:  # handed to the caller's thread
                error = exc
            with self._cond:
                self._busy.discard(key)
                chunk.left -= 1
                if error is not None and self._error is None:
                    self._error = error
                self._cond.notify_all()

    def wait(self, keep: int = 0) -> None:
        """Finish chunks in order until at most ``keep`` are unfinished (raises a task's error)."""
        while True:
            with self._cond:
                while self._error is None and len(self._chunks) > keep and self._chunks[0].left > 0:
                    self._cond.wait()
                if self._error is not None:
                    raise self._error
                if len(self._chunks) <= keep:
                    return
                chunk = self._chunks.popleft()
            chunk.finish()

    def close(self) -> None:
        """Wait for every chunk, then stop the threads (also after an error)."""
        try:
            self.wait(0)
        finally:
            with self._cond:
                self._stop = True
                self._cond.notify_all()
            for t in self._workers:
                t.join()
            self._workers.clear()

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
