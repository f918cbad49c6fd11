"""The figures of ``docs/published.md`` from the values it scores: one JSON-ready dict
(:func:`summarize`), pure - the same values give the same dict - so that the page can be
recomputed from the proxy-values table and its companion file alone.

The values (see :mod:`studies.published_runs`): the table's model-based proxies under each
semantics (labels ``as_trained``, ``as_specified``, ``authors``), the closed forms on the
spec (``spec/<semantics>``) and the trivial rules (``rules``), and the page's own runs
(``w_pca_nsc/<semantics>``, ``nsc_eval``, ``text/RTE``, ``random seed 1``,
``swap16/random``, ``swap16/text``, ``zerolm_weights``, ``text_fill``).

Every figure is scipy's Kendall tau-b, the tie-broken tau and Spearman rho against the
benchmark's GLUE average, plus NSC's 10 %-PW tau: tau-b over the arch pairs whose
parameter counts differ by less than 10 % (|a - b| / max(a, b) < 0.1, the as-specified
count; this pair rule and size column reproduce NSC's #Params row, 0.485 / 0.082).
ZeroLM's alpha is chosen on ids 0-249 and scored on ids 250-499. Verdicts compare each
figure with ``depth_then_width`` and ``depth_width_then_size`` by paired bootstrap
differences of the tie-broken tau (all pairs, and pairs within a (layers, hidden) cell).

Without the own runs in ``values`` (``--table-rows``), every figure that needs one is a
:func:`studies.published_sources.pending` placeholder, for
:func:`studies.published_sources.carry_own_runs` to fill from the stored JSON.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from studies.published_metrics import RULES, VERDICT_METRICS, gap_closed, metric_value, metrics, paired, verdict
from studies.published_runs import SEMANTICS, SWEEP_BATCH, TEXT_PROXIES, as_array, describe_ids
from studies.published_sources import pending

#: the paper figures the real-text section measures the gap to (Spearman rho with GLUE):
#: SWAP's README 0.71; LPZero's search log for this genotype 0.8515
PAPER_RHO = {"swap": 0.71, "lpzero": 0.8515}


def summarize(values: dict[str, Any], glue: dict[int, float], archs: dict[int, str], *,
              small: bool = False) -> dict[str, Any]:
    """The page's numbers from the values it scores (``archs``: each id's arch string, for
    its size and (layers, hidden) cell): one dict, rounded, JSON-ready; a figure of an own
    run not in ``values`` is a placeholder (:func:`studies.published_sources.pending`)."""
    from nasbench_bert.proxies.nsc import ZEROLM_ALPHA, ZEROLM_ALPHA_GRID, choose_alpha, paper_matrices, zerolm_parts
    from nasbench_bert.sizes import flexibert_num_params

    ids = values["spec/as_trained"]["ids"]
    y = np.array([glue[i] for i in ids])
    arch = [archs[i] for i in ids]
    size = np.array([flexibert_num_params(a, "as_specified") for a in arch], float)
    depth = np.array([len(a.split("/")) - 1 for a in arch], float)
    hidden = np.array([int(a.split("/")[0]) for a in arch], float)
    cells = depth * 1000 + hidden
    pos = {i: k for k, i in enumerate(ids)}

    def col(label: str, proxy: str, at: list[int] | None = None) -> np.ndarray:
        return as_array(values, label, proxy, at)

    def sel(label: str) -> np.ndarray:
        return np.array([pos[i] for i in values[label]["ids"]])

    def run(label: str, proxy: str) -> dict[str, Any]:
        """Metrics of one run over its own ids (a placeholder for an own run not given)."""
        if label not in values:
            return pending(label)
        s = sel(label)
        return metrics(col(label, proxy), y[s], size[s])

    def m(x: np.ndarray, s: np.ndarray | None = None) -> dict[str, float]:
        return metrics(x, y, size) if s is None else metrics(x[s], y[s], size[s])

    rows: list[dict[str, Any]] = []
    #: each row's values per column, on the page's ids, for the verdicts (an own run not given: its label)
    scored: dict[tuple[str, str], tuple[np.ndarray, np.ndarray] | str] = {}

    def row(name: str, paper: str, protocol: str, repro: tuple[str, str] | np.ndarray,
            under: dict[str, tuple[str, str] | np.ndarray], note: str = "") -> None:
        def one(key: str, v: tuple[str, str] | np.ndarray) -> dict[str, Any]:
            if isinstance(v, tuple):
                scored[name, key] = (col(*v), sel(v[0])) if v[0] in values else v[0]
                return run(*v)
            scored[name, key] = (v, np.arange(len(ids)))
            return m(v)
        rows.append({"proxy": name, "paper": paper, "protocol": protocol, "reproduced": one("reproduced", repro),
                     "under": {sem: one(sem, v) for sem, v in under.items()}, "note": note})

    spec = {sem: values[f"spec/{sem}"] for sem in SEMANTICS}
    row("NSC (`nsc`)", "tau 0.695, 10 %-PW 0.505 (NSC README)", "closed form on the spec, the authors' construction",
        np.array(spec["as_trained"]["nsc"]), {sem: np.array(spec[sem]["nsc_model"]) for sem in SEMANTICS},
        "under a semantics: `nsc_model`, the same closed form over that model's weight matrices")
    row("#Params (NSC's row)", "tau 0.485, 10 %-PW 0.082 (NSC README)", "the as-specified parameter count",
        size, {sem: (sem, "num_params") for sem in SEMANTICS})
    # ZeroLM: alpha chosen on ids 0-249, reported on 250-499
    parts = [zerolm_parts(paper_matrices(a, per_head_qkv=True)) for a in arch]
    za, zf = np.array([p[0] for p in parts]), np.array([p[1] for p in parts])
    first = np.array([i < 250 for i in ids])
    alpha_fit = choose_alpha(za[first], zf[first], y[first]) if first.sum() >= 3 else ZEROLM_ALPHA
    alpha_all = choose_alpha(za, zf, y)
    held = ~first
    zerolm = {
        "alpha_0_249": alpha_fit, "alpha_all": alpha_all, "alpha_registered": ZEROLM_ALPHA,
        "grid": [ZEROLM_ALPHA_GRID[0], ZEROLM_ALPHA_GRID[1] - ZEROLM_ALPHA_GRID[0], ZEROLM_ALPHA_GRID[-1]],
        "held_out_alpha_0_249": m(zf + alpha_fit * za, held),
        "held_out_alpha_all": m(zf + alpha_all * za, held),
        "held_out_alpha_1": m(zf + za, held),
        "all_alpha_all": m(zf + alpha_all * za),
        "all_alpha_0_249": m(zf + alpha_fit * za),
    }
    zw = values.get("zerolm_weights")
    if zw is None:
        zerolm.update({k: pending("zerolm_weights") for k in ("weights_alpha_all", "weights_alpha_0_249",
                                                              "weights_all_alpha_all", "weights_held_out_alpha_0_249")})
    else:
        wa, wf = col("zerolm_weights", "attn", ids), col("zerolm_weights", "ffn", ids)
        zerolm["weights_alpha_all"] = choose_alpha(wa, wf, y)
        zerolm["weights_alpha_0_249"] = choose_alpha(wa[first], wf[first], y[first]) if first.sum() >= 3 else None
        zerolm["weights_all_alpha_all"] = m(wf + zerolm["weights_alpha_all"] * wa)
        zerolm["weights_held_out_alpha_0_249"] = m(wf + (zerolm["weights_alpha_0_249"] or 0.0) * wa, held)
    row("ZeroLM, analytic (`zerolm`)", "tau 0.53, rho 0.76 (ZeroLM abstract); tau 0.527, 10 %-PW 0.355 (NSC README, "
        "alpha chosen for the best rho on all 500)", f"closed form on the spec, alpha {alpha_fit} chosen on ids 0-249",
        zf + alpha_fit * za, {sem: np.array(spec[sem]["zerolm_model"]) for sem in SEMANTICS},
        "tau on ids 250-499 only: see the ZeroLM section")
    row("W-PCA (`w_pca_first`)", "tau 0.635, 10 %-PW 0.417 (NSC README's re-run)",
        "NSC authors' protocol: own H, layer 0's F, seed 42, uniform ids 4 x 64, first FF Linear",
        ("w_pca_nsc/nsc_eval", "w_pca_first"), {sem: (sem, "w_pca_first") for sem in SEMANTICS})
    b8 = f"{SWEEP_BATCH['batch_size']} x {SWEEP_BATCH['seq_len']}"
    row("LPZero (`lpzero`)", "the paper's FlexiBERT table could not be read here; the repository's search log for this "
        "genotype records Spearman 0.8515", f"the authors' model (`authors`), train mode, random tokens {b8} (the "
        "leaderboard's batch; for OpenWebText 128 x 512)", ("authors", "lpzero"),
        {sem: (sem, "lpzero") for sem in SEMANTICS})
    row("SWAP (`swap`)", "rho 0.71 (SWAP README)", f"the authors' model (`authors`), train mode, random tokens {b8} "
        "(the leaderboard's batch; for OpenWebText 128 x 512)", ("authors", "swap"),
        {sem: (sem, "swap") for sem in SEMANTICS},
        f"with {SWEEP_BATCH['batch_size']} sequences SWAP's count is capped at 3^{SWEEP_BATCH['batch_size']} patterns: "
        "see the SWAP section")

    # SWAP's cap on the sweep batch: how many archs sit at 2^B or 3^B patterns
    bsz = SWEEP_BATCH["batch_size"]
    swap_caps = {sem: {"at_2^B": int(np.sum(col(sem, "swap") == 2 ** bsz)),
                       "at_3^B": int(np.sum(col(sem, "swap") == 3 ** bsz)),
                       "distinct": int(len(np.unique(col(sem, "swap")))), "n": len(values[sem]["ids"])}
                 for sem in SEMANTICS}

    # W-PCA: which part of the protocol moves it
    wpca = []
    sb = f"random {b8}"
    for label, desc in (("w_pca_nsc/nsc_eval", "NSC construction (own H, layer 0's F), seed 42, uniform 4 x 64"),
                        ("nsc_eval", f"NSC construction, seed 0, {sb}"),
                        *[(f"w_pca_nsc/{s}", f"{s}, seed 42, uniform 4 x 64") for s in SEMANTICS],
                        *[(s, f"{s}, seed 0, {sb}") for s in SEMANTICS]):
        wpca.append({"run": desc, "first": run(label, "w_pca_first"), "stack": run(label, "w_pca"),
                     "params": run(label, "num_params")})

    # baselines beside every figure, and the two rules every verdict compares with
    assert values["rules"]["ids"] == ids
    rules = {r: np.array(values["rules"][r], float) for r in RULES}
    baselines = {"number of layers": m(depth), "hidden size": m(hidden),
                 "`depth_then_width` (layers, then hidden size)": m(rules["depth_then_width"]),
                 "`depth_width_then_size` (then the as-trained parameter count)": m(rules["depth_width_then_size"])}
    verdicts = [pending(got, proxy=name, column=key) if isinstance(got, str) else
                {"proxy": name, "column": key, "n": len(got[1]),
                 **verdict(got[0], {r: v[got[1]] for r, v in rules.items()}, y[got[1]], cells[got[1]])}
                for (name, key), got in scored.items()]
    rule_values = {r: {k: round(float(metric_value(k, rules[r], y, cells)), 4) for k in VERDICT_METRICS} for r in RULES}

    seconds: dict[str, dict[str, float]] = {}
    for k, v in values.items():
        if k in SEMANTICS:  # the table's recorded cost of each proxy where it was built
            seconds[k] = {p: round(s, 3) for p, s in v["seconds"].items() if s is not None and math.isfinite(s)}
        elif isinstance(v, dict) and "seconds" in v:
            seconds[k] = {",".join(sorted(p for p in v if isinstance(v[p], list) and p != "ids")): round(v["seconds"], 3)}
    return {
        "small": small, "n": len(ids), "sweep_n": len(values["authors"]["ids"]), "sweep_ids": list(values["authors"]["ids"]),
        "sweep_batch": values["authors"]["batch"], "rows": rows, "zerolm": zerolm, "w_pca": wpca,
        "baselines": baselines, "rules": rule_values, "verdicts": verdicts, "swap_caps": swap_caps,
        "text": text_figures(values, y, cells, pos) if "random seed 1" in values else pending("random seed 1"),
        "seconds_per_arch": seconds,
    }


def text_figures(values: dict[str, Any], y: np.ndarray, cells: np.ndarray, pos: dict[int, int]) -> dict[str, Any]:
    """Real text beside random tokens, under the authors' model: each text proxy's figures
    on both, their paired difference beside a second random seed's, and how much of the
    gap to the papers' rho the text closes (``pos``: each id's row in ``y`` and ``cells``)."""
    def col(label: str, proxy: str, at: list[int] | None = None) -> np.ndarray:
        return as_array(values, label, proxy, at)

    def sel(label: str) -> np.ndarray:
        return np.array([pos[i] for i in values[label]["ids"]])

    b8 = f"{SWEEP_BATCH['batch_size']} x {SWEEP_BATCH['seq_len']}"
    text: dict[str, Any] = {"fill": values.get("text_fill"), "rows": [], "gap": []}
    if "text/RTE" in values:
        tids = values["text/RTE"]["ids"]
        ts = sel("text/RTE")
        seed_ids = values["random seed 1"]["ids"]
        ss = sel("random seed 1")
        for proxy in TEXT_PROXIES:
            rnd, txt = col("authors", proxy, tids), col("text/RTE", proxy)
            s0, s1 = col("authors", proxy, seed_ids), col("random seed 1", proxy)
            text["rows"].append({
                "proxy": proxy, "batch": b8, "ids": describe_ids(tids), "n": len(tids),
                "random": metrics(rnd, y[ts]), "text": metrics(txt, y[ts]),
                "text_minus_random": paired(txt, rnd, y[ts], cells[ts]),
                "tau_text_vs_random": metrics(txt, rnd)["tau"],
                "seed1_ids": describe_ids(seed_ids), "seed1_n": len(seed_ids),
                "seed1_minus_seed0": paired(s1, s0, y[ss], cells[ss]),
                "tau_seed1_vs_seed0": metrics(s1, s0)["tau"],
            })
            if proxy in PAPER_RHO:
                text["gap"].append({"proxy": proxy, "batch": b8, "n": len(tids), "ids": describe_ids(tids),
                                    "rho_random": metrics(rnd, y[ts])["rho"], "rho_text": metrics(txt, y[ts])["rho"],
                                    **gap_closed(rnd, txt, y[ts], PAPER_RHO[proxy])})
    if "swap16/text" in values:
        s16 = sel("swap16/random")
        assert values["swap16/text"]["ids"] == values["swap16/random"]["ids"]
        rnd, txt = col("swap16/random", "swap"), col("swap16/text", "swap")
        b16 = f"16 x {SWEEP_BATCH['seq_len']}"
        ids16 = describe_ids(values["swap16/random"]["ids"])
        text["rows"].append({"proxy": "swap", "batch": b16, "ids": ids16, "n": len(s16), "random": metrics(rnd, y[s16]),
                             "text": metrics(txt, y[s16]), "text_minus_random": paired(txt, rnd, y[s16], cells[s16]),
                             "tau_text_vs_random": metrics(txt, rnd)["tau"]})
        text["gap"].append({"proxy": "swap", "batch": b16, "n": len(s16), "ids": ids16,
                            "rho_random": metrics(rnd, y[s16])["rho"], "rho_text": metrics(txt, y[s16])["rho"],
                            **gap_closed(rnd, txt, y[s16], PAPER_RHO["swap"])})
        text["swap16_max"] = {"random": float(rnd.max()), "text": float(txt.max())}
    return text
