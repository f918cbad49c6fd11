"""Hardware objectives: CPU inference latency, peak memory and FLOPs of FlexiBERT models.

Accuracy alone does not choose a model to deploy; hardware-aware NAS (HW-GPT-Bench,
HW-NAS-Bench) puts latency and memory beside it. This module measures them for one
model and sweeps them over many archs, the same way for every semantics
(:mod:`nasbench_bert.semantics`): the three semantics build different models from one
arch string (the authors' proxy model is always H = 256; the trained model is all
attention), so each gets its own figures.

What is measured, and why it is measured that way:

* **Latency** - one forward of the encoder (embeddings + layers, no task head) in eval
  mode under ``torch.inference_mode()``, on seeded random token ids with an all-ones
  attention mask, at sequence length 128 and batch 1 and 32. Warm-up runs are
  excluded (they pay for allocation and kernel selection); the figure is the median of
  the timed repeats, with the median absolute deviation beside it. The torch thread
  count is set (default 1, so that figures do not depend on what else the machine is
  running on its other cores) and recorded in every row.
* **Peak memory** - the model's weights (parameters and buffers) plus the largest
  number of bytes that torch's CPU allocator held live during one forward, read from
  the PyTorch profiler's allocation events (``profile_memory=True``). This is the CPU
  counterpart of ``torch.cuda.max_memory_allocated``: deterministic, unlike the
  process RSS, which also holds the interpreter, the libraries and the C allocator's
  caches.
* **FLOPs** - torch's own ``FlopCounterMode`` on one forward at batch 1, sequence 128
  (a multiply-add is 2 FLOPs; see :mod:`nasbench_bert.models.flops`). FLOPs scale
  linearly with the batch.

On a GPU (``device="cuda"``) the figures are the GPU's own objectives, in columns of their
own (``latency_gpu_b1_ms``, ``peak_memory_gpu_b32_mib``, ... and the GPU's name, see
:mod:`nasbench_bert.hardware_gpu`: CUDA events after warm-up, the allocator's
``max_memory_allocated``), never mixed into the CPU columns; the model is built on the CPU
from the same seed and moved, and the GPU defaults to more repeats
(:data:`GPU_SETTINGS`: a forward takes milliseconds there).

Archs that a semantics maps to the same model (many do: the trained model ignores the
operation names) are measured once and share the figures; ``model_key`` says which rows
share. Sweeps run on ``executor="local"`` (this process, or ``jobs`` worker processes)
or ``"ray"`` (one task per model, one CPU each), and resume from a cache folder.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import statistics
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pandas as pd

from .benchmark.flexibert import ensure_benchmark
from .benchmark.keys import flexibert_keys
from .checks import check_int, check_seed
from .devices import DEFAULT_DEVICE, check_device, is_cuda
from .errors import InvalidArgumentError
from .executors import check_executor, run_tasks
from .semantics import AS_SPECIFIED, AS_TRAINED, AUTHORS, VOCAB_SIZE, ModelPlan, Semantics, SemanticsLike, get_semantics
from .slurm import SlurmResources, check_slurm
from .spaces.flexibert import Arch
from .sweep import PartCache, SweepRun, run_sweep
from .vocabulary import BenchmarkLike, Executor, ExecutorKind

__all__ = ["MeasureSettings", "machine", "model_key", "measure", "measure_many", "peak_forward_bytes",
           "ALL_SEMANTICS", "HARDWARE_COLUMNS", "GPU_SETTINGS"]

#: the semantics a hardware table covers, in this order
ALL_SEMANTICS: tuple[str, ...] = (AUTHORS.name, AS_TRAINED.name, AS_SPECIFIED.name)

#: the measured columns of a hardware row (besides the keys and the settings)
HARDWARE_COLUMNS: tuple[str, ...] = (
    "latency_b1_ms", "latency_b1_mad_ms", "latency_b32_ms", "latency_b32_mad_ms",
    "peak_memory_b1_mib", "peak_memory_b32_mib", "activation_peak_b1_mib", "activation_peak_b32_mib",
    "flops_per_seq", "num_params", "threads",
)


@dataclass(frozen=True)
class MeasureSettings:
    """How a model is measured; part of every cache key and recorded in every row.

    ``repeats``/``warmup`` are per batch size, in the order of ``batches``.
    """

    seq: int = 128
    batches: tuple[int, ...] = (1, 32)
    repeats: tuple[int, ...] = (15, 3)
    warmup: tuple[int, ...] = (3, 1)
    threads: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("seq", self.seq, low=1, high=512)
        check_int("threads", self.threads, low=1, high=4096)
        check_seed("seed", self.seed, none=False)
        for name in ("batches", "repeats", "warmup"):
            v = getattr(self, name)
            if not isinstance(v, tuple) or len(v) != len(self.batches) or not v:
                raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a non-empty tuple of ints, one per "
                                           f"batch size in batches = {self.batches!r}")
            for x in v:
                check_int(name, x, low=1 if name != "warmup" else 0, high=10_000)
        if tuple(sorted(set(self.batches))) != tuple(sorted(self.batches)):
            raise InvalidArgumentError(f"batches = {self.batches!r} is not allowed; allowed: distinct batch sizes")

    @property
    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


#: the GPU's default settings: a forward takes milliseconds there, so more warm-up (cuBLAS
#: handles, kernel selection) and more repeats cost little and steady the median
GPU_SETTINGS = MeasureSettings(repeats=(50, 20), warmup=(10, 5))


def machine(device: str = DEFAULT_DEVICE) -> dict[str, Any]:
    """A description of this machine and software stack, for the table's manifest: the
    numbers mean nothing without it (on a GPU: its name and the CUDA version too)."""
    from ._torch import torch

    cpu = platform.processor() or ""
    meminfo = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            k, _, v = line.partition(":")
            meminfo[k] = v.strip()
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    return {
        "cpu": cpu or "unknown",
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "memory": meminfo.get("MemTotal", "unknown"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "device": device,
        **({"gpu": torch.cuda.get_device_name(torch.device(device)), "cuda": torch.version.cuda} if is_cuda(device) else {}),
    }


def model_key(plan: ModelPlan) -> str:
    """A short hash of everything the model is built from (the semantics and the plan,
    not the arch string): archs with equal keys are the same model."""
    layers = [[lp.mixing, lp.heads, lp.kernel, list(lp.ff_widths)] for lp in plan.layers]
    blob = json.dumps([plan.semantics.name, plan.hidden, plan.embedding_size, layers])
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the duration (C++ log lines that no
    Python setting silences); Python-level stderr is flushed first and restored after."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_forward_bytes(fn: Any, *args: Any) -> int:
    """The largest number of bytes torch's CPU allocator held live during ``fn(*args)``,
    counted from allocations made inside the call (tensors that existed before - the
    weights, the inputs - are not counted). Read from the PyTorch profiler's memory
    events (``profile_memory=True``)."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with _quiet_stderr():  # kineto writes a line to fd 2 at every start and stop
        prof.__enter__()
    try:
        out = fn(*args)
        del out
    finally:
        with _quiet_stderr():
            prof.__exit__(None, None, None)
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def _time(fn: Any, args: tuple, warmup: int, repeats: int) -> tuple[float, float]:
    """Median and median absolute deviation of ``repeats`` timed calls, in ms."""
    for _ in range(warmup):
        fn(*args)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn(*args)
        ts.append((time.perf_counter_ns() - t0) / 1e6)
    med = statistics.median(ts)
    return med, statistics.median(abs(t - med) for t in ts)


def measure(arch: Any, semantics: SemanticsLike = AS_TRAINED, settings: MeasureSettings | None = None,
            device: str = DEFAULT_DEVICE) -> dict[str, Any]:
    """Measure one model: latency per batch size, peak memory, FLOPs and parameters
    (see the module doc for what each figure means). Returns one row (a dict) with the
    columns of :data:`HARDWARE_COLUMNS` for the default batches (1 and 32), plus
    ``semantics``, ``model_key`` and ``settings``. Other batch sizes get columns named
    the same way (``latency_b<n>_ms`` ...). On a GPU (``device``, canonical: see
    :func:`nasbench_bert.devices.check_device`) the columns are
    :data:`~nasbench_bert.hardware_gpu.HARDWARE_GPU_COLUMNS` and ``device``."""
    from ._torch import torch

    from .models import build_flexibert, count_flops, num_params

    st = settings or MeasureSettings()
    sem = get_semantics(semantics)
    plan = arch if isinstance(arch, ModelPlan) else sem.plan(Arch.coerce(arch))
    if is_cuda(device):
        return _measure_gpu(plan, sem, st, device)
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(st.threads)
    try:
        model = build_flexibert(plan.arch, sem, seed=st.seed).eval()
        weights = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
        gen = torch.Generator().manual_seed(st.seed)
        row: dict[str, Any] = {"semantics": sem.name, "model_key": model_key(plan), "settings": st.key}
        with torch.inference_mode():
            for b, rep, warm in zip(st.batches, st.repeats, st.warmup):
                ids = torch.randint(1, VOCAB_SIZE, (b, st.seq), generator=gen)
                mask = torch.ones_like(ids)
                med, mad = _time(model, (ids, mask), warm, rep)
                act = peak_forward_bytes(model, ids, mask)
                row[f"latency_b{b}_ms"] = med
                row[f"latency_b{b}_mad_ms"] = mad
                row[f"activation_peak_b{b}_mib"] = act / 2**20
                row[f"peak_memory_b{b}_mib"] = (weights + act) / 2**20
            ids1 = torch.randint(1, VOCAB_SIZE, (1, st.seq), generator=gen)
            row["flops_per_seq"] = count_flops(model, ids1, torch.ones_like(ids1))
        row["num_params"] = num_params(model)
        row["threads"] = torch.get_num_threads()
        return row
    finally:
        torch.set_num_threads(prev_threads)


def _measure_gpu(plan: ModelPlan, sem: Semantics, st: MeasureSettings, device: str) -> dict[str, Any]:
    """:func:`measure` on a GPU: the model built on the CPU from the seed (the CPU run's
    weights), moved; the same seeded token ids, moved; the GPU figures of
    :func:`nasbench_bert.hardware_gpu.measure_on_gpu`."""
    from ._torch import torch

    from .hardware_gpu import measure_on_gpu
    from .models import build_flexibert, count_flops, num_params

    prev_threads = torch.get_num_threads()
    torch.set_num_threads(st.threads)
    try:
        model = build_flexibert(plan.arch, sem, seed=st.seed).eval().to(torch.device(device))
        gen = torch.Generator().manual_seed(st.seed)
        ids = [torch.randint(1, VOCAB_SIZE, (b, st.seq), generator=gen) for b in st.batches]
        row: dict[str, Any] = {"semantics": sem.name, "model_key": model_key(plan), "settings": st.key, "device": device,
                               **measure_on_gpu(model, ids, st.repeats, st.warmup, device)}
        ids1 = torch.randint(1, VOCAB_SIZE, (1, st.seq), generator=gen).to(torch.device(device))
        with torch.inference_mode():
            row["flops_per_seq"] = count_flops(model, ids1, torch.ones_like(ids1))
        row["num_params"] = num_params(model)
        row["threads"] = torch.get_num_threads()
        return row
    finally:
        torch.set_num_threads(prev_threads)


# -- sweeps ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HardwareTask:
    """One model to measure under one semantics and settings (a
    :class:`~nasbench_bert.sweep.SweepTask`); ``arch`` is any arch that builds it."""

    semantics: str
    key: str
    arch: str
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    #: where it is measured (canonical); a GPU's parts are keyed by the device and the
    #: GPU's name too (None: not known where the sweep starts, e.g. a SLURM login node).
    #: CPU parts keep the key they had before devices existed.
    device: str = DEFAULT_DEVICE
    gpu: str | None = None

    def identity(self) -> list[Any]:
        return [self.semantics, self.key, self.settings.key, *([self.device, self.gpu] if is_cuda(self.device) else [])]

    def expect(self) -> dict[str, Any]:
        on = {"device": self.device, **({"gpu": self.gpu} if self.gpu is not None else {})} if is_cuda(self.device) else {}
        return {"semantics": self.semantics, "model_key": self.key, "settings": self.settings.key, **on}

    def accepts(self, row: dict[str, Any]) -> bool:
        return row.get("error") is None


def _work(task: HardwareTask) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        row = measure(task.arch, task.semantics, task.settings, task.device)
        row["error"] = None
    except Exception as e:  # isolate: the sweep goes on, the row says why
        row = {"semantics": task.semantics, "model_key": task.key, "settings": task.settings.key,
               "error": f"{type(e).__name__}: {e}"}
    row["seconds"] = time.perf_counter() - t0
    return row


def _semantics_list(semantics: Any) -> list[Semantics]:
    """The semantics a sweep covers, each once (old and new names count as one)."""
    many = not isinstance(semantics, (str, Semantics)) and isinstance(semantics, Iterable)
    sems = [get_semantics(s) for s in (list(semantics) if many else [semantics])]
    if not sems:
        raise InvalidArgumentError(f"semantics = [] is not allowed; allowed: any of {list(ALL_SEMANTICS)}")
    twice = sorted({s.name for s in sems if sum(t.name == s.name for t in sems) > 1})
    if twice:
        raise InvalidArgumentError(f"semantics lists {twice} more than once (old and new names count as one); allowed: "
                                   f"each of {list(ALL_SEMANTICS)} at most once")
    return sems


def _gpu_name(device: str, executor: str) -> str | None:
    """The name of the GPU a local sweep measures on (part of its parts' key); None on the
    CPU, and under SLURM, where the array tasks' GPU is not known before they run."""
    if not is_cuda(device) or executor != ExecutorKind.LOCAL:
        return None
    from .hardware_gpu import gpu_name

    return gpu_name(device)


def measure_many(
    archs: Iterable[Any],
    semantics: Sequence[SemanticsLike] | SemanticsLike = ALL_SEMANTICS,
    *,
    settings: MeasureSettings | None = None,
    bench: BenchmarkLike | None = None,
    cache: str | os.PathLike[str] | None = None,
    executor: Executor = "local",
    jobs: int = 1,
    ray_address: str | None = None,
    shuffle_seed: int | None = 0,
    progress: bool = False,
    slurm: SlurmResources | None = None,
    device: str = DEFAULT_DEVICE,
) -> pd.DataFrame:
    """Measure every arch under every semantics; one row per (arch, semantics).

    ``archs``: benchmark ids, :class:`Arch` objects, strings or release dicts; ids are
    rows of ``bench``, and without one the benchmark is loaded here, once, only when an
    id is given. Archs a semantics maps to the same model are measured once
    (``model_key``; ``shared`` is True on the rows that reuse a measurement). Models are
    measured in a seeded random order (``shuffle_seed``; None keeps the given order), so
    that a slow drift of the machine does not line up with arch ids or semantics. With
    ``cache`` (a folder) the sweep engine (:mod:`nasbench_bert.sweep`) writes every
    finished model as one JSON part, atomically, and a later call with the same
    settings reuses it: an interrupted sweep resumes.

    ``executor``: ``"local"`` (this process, or ``jobs`` worker processes - each with
    ``settings.threads`` torch threads, so ``jobs x threads`` should not exceed the
    cores) or ``"ray"``: one Ray task per model, ``settings.threads`` CPUs each, spread
    over the cluster at ``ray_address`` (default: join or start a local instance), or
    ``"slurm"``: one SLURM job array through submitit, sized by ``slurm`` (a
    :class:`~nasbench_bert.slurm.SlurmResources`; CPUs per array task default to
    ``settings.threads``), each array task writing its parts into a shared cache. Latencies
    compare only across one node type (pick it with ``partition``), and other jobs on a
    node change them.

    ``device``: ``"cpu"`` (default), ``"cuda"``, ``"cuda:<i>"`` or ``"auto"``, checked first; on
    a GPU: the GPU objectives (:mod:`nasbench_bert.hardware_gpu`), :data:`GPU_SETTINGS`, and
    ``jobs > 1`` spawns workers that share it (each other's load in their latencies).
    """
    executor = check_executor(executor, ray_address)
    res = check_slurm(executor, slurm)
    device = check_device(device, executor=executor, slurm=res)
    jobs = check_int("jobs", jobs, low=1, high=1024)
    if settings is not None and not isinstance(settings, MeasureSettings):
        raise InvalidArgumentError(f"settings = {settings!r} is not allowed; allowed: a MeasureSettings or None")
    st = settings or (GPU_SETTINGS if is_cuda(device) else MeasureSettings())
    sems = _semantics_list(semantics)
    parts = PartCache.open(cache, "json", "model")
    gpu = _gpu_name(device, executor)
    if shuffle_seed is not None:
        shuffle_seed = check_seed("shuffle_seed", shuffle_seed)
    archs = list(archs) if isinstance(archs, Iterable) and not isinstance(archs, (str, bytes, dict)) else archs
    items = flexibert_keys(archs, ensure_benchmark(bench, archs if isinstance(archs, list) else ()))
    rows_key = [(ident, a, sem.name, model_key(sem.plan(a))) for ident, a in items for sem in sems]
    first: dict[tuple[str, str], HardwareTask] = {}  # each model is measured on the first arch that has it
    for _, a, s, k in rows_key:
        first.setdefault((s, k), HardwareTask(s, k, str(a), st, device, gpu))
    tasks = list(first.values())
    how = SweepRun(executor, jobs, ray_address, num_cpus=st.threads, shuffle_seed=shuffle_seed, slurm=res,
                   start_method="spawn" if is_cuda(device) else None,
                   label=(lambda todo, hits: f"hardware ({todo} models to measure, {hits} cached)") if progress else None)
    done = run_sweep(_work, tasks, parts, lambda t, row: row, how)
    results = {(t.semantics, t.key): {**row, "cached": hit} for t, (row, hit) in zip(tasks, done)}
    seen: set[tuple[str, str]] = set()
    out = []
    for ident, a, sname, k in rows_key:
        out.append({"id": ident, "arch": str(a), **results[(sname, k)], "shared": (sname, k) in seen})
        seen.add((sname, k))
    if not out:
        from .hardware_gpu import HARDWARE_GPU_COLUMNS

        cols = [*HARDWARE_GPU_COLUMNS, "device"] if is_cuda(device) else HARDWARE_COLUMNS
        return pd.DataFrame(columns=["id", "arch", "semantics", "model_key", *cols, "error"])
    return pd.DataFrame(out)


def noise(archs: Sequence[Any], semantics: SemanticsLike = AS_TRAINED, *, passes: int = 5,
          settings: MeasureSettings | None = None, jobs: int = 1, device: str = DEFAULT_DEVICE) -> pd.DataFrame:
    """Run-to-run noise: measure each arch ``passes`` times, interleaved (pass 1 over all
    archs, then pass 2, ...), so that each repeat is a fresh model and a fresh
    measurement minutes apart, under the same conditions as a sweep with the same
    ``jobs``. One row per (arch, pass); :func:`noise_summary` gives the relative spread.
    ``device``: as :func:`measure_many` (a GPU's rows carry the GPU columns)."""
    passes = check_int("passes", passes, low=2, high=1000)
    jobs = check_int("jobs", jobs, low=1, high=1024)
    device = check_device(device)
    st = settings or (GPU_SETTINGS if is_cuda(device) else MeasureSettings())
    sem = get_semantics(semantics)
    order = [(p, str(Arch.coerce(a))) for p in range(passes) for a in archs]
    tasks = [HardwareTask(sem.name, model_key(sem.plan(Arch.coerce(a))), a, st, device) for _, a in order]
    rows: list[dict[str, Any]] = [{} for _ in tasks]
    run_tasks(_work, tasks, rows.__setitem__, jobs=jobs, start_method="spawn" if is_cuda(device) else None)
    return pd.DataFrame([{"arch": a, "pass": p, **r} for (p, a), r in zip(order, rows)])


def noise_summary(df: pd.DataFrame, columns: Iterable[str] = ("latency_b1_ms", "latency_b32_ms",
                                                                 "peak_memory_b1_mib", "peak_memory_b32_mib",
                                                                 "flops_per_seq")) -> pd.DataFrame:
    """Per figure: the coefficient of variation across passes (std / mean of one arch's
    repeated measurements), as its median and maximum over archs, and the largest
    max/min ratio."""
    out = []
    for c in columns:
        g = df.groupby("arch")[c]
        cv = (g.std(ddof=1) / g.mean()).fillna(0.0)
        ratio = g.max() / g.min()
        out.append({"figure": c, "median_cv": float(cv.median()), "max_cv": float(cv.max()),
                    "max_ratio": float(ratio.max()) if len(ratio) else math.nan})
    return pd.DataFrame(out)


def settings_from_row(row: Mapping[str, Any]) -> MeasureSettings:
    """The :class:`MeasureSettings` recorded in a row's ``settings`` column."""
    d = json.loads(row["settings"])
    return MeasureSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
