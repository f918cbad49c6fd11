"""SMAC3 on the FlexiBERT ConfigSpace: a thin adapter, like :mod:`.optuna`.

SMAC takes the conditional ``ConfigurationSpace`` of :mod:`.configspace` as it is; the
target function is :func:`~.configspace.evaluate` behind one of the package's oracles,
so the budget, the evaluation log and the returned
:class:`~nasbench_bert.search.Trajectory` are those of ``search.run``. SMAC minimises,
so the cost is GLUE as a cost in the direction ``bench.objectives["glue"]`` gives
(:func:`~.configspace.as_cost`: ``-GLUE``). SMAC3 is not in the ``[hpo]`` extra (it pulls dask and
distributed); install ``smac`` yourself.
"""

from __future__ import annotations

import logging
import tempfile
from typing import Any

import numpy as np
from smac import HyperparameterOptimizationFacade, Scenario

from ..benchmark.budget import Budget
from ..checks import check_bench, check_seed
from ..errors import InvalidArgumentError
from .configspace import as_cost, configspace, evaluate
from ..vocabulary import BenchmarkLike


def run_smac(bench: BenchmarkLike, *, n_trials: int = 100, oracle: str = "tabular", seed: int = 0,
             output_directory: str | None = None) -> Any:
    """SMAC's hyperparameter-optimisation facade (random forest + EI) maximising GLUE
    for ``n_trials`` evaluations of ``oracle``; returns a
    :class:`~nasbench_bert.search.Trajectory` named ``"smac_hpo"`` with the incumbent
    configuration in its ``incumbent`` attribute. ``output_directory``: SMAC's run
    folder (default: a temporary one)."""
    from ..search import Trajectory, make_oracle

    if isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 1:
        raise InvalidArgumentError(f"n_trials = {n_trials!r} is not allowed; allowed: a positive integer")
    seed = int(check_seed("seed", seed, none=False))  # type: ignore[arg-type]
    bench = check_bench(bench)
    orc = make_oracle(oracle, bench, Budget(max_queries=n_trials))
    orc.evaluations = []
    rng = np.random.default_rng(seed)
    glue = bench.objectives["glue"]  # its direction (task metadata) makes the cost

    def target(config: Any, seed: int = 0) -> float:
        g = evaluate(config, orc, rng=rng)
        return float("inf") if g is None else as_cost(g, glue)  # None: the budget is spent (SMAC stops at n_trials first)

    out = output_directory or tempfile.mkdtemp(prefix="nasbench-bert-smac-")
    scenario = Scenario(configspace(seed), deterministic=True, n_trials=n_trials, seed=seed, output_directory=out)
    smac = HyperparameterOptimizationFacade(scenario, target, overwrite=True, logging_level=logging.ERROR)
    incumbent = smac.optimize()
    t = Trajectory("smac_hpo", seed, orc.name, orc.evaluations)
    t.incumbent = incumbent  # type: ignore[attr-defined]
    return t
