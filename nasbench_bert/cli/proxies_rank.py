"""``proxies score`` and ``proxies evaluate``: proxy values ranked against the benchmark's
results - stored or given values scored (torch-free), or a new proxy computed on every
model and ranked beside the baselines in one call.

``proxies evaluate`` checks every output option (``--out``/``--format``, ``--cache``,
``--report``, ``--slurm-*``, ``--device``) before it imports torch or loads the benchmark:
its run takes minutes to hours.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text

from ..errors import InvalidArgumentError
from ..semantics import SEMANTICS_NAMES
from ..vocabulary import DTYPES, SPACES, SpaceName
from . import common
from .common import console, err_console

#: the spaces whose target has one row per task (``proxies score --tasks``: GLUE's)
_PER_TASK_SPACES: frozenset[SpaceName] = frozenset({"flexibert"})


def cmd_proxies_score(args: argparse.Namespace) -> None:
    import warnings

    from .. import (
        scoring as proxies,  # torch-free: scoring stored values needs no models
    )
    from ..errors import InputRowsWarning

    if args.csv:
        common.check_out(Path(args.csv), "--csv", (".csv",))
    if args.plots:
        common.writable(Path(args.plots), "--plots")
    if args.bootstrap < 0:
        raise InvalidArgumentError(f"--bootstrap = {args.bootstrap} is not allowed; allowed: an integer >= 0")
    bench = common.load_bench(args)
    target: Any = args.target or proxies.scoring_space(args.space).stored_target
    if args.tasks:
        if args.space not in _PER_TASK_SPACES:
            raise InvalidArgumentError("--tasks scores each GLUE task; it needs --space flexibert")
        from ..data.tables import GLUE_TASKS

        target = ["glue", *GLUE_TASKS]
    rows = {"duplicates": args.duplicates, "unknown_ids": args.unknown_ids}  # what may be merged or dropped, if anything
    if args.values:
        df = common.read_frame(args.values, "--values")
        if not args.no_baselines:  # the trivial spec baselines of the same rows, beside the proxies (torch-free)
            df = proxies.with_baselines(df, args.space, semantics=args.baseline_semantics, bench=bench)
        with warnings.catch_warnings():  # what the options merged or dropped is printed below, once
            warnings.simplefilter("ignore", InputRowsWarning)
            res = proxies.score(df, target, space=args.space, bench=bench, bootstrap=args.bootstrap, **rows)
    else:
        res = proxies.score_stored(args.space, bench=bench, bootstrap=args.bootstrap, baselines=not args.no_baselines,
                                   target=target)
    for note in res.attrs.get("notes", []):
        err_console.print(Text(f"note: {note}", style="yellow"), highlight=False)
    print(proxies.to_markdown(res.sort_values(["target", "kendall_tau"], ascending=[True, False])))
    for r in res.itertuples():
        if isinstance(getattr(r, "note", None), str):
            console.print(Text(f"{r.proxy}: {r.note}", style="yellow"))
    if args.csv:
        common.write_frame(res, Path(args.csv), "--csv")
    if args.plots:  # one scatter per scored column (the paper's own Figures 1-3: python -m studies.paper_figures)
        if not args.values:
            df, _ = proxies.stored_values(args.space, bench)
        plot_target = args.target or proxies.scoring_space(args.space).stored_target
        for name in (n for n in dict.fromkeys(res.proxy) if n in df):
            with warnings.catch_warnings():  # said once above
                warnings.simplefilter("ignore", InputRowsWarning)
                path = proxies.scatter(df, name, plot_target, Path(args.plots) / f"{name}.png", space=args.space,
                                       bench=bench, **(rows if args.values else {}))
            console.print(f"wrote {path}")


#: ``proxies evaluate --out``'s suffix -> the format it implies
_OUT_FORMATS = {".md": "md", ".csv": "csv", ".json": "json"}


def _evaluation_format(args: argparse.Namespace) -> str:
    """``--format``, or the one ``--out``'s suffix implies (the two must agree), else md;
    ``--out`` checked writable before a long computation, not after it."""
    fmt = args.format
    if args.out is not None:
        suffix = _OUT_FORMATS.get(Path(args.out).suffix)
        if suffix is None:
            raise InvalidArgumentError(f"--out = {args.out!r} must end in .md, .csv or .json")
        if fmt is not None and fmt != suffix:
            raise InvalidArgumentError(f"--format = {fmt!r} does not match --out = {args.out!r}; allowed: {suffix!r}")
        fmt = suffix
        common.check_out(Path(args.out), "--out", tuple(_OUT_FORMATS))
    return fmt or "md"


def cmd_proxies_evaluate(args: argparse.Namespace) -> None:
    """One command for a new proxy: computed on every model, ranked beside the baselines."""
    from ..report_dir import check_report_dir

    fmt = _evaluation_format(args)
    common.check_cache(args)
    # the output options before the seconds of importing torch and loading the benchmark
    check_report_dir(args.report, "--report", cache=args.cache, cache_name="--cache")
    slurm, device = common.sweep_placement(args)
    from ..evaluation import BENCHMARKS, evaluate, nlp_runs

    if os.getcwd() not in sys.path:  # 'module:function' in the working folder, as 'python -m' would find it
        sys.path.insert(0, os.getcwd())
    bench = common.load_bench(args)
    benchmarks = None if args.benchmarks is None else [b.strip() for b in args.benchmarks.split(",")]
    for b in benchmarks or ():
        if b not in BENCHMARKS:
            raise InvalidArgumentError(f"--benchmarks = {args.benchmarks!r} is not allowed; allowed values: {list(BENCHMARKS)}")
    sems: Any = args.semantics if common.is_all(args.semantics) else [x.strip() for x in args.semantics.split(",")]
    batch = {k: v for k, v in (("batch_size", args.batch_size), ("seq_len", args.seq_len), ("source", args.source))
             if v is not None}
    ids = common.ids_or_all(args.ids, len(bench))
    nlp_ids = common.ids_or_all(args.nlp_ids, len(nlp_runs(bench)), "--nlp-ids")
    res = evaluate(args.proxy, semantics=sems, benchmarks=benchmarks,
                   compare=[c.strip() for c in args.compare.split(",") if c.strip()], ids=ids,
                   nlp_ids=nlp_ids, tasks=not args.no_tasks,
                   higher_is_better=not args.lower_is_better, dedupe=not args.no_dedupe, cache=args.cache, jobs=args.jobs,
                   executor=args.executor, ray_address=args.ray_address, slurm=slurm,
                   progress=not args.quiet, batch=batch or None, batches=args.batches, version=args.proxy_version,
                   refresh=args.refresh,
                   seed=args.seed, dtype=args.dtype, bootstrap=args.bootstrap, bench=bench, report=args.report,
                   device=device)
    if args.report is not None:
        err_console.print(f"wrote the report to {args.report}")
    text = _EVALUATION_FORMATS[fmt](res)
    if args.out is None:
        print(text)
        return
    from ..atomic import atomic_path

    with atomic_path(Path(args.out)) as tmp:
        Path(tmp).write_text(text)
    err_console.print(f"wrote {len(res.rows)} rows for {res.proxy} to {args.out} ({res.computed} models computed, "
                      f"{res.cached} from the cache, {res.shared} rows shared an identical model; {res.seconds:.0f} s)")


def _evaluation_json(res: Any) -> str:
    rows = json.loads(res.to_pandas().to_json(orient="records"))  # NaN -> null
    return json.dumps({"proxy": res.proxy, "notes": list(res.notes), "seconds": res.seconds,
                       "verdicts": [{"benchmark": b, "semantics": s, "verdict": v} for (b, s), v in res.verdicts.items()],
                       "skipped": res.skipped,
                       "models_computed": res.computed, "models_cached": res.cached, "rows_shared": res.shared,
                       "rows": rows}, indent=1)


#: ``--format`` of ``proxies evaluate`` -> the text written
_EVALUATION_FORMATS: dict[str, Callable[[Any], str]] = {
    "md": lambda res: res.to_markdown(),
    "csv": lambda res: res.to_pandas().to_csv(index=False),
    "json": _evaluation_json,
}


def add_score(psub: Any) -> None:
    """``proxies score``: rank metrics against a benchmark."""
    ps = psub.add_parser("score", help="Kendall tau / Spearman rho (+ CIs, top-10%%, size-controlled) of proxies")
    ps.add_argument("--space", default="flexibert", choices=list(SPACES), help="which benchmark")
    ps.add_argument("--values", default=None, help="a table from 'proxies compute' (default: the stored proxies)")
    ps.add_argument("--target", default=None, help="glue, a GLUE task, test_loss or wikitext2_loss")
    ps.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples for the confidence intervals")
    ps.add_argument("--csv", default=None, help="also write the scores to this CSV")
    ps.add_argument("--plots", default=None, help="folder for one scatter plot per scored proxy")
    ps.add_argument("--tasks", action="store_true", help="FlexiBERT: every GLUE task as well as the average")
    ps.add_argument("--no-baselines", action="store_true", help="leave out the trivial spec baselines' rows")
    ps.add_argument("--baseline-semantics", default="as_trained", choices=list(SEMANTICS_NAMES),
                    help="whose parameters the baselines' counts are, with --values (stored: as_trained)")
    ps.add_argument("--duplicates", default="error", choices=["error", "first", "mean"],
                    help="with --values: rows that share an id are refused (error), or the first kept, or averaged "
                         "(first, mean; a note says how many)")
    ps.add_argument("--unknown-ids", default="error", choices=["error", "drop"],
                    help="with --values: ids the benchmark lacks are refused (error), or left out (drop; a note says which)")
    ps.set_defaults(fn=cmd_proxies_score)


def add_evaluate(psub: Any) -> None:
    """``proxies evaluate``: a new proxy beside the baselines."""
    pv = psub.add_parser("evaluate", help="rank a new proxy (module:function or a registered name) on every model, "
                                          "beside the trivial baselines and the published analytic scores")
    pv.add_argument("proxy", help="'module:function' or 'path/file.py:function' taking (model, batch) -> float, "
                                  "or a registered proxy name")
    pv.add_argument("--semantics", default="as_trained", help="'all' or names (comma-separated): authors, as_trained, "
                                                              "as_specified")
    pv.add_argument("--benchmarks", default=None, help="flexibert, nlp or both, comma-separated (default: both for a "
                                                       "callable, else those the name is registered for)")
    pv.add_argument("--compare", default="", help="registered proxies computed the same way (comma-separated)")
    pv.add_argument("--ids", default="all", help="FlexiBERT ids: 'all' or '0-99,250'")
    pv.add_argument("--nlp-ids", default="all", help="positions among the 275 PTB runs with a public recipe: 'all' or '0-19'")
    pv.add_argument("--no-tasks", action="store_true", help="FlexiBERT: the GLUE average only, no per-task rows")
    pv.add_argument("--lower-is-better", action="store_true", help="the proxy's declared orientation (default higher)")
    pv.add_argument("--no-dedupe", action="store_true", help="compute every row, even where another row's model is identical")
    pv.add_argument("--cache", default=None, help="folder for per-model results: reruns (and killed runs) resume")
    common.add_sweep_arguments(pv, "this machine, one Ray task per model, or a SLURM job array")
    pv.add_argument("--batch-size", type=int, default=None, help="sequences per batch (FlexiBERT 8, NLP 10)")
    pv.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (FlexiBERT 128, NLP 70)")
    pv.add_argument("--source", default=None, help="random (default), text:<path>, glue:<folder>, hf:<dataset>")
    pv.add_argument("--seed", type=int, default=0, help="seed of the model init, the batch and the bootstrap")
    pv.add_argument("--dtype", default="float32", choices=list(DTYPES), help="precision of the models")
    pv.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples for the confidence intervals")
    pv.add_argument("--batches", type=int, default=1, help="a callable receives a list of this many batches (default 1: "
                                                           "one batch)")
    pv.add_argument("--proxy-version", default=None, help="the callable's cache version label (default: a digest of its "
                                                          "module file, qualname, closure and defaults)")
    pv.add_argument("--refresh", action="store_true", help="compute every model again, replacing the cached values")
    pv.add_argument("--out", default=None, help="result file (.md, .csv or .json), written atomically (default: stdout)")
    pv.add_argument("--format", default=None, choices=list(_EVALUATION_FORMATS),
                    help="output format (default: from --out, else md)")
    pv.add_argument("--report", default=None, help="also write a paper-ready report to this folder (table.md, table.tex, "
                                                   "scatter.png, cells.png, values.parquet; needs matplotlib)")
    pv.set_defaults(fn=cmd_proxies_evaluate)
