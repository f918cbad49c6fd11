"""Where sweeps run: one place for the ``executor=`` choice shared by proxy sweeps
(:func:`nasbench_bert.proxies.compute`) and hardware measurement
(:func:`nasbench_bert.hardware.measure_many`).

* ``"local"``: this process (``jobs=1``) or ``jobs`` worker processes;
* ``"ray"``: one Ray task per item, ``num_cpus`` each, spread over the cluster at
  ``ray_address`` (default: join a running instance or start a local one);
* ``"slurm"``: one SLURM job array through submitit, sized by a
  :class:`~nasbench_bert.slurm.SlurmResources` (see :mod:`nasbench_bert.slurm`).

Results are handed to ``done`` as they finish (completion order on Ray and SLURM, task
order locally), so a caller that caches each one at once can be killed anywhere and
resume. (On SLURM the sweep engine has each array task write its own parts, so that
the submitting process may go away too.)
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Sequence, TypeVar

from .checks import check_choice, check_int
from .errors import InvalidArgumentError
from .progress import Progress
from .slurm import SlurmResources, check_slurm, run_array
from .vocabulary import EXECUTORS, ExecutorKind

T = TypeVar("T")


def check_executor(executor: Any, ray_address: Any) -> str:
    """The executor's name, or :class:`InvalidArgumentError` naming the bad field."""
    executor = check_choice("executor", executor, EXECUTORS)
    if ray_address is not None and not isinstance(ray_address, str):
        raise InvalidArgumentError(f"ray_address = {ray_address!r} is not allowed; allowed: 'auto', 'ray://host:port' or None")
    return executor


def run_tasks(fn: Callable[[T], Any], tasks: Sequence[T], done: Callable[[int, Any], None], *, executor: str = "local",
              jobs: int = 1, ray_address: str | None = None, num_cpus: int = 1, progress: str | None = None,
              slurm: SlurmResources | None = None, start_method: str | None = None) -> None:
    """Run ``fn(task)`` for every task and call ``done(position, result)`` for each.
    ``fn`` must be a module-level function (it is pickled to the workers). ``progress``:
    the label of a progress display (None: none; see :class:`~nasbench_bert.progress.Progress`).
    ``slurm``: the array tasks' resources (executor ``"slurm"`` only; default
    :class:`~nasbench_bert.slurm.SlurmResources`). ``start_method``: how the ``local``
    worker processes start (``"spawn"`` where they use CUDA, which a forked child cannot;
    None: the platform's default)."""
    executor = check_executor(executor, ray_address)
    if start_method is not None:
        check_choice("start_method", start_method, multiprocessing.get_all_start_methods())
    res = check_slurm(executor, slurm)
    jobs = check_int("jobs", jobs, low=1, high=1024)
    if progress is None:
        _run(fn, tasks, done, executor, jobs, ray_address, num_cpus, res, start_method)
        return
    with Progress(progress, len(tasks)) as bar:  # a bar on a terminal, plain lines elsewhere

        def advance(i: int, result: Any) -> None:
            done(i, result)
            bar.advance()

        _run(fn, tasks, advance, executor, jobs, ray_address, num_cpus, res, start_method)


def _run(fn: Callable[[T], Any], tasks: Sequence[T], done: Callable[[int, Any], None], executor: str, jobs: int,
         ray_address: str | None, num_cpus: int, slurm: SlurmResources | None, start_method: str | None = None) -> None:
    if not tasks:
        return
    _RUNNERS[executor](fn, tasks, done, jobs, ray_address, num_cpus, slurm, start_method)


def _run_ray(fn: Callable[[T], Any], tasks: Sequence[T], done: Callable[[int, Any], None], jobs: int,
             ray_address: str | None, num_cpus: int, slurm: SlurmResources | None, start_method: str | None) -> None:
    import ray

    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=num_cpus)(fn)
    index = {remote.remote(t): i for i, t in enumerate(tasks)}
    pending = list(index)
    while pending:  # in completion order: each finished task is handed over at once
        ready, pending = ray.wait(pending, num_returns=1)
        done(index[ready[0]], ray.get(ready[0]))


def _run_local(fn: Callable[[T], Any], tasks: Sequence[T], done: Callable[[int, Any], None], jobs: int,
               ray_address: str | None, num_cpus: int, slurm: SlurmResources | None, start_method: str | None) -> None:
    if jobs == 1:
        for i, t in enumerate(tasks):
            done(i, fn(t))
    else:
        ctx = None if start_method is None else multiprocessing.get_context(start_method)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
            for i, result in enumerate(ex.map(fn, tasks)):
                done(i, result)


def _run_slurm(fn: Callable[[T], Any], tasks: Sequence[T], done: Callable[[int, Any], None], jobs: int,
               ray_address: str | None, num_cpus: int, slurm: SlurmResources | None, start_method: str | None) -> None:
    assert slurm is not None  # check_slurm gives the default
    run_array(fn, tasks, done, slurm, default_cpus=num_cpus)


#: ``executor`` (:class:`~nasbench_bert.vocabulary.ExecutorKind`) -> how its tasks run (one
#: signature, so a new executor is one function and one entry here)
_RUNNERS: dict[str, Callable[..., None]] = {ExecutorKind.LOCAL: _run_local, ExecutorKind.RAY: _run_ray,
                                            ExecutorKind.SLURM: _run_slurm}
