"""The configuration spaces of the CARP-S tasks (:mod:`.carps`), and the benchmark they read.

Why apart from the objective functions: a task's space is what both sides of a CARP-S
run instantiate - the optimiser through the task config's ``input_space`` and the
objective function for its own sampling - and the multi-fidelity tasks
(:mod:`.carps_fidelity`) share them. :class:`TaskSpace` names the kinds; each has one
builder in ``_SPACES``, so a new kind of task space is one member and one entry.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
from ConfigSpace import Categorical, Configuration, ConfigurationSpace

from ..checks import check_choice, check_seed
from ..errors import InvalidArgumentError
from ..spaces.flexibert import FLEXIBERT_SPACE, Arch
from ..vocabulary import DATASETS, FINAL_TEST_LOSS, BenchmarkLike, NLPDataset

#: the hyperparameter of the evaluated-set spaces
ARCH_HP = "arch"
RECIPE_HP = "recipe_id"


class TaskSpace(StrEnum):
    """What a task's configuration space ranges over (its ``space`` in :data:`~.carps.TASKS`)."""

    #: FlexiBERT's conditional space (10.6M archs), answered by the nearest evaluated arch
    STRUCTURED = "structured"
    #: FlexiBERT-500's distinct archs, one categorical
    EVALUATED = "evaluated"
    #: the archs with a learning curve, one categorical
    CURVES = "curves"
    #: NAS-Bench-NLP's recipes with every epoch logged, one categorical
    LOGGED = "logged"
    #: NAS-Bench-NLP's recipes with a finite final loss, one categorical
    RECIPES = "recipes"


#: FlexiBERTTabular's ``space``: the evaluated archs as one categorical, or the structured
#: conditional space answered by the nearest evaluated arch
TABULAR_SPACES: tuple[str, ...] = (TaskSpace.EVALUATED.value, TaskSpace.STRUCTURED.value)

_BENCHES: dict[str | None, BenchmarkLike] = {}


def load_bench(data: str | None = None) -> BenchmarkLike:
    """``Benchmark.load(data)``, cached per ``data`` within the process: a hydra multirun
    instantiates each task's space and objective function in one process, and they must
    read one table (and fit or load one surrogate) rather than one each."""
    from .. import Benchmark

    if data is not None and not isinstance(data, (str, Path)):
        raise InvalidArgumentError(f"data = {data!r} is not allowed; allowed: None (the default data resolution) or "
                                   "a data folder path")
    key = None if data is None else str(data)
    if key not in _BENCHES:
        _BENCHES[key] = Benchmark.load(key)
    return _BENCHES[key]


def _seed(seed: Any) -> int:
    return int(check_seed("seed", seed, none=False))  # type: ignore[arg-type]


def _config_value(config: Configuration | Mapping[str, Any], name: str) -> Any:
    d = dict(config)
    if name not in d:
        raise InvalidArgumentError(f"configuration has no hyperparameter {name!r}; it has {sorted(d)}")
    return d[name]


def evaluated_archs(bench: BenchmarkLike) -> list[Arch]:
    """FlexiBERT-500's distinct archs in id order (491: nine archs were trained twice;
    ``bench.query`` answers an arch with its first run)."""
    return list(dict.fromkeys(bench.archs))


def nlp_recipe_ids(bench: BenchmarkLike, dataset: str = "ptb") -> list[int]:
    """The recipe ids of ``dataset``'s runs with a finite final test loss, sorted (the
    space of :func:`~.optuna.run_optuna_nlp` and of the NAS-Bench-NLP syne-tune blackbox)."""
    check_choice("dataset", dataset, DATASETS)
    df = bench.nlp.ptb if dataset == NLPDataset.PTB else bench.nlp.wikitext2
    ok = df[np.isfinite(df[FINAL_TEST_LOSS[dataset]].astype(float))]
    return sorted({int(r) for r in ok["recipe_id"]})


# -- the spaces (also what the task configs' input_space instantiates) --------------------------
def evaluated_space(bench: BenchmarkLike, seed: int = 0) -> ConfigurationSpace:
    """One categorical ``arch`` over FlexiBERT-500's distinct archs (canonical strings, id order)."""
    return ConfigurationSpace(name="flexibert500_archs", seed=_seed(seed),
                              space=[Categorical(ARCH_HP, [str(a) for a in evaluated_archs(bench)])])


def recipe_space(bench: BenchmarkLike, dataset: str = "ptb", seed: int = 0) -> ConfigurationSpace:
    """One categorical ``recipe_id`` over NAS-Bench-NLP ``dataset``'s runs with a finite test loss."""
    return ConfigurationSpace(name=f"nlp_{dataset}_recipes", seed=_seed(seed),
                              space=[Categorical(RECIPE_HP, nlp_recipe_ids(bench, dataset))])


def curve_archs(bench: BenchmarkLike) -> list[Arch]:
    """The 15 archs with a learning curve (the train ablation), in id order."""
    return [bench.query(i, charge=False).arch for i in bench.curve_ids()]


def curve_space(bench: BenchmarkLike, seed: int = 0) -> ConfigurationSpace:
    """One categorical ``arch`` over the learning-curve archs (canonical strings, id order)."""
    return ConfigurationSpace(name="flexibert_curve_archs", seed=_seed(seed),
                              space=[Categorical(ARCH_HP, [str(a) for a in curve_archs(bench)])])


def logs_frame(bench: BenchmarkLike, dataset: str) -> Any:
    """The training logs of ``dataset`` (WikiText-2's, or PTB's when the data holds them)."""
    check_choice("dataset", dataset, DATASETS)
    return bench.nlp.wikitext2 if dataset == NLPDataset.WIKITEXT2 else bench.nlp.ptb_logs


def finished_runs(bench: BenchmarkLike, dataset: str) -> Any:
    """``dataset``'s logged runs that finished every epoch without diverging: the runs a
    logged task's recipes are drawn from, and the runs it reads losses from (one rule, so
    the space never lists a recipe whose losses come from a diverged run)."""
    df = logs_frame(bench, dataset)
    return df[~df["diverged"].astype(bool) & (df["epochs_completed"] == df["hp_epochs"])]


def logged_recipe_ids(bench: BenchmarkLike, dataset: str) -> list[int]:
    """The recipe ids of ``dataset``'s logged runs that finished every epoch, sorted."""
    return sorted({int(r) for r in finished_runs(bench, dataset)["recipe_id"]})


def logged_space(bench: BenchmarkLike, dataset: str, seed: int = 0) -> ConfigurationSpace:
    """One categorical ``recipe_id`` over the runs with every epoch logged (:func:`logged_recipe_ids`)."""
    return ConfigurationSpace(name=f"nlp_{dataset}_logged", seed=_seed(seed),
                              space=[Categorical(RECIPE_HP, logged_recipe_ids(bench, dataset))])


#: a task's ``space`` -> its ConfigurationSpace from (data folder, dataset, seed): the
#: structured space needs no data, the others read the benchmark (:func:`load_bench`)
_SPACES: dict[str, Callable[[str | None, Any, int], ConfigurationSpace]] = {
    TaskSpace.STRUCTURED: lambda data, dataset, seed: FLEXIBERT_SPACE.configspace(_seed(seed)),
    TaskSpace.EVALUATED: lambda data, dataset, seed: evaluated_space(load_bench(data), seed),
    TaskSpace.CURVES: lambda data, dataset, seed: curve_space(load_bench(data), seed),
    TaskSpace.LOGGED: lambda data, dataset, seed: logged_space(load_bench(data), dataset, seed),
    TaskSpace.RECIPES: lambda data, dataset, seed: recipe_space(load_bench(data), dataset, seed),
}


def _shape_space(kind: str) -> ConfigurationSpace:
    """A space of the evaluated-set kind's shape (one categorical) for the metadata, which
    depends on the types only - so writing the configs needs no data."""
    name = ARCH_HP if kind in (TaskSpace.EVALUATED, TaskSpace.CURVES) else RECIPE_HP
    return ConfigurationSpace(space=[Categorical(name, ["a", "b"])])
