"""The surrogate study behind docs/surrogate.md (about 10 minutes on 2 cores).

    python -m studies.surrogate_study [--out docs/surrogate.md] [--repeats 3] [--seeds 20]

1. the run-to-run noise floor from every kind of re-run, and the ceiling it puts on
   Kendall tau (:mod:`nasbench_bert.surrogate.noise`);
2. every surrogate family in the same by-arch folds, on two feature sets;
3. leave-one-region-out validation and the coverage of predictive intervals;
4. the noisy surrogate oracle: simulated re-runs against the real ones;
5. search algorithms ranked on the tabular benchmark and on the surrogate oracles;
6. the learning curves (repaired) and the steps fidelity, leave-one-curve-out.

Writes the Markdown page and a JSON of every number next to it, with the page's text (the
sections are written as they are computed) and its provenance (code version, inputs);
``--render-only`` rewrites the page from that JSON, which is what CI checks.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _md(df: pd.DataFrame, digits: int = 3) -> str:
    cols = list(df.columns)
    out = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    for r in df.itertuples(index=False):  # keeps each column's dtype (integers stay integers)
        cells = []
        for v in r:
            if isinstance(v, (float, np.floating)):
                cells.append("" if not np.isfinite(v) else f"{v:.{digits}f}")
            else:
                cells.append(str(v))
        out += "| " + " | ".join(cells) + " |\n"
    return out


# -- 1. noise -----------------------------------------------------------------------------------
def noise_section(bench: Any) -> tuple[str, dict[str, Any]]:
    from nasbench_bert.surrogate.noise import noise_floor, repeat_pairs

    nf = noise_floor(bench, bootstrap=2000, reps=200)
    pairs = repeat_pairs(bench)
    ex, cu, tw = nf["exact_repeats"], nf["curve_checkpoints"], nf["as_trained_twins"]
    md = "## 1. The noise floor\n\n"
    md += ("Every pair of runs of one arch in the release (`repeat_pairs`): the 9 archs sampled twice, and the "
           "100,000-step checkpoints of the learning-curve runs that survive in the release (see section 6: for 10 "
           "of the 15 curves that point holds the 1,000,000-step scores).\n\n")
    md += _md(pairs[["kind", "id", "other", "num_layers", "glue_a", "glue_b", "diff"]], 2) + "\n"
    lo, hi = ex["sigma_ci_chi2"]
    blo, bhi = ex["sigma_ci_bootstrap"]
    md += (f"* **Exact repeats** ({ex['pairs']} pairs, all 2-layer): run-to-run σ = **{ex['sigma']:.2f}** GLUE points, "
           f"95 % CI [{lo:.2f}, {hi:.2f}] (χ², normal theory), [{blo:.2f}, {bhi:.2f}] (bootstrap over pairs); mean "
           f"|Δ| {ex['mean_abs_diff']:.2f}, max {ex['max_abs_diff']:.2f}.\n")
    md += (f"* **Curve checkpoints** ({cu['pairs']} recoverable pairs): σ = {cu['sigma']:.2f}; the benchmark run is "
           f"{cu['mean_diff_benchmark_minus_checkpoint']:+.2f} points above the checkpoint on average. That checkpoint "
           "sits at 10 % of a 1,000,000-step schedule whose learning rate has not decayed, so it is a re-run under "
           "another protocol; it is reported, not pooled.\n")
    ev = nf["every_repeat_pair"]
    plo, phi = ev["sigma_ci_chi2"]
    pblo, pbhi = ev["sigma_ci_bootstrap"]
    eg = ev["ceiling_gaussian"]
    ek = list(eg)
    md += (f"* **Every repeat pair together** ({ev['pairs']} pairs: the exact repeats and the recoverable checkpoints): "
           f"σ = **{ev['sigma']:.2f}**, 95 % CI [{plo:.2f}, {phi:.2f}] (χ²), [{pblo:.2f}, {pbhi:.2f}] (bootstrap). "
           f"A perfect predictor of the mean, scored against one run with Gaussian noise of that σ, reaches "
           f"τ = {eg[ek[0]]:.3f} ({eg[ek[2]]:.3f} at the upper end of the CI, {eg[ek[1]]:.3f} at the lower).\n")
    md += ("* **As-trained twins.** The trained model ignores the operation fields, and the feed-forward width of a "
           "layer with one feed-forward layer ([Errata](errata.md) §3). Archs that differ only there were trained "
           "as the same model, so they are re-runs too. There are many of them:\n\n")
    rows = []
    for k, v in tw.items():
        rows.append({"depth": k.replace("_", " "), "runs": v["runs"], "classes": v["classes"], "dof": v["dof"],
                     "σ (RMS)": v["sigma"], "σ 95 % CI": f"[{v['sigma_ci'][0]:.2f}, {v['sigma_ci'][1]:.2f}]",
                     "core σ (IQR/1.349)": v["sigma_core_iqr"], "share beyond 3 core σ": v["tail_share"],
                     "1 % / 99 % quantiles": f"{v['quantiles']['0.01']:.2f} / {v['quantiles']['0.99']:.2f}",
                     "pairs": v.get("pairs", 0), "core σ from pairs": v.get("pair_core_sigma", float("nan")),
                     "collapse probability": v.get("collapse_probability", float("nan"))})
    md += _md(pd.DataFrame(rows), 2) + "\n"
    md += ("The twins agree with the exact repeats in the core (σ ≈ 0.6–1.0 for 2 layers), and add what 9 pairs "
           "cannot show: a heavy lower tail. Some 2-layer runs collapse on a task (STS-B near 20–38 instead of 82, "
           "QNLI near 62 instead of 80), costing 5–10 GLUE points. Four-layer archs are four times quieter.\n\n")
    c = nf["ceiling_empirical_noise"]
    md += ("**Ceiling on Kendall τ.** A perfect predictor of each arch's expected GLUE, scored against one run "
           "exactly as cross-validation scores a surrogate (mean τ over 5 by-arch folds), reaches on average:\n\n")
    md += (f"* with the measured noise (`RunNoise`: a Gaussian core plus collapses, fitted per depth to the twin pairs; "
           f"section 4): **τ = {c[0]:.3f}** (95 % of simulations in [{c[1]:.3f}, {c[2]:.3f}]);\n")
    g = nf["ceiling_gaussian_exact_repeats"]
    keys = list(g)
    md += (f"* with Gaussian noise at the exact repeats' σ = {keys[0]}: τ = {g[keys[0]]:.3f} (σ at its CI bounds "
           f"{keys[1]} / {keys[2]}: τ = {g[keys[1]]:.3f} / {g[keys[2]]:.3f}). Nine 2-layer pairs miss the tail, so this "
           "is an optimistic ceiling.\n\n")
    return md, nf


# -- 2. surrogate comparison ----------------------------------------------------------------------
def cv_section(bench: Any, repeats: int) -> tuple[str, dict[str, Any]]:
    from nasbench_bert.surrogate import cross_validate
    from nasbench_bert.surrogate.models import lightgbm_available

    fams = ["gp", "ridge", "knn", "gbt", *(["lgbm"] if lightgbm_available() else []), "ensemble", "gp+cal", "ensemble+cal"]
    t0 = time.perf_counter()
    cv = cross_validate(bench, families=fams, folds=5, repeats=repeats, ceiling=True)
    secs = time.perf_counter() - t0
    full = cross_validate(bench, families=["gp", "gbt", "ensemble"], folds=5, repeats=repeats, features="full", ceiling=False)
    speed = features_per_second()
    md = "## 2. Surrogates compared\n\n"
    md += (f"5-fold cross-validation by arch, {repeats} fold seeds, every family on the same folds (`nasbench-bert search cv` "
           f"prints the one-seed version; {secs:.0f} s here). Features (`surrogate_features`): what the trained model "
           "saw - hidden size, depth, per layer its heads, whether it has the 3-layer feed-forward stack and its width "
           "F only then (counted from the input and from the output), and the as-trained parameter count and "
           "FLOPs. Coverage: share of held-out archs inside the central 50 / 80 / 95 % predictive interval.\n\n")
    md += ("Featurisation speed (`surrogate_features` on 1,000,000 random space indices, one core, best of 3): "
           + ", ".join(f"`{k}` {v:,.0f} archs/s" for k, v in speed.items())
           + " (the goal: at least 50,000). Scoring the whole space with the default surrogate goes through its "
           "per-class lookup table (2,664 as-trained classes), so a query costs the featurisation and one table "
           "read.\n\n")
    show = cv.drop(columns=["folds", "repeats"], errors="ignore")
    md += _md(show) + "\n"
    md += ("Adding SEPT (a function of hidden size and depth here) and what the trained model never saw - the "
           "operation one-hots and the as-specified parameter count and FLOPs (`features=\"full\"`):\n\n")
    full = full[~full.model.str.contains("baseline")]
    md += _md(full[["model", "kendall_tau", "tau_sd", "spearman_rho", "rmse_glue"]].assign(
        model=lambda d: d.model + " (full features)")) + "\n"
    best = cv[~cv.model.str.contains("baseline|noise")].sort_values("kendall_tau", ascending=False).iloc[0]
    ceil = float(cv[cv.model.str.startswith("noise ceiling")].kendall_tau.iloc[0])
    gap = ceil - best.kendall_tau
    md += (f"**Against the goal (τ ≥ 0.82).** The best family, `{best.model}`, reaches τ = {best.kendall_tau:.3f} "
           f"± {best.tau_sd:.3f} (0.1's GP on the 0.1 features: 0.765). The noise ceiling is {ceil:.3f}: the "
           f"surrogate sits at {best.kendall_tau / ceil:.0%} of it, {gap:.3f} below. ")
    if best.kendall_tau >= 0.82:
        md += "The goal is met.\n\n"
    elif ceil < 0.82:
        md += "0.82 lies above the ceiling: no model can reach it on this data.\n\n"
    else:
        md += ("0.82 is below the ceiling, so noise alone does not rule it out, but it is not reached. What limits "
               "it: every family lands within 0.01 of the others, on features that pin the trained model "
               "exactly (twins share them); what is left is the between-class structure that 500 runs (301 distinct "
               "trained models, 2,664 in the space) leave unresolved, plus the 2-layer collapses, which no feature "
               "predicts.\n\n")
    cov = cv.set_index("model")
    md += "**Calibration** (held-out archs inside the central 50 / 80 / 95 % interval; ideal: 0.50 / 0.80 / 0.95):\n\n"
    for raw in ("gp", "ensemble"):
        if raw in cov.index and f"{raw}+cal" in cov.index:
            a, b = cov.loc[raw], cov.loc[f"{raw}+cal"]
            md += (f"* `{raw}`: {a.coverage_50:.2f} / {a.coverage_80:.2f} / {a.coverage_95:.2f} before recalibration, "
                   f"{b.coverage_50:.2f} / {b.coverage_80:.2f} / {b.coverage_95:.2f} after (`{raw}+cal`).\n")
    over = [m for m in ("gbt", "lgbm", "ridge") if m in cov.index and cov.loc[m, "coverage_95"] < 0.95]
    md += ("\nThe raw GP and ensemble are *under*-confident in the middle (their 50 % interval holds about three "
           "quarters of the archs: one Gaussian width has to stretch over the 2-layer collapses); "
           + (", ".join(f"`{m}`" for m in over) + " fall short at 95 % (over-confident in the tails). " if over else "")
           + "Recalibration (`+cal`: per-depth scale and empirical residual quantiles from inner out-of-fold "
           "predictions) brings every level to within a few points of nominal; it changes intervals, never means.\n\n")
    md += ("The default surrogate is `ensemble+cal` (numpy only): the ensemble's means, its standard deviation "
           "recalibrated per depth on out-of-fold residuals.\n\n")
    return md, {"cv": cv.to_dict(orient="records"), "cv_full_features": full.to_dict(orient="records"),
                "features_per_second": speed}


def features_per_second(n: int = 1_000_000, reps: int = 3) -> dict[str, float]:
    """Archs featurised per second by :func:`~nasbench_bert.surrogate.surrogate_features`
    (best of ``reps``), for each feature set, and for the default surrogate's
    ``predict_indices`` (featurisation plus its per-class lookup)."""
    from nasbench_bert.spaces.flexibert import SPACE_SIZE
    from nasbench_bert.surrogate import surrogate_features

    idx = np.random.default_rng(0).integers(0, SPACE_SIZE, n)
    out = {}
    for kind in ("as_trained", "full"):
        best = min(_timed(lambda: surrogate_features(idx, kind)) for _ in range(reps))
        out[kind] = n / best
    return out


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# -- 3. regions and calibration --------------------------------------------------------------------
def region_section(bench: Any) -> tuple[str, dict[str, Any]]:
    from nasbench_bert.surrogate import region_cv

    r = region_cv(bench, families=["gp", "gbt", "ridge", "ensemble", "ensemble+cal"])
    md = "## 3. Leave-one-region-out, and calibration\n\n"
    md += ("Train on one region of the space, test on a region it never saw (NAS-Bench-301's check): the other "
           "hidden size, the other depth, or archs containing an operation family that training never contained. "
           "τ is within the test region (so the size baseline is weak there); bias = mean(predicted − true).\n\n")
    md += _md(r[["region", "model", "n_train", "n_test", "kendall_tau", "spearman_rho", "rmse_glue", "bias",
                 "coverage_50", "coverage_80", "coverage_95"]]) + "\n"
    cal = r[r.model == "ensemble+cal"].set_index("region")
    ops = cal[cal.index.str.startswith("without")]
    ext = cal[~cal.index.str.startswith("without")]
    md += (f"* **Operation families**: trained without any SA / LT / DSC layer, `ensemble+cal` ranks the archs that "
           f"contain one at τ = {ops.kendall_tau.min():.3f}–{ops.kendall_tau.max():.3f} with |bias| ≤ "
           f"{ops.bias.abs().max():.2f} and 80 % coverage {ops.coverage_80.min():.2f}–{ops.coverage_80.max():.2f}: "
           "what the errata predict, since no trained layer used those operations.\n"
           f"* **Hidden size and depth are extrapolations**: within the unseen region τ = {ext.kendall_tau.min():.3f}–"
           f"{ext.kendall_tau.max():.3f} (size baseline "
           f"{r[(r.model == 'num_params_as_trained (baseline)') & ~r.region.str.startswith('without')].kendall_tau.min():.3f}–"
           f"{r[(r.model == 'num_params_as_trained (baseline)') & ~r.region.str.startswith('without')].kendall_tau.max():.3f}), "
           f"but the level is off by up to {ext.bias.abs().max():.1f} GLUE points and 80 % coverage falls to "
           f"{ext.coverage_80.min():.2f}. Recalibration on the training region cannot see a shift it never met: do not "
           "trust absolute predictions for a hidden size or depth absent from the training data. (The surrogate is "
           "always fitted on both hidden sizes and both depths, the whole space's range, so its own queries never "
           "extrapolate in them; the operation holdouts are the realistic unseen region.)\n"
           "* **Calibration in ordinary cross-validation** is in section 2's coverage columns: compare each raw family "
           "with its `+cal` version.\n\n")
    return md, {"regions": r.to_dict(orient="records")}


# -- 4. noisy oracle ----------------------------------------------------------------------------------
def noisy_section(bench: Any, sims: int = 20) -> tuple[str, dict[str, Any]]:
    from scipy.stats import ks_2samp

    from nasbench_bert.search.oracle import SurrogateOracle
    from nasbench_bert.surrogate.noise import RunNoise, repeat_pairs, twin_pairs

    real_exact = repeat_pairs(bench).query("kind == 'exact repeat'")["diff"].to_numpy()
    tp = twin_pairs(bench)
    real_twin, depth_twin = tp["diff"].to_numpy(), tp["num_layers"].to_numpy()
    rn = RunNoise(bench)
    archs = list(dict.fromkeys(bench.archs))
    sim, sim_depth = [], []
    for s in range(sims):
        o = SurrogateOracle(bench, noisy=True, seed=s)
        for a in archs:
            sim.append(o.glue(a) - o.glue(a))
            sim_depth.append(a.num_layers)
    sim, sim_depth = np.array(sim), np.array(sim_depth)
    rows = []
    for name, d, dep in (("real: exact repeats", real_exact, np.full(len(real_exact), 2)),
                         ("real: as-trained twin pairs", real_twin, depth_twin),
                         ("simulated: noisy oracle re-runs", sim, sim_depth)):
        for lay in (2, 4):
            x = d[dep == lay]
            if len(x) == 0:
                continue
            rows.append({"pairs": name, "layers": lay, "n": len(x), "sd of Δ": float(x.std()),
                         "median |Δ|": float(np.median(np.abs(x))), "95 % |Δ|": float(np.quantile(np.abs(x), 0.95)),
                         "max |Δ|": float(np.abs(x).max())})
    ks = {lay: ks_2samp(np.abs(real_twin[depth_twin == lay]), np.abs(sim[sim_depth == lay])).pvalue for lay in (2, 4)}
    ks_exact = ks_2samp(np.abs(real_exact), np.abs(sim[sim_depth == 2])).pvalue
    md = "## 4. The noisy surrogate oracle\n\n"
    md += ("`SurrogateOracle(bench, noisy=True, seed=s)` (or `oracle=\"noisy_surrogate\"`, seed 0) draws each arch's "
           "expected GLUE once from the surrogate's predictive distribution of the mean (the predictive variance "
           "less the run-to-run variance of its depth), and adds to every evaluation a run-to-run deviation from "
           "`RunNoise`: fitted to the as-trained twin pairs, a Gaussian core (σ = "
           + ", ".join(f"{rn.core[d]:.2f} for {d} layers" for d in sorted(rn.core))
           + ") plus collapses (probability "
           + ", ".join(f"{rn.p_collapse[d]:.3f} for {d} layers" for d in sorted(rn.core))
           + ", sizes resampled from the pairs that collapsed), centred. Two evaluations of one arch are two "
           f"re-runs. Below: Δ between two runs, real and simulated ({sims} seeds × {len(archs)} archs).\n\n")
    md += _md(pd.DataFrame(rows), 2) + "\n"
    verdict = ("scatter like the real ones at both depths" if min(ks.values()) > 0.05 else
               "match the real ones where the p-value is large; where it is small the table shows how they differ")
    md += (f"Two-sample Kolmogorov–Smirnov on |Δ|, simulated vs twin pairs: p = {ks[2]:.3f} (2 layers), {ks[4]:.3f} "
           f"(4 layers); vs the 9 exact repeats: p = {ks_exact:.3f}. Simulated re-runs {verdict}.\n\n")
    return md, {"rerun_table": rows, "ks_p_twins": ks, "ks_p_exact": ks_exact}


# -- 5. ranking agreement -----------------------------------------------------------------------------
def ranking_section(bench: Any, seeds: int, budget: int = 100) -> tuple[str, dict[str, Any]]:
    from scipy.stats import kendalltau

    from nasbench_bert import search
    from nasbench_bert.search.oracle import SurrogateOracle

    algs = ["random", "regularized_evolution", "local_search", "etas"]
    oracles = {"tabular": lambda s: "tabular", "surrogate": lambda s: "surrogate",
               "noisy surrogate": lambda s: SurrogateOracle(bench, noisy=True, seed=s)}
    res: dict[str, dict[str, list[float]]] = {o: {a: [] for a in algs} for o in oracles}
    checkpoints = (25, 50, budget)
    anytime: dict[str, dict[str, dict[int, list[float]]]] = {o: {a: {c: [] for c in checkpoints} for a in algs} for o in oracles}
    t0 = time.perf_counter()
    for o, make in oracles.items():
        for a in algs:
            kw = {"proxy": "num_params", "n0": 100} if a == "etas" else {}
            for s in range(seeds):
                t = search.run(a, bench, budget=budget, seed=s, oracle=make(s), **kw)
                res[o][a].append(t.best_glue)
                for c in checkpoints:
                    anytime[o][a][c].append(t.evaluations[min(c, len(t)) - 1]["best_glue"])
    secs = time.perf_counter() - t0
    rows = []
    for a in algs:
        row: dict[str, Any] = {"algorithm": a}
        for o in oracles:
            v = np.array(res[o][a])
            row[f"{o}: mean best GLUE"] = f"{v.mean():.2f} ± {v.std() / np.sqrt(len(v)):.2f}"
        rows.append(row)
    ranks = {o: pd.Series({a: np.mean(res[o][a]) for a in algs}).rank(ascending=False) for o in oracles}
    agree = []
    for c in checkpoints:
        means = {o: [np.mean(anytime[o][a][c]) for a in algs] for o in oracles}
        agree.append({"after evaluations": c,
                      "τ(tabular, surrogate)": kendalltau(means["tabular"], means["surrogate"])[0],
                      "τ(tabular, noisy surrogate)": kendalltau(means["tabular"], means["noisy surrogate"])[0],
                      "order on tabular": " > ".join(np.array(algs)[np.argsort(-np.array(means["tabular"]))]),
                      "order on noisy surrogate": " > ".join(np.array(algs)[np.argsort(-np.array(means["noisy surrogate"]))])})
    md = "## 5. Do algorithms rank the same on the table and on the surrogate?\n\n"
    md += (f"{seeds} seeds × {len(algs)} algorithms × 3 oracles, {budget} evaluations each ({secs:.0f} s). ETAS is "
           "driven by the as-trained parameter count (`proxy=\"num_params\"`), the one proxy cheap enough for the "
           "whole space; the noisy surrogate uses noise seed = run seed. Mean best GLUE ± standard error:\n\n")
    md += _md(pd.DataFrame(rows)) + "\n"
    md += _md(pd.DataFrame(agree)) + "\n"
    md += ("Kendall τ between the algorithms' mean best GLUE on the table and on each surrogate oracle (4 "
           "algorithms: 1 = same order). Absolute values differ - the surrogate answers for 10.6M archs, the table "
           "for 491, and predicted means are shrunk toward the average - but the question NAS-Bench-301 asked is "
           "the order.\n\n")
    md += ranking_verdict(res, algs)
    return md, {"best_glue": {o: {a: list(map(float, v)) for a, v in d.items()} for o, d in res.items()},
                "ranks": {o: r.to_dict() for o, r in ranks.items()}, "agreement": agree}


def ranking_verdict(res: dict[str, dict[str, list[float]]], algs: list[str]) -> str:
    """What the ranking comparison supports, from the per-seed best GLUE of every oracle
    and algorithm: which orders agree, and which gaps on the table are larger than two
    standard errors (a 4-algorithm order is only as firm as its gaps)."""
    def mean_se(o: str, a: str) -> tuple[float, float]:
        v = np.asarray(res[o][a], dtype=float)
        return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0

    firm, loose = [], []
    for i, a in enumerate(algs):
        for b in algs[i + 1:]:
            (ma, sa), (mb, sb) = mean_se("tabular", a), mean_se("tabular", b)
            hi, lo = (a, b) if ma >= mb else (b, a)
            (firm if abs(ma - mb) > 2 * np.hypot(sa, sb) else loose).append((hi, lo))
    agree = {o: [f"{h} > {lo_}" for h, lo_ in firm if np.mean(res[o][h]) > np.mean(res[o][lo_])]
             for o in ("surrogate", "noisy surrogate")}
    win = {o: max(algs, key=lambda a: np.mean(res[o][a])) for o in res}
    out = (f"**What this supports.** On the table, {len(firm)} of the {len(firm) + len(loose)} pairwise gaps between "
           "algorithms exceed two standard errors ("
           + (", ".join(f"{h} > {lo_}" for h, lo_ in firm) or "none") + "); the others are within noise, so a full "
           "4-algorithm order is a weak test. Of the firm gaps, the noisy surrogate reproduces "
           f"{len(agree['noisy surrogate'])} and the plain surrogate {len(agree['surrogate'])}. The best algorithm is "
           f"`{win['tabular']}` on the table, `{win['noisy surrogate']}` on the noisy surrogate and `{win['surrogate']}` "
           "on the plain one. Benchmark search algorithms on the noisy oracle: the plain surrogate returns each "
           "arch's predicted mean, so a run's best value has no lucky runs in it and sits below the table's, and "
           "the firm gaps it does not reproduce show that this changes which algorithm looks best.\n\n")
    return out


# -- 6. curves -------------------------------------------------------------------------------------
def curve_section(bench: Any) -> tuple[str, dict[str, Any]]:
    from nasbench_bert.surrogate.fidelity import CurveFidelity, curve_table, leave_one_curve_out, loco_summary

    ct = curve_table(bench)
    st = ct[ct.steps.isin([50_000, 100_000])].pivot_table(index="status", columns="steps", values="id", aggfunc="count").fillna(0)
    loco = leave_one_curve_out(bench)
    loco["err"] = loco.pred - loco.truth
    loco["err_same"] = loco.naive_same - loco.truth
    loco["err_shift"] = loco.naive_shift - loco.truth
    per = loco.groupby("steps").agg(curves=("id", "count"), rmse_fidelity=("err", lambda e: float(np.sqrt((e**2).mean()))),
                                    rmse_shift_only=("err_shift", lambda e: float(np.sqrt((e**2).mean()))),
                                    rmse_no_change=("err_same", lambda e: float(np.sqrt((e**2).mean())))).reset_index()
    per["steps"] = per["steps"].astype(int)
    per["curves"] = per["curves"].astype(int)
    summ = loco_summary(loco)
    from scipy.stats import kendalltau

    rank = {int(st_): float(kendalltau(g.bench_glue, g.glue)[0]) for st_, g in ct[np.isfinite(ct.glue)].groupby("steps")
            if st_ >= 150_000 and len(g) >= 5}
    shift = ct[np.isfinite(ct.glue)].assign(d=lambda d: d.glue - d.bench_glue).groupby("steps").d.mean()
    level = (ct[ct.steps >= 150_000].groupby("id").glue.mean() - ct.groupby("id").bench_glue.first())
    fid = CurveFidelity().fit(ct)
    md = "## 6. The learning curves and the steps fidelity\n\n"
    md += ("**The release's curves are broken at 50,000 and 100,000 steps.** The authors' `save_results` "
           "(`nas_ablation.ipynb`) lists result files by the prefix `results/model.<steps>`, so `model.50000` also "
           "matched `model.500000.*` and `model.100000` matched `model.1000000.*`. Every task score stored at those two "
           "steps is the later checkpoint's (all 15 curves); the stored GLUE is either the later checkpoint's too "
           "(10 curves: lost) or the sum of both means (ids 11, 12, 15, 16, 19: values near 140, from which the "
           "earlier mean is recovered). `curve_table` repairs what can be repaired; points per status:\n\n")
    md += _md(st.reset_index().rename(columns={50_000: "50,000 steps", 100_000: "100,000 steps"}), 0) + "\n"
    md += ("So the 100,000-step point is an independent re-run of the benchmark arch for 5 curves only, and under a "
           "1,000,000-step learning-rate schedule (section 1).\n\n")
    md += ("**The fidelity** (`CurveFidelity`, used by `SurrogateOracle.evaluate(arch, steps=...)`): for each checkpoint "
           "s, GLUE(s) = a(s) + b(s) · GLUE₁₀₀ₖ, fitted over the curves that have s, the slope shrunk toward 1; "
           "GLUE₁₀₀ₖ is the arch's benchmark result (or the surrogate's prediction of it). Leave-one-curve-out RMSE "
           "per checkpoint, against two naive fidelities (no change; the other curves' mean shift):\n\n")
    md += _md(per, 2) + "\n"
    md += (f"From 150,000 steps on (Kendall τ between the benchmark GLUE and a curve's GLUE across the 15 archs: "
           f"{min(rank.values()):.2f}–{max(rank.values()):.2f} per checkpoint, so low checkpoints do rank archs):\n\n"
           f"* **Anchored on the benchmark GLUE**, the fidelity's RMSE is {summ['rmse_anchored']:.2f} GLUE points "
           f"(median |error| {summ['median_abs_anchored']:.2f}); the naive fidelities do no worse (no change "
           f"{summ['rmse_anchored_no_change']:.2f}, mean shift {summ['rmse_anchored_shift']:.2f}). This error is the curve "
           "run's own run-to-run noise: each curve is a second run, and its level sits "
           + ", ".join(f"{v:+.1f}" for v in level.to_numpy()) + " points from the benchmark result (id 3, a 2-layer "
           "arch, collapsed by 5.7). No fidelity can predict that.\n"
           f"* **The shape** (each curve centred on its own mean): RMSE {summ['rmse_shape']:.2f} against "
           f"{summ['rmse_shape_flat']:.2f} for a flat curve. The mean shift from the benchmark result is "
           + ", ".join(f"{int(k) // 1000}k {v:+.2f}" for k, v in shift.items() if k in (150_000, 300_000, 500_000, 750_000, 1_000_000))
           + ": a dip while the learning rate is high, then a gain of about one point by 1,000,000 steps.\n\n"
           "Where it stops being reliable:\n\n"
           "* **0 steps** is finetuning from random weights: about 51.5 for every arch (the fidelity returns the "
           "curves' mean; it carries no ranking).\n"
           "* **50,000 and 100,000 steps** rest on 5 curves each, GLUE only (no task scores), under a schedule whose "
           "learning rate has not decayed.\n"
           f"* **Archs outside the curves' range.** The 15 curve archs span benchmark GLUE "
           f"{fid.anchor_range[0]:.1f}–{fid.anchor_range[1]:.1f} (11 with 4 layers, 4 with 2); the table reaches down to "
           "53.7. For weak or 2-layer archs the slope is extrapolated.\n"
           "* **Per arch, not better than one run**: the error above is a single run's noise, so read a fidelity value "
           "as the expected curve, not a prediction of one run.\n\n")
    return md, {"loco_per_step": per.to_dict(orient="records"), "loco_summary_150k_plus": summ, "rank_tau": rank,
                "status_counts": st.to_dict(), "anchor_range": fid.anchor_range}


def summary(n: dict[str, Any]) -> str:
    """The page's headline numbers, from every section's measured values."""
    ev = n["noise"]["every_repeat_pair"]
    ceil = n["noise"]["ceiling_empirical_noise"]
    cv = pd.DataFrame(n["cv"]["cv"]).set_index("model")
    fams = cv[~cv.index.str.contains("baseline|noise")]
    best = fams["kendall_tau"].idxmax()
    size = cv.loc["num_params_as_trained (baseline)", "kendall_tau"]
    cal = cv.loc["ensemble+cal"] if "ensemble+cal" in cv.index else None
    raw = cv.loc["ensemble"] if "ensemble" in cv.index else None
    reg = pd.DataFrame(n["regions"]["regions"])
    reg = reg[reg.model == "ensemble+cal"].set_index("region")
    loco = n["curves"]["loco_summary_150k_plus"]
    ks = n["noisy"]["ks_p_twins"]
    out = "\n## Summary\n\n"
    ex = n["noise"]["exact_repeats"]
    gauss = n["noise"]["ceiling_gaussian_exact_repeats"]
    g0 = gauss[f"{ex['sigma']:.3f}"] if f"{ex['sigma']:.3f}" in gauss else next(iter(gauss.values()))
    out += (f"* **Noise floor**: the release's {ex['pairs']} exact repeats (the same arch and protocol trained twice) "
            f"give a run-to-run σ of **{ex['sigma']:.2f}** GLUE [95 % CI {ex['sigma_ci_chi2'][0]:.2f}, "
            f"{ex['sigma_ci_chi2'][1]:.2f}], the primary figure; pooling them with the {ev['pairs'] - ex['pairs']} "
            f"recoverable 100,000-step checkpoints (another protocol) gives {ev['sigma']:.2f}. The as-trained twins "
            "(same trained model, ~200 degrees of freedom) add rare 2-layer collapses. Kendall-τ ceiling of a perfect "
            f"predictor of the mean (5-fold, as the surrogate is scored): **{g0:.3f}** with Gaussian noise at the exact "
            f"repeats' σ, **{ceil[0]:.3f}** [{ceil[1]:.3f}, {ceil[2]:.3f}] under the heavier-tailed per-depth model "
            "with collapses (section 1). The ceilings over all 500 and within a (layers, hidden size) cell are on the "
            "[leaderboard](leaderboard.md).\n")
    out += (f"* **Surrogate**: best 5-fold by-arch τ = **{fams.loc[best, 'kendall_tau']:.3f}** (`{best}`; GP "
            f"{cv.loc['gp', 'kendall_tau']:.3f}, ridge {cv.loc['ridge', 'kendall_tau']:.3f}, trees "
            f"{cv.loc['gbt', 'kendall_tau']:.3f}"
            + (f", LightGBM {cv.loc['lgbm', 'kendall_tau']:.3f}" if "lgbm" in cv.index else "")
            + f"; the as-trained parameter count {size:.3f}). The goal τ ≥ 0.82 is "
            + ("met" if fams.loc[best, "kendall_tau"] >= 0.82 else "**not met**")
            + f": {fams.loc[best, 'kendall_tau'] / ceil[0]:.0%} of the ceiling.\n")
    if cal is not None and raw is not None:
        out += (f"* **Calibration** (50 / 80 / 95 % intervals, held-out archs): {raw.coverage_50:.2f} / "
                f"{raw.coverage_80:.2f} / {raw.coverage_95:.2f} raw, {cal.coverage_50:.2f} / {cal.coverage_80:.2f} / "
                f"{cal.coverage_95:.2f} recalibrated (the default, `ensemble+cal`).\n")
    ops = reg[reg.index.str.startswith("without")]
    ext = reg[~reg.index.str.startswith("without")]
    out += (f"* **Leave one region out** (`ensemble+cal`): an unseen operation family τ = {ops.kendall_tau.min():.3f}–"
            f"{ops.kendall_tau.max():.3f}; hidden 128 → 256 τ = {reg.loc['hidden 128 -> 256', 'kendall_tau']:.3f}, "
            f"2 → 4 layers τ = {reg.loc['2 layers -> 4 layers', 'kendall_tau']:.3f}, with level errors up to "
            f"{ext.bias.abs().max():.1f} points and intervals that no longer cover.\n")
    out += (f"* **Noisy oracle**: simulated re-runs vs real twin re-runs, KS p = {ks['2']:.2f} (2 layers), "
            f"{ks['4']:.2f} (4 layers).\n" if "2" in ks else
            f"* **Noisy oracle**: simulated re-runs vs real twin re-runs, KS p = {ks[2]:.2f} (2 layers), "
            f"{ks[4]:.2f} (4 layers).\n")
    ag = n["ranking"]["agreement"][-1]
    out += (f"* **Algorithm ranking** (random, regularised evolution, local search, ETAS; 20 seeds, "
            f"{ag['after evaluations']} evaluations): Kendall τ of the four algorithms' order, table vs noisy "
            f"surrogate {ag['τ(tabular, noisy surrogate)']:.2f}, table vs plain surrogate "
            f"{ag['τ(tabular, surrogate)']:.2f}; the table's winner is "
            + ("kept" if ag["order on tabular"].split(" > ")[0] == ag["order on noisy surrogate"].split(" > ")[0]
               else "not kept") + " on the noisy surrogate (section 5).\n")
    out += (f"* **Steps fidelity**: leave-one-curve-out RMSE {loco['rmse_anchored']:.2f} GLUE from 150,000 steps on "
            f"(shape alone {loco['rmse_shape']:.2f} vs {loco['rmse_shape_flat']:.2f} for a flat curve).\n\n")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.surrogate_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/surrogate.md")
    ap.add_argument("--repeats", type=int, default=3, help="fold seeds for cross-validation")
    ap.add_argument("--seeds", type=int, default=20, help="seeds per algorithm and oracle")
    ap.add_argument("--parts", default="noise,cv,regions,noisy,ranking,curves")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the page from the text stored in its JSON; compute nothing")
    a = ap.parse_args(argv)
    if a.render_only:
        # the sections are written as they are computed, so the JSON keeps the page's text
        # beside the numbers; this checks that the committed page is that text
        from nasbench_bert.atomic import atomic_write

        atomic_write(Path(a.out), json.loads(Path(a.out).with_suffix(".json").read_text())["page"])
        return 0
    from nasbench_bert import Benchmark

    bench = Benchmark.load(progress=False)
    t0 = time.perf_counter()
    md = ["# Surrogate, noise floor and fidelity\n\n"
          f"Generated by `python -m studies.surrogate_study` on {platform.machine()} "
          f"({platform.python_implementation()} {platform.python_version()}); every number below comes from that "
          "command.\n\n"
          "```python\nfrom nasbench_bert import Benchmark\nfrom nasbench_bert.surrogate import cross_validate, region_cv\n"
          "from nasbench_bert.surrogate.noise import noise_floor\nfrom nasbench_bert.search.oracle import SurrogateOracle\n"
          "bench = Benchmark.load()\nnoise_floor(bench)                        # run-to-run noise, CIs, tau ceiling\n"
          "cross_validate(bench)                     # every family, 5 folds by arch, with the ceiling\n"
          "region_cv(bench)                          # leave-one-region-out\n"
          "o = SurrogateOracle(bench, noisy=True, seed=0)   # seeded noisy replay\n"
          "o.evaluate(arch, steps=200_000)           # the steps fidelity\n```\n"]
    numbers: dict[str, Any] = {}
    parts = {"noise": lambda: noise_section(bench), "cv": lambda: cv_section(bench, a.repeats),
             "regions": lambda: region_section(bench), "noisy": lambda: noisy_section(bench),
             "ranking": lambda: ranking_section(bench, a.seeds), "curves": lambda: curve_section(bench)}
    for p in a.parts.split(","):
        if p not in parts:
            raise SystemExit(f"--parts: {p!r} is not allowed; allowed values: {list(parts)}")
        t = time.perf_counter()
        text, nums = parts[p]()
        numbers[p] = nums
        text = text.replace("\n\n", f"\n\n_Reproduce: `python -m studies.surrogate_study --parts {p} "
                                      f"--out /tmp/{p}.md`._\n\n", 1)
        md.append(text)
        print(text, flush=True)
        print(f"[{p}: {time.perf_counter() - t:.0f} s]", flush=True)
    if all(k in numbers for k in parts):
        md.insert(1, summary(numbers))
    md.append(f"\n_Total {time.perf_counter() - t0:.0f} s._\n")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    from nasbench_bert.atomic import atomic_path

    from studies.pages import provenance

    page = "".join(md)
    stored = {**numbers, "page": page,
              "provenance": provenance(f"python -m studies.surrogate_study --parts {a.parts}", bench, ids="0-499",
                                       parts=a.parts, repeats=a.repeats, seeds=a.seeds)}
    with atomic_path(out) as tmp:
        Path(tmp).write_text(page)
    with atomic_path(out.with_suffix(".json")) as tmp:
        Path(tmp).write_text(json.dumps(stored, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
