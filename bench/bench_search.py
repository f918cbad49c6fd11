"""Search and surrogate speed (python bench/bench_search.py).

* 1,000 regularised-evolution steps on the tabular benchmark (target <= 0.5 s), against
  the same loop written on the public per-call API (bench.query + bench.nearest).
* Surrogate predictions per second over 100,000 sampled archs, featurisation included
  (target >= 50,000/s), against featurising Arch objects one at a time and running the
  fitted model on each (the default surrogate scores each of the 2,664 as-trained
  classes once and looks the rest up).
"""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from nasbench_bert import FLEXIBERT_SPACE, Arch, Benchmark, search
from nasbench_bert.search.oracle import make_oracle
from nasbench_bert.spaces.flexibert import SPACE_SIZE, arch_at
from nasbench_bert.surrogate import surrogate_features


def naive_re(bench: Benchmark, steps: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    archs = bench.archs
    pop = deque()
    best = -1.0
    for i in range(steps):
        if len(pop) < 20:
            a = archs[int(rng.integers(len(archs)))]
        else:
            idx = rng.choice(len(pop), size=5, replace=False)
            parent = max((pop[j] for j in idx), key=lambda t: t[1])[0]
            m = FLEXIBERT_SPACE.mutate(parent, rng)
            near = bench.nearest(m, k=2)
            a = Arch.coerce(near.arch.iloc[0] if near.arch.iloc[0] != str(parent) else near.arch.iloc[1])
        g = bench.query(a, charge=False).glue
        best = max(best, g)
        pop.append((a, g))
        if len(pop) > 20:
            pop.popleft()
    return best


def main() -> None:
    bench = Benchmark.load(progress=False)
    search.run("random", bench, budget=10)  # warm caches
    # search.run refuses a budget above the table's distinct archs (491): time that many steps
    steps = make_oracle("tabular", bench).max_evaluations
    t = time.perf_counter()
    naive_re(bench, steps)
    base = time.perf_counter() - t
    t = time.perf_counter()
    tr = search.run("regularized_evolution", bench, budget=steps, seed=0)
    ours = time.perf_counter() - t
    print("# search and surrogate")
    print(f"{f'{steps} RE steps, per-call public API':40s} {base:8.3f} s (baseline)")
    print(f"{f'{steps} RE steps, search.run':40s} {ours:8.3f} s   {base / ours:.1f}x faster (target <= 0.25 s)  best GLUE {tr.best_glue:.3f}")

    sur = bench.surrogate()
    rng = np.random.default_rng(0)
    n = 100_000
    idx = rng.integers(0, SPACE_SIZE, n)
    sur.predict_indices(idx[:1000])  # warm-up: first-call costs (allocation, lazy caches) are not throughput

    def median_time(**kw: object) -> float:
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            sur.predict_indices(idx, **kw)
            ts.append(time.perf_counter() - t)
        return float(np.median(ts))

    fast = median_time()
    m = 5_000
    objs = [arch_at(int(i)) for i in idx[:m]]
    t = time.perf_counter()
    X = np.vstack([surrogate_features(np.array([a.index])) for a in objs])
    sur.model.predict(X)  # the fitted model on every arch (no per-class lookup)
    slow = (time.perf_counter() - t) / m * n
    print(f"{'surrogate, per-arch featurisation':40s} {n / slow:10,.0f} preds/s (baseline, from {m:,} archs)")
    print(f"{'surrogate, vectorised, with std':40s} {n / fast:10,.0f} preds/s   {slow / fast:.1f}x faster (target >= 50,000/s)"
          "  (median of 3 after a warm-up)")
    print(f"{'surrogate, vectorised, mean only':40s} {n / median_time(return_std=False):10,.0f} preds/s")


if __name__ == "__main__":
    main()
