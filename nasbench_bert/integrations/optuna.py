"""A thin Optuna adapter: FlexiBERT archs suggested define-by-run, scored by an oracle.

Optuna has no ConfigSpace import; its define-by-run API expresses the same conditions
directly - a layer's fields are only suggested when the layer exists, an operation's
parameter only under its type - with the same names as :mod:`.configspace`, so a
trial's ``params`` *are* a valid configuration (:func:`suggest_arch`).
:func:`run_optuna` runs a study against the package's oracles and returns the same
:class:`~nasbench_bert.search.Trajectory` as ``search.run``, which is what makes a
comparison with the package's own algorithms a few lines (the table in
``docs/integrations.md`` comes from ``python -m studies.optuna_comparison``, in the
checkout's ``studies/``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import optuna

from ..benchmark.budget import Budget
from ..checks import check_bench, check_choice, check_nlp_bench, check_seed
from ..errors import InvalidArgumentError
from ..spaces.flexibert import HIDDEN_SIZES, LAYER_COUNTS, OPERATION_PARAMETERS, OPERATION_TYPES, Arch
from .configspace import LAYER_ORDINALS, configuration_to_arch, evaluate, param_name
from ..vocabulary import DATASETS, FINAL_TEST_LOSS, BenchmarkLike, NLPBenchmarkLike


def _check_study(n_trials: Any, seed: Any, sampler: Any) -> None:
    """The arguments every study here takes, checked before anything runs."""
    if isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 1:
        raise InvalidArgumentError(f"n_trials = {n_trials!r} is not allowed; allowed: a positive integer")
    check_seed("seed", seed, none=False)
    if sampler is not None and not isinstance(sampler, optuna.samplers.BaseSampler):
        raise InvalidArgumentError(f"sampler = {sampler!r} is not allowed; allowed: an optuna sampler or None (TPE)")


def optuna_direction(objective: Any) -> str:
    """Optuna's ``direction`` for an :class:`~nasbench_bert.data.objectives.Objective`
    (``bench.objectives[name]``): the studies here take it from the task metadata."""
    return "minimize" if objective.minimize else "maximize"


def suggest_arch(trial: "optuna.trial.BaseTrial") -> Arch:
    """Suggest a FlexiBERT arch in ``trial``: ``trial.params`` end up holding exactly the
    active values of the ConfigSpace configuration of the returned arch."""
    values: dict[str, Any] = {"hidden_size": trial.suggest_categorical("hidden_size", list(HIDDEN_SIZES)),
                              "num_layers": trial.suggest_categorical("num_layers", list(LAYER_COUNTS))}
    for i in range(int(values["num_layers"])):
        t = trial.suggest_categorical(f"layer{i}_operation_type", list(OPERATION_TYPES))
        values[f"layer{i}_operation_type"] = t
        values[param_name(i, t)] = trial.suggest_categorical(param_name(i, t), list(OPERATION_PARAMETERS[t]))
        for k, choices in LAYER_ORDINALS.items():
            values[f"layer{i}_{k}"] = trial.suggest_categorical(f"layer{i}_{k}", list(choices))
    return configuration_to_arch(values)


def run_optuna(bench: BenchmarkLike, *, n_trials: int = 100, oracle: str = "tabular", seed: int = 0,
               sampler: "optuna.samplers.BaseSampler | None" = None) -> Any:
    """An Optuna study (TPE by default, seeded) optimising GLUE (in its direction in
    ``bench.objectives``: maximised) for ``n_trials``
    evaluations of ``oracle`` (``"tabular"``, ``"surrogate"``, ...; see
    :func:`~nasbench_bert.search.make_oracle`). Returns a
    :class:`~nasbench_bert.search.Trajectory` named ``"optuna_tpe"`` (or the sampler's
    class name); the study is in its ``study`` attribute.

    On the tabular oracle a suggested arch that was never trained is answered by its
    nearest evaluated arch (the package's rule, ties seeded), and the trajectory records
    the arch that answered.
    """
    from ..search import Trajectory, make_oracle

    _check_study(n_trials, seed, sampler)
    orc = make_oracle(oracle, check_bench(bench), Budget(max_queries=n_trials))
    orc.evaluations = []
    rng = np.random.default_rng(seed)

    def objective(trial: optuna.trial.Trial) -> float:
        g = evaluate(_params_of(trial), orc, rng=rng)
        if g is None:  # the budget is spent: stop the study
            trial.study.stop()
            raise optuna.TrialPruned()
        return g

    sampler = sampler if sampler is not None else optuna.samplers.TPESampler(seed=seed)
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(direction=optuna_direction(orc.bench.objectives["glue"]), sampler=sampler)
        study.optimize(objective, n_trials=n_trials)
    finally:
        optuna.logging.set_verbosity(level)
    name = "optuna_tpe" if isinstance(sampler, optuna.samplers.TPESampler) else f"optuna_{type(sampler).__name__}"
    t = Trajectory(name, seed, orc.name, orc.evaluations)
    t.study = study  # type: ignore[attr-defined]
    return t


def run_optuna_nlp(bench: BenchmarkLike | NLPBenchmarkLike, dataset: str = "ptb", *, n_trials: int = 100, seed: int = 0,
                   sampler: "optuna.samplers.BaseSampler | None" = None) -> "optuna.Study":
    """An Optuna study (TPE by default, seeded) minimising NAS-Bench-NLP's final test
    loss over ``dataset``'s runs (``"ptb"`` or ``"wikitext2"``; diverged runs excluded).

    The release's cells have no fixed-length encoding, so the search space is the
    evaluated set itself: one categorical ``recipe_id``, the encoding of
    :func:`~nasbench_bert.integrations.syne_tune.nlp_to_syne_tune`. ``bench``: a
    :class:`~nasbench_bert.Benchmark` (its ``.nlp``) or an :class:`~nasbench_bert.NLPBenchmark`.
    Every trial's value is ``bench.nlp.query(recipe_id, dataset).test_loss``.
    """
    check_choice("dataset", dataset, DATASETS)
    _check_study(n_trials, seed, sampler)
    nlp = check_nlp_bench(bench)
    df, loss = getattr(nlp, dataset), FINAL_TEST_LOSS[dataset]
    ok = df[np.isfinite(df[loss].astype(float))]
    ids = sorted({int(r) for r in ok["recipe_id"]})

    def objective(trial: optuna.trial.Trial) -> float:
        return float(nlp.query(int(trial.suggest_categorical("recipe_id", ids)), dataset, charge=False).test_loss)

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(direction=optuna_direction(nlp.objectives[dataset]["test_loss"]),
                                    sampler=sampler if sampler is not None else optuna.samplers.TPESampler(seed=seed))
        study.optimize(objective, n_trials=n_trials)
    finally:
        optuna.logging.set_verbosity(level)
    return study


def _params_of(trial: optuna.trial.Trial) -> dict[str, Any]:
    """Suggest in ``trial`` and return its params (the configuration's active values)."""
    suggest_arch(trial)
    return dict(trial.params)
