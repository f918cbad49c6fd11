"""CARP-S multi-fidelity objective functions: every fidelity the tables hold.

A CARP-S multi-fidelity optimiser (DEHB, SMAC's Hyperband, syne-tune's ASHA) proposes a
configuration with a ``budget`` between the task's ``min_fidelity`` and
``max_fidelity``, often not a value the table holds (DEHB's eta = 3 budgets on epochs
1-50 are 1.85, 5.56, 16.67 and 50). The answer is the table's value at the last fidelity
the budget reaches - the epoch a run with that budget had completed, the last curve
checkpoint before that many steps - and ``additional_info`` names it, so a CARP-S log can
be checked against the tables. Each trial is a run from scratch to that fidelity:
``virtual_time`` is the run's cumulative cost there (the logged wall time of its epochs;
the arch's training time scaled by steps, as ``curve_point`` charges).

* :class:`NLPEpochs` - NAS-Bench-NLP on WikiText-2 (task ``nlp_wikitext2``) or PTB (task
  ``nlp_ptb_epochs``, when the data holds PTB's logs: ``build-data --ptb-logs``): one
  categorical ``recipe_id`` over the runs that finished every epoch; each recipe is its
  first run (``init_time`` order, what ``bench.nlp.query`` answers).
* :class:`FlexiBERTCurves` - the 15 learning-curve archs (task ``flexibert_curves``), one
  categorical ``arch``, steps 150,000 ... 1,000,000: the release's 50,000 / 100,000-step
  points are damaged and never served (docs/errata.md, finding 11), and 0 steps is no
  budget a multi-fidelity optimiser can grow from, so the lowest budget is 150,000.

Above :mod:`.carps`, whose task configs name these classes.
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

import numpy as np
from carps.utils.trials import TrialInfo, TrialValue

from ..checks import check_choice
from ..errors import InvalidArgumentError
from ..spaces.flexibert import Arch
from ..vocabulary import DATASETS
from .carps import _TabularBase
from .carps_spaces import (
    ARCH_HP, RECIPE_HP, _config_value, curve_archs, curve_space, finished_runs, load_bench, logged_space,
)

#: the learning curves' checkpoints a budget can reach (the valid ones from 150,000 steps on)
CURVE_STEPS: tuple[int, ...] = tuple(range(150_000, 1_000_001, 50_000))


def reached(budget: Any, fidelities: Sequence[int], name: str) -> int:
    """The last of ``fidelities`` (sorted) that ``budget`` reaches; ``None`` is the whole
    budget (CARP-S's single-fidelity optimisers send none). A budget below the first is
    refused with one line."""
    if budget is None:
        return int(fidelities[-1])
    if isinstance(budget, bool) or not isinstance(budget, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(budget)):
        raise InvalidArgumentError(f"budget = {budget!r} is not allowed; allowed: a number of {name}, "
                                   f"{fidelities[0]} to {fidelities[-1]}")
    i = int(np.searchsorted(np.asarray(fidelities, dtype=float), float(budget) + 1e-9, side="right")) - 1
    if i < 0:
        raise InvalidArgumentError(f"budget = {budget!r} is below the lowest fidelity; allowed: {fidelities[0]} to "
                                   f"{fidelities[-1]} {name}")
    return int(fidelities[i])


class NLPEpochs(_TabularBase):
    """NAS-Bench-NLP at every epoch (module doc). ``objective``: a loss of
    ``bench.nlp.objectives[dataset]`` (``val_loss`` on WikiText-2, ``test_loss`` on PTB
    - the PTB release names no validation objective)."""

    def __init__(self, dataset: str = "wikitext2", objective: str = "val_loss", data: str | None = None, seed: int = 0,
                 loggers: list[Any] | None = None) -> None:
        check_choice("dataset", dataset, DATASETS)
        self.bench = load_bench(data)
        self.dataset = dataset
        space = logged_space(self.bench, dataset, seed)  # PTB without its logs: DataNotFoundError naming build-data --ptb-logs
        super().__init__((objective,), self.bench.nlp.objectives[dataset], space, loggers)
        column = {"train_loss": "train_losses", "val_loss": "val_losses", "test_loss": "test_losses"}.get(objective)
        if column is None:
            raise InvalidArgumentError(f"objective = {objective!r} is not allowed; allowed values: ['train_loss', "
                                       "'val_loss', 'test_loss'] (the losses the logs hold per epoch)")
        # each recipe's first run (by init_time) among those that finished: the space lists
        # recipes with a finished run, so a diverged earlier run must not supply the losses
        first = finished_runs(self.bench, dataset).sort_values("init_time").drop_duplicates("recipe_id") \
            .set_index("recipe_id")
        ids = [int(r) for r in space[RECIPE_HP].choices]
        self.epochs = tuple(range(1, int(first.loc[ids[0], "hp_epochs"]) + 1))
        self._losses = {r: np.asarray(first.loc[r, column], dtype=float) for r in ids}
        self._elapsed = {r: np.cumsum(np.asarray(first.loc[r, "wall_times"], dtype=float)) for r in ids}
        self._logs = {r: str(first.loc[r, "log_name"]) for r in ids}
        self._best = min(float(self._cost({objective: float(v)})) for r in ids for v in self._losses[r])  # type: ignore[arg-type]

    @property
    def f_min(self) -> float | None:
        """The best cost any (recipe, budget) has in the table (a loss can be lowest before the last epoch)."""
        return self._best

    def _evaluate(self, trial_info: TrialInfo) -> TrialValue:
        start = time.time()
        rid = int(_config_value(trial_info.config, RECIPE_HP))
        if rid not in self._losses:
            raise InvalidArgumentError(f"recipe_id = {rid!r} is not allowed; allowed: one of the {len(self._losses)} "
                                       f"recipe ids whose {self.dataset} run finished every epoch")
        epoch = reached(trial_info.budget, self.epochs, "epochs")
        value = float(self._losses[rid][epoch - 1])
        end = time.time()
        name = self.objectives[0]
        return TrialValue(cost=self._cost({name: value}), time=end - start,
                          virtual_time=float(self._elapsed[rid][epoch - 1]), starttime=start, endtime=end,
                          additional_info={RECIPE_HP: rid, "epoch": epoch, name: value, "log_name": self._logs[rid]})


class FlexiBERTCurves(_TabularBase):
    """The 15 learning-curve archs at 150,000 ... 1,000,000 steps (module doc); cost -GLUE
    of ``bench.curve_point(arch, steps)``."""

    def __init__(self, data: str | None = None, seed: int = 0, loggers: list[Any] | None = None) -> None:
        self.bench = load_bench(data)
        super().__init__(("glue",), self.bench.objectives, curve_space(self.bench, seed), loggers)
        self._archs = frozenset(curve_archs(self.bench))
        self._best = min(self._cost({"glue": self.bench.curve_point(a, st, charge=False).glue})
                         for a in self._archs for st in CURVE_STEPS)

    @property
    def f_min(self) -> float | None:
        """The best cost any (arch, budget) has: the curves' best GLUE (above the
        benchmark's 100,000-step best: the curves run to 1,000,000 steps)."""
        return float(self._best)  # type: ignore[arg-type]

    def _evaluate(self, trial_info: TrialInfo) -> TrialValue:
        start = time.time()
        arch = Arch.coerce(_config_value(trial_info.config, ARCH_HP))
        if arch not in self._archs:
            raise InvalidArgumentError(f"arch = {str(arch)!r} is not allowed; allowed: one of the {len(self._archs)} "
                                       "archs with a learning curve")
        steps = reached(trial_info.budget, CURVE_STEPS, "pretraining steps")
        p = self.bench.curve_point(arch, steps, charge=False)
        end = time.time()
        return TrialValue(cost=self._cost({"glue": p.glue}), time=end - start, virtual_time=float(p.time_to_train),
                          starttime=start, endtime=end,
                          additional_info={ARCH_HP: str(arch), "id": int(p.id), "steps": steps, "glue": p.glue})
