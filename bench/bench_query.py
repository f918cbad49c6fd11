"""Lookup speed: load, single queries per key form, query_many - each against its baseline.

Run: ``python bench/bench_query.py`` (needs the tables; builds them on first use).
Every figure is measured in this run; each ratio is baseline / ours (higher is better).
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
import time
import timeit
import os
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402  (imports are excluded from the load timings)
import pyarrow.parquet  # noqa: E402,F401

from nasbench_bert import Arch, Benchmark  # noqa: E402


def median_us(fn, n: int = 2000, repeat: int = 7) -> float:
    return statistics.median(timeit.repeat(fn, number=n, repeat=repeat)) / n * 1e6


def parse_release(rel: Path) -> dict:
    """The baseline: read every release file into plain Python structures."""
    tfn = rel / "training-free-nas" / "data"
    out = {
        "bench": json.loads((tfn / "BERT_benchmark.json").read_text()),
        "ablation": json.loads((tfn / "BERT_benchmark_train_ablation.json").read_text()),
    }
    for name in ("BERT_results_activation.csv", "RNN_results.csv", "RNN_parameters.csv"):
        with open(tfn / name, encoding="utf-8-sig", newline="") as f:
            out[name] = list(csv.DictReader(f))
    with open(rel / "nas-bench-nlp" / "data" / "doc2vec_features_lowdim.csv", newline="") as f:
        out["g2v"] = list(csv.DictReader(f))
    with zipfile.ZipFile(rel / "nas-bench-nlp" / "train_logs_wikitext-2" / "logs.zip") as z:
        out["wt2"] = [json.loads(z.read(n)) for n in z.namelist() if n.endswith(".json")]
    return out


def best_of(fn, k: int = 5) -> float:
    ts = []
    for _ in range(k):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main() -> None:
    rel = Path(os.environ.get("NASBENCH_BERT_RELEASE", ROOT.parent / "shared" / "upstream"))
    bench = Benchmark.load()
    path = str(bench.data.path)
    print(f"# nasbench-bert lookup benchmark (tables: {path})")

    t_release = best_of(lambda: parse_release(rel))
    t_load = best_of(lambda: Benchmark.load(path))
    t_full = best_of(lambda: (lambda b: (b.nlp.ptb, b.nlp.wikitext2, b.data.verify_all()))(Benchmark.load(path)))
    print(f"parse all release files (baseline)      {t_release * 1e3:8.1f} ms")
    print(f"Benchmark.load() (FlexiBERT; NLP lazy)  {t_load * 1e3:8.1f} ms   {t_release / t_load:6.1f}x faster")
    print(f"Benchmark.load() + every table read     {t_full * 1e3:8.1f} ms   {t_release / t_full:6.1f}x faster")

    entries = json.loads((rel / "training-free-nas/data/BERT_benchmark.json").read_text())
    e = entries[321]
    d = e["hparams"]["model_hparam_overrides"]
    a = Arch.from_release(d)
    forms = {"Arch": a, "string": str(a), "release dict": d, "id": e["id"]}

    def scan(key: dict) -> dict:  # baseline: linear scan of the release records
        for x in entries:
            if x["hparams"]["model_hparam_overrides"] == key:
                return x
        raise KeyError

    t_scan = median_us(lambda: scan(d), n=200)
    print(f"linear scan of 500 release records      {t_scan:8.2f} us (baseline)")
    for name, key in forms.items():
        t = median_us(lambda: bench.query(key, charge=False))
        print(f"query({name:<13})                     {t:8.2f} us   {t_scan / t:6.1f}x faster")

    ptb = bench.nlp.ptb
    rows = [dict(zip(ptb.columns, r)) for r in ptb.itertuples(index=False)]
    rid = int(ptb.recipe_id.iloc[-17])

    def scan_nlp(k: int) -> dict:
        for r in rows:
            if r["recipe_id"] == k:
                return r
        raise KeyError

    t_scan_nlp = median_us(lambda: scan_nlp(rid), n=50)
    t_nlp = median_us(lambda: bench.nlp.query(rid, charge=False), n=500)
    print(f"linear scan of 8,794 NLP records        {t_scan_nlp:8.2f} us (baseline)")
    print(f"nlp.query(recipe_id)                    {t_nlp:8.2f} us   {t_scan_nlp / t_nlp:6.1f}x faster")

    archs = bench.archs

    def cold_loop() -> list:
        bench._cache.clear()  # a fresh benchmark's result cache: every result is built
        return [bench.query(x, charge=False) for x in archs]

    t_loop_cold = best_of(cold_loop)
    t_loop = best_of(lambda: [bench.query(x, charge=False) for x in archs])  # every result already built
    t_loop_df = best_of(lambda: pd.DataFrame([r.to_dict() for r in (bench.query(x, charge=False) for x in archs)]))
    t_many = best_of(lambda: bench.query_many(archs, charge=False))
    print(f"loop of 500 single queries (cold cache) {t_loop_cold * 1e3:8.2f} ms (baseline)")
    print(f"query_many(500 archs) -> DataFrame      {t_many * 1e3:8.2f} ms   {t_loop_cold / t_many:6.1f}x faster than the cold loop")
    print(f"loop of 500 single queries (warm cache) {t_loop * 1e3:8.2f} ms   (query_many: {t_loop / t_many:.1f}x; the loop "
          "returns objects it already built)")
    print(f"warm loop + DataFrame of the results    {t_loop_df * 1e3:8.2f} ms   {t_loop_df / t_many:6.1f}x faster "
          "(the same output as query_many)")


if __name__ == "__main__":
    main()
