"""NAS algorithms run on the benchmark: random search, regularised evolution, local
search and ETAS, with simulated training time charged to a budget.

``run(algorithm, bench, budget=..., seed=...)`` returns a :class:`Trajectory`: one row per
evaluation with the simulated seconds so far, the GLUE score, the best so far and the
arch. Two modes:

* ``mode="tabular"`` (default): only the archs the benchmark trained. A mutation that
  lands outside the table moves to the nearest evaluated arch (fewest differing
  fields; ties broken by the seeded generator), so every evaluation is a real result.
* ``mode="surrogate"``: the whole 10.6M space, scored by the surrogate
  (:mod:`nasbench_bert.surrogate`); trajectories are marked as predicted.

Budgets are numbers of evaluations (``budget``) and/or simulated training seconds
(``time_budget``): a run stops before the evaluation that would exceed either.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from .spaces.flexibert import FLEXIBERT_SPACE, SPACE_SIZE, Arch, arch_at

ALGORITHMS = ("random", "regularized_evolution", "local_search", "etas")
MODES = ("tabular", "surrogate")


@dataclass
class Trajectory:
    algorithm: str
    seed: int
    mode: str
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    proxy_seconds: float = 0.0

    @property
    def best_glue(self) -> float:
        return max((e["glue"] for e in self.evaluations), default=math.nan)

    @property
    def best_arch(self) -> Arch | None:
        return max(self.evaluations, key=lambda e: e["glue"])["arch"] if self.evaluations else None

    def to_pandas(self) -> pd.DataFrame:
        df = pd.DataFrame(self.evaluations)
        if not df.empty:
            df["arch"] = df["arch"].map(str)
        return df

    def __len__(self) -> int:
        return len(self.evaluations)


class _Evaluator:
    """Evaluates archs through the benchmark, charging simulated time, keeping the log."""

    def __init__(self, bench: Any, mode: str, budget: int | None, time_budget: float | None, traj: Trajectory):
        self.bench, self.mode, self.budget, self.time_budget, self.traj = bench, mode, budget, time_budget, traj
        self.seconds = 0.0
        self.cache: dict[Arch, float] = {}
        if mode == "tabular":
            from .benchmark import _encode

            # distinct archs (a repeated arch is one candidate; query() gives its lowest id)
            self.archs: list[Arch] = list(dict.fromkeys(bench.archs))
            res = [bench.query(a, charge=False) for a in self.archs]
            self._time = {a: float(r.time_to_train) for a, r in zip(self.archs, res)}
            self._glue = {a: float(r.glue) for a, r in zip(self.archs, res)}
            self._codes = np.stack([_encode(a) for a in self.archs])
            self._encode = _encode
        else:
            from .surrogate import Surrogate

            self.sur = bench.surrogate() if hasattr(bench, "surrogate") else Surrogate(bench)
            self._mean_time = float(bench.to_pandas()["time_to_train"].mean())

    def exhausted(self, arch: Arch | None = None) -> bool:
        if self.budget is not None and len(self.traj) >= self.budget:
            return True
        if self.time_budget is not None:
            nxt = self.cost(arch) if arch is not None else 0.0
            return self.seconds + nxt > self.time_budget
        return False

    def cost(self, arch: Arch) -> float:
        if self.mode == "tabular":
            return float(self._time[arch])
        return self._mean_time  # a surrogate has no training time: charge the table's mean

    def __call__(self, arch: Arch) -> float | None:
        """GLUE of ``arch`` (None when the budget does not allow the evaluation)."""
        if self.exhausted(arch):
            return None
        if self.mode == "tabular":
            glue = self._glue[arch]  # the table's result (the same as bench.query(arch).glue)
        else:
            glue = float(self.sur.predict_indices(np.array([arch.index]), return_std=False)[0][0, 0])
        self.seconds += self.cost(arch)
        best = max(self.traj.best_glue if self.traj.evaluations else -math.inf, glue)
        self.traj.evaluations.append({"evaluation": len(self.traj) + 1, "seconds": self.seconds, "glue": glue,
                                      "best_glue": best, "arch": arch, "predicted": self.mode == "surrogate"})
        return glue

    # -- moves that stay valid in the chosen mode --------------------------------------------
    def sample(self, rng: np.random.Generator) -> Arch:
        if self.mode == "tabular":
            return self.archs[int(rng.integers(len(self.archs)))]
        return arch_at(int(rng.integers(SPACE_SIZE)))

    def mutate(self, arch: Arch, rng: np.random.Generator) -> Arch:
        m = FLEXIBERT_SPACE.mutate(arch, rng)
        if self.mode == "surrogate":
            return m
        return self._nearest(m, rng, exclude=arch)

    def _dist(self, target: Arch) -> np.ndarray:
        from .benchmark import _distances

        return _distances(self._encode(target), self._codes)

    def _nearest(self, target: Arch, rng: np.random.Generator, exclude: Arch | None = None) -> Arch:
        """The evaluated arch with fewest differing fields (ties: seeded choice)."""
        d = self._dist(target)
        if exclude is not None and exclude in self._glue:
            d[self.archs.index(exclude)] = np.iinfo(np.int64).max
        best = np.flatnonzero(d == d.min())
        return self.archs[int(best[int(rng.integers(len(best)))])]

    def neighbours(self, arch: Arch, rng: np.random.Generator) -> list[Arch]:
        """Surrogate mode: the one-field neighbours. Tabular: the evaluated archs at the
        smallest non-zero distance."""
        if self.mode == "surrogate":
            return FLEXIBERT_SPACE.neighbours(arch)
        d = self._dist(arch)
        pos = d[d > 0]
        return [self.archs[i] for i in np.flatnonzero(d == pos.min())]


# -- algorithms -------------------------------------------------------------------------------
def _random(ev: _Evaluator, rng: np.random.Generator, **_: Any) -> None:
    while not ev.exhausted():
        if ev(ev.sample(rng)) is None:
            break


def _regularized_evolution(ev: _Evaluator, rng: np.random.Generator, population_size: int = 20,
                           sample_size: int = 5, **_: Any) -> None:
    """Real et al. (2019): tournament selection, mutate the winner, remove the oldest."""
    pop: deque[tuple[Arch, float]] = deque()
    while len(pop) < population_size and not ev.exhausted():
        a = ev.sample(rng)
        g = ev(a)
        if g is None:
            return
        pop.append((a, g))
    while not ev.exhausted():
        idx = rng.choice(len(pop), size=min(sample_size, len(pop)), replace=False)
        parent = max((pop[i] for i in idx), key=lambda t: t[1])[0]
        child = ev.mutate(parent, rng)
        g = ev(child)
        if g is None:
            return
        pop.append((child, g))
        pop.popleft()  # age-based removal


def _local_search(ev: _Evaluator, rng: np.random.Generator, **_: Any) -> None:
    """First-improvement hill climbing over one-field neighbours; random restart at a
    local optimum."""
    while not ev.exhausted():
        cur = ev.sample(rng)
        g = ev(cur)
        if g is None:
            return
        improved = True
        while improved and not ev.exhausted():
            improved = False
            nbrs = ev.neighbours(cur, rng)
            for j in rng.permutation(len(nbrs)):
                gn = ev(nbrs[j])
                if gn is None:
                    return
                if gn > g:
                    cur, g, improved = nbrs[j], gn, True
                    break


def _etas(ev: _Evaluator, rng: np.random.Generator, proxy: str | Callable[[list[Arch]], np.ndarray] = "ntsr",
          n0: int = 300, parents: int = 3, candidates: int = 100, top: int = 3,
          mutation_prob: float = 0.35, proxy_batch: dict[str, Any] | None = None, **_: Any) -> None:
    """ETAS (Yang & Liu, 2024): rank N0 sampled archs by a zero-cost proxy, evaluate the
    top n0 as parents; each iteration mutates the parents into N_m candidates, ranks
    them by the proxy, evaluates the top n_m, and keeps the best n0 evaluated."""
    for name, v in (("n0", n0), ("parents", parents), ("candidates", candidates), ("top", top)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} = {v!r} is not allowed; allowed: a positive integer")
    if not 0 <= mutation_prob <= 1:
        raise ValueError(f"mutation_prob = {mutation_prob!r} is not allowed; allowed: 0 <= p <= 1")
    score = _proxy_scorer(proxy, proxy_batch, ev)
    pool = _distinct(ev, [ev.sample(rng) for _ in range(n0)])
    ranked = [pool[i] for i in np.argsort(-score(pool), kind="stable")]
    evaluated: dict[Arch, float] = {}
    for a in ranked[:parents]:
        g = ev(a)
        if g is None:
            return
        evaluated[a] = g
    # the paper runs M = 10 rounds; here the budget decides how many, so that ETAS is
    # compared with the other algorithms at equal cost (every round evaluates >= 1 arch)
    while not ev.exhausted():
        par = sorted(evaluated, key=evaluated.get, reverse=True)[:parents]
        cands = []
        for _ in range(candidates):
            c = par[int(rng.integers(len(par)))]
            for _ in range(1 + int(rng.binomial(3, mutation_prob))):
                c = ev.mutate(c, rng)
            cands.append(c)
        cands = [c for c in _distinct(ev, cands) if c not in evaluated] or [ev.sample(rng)]
        order = np.argsort(-score(cands), kind="stable")
        for i in order[:top]:
            g = ev(cands[i])
            if g is None:
                return
            evaluated[cands[i]] = g


def _distinct(ev: _Evaluator, archs: list[Arch]) -> list[Arch]:
    return list(dict.fromkeys(archs))


def _proxy_scorer(proxy: Any, batch: dict[str, Any] | None, ev: _Evaluator) -> Callable[[list[Arch]], np.ndarray]:
    """A function archs -> proxy scores (higher = better), cached per arch."""
    if callable(proxy):
        return lambda archs: np.asarray(proxy(archs), dtype=float)
    if not isinstance(proxy, str):
        raise ValueError(f"proxy = {proxy!r} is not allowed; allowed: a registered proxy name, 'ntsr', or a callable")
    from .tables import FLEXIBERT_PROXY_COLUMNS

    stored = set(FLEXIBERT_PROXY_COLUMNS.values())  # the release's stored columns
    if proxy in stored and ev.mode == "tabular":
        t = ev.bench.data.table("flexibert_proxies").to_pandas().set_index("id")[proxy]
        by_arch: dict[Arch, float] = {}
        for a, i in zip(ev.bench.archs, ev.bench.to_pandas()["id"]):
            by_arch.setdefault(a, float(t[i]))
        return lambda archs: np.array([by_arch[a] for a in archs])
    if proxy == "num_params":
        from .sizes import flexibert_num_params

        return lambda archs: np.array([flexibert_num_params(a) for a in archs], dtype=float)
    from . import proxies as px

    px.get("flexibert", [p for p in ([proxy] if proxy != "ntsr" else ["ntkt", "sept"])])  # validates the name
    cache: dict[Arch, dict[str, float]] = {}
    spec = {"batch_size": 2, "seq_len": 32, **(batch or {})}

    def score(archs: list[Arch]) -> np.ndarray:
        need = [a for a in dict.fromkeys(archs) if a not in cache]
        if need:
            import time

            t0 = time.perf_counter()
            df = px.compute(need, [proxy] if proxy != "ntsr" else ["ntkt", "sept"], batch=spec)
            ev.traj.proxy_seconds += time.perf_counter() - t0
            for a, (_, r) in zip(need, df.iterrows()):
                cache[a] = {k: float(r[k]) for k in (["ntkt", "sept"] if proxy == "ntsr" else [proxy])}
        if proxy == "ntsr":  # ranks within the compared set, as the paper defines it
            frame = pd.DataFrame([cache[a] for a in archs])
            return px.ntsr(frame).to_numpy()
        sign = 1.0 if px.REGISTRY["flexibert"][proxy].higher_is_better else -1.0
        return np.array([sign * cache[a][proxy] for a in archs])

    return score


_IMPL = {"random": _random, "regularized_evolution": _regularized_evolution, "local_search": _local_search, "etas": _etas}


def run(algorithm: str, bench: Any, *, budget: int | None = 100, time_budget: float | None = None, seed: int = 0,
        mode: str = "tabular", **params: Any) -> Trajectory:
    """Run ``algorithm`` on ``bench``; reproducible from ``seed``. ``params`` go to the
    algorithm (e.g. ``population_size``, ``sample_size`` for regularised evolution;
    ``proxy``, ``n0``, ``candidates``, ``top``, ``mutation_prob`` for ETAS)."""
    if algorithm not in _IMPL:
        raise ValueError(f"algorithm = {algorithm!r} is not allowed; allowed values: {list(ALGORITHMS)}")
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r} is not allowed; allowed values: {list(MODES)}")
    if budget is None and time_budget is None:
        raise ValueError("budget and time_budget are both None; give at least one (evaluations or simulated seconds)")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
        raise ValueError(f"budget = {budget!r} is not allowed; allowed: a positive number of evaluations")
    if time_budget is not None and (not isinstance(time_budget, (int, float)) or time_budget <= 0):
        raise ValueError(f"time_budget = {time_budget!r} is not allowed; allowed: positive simulated seconds")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed = {seed!r} is not allowed; allowed: an integer")
    import inspect

    known = [p for p in inspect.signature(_IMPL[algorithm]).parameters if p not in ("ev", "rng", "_")]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"parameter(s) {unknown} not allowed for algorithm {algorithm!r}; allowed: {known}")
    traj = Trajectory(algorithm, seed, mode)
    ev = _Evaluator(bench, mode, budget, time_budget, traj)
    _IMPL[algorithm](ev, np.random.default_rng(seed), **params)
    return traj


def compare(bench: Any, algorithms: list[str] | None = None, seeds: int = 20, budget: int = 100,
            mode: str = "tabular", axis: str = "evaluations", points: int = 100, **params: Any) -> pd.DataFrame:
    """Several algorithms x seeds -> anytime curves of the best GLUE found.

    ``axis="evaluations"``: one row per (algorithm, evaluation 1..budget).
    ``axis="seconds"``: best GLUE found by each simulated training time, on a grid of
    ``points`` times up to the longest run (a run that has not evaluated anything yet
    counts as NaN and is left out of that point's statistics).
    Columns: ``mean``, ``std``, ``q25``, ``q75`` over seeds, and ``n`` (runs counted).
    ``params`` maps an algorithm name to its keyword arguments.
    """
    if axis not in ("evaluations", "seconds"):
        raise ValueError(f"axis = {axis!r} is not allowed; allowed values: ['evaluations', 'seconds']")
    algs = algorithms or ["random", "regularized_evolution", "local_search"]
    stray = sorted(set(params) - set(algs))
    if stray:
        raise ValueError(f"{stray} are not among algorithms = {algs}; pass per-algorithm settings as <algorithm>={{...}}")
    runs = {alg: [run(alg, bench, budget=budget, seed=s, mode=mode, **(params.get(alg, {}))) for s in range(seeds)]
            for alg in algs}
    if axis == "evaluations":
        grid = np.arange(1, budget + 1)
        x_of = lambda t: np.array([e["evaluation"] for e in t.evaluations])  # noqa: E731
    else:
        tmax = max(t.evaluations[-1]["seconds"] for ts in runs.values() for t in ts if t.evaluations)
        grid = np.linspace(tmax / points, tmax, points)
        x_of = lambda t: np.array([e["seconds"] for e in t.evaluations])  # noqa: E731
    rows = []
    for alg, ts in runs.items():
        c = np.full((len(ts), len(grid)), np.nan)
        for i, t in enumerate(ts):
            x, b = x_of(t), np.array([e["best_glue"] for e in t.evaluations])
            k = np.searchsorted(x, grid, side="right") - 1  # last evaluation at or before each grid point
            c[i, k >= 0] = b[k[k >= 0]]
        for j, g in enumerate(grid):
            col = c[:, j][np.isfinite(c[:, j])]
            stats = (col.mean(), col.std(), np.quantile(col, 0.25), np.quantile(col, 0.75)) if len(col) else (np.nan,) * 4
            rows.append({"algorithm": alg, axis[:-1] if axis == "evaluations" else "seconds": g, "mean": stats[0],
                         "std": stats[1], "q25": stats[2], "q75": stats[3], "n": len(col), "seeds": seeds})
    return pd.DataFrame(rows)


def plot_comparison(curves: pd.DataFrame, path: str) -> str:
    """Anytime curves (mean and inter-quartile band) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = "evaluation" if "evaluation" in curves else "seconds"
    fig, ax = plt.subplots(figsize=(5.5, 4), dpi=120)
    for alg, g in curves.groupby("algorithm", sort=False):
        xs = g[x] / 3600 if x == "seconds" else g[x]
        ax.plot(xs, g["mean"], label=alg)
        ax.fill_between(xs, g.q25, g.q75, alpha=0.2)
    ax.set_xlabel("evaluations" if x == "evaluation" else "simulated training time (hours)")
    ax.set_ylabel("best GLUE found")
    ax.set_title(f"{int(curves.seeds.iloc[0])} seeds, mean and IQR", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
