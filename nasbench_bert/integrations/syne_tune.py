"""syne-tune blackboxes of the benchmarks, for syne-tune's simulator and repository.

syne-tune simulates HPO on a :class:`~syne_tune.blackbox_repository.Blackbox`: a
configuration space, one fidelity axis and objectives named ``metric_*``, run through
:class:`~syne_tune.blackbox_repository.UserBlackboxBackend`. This module is the public
face of the syne-tune adapter:

* :func:`to_syne_tune` - FlexiBERT. ``oracle="tabular"`` is a
  :class:`~syne_tune.blackbox_repository.blackbox_tabular.BlackboxTabular` of the 491
  distinct trained archs (``fidelity="final"``, 100,000 steps, every GLUE task) or of
  the 15 learning-curve archs (``fidelity="curves"``, 0 ... 1,000,000 steps);
  ``oracle="surrogate"`` answers for all 10,621,440 archs from the package's surrogate;
* :func:`nlp_to_syne_tune` - NAS-Bench-NLP: PTB's final results, PTB per epoch (when the
  data holds its training logs) and WikiText-2 per epoch;
* :func:`serialize_blackbox` / :func:`load_blackbox` - syne-tune's on-disk format, exact
  and never over a user's file (:mod:`.syne_tune_files`);
* :func:`simulate` - one simulated tuning run, returning every reported result.

Where the parts live: the flat encoding of FlexiBERT archs in :mod:`.syne_tune_encoding`,
the tables at every fidelity (and what is left out of them) in :mod:`.syne_tune_tables`,
the surrogate blackbox in :mod:`.syne_tune_surrogate`, the files in
:mod:`.syne_tune_files`, the named blackbox repository in :mod:`.syne_tune_recipe`.

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
from typing import Any, Literal

import pandas as pd
from syne_tune.blackbox_repository.blackbox import Blackbox

from ..benchmark.curves import FINAL_STEPS
from ..checks import check_bench, check_nlp_bench
from ..errors import InvalidArgumentError
from ..vocabulary import BenchmarkLike, Direction, NLPBenchmarkLike
from .syne_tune_encoding import (
    ELAPSED, FLAT_KEYS, INACTIVE, LAYER_KEYS, MAX_LAYERS, OPERATION_NAMES, SPACE_INDEX, NLPFidelity, arch_to_config,
    check_choice, config_to_arch, flat_config_space,
)
from .syne_tune_files import load_blackbox, serialize_blackbox
from .syne_tune_surrogate import FlexiBERTSurrogateBlackbox
from .syne_tune_tables import (
    ANSWERS_OUTSIDE, BROKEN_CURVE_STEPS, FLEXIBERT_TABLES, HARDWARE_METRICS, FlexiBERTTabular, NLPTabular, metric_modes,
    nlp_table,
)

__all__ = [
    "to_syne_tune", "nlp_to_syne_tune", "serialize_blackbox", "load_blackbox", "simulate", "check_metrics", "do_minimize",
    "metric_modes", "arch_to_config", "config_to_arch", "flat_config_space", "FlexiBERTTabular", "NLPTabular",
    "FlexiBERTSurrogateBlackbox", "FLAT_KEYS", "LAYER_KEYS", "MAX_LAYERS", "OPERATION_NAMES", "INACTIVE", "ELAPSED",
    "SPACE_INDEX", "FINAL_STEPS", "BROKEN_CURVE_STEPS", "HARDWARE_METRICS", "ANSWERS_OUTSIDE", "NLP_FIDELITIES",
]

#: ``nlp_to_syne_tune``'s ``fidelity``: PTB's final results, or every epoch of the logs
NLP_FIDELITIES: tuple[str, ...] = tuple(f.value for f in NLPFidelity)
#: ``dataset`` -> the fidelity :func:`nlp_to_syne_tune` gives it by default
_NLP_DEFAULT_FIDELITY = {"ptb": "final", "wikitext2": "epochs"}


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
    are minimised together), and ``space_index`` beside them (not an objective); 2 seeds
    (the repeated archs' runs).
    ``fidelity="curves"``: the 15 learning-curve archs at 0, 150,000, ..., 1,000,000
    steps (the broken 50,000 / 100,000 checkpoints left out); elapsed time scaled by steps.
    ``oracle="surrogate"``: :class:`FlexiBERTSurrogateBlackbox` over the whole space;
    ``noisy=True`` (with ``seed``, ``num_seeds``) makes it the noisy simulated benchmark.
    """
    bench = check_bench(bench)
    check_choice("oracle", oracle, tuple(_ORACLES))
    check_choice("fidelity", fidelity, tuple(FLEXIBERT_TABLES))
    check_choice("outside", outside, tuple(ANSWERS_OUTSIDE))
    bb = _ORACLES[oracle](bench, fidelity, outside, family, noisy, seed, num_seeds)
    bb.metric_modes = metric_modes(bench.objectives, list(bb.objectives_names))
    return bb


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
    return FLEXIBERT_TABLES[fidelity](bench, outside)


#: ``oracle`` -> the blackbox :func:`to_syne_tune` makes
_ORACLES = {"tabular": _tabular_blackbox, "surrogate": _surrogate_blackbox}


def do_minimize(blackbox: Blackbox, metric: str) -> bool:
    """What a syne-tune scheduler's ``do_minimize`` should be for ``metric`` of a blackbox
    made here (from its ``metric_modes``); a metric without a direction is named."""
    modes = getattr(blackbox, "metric_modes", {})
    if metric not in modes:
        raise InvalidArgumentError(f"metric = {metric!r} has no direction; allowed values: {sorted(modes)}")
    return modes[metric] == Direction.MIN


def nlp_to_syne_tune(bench: BenchmarkLike | NLPBenchmarkLike, dataset: Literal["ptb", "wikitext2"] = "ptb",
                     fidelity: Literal["final", "epochs"] | None = None) -> NLPTabular:
    """NAS-Bench-NLP as a syne-tune blackbox, hyperparameter ``recipe_id``. ``bench``: a
    :class:`~nasbench_bert.Benchmark` (its ``.nlp``) or an
    :class:`~nasbench_bert.NLPBenchmark`.

    ``"ptb"`` (``fidelity="final"``, the default): the 8,794 runs' final results
    (fidelity ``epoch`` = 50, the protocol's last), objectives ``metric_test_loss``,
    ``metric_perplexity``, ``metric_bits_per_word``, ``metric_num_params``; the PTB release
    records no time, so ``metric_elapsed_time`` is 1 per evaluation (a count, not
    seconds). ``"ptb"``, ``fidelity="epochs"``: every epoch of PTB's training logs, when
    the data holds them (``build-data --ptb-logs``), as WikiText-2's.
    ``"wikitext2"`` (``"epochs"``): the per-epoch curves (``epoch`` 1-50) of the runs that
    finished (the 4 diverged ones are listed in ``.dropped``): ``metric_train_loss``,
    ``metric_val_loss``, ``metric_test_loss``, ``metric_num_params`` and
    ``metric_elapsed_time``, the cumulative wall time; 2 seeds (one recipe trained twice).
    """
    check_choice("dataset", dataset, tuple(_NLP_DEFAULT_FIDELITY))
    fidelity = _NLP_DEFAULT_FIDELITY[dataset] if fidelity is None else fidelity
    check_choice("fidelity", fidelity, NLP_FIDELITIES)
    nlp = check_nlp_bench(bench)
    bb = nlp_table(nlp, dataset, fidelity)
    bb.metric_modes = metric_modes(nlp.objectives[dataset], list(bb.objectives_names))
    return bb


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
