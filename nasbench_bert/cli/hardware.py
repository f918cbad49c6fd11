"""``hardware``: latency, peak memory and FLOPs of benchmark or sampled archs, measured here.

Every flag (``--out``, ``--sample``, ``--cache``, ``--slurm-*``, ``--device``) is checked
before the benchmark loads or torch is imported: a measurement runs for hours, and a bad
output path found at its end would lose them.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from ..devices import is_cuda
from . import common
from .common import console


def cmd_hardware(args: argparse.Namespace) -> None:
    slurm, device = common.check_sweep_flags(args)
    from .. import hardware

    bench = common.load_bench(args)
    items: list[Any] = (common.sampled_archs(args) if args.sample is not None  # the whole space, not the benchmark's 500
                        else common.parse_ids(args.ids, len(bench)))
    sems = hardware.ALL_SEMANTICS if common.is_all(args.semantics) else tuple(args.semantics.split(","))
    base = hardware.GPU_SETTINGS if is_cuda(device) else hardware.MeasureSettings()
    settings = dataclasses.replace(base, threads=args.threads)
    df = hardware.measure_many(items, sems, settings=settings, bench=bench, cache=args.cache, jobs=args.jobs,
                               executor=args.executor, ray_address=args.ray_address, progress=not args.quiet,
                               slurm=slurm, device=device)
    common.write_frame(df, Path(args.out))
    console.print(f"wrote {len(df)} rows ({int(df.error.notna().sum())} errors, {int(df.cached.sum())} from cache, "
                  f"{int(df.shared.sum())} sharing another row's model) to {args.out}")


def add_hardware(sub: Any) -> None:
    """``hardware``: CPU latency, memory and FLOPs."""
    hw = sub.add_parser("hardware", help="measure CPU latency, peak memory and FLOPs (resumable with --cache)")
    hw.add_argument("--ids", default="all", help="benchmark ids: 'all' or '0-99,250'")
    hw.add_argument("--sample", type=int, default=None, metavar="N",
                    help="N archs sampled from the whole 10.6M space (seeded by --seed) instead of benchmark ids")
    hw.add_argument("--seed", type=int, default=0, help="seed of --sample")
    hw.add_argument("--semantics", default="all", help="'all' or names (comma-separated): authors, as_trained, as_specified")
    hw.add_argument("--threads", type=int, default=1, help="torch threads per measurement (recorded in every row)")
    hw.add_argument("--cache", default=None, help="folder for per-model results: reruns skip measured models")
    common.add_sweep_arguments(hw, "this machine, one Ray task per model, or a SLURM job array")
    hw.add_argument("--out", required=True, help="result table (.parquet or .csv)")
    hw.set_defaults(fn=cmd_hardware)
