"""The figures of ``docs/published.md`` and of NSC's rows on it (``studies/nsc_rows.py``):
every tau, rho and paired difference, computed with the package's public metrics
(:mod:`nasbench_bert.metrics`), and the verdict word a paired interval gives.

Why a module of its own: the page's summary and NSC's rows both score values this way,
and neither may import the other (the page's generator imports NSC's rows). A reader who
recomputes a figure from the proxy-values table and the page's companion file uses these
functions, or :func:`nasbench_bert.metrics.rank_metrics` with the same bootstrap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from studies.verdicts import word  # the leaderboard's one verdict rule ("undefined" without an interval)

#: bootstrap resamples of the archs behind every interval on the page (seed 0)
BOOTSTRAP = 200
#: the trivial rules every verdict on the page compares with (as-trained counts)
RULES = ("depth_then_width", "depth_width_then_size")
#: the figures a verdict compares: the tie-broken tau over all archs and within cells
VERDICT_METRICS = ("tau_tiebroken", "tau_within_cell_tb")


def metrics(x: Any, y: Any, size: Any | None = None) -> dict[str, float]:
    """tau-b, tie-broken tau, rho and (with ``size``) NSC's 10 %-PW tau of ``x`` against
    ``y``, each tau and rho with its 95 % bootstrap interval
    (:func:`nasbench_bert.metrics.rank_metrics`: :data:`BOOTSTRAP` resamples of the archs,
    seed 0), rounded to 4 decimals."""
    from nasbench_bert import metrics as mt

    x, y = np.asarray(x, float), np.asarray(y, float)
    ctx = mt.RankContext(size=None if size is None else np.asarray(size, float))
    est = mt.rank_metrics(x, y, ctx, bootstrap=BOOTSTRAP, seed=0)
    out = {"n": float(len(x))}
    for key, name in (("tau", "kendall_tau"), ("tau_tb", "tau_tiebroken"), ("rho", "spearman_rho")):
        e = est[name]
        out.update({key: e.value, f"{key}_lo": e.ci_low, f"{key}_hi": e.ci_high})
    if size is not None:
        out["pw10"] = est["tau_pw10"].value
    return {k: round(v, 4) for k, v in out.items()}


def resample_index(n: int) -> list[np.ndarray]:
    """The rows of each bootstrap resample (the same resamples as every interval here)."""
    from nasbench_bert import metrics as mt

    return [np.repeat(np.arange(n), c.astype(int)) for c in mt.resamples(n, BOOTSTRAP, 0)]


def estimate(value: float, resampled: np.ndarray) -> dict[str, float]:
    """A value with the 95 % interval of its resampled values, rounded to 4 decimals."""
    from nasbench_bert import metrics as mt

    e = mt.interval(float(value), np.asarray(resampled, float))
    return {"value": round(e.value, 4), "lo": round(e.ci_low, 4), "hi": round(e.ci_high, 4)}


def paired(x1: np.ndarray, x2: np.ndarray, y: np.ndarray, cells: np.ndarray) -> dict[str, dict[str, float]]:
    """metric(x1) - metric(x2) for tau-b, tie-broken tau, the within-cell tie-broken tau
    and rho, each with the 95 % interval of the difference over the same resamples."""
    from nasbench_bert import metrics as mt

    ctx = mt.RankContext(cells=np.asarray(cells, float))
    d = mt.paired_difference(x1, x2, y, ctx, names=("kendall_tau", *VERDICT_METRICS), bootstrap=BOOTSTRAP, seed=0)
    out = {k: {"value": round(e.value, 4), "lo": round(e.ci_low, 4), "hi": round(e.ci_high, 4)} for k, e in d.items()}
    idx = resample_index(len(y))
    rho = [mt.spearman_rho(x1[i], y[i]) - mt.spearman_rho(x2[i], y[i]) for i in idx]
    out["spearman_rho"] = estimate(mt.spearman_rho(x1, y) - mt.spearman_rho(x2, y), np.array(rho))
    return out


def gap_closed(random: np.ndarray, text: np.ndarray, y: np.ndarray, paper: float) -> dict[str, Any]:
    """How much of the gap between a paper's rho and the random-token rho the text batch
    closes: (rho_text - rho_random) / (paper - rho_random), with its 95 % interval over
    resamples of the archs (the paper's figure held fixed: its own error is not known)."""
    from nasbench_bert import metrics as mt

    def frac(i: np.ndarray) -> float:
        r = mt.spearman_rho(random[i], y[i])
        return (mt.spearman_rho(text[i], y[i]) - r) / (paper - r)

    idx = resample_index(len(y))
    return {"paper_rho": paper, "fraction": estimate(frac(np.arange(len(y))), np.array([frac(i) for i in idx]))}


def verdict(x: np.ndarray, rules: dict[str, np.ndarray], y: np.ndarray, cells: np.ndarray) -> dict[str, Any]:
    """``x`` against each of :data:`RULES` (their values on the same archs): the paired
    differences of :data:`VERDICT_METRICS`, each with its word."""
    out: dict[str, Any] = {}
    for r in RULES:
        d = paired(x, rules[r], y, cells)
        out[r] = {k: {**d[k], "word": word(d[k]["lo"], d[k]["hi"])} for k in VERDICT_METRICS}
    return out


def metric_value(name: str, x: np.ndarray, y: np.ndarray, cells: np.ndarray) -> float:
    """One of :data:`VERDICT_METRICS` of ``x`` against ``y``, without an interval."""
    from nasbench_bert import metrics as mt

    return mt.kendall_tau_tiebroken(x, y) if name == "tau_tiebroken" else mt.tau_within_cell_tb(x, y, cells)
