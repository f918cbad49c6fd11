"""CARP-S objective functions and task configs (the ``[carps]`` extra).

CARP-S (AutoML.org's "Comprehensive Automated Research Performance Studies",
``pip install carps``) benchmarks N optimisers on M tasks: a task is a hydra YAML config
naming an :class:`~carps.objective_functions.objective_function.ObjectiveFunction`, its
input space (a ConfigSpace ``ConfigurationSpace``), its output space (the objectives,
all minimised), a trial budget and metadata. This module holds the objective functions;
the four task configs are shipped as package data in
``nasbench_bert/integrations/carps_configs/task/NASBenchBERT/`` (a hydra config root
CARP-S is pointed to with ``hydra.searchpath=[pkg://nasbench_bert.integrations.carps_configs]``)
and are written by :func:`write_task_configs` from :func:`task_config`, so the files and
the code cannot drift (a test compares them):

========================  =========================================================  =========================
task (config name)        objective function                                         cost(s)
========================  =========================================================  =========================
``flexibert500``          :class:`FlexiBERTTabular`, the 491 evaluated archs          -GLUE
``flexibert_surrogate``   :class:`FlexiBERTSurrogate`, all 10,621,440 archs, noisy    -GLUE (one simulated run)
``flexibert500_mo``       :class:`FlexiBERTTabular`, two objectives                   -GLUE, parameters
``nlp_ptb``               :class:`NLPTabular`, NAS-Bench-NLP PTB's 8,794 runs         test loss
``nlp_wikitext2``         :class:`~.carps_fidelity.NLPEpochs`, WikiText-2, epoch      validation loss
                          1-50 (multi-fidelity)
``nlp_ptb_epochs``        :class:`~.carps_fidelity.NLPEpochs`, PTB's logs, epoch 1-50  test loss
                          (multi-fidelity; needs ``build-data --ptb-logs``)
``flexibert_curves``      :class:`~.carps_fidelity.FlexiBERTCurves`, the 15 learning  -GLUE
                          curves, 150,000 ... 1,000,000 steps (multi-fidelity)
========================  =========================================================  =========================

The multi-fidelity tasks (:mod:`.carps_fidelity`) carry every fidelity the tables hold:
a trial's ``budget`` is answered at the last table fidelity it reaches.

**Costs.** CARP-S minimises; each cost is the objective in the direction
``bench.objectives`` gives (:func:`~.configspace.as_cost`: GLUE, which is maximised,
becomes -GLUE; parameters and test loss are minimised as they are). Every trial's
``TrialValue.additional_info`` carries the raw values and the arch (or recipe) that
answered, so a CARP-S log can be checked against ``bench.query``, and
``nasbench_bert_version``: the package version that answered (:meth:`_Base.__init_subclass__`).

**Why a categorical space for the tabular tasks.** FlexiBERT-500 holds 491 distinct
archs of a 10.6M-arch space. The structured space (30 conditional hyperparameters, as
in :mod:`.configspace`) would make almost every proposal an arch that was never trained,
answered by a nearest neighbour - an optimiser would be scored on the neighbour rule,
not on the archs it chose. The tabular tasks therefore search exactly the evaluated set:
one categorical hyperparameter ``arch`` whose choices are the archs' canonical strings
(``"256/SA-WMA-h4-1024x3/..."``; ``Arch.coerce`` reads them), as NAS-Bench-NLP's cells
have one categorical ``recipe_id`` (its cells have no fixed-length encoding). Every value
is then exactly ``bench.query(arch)``. The surrogate task answers for every arch and uses
the structured space. ``FlexiBERTTabular(space="structured")`` offers the structured
space over the table too, answered by the nearest evaluated arch (the package's
``TabularOracle`` rule), for optimisers that need the structure.

**Time.** FlexiBERT trials carry the arch's training time (the table's ``time_to_train``
in seconds; the surrogate charges the table's mean, as ``SurrogateOracle`` does) as
CARP-S's ``virtual_time``. NAS-Bench-NLP PTB records no time.

The spaces themselves, and the benchmark they read, are :mod:`.carps_spaces`; this module
holds the objective functions and the task table.

This module imports carps; nothing below :mod:`nasbench_bert.integrations` imports it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from carps.objective_functions.objective_function import ObjectiveFunction
from carps.utils.task import get_search_space_info
from carps.utils.trials import TrialInfo, TrialValue
from ConfigSpace import Configuration, ConfigurationSpace

from ..checks import check_choice
from ..errors import InvalidArgumentError
from ..spaces.flexibert import FLEXIBERT_SPACE, Arch
from ..vocabulary import DATASETS
from .carps_spaces import (
    _SPACES, ARCH_HP, RECIPE_HP, TABULAR_SPACES, TaskSpace, _config_value, _seed, _shape_space, curve_archs, curve_space,
    evaluated_archs, evaluated_space, load_bench, logged_recipe_ids, logged_space, logs_frame, nlp_recipe_ids,
    recipe_space,
)
from .configspace import as_cost, configuration_to_arch

__all__ = [
    "BENCHMARK_ID", "CONFIG_ROOT", "DEFAULT_N_TRIALS", "SEARCHPATH", "TASKS", "task_space", "task_config",
    "write_task_configs", "FlexiBERTTabular", "FlexiBERTSurrogate", "NLPTabular",
    # the spaces (.carps_spaces), importable from here as before
    "ARCH_HP", "RECIPE_HP", "TABULAR_SPACES", "TaskSpace", "curve_archs", "curve_space", "evaluated_archs",
    "evaluated_space", "load_bench", "logged_recipe_ids", "logged_space", "logs_frame", "nlp_recipe_ids", "recipe_space",
]

#: CARP-S's ``benchmark_id`` of every task here (the folder of the task configs)
BENCHMARK_ID = "NASBenchBERT"
#: the default trial budget of the shipped tasks (override: task.optimization_resources.n_trials=N)
DEFAULT_N_TRIALS = 100
#: the folder (a hydra config root) holding the shipped task configs
CONFIG_ROOT = Path(__file__).resolve().parent / "carps_configs"
#: hydra's search-path entry a CARP-S user adds to find the task configs
SEARCHPATH = "pkg://nasbench_bert.integrations.carps_configs"


def task_space(task: str, seed: int = 0, data: str | None = None) -> ConfigurationSpace:
    """The ConfigurationSpace of ``task`` (one of :data:`TASKS`), seeded with ``seed``.
    The task configs' ``input_space.configuration_space`` calls this (the space SMAC
    reads), and the objective functions build theirs with it (the space random search
    samples), so the optimiser and the objective see one space. ``data``: as
    :func:`load_bench` (the structured space needs none)."""
    check_choice("task", task, tuple(TASKS))
    t = TASKS[task]
    return _SPACES[t["space"]](data, t.get("dataset"), seed)


def _stamping(evaluate: Any) -> Any:
    """``evaluate`` (a ``_evaluate`` method) whose ``TrialValue`` gains the package version."""
    from ..version import __version__

    @functools.wraps(evaluate)
    def stamped(self: Any, trial_info: TrialInfo) -> TrialValue:
        value = evaluate(self, trial_info)
        return dataclasses.replace(value, additional_info={**value.additional_info, "nasbench_bert_version": __version__})

    stamped._stamps_version = True  # type: ignore[attr-defined]
    return stamped


class _Base(ObjectiveFunction):
    """The parts every objective function here shares: the seeded space, the objectives'
    metadata (``bench.objectives``), the cost in each objective's direction, and the
    version stamp of every answer."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the ``_evaluate`` a subclass defines so that every ``TrialValue`` it returns
        carries ``additional_info["nasbench_bert_version"]``. Why here: CARP-S's
        ``evaluate`` hands what ``_evaluate`` returns straight to its loggers, so this is
        the one place where a run's logs learn which nasbench-bert answered (a value can
        change between versions: a rebuilt table, another surrogate), for every task,
        including those defined later."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("_evaluate")
        if own is not None and not getattr(own, "_stamps_version", False):
            cls._evaluate = _stamping(own)  # type: ignore[method-assign]

    def __init__(self, objectives: Sequence[str], meta: Mapping[str, Any], space: ConfigurationSpace,
                 loggers: list[Any] | None) -> None:
        super().__init__(loggers)
        names = [str(o) for o in objectives]
        if not names or len(set(names)) != len(names):
            raise InvalidArgumentError(f"objectives = {names!r} is not allowed; allowed: one or more distinct names of "
                                       f"{sorted(meta)}")
        for n in names:
            check_choice("objectives", n, tuple(meta))
        self.objectives: tuple[str, ...] = tuple(names)
        self.meta = {n: meta[n] for n in names}
        self._space = space

    @property
    def configspace(self) -> ConfigurationSpace:
        return self._space

    @property
    def f_min(self) -> float | None:
        """The best cost the table holds (single-objective tabular tasks); None otherwise."""
        return None

    def _cost(self, values: Mapping[str, float]) -> float | list[float]:
        costs = [as_cost(values[n], self.meta[n]) for n in self.objectives]
        return costs[0] if len(costs) == 1 else costs


class _TabularBase(_Base):
    """A task whose answers are the table's: its best value is the table's best, so CARP-S
    can report regret (a surrogate task has no such exact minimum)."""

    @property
    def f_min(self) -> float | None:
        if len(self.objectives) != 1:
            return None
        o = self.meta[self.objectives[0]]
        return as_cost(o.best, o)


class FlexiBERTTabular(_TabularBase):
    """FlexiBERT-500 as a CARP-S objective function: each trial is ``bench.query(arch)``.

    ``objectives``: names of ``bench.objectives`` (``"glue"``, a GLUE task,
    ``"time_to_train"``, ``"num_params_as_trained"``); one makes a single-objective task,
    several a multi-objective one (costs in that order). ``space``: ``"evaluated"`` (one
    categorical over the 491 trained archs: every value is exactly the table's) or
    ``"structured"`` (the conditional FlexiBERT space; a configuration that was never
    trained is answered by its nearest evaluated arch, ties broken by a generator seeded
    with ``seed``, and ``additional_info["arch"]`` names the arch that answered).
    ``data``: the data folder (``None``: the default resolution of ``Benchmark.load``).
    """

    def __init__(self, objectives: Sequence[str] = ("glue",), space: str = "evaluated", data: str | None = None,
                 seed: int = 0, loggers: list[Any] | None = None) -> None:
        check_choice("space", space, TABULAR_SPACES)
        self.bench = load_bench(data)
        self.space_kind = space
        cs = evaluated_space(self.bench, seed) if space == TaskSpace.EVALUATED else FLEXIBERT_SPACE.configspace(_seed(seed))
        super().__init__(objectives, self.bench.objectives, cs, loggers)
        self._rng = np.random.default_rng(_seed(seed))
        self._evaluated = frozenset(evaluated_archs(self.bench))
        self._oracle: Any = None
        if space == TaskSpace.STRUCTURED:
            from ..search import make_oracle

            self._oracle = make_oracle("tabular", self.bench)  # its nearest-evaluated-arch rule

    def arch_of(self, config: Configuration | Mapping[str, Any]) -> Arch:
        """The evaluated arch that answers ``config``."""
        if self.space_kind == TaskSpace.EVALUATED:
            return Arch.coerce(_config_value(config, ARCH_HP))
        arch = configuration_to_arch(config)
        return arch if arch in self._evaluated else self._oracle.nearest(arch, self._rng)

    def _evaluate(self, trial_info: TrialInfo) -> TrialValue:
        start = time.time()
        arch = self.arch_of(trial_info.config)
        r = self.bench.query(arch, charge=False)
        values = {n: _result_value(r, n) for n in self.objectives}
        end = time.time()
        return TrialValue(cost=self._cost(values), time=end - start, virtual_time=float(r.time_to_train),
                          starttime=start, endtime=end, additional_info={"arch": str(arch), "id": int(r.id), **values})


def _result_value(r: Any, name: str) -> float:
    """Objective ``name`` of a FlexiBERT result: an attribute (glue, time_to_train,
    num_params_as_trained) or a GLUE task score."""
    v = r.scores[name] if name in r.scores else getattr(r, name)
    return float(v)


class FlexiBERTSurrogate(_Base):
    """All 10,621,440 FlexiBERT archs in the structured space, answered by the pinned
    surrogate (``bench.surrogate()``).

    ``noisy=True`` (the shipped task): the noisy simulated benchmark of
    ``SurrogateOracle(noisy=True, seed=seed)`` - each arch's expected GLUE is one seeded
    draw from the surrogate's predictive distribution of the mean, and every evaluation
    adds a run-to-run deviation for the arch's depth (the k-th evaluation of an arch uses
    the generator ``(seed, arch index, k)``; :mod:`nasbench_bert.surrogate.noise`), so a
    re-evaluation is a re-run and a run is reproducible from ``seed``. ``noisy=False``:
    the predictive mean. Objective: GLUE only (the surrogate predicts GLUE and its tasks).
    """

    def __init__(self, noisy: bool = True, family: str | None = None, data: str | None = None, seed: int = 0,
                 loggers: list[Any] | None = None) -> None:
        from ..search.oracle import SurrogateOracle

        self.bench = load_bench(data)
        super().__init__(("glue",), self.bench.objectives, task_space("flexibert_surrogate", seed, data), loggers)
        self.oracle = SurrogateOracle(self.bench, noisy=noisy, seed=_seed(seed), family=family)

    def _evaluate(self, trial_info: TrialInfo) -> TrialValue:
        start = time.time()
        arch = configuration_to_arch(trial_info.config)
        expected = self.oracle.expected_glue(arch)
        glue = self.oracle.glue(arch)
        end = time.time()
        cost = self._cost({"glue": glue}) if math.isfinite(glue) else math.inf
        return TrialValue(cost=cost, time=end - start, virtual_time=float(self.oracle.cost(arch)), starttime=start,
                          endtime=end, additional_info={"arch": str(arch), "glue": glue, "expected_glue": expected})


class NLPTabular(_TabularBase):
    """NAS-Bench-NLP on ``dataset`` (``"ptb"``: the shipped task; ``"wikitext2"``) as a
    CARP-S objective function: one categorical ``recipe_id`` over the runs with a finite
    final test loss; each trial is ``bench.nlp.query(recipe_id, dataset)``.
    ``objectives``: names of ``bench.nlp.objectives[dataset]`` (default: the test loss)."""

    def __init__(self, dataset: str = "ptb", objectives: Sequence[str] = ("test_loss",), data: str | None = None,
                 seed: int = 0, loggers: list[Any] | None = None) -> None:
        check_choice("dataset", dataset, DATASETS)
        self.bench = load_bench(data)
        self.dataset = dataset
        super().__init__(objectives, self.bench.nlp.objectives[dataset], recipe_space(self.bench, dataset, seed),
                         loggers)

    def _evaluate(self, trial_info: TrialInfo) -> TrialValue:
        start = time.time()
        rid = int(_config_value(trial_info.config, RECIPE_HP))
        r = self.bench.nlp.query(rid, self.dataset, charge=False)
        values = {n: float(getattr(r, n)) for n in self.objectives}
        end = time.time()
        return TrialValue(cost=self._cost(values), time=end - start, starttime=start, endtime=end,
                          additional_info={RECIPE_HP: rid, **values})


# -- the task configs -----------------------------------------------------------------------------
_OF = "nasbench_bert.integrations.carps"
#: task -> what its config holds: the objective function and its arguments, the space kind,
#: CARP-S's metadata of how the function is represented
TASKS: dict[str, dict[str, Any]] = {
    "flexibert500": {"target": f"{_OF}.FlexiBERTTabular", "kwargs": {"objectives": ["glue"], "space": "evaluated"},
                     "space": "evaluated", "objectives": ["glue"], "approximation": "tabular", "deterministic": True,
                     "virtual_time": True},
    "flexibert_surrogate": {"target": f"{_OF}.FlexiBERTSurrogate", "kwargs": {"noisy": True, "family": None},
                            "space": "structured", "objectives": ["glue"], "approximation": "surrogate",
                            "deterministic": False, "virtual_time": True},
    "flexibert500_mo": {"target": f"{_OF}.FlexiBERTTabular",
                        "kwargs": {"objectives": ["glue", "num_params_as_trained"], "space": "evaluated"},
                        "space": "evaluated", "objectives": ["glue", "num_params_as_trained"],
                        "approximation": "tabular", "deterministic": True, "virtual_time": True},
    "nlp_ptb": {"target": f"{_OF}.NLPTabular", "kwargs": {"dataset": "ptb", "objectives": ["test_loss"]},
                "space": "recipes", "dataset": "ptb", "objectives": ["test_loss"], "approximation": "tabular",
                "deterministic": True, "virtual_time": False},
    "nlp_wikitext2": {"target": f"{_OF}_fidelity.NLPEpochs", "kwargs": {"dataset": "wikitext2", "objective": "val_loss"},
                      "space": "logged", "dataset": "wikitext2", "objectives": ["val_loss"], "approximation": "tabular",
                      "deterministic": True, "virtual_time": True, "fidelity": ("epoch", 1, 50),
                      # 50 full-budget trials: Hyperband's low-budget brackets try ~5 recipes per one, and SMAC
                      # never repeats a configuration; at 100 it runs out of WikiText-2's 340 recipes
                      "n_trials": 50},
    "nlp_ptb_epochs": {"target": f"{_OF}_fidelity.NLPEpochs", "kwargs": {"dataset": "ptb", "objective": "test_loss"},
                       "space": "logged", "dataset": "ptb", "objectives": ["test_loss"], "approximation": "tabular",
                       "deterministic": True, "virtual_time": True, "fidelity": ("epoch", 1, 50)},
    "flexibert_curves": {"target": f"{_OF}_fidelity.FlexiBERTCurves", "kwargs": {}, "space": "curves",
                         "objectives": ["glue"], "approximation": "tabular", "deterministic": True, "virtual_time": True,
                         "fidelity": ("steps", 150_000, 1_000_000)},
}


def task_config(task: str, *, n_trials: int = DEFAULT_N_TRIALS) -> dict[str, Any]:
    """The hydra config of ``task`` in CARP-S's task format (the layout of its
    ``configs/task/*/*.yaml``: ``benchmark_id``, ``task_id`` and a ``task`` node that
    instantiates ``carps.utils.task.Task``), as a dict; :func:`write_task_configs`
    writes it with a ``# @package _global_`` header. The configuration space is built by
    :func:`task_space` rather than serialised (8,794 recipe ids, 491 arch strings), and
    the search-space metadata is CARP-S's own ``get_search_space_info`` of that space."""
    check_choice("task", task, tuple(TASKS))
    if isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 1:
        raise InvalidArgumentError(f"n_trials = {n_trials!r} is not allowed; allowed: a positive integer")
    t = TASKS[task]
    info = get_search_space_info(task_space(task, 0) if t["space"] == TaskSpace.STRUCTURED else _shape_space(t["space"]))
    return {
        "benchmark_id": BENCHMARK_ID,
        "task_id": "${task.name}",
        "task": {
            "_target_": "carps.utils.task.Task",
            "name": f"nasbench_bert/{task}",
            "seed": "${seed}",
            "objective_function": {"_target_": t["target"], **t["kwargs"], "data": None, "seed": "${seed}"},
            "input_space": {
                "_target_": "carps.utils.task.InputSpace",
                "configuration_space": {"_target_": f"{_OF}.task_space", "task": task, "seed": "${seed}",
                                        "data": "${task.objective_function.data}"},
                "fidelity_space": _fidelity_space(t.get("fidelity")),
                "instance_space": None,
            },
            "output_space": {"_target_": "carps.utils.task.OutputSpace", "n_objectives": len(t["objectives"]),
                             "objectives": list(t["objectives"])},
            "optimization_resources": {"_target_": "carps.utils.task.OptimizationResources",
                                       "n_trials": min(n_trials, t.get("n_trials", n_trials)),
                                       "time_budget": None, "n_workers": 1},
            "metadata": {"_target_": "carps.utils.task.TaskMetadata", "has_constraints": False, "domain": "NAS",
                         "objective_function_approximation": t["approximation"],
                         "has_virtual_time": t["virtual_time"], "deterministic": t["deterministic"], **info},
        },
    }


def _fidelity_space(fidelity: tuple[str, int, int] | None) -> dict[str, Any]:
    """CARP-S's ``FidelitySpace`` node: none, or (what, lowest budget, highest budget)."""
    kind, low, high = fidelity if fidelity is not None else (None, None, None)
    return {"_target_": "carps.utils.task.FidelitySpace", "is_multifidelity": fidelity is not None,
            "fidelity_type": kind, "min_fidelity": low, "max_fidelity": high}


def write_task_configs(directory: str | Path = CONFIG_ROOT) -> list[Path]:
    """Write every task's config to ``directory/task/NASBenchBERT/<task>.yaml`` (a hydra
    config root; the default is the shipped one) and return the paths."""
    from omegaconf import OmegaConf

    out = Path(directory) / "task" / BENCHMARK_ID
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for task in TASKS:
        p = out / f"{task}.yaml"
        p.write_text("# @package _global_\n# written by nasbench_bert.integrations.carps.write_task_configs\n"
                     + OmegaConf.to_yaml(OmegaConf.create(task_config(task)), resolve=False))
        paths.append(p)
    return paths


if __name__ == "__main__":
    for path in write_task_configs():
        print(path)
