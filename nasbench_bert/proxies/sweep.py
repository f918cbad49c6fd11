"""Proxy sweeps: compute proxies for many archs, isolate failures, cache and resume
(:func:`compute`, on the shared engine of :mod:`nasbench_bert.sweep`)."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..benchmark.flexibert import ensure_benchmark
from ..checks import check_choice, check_int, check_names, check_seed
from ..errors import InvalidArgumentError
from ..executors import check_executor
from ..semantics import DEFAULT_SEMANTICS, Semantics, SemanticsLike, get_semantics
from ..sweep import PartCache, SweepRun, run_sweep
from ..vocabulary import DTYPES, BenchmarkLike, Dtype, Executor, SpaceName
from . import builtin as _builtin  # noqa: F401  (registers every built-in proxy and analytic score)
from . import registry
from .inputs import BatchSpec, make_batch
from .spaces import PROXY_SPACES, proxy_space

#: rank combinations computed across the compared set, not per arch (FlexiBERT's NTSR)
COMBINED: dict[str, tuple[str, ...]] = {k: v for sp in PROXY_SPACES.values() for k, v in sp.combined.items()}


def resolve_proxies(space: str, proxies: Iterable[str] | str | None) -> tuple[list[registry.Proxy], list[str]]:
    """Registered proxies to run, plus the rank combinations (NTSR) to add afterwards."""
    combos = proxy_space(space).combined
    if isinstance(proxies, str) and proxies not in COMBINED:
        return registry.get(space, proxies), [c for c in combos if proxies in ("etas", "all")]
    if proxies is None:
        return registry.get(space, None), list(combos)
    names = check_names("proxies", proxies)
    combined = [n for n in names if n in COMBINED]
    stray = [c for c in combined if c not in combos]
    if stray:
        raise InvalidArgumentError(f"proxy = {stray[0]!r} is not defined for space {space!r}; it is a rank combination of "
                         f"{[s for s, sp in PROXY_SPACES.items() if stray[0] in sp.combined]}")
    base = [n for n in names if n not in COMBINED]
    for c in combined:
        base += [b for b in combos[c] if b not in base]
    return registry.get(space, base), combined


def default_batch(space: str, vocab_size: int | None = None, **kw: Any) -> BatchSpec:
    import dataclasses

    allowed = [f.name for f in dataclasses.fields(BatchSpec) if f.name != "space"]
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise InvalidArgumentError(f"batch field(s) {unknown} not allowed; allowed: {allowed}")
    if vocab_size is not None:
        kw["vocab_size"] = vocab_size
    d = {**proxy_space(space).default_batch, **kw}
    return BatchSpec(space=space, **d)


# -- the sweep -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ProxyTask:
    """One arch's proxies under one semantics, objective, dtype, seed and batch (a
    :class:`~nasbench_bert.sweep.SweepTask`)."""

    space: str
    ident: dict[str, Any]  # the identifying columns (id / key, arch)
    key: Any  # what the model is built from (an Arch, a Recipe)
    names: tuple[str, ...]
    versions: str  # JSON {proxy: version}
    spec: BatchSpec
    semantics: Semantics
    objective: str
    seed: int
    dtype: str
    threads: int  # torch threads in the worker (0: leave as is)

    def identity(self) -> list[Any]:
        return [self.ident["arch"], self.semantics.key, self.seed, self.spec.key, self.objective, self.dtype]

    def expect(self) -> dict[str, Any]:
        return {"arch": self.ident["arch"], "semantics": self.semantics.key, "objective": self.objective,
                "dtype": self.dtype, "seed": self.seed, "batch": self.spec.key}

    def accepts(self, row: dict[str, Any]) -> bool:
        """Every proxy asked for is in the row, at its current version."""
        try:
            stored = json.loads(row.get("proxy_versions") or "{}")
        except (TypeError, ValueError):
            return False
        want = json.loads(self.versions)
        return isinstance(stored, dict) and all(stored.get(n) == want[n] and n in row for n in self.names)


def _work(task: ProxyTask) -> dict[str, Any]:
    from .._torch import torch

    from .engine import run_one

    if task.threads:
        torch.set_num_threads(task.threads)
    proxies = registry.get(task.space, list(task.names))
    batch = make_batch(task.spec)
    t0 = time.perf_counter()
    try:
        row = run_one(task.space, task.key, proxies, task.spec, batch, task.semantics, task.seed, task.dtype)
        row["error"] = None
    except Exception as e:  # isolate: the sweep goes on, the row says why
        row = {p.name: math.nan for p in proxies}
        row["error"] = f"{type(e).__name__}: {e}"
    row["seconds"] = time.perf_counter() - t0
    row["tokenizer"] = batch.tokenizer
    return row


def _finish(task: ProxyTask, row: dict[str, Any]) -> dict[str, Any]:
    return {**task.ident, "semantics": task.semantics.key, "objective": task.objective, "seed": task.seed,
            "batch": task.spec.key, "dtype": task.dtype, "proxy_versions": task.versions, **row}


@dataclass(frozen=True)
class _Settings:
    """compute()'s checked arguments: what every task of the sweep shares."""

    semantics: Semantics
    seed: int
    spec: BatchSpec
    objective: str


def _settings(space: str, semantics: Any, seed: Any, batch: Any, protocol: Any) -> _Settings:
    """The semantics, seed and batch of a sweep, from a paper's protocol or the arguments."""
    if protocol is not None:
        from .protocols import get_protocol

        proto = get_protocol(protocol)
        given = [n for n, v in (("semantics", semantics), ("batch", batch), ("seed", seed)) if v is not None]
        if given:
            raise InvalidArgumentError(f"protocol = {proto.name!r} sets the semantics, batch and seed; do not also pass {given} "
                                       "(use protocol.with_batch(...) or dataclasses.replace for a variant)")
        semantics, batch, seed = proto.semantics, proto.batch, proto.seed
    sem = get_semantics(DEFAULT_SEMANTICS if semantics is None else semantics)
    seed = check_seed("seed", 0 if seed is None else seed, none=False)
    if batch is not None and not isinstance(batch, (BatchSpec, dict)):
        raise InvalidArgumentError(f"batch = {batch!r} is not allowed; allowed: a BatchSpec, a dict of its fields, or None")
    spec = batch if isinstance(batch, BatchSpec) else default_batch(space, **(batch or {}))
    if spec.space != space:
        raise InvalidArgumentError(f"batch.space = {spec.space!r} does not match space = {space!r}")
    return _Settings(sem, seed, spec, proxy_space(space).objective(sem))


def compute(
    archs: Iterable[Any],
    proxies: Iterable[str] | str | None = "paper",
    *,
    semantics: SemanticsLike | None = None,
    seed: int | None = None,
    dtype: Dtype = "float32",
    batch: BatchSpec | dict[str, Any] | None = None,
    protocol: Any = None,
    space: SpaceName = "flexibert",
    bench: BenchmarkLike | None = None,
    cache: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    progress: bool = False,
    executor: Executor = "local",
    ray_address: str | None = None,
) -> pd.DataFrame:
    """Compute proxies for ``archs``; one row per arch.

    ``archs``: FlexiBERT ids, :class:`Arch` objects, canonical strings or release dicts
    (``space="flexibert"``); recipes, or ``(label, recipe)`` pairs (``space="nlp"``).
    Ids are rows of ``bench``; without one, the benchmark is loaded here, once
    (``Benchmark.load``), and only when an id is given.
    ``proxies``: names, a group (``"paper"``, ``"etas"``, ``"baseline"``) or ``"all"``;
    ``"ntsr"`` adds NTKT and SEPT and ranks them within this set. ``batch``: a
    :class:`BatchSpec` or a dict of its fields (default: random tokens, see
    :mod:`.inputs`). ``semantics`` picks the model and the proxy protocol
    (:mod:`nasbench_bert.semantics`): ``"as_trained"`` (the default: the model behind
    the GLUE scores), ``"as_specified"`` (old name ``"faithful"``) or ``"authors"``
    (old name ``"seed_compat"``: the model and protocol of the stored proxy table).
    ``dtype``: ``"float32"`` or ``"float64"``.

    ``protocol``: a paper's own protocol
    (:class:`~nasbench_bert.proxies.protocols.Protocol` or its name, e.g.
    ``"w_pca_nsc"``), which sets the semantics (the model construction), the batch and
    the seed together; it cannot be combined with ``semantics``, ``batch`` or ``seed``.

    Columns: the identifying ``id``/``key``/``arch``, ``semantics`` (canonical name),
    ``objective`` (what the gradient proxies differentiated), ``seed``, ``batch``,
    ``dtype``, one column per proxy, ``<proxy>__layers`` (per-layer values),
    timings (``seconds``, ``seconds_pass``, ``seconds_proxies``), ``error`` (None, or
    why the arch failed: its proxies are NaN) and ``proxy_versions``. With ``cache`` (a
    folder), the sweep engine (:mod:`nasbench_bert.sweep`) writes each finished arch as
    one part file, atomically, and a later call with the same arch, semantics,
    objective, dtype, seed and batch reuses it: an interrupted sweep resumes.

    ``executor``: ``"local"`` (this process, or ``jobs`` worker processes) or ``"ray"``:
    one Ray task per arch, one CPU each, spread over the cluster at ``ray_address``
    (default: join or start a local instance). Parts are written by the driver as tasks
    finish, so a sweep killed anywhere resumes from the cache.
    """
    adapter = proxy_space(space)
    executor = check_executor(executor, ray_address)
    st = _settings(space, semantics, seed, batch, protocol)
    dtype = check_choice("dtype", dtype, DTYPES)
    jobs = check_int("jobs", jobs, low=1)
    if isinstance(archs, (str, bytes, dict)) or not isinstance(archs, Iterable):
        raise InvalidArgumentError(f"archs = {archs!r} is not allowed; allowed: a list of archs (ids, Arch, strings, "
                                   "release dicts; NLP: recipes or (label, recipe) pairs)")
    plist, combined = resolve_proxies(space, proxies)
    archs = list(archs)
    items = adapter.items(archs, ensure_benchmark(bench, archs) if space == "flexibert" else bench)
    cache_parts = PartCache.open(cache, "parquet", "arch")
    names = tuple(p.name for p in plist)
    versions = json.dumps({p.name: p.version for p in plist}, sort_keys=True)
    threads = 1 if jobs > 1 or executor == "ray" else 0
    tasks = [ProxyTask(space, ident, key, names, versions, st.spec, st.semantics, st.objective, st.seed, dtype, threads)
             for ident, key in items]
    how = SweepRun(executor, jobs, ray_address,
                   label=(lambda todo, hits: f"{space} proxies ({todo} to compute, {hits} cached)") if progress else None)
    done = run_sweep(_work, tasks, cache_parts, _finish, how)
    others = set(registry.REGISTRY[space]) - set(names)  # a part may hold more proxies than were asked for
    rows = [{**_only(row, others), **t.ident, "cached": True} if hit else {**row, "cached": False}
            for t, (row, hit) in zip(tasks, done)]
    return _frame(rows, names, combined)


def _only(row: dict[str, Any], others: set[str]) -> dict[str, Any]:
    """A cached row without the proxies it holds beyond those asked for (their values, per-layer
    values and timings): every call returns the same columns, however its parts were filled."""
    return {k: v for k, v in row.items() if k.split("__", 1)[0] not in others}


def _frame(rows: list[dict[str, Any]], names: Sequence[str], combined: list[str]) -> pd.DataFrame:
    """The sweep's rows as one frame: per-layer lists decoded, rank combinations added."""
    df = pd.DataFrame(rows)
    if df.empty:  # no archs given: the same columns, no rows
        return pd.DataFrame(columns=["arch", "semantics", "objective", "seed", "batch", "dtype", *names, *combined, "error",
                                     "seconds", "cached"])
    for c in df.columns:
        if c.endswith("__layers"):
            df[c] = [json.loads(v) if isinstance(v, str) else v for v in df[c]]
    for c in combined:
        df[c] = ntsr(df, COMBINED[c])
    return df


def ntsr(df: pd.DataFrame, parts: Sequence[str] = ("ntkt", "sept")) -> pd.Series:
    """Mean of the ranks (1 = worst) of ``parts`` within ``df``; NaN where any is NaN.

    A *set-level* proxy: an arch's NTSR depends on which archs it is compared with, as in
    the ETAS paper.
    """
    ranks = []
    ok = np.ones(len(df), dtype=bool)
    for p in parts:
        v = df[p].to_numpy(dtype=float)
        ok &= np.isfinite(v)
    for p in parts:
        v = df[p].to_numpy(dtype=float)
        r = np.full(len(df), np.nan)
        if ok.any():
            r[ok] = rankdata(v[ok])
        ranks.append(r)
    return pd.Series(np.mean(ranks, axis=0), index=df.index, name="ntsr")
