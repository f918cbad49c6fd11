"""Beyond the field: a training-free score that ranks GLUE inside the (layers, hidden size)
cells, where the real choice is. The table behind ``docs/beyond.md``.

    python -m studies.beyond [--out docs/beyond.md] [--render-only]

The target (issue 21, item 4): ``tau_within_cell`` >= 0.40 and tie-broken tau >= 0.78
against GLUE, on the model that was trained (semantics ``as_trained``).

Every attempt is a lexicographic score: the arch's (layers, hidden size) cell first
("deeper, then wider", which already reaches tau-b 0.80), then, inside the cell, one
score ``X``. No constant is fitted on GLUE. What *is* chosen by looking at GLUE (which
feature or which combination, and each feature's sign) is chosen on ids 0-249 only, by
one mechanical rule (the largest ``tau_within_cell`` on ids 0-249), and every figure is
reported on ids 250-499 as well, with 95 % bootstrap intervals
(:func:`nasbench_bert.metrics.rank_metrics`). Combinations are plain averages of
within-cell ranks (equal weights, no fitting); ranks are taken within each cell over all
500 archs, which reads no GLUE.

Live proxies are the proxy-values table's as_trained values (``bench.proxy_values``,
through :mod:`studies.table_values`; the JSON records its sha256): nothing is computed.
``--render-only`` rewrites the page from the JSON beside it
(``docs/beyond.json``) without computing anything: the default test suite checks that
the committed page is exactly that rendering, and recomputes the spec-only figures.
"""

from __future__ import annotations

import argparse
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "beyond.md"
SEMANTICS = "as_trained"
#: the half every GLUE-informed choice is made on, and the half it is reported on
SELECT_IDS = tuple(range(0, 250))
HELD_IDS = tuple(range(250, 500))
TARGET_WITHIN = 0.40
TARGET_TIEBROKEN = 0.78
BOOTSTRAP = 1000
SEED = 0
#: the live proxies of the project's as_trained sweep (random tokens 8 x 128, seed 0,
#: gradient objective: a random projection of the output)
LIVE_PROXIES = (
    "synaptic_diversity", "synaptic_diversity_norm", "synaptic_saliency", "synaptic_saliency_norm",
    "activation_distance", "activation_distance_norm", "jacobian_covariance", "jacobian_cosine", "num_params",
    "head_importance", "head_importance_norm", "head_confidence", "head_confidence_norm", "head_softmax_confidence",
    "head_softmax_confidence_norm", "snip", "grad_norm", "synflow", "naswot", "flops", "ntkt", "sept",
    "sept_all_linear",
)
#: the live proxies added since (issue 29), so the attempts see every proxy the package ships;
#: ZeroLM's fitted alpha is left out (its closed form without alpha is ``nsc_model``'s family,
#: and its alpha was chosen on GLUE). Every live value comes from the proxy-values table.
LATER_PROXIES: tuple[str, ...] = ("w_pca", "nonembedding_params", "lpzero", "swap", "w_pca_first", "nsc_model", "epe_nas",
                                  "fisher", "grasp", "l2_norm", "plain", "zen", "zico", "meco")
#: how many of the best single features (on ids 0-249) enter a rank-average search, and
#: the most features averaged: a fixed, small search so that the held-out half can tell
#: selection luck from signal
POOL = 10
MAX_K = 4
#: the metrics each row shows (names of nasbench_bert.metrics.METRICS)
SHOWN = ("kendall_tau", "tau_tiebroken", "tau_within_cell", "tau_within_cell_tb", "tau_within_arch",
         "tau_within_arch_tb", "tau_pw10", "spearman_rho")


#: live values closer than this (relative to the larger) are one value: see :func:`snap_near_ties`
NEAR_TIE_REL = 1e-9


def snap_near_ties(v: np.ndarray, rel: float = NEAR_TIE_REL) -> np.ndarray:
    """``v`` with every run of values whose neighbours (in sorted order) lie within
    ``rel`` of each other replaced by the run's smallest value, so they tie exactly.

    Why: archs whose as-trained models are the same network up to the order of the sums
    (e.g. the same layers in another order) get live values that agree to the last few
    bits, and which of the two is larger is decided by rounding: by the torch thread
    count, the executor, the CPU's vector kernels. Synflow on ids 250-499 has 49 such
    pairs (relative gaps 1e-16 to 4e-15; the next gap is above 1e-4), and breaking them
    one way or the other moves its within-cell tau-b from 0.136 to 0.163: the committed
    page said +0.145 and a rerun elsewhere +0.156 (issue 28). Values equal to 1e-9 are
    the same measurement, so they are made one; the figures then no longer depend on the
    machine. Rounding noise is about 1e-16 relative in float64 and 1e-7 in float32, and
    the real gaps are far larger, so the threshold sits in an empty stretch.
    """
    v = np.asarray(v, dtype=float)
    out = v.copy()
    order = np.argsort(v, kind="stable")
    sv = v[order]
    finite = np.isfinite(sv)
    start = 0
    for k in range(1, len(sv) + 1):
        if k == len(sv) or not (finite[k] and finite[k - 1]) or \
                abs(sv[k] - sv[k - 1]) > rel * max(abs(sv[k]), abs(sv[k - 1])):
            if finite[start]:
                out[order[start:k]] = sv[start]
            start = k
    return out


# -- features ----------------------------------------------------------------------------------------
def spec_features(archs: list[Any]) -> dict[str, dict[str, np.ndarray]]:
    """Spec features of each arch, by family: ``aggregate`` (sums over the layers),
    ``operations`` (counts of operation types and parameters: the TF code trained every
    layer as scaled dot-product attention, so these test that finding), ``position``
    (one layer's fields: first, second, second-to-last, last; and the feed-forward count
    of every layer but the last). All higher-is-more; the sign is chosen later."""
    from nasbench_bert import Arch
    from nasbench_bert.sizes import flexibert_num_params

    a = [Arch.coerce(x) for x in archs]

    def f(fn: Callable[[Any], float]) -> np.ndarray:
        return np.array([fn(x) for x in a], dtype=float)

    agg = {
        "total heads": f(lambda x: sum(la.num_operation_heads for la in x.layers)),
        "mean heads per layer": f(lambda x: np.mean([la.num_operation_heads for la in x.layers])),
        "feed-forward layers": f(lambda x: sum(la.num_feed_forward for la in x.layers)),
        "feed-forward dimension, summed": f(lambda x: sum(la.feed_forward_dimension for la in x.layers)),
        "feed-forward units (dimension x count)":
            f(lambda x: sum(la.feed_forward_dimension * la.num_feed_forward for la in x.layers)),
        "deep feed-forward units (dimension x (count - 1))":
            f(lambda x: sum(la.feed_forward_dimension * (la.num_feed_forward - 1) for la in x.layers)),
        "parameters (as_trained)": f(lambda x: flexibert_num_params(x, "as_trained")),
        "parameters (as_specified)": f(lambda x: flexibert_num_params(x, "as_specified")),
    }
    ops = {f"{t} layers": f(lambda x, t=t: sum(la.operation_type == t for la in x.layers)) for t in ("SA", "LT", "DSC")}
    ops.update({f"{t}-{p} layers": f(lambda x, t=t, p=p: sum(la.operation_type == t and str(la.operation_parameter) == p
                                                             for la in x.layers))
                for t, p in (("SA", "SDP"), ("SA", "WMA"), ("LT", "DFT"), ("LT", "DCT"), ("DSC", "5"), ("DSC", "9"))})
    pos: dict[str, np.ndarray] = {}
    for where, i in (("first", 0), ("second", 1), ("second-to-last", -2), ("last", -1)):
        pos[f"{where} layer: heads"] = f(lambda x, i=i: x.layers[i].num_operation_heads)
        pos[f"{where} layer: feed-forward count"] = f(lambda x, i=i: x.layers[i].num_feed_forward)
        pos[f"{where} layer: feed-forward dimension"] = f(lambda x, i=i: x.layers[i].feed_forward_dimension)
        pos[f"{where} layer: is SA"] = f(lambda x, i=i: x.layers[i].operation_type == "SA")
    pos["feed-forward layers, all but the last layer"] = f(lambda x: sum(la.num_feed_forward for la in x.layers[:-1]))
    return {"aggregate": agg, "operations": ops, "position": pos}


def within_cell_rank(v: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Each value's rank inside its cell, scaled to [0, 1] (average ranks for ties)."""
    from scipy.stats import rankdata

    out = np.zeros(len(v))
    for c in np.unique(cells):
        m = cells == c
        out[m] = (rankdata(v[m]) - 1) / max(int(m.sum()) - 1, 1)
    return out


def lexicographic(cell_order: np.ndarray, x: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """The cell first (``cell_order``: layers * 10**4 + hidden, the ``depth_then_width``
    baseline's encoding), then ``x`` inside the cell (as its within-cell rank / 2, which
    stays below the smallest gap between cells)."""
    return cell_order + 0.5 * within_cell_rank(x, cells)


@dataclass(frozen=True)
class Component:
    """One feature with the sign chosen for it on ids 0-249."""

    name: str
    sign: int

    def label(self) -> str:
        return ("−" if self.sign < 0 else "") + self.name


def combine(components: tuple[Component, ...], features: dict[str, np.ndarray], cells: np.ndarray) -> np.ndarray:
    """The plain mean of the components' signed within-cell ranks (no weights)."""
    return np.mean([within_cell_rank(c.sign * features[c.name], cells) for c in components], axis=0)


# -- selection on ids 0-249 ---------------------------------------------------------------------
def _wc(x: np.ndarray, y: np.ndarray, cells: np.ndarray) -> float:
    from nasbench_bert import metrics as mt

    return mt.tau_within_cell(x, y, cells)


def orient(names: list[str], features: dict[str, np.ndarray], y: np.ndarray, cells: np.ndarray,
           sel: np.ndarray) -> list[tuple[Component, float]]:
    """Each feature with the sign that gives the larger within-cell tau on the selection
    half, and that tau, best first (ties by name)."""
    out = []
    for n in names:
        t = _wc(features[n][sel], y[sel], cells[sel])
        if not math.isfinite(t):
            continue
        out.append((Component(n, 1 if t >= 0 else -1), abs(t)))
    return sorted(out, key=lambda p: (-p[1], p[0].name))


def best_single(names: list[str], features: dict[str, np.ndarray], y: np.ndarray, cells: np.ndarray,
                sel: np.ndarray) -> tuple[Component, ...]:
    return (orient(names, features, y, cells, sel)[0][0],)


def best_average(names: list[str], features: dict[str, np.ndarray], y: np.ndarray, cells: np.ndarray,
                 sel: np.ndarray) -> tuple[tuple[Component, ...], int]:
    """The rank average (of 1 to :data:`MAX_K` of the :data:`POOL` best single features,
    each with its chosen sign) with the largest within-cell tau on the selection half;
    ties go to fewer features, then to the earlier combination. Returns it and the
    number of combinations tried."""
    pool = [c for c, _ in orient(names, features, y, cells, sel)[:POOL]]
    ranks = {c.name: within_cell_rank(c.sign * features[c.name], cells) for c in pool}
    best: tuple[float, tuple[Component, ...]] = (-math.inf, ())
    tried = 0
    for k in range(1, MAX_K + 1):
        for combo in itertools.combinations(pool, k):
            tried += 1
            s = np.mean([ranks[c.name] for c in combo], axis=0)
            t = _wc(s[sel], y[sel], cells[sel])
            if t > best[0] + 1e-12:
                best = (t, combo)
    return best[1], tried


# -- inputs and figures -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    """Everything the attempts read, one row per id 0-499 (in id order)."""

    ids: np.ndarray
    glue: np.ndarray
    archs: list[str]
    cells: np.ndarray
    cell_order: np.ndarray
    context: Any
    baselines: dict[str, np.ndarray]
    families: dict[str, dict[str, np.ndarray]]
    #: live proxies left out of the attempts, with the number of archs where they are not finite
    left_out: dict[str, int] = field(default_factory=dict)


def load_inputs(*, live: bool = True, bench: Any = None) -> Inputs:
    """The benchmark's GLUE, the package's trivial baselines and rank context, the spec
    features, and (``live``) the as_trained live proxies from the proxy-values table
    (``bench``: a loaded :class:`~nasbench_bert.Benchmark`, default the user cache's)."""
    import pandas as pd

    from nasbench_bert import Benchmark, scoring

    from studies.table_values import live as table_live

    bench = Benchmark.load() if bench is None else bench
    flex = bench.to_pandas().sort_values("id").reset_index(drop=True)
    rows = pd.DataFrame({"id": flex["id"].astype(int)})
    ctx = scoring.rank_context(rows, bench=bench)
    base = scoring.baseline_values(rows, semantics=SEMANTICS, bench=bench)
    families = spec_features(list(flex["arch"]))
    left_out: dict[str, int] = {}
    if live:
        df = table_live(bench, SEMANTICS, [*LIVE_PROXIES, *LATER_PROXIES])
        if (df["id"].to_numpy() != rows["id"].to_numpy()).any() or df[list(LIVE_PROXIES)].isna().any().any():
            raise RuntimeError("the proxy-values table lacks live values for some ids")
        live_values = {n: snap_near_ties(df[n].to_numpy(float)) for n in LIVE_PROXIES}
        for n in LATER_PROXIES:  # a proxy undefined on some archs (NaN) cannot rank them: left out, and said so
            v = df[n].to_numpy(float)
            if np.isfinite(v).all():
                live_values[n] = snap_near_ties(v)
            else:
                left_out[n] = int((~np.isfinite(v)).sum())
        families = {"live": live_values, **families}
    return Inputs(rows["id"].to_numpy(), flex["glue"].to_numpy(float), list(flex["arch"]), np.asarray(ctx.cells),
                  base["depth_then_width"].to_numpy(float), ctx, {c: base[c].to_numpy(float) for c in base.columns},
                  families, left_out)


def figures(score: np.ndarray, inp: Inputs, half: tuple[int, ...], bootstrap: int = BOOTSTRAP) -> dict[str, list[float]]:
    """The shown metrics of ``score`` on the ids of ``half``: [value, 95 % low, high]."""
    from nasbench_bert import metrics as mt

    m = np.isin(inp.ids, half)
    est = mt.rank_metrics(score[m], inp.glue[m], inp.context.take(m), bootstrap=bootstrap, seed=SEED)
    return {k: [round(est[k].value, 4), round(est[k].ci_low, 4), round(est[k].ci_high, 4)] for k in SHOWN}


#: the trivial baselines and reference scores shown beside every attempt
BASELINES = (
    ("depth", "number of layers"),
    ("hidden_size", "hidden size"),
    ("total_heads", "total heads"),
    ("depth_then_width", "layers, then hidden size"),
    ("depth_width_then_size", "layers, then hidden size, then the as_trained parameter count"),
    ("param_count", "as_trained parameter count"),
)


@dataclass(frozen=True)
class Attempt:
    """One attempt: which features it may use and how it chooses among them."""

    key: str
    title: str
    families: tuple[str, ...]
    how: str  # "single" or "average"
    why: str


ATTEMPTS = (
    Attempt("live_single", "one live proxy", ("live",), "single",
            "the project's 23 live proxies on the trained model; the best one on ids 0-249, with its sign"),
    Attempt("aggregate_single", "one spec aggregate", ("aggregate",), "single",
            "heads, feed-forward counts and widths, parameter counts, summed over the layers"),
    Attempt("operations_single", "operation types only", ("operations",), "single",
            "counts of SA / LT / DSC layers and of each operation parameter: the TF code trained every layer as "
            "scaled dot-product attention, so these should carry nothing inside a cell"),
    Attempt("position_single", "one layer position's field", ("position",), "single",
            "heads, feed-forward count and width, SA or not, of the first, second, second-to-last and last layer"),
    Attempt("live_average", "rank average of live proxies", ("live",), "average",
            f"the mean within-cell rank of 1-{MAX_K} of the {POOL} best live proxies on ids 0-249"),
    Attempt("live_aggregate_average", "rank average of live proxies and spec aggregates", ("live", "aggregate"),
            "average", f"the same search over the {POOL} best of live proxies and spec aggregates"),
    Attempt("spec_average", "rank average of spec features only", ("aggregate", "operations", "position"),
            "average", f"the same search over the {POOL} best spec features (no model built)"),
    Attempt("all_average", "rank average of everything", ("live", "aggregate", "operations", "position"), "average",
            f"the same search over the {POOL} best of every feature above"),
)


def features_of(inp: Inputs, families: tuple[str, ...]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for fam in families:
        out.update({(f"live: {k}" if fam == "live" else k): v for k, v in inp.families[fam].items()})
    return out


def attempt_score(inp: Inputs, components: list[dict[str, Any]], families: tuple[str, ...]) -> np.ndarray:
    """The lexicographic score of an attempt's recorded components (from the JSON)."""
    feats = features_of(inp, families)
    comps = tuple(Component(c["name"], int(c["sign"])) for c in components)
    return lexicographic(inp.cell_order, combine(comps, feats, inp.cells), inp.cells)


def summarize(inp: Inputs) -> dict[str, Any]:
    """Every attempt's choice (on ids 0-249) and figures on both halves, the baselines."""
    sel = np.isin(inp.ids, SELECT_IDS)
    out_attempts = []
    for att in ATTEMPTS:
        if any(f not in inp.families for f in att.families):
            continue
        feats = features_of(inp, att.families)
        names = sorted(feats)
        if att.how == "single":
            comps, tried = best_single(names, feats, inp.glue, inp.cells, sel), len(names) * 2
        else:
            comps, tried = best_average(names, feats, inp.glue, inp.cells, sel)
        score = lexicographic(inp.cell_order, combine(comps, feats, inp.cells), inp.cells)
        out_attempts.append({
            "key": att.key, "title": att.title, "why": att.why, "families": list(att.families), "how": att.how,
            "candidates": len(names), "tried": tried,
            "components": [{"name": c.name, "sign": c.sign} for c in comps],
            "select": figures(score, inp, SELECT_IDS), "held": figures(score, inp, HELD_IDS)})
    baselines = []
    for key, title in BASELINES:
        x = inp.baselines[key]
        baselines.append({"key": key, "title": title, "select": figures(x, inp, SELECT_IDS),
                          "held": figures(x, inp, HELD_IDS)})
    if "live" in inp.families:
        x = inp.families["live"]["head_softmax_confidence"]
        baselines.append({"key": "head_softmax_confidence", "title": "head softmax confidence (the leaderboard's best "
                          "live proxy), alone", "select": figures(x, inp, SELECT_IDS), "held": figures(x, inp, HELD_IDS)})
        baselines.append({"key": "lex_head_softmax_confidence", "title": "layers, then hidden size, then head softmax "
                          "confidence", "select": figures(lexicographic(inp.cell_order, x, inp.cells), inp, SELECT_IDS),
                          "held": figures(lexicographic(inp.cell_order, x, inp.cells), inp, HELD_IDS)})
    # every single feature's within-cell tau-b on both halves, sign as computed (no choice)
    held = np.isin(inp.ids, HELD_IDS)
    singles = [{"family": fam, "name": name,
                "select": round(_wc(v[sel], inp.glue[sel], inp.cells[sel]), 4),
                "held": round(_wc(v[held], inp.glue[held], inp.cells[held]), 4)}
               for fam, feats in inp.families.items() for name, v in sorted(feats.items())]
    chosen = max(out_attempts, key=lambda a: a["select"]["tau_within_cell"][0])
    hc = chosen["held"]
    return {
        "semantics": SEMANTICS, "select_ids": [SELECT_IDS[0], SELECT_IDS[-1]], "held_ids": [HELD_IDS[0], HELD_IDS[-1]],
        "bootstrap": BOOTSTRAP, "seed": SEED, "pool": POOL, "max_k": MAX_K,
        "target": {"tau_within_cell": TARGET_WITHIN, "tau_tiebroken": TARGET_TIEBROKEN},
        "attempts": out_attempts, "baselines": baselines, "chosen": chosen["key"], "singles": singles,
        "met": bool(hc["tau_within_cell"][0] >= TARGET_WITHIN and hc["tau_tiebroken"][0] >= TARGET_TIEBROKEN),
        "cells": {str(int(c)): int((inp.cells == c).sum()) for c in np.unique(inp.cells)},
        "left_out": dict(inp.left_out),
    }


def verdict_comparisons(summary: dict[str, Any], inp: Inputs) -> list[dict[str, Any]]:
    """The chosen attempt on ids 250-499 against ``depth_then_width`` and
    ``depth_width_then_size`` under the tie-broken τ and both within-cell τ, as paired
    differences over the same bootstrap resamples (:func:`studies.verdicts.compare`, seed
    :data:`SEED` as the page's intervals): the verdict's figures, kept in the JSON."""
    from studies.verdicts import RULES, compare

    ch = next(a for a in summary["attempts"] if a["key"] == summary["chosen"])
    x = attempt_score(inp, ch["components"], tuple(ch["families"]))
    m = np.isin(inp.ids, HELD_IDS)
    return [c.as_dict() for c in compare({ch["key"]: x[m]}, inp.glue[m], inp.cells[m],
                                         {r: inp.baselines[r][m] for r in RULES}, bootstrap=BOOTSTRAP, seed=SEED)]


# -- the page -------------------------------------------------------------------------------------
def _e(v: list[float], ci: bool = True) -> str:
    if v[0] is None or (isinstance(v[0], float) and math.isnan(v[0])):
        return "–"
    if not ci or v[1] is None or math.isnan(v[1]):
        return f"{v[0]:.3f}"
    return f"{v[0]:.3f} [{v[1]:.2f}, {v[2]:.2f}]"


def _row(title: str, r: dict[str, Any]) -> list[str]:
    s, h = r["select"], r["held"]
    return [f"| {title} | {_e(s['tau_within_cell'], False)} / {_e(s['tau_tiebroken'], False)} | "
            f"{_e(h['tau_within_cell'])} | {_e(h.get('tau_within_cell_tb', [None]))} | {_e(h['tau_tiebroken'])} | "
            f"{_e(h['kendall_tau'])} | {_e(h.get('tau_within_arch', [None]))} | {_e(h.get('tau_within_arch_tb', [None]))} | "
            f"{_e(h['tau_pw10'])} |"]


def _findings(summary: dict[str, Any]) -> list[str]:
    """The section's claims, each read from the summary (no hand-written number)."""
    t = summary["target"]
    atts = {a["key"]: a for a in summary["attempts"]}
    base = {b["key"]: b for b in summary["baselines"]}
    single = {r["name"]: r for r in summary["singles"]}
    ch = atts[summary["chosen"]]
    h = ch["held"]
    out = ["## What the attempts show", ""]
    if "operations_single" in atts:
        o = atts["operations_single"]["held"]["tau_within_cell"]
        out.append(f"* Operation types: the best count on ids 0-249 gives {_e(o)} within cells on ids 250-499 (its "
                   f"interval {'includes' if o[1] <= 0 <= o[2] else 'excludes'} 0). The TF code trained every layer as "
                   "scaled dot-product attention; the operation fields are not expected to matter.")
    ff = [(w, single.get(f"{w} layer: feed-forward count")) for w in ("first", "second", "second-to-last", "last")]
    out.append("* Feed-forward count by layer position (within-cell τ-b on ids 0-249 / 250-499; in 2-layer archs the first "
               "layer is the second-to-last and the second is the last): "
               + "; ".join(f"{w} {r['select']:+.3f} / {r['held']:+.3f}" for w, r in ff if r) + ". Summed over "
               "every layer but the last: "
               + (lambda r: f"{r['select']:+.3f} / {r['held']:+.3f}")(single["feed-forward layers, all but the last layer"])
               + ". A spec fact about the trained models, not a property of their weights.")
    if "live_single" in atts:
        ls, pc = atts["live_single"], base["depth_width_then_size"]
        out.append(f"* Live proxies on the trained model's initialisation: the best single one on ids 0-249 gives "
                   f"{_e(ls['held']['tau_within_cell'])} within cells on ids 250-499, beside the as_trained "
                   f"parameter count's {_e(pc['held']['tau_within_cell'])}; their best rank average gives "
                   f"{_e(atts['live_average']['held']['tau_within_cell'])}.")
    b = base["depth_width_then_size"]["held"]
    comps = summary.get("verdict_comparisons")
    if comps:
        def pair(metric: str) -> str:
            return ", ".join(f"`{c['rule']}` {c['rule_value']:.3f} (paired {c['diff']:+.3f} [{c['ci_low']:+.3f}, "
                             f"{c['ci_high']:+.3f}]: {c['word']})" for c in comps
                             if c["metric"] == metric and c["rule_value"] is not None and math.isfinite(c["rule_value"]))

        out.append("* The chosen attempt against the trivial rules on ids 250-499 (paired differences over the same "
                   f"bootstrap resamples): tie-broken τ {_e(h['tau_tiebroken'])} against {pair('tau_tiebroken')}; "
                   f"within cells τ-b {_e(h['tau_within_cell'])} against {pair('tau_within_cell')}, tie-broken "
                   f"{_e(h['tau_within_cell_tb'])} against {pair('tau_within_cell_tb')} (`depth_then_width` orders "
                   "no pair within a cell).")
    else:
        overlap = not (h["tau_within_cell"][1] > b["tau_within_cell"][2]
                       or b["tau_within_cell"][1] > h["tau_within_cell"][2])
        out.append(f"* The chosen attempt against \"layers, then hidden size, then the as_trained parameter count\" on "
                   f"ids 250-499: within cells {_e(h['tau_within_cell'])} against {_e(b['tau_within_cell'])} (intervals "
                   f"{'overlap: no claim that it beats the baseline' if overlap else 'apart'}); tie-broken τ "
                   f"{_e(h['tau_tiebroken'])} against {_e(b['tau_tiebroken'])}.")
    out.append(f"* Target: within-cell τ ≥ {t['tau_within_cell']:.2f} "
               + ("reached" if h["tau_within_cell"][0] >= t["tau_within_cell"] else "not reached")
               + f", tie-broken τ ≥ {t['tau_tiebroken']:.2f} "
               + ("reached" if h["tau_tiebroken"][0] >= t["tau_tiebroken"] else "not reached")
               + " by the chosen attempt on ids 250-499.")
    return out


def render(summary: dict[str, Any]) -> str:
    """The markdown page for a summary (pure: the same summary gives the same page)."""
    t = summary["target"]
    atts = {a["key"]: a for a in summary["attempts"]}
    ch = atts[summary["chosen"]]
    h = ch["held"]
    head = ["| score | ids 0-249: within-cell / tie-broken | ids 250-499: within-cell τ-b | within-cell, tie-broken | "
            "tie-broken τ | τ-b | within arch τ-b | within arch, tie-broken | 10 %-PW τ |",
            "|---|---|---|---|---|---|---|---|---|"]
    lines = [
        "# Beyond the field: ranking inside the (layers, hidden size) cells",
        "",
        "<!-- generated by `python -m studies.beyond` from docs/beyond.json; do not edit by hand -->",
        "",
        "On FlexiBERT-500 the rule \"deeper, then wider\" already ranks GLUE at τ-b 0.80; what a training-free "
        "score can add is the order *inside* the four (layers, hidden size) cells. The target here (issue 21, "
        f"item 4): **τ within the cells ≥ {t['tau_within_cell']:.2f} and tie-broken τ ≥ {t['tau_tiebroken']:.2f}** "
        f"against the GLUE average, on the model that was trained (semantics `{summary['semantics']}`).",
        "",
        "**Verdict: the target is " + ("met" if summary["met"] else "missed") + ".** The best attempt chosen on ids "
        f"0-249 (*{ch['title']}*: the cell, then "
        + " + ".join(f"`{c['name'] if c['sign'] > 0 else '−' + c['name']}`" for c in ch["components"])
        + f") reaches, on ids 250-499, τ within the cells {_e(h['tau_within_cell'])} and tie-broken τ "
        f"{_e(h['tau_tiebroken'])} (τ-b {_e(h['kendall_tau'])}).",
        "",
        "## How the attempts were made",
        "",
        "* Every attempt is lexicographic: the (layers, hidden size) cell first (the `depth_then_width` "
        "baseline), then a score `X` inside the cell. `X` is one feature, or the plain mean of several features' "
        "ranks within their cell (equal weights). **No constant is fitted on GLUE.**",
        f"* **Every choice that looked at GLUE was made on ids {summary['select_ids'][0]}-{summary['select_ids'][1]} "
        f"only, and every figure is reported on ids {summary['held_ids'][0]}-{summary['held_ids'][1]}.** The choice: "
        "which feature (or combination) and each feature's sign, by one rule: the largest τ-b within cells on ids "
        f"0-249. A combination is searched over the {summary['pool']} best single features (on ids 0-249) of the "
        f"attempt's families, averaging 1 to {summary['max_k']} of them. The attempt shown in the verdict is the one "
        "with the largest within-cell τ on ids 0-249, not on 250-499.",
        "* Before this script was written, an exploration on the same features printed figures for both halves "
        "(the per-position feed-forward effect below was found there). The held-out half was therefore seen, though "
        "never used by the selection rule; read the ids 250-499 figures with that in mind.",
        "* Ranks within a cell are taken over all 500 archs (they read no GLUE). Live proxies are the package's "
        "as_trained values from the [proxy-values table](proxy_values.md)"
        + (f" (sha256 `{summary['proxy_values']['sha256'][:16]}…`, {summary['proxy_values']['dtype']})"
           if summary.get("proxy_values") else "")
        + ": random tokens 8 × 128, seed 0, gradient objective a random projection of the output"
        + (" (the paper's, ETAS's and the baselines, plus every proxy added since: "
           + ", ".join(f"`{n}`" for n in summary["provenance"]["inputs"]["later_proxies"])
           + ")" if summary.get("provenance", {}).get("inputs", {}).get("later_proxies") else "")
        + (" (the paper's, ETAS's and the baselines, plus every proxy added since: "
           + ", ".join(f"`{n}`" for names in summary["provenance"]["inputs"]["layer_proxies"].values() for n in names)
           + ")" if summary.get("provenance", {}).get("inputs", {}).get("layer_proxies") else "") + "."
        + (" Left out, because not finite on every arch: "
           + ", ".join(f"`{n}` ({k} archs)" for n, k in summary["left_out"].items()) + "."
           if summary.get("left_out") else ""),
        *([f"* Live values within {summary['provenance']['inputs']['near_tie_rel']:g} of each other (relative) are "
           "one value: archs whose trained models are the same network up to the order of the sums get values "
           "that differ in the last bits, and their order was decided by rounding (thread count, executor, CPU), "
           "which moved synflow's within-cell τ by ±0.013. Tied exactly, every figure here is the same on any "
           "machine."] if "near_tie_rel" in summary.get("provenance", {}).get("inputs", {}) else []),
        "",
        "Metrics (`nasbench_bert.metrics`, against the GLUE average): **within-cell τ** is scipy's τ-b pooled over "
        "the pairs in the same (layers, hidden size) cell; **tie-broken τ** is the expected τ-b when the score's "
        "ties are broken uniformly at random (exact, no sampling), over all pairs or within cells; **τ-b** is "
        "scipy's; **within arch** is τ over the pairs that share layers, hidden size and total heads (16 strata; "
        "'–' for a score constant within every stratum), as τ-b and tie-broken; **10 %-PW τ** is τ-b over pairs "
        "whose as-specified parameter counts "
        f"differ by less than 10 %. Intervals: 95 % percentile bootstrap over archs ({summary['bootstrap']} "
        f"resamples, seed {summary['seed']}). Archs per cell ((layers × 10⁴ + hidden): count): "
        + ", ".join(f"{k}: {v}" for k, v in summary["cells"].items()) + ".",
        "",
        "## Attempts",
        "",
        *head,
    ]
    for a in summary["attempts"]:
        lines += _row(f"{a['title']}" + (" **(chosen)**" if a["key"] == summary["chosen"] else ""), a)
    lines += ["", "What each attempt chose on ids 0-249:", ""]
    for a in summary["attempts"]:
        lines.append(f"* **{a['title']}** ({a['why']}; {a['candidates']} candidates, {a['tried']} "
                     f"{'combinations' if a['how'] == 'average' else 'feature-sign pairs'} tried): "
                     + " + ".join(f"`{c['name'] if c['sign'] > 0 else '−' + c['name']}`" for c in a["components"])
                     + ".")
    lines += [
        "",
        "## Baselines on the same halves",
        "",
        *head,
        *[x for b in summary["baselines"] for x in _row(b["title"], b)],
        "",
        *_findings(summary),
        "",
        "## Every single feature, both halves",
        "",
        "For transparency: each feature's τ-b within cells against GLUE as computed (higher value = higher score, "
        "no sign chosen), on ids 0-249 and on ids 250-499. Rows are what the attempts above chose from.",
        "",
        "| family | feature | ids 0-249 | ids 250-499 |",
        "|---|---|---|---|",
        *[f"| {r['family']} | {r['name']} | {r['select']:+.3f} | {r['held']:+.3f} |" for r in summary["singles"]],
        "",
    ]
    return "\n".join(x for x in lines if x is not None)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m studies.beyond", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DOC), help="the page to write (its JSON goes beside it)")
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from its JSON; compute nothing")
    ap.add_argument("--verdicts-only", action="store_true",
                    help="add the chosen attempt's paired differences to the stored JSON (live values from the "
                         "proxy-values table only if the chosen attempt uses them), then render")
    args = ap.parse_args(argv)
    from studies.pages import stored_or_computed, write_page

    out = Path(args.out)

    def computed() -> dict[str, Any]:
        from nasbench_bert import Benchmark

        from studies.pages import provenance
        from studies.table_values import record

        bench = Benchmark.load()
        inp = load_inputs(bench=bench)
        summary = summarize(inp)
        table = record(bench)
        return {**summary, "verdict_comparisons": verdict_comparisons(summary, inp), "proxy_values": table,
                "provenance": provenance("python -m studies.beyond", bench, ids="0-499", select_ids="0-249",
                                         held_ids="250-499", semantics=SEMANTICS, live_proxies=list(LIVE_PROXIES),
                                         later_proxies=list(LATER_PROXIES), near_tie_rel=NEAR_TIE_REL,
                                         bootstrap=BOOTSTRAP, bootstrap_seed=SEED, proxy_values_sha256=table["sha256"])}

    if args.verdicts_only:
        import json

        from nasbench_bert import Benchmark

        stored = json.loads(out.with_suffix(".json").read_text())
        ch = next(a for a in stored["attempts"] if a["key"] == stored["chosen"])
        live = "live" in ch["families"]
        inp = load_inputs(live=live, bench=Benchmark.load())
        write_page(out, {**stored, "verdict_comparisons": verdict_comparisons(stored, inp)}, render)
        return
    write_page(out, stored_or_computed(out, args.render_only, computed), render)


if __name__ == "__main__":
    main()
