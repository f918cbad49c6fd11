"""Scoring with the field's metrics, and the trivial spec baselines, against their
definitions: the release's own columns, nasbench_bert.metrics' point functions on the
same rows, scipy, and an independent count of the recipes' nodes. Torch-free."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from conftest import ROOT
from nasbench_bert import metrics as M
from nasbench_bert import scoring
from nasbench_bert.data.tables import GLUE_TASKS
from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.proxies import baselines


@pytest.fixture(scope="module")
def flex(bench):
    return bench.to_pandas()


@pytest.fixture(scope="module")
def flex_base(bench, flex):
    return scoring.baseline_values(flex[["id"]], "flexibert", semantics="as_trained", bench=bench)


def _heads(flex):
    return flex[[f"l{i}_heads" for i in range(4)]].fillna(0).sum(axis=1).to_numpy(float)


def test_flexibert_baselines_equal_the_release_columns(bench, flex, flex_base):
    b = flex_base
    assert list(b.columns) == baselines.trivial_names("flexibert")
    np.testing.assert_array_equal(b.depth, flex.num_layers)
    np.testing.assert_array_equal(b.hidden_size, flex.hidden_size)
    np.testing.assert_array_equal(b.total_heads, _heads(flex))
    np.testing.assert_array_equal(b.param_count, flex.num_params_as_trained)  # the TF graph's variables
    np.testing.assert_array_equal(b.param_count_as_specified, flex.num_params_as_specified)
    # the lexicographic encodings order rows exactly as the tuples do (ties included)
    for col, keys in (("depth_then_width", ["num_layers", "hidden_size"]),
                      ("depth_width_then_size", ["num_layers", "hidden_size", "num_params_as_trained"])):
        tuples = list(zip(*(flex[k] for k in keys)))
        rank_t = pd.Series(tuples).rank(method="dense").to_numpy()
        rank_v = b[col].rank(method="dense").to_numpy()
        np.testing.assert_array_equal(rank_t, rank_v)
    # under another semantics only the parameter counts change
    auth = scoring.baseline_values(flex[["id"]], "flexibert", semantics="authors", bench=bench)
    np.testing.assert_array_equal(auth.param_count, flex.num_params_authors)
    np.testing.assert_array_equal(auth.depth, b.depth)


def test_baseline_tau_is_the_tau_of_the_release_columns(bench, flex, flex_base):
    vals = pd.concat([flex[["id"]], flex_base], axis=1)
    s = scoring.score(vals, "glue", proxies=list(flex_base.columns), bootstrap=0, bench=bench).set_index("proxy")
    y = flex.glue.to_numpy(float)
    assert s.loc["depth", "kendall_tau"] == M.kendall_tau_b(flex.num_layers, y) == pytest.approx(0.682, abs=5e-4)
    assert s.loc["depth", "tau_tiebroken"] == pytest.approx(M.kendall_tau_tiebroken(flex.num_layers, y), abs=1e-12)
    assert s.loc["depth_then_width", "kendall_tau"] == pytest.approx(0.801, abs=5e-4)
    assert s.loc["param_count", "kendall_tau"] == pytest.approx(kendalltau(flex.num_params_as_trained, y)[0], abs=1e-12)
    # NSC's #Params row: 0.485, 10 %-PW 0.082 over the as-specified count
    assert s.loc["param_count_as_specified", "kendall_tau"] == pytest.approx(0.485, abs=5e-4)
    assert s.loc["param_count_as_specified", "tau_pw10"] == pytest.approx(0.082, abs=5e-4)
    # a score constant in every cell (stratum) has no within-cell (within-arch) τ, in either form, and says why
    for rule in ("depth", "depth_then_width"):
        for m in ("tau_within_cell", "tau_within_cell_tb", "tau_within_arch", "tau_within_arch_tb"):
            assert math.isnan(s.loc[rule, m]) and math.isnan(s.loc[rule, f"{m}_ci_low"]), (rule, m)
        assert "constant within every stratum (layers, hidden_size, total_heads)" in s.loc[rule, "note"]
        assert "constant within every cell (layers, hidden size)" in s.loc[rule, "note"]
    # the size rule still orders archs of one shape; its note says nothing of strata
    assert np.isfinite(s.loc["depth_width_then_size", "tau_within_arch"])
    assert not isinstance(s.loc["depth_width_then_size", "note"], str)


def test_score_columns_equal_the_metric_functions(bench, flex):
    df, _ = scoring.stored_values("flexibert", bench)
    s = scoring.score(df, "glue", proxies=["head_confidence"], bootstrap=40, seed=3, bench=bench).iloc[0]
    f = flex.set_index("id").loc[df.id]
    x, y = df.head_confidence.to_numpy(float), f.glue.to_numpy(float)
    cells = f.num_layers.to_numpy(float) * 10_000 + f.hidden_size.to_numpy(float)
    controls = np.c_[f.num_layers, f.hidden_size, _heads(f)]
    assert s.tau_tiebroken == pytest.approx(M.kendall_tau_tiebroken(x, y), abs=1e-12)
    assert s.tau_pw10 == pytest.approx(M.tau_pw(x, y, f.num_params_as_specified.to_numpy(float)), abs=1e-12)
    assert s.tau_within_cell == pytest.approx(M.tau_within_cell(x, y, cells), abs=1e-12)
    assert s.tau_within_cell_tb == pytest.approx(M.tau_within_cell_tb(x, y, cells), abs=1e-12)
    assert s.tau_within_arch == pytest.approx(M.tau_within_arch(x, y, controls), abs=1e-12)
    assert s.tau_within_arch_tb == pytest.approx(M.tau_within_arch_tb(x, y, controls), abs=1e-12)
    assert (s.pw10_size, s.cells, s.arch_strata) == ("num_params (as specified)", "(layers, hidden size)",
                                                     "layers, hidden_size, total_heads")
    assert "partial_tau_arch" not in s.index
    ctx = M.RankContext(cells=cells, size=f.num_params_as_specified.to_numpy(float), controls=controls)
    est = M.rank_metrics(x, y, ctx, bootstrap=40, seed=3)
    for m in scoring.NEW_METRICS:
        assert (s[f"{m}_ci_low"], s[f"{m}_ci_high"]) == pytest.approx((est[m].ci_low, est[m].ci_high), abs=1e-12), m
    # τ-b's and ρ's intervals: the same numbers as one scipy call per resample
    old = scoring._bootstrap(x, y, 40, 3)
    assert (s.tau_ci_low, s.tau_ci_high, s.rho_ci_low, s.rho_ci_high) == pytest.approx(old, abs=1e-12)


def test_target_list_gives_every_glue_task(bench):
    df, _ = scoring.stored_values("flexibert", bench)
    many = scoring.score(df, ["glue", *GLUE_TASKS], proxies=["head_confidence"], bootstrap=0, bench=bench)
    assert list(many.target) == ["glue", *GLUE_TASKS]
    one = scoring.score(df, "cola", proxies=["head_confidence"], bootstrap=0, bench=bench).iloc[0]
    row = many.set_index("target").loc["cola"]
    for c in ("kendall_tau", "tau_tiebroken", "tau_pw10", "tau_within_cell", "tau_within_cell_tb", "tau_within_arch",
              "tau_within_arch_tb"):
        assert row[c] == pytest.approx(one[c], abs=1e-12), c
    with pytest.raises(InvalidArgumentError, match="target"):
        scoring.score(df, [], bench=bench)
    with pytest.raises(InvalidArgumentError, match="target"):
        scoring.score(df, ["glue", "accuracy"], proxies=["head_confidence"], bench=bench)


def test_nlp_context_and_baselines(bench):
    ptb = bench.nlp.ptb
    rec = ptb[ptb.recipe.notna()].reset_index(drop=True)
    b = scoring.baseline_values(rec, "nlp", bench=bench)
    np.testing.assert_array_equal(b.recipe_num_params, rec.num_params)  # the release's count
    nodes = [len(json.loads(r)) for r in rec.recipe]  # an independent count: the JSON's keys
    np.testing.assert_array_equal(b.recipe_num_nodes, nodes)
    lin = [sum(v["op"] == "linear" for v in json.loads(r).values()) for r in rec.recipe]
    np.testing.assert_array_equal(b.recipe_num_linear, lin)
    ctx = scoring.rank_context(ptb, "nlp", bench)
    np.testing.assert_array_equal(ctx.size, ptb.num_params)
    vals = pd.concat([ptb[["log_name", "hidden_covariance_layer1"]], scoring.baseline_values(ptb, "nlp", bench=bench)], axis=1)
    s = scoring.score(vals, "test_loss", proxies=["hidden_covariance_layer1", "recipe_num_nodes"], space="nlp",
                      control="num_params", bootstrap=0, bench=bench).set_index("proxy")
    x, y = ptb.hidden_covariance_layer1.to_numpy(float), -ptb.test_loss.to_numpy(float)
    assert s.loc["hidden_covariance_layer1", "tau_within_cell"] == pytest.approx(
        M.tau_within_cell(x, y, ptb.num_params.to_numpy()), abs=1e-12)
    assert s.loc["hidden_covariance_layer1", "tau_pw10"] == pytest.approx(
        M.tau_pw(x, y, ptb.num_params.to_numpy(float)), abs=1e-12)
    assert s.loc["recipe_num_nodes", "n"] == 275  # only the runs with a public recipe have one
    assert s.loc["hidden_covariance_layer1", "cells"] == "(equal parameter count)"
    # no arch strata on NAS-Bench-NLP (one shape): NaN, and the table prints each column once
    assert s.loc["hidden_covariance_layer1", "arch_strata"] == ""
    assert math.isnan(s.loc["hidden_covariance_layer1", "tau_within_arch"])
    full = scoring.score(vals, "test_loss", proxies=["hidden_covariance_layer1"], space="nlp", control="num_params",
                         bootstrap=0, bench=bench)
    head = scoring.to_markdown(full).splitlines()[0].split(" | ")
    assert len(head) == len(set(head)), head
    assert "within equal" not in " ".join(head)
    assert sum("partial τ given num_params" in h for h in head) == 1


def test_markdown_names_each_tau(bench):
    s = scoring.score_stored("flexibert", bench=bench, bootstrap=20, baselines=True)
    md = scoring.to_markdown(s.sort_values("kendall_tau", ascending=False))
    head = md.splitlines()[0]
    for words in ("τ-b (scipy)", "τ, ties broken at random", "10 %-PW τ-b (size: num_params (as specified))",
                  "τ-b within cells (layers, hidden size)", "τ within cells, ties broken at random",
                  "τ-b within equal (layers, hidden_size, total_heads)",
                  "τ within equal (layers, hidden_size, total_heads), ties broken at random",
                  "partial τ given num_params_as_trained (Kendall 1942: τ less what both share with num_params_as_trained)"):
        assert words in head, words
    cells = head.split(" | ")
    assert len(cells) == len(set(cells))  # each column once
    depth = next(line for line in md.splitlines() if line.startswith("| depth |"))
    assert "0.682 [" in depth and "| – |" in depth  # an interval, and an undefined within-cell τ


def test_scoring_with_baselines_is_torch_free():
    code = ("import sys; from nasbench_bert import scoring; r = scoring.score_stored('flexibert', bootstrap=0, "
            "baselines=True); assert 'depth' in set(r.proxy); assert 'torch' not in sys.modules, 'torch imported'")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_cli_score_shows_baselines_and_tasks(data_dir, bench, tmp_path):
    df, _ = scoring.stored_values("flexibert", bench)
    vals = tmp_path / "v.csv"
    df[["id", "head_confidence"]].head(60).to_csv(vals, index=False)
    r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "--data", str(data_dir), "proxies", "score",
                        "--values", str(vals), "--bootstrap", "0", "--tasks"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| depth_then_width | cola | 60 |" in r.stdout and "τ, ties broken at random" in r.stdout
    assert "| head_confidence | glue | 60 |" in r.stdout
    r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "--data", str(data_dir), "proxies", "score",
                        "--space", "nlp", "--tasks"], capture_output=True, text=True)
    assert r.returncode == 2 and "--tasks" in r.stderr


def test_baseline_values_errors(bench):
    with pytest.raises(InvalidArgumentError, match="names"):
        scoring.baseline_values(pd.DataFrame({"id": [0]}), "flexibert", names=["head_confidence"], bench=bench)
    with pytest.raises(InvalidArgumentError, match="space"):
        scoring.baseline_values(pd.DataFrame({"id": [0]}), "cnn", bench=bench)
    with pytest.raises(InvalidArgumentError, match="semantics"):
        scoring.baseline_values(pd.DataFrame({"id": [0]}), "flexibert", semantics="nope", bench=bench)
    # a row that is no arch gets NaN, not an error
    odd = scoring.baseline_values(pd.DataFrame({"arch": ["not an arch"]}), "flexibert", bench=bench)
    assert odd.isna().all().all()


def test_published_closed_forms_score_without_a_prior_import(data_dir):
    """``baseline_values(names=["nsc", "zerolm"])`` in a fresh interpreter: scoring registers
    the torch-free closed forms itself (a study used to import ``proxies.nsc`` first)."""
    code = ("import pandas as pd, sys; from nasbench_bert import Benchmark; from nasbench_bert.scoring import baseline_values; "
            f"b = Benchmark.load({str(data_dir)!r}); "
            "v = baseline_values(pd.DataFrame({'id': [0, 1]}), bench=b, names=['nsc', 'zerolm']); "
            "print(list(v.columns), v.notna().all().all(), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['nsc', 'zerolm'] True False"
