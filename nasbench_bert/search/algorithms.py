"""NAS algorithms, registered by name: random search, regularised evolution, local search,
ETAS. An algorithm is a function ``(oracle, rng, **params) -> None`` that asks the
:class:`~.oracle.Oracle` for evaluations until the budget says stop; it never sees a
table, a surrogate or a budget directly. Adding one is one decorated function::

    from nasbench_bert import search

    @search.register("my_search")
    def my_search(oracle, rng, restarts: int = 3):
        ...

after which ``search.run("my_search", bench, ...)`` and ``search.compare`` take it.
"""

from __future__ import annotations

import inspect
from collections import deque
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..errors import InvalidArgumentError
from ..spaces.flexibert import Arch
from .oracle import Oracle

Algorithm = Callable[..., None]
#: name -> algorithm (see :func:`register`)
ALGORITHMS: dict[str, Algorithm] = {}


def register(name: str) -> Callable[[Algorithm], Algorithm]:
    """Decorator adding a search algorithm to :data:`ALGORITHMS` under ``name``."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"name = {name!r} is not allowed; allowed: a non-empty string")

    def deco(fn: Algorithm) -> Algorithm:
        if name in ALGORITHMS:
            raise InvalidArgumentError(f"algorithm {name!r} is already registered")
        params = list(inspect.signature(fn).parameters)
        if params[:2] != ["oracle", "rng"]:
            raise InvalidArgumentError(f"algorithm {name!r} must take (oracle, rng, **params); it takes {params}")
        ALGORITHMS[name] = fn
        return fn

    return deco


def parameters(name: str) -> list[str]:
    """The keyword parameters algorithm ``name`` accepts."""
    return [p for p, v in inspect.signature(ALGORITHMS[name]).parameters.items()
            if p not in ("oracle", "rng") and v.kind in (v.KEYWORD_ONLY, v.POSITIONAL_OR_KEYWORD)]


@register("random")
def random_search(oracle: Oracle, rng: np.random.Generator) -> None:
    """Uniform sampling until the budget is spent."""
    while not oracle.exhausted():
        if oracle.evaluate(oracle.sample(rng)) is None:
            break


@register("regularized_evolution")
def regularized_evolution(oracle: Oracle, rng: np.random.Generator, population_size: int = 20, sample_size: int = 5) -> None:
    """Real et al. (2019): tournament selection, mutate the winner, remove the oldest."""
    for name, v in (("population_size", population_size), ("sample_size", sample_size)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a positive integer")
    pop: deque[tuple[Arch, float]] = deque()
    while len(pop) < population_size and not oracle.exhausted():
        a = oracle.sample(rng)
        g = oracle.evaluate(a)
        if g is None:
            return
        pop.append((a, g))
    while not oracle.exhausted():
        idx = rng.choice(len(pop), size=min(sample_size, len(pop)), replace=False)
        parent = max((pop[i] for i in idx), key=lambda t: t[1])[0]
        child = oracle.mutate(parent, rng)
        g = oracle.evaluate(child)
        if g is None:
            return
        pop.append((child, g))
        pop.popleft()  # age-based removal


@register("local_search")
def local_search(oracle: Oracle, rng: np.random.Generator) -> None:
    """First-improvement hill climbing over one-field neighbours; random restart at a
    local optimum."""
    while not oracle.exhausted():
        cur = oracle.sample(rng)
        g = oracle.evaluate(cur)
        if g is None:
            return
        improved = True
        while improved and not oracle.exhausted():
            improved = False
            nbrs = oracle.neighbours(cur, rng)
            for j in rng.permutation(len(nbrs)):
                gn = oracle.evaluate(nbrs[j])
                if gn is None:
                    return
                if gn > g:
                    cur, g, improved = nbrs[j], gn, True
                    break


@register("etas")
def etas(oracle: Oracle, rng: np.random.Generator, proxy: str | Callable[[list[Arch]], np.ndarray] = "ntsr",
         n0: int = 300, parents: int = 3, candidates: int = 100, top: int = 3, mutation_prob: float = 0.35,
         proxy_batch: dict[str, Any] | None = None) -> None:
    """ETAS (Yang & Liu, 2024): rank N0 sampled archs by a zero-cost proxy, evaluate the
    top n0 as parents; each iteration mutates the parents into N_m candidates, ranks
    them by the proxy, evaluates the top n_m, and keeps the best n0 evaluated."""
    for name, v in (("n0", n0), ("parents", parents), ("candidates", candidates), ("top", top)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a positive integer")
    if not isinstance(mutation_prob, (int, float)) or isinstance(mutation_prob, bool) or not 0 <= mutation_prob <= 1:
        raise InvalidArgumentError(f"mutation_prob = {mutation_prob!r} is not allowed; allowed: 0 <= p <= 1")
    score = _proxy_scorer(proxy, proxy_batch, oracle)
    pool = list(dict.fromkeys(oracle.sample(rng) for _ in range(n0)))
    ranked = [pool[i] for i in np.argsort(-score(pool), kind="stable")]
    evaluated: dict[Arch, float] = {}
    for a in ranked[:parents]:
        g = oracle.evaluate(a)
        if g is None:
            return
        evaluated[a] = g
    # the paper runs M = 10 rounds; here the budget decides how many, so that ETAS is
    # compared with the other algorithms at equal cost (every round evaluates >= 1 arch)
    while not oracle.exhausted():
        par = sorted(evaluated, key=evaluated.get, reverse=True)[:parents]  # type: ignore[arg-type]
        cands = []
        for _ in range(candidates):
            c = par[int(rng.integers(len(par)))]
            for _ in range(1 + int(rng.binomial(3, mutation_prob))):
                c = oracle.mutate(c, rng)
            cands.append(c)
        cands = [c for c in dict.fromkeys(cands) if c not in evaluated] or [oracle.sample(rng)]
        order = np.argsort(-score(cands), kind="stable")
        for i in order[:top]:
            g = oracle.evaluate(cands[i])
            if g is None:
                return
            evaluated[cands[i]] = g


def _num_params_as_trained(archs: list[Arch]) -> np.ndarray:
    from ..sizes import flexibert_num_params

    return np.array([flexibert_num_params(a, "as_trained") for a in archs], dtype=float)


def _ntsr(parts: pd.DataFrame) -> np.ndarray:
    from .. import proxies as px

    return px.ntsr(parts).to_numpy()


#: proxies counted analytically, without a forward pass
_ANALYTIC_PROXIES: dict[str, Callable[[list[Arch]], np.ndarray]] = {"num_params": _num_params_as_trained}
#: proxies made of computed ones: name -> (the parts, how they combine over the compared
#: set; NTSR ranks within it, as the paper defines it)
_COMBINED_PROXIES: dict[str, tuple[tuple[str, ...], Callable[[pd.DataFrame], np.ndarray]]] = {
    "ntsr": (("ntkt", "sept"), _ntsr),
}


def _proxy_scorer(proxy: Any, batch: dict[str, Any] | None, oracle: Oracle) -> Callable[[list[Arch]], np.ndarray]:
    """A function archs -> proxy scores (higher = better), cached per arch."""
    if callable(proxy):
        return lambda archs: np.asarray(proxy(archs), dtype=float)
    if not isinstance(proxy, str):
        raise InvalidArgumentError(f"proxy = {proxy!r} is not allowed; allowed: a registered proxy name, a stored proxy "
                         "column, 'ntsr', 'num_params', or a callable")
    from ..data.tables import FLEXIBERT_PROXY_COLUMNS

    stored = set(FLEXIBERT_PROXY_COLUMNS.values())  # the release's stored columns
    if proxy in stored and oracle.stored_proxies:
        t = oracle.bench.data.table("flexibert_proxies").to_pandas().set_index("id")[proxy]
        by_arch: dict[Arch, float] = {}
        for a, i in zip(oracle.bench.archs, oracle.bench.to_pandas()["id"]):
            by_arch.setdefault(a, float(t[i]))
        return lambda archs: np.array([by_arch[a] for a in archs])
    if proxy in _ANALYTIC_PROXIES:
        return _ANALYTIC_PROXIES[proxy]
    from .. import proxies as px

    parts = list(_COMBINED_PROXIES[proxy][0]) if proxy in _COMBINED_PROXIES else [proxy]
    px.get("flexibert", parts)  # validates the name
    cache: dict[Arch, dict[str, float]] = {}
    spec = {"batch_size": 2, "seq_len": 32, **(batch or {})}

    def score(archs: list[Arch]) -> np.ndarray:
        need = [a for a in dict.fromkeys(archs) if a not in cache]
        if need:
            import time

            t0 = time.perf_counter()
            df = px.compute(need, parts, batch=spec, progress=oracle.progress is not None)
            oracle.proxy_seconds += time.perf_counter() - t0
            for a, (_, r) in zip(need, df.iterrows()):
                cache[a] = {k: float(r[k]) for k in parts}
        if proxy in _COMBINED_PROXIES:
            return _COMBINED_PROXIES[proxy][1](pd.DataFrame([cache[a] for a in archs]))
        sign = 1.0 if px.REGISTRY["flexibert"][proxy].higher_is_better else -1.0
        return np.array([sign * cache[a][proxy] for a in archs])

    return score
