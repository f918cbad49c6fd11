"""Forward+backward time per FlexiBERT arch on CPU, and how close it gets to the machine.

Run: ``python bench/bench_models.py``. Prints, for a sample of benchmark archs at the
default proxy batch (8 x 128 tokens), the forward+backward time, the FLOPs torch counts
for it, the FLOP/s reached, and the ratio to this machine's fp32 matmul throughput
measured in the same run.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from nasbench_bert import Benchmark  # noqa: E402
from nasbench_bert.models import build_flexibert, count_flops  # noqa: E402

BATCH, SEQ = 8, 128


def matmul_flops_per_s(n: int = 1024, reps: int = 20) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t)


def main() -> None:
    torch.manual_seed(0)
    peak = matmul_flops_per_s()
    print(f"# threads={torch.get_num_threads()}  fp32 matmul 1024^3: {peak / 1e9:.1f} GFLOP/s (hardware reference)")
    bench = Benchmark.load()
    ids = torch.randint(0, 30522, (BATCH, SEQ))
    mask = torch.ones(BATCH, SEQ)
    print(f"{'arch':<62} {'fwd+bwd ms':>10} {'GFLOP':>7} {'GFLOP/s':>8} {'of peak':>8}")
    rates = []
    for a in bench.sample(8, seed=0):
        m = build_flexibert(a).eval()
        flops = count_flops(m, ids, mask, backward=True)
        ts = []
        for _ in range(3):
            m.zero_grad(set_to_none=True)
            t = time.perf_counter()
            m(ids, mask).sum().backward()
            ts.append(time.perf_counter() - t)
        t = statistics.median(ts)
        rates.append(flops / t)
        print(f"{str(a):<62} {t * 1e3:10.1f} {flops / 1e9:7.2f} {flops / t / 1e9:8.1f} {flops / t / peak:8.1%}")
    print(f"median: {statistics.median(rates) / 1e9:.1f} GFLOP/s = {statistics.median(rates) / peak:.1%} of the matmul reference")


if __name__ == "__main__":
    main()
