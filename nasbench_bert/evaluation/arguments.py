"""The arguments of :func:`~nasbench_bert.evaluation.evaluate`, checked before any work.

Why a module of its own: a bad flag found after an hour of sweeping costs the hour, so
every argument is turned into its checked form here - with one line naming it and the
allowed values when it is wrong - before the benchmark is loaded or a model is built
(the cache folder and the device included: :func:`_cache_dir`, :func:`_where`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

from ..checks import check_int, check_names
from ..devices import check_device
from ..errors import InvalidArgumentError
from ..executors import check_executor
from ..proxies import registry
from ..proxies.callables import CALLABLES, register_callable
from ..proxies.inputs import BatchSpec
from ..semantics import SEMANTICS, Semantics, get_semantics
from ..slurm import SlurmResources, check_slurm
from ..sweep import PartCache
from ..vocabulary import BenchmarkLike, Space
from .benchmarks import BENCHMARKS, nlp_runs


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
    from ..proxies.sweep import default_batch

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
    id_list = _positions("ids", ids, len(bench)) if Space.FLEXIBERT in bms else None
    if ids is not None and Space.FLEXIBERT not in bms:
        raise InvalidArgumentError(f"ids = {_shown(ids)} selects FlexiBERT archs, and benchmarks = {bms!r} has no "
                                   "'flexibert'; allowed: no ids, or 'flexibert' among the benchmarks")
    nlp_pos = _positions("nlp_ids", nlp_ids, len(nlp_runs(bench))) if Space.NLP in bms else None
    if nlp_ids is not None and Space.NLP not in bms:
        raise InvalidArgumentError(f"nlp_ids = {_shown(nlp_ids)} selects NAS-Bench-NLP runs, and benchmarks = {bms!r} has "
                                   "no 'nlp'; allowed: no nlp_ids, or 'nlp' among the benchmarks")
    return {"flexibert": id_list, "nlp": nlp_pos}


def _shown(v: Any) -> str:
    """A selection as a message shows it: a long list cut short."""
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
