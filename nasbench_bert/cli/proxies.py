"""``proxies compute``, ``proxies export``, ``proxies values``: zero-cost proxy values,
computed live on real models, written in NAS-Bench-Suite-Zero's layout, or read (and
verified) from the precomputed proxy-values table. Ranking them against the benchmark
(``proxies score``, ``proxies evaluate``) is :mod:`nasbench_bert.cli.proxies_rank`.

Each handler checks its flags (output files, ``--sample``, ``--cache``, ``--slurm-*``,
``--device``) before torch is imported or the benchmark loads.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from ..benchmark import Benchmark
from ..errors import InvalidArgumentError
from ..semantics import SEMANTICS_NAMES
from ..sizes import WIKITEXT2_VOCAB
from ..vocabulary import DATASETS, DTYPES, SPACES, SpaceName
from . import common, proxies_rank
from .common import console, err_console

if TYPE_CHECKING:
    import pandas as pd


def cmd_proxies_compute(args: argparse.Namespace) -> None:
    slurm, device = common.check_sweep_flags(args)
    if args.sample is not None and args.space not in _SAMPLED_SPACES:
        raise InvalidArgumentError("--sample draws FlexiBERT archs from the whole space; it needs --space flexibert")
    from .. import proxies

    bench = common.load_bench(args)
    batch = {"batch_size": args.batch_size, "seq_len": args.seq_len, "source": args.source}
    batch = {k: v for k, v in batch.items() if v is not None}
    items: list[Any] = (common.sampled_archs(args) if args.sample is not None  # the whole space, not the benchmark's 500
                        else _PROXY_ITEMS[args.space](args, bench, batch))
    names = args.proxies.split(",") if "," in args.proxies else args.proxies
    df = proxies.compute(items, names, semantics=args.semantics, seed=args.seed, batch=batch, space=args.space, dtype=args.dtype,
                         bench=bench, cache=args.cache, jobs=args.jobs, progress=not args.quiet,
                         executor=args.executor, ray_address=args.ray_address, slurm=slurm, device=device)
    common.write_frame(df, Path(args.out))
    console.print(f"wrote {len(df)} rows ({int(df.error.notna().sum())} errors, {int(df.cached.sum())} from cache) to {args.out}")


def _flexibert_items(args: argparse.Namespace, bench: Benchmark, batch: dict[str, Any]) -> list[Any]:
    return common.parse_ids(args.ids, len(bench))  # FlexiBERT keys are benchmark ids


def _nlp_items(args: argparse.Namespace, bench: Benchmark, batch: dict[str, Any]) -> list[Any]:
    w = getattr(bench.nlp, args.dataset)  # the NLP lookup names its tables after the datasets
    w = w[w.recipe.notna()]
    items = [(r.log_name, r.recipe) for r in w.itertuples()]
    ids = common.ids_or_all(args.ids, len(items))
    batch.update(_NLP_BATCH[args.dataset])
    return items if ids is None else [items[i] for i in ids]


#: ``--space`` -> the items ``proxies compute`` runs on (NLP: (log name, recipe) rows by position)
_PROXY_ITEMS: dict[SpaceName, Callable[[argparse.Namespace, Benchmark, dict[str, Any]], list[Any]]] = {
    "flexibert": _flexibert_items, "nlp": _nlp_items}
#: the spaces ``--sample`` can draw from
_SAMPLED_SPACES: frozenset[SpaceName] = frozenset({"flexibert"})
#: ``--dataset`` -> what it changes in the proxy batch (its vocabulary; PTB's is the default)
_NLP_BATCH: dict[str, dict[str, Any]] = {"ptb": {}, "wikitext2": {"vocab_size": WIKITEXT2_VOCAB}}


def cmd_proxies_export(args: argparse.Namespace) -> None:
    """Stored (and optionally live) proxies in another tool's file layout."""
    from ..integrations.naszero import export_naszero

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InvalidArgumentError(f"--out = {args.out!r} is a file; give a folder (zc_*.json files are written into it)")
    common.writable(out, "--out")
    from_words = _LIVE_WORDS.get(args.live or "none")  # None: a file from 'proxies compute'
    live = common.read_frame(args.live, "--live") if from_words is None else None
    live_nlp = common.read_frame(args.live_nlp, "--live-nlp") if args.live_nlp else None
    bench = common.load_bench(args)
    if from_words is not None:
        live, words_nlp = from_words(bench)
        live_nlp = live_nlp if live_nlp is not None else words_nlp
    paths = export_naszero(bench, out, live=live, live_nlp=live_nlp, spaces=args.spaces.split(","),
                           tasks=args.tasks.split(","))
    for path in paths:
        console.print(f"wrote {path}")


def _live_from_table(bench: Benchmark) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """``--live table``: the data's proxy-values table, every proxy of the package, every semantics."""
    from ..integrations.naszero import live_from_table

    live, live_nlp = live_from_table(bench)
    if live is None:
        console.print("the data holds no proxy-values table: the files carry the release's stored proxies only "
                      "(build the table with `nasbench-bert build-proxy-values`)")
    return live, live_nlp


#: the words ``proxies export --live`` takes (anything else is a table file) -> the live
#: FlexiBERT and NAS-Bench-NLP frames they give; an empty value means 'none'
_LIVE_WORDS: dict[str, Callable[[Benchmark], tuple[pd.DataFrame | None, pd.DataFrame | None]]] = {
    "table": _live_from_table, "none": lambda bench: (None, None)}


def cmd_proxies_values(args: argparse.Namespace) -> None:
    from ..proxies.values import BENCHMARKS, SEMANTICS

    if args.verify:
        _proxies_values_verify(args)
        return
    if args.benchmark not in BENCHMARKS:
        raise InvalidArgumentError(f"--benchmark = {args.benchmark!r} is not allowed; allowed values: {list(BENCHMARKS)}")
    if args.semantics not in SEMANTICS:
        raise InvalidArgumentError(f"--semantics = {args.semantics!r} is not allowed; allowed values: {list(SEMANTICS)}")
    if args.out is not None:
        common.check_out(Path(args.out))
    bench = common.load_bench(args)
    names = None if args.proxies is None or common.is_all(args.proxies) else args.proxies.split(",")
    df = _VALUE_LOOKUPS[args.benchmark](bench)(args.semantics, names)
    if args.out is None:
        console.print(df.to_string(max_rows=20, max_cols=8))
        return
    common.write_frame(df.reset_index(), Path(args.out))
    console.print(f"wrote {len(df)} rows x {df.shape[1]} proxies ({args.benchmark}, {args.semantics}) to {args.out}")


#: ``proxies values --benchmark`` -> the lookup's reader of the proxy-values table
_VALUE_LOOKUPS: dict[SpaceName, Callable[[Benchmark], Callable[..., pd.DataFrame]]] = {
    "flexibert": lambda bench: bench.proxy_values, "nlp": lambda bench: bench.nlp.proxy_values}


def _proxies_values_verify(args: argparse.Namespace) -> None:
    from ..proxies.values import BENCHMARKS, SEMANTICS, nlp_recipes, verify

    benches = common.names_or_all(args.benchmark, BENCHMARKS, "--benchmark")
    sems = common.names_or_all(args.semantics, SEMANTICS, "--semantics")
    names = None if args.proxies is None or common.is_all(args.proxies) else [p.strip() for p in args.proxies.split(",")]
    if args.out is not None:
        common.check_out(Path(args.out), suffixes=(".json",))
    bench = common.load_bench(args)
    if common.is_all(args.benchmark):
        # "all" means every benchmark the table holds: a table built for one benchmark
        # (build-proxy-values --benchmarks flexibert) is verified for that one, and says so
        held = set(bench.data.manifest.get("proxy_values", {}).get("benchmarks", {})) or set(benches)
        for b in [b for b in benches if b not in held]:
            err_console.print(f"--benchmark all: the proxy-values table holds no {b} rows; not verified")
        benches = [b for b in benches if b in held]
    ids = common.sampled_ids(args.ids, len(bench), "--ids")
    recipes = [h for h, _ in nlp_recipes(bench)] if "nlp" in benches else []
    pos = common.sampled_ids(args.nlp_ids, len(recipes), "--nlp-ids")
    checks = verify(bench, benchmarks=benches, semantics=sems, ids=ids,
                    recipes=None if pos is None else [recipes[i] for i in pos], proxies=names, jobs=args.jobs,
                    progress=not args.quiet)
    t = Table(title="recomputed here vs the proxy-values table (relative difference, Kendall τ)")
    for c in ("benchmark", "semantics", "proxy", "n", "largest rel. diff", "τ", "tolerance", ""):
        t.add_column(c)
    for c in checks:
        t.add_row(c.benchmark, c.semantics, c.proxy, str(c.n), f"{c.max_rel_diff:.1e}", f"{c.tau:.4f}",
                  "noise" if c.tolerance is None else f"{c.tolerance:.0e}", "ok" if c.ok else "FAIL")
    console.print(t)
    bad = [c for c in checks if not c.ok]
    if args.out is not None:
        from ..atomic import atomic_write

        atomic_write(Path(args.out), json.dumps([c.as_dict() for c in checks], indent=1) + "\n")
    console.print(f"{len(checks) - len(bad)} of {len(checks)} (benchmark, semantics, proxy) checks within tolerance"
                  + (f"; {sum(c.tolerance is None for c in checks)} are noise by construction (not checked)"))
    if bad:
        raise SystemExit(1)


def add_proxies(sub: Any) -> None:
    """``proxies``: its five subcommands."""
    px = sub.add_parser("proxies", help="zero-cost proxies: compute live, score against the benchmarks")
    psub = px.add_subparsers(dest="pcmd", required=True)
    _add_compute(psub)
    proxies_rank.add_score(psub)
    proxies_rank.add_evaluate(psub)
    _add_export(psub)
    _add_values(psub)


def _add_compute(psub: Any) -> None:
    """``proxies compute``: live values on real models."""
    pc = psub.add_parser("compute", help="compute proxies on real models (resumable with --cache)")
    pc.add_argument("--space", default="flexibert", choices=list(SPACES), help="which benchmark's archs")
    pc.add_argument("--ids", default="all", help="FlexiBERT ids / NLP row numbers: 'all' or '0-99,250'")
    pc.add_argument("--dataset", default="ptb", choices=list(DATASETS), help="NLP: whose recipes and vocabulary")
    pc.add_argument("--proxies", default="paper", help="names (comma-separated) or a group: paper, etas, baseline, all")
    pc.add_argument("--semantics", default="as_trained", choices=list(SEMANTICS_NAMES),
                    help="model and proxy protocol: as_trained (default), as_specified (=faithful), authors (=seed_compat)")
    pc.add_argument("--dtype", default="float32", choices=list(DTYPES), help="precision of the proxy pass")
    pc.add_argument("--seed", type=int, default=0, help="seed of the model init, the batch and the projection")
    pc.add_argument("--batch-size", type=int, default=None, help="sequences per batch (FlexiBERT 8, NLP 10)")
    pc.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (FlexiBERT 128, NLP 70)")
    pc.add_argument("--source", default=None, help="random (default), text:<path>, glue:<folder>, hf:<dataset>")
    pc.add_argument("--cache", default=None, help="folder for per-arch results: reruns skip finished archs")
    common.add_sweep_arguments(pc, "local processes, one Ray task per arch over a cluster, or a SLURM job array "
                                   "(resumable with --cache)")
    pc.add_argument("--sample", type=int, default=None, metavar="N",
                    help="N archs sampled from the whole 10.6M space (seeded by --seed) instead of benchmark ids")
    pc.add_argument("--out", required=True, help="result table (.parquet or .csv)")
    pc.set_defaults(fn=cmd_proxies_compute)


def _add_export(psub: Any) -> None:
    """``proxies export``: NAS-Bench-Suite-Zero files."""
    from ..data.tables import GLUE_TASKS

    pe = psub.add_parser("export", help="proxies and results in NAS-Bench-Suite-Zero's zc_<space>.json layout")
    pe.add_argument("--format", default="naszero", choices=["naszero"], help="file layout (NAS-Bench-Suite-Zero)")
    pe.add_argument("--out", required=True, help="folder for zc_flexibert.json and zc_nasbench_nlp.json")
    pe.add_argument("--live", default="table", help="'table' (default: the data's proxy-values table, every proxy "
                    "and semantics), 'none' (the release's stored proxies only), or a FlexiBERT table from 'proxies "
                    "compute'; live values are added as <proxy>@<semantics>:live "
                    "(the release's values are <proxy>@authors:release)")
    pe.add_argument("--live-nlp", default=None, help="a NAS-Bench-NLP table from 'proxies compute --space nlp'")
    pe.add_argument("--spaces", default="flexibert,nlp", help="which files: flexibert, nlp or both (comma-separated)")
    pe.add_argument("--tasks", default=",".join(("glue", *GLUE_TASKS)),
                    help="FlexiBERT tasks (comma-separated): glue and the GLUE tasks")
    pe.set_defaults(fn=cmd_proxies_export)


def _add_values(psub: Any) -> None:
    """``proxies values``: the pinned table of every proxy's values, exported or verified."""
    pv = psub.add_parser("values", help="every proxy's precomputed values per arch (the proxy-values table); --verify "
                                        "recomputes a sample here and compares")
    pv.add_argument("--benchmark", default="flexibert", help="flexibert or nlp (--verify: also 'all' or both, comma-separated)")
    pv.add_argument("--semantics", default="as_trained", help="authors, as_trained or as_specified (--verify: also 'all' "
                                                             "or several, comma-separated)")
    pv.add_argument("--proxies", default=None, help="proxy names, comma-separated (default: every proxy)")
    pv.add_argument("--out", default=None, help="a .csv or .parquet file (default: print); with --verify, a .json report")
    pv.add_argument("--verify", action="store_true", help="recompute the rows given by --ids/--nlp-ids with the table's "
                                                          "dtype, seed and batch; exit 1 beyond a proxy's tolerance")
    pv.add_argument("--ids", default="every:25", help="--verify: FlexiBERT ids: 'all', 'every:K' or '0-19,250' "
                                                       "(default every:25, 20 archs)")
    pv.add_argument("--nlp-ids", default="every:53", help="--verify: positions among the NAS-Bench-NLP recipes: 'all', "
                                                          "'every:K' or '0-4' (default every:53, 5 recipes)")
    pv.add_argument("--jobs", type=int, default=1, help="--verify: worker processes")
    pv.set_defaults(fn=cmd_proxies_values)
