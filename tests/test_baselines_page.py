"""docs/baselines.md (studies/baselines.py): the page is the rendering of its JSON, and
a sample of its figures is recomputed here from the package, without bootstrap."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def summary() -> dict:
    return json.loads((ROOT / "docs" / "baselines.json").read_text())


def test_page_is_the_rendering_of_its_json(summary):
    from studies.baselines import render

    assert (ROOT / "docs" / "baselines.md").read_text() == render(summary)


def test_flexibert_figures_are_recomputed(bench, summary):
    from studies.baselines import flexibert_scores

    now = flexibert_scores(bench, bootstrap=0).set_index(["proxy", "target"])
    rows = {(r["proxy"], r["target"]): r for r in summary["flexibert"]}
    assert set(rows) == set(now.index)
    for key in [("depth_then_width", "glue"), ("nsc", "glue"), ("param_count", "rte"), ("head_confidence", "cola"),
                ("depth_width_then_size", "stsb"), ("zerolm", "mnli")]:
        for col in ("kendall_tau", "tau_tiebroken", "tau_pw10", "tau_within_cell", "tau_within_cell_tb", "tau_within_arch",
                    "tau_within_arch_tb", "spearman_rho"):
            want, got = rows[key][col], now.loc[key, col]
            assert (pd.isna(want) and pd.isna(got)) or got == pytest.approx(want, abs=1e-12), (key, col)
    # the published closed form reproduces its authors' figure; depth is what the rules know
    assert rows[("nsc", "glue")]["kendall_tau"] == pytest.approx(0.695, abs=5e-4)
    assert rows[("depth", "glue")]["kendall_tau"] == pytest.approx(0.682, abs=5e-4)
    # a rule on (layers, hidden size) orders no pair of one stratum: no within-arch τ, in either form
    assert pd.isna(rows[("depth_then_width", "glue")]["tau_within_arch"])
    assert pd.isna(rows[("depth_then_width", "glue")]["tau_within_arch_tb"])


def test_nlp_figures_are_recomputed(bench, summary):
    from nasbench_bert.scoring import score, stored_values

    stored, target = stored_values("nlp", bench)
    s = score(stored, target, proxies=["hidden_covariance_layer1", "num_params"], space="nlp", bench=bench,
              bootstrap=0).set_index("proxy")
    rows = {r["proxy"]: r for r in summary["nlp"] if r["runs"] == "every PTB run"}
    for p in ("hidden_covariance_layer1", "num_params"):
        for col in ("kendall_tau", "tau_tiebroken", "tau_pw10"):
            assert s.loc[p, col] == pytest.approx(rows[p][col], abs=1e-12), (p, col)
    assert s.loc["hidden_covariance_layer1", "tau_within_cell"] == pytest.approx(rows["hidden_covariance_layer1"]
                                                                                 ["tau_within_cell"], abs=1e-12)
