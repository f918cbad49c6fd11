"""The proxy leaderboard behind docs/leaderboard.md: every proxy, every semantics, the
parameter counts, the trivial spec baselines and the published records, side by side,
under the field's metrics.

    python -m studies.leaderboard [--out docs/leaderboard.md] [--bootstrap 1000] [--render-only]

Live values are the proxy-values table of the data release (``Benchmark.proxy_values``,
read through :mod:`studies.table_values`): no cache, no sweep, so every figure can be
recomputed from the table alone with the package's public metrics, and the JSON records
the table's sha256. Stored values are the release's. Scores
(``nasbench_bert.scoring.score``, 95 % bootstrap intervals over the 500 ids): Kendall
tau-b, the expected tau-b under random tie-breaking, Spearman rho, NSC's 10 %-PW tau
(as-specified parameter count), the within-cell tau (pairs of one (layers, hidden size)
cell) and the within-arch tau (pairs of equal layers, hidden size and total heads), each
as tau-b and tie-broken, Kendall's partial tau given the as-trained parameter count,
top-10 % precision, and the cost per arch where the table was built. The noise ceilings
come from :func:`nasbench_bert.surrogate.noise.rank_ceilings`. A proxy that is rounding
noise by construction (the table's provenance lists them) is marked *noise* and never
named by a verdict. The page opens with a figure (:mod:`studies.leaderboard_figure`).
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

#: published training-free results on the FlexiBERT benchmark, quoted from the paper
#: text named in ``source``; ``None`` where the paper's text read here gives no number
PUBLISHED: list[dict[str, Any]] = [
    {"proxy": "ZeroLM", "kendall_tau": 0.53, "spearman_rho": 0.76,
     "citation": "Chen, Ding, Wang & Pedrycz, ZeroLM: Data-Free Transformer Architecture Search for Language Models, "
                 "arXiv:2503.18646 (2025)",
     "quote": "achieving a Spearman's rho of 0.76 and Kendall's tau of 0.53 on the FlexiBERT benchmark",
     "source": "abstract"},
    {"proxy": "LPZero", "kendall_tau": None, "spearman_rho": None,
     "citation": "Dong, Li, Liu, Tang, Liu, Wang & Chu, LPZero: Language Model Zero-cost Proxy Search from Zero, "
                 "Findings of EMNLP 2024, arXiv:2410.04808",
     "quote": "reports ranking correlations on FlexiBERT; the numbers are in the paper's tables, which could not be "
              "read here",
     "source": "not verified here"},
    {"proxy": "W-PCA", "kendall_tau": None, "spearman_rho": None,
     "citation": "Wang, W-PCA Based Gradient-Free Proxy for Efficient Search of Lightweight Language Models, "
                 "ICLR 2025, arXiv:2504.15983",
     "quote": "ranking evaluations on a dataset sampled from the FlexiBERT search space (its own 500 archs, trained "
              "with knowledge distillation); the numbers could not be read here",
     "source": "not verified here"},
]

#: proxies whose definition holds a constant chosen by looking at GLUE on ids 0-249
#: (ZeroLM's alpha, :data:`nasbench_bert.proxies.nsc.ZEROLM_ALPHA`): the leaderboard scores
#: them on ids 250-499 only, the half the choice never saw
FITTED_ON_FIRST_HALF = frozenset({"zerolm", "zerolm_model"})
HELD_OUT_IDS = range(250, 500)
#: readings of the spec that no semantics changes (the NSC authors' construction): one row each,
#: computed and listed under as_trained
SEMANTICS_FREE = ("nsc", "zerolm")


def _live(bench: Any, sem: str) -> pd.DataFrame:
    """The live values of one semantics, from the proxy-values table: every proxy but the
    trivial spec rules (scored as baselines of their own); the readings no semantics changes
    (:data:`SEMANTICS_FREE`) only under as_trained; ZeroLM's fitted forms only on the ids
    its alpha never saw."""
    from studies.table_values import live, scored_proxies

    full = live(bench, sem)
    keep = [c for c in scored_proxies(full) if sem == "as_trained" or c not in SEMANTICS_FREE]
    out = full[["id", "arch", *keep]].copy()
    out.attrs = full.attrs
    for n in FITTED_ON_FIRST_HALF & set(out.columns):
        out.loc[~out["id"].isin(HELD_OUT_IDS), n] = np.nan
    return out


#: why a live proxy is not finite on some archs, where the reason is known (checked when the
#: leaderboard is built: every such arch must fit the stated reason)
NONFINITE_WHY: dict[tuple[str, str], tuple[str, Any]] = {
    ("head_softmax_confidence_norm", "as_specified"): (
        "all without a self-attention layer: the normalised value divides by the number of softmax outputs, and "
        "these models record none", lambda arch: "SA-" not in arch),
}


def _nonfinite_note(df: pd.DataFrame, proxy: str, sem: str, note: Any) -> Any:
    """The row's note, plus "not finite on k of n archs" (and why, from :data:`NONFINITE_WHY`)
    for a live proxy scored on fewer archs than were computed: a row never loses archs
    without saying so."""
    if proxy not in df.columns:
        return note
    v = pd.to_numeric(df[proxy], errors="coerce").to_numpy(float)
    bad = ~np.isfinite(v)
    if proxy in FITTED_ON_FIRST_HALF:
        bad &= df["id"].isin(HELD_OUT_IDS).to_numpy()
    if not bad.any():
        return note
    text = f"not finite on {int(bad.sum())} of {len(v)} archs"
    why = NONFINITE_WHY.get((proxy, sem))
    if why is not None:
        archs = df.loc[bad, "arch"].astype(str)
        if not all(why[1](a) for a in archs):
            raise RuntimeError(f"{proxy} under {sem}: the stated reason for its non-finite values no longer holds")
        text += f" ({why[0]})"
    return "; ".join(x for x in (note if isinstance(note, str) else "", text) if x)


#: a live proxy with fewer distinct values than this over the archs gets a note: its τ-b is
#: earned by ties and its tie-broken τ is a coin toss inside each tie
FEW_VALUES = 20
#: why a proxy takes few values on the live batch, where the reason is known
FEW_VALUES_WHY = {
    "swap": "SWAP counts distinct sign patterns over the batch's B = 8 sequences, so its count is capped at "
            "2^8 = 256 (or 3^8 = 6561 where an activation is exactly 0); [Published proxies](published.md) runs it "
            "on 16 sequences too",
}


def _few_values_note(df: pd.DataFrame, proxy: str, note: Any) -> Any:
    """The row's note, plus "k distinct values over n archs" when a live proxy takes fewer
    than :data:`FEW_VALUES` values (and why, from :data:`FEW_VALUES_WHY`)."""
    if proxy not in df.columns:
        return note
    v = pd.to_numeric(df[proxy], errors="coerce").to_numpy(float)
    v = v[np.isfinite(v)]
    k = len(np.unique(v))
    if not len(v) or k >= FEW_VALUES:
        return note
    text = f"{k} distinct values over {len(v)} archs"
    if proxy in FEW_VALUES_WHY:
        text += f" ({FEW_VALUES_WHY[proxy]})"
    return "; ".join(x for x in (note if isinstance(note, str) else "", text) if x)


def _analytic_cost() -> float:
    from nasbench_bert.sizes import flexibert_num_params
    from nasbench_bert.spaces.flexibert import FLEXIBERT_SPACE

    archs = FLEXIBERT_SPACE.sample(500, seed=0)
    t = time.perf_counter()
    for a in archs:
        flexibert_num_params(a, "as_trained")
    return (time.perf_counter() - t) / len(archs)


def leaderboard(bench: Any, bootstrap: int = 1000) -> pd.DataFrame:
    from nasbench_bert.scoring import score, score_stored

    from studies.table_values import noise, seconds_per_row

    rows = []
    frames: dict[str, pd.DataFrame] = {}
    for sem in ("as_trained", "as_specified", "authors"):
        df = _live(bench, sem)
        frames[sem] = df
        cols = [c for c in df.columns if c not in ("id", "arch")]
        s = score(df, "glue", proxies=cols, control="num_params_as_trained", bench=bench, bootstrap=bootstrap)
        s["semantics"] = sem
        s["source"] = "live"
        s["seconds_per_arch"] = [seconds_per_row(df, p) for p in s.proxy]
        s["noise"] = s["proxy"].isin(noise(df))
        fitted = s["proxy"].isin(FITTED_ON_FIRST_HALF)
        if "note" not in s.columns:
            s["note"] = None
        s["note"] = [_nonfinite_note(df, r.proxy, sem, r.note) for r in s.itertuples()]
        s["note"] = [_few_values_note(df, r.proxy, r.note) for r in s.itertuples()]
        s.loc[fitted, "note"] = [
            "; ".join(x for x in (str(n) if isinstance(n, str) else "", "scored on ids 250-499 only: its alpha was "
                                  "chosen on ids 0-249 (the best Spearman rho there, the NSC authors' rule)") if x)
            for n in s.loc[fitted, "note"]]
        s["batch"] = df.attrs.get("batch")
        rows.append(s)
    st = score_stored("flexibert", bench=bench, bootstrap=bootstrap)
    # score_stored also ranks the package's own size columns; they are the analytic-count rows below
    st = st[~st["proxy"].isin(["num_params_as_trained", "num_params_as_specified"])]
    st["semantics"] = "authors"
    st["source"] = "stored (release)"
    st["seconds_per_arch"] = np.nan
    rows.append(st)
    # the analytic parameter counts of each model
    flex = bench.to_pandas()
    counts = flex[["id", "num_params_as_trained", "num_params_as_specified", "num_params_authors"]]
    sc = score(counts, "glue", proxies=list(counts.columns[1:]), control="num_params_as_trained", bench=bench, bootstrap=bootstrap)
    sc["semantics"] = sc["proxy"].str.replace("num_params_", "")
    sc["source"] = "analytic count"
    sc["seconds_per_arch"] = _analytic_cost()
    rows.append(sc)
    # the trivial spec baselines, on the model that was trained
    from nasbench_bert.scoring import baseline_values

    base = baseline_values(flex[["id"]], "flexibert", semantics="as_trained", bench=bench, names=TRIVIAL)
    base.insert(0, "id", flex["id"].to_numpy())
    sb = score(base, "glue", proxies=list(base.columns[1:]), control="num_params_as_trained", bench=bench,
               bootstrap=bootstrap)
    sb["semantics"] = "as_trained"
    sb["source"] = "trivial baseline (spec)"
    sb["seconds_per_arch"] = np.nan
    rows.append(sb)
    out = pd.concat(rows, ignore_index=True)
    out["size_like"] = out["proxy"].isin(SIZE_LIKE) | (out["source"] == "analytic count")
    out["noise"] = out["noise"].eq(True)
    out["partial_ci_low"] = out["partial_ci_high"] = np.nan
    # bootstrap intervals of the partial tau, for the live training-free proxies that add most beyond size
    top = out[(out.source == "live") & ~out.size_like & ~out.noise].sort_values("partial_tau_given_params",
                                                                                 ascending=False).head(6)
    for i, r in top.iterrows():
        out.loc[i, ["partial_ci_low", "partial_ci_high"]] = _partial_ci(frames[r.semantics], r.proxy, flex, bootstrap)
    # sorted by the tie-broken tau: tau-b rewards ties (depth's two values earn 0.68 from them)
    return out.sort_values(["tau_tiebroken", "kendall_tau"], ascending=False, na_position="last").reset_index(drop=True)


#: the trivial spec baselines shown (the parameter counts are the analytic-count rows)
TRIVIAL = ["depth", "hidden_size", "total_heads", "depth_then_width", "depth_width_then_size"]

#: proxies that are a size count of the model (parameters or FLOPs), not a training-free score
SIZE_LIKE = frozenset({"num_params", "nonembedding_params", "flops", "num_params_as_trained", "num_params_as_specified",
                       "num_params_authors"})


def _partial_ci(values: pd.DataFrame, proxy: str, flex: pd.DataFrame, bootstrap: int,
                seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap interval (over archs) of the partial Kendall tau of ``proxy`` and
    GLUE given the as-trained parameter count."""
    from nasbench_bert.scoring import partial_tau

    f = flex.set_index("id")
    v = values.set_index("id")[proxy].astype(float)
    ok = np.isfinite(v.to_numpy())
    ids = v.index.to_numpy()[ok]
    x, y, z = v.to_numpy()[ok], f.loc[ids, "glue"].to_numpy(float), f.loc[ids, "num_params_as_trained"].to_numpy(float)
    rng = np.random.default_rng(seed)
    b = []
    for _ in range(max(bootstrap // 5, 100)):
        k = rng.integers(0, len(x), len(x))
        b.append(partial_tau(x[k], y[k], z[k]))
    return float(np.nanpercentile(b, 2.5)), float(np.nanpercentile(b, 97.5))


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


def _values_of(bench: Any, proxy: str, semantics: str, source: str) -> np.ndarray:
    """One leaderboard row's values on the benchmark's ids in order (NaN where the row is
    not scored): live as :func:`_live` gives them (the proxy-values table), stored from the release, analytic counts and trivial rules from the spec."""
    from nasbench_bert.scoring import baseline_values, stored_values

    flex = bench.to_pandas().sort_values("id").reset_index(drop=True)
    if source == "live":
        return _live(bench, semantics).set_index("id")[proxy].reindex(flex["id"]).to_numpy(float)
    if source == "stored (release)":
        st = stored_values("flexibert", bench)[0].set_index("id")
        return st[proxy].reindex(flex["id"]).to_numpy(float)
    if source == "analytic count":
        return flex[proxy].to_numpy(float)
    if source == "trivial baseline (spec)":
        return baseline_values(flex[["id"]], "flexibert", semantics=semantics, bench=bench, names=[proxy])[proxy].to_numpy(float)
    from nasbench_bert.errors import InvalidArgumentError

    raise InvalidArgumentError(f"source = {source!r} is not allowed; allowed values: 'live', 'stored (release)', "
                               "'analytic count', 'trivial baseline (spec)'")


#: rows always compared with the rules beside the verdict's own: the field's two most-cited
#: proxies since NAS-Bench-Suite-Zero, and the seed paper's best, on the model that was trained
NAMED_COMPARISONS: list[tuple[str, str, str]] = [
    ("zico", "as_trained", "live"), ("meco", "as_trained", "live"), ("head_softmax_confidence", "as_trained", "live"),
]


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


def _free(lb: pd.DataFrame) -> pd.DataFrame:
    """The training-free rows a verdict may name: live or stored, not a size count, and not
    rounding noise by construction (a noise row's figure is not the proxy's)."""
    noisy = lb["noise"].eq(True) if "noise" in lb.columns else pd.Series(False, index=lb.index)
    return lb[lb.source.isin(["live", "stored (release)"]) & ~lb.size_like.astype(bool) & ~noisy]


def verdict_candidates(lb: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The training-free rows the verdict names: the best by tie-broken τ over all archs and
    the best by each within-cell τ (live or stored, not a size count), as (proxy,
    semantics, source), without repeats."""
    free = _free(lb)
    out: list[tuple[str, str, str]] = []
    for col in ("tau_tiebroken", "tau_within_cell", "tau_within_cell_tb"):
        r = free.sort_values(col, ascending=False, na_position="last").iloc[0]
        if (r.proxy, r.semantics, r.source) not in out:
            out.append((r.proxy, r.semantics, r.source))
    return out


def verdict_comparisons(bench: Any, lb: pd.DataFrame, bootstrap: int = 1000) -> list[dict[str, Any]]:
    """Paired differences (:func:`studies.verdicts.compare`) of the verdict's proxies
    (:func:`verdict_candidates`) against ``depth_then_width`` and ``depth_width_then_size``
    under the tie-broken τ and both within-cell τ, for the JSON's ``verdict_comparisons``."""
    from nasbench_bert.scoring import rank_context

    from studies.verdicts import RULES, compare

    flex = bench.to_pandas().sort_values("id").reset_index(drop=True)
    cells = rank_context(flex[["id"]], "flexibert", bench).cells
    rules = {r: _values_of(bench, r, "as_trained", "trivial baseline (spec)") for r in RULES}
    out: list[dict[str, Any]] = []
    named = verdict_candidates(lb)
    named += [t for t in NAMED_COMPARISONS if t not in named and ((lb.proxy == t[0]) & (lb.semantics == t[1])).any()]
    for proxy, sem, source in named:
        x = _values_of(bench, proxy, sem, source)
        for c in compare({proxy: x}, flex["glue"].to_numpy(float), cells, rules, bootstrap=bootstrap):
            out.append({**c.as_dict(), "semantics": sem, "source": source})
    return out


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
    free = _free(lb)
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
    free = _free(lb)
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
          f"{machine or _machine()}. Every "
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


def best_proxy_depth_ranges(bench: Any, lb: pd.DataFrame) -> dict[str, Any] | None:
    """(min, max) per depth of the best live training-free proxy by tie-broken tau."""
    free = _free(lb)
    free = free[free.source == "live"].sort_values("tau_tiebroken", ascending=False)
    if not len(free):
        return None
    r = free.iloc[0]
    df = _live(bench, r.semantics)
    flex = bench.to_pandas().set_index("id")
    depth = flex.loc[df["id"], "num_layers"].to_numpy()
    v = df[r.proxy].to_numpy(float)
    return {"proxy": r.proxy, "semantics": r.semantics,
            **{str(d): (float(np.nanmin(v[depth == d])), float(np.nanmax(v[depth == d]))) for d in (2, 4)}}


def _machine() -> str:
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.leaderboard", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/leaderboard.md")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--render-only", action="store_true", help="rewrite the page (and its figure) from its JSON; "
                                                               "compute nothing")
    ap.add_argument("--verdicts-only", action="store_true",
                    help="recompute only the verdict's paired differences (from the table) into the JSON, then render")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.render_only:
        stored = json.loads(out.with_suffix(".json").read_text())
    elif a.verdicts_only:
        from nasbench_bert import Benchmark

        stored = json.loads(out.with_suffix(".json").read_text())
        stored["verdict_comparisons"] = verdict_comparisons(
            Benchmark.load(progress=False), pd.DataFrame.from_records(stored["leaderboard"]), stored["bootstrap"])
    else:
        from nasbench_bert import Benchmark
        from nasbench_bert.surrogate.noise import rank_ceilings

        from studies.pages import provenance
        from studies.table_values import record

        bench = Benchmark.load(progress=False)
        lb = leaderboard(bench, a.bootstrap)
        table = record(bench)
        stored = {"leaderboard": lb.drop(columns=["batch"], errors="ignore").to_dict(orient="records"),
                  "published": PUBLISHED, "ceilings": rank_ceilings(bench, reps=100),
                  "best_proxy_depth_ranges": best_proxy_depth_ranges(bench, lb),
                  "verdict_comparisons": verdict_comparisons(bench, lb, a.bootstrap),
                  "bootstrap": a.bootstrap, "machine": _machine(), "live_batch": table["batch"], "proxy_values": table,
                  "provenance": provenance("python -m studies.leaderboard", bench, ids="0-499", bootstrap=a.bootstrap,
                                           bootstrap_seed=0, ceilings_reps=100, proxy_values_sha256=table["sha256"])}
    # the page is rendered from the JSON text as written, so --render-only gives the same page
    text = json.dumps(stored, indent=1, default=str) + "\n"
    md = render_stored(json.loads(text), out)
    from nasbench_bert.atomic import atomic_write

    atomic_write(out.with_suffix(".json"), text)
    atomic_write(out, md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
