"""Fidelities on disk (issue 37): the syne-tune export carries every fidelity the tables hold.

* FlexiBERT's learning curves (the train ablation: 15 archs, every valid checkpoint; the
  damaged 50,000 / 100,000-step points never served), WikiText-2 per epoch (1-50, elapsed
  time the cumulative logged wall time) and PTB per epoch when ``build-data`` is given the
  PTB logs (a small archive in their format made by ``ptb_archive.py``; the real one is not
  on this machine).
* Each exported folder is read by **syne-tune's own** ``deserialize`` and compared with the
  tables at every (configuration, seed, fidelity), reading the tables directly (not through
  the blackbox builders).
* syne-tune's ASHA and its (asynchronous) Hyperband - ``ASHA`` with several brackets, the
  Hyperband of syne-tune 0.16 - run on the exported folders, read from disk.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("syne_tune", reason="the [hpo] extra (syne-tune) is not installed")
pytest.importorskip("fastparquet", reason="syne-tune's serialize writes parquet with fastparquet")

from syne_tune.blackbox_repository.blackbox_tabular import deserialize  # noqa: E402
from syne_tune.optimizer.baselines import ASHA  # noqa: E402

from nasbench_bert import Benchmark, DataNotFoundError  # noqa: E402
from nasbench_bert.cli import main  # noqa: E402
from nasbench_bert.data.tables import GLUE_TASKS  # noqa: E402
from nasbench_bert.integrations.syne_tune import BROKEN_CURVE_STEPS, config_to_arch, simulate  # noqa: E402
from nasbench_bert.integrations.syne_tune_recipe import (  # noqa: E402
    FLEXIBERT_CURVES, NLP_PTB_EPOCHS, NLP_WIKITEXT2, TASKS, available, write_blackboxes,
)

from conftest import UPSTREAM  # noqa: E402
from ptb_archive import WT2_LOGS, make_ptb_logs  # noqa: E402

LOSSES = ("train_losses", "val_losses", "test_losses")


@pytest.fixture(scope="module")
def ptb_zip(tmp_path_factory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("ptb-logs") / "logs.zip"
    return path, make_ptb_logs(path)


@pytest.fixture(scope="module")
def ptb_bench(ptb_zip, tmp_path_factory) -> Benchmark:
    """Tables built by the CLI with ``--ptb-logs`` (the flag under test)."""
    out = tmp_path_factory.mktemp("data-ptb")
    assert main(["-q", "build-data", "--release", str(UPSTREAM), "--out", str(out), "--ptb-logs", str(ptb_zip[0]),
                 "--no-surrogate"]) == 0
    return Benchmark.load(str(out))


@pytest.fixture(scope="module")
def export(ptb_bench, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("syne-tune-mf") / "repository"
    assert main(["--data", str(ptb_bench.data.path.parent), "-q", "export", "--format", "syne-tune", "--out", str(out)]) == 0
    return out


def _epoch_truth(df) -> dict[tuple[int, int], np.ndarray]:
    """(recipe id, seed) -> (50 epochs, 5 objectives) from a logs table: the finished runs,
    seed s = a recipe's s-th run in init_time order (a recipe with one run repeats it)."""
    done = df[~df["diverged"].astype(bool) & (df["epochs_completed"] == 50)]
    out = {}
    for rid, g in done.groupby("recipe_id"):
        runs = g.sort_values("init_time")
        for s in range(2):
            r = runs.iloc[min(s, len(runs) - 1)]
            out[int(rid), s] = np.column_stack([*(np.asarray(r[k], dtype=float) for k in LOSSES),
                                                np.full(50, float(r["num_params"])), np.cumsum(r["wall_times"])])
    return out


def _check_epochs(folder: Path, task: str, df) -> int:
    """Every (recipe, seed, epoch) of the exported folder, read by syne-tune, against the
    logs table; returns how many values were compared."""
    bb = deserialize(str(folder))[task]
    meta = json.loads((folder / "metadata.json").read_text())
    assert list(bb.objectives_names) == ["metric_train_loss", "metric_val_loss", "metric_test_loss", "metric_num_params",
                                         "metric_elapsed_time"]
    assert bb.fidelity_values.tolist() == list(range(1, 51)) and meta["fidelity_attr"] == "epoch"
    truth = _epoch_truth(df)
    configs = bb.all_configurations()
    assert sorted(int(c["recipe_id"]) for c in configs) == sorted({rid for rid, _ in truth})
    n = 0
    for cfg in configs:
        rid = int(cfg["recipe_id"])
        for s in range(bb.num_seeds):
            want = truth[rid, min(s, 1)]
            got = bb.objective_function(cfg, fidelity=None, seed=s)  # syne-tune: every epoch at once
            assert np.array_equal(got, want), (rid, s)
            n += want.size
            for ep in (1, 17, 50):  # and syne-tune's one-fidelity path
                one = bb.objective_function(cfg, fidelity={"epoch": ep}, seed=s)
                assert [one[k] for k in bb.objectives_names] == want[ep - 1].tolist()
    left = set(df["recipe_id"]) - {rid for rid, _ in truth}
    assert sorted(meta["dropped"]) == sorted(int(r) for r in df.loc[df["recipe_id"].isin(left), "recipe_id"])
    return n


def test_wikitext2_every_epoch_from_disk_is_the_table(export, ptb_bench):
    df = ptb_bench.nlp.wikitext2
    n = _check_epochs(export / NLP_WIKITEXT2, TASKS[NLP_WIKITEXT2], df)
    assert n == 340 * 2 * 50 * 5  # 340 recipes (341 finished runs, one recipe twice), 2 seeds, 50 epochs, 5 objectives
    meta = json.loads((export / NLP_WIKITEXT2 / "metadata.json").read_text())
    assert len(meta["dropped"]) == 4 and "Klyuchnikov" in meta["cite"]


def test_ptb_every_epoch_from_the_logs_archive(export, ptb_bench, ptb_zip):
    df = ptb_bench.nlp.ptb_logs
    _, logs = ptb_zip
    assert sorted(df["log_name"]) == sorted(logs)  # every log of the archive, under its PTB name
    for name, d in logs.items():
        row = df[df["log_name"] == name].iloc[0]
        for k in (*LOSSES, "wall_times"):  # the diverged run's NaN losses stay NaN
            np.testing.assert_array_equal(np.asarray(row[k], dtype=float), np.asarray(d[k], dtype=float))
    n = _check_epochs(export / NLP_PTB_EPOCHS, TASKS[NLP_PTB_EPOCHS], df)
    assert n == 10 * 50 * 5  # 10 finished runs, one each (one seed); the diverged one is dropped
    assert ptb_bench.data.manifest["sources"]["nas-bench-nlp/train_logs_single_run/logs.zip"]


def test_flexibert_curves_from_disk_are_curve_points(export, ptb_bench):
    bench = ptb_bench
    bb = deserialize(str(export / FLEXIBERT_CURVES))[TASKS[FLEXIBERT_CURVES]]
    steps = bb.fidelity_values.tolist()
    assert steps == [0, *range(150_000, 1_000_001, 50_000)] and not set(BROKEN_CURVE_STEPS) & set(steps)
    assert "space_index" not in bb.objectives_names
    ids = bench.curve_ids()
    assert len(ids) == len(bb.hyperparameters) == 15
    n = 0
    for cfg in bb.all_configurations():
        arch = config_to_arch(cfg)
        for s in steps:
            p = bench.curve_point(arch, s, charge=False)
            got = bb.objective_function(cfg, fidelity={"steps": s}, seed=0)
            want = {"metric_glue": p.glue, **{f"metric_{t}": p.scores[t] for t in GLUE_TASKS},
                    "metric_elapsed_time": p.time_to_train}
            assert {k: got[k] for k in want} == want, (arch, s)
            n += len(want)
    assert n == 15 * 19 * 10
    # the release's damaged points exist in the table and are what the export leaves out
    curves = bench.data.table("flexibert_curves").to_pandas()
    assert set(curves.loc[curves["status"] != "ok", "steps"]) == set(BROKEN_CURVE_STEPS)


def _asha(bb, metric: str, attr: str, max_t: int, grace: int, brackets: int, seed: int) -> ASHA:
    return ASHA(bb.configuration_space, metric=metric, time_attr=attr, max_t=max_t, grace_period=grace,
                do_minimize=True, random_seed=seed, brackets=brackets)


@pytest.mark.parametrize("brackets", [1, 4], ids=["asha", "hyperband"])
def test_asha_and_hyperband_run_on_the_wikitext2_export_from_disk(export, ptb_bench, tmp_path, brackets):
    """The done-when: syne-tune's ASHA (and its Hyperband, ASHA with 4 brackets) on the
    folder the export wrote, read with syne-tune's deserialize; every reported value is the
    table's, and trials are stopped at ASHA's rungs."""
    bb = deserialize(str(export / NLP_WIKITEXT2))[TASKS[NLP_WIKITEXT2]]
    df = simulate(bb, _asha(bb, "metric_val_loss", "epoch", 50, 1, brackets, 0), max_trials=120, folder=tmp_path,
                  seed=0, time_step=60)
    assert df["trial_id"].nunique() >= 120
    truth = _epoch_truth(ptb_bench.nlp.wikitext2)
    for _, r in df.iterrows():
        assert r["metric_val_loss"] == truth[int(r["config_recipe_id"]), 0][int(r["epoch"]) - 1, 1]
        assert r["metric_elapsed_time"] == truth[int(r["config_recipe_id"]), 0][int(r["epoch"]) - 1, 4]
    top = df.groupby("trial_id")["epoch"].max()
    assert (top < 50).sum() > len(top) / 2 and (top == 50).any()  # most stopped early, some ran to the end
    # stopped at ASHA's rungs (grace 1, reduction 3: 1, 3, 9, 27; Hyperband's later brackets start at 3, 9, 27),
    # apart from the trials still running when the 120th finished
    assert top.isin([1, 3, 9, 27, 50]).mean() >= 0.9, top.value_counts().to_dict()


def test_asha_runs_on_the_curves_and_ptb_exports_from_disk(export, ptb_bench, tmp_path):
    from sklearn.neighbors import KNeighborsRegressor
    from syne_tune.blackbox_repository import add_surrogate

    # FlexiBERT's flat space holds 10.6M archs, the curves 15: syne-tune's 1-NN surrogate answers the others
    curves = deserialize(str(export / FLEXIBERT_CURVES))[TASKS[FLEXIBERT_CURVES]]
    sur = add_surrogate(curves, KNeighborsRegressor(n_neighbors=1))
    asha = ASHA(sur.configuration_space, metric="metric_glue", time_attr="steps", max_t=1_000_000, grace_period=150_000,
                do_minimize=False, random_seed=0)
    df = simulate(sur, asha, max_trials=60, folder=tmp_path / "c", seed=0, time_step=60)
    table = {(round(g, 9), int(s)) for cfg in curves.all_configurations() for s in curves.fidelity_values
             for g in [curves.objective_function(cfg, fidelity={"steps": int(s)}, seed=0)["metric_glue"]]}
    assert df["trial_id"].nunique() >= 60
    assert all((round(r["metric_glue"], 9), int(r["steps"])) in table for _, r in df.iterrows())
    top = df.groupby("trial_id")["steps"].max()
    assert (top < 1_000_000).any() and (top == 1_000_000).any()

    ptb = deserialize(str(export / NLP_PTB_EPOCHS))[TASKS[NLP_PTB_EPOCHS]]
    df = simulate(ptb, _asha(ptb, "metric_val_loss", "epoch", 50, 1, 1, 1), max_trials=30, folder=tmp_path / "p", seed=0)
    truth = _epoch_truth(ptb_bench.nlp.ptb_logs)
    assert df["trial_id"].nunique() >= 30
    for _, r in df.iterrows():
        assert r["metric_val_loss"] == truth[int(r["config_recipe_id"]), 0][int(r["epoch"]) - 1, 1]


# -- build-data --ptb-logs and the export's refusals -------------------------------------------------
def test_the_export_without_ptb_logs_names_build_data(bench, data_dir, tmp_path, capsys):
    assert NLP_PTB_EPOCHS not in available(bench) and not bench.nlp.has_ptb_logs
    out = tmp_path / "st"
    assert main(["--data", str(data_dir), "-q", "export", "nlp_ptb_logs", "--format", "syne-tune", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--ptb-logs" in err and "build-data" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    with pytest.raises(DataNotFoundError, match="--ptb-logs"):
        bench.nlp.ptb_logs
    with pytest.raises(DataNotFoundError, match="--ptb-logs"):
        write_blackboxes(bench, out, [NLP_PTB_EPOCHS])


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_text("not a zip"), ["--ptb-logs", "not a zip archive"]),
    (lambda p: None, ["--ptb-logs", "is not a file"]),
    (lambda p: p.write_bytes(WT2_LOGS.read_bytes()), ["WikiText-2 run"]),
])
def test_build_data_refuses_what_is_not_a_ptb_logs_archive(make, words, tmp_path, capsys):
    bad = tmp_path / "logs.zip"
    make(bad)
    out = tmp_path / "data"
    assert main(["-q", "build-data", "--release", str(UPSTREAM), "--out", str(out), "--ptb-logs", str(bad),
                 "--no-surrogate"]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert not any(out.rglob("*.parquet"))


def test_ptb_logs_are_the_wikitext2_format(ptb_bench):
    """Both logs tables have the same columns (one parser), and the finished runs' last
    epoch is their final loss."""
    logs, wt2 = ptb_bench.nlp.ptb_logs, ptb_bench.nlp.wikitext2
    assert list(logs.columns) == list(wt2.columns)
    done = logs[~logs["diverged"]]
    assert all(math.isclose(r["final_test_loss"], r["test_losses"][-1], rel_tol=0, abs_tol=0) for _, r in done.iterrows())
    assert logs["diverged"].sum() == 1
