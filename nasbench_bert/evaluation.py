"""Evaluate a new zero-cost proxy in one call: :func:`evaluate`.

A proxy researcher's question is "where does my score stand?", and on FlexiBERT-500 the
answer only means something beside the trivial baselines (depth alone reaches τ-b 0.68)
and the published analytic scores, with the metrics that a depth rule cannot game
(tie-broken τ, 10 %-PW τ, within-cell τ, τ within strata of equal coarse shape). So
:func:`evaluate` computes the proxy the way the package computes its own - every model
the semantics defines, through the cached, resumable, executor-aware sweep
(:func:`nasbench_bert.proxies.compute`) - and scores it with
:func:`nasbench_bert.scoring.score` beside:

* the trivial spec baselines (:mod:`.proxies.baselines`, kind ``"baseline"``);
* every registered analytic score of group ``"published"`` (kind ``"published"``);
* on request, other registered proxies computed the same way (``compare``, kind
  ``"compare"``).

Targets: FlexiBERT - the GLUE average and each GLUE task, over the benchmark ids asked
for (default all 500); NAS-Bench-NLP - the PTB test loss of the runs whose recipe is
public (275 of the 8,794 PTB runs; 215 distinct recipes), the only ones a model can be
built for.

Identical models are computed once: within a semantics, FlexiBERT archs whose model is
the same (:func:`nasbench_bert.hardware.model_key` of the semantics' plan: 301 distinct
models among the 500 ids under ``as_trained``, 457 under ``authors``, 491 under
``as_specified``) share one computation, and NAS-Bench-NLP runs of one recipe share
theirs. A NAS-Bench-NLP model does not depend on the semantics (only the protocol of
the built-in proxies does), so a plain ``(model, batch)`` callable is computed there
once for every semantics.

**A callable's benchmarks.** Before any sweep, its first call runs on the first model of
each benchmark asked for (default both). A benchmark whose model it rejects is left out
with a one-line note (:attr:`Evaluation.skipped`); the call fails with one line when it
fits none, or fails on a benchmark the caller named in ``benchmarks``. With
``batches=n`` it receives a list of n batches; ``version`` labels its definition for the
cache (default: the digest of its module file, qualname, closure and defaults; see
:mod:`.proxies.callables`); ``refresh`` computes every model again.

**NaN and inf.** NaN values are left out, for the proxy and for every score beside it
(the baselines are ranked on exactly the proxy's rows); +inf ranks above every finite
value and -inf below (:func:`ranked_values`: under ``higher_is_better`` +inf is the best,
else the worst); a note says on how many models the proxy returned NaN or inf.

**The table** is sorted by the tie-broken τ and each (benchmark, semantics) block opens
with a verdict against :data:`RULE` (``depth_width_then_size``): the tie-broken τ and the
tie-broken within-cell τ of both, with the paired difference and its 95 % bootstrap
interval (:func:`nasbench_bert.metrics.paired_difference`).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from .benchmark.flexibert import ensure_benchmark
from .checks import check_bool, check_choice, check_int, check_names, check_seed
from .devices import DEFAULT_DEVICE, check_device
from .vocabulary import DTYPES, ROW_KINDS, SPACES, BenchmarkLike, RowKind
from .data.tables import GLUE_TASKS
from .errors import InvalidArgumentError
from .executors import check_executor
from .semantics import SEMANTICS, Semantics, get_semantics
from .slurm import SlurmResources, check_slurm
from .sweep import PartCache
from .proxies import registry
from .proxies.baselines import analytic_values, trivial_names
from .proxies.callables import CALLABLES, ProxyReturnError, register_callable
from .proxies.inputs import BatchSpec
from .report import check_report_dir, report_run

#: the benchmarks :func:`evaluate` can rank on (the search spaces)
BENCHMARKS: tuple[str, ...] = SPACES
#: row kinds, in table order
KINDS: tuple[str, ...] = ROW_KINDS


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate` found.

    ``rows``: one row per benchmark x semantics x target x score, with ``kind``
    (``candidate``, ``compare``, ``published``, ``baseline``) and every column of
    :func:`nasbench_bert.scoring.score` (τ-b, tie-broken τ, ρ, 10 %-PW τ, within-cell
    τ and within-stratum τ ``tau_within_arch`` in both forms, top-10 %, each with its
    bootstrap interval; the partial τ given the size column). ``values``: the
    per-arch values of every score (``shared``: the row reused the computation of an
    identical model). ``notes``: what a reader must know (which runs, failures,
    sharing)."""

    proxy: str
    rows: pd.DataFrame
    values: pd.DataFrame
    notes: tuple[str, ...]
    seconds: float
    #: models computed in this call (not read from the cache), and rows that reused one
    computed: int
    cached: int
    shared: int
    #: one line per benchmark and semantics: the proxy against the ``depth_width_then_size``
    #: rule on the headline target (tie-broken τ and within-cell τ, ties broken, with the
    #: paired difference and its 95 % interval); keys ``(benchmark, semantics)``
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    #: benchmarks left out because the callable rejected their first model (not named by
    #: the user), with the one-line reason
    skipped: dict[str, str] = field(default_factory=dict)

    def to_pandas(self) -> pd.DataFrame:
        """The leaderboard rows (a copy)."""
        return self.rows.copy()

    def candidate(self) -> pd.DataFrame:
        """The proxy's own rows."""
        return self.rows[_is_candidate(self.rows)].reset_index(drop=True)

    def to_markdown(self, digits: int = 3) -> str:
        """One table per benchmark and semantics on the headline target (GLUE average,
        PTB test loss), every score beside the proxy, sorted by the tie-broken τ (τ-b
        rewards a coarse score's ties; see ``docs/evaluate.md``), each opened by its
        verdict against the ``depth_width_then_size`` rule; then the proxy's per-task τ."""
        from .scoring import to_markdown

        out = [f"## Evaluation of `{self.proxy}`\n"]
        for (bm, sem), block in self.rows.groupby(["benchmark", "semantics"], sort=False):
            head = block[block.target == HEADLINE[bm]].copy()
            head["proxy"] = [_label(p, k) for p, k in zip(head.proxy, head.kind)]
            head = head.drop(columns=[c for c in head if c.startswith("rule_diff_")])
            head = head.sort_values(SORT_BY, ascending=False, na_position="last", kind="stable")
            is_cand = _is_candidate(block)
            n = int(block.loc[is_cand, "n"].max()) if is_cand.any() else 0
            what = _BENCHMARK_SPECS[bm].headline_label
            verdict = self.verdicts.get((bm, sem))
            out.append(f"### {bm}, semantics `{sem}`: {what}, n = {n}\n\n" + (f"{verdict}\n\n" if verdict else "")
                       + to_markdown(head, digits))
            cand = block[is_cand & (block.target != HEADLINE[bm])]
            if len(cand):
                t = cand[[c for c in ("target", "n", "kendall_tau", "tau_ci_low", "tau_ci_high", "tau_tiebroken",
                                      "tau_tiebroken_ci_low", "tau_tiebroken_ci_high", "tau_within_cell", "cells",
                                      "tau_within_arch_tb", "tau_within_arch_tb_ci_low", "tau_within_arch_tb_ci_high",
                                      "arch_strata") if c in cand]].copy()
                t.insert(0, "proxy", [self.proxy] * len(t))
                out.append(f"Per task ({bm}, `{sem}`):\n\n" + to_markdown(t, digits))
        if self.notes:
            out.append("Notes:\n\n" + "".join(f"* {n}\n" for n in self.notes))
        return "\n".join(out)


#: the column the tables are sorted by: the tie-broken τ, which a score cannot raise by
#: tying archs (τ-b can: depth's two values reach τ-b 0.68)
SORT_BY = "tau_tiebroken"
#: the rule every verdict is against: depth, then width, then size (a spec-only baseline)
RULE = "depth_width_then_size"
#: the metrics of the verdict, with how the line names them
VERDICT_METRICS: tuple[tuple[str, str], ...] = (("tau_tiebroken", "tie-broken τ"),
                                                ("tau_within_cell_tb", "within-cell τ (ties broken)"))


def _is_candidate(rows: pd.DataFrame) -> pd.Series:
    """Which leaderboard rows are the evaluated proxy's own."""
    return rows.kind == "candidate"


#: how the Markdown report labels a score of each row kind
_LABELS: dict[str, str] = {"candidate": "**{name}**", "compare": "{name}", "published": "{name} (published)",
                           "baseline": "{name} (baseline)"}


def _label(name: str, kind: RowKind) -> str:
    return _LABELS[kind].format(name=name)


# -- argument checks -------------------------------------------------------------------------
def _semantics_list(semantics: Any) -> list[Semantics]:
    if semantics == "all":
        return list(SEMANTICS.values())
    vals = [semantics] if isinstance(semantics, (str, Semantics)) else semantics
    if isinstance(vals, (dict, bytes)) or not isinstance(vals, Iterable):
        raise InvalidArgumentError(f"semantics = {semantics!r} is not allowed; allowed: 'all', a name of {list(SEMANTICS)} "
                                   "or a list of them")
    out: list[Semantics] = []
    for v in vals:
        s = get_semantics(v)
        if s not in out:
            out.append(s)
    if not out:
        raise InvalidArgumentError(f"semantics = {semantics!r} is not allowed; allowed: at least one of {list(SEMANTICS)}")
    return out


def _positions(name: str, value: Any, n: int) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise InvalidArgumentError(f"{name} = {value!r} is not allowed; allowed: None (all) or a list of integers in 0-{n - 1}")
    out = [check_int(name, v, low=0, high=n - 1) for v in value]
    if not out:
        raise InvalidArgumentError(f"{name} = [] is not allowed; allowed: None (all) or a non-empty list of integers in 0-{n - 1}")
    return list(dict.fromkeys(int(v) for v in out if v is not None))


def _resolve_proxy(proxy: Any, higher_is_better: bool, version: str | None = None, batches: int = 1) -> tuple[str, bool]:
    """(registered name, whether it is a callable registered by this call)."""
    if callable(proxy) and not isinstance(proxy, str):
        return register_callable(proxy, higher_is_better=higher_is_better, version=version, batches=batches), True
    if not isinstance(proxy, str) or not proxy:
        raise InvalidArgumentError(f"proxy = {proxy!r} is not allowed; allowed: a registered proxy name, 'module:function' "
                                   "or a callable (model, batch) -> float")
    if any(proxy in registry.REGISTRY[s] for s in BENCHMARKS) and proxy not in CALLABLES:
        if version is not None or batches != 1:
            raise InvalidArgumentError(f"version/batches = {version!r}/{batches!r} are not allowed for the registered proxy "
                                       f"{proxy!r}; allowed: only for a callable (model, batch) -> float")
        return proxy, False
    if ":" in proxy:
        return register_callable(proxy, higher_is_better=higher_is_better, version=version, batches=batches), True
    known = sorted({n for s in BENCHMARKS for n in registry.REGISTRY[s]})
    raise InvalidArgumentError(f"proxy = {proxy!r} is not allowed; allowed: a registered proxy ({known}), "
                               "'module:function' or a callable (model, batch) -> float")


def _batches(batch: Any, benchmarks: Sequence[str]) -> dict[str, BatchSpec]:
    from .proxies.sweep import default_batch

    if batch is None:
        return {b: default_batch(b) for b in benchmarks}
    if isinstance(batch, BatchSpec):
        if len(benchmarks) != 1 or batch.space != benchmarks[0]:
            raise InvalidArgumentError(f"batch = {batch!r} is for {batch.space!r}; with benchmarks {list(benchmarks)} pass a "
                                       "dict {benchmark: BatchSpec or fields}")
        return {benchmarks[0]: batch}
    if not isinstance(batch, dict):
        raise InvalidArgumentError(f"batch = {batch!r} is not allowed; allowed: None, a dict of BatchSpec fields, or "
                                   f"{{benchmark: BatchSpec or fields}} for {list(BENCHMARKS)}")
    if batch and set(batch) <= set(BENCHMARKS):
        out = {}
        for b in benchmarks:
            v = batch.get(b)
            out[b] = v if isinstance(v, BatchSpec) else default_batch(b, **(v or {}))
            if out[b].space != b:
                raise InvalidArgumentError(f"batch[{b!r}].space = {out[b].space!r} does not match {b!r}")
        return out
    return {b: default_batch(b, **batch) for b in benchmarks}


# -- the sweep with identical models computed once ---------------------------------------------
@dataclass
class _Items:
    """The rows of one benchmark: identifying columns, model keys, targets."""

    ident: pd.DataFrame       # id + arch (FlexiBERT) or log_name + recipe_hash (NLP)
    keys: list[Any]           # Arch or Recipe per row
    compute_items: list[Any]  # what proxies.compute takes for each row


def _flexibert_items(bench: BenchmarkLike | None, ids: list[int] | None) -> _Items:
    from .spaces.flexibert import Arch

    flex = bench.to_pandas()
    ids = list(range(len(flex))) if ids is None else ids
    by_id = dict(zip(flex.id.astype(int), flex.arch))
    archs = [Arch.coerce(by_id[i]) for i in ids]
    return _Items(pd.DataFrame({"id": ids, "arch": [str(a) for a in archs]}), archs, list(ids))


def nlp_runs(bench: BenchmarkLike | None) -> pd.DataFrame:
    """The PTB runs whose recipe is public (log_name, recipe, recipe_hash), in table order:
    the NAS-Bench-NLP rows :func:`evaluate` ranks (``nlp_ids`` are positions here)."""
    p = bench.nlp.ptb
    return p.loc[p.recipe.notna(), ["log_name", "recipe", "recipe_hash"]].reset_index(drop=True)


def _nlp_items(bench: BenchmarkLike | None, pos: list[int] | None) -> _Items:
    from .spaces.nlp import parse_recipe

    runs = nlp_runs(bench)
    if pos is not None:
        runs = runs.iloc[pos].reset_index(drop=True)
    recipes = [parse_recipe(r) for r in runs.recipe]
    return _Items(runs[["log_name", "recipe_hash"]].copy(), recipes, [(ln, r) for ln, r in zip(runs.log_name, recipes)])


# -- what evaluate needs to know about each benchmark ------------------------------------------
def _flexibert_group_keys(items: _Items, sem: Semantics, dedupe: bool) -> list[str]:
    if not dedupe:
        return [f"row{i}" for i in range(len(items.keys))]
    from .hardware import model_key

    return [model_key(sem.plan(a)) for a in items.keys]


def _nlp_group_keys(items: _Items, sem: Semantics, dedupe: bool) -> list[str]:
    return list(items.ident.recipe_hash) if dedupe else list(items.ident.log_name)


def _nlp_note(items: _Items) -> str:
    return (f"nlp: {len(items.keys)} PTB runs with a public recipe ({items.ident.recipe_hash.nunique()} distinct "
            "recipes) against their PTB test loss; the other PTB runs have no recipe to build a model from")


@dataclass(frozen=True)
class _BenchmarkSpec:
    """What :func:`evaluate` needs to know about one benchmark."""

    #: the headline target, and how the Markdown report names it
    headline: str
    headline_label: str
    #: the targets ranked beside the headline when ``tasks=True``
    task_targets: tuple[str, ...]
    #: the size column of the partial τ given the parameter count (``partial_tau_given_params``)
    control: str
    #: (bench, selected positions) -> the rows
    items: Callable[[BenchmarkLike | None, list[int] | None], _Items]
    #: (rows, semantics, dedupe) -> each row's model identity (equal ones are computed once)
    group_keys: Callable[[_Items, Semantics, bool], list[str]]
    #: whether a model depends on the semantics (a NAS-Bench-NLP language model does not)
    models_follow_semantics: bool
    #: rows -> what the notes say about the rows ranked (None: nothing)
    note: Callable[[_Items], str] | None = None


_BENCHMARK_SPECS: dict[str, _BenchmarkSpec] = {
    "flexibert": _BenchmarkSpec("glue", "GLUE average", GLUE_TASKS, "num_params_as_trained", _flexibert_items,
                                _flexibert_group_keys, True),
    "nlp": _BenchmarkSpec("test_loss", "PTB test loss (runs with a public recipe)", (), "num_params", _nlp_items,
                          _nlp_group_keys, False, _nlp_note),
}
assert tuple(_BENCHMARK_SPECS) == BENCHMARKS
#: each benchmark's headline target (its other targets follow it)
HEADLINE = {b: s.headline for b, s in _BENCHMARK_SPECS.items()}


def _group_keys(space: str, items: _Items, sem: Semantics, dedupe: bool) -> list[str]:
    """The identity of each row's model: rows with equal identities are computed once."""
    return _BENCHMARK_SPECS[space].group_keys(items, sem, dedupe)


def _sweep(space: str, items: _Items, names: list[str], sem: Semantics, *, dedupe: bool, spec: BatchSpec, seed: int,
           dtype: str, bench: BenchmarkLike | None, cache: Path | None, jobs: int, executor: str, ray_address: str | None,
           progress: bool, slurm: SlurmResources | None = None, refresh: bool = False,
           device: str = DEFAULT_DEVICE) -> pd.DataFrame:
    """Values of the model-based proxies ``names`` for every row, computing one
    representative per identical model; columns: the proxies, ``<proxy>__error``,
    ``model_key``, ``shared``, ``cached``, ``error``."""
    from .proxies.sweep import compute

    groups = _group_keys(space, items, sem, dedupe)
    first: dict[str, int] = {}
    for i, g in enumerate(groups):
        first.setdefault(g, i)
    reps = list(first.values())
    label = f"{space} {sem.key}: {len(reps)} models for {len(groups)} rows" if progress else None
    df = compute([items.compute_items[i] for i in reps], names, semantics=sem, seed=seed, dtype=dtype, batch=spec,
                 space=space, bench=bench, cache=cache, jobs=jobs, executor=executor, ray_address=ray_address, slurm=slurm,
                 progress=False if label is None else True, refresh=refresh, device=device) if reps else pd.DataFrame()
    if label is not None and not df.empty:
        print(f"{label}: {int((~df.cached.astype(bool)).sum())} computed, {int(df.cached.astype(bool).sum())} from the cache",
              file=sys.stderr, flush=True)
    cols = [c for c in df.columns if c in names or (c.endswith("__error") and c[:-7] in names)] + ["error", "cached"]
    rep_rows = {g: df.iloc[k] for k, g in enumerate(first)}
    out = []
    for i, g in enumerate(groups):
        r = rep_rows[g]
        row = {c: r.get(c) for c in cols}
        row.update(model_key=g, shared=first[g] != i)
        out.append(row)
    return pd.DataFrame(out)


def _probe(space: str, key: Any, name: str, spec: BatchSpec, sem: Semantics, seed: int, dtype: str,
           device: str = DEFAULT_DEVICE) -> str | None:
    """Run a callable proxy on one model before the sweep; None if it gave a number, else
    the one-line reason (a wrong signature for this benchmark's model, a non-number
    returned), naming the arch - in seconds, before any sweep."""
    from .proxies.engine import run_one
    from .proxies.inputs import make_batch

    row = run_one(space, key, registry.get(space, [name]), spec, make_batch(spec), sem, seed, dtype, device)
    err = row.get(f"{name}__error")
    if not err:
        return None
    line = " ".join(str(err).split())  # one line, whatever the exception's text held
    return (line.split(": ", 1)[1] if line.startswith(ProxyReturnError.__name__) else
            f"proxy {name!r} failed on the first {space} model ({_short_key(key)}, semantics {sem.key}): {line}")


def _short_key(key: Any) -> str:
    text = f"arch {key}" if not hasattr(key, "hash") else f"recipe {key.hash}"
    return text if len(text) <= 80 else text[:77] + "..."


# -- the entry point -------------------------------------------------------------------------
def evaluate(
    proxy: str | Callable[[Any, Any], float],
    *,
    semantics: Any = "as_trained",
    benchmarks: str | Sequence[str] | None = None,
    compare: Iterable[str] = (),
    ids: Iterable[int] | None = None,
    nlp_ids: Iterable[int] | None = None,
    tasks: bool = True,
    higher_is_better: bool = True,
    dedupe: bool = True,
    cache: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    slurm: SlurmResources | None = None,
    progress: bool = True,
    batch: Any = None,
    seed: int = 0,
    dtype: str = "float32",
    bootstrap: int = 200,
    bench: BenchmarkLike | None = None,
    batches: int = 1,
    version: str | None = None,
    refresh: bool = False,
    report: str | os.PathLike[str] | None = None,
    device: str = DEFAULT_DEVICE,
) -> Evaluation:
    """Rank ``proxy`` on the benchmarks beside the trivial baselines and the published
    analytic scores, with every metric of :mod:`nasbench_bert.scoring`.

    ``proxy``: a registered name, ``"module:function"`` (or ``"path/file.py:function"``),
    or a callable ``(model, batch) -> float`` (registered as ``module:qualname``; see
    :mod:`.proxies.callables` for what ``model`` and ``batch`` are in each space;
    ``higher_is_better`` is its declared orientation, fixed before looking at results).
    ``semantics``: a name, a list, or ``"all"`` (default ``"as_trained"``, the model
    behind the GLUE scores). ``benchmarks``: ``"flexibert"``, ``"nlp"`` or both; default
    both for a callable, else those the name is registered for. ``compare``: other
    registered proxies computed the same way. ``ids``: FlexiBERT benchmark ids (default
    all 500); ``nlp_ids``: positions among the PTB runs with a public recipe
    (:func:`nlp_runs`, default all 275). ``tasks``: FlexiBERT rows for each GLUE task as
    well as the average.

    ``dedupe``: compute identical models once (see the module docstring; ``False``
    computes every row, for checks). ``cache``: a folder; finished models are written
    one part each, atomically, and a later call (after a kill too) reuses them.
    ``jobs``/``executor``/``ray_address``/``slurm``/``device``: as :func:`nasbench_bert.proxies.compute`
    (``executor="slurm"``: one job array per benchmark and semantics; the device is in the report).
    ``progress``: progress on stderr (a bar on a terminal, plain lines otherwise).
    ``batch``: BatchSpec fields for every benchmark, or ``{benchmark: fields or
    BatchSpec}``. ``bootstrap``/``seed``: the intervals' resamples and the proxy seed.
    ``bench``: the benchmark; without one it is loaded here (``Benchmark.load``), once.
    ``batches``, ``version``, ``refresh``: the callable's batch count, cache label and a full
    recompute; the benchmark probe and the NaN/inf rule are in the module docstring.
    ``report``: a folder to write the paper-ready report to (:mod:`nasbench_bert.report`:
    tables in Markdown and LaTeX, two figures, the per-arch values), checked before any work.
    """
    t0 = time.perf_counter()
    from .proxies import builtin as _builtin  # noqa: F401  (every registered proxy, the published analytic ones included)

    sems = _semantics_list(semantics)
    for flag, v in (("tasks", tasks), ("higher_is_better", higher_is_better), ("dedupe", dedupe), ("progress", progress)):
        check_bool(flag, v)
    jobs = int(check_int("jobs", jobs, low=1, high=1024))  # type: ignore[arg-type]
    executor, res, device = _where(executor, ray_address, slurm, device)
    seed = int(check_seed("seed", seed, none=False))  # type: ignore[arg-type]
    bootstrap = int(check_int("bootstrap", bootstrap, low=0, high=100_000))  # type: ignore[arg-type]
    dtype = check_choice("dtype", dtype, DTYPES)
    compare = check_names("compare", compare)
    cache_dir = _cache_dir(cache)
    report_dir = check_report_dir(report, cache=cache)
    # a callable stays registered in this process: its workers and a rerun find it by name
    name, callable_proxy = _resolve_proxy(proxy, higher_is_better, version, batches)
    bms = _benchmarks(benchmarks, name)
    _check_compare(compare, bms)
    bench = ensure_benchmark(bench)
    run = _Run(name, callable_proxy, sems, compare, tasks, dedupe, cache_dir, jobs, executor, ray_address, progress,
               seed, dtype, bootstrap, bench, _selections(bench, bms, ids, nlp_ids), _batches(batch, bms), slurm=res,
               refresh=check_bool("refresh", refresh), named=benchmarks is not None, device=device)
    return report_run(_evaluate(run, bms, t0), report_dir, run)


def _where(executor: Any, ray_address: Any, slurm: Any, device: Any) -> tuple[str, SlurmResources | None, str]:
    """The executor, its SLURM resources and the canonical device, checked before any work
    (the device against what the executor can give: :func:`nasbench_bert.devices.check_device`)."""
    executor = check_executor(executor, ray_address)
    res = check_slurm(executor, slurm)
    return executor, res, check_device(device, executor=executor, slurm=res)


def _cache_dir(cache: Any) -> Path | None:
    """The evaluation's cache folder, checked the sweep engine's way before any work (each
    benchmark's parts go in a subfolder of it)."""
    parts = PartCache.open(cache, "parquet", "arch")
    return None if parts is None else parts.folder


def _benchmarks(benchmarks: Any, name: str) -> list[str]:
    """The benchmarks asked for (default: those ``name`` is registered for), each one
    ``name`` is registered for."""
    if benchmarks is None:
        return [b for b in BENCHMARKS if name in registry.REGISTRY[b]]
    bms = list(dict.fromkeys(check_names("benchmarks", benchmarks)))
    for b in bms:
        if b not in BENCHMARKS:
            raise InvalidArgumentError(f"benchmarks = {benchmarks!r} is not allowed; allowed values: {list(BENCHMARKS)}")
        if name not in registry.REGISTRY[b]:
            raise InvalidArgumentError(f"proxy {name!r} is not registered for {b!r}; allowed benchmarks for it: "
                                       f"{[s for s in BENCHMARKS if name in registry.REGISTRY[s]]}")
    if not bms:
        raise InvalidArgumentError(f"benchmarks = {benchmarks!r} is not allowed; allowed: one or both of {list(BENCHMARKS)}")
    return bms


def _check_compare(compare: list[str], bms: list[str]) -> None:
    for c in compare:
        if not any(c in registry.REGISTRY[b] for b in bms):
            raise InvalidArgumentError(f"compare = {compare!r}: {c!r} is not registered for {bms}; allowed values: "
                                       f"{sorted({n for b in bms for n in registry.REGISTRY[b]})}")


def _selections(bench: BenchmarkLike, bms: list[str], ids: Any, nlp_ids: Any) -> dict[str, list[int] | None]:
    """The rows asked for on each benchmark (None: all): FlexiBERT ids, and positions
    among the NAS-Bench-NLP runs with a public recipe."""
    id_list = _positions("ids", ids, len(bench)) if "flexibert" in bms else None
    if ids is not None and "flexibert" not in bms:
        raise InvalidArgumentError(f"ids = {_shown(ids)} selects FlexiBERT archs, and benchmarks = {bms!r} has no "
                                   "'flexibert'; allowed: no ids, or 'flexibert' among the benchmarks")
    nlp_pos = _positions("nlp_ids", nlp_ids, len(nlp_runs(bench))) if "nlp" in bms else None
    if nlp_ids is not None and "nlp" not in bms:
        raise InvalidArgumentError(f"nlp_ids = {_shown(nlp_ids)} selects NAS-Bench-NLP runs, and benchmarks = {bms!r} has "
                                   "no 'nlp'; allowed: no nlp_ids, or 'nlp' among the benchmarks")
    return {"flexibert": id_list, "nlp": nlp_pos}


def _shown(v: Any) -> str:
    """A selection as a message shows it: a long list cut short."""
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class _Run:
    """One :func:`evaluate` call, its arguments checked, and what it has found so far
    (the notes and the counts of models computed, read from the cache and shared)."""

    name: str
    callable_proxy: bool
    sems: list[Semantics]
    compare: list[str]
    tasks: bool
    dedupe: bool
    cache_dir: Path | None
    jobs: int
    executor: str
    ray_address: str | None
    progress: bool
    seed: int
    dtype: str
    bootstrap: int
    bench: BenchmarkLike | None
    #: per benchmark: the rows asked for (None: all), and the proxies' input batch
    selection: dict[str, list[int] | None]
    specs: dict[str, BatchSpec]
    notes: list[str] = field(default_factory=list)
    computed: int = 0
    cached: int = 0
    shared: int = 0
    #: the array tasks' resources (executor "slurm")
    slurm: SlurmResources | None = None
    #: compute every model again (the cache is overwritten)
    refresh: bool = False
    #: whether the user named the benchmarks (a callable that fails on one then fails the call)
    named: bool = False
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    #: where the models run (canonical, :func:`nasbench_bert.devices.check_device`)
    device: str = DEFAULT_DEVICE


@dataclass(frozen=True)
class _Roles:
    """The scores ranked on one benchmark, by row kind, and which need a model."""

    kind: dict[str, str]
    #: every score, in row order: the proxy, the compared, the published, the baselines
    proxies: list[str]
    modelled: list[str]
    analytic: list[str]

    @classmethod
    def of(cls, bm: str, name: str, compare: list[str]) -> "_Roles":
        reg = registry.REGISTRY[bm]
        comp = [c for c in compare if c in reg and c != name]
        published = [p.name for p in reg.values() if "published" in p.group and p.analytic and p.name not in (name, *comp)]
        base = [b for b in trivial_names(bm) if b not in (name, *comp, *published)]
        kind = {name: "candidate", **{c: "compare" for c in comp}, **{p: "published" for p in published},
                **{b: "baseline" for b in base}}
        return cls(kind, [name, *comp, *published, *base], [n for n in [name, *comp] if not reg[n].analytic],
                   [n for n in [name, *comp] if reg[n].analytic] + published + base)


def _probe_benchmarks(run: _Run, bms: list[str]) -> list[str]:
    """The benchmarks a callable runs on: its first call on the first model of each,
    before any sweep. One it rejects is skipped with a note, unless the user named it;
    none accepted, or a named one rejected, fails the call with one line."""
    if not run.callable_proxy:
        return bms
    fails: dict[str, str] = {}
    for bm in bms:
        items = _BENCHMARK_SPECS[bm].items(run.bench, run.selection[bm][:1] if run.selection[bm] else [0])
        if items.keys:
            err = _probe(bm, items.keys[0], run.name, run.specs[bm], run.sems[0], run.seed, run.dtype, run.device)
            if err is not None:
                fails[bm] = err
    named = [bm for bm in fails if run.named]
    if named:
        raise InvalidArgumentError(fails[named[0]])
    ok = [bm for bm in bms if bm not in fails]
    if not ok:
        raise InvalidArgumentError("; ".join(fails.values()) if len(fails) == 1 else
                                   f"proxy {run.name!r} fits none of {bms}: " + "; ".join(fails.values()))
    for bm, err in fails.items():
        run.skipped[bm] = err
        run.notes.append(f"{bm} skipped (not named in benchmarks, and the callable rejects its model): {err}")
    return ok


def _evaluate(run: _Run, bms: list[str], t0: float) -> Evaluation:
    rows: list[pd.DataFrame] = []
    values: list[pd.DataFrame] = []
    bms = _probe_benchmarks(run, bms)
    for bm in bms:
        _evaluate_benchmark(run, bm, rows, values)
    if not rows:
        raise InvalidArgumentError(f"proxy {run.name!r} returned NaN on every model of {bms} under "
                                   f"{[s.key for s in run.sems]}; nothing to rank (notes: {' | '.join(run.notes)})")
    if run.shared:
        run.notes.append(f"{run.shared} rows reused the computation of an identical model (same plan under the same "
                         "semantics; NAS-Bench-NLP: the same recipe)")
    out = pd.concat(rows, ignore_index=True)
    kinds = {k: i for i, k in enumerate(KINDS)}
    targets = {t: i for i, t in enumerate(t for s in _BENCHMARK_SPECS.values() for t in (s.headline, *s.task_targets))}
    out["_b"], out["_s"] = out.benchmark.map({b: i for i, b in enumerate(bms)}), out.semantics.map({s.key: i for i, s in enumerate(run.sems)})
    out["_t"], out["_k"] = out.target.map(targets), out.kind.map(kinds)
    out = out.sort_values(["_b", "_s", "_t", "_k"], kind="stable").drop(columns=["_b", "_s", "_t", "_k"]).reset_index(drop=True)
    return Evaluation(run.name, out, pd.concat(values, ignore_index=True), tuple(run.notes), time.perf_counter() - t0,
                      run.computed, run.cached, run.shared, dict(run.verdicts), dict(run.skipped))


def _evaluate_benchmark(run: _Run, bm: str, rows: list[pd.DataFrame], values: list[pd.DataFrame]) -> None:
    """Score every semantics on benchmark ``bm``: append its leaderboard rows to ``rows``
    and its per-row values to ``values``."""
    reg, spec, name = registry.REGISTRY[bm], _BENCHMARK_SPECS[bm], run.name
    items = spec.items(run.bench, run.selection[bm])
    skipped = [c for c in run.compare if c not in reg]
    if skipped:
        run.notes.append(f"{bm}: {skipped} not registered there, not compared")
    roles = _Roles.of(bm, name, run.compare)
    modelled = roles.modelled
    if spec.note is not None:
        run.notes.append(spec.note(items))
    semantics_free = not spec.models_follow_semantics and bool(modelled) and all(reg[n].model_only for n in modelled)
    swept: pd.DataFrame | None = None
    for k, sem in enumerate(run.sems):
        if modelled and (swept is None or not semantics_free):
            swept = _sweep_counted(run, bm, items, modelled, sem)
        elif modelled and k == 1:
            run.notes.append(f"{bm}: the language model does not depend on the semantics, so `{name}` was computed once "
                             f"(under {run.sems[0].key}) for every semantics")
        frame = _values_frame(run, bm, items, sem, swept, roles)
        scored = _score_frame(run, bm, frame, sem, roles)
        if scored is not None:
            rows.append(scored)
        frame.insert(0, "benchmark", bm)
        values.append(frame)


def _sweep_counted(run: _Run, bm: str, items: _Items, modelled: list[str], sem: Semantics) -> pd.DataFrame:
    """:func:`_sweep` of the model-based scores under ``sem``, counted into ``run``; a
    callable that returned a non-number fails the call."""
    swept = _sweep(bm, items, modelled, sem, dedupe=run.dedupe, spec=run.specs[bm], seed=run.seed, dtype=run.dtype,
                   bench=run.bench, cache=None if run.cache_dir is None else run.cache_dir / bm, jobs=run.jobs,
                   executor=run.executor, ray_address=run.ray_address, progress=run.progress, slurm=run.slurm,
                   refresh=run.refresh, device=run.device)
    reps = swept[~swept.shared.astype(bool)]
    run.computed += int((~reps.cached.astype(bool)).sum())
    run.cached += int(reps.cached.astype(bool).sum())
    run.shared += int(swept.shared.astype(bool).sum())
    _raise_on_bad_returns(swept, run.name, bm, sem)
    return swept


def _values_frame(run: _Run, bm: str, items: _Items, sem: Semantics, swept: pd.DataFrame | None, roles: _Roles
                  ) -> pd.DataFrame:
    """The per-row values of every score on ``bm`` under ``sem`` (model-based ones from
    ``swept``, with their errors noted; analytic ones computed here)."""
    frame = items.ident.copy()
    frame["semantics"] = sem.key
    if swept is not None:
        for c in ["model_key", "shared", "cached", *roles.modelled]:
            frame[c] = swept[c].to_numpy()
        for n in roles.modelled:
            err = swept.get(f"{n}__error")
            frame[f"{n}__error"] = err.to_numpy() if err is not None else None
            bad = int(pd.notna(frame[f"{n}__error"]).sum()) if err is not None else 0
            if bad:
                first = frame.loc[pd.notna(frame[f"{n}__error"]), f"{n}__error"].iloc[0]
                run.notes.append(f"{bm} {sem.key}: `{n}` failed on {bad} of {len(frame)} rows (NaN there); first: {first}")
    for col, vals in analytic_values(bm, items.keys, roles.analytic, sem).items():
        frame[col] = vals
    return frame


def ranked_values(x: Any) -> np.ndarray:
    """The NaN/inf rule of :func:`evaluate` on one score's values: NaN stays NaN (left
    out), +inf becomes a value above every finite one and -inf one below (equal
    infinities stay tied), so every rank metric sees +inf as the largest value."""
    v = np.asarray(x, dtype=float).copy()
    fin = v[np.isfinite(v)]
    lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 0.0)
    # the next float beyond the extremes (every metric reads ranks only)
    with np.errstate(over="ignore"):
        above, below = np.nextafter(hi, np.inf), np.nextafter(lo, -np.inf)
    if not (np.isfinite(above) and np.isfinite(below)):  # the extremes are the largest floats: ranks instead
        from scipy.stats import rankdata

        return np.where(np.isnan(v), np.nan, rankdata(np.where(np.isnan(v), 0.0, v)))
    v[v == np.inf] = above
    v[v == -np.inf] = below
    return v


def _nonfinite_note(bm: str, sem: Semantics, name: str, frame: pd.DataFrame) -> str | None:
    """"`name` returned NaN/inf on k of n models" (models: distinct computations), or None."""
    x = frame[name].to_numpy(dtype=float)
    bad = ~np.isfinite(x)
    if not bad.any():
        return None
    keys = frame["model_key"].to_numpy() if "model_key" in frame else np.arange(len(frame))
    n_models, k = len(pd.unique(keys)), len(pd.unique(keys[bad]))
    kinds = [f"{what} on {int(m.sum())}" for what, m in (("NaN", np.isnan(x)), ("+inf", x == np.inf),
                                                          ("-inf", x == -np.inf)) if m.any()]
    return (f"{bm} {sem.key}: `{name}` returned NaN/inf on {k} of {n_models} models ({', '.join(kinds)} of {len(x)} "
            "rows); NaN rows are left out for every score of this table, +inf ranks above every finite value, -inf below")


def _score_frame(run: _Run, bm: str, frame: pd.DataFrame, sem: Semantics, roles: _Roles) -> pd.DataFrame | None:
    """The leaderboard rows of ``frame``: every score against the benchmark's targets, on
    the rows where the proxy is not NaN (the rule of :func:`evaluate`); None when it is
    NaN on every row (a note says so)."""
    from .scoring import score

    spec = _BENCHMARK_SPECS[bm]
    name = run.name
    note = _nonfinite_note(bm, sem, name, frame)
    if note:
        run.notes.append(note)
    keep = ~np.isnan(frame[name].to_numpy(dtype=float))
    if not keep.any():
        run.notes.append(f"{bm} {sem.key}: `{name}` is NaN on every row; nothing ranked there")
        return None
    ranked = frame.loc[keep].reset_index(drop=True)
    for p in roles.proxies:
        if p in ranked:
            ranked[p] = ranked_values(ranked[p])
    target = [spec.headline, *spec.task_targets] if run.tasks and spec.task_targets else spec.headline
    scored = score(ranked, target, proxies=roles.proxies, space=bm, control=spec.control, bootstrap=run.bootstrap,
                   seed=run.seed, bench=run.bench)
    scored.insert(0, "kind", scored.proxy.map(roles.kind))
    scored.insert(0, "semantics", sem.key)
    scored.insert(0, "benchmark", bm)
    _verdict(run, bm, sem, ranked, scored)
    return scored


def _verdict(run: _Run, bm: str, sem: Semantics, ranked: pd.DataFrame, scored: pd.DataFrame) -> None:
    """The candidate against :data:`RULE` on the headline target, on the same rows and the
    same bootstrap resamples (:func:`nasbench_bert.metrics.paired_difference`): the line
    goes in ``run.verdicts``, the differences in the candidate's headline row
    (``rule_diff_<metric>`` with ``_ci_low``/``_ci_high``)."""
    from .metrics import paired_difference
    from .scoring import _target_values, rank_context  # the target exactly as score() reads it

    spec, name = _BENCHMARK_SPECS[bm], run.name
    reg = registry.REGISTRY[bm]
    what = f"{bm}, `{sem.key}`, {spec.headline_label}"
    head = scored[scored.target == spec.headline]
    if RULE not in ranked or RULE == name or not (head.proxy == name).any():
        why = "the proxy is the rule itself" if RULE == name else f"no `{RULE}` rule on this benchmark"
        run.verdicts[(bm, sem.key)] = f"**Verdict** ({what}): {why}; read the proxy against the baselines in the table"
        return
    y = _target_values(ranked, spec.headline, run.bench, bm)[0]
    sign = {p: 1.0 if reg[p].higher_is_better else -1.0 for p in (name, RULE)}
    x1, x2 = ranked[name].to_numpy(dtype=float) * sign[name], ranked[RULE].to_numpy(dtype=float) * sign[RULE]
    ctx = rank_context(ranked, bm, run.bench)
    diff = paired_difference(x1, x2, y, ctx, names=[m for m, _ in VERDICT_METRICS], bootstrap=run.bootstrap,
                             seed=run.seed)
    mine, rule = head[head.proxy == name].iloc[0], head[head.proxy == RULE].iloc[0]
    at = head.index[head.proxy == name][0]
    parts, calls = [], []
    for m, label in VERDICT_METRICS:
        d = diff[m]
        for sfx, v in (("", d.value), ("_ci_low", d.ci_low), ("_ci_high", d.ci_high)):
            scored.loc[at, f"rule_diff_{m}{sfx}"] = v
        ci = "" if np.isnan(d.ci_low) else f" [{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
        parts.append(f"{label} {_num(mine.get(m))} vs {_num(rule.get(m))}, paired {_num(d.value, True)}{ci}")
        if np.isnan(d.value):
            calls.append("not comparable (no figure)")
        elif np.isnan(d.ci_low):
            calls.append(("above" if d.value > 0 else "below" if d.value < 0 else "level") + " (no interval)")
        else:
            calls.append("above" if d.ci_low > 0 else "below" if d.ci_high < 0 else "level")
    run.verdicts[(bm, sem.key)] = (f"**Verdict** ({what}, n = {int(mine['n'])}): `{name}` against the `{RULE}` rule: "
                                   f"{calls[0]} on tie-broken τ, {calls[1]} within cells - " + "; ".join(parts)
                                   + " (paired over the same rows and resamples, 95 % bootstrap)")


def _num(v: Any, signed: bool = False) -> str:
    """A figure of the verdict line ("–" where not defined)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "–"
    if f != f:
        return "–"
    return f"{f:+.3f}" if signed else f"{f:.3f}"


def _raise_on_bad_returns(swept: pd.DataFrame, name: str, space: str, sem: Semantics) -> None:
    col = f"{name}__error"
    if col not in swept:
        return
    bad = [e for e in swept[col] if isinstance(e, str) and e.startswith(ProxyReturnError.__name__ + ":")]
    if bad:
        raise InvalidArgumentError(f"{bad[0].split(': ', 1)[1]} ({space}, semantics {sem.key}; {len(bad)} model(s) so)")


__all__ = ["Evaluation", "evaluate", "nlp_runs", "ranked_values", "BENCHMARKS", "KINDS", "RULE", "SORT_BY"]
