"""CARP-S tasks (issue 31, item 2; issue 37): the tasks run under CARP-S's own runner
(``python -m carps.run``, hydra) with three of its optimisers - random search, Optuna's
TPE (MO-TPE on the multi-objective task) and, on the multi-fidelity WikiText-2 task,
SMAC3's Hyperband (CARP-S's ``smac20=hyperband``; SMAC 2.4 installs from PyPI wheels,
while DEHB pins numpy<2, which the pyarrow these tables need refuses) - for 50 trials
each, and every logged value is checked against the tables, at the fidelity the trial's
budget reached. The data is built with a small PTB logs archive (``ptb_archive.py``), so
the PTB-epochs task runs too.

Marker ``carps``: deselected by default; ``.ci/run`` runs it in ``.venv-carps`` (carps and
its hydra stack stay out of the main venv). With ``NASBENCH_BERT_REQUIRE_CARPS=1`` (CI) a
missing carps fails instead of skipping.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytestmark = pytest.mark.carps

if os.environ.get("NASBENCH_BERT_REQUIRE_CARPS"):
    import carps  # noqa: F401
else:
    pytest.importorskip("carps")

import nasbench_bert  # noqa: E402
from nasbench_bert.errors import InvalidArgumentError  # noqa: E402
from nasbench_bert.integrations import carps as nb_carps  # noqa: E402
from nasbench_bert.integrations.configspace import as_cost  # noqa: E402

N_TRIALS = 50
SEED = 1
#: (optimizer override, optimizer_id CARP-S writes, tasks) - one carps.run multirun each
RUNS: list[tuple[str, str, list[str]]] = [
    ("+optimizer/randomsearch=config", "RandomSearch", list(nb_carps.TASKS)),
    ("+optimizer/optuna=SO_TPE", "Optuna-TPE", ["flexibert500", "flexibert_surrogate", "nlp_ptb"]),
    ("+optimizer/optuna=MO_TPE", "Optuna-MO-TPE", ["flexibert500_mo"]),
    ("+optimizer/smac20=hyperband", "SMAC3-Hyperband", ["nlp_wikitext2"]),
]
#: the multi-fidelity tasks: (the table fidelities a budget can reach, what additional_info names it)
MULTI_FIDELITY = {"nlp_wikitext2": (list(range(1, 51)), "epoch"), "nlp_ptb_epochs": (list(range(1, 51)), "epoch"),
                  "flexibert_curves": (list(range(150_000, 1_000_001, 50_000)), "steps")}
PAIRS = [(opt_id, task) for _, opt_id, tasks in RUNS for task in tasks]


@pytest.fixture(scope="module")
def carps_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tables built with a small PTB logs archive (``ptb_archive.py``), with the pinned
    surrogate written beside them, so the surrogate task loads, not fits."""
    from ptb_archive import make_ptb_logs

    from conftest import UPSTREAM
    from nasbench_bert import Benchmark
    from nasbench_bert.data.release import build_tables
    from nasbench_bert.data.tables import DataDir
    from nasbench_bert.surrogate.portable import write_artifacts

    tmp = tmp_path_factory.mktemp("carps-data")
    make_ptb_logs(tmp / "ptb_logs.zip")
    out = tmp / "data"
    build_tables(UPSTREAM, out, progress=False, ptb_logs=tmp / "ptb_logs.zip")
    write_artifacts(Benchmark(DataDir.open(out)), surrogate=True)
    return out


@pytest.fixture(scope="module")
def carps_runs(carps_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run every (optimiser, task) pair with CARP-S's runner; the folder holding its runs/."""
    cwd = tmp_path_factory.mktemp("carps-runs")
    for opt, _, tasks in RUNS:
        cmd = [sys.executable, "-m", "carps.run", f"hydra.searchpath=[{nb_carps.SEARCHPATH}]",
               f"+task/{nb_carps.BENCHMARK_ID}={','.join(tasks)}", opt, f"seed={SEED}",
               f"++task.optimization_resources.n_trials={N_TRIALS}", f"++task.objective_function.data={carps_data}",
               f"baserundir={cwd / 'runs'}", "-m"]
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, f"{' '.join(cmd)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return cwd


def _logs(runs: Path, opt_id: str, task: str, name: str) -> list[dict[str, Any]]:
    path = runs / "runs" / opt_id / nb_carps.BENCHMARK_ID / "nasbench_bert" / task / str(SEED) / name
    assert path.is_file(), f"CARP-S wrote no {path}"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def carps_bench(carps_data: Path) -> Any:
    return nb_carps.load_bench(str(carps_data))


def test_shipped_task_configs_are_the_generated_ones(tmp_path: Path) -> None:
    written = nb_carps.write_task_configs(tmp_path)
    for p in written:
        shipped = nb_carps.CONFIG_ROOT / "task" / nb_carps.BENCHMARK_ID / p.name
        assert shipped.read_text() == p.read_text(), f"{shipped} is stale: python -m nasbench_bert.integrations.carps"
    assert sorted(p.stem for p in written) == sorted(nb_carps.TASKS)


@pytest.mark.parametrize("opt_id,task", PAIRS)
def test_run_finished_and_values_are_the_tables(carps_runs: Path, carps_bench: Any, opt_id: str, task: str) -> None:
    trials = _logs(carps_runs, opt_id, task, "trial_logs.jsonl")
    assert len(trials) >= N_TRIALS
    objectives = nb_carps.TASKS[task]["objectives"]
    for t in trials:
        info, cost = t["trial_value"]["additional_info"], t["trial_value"]["cost"]
        assert info["nasbench_bert_version"] == nasbench_bert.__version__  # CARP-S's log says who answered
        if task in MULTI_FIDELITY:
            steps, what = MULTI_FIDELITY[task]
            budget = t["trial_info"]["budget"]
            assert info[what] == (steps[-1] if budget is None else max(f for f in steps if f <= budget + 1e-9))
            want = [_mf_cost(carps_bench, task, info, what)]
        elif task.startswith("flexibert500"):
            r = carps_bench.query(info["arch"], charge=False)
            want = [as_cost(getattr(r, n), carps_bench.objectives[n]) for n in objectives]
        elif task == "nlp_ptb":
            r = carps_bench.nlp.query(int(info["recipe_id"]), "ptb", charge=False)
            want = [as_cost(r.test_loss, carps_bench.nlp.objectives["ptb"]["test_loss"])]
        else:  # the surrogate: -GLUE of the (noisy) simulated run, finite, within the metric's bounds
            lo, hi = carps_bench.objectives["glue"].bounds
            assert math.isfinite(info["glue"]) and lo <= info["glue"] <= hi
            want = [-info["glue"]]
        assert (cost if isinstance(cost, list) else [cost]) == pytest.approx(want, abs=1e-9)
    if task in MULTI_FIDELITY:  # the incumbent is the best at the highest fidelity
        steps, what = MULTI_FIDELITY[task]
        full = [t["trial_value"]["cost"] for t in trials if t["trial_value"]["additional_info"][what] == steps[-1]]
        assert _logs(carps_runs, opt_id, task, "trajectory_logs.jsonl")[-1]["trial_value"]["cost"] == min(full)
        if opt_id == "SMAC3-Hyperband":  # Hyperband's brackets: most trials at low budgets, some at the full one
            reached = [t["trial_value"]["additional_info"][what] for t in trials]
            assert len(set(reached)) >= 3 and reached.count(steps[-1]) < len(reached) / 2
    elif len(objectives) == 1:
        inc = _logs(carps_runs, opt_id, task, "trajectory_logs.jsonl")[-1]
        best_cost = min(t["trial_value"]["cost"] for t in trials)
        assert inc["trial_value"]["cost"] == best_cost
        if task != "flexibert_surrogate":
            obj = carps_bench.nlp.objectives["ptb"]["test_loss"] if task == "nlp_ptb" else carps_bench.objectives["glue"]
            assert inc["trial_value"]["cost"] >= as_cost(obj.best, obj)  # no better than the table's optimum


def _mf_cost(bench: Any, task: str, info: dict[str, Any], what: str) -> float:
    """The cost the tables give a multi-fidelity trial at the fidelity it reached, read
    from the logs (first run of the recipe, init_time order) or bench.curve_point."""
    if task == "flexibert_curves":
        return as_cost(bench.curve_point(info["arch"], info["steps"], charge=False).glue, bench.objectives["glue"])
    dataset = "wikitext2" if task == "nlp_wikitext2" else "ptb"
    df = bench.nlp.wikitext2 if dataset == "wikitext2" else bench.nlp.ptb_logs
    run = df[df["recipe_id"] == info["recipe_id"]].sort_values("init_time").iloc[0]
    name = nb_carps.TASKS[task]["objectives"][0]
    assert run["log_name"] == info["log_name"]
    loss = run[{"val_loss": "val_losses", "test_loss": "test_losses"}[name]][info[what] - 1]
    return as_cost(float(loss), bench.nlp.objectives[dataset][name])


def test_multi_objective_front_is_nondominated(carps_runs: Path, carps_bench: Any) -> None:
    for opt_id in ("RandomSearch", "Optuna-MO-TPE"):
        trials = _logs(carps_runs, opt_id, "flexibert500_mo", "trial_logs.jsonl")
        costs = [tuple(t["trial_value"]["cost"]) for t in trials]
        traj = _logs(carps_runs, opt_id, "flexibert500_mo", "trajectory_logs.jsonl")
        last = max(t["n_trials"] for t in traj)
        front = [tuple(t["trial_value"]["cost"]) for t in traj if t["n_trials"] == last]
        assert front
        for f in front:
            assert f in costs
            assert not any(c[0] <= f[0] and c[1] <= f[1] and c != f for c in costs), f"{f} is dominated"


def test_objective_functions_refuse_and_answer(bench: Any, data_dir: Path) -> None:
    from carps.utils.trials import TrialInfo

    carps_data, carps_bench = data_dir, bench
    with pytest.raises(InvalidArgumentError, match="space = 'flat'.*allowed values: \\['evaluated', 'structured'\\]"):
        nb_carps.FlexiBERTTabular(space="flat", data=str(carps_data))
    with pytest.raises(InvalidArgumentError, match="objectives = 'accuracy'.*allowed values"):
        nb_carps.FlexiBERTTabular(objectives=["accuracy"], data=str(carps_data))
    with pytest.raises(InvalidArgumentError, match="task = 'nb201'.*allowed values"):
        nb_carps.task_space("nb201")
    with pytest.raises(InvalidArgumentError, match="dataset = 'wt103'"):
        nb_carps.NLPTabular(dataset="wt103", data=str(carps_data))
    # f_min: the table's optimum as a cost
    f = nb_carps.FlexiBERTTabular(data=str(carps_data))
    assert f.f_min == -carps_bench.objectives["glue"].best
    # the structured space over the table: a configuration is answered by an evaluated arch,
    # with exactly that arch's table values
    s = nb_carps.FlexiBERTTabular(space="structured", data=str(carps_data), seed=3)
    evaluated = set(nb_carps.evaluated_archs(carps_bench))
    for config in s.configspace.sample_configuration(5):
        v = s.evaluate(TrialInfo(config=config))
        arch = v.additional_info["arch"]
        assert carps_bench.query(arch, charge=False).arch in evaluated
        assert v.cost == -carps_bench.query(arch, charge=False).glue


def test_epochs_task_reads_a_finished_run_when_an_earlier_one_diverged(bench: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The logged task's space lists the recipes with a finished run; its losses must come
    from such a run. A recipe whose earliest run (by init_time) diverged and whose later
    run finished was answered with the diverged run's losses before (issue 37's note).
    Here a diverged copy of one recipe's run is put first, with other losses."""
    import types

    from nasbench_bert.integrations import carps_fidelity

    df = bench.nlp.wikitext2
    done = df[~df["diverged"].astype(bool) & (df["epochs_completed"] == df["hp_epochs"])]
    run = done.iloc[0]
    bad = run.copy()
    bad["diverged"], bad["init_time"] = True, "2000-01-01_00-00-00"  # before every logged run
    bad["val_losses"] = [99.0] * len(run["val_losses"])
    bad["log_name"] = "diverged-copy"
    logs = pd.concat([pd.DataFrame([bad]), df], ignore_index=True)
    stand_in = types.SimpleNamespace(nlp=types.SimpleNamespace(wikitext2=logs, objectives=bench.nlp.objectives))
    monkeypatch.setattr(carps_fidelity, "load_bench", lambda data: stand_in)
    task = carps_fidelity.NLPEpochs(dataset="wikitext2", objective="val_loss")
    rid = int(run["recipe_id"])
    assert task._logs[rid] == run["log_name"]
    assert task._losses[rid].tolist() == [float(v) for v in run["val_losses"]]
