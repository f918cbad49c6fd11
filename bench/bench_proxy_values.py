"""Loading the proxy-values table: ``bench.proxy_values()`` in a cold process, beside the
floor of reading the same parquet file with pandas (python bench/bench_proxy_values.py).

Why: the table replaces hours of sweeping with one call, so that call must be cheap. The
goal is <= 0.2 s for ``Benchmark.load()`` + ``bench.proxy_values()`` in a fresh process,
excluding ``import nasbench_bert`` (the import has its own benchmark). Each figure is the
median over ``--runs`` fresh processes; the floor (``pandas.read_parquet`` of the table
file, no sha256 and no checks) is timed in the same processes, so the two are comparable.
No target is asserted: the numbers depend on the machine. A data folder without the table
(a clean checkout: the table is built output) gets one line saying so, and nothing is timed.

    python bench/bench_proxy_values.py [--runs 5] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import nasbench_bert, pandas
from nasbench_bert import Benchmark
t1 = time.perf_counter()
bench = Benchmark.load(sys.argv[1] or None, progress=False)
t2 = time.perf_counter()
if not bench.data.has_table("proxy_values"):  # built output, absent from a clean checkout's data
    print(json.dumps({"missing": True}))
    raise SystemExit(0)
if sys.argv[2] == "api":
    df = bench.proxy_values("as_trained")
    shape = list(df.shape)
else:  # the floor: the same file read by pandas, no sha256, no checks, in an equally cold process
    shape = list(pandas.read_parquet(bench.data.table_path("proxy_values")).shape)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "read": t3 - t2, "shape": shape}))
"""


def _run(data: str, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, data, mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="fresh processes timed (the median is reported)")
    ap.add_argument("--data", default="", help="data folder (default: the documented resolution order)")
    a = ap.parse_args(argv)
    if _run(a.data, "api").get("missing"):  # one untimed process: asks once, and warms the file cache for both modes
        print("no proxy-values table in this data folder (built output, not committed; the Hub's data release carries "
              "it): nothing timed. Build it with nasbench-bert build-proxy-values --out "
              "nasbench_bert/data/pinned/proxy_values.parquet, then nasbench-bert build-data --force")
        return 0
    api, floor = [], []
    for _ in range(a.runs):  # interleaved, so a drift of the machine's load hits both alike
        api.append(_run(a.data, "api"))
        floor.append(_run(a.data, "floor"))
    med = {k: statistics.median(r[k] for r in api) for k in ("import", "load", "read")}
    fl = statistics.median(r["read"] for r in floor)
    print(f"bench.proxy_values('as_trained'): {api[0]['shape'][0]} archs x {api[0]['shape'][1]} proxies; median of "
          f"{a.runs} fresh processes each")
    print(f"bench.proxy_values() in a fresh process (sha256, columns and version checked): {med['read']:.3f} s "
          "(goal <= 0.2 s)")
    print(f"  floor, pandas.read_parquet of the same file in an equally fresh process (no checks): {fl:.3f} s; "
          f"ratio {med['read'] / fl:.1f}x")
    print(f"  before it, Benchmark.load(): {med['load']:.3f} s; import nasbench_bert, pandas: {med['import']:.3f} s "
          "(neither counted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
