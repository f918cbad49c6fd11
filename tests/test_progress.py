"""Progress off a terminal: plain periodic lines, nothing for short work, a bar on a terminal."""

from __future__ import annotations

import io

from nasbench_bert.progress import Progress


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_plain_lines_every_interval(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("nasbench_bert.progress.time.monotonic", clock)
    out = io.StringIO()  # not a terminal
    with Progress("sweep", 10, stream=out, every=30) as p:
        for _ in range(10):
            clock.t += 10
            p.advance()
    lines = out.getvalue().splitlines()
    assert lines[0] == "sweep: 3/10 (30 %), 30s elapsed, about 1m10s left"
    assert lines[-1] == "sweep: done, 10/10 (100 %), 1m40s elapsed" and len(lines) == 4


def test_short_work_prints_nothing_and_disabled_prints_nothing(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("nasbench_bert.progress.time.monotonic", clock)
    out = io.StringIO()
    with Progress("small", 2, stream=out, every=30) as p:
        clock.t += 5
        p.advance(2)
    with Progress("off", 2, stream=out, every=0, enabled=False) as p:
        p.advance(2)
    assert out.getvalue() == ""


def test_unknown_total_and_interrupted(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("nasbench_bert.progress.time.monotonic", clock)
    out = io.StringIO()
    try:
        with Progress("search", 0, stream=out, every=1) as p:
            clock.t += 2
            p.advance()
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert out.getvalue().splitlines() == ["search: 1 done, 2s elapsed", "search: stopped, 1 done, 2s elapsed"]


def test_terminal_gets_a_bar():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    with Progress("bar", 3, stream=out) as p:
        p.advance(3)
    assert "bar" in out.getvalue() and "100%" in out.getvalue() and "\x1b[" in out.getvalue()  # a live bar
