"""Running search algorithms: one run (:func:`run`), many runs as anytime curves
(:func:`compare`), and their plot.

Budgets are numbers of evaluations (``budget``) and/or simulated training seconds
(``time_budget``), both held by one :class:`~nasbench_bert.benchmark.Budget`: a run
stops before the evaluation that would exceed either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..benchmark.budget import Budget
from ..checks import check_bench, check_bool, check_choice, check_seed
from ..errors import InvalidArgumentError
from ..spaces.flexibert import Arch
from .algorithms import ALGORITHMS, parameters
from .oracle import ORACLES, EvaluationRecord, Oracle, make_oracle
from ..progress import Progress
from ..vocabulary import BenchmarkLike


@dataclass
class Trajectory:
    """One run: every evaluation with the simulated seconds so far and the best so far."""

    algorithm: str
    seed: int
    oracle: str
    evaluations: list[EvaluationRecord] = field(default_factory=list)
    proxy_seconds: float = 0.0

    @property
    def mode(self) -> str:
        """The oracle's name (the 0.1 name of the field)."""
        return self.oracle

    @property
    def best_glue(self) -> float:
        return max((e["glue"] for e in self.evaluations), default=math.nan)

    @property
    def best_arch(self) -> Arch | None:
        return max(self.evaluations, key=lambda e: e["glue"])["arch"] if self.evaluations else None

    def to_pandas(self) -> pd.DataFrame:
        df = pd.DataFrame([dict(e) for e in self.evaluations])
        if not df.empty:
            df["arch"] = df["arch"].map(str)
        return df

    def __len__(self) -> int:
        return len(self.evaluations)


def _positive_int(name: str, v: Any) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a positive integer")


def check_budget(orc: Oracle, budget: int | None, time_budget: float | None) -> None:
    """Refuse a budget above what ``orc`` can answer, before the search starts.

    ``budget`` counts evaluations: more than the oracle's distinct archs
    (:attr:`~.oracle.Oracle.max_evaluations`: the table's archs, the space's 10,621,440
    for the surrogate) could only re-ask archs already answered, and a budget such as
    10**20 would run with an ETA of trillions of hours. A ``time_budget`` alone (no
    evaluation count) is bounded by the simulated seconds of evaluating every arch once
    (:attr:`~.oracle.Oracle.max_seconds`); with ``budget`` given, that count bounds the run.
    """
    bound = orc.max_evaluations
    if budget is not None and bound is not None and budget > bound:
        raise InvalidArgumentError(f"budget = {budget!r} is not allowed: a budget counts evaluations, and "
                                   f"{orc.archs_described()}; allowed: 1 ... {bound}")
    seconds = orc.max_seconds
    if budget is None and time_budget is not None and seconds is not None and time_budget > seconds:
        raise InvalidArgumentError(f"time_budget = {time_budget!r} is not allowed without budget: "
                                   f"{orc.archs_described()}, and evaluating each once costs {seconds:,.0f} simulated "
                                   "seconds; allowed: "
                                   f"0 < time_budget <= {seconds:.0f}, or give budget (evaluations, at most {bound})")


def run(algorithm: str, bench: BenchmarkLike, *, budget: int | None = 100, time_budget: float | None = None, seed: int = 0,
        oracle: "str | Oracle | None" = None, mode: str | None = None, progress: bool = False, **params: Any) -> Trajectory:
    """Run ``algorithm`` (a name in :data:`~.algorithms.ALGORITHMS`) on ``bench``;
    reproducible from ``seed``.

    ``oracle``: ``"tabular"`` (default), ``"surrogate"``, ``"regenerated"`` or an
    :class:`~.oracle.Oracle` (``mode=`` is the 0.1 name of this argument). ``params`` go
    to the algorithm (e.g. ``population_size``, ``sample_size`` for regularised
    evolution; ``proxy``, ``n0``, ``candidates``, ``top``, ``mutation_prob`` for ETAS);
    an unknown one is an error, never silently ignored. ``progress``: report evaluations
    (and ETAS's proxy sweeps) as they happen, on stderr (:mod:`nasbench_bert.progress`).
    """
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise InvalidArgumentError(f"algorithm = {algorithm!r} is not allowed; allowed values: {list(ALGORITHMS)}")
    bench = check_bench(bench)
    if oracle is not None and mode is not None:
        raise InvalidArgumentError("give oracle= or its old name mode=, not both")
    kind = oracle if oracle is not None else (mode if mode is not None else "tabular")
    if not isinstance(kind, Oracle) and kind not in ORACLES:
        field = "mode" if mode is not None else "oracle"
        raise InvalidArgumentError(f"{field} = {kind!r} is not allowed; allowed values: {list(ORACLES)} or an Oracle")
    if budget is None and time_budget is None:
        raise InvalidArgumentError("budget and time_budget are both None; give at least one (evaluations or simulated seconds)")
    if budget is not None:
        _positive_int("budget", budget)
    if time_budget is not None and (not isinstance(time_budget, (int, float)) or isinstance(time_budget, bool)
                                    or not math.isfinite(time_budget) or time_budget <= 0):
        raise InvalidArgumentError(f"time_budget = {time_budget!r} is not allowed; allowed: positive simulated seconds")
    seed = int(check_seed("seed", seed, none=False))  # type: ignore[arg-type]
    known = parameters(algorithm)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise InvalidArgumentError(f"parameter(s) {unknown} not allowed for algorithm {algorithm!r}; allowed: {known}")
    orc = make_oracle(kind, bench, Budget(limit=time_budget, max_queries=budget))
    check_budget(orc, budget, time_budget)
    orc.evaluations, orc.proxy_seconds = [], 0.0
    with Progress(f"{algorithm} ({orc.name}): evaluations", budget or 0, enabled=check_bool("progress", progress)) as bar:
        orc.progress = bar if progress else None
        try:
            ALGORITHMS[algorithm](orc, np.random.default_rng(seed), **params)
        finally:
            orc.progress = None
    return Trajectory(algorithm, seed, orc.name, orc.evaluations, orc.proxy_seconds)


def compare(bench: BenchmarkLike, algorithms: list[str] | None = None, seeds: int = 20, budget: int = 100,
            oracle: str | None = None, mode: str | None = None, axis: str = "evaluations", points: int = 100,
            progress: bool = False, **params: Any) -> pd.DataFrame:
    """Several algorithms x seeds -> anytime curves of the best GLUE found.

    ``axis="evaluations"``: one row per (algorithm, evaluation 1..budget).
    ``axis="seconds"``: best GLUE found by each simulated training time, on a grid of
    ``points`` times up to the longest run (a run that has not evaluated anything yet
    counts as NaN and is left out of that point's statistics).
    Columns: ``mean``, ``std``, ``q25``, ``q75`` over seeds, and ``n`` (runs counted).
    ``params`` maps an algorithm name to its keyword arguments. ``progress``: report
    finished runs as they happen, on stderr.
    """
    bench = check_bench(bench)
    check_choice("axis", axis, tuple(_AXES))
    _positive_int("seeds", seeds)
    _positive_int("points", points)
    algs = algorithms or ["random", "regularized_evolution", "local_search"]
    stray = sorted(set(params) - set(algs))
    if stray:
        raise InvalidArgumentError(f"{stray} are not among algorithms = {algs}; pass per-algorithm settings as <algorithm>={{...}}")
    with Progress("search compare: runs", len(algs) * seeds, enabled=check_bool("progress", progress)) as bar:
        runs: dict[str, list[Trajectory]] = {}
        for alg in algs:
            runs[alg] = []
            for s in range(seeds):
                runs[alg].append(run(alg, bench, budget=budget, seed=s, oracle=oracle, mode=mode, **(params.get(alg, {}))))
                bar.advance()
    column, grid_of = _AXES[axis]
    grid = grid_of(runs, budget, points)
    x_of = lambda t: np.array([e[column] for e in t.evaluations])  # noqa: E731
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
            rows.append({"algorithm": alg, column: g, "mean": stats[0],
                         "std": stats[1], "q25": stats[2], "q75": stats[3], "n": len(col), "seeds": seeds})
    return pd.DataFrame(rows)


def _evaluation_grid(runs: dict[str, list[Trajectory]], budget: int, points: int) -> np.ndarray:
    return np.arange(1, budget + 1)


def _seconds_grid(runs: dict[str, list[Trajectory]], budget: int, points: int) -> np.ndarray:
    tmax = max(t.evaluations[-1]["seconds"] for ts in runs.values() for t in ts if t.evaluations)
    return np.linspace(tmax / points, tmax, points)


#: ``axis`` -> (the evaluations' field it reads, which is also the curves' column; its grid)
_AXES: dict[str, tuple[str, Any]] = {"evaluations": ("evaluation", _evaluation_grid), "seconds": ("seconds", _seconds_grid)}
#: the curves' x column -> (its divisor on the plot, the axis label)
_PLOT_X: dict[str, tuple[float, str]] = {"evaluation": (1, "evaluations"), "seconds": (3600, "simulated training time (hours)")}


def plot_comparison(curves: pd.DataFrame, path: str) -> str:
    """Anytime curves (mean and inter-quartile band) as a PNG (written atomically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..atomic import atomic_path

    x = "evaluation" if "evaluation" in curves else "seconds"
    scale, label = _PLOT_X[x]
    fig, ax = plt.subplots(figsize=(5.5, 4), dpi=120)
    for alg, g in curves.groupby("algorithm", sort=False):
        xs = g[x] / scale
        ax.plot(xs, g["mean"], label=alg)
        ax.fill_between(xs, g.q25, g.q75, alpha=0.2)
    ax.set_xlabel(label)
    ax.set_ylabel("best GLUE found")
    ax.set_title(f"{int(curves.seeds.iloc[0])} seeds, mean and IQR", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path
