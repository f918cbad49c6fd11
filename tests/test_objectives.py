"""Task metadata (issue 30, item 4): bench.objectives and objectives.json equal what the
tables say, round-trip through JSON, and the optimiser adapters take their directions
from them (a test here fails if an adapter hard-codes one)."""

from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType

import numpy as np
import pytest

from conftest import UPSTREAM

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_values_are_the_tables(bench):
    from nasbench_bert.surrogate.noise import _sigma_ci, repeat_pairs

    o = bench.objectives
    df = bench.to_pandas()
    assert o["glue"].direction == "max" and o["glue"].best == df["glue"].max()
    assert o["glue"].best_key == int(df.loc[df["glue"].idxmax(), "id"])
    for t in ("cola", "mnli", "mrpc", "qnli", "qqp", "rte", "sst2", "stsb"):
        assert o[t].best == df[t].max() and o[t].bounds[0] <= df[t].min() and df[t].max() <= o[t].bounds[1]
    assert o["time_to_train"].direction == "min" and o["time_to_train"].best == df["time_to_train"].min()
    assert o["num_params_as_trained"].best == df["num_params_as_trained"].min()
    assert o["num_params_as_trained"].noise_sigma == 0.0  # the 9 repeats trained the same model
    pairs = repeat_pairs(bench)
    sigma = _sigma_ci(pairs[pairs["kind"] == "exact repeat"]["diff"].to_numpy())[0]
    assert math.isclose(o["glue"].noise_sigma, sigma, rel_tol=1e-12)  # the noise module's 0.60
    steps = np.unique(bench.data.table("flexibert_curves").column("steps").to_numpy())
    (fid,) = o["glue"].fidelities
    assert (fid.name, fid.min, fid.max, fid.final) == ("pretrain_steps", steps.min(), steps.max(), 100_000)
    assert o["time_to_train"].fidelities == ()
    nlp = bench.nlp.objectives
    assert nlp["ptb"]["test_loss"].best == np.nanmin(bench.nlp.ptb["test_loss"])
    assert nlp["ptb"]["test_loss"].direction == "min" and nlp["ptb"]["test_loss"].noise_sigma is None
    wt2 = bench.nlp.wikitext2
    assert nlp["wikitext2"]["test_loss"].best == np.nanmin(wt2["final_test_loss"])
    (ep,) = nlp["wikitext2"]["val_loss"].fidelities
    assert (ep.name, ep.min, ep.max) == ("epoch", 1, max(len(c) for c in wt2["val_losses"]))
    assert isinstance(o, MappingProxyType)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o["glue"].direction = "min"  # type: ignore[misc]


def test_json_round_trip_and_the_release_file(bench, tmp_path):
    from nasbench_bert import Benchmark, DataIntegrityError
    from nasbench_bert.benchmark import objectives as O
    from nasbench_bert.data.release import build_tables
    from nasbench_bert.surrogate.portable import write_artifacts

    for o in bench.objectives.values():
        assert O.Objective.from_dict(o.to_dict()) == o
    sections = O.release_objectives(bench)
    payload = O.to_json(sections)
    assert O.from_json(payload) == sections and O.to_json(O.from_json(payload)) == payload
    assert b"Infinity" not in payload and b'"inf"' in payload  # strict JSON
    # the data release's objectives.json: listed in the manifest, read back equal to the computed metadata
    root = tmp_path / "data"
    build_tables(UPSTREAM, root, progress=False)
    from nasbench_bert.data.tables import DataDir

    entry = write_artifacts(Benchmark(DataDir.open(root)), surrogate=False)["objectives"]
    loaded = Benchmark.load(str(root))
    assert loaded.data.manifest["artifacts"]["objectives"] == entry
    assert dict(loaded.objectives) == dict(bench.objectives)
    assert {k: dict(v) for k, v in loaded.nlp.objectives.items()} == {k: dict(v) for k, v in bench.nlp.objectives.items()}
    (loaded.data.path / entry["file"]).write_bytes(payload.replace(b'"max"', b'"min"', 1))
    with pytest.raises(DataIntegrityError, match="artifact 'objectives'.*manifest pins"):
        Benchmark.load(str(root)).objectives
    with pytest.raises(DataIntegrityError, match="format/format_version"):
        O.from_json(b'{"format": "other", "format_version": 1}')


def test_a_bad_direction_is_named():
    from nasbench_bert.benchmark.objectives import Objective
    from nasbench_bert.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=r"objective 'x': direction = 'up' is not allowed; allowed values: \['max', 'min'\]"):
        Objective("x", "t", "x", "up", (0.0, 1.0), 1.0, 0, None, "", "")
    with pytest.raises(InvalidArgumentError, match=r"missing field\(s\) \['best'"):
        Objective.from_dict({"name": "x"})


def _flipped(objs):
    """``objs`` with every direction reversed: an adapter that reads the metadata follows."""
    return MappingProxyType({k: dataclasses.replace(v, direction="min" if v.direction == "max" else "max")
                             for k, v in objs.items()})


def test_adapters_take_their_directions_from_the_metadata(bench, monkeypatch):
    pytest.importorskip("optuna", reason="the [hpo] extra (optuna) is not installed")
    import optuna

    from nasbench_bert.integrations.configspace import as_cost
    from nasbench_bert.integrations.optuna import run_optuna, run_optuna_nlp

    assert run_optuna(bench, n_trials=2).study.direction == optuna.study.StudyDirection.MAXIMIZE
    assert run_optuna_nlp(bench, "ptb", n_trials=2).direction == optuna.study.StudyDirection.MINIMIZE
    assert as_cost(70.0, bench.objectives["glue"]) == -70.0
    monkeypatch.setitem(bench.__dict__, "objectives", _flipped(bench.objectives))
    monkeypatch.setitem(bench.nlp.__dict__, "objectives",
                        MappingProxyType({d: _flipped(v) for d, v in bench.nlp.objectives.items()}))
    assert run_optuna(bench, n_trials=2).study.direction == optuna.study.StudyDirection.MINIMIZE
    assert run_optuna_nlp(bench, "ptb", n_trials=2).direction == optuna.study.StudyDirection.MAXIMIZE
    assert as_cost(70.0, bench.objectives["glue"]) == 70.0


def test_syne_tune_modes_come_from_the_metadata(bench, monkeypatch):
    pytest.importorskip("syne_tune", reason="the [hpo] extra (syne-tune) is not installed")
    from nasbench_bert.integrations.syne_tune import do_minimize, nlp_to_syne_tune, to_syne_tune

    bb = to_syne_tune(bench)
    assert bb.metric_modes["metric_glue"] == "max" and bb.metric_modes["metric_glue_error"] == "min"
    assert not do_minimize(bb, "metric_glue") and do_minimize(bb, "metric_elapsed_time")
    assert "space_index" not in bb.metric_modes
    assert nlp_to_syne_tune(bench, "wikitext2").metric_modes["metric_val_loss"] == "min"
    monkeypatch.setitem(bench.__dict__, "objectives", _flipped(bench.objectives))
    monkeypatch.setitem(bench.nlp.__dict__, "objectives",
                        MappingProxyType({d: _flipped(v) for d, v in bench.nlp.objectives.items()}))
    bb = to_syne_tune(bench)
    assert bb.metric_modes["metric_glue"] == "min" and bb.metric_modes["metric_glue_error"] == "max"
    assert nlp_to_syne_tune(bench, "wikitext2").metric_modes["metric_val_loss"] == "max"


def test_smac_cost_follows_the_metadata(bench, monkeypatch):
    pytest.importorskip("smac", reason="SMAC3 is not installed")
    from nasbench_bert.integrations import smac as smac_mod

    seen: list[float] = []

    class OneCall:  # stands in for SMAC's facade: one target call, its cost recorded
        def __init__(self, scenario, target, **kw):
            self.scenario, self.target = scenario, target

        def optimize(self):
            cfg = self.scenario.configspace.sample_configuration()
            seen.append(self.target(cfg))
            return cfg

    monkeypatch.setattr(smac_mod, "HyperparameterOptimizationFacade", OneCall)
    t = smac_mod.run_smac(bench, n_trials=1, oracle="tabular")
    assert seen[-1] == -t.evaluations[0]["glue"]
    monkeypatch.setitem(bench.__dict__, "objectives", _flipped(bench.objectives))
    t = smac_mod.run_smac(bench, n_trials=1, oracle="tabular")
    assert seen[-1] == t.evaluations[0]["glue"]
