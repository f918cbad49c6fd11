"""Sweeps on a SLURM cluster, through submitit (the ``[slurm]`` extra): ``executor="slurm"``.

Why a job array and worker-side writes: on a cluster the process that submits a sweep
(on a login node) is the one most likely to go away - a closed laptop, a login session
limit - and an array task is the one most likely to be killed (pre-emption, time or
memory limit, ``scancel``). So every array task writes each finished result itself, as
one atomic part of the sweep's cache (:class:`~nasbench_bert.sweep.PartCache`, on a
file system the nodes share), before it goes on to the next; a task killed anywhere
leaves whole parts only, and running the same command again computes only the parts
that are missing. A requeued task (submitit checkpoints on SLURM's pre-emption and
time-limit signal) starts its chunk again and skips the parts already there.

Each array task runs the same module-level work function as the ``local`` and ``ray``
executors, so the same rules hold in it: proxy workers compute with
:data:`~nasbench_bert.proxies.sweep.WORKER_THREADS` torch thread(s) and record it in each
part; hardware workers use their recorded ``threads`` setting.

:class:`SlurmResources` is what one array task asks SLURM for. ``cluster`` is an internal
choice: ``"slurm"`` (what users get) submits with ``sbatch``; ``"local"`` runs the same
submission, pickling, array and result path as local processes (submitit's
``LocalExecutor``), which is how the tests run it without a scheduler.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from enum import StrEnum
from typing import Any, Callable, Sequence

from .checks import check_choice, check_int, check_real
from .errors import IncompleteSweepError, InvalidArgumentError, MissingExtraError, SubmissionError
from .vocabulary import ExecutorKind

#: the one line a user without submitit sees (the CLI prints it alone)
MISSING = ("submitit is not installed; executor 'slurm' needs the [slurm] extra: pip install 'nasbench-bert[slurm]' "
           "(or pip install 'submitit>=1.5,<2')")

class Cluster(StrEnum):
    """Where array tasks run (submitit's ``cluster``): SLURM (``sbatch``), or local
    processes through the same submitit code path (tests, debugging)."""

    SLURM = "slurm"
    LOCAL = "local"


CLUSTERS: tuple[str, ...] = tuple(c.value for c in Cluster)

#: test hook: an array task SIGKILLs itself after finishing (and storing) this many tasks,
#: as SLURM's OOM killer or ``scancel --signal=KILL`` would; the resumption test sets it
KILL_AFTER_ENV = "NASBENCH_BERT_TEST_SLURM_KILL_AFTER"

_TIME = re.compile(r"^(?:(?P<d>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
                   r"|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?)$")


def load_submitit() -> ModuleType:
    """submitit, or :class:`MissingExtraError` naming the ``[slurm]`` extra (imported
    here, lazily: the package and its other executors never need it)."""
    try:
        import submitit
    except ModuleNotFoundError as e:
        if e.name != "submitit":  # submitit is there but one of its own imports failed: that error says more
            raise
        raise MissingExtraError(MISSING, name="submitit") from None
    return submitit


def time_minutes(v: Any) -> int:
    """A SLURM time limit in whole minutes: an int of minutes, or one of sbatch's
    ``--time`` strings (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS``); seconds round up, so a job never gets less than asked for."""
    allowed = "allowed: minutes (an int >= 1) or sbatch's --time forms 'MM', 'MM:SS', 'HH:MM:SS', 'D-HH', 'D-HH:MM', 'D-HH:MM:SS'"
    if isinstance(v, str):
        m = _TIME.match(v.strip())
        if m is None:
            raise InvalidArgumentError(f"time = {v!r} is not allowed; {allowed}")
        g = {k: int(x) if x is not None else 0 for k, x in m.groupdict().items()}
        if m.group("d") is not None:
            seconds = ((g["d"] * 24 + g["dh"]) * 60 + g["dm"]) * 60 + g["ds"]
        elif m.group("c") is not None:
            seconds = (g["a"] * 60 + g["b"]) * 60 + g["c"]
        else:
            seconds = g["a"] * 60 + g["b"]
        minutes = -(-seconds // 60)
    elif type(v) is int:
        minutes = v
    else:
        raise InvalidArgumentError(f"time = {v!r} is not allowed; {allowed}")
    if minutes < 1:
        raise InvalidArgumentError(f"time = {v!r} is not allowed (under a minute); {allowed}")
    return minutes


@dataclass(frozen=True)
class SlurmResources:
    """What each array task of a ``slurm`` sweep asks for, and where submitit keeps its
    files. ``None`` leaves a field to the cluster's defaults.

    ``tasks_per_job`` packs several archs (models) into one array task: a proxy arch
    takes seconds, and a cluster's scheduler is not made for one-second jobs. Each part is
    still written the moment it is computed.
    """

    partition: str | None = None
    #: minutes, or an sbatch --time string ("2:00:00", "1-00:00:00")
    time: int | str = 60
    #: CPUs per array task; None: what the sweep's worker uses (1 for proxies, ``threads``
    #: for hardware)
    cpus_per_task: int | None = None
    mem_gb: float | None = None
    gpus_per_node: int = 0
    #: array tasks running at once (sbatch --array=...%N)
    array_parallelism: int = 256
    tasks_per_job: int = 1
    account: str | None = None
    #: submitit's folder: job scripts, pickles, logs (one subfolder per job id); on a file
    #: system the nodes share
    folder: str | os.PathLike[str] = "slurm-logs"
    #: internal: "slurm", or "local" to run the array tasks as local processes (tests)
    cluster: str = "slurm"

    def __post_init__(self) -> None:
        for name in ("partition", "account"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, str) or not v.strip() or any(c.isspace() for c in v)):
                raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a SLURM {name} name or None")
        time_minutes(self.time)
        check_int("cpus_per_task", self.cpus_per_task, low=1, high=4096, none=True)
        check_real("mem_gb", self.mem_gb, low=0, low_open=True, none=True)
        check_int("gpus_per_node", self.gpus_per_node, low=0, high=64)
        check_int("array_parallelism", self.array_parallelism, low=1, high=100_000)
        check_int("tasks_per_job", self.tasks_per_job, low=1, high=1_000_000)
        if not isinstance(self.folder, (str, os.PathLike)) or not str(self.folder):
            raise InvalidArgumentError(f"folder = {self.folder!r} is not allowed; allowed: a folder (str or path)")
        check_choice("cluster", self.cluster, CLUSTERS)

    def parameters(self, default_cpus: int) -> dict[str, Any]:
        """submitit's ``update_parameters`` keywords (``slurm_*`` ones are ignored by the
        local cluster)."""
        p: dict[str, Any] = {"timeout_min": time_minutes(self.time), "cpus_per_task": self.cpus_per_task or default_cpus,
                             "gpus_per_node": self.gpus_per_node, "slurm_array_parallelism": self.array_parallelism,
                             "name": "nasbench-bert", "tasks_per_node": 1, "nodes": 1}
        if self.mem_gb is not None:
            p["mem_gb"] = self.mem_gb
        if self.partition is not None:
            p["slurm_partition"] = self.partition
        if self.account is not None:
            p["slurm_account"] = self.account
        return p


def check_slurm(executor: str, slurm: Any) -> SlurmResources | None:
    """The resources of a ``slurm`` sweep (default :class:`SlurmResources`), None for the
    other executors; resources given to another executor are refused, not ignored.
    Called before any work: a missing extra or a machine without ``sbatch`` is said at
    once, not after the local part of a sweep."""
    if slurm is not None and not isinstance(slurm, SlurmResources):
        raise InvalidArgumentError(f"slurm = {slurm!r} is not allowed; allowed: a SlurmResources or None")
    if executor != ExecutorKind.SLURM:
        if slurm is not None:
            raise InvalidArgumentError(f"slurm = {slurm!r} is not allowed with executor = {executor!r}; "
                                       "allowed there: None (resources size SLURM array tasks only)")
        return None
    res = slurm if slurm is not None else SlurmResources()
    load_submitit()
    if res.cluster == Cluster.SLURM:
        # submitit submits with sbatch and starts each array task with srun; without srun its
        # executor raises a bare RuntimeError, so both are looked for here, before any work
        missing = [c for c in ("sbatch", "srun") if shutil.which(c) is None]
        if missing:
            raise InvalidArgumentError(f"executor = 'slurm' needs SLURM's {missing[0]} on PATH (not found: "
                                       f"{', '.join(missing)}; run on a login node of the cluster); allowed on this "
                                       "machine: executor 'local' or 'ray'")
    return res


class ArrayTask:
    """One array task: runs ``fn`` on each task of its chunk, in order, and returns the
    results. Checkpointable: on SLURM's pre-emption or time-limit signal submitit requeues
    it with the same chunk (the work functions skip what the cache already holds)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, chunk: Sequence[Any]) -> list[Any]:
        kill_after = os.environ.get(KILL_AFTER_ENV)
        out = []
        for task in chunk:
            out.append(self.fn(task))
            if kill_after is not None and len(out) >= int(kill_after):
                os.kill(os.getpid(), signal.SIGKILL)  # pragma: no cover - the test hook: the process ends here
        return out

    def checkpoint(self, chunk: Sequence[Any]) -> Any:
        """Requeue this chunk as it was (submitit calls this on the signal)."""
        submitit = load_submitit()
        return submitit.helpers.DelayedSubmission(self, chunk)


def run_array(fn: Callable[[Any], Any], tasks: Sequence[Any], done: Callable[[int, Any], None], res: SlurmResources,
              default_cpus: int = 1) -> None:
    """Run ``fn`` on every task as a submitit job array (``tasks_per_job`` tasks per array
    task) and call ``done(position, result)`` for each, job by job as they finish. Jobs
    that end without a result are reported together at the end, in one
    :class:`IncompleteSweepError`, after every other job's results were handed over."""
    submitit = load_submitit()
    folder = Path(res.folder).resolve()
    ex = submitit.AutoExecutor(folder=folder / "%j", cluster=res.cluster)
    ex.update_parameters(**res.parameters(default_cpus))
    n = res.tasks_per_job
    chunks = [list(range(k, min(k + n, len(tasks)))) for k in range(0, len(tasks), n)]
    said = io.StringIO()  # submitit prints a refusing sbatch's stderr before raising it: said once, in our line
    try:
        with contextlib.redirect_stderr(said):
            jobs = ex.map_array(ArrayTask(fn), [[tasks[i] for i in c] for c in chunks])
    except submitit.core.utils.FailedJobError as e:  # sbatch said no: its own words, one line
        raise SubmissionError(refused(e, res, folder)) from None
    sys.stderr.write(said.getvalue())  # anything else submitit said on a submission that went through
    where = {job.job_id: c for job, c in zip(jobs, chunks)}
    local = res.cluster == Cluster.LOCAL
    if local:  # results on a local disk: no network file system to wait for (submitit waits 15 s)
        for job in jobs:
            job._results_timeout_s = 0
    failed: list[tuple[Any, BaseException]] = []
    poll = 0.2 if local else 15.0
    for job in submitit.helpers.as_completed(jobs, poll_frequency=poll):
        try:
            results = job.result()
        except Exception as e:  # killed, pre-empted past its requeues, out of time or memory, or a crash
            failed.append((job, e))
            continue
        for i, r in zip(where[job.job_id], results):
            done(i, r)
    if failed:
        lost = sum(len(where[j.job_id]) for j, _ in failed)
        job, e = failed[0]
        why = " ".join(str(e).split())[:400] or type(e).__name__  # submitit's message: which job, what it left
        raise IncompleteSweepError(
            f"{len(failed)} of {len(jobs)} SLURM array tasks ended without a result ({lost} of {len(tasks)} tasks; "
            f"first: job {job.job_id}: {type(e).__name__}: {why}); logs in {folder}. Every part an array task "
            "finished is in the cache: run the same command again to compute only the missing ones")


def refused(e: BaseException, res: SlurmResources, folder: Path) -> str:
    """The one line for a job array ``sbatch`` refused: what sbatch said, what was asked
    for, and that nothing ran (so the same command, fixed, is safe to run again)."""
    said = " ".join(str(e).split())[:400] or type(e).__name__
    asked = ", ".join(f"{k} = {v!r}" for k, v in (("partition", res.partition), ("account", res.account),
                                                   ("time", res.time), ("mem_gb", res.mem_gb),
                                                   ("gpus_per_node", res.gpus_per_node or None)) if v is not None)
    return (f"sbatch refused the job array: {said} (asked for {asked}); nothing was submitted or computed. Allowed: "
            f"what the cluster accepts (sinfo lists its partitions and limits); submitit's job script is in {folder}")


#: the ``--slurm-*`` option of each :class:`SlurmResources` field: the command line names
#: the option a user typed, never the field (``nasbench_bert.cli``'s error messages)
FIELD_FLAGS = {"partition": "--slurm-partition", "time": "--slurm-time", "cpus_per_task": "--slurm-cpus",
               "mem_gb": "--slurm-mem-gb", "gpus_per_node": "--slurm-gpus", "array_parallelism": "--slurm-array-parallelism",
               "tasks_per_job": "--slurm-tasks-per-job", "account": "--slurm-account", "folder": "--slurm-folder"}


#: each ``--slurm-*`` option's attribute of the parsed arguments and its default, in the
#: order a refusal names them: one table for the parser and for :func:`from_arguments`'s
#: "was it given?" (an option left at its default was not)
_OPTIONS: dict[str, tuple[str, Any]] = {
    "--slurm-partition": ("slurm_partition", None), "--slurm-cpus": ("slurm_cpus", None),
    "--slurm-mem-gb": ("slurm_mem_gb", None), "--slurm-account": ("slurm_account", None),
    "--slurm-time": ("slurm_time", "60"), "--slurm-gpus": ("slurm_gpus", 0),
    "--slurm-array-parallelism": ("slurm_array_parallelism", 256), "--slurm-tasks-per-job": ("slurm_tasks_per_job", 1),
    "--slurm-folder": ("slurm_folder", "slurm-logs"),
}


def add_arguments(p: Any) -> None:
    """The ``--slurm-*`` options of a command with ``--executor slurm`` (argparse)."""
    g = p.add_argument_group("SLURM", "with --executor slurm: one job array through submitit (the [slurm] extra)")
    d = {flag: default for flag, (_, default) in _OPTIONS.items()}
    g.add_argument("--slurm-partition", metavar="NAME", default=d["--slurm-partition"], help="partition (default: the cluster's)")
    g.add_argument("--slurm-time", metavar="TIME", default=d["--slurm-time"], help="time limit per array task: minutes or D-HH:MM:SS (default 60)")
    g.add_argument("--slurm-cpus", metavar="N", type=int, default=d["--slurm-cpus"], help="CPUs per array task (default: what one worker uses)")
    g.add_argument("--slurm-mem-gb", metavar="GB", type=float, default=d["--slurm-mem-gb"], help="memory per array task in GB (default: the cluster's)")
    g.add_argument("--slurm-gpus", metavar="N", type=int, default=d["--slurm-gpus"], help="GPUs per array task (default 0)")
    g.add_argument("--slurm-array-parallelism", metavar="N", type=int, default=d["--slurm-array-parallelism"], help="array tasks running at once (default 256)")
    g.add_argument("--slurm-tasks-per-job", metavar="N", type=int, default=d["--slurm-tasks-per-job"], help="archs/models per array task (default 1)")
    g.add_argument("--slurm-account", metavar="NAME", default=d["--slurm-account"], help="account to charge (default: yours)")
    g.add_argument("--slurm-folder", metavar="DIR", default=d["--slurm-folder"], help="submitit's job files and logs, on a shared file system")


def from_arguments(args: Any) -> SlurmResources | None:
    """:class:`SlurmResources` from the ``--slurm-*`` options when ``--executor slurm``
    (checked with :func:`check_slurm`: the extra, sbatch and srun); None otherwise, and an
    option given to another executor is refused. Cheap: commands call it before loading
    anything."""
    if args.executor != ExecutorKind.SLURM:
        stray = [flag for flag, (dest, default) in _OPTIONS.items() if getattr(args, dest) != default]
        if stray:
            raise InvalidArgumentError(f"{stray[0]} is not allowed with --executor {args.executor}; allowed there: no "
                                       "--slurm-* option (they size SLURM array tasks; add --executor slurm)")
        return None
    t = args.slurm_time.strip()
    res = SlurmResources(partition=args.slurm_partition, time=int(t) if t.isdigit() else t, cpus_per_task=args.slurm_cpus,
                         mem_gb=args.slurm_mem_gb, gpus_per_node=args.slurm_gpus,
                         array_parallelism=args.slurm_array_parallelism, tasks_per_job=args.slurm_tasks_per_job,
                         account=args.slurm_account, folder=args.slurm_folder)
    return check_slurm("slurm", res)
