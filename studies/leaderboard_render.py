"""The Markdown of docs/leaderboard.md from the leaderboard's records: the number
formatting, the verdict's sentences (each read from the paired differences in the JSON),
the tables, and :func:`render_stored`, what ``python -m studies.leaderboard --render-only``
writes.

Why separate from :mod:`studies.leaderboard`: that module computes the records (live
values, scores, bootstrap intervals, paired differences) from the benchmark; this one is
a pure function of the stored records, which is what CI re-renders and diffs. It imports
:mod:`studies.leaderboard_rows`, :mod:`studies.verdicts` (the words of a paired difference)
and, to draw the figure, :mod:`studies.leaderboard_figure`; never the computation.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from studies.leaderboard_rows import PUBLISHED, SEMANTICS_FREE, free_rows


def _dagger(v: Any, source: str) -> str:
    """A live row's cost per arch, marked machine-dependent (†: check_pages compares it as †)."""
    text = _fmt(v, 4)
    return f"{text}†" if text and source == "live" else text


def _fmt(v: Any, d: int = 3) -> str:
    return "" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.{d}f}"


#: the within-group columns of the table, in order (scoring.NEW_METRICS' cell and stratum figures)
WITHIN = ("tau_within_cell", "tau_within_cell_tb", "tau_within_arch", "tau_within_arch_tb")


def _ci(r: Any, col: str) -> str:
    """'value [low, high]' (the value alone without an interval; empty where not defined)."""
    lo, hi = getattr(r, f"{col}_ci_low", np.nan), getattr(r, f"{col}_ci_high", np.nan)
    return f"{_fmt(getattr(r, col, np.nan))} [{_fmt(lo)}, {_fmt(hi)}]" if np.isfinite(lo) else _fmt(getattr(r, col, np.nan))


def _separation(values: dict[str, Any] | None) -> str:
    """'its values separate the 2- and 4-layer archs completely (a-b against c-d)' when they do."""
    if not values:
        return ""
    lo2, hi2, lo4, hi4 = values["2"][0], values["2"][1], values["4"][0], values["4"][1]
    if hi2 < lo4 or hi4 < lo2:
        return (f"; its values separate the 2- and 4-layer archs completely ({lo2:.4g}–{hi2:.4g} against "
                f"{lo4:.4g}–{hi4:.4g}), so most of its τ is depth")
    return ""


def comparisons_table(comps: list[dict[str, Any]]) -> str:
    """Every paired difference in the JSON as one table (proxy, metric, both values, the
    difference with its interval and the word), so each figure a page or the README quotes
    can be found on this page."""
    names = {"tau_tiebroken": "tie-broken τ", "tau_within_cell": "within-cell τ-b",
             "tau_within_cell_tb": "within-cell, tie-broken"}
    rows = ["| proxy | semantics | against | metric | proxy's | rule's | paired difference [95 % CI] | reading |",
            "|---|---|---|---|---|---|---|---|"]
    for c in comps:
        if not np.isfinite(c["diff"]):
            continue
        rows.append(f"| {c['proxy']} | {c['semantics']} | {c['rule']} | {names.get(c['metric'], c['metric'])} | "
                    f"{c['value']:.3f} | {c['rule_value']:.3f} | {c['diff']:+.3f} [{c['ci_low']:+.3f}, "
                    f"{c['ci_high']:+.3f}] | {c['word']} |")
    return "\n".join(rows) + "\n"


def _pairs(comps: list[dict[str, Any]], proxy: Any, metric: str) -> str:
    """"`rule` v (paired d [lo, hi]: word)" for every rule that orders pairs under ``metric``."""
    from studies.verdicts import word

    return ", ".join(f"`{c['rule']}` {c['rule_value']:.3f} (paired {c['diff']:+.3f} [{c['ci_low']:+.3f}, "
                     f"{c['ci_high']:+.3f}]: {word(c['ci_low'], c['ci_high'])})"
                     for c in comps if (c["proxy"], c["semantics"], c["source"]) == proxy and c["metric"] == metric
                     and c["rule_value"] is not None and np.isfinite(c["rule_value"]))


def _words(comps: list[dict[str, Any]], proxy: Any, metrics_: tuple[str, ...]) -> set[str]:
    from studies.verdicts import word

    return {word(c["ci_low"], c["ci_high"]) for c in comps if (c["proxy"], c["semantics"], c["source"]) == proxy
            and c["metric"] in metrics_ and c["diff"] is not None and np.isfinite(c["diff"])}


def _verdict_rules(lb: pd.DataFrame, comps: list[dict[str, Any]], depth_ranges: dict[str, Any] | None) -> str:
    """The verdict's first bullet: the best training-free proxy against both rules under the
    tie-broken τ, each with its paired difference; the headline follows the words."""
    base = lb[lb.source == "trivial baseline (spec)"].set_index("proxy")
    free = free_rows(lb)
    b = free.sort_values("tau_tiebroken", ascending=False).iloc[0]
    key = (b.proxy, b.semantics, b.source)
    ws = _words(comps, key, ("tau_tiebroken",))
    if ws == {"below"}:
        head = "The one-line rules on the spec rank GLUE better than the best training-free proxy."
    elif ws == {"above"}:
        head = "The best training-free proxy ranks GLUE better than the one-line rules on the spec."
    elif ws == {"level with"}:
        head = "The best training-free proxy is level with the one-line rules on the spec."
    elif not ws:
        head = "No verdict: the paired differences were not computed."
    else:
        from studies.verdicts import word

        by = {c["rule"]: word(c["ci_low"], c["ci_high"]) for c in comps
              if (c["proxy"], c["semantics"], c["source"]) == key and c["metric"] == "tau_tiebroken"}
        head = ("The best training-free proxy is " + " and ".join(f"{w} `{r}`" for r, w in by.items())
                + " (paired tie-broken τ).")
    rules = "; ".join(f"`{r}` {_ci(base.loc[r], 'tau_tiebroken')} (τ-b {_fmt(base.loc[r].kendall_tau)}, lifted by its ties)"
                      if r == "depth_then_width" else f"`{r}` {_ci(base.loc[r], 'tau_tiebroken')}"
                      for r in ("depth_then_width", "depth_width_then_size") if r in base.index)
    return (f"* **{head}** Over all 500 archs, by tie-broken τ: {rules}. The best training-free proxy, "
            f"`{b.proxy}` ({b.semantics}, {b.source}), has {_ci(b, 'tau_tiebroken')}"
            + ("; against " + _pairs(comps, key, "tau_tiebroken") if comps else "") + _separation(depth_ranges) + ".\n")


def _verdict_cells(lb: pd.DataFrame, comps: list[dict[str, Any]]) -> str:
    """The within-cell comparison: the best training-free proxy by each within-cell τ
    against ``depth_width_then_size`` (``depth_then_width`` orders no pair in a cell)."""
    free = free_rows(lb)
    parts = []
    for col, name in (("tau_within_cell", "τ-b"), ("tau_within_cell_tb", "tie-broken")):
        r = free.sort_values(col, ascending=False, na_position="last").iloc[0]
        key = (r.proxy, r.semantics, r.source)
        parts.append(f"{name}: `{r.proxy}` ({r.semantics}) {_ci(r, col)}, against " + _pairs(comps, key, col))
    return ("* **Within a (layers, hidden size) cell, where the real choice is** (`depth_then_width` orders no pair "
            "there), the best training-free proxy by within-cell " + "; by within-cell ".join(parts) + ".")


def _table_line(table: dict[str, Any] | None) -> str:
    """Where the live values come from: the proxy-values table, by sha256 and build."""
    if not table:
        return ""
    return (f"**The live values are the [proxy-values table](proxy_values.md)** (`bench.proxy_values(semantics)`; "
            f"sha256 `{table['sha256'][:16]}…`, {table['rows']:,} rows), computed in {table['dtype']} by "
            f"nasbench-bert {table['package_version']} on {table['machine']}, device `{table['device']}`, "
            f"{table['built']}: every figure below can be recomputed from it with `nasbench_bert.scoring.score`. Rows "
            "marked *noise* are rounding error by construction (the `authors` objective's gradient vanishes): their "
            "figures are printed but are not the proxy's, and no verdict names them. *s / arch* is what a value cost "
            "where the table was built (its own evaluation plus its layer's shared pass), a timing that depends on the "
            "machine and its load (†).\n\n")


def render(lb: pd.DataFrame, bootstrap: int, ceilings: dict[str, Any] | None = None,
           depth_ranges: dict[str, Any] | None = None, machine: str | None = None, batch: str | None = None,
           comparisons: list[dict[str, Any]] | None = None, table: dict[str, Any] | None = None,
           figure: str = "") -> str:
    """The page for a leaderboard frame (pure). ``ceilings``: :func:`rank_ceilings`;
    ``depth_ranges``: the best proxy's (min, max) per depth, keyed "2" and "4";
    ``comparisons``: :func:`verdict_comparisons` (the verdict's paired differences);
    ``table``: :func:`studies.table_values.record` of the proxy-values table scored;
    ``figure``: the markdown of the page's figure, placed first."""
    size = lb[(lb.proxy == "num_params_as_trained") & (lb.source == "analytic count")].iloc[0]
    live = lb[lb.source == "live"]
    base = lb[lb.source == "trivial baseline (spec)"]
    md = ["# Proxy leaderboard\n\n",
          "Generated by `python -m studies.leaderboard` on "
          f"{machine or this_machine()}. Every "
          "training-free proxy of the package under every [semantics](semantics.md), the release's stored values, "
          "the analytic parameter counts, the trivial spec baselines and the published records, against the GLUE of "
          "the 500 benchmark ids. Live values: random-token batch "
          f"`{batch if batch is not None else (live.batch.iloc[0] if len(live) else '')}`, one pass per arch; {bootstrap} bootstrap resamples of the ids "
          "for every 95 % interval. The later papers' proxies (NSC, ZeroLM, W-PCA, LPZero, SWAP) in their own "
          "protocols are on [Published proxies, reproduced](published.md).\n\n",
          _table_line(table), figure,
          "**Which τ.** *τ-b* is scipy's Kendall τ-b (ties corrected). *Tie-broken τ* is the expected τ-b when the "
          "score's ties are broken at random: a rule with few distinct values (depth has two) earns τ-b from its "
          "ties, while a search that must pick one arch gets the tie-broken figure. *10 %-PW*: τ-b over the pairs "
          "whose as-specified parameter counts differ by less than 10 % (NSC's metric). *Within cell*: τ over the "
          "pairs that share (layers, hidden size), where the trivial rules stop. *Within arch* (`tau_within_arch`): "
          "τ over the pairs that share layers, hidden size and total heads (16 strata), what a score orders among "
          "archs of one coarse shape; a score constant within every stratum (every rule on those three, e.g. "
          "`depth_then_width`) has none (empty cell), never a number. Both within-figures are given as τ-b and "
          "tie-broken. *Partial τ | size*: Kendall's (1942) partial τ given the as-trained parameter count, τ less "
          "what score and GLUE each share with the count (no interval in the table).\n\n"]
    md.append("## Verdict\n\n")
    comps = comparisons or []
    dtw = base[base.proxy == "depth_then_width"]
    if len(base):
        md.append(_verdict_rules(lb, comps, depth_ranges))
    if ceilings:
        g_name = next(k for k in ceilings if k.startswith("gaussian"))
        g, e = ceilings[g_name], ceilings["empirical_per_depth"]
        sigma = g_name.rsplit("_", 1)[1]
        md.append(
            (_verdict_cells(lb, comps) if comps else "* **Within a (layers, hidden size) cell**")
            + f" The as-trained parameter count reaches {_ci(size, 'tau_within_cell')}. A perfect predictor of each "
            f"arch's expected GLUE would reach "
            f"{g['tau_within_cell'][0]:.3f} [{g['tau_within_cell'][1]:.3f}, {g['tau_within_cell'][2]:.3f}] within "
            f"cells under Gaussian run-to-run noise at the 9 exact repeats' σ = {sigma} (the primary noise figure), "
            f"{e['tau_within_cell'][0]:.3f} under the empirical per-depth model with collapses "
            "([Surrogate](surrogate.md)).\n"
            f"* **Noise ceiling over all 500**: τ-b {g['kendall_tau'][0]:.3f} [{g['kendall_tau'][1]:.3f}, "
            f"{g['kendall_tau'][2]:.3f}] (Gaussian, σ = {sigma}), {e['kendall_tau'][0]:.3f} [{e['kendall_tau'][1]:.3f}, "
            f"{e['kendall_tau'][2]:.3f}] (empirical per-depth model).\n")
    withci = lb[np.isfinite(lb.partial_ci_low)].sort_values("partial_tau_given_params", ascending=False)
    if len(withci):
        # every row with an interval is listed, and the count is of the listed rows
        pos = withci[withci.partial_ci_low > 0]
        md.append("* **Beyond the parameter count** (partial τ given the as-trained count, 95 % interval): "
                  + ", ".join(f"`{r.proxy}` ({r.semantics}) {r.partial_tau_given_params:.3f} "
                              f"[{r.partial_ci_low:.3f}, {r.partial_ci_high:.3f}]" for r in withci.itertuples())
                  + (f". {len(pos)} of these {len(withci)} intervals exclude zero, but the parameter count is not the "
                     "control that matters: the within-cell figures above say how much of it survives fixing depth "
                     "and width.\n" if len(pos) else ". None is distinguishable from zero.\n"))
    pub = max(p["kendall_tau"] for p in PUBLISHED if p["kendall_tau"] is not None)
    md.append(f"* **Against the published bar** (ZeroLM's τ = {pub:.2f}): the as-trained parameter count alone reaches "
              f"{size.kendall_tau:.2f} here (τ-b, the published figure's metric), and `depth_then_width` "
              + (f"{dtw.iloc[0].kendall_tau:.2f} (tie-broken {dtw.iloc[0].tau_tiebroken:.2f})" if len(dtw) else "more")
              + ". Published records come from their authors' own protocols, so they are context, not rows of the "
              "same experiment; [Published proxies, reproduced](published.md) reruns each in its protocol.\n\n")
    md.append("## Published records on the FlexiBERT benchmark\n\n| proxy | Kendall τ | Spearman ρ | quoted | source |\n|---|---|---|---|---|\n")
    for p in PUBLISHED:
        md.append(f"| {p['proxy']} | {_fmt(p['kendall_tau'], 2)} | {_fmt(p['spearman_rho'], 2)} | \"{p['quote']}\" | "
                  f"{p['citation']}, {p['source']} |\n")
    md.append("\nLPZero and W-PCA report FlexiBERT results, but their numbers could not be verified from the paper "
              "text available to this project, so none is quoted (an empty cell means exactly that). The seed paper's "
              "own figures are compared with the stored table in [Zero-cost proxies](proxies.md).\n\n")
    dep = lb[(lb.proxy == "depth") & (lb.source != "live")]
    why = (f" (τ-b rewards ties: `depth`, with two values, has τ-b {dep.kendall_tau.iloc[0]:.3f} but tie-broken τ "
           f"{dep.tau_tiebroken.iloc[0]:.3f})" if len(dep) else "")
    md.append("## Every proxy, every semantics\n\nSorted by tie-broken τ" + why + ". Size counts are marked (size); the trivial spec "
              "baselines are on the as-trained model.\n\n"
              "| rank | proxy | semantics | source | τ-b [95 % CI] | tie-broken τ [95 % CI] | ρ | 10 %-PW τ | "
              "within cell τ-b [95 % CI] | within cell, tie-broken [95 % CI] | within arch τ-b [95 % CI] | "
              "within arch, tie-broken [95 % CI] | partial τ given size | top-10 % | s / arch |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for i, r in enumerate(lb.itertuples(), 1):
        md.append(f"| {i} | {r.proxy}{' (size)' if r.size_like else ''}{' (noise)' if getattr(r, 'noise', False) is True else ''} | {r.semantics} | {r.source} | "
                  f"{_ci(r, 'kendall_tau') if hasattr(r, 'kendall_tau_ci_low') else _fmt(r.kendall_tau) + f' [{_fmt(r.tau_ci_low)}, {_fmt(r.tau_ci_high)}]'} | "
                  f"{_ci(r, 'tau_tiebroken')} | {_fmt(r.spearman_rho)} | {_fmt(getattr(r, 'tau_pw10', np.nan))} | "
                  + "".join(f"{_ci(r, m)} | " for m in WITHIN)
                  + f"{_fmt(getattr(r, 'partial_tau_given_params', float('nan')))} | {_fmt(r.top10_precision, 2)} | "
                  f"{_dagger(r.seconds_per_arch, r.source)} |\n")
    if comparisons:
        md.append("\n## Against the one-line rules, paired\n\nEach row: the proxy and the rule scored on the same "
                  "bootstrap resamples of the 500 archs; the difference's 95 % interval decides the reading (above, "
                  "below, level with). `depth_then_width` orders no pair inside a cell, so it has no within-cell "
                  "row.\n\n" + comparisons_table(comparisons))
    fewer = [r for r in lb.itertuples() if r.source == "live" and isinstance(getattr(r, "note", None), str) and r.note
             and (r.n < 500 or "distinct values" in r.note)]
    if fewer:
        md.append("\nRows scored on fewer than 500 archs, or on few distinct values, and why:\n\n")
        for r in fewer:
            md.append(f"* `{r.proxy}` ({r.semantics}): n = {int(r.n)}; {r.note}\n")
    free = [p for p in SEMANTICS_FREE if p in set(lb.proxy)]
    if free:
        md.append("\n" + ", ".join(f"`{p}`" for p in free) + " read the spec as the NSC authors construct it, which "
                  "no semantics changes, so each has one row (listed under as_trained); `nsc_model` and "
                  "`zerolm_model` are the same closed forms over the weight matrices of each semantics' model.\n")
    md.append("\n## Two transformer proxies, as implemented here\n\n"
              "* **W-PCA** (`w_pca`; Wang, ICLR 2025): the whole model's parameter count times the sum, over "
              "feed-forward blocks, of the number of principal components of the hidden Linears' outputs needed to "
              "reach 99 % of the variance; `w_pca` counts every hidden Linear of the stack, `w_pca_first` the first "
              "one as W-PCA's BERT and the NSC authors have it (see [Published proxies](published.md)).\n"
              "* **Non-embedding parameter count** (`nonembedding_params`; LiteTransformerSearch, Javaheripi et al., "
              "NeurIPS 2022): the parameters of the encoder layers, without the embeddings.\n")
    return "".join(md)


def this_machine() -> str:
    """Where the figures are computed, as the page names it."""
    return f"{platform.machine()} ({platform.python_implementation()} {platform.python_version()})"


def render_stored(stored: dict[str, Any], out: Path | None = None) -> str:
    """The page from the JSON as stored (what ``--render-only`` does): the leaderboard
    frame from its records, and the bootstrap count, machine, live batch and table recorded
    when it was computed (not this machine's). With ``out``, the page's figure is drawn
    beside it (``<out stem>.png``) from the same records."""
    lb = pd.DataFrame.from_records(stored["leaderboard"])
    # the page names its figure whether or not it is drawn now: the text is the JSON's rendering
    png = (out if out is not None else Path("docs/leaderboard.md")).with_suffix(".png")
    if out is not None:
        from studies.leaderboard_figure import draw, figure_data

        draw(figure_data(lb), png)
    figure = (f"![Tie-broken τ and within-cell τ of every score, with 95 % intervals]({png.name})\n\n"
              "*Left: tie-broken τ over the 500 archs, one point per (proxy, semantics) with its 95 % bootstrap "
              "interval, grouped by semantics; the dashed lines are the two one-line rules on the spec. Right: "
              "within-cell τ-b of the same rows, where `depth_then_width` orders no pair and only "
              "`depth_width_then_size` is drawn. Grey: rounding noise by construction (no verdict).*\n\n")
    return render(lb, stored["bootstrap"], stored["ceilings"], stored["best_proxy_depth_ranges"],
                  machine=stored["machine"], batch=stored["live_batch"], comparisons=stored.get("verdict_comparisons"),
                  table=stored.get("proxy_values"), figure=figure)

