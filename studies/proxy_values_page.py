"""docs/proxy_values.md: the proxy-values table - what it holds, how to load it, where and
how it was built - and the measurement behind its precision and its tolerances.

    python -m studies.proxy_values_page [--out docs/proxy_values.md] [--cache DIR] [--jobs 2]
                                        [--render-only]

The measurement (about 20 minutes on 2 cores): every 25th FlexiBERT id (20 archs) under
the three semantics and every 53rd NAS-Bench-NLP recipe (5, as_trained) are recomputed
here twice - in the other precision (float32, one thread) and in the table's precision
with two torch threads instead of one - and compared with the table, per proxy: the
largest relative difference and Kendall's tau between the two sets of values. A third
figure says whether the difference can move a rank: the smallest relative gap between
two distinct values of the proxy over all of the table's rows (a perturbation below
half of it reorders no pair, so no rank metric and no printed tau changes).
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

#: the sample: every 25th FlexiBERT id, every 53rd NAS-Bench-NLP recipe (the CI sample)
FLEX_STEP, NLP_STEP = 25, 53


@contextmanager
def worker_threads(n: int) -> Iterator[None]:
    """Compute the sweep's archs with ``n`` torch threads instead of the package's one
    (:data:`nasbench_bert.proxies.sweep.WORKER_THREADS`): the thread-count half of the
    measurement. Each part records its count, so these parts never mix with the table's."""
    from nasbench_bert.proxies import sweep

    before = sweep.WORKER_THREADS
    sweep.WORKER_THREADS = n
    try:
        yield
    finally:
        sweep.WORKER_THREADS = before


def min_relative_gap(values: np.ndarray) -> float:
    """The smallest |a - b| / max(|a|, |b|) over pairs of adjacent distinct finite values:
    how far apart the two closest archs of the table are (inf with fewer than two values)."""
    v = np.unique(values[np.isfinite(values)])
    if len(v) < 2:
        return float("inf")
    gaps = np.abs(np.diff(v)) / np.maximum(np.abs(v[1:]), np.abs(v[:-1]))
    return float(gaps.min())


def _compare(table: pd.DataFrame, other: pd.DataFrame, names: list[str]) -> dict[str, dict[str, float]]:
    from scipy.stats import kendalltau

    from nasbench_bert.proxies.values import relative_difference

    out = {}
    ref = table.loc[other.index]
    for n in names:
        x, y = other[n].to_numpy(float), ref[n].to_numpy(float)
        ok = np.isfinite(x) & np.isfinite(y)
        tau = float(kendalltau(x[ok], y[ok]).statistic) if ok.sum() > 1 and np.ptp(y[ok]) > 0 else float("nan")
        out[n] = {"max_rel_diff": float(relative_difference(x, y).max()), "tau": tau}
    return out


def measure(bench: Any, cache: Path, jobs: int) -> dict[str, Any]:
    """The two recomputations of the sample against the table (see the module doc)."""
    from nasbench_bert.proxies import values

    rows = []
    work = 0.0  # what the recomputations cost, from their parts (a cached part keeps its timing)
    held = bench.data.manifest["proxy_values"].get("benchmarks", {})
    for b in [b for b in values.BENCHMARKS if b in held]:  # a table built for one benchmark: that one
        lookup = bench.proxy_values if b == "flexibert" else bench.nlp.proxy_values
        keys: list[Any] = list(range(0, len(bench), FLEX_STEP)) if b == "flexibert" else \
            [h for h, _ in values.nlp_recipes(bench)][::NLP_STEP]
        for s in values.SEMANTICS_OF[b]:
            table = lookup(s)
            names = list(table.columns)
            f32 = _recompute(bench, b, s, keys, cache / "float32", jobs, dtype="float32")
            with worker_threads(2):
                t2 = _recompute(bench, b, s, keys, cache / "threads2", 1, dtype=values.DTYPE)
            work += float(f32.attrs.get("worker_seconds", 0.0)) + float(t2.attrs.get("worker_seconds", 0.0))
            # set-level combinations (NTSR) ranked over the table's rows, as the table ranks them
            f32, t2 = values.within_table(f32, table, b), values.within_table(t2, table, b)
            c32, c2 = _compare(table, f32, names), _compare(table, t2, names)
            for n in names:
                rows.append({"benchmark": b, "semantics": s, "proxy": n, "n": len(keys),
                             "noise": values.is_noise(b, s, n), "tolerance": values.tolerance(b, n),
                             "min_rel_gap": min_relative_gap(table[n].to_numpy(float)),
                             "float32_max_rel_diff": c32[n]["max_rel_diff"], "float32_tau": c32[n]["tau"],
                             "threads2_max_rel_diff": c2[n]["max_rel_diff"], "threads2_tau": c2[n]["tau"]})
    return {"rows": rows, "worker_seconds": round(work, 1), "flex_step": FLEX_STEP, "nlp_step": NLP_STEP}


def _recompute(bench: Any, benchmark: str, semantics: str, keys: list[Any], cache: Path, jobs: int,
               dtype: str) -> pd.DataFrame:
    """The sample computed as the table is (same layers, batch, seed), in ``dtype``."""
    from nasbench_bert.proxies import values

    before = values.DTYPE
    values.DTYPE = dtype  # type: ignore[misc]  (the study's other precision; the table's is restored below)
    try:
        return values.compute_values(bench, benchmark, semantics, keys=keys, cache=cache, jobs=jobs)
    finally:
        values.DTYPE = before  # type: ignore[misc]


def summary(bench: Any, cache: Path, jobs: int) -> dict[str, Any]:
    from studies.pages import provenance

    meta = bench.proxy_values().attrs
    entry = bench.data.manifest["tables"]["proxy_values"]
    return {"table": {"sha256": entry["sha256"], "rows": entry["rows"], "bytes": entry["bytes"],
                      "columns": len(entry["columns"]) - 4},
            "table_provenance": dict(bench.data.manifest["proxy_values"]),
            "measure": measure(bench, cache, jobs), "semantics_of": {b: list(v) for b, v in _sems().items()},
            "provenance": provenance("python -m studies.proxy_values_page", bench, flex_step=FLEX_STEP,
                                          nlp_step=NLP_STEP, table_sha256=entry["sha256"],
                                          package_version_of_table=meta.get("package_version"))}


def _sems() -> dict[str, tuple[str, ...]]:
    from nasbench_bert.proxies.values import SEMANTICS_OF

    return SEMANTICS_OF


def _e(v: float) -> str:
    return "0" if v == 0 else ("inf" if not np.isfinite(v) else f"{v:.1e}")


def _ordinal(n: int) -> str:
    """25 -> '25th', 53 -> '53rd' (the sample's steps are printed as English ordinals)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def render(s: dict[str, Any]) -> str:
    """The page, from the JSON as stored."""
    p, t, m = s["table_provenance"], s["table"], s["measure"]
    rows = pd.DataFrame(m["rows"])
    mach = p["machine"]
    held_nlp = (f" and every {_ordinal(m['nlp_step'])} NAS-Bench-NLP recipe" if "nlp" in p["benchmarks"] else "")
    lines = [
        "# Proxy values: every proxy, per arch, as data\n\n",
        "Generated by `python -m studies.proxy_values_page` from the table it describes. Every zero-cost proxy the "
        "package ships, computed once for each FlexiBERT id under the three [semantics](semantics.md) and for each "
        "distinct NAS-Bench-NLP recipe, ships as the `proxy_values` table of the data release: listed in the manifest "
        "with its sha256, verified on load, carried by `publish` and `download` ([Hub](hub.md)).\n\n",
        "```python\nfrom nasbench_bert import Benchmark\n\nbench = Benchmark.load()\n"
        "zc = bench.proxy_values(\"as_trained\")              # DataFrame indexed by id, one column per proxy\n"
        "zc[[\"zico\", \"nsc\", \"meco\"]].head()\n"
        "nlp = bench.nlp.proxy_values(\"as_trained\")         # indexed by recipe_hash (join to bench.nlp.ptb / .wikitext2)\n"
        "zc.attrs[\"package_version\"], zc.attrs[\"dtype\"]   # provenance\n```\n\n",
        "On the command line: `nasbench-bert proxies values --semantics as_trained --out zc.parquet`; "
        "`nasbench-bert proxies values --verify` recomputes a sample on your machine and compares "
        "(below); `nasbench-bert proxies export --format naszero` writes NAS-Bench-Suite-Zero files from it.\n\n",
        "## What the table holds\n\n",
        f"* **{t['rows']:,} rows, {t['columns']} proxy columns** ({t['bytes']:,} bytes, sha256 `{t['sha256'][:16]}…`): "
        "one row per (benchmark, id or recipe, semantics).\n",
    ]
    for b, info in p["benchmarks"].items():
        lines.append(f"* **{b}**: {info['rows']}, semantics {', '.join(info['semantics'])}, batch `{info['batch']}`, "
                     f"{len(info['proxies'])} proxies" + (f" and {', '.join(info['combined'])} (a rank combination within "
                                                          "the rows of one semantics)" if info.get("combined") else "")
                     + ".\n")
    for b in [b for b in s["semantics_of"] if b not in p["benchmarks"]]:
        lines.append(f"* **{b}: not in this table.** Its rows are built with `nasbench-bert build-proxy-values "
                     f"--benchmarks {b}` (then `build-data --proxy-values FILE`); until then "
                     f"`bench{'.nlp' if b == 'nlp' else ''}.proxy_values()` says so in one line.\n")
    lines += [
        "* NAS-Bench-NLP builds one model per recipe whatever the semantics, and `as_specified` prescribes the same "
        "protocol as `as_trained` there, so `bench.nlp.proxy_values(\"as_specified\")` serves the `as_trained` rows "
        "(its `.attrs[\"rows_of\"]` says so).\n",
        f"* **Built** by nasbench-bert {p['package_version']} (commit `{str(p.get('commit'))[:10]}`"
        f"{', uncommitted changes' if p.get('dirty') else ''}) on {mach['processor']} with {mach['cpus']} CPUs, "
        f"{mach['platform']}, Python {mach['python']}, torch {mach['torch']}, device `{p['device']}`, "
        f"{p['threads']} torch thread per worker, {p['built']}; {p['worker_seconds']:,.0f} s of worker time summed over "
        f"its parts (the part cache records each part's time, so a resumed build counts every layer), "
        f"{p['seconds']:,.0f} s of wall time in the last, assembling run.\n",
        f"* **Precision: {p['dtype']} for every proxy; seed {p['seed']}.** Why: below.\n\n",
        "A table built by another package version, or whose sha256 or columns do not match the manifest, is refused with "
        "one line naming `nasbench-bert build-proxy-values`, which rebuilds it (resumable through its part cache; "
        "`--executor local|ray|slurm`).\n\n",
        "## Why float64, and what reproduces\n\n",
        f"Every {_ordinal(m['flex_step'])} FlexiBERT id ({int(rows[rows.benchmark == 'flexibert'].n.max())} archs) under each "
        f"semantics{held_nlp} was recomputed here ({m['worker_seconds']:,.0f} s of worker time) in "
        "float32 with one thread, and in float64 with two threads instead of one, and compared with the table. *Largest "
        "rel. diff*: the largest |a − b| / max(|a|, |b|) over the sample; *τ*: Kendall's τ between the recomputed and "
        "the table's values; *closest pair*: the smallest relative gap between two distinct values of the proxy over all "
        "of the table's rows of that semantics. A difference below half the closest pair reorders no arch, so every rank "
        "metric and every printed τ is unchanged.\n\n",
    ]
    noisy = rows[rows.noise]
    n32 = rows[~rows.noise & (rows.float32_max_rel_diff > 1e-6)]
    lines.append(
        f"* **float32 would move printed figures**: {len(n32)} (semantics, proxy) pairs differ by more than 1e-6 "
        "between float32 and float64, the largest "
        + ", ".join(f"`{r.proxy}` ({r.semantics}) {_e(r.float32_max_rel_diff)} (τ {r.float32_tau:.3f})"
                    for r in n32.sort_values("float32_max_rel_diff", ascending=False).head(5).itertuples())
        + ". In float64 the thread count moves no non-noise value by more than "
        f"{_e(rows[~rows.noise].threads2_max_rel_diff.max())}.\n")
    lines.append(
        f"* **Noise by construction** ({len(noisy.proxy.unique())} proxies under `authors`: "
        + ", ".join(f"`{x}`" for x in sorted(noisy.proxy.unique()))
        + "): that semantics' objective, the sum of the last hidden state, has a vanishing gradient behind the final "
        "LayerNorm ([errata](errata.md)), so every proxy that differentiates it measures rounding error: between one and "
        f"two threads they differ by up to {_e(noisy.threads2_max_rel_diff.max())} (τ down to "
        f"{noisy.threads2_tau.min():.2f}). Pages print them as *noise*, with no verdict word; `--verify` shows their "
        "differences and checks no tolerance.\n")
    lines.append(
        f"* **`--verify` tolerances**: a relative difference of {_e(rows[~rows.noise].tolerance.min())} per value unless "
        "listed otherwise in the table below; a proxy beyond it makes the command exit 1. A tolerance is 100 times "
        "the largest two-thread difference above, rounded up to a power of ten (so it can exceed half the closest pair: "
        "NAS-Bench-NLP's ZiCo). `.ci/run` runs it on this sample (`nasbench-bert proxies values --verify --benchmark all "
        "--semantics all --ids every:25 --nlp-ids every:53`) wherever the table has been built; a clean clone has "
        "none (the table is built output, not in the repository), and the step says so.\n\n")
    lines.append("| benchmark | semantics | proxy | float32: largest rel. diff | float32: τ | 2 threads: largest rel. diff | "
                 "2 threads: τ | closest pair | tolerance |\n|---|---|---|---|---|---|---|---|---|\n")
    for r in rows.itertuples():
        tau32 = "" if not np.isfinite(r.float32_tau) else f"{r.float32_tau:.3f}"
        tau2 = "" if not np.isfinite(r.threads2_tau) else f"{r.threads2_tau:.3f}"
        lines.append(f"| {r.benchmark} | {r.semantics} | {r.proxy} | {_e(r.float32_max_rel_diff)} | {tau32} | "
                     f"{_e(r.threads2_max_rel_diff)} | {tau2} | {_e(r.min_rel_gap)} | "
                     f"{'noise' if r.noise else _e(r.tolerance)} |\n")
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.proxy_values_page", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/proxy_values.md")
    ap.add_argument("--cache", default="data/proxy-values-study", help="part caches of the two recomputations")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes of the float32 recomputation")
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from its JSON; compute nothing")
    a = ap.parse_args(argv)
    from studies.pages import stored_or_computed, write_page

    def compute() -> dict[str, Any]:
        from nasbench_bert import Benchmark

        return summary(Benchmark.load(progress=False), Path(a.cache), a.jobs)

    write_page(Path(a.out), stored_or_computed(Path(a.out), a.render_only, compute), render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
