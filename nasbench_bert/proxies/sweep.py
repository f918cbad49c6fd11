"""Proxy sweeps: compute proxies for many archs, isolate failures, cache and resume
(:func:`compute`, on the shared engine of :mod:`nasbench_bert.sweep`).

**One torch thread per worker.** A proxy value must not depend on how the sweep ran.
torch's CPU kernels (matmul, softmax and their backward) split their reductions by the
intra-op thread count, so the last bits of a value do: with 1 and 2 threads, 8 of the 39
FlexiBERT proxies changed on 8 sampled archs at the default batch (synaptic diversity by
up to 2.0e-8 relative, the NTK trace in every arch by up to 4.3e-10, synflow and snip by an
ulp), head confidence by 1.16e-8 in a reported run, and a cache filled by processes with
different counts mixed them. Making every kernel
thread-count-invariant is not in this package's hands, so the count is fixed instead:
every worker - this process when ``jobs=1``, each worker process, each Ray task -
computes with exactly :data:`WORKER_THREADS` torch threads (this process gets its own
setting back after each arch; parallelism comes from ``jobs`` and Ray, one arch per
core). Each cache part records the count in ``threads``, checked like the seed and the
batch: a part computed under another count, or by a version that did not record it, is
computed again rather than mixed in. (Hardware sweeps set their own, recorded, count:
latency is what they measure, see :mod:`nasbench_bert.hardware`.)

**The device is part of a value's provenance.** A GPU changes the last bits of a value
as a thread count does (float64: within 1e-9 relative of the CPU's, tested on a CUDA
machine), so ``device`` (canonical, :func:`nasbench_bert.devices.check_device`) is part
of every task's identity and of every row: a cache keeps CPU values and GPU values in
parts of their own and never serves one for the other, and compute()'s frame has a
``device`` column (a string: scoring never takes it for a proxy). With a CUDA device and
``jobs > 1`` the worker processes are spawned, not forked (CUDA does not survive a fork),
and share the GPU.
"""

from __future__ import annotations

import json
import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..benchmark.flexibert import ensure_benchmark
from ..checks import check_choice, check_int, check_names, check_seed
from ..devices import DEFAULT_DEVICE, check_device, is_cuda
from ..errors import InvalidArgumentError
from ..executors import check_executor
from ..semantics import DEFAULT_SEMANTICS, Semantics, SemanticsLike, get_semantics
from ..slurm import SlurmResources, check_slurm
from ..sweep import PartCache, SweepRun, run_sweep
from ..vocabulary import DTYPES, BenchmarkLike, Dtype, Executor, Space, SpaceName
from . import builtin as _builtin  # noqa: F401  (registers every built-in proxy and analytic score)
from . import registry
from .inputs import BatchSpec, make_batch
from .spaces import PROXY_SPACES, proxy_space

#: torch intra-op threads every proxy worker computes with (see the module doc: values do
#: not depend on how the sweep ran); recorded in each cache part as ``threads``
WORKER_THREADS = 1
#: fields of a cache part that are not columns of compute()'s frame (provenance of the
#: part; a numeric column there would be scored as if it were a proxy). ``device`` is a
#: column: a string, and where the values came from
_PART_ONLY = ("threads",)

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
    threads: int  # torch intra-op threads the worker computes with (WORKER_THREADS)
    refresh: bool = False  # compute again whatever the cache holds (compute(refresh=True))
    #: where the model runs ("cpu", "cuda:0", ...): part of the cache key and of every row, so
    #: a cache never mixes values computed on different devices
    device: str = "cpu"

    def identity(self) -> list[Any]:
        return [self.ident["arch"], self.semantics.key, self.seed, self.spec.key, self.objective, self.dtype, self.device]

    def expect(self) -> dict[str, Any]:
        return {"arch": self.ident["arch"], "semantics": self.semantics.key, "objective": self.objective,
                "dtype": self.dtype, "seed": self.seed, "batch": self.spec.key, "threads": self.threads,
                "device": self.device}

    def accepts(self, row: dict[str, Any]) -> bool:
        """Every proxy asked for is in the row, at its current version, without an error
        (a proxy that raised on this arch is tried again on the next run: its failure may
        have been the code's, since fixed, and is reported, never served as a value);
        nothing is accepted under ``refresh``."""
        if self.refresh or any(isinstance(row.get(f"{n}__error"), str) for n in self.names):
            return False
        try:
            stored = json.loads(row.get("proxy_versions") or "{}")
        except (TypeError, ValueError):
            return False
        want = json.loads(self.versions)
        return isinstance(stored, dict) and all(stored.get(n) == want[n] and n in row for n in self.names)


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with exactly ``n`` torch intra-op threads, then give the process its
    own count back (a sweep run in this process must not change its caller's setting)."""
    from .._torch import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _work(task: ProxyTask) -> dict[str, Any]:
    from .engine import run_one

    proxies = registry.get(task.space, list(task.names))
    batch = make_batch(task.spec)
    t0 = time.perf_counter()
    try:
        with torch_threads(task.threads):
            row = run_one(task.space, task.key, proxies, task.spec, batch, task.semantics, task.seed, task.dtype,
                          task.device)
        row["error"] = None
    except Exception as e:  # isolate: the sweep goes on, the row says why
        row = {p.name: math.nan for p in proxies}
        row["error"] = f"{type(e).__name__}: {e}"
    row["seconds"] = time.perf_counter() - t0
    row["tokenizer"] = batch.tokenizer
    return row


def _finish(task: ProxyTask, row: dict[str, Any]) -> dict[str, Any]:
    return {**task.ident, "semantics": task.semantics.key, "objective": task.objective, "seed": task.seed,
            "batch": task.spec.key, "dtype": task.dtype, "proxy_versions": task.versions, "threads": task.threads,
            "device": task.device, **row}


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
    slurm: SlurmResources | None = None,
    refresh: bool = False,
    device: str = DEFAULT_DEVICE,
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
    ``dtype``, ``device`` (where the models ran), one column per proxy, ``<proxy>__layers`` (per-layer values),
    timings (``seconds``, ``seconds_pass``, ``seconds_proxies``), ``error`` (None, or
    why the arch failed: its proxies are NaN) and ``proxy_versions``. With ``cache`` (a
    folder), the sweep engine (:mod:`nasbench_bert.sweep`) writes each finished arch as
    one part file, atomically, and a later call with the same arch, semantics,
    objective, dtype, seed and batch reuses it: an interrupted sweep resumes.

    ``executor``: ``"local"`` (this process, or ``jobs`` worker processes), ``"ray"`` (one
    Ray task per arch, one CPU each, on the cluster at ``ray_address``; default: join or
    start a local one) or ``"slurm"`` (a job array sized by ``slurm``, a
    :class:`~nasbench_bert.slurm.SlurmResources`; the ``[slurm]`` extra). Parts are
    written as tasks finish (on SLURM by each array task, into a cache the nodes share),
    so a sweep killed anywhere resumes from the cache. Every arch is computed with
    :data:`WORKER_THREADS` torch thread(s) whichever executor runs it (this process's own
    count is restored afterwards), so a value is the same bits from every executor and
    process, and a cache never mixes values from different thread counts. A failed proxy's
    part is tried again next call; ``refresh=True`` reuses no part (and overwrites them).
    ``device``: ``"cpu"`` (default), ``"cuda"``, ``"cuda:<i>"`` or ``"auto"``, checked before
    any work (:mod:`nasbench_bert.devices`); part of the cache key and of every row (see the
    module docstring: a GPU value is the CPU's up to rounding).
    """
    adapter = proxy_space(space)
    res = check_slurm(check_executor(executor, ray_address), slurm)
    device = check_device(device, executor=executor, slurm=res)
    st = _settings(space, semantics, seed, batch, protocol)
    dtype = check_choice("dtype", dtype, DTYPES)
    jobs = check_int("jobs", jobs, low=1)
    archs = _archs(archs)
    plist, combined = resolve_proxies(space, proxies)
    items = adapter.items(archs, ensure_benchmark(bench, archs) if space == Space.FLEXIBERT else bench)
    cache_parts = PartCache.open(cache, "parquet", "arch")
    names = tuple(p.name for p in plist)
    tasks = _tasks(space, items, plist, st, dtype, refresh, device)
    done = run_sweep(_work, tasks, cache_parts, _finish, _how(space, executor, jobs, ray_address, res, device, progress))
    others = set(registry.REGISTRY[space]) - set(names)  # a part may hold more proxies than were asked for
    rows = [{**_only(row, others), **t.ident, "cached": True} if hit else {**_only(row, set()), "cached": False}
            for t, (row, hit) in zip(tasks, done)]
    return _frame(rows, names, combined)


def _archs(archs: Any) -> list[Any]:
    """The archs of a sweep as a list; a single arch or a non-iterable is refused."""
    if isinstance(archs, (str, bytes, dict)) or not isinstance(archs, Iterable):
        raise InvalidArgumentError(f"archs = {archs!r} is not allowed; allowed: a list of archs (ids, Arch, strings, "
                                   "release dicts; NLP: recipes or (label, recipe) pairs)")
    return list(archs)


def _how(space: str, executor: str, jobs: int, ray_address: str | None, res: SlurmResources | None, device: str,
         progress: bool) -> SweepRun:
    """Where the sweep runs: on a GPU, ``jobs`` worker processes are spawned (CUDA does not
    survive a fork) and share the device."""
    return SweepRun(executor, jobs, ray_address, slurm=res, start_method="spawn" if is_cuda(device) else None,
                    label=(lambda todo, hits: f"{space} proxies ({todo} to compute, {hits} cached)") if progress else None)


def _tasks(space: str, items: Sequence[tuple[dict[str, Any], Any]], plist: Sequence[registry.Proxy], st: _Settings,
           dtype: str, refresh: Any, device: str = DEFAULT_DEVICE) -> list[ProxyTask]:
    """One task per arch, each carrying every proxy's version (the cache key's definition
    part); ``refresh`` (checked here) makes every task refuse what the cache holds."""
    if not isinstance(refresh, bool):
        raise InvalidArgumentError(f"refresh = {refresh!r} is not allowed; allowed: True or False")
    names = tuple(p.name for p in plist)
    versions = json.dumps({p.name: p.version for p in plist}, sort_keys=True)
    return [ProxyTask(space, ident, key, names, versions, st.spec, st.semantics, st.objective, st.seed, dtype,
                      WORKER_THREADS, refresh, device) for ident, key in items]


def _only(row: dict[str, Any], others: set[str]) -> dict[str, Any]:
    """A row without the proxies it holds beyond those asked for (their values, per-layer
    values and timings) and without the part's own provenance (:data:`_PART_ONLY`): every
    call returns the same columns, however its parts were filled."""
    return {k: v for k, v in row.items() if k.split("__", 1)[0] not in others and k not in _PART_ONLY}


def _frame(rows: list[dict[str, Any]], names: Sequence[str], combined: list[str]) -> pd.DataFrame:
    """The sweep's rows as one frame: per-layer lists decoded, rank combinations added."""
    df = pd.DataFrame(rows)
    if df.empty:  # no archs given: the same columns, no rows
        return pd.DataFrame(columns=["arch", "semantics", "objective", "seed", "batch", "dtype", "device", *names, *combined,
                                     "error", "seconds", "cached"])
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
