"""Verdicts of the generated pages against the trivial spec rules, with paired differences.

A page that says a proxy is "above" or "below" the trivial rules must compare it with the
rules a search would use, under the figures that do not reward ties: the tie-broken τ
over all archs and the within-cell τ (pairs that share layers and hidden size), against
``depth_then_width`` and ``depth_width_then_size``. Depth's τ-b (0.682) is not such a bar:
depth has two distinct values, and τ-b's tie correction lifts it far above its
tie-broken 0.482 (issue 29).

Two intervals that overlap do not say the two scores are level: both are computed on the
same archs, so their errors are correlated. The comparison here is the *paired*
difference: the metric of the proxy less the metric of the rule on each bootstrap resample
of the archs (the same resamples for both, :func:`nasbench_bert.metrics.resamples`, seed 0
as the tables' intervals), with its 95 % percentile interval (:func:`nasbench_bert.metrics.interval`).
A proxy is "above" a rule when that interval lies above 0, "below" when it lies below,
and "level with" it otherwise.

The differences come from :func:`nasbench_bert.metrics.paired_difference` (the helper
the evaluate verdict uses), the values from the metric functions themselves.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nasbench_bert import metrics
from nasbench_bert.errors import InvalidArgumentError

#: the rules every verdict compares against (both on the as-trained model)
RULES: tuple[str, ...] = ("depth_then_width", "depth_width_then_size")

#: the figures a verdict compares: the tie-broken τ over all archs, and the within-cell τ in both forms
METRICS: tuple[str, ...] = ("tau_tiebroken", "tau_within_cell", "tau_within_cell_tb")

#: how a page names each metric
METRIC_NAMES: dict[str, str] = {"tau_tiebroken": "tie-broken τ", "tau_within_cell": "within-cell τ-b",
                                "tau_within_cell_tb": "within-cell tie-broken τ"}

#: the word for a paired difference whose interval lies above 0, below 0, or spans it; "undefined"
#: where the rule orders no pair under the metric (``depth_then_width`` within a cell)
WORDS: tuple[str, ...] = ("above", "below", "level with", "undefined")


def _metric(name: str) -> Callable[[np.ndarray, np.ndarray, np.ndarray], float]:
    if name == "tau_tiebroken":
        return lambda x, y, cells: metrics.kendall_tau_tiebroken(x, y)
    if name == "tau_within_cell":
        return metrics.tau_within_cell
    if name == "tau_within_cell_tb":
        return metrics.tau_within_cell_tb
    raise InvalidArgumentError(f"metric = {name!r} is not allowed; allowed values: {list(METRICS)}")


def word(ci_low: float, ci_high: float) -> str:
    """"above" when the paired difference's interval lies above 0, "below" when below,
    "level with" when it holds 0, "undefined" without an interval."""
    if not (math.isfinite(ci_low) and math.isfinite(ci_high)):
        return "undefined"
    if ci_low > 0:
        return "above"
    if ci_high < 0:
        return "below"
    return "level with"


@dataclass(frozen=True)
class Comparison:
    """One score against one rule under one metric: both values and their paired difference
    (score less rule) with its 95 % bootstrap interval; NaN where the metric is undefined
    (``depth_then_width`` orders no pair within a cell)."""

    proxy: str
    rule: str
    metric: str
    value: float
    rule_value: float
    diff: float
    ci_low: float
    ci_high: float

    @property
    def word(self) -> str:
        return word(self.ci_low, self.ci_high)

    def as_dict(self) -> dict[str, Any]:
        """The JSON record (the word included, so a page's text can be checked against it)."""
        return {**asdict(self), "word": self.word}


def compare(scores: Mapping[str, Sequence[float] | np.ndarray], y: Sequence[float] | np.ndarray,
            cells: Sequence[float] | np.ndarray, rules: Mapping[str, Sequence[float] | np.ndarray], *,
            metrics_: Sequence[str] = METRICS, bootstrap: int = 1000, seed: int = 0) -> list[Comparison]:
    """Every score of ``scores`` against every rule of ``rules`` under every metric, as
    paired differences over the same ``bootstrap`` resamples of the rows
    (:func:`nasbench_bert.metrics.paired_difference`; higher is better for every score).
    Rows where any score, rule, ``y`` or ``cells`` is not finite are left out of all
    comparisons, so every figure is on the same rows."""
    if bootstrap < 1:
        raise InvalidArgumentError(f"bootstrap = {bootstrap!r} is not allowed; allowed values: an integer >= 1")
    for m in metrics_:
        _metric(m)
    cols = {k: np.asarray(v, dtype=float) for k, v in {**scores, **rules}.items()}
    yy, cc = np.asarray(y, dtype=float), np.asarray(cells, dtype=float)
    ok = np.isfinite(yy) & np.isfinite(cc)
    for k, v in cols.items():
        if len(v) != len(yy):
            raise InvalidArgumentError(f"{k} has {len(v)} values; y has {len(yy)}")
        ok &= np.isfinite(v)
    yy, cc = yy[ok], cc[ok]
    cols = {k: v[ok] for k, v in cols.items()}
    ctx = metrics.RankContext(cells=cc)
    point = {(k, m): _metric(m)(v, yy, cc) for k, v in cols.items() for m in metrics_}
    out = []
    for s in scores:
        for r in rules:
            diff = metrics.paired_difference(cols[s], cols[r], yy, ctx, names=list(metrics_), bootstrap=bootstrap,
                                             seed=seed)
            for m in metrics_:
                d = diff[m]
                out.append(Comparison(s, r, m, point[s, m], point[r, m], d.value, d.ci_low, d.ci_high))
    return out
