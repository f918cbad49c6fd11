"""The recipe of a build: what decides an entry's meaning, and the key that names it.

Why a module of its own: :func:`~.entry.build_entry` runs a recipe and
:func:`~.preflight.preflight` checks one (every field, before any work); both need
:func:`make_recipe`, and the entry calls the preflight. Kept in ``entry`` it made the two
import each other; here both import it, and it imports neither.

:class:`Recipe` holds the semantics, the pretraining and finetuning configs, the GLUE
tasks and their source; its :attr:`~Recipe.key` keys entries in a results table, and
:meth:`~Recipe.record` is what an entry records (optimiser, schedule, seeds, versions,
deviations from the authors' recipe).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import re
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

import torch

from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.semantics import AS_TRAINED, SemanticsLike, get_semantics

from .glue import FINETUNE_EXECUTION_FIELDS, TASKS, FinetuneConfig
from .pretrain_config import EXECUTION_FIELDS as PRETRAIN_EXECUTION_FIELDS
from .pretrain_config import PretrainConfig

#: config fields that change how a build runs, not what it computes (checkpoint cadence,
#: logging, corpus packing, prefetching, compilation, the attention kernel, the AdamW
#: implementation): left out of the recipe key, so a resumed or faster build of the same
#: recipe finds its entry. Precision and the optimiser are part of the recipe (bf16 and
#: bias-corrected AdamW change the numbers).
EXECUTION_FIELDS = frozenset(PRETRAIN_EXECUTION_FIELDS) | frozenset(FINETUNE_EXECUTION_FIELDS)


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Everything that decides what an entry means: the semantics trained, the
    pretraining and finetuning configs, the GLUE tasks and their source. Two builds with
    the same :attr:`key` compute the same thing; a results table keys entries by arch
    *and* recipe, so a changed recipe is a new entry, never "already built"."""

    semantics: str
    pretrain: PretrainConfig
    finetune: FinetuneConfig
    tasks: tuple[str, ...]
    glue: str

    def fields(self) -> dict[str, Any]:
        """The recipe as plain JSON (execution-only fields left out)."""
        def keep(cfg: Any) -> dict[str, Any]:
            return {k: v for k, v in dataclasses.asdict(cfg).items() if k not in EXECUTION_FIELDS}

        return {"semantics": self.semantics, "pretrain": keep(self.pretrain), "finetune": keep(self.finetune),
                "tasks": sorted(self.tasks), "glue": self.glue}

    def record(self) -> dict[str, Any]:
        """The recipe as an entry records it: :meth:`fields` and its :attr:`key`, plus the
        optimiser and schedule those fields give, the seeds, the versions that ran, and
        every field that deviates from the authors' recipe for this semantics (an explicit
        option such as bias-corrected AdamW is listed there, never silent)."""
        return {"key": self.key, **self.fields(), "optimizer": {"pretrain": _optimizer(self.pretrain),
                                                                "finetune": _optimizer(self.finetune)},
                "schedule": {"pretrain": _schedule(self.pretrain.learning_rate, self.pretrain.steps, self.pretrain.warmup_steps),
                             "finetune": _schedule(self.finetune.learning_rate, None, None,
                                                   warmup_fraction=self.finetune.warmup_fraction,
                                                   layer_decay=self.finetune.layer_decay,
                                                   decay_layers=self.finetune.decay_layers)},
                "seeds": {"pretrain": self.pretrain.seed, "finetune": self.finetune.seed},
                "versions": versions(), "deviations": self.deviations()}

    def deviations(self) -> dict[str, dict[str, Any]]:
        """``{"pretrain.<field>" | "finetune.<field>": {"value", "authors"}}`` for every
        recipe field that differs from the authors' executed recipe (the configs' defaults:
        the as-trained recipe, whatever the semantics, so Table 3's finetuning of
        "as_specified" is listed too). The corpus, the run length and data limits count as
        well: a shorter run is a deviation."""
        base_pre = dataclasses.asdict(PretrainConfig(semantics=self.semantics))
        base_ft = dataclasses.asdict(FinetuneConfig())
        out: dict[str, dict[str, Any]] = {}
        for part, cfg, base in (("pretrain", self.pretrain, base_pre), ("finetune", self.finetune, base_ft)):
            for k, v in dataclasses.asdict(cfg).items():
                if k not in EXECUTION_FIELDS and v != base[k]:
                    out[f"{part}.{k}"] = {"value": v, "authors": base[k]}
        return out

    @property
    def key(self) -> str:
        """12 hex digits of the SHA-256 of :meth:`fields` as canonical JSON."""
        text = json.dumps(self.fields(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


#: the parameters the authors' optimiser leaves out of weight decay (by name)
WEIGHT_DECAY_EXCLUDES = ["LayerNorm", "layer_norm", "bias"]
SCHEDULE_KIND = "polynomial_decay(power=1) * min(1, step / warmup)"


def _optimizer(cfg: Any) -> dict[str, Any]:
    return {"name": cfg.optimizer, "bias_correction": cfg.optimizer == "adamw", "betas": [cfg.adam_beta1, cfg.adam_beta2],
            "eps": cfg.adam_eps, "weight_decay": cfg.weight_decay, "weight_decay_excludes": WEIGHT_DECAY_EXCLUDES,
            "max_grad_norm": cfg.max_grad_norm,
            "clipping": "global norm per replica, clipped gradients summed over replicas", "replicas": cfg.replicas}


def _schedule(lr: float, total: int | None, warmup: int | None, **extra: Any) -> dict[str, Any]:
    """The schedule of builders.pretrain.learning_rate: 0 at step 0, ``lr * (1 - W/T)`` at the
    end of warm-up. Finetuning's length depends on the task (``total_steps`` None; each task
    records its own ``steps`` and ``warmup_steps``)."""
    return {"kind": SCHEDULE_KIND, "total_steps": total, "warmup_steps": warmup, "peak_learning_rate": lr, **extra}


def versions() -> dict[str, Any]:
    """The versions a build ran with (the package, torch, numpy, Python)."""
    import numpy

    try:
        own = metadata.version("nasbench-bert")
    except metadata.PackageNotFoundError:
        own = None
    return {"nasbench_bert": own, "torch": torch.__version__, "numpy": numpy.__version__,
            "python": platform.python_version()}


#: the finetuning recipe per semantics, over :class:`FinetuneConfig`'s defaults (which are
#: the authors' executed recipe). "as_trained": what the benchmark's runs used
#: (``nas_runner.ipynb`` copies the pretraining hparams, learning rate 5e-4 included, and
#: never sets ``num_hidden_layers``, so ELECTRA's layer-wise decay counted 12 layers; pinned
#: by tests/reference/test_tf_recipe.py). "as_specified" / "authors": the paper's Table 3
#: (learning rate 3e-4, layer-wise decay over the arch's own depth), recorded as deviations.
BENCHMARK_FINETUNE: dict[str, dict[str, Any]] = {"as_trained": {"learning_rate": 5e-4, "decay_layers": 12},
                                                 "as_specified": {"learning_rate": 3e-4, "decay_layers": None},
                                                 "authors": {"learning_rate": 3e-4, "decay_layers": None}}


def _config(cls: Any, values: dict[str, Any], what: str) -> Any:
    allowed = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        raise InvalidArgumentError(f"{what} field(s) {unknown} not allowed; allowed: {allowed}")
    try:
        return cls(**values)
    except InvalidArgumentError as e:  # "batch_size = 0 ...": say whose (pretraining and finetuning both have one)
        raise InvalidArgumentError(f"{what}.{e}" if re.match(r"[A-Za-z_]\w* = ", str(e)) else str(e)) from None


def make_recipe(*, corpus: str = "hf:openwebtext", glue: str | Path = "hf:glue", tasks: Sequence[str] | None = None,
                pretrain_config: PretrainConfig | dict[str, Any] | None = None,
                finetune_config: FinetuneConfig | dict[str, Any] | None = None,
                semantics: SemanticsLike = AS_TRAINED) -> Recipe:
    """The :class:`Recipe` :func:`~.entry.build_entry` runs for these arguments, every field
    checked (a bad one raises :class:`InvalidArgumentError` naming it)."""
    sem = get_semantics(semantics)
    if tasks is None:
        task_list = list(TASKS)
    elif isinstance(tasks, str) or not isinstance(tasks, (list, tuple)):
        raise InvalidArgumentError(f"tasks = {tasks!r} is not allowed; allowed: None (all 8) or a list of {sorted(TASKS)}")
    else:
        task_list = list(tasks)
    bad = [t for t in task_list if t not in TASKS]
    if bad or not task_list:
        raise InvalidArgumentError(f"tasks = {task_list!r} is not allowed; allowed: one or more of {sorted(TASKS)}")
    if len(set(task_list)) != len(task_list):
        raise InvalidArgumentError(f"tasks = {task_list!r} names a task twice; allowed: each of {sorted(TASKS)} once")
    if not isinstance(glue, (str, os.PathLike)):
        raise InvalidArgumentError(f"glue = {glue!r} is not allowed; allowed: 'hf:glue' or a folder of GLUE TSVs")
    glue_src = str(glue) if str(glue).startswith("hf:") else str(Path(glue).resolve())
    pc = pretrain_config if isinstance(pretrain_config, PretrainConfig) else _config(
        PretrainConfig, {"corpus": corpus, "semantics": sem.name, **(pretrain_config or {})}, "pretrain_config")
    if get_semantics(pc.semantics) is not sem:
        raise InvalidArgumentError(f"pretrain_config.semantics = {pc.semantics!r} disagrees with semantics = {sem.name!r}")
    fc = finetune_config if isinstance(finetune_config, FinetuneConfig) else _config(
        FinetuneConfig, {**BENCHMARK_FINETUNE.get(sem.name, {}), **(finetune_config or {})}, "finetune_config")
    return Recipe(sem.name, pc, fc, tuple(task_list), glue_src)
