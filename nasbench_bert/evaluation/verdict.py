"""The verdict: the candidate against the ``depth_width_then_size`` rule (:data:`RULE`), on
the headline target, in one line per benchmark and semantics.

Why against that rule: on FlexiBERT-500 "deeper, then wider" alone ranks GLUE above every
training-free proxy published on the benchmark (:mod:`nasbench_bert.proxies.baselines`),
and the rule needs no model, so a proxy earns its cost only by ranking above it - on the tie-broken τ and within cells, where a coarse score cannot
hide behind ties - over the same rows and the same bootstrap resamples
(:func:`nasbench_bert.metrics.paired_difference`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..proxies import registry
from ..semantics import Semantics
from .benchmarks import _BENCHMARK_SPECS
from .call import _Run


#: the rule every verdict is against: depth, then width, then size (a spec-only baseline)
RULE = "depth_width_then_size"


#: the metrics of the verdict, with how the line names them
VERDICT_METRICS: tuple[tuple[str, str], ...] = (("tau_tiebroken", "tie-broken τ"),
                                                ("tau_within_cell_tb", "within-cell τ (ties broken)"))


def _verdict(run: _Run, bm: str, sem: Semantics, ranked: pd.DataFrame, scored: pd.DataFrame) -> None:
    """The candidate against :data:`RULE` on the headline target, on the same rows and the
    same bootstrap resamples (:func:`nasbench_bert.metrics.paired_difference`): the line
    goes in ``run.verdicts``, the differences in the candidate's headline row
    (``rule_diff_<metric>`` with ``_ci_low``/``_ci_high``)."""
    from ..metrics import paired_difference
    from ..scoring import _target_values, rank_context  # the target exactly as score() reads it

    spec, name = _BENCHMARK_SPECS[bm], run.name
    reg = registry.REGISTRY[bm]
    what = f"{bm}, `{sem.key}`, {spec.headline_label}"
    head = scored[scored.target == spec.headline]
    if RULE not in ranked or RULE == name or not (head.proxy == name).any():
        why = "the proxy is the rule itself" if RULE == name else f"no `{RULE}` rule on this benchmark"
        run.verdicts[(bm, sem.key)] = f"**Verdict** ({what}): {why}; read the proxy against the baselines in the table"
        return
    y = _target_values(ranked, spec.headline, run.bench, bm)[0]
    sign = {p: 1.0 if reg[p].higher_is_better else -1.0 for p in (name, RULE)}
    x1, x2 = ranked[name].to_numpy(dtype=float) * sign[name], ranked[RULE].to_numpy(dtype=float) * sign[RULE]
    ctx = rank_context(ranked, bm, run.bench)
    diff = paired_difference(x1, x2, y, ctx, names=[m for m, _ in VERDICT_METRICS], bootstrap=run.bootstrap,
                             seed=run.seed)
    mine, rule = head[head.proxy == name].iloc[0], head[head.proxy == RULE].iloc[0]
    at = head.index[head.proxy == name][0]
    parts, calls = [], []
    for m, label in VERDICT_METRICS:
        d = diff[m]
        for sfx, v in (("", d.value), ("_ci_low", d.ci_low), ("_ci_high", d.ci_high)):
            scored.loc[at, f"rule_diff_{m}{sfx}"] = v
        ci = "" if np.isnan(d.ci_low) else f" [{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
        parts.append(f"{label} {_num(mine.get(m))} vs {_num(rule.get(m))}, paired {_num(d.value, True)}{ci}")
        if np.isnan(d.value):
            calls.append("not comparable (no figure)")
        elif np.isnan(d.ci_low):
            calls.append(("above" if d.value > 0 else "below" if d.value < 0 else "level") + " (no interval)")
        else:
            calls.append("above" if d.ci_low > 0 else "below" if d.ci_high < 0 else "level")
    run.verdicts[(bm, sem.key)] = (f"**Verdict** ({what}, n = {int(mine['n'])}): `{name}` against the `{RULE}` rule: "
                                   f"{calls[0]} on tie-broken τ, {calls[1]} within cells - " + "; ".join(parts)
                                   + " (paired over the same rows and resamples, 95 % bootstrap)")


def _num(v: Any, signed: bool = False) -> str:
    """A figure of the verdict line ("–" where not defined)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "–"
    if f != f:
        return "–"
    return f"{f:+.3f}" if signed else f"{f:.3f}"
