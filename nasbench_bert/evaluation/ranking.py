"""Ranking the values: the NaN/inf rule (:func:`ranked_values`) and every score against the
benchmark's targets (:func:`nasbench_bert.scoring.score`), as leaderboard rows by kind.

Why a module of its own: the rule decides which rows every score of a table is ranked on
(NaN rows of the proxy are left out for the baselines too, so all rows of a block count
the same archs) and it must be the same for the table, the verdict and the report.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..semantics import Semantics
from .benchmarks import _BENCHMARK_SPECS
from .call import _Roles, _Run

def ranked_values(x: Any) -> np.ndarray:
    """The NaN/inf rule of :func:`evaluate` on one score's values: NaN stays NaN (left
    out), +inf becomes a value above every finite one and -inf one below (equal
    infinities stay tied), so every rank metric sees +inf as the largest value."""
    v = np.asarray(x, dtype=float).copy()
    fin = v[np.isfinite(v)]
    lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 0.0)
    # the next float beyond the extremes (every metric reads ranks only)
    with np.errstate(over="ignore"):
        above, below = np.nextafter(hi, np.inf), np.nextafter(lo, -np.inf)
    if not (np.isfinite(above) and np.isfinite(below)):  # the extremes are the largest floats: ranks instead
        from scipy.stats import rankdata

        return np.where(np.isnan(v), np.nan, rankdata(np.where(np.isnan(v), 0.0, v)))
    v[v == np.inf] = above
    v[v == -np.inf] = below
    return v


def _nonfinite_note(bm: str, sem: Semantics, name: str, frame: pd.DataFrame) -> str | None:
    """"`name` returned NaN/inf on k of n models" (models: distinct computations), or None."""
    x = frame[name].to_numpy(dtype=float)
    bad = ~np.isfinite(x)
    if not bad.any():
        return None
    keys = frame["model_key"].to_numpy() if "model_key" in frame else np.arange(len(frame))
    n_models, k = len(pd.unique(keys)), len(pd.unique(keys[bad]))
    kinds = [f"{what} on {int(m.sum())}" for what, m in (("NaN", np.isnan(x)), ("+inf", x == np.inf),
                                                          ("-inf", x == -np.inf)) if m.any()]
    return (f"{bm} {sem.key}: `{name}` returned NaN/inf on {k} of {n_models} models ({', '.join(kinds)} of {len(x)} "
            "rows); NaN rows are left out for every score of this table, +inf ranks above every finite value, -inf below")


def _ranked_rows(run: _Run, bm: str, frame: pd.DataFrame, sem: Semantics, roles: _Roles) -> pd.DataFrame | None:
    """The rows of ``frame`` every score is ranked on: those where the proxy is not NaN,
    each score's infinities placed by :func:`ranked_values` (the rule of :func:`evaluate`);
    None when the proxy is NaN on every row (a note says so, as it says on how many
    models it returned NaN or inf)."""
    name = run.name
    note = _nonfinite_note(bm, sem, name, frame)
    if note:
        run.notes.append(note)
    keep = ~np.isnan(frame[name].to_numpy(dtype=float))
    if not keep.any():
        run.notes.append(f"{bm} {sem.key}: `{name}` is NaN on every row; nothing ranked there")
        return None
    ranked = frame.loc[keep].reset_index(drop=True)
    for p in roles.proxies:
        if p in ranked:
            ranked[p] = ranked_values(ranked[p])
    return ranked


def _score_frame(run: _Run, bm: str, ranked: pd.DataFrame, sem: Semantics, roles: _Roles) -> pd.DataFrame:
    """The leaderboard rows of ``ranked`` (:func:`_ranked_rows`): every score against the
    benchmark's targets, with its benchmark, semantics and row kind."""
    from ..scoring import score

    spec = _BENCHMARK_SPECS[bm]
    target = [spec.headline, *spec.task_targets] if run.tasks and spec.task_targets else spec.headline
    scored = score(ranked, target, proxies=roles.proxies, space=bm, control=spec.control, bootstrap=run.bootstrap,
                   seed=run.seed, bench=run.bench)
    scored.insert(0, "kind", scored.proxy.map(roles.kind))
    scored.insert(0, "semantics", sem.key)
    scored.insert(0, "benchmark", bm)
    return scored
