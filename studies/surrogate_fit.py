"""Sections 1-3 of docs/surrogate.md: how close a surrogate can get to the table. The
run-to-run noise floor and the Kendall-tau ceiling it puts on any predictor, every
surrogate family in the same by-arch folds (with the featurisation speed), and
leave-one-region-out validation with the coverage of predictive intervals.

Why separate from :mod:`studies.surrogate_oracle` (sections 4-6, the surrogate used in
place of the table) and from :mod:`studies.surrogate_study` (the page's headline and the
command): each section computes its figures and writes its text together (the JSON keeps
the text), and these three answer one question, the surrogate's accuracy against the
noise. Imports only :mod:`studies.md_table`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from studies.md_table import md_table


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
    md += md_table(pairs[["kind", "id", "other", "num_layers", "glue_a", "glue_b", "diff"]], 2) + "\n"
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
    md += md_table(pd.DataFrame(rows), 2) + "\n"
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
    md += md_table(show) + "\n"
    md += ("Adding SEPT (a function of hidden size and depth here) and what the trained model never saw - the "
           "operation one-hots and the as-specified parameter count and FLOPs (`features=\"full\"`):\n\n")
    full = full[~full.model.str.contains("baseline")]
    md += md_table(full[["model", "kendall_tau", "tau_sd", "spearman_rho", "rmse_glue"]].assign(
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
    md += md_table(r[["region", "model", "n_train", "n_test", "kendall_tau", "spearman_rho", "rmse_glue", "bias",
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
