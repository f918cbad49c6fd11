"""Wall time of ``proxies.evaluate`` for a forward-only proxy, in one run.

    python bench/bench_evaluate.py            # 500 FlexiBERT ids x 3 semantics (target <= 10 min)
    python bench/bench_evaluate.py --quick    # 20 ids x 3 semantics (CI)

Prints, all measured in this run on this machine:

* the bare loop (the floor): build each model and run one forward, for a sample of
  archs under every semantics, per model;
* ``proxies.evaluate`` of the same forward-only callable over the ids x 3 semantics,
  GLUE average and the eight tasks, every metric with bootstrap intervals, identical
  models computed once: the wall time, and its ratio to the bare loop extrapolated to
  every row (no dedupe: what a per-arch script costs) and to the models actually built;
* a rerun of the same call from its cache (what a resumed or repeated call costs).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch

from nasbench_bert import Benchmark, proxies
from nasbench_bert.models import build_flexibert
from nasbench_bert.proxies.sweep import default_batch
from nasbench_bert.semantics import SEMANTICS

#: the ten-minute target of issue 21 for 500 archs x 3 semantics
TARGET_S = 600.0


def token_diversity(model: torch.nn.Module, batch) -> float:
    """A forward-only proxy: one minus the mean cosine similarity between the last
    hidden state's token vectors within a sequence (how far the untrained model keeps
    tokens apart)."""
    with torch.no_grad():
        out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        z = torch.nn.functional.normalize(out.double(), dim=-1)
        cos = z @ z.transpose(1, 2)
    return float(1 - cos.mean())


def bare_loop(bench: Benchmark, ids: list[int], batch) -> float:
    """Seconds per model to build it and run token_diversity, over ``ids`` x every semantics."""
    n = 0
    t = time.perf_counter()
    for sem in SEMANTICS.values():
        for i in ids:
            m = build_flexibert(bench.query(i, charge=False).arch, sem, seed=0).train(sem.protocol.train_mode)
            token_diversity(m, batch)
            n += 1
    return (time.perf_counter() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="20 ids instead of 500")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes of evaluate (the bare loop is one process)")
    ap.add_argument("--bootstrap", type=int, default=200)
    a = ap.parse_args()
    bench = Benchmark.load(progress=False)
    ids = list(range(20 if a.quick else len(bench)))
    spec = default_batch("flexibert")
    batch = proxies.make_batch(spec)
    sample = bench.sample(3 if a.quick else 12, seed=1)
    print(f"# proxies.evaluate, forward-only callable, {len(ids)} ids x {len(SEMANTICS)} semantics, batch {spec.key}, "
          f"torch threads {torch.get_num_threads()}, jobs {a.jobs}, bootstrap {a.bootstrap}")
    bare_loop(bench, sample[:1], batch)  # warm-up
    per_model = bare_loop(bench, sample, batch)
    rows = len(ids) * len(SEMANTICS)
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        res = proxies.evaluate(token_diversity, semantics="all", benchmarks="flexibert", ids=ids, cache=cache, jobs=a.jobs,
                               bootstrap=a.bootstrap, progress=False, bench=bench)
        wall = time.perf_counter() - t
        t = time.perf_counter()
        again = proxies.evaluate(token_diversity, semantics="all", benchmarks="flexibert", ids=ids, cache=cache, jobs=a.jobs,
                                 bootstrap=a.bootstrap, progress=False, bench=bench)
        rerun = time.perf_counter() - t
    models = res.computed
    print(f"{'bare build + forward (floor)':44s} {per_model * 1e3:9.1f} ms/model (baseline, {3 * len(sample)} models)")
    print(f"{'bare loop over every row, no dedupe':44s} {per_model * rows:9.1f} s  ({rows} rows, extrapolated)")
    print(f"{'proxies.evaluate, identical models once':44s} {wall:9.1f} s  ({models} models for {rows} rows; "
          f"{res.shared} rows shared)  {wall / (per_model * rows):.2f}x the no-dedupe bare loop, "
          f"{wall / (per_model * models):.2f}x the bare loop over the models built")
    print(f"{'  of which per model':44s} {wall / max(models, 1) * 1e3:9.1f} ms/model (scoring included)")
    print(f"{'rerun from the cache':44s} {rerun:9.1f} s  ({again.cached} models read, {again.computed} computed)  "
          f"{rerun / wall:.2f}x the first call")
    if not a.quick:
        print(f"target <= {TARGET_S:.0f} s for 500 ids x 3 semantics: {'met' if wall <= TARGET_S else 'missed'} "
              f"({wall / TARGET_S:.2f}x the target)")
    cand = res.candidate()
    glue = cand[cand.target == "glue"][["semantics", "n", "kendall_tau", "tau_tiebroken", "tau_within_cell"]]
    print(glue.to_string(index=False))


if __name__ == "__main__":
    main()
