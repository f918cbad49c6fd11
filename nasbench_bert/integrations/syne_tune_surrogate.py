"""FlexiBERT's whole space as a syne-tune blackbox, answered by the package's surrogate.

Predictions, never trained results: every one of the 10,621,440 archs in the flat encoding
(:mod:`.syne_tune_encoding`), at the benchmark's 100,000 steps (``fidelity="final"``) or at
the checkpoints of the curves' 1,000,000-step protocol (``"curves"``). It has no table, so
it cannot be written to disk (:mod:`.syne_tune_files` refuses it). Built by
:func:`~.syne_tune.to_syne_tune` with ``oracle="surrogate"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from syne_tune.blackbox_repository.blackbox import Blackbox

from ..benchmark.curves import FINAL_STEPS
from ..checks import check_int
from ..data.tables import GLUE_TASKS
from ..errors import InvalidArgumentError
from ..sizes import flexibert_num_params
from ..spaces.flexibert import Arch
from ..vocabulary import BenchmarkLike
from .syne_tune_encoding import ELAPSED, SPACE_INDEX, CheckedObjective, check_choice, config_to_arch, flat_config_space, steps_space


class FlexiBERTSurrogateBlackbox(CheckedObjective, Blackbox):
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

        check_choice("fidelity", fidelity, tuple(SURROGATE_FIDELITIES))
        self.oracle = SurrogateOracle(bench, family=family, noisy=noisy, seed=seed)
        self.noisy = noisy
        self.kind = fidelity
        self._steps, names, self._answer = SURROGATE_FIDELITIES[fidelity](self)
        super().__init__(configuration_space=flat_config_space(), fidelity_space=steps_space(self._steps),
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
    names = ["metric_glue", *(f"metric_{t}" for t in GLUE_TASKS), ELAPSED, "metric_num_params_as_trained", SPACE_INDEX]
    return np.array([FINAL_STEPS]), names, bb._final_row


def _surrogate_curves(bb: FlexiBERTSurrogateBlackbox) -> tuple[np.ndarray, list[str], Any]:
    return np.array(bb.oracle.fidelities), ["metric_glue", ELAPSED, SPACE_INDEX], bb._curve_row


#: ``fidelity`` -> (the fidelity values, the objectives, the row function) of the surrogate blackbox
SURROGATE_FIDELITIES = {"final": _surrogate_final, "curves": _surrogate_curves}
