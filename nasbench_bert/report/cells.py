"""The within-cell τ of each FlexiBERT (layers, hidden size) cell: the data of ``cells.png``
and of the per-cell table of ``table.md``.

Why per cell: within one cell depth and width are fixed, so a score that only re-reads
the model's size has nothing left to rank there; a τ per cell shows whether a proxy
knows more than the "deeper, then wider" rule, and in which cell.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from ..vocabulary import Space, Kind
from .inputs import EvaluationLike, _ReportData


def _oriented(ev: EvaluationLike, bm: str, sem: str, name: str, x: np.ndarray) -> np.ndarray:
    """``x`` with the score's declared orientation applied (higher = better)."""
    r = ev.rows[(ev.rows.benchmark == bm) & (ev.rows.semantics == sem) & (ev.rows.proxy == name)]
    hib = bool(r.higher_is_better.iloc[0]) if len(r) and "higher_is_better" in r else True
    return x if hib else -x


def cell_taus(ev: EvaluationLike, data: _ReportData, sem: str, name: str) -> pd.DataFrame:
    """The within-cell τ of score ``name`` under ``sem`` in each FlexiBERT (layers, hidden
    size) cell, both forms, each with its bootstrap interval (rows resampled within the
    cell): columns cell, layers, hidden_size, n, and the :data:`metrics.METRICS` estimates
    of ``kendall_tau`` and ``tau_tiebroken`` with ``_ci_low``/``_ci_high``. A score
    constant within a cell gets NaN there."""
    v = ev.values
    m = ((v.benchmark == Space.FLEXIBERT) & (v.semantics == sem)).to_numpy()
    x = _oriented(ev, Space.FLEXIBERT, sem, name, v.loc[m, name].to_numpy(dtype=float))
    y, cells = data.target[m], data.cells[m]
    rows = []
    for c in sorted(set(cells[np.isfinite(cells)])):
        k = cells == c
        xs, ys = x[k], y[k]
        ok = np.isfinite(xs) & np.isfinite(ys)
        row: dict[str, Any] = {"cell": c, "layers": int(c // 10_000), "hidden_size": int(c % 10_000), "n": int(ok.sum())}
        if ok.sum() >= 3 and np.ptp(xs[ok]) > 0:
            est = metrics.rank_metrics(xs[ok], ys[ok], bootstrap=data.bootstrap, seed=data.seed)
        else:
            est = {m_: metrics.Estimate(math.nan) for m_ in ("kendall_tau", "tau_tiebroken")}
        for mname in ("kendall_tau", "tau_tiebroken"):
            e = est[mname]
            row.update({mname: e.value, f"{mname}_ci_low": e.ci_low, f"{mname}_ci_high": e.ci_high})
        rows.append(row)
    return pd.DataFrame(rows)


def _cell_scores(ev: EvaluationLike, sem: str) -> list[str]:
    """The scores cells.png draws under ``sem``: the proxy, the compared, and the
    baselines that vary within some cell (the others are constant there)."""
    r = ev.rows[(ev.rows.benchmark == Space.FLEXIBERT) & (ev.rows.semantics == sem) & (ev.rows.target == "glue")]
    keep = r[r.kind.isin([Kind.CANDIDATE, Kind.COMPARE]) | ((r.kind == Kind.BASELINE) & np.isfinite(
        pd.to_numeric(r.tau_within_cell, errors="coerce")))]
    return [p for p in keep.proxy if p in ev.values]
