"""How ``docs/published.md`` prints a figure (shared by its sections and NSC's rows): one
place, so that a test that recomputes a figure can print it the page's way and compare
the printed digits."""

from __future__ import annotations

import math
from typing import Any

#: a verdict word as a table cell prints it
SHORT = {"above": "above", "below": "below", "level with": "level", "undefined": "undefined"}


def figures(d: dict[str, float], keys: tuple[str, ...] = ("tau", "tau_tb", "rho", "pw10"), full: float = 500,
            ci: tuple[str, ...] = ("tau",)) -> str:
    """tau-b [95 % interval] / tie-broken tau / rho / 10 %-PW tau (the figures in ``keys``,
    with intervals for those in ``ci``), and n where fewer than ``full`` archs."""
    def one(k: str) -> str:
        v = d.get(k)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        lo = d.get(f"{k}_lo")
        if k in ci and lo is not None and not math.isnan(lo):
            return f"{v:.3f} [{lo:.2f}, {d[f'{k}_hi']:.2f}]"
        return f"{v:.3f}"
    n = d.get("n")
    return " / ".join(one(k) for k in keys) + (f" (n = {int(n)})" if n is not None and n < full else "")


def number(v: float | None) -> str:
    """A figure, or "–" where it is undefined (a constant score has no tau)."""
    return "–" if v is None or math.isnan(v) else f"{v:.3f}"


def difference(e: dict[str, Any]) -> str:
    """A paired difference: +0.012 [-0.010, +0.034]."""
    if e["value"] is None or math.isnan(e["value"]):
        return "–"
    return f"{e['value']:+.3f} [{e['lo']:+.3f}, {e['hi']:+.3f}]"


def estimate(e: dict[str, float]) -> str:
    """An estimate with its interval: 0.12 [0.05, 0.19]."""
    return f"{e['value']:.2f} [{e['lo']:.2f}, {e['hi']:.2f}]"


def verdict_cell(v: dict[str, Any]) -> str:
    """A paired difference and its short verdict word, as a table cell."""
    return f"{difference(v)} {SHORT[v['word']]}"
