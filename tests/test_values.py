"""Every query result equals the release files' values exactly, over all rows."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from nasbench_bert import Arch, InvalidArchitectureError, NotEvaluatedError, OutOfBudgetError
from nasbench_bert.sizes import flexibert_num_params
from nasbench_bert.data.tables import FLEXIBERT_PROXY_COLUMNS, NLP_PROXY_COLUMNS, RELEASE_TASK_NAMES
from conftest import TFN


def _csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def test_all_500_archs_from_every_key_form(bench, release_entries):
    assert len(bench) == 500
    for e in release_entries:
        d = e["hparams"]["model_hparam_overrides"]
        a = Arch.from_release(d)
        by_arch = [bench.query(k, charge=False) for k in (a, str(a), d)]
        assert by_arch[0] is by_arch[1] is by_arch[2]
        runs = bench.query_all(a)
        assert by_arch[0] is runs[0] and e["id"] in [r.id for r in runs]
        r = bench.query(e["id"], charge=False)
        assert r.id == e["id"] and r.arch == a
        assert sorted((r.id, *r.other_ids)) == [x.id for x in runs]
        for rel, name in RELEASE_TASK_NAMES.items():
            assert r.scores[name] == e["scores"][rel]
        assert r.glue == e["scores"]["glue"]
        assert r.glue == pytest.approx(np.mean(list(r.scores.values())), abs=1e-9)
        assert r.time_to_train == e["time_to_train"]
        assert dict(r.hparams) == e["hparams"]
        assert r.pretrain_steps == 100_000
        assert r.num_params_as_specified == flexibert_num_params(a, "as_specified")


def test_repeated_archs(bench, release_entries):
    reps = bench.repeats()
    keys = [json.dumps(e["hparams"]["model_hparam_overrides"], sort_keys=True) for e in release_entries]
    assert len(reps) == len(keys) - len(set(keys)) == 9
    assert all(len(ids) == 2 for ids in reps["ids"])


def test_stored_proxies_equal_csv_and_seed_compat_params(bench):
    rows = _csv(TFN / "BERT_results_activation.csv")
    t = bench.data.table("flexibert_proxies").to_pandas().set_index("id")
    assert len(rows) == len(t) == 500
    for r in rows:
        i = int(r["ID"])
        for src, name in FLEXIBERT_PROXY_COLUMNS.items():
            assert t.at[i, name] == float(r[src]), (i, name)
        # the seed_compat model reproduces the stored parameter count exactly
        assert bench.query(i, charge=False).num_params_authors == int(r["Number of Parameters"])


def test_learning_curves_equal_json_and_csv(bench):
    ablation = json.loads((TFN / "BERT_benchmark_train_ablation.json").read_text())
    with_curve = [e for e in ablation if e["scores"]]
    assert bench.curve_ids() == sorted(e["id"] for e in with_curve)
    for e in with_curve:
        c = bench.curve(e["id"]).set_index("steps")
        assert sorted(c.index) == sorted(int(s) for s in e["scores"]) == list(range(0, 1_000_001, 50_000))
        for s, sc in e["scores"].items():
            for rel, name in RELEASE_TASK_NAMES.items():
                assert c.at[int(s), name] == sc[rel]
            assert c.at[int(s), "glue"] == sc["glue"]
    for r in _csv(TFN / "BERT_train_ablation.csv"):  # archs 0-9 in the CSV agree
        c = bench.curve(int(r["id"])).set_index("steps")
        assert c.at[int(r["steps"]), "mnli"] == float(r["mnli"])
    with pytest.raises(NotEvaluatedError, match="no learning curve"):
        bench.curve(10)


def test_damaged_curve_points_are_flagged_and_never_served_as_results(bench):
    """The release's 50k/100k points picked up the 500k/1M result files (a name-prefix
    collision in the authors' save_results): their task scores equal the later
    checkpoint's exactly, and their GLUE is that one's too or the sum of both means."""
    ablation = {e["id"]: e["scores"] for e in json.loads((TFN / "BERT_benchmark_train_ablation.json").read_text()) if e["scores"]}
    seen = {"ok": 0, "recovered": 0, "lost": 0}
    for i, sc in ablation.items():
        c = bench.curve(i).set_index("steps")
        for early, late in ((50_000, 500_000), (100_000, 1_000_000)):
            e, l = sc[str(early)], sc[str(late)]
            same_tasks = all(e[k] == l[k] for k in RELEASE_TASK_NAMES)
            assert same_tasks  # every one of the 15 curves is hit at both points
            status = "recovered" if e["glue"] > 100 else "lost"
            assert c.at[early, "status"] == status
            seen[status] += 1
            if status == "recovered":
                assert c.at[early, "glue_corrected"] == pytest.approx(e["glue"] - l["glue"], abs=1e-12)
                r = bench.curve_point(i, early, charge=False)
                assert r.glue == c.at[early, "glue_corrected"] and all(np.isnan(v) for v in r.scores.values())
            else:
                assert np.isnan(c.at[early, "glue_corrected"])
                with pytest.raises(NotEvaluatedError, match="later checkpoint"):
                    bench.curve_point(i, early, charge=False)
        ok = c[c["status"] == "ok"]
        assert len(ok) == 19 and (ok["glue_corrected"] == ok["glue"]).all()
    assert seen == {"ok": 0, "recovered": 10, "lost": 20}


def test_fidelity_never_switches_silently(bench):
    final = bench.query(0, charge=False)
    at150k = bench.curve_point(0, 150_000, charge=False)
    assert final.source == "bundled" and at150k.source == "curve"
    assert final.glue != at150k.glue  # separate runs: the default is the benchmark's own
    assert at150k.time_to_train == pytest.approx(final.time_to_train * 1.5)
    assert bench.curve_point(0, 0, charge=False).pretrain_steps == 0
    with pytest.raises(ValueError, match="allowed values"):
        bench.curve_point(0, 123, charge=False)
    bench.reset_budget()
    bench.curve_point(bench.query(0, charge=False).arch, 150_000)  # an arch key too; charged at 1.5x
    assert bench.budget.time_spent == pytest.approx(final.time_to_train * 1.5)
    with pytest.warns(DeprecationWarning, match=r"curve_point"):  # the old keyword: the same answer, with a warning
        assert bench.query(0, steps=150_000, charge=False) == at150k


def test_every_ptb_row(bench):
    rows = _csv(TFN / "RNN_results.csv")
    ptb = bench.nlp.ptb.set_index("log_name")
    assert len(rows) == len(ptb) == 8794
    params = {}
    for r in _csv(TFN / "RNN_parameters.csv"):
        v = r.get("total paramters") or ""
        if v and "log name" not in v and v != "nan":
            params[r["log name"]] = int(float(v))
        elif "log name" in v:
            params[r["log name"]] = int(float(v.split("log name")[0]))
    for r in rows:
        row = ptb.loc[r["log name"]]
        assert row["test_loss"] == float(r["loss"])
        assert row["perplexity"] == float(r["perplexity"])
        assert row["bits_per_word"] == float(r["bits per word"])
        for src, name in NLP_PROXY_COLUMNS.items():
            assert row[name] == float(r[src]), name
        assert row["num_params"] == params[r["log name"]]
    res = bench.nlp.query(int(rows[0]["log name"].split("_")[3]), charge=False)
    assert res.test_loss == float(rows[0]["loss"]) and res.log_name == rows[0]["log name"]


def test_every_wikitext2_log(bench, wt2_logs):
    for d in wt2_logs:
        r = next(x for x in bench.nlp.query_all(d["_log_name"], "wikitext2"))
        assert r.num_params == d["num_params"] and r.status == d["status"]
        assert r.recipe == json.loads(d["recepie"])
        for k in ("train_losses", "val_losses", "test_losses", "wall_times"):
            np.testing.assert_array_equal(np.array(r.curves[k]), np.array(d[k], dtype=float))
        assert r.diverged == (d["status"] != "OK")
        if r.diverged:
            assert math.isnan(r.test_loss)  # never the last finite epoch
        else:
            assert r.test_loss == d["test_losses"][-1]
        assert r.hparams["lr"] == d["lr"] and r.hparams["bptt"] == d["bptt"]
    assert sum(r.diverged for r in map(lambda d: bench.nlp.query(d["_log_name"], "wikitext2", charge=False), wt2_logs)) == 4


def test_nlp_recipe_lookup_is_renaming_invariant(bench, wt2_logs):
    d = wt2_logs[7]
    recipe = json.loads(d["recepie"])
    renamed = {("zz_" + k if not k.startswith("h_new") else k): {"op": v["op"], "input": [("zz_" + i if i in recipe and not i.startswith("h_new") else i) for i in v["input"]]} for k, v in recipe.items()}
    runs = bench.nlp.query_all(renamed, "wikitext2")
    assert d["_log_name"] in [r.log_name for r in runs]
    # the same recipe under another recipe id is listed as another run
    r = bench.nlp.query(renamed, "wikitext2", charge=False)
    assert len(r.other_runs) == len(runs) - 1


def test_ptb_recipes_come_from_wikitext2_logs(bench):
    ptb = bench.nlp.ptb
    known = ptb[ptb.recipe.notna()]
    assert len(known) == 275
    # with the PTB vocabulary the recipe's model has exactly the stored parameter count
    assert (known.recipe_num_params == known.num_params).all()
    with pytest.raises(NotEvaluatedError, match="public"):
        bench.nlp.query({"h_new_0": {"op": "activation_tanh", "input": ["a"]}, "a": {"op": "elementwise_prod", "input": ["x", "h_prev_0"]}})


def test_errors_are_typed(bench):
    with pytest.raises(NotEvaluatedError, match="500 evaluated") as ei:
        bench.query("128/SA-SDP-h2-512x1/SA-SDP-h2-512x1")
    assert "bench.nearest" in str(ei.value)
    with pytest.raises(InvalidArchitectureError):
        bench.query("128/SA-SDQ-h2-512x1/SA-SDP-h2-512x1")
    with pytest.raises(InvalidArchitectureError):
        bench.query({"hidden_size": 128, "nas_config": {"encoder_layers": []}})
    with pytest.raises(InvalidArchitectureError):
        bench.query(3.5)
    with pytest.raises(NotEvaluatedError):
        bench.query(500)
    with pytest.raises(InvalidArchitectureError):
        bench.nlp.query(3.5)
    assert 0 in bench and "nonsense" not in bench and bench.archs[3] in bench


def test_budget(bench):
    bench.reset_budget()
    r1, r2 = bench.query(1), bench.query(2)
    assert bench.budget.time_spent == r1.time_to_train + r2.time_to_train and bench.budget.queries == 2
    bench.query(3, charge=False)
    assert bench.budget.queries == 2
    bench.set_budget(bench.budget.time_spent + 1)
    with pytest.raises(OutOfBudgetError):
        bench.query(4)
    assert bench.budget.queries == 2  # a refused query is not charged
    bench.set_budget(None)
    bench.reset_budget()
    assert bench.budget.time_spent == 0


def test_query_many_filters_and_exports(bench):
    archs = bench.sample(20, seed=1)
    df = bench.query_many(archs, charge=False)
    assert df["arch"].tolist() == [str(a) for a in archs]
    assert df["glue"].tolist() == [bench.query(a, charge=False).glue for a in archs]
    unknown = Arch.from_string("128/SA-SDP-h2-512x1/SA-SDP-h2-512x1")
    assert len(bench.query_many([archs[0], unknown], missing="drop", charge=False)) == 1
    full = bench.to_pandas()
    f = bench.filter(hidden_size=128, num_layers=4, contains="DSC", max_params=8_000_000)
    manual = [
        i for i, a in enumerate(bench.archs)
        if a.hidden_size == 128 and a.num_layers == 4 and any(x.operation_type == "DSC" for x in a.layers)
        and full.num_params_as_specified[i] <= 8_000_000
    ]
    assert sorted(f["id"]) == manual
    only = bench.filter(only="SA-WMA")
    assert all(all(x.operation_parameter == "WMA" for x in Arch.from_string(s).layers) for s in only["arch"])
    with pytest.raises(ValueError, match="allowed values"):
        bench.filter(contains="MLP")
    with pytest.raises(ValueError, match="allowed values"):
        bench.filter(hidden_size=512)
    assert bench.to_arrow().num_rows == 500 and len(list(iter(bench))) == 500


def test_nearest(bench):
    a = bench.archs[42]
    near = bench.nearest(a, k=3)
    assert near["id"].iloc[0] == 42 and near["distance"].iloc[0] == 0
    assert (np.diff(near["distance"]) >= 0).all()


def test_load_source_is_validated(data_dir):
    from nasbench_bert import Benchmark

    with pytest.raises(ValueError, match="allowed values"):
        Benchmark.load(str(data_dir), source="ftp")
    assert len(Benchmark.load(str(data_dir), source="local")) == 500
