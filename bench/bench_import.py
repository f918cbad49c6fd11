"""Import time of the package against its own unavoidable dependencies (python bench/bench_import.py).

Target: ``import nasbench_bert`` <= 1.3 x ``import pandas, pyarrow``. Each figure is the
median wall time of fresh interpreters (``python -c ...``), measured alternately in the
same run so that machine drift hits both; the interpreter start-up (``python -c pass``) is
printed too and subtracted from both sides of the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass (start-up)": "pass",
    "import pandas, pyarrow (baseline)": "import pandas, pyarrow",
    "import nasbench_bert": "import nasbench_bert",
    "import nasbench_bert; Benchmark, query API ready": "from nasbench_bert import Benchmark, Arch, FLEXIBERT_SPACE",
}


def wall(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    for code in CASES.values():  # warm the file-system cache
        wall(code)
    times: dict[str, list[float]] = {k: [] for k in CASES}
    for _ in range(a.runs):
        for name, code in CASES.items():
            times[name].append(wall(code))
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["python -c pass (start-up)"]
    print(f"# import time, median of {a.runs} fresh interpreters ({sys.executable})")
    for name, m in med.items():
        print(f"{name:55s} {m * 1000:8.1f} ms  (min {min(times[name]) * 1000:.1f}, max {max(times[name]) * 1000:.1f})")
    ours = med["import nasbench_bert"] - base
    ref = med["import pandas, pyarrow (baseline)"] - base
    print(f"{'ratio import nasbench_bert / import pandas, pyarrow':55s} {ours / ref:8.2f} x  (start-up subtracted; target <= 1.3)")
    print(f"{'ratio without subtracting start-up':55s} {med['import nasbench_bert'] / med['import pandas, pyarrow (baseline)']:8.2f} x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
