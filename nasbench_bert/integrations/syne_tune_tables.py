"""The tabular syne-tune blackboxes, at every fidelity the tables hold.

A syne-tune :class:`~syne_tune.blackbox_repository.blackbox_tabular.BlackboxTabular` is a
rectangle: every configuration has a value at every (seed, fidelity). The tables give
these rectangles:

=====================  ==========================================  =================================
blackbox               configurations                              fidelity
=====================  ==========================================  =================================
FlexiBERT ``final``    the 491 distinct trained archs, 2 seeds      ``steps`` = 100,000 (the protocol)
FlexiBERT ``curves``   the 15 learning-curve archs (the train        ``steps`` = 0, 150,000, ...,
                       ablation: ids 0-9, 11, 12, 15, 16, 19)        1,000,000 (19 checkpoints)
NLP ``ptb``, final     PTB's 8,794 runs (``RNN_results.csv``)        ``epoch`` = 50
NLP ``ptb``, epochs    PTB's logged runs (``build-data --ptb-logs``)  ``epoch`` = 1-50
NLP ``wikitext2``      the 341 WikiText-2 runs that finished, 2     ``epoch`` = 1-50
                       seeds (one recipe trained twice)
=====================  ==========================================  =================================

**What is left out, and why.** The release's 50,000- and 100,000-step curve points hold
the 500,000- and 1,000,000-step results (docs/errata.md, finding 11): for 10 archs the
point is lost, for 5 only GLUE can be recovered and the task scores are lost. A
rectangle cannot hold a hole, so both checkpoints are left out for all 15 archs
(:data:`BROKEN_CURVE_STEPS`); every value served is a point whose ``status`` is ``ok``,
and a table where one is not is refused. The NAS-Bench-NLP runs that diverged (loss NaN)
or stopped before the last epoch have no value at the later epochs: they are left out and
listed in the blackbox's ``dropped`` (the recipe ids).

**Elapsed time** (``metric_elapsed_time``, what a simulation advances its clock by) is
cumulative: NAS-Bench-NLP's is the sum of the log's per-epoch wall times up to the epoch;
FlexiBERT's is the arch's training time scaled by the steps, as
:meth:`~nasbench_bert.Benchmark.curve_point` charges it. PTB's final table records no
time: 1 per evaluation (a count, not seconds).

The public builders are :func:`~.syne_tune.to_syne_tune` and
:func:`~.syne_tune.nlp_to_syne_tune`; this module is below them.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
from syne_tune.config_space import choice, randint

from ..benchmark.curves import FINAL_STEPS
from ..checks import check_int
from ..data.tables import GLUE_TASKS
from ..errors import DataIntegrityError, InvalidArgumentError
from ..spaces.flexibert import Arch, field_codes, field_distances
from ..vocabulary import BenchmarkLike, CurveStatus, Direction, NLPBenchmarkLike, NLPDataset, ResultSource
from .syne_tune_encoding import (
    ELAPSED, FLAT_KEYS, GLUE_ERROR, SPACE_INDEX, CheckedObjective, NLPFidelity, arch_to_config, check_choice, config_to_arch, flat_config_space,
    steps_space,
)

#: curve checkpoints left out: their stored values are the 500,000 / 1,000,000-step files
#: (docs/errata.md, finding 11; :mod:`nasbench_bert.benchmark.curves`)
BROKEN_CURVE_STEPS = (50_000, 100_000)
#: hardware objectives of the trained (as_trained) model, from the measured table
HARDWARE_METRICS: tuple[str, ...] = ("latency_b1_ms", "latency_b32_ms", "peak_memory_b32_mib", "flops_per_seq")
#: ``outside`` -> whether an arch outside the table is answered (by its nearest evaluated arch)
ANSWERS_OUTSIDE: dict[str, bool] = {"nearest": True, "raise": False}
#: the per-epoch objectives of a NAS-Bench-NLP logs table, in column order
EPOCH_OBJECTIVES: tuple[str, ...] = ("metric_train_loss", "metric_val_loss", "metric_test_loss", "metric_num_params",
                                     ELAPSED)


# -- FlexiBERT ----------------------------------------------------------------------------------
class FlexiBERTTabular(CheckedObjective, BlackboxTabular):
    """A FlexiBERT table as a syne-tune ``BlackboxTabular`` that reads the flat encoding
    (inactive slots ignored) and answers archs outside the table by their nearest
    evaluated arch (``outside="nearest"``) or refuses them (``"raise"``). ``kind``:
    ``"final"`` or ``"curves"`` (which table it holds)."""

    def __init__(self, hyperparameters: pd.DataFrame, objectives_evaluations: np.ndarray, fidelity_values: np.ndarray,
                 objectives_names: list[str], outside: str = "nearest", kind: str = "final"):
        check_choice("outside", outside, tuple(ANSWERS_OUTSIDE))
        super().__init__(hyperparameters=hyperparameters, configuration_space=flat_config_space(),
                         fidelity_space=steps_space(np.asarray(fidelity_values)),
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


def flexibert_final(bench: BenchmarkLike, outside: str) -> FlexiBERTTabular:
    """The 491 distinct trained archs at 100,000 steps (seed s: the arch's s-th run in id order)."""
    archs = list(dict.fromkeys(bench.archs))
    runs = [bench.query_all(a) for a in archs]
    # hardware objectives only when every arch's trained model was measured: never a NaN objective
    bundled = [sorted((r for r in rs if r.source == ResultSource.BUNDLED), key=lambda r: r.id) for rs in runs]
    hw_metrics = HARDWARE_METRICS if all("as_trained" in r.hardware for rs in bundled for r in rs) else ()
    names = ["metric_glue", *(f"metric_{t}" for t in GLUE_TASKS), ELAPSED, "metric_num_params_as_trained",
             *(f"metric_{h}" for h in hw_metrics), f"metric_{GLUE_ERROR}", SPACE_INDEX]
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


def flexibert_curves(bench: BenchmarkLike, outside: str) -> FlexiBERTTabular:
    """The 15 learning-curve archs at every checkpoint with a valid point (module doc)."""
    ids = bench.curve_ids()
    steps = np.array([int(s) for s in bench.curve(ids[0])["steps"] if int(s) not in BROKEN_CURVE_STEPS])
    names = ["metric_glue", *(f"metric_{t}" for t in GLUE_TASKS), ELAPSED, SPACE_INDEX]
    y = np.empty((len(ids), 1, len(steps), len(names)))
    archs = []
    for i, k in enumerate(ids):
        base = bench.query(k, charge=False)
        archs.append(base.arch)
        c = bench.curve(k).set_index("steps")
        if sorted(int(s) for s in c.index if int(s) not in BROKEN_CURVE_STEPS) != steps.tolist():
            raise DataIntegrityError(f"the learning curve of arch id {k} has checkpoints {c.index.tolist()}, another "
                                     f"curve {steps.tolist()}: the curves table is damaged")
        for j, s in enumerate(steps):
            row = c.loc[s]
            if row["status"] != CurveStatus.OK:  # only BROKEN_CURVE_STEPS may be damaged (docs/errata.md, finding 11)
                raise DataIntegrityError(f"curve point (id {k}, {s} steps) has status {row['status']!r}")
            y[i, 0, j] = [row["glue_corrected"], *(row[t] for t in GLUE_TASKS), base.time_to_train * s / FINAL_STEPS,
                          base.arch.index]
    hp = pd.DataFrame([arch_to_config(a) for a in archs], columns=list(FLAT_KEYS))
    return FlexiBERTTabular(hp, y, steps, names, outside, "curves")


#: ``fidelity`` -> the FlexiBERT tabular blackbox's builder
FLEXIBERT_TABLES = {"final": flexibert_final, "curves": flexibert_curves}


# -- NAS-Bench-NLP ------------------------------------------------------------------------------
class NLPTabular(CheckedObjective, BlackboxTabular):
    """A NAS-Bench-NLP table keyed by ``recipe_id`` (the release's cells have no
    fixed-length encoding, so the configuration space is the evaluated set itself).
    ``dataset``: ``"ptb"`` or ``"wikitext2"``; ``fidelity``: ``"final"`` (epoch 50 only)
    or ``"epochs"``; ``dropped``: recipe ids left out (diverged or unfinished runs)."""

    def __init__(self, hyperparameters: pd.DataFrame, objectives_evaluations: np.ndarray, fidelity_values: np.ndarray,
                 objectives_names: list[str], dataset: str, dropped: tuple[int, ...] = (), fidelity: str = "epochs"):
        ids = hyperparameters["recipe_id"].tolist()
        super().__init__(hyperparameters=hyperparameters, configuration_space={"recipe_id": choice(ids)},
                         fidelity_space={"epoch": randint(int(min(fidelity_values)), int(max(fidelity_values)))},
                         objectives_evaluations=objectives_evaluations, fidelity_values=np.asarray(fidelity_values),
                         objectives_names=objectives_names)
        self.dataset, self.dropped, self.fidelity = dataset, tuple(dropped), fidelity
        self._row = {int(r): i for i, r in enumerate(ids)}

    def _objective_function(self, configuration: dict[str, Any] | int, fidelity: dict[str, Any] | None = None,
                            seed: int | None = None) -> Any:
        if isinstance(configuration, Mapping):
            rid = configuration.get("recipe_id")
            if rid not in self._row:
                raise InvalidArgumentError(f"config['recipe_id'] = {rid!r} is not allowed; allowed: one of the "
                                           f"{len(self._row)} recipe ids of this {self.dataset} table")
            configuration = self._row[rid]
        if fidelity is None:  # every epoch, as syne-tune's table answers
            return super()._objective_function(int(configuration), fidelity=None, seed=seed)
        # syne-tune's table answers a row index with every fidelity, whatever ``fidelity`` says: look it up here
        value = next(iter(fidelity.values()))
        if value not in self.fidelity_map:
            raise InvalidArgumentError(f"epoch = {value!r} is not allowed; allowed values: {self.fidelity_values.tolist()}")
        s = check_int("seed", seed, low=0, high=self.num_seeds - 1, none=True)  # a run index, not an RNG seed
        s = int(np.random.randint(0, self.num_seeds)) if s is None else s
        y = self.objectives_evaluations[int(configuration), s, self.fidelity_map[value]]
        return dict(zip(self.objectives_names, y.tolist()))


def nlp_ptb_final(nlp: NLPBenchmarkLike) -> NLPTabular:
    """PTB's 8,794 final results (``RNN_results.csv``), epoch 50 only."""
    df = nlp.ptb
    names = ["metric_test_loss", "metric_perplexity", "metric_bits_per_word", "metric_num_params", ELAPSED]
    y = np.stack([df["test_loss"], df["perplexity"], df["bits_per_word"], df["num_params"].astype(float),
                  np.ones(len(df))], axis=1).astype(float)[:, None, None, :]
    hp = pd.DataFrame({"recipe_id": df["recipe_id"].astype(int).tolist()})
    return NLPTabular(hp, y, np.array([50]), names, "ptb", fidelity="final")


def nlp_epochs(df: pd.DataFrame, dataset: str) -> NLPTabular:
    """Every epoch of a NAS-Bench-NLP logs table (``nlp_wikitext2``, ``nlp_ptb_logs``):
    the runs that finished every epoch with finite losses, one recipe's runs on the seed
    axis in ``init_time`` order; the others' recipe ids in ``dropped``."""
    epochs = int(df["hp_epochs"].max())
    complete = [not bool(d) and int(n) == epochs for d, n in zip(df["diverged"], df["epochs_completed"])]
    ok, left = df[complete], df[[not c for c in complete]]
    if ok.empty:
        raise DataIntegrityError(f"{dataset}: no run finished its {epochs} epochs")
    groups = {rid: g.sort_values("init_time") for rid, g in ok.groupby("recipe_id", sort=True)}
    seeds = max(len(g) for g in groups.values())
    y = np.empty((len(groups), seeds, epochs, len(EPOCH_OBJECTIVES)))
    for i, g in enumerate(groups.values()):
        for s in range(seeds):
            r = g.iloc[min(s, len(g) - 1)]
            y[i, s] = np.stack([r["train_losses"], r["val_losses"], r["test_losses"], np.full(epochs, float(r["num_params"])),
                                np.cumsum(r["wall_times"])], axis=1)
    if not np.isfinite(y).all():
        raise DataIntegrityError(f"{dataset}: a run that did not diverge has a non-finite curve value")
    hp = pd.DataFrame({"recipe_id": [int(k) for k in groups]})
    dropped = tuple(int(r) for r in left["recipe_id"])
    return NLPTabular(hp, y, np.arange(1, epochs + 1), list(EPOCH_OBJECTIVES), dataset, dropped, "epochs")


def nlp_table(nlp: NLPBenchmarkLike, dataset: str, fidelity: str) -> NLPTabular:
    """The NAS-Bench-NLP blackbox of ``dataset`` at ``fidelity`` (``"final"``: PTB's final
    results; ``"epochs"``: the logs, WikiText-2's or, when the data holds them, PTB's)."""
    if dataset == NLPDataset.WIKITEXT2:
        if fidelity != NLPFidelity.EPOCHS:
            raise InvalidArgumentError(f"fidelity = {fidelity!r} is not allowed for wikitext2; allowed values: ['epochs'] "
                                       "(its logs hold every epoch)")
        return nlp_epochs(nlp.wikitext2, NLPDataset.WIKITEXT2.value)
    if fidelity == NLPFidelity.FINAL:
        return nlp_ptb_final(nlp)
    return nlp_epochs(nlp.ptb_logs, NLPDataset.PTB.value)  # no logs in the data: DataNotFoundError naming build-data --ptb-logs


# -- directions ---------------------------------------------------------------------------------
def metric_modes(objectives: Mapping[str, Any], names: list[str]) -> dict[str, str]:
    """syne-tune's ``mode`` (``"max"`` / ``"min"``) of each reported metric, read from the
    benchmark's task metadata (``bench.objectives``, :mod:`nasbench_bert.data.objectives`):
    ``metric_<name>`` takes its objective's direction and ``metric_glue_error`` the
    opposite of GLUE's; the costs without an objective of their own (elapsed time, the
    measured hardware) are minimised; ``space_index`` is no objective. Every blackbox made
    here carries it as ``blackbox.metric_modes``."""
    out: dict[str, str] = {}
    for name in names:
        key = name.removeprefix("metric_")
        if key in objectives:
            out[name] = objectives[key].direction
        elif key == GLUE_ERROR:
            out[name] = Direction.MIN.value if objectives["glue"].direction == Direction.MAX else Direction.MAX.value
        elif name == ELAPSED:
            out[name] = objectives["time_to_train"].direction if "time_to_train" in objectives else "min"
        elif key in HARDWARE_METRICS:
            out[name] = "min"
        elif key in ("train_loss", "val_loss"):  # the logs' other losses: minimised, as the test loss
            out[name] = objectives["test_loss"].direction if "test_loss" in objectives else "min"
    return out
