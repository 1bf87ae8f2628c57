"""Progress reporting for long evaluations: a rich progress bar on stderr, or a user callback.

Kept apart from the reading loop: :func:`streameval.evaluate.evaluate` only calls
``on_rows(n)`` after each batch; this module decides whether and how that is shown.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

__all__ = ["progress_callback"]



@contextlib.contextmanager
def progress_callback(
    progress: Any, total_rows: int | None, description: str
) -> Iterator[Callable[[int], None] | None]:
    """Yield an ``on_rows(n)`` callback for the reading loop, or None when nothing is shown.

    Parameters
    ----------
    progress : bool or callable or None
        ``True``: a rich progress bar (rows, rows/s, ETA when ``total_rows`` is known) on stderr,
        only when stderr is a terminal. A callable ``f(rows_done, total_rows)`` is called after
        every batch instead. ``False``/``None``: nothing.
    total_rows : int or None
        Rows expected, for the ETA: from file metadata, or estimated from file sizes for text
        files (see :attr:`streameval.sources.Source.rows_estimate`).
    description : str
        Shown next to the bar.
    """
    if callable(progress):
        done = 0

        def call(n: int) -> None:
            nonlocal done
            done += n
            progress(done, total_rows)

        yield call
        return
    if not progress or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns: list[Any] = [TextColumn("[progress.description]{task.description}")]
    if total_rows:
        columns += [BarColumn(), MofNCompleteColumn(), TextColumn("rows"), TimeRemainingColumn()]
    else:
        columns += [TextColumn("{task.completed:,} rows")]
    columns += [TextColumn("{task.fields[rate]}"), TimeElapsedColumn()]
    label = description if len(description) <= 40 else "..." + description[-37:]
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total_rows or None, rate="")

        def update(n: int) -> None:
            bar.advance(task, n)
            speed = bar.tasks[task].speed
            if speed:
                bar.update(task, rate=f"{speed:,.0f} rows/s")

        yield update
