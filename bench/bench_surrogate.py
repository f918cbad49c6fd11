"""The pinned surrogate file: its size, load time and refit time (python bench/bench_surrogate.py).

Why: the point of shipping the surrogate as a file is that ``bench.surrogate()`` no
longer fits on the user's machine. This prints what that buys - the load time of the
portable file next to the time of a refit, as a ratio - and the file's size, on a
temporary copy of the tables (the user cache is never touched). It also times the bare
fit with the BLAS library's default thread count against the one thread a
:class:`~nasbench_bert.surrogate.Surrogate` fits with (``threadpoolctl``; on busy cores
the default oversubscribes them). No target is asserted: the numbers depend on the
machine; the tests check correctness, not speed.

    NASBENCH_BERT_RELEASE=../shared/upstream python bench/bench_surrogate.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from nasbench_bert import Benchmark
from nasbench_bert.data.artifacts import add_artifact
from nasbench_bert.data.release import build_tables
from nasbench_bert.data.resolve import release_source
from nasbench_bert.data.tables import DataDir
from nasbench_bert.surrogate import DEFAULT_FAMILY, TARGETS, make_family, portable, surrogate_features
from threadpoolctl import threadpool_info, threadpool_limits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="loads timed (the median is reported)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nasbench-bert-bench-surrogate-") as tmp:
        build_tables(os.environ.get("NASBENCH_BERT_RELEASE") or release_source(), tmp, progress=False)
        d = DataDir.open(tmp)
        bench = Benchmark(d)
        t = time.perf_counter()
        sur = bench.surrogate(refit=True)
        refit = time.perf_counter() - t
        payload = portable.surrogate_bytes(sur)
        add_artifact(d, "surrogate", portable.file_name(DEFAULT_FAMILY), payload, format=portable.FORMAT,
                     format_version=portable.FORMAT_VERSION, family=DEFAULT_FAMILY, features=sur.features)
        loads = []
        for _ in range(a.repeats):
            fresh = Benchmark.load(tmp)  # a new benchmark: nothing cached
            t = time.perf_counter()
            fresh.surrogate()
            loads.append(time.perf_counter() - t)
        load = float(np.median(loads))
        fits = _fit_by_threads(bench)
    print(f"surrogate file ({portable.file_name(DEFAULT_FAMILY)}): {len(payload):,} bytes ({len(payload) / 2**20:.2f} MiB)")
    print(f"refit (bench.surrogate(refit=True)): {refit:.2f} s")
    print(f"load (bench.surrogate() from the pinned file, sha256 checked; median of {a.repeats}): {load:.3f} s")
    print(f"load / refit = {load / refit:.4f} (loading is {refit / load:.0f}x faster)")
    default_threads = ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info()) or "none found"
    print(f"bare fit of {DEFAULT_FAMILY}: {fits[None]:.2f} s with the default BLAS threads ({default_threads}), "
          f"{fits[1]:.2f} s with one thread (what Surrogate uses)")
    return 0


def _fit_by_threads(bench: Benchmark) -> dict[int | None, float]:
    """Seconds of one fit of the default family, outside :class:`Surrogate`'s thread limit:
    with the BLAS library's own thread count (None) and with one thread."""
    df = bench.to_pandas()
    X = surrogate_features(df["space_index"].to_numpy(dtype=np.int64), "as_trained")
    Y = df[list(TARGETS)].to_numpy(dtype=float)
    out: dict[int | None, float] = {}
    for limit in (None, 1):
        with threadpool_limits(limits=limit):
            t = time.perf_counter()
            make_family(DEFAULT_FAMILY).fit(X, Y)
            out[limit] = time.perf_counter() - t
    return out


if __name__ == "__main__":
    raise SystemExit(main())
