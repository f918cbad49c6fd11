"""Rendering a :func:`~.scores.score` result: a Markdown table whose headers name each τ
and its context, and a scatter plot of one proxy against its target.

Why separate from the scores: a table or a figure only reads what :func:`~.scores.score`
computed (the scatter re-checks the rows the same way, so it draws exactly the points its
τ counts); nothing here computes a figure of its own, and matplotlib is imported only
when a plot is drawn.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputRowsWarning
from ..vocabulary import BenchmarkLike
from .benchmarks import _lookup
from .inputs import _prepare
from .scores import score


#: the to_markdown columns: (value column, interval columns or None, header); the
#: within-stratum columns only where the rows have strata (``arch_strata``)
_MD_COLUMNS: tuple[tuple[str, tuple[str, str] | None, str], ...] = (
    ("kendall_tau", ("tau_ci_low", "tau_ci_high"), "τ-b (scipy)"),
    ("tau_tiebroken", ("tau_tiebroken_ci_low", "tau_tiebroken_ci_high"), "τ, ties broken at random"),
    ("spearman_rho", ("rho_ci_low", "rho_ci_high"), "Spearman ρ"),
    ("tau_pw10", ("tau_pw10_ci_low", "tau_pw10_ci_high"), "10 %-PW τ-b{pw}"),
    ("tau_within_cell", ("tau_within_cell_ci_low", "tau_within_cell_ci_high"), "τ-b within cells{cells}"),
    ("tau_within_cell_tb", ("tau_within_cell_tb_ci_low", "tau_within_cell_tb_ci_high"),
     "τ within cells, ties broken at random"),
    ("tau_within_arch", ("tau_within_arch_ci_low", "tau_within_arch_ci_high"), "τ-b within equal ({strata})"),
    ("tau_within_arch_tb", ("tau_within_arch_tb_ci_low", "tau_within_arch_tb_ci_high"),
     "τ within equal ({strata}), ties broken at random"),
    ("top10_precision", ("top10_precision_ci_low", "top10_precision_ci_high"), "top-10 % precision"),
    ("partial_tau_given_params", None, "partial τ given {size} (Kendall 1942: τ less what both share with {size})"),
)


def _first(scores: pd.DataFrame, col: str) -> str:
    if col not in scores:
        return ""
    vals = [v for v in scores[col] if isinstance(v, str) and v]
    return vals[0] if vals else ""


def to_markdown(scores: pd.DataFrame, digits: int = 3, *, intervals: bool = True) -> str:
    """A Markdown table of a score() result; each header names its τ (τ-b is scipy's,
    ties corrected; the tie-broken τ is the expected τ-b with the score's ties broken
    at random) and what the 10 %-PW size, the cells and the controls were. Values come
    with their 95 % bootstrap interval where one was computed (``intervals``); "–" is
    not defined (e.g. the within-cell τ of a score constant in every cell)."""
    pw, cells, strata = _first(scores, "pw10_size"), _first(scores, "cells"), _first(scores, "arch_strata")
    fmt = {"pw": f" (size: {pw})" if pw else "", "cells": f" {cells}" if cells else "",
           "strata": strata or "the strata", "size": _first(scores, "size_control") or "the size column"}
    cols = ["proxy"] + (["target"] if "target" in scores and scores["target"].nunique() > 1 else []) + \
        (["n"] if "n" in scores else [])
    # without strata (NAS-Bench-NLP) the within-arch columns hold only NaN and say nothing: left out
    spec = [(c, ci, h.format(**fmt)) for c, ci, h in _MD_COLUMNS
            if c in scores and (strata or not c.startswith("tau_within_arch") or scores[c].notna().any())]
    head = "| " + " | ".join([*cols, *(h for _, _, h in spec)]) + " |\n|" + "---|" * (len(cols) + len(spec)) + "\n"

    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return "–" if not np.isfinite(v) else f"{v:.{digits}f}"
        return str(v)

    body = ""
    for _, r in scores.iterrows():
        parts = [cell(r[c]) for c in cols]
        for c, ci, _ in spec:
            v = r[c]
            txt = cell(v)
            if intervals and ci is not None and all(k in r for k in ci) and txt != "–" and \
                    all(isinstance(r[k], (float, np.floating)) and np.isfinite(r[k]) for k in ci):
                txt += f" [{r[ci[0]]:.{digits}f}, {r[ci[1]]:.{digits}f}]"
            parts.append(txt)
        body += "| " + " | ".join(parts) + " |\n"
    return head + body


def scatter(values: pd.DataFrame, proxy: str, target: str | pd.Series, path: str | Path, *, space: str = "flexibert",
            bench: BenchmarkLike | None = None, logx: bool | None = None, duplicates: str = "error",
            unknown_ids: str = "error") -> Path:
    """Scatter plot of a proxy against a target with tau and rho in the title (PNG): the
    rows :func:`score` scores (``duplicates`` and ``unknown_ids`` as there), so the plot
    shows the points its τ counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = score(values, target, proxies=[proxy], space=space, control=None, bootstrap=0, bench=bench,
              duplicates=duplicates, unknown_ids=unknown_ids).iloc[0]
    with warnings.catch_warnings():  # score() above said what was merged or dropped
        warnings.simplefilter("ignore", InputRowsWarning)
        prep = _prepare(values, target, proxies=[proxy], space=space, control=None, bench=bench, duplicates=duplicates,
                        unknown_ids=unknown_ids)
    df = prep.frame
    if isinstance(target, pd.Series):
        target = target.reset_index(drop=True).iloc[prep.rows]
    y = target.to_numpy(dtype=float) if isinstance(target, pd.Series) else (
        df[target].to_numpy(dtype=float) if target in df else _lookup(df, target, bench, space))
    x = df[proxy].to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(5, 4), dpi=120)
    ax.scatter(x, y, s=6, alpha=0.6)
    if logx or (logx is None and np.nanmin(x) > 0 and np.nanmax(x) / max(np.nanmin(x), 1e-300) > 1e3):
        ax.set_xscale("log")
    ax.set_xlabel(proxy)
    ax.set_ylabel(target if isinstance(target, str) else str(target.name))
    ax.set_title(f"{proxy}: Kendall τ = {s.kendall_tau:.3f}, Spearman ρ = {s.spearman_rho:.3f} (n = {s.n})", fontsize=8)
    fig.tight_layout()
    from ..atomic import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path
