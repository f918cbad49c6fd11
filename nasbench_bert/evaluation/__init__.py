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

**The package**, in the order :func:`evaluate` runs its steps (probe, sweep, score,
verdict, report), each module importing only those listed before it:

* :mod:`.benchmarks` - what differs per benchmark: its rows, which models are the same,
  its headline target (:func:`nlp_runs`);
* :mod:`.result` - :class:`Evaluation`, its rows by kind and its Markdown tables;
* :mod:`.arguments` - every argument checked before any work;
* :mod:`.call` - one call as it runs: the checked arguments, the notes and counts, the
  scores ranked on a benchmark by row kind;
* :mod:`.compute` - the probe, the sweep with identical models computed once, the values;
* :mod:`.ranking` - the NaN/inf rule (:func:`ranked_values`) and the scores;
* :mod:`.verdict` - the candidate against :data:`RULE`;
* this module - :func:`evaluate`, the steps in order; the report is
  :mod:`nasbench_bert.report`'s.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from ..benchmark.flexibert import ensure_benchmark
from ..checks import check_bool, check_choice, check_int, check_names, check_seed
from ..devices import DEFAULT_DEVICE
from ..errors import InvalidArgumentError
from ..proxies import registry
from ..report import check_report_dir, report_run
from ..slurm import SlurmResources
from ..vocabulary import DTYPES, BenchmarkLike
from .arguments import (
    _batches, _benchmarks, _cache_dir, _check_compare, _resolve_proxy, _selections, _semantics_list, _where,
)
from .benchmarks import _BENCHMARK_SPECS, BENCHMARKS, nlp_runs
from .call import _Roles, _Run
from .compute import _probe_benchmarks, _sweep_counted, _values_frame
from .ranking import _ranked_rows, _score_frame, ranked_values
from .result import KINDS, SORT_BY, Evaluation
from .verdict import RULE, _verdict

# kept importable from here, as they were from the one module evaluation.py: each
# benchmark's headline target, how a row kind is labelled, the verdict's metrics
from .benchmarks import HEADLINE as HEADLINE
from .result import _label as _label
from .verdict import VERDICT_METRICS as VERDICT_METRICS


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
    from ..proxies import builtin as _builtin  # noqa: F401  (every registered proxy, the published analytic ones included)

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


# -- the steps ------------------------------------------------------------------------------
def _evaluate(run: _Run, bms: list[str], t0: float) -> Evaluation:
    """Probe (a callable's benchmarks), then per benchmark and semantics: sweep, rank,
    score, verdict (:func:`_evaluate_benchmark`); the rows in table order."""
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
        ranked = _ranked_rows(run, bm, frame, sem, roles)
        if ranked is not None:
            scored = _score_frame(run, bm, ranked, sem, roles)
            _verdict(run, bm, sem, ranked, scored)
            rows.append(scored)
        frame.insert(0, "benchmark", bm)
        values.append(frame)


__all__ = ["Evaluation", "evaluate", "nlp_runs", "ranked_values", "BENCHMARKS", "KINDS", "RULE", "SORT_BY"]
