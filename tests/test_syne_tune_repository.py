"""syne-tune's blackbox repository (issue 31, item 1): the export is read by **syne-tune's own**
code - ``blackbox_tabular.deserialize``, ``repository.load_blackbox`` from a Hub (the local
Hub-protocol server of tests/hubserver.py, reached through ``HF_ENDPOINT``), and its simulated
tabular backend - and every value it returns equals ``Benchmark.query`` / ``bench.nlp.query``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("syne_tune", reason="the [hpo] extra (syne-tune) is not installed")

from syne_tune.blackbox_repository.blackbox_tabular import deserialize  # noqa: E402

from nasbench_bert import InvalidArgumentError  # noqa: E402
from nasbench_bert.cli import main  # noqa: E402
from nasbench_bert.data.tables import GLUE_TASKS  # noqa: E402
from nasbench_bert.integrations.syne_tune import arch_to_config, config_to_arch  # noqa: E402
from nasbench_bert.integrations.syne_tune_recipe import (  # noqa: E402
    BLACKBOXES, FIDELITY_ATTRS, FILES, FLEXIBERT, FLEXIBERT_CURVES, NLP_PTB, NLP_WIKITEXT2, RECIPES, TASKS, available,
    blackbox_of, register, write_blackboxes,
)

from conftest import ROOT  # noqa: E402
from hubserver import HubServer  # noqa: E402

HUB_REPO = "nasbench-bert/syne-tune-blackboxes"
#: where syne-tune's load_blackbox looks when no custom_repo_id is given (BlackboxRepositoryBackend)
SYNE_TUNE_REPO = "synetune/blackbox-repository"


@pytest.fixture(scope="module")
def export(bench, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("syne-tune") / "repository"
    write_blackboxes(bench, out)
    return out


def _expected_flexibert(bench) -> list[tuple[int, dict, int, dict[str, float]]]:
    """(id, flat config, seed, expected metrics) for each of the 500 benchmark ids: the
    seed of an id is its run index among its arch's runs in id order."""
    rows = []
    for i in range(len(bench)):
        r = bench.query(i, charge=False)
        runs = sorted((x.id for x in bench.query_all(r.arch) if x.source == "bundled"))
        expected = {"metric_glue": r.glue, **{f"metric_{t}": r.scores[t] for t in GLUE_TASKS},
                    "metric_elapsed_time": r.time_to_train, "metric_num_params_as_trained": float(r.num_params_as_trained),
                    "metric_glue_error": 100.0 - r.glue}
        rows.append((i, arch_to_config(r.arch), runs.index(i), expected))
    return rows


def _nlp_expected(r) -> dict[str, float]:
    return {"metric_test_loss": r.test_loss, "metric_perplexity": r.perplexity, "metric_bits_per_word": r.bits_per_word,
            "metric_num_params": float(r.num_params)}


def _compare(got: dict[str, float], expected: dict[str, float]) -> float:
    """The largest |got - expected|; the caller asserts it is 0 (bit-equal values)."""
    return max(abs(float(got[k]) - float(v)) for k, v in expected.items())


# -- the files ----------------------------------------------------------------------------------
def test_files_are_syne_tunes_layout(export, bench):
    assert sorted(p.name for p in export.iterdir()) == sorted(available(bench)) == sorted(set(BLACKBOXES) - {
        "nasbench-bert-nlp-ptb-epochs"})  # the default data holds no PTB logs
    for name in available(bench):
        folder = export / name
        assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
        meta = json.loads((folder / "metadata.json").read_text())
        assert meta["task_names"] == [TASKS[name]]
        y = np.load(folder / "objectives_evaluations.npy")
        assert y.dtype == np.float64 and y.shape[:1] == (1,) and y.shape[-1] == len(meta["objectives_names"])
        assert np.isfinite(y).all()
    fx = json.loads((export / FLEXIBERT / "metadata.json").read_text())
    assert np.load(export / FLEXIBERT / "objectives_evaluations.npy").shape[1:4] == (len(set(bench.archs)), 2, 1)
    assert np.load(export / FLEXIBERT / "fidelities_values.npy").tolist() == [100_000]
    assert np.load(export / NLP_PTB / "fidelities_values.npy").tolist() == [50]
    # directions come from bench.objectives, never typed here
    for k, o in bench.objectives.items():
        if f"metric_{k}" in fx["metric_modes"]:
            assert fx["metric_modes"][f"metric_{k}"] == o.direction
    assert fx["metric_modes"]["metric_glue"] == "max" and fx["metric_modes"]["metric_glue_error"] == "min"
    ptb = json.loads((export / NLP_PTB / "metadata.json").read_text())
    assert ptb["metric_modes"]["metric_test_loss"] == bench.nlp.objectives["ptb"]["test_loss"].direction == "min"


def test_deserialize_equals_query_at_all_500_ids(export, bench):
    bbs = deserialize(str(export / FLEXIBERT))  # syne-tune's reader
    assert list(bbs) == ["glue"]
    bb = bbs["glue"]
    rows = _expected_flexibert(bench)
    assert len(rows) == 500
    worst = max(_compare(bb.objective_function(cfg, fidelity={"steps": 100_000}, seed=s), exp) for _, cfg, s, exp in rows)
    assert worst == 0.0
    # what query(arch) answers (the arch's first run) is seed 0, for every arch
    for _, cfg, _, _ in rows:
        r = bench.query(config_to_arch(cfg), charge=False)
        assert bb.objective_function(cfg, fidelity={"steps": 100_000}, seed=0)["metric_glue"] == r.glue
    # the float64 file is what makes this exact: syne-tune's float32 cast would have moved values
    y = bb.objectives_evaluations
    assert (y.astype(np.float32).astype(np.float64) != y).any()


def test_deserialize_ptb_equals_nlp_query_at_every_recipe(export, bench):
    bb = deserialize(str(export / NLP_PTB))["ptb"]
    ids = [int(r) for r in bench.nlp.ptb["recipe_id"]]
    assert len(ids) == len(bb.hyperparameters) == 8794
    worst = max(_compare(bb.objective_function({"recipe_id": rid, "dataset": "ptb"}, fidelity={"epoch": 50}, seed=0),
                         _nlp_expected(bench.nlp.query(rid, "ptb", charge=False))) for rid in ids)
    assert worst == 0.0


def test_package_loader_reads_the_export_back(export, bench):
    from nasbench_bert.integrations.syne_tune import FlexiBERTTabular, NLPTabular, load_blackbox

    fx = load_blackbox(export / FLEXIBERT)  # the metadata restores the nearest-arch class
    assert isinstance(fx, FlexiBERTTabular) and fx.outside == "nearest"
    assert isinstance(load_blackbox(export / NLP_PTB), NLPTabular)
    np.testing.assert_array_equal(fx.objectives_evaluations, blackbox_of(bench, FLEXIBERT).objectives_evaluations)


# -- the command --------------------------------------------------------------------------------
def test_cli_export_writes_the_same_bytes(export, bench, data_dir, tmp_path, capsys):
    out = tmp_path / "repo"
    assert main(["--data", str(data_dir), "-q", "export", "--format", "syne-tune", "--out", str(out)]) == 0
    for name in available(bench):  # deterministic: a re-export of one release is byte-identical
        for f in FILES:
            assert (out / name / f).read_bytes() == (export / name / f).read_bytes(), (name, f)
    assert main(["--data", str(data_dir), "-q", "export", "nlp_ptb", "--format", "syne-tune", "--out", str(tmp_path / "one")]) == 0
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == [NLP_PTB]


@pytest.mark.parametrize("argv, words", [
    (["--format", "xml"], ["--format = 'xml'", "'table'", "'syne-tune'"]),
    (["flexibert_proxies", "--format", "syne-tune"], ["flexibert_proxies", "'flexibert'", "'nlp_ptb'", "'nlp_wikitext2'",
                                                      "'flexibert_curves'"]),
    (["--format", "syne-tune", "--legacy-names"], ["--legacy-names"]),
    ([], ["table is missing", "'flexibert_curves'"]),
])
def test_cli_export_refusals_name_the_allowed_values(argv, words, data_dir, tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["--data", str(data_dir), "-q", "export", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert not out.exists()


def test_a_failed_export_leaves_every_folder_as_it_was(bench, export, tmp_path):
    out = tmp_path / "repo"
    write_blackboxes(bench, out, [NLP_PTB])
    before = {f: (out / NLP_PTB / f).read_bytes() for f in FILES}

    def build(b, name):
        if name == NLP_PTB:
            raise OSError(28, "No space left on device")
        return blackbox_of(b, name)

    with pytest.raises(OSError):
        write_blackboxes(bench, out, available(bench), build=build)
    # the FlexiBERT folder, built before the failure, was never swapped in; the old PTB folder is intact
    assert sorted(p.name for p in out.iterdir()) == [NLP_PTB]
    assert {f: (out / NLP_PTB / f).read_bytes() for f in FILES} == before
    with pytest.raises(InvalidArgumentError, match=r"allowed values: \['nasbench-bert-flexibert', 'nasbench-bert-flexibert-curves'"):
        write_blackboxes(bench, out, ["fcnet"])
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgumentError, match="is a file"):
        write_blackboxes(bench, tmp_path / "file")


# -- a user's files are never deleted or renamed (issue 37, defect 8) -----------------------------------
def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("plant", ["foreign file inside", "file where the folder goes", "link where the folder goes",
                                   "another tool's blackbox"])
def test_export_refuses_a_users_files_before_writing_anything(plant, export, bench, data_dir, tmp_path, capsys):
    out = tmp_path / "repo"
    assert main(["--data", str(data_dir), "-q", "export", "--format", "syne-tune", "--out", str(out)]) == 0
    target = out / (FLEXIBERT if plant == "foreign file inside" else NLP_PTB)
    if plant == "foreign file inside":
        (target / "notes.txt").write_text("my notes")
    elif plant == "file where the folder goes":
        import shutil

        shutil.rmtree(target)
        target.write_text("my results")
    elif plant == "link where the folder goes":
        import shutil

        shutil.rmtree(target)
        (tmp_path / "mine").mkdir()
        target.symlink_to(tmp_path / "mine", target_is_directory=True)
    else:  # syne-tune's own files, written by something else: no nasbench-bert stamp
        meta = json.loads((target / "metadata.json").read_text())
        meta.pop("generated_by")
        meta.pop("nasbench_bert")
        (target / "metadata.json").write_text(json.dumps(meta))
    before = _snapshot(out)
    assert main(["--data", str(data_dir), "-q", "export", "--format", "syne-tune", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(target) in err and "choose another output folder" in err and len(err.splitlines()) == 1, err
    assert _snapshot(out) == before  # nothing deleted, renamed or written, in any blackbox folder
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no hidden .old-/.staging- copies
    with pytest.raises(InvalidArgumentError, match="choose another output folder"):
        write_blackboxes(bench, out)


def test_export_replaces_only_its_own_folders(export, bench, tmp_path):
    """A folder the export wrote (this version, or 0.2's serialize_blackbox stamp) is replaced
    whole; an empty folder is filled; other folders beside them are left alone."""
    out = tmp_path / "repo"
    write_blackboxes(bench, out, [NLP_PTB])
    (out / FLEXIBERT).mkdir()  # empty: allowed
    (out / "my-blackbox").mkdir()
    (out / "my-blackbox" / "keep.txt").write_text("mine")
    old = json.loads((out / NLP_PTB / "metadata.json").read_text())
    old.pop("generated_by")  # what 0.2 wrote: only the nasbench_bert key
    (out / NLP_PTB / "metadata.json").write_text(json.dumps(old))
    write_blackboxes(bench, out, [FLEXIBERT, NLP_PTB])
    for name in (FLEXIBERT, NLP_PTB):
        assert all((out / name / f).read_bytes() == (export / name / f).read_bytes() for f in FILES), name
    assert (out / "my-blackbox" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == sorted([FLEXIBERT, NLP_PTB, "my-blackbox"])


# -- what the metadata says (issue 37, defect 12; the version stamp) -----------------------------------
def test_metadata_objectives_citations_and_version(export, bench):
    import nasbench_bert

    for name in available(bench):
        meta = json.loads((export / name / "metadata.json").read_text())
        assert "space_index" not in meta["objectives_names"] and "space_index" not in meta["metric_modes"], name
        assert set(meta["metric_modes"]) == set(meta["objectives_names"]), name  # every objective has a direction
        assert meta["nasbench_bert_version"] == nasbench_bert.__version__
        assert meta["generated_by"] == f"nasbench-bert {nasbench_bert.__version__}"
        if name.startswith(FLEXIBERT):  # the 500 trained runs and the space they sample
            assert "Serianni" in meta["cite"] and "Kalita" in meta["cite"] and "2023.acl-long.142" in meta["cite"]
            assert "FlexiBERT" in meta["cite"] and "Tuli" in meta["cite"]
        else:
            assert "Klyuchnikov" in meta["cite"] and "NAS-Bench-NLP" in meta["cite"]
    # the syne-tune recipes cite the same
    assert all(RECIPES[n](bench=bench).cite_reference == json.loads((export / n / "metadata.json").read_text())["cite"]
               for n in available(bench))


# -- the recipes ----------------------------------------------------------------------------------
def test_recipes_write_the_export_and_register_in_syne_tune(bench, export, tmp_path, monkeypatch):
    from syne_tune.blackbox_repository import repository
    from syne_tune.blackbox_repository.conversion_scripts import recipes as st_recipes
    from syne_tune.blackbox_repository.conversion_scripts.blackbox_recipe import BlackboxRecipe

    for recipe in (RECIPES[name](bench=bench, root=tmp_path) for name in available(bench)):
        assert isinstance(recipe, BlackboxRecipe) and recipe.cite_reference
        recipe.generate(upload_on_hub=False)  # syne-tune's entry point: _generate_on_disk, no upload
        for f in FILES:
            assert (tmp_path / recipe.name / f).read_bytes() == (export / recipe.name / f).read_bytes()
    monkeypatch.setattr(st_recipes, "generate_blackbox_recipes", dict(st_recipes.generate_blackbox_recipes))
    monkeypatch.setattr(repository, "generate_blackbox_recipes", st_recipes.generate_blackbox_recipes)
    assert FLEXIBERT not in repository.blackbox_list()
    assert register() == list(BLACKBOXES)
    assert set(BLACKBOXES) <= set(repository.blackbox_list())


# -- syne-tune's load_blackbox from a Hub, and its simulated backend --------------------------------
CHILD = r"""
import json, sys
from syne_tune import StoppingCriterion, Tuner
from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
from syne_tune.blackbox_repository import BlackboxRepositoryBackend, load_blackbox
from syne_tune.optimizer.baselines import RandomSearch

from nasbench_bert.integrations.syne_tune_recipe import register

register()  # what the upstream pull request does in syne-tune's recipes.py
out = {}
fx = load_blackbox("nasbench-bert-flexibert", custom_repo_id=sys.argv[1])["glue"]
out["flexibert"] = [{"config": {k: (v.item() if hasattr(v, "item") else v) for k, v in cfg.items()}, "seed": s,
                     "values": {k: float(v) for k, v in fx.objective_function(cfg, fidelity={"steps": 100000}, seed=s).items()}}
                    for cfg in fx.all_configurations() for s in range(fx.num_seeds)]
ptb = load_blackbox("nasbench-bert-nlp-ptb", custom_repo_id=sys.argv[1])["ptb"]
out["ptb"] = {int(c["recipe_id"]): {k: float(v) for k, v in ptb.objective_function(c, fidelity={"epoch": 50}, seed=0).items()}
              for c in ptb.all_configurations()}
# the multi-fidelity blackboxes, every (configuration, seed, fidelity) at once
wt2 = load_blackbox("nasbench-bert-nlp-wikitext2", custom_repo_id=sys.argv[1])["wikitext2"]
out["wikitext2"] = {f"{int(c['recipe_id'])}/{s}": wt2.objective_function(c, seed=s).tolist()
                    for c in wt2.all_configurations() for s in range(wt2.num_seeds)}
cur = load_blackbox("nasbench-bert-flexibert-curves", custom_repo_id=sys.argv[1])["glue"]
out["curves"] = [{"config": {k: (v.item() if hasattr(v, "item") else v) for k, v in c.items()},
                  "values": cur.objective_function(c, seed=0).tolist(), "names": list(cur.objectives_names),
                  "steps": cur.fidelity_values.tolist()} for c in cur.all_configurations()]


def run(backend, metric, do_minimize):
    # syne-tune's simulated tabular backend: blackbox by name from the repository, simulated time
    scheduler = RandomSearch(backend.blackbox.configuration_space, metrics=[metric], do_minimize=do_minimize, random_seed=0)
    callback = SimulatorCallback()
    Tuner(trial_backend=backend, scheduler=scheduler, n_workers=4, sleep_time=0, callbacks=[callback],
          stop_criterion=StoppingCriterion(max_num_trials_finished=30), results_update_interval=1e9,
          print_update_interval=1e9, save_tuner=False).run()
    return callback.dataframe().to_dict("records")


# FlexiBERT's flat space holds 10.6M archs, the table 491: syne-tune answers the others with its
# 1-nearest-neighbour surrogate (its documented way for tables that are not a full grid)
out["run_flexibert"] = run(BlackboxRepositoryBackend(
    blackbox_name="nasbench-bert-flexibert", dataset="glue", elapsed_time_attr="metric_elapsed_time",
    surrogate="KNeighborsRegressor", surrogate_kwargs={"n_neighbors": 1}, tuner_sleep_time=60.0), "metric_glue", False)
# PTB's space is the evaluated recipe ids: a plain table lookup
out["run_ptb"] = run(BlackboxRepositoryBackend(
    blackbox_name="nasbench-bert-nlp-ptb", dataset="ptb", elapsed_time_attr="metric_elapsed_time"), "metric_test_loss", True)
with open(sys.argv[2], "w") as f:
    json.dump(out, f, default=str)
"""


@pytest.fixture(scope="module")
def from_hub(export, tmp_path_factory):
    """Upload the export to the local Hub (as docs/integrations.md tells a maintainer to),
    then in a fresh process with ``HF_ENDPOINT`` pointing there and a private home (syne-tune
    keeps ``~/.blackbox-repository`` and ``~/syne-tune``): register the recipes, load both
    blackboxes with syne-tune's ``load_blackbox(name, custom_repo_id=...)``, evaluate every
    configuration, and run RandomSearch through ``BlackboxRepositoryBackend`` (which loads
    by name from syne-tune's own repo id: the state after the upstream pull request)."""
    from huggingface_hub import HfApi

    tmp = tmp_path_factory.mktemp("syne-tune-hub")
    with HubServer() as server:
        api = HfApi(endpoint=server.url, token="test-token")
        for repo in (HUB_REPO, SYNE_TUNE_REPO):
            api.create_repo(repo, repo_type="dataset")
            api.upload_folder(folder_path=str(export), repo_id=repo, repo_type="dataset",
                              commit_message="Upload nasbench-bert blackboxes")
        env = {**os.environ, "HF_ENDPOINT": server.url, "HOME": str(tmp / "home"), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        env.pop("HF_HUB_OFFLINE", None)
        env.pop("SYNETUNE_FOLDER", None)
        result = tmp / "result.json"
        proc = subprocess.run([sys.executable, "-c", CHILD, HUB_REPO, str(result)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-4000:]
        log = list(server.log)
    return {"result": json.loads(result.read_text()), "log": log, "home": tmp / "home"}


def test_load_blackbox_from_the_hub_equals_query_at_all_500_ids(from_hub, bench):
    got = {(config_to_arch(r["config"]), r["seed"]): r["values"] for r in from_hub["result"]["flexibert"]}
    assert len(got) == 2 * len(set(bench.archs))
    worst = max(_compare(got[(config_to_arch(cfg), s)], exp) for _, cfg, s, exp in _expected_flexibert(bench))
    assert worst == 0.0
    # the files came from the server, through HF_ENDPOINT, into syne-tune's repository folder
    fetched = {p.rsplit("/", 1)[-1] for m, p, _ in from_hub["log"] if m == "GET" and f"/{HUB_REPO}/resolve/" in p}
    assert set(FILES) <= fetched
    for name in (FLEXIBERT, NLP_PTB, NLP_WIKITEXT2, FLEXIBERT_CURVES):
        assert sorted(p.name for p in (from_hub["home"] / ".blackbox-repository" / name).iterdir()) == sorted(FILES)


def test_load_blackbox_from_the_hub_ptb_equals_nlp_query(from_hub, bench):
    got = {int(k): v for k, v in from_hub["result"]["ptb"].items()}
    assert sorted(got) == sorted(int(r) for r in bench.nlp.ptb["recipe_id"])
    worst = max(_compare(got[rid], _nlp_expected(bench.nlp.query(rid, "ptb", charge=False))) for rid in got)
    assert worst == 0.0


def test_simulated_backend_runs_random_search_on_the_table(from_hub, bench):
    fx = from_hub["result"]["run_flexibert"]
    done = {r["trial_id"] for r in fx}
    assert len(done) >= 30
    # each result is a trained arch's run (the 1-NN surrogate answers with a table row, never a blend)
    table = {(r.glue, r.time_to_train) for i in range(len(bench)) for r in [bench.query(i, charge=False)]}
    assert all((r["metric_glue"], r["metric_elapsed_time"]) in table for r in fx)
    assert max(r["metric_glue"] for r in fx) <= max(g for g, _ in table)
    ptb = from_hub["result"]["run_ptb"]
    assert len({r["trial_id"] for r in ptb}) >= 30
    for r in ptb:  # a plain lookup: the recipe's own values
        assert r["metric_test_loss"] == bench.nlp.query(int(r["config_recipe_id"]), "ptb", charge=False).test_loss


def test_load_blackbox_from_the_hub_multi_fidelity_equals_the_tables(from_hub, bench):
    """syne-tune's load_blackbox of the WikiText-2 and learning-curve blackboxes: every
    (configuration, seed, fidelity) equals the logs / bench.curve_point."""
    wt2 = bench.nlp.wikitext2
    got = from_hub["result"]["wikitext2"]
    assert len(got) == 340 * 2
    for key, values in got.items():
        rid, s = (int(x) for x in key.split("/"))
        runs = wt2[(wt2["recipe_id"] == rid) & ~wt2["diverged"]].sort_values("init_time")
        r = runs.iloc[min(s, len(runs) - 1)]
        want = np.column_stack([r["train_losses"], r["val_losses"], r["test_losses"], np.full(50, float(r["num_params"])),
                                np.cumsum(r["wall_times"])])
        assert np.array_equal(np.array(values), want), key
    curves = from_hub["result"]["curves"]
    assert len(curves) == 15
    for c in curves:
        arch = config_to_arch(c["config"])
        for j, st in enumerate(c["steps"]):
            p = bench.curve_point(arch, st, charge=False)
            v = dict(zip(c["names"], c["values"][j]))
            assert v["metric_glue"] == p.glue and v["metric_elapsed_time"] == p.time_to_train
            assert all(v[f"metric_{t}"] == p.scores[t] for t in GLUE_TASKS)


def _numbers(text: str) -> list[int]:
    return [int(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\d|\d", text)]


def test_the_integrations_page_describes_every_blackbox_and_carps_task(export, bench):
    """docs/integrations.md named two blackboxes with one fidelity each and four CARP-S tasks
    after the multi-fidelity ones were added (issue 37): its folder table must list every
    blackbox with its task and fidelity attribute, and the shape and first/last fidelity of
    each exported one; its CARP-S table every shipped task config."""
    page = (ROOT / "docs" / "integrations.md").read_text()
    section = page.split("### syne-tune's blackbox repository", 1)[1].split("\n## ", 1)[0]
    rows = {m[0]: m[1:] for m in re.findall(r"^\| `(nasbench-bert-[\w-]+)`[^|]*\| `(\w+)` \| ([^|]+) \|[^|]+\| "
                                            r"`(\w+)` = ([^|]+) \|", section, re.M)}
    assert set(rows) == set(BLACKBOXES) and "One fidelity" not in section
    exported = available(bench)
    assert len(exported) >= 4
    for name, (task, dims, attr, values) in rows.items():
        assert (task, attr) == (TASKS[name], FIDELITY_ATTRS[name]), name
        if name not in exported:  # the PTB-epochs blackbox needs PTB's logs (test_syne_tune_fidelities.py)
            continue
        bb = deserialize(str(export / name))[task]
        fid = bb.fidelity_values.tolist()
        assert _numbers(dims) == [len(bb.hyperparameters), bb.num_seeds, len(fid)], name
        assert [_numbers(values)[0], _numbers(values)[-1]] == [fid[0], fid[-1]], name
    carps = page.split("\n## CARP-S", 1)[1].split("\n## ", 1)[0]
    shipped = {p.stem for p in (ROOT / "nasbench_bert" / "integrations" / "carps_configs" / "task" / "NASBenchBERT").glob("*.yaml")}
    assert {m for m in re.findall(r"^\| `(\w+)`[^|]*\| `[A-Z]", carps, re.M)} == shipped
    words = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
    assert re.search(r"adds\s+(\w+)\s+tasks", carps).group(1) == words[len(shipped)]
    assert f"runs all {words[len(shipped)]} tasks" in " ".join(carps.split())
