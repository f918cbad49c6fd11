"""executor "slurm": sweeps as submitit job arrays, tested end to end on submitit's local
cluster (the same submission, pickling, array and result code as on SLURM, without a
scheduler: ``SlurmResources(cluster="local")``).

What these cannot test without a scheduler: sbatch itself (the generated script, the
partition/account/time/memory options as a real SLURM reads them), real pre-emption and
requeueing, GPU allocation (docs/integrations.md, "SLURM").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT
from nasbench_bert.errors import IncompleteSweepError, InvalidArgumentError, MissingExtraError, NasBenchError
from nasbench_bert.slurm import KILL_AFTER_ENV, MISSING, SlurmResources, add_arguments, from_arguments, time_minutes

SMALL = {"batch_size": 2, "seq_len": 16}


def test_resources_are_checked_naming_the_field():
    assert time_minutes(90) == 90
    assert time_minutes("90") == 90
    assert time_minutes("1:30:00") == 90
    assert time_minutes("2-00:00:00") == 2880
    assert time_minutes("1-2") == 1560
    assert time_minutes("10:01") == 11  # minutes:seconds, rounded up
    for field, value in [("time", "1h"), ("time", 0), ("time", 1.5), ("cpus_per_task", 0), ("mem_gb", -1),
                         ("gpus_per_node", -1), ("array_parallelism", 0), ("tasks_per_job", 0), ("partition", "a b"),
                         ("account", ""), ("folder", ""), ("cluster", "pbs")]:
        with pytest.raises(InvalidArgumentError, match=f"^{field} = "):
            SlurmResources(**{field: value})
    res = SlurmResources(partition="gpu", time="4:00:00", mem_gb=16, gpus_per_node=1, array_parallelism=20,
                         account="lab")
    p = res.parameters(default_cpus=3)
    assert p["timeout_min"] == 240 and p["cpus_per_task"] == 3 and p["gpus_per_node"] == 1 and p["mem_gb"] == 16
    assert p["slurm_partition"] == "gpu" and p["slurm_account"] == "lab" and p["slurm_array_parallelism"] == 20


def test_resources_only_with_executor_slurm(tmp_path, monkeypatch):
    from nasbench_bert.executors import run_tasks

    pytest.importorskip("submitit")
    monkeypatch.setenv("PATH", f"{_fake_slurm(tmp_path)}:{os.environ['PATH']}")  # from_arguments checks sbatch and srun

    with pytest.raises(InvalidArgumentError, match="^slurm = .* not allowed with executor = 'local'"):
        run_tasks(abs, [1], lambda i, r: None, slurm=SlurmResources())
    ap = argparse.ArgumentParser()
    ap.add_argument("--executor", default="local")
    add_arguments(ap)
    with pytest.raises(InvalidArgumentError, match="^--slurm-partition is not allowed with --executor local"):
        from_arguments(ap.parse_args(["--slurm-partition", "gpu"]))
    with pytest.raises(InvalidArgumentError, match="^--slurm-array-parallelism is not allowed with --executor ray"):
        from_arguments(ap.parse_args(["--executor", "ray", "--slurm-array-parallelism", "4"]))
    assert from_arguments(ap.parse_args([])) is None
    res = from_arguments(ap.parse_args(["--executor", "slurm", "--slurm-time", "2:00:00", "--slurm-array-parallelism", "8",
                                        "--slurm-partition", "cpu", "--slurm-folder", "logs"]))
    assert res == SlurmResources(partition="cpu", time="2:00:00", array_parallelism=8, folder="logs")
    assert from_arguments(ap.parse_args(["--executor", "slurm", "--slurm-time", "30"])).time == 30


def test_without_sbatch_executor_slurm_says_so(monkeypatch):
    pytest.importorskip("submitit")
    from nasbench_bert.slurm import check_slurm

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(InvalidArgumentError, match="needs SLURM's sbatch on PATH"):
        check_slurm("slurm", None)


def _fake_slurm(tmp_path: Path, *, srun: bool = True) -> Path:
    """A folder with stand-ins for SLURM's commands: an ``sbatch`` that refuses every job
    the way a cluster refuses an unknown partition (its line on stderr, exit 1), and an
    ``srun`` (submitit looks for it; never run, since no job is accepted)."""
    fake = tmp_path / "fakebin"
    fake.mkdir(exist_ok=True)
    (fake / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified' >&2\nexit 1\n")
    (fake / "sbatch").chmod(0o755)
    if srun:
        (fake / "srun").write_text("#!/bin/sh\nexit 1\n")
        (fake / "srun").chmod(0o755)
    return fake


def test_a_refused_job_array_is_one_line_and_leaves_no_cache_folder(tmp_path, monkeypatch, capsys):
    """Issue 37, item 7: sbatch refusing the array (an unknown partition) ended in a
    traceback of submitit's FailedJobError after an empty cache folder was made. Now one
    SubmissionError carrying sbatch's words and what was asked for, nothing computed, and no
    cache folder; submitit's own echo of sbatch's stderr is not printed beside it."""
    pytest.importorskip("submitit")
    from nasbench_bert.sweep import PartCache, SweepRun, run_sweep

    monkeypatch.setenv("PATH", f"{_fake_slurm(tmp_path)}:{os.environ['PATH']}")
    cache = PartCache.open(tmp_path / "cache", "json", "number")
    how = SweepRun("slurm", slurm=SlurmResources(partition="nope", folder=tmp_path / "logs"))
    with pytest.raises(NasBenchError) as e:  # submitit's FailedJobError before
        run_sweep(_square, [_Square(1), _Square(2)], cache, _finish, how)
    assert type(e.value).__name__ == "SubmissionError"
    assert str(e.value).startswith("sbatch refused the job array: sbatch: error: invalid partition specified "
                                   "(asked for partition = 'nope', time = 60); nothing was submitted or computed")
    assert str(tmp_path / "logs") in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "cache").exists()
    assert "sbatch: error" not in capsys.readouterr().err


@pytest.mark.parametrize("srun", [True, False])
def test_cli_refused_or_without_srun_is_one_line_exit_2(tmp_path, monkeypatch, capsys, data_dir, srun):
    """The same from the command line, and a machine with sbatch but no srun (submitit's
    bare RuntimeError before): one 'error:' line naming the options typed, exit 2, no cache
    folder and no output file."""
    pytest.importorskip("submitit")
    pytest.importorskip("torch")
    from nasbench_bert import cli

    monkeypatch.setenv("PATH", str(_fake_slurm(tmp_path, srun=srun)))  # only the stand-ins: no real srun either
    argv = ["--data", str(data_dir), "-q", "proxies", "compute", "--ids", "0-1", "--proxies", "param_count",
            "--executor", "slurm", "--slurm-partition", "nope", "--slurm-folder", str(tmp_path / "logs"),
            "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "p.parquet")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    want = ("error: sbatch refused the job array: sbatch: error: invalid partition specified (asked for "
            "--slurm-partition = 'nope', --slurm-time = 60)" if srun else
            "error: --executor = 'slurm' needs SLURM's srun on PATH (not found: srun;")
    assert len(err) == 1 and err[0].startswith(want), err
    assert not (tmp_path / "cache").exists() and not (tmp_path / "p.parquet").exists()


NO_SUBMITIT = r'''
import importlib.abc, sys
class _NoSubmitit(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "submitit" or name.startswith("submitit."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NoSubmitit())
'''


def test_missing_extra_is_one_line_naming_it(tmp_path, data_dir):
    """Without submitit, executor "slurm" fails before any work with one line naming the
    [slurm] extra - from Python (a MissingExtraError, which is a ModuleNotFoundError) and
    from the CLI (that line alone, exit 2); the other executors do not need it."""
    assert "[slurm]" in MISSING and "pip install" in MISSING
    code = ("from nasbench_bert.executors import run_tasks\n"
            "try:\n    run_tasks(abs, [1], lambda i, r: None, executor='slurm')\n"
            "except ModuleNotFoundError as e:\n"
            "    from nasbench_bert.errors import MissingExtraError\n"
            "    print(type(e).__name__, isinstance(e, MissingExtraError), e.name, str(e), sep='|')\n"
            "out = {}\nrun_tasks(abs, [-1, -2], out.__setitem__)\nprint(out)\n")
    r = subprocess.run([sys.executable, "-c", NO_SUBMITIT + code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines() == [f"MissingExtraError|True|submitit|{MISSING}", "{0: 1, 1: 2}"]
    cli = "from nasbench_bert.cli import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", NO_SUBMITIT + cli, "--data", str(data_dir), "proxies", "compute", "--ids",
                        "0-1", "--proxies", "params", "--executor", "slurm", "--out", str(tmp_path / "p.parquet")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.strip().splitlines() == [f"error: {MISSING}"]
    assert not (tmp_path / "p.parquet").exists()
    assert issubclass(MissingExtraError, NasBenchError) and issubclass(MissingExtraError, ImportError)


# -- the engine on submitit's local cluster --------------------------------------------------
@dataclass(frozen=True)
class _Square:
    """A cheap SweepTask (the worker imports no torch): the engine's own path, in seconds."""

    x: int

    def identity(self) -> list[int]:
        return [self.x]

    def expect(self) -> dict[str, int]:
        return {"x": self.x}

    def accepts(self, row: dict) -> bool:
        return True


def _square(task: _Square) -> dict:
    return {"y": task.x * task.x, "error": None}


def _finish(task: _Square, row: dict) -> dict:
    return {"x": task.x, **row}


@pytest.fixture
def by_value():
    """This module's task and functions are pickled by value: the array tasks' fresh
    interpreters cannot import a test module."""
    cloudpickle = pytest.importorskip("submitit").core.utils.cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_engine_job_array_killed_and_rerun_computes_only_the_missing_parts(tmp_path, monkeypatch, by_value):
    """Each array task writes its parts itself; one killed (SIGKILL) after its first part
    leaves that part, the sweep says which jobs failed and where their logs are, and the
    same call again submits only the missing tasks and returns every row."""
    from nasbench_bert.sweep import PartCache, SweepRun, run_sweep

    tasks = [_Square(x) for x in range(5)]
    cache = PartCache.open(tmp_path / "cache", "json", "number")
    res = SlurmResources(cluster="local", folder=tmp_path / "logs", tasks_per_job=3)  # 2 array tasks: [0 1 2], [3 4]
    how = SweepRun("slurm", slurm=res)
    monkeypatch.setenv(KILL_AFTER_ENV, "1")
    with pytest.raises(IncompleteSweepError, match=r"^2 of 2 SLURM array tasks ended without a result \(5 of 5 tasks;") as e:
        run_sweep(_square, tasks, cache, _finish, how)
    assert "run the same command again to compute only the missing ones" in str(e.value)
    assert str(tmp_path / "logs") in str(e.value)
    assert sorted(p.name for p in cache.folder.iterdir()) == sorted(cache.path(t.identity()).name for t in tasks[0::3])
    monkeypatch.delenv(KILL_AFTER_ENV)
    submitted = {p.name for p in (tmp_path / "logs").iterdir()}
    out = run_sweep(_square, tasks, cache, _finish, how)
    assert [r for r, _ in out] == [{"x": x, "y": x * x, "error": None} for x in range(5)]
    assert [hit for _, hit in out] == [True, False, False, True, False]
    new = {p.name for p in (tmp_path / "logs").iterdir()} - submitted
    assert len(new) == 1  # the 3 missing tasks: one array task of up to 3
    assert len(list(cache.folder.iterdir())) == 5
    assert run_sweep(_square, tasks, cache, _finish, how) == [(r, True) for r, _ in out]  # nothing submitted
    assert {p.name for p in (tmp_path / "logs").iterdir()} - submitted == new


def _slow_square(task: _Square) -> dict:
    import time

    time.sleep(1.0)
    return _square(task)


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the array task's process in /proc")
def test_requeued_array_task_skips_the_parts_it_wrote(tmp_path, by_value):
    """SLURM's pre-emption and time-limit signal (USR2), sent to a running array task on
    submitit's local cluster: the task checkpoints (ArrayTask.checkpoint), is requeued
    with its chunk, and the second run reads the parts the first one wrote instead of
    computing them again."""
    import os
    import time

    from nasbench_bert.slurm import ArrayTask, load_submitit
    from nasbench_bert.sweep import PartCache, _StoreInWorker

    submitit = load_submitit()
    cache = PartCache.open(tmp_path / "cache", "json", "number")
    tasks = [_Square(x) for x in range(4)]
    ex = submitit.AutoExecutor(folder=tmp_path / "logs", cluster="local")
    ex.update_parameters(timeout_min=5)
    job = ex.submit(ArrayTask(_StoreInWorker(_slow_square, _finish, cache)), tasks)
    deadline = time.time() + 120
    while not (cache.folder.is_dir() and any(cache.folder.iterdir())) and time.time() < deadline:  # made by the first part
        time.sleep(0.05)
    assert cache.folder.is_dir() and any(cache.folder.iterdir()), "no part written in 120 s"
    (task,) = _children(int(job.job_id))  # the local controller's one task process
    os.kill(task, submitit.JobEnvironment._usr_sig())  # what SLURM sends before pre-empting or at the time limit
    rows = job.result()
    assert [r for r, _ in rows] == [{"x": x, "y": x * x, "error": None} for x in range(4)]
    hits = [hit for _, hit in rows]
    assert hits[0] and not all(hits) and hits == sorted(hits, reverse=True), hits  # the written prefix, read back
    log = "".join(p.read_text() for p in (tmp_path / "logs").glob("*_log.*"))
    assert "Caught signal SIGUSR2" in log and "Requeued" in log


# -- proxies compute, end to end ---------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.torch
def test_proxies_on_slurm_equal_local_and_resume_after_a_kill(tmp_path, monkeypatch, bench):
    """A proxies sweep through the slurm executor gives the local executor's values, bit
    for bit (every worker computes with WORKER_THREADS torch threads and records it); an
    array task killed after its first part, and the same call again, give them too, with
    only the missing archs computed."""
    pytest.importorskip("submitit")
    import pyarrow.parquet as pq

    from nasbench_bert import proxies
    from nasbench_bert.proxies.sweep import WORKER_THREADS

    ids, names = [0, 1, 2], ["synflow", "snip"]
    local = proxies.compute(ids, names, batch=SMALL, bench=bench)
    assert local.error.isna().all()
    logs = tmp_path / "logs"
    slurm = proxies.compute(ids, names, batch=SMALL, bench=bench, cache=tmp_path / "a", executor="slurm",
                            slurm=SlurmResources(cluster="local", folder=logs, tasks_per_job=2))
    assert not slurm.cached.any() and slurm.error.isna().all()
    for p in names:
        assert slurm[p].tolist() == local[p].tolist(), p
        assert slurm[f"{p}__layers"].tolist() == local[f"{p}__layers"].tolist(), p
    assert [pq.read_table(f).to_pylist()[0]["threads"] for f in (tmp_path / "a").glob("*.parquet")] == [WORKER_THREADS] * 3
    # killed after its first part: one array task of all three archs
    one_job = SlurmResources(cluster="local", folder=logs, tasks_per_job=3)
    monkeypatch.setenv(KILL_AFTER_ENV, "1")
    with pytest.raises(IncompleteSweepError, match="^1 of 1 SLURM array tasks ended without a result"):
        proxies.compute(ids, names, batch=SMALL, bench=bench, cache=tmp_path / "b", executor="slurm", slurm=one_job)
    assert len(list((tmp_path / "b").glob("*.parquet"))) == 1
    monkeypatch.delenv(KILL_AFTER_ENV)
    again = proxies.compute(ids, names, batch=SMALL, bench=bench, cache=tmp_path / "b", executor="slurm", slurm=one_job)
    assert again.cached.tolist() == [True, False, False]  # the first arch of the killed task, then only the missing two
    for p in names:
        assert again[p].tolist() == local[p].tolist(), p
    assert Path(tmp_path / "b").is_dir() and len(list((tmp_path / "b").glob("*.parquet"))) == 3


@pytest.mark.torch
def test_hardware_on_slurm_equals_local(tmp_path, bench):
    """A hardware sweep through the slurm executor: the deterministic figures equal the
    local executor's, every model's part is written by the array task, and a rerun reads
    them all from the cache."""
    pytest.importorskip("submitit")
    from nasbench_bert import hardware as hw

    tiny = hw.MeasureSettings(batches=(1, 2), repeats=(2, 1), warmup=(1, 0))
    ids, sems = [0, 250], ["as_trained", "authors"]
    local = hw.measure_many(ids, sems, settings=tiny, bench=bench)
    res = SlurmResources(cluster="local", folder=tmp_path / "logs", tasks_per_job=4)
    remote = hw.measure_many(ids, sems, settings=tiny, bench=bench, cache=tmp_path / "c", executor="slurm", slurm=res)
    for k in ("model_key", "num_params", "flops_per_seq", "peak_memory_b2_mib", "semantics", "arch", "threads"):
        assert list(local[k]) == list(remote[k]), k
    assert remote["error"].isna().all() and not remote.cached.any() and len(list((tmp_path / "c").iterdir())) == 4
    again = hw.measure_many(ids, sems, settings=tiny, bench=bench, cache=tmp_path / "c", executor="slurm", slurm=res)
    assert again.cached.all() and list(again.latency_b1_ms) == list(remote.latency_b1_ms)


# -- build-entry, end to end -------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.torch
def test_build_many_on_slurm_resumes_from_the_results_table(tmp_path, monkeypatch):
    """build_many through the slurm executor: each array task writes its entry into the
    results table; an array task of two archs killed after the first, and the same call
    again, build only the second (the first comes back from the table unchanged)."""
    pytest.importorskip("submitit")
    pytest.importorskip("tokenizers")
    import csv

    from conftest import UPSTREAM
    from nasbench_bert.builders.entry import build_many, validate_entry
    from nasbench_bert.builders.results import ResultsTable

    rte = UPSTREAM / "glue-rte"
    rows = list(csv.reader(open(rte / "train.tsv", newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    (tmp_path / "corpus.txt").write_text("\n".join(r[1] + " " + r[2] for r in rows) + "\n")
    archs = ["128/SA-SDP-h2-512x1/LT-DFT-h2-512x1", "128/LT-DCT-h2-512x1/SA-WMA-h2-512x1"]
    kw = dict(corpus=f"text:{tmp_path / 'corpus.txt'}", glue=str(rte), tasks=["rte"], device="cpu",
              pretrain_config={"steps": 10, "batch_size": 8, "seq_len": 32, "warmup_steps": 2, "vocab_size": 3000,
                               "checkpoint_every": 5},
              finetune_config={"epochs": 1, "max_train_examples": 32, "batch_size": 16, "max_seq_len": 64},
              results=str(tmp_path / "res"), workdir=str(tmp_path / "work"))
    res = SlurmResources(cluster="local", folder=tmp_path / "logs", tasks_per_job=2)
    monkeypatch.setenv(KILL_AFTER_ENV, "1")
    with pytest.raises(IncompleteSweepError, match="^1 of 1 SLURM array tasks ended without a result"):
        build_many(archs, executor="slurm", slurm=res, **kw)
    first = ResultsTable(tmp_path / "res").entries()
    assert [e["arch"] for e in first] == archs[:1]
    monkeypatch.delenv(KILL_AFTER_ENV)
    out = build_many(archs, executor="slurm", slurm=res, **kw)
    assert [e["arch"] for e in out] == archs
    for e in out:
        validate_entry(e)
    assert out[0] == first[0]  # read back, not rebuilt
    assert len(ResultsTable(tmp_path / "res").entries()) == 2
    # a GPU asked for, none allocated (without CUDA here the build's own device check may say it first)
    with pytest.raises(InvalidArgumentError, match="^device = 'cuda' is not allowed"):
        build_many(archs, executor="slurm", slurm=res, **{**kw, "device": "cuda"})
