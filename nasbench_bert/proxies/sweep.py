"""Sweeps: compute proxies for many archs, isolate failures, cache and resume (:func:`compute`)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from scipy.stats import rankdata

from ..checks import check_int, check_names, check_seed
from ..errors import InvalidArgumentError
from ..executors import check_executor, run_tasks
from ..semantics import AS_TRAINED, SemanticsLike, get_semantics
from . import builtin as _builtin  # noqa: F401  (registers every built-in proxy and analytic score)
from . import registry
from .inputs import BatchSpec, make_batch
from .spaces import PROXY_SPACES, proxy_space
from ..vocabulary import BenchmarkLike

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


# -- cache ---------------------------------------------------------------------------------
def _cache_name(ident: str, semantics: str, seed: int, batch_key: str, objective: str, dtype: str) -> str:
    return hashlib.sha1(json.dumps([ident, semantics, seed, batch_key, objective, dtype]).encode()).hexdigest()[:20] + ".parquet"


def _cache_read(path: Path, proxies: list[registry.Proxy], expect: dict[str, Any]) -> dict[str, Any] | None:
    """The cached row at ``path`` if it is intact, was computed for exactly ``expect``
    (arch, semantics, objective, dtype, seed, batch) and holds every requested proxy at
    its current version; otherwise None, and the arch is recomputed (a damaged part, or
    one copied under another arch's name, is never trusted)."""
    if path.is_dir():
        raise InvalidArgumentError(f"cache part {path} is a folder; remove it (the cache holds one parquet file per arch)")
    if not path.is_file():
        return None
    try:
        row = pq.read_table(path).to_pylist()[0]
        versions = json.loads(row.get("proxy_versions") or "{}")
        if not isinstance(versions, dict):
            return None
    except Exception:  # any damage: recomputed, never trusted
        return None
    if any(row.get(k) != v for k, v in expect.items()):
        return None
    if all(versions.get(p.name) == p.version and p.name in row for p in proxies):
        return row
    return None


def _cache_write(path: Path, row: dict[str, Any]) -> None:
    from ..atomic import atomic_path

    clean = {k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in row.items()}
    table = pa.Table.from_pylist([clean])
    try:
        with atomic_path(path) as tmp:  # a killed sweep never leaves a partial part
            pq.write_table(table, tmp)
    except IsADirectoryError:
        raise InvalidArgumentError(f"cache part {path} is a folder; remove it (the cache holds one parquet file per arch)") from None


# -- the sweep -----------------------------------------------------------------------------
def _work(args: tuple) -> dict[str, Any]:
    space, ident, key, names, spec, semantics, seed, threads, dtype = args
    import torch

    from .engine import run_one

    if threads:
        torch.set_num_threads(threads)
    proxies = registry.get(space, names)
    batch = make_batch(spec)
    t0 = time.perf_counter()
    try:
        row = run_one(space, key, proxies, spec, batch, semantics, seed, dtype)
        row["error"] = None
    except Exception as e:  # isolate: the sweep goes on, the row says why
        row = {p.name: math.nan for p in proxies}
        row["error"] = f"{type(e).__name__}: {e}"
    row["seconds"] = time.perf_counter() - t0
    row["tokenizer"] = batch.tokenizer
    return row


def compute(
    archs: Iterable[Any],
    proxies: Iterable[str] | str | None = "paper",
    *,
    semantics: SemanticsLike | None = None,
    seed: int | None = None,
    dtype: str = "float32",
    batch: BatchSpec | dict[str, Any] | None = None,
    protocol: Any = None,
    space: str = "flexibert",
    bench: BenchmarkLike | None = None,
    cache: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    progress: bool = False,
    executor: str = "local",
    ray_address: str | None = None,
) -> pd.DataFrame:
    """Compute proxies for ``archs``; one row per arch.

    ``archs``: FlexiBERT ids, :class:`Arch` objects, canonical strings or release dicts
    (``space="flexibert"``); recipes, or ``(label, recipe)`` pairs (``space="nlp"``).
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
    folder), finished archs are written one part file each, atomically, and a later
    call with the same arch, semantics, objective, dtype, seed and batch reuses them: an interrupted
    sweep resumes without recomputing.

    ``executor``: ``"local"`` (this process, or ``jobs`` worker processes) or ``"ray"``:
    one Ray task per arch, one CPU each, spread over the cluster at ``ray_address``
    (default: join or start a local instance), the same executor choice as
    ``build_entry``. Parts are written by the driver as tasks finish, so a sweep killed
    anywhere resumes from the cache.
    """
    adapter = proxy_space(space)
    executor = check_executor(executor, ray_address)
    if protocol is not None:
        from .protocols import get_protocol

        proto = get_protocol(protocol)
        given = [n for n, v in (("semantics", semantics), ("batch", batch), ("seed", seed)) if v is not None]
        if given:
            raise InvalidArgumentError(f"protocol = {proto.name!r} sets the semantics, batch and seed; do not also pass {given} "
                                       "(use protocol.with_batch(...) or dataclasses.replace for a variant)")
        semantics, batch, seed = proto.semantics, proto.batch, proto.seed
    semantics = AS_TRAINED if semantics is None else semantics
    seed = 0 if seed is None else seed
    sem = get_semantics(semantics)
    objective = adapter.objective(sem)
    if dtype not in ("float32", "float64"):
        raise InvalidArgumentError(f"dtype = {dtype!r} is not allowed; allowed values: ['float32', 'float64']")
    seed = check_seed("seed", seed, none=False)
    jobs = check_int("jobs", jobs, low=1)
    if isinstance(archs, (str, bytes, dict)) or not isinstance(archs, Iterable):
        raise InvalidArgumentError(f"archs = {archs!r} is not allowed; allowed: a list of archs (ids, Arch, strings, "
                                   "release dicts; NLP: recipes or (label, recipe) pairs)")
    if batch is not None and not isinstance(batch, (BatchSpec, dict)):
        raise InvalidArgumentError(f"batch = {batch!r} is not allowed; allowed: a BatchSpec, a dict of its fields, or None")
    spec = batch if isinstance(batch, BatchSpec) else default_batch(space, **(batch or {}))
    if spec.space != space:
        raise InvalidArgumentError(f"batch.space = {spec.space!r} does not match space = {space!r}")
    plist, combined = resolve_proxies(space, proxies)
    names = [p.name for p in plist]
    versions = json.dumps({p.name: p.version for p in plist}, sort_keys=True)
    items = adapter.items(archs, bench)
    cache_dir = Path(cache) if cache is not None else None
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        raise InvalidArgumentError(f"cache = {str(cache)!r} is a file; allowed: a folder (created if missing)")

    rows: list[dict[str, Any] | None] = [None] * len(items)
    todo = []
    for i, (ident, key) in enumerate(items):
        if cache_dir is not None:
            expect = {"arch": ident["arch"], "semantics": sem.key, "objective": objective, "dtype": dtype, "seed": seed,
                      "batch": spec.key}
            hit = _cache_read(cache_dir / _cache_name(ident["arch"], sem.key, seed, spec.key, objective, dtype), plist, expect)
            if hit is not None:
                rows[i] = {**hit, **ident, "cached": True}
                continue
        todo.append(i)

    threads = 1 if jobs > 1 or executor == "ray" else 0
    tasks = [(space, items[i][0], items[i][1], names, spec, sem, seed, threads, dtype) for i in todo]

    def done(i: int, row: dict[str, Any]) -> None:
        ident = items[i][0]
        full = {**ident, "semantics": sem.key, "objective": objective, "seed": seed, "batch": spec.key, "dtype": dtype,
                "proxy_versions": versions, **row}
        if cache_dir is not None and full.get("error") is None:
            _cache_write(cache_dir / _cache_name(ident["arch"], sem.key, seed, spec.key, objective, dtype), full)
        rows[i] = {**full, "cached": False}

    label = f"{space} proxies ({len(todo)} to compute, {len(items) - len(todo)} cached)" if progress else None
    run_tasks(_work, tasks, lambda k, row: done(todo[k], row), executor=executor, jobs=jobs, ray_address=ray_address,
              progress=label)

    df = pd.DataFrame([r for r in rows if r is not None])
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
