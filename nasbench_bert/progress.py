"""Progress of long work, on a terminal and off it.

Why its own module: sweeps (proxies, hardware, evaluation), searches and builds run for
minutes. On a terminal a live bar is right; in a CI log, a pipe or ``nohup`` a bar
prints nothing until the end (or garbage), and the user cannot tell a slow run from a
hung one. :class:`Progress` draws rich's bar when its stream is a terminal and otherwise
prints one plain line every ``every`` seconds - done/total, elapsed, an estimate of what
is left - and a last line when the work ends. Work that ends within ``every`` seconds
prints nothing off a terminal (a search's many small proxy sweeps would flood a log).
``$NASBENCH_BERT_PROGRESS_SECONDS`` sets that interval (e.g. 300 for a quiet batch log).
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Any, TextIO

#: seconds between two plain lines when the stream is not a terminal (the default of
#: ``$NASBENCH_BERT_PROGRESS_SECONDS``)
EVERY = 30.0


def _every() -> float:
    raw = os.environ.get("NASBENCH_BERT_PROGRESS_SECONDS", "")
    try:
        return max(0.0, float(raw)) if raw else EVERY
    except ValueError:
        return EVERY  # a progress display never stops the work it reports on


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")


class Progress:
    """``with Progress("hardware (120 models)", 120) as p: ... p.advance()``.

    ``enabled=False`` prints nothing. ``stream`` defaults to stderr (so a command's own
    output on stdout stays clean); ``every`` is the plain-line interval (default:
    ``$NASBENCH_BERT_PROGRESS_SECONDS``, else :data:`EVERY`)."""

    def __init__(self, label: str, total: int, *, enabled: bool = True, stream: TextIO | None = None,
                 every: float | None = None):
        self.label, self.total, self.enabled = label, int(total), enabled
        self.every = _every() if every is None else float(every)
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._bar: Any = None
        self._task: Any = None
        self._t0 = self._last = 0.0
        self._printed = False

    @property
    def is_terminal(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def __enter__(self) -> "Progress":
        self._t0 = self._last = time.monotonic()
        if self.enabled and self.is_terminal:
            from rich.console import Console
            from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            # rich's default columns, but the label drawn verbatim: it can hold user input
            # (a proxy name, a path) that markup and emoji codes would rewrite
            columns = (TextColumn("{task.description}", style="progress.description", markup=False), BarColumn(),
                       TaskProgressColumn(), TimeRemainingColumn())
            self._bar = Bar(*columns, console=Console(file=self.stream, markup=False, emoji=False), transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
        elif self.enabled and time.monotonic() - self._last >= self.every:
            self._line("")

    def _line(self, what: str) -> None:
        self._printed = True
        now = time.monotonic()
        self._last = now
        spent = now - self._t0
        left = ""
        if 0 < self.done < self.total:
            left = f", about {_clock(spent / self.done * (self.total - self.done))} left"
        count = f"{self.done}/{self.total} ({100 * self.done / self.total:.0f} %)" if self.total > 0 else f"{self.done} done"
        msg = f"{self.label}: {what + ', ' if what else ''}{count}, {_clock(spent)} elapsed{left}"
        print(msg, file=self.stream, flush=True)

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(et, ev, tb)
        elif self.enabled and (self._printed or time.monotonic() - self._t0 >= self.every):
            self._line("stopped" if et is not None else "done")
