"""Progress of a long command on stderr: transient bars on a terminal; elsewhere (a log file, CI)
a line every few seconds with what is done, the rate and the time left::

    distinct programs: 5,120 of 10,786 (47.5 %), 84.2/s, ETA 1 min 07 s"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["progress_bars", "ProgressLog", "duration"]

Progress = Callable[[int, int], None]


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 07 s``, ``1 h 02 min``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class ProgressLog:
    """One step's progress as lines, at most one every ``interval`` seconds (and the last one)."""

    def __init__(self, description: str, write: Callable[[str], None], *, interval: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.description = description
        self.write = write
        self.interval = interval
        self.clock = clock
        self.start: float | None = None
        self.first_done = 0
        self.last_line = float("-inf")
        self.ended = False

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if self.start is None:
            self.start, self.first_done = now, done
        finished = total > 0 and done >= total
        if self.ended or not (finished or now - self.last_line >= self.interval) or (done == 0 and not finished):
            return
        self.last_line = now
        self.ended = finished
        elapsed = now - self.start
        rate = (done - self.first_done) / elapsed if elapsed > 0 else 0.0
        share = f" ({100 * done / total:.1f} %)" if total else ""
        line = f"{self.description}: {done:,} of {total:,}{share}"
        if finished:
            line += f", done in {duration(elapsed)}"
        elif rate > 0:
            line += f", {rate:,.1f}/s, ETA {duration((total - done) / rate)}"
        self.write(line)


@contextmanager
def progress_bars(console: Any, *, interval: float = 5.0) -> Iterator[Callable[[str], Progress]]:
    """A factory from a step's description to its ``(done, total)`` callback: a transient bar
    when ``console`` (a rich console on stderr) is a terminal, else a :class:`ProgressLog`."""
    if console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bars, TextColumn, TimeElapsedColumn

        with Bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:

            def factory(description: str) -> Progress:
                task = bar.add_task(description, total=None)
                return lambda done, total: bar.update(task, completed=done, total=total)

            yield factory
        return

    def write(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    yield lambda description: ProgressLog(description, write, interval=interval)
