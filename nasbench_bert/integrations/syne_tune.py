"""syne-tune blackboxes of the benchmarks, for syne-tune's simulator and repository.

syne-tune simulates HPO on a :class:`~syne_tune.blackbox_repository.Blackbox`: a
configuration space, one fidelity axis and objectives named ``metric_*``, run through
:class:`~syne_tune.blackbox_repository.UserBlackboxBackend`. This module builds them:

* :func:`to_syne_tune` - FlexiBERT. ``oracle="tabular"`` is a
  :class:`~syne_tune.blackbox_repository.blackbox_tabular.BlackboxTabular` of the 491
  distinct trained archs (``fidelity="final"``, 100,000 steps, every GLUE task) or of
  the 15 learning-curve archs (``fidelity="curves"``); ``oracle="surrogate"`` answers
  for all 10,621,440 archs from the package's surrogate;
* :func:`nlp_to_syne_tune` - NAS-Bench-NLP on PTB (final losses) or WikiText-2 (the
  per-epoch curves);
* :func:`serialize_blackbox` / :func:`load_blackbox` - syne-tune's on-disk format
  (``serialize``), so an upstream blackbox-repository recipe is a file copy;
* :func:`simulate` - one simulated tuning run, returning every reported result.

**The flat encoding.** syne-tune's configuration spaces have no conditions, so the
FlexiBERT space is flattened to 18 categorical fields: ``hidden_size``,
``num_layers`` and, for each of the 4 layer slots ``i``, ``layer{i}_operation``
(``"SA-SDP"``, ``"SA-WMA"``, ``"LT-DFT"``, ``"LT-DCT"``, ``"DSC-5"``, ``"DSC-9"``: the
operation type and its parameter as one field, as the package's own mutation treats
them), ``layer{i}_num_operation_heads``, ``layer{i}_feed_forward_dimension`` and
``layer{i}_num_feed_forward``. With ``num_layers = 2`` the fields of slots 2 and 3 are
*inactive*: any value is accepted and ignored, and the table stores the first choice
of each (:data:`INACTIVE`). :func:`arch_to_config` and :func:`config_to_arch` convert.

**Outside the table.** An optimiser samples the whole flat space; the tabular
blackboxes hold a few hundred archs. With ``outside="nearest"`` (the default, as the
package's :class:`~nasbench_bert.search.TabularOracle` does) a configuration that was
not trained is answered by the evaluated arch with the fewest differing fields (ties:
the lowest benchmark id), and every result carries ``space_index``, the index of the
arch that answered; ``outside="raise"`` refuses it.

**Seeds.** FlexiBERT's 9 archs trained twice (and WikiText-2's one recipe trained
twice) have their runs on the seed axis: seed ``s`` is run ``s`` in id order; an arch
with one run answers it for every seed. Seed 0 is what ``bench.query`` returns.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np
import pandas as pd
from syne_tune.blackbox_repository.blackbox import Blackbox
from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
from syne_tune.blackbox_repository.blackbox_tabular import deserialize as _st_deserialize
from syne_tune.blackbox_repository.blackbox_tabular import serialize as _st_serialize
from syne_tune.blackbox_repository.serialize import deserialize_metadata
from syne_tune.config_space import choice, randint

from ..benchmark.curves import FINAL_STEPS
from ..checks import check_bench, check_int, check_nlp_bench, is_real
from ..data.tables import GLUE_TASKS
from ..errors import DataIntegrityError, InvalidArgumentError
from ..sizes import flexibert_num_params
from ..spaces.flexibert import (
    FF_DIMS, HIDDEN_SIZES, LAYER_COUNTS, NUM_FF, NUM_HEADS, OPERATIONS, Arch, Layer, field_codes, field_distances,
)
from ..vocabulary import BenchmarkLike, NLPBenchmarkLike

#: the flat names of a layer slot's four fields
LAYER_KEYS: tuple[str, ...] = ("operation", "num_operation_heads", "feed_forward_dimension", "num_feed_forward")
MAX_LAYERS = max(LAYER_COUNTS)
OPERATION_NAMES: tuple[str, ...] = tuple(f"{t}-{p}" for t, p in OPERATIONS)
_CHOICES: dict[str, tuple[Any, ...]] = {"operation": OPERATION_NAMES, "num_operation_heads": NUM_HEADS,
                                        "feed_forward_dimension": FF_DIMS, "num_feed_forward": NUM_FF}
#: the value an inactive layer field has in the tables (the first choice of each field)
INACTIVE: dict[str, Any] = {k: v[0] for k, v in _CHOICES.items()}
#: the 18 flat hyperparameter names, in table column order
FLAT_KEYS: tuple[str, ...] = ("hidden_size", "num_layers",
                              *(f"layer{i}_{k}" for i in range(MAX_LAYERS) for k in LAYER_KEYS))
#: curve checkpoints left out: their stored values are the 500,000 / 1,000,000-step files
#: (see :mod:`nasbench_bert.surrogate.fidelity`)
BROKEN_CURVE_STEPS = (50_000, 100_000)
ELAPSED = "metric_elapsed_time"


# -- the flat encoding ------------------------------------------------------------------------
def flat_config_space() -> dict[str, Any]:
    """The flattened FlexiBERT space as a syne-tune configuration space (18 categoricals)."""
    cs: dict[str, Any] = {"hidden_size": choice(list(HIDDEN_SIZES)), "num_layers": choice(list(LAYER_COUNTS))}
    for i in range(MAX_LAYERS):
        for k in LAYER_KEYS:
            cs[f"layer{i}_{k}"] = choice(list(_CHOICES[k]))
    return cs


def arch_to_config(arch: Any) -> dict[str, Any]:
    """The flat configuration of ``arch`` (an Arch, its string or release dict); inactive
    slots hold :data:`INACTIVE`."""
    a = Arch.coerce(arch)
    cfg: dict[str, Any] = {"hidden_size": a.hidden_size, "num_layers": a.num_layers}
    for i in range(MAX_LAYERS):
        if i < a.num_layers:
            layer = a.layers[i]
            vals = (f"{layer.operation_type}-{layer.operation_parameter}", layer.num_operation_heads,
                    layer.feed_forward_dimension, layer.num_feed_forward)
        else:
            vals = tuple(INACTIVE[k] for k in LAYER_KEYS)
        cfg.update({f"layer{i}_{k}": v for k, v in zip(LAYER_KEYS, vals)})
    return cfg


def config_to_arch(config: Mapping[str, Any]) -> Arch:
    """The arch of a flat configuration; fields of inactive slots are ignored. A missing
    or invalid field raises :class:`~nasbench_bert.InvalidArgumentError` naming it."""
    if not isinstance(config, Mapping):
        raise InvalidArgumentError(f"config = {config!r} is not allowed; allowed: a mapping of {list(FLAT_KEYS)}")

    def get(key: str, allowed: tuple[Any, ...]) -> Any:
        if key not in config:
            raise InvalidArgumentError(f"config[{key!r}] is missing; allowed values: {list(allowed)}")
        v = config[key]
        v = v.item() if isinstance(v, np.generic) else v
        if v not in allowed or isinstance(v, bool):
            raise InvalidArgumentError(f"config[{key!r}] = {v!r} is not allowed; allowed values: {list(allowed)}")
        return v

    h = int(get("hidden_size", HIDDEN_SIZES))
    n = int(get("num_layers", LAYER_COUNTS))
    layers = []
    for i in range(n):
        op = get(f"layer{i}_operation", OPERATION_NAMES)
        t, p = OPERATIONS[OPERATION_NAMES.index(op)]
        layers.append(Layer(t, p, int(get(f"layer{i}_num_operation_heads", NUM_HEADS)),
                            int(get(f"layer{i}_feed_forward_dimension", FF_DIMS)),
                            int(get(f"layer{i}_num_feed_forward", NUM_FF))))
    return Arch(h, tuple(layers))


def _steps_space(values: np.ndarray) -> dict[str, Any]:
    return {"steps": randint(int(values.min()), int(values.max()))}


def _check_choice(name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidArgumentError(f"{name} = {value!r} is not allowed; allowed values: {list(allowed)}")


class _CheckedObjective:
    """syne-tune's ``objective_function`` checks its arguments with ``assert`` (or not at
    all): a misspelt key, an out-of-range seed or ``None`` end in a bare AssertionError
    or TypeError. Every blackbox here checks them first and names the argument."""

    configuration_space: dict[str, Any]
    fidelity_space: dict[str, Any] | None

    def objective_function(self, configuration: Any, fidelity: Any = None, seed: Any = None) -> Any:
        if not isinstance(configuration, Mapping):
            raise InvalidArgumentError(f"configuration = {configuration!r} is not allowed; allowed: a dict of "
                                       f"{sorted(self.configuration_space)}")
        extra = sorted(set(configuration) - set(self.configuration_space))
        if extra:
            raise InvalidArgumentError(f"configuration key(s) {extra} not allowed; allowed keys: "
                                       f"{sorted(self.configuration_space)}")
        fid = self.fidelity_space or {}
        if isinstance(fidelity, Mapping):
            bad = sorted(set(fidelity) - set(fid))
            if bad or len(fidelity) != 1:
                raise InvalidArgumentError(f"fidelity = {dict(fidelity)!r} is not allowed; allowed: one of {sorted(fid)} "
                                           "with its value, a number, or None")
        elif fidelity is not None and not is_real(fidelity):
            raise InvalidArgumentError(f"fidelity = {fidelity!r} is not allowed; allowed: a number, a dict of "
                                       f"{sorted(fid)}, or None")
        num_seeds = int(getattr(self, "num_seeds", 1))
        if seed is not None:
            check_int("seed", seed, low=0, high=num_seeds - 1)
        return super().objective_function(dict(configuration), fidelity=fidelity, seed=seed)  # type: ignore[misc]


# -- FlexiBERT, tabular -------------------------------------------------------------------------
class FlexiBERTTabular(_CheckedObjective, BlackboxTabular):
    """A FlexiBERT table as a syne-tune ``BlackboxTabular`` that reads the flat encoding
    (inactive slots ignored) and answers archs outside the table by their nearest
    evaluated arch (``outside="nearest"``) or refuses them (``"raise"``)."""

    def __init__(self, hyperparameters: pd.DataFrame, objectives_evaluations: np.ndarray, fidelity_values: np.ndarray,
                 objectives_names: list[str], outside: str = "nearest", kind: str = "final"):
        _check_choice("outside", outside, ("nearest", "raise"))
        super().__init__(hyperparameters=hyperparameters, configuration_space=flat_config_space(),
                         fidelity_space=_steps_space(np.asarray(fidelity_values)),
                         objectives_evaluations=objectives_evaluations,
                         fidelity_values=np.asarray(fidelity_values), objectives_names=objectives_names)
        self.outside, self.kind = outside, kind
        self.archs: list[Arch] = [config_to_arch(r) for r in hyperparameters.to_dict("records")]
        self._row = {a: i for i, a in enumerate(self.archs)}
        self._codes = np.stack([field_codes(a) for a in self.archs])

    def row_of(self, arch: Arch) -> int:
        """The table row answering ``arch``: its own, or (``outside="nearest"``) the
        nearest evaluated arch's, ties to the lowest row (= the lowest benchmark id)."""
        row = self._row.get(arch)
        if row is not None:
            return row
        if not ANSWERS_OUTSIDE[self.outside]:
            raise InvalidArgumentError(f"config = {arch} is not in this {len(self.archs)}-arch table; allowed: one of its "
                                       "archs (blackbox.archs), or build it with outside='nearest'")
        return int(np.argmin(field_distances(field_codes(arch), self._codes)))  # argmin: first (lowest) row on ties

    def _objective_function(self, configuration: dict[str, Any] | int, fidelity: dict[str, Any] | None = None,
                            seed: int | None = None) -> Any:
        row = configuration if not isinstance(configuration, Mapping) else self.row_of(config_to_arch(configuration))
        return super()._objective_function(int(row), fidelity=fidelity, seed=seed) if fidelity is None else \
            self._at(int(row), fidelity, seed)

    def _at(self, row: int, fidelity: Mapping[str, Any], seed: int | None) -> dict[str, float]:
        s = check_int("seed", seed, low=0, high=self.num_seeds - 1, none=True)  # a run index, not an RNG seed
        s = int(np.random.randint(0, self.num_seeds)) if s is None else s
        value = next(iter(fidelity.values()))
        if value not in self.fidelity_map:
            raise InvalidArgumentError(f"steps = {value!r} is not allowed; allowed values: {list(self.fidelity_values)}")
        return dict(zip(self.objectives_names, self.objectives_evaluations[row, s, self.fidelity_map[value]].tolist()))


#: hardware objectives of the trained (as_trained) model, from the measured table
HARDWARE_METRICS: tuple[str, ...] = ("latency_b1_ms", "latency_b32_ms", "peak_memory_b32_mib", "flops_per_seq")


def _flexibert_final(bench: BenchmarkLike, outside: str) -> FlexiBERTTabular:
    archs = list(dict.fromkeys(bench.archs))
    runs = [bench.query_all(a) for a in archs]
    # hardware objectives only when every arch's trained model was measured: never a NaN objective
    bundled = [sorted((r for r in rs if r.source == "bundled"), key=lambda r: r.id) for rs in runs]
    hw_metrics = HARDWARE_METRICS if all("as_trained" in r.hardware for rs in bundled for r in rs) else ()
    names = ["metric_glue", *(f"metric_{t}" for t in GLUE_TASKS), ELAPSED, "metric_num_params_as_trained",
             *(f"metric_{h}" for h in hw_metrics), "metric_glue_error", "space_index"]
    seeds = max(len(r) for r in runs)
    y = np.empty((len(archs), seeds, 1, len(names)))
    for i, (a, rs) in enumerate(zip(archs, bundled)):
        for s in range(seeds):
            r = rs[min(s, len(rs) - 1)]
            hw = r.hardware.get("as_trained")
            y[i, s, 0] = [r.glue, *(r.scores[t] for t in GLUE_TASKS), r.time_to_train, r.num_params_as_trained,
                          *(getattr(hw, h) for h in hw_metrics), 100.0 - r.glue, a.index]
    hp = pd.DataFrame([arch_to_config(a) for a in archs], columns=list(FLAT_KEYS))
    return FlexiBERTTabular(hp, y, np.array([FINAL_STEPS]), names, outside, "final")


def _flexibert_curves(bench: BenchmarkLike, outside: str) -> FlexiBERTTabular:
    ids = bench.curve_ids()
    steps = np.array([int(s) for s in bench.curve(ids[0])["steps"] if int(s) not in BROKEN_CURVE_STEPS])
    names = ["metric_glue", *(f"metric_{t}" for t in GLUE_TASKS), ELAPSED, "space_index"]
    y = np.empty((len(ids), 1, len(steps), len(names)))
    archs = []
    for i, k in enumerate(ids):
        base = bench.query(k, charge=False)
        archs.append(base.arch)
        c = bench.curve(k).set_index("steps")
        for j, s in enumerate(steps):
            row = c.loc[s]
            y[i, 0, j] = [row["glue"], *(row[t] for t in GLUE_TASKS), base.time_to_train * s / FINAL_STEPS, base.arch.index]
    hp = pd.DataFrame([arch_to_config(a) for a in archs], columns=list(FLAT_KEYS))
    return FlexiBERTTabular(hp, y, steps, names, outside, "curves")


# -- FlexiBERT, surrogate -------------------------------------------------------------------------
class FlexiBERTSurrogateBlackbox(_CheckedObjective, Blackbox):
    """All 10,621,440 FlexiBERT archs, answered by the package's surrogate (predictions,
    never trained results), in the flat encoding.

    ``fidelity="final"``: the benchmark's 100,000-step protocol, GLUE and the 8 task
    predictions. ``fidelity="curves"``: GLUE at the checkpoints of the curves'
    1,000,000-step protocol (:class:`~nasbench_bert.surrogate.fidelity.CurveFidelity`).
    ``metric_elapsed_time`` is the table's mean training time scaled by steps, as the
    :class:`~nasbench_bert.search.SurrogateOracle` charges.

    ``noisy=True``: the noisy simulated benchmark of ``SurrogateOracle(noisy=True, seed=)``.
    Each arch's expected GLUE is a seeded draw from the surrogate's predictive
    distribution of the mean, and syne-tune's seed axis (``num_seeds``, default 10) holds
    re-runs: seed ``k`` adds the run-to-run deviation drawn with the generator
    ``(seed, arch index, k + 1)``, so an evaluation is reproducible and two seeds scatter
    like two trainings. Only ``metric_glue`` is noisy; the task columns stay the means.
    """

    def __init__(self, bench: BenchmarkLike, fidelity: str = "final", family: str | None = None, *, noisy: bool = False,
                 seed: int = 0, num_seeds: int | None = None):
        from ..search.oracle import SurrogateOracle

        _check_choice("fidelity", fidelity, tuple(_SURROGATE_FIDELITIES))
        self.oracle = SurrogateOracle(bench, family=family, noisy=noisy, seed=seed)
        self.noisy = noisy
        self.kind = fidelity
        self._steps, names, self._answer = _SURROGATE_FIDELITIES[fidelity](self)
        super().__init__(configuration_space=flat_config_space(), fidelity_space=_steps_space(self._steps),
                         objectives_names=names)
        if num_seeds is None:
            num_seeds = 10 if noisy else 1
        self.num_seeds = check_int("num_seeds", num_seeds, low=1, high=10_000)

    @property
    def fidelity_values(self) -> np.ndarray:
        return self._steps

    def _noise(self, arch: Arch, seed: int) -> float:
        if not self.noisy:
            return 0.0
        rng = np.random.default_rng([self.oracle.seed, arch.index, seed + 1])
        return float(self.oracle.surrogate.run_noise().sample(arch.num_layers, rng)[0])

    def _row(self, arch: Arch, steps: int, seed: int = 0) -> list[float]:
        return self._answer(arch, steps, seed, self.oracle.cost_at(arch, steps))

    def _final_row(self, arch: Arch, steps: int, seed: int, cost: float) -> list[float]:
        m, _ = self.oracle.surrogate.predict_indices(np.array([arch.index]), return_std=False)
        values = [float(v) for v in m[0]]
        if self.noisy:
            values[0] = self.oracle.expected_glue(arch) + self._noise(arch, seed)
        return [*values, cost, float(flexibert_num_params(arch, "as_trained")), float(arch.index)]

    def _curve_row(self, arch: Arch, steps: int, seed: int, cost: float) -> list[float]:
        glue = float(self.oracle.fidelity.predict(self.oracle.expected_glue(arch), steps)) + self._noise(arch, seed)
        return [glue, cost, float(arch.index)]

    def _objective_function(self, configuration: dict[str, Any], fidelity: dict[str, Any] | None = None,
                            seed: int | None = None) -> Any:
        arch = config_to_arch(configuration)
        s = check_int("seed", 0 if seed is None else seed, low=0, high=self.num_seeds - 1)  # a run index
        if fidelity is None:
            return np.array([self._row(arch, int(st), s) for st in self._steps])
        value = next(iter(fidelity.values()))
        if value not in set(self._steps.tolist()):
            raise InvalidArgumentError(f"steps = {value!r} is not allowed; allowed values: {self._steps.tolist()}")
        return dict(zip(self.objectives_names, self._row(arch, int(value), s)))


def _surrogate_final(bb: FlexiBERTSurrogateBlackbox) -> tuple[np.ndarray, list[str], Any]:
    names = ["metric_glue", *(f"metric_{t}" for t in GLUE_TASKS), ELAPSED, "metric_num_params_as_trained", "space_index"]
    return np.array([FINAL_STEPS]), names, bb._final_row


def _surrogate_curves(bb: FlexiBERTSurrogateBlackbox) -> tuple[np.ndarray, list[str], Any]:
    return np.array(bb.oracle.fidelities), ["metric_glue", ELAPSED, "space_index"], bb._curve_row


#: ``fidelity`` -> (the fidelity values, the objectives, the row function) of the surrogate blackbox
_SURROGATE_FIDELITIES = {"final": _surrogate_final, "curves": _surrogate_curves}
#: ``fidelity`` -> the tabular blackbox's builder (see :func:`to_syne_tune`)
_TABULAR_FIDELITIES = {"final": _flexibert_final, "curves": _flexibert_curves}
#: ``fidelity`` -> the task name :func:`serialize_blackbox` writes a tabular blackbox under
_TASK_NAMES = {"final": "flexibert", "curves": "flexibert_curves"}
#: ``outside`` -> whether an arch outside the table is answered (by its nearest evaluated arch)
ANSWERS_OUTSIDE: dict[str, bool] = {"nearest": True, "raise": False}


def to_syne_tune(bench: BenchmarkLike, *, oracle: Literal["tabular", "surrogate"] = "tabular",
                 fidelity: Literal["final", "curves"] = "final", outside: Literal["nearest", "raise"] = "nearest",
                 family: str | None = None, noisy: bool = False, seed: int = 0, num_seeds: int | None = None) -> Blackbox:
    """FlexiBERT as a syne-tune blackbox (see the module doc for the encoding).

    ``oracle="tabular"``, ``fidelity="final"``: the 491 distinct trained archs at
    100,000 steps; objectives ``metric_glue``, ``metric_<task>`` for the 8 GLUE tasks,
    ``metric_elapsed_time`` (``time_to_train``), ``metric_num_params_as_trained``, the
    trained model's measured hardware objectives (``metric_latency_b1_ms``,
    ``metric_latency_b32_ms``, ``metric_peak_memory_b32_mib``, ``metric_flops_per_seq``:
    :mod:`nasbench_bert.hardware`; only when the data holds a hardware table that covers
    every arch's trained model), ``metric_glue_error`` (100 - GLUE: syne-tune's
    multi-objective schedulers take one direction for all metrics, so accuracy and latency
    are minimised together) and ``space_index``; 2 seeds (the repeated archs' runs).
    ``fidelity="curves"``: the 15 learning-curve archs at 0, 150,000, ..., 1,000,000
    steps (the broken 50,000 / 100,000 checkpoints left out); elapsed time scaled by steps.
    ``oracle="surrogate"``: :class:`FlexiBERTSurrogateBlackbox` over the whole space;
    ``noisy=True`` (with ``seed``, ``num_seeds``) makes it the noisy simulated benchmark.
    """
    bench = check_bench(bench)
    _check_choice("oracle", oracle, tuple(_ORACLES))
    _check_choice("fidelity", fidelity, tuple(_TABULAR_FIDELITIES))
    _check_choice("outside", outside, tuple(ANSWERS_OUTSIDE))
    bb = _ORACLES[oracle](bench, fidelity, outside, family, noisy, seed, num_seeds)
    bb.metric_modes = metric_modes(bench.objectives, list(bb.objectives_names))
    return bb


def metric_modes(objectives: Mapping[str, Any], names: list[str]) -> dict[str, str]:
    """syne-tune's ``mode`` (``"max"`` / ``"min"``) of each reported metric, read from the
    benchmark's task metadata (``bench.objectives``, :mod:`nasbench_bert.benchmark.objectives`):
    ``metric_<name>`` takes its objective's direction and ``metric_glue_error`` the
    opposite of GLUE's; the costs without an objective of their own (elapsed time, the
    measured hardware) are minimised; ``space_index`` is no objective. Every blackbox made
    here carries it as ``blackbox.metric_modes``; :func:`do_minimize` reads it."""
    out: dict[str, str] = {}
    for name in names:
        key = name.removeprefix("metric_")
        if key in objectives:
            out[name] = objectives[key].direction
        elif key == "glue_error":
            out[name] = "min" if objectives["glue"].direction == "max" else "max"
        elif name == ELAPSED:
            out[name] = objectives["time_to_train"].direction if "time_to_train" in objectives else "min"
        elif key in HARDWARE_METRICS:
            out[name] = "min"
    return out


def do_minimize(blackbox: Blackbox, metric: str) -> bool:
    """What a syne-tune scheduler's ``do_minimize`` should be for ``metric`` of a blackbox
    made here (from its ``metric_modes``); a metric without a direction is named."""
    modes = getattr(blackbox, "metric_modes", {})
    if metric not in modes:
        raise InvalidArgumentError(f"metric = {metric!r} has no direction; allowed values: {sorted(modes)}")
    return modes[metric] == "min"


def _surrogate_blackbox(bench: BenchmarkLike, fidelity: str, outside: str, family: str | None, noisy: bool, seed: int,
                        num_seeds: int | None) -> Blackbox:
    return FlexiBERTSurrogateBlackbox(bench, fidelity, family, noisy=noisy, seed=seed, num_seeds=num_seeds)


def _tabular_blackbox(bench: BenchmarkLike, fidelity: str, outside: str, family: str | None, noisy: bool, seed: int,
                      num_seeds: int | None) -> Blackbox:
    if noisy or seed != 0 or num_seeds is not None:
        raise InvalidArgumentError(f"noisy/seed/num_seeds = {noisy!r}/{seed!r}/{num_seeds!r} only apply to "
                                   "oracle='surrogate'; allowed with 'tabular': the defaults (False, 0, None)")
    if family is not None:
        raise InvalidArgumentError(f"family = {family!r} only applies to oracle='surrogate'; allowed with 'tabular': None")
    return _TABULAR_FIDELITIES[fidelity](bench, outside)


#: ``oracle`` -> the blackbox :func:`to_syne_tune` makes
_ORACLES = {"tabular": _tabular_blackbox, "surrogate": _surrogate_blackbox}


# -- NAS-Bench-NLP ----------------------------------------------------------------------------------
class NLPTabular(_CheckedObjective, BlackboxTabular):
    """A NAS-Bench-NLP table keyed by ``recipe_id`` (the release's cells have no
    fixed-length encoding, so the configuration space is the evaluated set itself)."""

    def __init__(self, hyperparameters: pd.DataFrame, objectives_evaluations: np.ndarray, fidelity_values: np.ndarray,
                 objectives_names: list[str], dataset: str, dropped: tuple[int, ...] = ()):
        ids = hyperparameters["recipe_id"].tolist()
        super().__init__(hyperparameters=hyperparameters, configuration_space={"recipe_id": choice(ids)},
                         fidelity_space={"epoch": randint(int(min(fidelity_values)), int(max(fidelity_values)))},
                         objectives_evaluations=objectives_evaluations, fidelity_values=np.asarray(fidelity_values),
                         objectives_names=objectives_names)
        self.dataset, self.dropped = dataset, tuple(dropped)
        self._row = {int(r): i for i, r in enumerate(ids)}

    def _objective_function(self, configuration: dict[str, Any] | int, fidelity: dict[str, Any] | None = None,
                            seed: int | None = None) -> Any:
        if isinstance(configuration, Mapping):
            rid = configuration.get("recipe_id")
            if rid not in self._row:
                raise InvalidArgumentError(f"config['recipe_id'] = {rid!r} is not allowed; allowed: one of the "
                                           f"{len(self._row)} recipe ids of this {self.dataset} table")
            configuration = self._row[rid]
        return super()._objective_function(int(configuration), fidelity=fidelity, seed=seed)


def nlp_to_syne_tune(bench: BenchmarkLike | NLPBenchmarkLike, dataset: Literal["ptb", "wikitext2"] = "ptb") -> NLPTabular:
    """NAS-Bench-NLP as a syne-tune blackbox, hyperparameter ``recipe_id``. ``bench``: a
    :class:`~nasbench_bert.Benchmark` (its ``.nlp``) or an
    :class:`~nasbench_bert.NLPBenchmark`.

    ``"ptb"``: the 8,794 runs' final results (fidelity ``epoch`` = 50, the protocol's
    last), objectives ``metric_test_loss``, ``metric_perplexity``,
    ``metric_bits_per_word``, ``metric_num_params``; the PTB release records no time,
    so ``metric_elapsed_time`` is 1 per evaluation (a count, not seconds).
    ``"wikitext2"``: the per-epoch curves (``epoch`` 1-50) of the runs that did not
    diverge (the 4 diverged ones are listed in ``.dropped``): ``metric_train_loss``,
    ``metric_val_loss``, ``metric_test_loss``, ``metric_num_params`` and
    ``metric_elapsed_time``, the cumulative wall time; 2 seeds (one recipe trained twice).
    """
    _check_choice("dataset", dataset, tuple(_NLP_TABLES))
    nlp = check_nlp_bench(bench)
    bb = _NLP_TABLES[dataset](nlp)
    bb.metric_modes = metric_modes(nlp.objectives[dataset], list(bb.objectives_names))
    return bb


def _nlp_ptb(nlp: NLPBenchmarkLike) -> NLPTabular:
    df = nlp.ptb
    names = ["metric_test_loss", "metric_perplexity", "metric_bits_per_word", "metric_num_params", ELAPSED]
    y = np.stack([df["test_loss"], df["perplexity"], df["bits_per_word"], df["num_params"].astype(float),
                  np.ones(len(df))], axis=1).astype(float)[:, None, None, :]
    hp = pd.DataFrame({"recipe_id": df["recipe_id"].astype(int).tolist()})
    return NLPTabular(hp, y, np.array([50]), names, "ptb")


def _nlp_wikitext2(nlp: NLPBenchmarkLike) -> NLPTabular:
    df = nlp.wikitext2
    ok = df[~df["diverged"].astype(bool)]
    dropped = tuple(int(r) for r in df.loc[df["diverged"].astype(bool), "recipe_id"])
    groups = {rid: g.sort_values("init_time") for rid, g in ok.groupby("recipe_id", sort=True)}
    seeds = max(len(g) for g in groups.values())
    epochs = len(ok["val_losses"].iloc[0])
    names = ["metric_train_loss", "metric_val_loss", "metric_test_loss", "metric_num_params", ELAPSED]
    y = np.empty((len(groups), seeds, epochs, len(names)))
    for i, g in enumerate(groups.values()):
        for s in range(seeds):
            r = g.iloc[min(s, len(g) - 1)]
            y[i, s] = np.stack([r["train_losses"], r["val_losses"], r["test_losses"], np.full(epochs, float(r["num_params"])),
                                np.cumsum(r["wall_times"])], axis=1)
    if not np.isfinite(y).all():
        raise DataIntegrityError("wikitext2: a run that did not diverge has a non-finite curve value")
    hp = pd.DataFrame({"recipe_id": [int(k) for k in groups]})
    return NLPTabular(hp, y, np.arange(1, epochs + 1), names, "wikitext2", dropped)


#: ``dataset`` -> its blackbox (:func:`nlp_to_syne_tune`)
_NLP_TABLES = {"ptb": _nlp_ptb, "wikitext2": _nlp_wikitext2}


# -- serialisation ----------------------------------------------------------------------------------
def serialize_blackbox(blackbox: BlackboxTabular, path: str | os.PathLike[str], name: str | None = None) -> Path:
    """Write a tabular blackbox in syne-tune's on-disk format (``serialize``: parquet
    hyperparameters, ``objectives_evaluations.npy`` as float32, JSON spaces and
    metadata) under ``path``; the task name defaults to ``flexibert`` / ``nlp_<dataset>``.
    Needs ``fastparquet`` (syne-tune writes parquet with it)."""
    if not isinstance(blackbox, BlackboxTabular):
        raise InvalidArgumentError(f"blackbox = {type(blackbox).__name__} is not allowed; allowed: a tabular blackbox "
                                   "(FlexiBERTTabular or NLPTabular); a surrogate blackbox has no table to write")
    if isinstance(blackbox, FlexiBERTTabular):
        meta = {"nasbench_bert": "flexibert", "kind": blackbox.kind, "outside": blackbox.outside, "encoding": "flat-v1"}
        default = _TASK_NAMES[blackbox.kind]
    elif isinstance(blackbox, NLPTabular):
        meta = {"nasbench_bert": "nlp", "dataset": blackbox.dataset, "dropped": list(blackbox.dropped)}
        default = f"nlp_{blackbox.dataset}"
    else:
        meta, default = {}, "blackbox"
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    _st_serialize({name or default: blackbox}, str(p), metadata=meta)
    return p


def load_blackbox(path: str | os.PathLike[str]) -> Blackbox:
    """Read what :func:`serialize_blackbox` wrote, as the same class (the flat encoding
    and the nearest-arch rule restored); any other syne-tune serialised table comes
    back as syne-tune returns it (a dict of task -> ``BlackboxTabular``)."""
    p = Path(path)
    if not (p / "metadata.json").is_file():
        raise InvalidArgumentError(f"path = {str(path)!r} holds no metadata.json; allowed: a folder written by serialize_blackbox")
    meta = deserialize_metadata(str(p))
    tasks = _st_deserialize(str(p))
    if meta.get("nasbench_bert") not in _LOADERS or len(tasks) != 1:
        return tasks  # type: ignore[return-value]
    bb = next(iter(tasks.values()))
    return _LOADERS[meta["nasbench_bert"]](bb, meta)


def _load_flexibert(bb: Any, meta: dict[str, Any]) -> FlexiBERTTabular:
    hp = bb.hyperparameters.reset_index(drop=True)
    hp = pd.DataFrame({c: [v.item() if isinstance(v, np.generic) else v for v in hp[c]] for c in FLAT_KEYS})
    return FlexiBERTTabular(hp, np.asarray(bb.objectives_evaluations, dtype=float), np.asarray(bb.fidelity_values),
                            list(bb.objectives_names), meta["outside"], meta["kind"])


def _load_nlp(bb: Any, meta: dict[str, Any]) -> NLPTabular:
    hp = bb.hyperparameters.reset_index(drop=True)
    hp = pd.DataFrame({"recipe_id": [int(v) for v in hp["recipe_id"]]})
    return NLPTabular(hp, np.asarray(bb.objectives_evaluations, dtype=float), np.asarray(bb.fidelity_values),
                      list(bb.objectives_names), meta["dataset"], tuple(meta.get("dropped", ())))


#: the ``nasbench_bert`` metadata of a serialised blackbox -> how it is read back
_LOADERS = {"flexibert": _load_flexibert, "nlp": _load_nlp}


# -- simulation -------------------------------------------------------------------------------------
def _quiet_logger() -> Any:
    """A syne-tune ``TunerLogger`` that prints only errors and warnings (the default
    prints every trial, thousands of lines in a simulation)."""
    from syne_tune.tuner_logger import TunerLogger

    keep = {"print_error", "print_warning", "print_max_failures_reached", "print_failure_logs"}
    quiet = {n: (lambda self, *a, **k: None) for n in dir(TunerLogger) if n.startswith("print_") and n not in keep}
    return type("QuietTunerLogger", (TunerLogger,), quiet)()


def _scheduler_metrics(scheduler: Any) -> list[str]:
    ms = getattr(scheduler, "metrics", None) or [getattr(scheduler, "metric", None)]
    return [m for m in (ms if isinstance(ms, (list, tuple)) else [ms]) if isinstance(m, str)]


def check_metrics(blackbox: Blackbox, metrics: list[str]) -> None:
    """Refuse metrics the blackbox does not report, before a run (inside syne-tune they
    end in a bare ``KeyError``). The hardware objectives exist only where the data holds
    a hardware measurement covering every arch; the message says how to make one."""
    have = list(getattr(blackbox, "objectives_names", []))
    missing = [m for m in metrics if m not in have]
    if not missing:
        return
    hint = ""
    if any(m.removeprefix("metric_") in HARDWARE_METRICS for m in missing):
        hint = ("; the hardware objectives need a hardware measurement in the data: `python -m "
                "nasbench_bert.builders.hardware`, then `nasbench-bert build-data --force` (docs/hardware.md)")
    raise InvalidArgumentError(f"metric(s) {missing} not reported by this blackbox; allowed: {have}{hint}")


def simulate(blackbox: Blackbox, scheduler: Any, *, max_trials: int, n_workers: int = 4,
             folder: str | os.PathLike[str] | None = None, seed: int | None = None, time_step: float | None = None,
             verbose: bool = False) -> pd.DataFrame:
    """Run ``scheduler`` on ``blackbox`` through syne-tune's ``UserBlackboxBackend`` until
    ``max_trials`` trials finished (completed, or stopped by a multi-fidelity scheduler;
    simulated time: nothing sleeps), and return every reported result with the trial's
    configuration (``config_*`` columns).

    ``folder``: where syne-tune writes its experiment (default: ``$SYNETUNE_FOLDER`` or
    ``~/syne-tune``). ``seed``: the blackbox seed for every trial (default: drawn per
    trial). ``time_step``: simulated seconds the tuner advances per poll (syne-tune's
    ``tuner_sleep_time``, default 5); the loop runs once per step, so a coarser step
    (e.g. 60 for FlexiBERT's hour-long trials) makes a simulation many times faster,
    at the cost of start times rounded to the step. ``verbose``: syne-tune's printing.
    """
    from syne_tune import StoppingCriterion, Tuner
    from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
    from syne_tune.blackbox_repository import UserBlackboxBackend

    if not isinstance(max_trials, int) or isinstance(max_trials, bool) or max_trials < 1:
        raise InvalidArgumentError(f"max_trials = {max_trials!r} is not allowed; allowed: a positive integer")
    if time_step is not None and (not isinstance(time_step, (int, float)) or isinstance(time_step, bool)
                                  or not math.isfinite(time_step) or time_step <= 0):
        raise InvalidArgumentError(f"time_step = {time_step!r} is not allowed; allowed: positive simulated seconds or None")
    if not isinstance(n_workers, int) or isinstance(n_workers, bool) or n_workers < 1:
        raise InvalidArgumentError(f"n_workers = {n_workers!r} is not allowed; allowed: a positive integer")
    check_metrics(blackbox, _scheduler_metrics(scheduler))
    old = os.environ.get("SYNETUNE_FOLDER")
    if folder is not None:
        os.environ["SYNETUNE_FOLDER"] = str(folder)
    try:
        kw = {} if time_step is None else {"tuner_sleep_time": float(time_step)}
        backend = UserBlackboxBackend(blackbox=blackbox, elapsed_time_attr=ELAPSED, seed=seed, **kw)
        callback = SimulatorCallback()
        tuner = Tuner(trial_backend=backend, scheduler=scheduler, n_workers=n_workers, sleep_time=0,
                      stop_criterion=StoppingCriterion(max_num_trials_finished=max_trials), callbacks=[callback],
                      results_update_interval=math.inf, print_update_interval=math.inf, save_tuner=False,
                      tuner_name="nasbench-bert", output_logger=None if verbose else _quiet_logger())
        with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
            tuner.run()  # syne-tune prints its summary table on stdout whatever the logger
    finally:
        if folder is not None:
            if old is None:
                os.environ.pop("SYNETUNE_FOLDER", None)
            else:
                os.environ["SYNETUNE_FOLDER"] = old
    return callback.dataframe()  # syne-tune's results callback adds each trial's config_* columns
