"""Building the proxy-values table: every registered proxy of both benchmarks, per arch and
semantics, through the resumable sweep (:func:`build`; the table itself is
:mod:`nasbench_bert.data.proxy_values`).

**What is computed.** For each benchmark and each of the three semantics, every proxy
:func:`~nasbench_bert.proxies.registry.get` returns for ``"all"`` (the plain callables of
one evaluation are not built-ins) and the rank combinations (FlexiBERT's NTSR, ranked
within the benchmark's rows of that semantics). FlexiBERT: ids 0-499 on the leaderboard's
batch (random tokens, 8 x 128, seed 0). NAS-Bench-NLP: the distinct recipes of the
WikiText-2 logs (the PTB runs with a public recipe share them), on the default batch
(10 x 70 tokens of the PTB vocabulary, seed 0), keyed by ``recipe_hash``.

**Precision: float64 for every proxy** (:data:`DTYPE`). Measured on every 25th FlexiBERT
arch (``studies.proxy_precision``, docs/proxy_values.md): float32 moves ZiCo by up to
2.1e-2 relative (Kendall tau 0.937 between the two precisions on 20 archs; its standard
deviation over two mini-batches cancels), Zen by 7.7e-2 (tau 0.831) and MeCo by 1.6e-5
(tau 0.979) under ``as_trained``; a printed tau moves with them. In float64 the same
recomputation with 1 and 2 threads agrees far below any printed digit, so one precision
for every column keeps each value reproducible on another machine, and makes the table
what a GPU rebuild must equal (``device`` agreement is tested in float64 too). The cost
is about 2x a float32 sweep.

**Layers.** Each (benchmark, semantics) is computed in two sweeps with caches of their
own (``<cache>/<benchmark>/<semantics>/<layer>``): ``pass`` (every proxy that reads the
shared forward/backward, and the analytic scores of the spec) and ``own`` (the proxies
that run their own passes on a fresh model: ZiCo, MeCo, Fisher, GraSP, EPE-NAS, Zen).
A later change to one definition recomputes only its layer; a killed build resumes from
the parts already written.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..checks import check_choice
from ..data.proxy_values import INDEX, KEY_COLUMNS, arch_list_sha256
from ..errors import InvalidArgumentError
from ..semantics import get_semantics
from ..slurm import SlurmResources
from ..vocabulary import BenchmarkLike, Dtype, Executor
from . import registry
from .spaces import proxy_space
from .sweep import COMBINED, WORKER_THREADS, compute, default_batch

#: the precision of every value in the table (see the module docstring for the measurement)
DTYPE: Dtype = "float64"
#: the seed of the model init, the batch and the projection
SEED = 0
#: the semantics the table holds, in order
SEMANTICS: tuple[str, ...] = ("as_trained", "as_specified", "authors")
#: the semantics computed per benchmark. NAS-Bench-NLP has one model per recipe whatever the
#: semantics, and ``as_specified`` prescribes the same protocol there as ``as_trained`` (eval
#: mode, the decoder logits' objective), so its values would be a copy
#: (:data:`nasbench_bert.data.proxy_values.SAME_AS` serves them); ``authors``, the notebook's
#: protocol, is the one the pages compare with the release's stored values
#: (docs/proxy_study.md computes it live), not a leaderboard row: the table leaves it out,
#: which halves the NAS-Bench-NLP build (about 25 s per recipe in float64 on one core here)
SEMANTICS_OF: dict[str, tuple[str, ...]] = {"flexibert": SEMANTICS, "nlp": ("as_trained",)}
#: the benchmarks the table holds, in order
BENCHMARKS: tuple[str, ...] = ("flexibert", "nlp")
#: FlexiBERT's batch (the leaderboard's) and NAS-Bench-NLP's, as BatchSpec fields
BATCHES: dict[str, dict[str, Any]] = {"flexibert": {}, "nlp": {}}


@dataclass(frozen=True)
class Layer:
    """One sweep of a (benchmark, semantics): its cache subfolder and its proxies."""

    name: str
    proxies: tuple[str, ...]


def proxies_of(benchmark: str) -> list[registry.Proxy]:
    """Every built-in proxy registered for ``benchmark``, in registration order."""
    return registry.get(benchmark, "all")


def layers(benchmark: str) -> tuple[Layer, ...]:
    """The two sweeps of one (benchmark, semantics): the shared pass (with the analytic
    scores) and the proxies that run their own passes."""
    ps = proxies_of(benchmark)
    out = (Layer("pass", tuple(p.name for p in ps if not p.model_only)),
           Layer("own", tuple(p.name for p in ps if p.model_only)))
    return tuple(layer for layer in out if layer.proxies)


def nlp_recipes(bench: BenchmarkLike) -> list[tuple[str, Any]]:
    """``(recipe_hash, recipe)`` of every distinct recipe of the WikiText-2 logs, in log order."""
    seen: dict[str, Any] = {}
    for h, rec in zip(bench.nlp.wikitext2["recipe_hash"], bench.nlp.wikitext2["recipe"]):
        if isinstance(h, str) and h not in seen:
            seen[h] = rec
    return list(seen.items())


def default_cache() -> Path:
    """Where ``build-proxy-values`` keeps its parts unless told: ``<user cache>/proxy-values-cache``."""
    from ..data.tables import user_cache_dir

    return user_cache_dir() / "proxy-values-cache"


def git_commit() -> dict[str, Any]:
    """The commit of the checkout the package runs from (``None`` from a wheel), and
    whether its tracked files differ from it."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return {"commit": None, "dirty": None}
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, timeout=30).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, check=True, timeout=30).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def machine(device: str = "cpu") -> dict[str, Any]:
    """Where the values were computed: CPU and OS, Python and torch, and the device."""
    from .._torch import torch

    out: dict[str, Any] = {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count(),
                           "python": platform.python_version(), "torch": torch.__version__, "device": device}
    if device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return out


def _flexibert_items(bench: BenchmarkLike, keys: Sequence[Any] | None) -> list[Any]:
    return list(range(len(bench))) if keys is None else list(keys)


def _nlp_items(bench: BenchmarkLike, keys: Sequence[Any] | None) -> list[Any]:
    recipes = nlp_recipes(bench)
    if keys is None:
        return recipes
    by = dict(recipes)
    unknown = [k for k in keys if k not in by]
    if unknown:
        raise InvalidArgumentError(f"recipe_hash = {unknown[0]!r} is not a recipe of the WikiText-2 logs; allowed: one "
                                   f"of the {len(by)} hashes of bench.nlp.wikitext2['recipe_hash']")
    return [(k, by[k]) for k in keys]


@dataclass(frozen=True)
class TableBenchmark:
    """What differs between the table's two benchmarks: which rows it holds, how the sweep
    names a row (``sweep_key``: compute()'s identifying column) and how the table keys it
    (``index``, :data:`nasbench_bert.data.proxy_values.INDEX`), and where a benchmark object
    serves its rows (``lookup``)."""

    name: str
    index: str
    sweep_key: str
    items: Callable[[BenchmarkLike, Sequence[Any] | None], list[Any]]
    lookup: Callable[[BenchmarkLike], Callable[..., pd.DataFrame]]


TABLE_BENCHMARKS: dict[str, TableBenchmark] = {
    "flexibert": TableBenchmark("flexibert", INDEX["flexibert"], "id", _flexibert_items, lambda b: b.proxy_values),
    "nlp": TableBenchmark("nlp", INDEX["nlp"], "key", _nlp_items, lambda b: b.nlp.proxy_values),
}


def compute_values(bench: BenchmarkLike, benchmark: str, semantics: str, *, keys: Sequence[Any] | None = None,
                   cache: str | os.PathLike[str] | None = None, jobs: int = 1, executor: Executor = "local",
                   ray_address: str | None = None, slurm: SlurmResources | None = None, progress: bool = False,
                   proxies: Sequence[str] | None = None, device: str = "cpu") -> pd.DataFrame:
    """One (benchmark, semantics) block of the table: a row per arch (FlexiBERT ``id``) or
    recipe (NLP ``recipe_hash``), a column per proxy and combination, computed in
    :data:`DTYPE` layer by layer (:func:`layers`), each layer resumable in its own cache
    folder. ``proxies`` restricts the columns (``--verify`` of a few proxies)."""
    tb = TABLE_BENCHMARKS[check_choice("benchmark", benchmark, BENCHMARKS)]
    sem = get_semantics(semantics).key
    items = tb.items(bench, keys)
    combos = proxy_space(benchmark).combined
    want = None if proxies is None else set(proxies) | {p for c in proxies if c in combos for p in combos[c]}
    frames, cost, work = [], {}, 0.0
    for layer in layers(benchmark):
        names = [n for n in layer.proxies if want is None or n in want]
        if not names:
            continue
        where = None if cache is None else Path(cache) / benchmark / sem / layer.name
        df = compute(items, names, semantics=sem, seed=SEED, dtype=DTYPE, batch=BATCHES[benchmark] or None,
                     space=benchmark, bench=bench, cache=where, jobs=jobs, progress=progress, executor=executor,
                     ray_address=ray_address, slurm=slurm, device=device)
        failed = df[df["error"].notna()]
        if len(failed):
            raise RuntimeError(f"{benchmark} {sem} layer {layer.name}: {len(failed)} arch(s) failed, first "
                               f"{failed['arch'].iloc[0]}: {failed['error'].iloc[0]}")
        frames.append(df.set_index(tb.sweep_key)[names])
        # what each value cost where it was computed (a part keeps its own timings): the proxy's
        # own evaluation plus its layer's shared pass, per row; and the workers' total time
        work += float(df["seconds"].sum())
        for n in names:
            cost[n] = float(np.nanmean(df[f"{n}__seconds"].to_numpy(float) + df["seconds_pass"].to_numpy(float)))
    out = pd.concat(frames, axis=1)
    for c, parts in combos.items():
        if want is None or c in want:
            from .sweep import ntsr

            out[c] = ntsr(out, parts).to_numpy()
    out.index.name = tb.index
    out.attrs = {"seconds_per_row": cost, "worker_seconds": work}
    return out


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build` made: the long frame (key columns + one column per proxy), the
    proxy columns in table order, and the provenance the manifest records."""

    frame: pd.DataFrame
    columns: tuple[str, ...]
    provenance: dict[str, Any]

    @property
    def owners(self) -> dict[str, list[str]]:
        """Each benchmark's proxy columns (its other columns are null on its rows)."""
        return {b: [*i["proxies"], *i["combined"]] for b, i in self.provenance["benchmarks"].items()}

    def to_arrow(self) -> Any:
        """The table's Arrow form (:func:`nasbench_bert.data.proxy_values.to_arrow`)."""
        from ..data.proxy_values import to_arrow

        return to_arrow(self.frame, self.columns, self.owners)


def build(bench: BenchmarkLike, *, benchmarks: Iterable[str] = BENCHMARKS, semantics: Iterable[str] = SEMANTICS,
          ids: Sequence[int] | None = None, recipes: Sequence[str] | None = None,
          cache: str | os.PathLike[str] | None = None, jobs: int = 1, executor: Executor = "local",
          ray_address: str | None = None, slurm: SlurmResources | None = None, progress: bool = False,
          device: str = "cpu", proxies: Sequence[str] | None = None) -> BuildResult:
    """Compute the table (:func:`compute_values` for every benchmark and semantics) and
    its provenance. ``ids`` / ``recipes`` restrict the rows and ``proxies`` the columns
    (the default is every FlexiBERT id, every WikiText-2 recipe and every proxy); the
    provenance records what was covered."""
    from .. import __version__

    from ..devices import check_device

    device = check_device(device, executor=executor, slurm=slurm)  # canonical ("cuda:0"), before any work
    benches = [check_choice("benchmark", b, BENCHMARKS) for b in benchmarks]
    sems = [get_semantics(s).key for s in semantics]
    if not benches or not sems:
        raise InvalidArgumentError("benchmarks and semantics must each name at least one; allowed values: "
                                   f"{list(BENCHMARKS)} and {list(SEMANTICS)}")
    t0 = time.perf_counter()
    blocks, info, costs, work = [], {}, {}, 0.0
    keys_of = {"flexibert": ids, "nlp": recipes}
    for b in benches:
        keys = keys_of[b]
        bsems = [x for x in sems if x in SEMANTICS_OF[b]]
        if not bsems:  # e.g. NAS-Bench-NLP under as_specified alone: its rows are as_trained's (SAME_AS)
            continue
        for s in bsems:
            block = compute_values(bench, b, s, keys=keys, cache=cache, jobs=jobs, executor=executor,
                                   ray_address=ray_address, slurm=slurm, progress=progress, proxies=proxies,
                                   device=device)
            costs[b, s], work = block.attrs["seconds_per_row"], work + block.attrs["worker_seconds"]
            block = block.reset_index()
            block["benchmark"], block["semantics"] = b, s
            blocks.append(block)
        info[b] = _benchmark_info(bench, b, bsems, keys, [c for c in blocks[-1].columns if c not in KEY_COLUMNS])
        for n, p in info[b]["proxies"].items():  # seconds per row where the parts were computed, per semantics
            p["seconds_per_row"] = {s: round(costs[b, s][n], 4) for s in bsems if n in costs[b, s]}
    if not blocks:
        raise InvalidArgumentError(f"semantics = {sems} computes no rows of {benches}; allowed per benchmark: "
                                   f"{ {b: list(SEMANTICS_OF[b]) for b in benches} }")
    frame = pd.concat(blocks, ignore_index=True)
    columns = tuple(dict.fromkeys(c for b in info for c in [*info[b]["proxies"], *info[b]["combined"]]))
    prov = {"format_version": 1, "package_version": __version__, **git_commit(), "machine": machine(device),
            "device": device, "dtype": DTYPE, "seed": SEED, "threads": WORKER_THREADS,
            "built": _dt.date.today().isoformat(), "seconds": round(time.perf_counter() - t0, 1),
            "worker_seconds": round(work, 1), "benchmarks": info}
    return BuildResult(frame, columns, prov)


def _benchmark_info(bench: BenchmarkLike, benchmark: str, sems: list[str], keys: Sequence[Any] | None,
                    columns: Sequence[str]) -> dict[str, Any]:
    """What one benchmark's rows are: batch, semantics, which rows, each computed proxy's definition."""
    spec = default_batch(benchmark, **BATCHES[benchmark])
    info: dict[str, Any] = {
        "batch": spec.key, "semantics": sems,
        "proxies": {p.name: {"version": p.version, "group": list(p.group), "higher_is_better": p.higher_is_better,
                             "dtype": DTYPE, "layer": next(l.name for l in layers(benchmark) if p.name in l.proxies)}
                    for p in proxies_of(benchmark) if p.name in columns},
        "combined": {c: {"parts": list(parts), "higher_is_better": True, "note": "mean rank within this benchmark's "
                         "rows of one semantics (a set-level score)"}
                     for c, parts in proxy_space(benchmark).combined.items() if c in columns},
    }
    info["noise"] = {s: sorted(NOISE.get((benchmark, s), frozenset()) & set(columns)) for s in sems}
    return {**info, **ROW_INFO[benchmark](bench, keys)}


#: what the provenance says of each benchmark's rows (the FlexiBERT ids are tied to the
#: release's arch list by its sha256)
ROW_INFO: dict[str, Callable[[BenchmarkLike, Sequence[Any] | None], dict[str, Any]]] = {
    "flexibert": lambda bench, keys: {"rows": "ids 0-499" if keys is None else f"{len(keys)} ids",
                                      "arch_list_sha256": arch_list_sha256(bench.archs)},
    "nlp": lambda bench, keys: {"rows": "every distinct recipe of the WikiText-2 logs" if keys is None
                                else f"{len(keys)} recipes"},
}


def registered_versions() -> dict[str, dict[str, int]]:
    """Each benchmark's registered proxy definitions (name -> version), for
    :func:`nasbench_bert.data.proxy_values.check_current`."""
    return {b: {p.name: p.version for p in proxies_of(b)} for b in BENCHMARKS}


def relative_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| / max(|a|, |b|) elementwise; 0 where both are equal (both NaN, both inf of
    one sign, or both 0), inf where only one is finite."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
    d = np.where(same, 0.0, d)
    return np.where(np.isnan(d), np.inf, d)


#: the proxies whose value is rounding noise by construction, per (benchmark, semantics):
#: under ``authors`` FlexiBERT's objective is sum(last hidden state), whose gradient vanishes
#: in exact arithmetic behind the final LayerNorm (docs/errata.md), so every proxy that
#: differentiates it measures rounding error (it changes with the thread count and the
#: machine); ``--verify`` prints their differences but checks no tolerance, and the pages
#: print no verdict word for them
NOISE: dict[tuple[str, str], frozenset[str]] = {
    ("flexibert", "authors"): frozenset({
        "synaptic_diversity", "synaptic_diversity_norm", "synaptic_saliency", "synaptic_saliency_norm",
        "jacobian_covariance", "jacobian_cosine", "head_importance", "head_importance_norm", "snip", "grad_norm",
        "synflow", "plain", "fisher", "grasp", "epe_nas", "zico"}),
}
#: the largest relative difference ``--verify`` accepts between a recomputation and the
#: table, per proxy (default :data:`DEFAULT_TOLERANCE`); set from the measured float64
#: recomputation with 1 and 2 threads (docs/proxy_values.md)
#: (the rule: 100 times the largest difference two torch threads made, rounded up to a power
#: of ten, never below the default; measured in float64 on every 25th FlexiBERT id under the
#: three semantics: ZiCo 2.0e-9, MeCo 2.9e-10, the Jacobian covariance 2.7e-11, every other
#: non-noise proxy at most 1.1e-12; and on every 53rd NAS-Bench-NLP recipe: ZiCo 1.9e-7, MeCo
#: 2.0e-10, the large-noise Jacobian covariance 1.3e-10, EPE-NAS 3.6e-11, the more-noise
#: Jacobian covariance 2.1e-11, the first hidden covariance 1.4e-11, the Jacobian covariance
#: 1.3e-11, every other at most 4.4e-12. Why a margin: another machine's kernels sum in other
#: orders, as another thread count does)
TOLERANCE: dict[tuple[str, str], float] = {
    ("flexibert", "zico"): 1e-6, ("flexibert", "meco"): 1e-7, ("flexibert", "jacobian_covariance"): 1e-8,
    ("nlp", "zico"): 1e-4, ("nlp", "meco"): 1e-7, ("nlp", "jacobian_covariance_large_noise"): 1e-7,
    ("nlp", "epe_nas"): 1e-8, ("nlp", "jacobian_covariance_more_noise"): 1e-8, ("nlp", "hidden_covariance_layer1"): 1e-8,
    ("nlp", "jacobian_covariance"): 1e-8,
}
DEFAULT_TOLERANCE = 1e-9


def is_noise(benchmark: str, semantics: str, proxy: str) -> bool:
    """Whether ``proxy``'s value under ``semantics`` is rounding noise by construction (:data:`NOISE`)."""
    return proxy in NOISE.get((benchmark, semantics), frozenset())


def tolerance(benchmark: str, proxy: str) -> float:
    """The relative difference ``--verify`` accepts for ``proxy`` (:data:`TOLERANCE`)."""
    return TOLERANCE.get((benchmark, proxy), DEFAULT_TOLERANCE)


@dataclass(frozen=True)
class Check:
    """One (benchmark, semantics, proxy) of a verification: the recomputed values against
    the table's on ``n`` rows."""

    benchmark: str
    semantics: str
    proxy: str
    n: int
    max_rel_diff: float
    tau: float
    #: the accepted relative difference; None for a proxy that is noise by construction
    tolerance: float | None

    @property
    def ok(self) -> bool:
        return self.tolerance is None or self.max_rel_diff <= self.tolerance

    def as_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "semantics": self.semantics, "proxy": self.proxy, "n": self.n,
                "max_rel_diff": self.max_rel_diff, "tau": self.tau, "tolerance": self.tolerance,
                "noise": self.tolerance is None, "ok": self.ok}


def check_recipe(attrs: Mapping[str, Any], benchmark: str) -> None:
    """Refuse to verify values computed with another dtype, seed, batch or proxy definition
    than this package computes (``attrs``: a :meth:`Benchmark.proxy_values` frame's): their
    recomputation would differ by design, not by the machine."""
    from ..data.proxy_values import REBUILD

    for k, v in {"dtype": DTYPE, "seed": SEED}.items():
        if attrs.get(k) != v:
            raise InvalidArgumentError(f"the proxy-values table was computed with {k} {attrs.get(k)!r}, this package "
                                       f"computes {v!r}; rebuild it with `{REBUILD}`")
    batch = default_batch(benchmark, **BATCHES[benchmark]).key
    if attrs.get("batch") != batch:
        raise InvalidArgumentError(f"the {benchmark} proxy values were computed on batch {attrs.get('batch')!r}, this "
                                   f"package uses {batch!r}; rebuild them with `{REBUILD}`")
    want = registered_versions()[benchmark]
    changed = sorted(n for n, info in attrs.get("proxies", {}).items()
                     if n in want and (info or {}).get("version") != want[n])
    if changed:
        raise InvalidArgumentError(f"the {benchmark} proxy values hold other definitions of {changed[:4]} than this "
                                   f"package registers; rebuild them with `{REBUILD}`")


def within_table(fresh: pd.DataFrame, table: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    """``fresh`` (a recomputed sample of rows) with each set-level combination (NTSR, a mean
    of ranks) replaced by the combination recomputed from the table's own parts over all of
    its rows. Why: a rank among the 20 rows of a sample is not the rank among the table's 500,
    and a sample's parts merged into the table break the exact ties between ids that share a
    model (as_trained has 491 distinct models for 500 ids) by 1e-16, moving ranks by a half.
    The parts are checked one by one beside it, so this checks the rest: that the stored
    combination is the combination of the stored parts, exactly."""
    from .sweep import ntsr

    combos = {c: parts for c, parts in proxy_space(benchmark).combined.items()
              if c in fresh.columns and all(p in table.columns for p in parts)}
    out = fresh.copy()
    for c, parts in combos.items():
        out[c] = pd.Series(ntsr(table, parts).to_numpy(), index=table.index).loc[fresh.index].to_numpy()
    return out


def verify(bench: BenchmarkLike, *, benchmarks: Iterable[str] = ("flexibert",), semantics: Iterable[str] = SEMANTICS,
           ids: Sequence[int] | None = None, recipes: Sequence[str] | None = None,
           proxies: Sequence[str] | None = None, jobs: int = 1, executor: Executor = "local",
           ray_address: str | None = None, slurm: SlurmResources | None = None, progress: bool = False) -> list[Check]:
    """Recompute ``ids`` (FlexiBERT) / ``recipes`` (NAS-Bench-NLP) with the table's dtype,
    seed and batch, without any cache, and compare with the table: per (benchmark,
    semantics, proxy) the largest relative difference and Kendall's tau between the two.
    A proxy of a semantics the table does not hold for a benchmark is skipped."""
    from scipy.stats import kendalltau

    out: list[Check] = []
    benches = [check_choice("benchmark", x, BENCHMARKS) for x in benchmarks]
    if proxies is not None:
        known = {n for b in benches for n in [*registered_versions()[b], *proxy_space(b).combined]}
        unknown = [p for p in proxies if p not in known]
        if unknown:
            raise InvalidArgumentError(f"proxy = {unknown[0]!r} is not a proxy of {benches}; allowed values: {sorted(known)}")
    for b in benches:
        lookup = TABLE_BENCHMARKS[b].lookup(bench)
        keys = {"flexibert": ids, "nlp": recipes}[b]
        for s in [get_semantics(x).key for x in semantics]:
            if s not in SEMANTICS_OF[b]:
                continue
            have = set(lookup(s).columns)
            stored = lookup(s, None if proxies is None else [p for p in proxies if p in have])
            check_recipe(stored.attrs, b)
            names = list(stored.columns)
            if not names:
                continue
            fresh = compute_values(bench, b, s, keys=keys, jobs=jobs, executor=executor, ray_address=ray_address,
                                   slurm=slurm, progress=progress, proxies=names)
            fresh = within_table(fresh, lookup(s), b)
            ref = stored.loc[fresh.index]
            for n in names:
                x, y = fresh[n].to_numpy(float), ref[n].to_numpy(float)
                rel = relative_difference(x, y)
                ok = np.isfinite(x) & np.isfinite(y)
                tau = float(kendalltau(x[ok], y[ok]).statistic) if ok.sum() > 1 else float("nan")
                out.append(Check(b, s, n, len(x), float(rel.max()) if len(rel) else 0.0, tau,
                                 None if is_noise(b, s, n) else tolerance(b, n)))
    return out


__all__ = ["BENCHMARKS", "Check", "NOISE", "verify", "within_table", "is_noise", "tolerance", "BuildResult", "COMBINED", "DTYPE", "Layer", "SEED", "SEMANTICS", "build", "compute_values",
           "layers", "machine", "nlp_recipes", "registered_versions", "relative_difference"]
