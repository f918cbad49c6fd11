"""``build_entry(arch)``: pretrain with ELECTRA, finetune on GLUE, and write an entry in
the release's JSON form (validated against ``schemas/flexibert_entry.schema.json``).

Sweeps run through an executor: ``"local"`` (one process, the default), ``"ray"``
(one Ray task per arch, one GPU per task when the cluster has GPUs; see
:func:`ray_resources`) or ``"slurm"`` (a SLURM job array through submitit, sized by a
:class:`~nasbench_bert.slurm.SlurmResources`; each array task writes its entry into the
results table, so a rerun builds only the missing ones).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import platform
import statistics
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Sequence

import torch

from nasbench_bert.data.schemas import validate_entry as _validate
from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.semantics import AS_TRAINED, SemanticsLike, get_semantics
from nasbench_bert.sizes import flexibert_num_params
from nasbench_bert.slurm import SlurmResources, check_slurm
from nasbench_bert.spaces.flexibert import Arch

from .accelerator import resolve_device
from .glue import TASKS, FinetuneConfig, finetune
from .preflight import preflight
from .pretrain import pretrain
from .pretrain_config import PretrainConfig

# the recipe lives in .recipe (preflight needs it too, and entry calls preflight); its
# public names stay importable from here, where callers and tests have always found them
from .recipe import BENCHMARK_FINETUNE as BENCHMARK_FINETUNE
from .recipe import EXECUTION_FIELDS as EXECUTION_FIELDS
from .recipe import SCHEDULE_KIND as SCHEDULE_KIND
from .recipe import WEIGHT_DECAY_EXCLUDES as WEIGHT_DECAY_EXCLUDES
from .recipe import Recipe as Recipe
from .recipe import make_recipe as make_recipe
from .recipe import versions as versions
from .results import ResultsTable


def validate_entry(entry: dict[str, Any], *, require_recipe: bool = False) -> None:
    """Raise ``ValueError`` naming the field when ``entry`` breaks the entry schema
    (the schema ships with the package: :func:`nasbench_bert.data.schemas.validate_entry`).
    ``require_recipe``: the entry must carry its ``recipe`` (every entry :func:`build_entry`
    writes does; tables from before recipes were recorded still load without one)."""
    _validate(entry)
    if require_recipe and "recipe" not in entry:
        raise ValueError("entry lacks 'recipe': a regenerated entry records the recipe it was built with "
                         "(builders.entry.Recipe.record)")


def environment(device: str) -> dict[str, Any]:
    def ver(p: str) -> str | None:
        try:
            return metadata.version(p)
        except metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version(), "platform": platform.platform(), "machine": platform.machine(),
            "torch": torch.__version__, "nasbench_bert": ver("nasbench-bert"), "device": device,
            "cuda": torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "threads": torch.get_num_threads()}


def build_entry(
    arch: Any,
    *,
    corpus: str = "hf:openwebtext",
    glue: str | Path = "hf:glue",
    tasks: Sequence[str] | None = None,
    pretrain_config: PretrainConfig | dict[str, Any] | None = None,
    finetune_config: FinetuneConfig | dict[str, Any] | None = None,
    results: str | Path | None = None,
    workdir: str | Path | None = None,
    id: int | None = None,
    device: str | None = None,
    semantics: SemanticsLike = AS_TRAINED,
) -> dict[str, Any]:
    """Regenerate one benchmark entry for ``arch`` (any of the 10.6M).

    ``corpus``: ``hf:<dataset>`` or ``text:<path>``; ``glue``: ``hf:glue`` or a folder of
    GLUE-format task folders (a single task folder is accepted too); ``tasks``: default
    all 8, else those given (the ``glue`` score is the mean of the tasks run).
    With ``results`` the entry is written to that :class:`ResultsTable` atomically under
    the arch and the :class:`Recipe`'s key: the same arch with the same recipe is
    returned without rebuilding, another recipe (more steps, other tasks, another
    semantics) is a new entry, and concurrent builders skip archs another one has
    claimed. ``workdir`` keeps pretraining checkpoints (per arch and recipe), so a
    killed build resumes.

    ``semantics`` is the model trained (:mod:`nasbench_bert.semantics`): the default
    ``"as_trained"`` reproduces the benchmark - the model the authors' TensorFlow code
    built, finetuned with its recipe (learning rate 5e-4, layer-wise decay over 12
    layers, as the runner left them) unless ``finetune_config`` says otherwise;
    ``"as_specified"`` trains the arch as the paper specifies it (every operation as
    named), finetuned with Table 3's settings: a corrected benchmark. The entry
    records which.
    """
    # every input (corpus, GLUE files, folders, recipe fields) checked before the first step
    recipe = preflight([arch], corpus=corpus, glue=glue, tasks=tasks, pretrain_config=pretrain_config,
                       finetune_config=finetune_config, results=results, workdir=workdir, semantics=semantics,
                       device=device, id=id)
    a = Arch.coerce(arch)
    sem, pc, fc, tasks = get_semantics(recipe.semantics), recipe.pretrain, recipe.finetune, list(recipe.tasks)
    dev = str(resolve_device(device or "auto"))  # a GPU when there is one (Ray's CUDA_VISIBLE_DEVICES picks which)
    table = ResultsTable(results) if results is not None else None
    if table is not None and table.has(a, recipe.key):
        return table.get(a, recipe.key)  # type: ignore[return-value]

    def work() -> dict[str, Any]:
        wd = Path(workdir) / ResultsTable.key(a, recipe.key) if workdir is not None else None
        t0 = time.perf_counter()
        pre = pretrain(a, pc, workdir=wd, device=dev)
        enc = pre.model.discriminator
        per_task = {t: finetune(enc, t, glue, pre.tokenizer, fc, dev) for t in tasks}
        secs = time.perf_counter() - t0
        scores = {TASKS[t].release_key: round(r["score"], 4) for t, r in per_task.items()}
        scores["glue"] = statistics.fmean(scores.values())
        entry = {
            "id": id, "is_running": False, "completed": True, "time_to_train": secs, "scores": scores,
            "hparams": {"learning_rate": pc.learning_rate, "train_batch_size": pc.batch_size, "eval_batch_size": fc.batch_size,
                        "num_train_steps": pc.steps, "model_hparam_overrides": a.to_release()},
            "num_params": flexibert_num_params(a, sem), "semantics": sem.name, "source": "regenerated", "arch": str(a),
            "tasks": {t: {k: v for k, v in r.items() if k != "task"} for t, r in per_task.items()},
            "pretraining": {"config": dataclasses.asdict(pc), "final_loss": pre.losses[-1], "first_loss": pre.losses[0],
                            "tokens_per_second": pre.tokens_per_second,
                            "steady_tokens_per_second": None if math.isnan(pre.steady_tokens_per_second) else pre.steady_tokens_per_second,
                            "resumed_from_step": pre.resumed_from,
                            "tokenizer": pre.tokenizer.name, "finetune_config": dataclasses.asdict(fc)},
            "environment": environment(dev),
            "recipe": recipe.record(),
        }
        validate_entry(entry, require_recipe=True)
        if table is not None:
            table.write(entry)
        return entry

    if table is None:
        return work()
    with table.claim(a, recipe.key):
        if table.has(a, recipe.key):  # finished by another builder while we waited
            return table.get(a, recipe.key)  # type: ignore[return-value]
        return work()


def ray_resources(cluster: dict[str, float], gpus_per_arch: float | None = None, cpus_per_arch: float = 1,
                  device: str | None = None) -> dict[str, float]:
    """The resources of one arch's Ray task (``num_cpus``, ``num_gpus``) on a cluster with
    ``cluster`` resources (``ray.cluster_resources()``).

    ``device`` is the one given to :func:`build_entry`: ``"cuda"`` (or ``"cuda:<i>"``)
    asks for one GPU per arch, ``"cpu"`` for none, and ``None`` / ``"auto"`` for one when
    the cluster has any. Ray then sets ``CUDA_VISIBLE_DEVICES`` in the task to the GPU it
    grants, so "auto" inside the task finds exactly that GPU, and a task granted none
    trains on its CPUs rather than on a GPU another task holds.

    ``gpus_per_arch`` overrides the count: a fraction such as 0.5 packs two small archs
    on one GPU, a whole number gives an arch several. Requests that could never be
    scheduled or would never use what they hold (GPUs on a cluster without any, GPUs for
    ``device="cpu"``, none for ``device="cuda"``) are an ``InvalidArgumentError``.
    """
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf

    if not number(cpus_per_arch) or cpus_per_arch == 0:
        raise InvalidArgumentError(f"cpus_per_arch = {cpus_per_arch!r} is not allowed; allowed: a number > 0")
    if gpus_per_arch is not None and not number(gpus_per_arch):
        raise InvalidArgumentError(f"gpus_per_arch = {gpus_per_arch!r} is not allowed; allowed: None or a number >= 0")
    if device is not None and not (isinstance(device, str) and (device in ("auto", "cpu", "cuda") or
                                                                device.startswith("cuda:"))):
        raise InvalidArgumentError(f"device = {device!r} is not allowed; allowed values: None, 'auto', 'cpu', 'cuda', "
                                   "'cuda:<index>'")
    wants_cuda = isinstance(device, str) and device.startswith("cuda")
    have = float(cluster.get("GPU", 0))
    if gpus_per_arch is None:
        gpus = 1.0 if wants_cuda or (device != "cpu" and have >= 1) else 0.0
    else:
        gpus = float(gpus_per_arch)
    if gpus > 0 and have <= 0:
        raise InvalidArgumentError(f"gpus_per_arch = {gpus_per_arch!r}, device = {device!r} is not allowed: the Ray cluster "
                                   "has no GPUs; allowed here: gpus_per_arch None or 0, device None, 'auto' or 'cpu'")
    if gpus > 0 and device == "cpu":
        raise InvalidArgumentError(f"gpus_per_arch = {gpus_per_arch!r} is not allowed with device = 'cpu' (the GPUs would "
                                   "sit idle); allowed there: None or 0")
    if gpus == 0 and wants_cuda:
        raise InvalidArgumentError(f"gpus_per_arch = 0 is not allowed with device = {device!r} (Ray would hide every GPU "
                                   "from the task); allowed there: None or a number > 0")
    if gpus > 1 and gpus != int(gpus):
        raise InvalidArgumentError(f"gpus_per_arch = {gpus_per_arch!r} is not allowed; allowed: a fraction <= 1 or a whole number")
    return {"num_cpus": float(cpus_per_arch), "num_gpus": gpus}


def build_many(archs: Iterable[Any], *, executor: str = "local", ray_address: str | None = None,
               gpus_per_arch: float | None = None, cpus_per_arch: float = 1, slurm: SlurmResources | None = None,
               **kw: Any) -> list[dict[str, Any] | None]:
    """Build entries for many archs. ``executor="ray"`` runs one Ray task per arch
    (``ray_address`` joins a cluster; default a local instance). Each task asks for
    :func:`ray_resources` - one GPU per arch when ``device="cuda"`` is requested or,
    by default, when the cluster has GPUs, unless ``gpus_per_arch`` says otherwise -
    and trains on the GPU Ray gives it (``CUDA_VISIBLE_DEVICES``; the entry's
    ``environment`` records it). ``executor="slurm"`` submits one job array, one arch per
    array task, with ``slurm``'s resources (:class:`~nasbench_bert.slurm.SlurmResources`:
    ``gpus_per_node=1`` for a GPU per arch); give ``results`` (and ``workdir``) on a file
    system the nodes share: each array task writes its entry there, so after a killed task
    the same call builds only the missing entries (and resumes a pretraining from its last
    checkpoint). ``kw`` goes to :func:`build_entry`. Archs claimed by another builder give
    ``None``."""
    from .results import ArchClaimed

    archs = list(archs)
    known = set(inspect.signature(build_entry).parameters) - {"arch"}
    unknown = sorted(set(kw) - known)
    if unknown:
        raise InvalidArgumentError(f"argument(s) {unknown} not allowed; allowed: {sorted(known)} (of build_entry)")
    if "id" in kw:
        raise InvalidArgumentError("id is not allowed in build_many (one id cannot name many entries); call build_entry")
    # the whole sweep's inputs checked once, before any arch is built or a Ray task started
    preflight(archs, executor=executor, **kw)
    archs = [Arch.coerce(a) for a in archs]
    res = check_slurm(executor, slurm)
    if executor in ("local", "slurm") and (gpus_per_arch is not None or cpus_per_arch != 1):
        raise InvalidArgumentError(f"gpus_per_arch = {gpus_per_arch!r}, cpus_per_arch = {cpus_per_arch!r} are not allowed "
                                   f"with executor = {executor!r}; allowed there: the defaults (None, 1); they size Ray "
                                   "tasks (SLURM array tasks: slurm=SlurmResources(gpus_per_node=..., cpus_per_task=...))")
    if executor == "local":
        out: list[dict[str, Any] | None] = []
        for a in archs:
            try:
                out.append(build_entry(a, **kw))
            except ArchClaimed:
                out.append(None)
        return out
    if res is not None:
        return _build_on_slurm(archs, res, kw)
    if executor != "ray":
        raise InvalidArgumentError(f"executor = {executor!r} is not allowed; allowed values: ['local', 'ray', 'slurm']")
    import ray

    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
    res = ray_resources(ray.cluster_resources(), gpus_per_arch, cpus_per_arch, kw.get("device"))

    @ray.remote
    def _task(arch_str: str, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return build_entry(arch_str, **kwargs)
        except ArchClaimed:
            return None

    return ray.get([_task.options(**res).remote(str(a), kw) for a in archs])


def _build_on_slurm(archs: Sequence[Arch], res: SlurmResources, kw: dict[str, Any]) -> list[dict[str, Any] | None]:
    """:func:`build_many` on SLURM: one array task per arch by default (a build takes
    hours; ``tasks_per_job`` packs several, built one after the other)."""
    import functools

    from nasbench_bert.executors import run_tasks

    device = kw.get("device")
    if isinstance(device, str) and device.startswith("cuda") and res.gpus_per_node == 0:
        raise InvalidArgumentError(f"device = {device!r} is not allowed with slurm gpus_per_node = 0 (the array tasks "
                                   "would have no GPU); allowed: gpus_per_node >= 1 (--slurm-gpus 1), or device None, "
                                   "'auto' or 'cpu'")
    out: list[dict[str, Any] | None] = [None] * len(archs)
    run_tasks(functools.partial(_build_one, kwargs=kw), [str(a) for a in archs], out.__setitem__, executor="slurm",
              slurm=res)
    return out


def _build_one(arch: str, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """One arch's build in an array task (module-level: submitit pickles it by name);
    None when another builder holds the arch's claim."""
    from .results import ArchClaimed

    try:
        return build_entry(arch, **kwargs)
    except ArchClaimed:
        return None
