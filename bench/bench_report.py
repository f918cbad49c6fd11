"""Wall time of ``proxies.evaluate(..., report=DIR)`` (``--report DIR``) for a forward-only
proxy from an empty cache, in one run.

    python bench/bench_report.py            # 500 FlexiBERT ids x 3 semantics (target <= 10 min)
    python bench/bench_report.py --quick    # 8 ids x 3 semantics (CI)

Prints, all measured in this run on this machine:

* the bare loop (the floor, the baseline of every ratio): build each model and run one
  forward, for a sample of archs under every semantics, per model;
* ``proxies.evaluate`` with ``report=`` over the ids x 3 semantics from an empty cache
  (GLUE average and the eight tasks, every metric with bootstrap intervals, identical
  models computed once, then table.md, table.tex, scatter.png, cells.png and
  values.parquet): the wall time, against the ten-minute target and against the bare loop
  over the models built;
* the report alone (``report.write_report`` on the same Evaluation into a fresh folder):
  what ``--report`` adds to an evaluation, and its share of the whole call.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from bench_evaluate import bare_loop, token_diversity  # the same proxy and floor as the evaluate bench
from nasbench_bert import Benchmark, proxies, report
from nasbench_bert.proxies.sweep import default_batch
from nasbench_bert.semantics import SEMANTICS

#: issue 29's target for the report of a forward-only proxy on 500 archs x 3 semantics
TARGET_S = 600.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="8 ids instead of 500")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes of evaluate (the bare loop is one process)")
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--keep", type=Path, default=None, help="copy the report folder here afterwards (to look at it)")
    a = ap.parse_args()
    bench = Benchmark.load(progress=False)
    ids = list(range(0, len(bench), len(bench) // 8))[:8] if a.quick else list(range(len(bench)))
    spec = default_batch("flexibert")
    batch = proxies.make_batch(spec)
    sample = bench.sample(2 if a.quick else 12, seed=1)
    print(f"# proxies.evaluate(report=...), forward-only callable, {len(ids)} ids x {len(SEMANTICS)} semantics, "
          f"batch {spec.key}, torch threads {torch.get_num_threads()}, jobs {a.jobs}, bootstrap {a.bootstrap}")
    bare_loop(bench, sample[:1], batch)  # warm-up
    per_model = bare_loop(bench, sample, batch)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        res = proxies.evaluate(token_diversity, semantics="all", benchmarks="flexibert", ids=ids, cache=Path(tmp) / "cache",
                               jobs=a.jobs, bootstrap=a.bootstrap, progress=False, bench=bench, report=Path(tmp) / "report")
        wall = time.perf_counter() - t
        written = sorted(p.name for p in (Path(tmp) / "report").iterdir())
        prov = report.Provenance({"flexibert": spec.key}, 0, "float32", a.bootstrap,
                                 {"flexibert": {res.proxy: str(proxies.REGISTRY["flexibert"][res.proxy].version)}})
        t = time.perf_counter()
        report.write_report(res, Path(tmp) / "again", prov, bench=bench)
        alone = time.perf_counter() - t
        if a.keep is not None:
            import shutil

            shutil.copytree(Path(tmp) / "report", a.keep, dirs_exist_ok=True)
    models, rows = res.computed, len(ids) * len(SEMANTICS)
    print(f"{'bare build + forward (floor)':44s} {per_model * 1e3:9.1f} ms/model (baseline, {3 * len(sample)} models)")
    print(f"{'bare loop over the models built':44s} {per_model * models:9.1f} s  ({models} models for {rows} rows)")
    print(f"{'evaluate + report, empty cache':44s} {wall:9.1f} s  {wall / (per_model * max(models, 1)):.2f}x the bare "
          f"loop over the models built; {wall / TARGET_S:.3f}x the {TARGET_S:.0f} s target")
    print(f"{'  the report alone (write_report)':44s} {alone:9.1f} s  {alone / wall:.2f}x the whole call")
    print(f"{'files':44s} {', '.join(written)}")
    if not a.quick:
        print(f"target <= {TARGET_S:.0f} s for 500 ids x 3 semantics: {'met' if wall <= TARGET_S else 'missed'} "
              f"({wall / TARGET_S:.2f}x the target)")


if __name__ == "__main__":
    main()
