"""``search run``, ``search compare``, ``search cv``: NAS algorithms on the benchmark, and
the surrogate's quality.

The group's handler checks the output files of whichever subcommand ran, loads the
benchmark once, and hands it to that subcommand's function.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.table import Table

from ..benchmark import Benchmark
from ..search.algorithms import ALGORITHMS
from ..search.oracle import ORACLES
from . import common
from .common import console, err_console


def cmd_search(args: argparse.Namespace) -> None:
    if getattr(args, "out", None):
        common.check_out(Path(args.out))
    if getattr(args, "plot", None):
        common.check_out(Path(args.plot), "--plot", (".png", ".pdf", ".svg"))
    args.search_fn(args, common.load_bench(args))  # the search subcommand's own function (see add_search)


def _search_run(args: argparse.Namespace, bench: Benchmark) -> None:
    from .. import search

    kw = {"proxy": args.proxy} if args.proxy else {}  # refused by search.run for algorithms without a proxy
    t = search.run(args.algorithm, bench, budget=args.budget, seed=args.seed, oracle=args.oracle,
                   progress=not args.quiet, **kw)
    df = t.to_pandas()
    if args.out:
        common.write_frame(df, Path(args.out))
    console.print(f"{args.algorithm} ({args.oracle}), seed {args.seed}: {len(t)} evaluations, "
                  f"{df.seconds.iloc[-1] / 3600:.1f} simulated hours, best GLUE {t.best_glue:.3f}: {t.best_arch}")


def _search_compare(args: argparse.Namespace, bench: Benchmark) -> None:
    from .. import search

    curves = search.compare(bench, args.algorithms.split(","), seeds=args.seeds, budget=args.budget, oracle=args.oracle,
                            axis=args.axis, progress=not args.quiet)
    end = curves.groupby("algorithm", sort=False).tail(1)
    t = Table(title=f"best GLUE at the end ({args.budget} evaluations), {args.seeds} seeds ({args.oracle})")
    for c in ("algorithm", "mean", "std", "q25", "q75"):
        t.add_column(c)
    for r in end.itertuples():
        t.add_row(r.algorithm, f"{r.mean:.3f}", f"{r.std:.3f}", f"{r.q25:.3f}", f"{r.q75:.3f}")
    console.print(t)
    if args.out:
        common.write_frame(curves, Path(args.out))
    if args.plot:
        search.plot_comparison(curves, args.plot)
        console.print(f"wrote {args.plot}")


def _search_cv(args: argparse.Namespace, bench: Benchmark) -> None:
    from ..surrogate import cross_validate

    err_console.print("cross-validating the surrogate: 5 folds x 3 families (about a minute on 2 cores)", highlight=False)
    cv = cross_validate(bench)
    console.print(cv.to_string(index=False))


def add_search(sub: Any) -> None:
    """``search``: run, compare, cv."""
    se = sub.add_parser("search", help="NAS algorithms on the benchmark; surrogate quality")
    ssub = se.add_subparsers(dest="scmd", required=True)
    sr = ssub.add_parser("run", help="one search run -> trajectory")
    sr.add_argument("--algorithm", default="regularized_evolution", choices=list(ALGORITHMS), help="search algorithm")
    sr.add_argument("--budget", type=int, default=100, help="evaluations")
    sr.add_argument("--seed", type=int, default=0, help="random seed (a run is reproducible from it)")
    sr.add_argument("--oracle", "--mode", dest="oracle", default="tabular", choices=list(ORACLES),
                    help="what answers evaluations: the table, the surrogate (whole space), regenerated entries")
    sr.add_argument("--proxy", default=None, help="ETAS: the ranking proxy (default ntsr)")
    sr.add_argument("--out", default=None, help="trajectory table (.csv or .parquet)")
    sr.set_defaults(search_fn=_search_run)
    sc = ssub.add_parser("compare", help="algorithms x seeds -> anytime curves (table, PNG)")
    sc.add_argument("--algorithms", default="random,regularized_evolution,local_search", help="comma-separated algorithm names")
    sc.add_argument("--seeds", type=int, default=20, help="runs per algorithm")
    sc.add_argument("--budget", type=int, default=100, help="evaluations per run")
    sc.add_argument("--oracle", "--mode", dest="oracle", default="tabular", choices=list(ORACLES), help="what answers evaluations")
    sc.add_argument("--axis", default="evaluations", choices=["evaluations", "seconds"], help="x of the anytime curves")
    sc.add_argument("--out", default=None, help="curves table (.csv or .parquet)")
    sc.add_argument("--plot", default=None, help="curves plot (.png)")
    sc.set_defaults(search_fn=_search_compare)
    ssub.add_parser("cv", help="surrogate cross-validation (5 folds by arch)").set_defaults(search_fn=_search_cv)
    se.set_defaults(fn=cmd_search)
