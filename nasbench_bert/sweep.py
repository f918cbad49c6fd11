"""One resumable sweep engine: typed tasks, a part cache that verifies what it reads, and
the executors.

Proxy sweeps (:func:`nasbench_bert.proxies.compute`, and through it
:func:`nasbench_bert.evaluation.evaluate`) and hardware sweeps
(:func:`nasbench_bert.hardware.measure_many`) are the same job: run one expensive
function per model, keep every result the moment it finishes, and resume after a kill
without recomputing - on this machine or on Ray. This module is that job, written once:

* a task is a small frozen dataclass that implements :class:`SweepTask`: which part file
  holds its result (:meth:`~SweepTask.identity`), which fields a stored row must carry to
  be believed (:meth:`~SweepTask.expect`), and whether a stored row still answers it
  (:meth:`~SweepTask.accepts`: e.g. every proxy asked for, at its current version);
* :class:`PartCache` names parts by a hash of the identity, writes each one atomically
  (a killed sweep never leaves half a part) and re-verifies every part it reads: a
  damaged part, or one copied under another task's name, is recomputed, never trusted;
* :func:`run_sweep` reads what the cache holds, runs the rest through
  :func:`nasbench_bert.executors.run_tasks` and writes each finished row (rows with an
  ``error`` are returned but not cached, so a failure is retried next time). On SLURM
  the array tasks write their rows themselves (:class:`_StoreInWorker`), so the parts
  outlive both a killed array task and a submitting process that went away.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence, TypeVar, cast

from .checks import check_writable_folder
from .errors import InvalidArgumentError
from .executors import run_tasks
from .slurm import SlurmResources
from .vocabulary import ExecutorKind

#: how a part file is written: one-row parquet (proxy rows, which hold per-layer lists) or JSON
PartFormat = Literal["parquet", "json"]
Row = dict[str, Any]


class SweepTask(Protocol):
    """What the engine needs of a task (the work function gets the task itself)."""

    def identity(self) -> Sequence[Any]:
        """What the result depends on; its hash names the part file."""

    def expect(self) -> Mapping[str, Any]:
        """Fields a stored row must hold with exactly these values to be believed."""

    def accepts(self, row: Row) -> bool:
        """Whether a stored row (already matching :meth:`expect`) answers this task."""


T = TypeVar("T", bound=SweepTask)


@dataclass(frozen=True)
class PartCache:
    """A folder of part files, one per task result."""

    folder: Path
    format: PartFormat
    #: what one part holds, for messages ("arch", "model")
    unit: str

    @classmethod
    def open(cls, cache: str | os.PathLike[str] | None, format: PartFormat, unit: str) -> "PartCache | None":
        """The cache at ``cache``, or None without one; a path that is a file, or a
        folder that cannot be made or written, is refused with a message naming the
        argument. A missing folder is made by the first part written, not here: a sweep
        that fails before any result (a scheduler that refuses the job, an interrupt, a
        bad argument found later) leaves no empty cache folder behind."""
        if cache is None:
            return None
        if not isinstance(cache, (str, os.PathLike)):
            raise InvalidArgumentError(f"cache = {cache!r} is not allowed; allowed: a folder (str or path) or None")
        return cls(check_writable_folder("cache", cache), format, unit)

    def path(self, identity: Sequence[Any]) -> Path:
        digest = hashlib.sha1(json.dumps(list(identity)).encode()).hexdigest()[:20]
        return self.folder / f"{digest}.{self.format}"

    def _refuse_folder(self, path: Path) -> None:
        raise InvalidArgumentError(f"cache part {path} is a folder; remove it (the cache holds one {self.format} file "
                                   f"per {self.unit})")

    def read(self, task: SweepTask) -> Row | None:
        """The stored row of ``task`` if it is intact, matches :meth:`SweepTask.expect`
        field by field and is accepted by the task; otherwise None (computed again)."""
        path = self.path(task.identity())
        if path.is_dir():
            self._refuse_folder(path)
        if not path.is_file():
            return None
        try:
            row = _READERS[self.format](path)
        except Exception:  # any damage: recomputed, never trusted
            return None
        if not isinstance(row, dict) or any(row.get(k) != v for k, v in task.expect().items()):
            return None
        return row if task.accepts(row) else None

    def write(self, task: SweepTask, row: Row) -> None:
        """Store ``row`` as ``task``'s part, atomically."""
        path = self.path(task.identity())
        try:
            _WRITERS[self.format](path, row)
        except IsADirectoryError:
            self._refuse_folder(path)


def _read_parquet(path: Path) -> Row:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()[0]


def _write_parquet(path: Path, row: Row) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .atomic import atomic_path

    clean = {k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in row.items()}
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pylist([clean]), tmp)


def _read_json(path: Path) -> Row:
    return json.loads(path.read_text())


def _write_json(path: Path, row: Row) -> None:
    from .atomic import atomic_write

    atomic_write(path, json.dumps(row, sort_keys=True))


_READERS: dict[str, Callable[[Path], Row]] = {"parquet": _read_parquet, "json": _read_json}
_WRITERS: dict[str, Callable[[Path, Row], None]] = {"parquet": _write_parquet, "json": _write_json}


@dataclass(frozen=True)
class SweepRun:
    """Where and how a sweep runs (the ``executor=`` choice of every sweep)."""

    executor: str = "local"
    jobs: int = 1
    ray_address: str | None = None
    #: CPUs each Ray task asks for
    num_cpus: int = 1
    #: the progress display's label, from (to compute, from the cache); None: no display
    label: Callable[[int, int], str] | None = None
    #: compute the missing tasks in a seeded random order (None: the given order), so
    #: that a slow drift of the machine does not line up with the task order
    shuffle_seed: int | None = None
    #: the array tasks' resources (executor "slurm"; None: the defaults)
    slurm: SlurmResources | None = None
    #: how local worker processes start (``"spawn"`` for CUDA sweeps: CUDA does not survive
    #: a fork); None: the platform's default
    start_method: str | None = None

    @property
    def workers_store(self) -> bool:
        """Whether the workers write their own parts: a SLURM array task outlives the
        process that submitted it, so it cannot hand its rows back to be written."""
        return self.executor == ExecutorKind.SLURM


@dataclass(frozen=True)
class _StoreInWorker:
    """The work of one task as a SLURM array task runs it: the stored row if the cache
    already holds one (a requeued array task repeats its chunk), else ``work`` completed
    by ``finish`` and written to the cache right there, before the next task - the
    submitting process need not outlive the array. Returns ``(row, cached)``."""

    work: Callable[[Any], Row]
    finish: Callable[[Any, Row], Row]
    cache: PartCache | None

    def __call__(self, task: Any) -> tuple[Row, bool]:
        if self.cache is not None:
            hit = self.cache.read(task)
            if hit is not None:
                return hit, True
        row = self.finish(task, self.work(task))
        if self.cache is not None and row.get("error") is None:
            self.cache.write(task, row)
        return row, False


def run_sweep(work: Callable[[T], Row], tasks: Sequence[T], cache: PartCache | None,
              finish: Callable[[T, Row], Row], how: SweepRun = SweepRun()) -> list[tuple[Row, bool]]:
    """``(row, cached)`` for every task, in task order.

    Stored rows come from ``cache``; the others are computed by ``work(task)`` (a
    module-level function: it is pickled to worker processes and Ray tasks), completed by
    ``finish(task, row)`` with the columns that identify it, and written to the cache as
    each finishes - unless the row carries an ``error``.
    """
    out: list[tuple[Row, bool] | None] = [None] * len(tasks)
    todo: list[int] = []
    for i, t in enumerate(tasks):
        hit = cache.read(t) if cache is not None else None
        if hit is not None:
            out[i] = (hit, True)
        else:
            todo.append(i)
    if how.shuffle_seed is not None:
        random.Random(how.shuffle_seed).shuffle(todo)

    def done(k: int, raw: Row) -> None:
        t = tasks[todo[k]]
        row = finish(t, raw)
        if cache is not None and row.get("error") is None:
            cache.write(t, row)
        out[todo[k]] = (row, False)

    def stored(k: int, result: tuple[Row, bool]) -> None:  # SLURM: finished and written by the array task
        out[todo[k]] = result

    fn: Callable[[Any], Any] = work
    if how.workers_store:
        # the array tasks need the cache's absolute path: SLURM may start them elsewhere
        fn = _StoreInWorker(work, finish, None if cache is None else PartCache(cache.folder.resolve(), cache.format, cache.unit))
    label = how.label(len(todo), len(tasks) - len(todo)) if how.label is not None else None
    run_tasks(fn, [tasks[i] for i in todo], stored if how.workers_store else done, executor=how.executor,
              jobs=how.jobs, ray_address=how.ray_address, num_cpus=how.num_cpus, progress=label, slurm=how.slurm,
              start_method=how.start_method)
    missing = sum(r is None for r in out)
    if missing:  # dropping them would shift every later row onto the wrong task
        raise RuntimeError(f"{missing} of {len(tasks)} sweep tasks came back without a row "
                           f"(executor {how.executor!r}); nothing was returned")
    return cast("list[tuple[Row, bool]]", out)
