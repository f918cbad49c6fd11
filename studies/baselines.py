"""The trivial baselines beside every score that needs no model, per GLUE task and on
NAS-Bench-NLP (docs/baselines.md), under the field's metrics.

    python -m studies.baselines [--bootstrap 1000] [--nlp-bootstrap 200]

Everything here is torch-free and computed from the tables: the trivial spec baselines
(:mod:`nasbench_bert.proxies.baselines`), the analytic parameter counts, the published
closed forms (NSC, ZeroLM) and the release's stored proxies, each scored by
:func:`nasbench_bert.scoring.score` against the GLUE average and each of the eight tasks
(FlexiBERT), and against -PTB test loss (NAS-Bench-NLP, beside the recipe baselines:
parameters, nodes and Linear nodes of the cell). The live proxies' per-task rows come from
``proxies.evaluate(name, tasks=True)`` (docs/evaluate.md).

The figures are written to ``docs/baselines.json``; the page is a pure rendering of it, and
a test checks that the page equals the rendering and recomputes a sample of the figures.
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import Any

import pandas as pd

#: FlexiBERT rows: (column, label, what it is); the trivial baselines first
FLEX_ROWS: tuple[tuple[str, str, str], ...] = (
    ("depth_then_width", "layers, then hidden size", "trivial baseline"),
    ("depth_width_then_size", "layers, hidden size, then as-trained parameters", "trivial baseline"),
    ("depth", "number of layers", "trivial baseline"),
    ("hidden_size", "hidden size", "trivial baseline"),
    ("total_heads", "total attention heads", "trivial baseline"),
    ("param_count", "parameters, as trained", "analytic count"),
    ("param_count_as_specified", "parameters, as specified", "analytic count"),
    ("nsc", "NSC (closed form on the spec)", "published, analytic"),
    ("zerolm", "ZeroLM (analytic, alpha from ids 0-249)", "published, analytic"),
    ("head_confidence", "head confidence", "stored (release)"),
    ("head_softmax_confidence", "head softmax confidence", "stored (release)"),
    ("activation_distance", "activation distance", "stored (release)"),
    ("synaptic_saliency", "synaptic saliency", "stored (release)"),
    ("synaptic_diversity", "synaptic diversity", "stored (release)"),
    ("head_importance", "head importance", "stored (release)"),
    ("jacobian_cosine", "Jacobian cosine", "stored (release)"),
)
ANALYTIC = tuple(c for c, _, kind in FLEX_ROWS if not kind.startswith("stored"))
#: the score columns kept in the JSON (the within-group metrics in both forms, with intervals)
METRIC_COLUMNS = ("kendall_tau", "tau_ci_low", "tau_ci_high", "tau_tiebroken", "tau_tiebroken_ci_low",
                  "tau_tiebroken_ci_high", "spearman_rho", "tau_pw10",
                  *(f"{m}{sfx}" for m in ("tau_within_cell", "tau_within_cell_tb", "tau_within_arch", "tau_within_arch_tb")
                    for sfx in ("", "_ci_low", "_ci_high")),
                  "top10_precision", "n", "note")


def flexibert_scores(bench: Any, bootstrap: int) -> pd.DataFrame:
    """Every FLEX_ROWS score against GLUE and the eight tasks (one row per score and target)."""
    from nasbench_bert.data.tables import GLUE_TASKS
    from nasbench_bert.scoring import baseline_values, score, stored_values

    stored, _ = stored_values("flexibert", bench)
    frame = stored[["id"]].reset_index(drop=True)
    analytic = baseline_values(frame, "flexibert", semantics="as_trained", bench=bench, names=ANALYTIC)
    stored_cols = [c for c, _, kind in FLEX_ROWS if kind.startswith("stored")]
    df = pd.concat([frame, analytic, stored[stored_cols].reset_index(drop=True)], axis=1)
    s = score(df, ["glue", *GLUE_TASKS], proxies=[c for c, _, _ in FLEX_ROWS], bench=bench, bootstrap=bootstrap)
    return s[["proxy", "target", *[c for c in METRIC_COLUMNS if c in s]]]


def nlp_scores(bench: Any, bootstrap: int) -> pd.DataFrame:
    """NAS-Bench-NLP's stored proxies and the recipe baselines against -PTB test loss: over
    every run (the stored proxies), and over the runs with a public recipe (all of them)."""
    from nasbench_bert.scoring import baseline_values, score, scoring_space, stored_values

    stored, target = stored_values("nlp", bench)
    names = scoring_space("nlp").stored_columns(stored)  # the columns score_stored("nlp") scores
    every = score(stored, target, proxies=names, space="nlp", bench=bench, bootstrap=bootstrap)
    every["runs"] = "every PTB run"
    public = stored[stored["recipe"].notna()].reset_index(drop=True)
    base = baseline_values(public, "nlp", bench=bench)  # the recipe baselines
    pub = pd.concat([public.drop(columns=[c for c in base.columns if c in public]), base], axis=1)
    sub = score(pub, target, proxies=[*names, *base.columns], space="nlp", bench=bench, bootstrap=bootstrap)
    sub["runs"] = "PTB runs with a public recipe"
    cols = ["runs", "proxy", *[c for c in METRIC_COLUMNS if c in every]]
    return pd.concat([every[cols], sub[cols]], ignore_index=True)


def summarize(bench: Any, bootstrap: int, nlp_bootstrap: int) -> dict[str, Any]:
    flex = flexibert_scores(bench, bootstrap)
    nlp = nlp_scores(bench, nlp_bootstrap)
    return {"machine": f"{platform.machine()} ({platform.python_implementation()} {platform.python_version()})",
            "bootstrap": bootstrap, "nlp_bootstrap": nlp_bootstrap,
            "flexibert": flex.to_dict(orient="records"), "nlp": nlp.to_dict(orient="records")}


def _f(v: Any, d: int = 3) -> str:
    return "–" if v is None or not isinstance(v, (int, float)) or v != v else f"{v:.{d}f}"


def _ci(r: dict[str, Any], col: str, lo: str, hi: str) -> str:
    if r.get(lo) is None or r.get(lo) != r.get(lo):
        return _f(r.get(col))
    return f"{_f(r.get(col))} [{_f(r.get(lo))}, {_f(r.get(hi))}]"


def _task_table(rows: list[dict[str, Any]], col: str, targets: list[str]) -> list[str]:
    by = {(r["proxy"], r["target"]): r for r in rows}
    out = ["| score | kind | " + " | ".join(targets) + " |", "|---|---|" + "---|" * len(targets)]
    for name, label, kind in FLEX_ROWS:
        out.append(f"| {label} (`{name}`) | {kind} | " + " | ".join(_f(by[(name, t)].get(col)) for t in targets) + " |")
    return out


def render(summary: dict[str, Any]) -> str:
    """The page for a summary (pure)."""
    flex, nlp = summary["flexibert"], summary["nlp"]
    targets = list(dict.fromkeys(r["target"] for r in flex))
    glue = {r["proxy"]: r for r in flex if r["target"] == "glue"}
    md = ["# Trivial baselines, per task and on NAS-Bench-NLP", "",
          "<!-- generated by `python -m studies.baselines` from docs/baselines.json; do not edit by hand -->", "",
          "Every score here needs no model: the trivial spec baselines, the analytic parameter counts, the published "
          "closed forms (NSC, ZeroLM) and the release's stored proxies (computed on the authors' PyTorch model; see "
          "[Semantics](semantics.md)). The live proxies, under every semantics and per task, are on the "
          "[leaderboard](leaderboard.md) and come from [`proxies.evaluate`](evaluate.md). "
          f"Intervals: 95 % bootstrap over the benchmark's rows ({summary['bootstrap']} resamples for FlexiBERT, "
          f"{summary['nlp_bootstrap']} for NAS-Bench-NLP). Computed on {summary['machine']}.", "",
          "**Which τ.** *τ-b* is scipy's Kendall τ-b (ties corrected). *Tie-broken τ* is the expected τ-b when the "
          "score's ties are broken at random: depth has two values and earns most of its τ-b from ties. *Within "
          "cell*: τ over the pairs that share a cell - FlexiBERT: (layers, hidden size); NAS-Bench-NLP: an equal "
          "parameter count. *Within arch* (`tau_within_arch`): τ over the pairs that share layers, hidden size and "
          "total heads (16 strata on FlexiBERT-500): what a score orders among archs of one coarse shape. Both "
          "within-figures come as τ-b and tie-broken; a score constant within every cell (stratum) has none ('–'), "
          "as every rule on the spec's coarse shape (`depth_then_width`). *10 %-PW*: τ-b over the pairs whose "
          "parameter counts differ by less than 10 % (FlexiBERT: the as-specified count, as NSC defines it; "
          "NAS-Bench-NLP: the run's count).", "",
          "## FlexiBERT, against the GLUE average", "",
          "| score | kind | τ-b [95 % CI] | tie-broken τ [95 % CI] | ρ | 10 %-PW τ | within cell τ-b [95 % CI] | "
          "within cell, tie-broken [95 % CI] | within arch τ-b [95 % CI] | within arch, tie-broken [95 % CI] | top-10 % |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, label, kind in FLEX_ROWS:
        r = glue[name]
        md.append(f"| {label} (`{name}`) | {kind} | {_ci(r, 'kendall_tau', 'tau_ci_low', 'tau_ci_high')} | "
                  f"{_ci(r, 'tau_tiebroken', 'tau_tiebroken_ci_low', 'tau_tiebroken_ci_high')} | "
                  f"{_f(r.get('spearman_rho'))} | {_f(r.get('tau_pw10'))} | "
                  + " | ".join(_ci(r, m, f"{m}_ci_low", f"{m}_ci_high") for m in
                               ("tau_within_cell", "tau_within_cell_tb", "tau_within_arch", "tau_within_arch_tb"))
                  + f" | {_f(r.get('top10_precision'), 2)} |")
    def within(r: dict[str, Any]) -> float:
        v = r.get("tau_within_cell")
        return v if isinstance(v, (int, float)) and v == v else float("-inf")

    def within_arch(r: dict[str, Any]) -> float:
        v = r.get("tau_within_arch_tb")
        return v if isinstance(v, (int, float)) and v == v else float("-inf")

    best_wc = max((r for r in flex if r["target"] == "glue"), key=within)
    best_wa = max((r for r in flex if r["target"] == "glue"), key=within_arch)
    md += ["", f"Within cells the best of these is `{best_wc['proxy']}` at τ "
           f"{_ci(best_wc, 'tau_within_cell', 'tau_within_cell_ci_low', 'tau_within_cell_ci_high')}; within archs of "
           f"one (layers, hidden size, total heads) the best tie-broken τ is `{best_wa['proxy']}`'s "
           f"{_ci(best_wa, 'tau_within_arch_tb', 'tau_within_arch_tb_ci_low', 'tau_within_arch_tb_ci_high')}.", "",
           "## FlexiBERT, per GLUE task", "",
           "Tie-broken τ of each score against each task's dev score (CoLA: MCC, STS-B: Pearson, the others "
           "accuracy; `glue` is their mean):", "", *_task_table(flex, "tau_tiebroken", targets), "",
           "Within-cell τ per task (cells: layers, hidden size; '–' where the score is constant within every "
           "cell):", "", *_task_table(flex, "tau_within_cell", targets), "",
           "Within-arch τ per task, tie-broken (strata: layers, hidden size, total heads; '–' where the score is "
           "constant within every stratum):", "", *_task_table(flex, "tau_within_arch_tb", targets), "",
           "## NAS-Bench-NLP, against −PTB test loss", "",
           "The recipe baselines (the cell's parameters, nodes and Linear nodes) need the recipe, which the release "
           "publishes for 275 of the 8,794 PTB runs, so every score is shown over those runs too. Cells: runs with an "
           "equal parameter count; 10 %-PW: runs whose parameter counts differ by less than 10 %.", "",
           "| runs | score | n | τ-b [95 % CI] | tie-broken τ | ρ | 10 %-PW τ | within equal size [95 % CI] |",
           "|---|---|---|---|---|---|---|---|"]
    for r in nlp:
        md.append(f"| {r['runs']} | `{r['proxy']}` | {r['n']} | {_ci(r, 'kendall_tau', 'tau_ci_low', 'tau_ci_high')} | "
                  f"{_f(r.get('tau_tiebroken'))} | {_f(r.get('spearman_rho'))} | {_f(r.get('tau_pw10'))} | "
                  f"{_ci(r, 'tau_within_cell', 'tau_within_cell_ci_low', 'tau_within_cell_ci_high')} |")
    hc = next(r for r in nlp if r["proxy"] == "hidden_covariance_layer1" and r["runs"] == "every PTB run")
    size = next(r for r in nlp if r["proxy"] == "num_params" and r["runs"] == "every PTB run")
    md += ["", f"Hidden covariance (layer 1) ranks −loss at τ-b {_f(hc['kendall_tau'])} over every run, the parameter "
           f"count at {_f(size['kendall_tau'])}; among runs of an equal parameter count hidden covariance keeps "
           f"{_ci(hc, 'tau_within_cell', 'tau_within_cell_ci_low', 'tau_within_cell_ci_high')}, so what it knows is "
           "not the size.", ""]
    return "\n".join(md)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.baselines", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/baselines.md")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--nlp-bootstrap", type=int, default=200)
    ap.add_argument("--render-only", action="store_true", help="re-render the page from its JSON")
    a = ap.parse_args(argv)
    from nasbench_bert import Benchmark

    from studies.pages import stored_or_computed, write_page

    out = Path(a.out)
    summary = stored_or_computed(out, a.render_only,
                                 lambda: summarize(Benchmark.load(progress=False), a.bootstrap, a.nlp_bootstrap))
    write_page(out, summary, render, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
