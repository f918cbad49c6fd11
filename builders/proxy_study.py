"""The live proxy study behind the README's proxy tables (resumable; several minutes).

    python -m builders.proxy_study [--out docs/proxy_study.md] [--cache data/proxy-cache]
                                   [--n-seed-compat 120] [--parts seed_compat,faithful,nlp]

1. ``seed_compat``: the paper's FlexiBERT proxies on the model the stored table was
   computed on, for the first N ids; Spearman rho between live and stored values.
2. ``faithful``: every FlexiBERT proxy (paper set, baselines, NTKT/SEPT/NTSR) on all 500
   ids as trained, scored against GLUE, with the parameter-controlled partial tau.
3. ``nlp``: the paper's RNN proxies on every distinct recipe of the WikiText-2 logs (which
   include all 275 PTB runs with a public recipe): with the PTB vocabulary, live vs
   stored and against PTB test loss; with the WikiText-2 vocabulary, against
   WikiText-2 test loss.

Every value is cached per arch (``--cache``), so an interrupted study resumes.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from nasbench_bert import Benchmark, proxies
from nasbench_bert.proxies.scoring import score, to_markdown


def seed_compat(bench: Benchmark, n: int, cache: Path) -> tuple[str, pd.DataFrame]:
    t0 = time.perf_counter()
    df = proxies.compute(range(n), "paper", semantics="seed_compat", bench=bench, cache=cache / "seed_compat", progress=True)
    secs = time.perf_counter() - t0
    stored = bench.data.table("flexibert_proxies").to_pandas().set_index("id").loc[df["id"]]
    rows = []
    for p in proxies.get("flexibert", "paper"):
        live, st = df[p.name].to_numpy(float), stored[p.paper].to_numpy(float)
        m = np.isfinite(live) & np.isfinite(st)
        rows.append({"proxy": p.name, "stored column": p.paper, "n": int(m.sum()),
                     "spearman_rho_live_vs_stored": float(spearmanr(live[m], st[m])[0]),
                     "identical": bool(np.array_equal(live[m], st[m]))})
    out = pd.DataFrame(rows)
    md = f"### Live (seed_compat) vs stored, ids 0-{n - 1}\n\nbatch `{df['batch'].iloc[0]}`, {secs:.0f} s\n\n"
    md += "| proxy | n | Spearman ρ live vs stored | identical |\n|---|---|---|---|\n"
    md += "".join(f"| {r.proxy} | {r.n} | {r.spearman_rho_live_vs_stored:.3f} | {'yes' if r.identical else ''} |\n" for r in out.itertuples())
    return md, out


def faithful(bench: Benchmark, cache: Path) -> tuple[str, pd.DataFrame]:
    t0 = time.perf_counter()
    df = proxies.compute(range(len(bench)), "all", semantics="faithful", bench=bench, cache=cache / "faithful", progress=True)
    secs = time.perf_counter() - t0
    s = score(df, "glue", space="flexibert", control="num_params", bench=bench, bootstrap=200)
    md = (f"### Live (faithful) proxies on all {len(df)} FlexiBERT ids vs GLUE\n\nbatch `{df['batch'].iloc[0]}`; "
          f"sweep {secs:.0f} s here ({df['seconds'].sum():.0f} s of compute, cached parts reused); "
          f"errors: {int(df['error'].notna().sum())}\n\n" + to_markdown(s.sort_values("kendall_tau", ascending=False)))
    return md, s


def nlp(bench: Benchmark, cache: Path, wikitext2_vocab: bool = False) -> tuple[str, pd.DataFrame]:
    w = bench.nlp.wikitext2
    ptb = bench.nlp.ptb
    recipes = {}
    for r in w.itertuples():
        recipes.setdefault(r.recipe_hash, r.recipe)
    items = [(h, rec) for h, rec in recipes.items()]
    t0 = time.perf_counter()
    df = proxies.compute(items, "all", space="nlp", cache=cache / "nlp", progress=True)
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
    md = (f"### NAS-Bench-NLP live proxies ({len(df)} distinct recipes, batch `{df['batch'].iloc[0]}`, {secs:.0f} s)\n\n"
          "Live vs stored on the PTB runs with a public recipe:\n\n| proxy | n | Spearman ρ live vs stored |\n|---|---|---|\n"
          + "".join(f"| {n} | {k} | {r:.3f} |\n" for n, k, r in rows))
    ptb_vals = pd.concat([pr[["log_name"]], live], axis=1)
    s1 = score(ptb_vals, "test_loss", space="nlp", bench=bench, bootstrap=200)
    # WikiText-2: by default the PTB-vocabulary values (the cell dominates these proxies);
    # --wikitext2-vocab recomputes with the 33,278-word model (about 30 s per recipe here)
    t1 = time.perf_counter()
    dfw = proxies.compute(items, "all", space="nlp", cache=cache / "nlp_wikitext2", progress=True,
                          batch={"vocab_size": 33278}) if wikitext2_vocab else df
    secs_w = time.perf_counter() - t1
    wv = w[["log_name", "recipe_hash"]].merge(dfw[["arch", *names]], left_on="recipe_hash", right_on="arch")
    s2 = score(wv.drop(columns=["recipe_hash", "arch"]), "wikitext2_loss", space="nlp", bench=bench, bootstrap=200)
    md += f"\nLive proxies vs PTB test loss ({len(ptb_vals)} runs):\n\n" + to_markdown(s1.sort_values("kendall_tau", ascending=False))
    md += (f"\nLive proxies vs WikiText-2 test loss ({len(wv)} logs, {'WikiText-2' if wikitext2_vocab else 'PTB'}-vocabulary models, batch "
           f"`{dfw['batch'].iloc[0]}`, {secs_w:.0f} s; diverged runs left out):\n\n") + to_markdown(s2.sort_values("kendall_tau", ascending=False))
    return md, pd.concat([s1.assign(dataset="ptb"), s2.assign(dataset="wikitext2")])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m builders.proxy_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/proxy_study.md")
    ap.add_argument("--cache", default="data/proxy-cache")
    ap.add_argument("--n-seed-compat", type=int, default=120)
    ap.add_argument("--parts", default="seed_compat,faithful,nlp")
    ap.add_argument("--wikitext2-vocab", action="store_true", help="WikiText-2 proxies with the 33,278-word LM (slow)")
    a = ap.parse_args(argv)
    bench = Benchmark.load(progress=False)
    cache = Path(a.cache)
    parts = a.parts.split(",")
    md = [f"# Live proxy study\n\nGenerated by `python -m builders.proxy_study` on {platform.machine()} "
          f"({platform.python_implementation()} {platform.python_version()}).\n"]
    results = {}
    for part in parts:
        if part == "seed_compat":
            text, results[part] = seed_compat(bench, a.n_seed_compat, cache)
        elif part == "faithful":
            text, results[part] = faithful(bench, cache)
        elif part == "nlp":
            text, results[part] = nlp(bench, cache, a.wikitext2_vocab)
        else:
            raise SystemExit(f"--parts: {part!r} is not allowed; allowed values: seed_compat, faithful, nlp")
        md.append(text)
        print(text, flush=True)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(md))
    for k, v in results.items():
        v.to_csv(out.with_name(f"{out.stem}_{k}.csv"), index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
