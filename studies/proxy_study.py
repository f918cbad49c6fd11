"""The live proxy study behind the README's proxy tables (resumable; about an hour here).

    python -m studies.proxy_study [--out docs/proxy_study.md] [--cache data/proxy-cache]
                                   [--n-authors 500] [--parts authors,as_trained,as_specified,nlp]

1. ``authors``: the paper's FlexiBERT proxies under the authors' model and protocol
   (:data:`nasbench_bert.semantics.AUTHORS`) for the first N ids; Spearman rho between
   live and stored values (the raw activation distance also against the stored value
   divided by the notebook's hook multiplicity).
2. ``as_trained`` and ``as_specified``: every FlexiBERT proxy (paper set, baselines,
   NTKT/SEPT/NTSR) on all 500 ids, scored against GLUE, with the partial tau given the
   as-trained parameter count (the size of the model that earned the score).
3. ``nlp``: the paper's RNN proxies on every distinct recipe of the WikiText-2 logs (which
   include all 275 PTB runs with a public recipe), under the authors' protocol and the
   decoder-logit one: with the PTB vocabulary, live vs stored and against PTB test loss;
   against WikiText-2 test loss.

The ``"all"`` group includes the trivial baselines (FlexiBERT: depth, hidden size, total
heads, the lexicographic rules, the parameter counts; NAS-Bench-NLP: the recipe's
parameters, nodes and Linear nodes), so every table carries them as rows, under every
metric of :func:`nasbench_bert.scoring.score` with 95 % bootstrap intervals.

Old part names still work: ``seed_compat`` = ``authors``, ``faithful`` = ``as_specified``.

Every value is cached per arch (``--cache``), so an interrupted study resumes. The page's
text, its scores and its provenance (code version, inputs) go to ``docs/proxy_study.json``;
``--render-only`` rewrites the page from it, which is what CI checks.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from nasbench_bert import Benchmark, proxies
from nasbench_bert.scoring import score, to_markdown


def authors(bench: Benchmark, n: int, cache: Path) -> tuple[str, pd.DataFrame]:
    t0 = time.perf_counter()
    df = proxies.compute(range(n), "paper", semantics="authors", bench=bench, cache=cache / "authors", progress=True)
    secs = time.perf_counter() - t0
    stored = bench.data.table("flexibert_proxies").to_pandas().set_index("id").loc[df["id"]]
    pairs = [(p.name, p.paper, stored[p.paper]) for p in proxies.get("flexibert", "paper")]
    pairs.append(("activation_distance", "activation_distance / hook multiplicity",
                  stored["activation_distance"] / stored["activation_distance_hook_multiplicity"]))
    rows = []
    for name, col, st_ in pairs:
        live, st = df[name].to_numpy(float), st_.to_numpy(float)
        m = np.isfinite(live) & np.isfinite(st)
        rows.append({"proxy": name, "stored_column": col, "n": int(m.sum()),
                     "spearman_rho_live_vs_stored": float(spearmanr(live[m], st[m])[0]),
                     "identical": bool(np.array_equal(live[m], st[m]))})
    out = pd.DataFrame(rows)
    md = (f"### Live (authors) vs stored, ids 0-{n - 1}\n\nbatch `{df['batch'].iloc[0]}` (the notebook used 128 "
          f"OpenWebText documents of 512 tokens, which cannot be fetched here), train mode, objective "
          f"`{df['objective'].iloc[0]}`; {secs:.0f} s\n\n")
    md += "| proxy | stored column | n | Spearman ρ live vs stored |\n|---|---|---|---|\n"
    md += "".join(f"| {r.proxy} | {r.stored_column} | {r.n} | {r.spearman_rho_live_vs_stored:.3f} |\n" for r in out.itertuples())
    return md, out


def against_glue(bench: Benchmark, cache: Path, semantics: str) -> tuple[str, pd.DataFrame]:
    t0 = time.perf_counter()
    df = proxies.compute(range(len(bench)), "all", semantics=semantics, bench=bench, cache=cache / semantics, progress=True)
    secs = time.perf_counter() - t0
    s = score(df, "glue", space="flexibert", control="num_params_as_trained", bench=bench, bootstrap=200)
    md = (f"### Live ({semantics}) proxies on all {len(df)} FlexiBERT ids vs GLUE\n\nbatch `{df['batch'].iloc[0]}`, "
          f"objective `{df['objective'].iloc[0]}`; sweep {secs:.0f} s here ({df['seconds'].sum():.0f} s of compute, "
          f"cached parts reused); errors: {int(df['error'].notna().sum())}. The partial τ is given the as-trained "
          "parameter count.\n\n" + to_markdown(s.sort_values("kendall_tau", ascending=False)))
    return md, s


def nlp(bench: Benchmark, cache: Path, wikitext2_vocab: bool = False, semantics: str = "as_trained") -> tuple[str, pd.DataFrame]:
    w = bench.nlp.wikitext2
    ptb = bench.nlp.ptb
    recipes = {}
    for r in w.itertuples():
        recipes.setdefault(r.recipe_hash, r.recipe)
    items = [(h, rec) for h, rec in recipes.items()]
    t0 = time.perf_counter()
    df = proxies.compute(items, "all", space="nlp", semantics=semantics, cache=cache / f"nlp_{semantics}", progress=True)
    secs = time.perf_counter() - t0
    by_hash = df.set_index("arch")
    names = [p.name for p in proxies.get("nlp", "all")]
    # live vs stored on the PTB runs that have a public recipe
    pr = ptb[ptb.recipe_hash.notna()].copy()
    live = by_hash.loc[pr.recipe_hash, names].reset_index(drop=True)
    pr = pr.reset_index(drop=True)
    rows = []
    for p in proxies.get("nlp", "paper"):
        a, b = live[p.name].to_numpy(float), pr[p.paper].to_numpy(float)
        m = np.isfinite(a) & np.isfinite(b)
        rows.append((p.name, int(m.sum()), float(spearmanr(a[m], b[m])[0])))
    md = (f"### NAS-Bench-NLP live proxies, {semantics} protocol (objective `{df['objective'].iloc[0]}`; {len(df)} distinct "
          f"recipes, batch `{df['batch'].iloc[0]}`, {secs:.0f} s)\n\n"
          "Live vs stored on the PTB runs with a public recipe:\n\n| proxy | n | Spearman ρ live vs stored |\n|---|---|---|\n"
          + "".join(f"| {n} | {k} | {r:.3f} |\n" for n, k, r in rows))
    ptb_vals = pd.concat([pr[["log_name"]], live], axis=1)
    s1 = score(ptb_vals, "test_loss", space="nlp", bench=bench, bootstrap=200)
    # WikiText-2: by default the PTB-vocabulary values (the cell dominates these proxies);
    # --wikitext2-vocab recomputes with the 33,278-word model (about 30 s per recipe here)
    t1 = time.perf_counter()
    dfw = proxies.compute(items, "all", space="nlp", semantics=semantics, cache=cache / f"nlp_wikitext2_{semantics}",
                          progress=True, batch={"vocab_size": 33278}) if wikitext2_vocab else df
    secs_w = time.perf_counter() - t1
    wv = w[["log_name", "recipe_hash"]].merge(dfw[["arch", *names]], left_on="recipe_hash", right_on="arch")
    s2 = score(wv.drop(columns=["recipe_hash", "arch"]), "wikitext2_loss", space="nlp", bench=bench, bootstrap=200)
    md += f"\nLive proxies vs PTB test loss ({len(ptb_vals)} runs):\n\n" + to_markdown(s1.sort_values("kendall_tau", ascending=False))
    md += (f"\nLive proxies vs WikiText-2 test loss ({len(wv)} logs, {'WikiText-2' if wikitext2_vocab else 'PTB'}-vocabulary models, batch "
           f"`{dfw['batch'].iloc[0]}`, {secs_w:.0f} s; diverged runs left out):\n\n") + to_markdown(s2.sort_values("kendall_tau", ascending=False))
    return md, pd.concat([s1.assign(dataset="ptb"), s2.assign(dataset="wikitext2")])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.proxy_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/proxy_study.md")
    ap.add_argument("--cache", default="data/proxy-cache")
    ap.add_argument("--n-authors", "--n-seed-compat", dest="n_authors", type=int, default=500)
    ap.add_argument("--parts", default="authors,as_trained,as_specified,nlp")
    ap.add_argument("--wikitext2-vocab", action="store_true", help="WikiText-2 proxies with the 33,278-word LM (slow)")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the page from the text stored in its JSON; compute nothing")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.render_only:
        # the tables are written as each part is computed, so the JSON keeps the page's text
        # beside the scores; this checks that the committed page is that text
        from nasbench_bert.atomic import atomic_write

        atomic_write(out, json.loads(out.with_suffix(".json").read_text())["page"])
        return 0
    bench = Benchmark.load(progress=False)
    cache = Path(a.cache)
    parts = a.parts.split(",")
    md = [f"# Live proxy study\n\nGenerated by `python -m studies.proxy_study` on {platform.machine()} "
          f"({platform.python_implementation()} {platform.python_version()}), on {datetime.date.today().isoformat()}. "
          "A sweep's \"s of compute\" is summed from its cache parts (an interrupted or shared-machine run "
          "included); \"s here\" is this run's wall time. Every table shows the trivial baselines as rows (they "
          "are in the `all` group) and every metric of `scoring.score`; top-10 % is the expectation over "
          "tie-breaks.\n"]
    results = {}
    for part in parts:
        part = {"seed_compat": "authors", "faithful": "as_specified"}.get(part, part)
        if part == "authors":
            text, results[part] = authors(bench, a.n_authors, cache)
        elif part in ("as_trained", "as_specified"):
            text, results[part] = against_glue(bench, cache, part)
        elif part == "nlp":
            texts = []
            for sem in ("authors", "as_trained"):
                t, results[f"nlp_{sem}"] = nlp(bench, cache, a.wikitext2_vocab, sem)
                texts.append(t)
            text = "\n".join(texts)
        else:
            raise SystemExit(f"--parts: {part!r} is not allowed; allowed values: authors, as_trained, as_specified, nlp")
        md.append(text)
        print(text, flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    from nasbench_bert.atomic import atomic_write

    from studies.pages import provenance

    page = "\n".join(md)
    atomic_write(out, page)
    atomic_write(out.with_suffix(".json"), json.dumps(
        {"page": page, "scores": {k: v.to_dict(orient="records") for k, v in results.items()},
         "provenance": provenance(f"python -m studies.proxy_study --parts {a.parts}", bench, parts=a.parts,
                                  n_authors=a.n_authors, wikitext2_vocab=a.wikitext2_vocab, cache=str(a.cache))},
        indent=1, default=str) + "\n")
    for k, v in results.items():
        v.to_csv(out.with_name(f"{out.stem}_{k}.csv"), index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
