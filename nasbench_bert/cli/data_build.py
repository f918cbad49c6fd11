"""``build-data``, ``build-surrogate``, ``build-proxy-values``, ``download``: putting the
tables into a data folder (built from the release files, computed here, or fetched from
the Hugging Face Hub).

Each handler checks its destination first (``--out``, ``--data``, ``--cache``: writable
before any work), so a build that would fail at its last step is refused at its first.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import NasBenchError
from . import common
from .common import console


def cmd_build_data(args: argparse.Namespace) -> None:
    from ..data.release import build_tables
    from ..data.resolve import default_locations
    from ..data.tables import DataDir, has_data

    src, out = default_locations(args.release, args.out)
    outp = Path(out)
    if has_data(outp) and not args.force:
        try:
            d = DataDir.open(outp)
            d.verify_all()
            if not (args.ptb_logs and not d.has_table("nlp_ptb_logs")):  # asked for PTB logs it lacks: rebuild
                console.print(f"{d.path} already holds verified tables; rebuild with --force")
                return
        except NasBenchError as e:
            console.print(f"the tables in {outp} do not verify ({e}); rebuilding")
    common.writable(outp, "--out")
    path = build_tables(src, out, progress=not args.quiet, allow_modified=args.allow_modified_release,
                        hardware=args.hardware, ptb_logs=args.ptb_logs, proxy_values=args.proxy_values)
    console.print(f"built tables from {src} into {path}")
    _write_artifacts(path, surrogate=not args.no_surrogate)


def cmd_build_surrogate(args: argparse.Namespace) -> None:
    from ..data.resolve import default_locations

    path = Path(args.data or default_locations(None, None)[1])
    common.writable(path, "--data")  # before the fit, as build-data checks --out (not the write's temporary name after it)
    _write_artifacts(path, surrogate=True)


def _write_artifacts(path: Path, *, surrogate: bool) -> None:
    """The files made from the built tables (objectives.json, the pinned surrogate), listed
    in the manifest: fitted here, above the data layer (docs/surrogate.md)."""
    from ..benchmark.flexibert import complete_build
    from ..data.tables import DataDir

    for name, e in complete_build(DataDir.open(path), surrogate=surrogate).items():  # what Benchmark.load() adds too
        console.print(f"wrote {name} {e['file']} ({e['bytes']:,} bytes, sha256 {e['sha256'][:16]}…)")


def cmd_build_proxy_values(args: argparse.Namespace) -> None:
    from ..data.proxy_values import TABLE
    from ..proxies.values import BENCHMARKS, SEMANTICS

    benches = common.names_or_all(args.benchmarks, BENCHMARKS, "--benchmarks")
    sems = common.names_or_all(args.semantics, SEMANTICS, "--semantics")
    if args.out is not None:
        common.check_out(Path(args.out), suffixes=(".parquet",))
    cache = Path(args.cache) if args.cache else None
    if cache is not None:
        common.writable(cache, "--cache")
    slurm, device = common.sweep_placement(args)
    bench = common.load_bench(args)
    if args.out is None:
        common.writable(bench.data.path, "--data")
    ids = common.ids_or_all(args.ids, len(bench))
    from ..proxies.values import build, default_cache

    res = build(bench, benchmarks=benches, semantics=sems, ids=ids, cache=cache or default_cache(), jobs=args.jobs,
                executor=args.executor, ray_address=args.ray_address, slurm=slurm, progress=not args.quiet, device=device)
    from ..data.proxy_values import add_to_data, write_standalone

    table = res.to_arrow()
    if args.out is not None:
        meta = write_standalone(table, res.provenance, Path(args.out))
        console.print(f"wrote {TABLE} ({table.num_rows} rows, {len(res.columns)} proxies, sha256 {meta['sha256'][:16]}…) "
                      f"to {args.out} and its provenance to {Path(args.out).with_suffix('.json')}")
    else:
        entry = add_to_data(bench.data, table, res.provenance)
        console.print(f"added {TABLE} ({table.num_rows} rows, {len(res.columns)} proxies, sha256 {entry['sha256'][:16]}…) "
                      f"to {bench.data.path}")


def cmd_download(args: argparse.Namespace) -> None:
    from ..data.hub import download, remember
    from ..data.tables import has_data, user_cache_dir

    d = download(args.repo_id, args.revision, endpoint=args.endpoint)
    d.verify_all()
    remember(args.repo_id, d)  # what Benchmark.load() and the commands load next (step 3 of docs/data.md's order)
    console.print(f"verified {len(d.manifest['tables'])} tables of {args.repo_id}@{args.revision} (commit {d.path.parent.name}) in {d.path}")
    if has_data(user_cache_dir()):
        console.print(f"the user cache also holds tables built there ({user_cache_dir()}), which load first; load these "
                      f"with --data {d.path} or Benchmark.load({str(d.path)!r})")


def add_build_data(sub: Any) -> None:
    """``build-data``: the tables from the release files; ``build-surrogate``: its last step alone."""
    b = sub.add_parser("build-data", help="build the tables from the release files (folder, URL or 'github')")
    b.add_argument("--release", default=None, help="folder, base URL or 'github' (default: $NASBENCH_BERT_RELEASE, else 'github')")
    b.add_argument("--out", default=None, help="data folder (default: the user cache, where loading looks)")
    b.add_argument("--force", action="store_true", help="rebuild even when the folder already holds verified tables")
    b.add_argument("--allow-modified-release", action="store_true",
                   help="build from release files whose sha256 differs from the pinned release (recorded in the manifest)")
    b.add_argument("--hardware", default=None,
                   help="folder of a hardware measurement to include (default: $NASBENCH_BERT_HARDWARE, else <cache>/measured)")
    b.add_argument("--no-surrogate", action="store_true",
                   help="skip fitting the pinned surrogate file (bench.surrogate() then fits on first use)")
    b.add_argument("--ptb-logs", default=None, metavar="ZIP",
                   help="NAS-Bench-NLP's PTB training logs (train_logs_single_run/logs.zip): PTB's per-epoch curves, table "
                        "nlp_ptb_logs (default: that file in the release folder, when there)")
    b.add_argument("--proxy-values", default=None, metavar="FILE",
                   help="the proxy-values table to include (from build-proxy-values --out; default: the pinned table "
                        "shipped with the package)")
    b.set_defaults(fn=cmd_build_data)
    bs = sub.add_parser("build-surrogate", help="fit the default surrogate and pin it (and objectives.json) in a data folder")
    bs.add_argument("--data", default=None, help="data folder holding built tables (default: the user cache)")
    bs.set_defaults(fn=cmd_build_surrogate)


def add_build_proxy_values(sub: Any) -> None:
    """``build-proxy-values``: compute the proxy-values table (resumable) into the data folder or a file."""
    b = sub.add_parser("build-proxy-values", help="compute every proxy per arch and semantics into the proxy-values "
                                                  "table (hours on a CPU; resumable with --cache)")
    b.add_argument("--out", default=None, help="write a standalone .parquet (and its provenance .json) instead of "
                                               "adding the table to the data folder (--data)")
    b.add_argument("--cache", default=None, help="part cache: a killed build resumes (default: <user cache>/proxy-values-cache)")
    b.add_argument("--benchmarks", default="all", help="'all', flexibert or nlp")
    b.add_argument("--semantics", default="all", help="'all' or names: as_trained, as_specified, authors")
    b.add_argument("--ids", default="all", help="FlexiBERT ids: 'all' or '0-99,250' (a partial table says so in its provenance)")
    common.add_sweep_arguments(b, "where each arch runs: local, one Ray task per arch, or a SLURM job array (--slurm-*)")
    b.set_defaults(fn=cmd_build_proxy_values)


def add_download(sub: Any) -> None:
    """``download``: the tables from the Hugging Face Hub."""
    from ..data.hub import DEFAULT_REPO_ID, DEFAULT_REVISION

    d = sub.add_parser("download", help="download and verify the tables from the Hugging Face Hub (or a mirror)")
    d.add_argument("--repo-id", default=DEFAULT_REPO_ID, help="Hub dataset repository (namespace/name)")
    d.add_argument("--revision", default=DEFAULT_REVISION, help="branch, tag or commit sha (pin a sha)")
    d.add_argument("--endpoint", default=None, help="Hub endpoint or mirror (default $HF_ENDPOINT or huggingface.co)")
    d.set_defaults(fn=cmd_download)
