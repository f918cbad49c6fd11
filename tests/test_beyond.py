"""The beyond-the-field study (studies/beyond.py, docs/beyond.md): the page is the
rendering of its JSON, and the spec-only figures and choices in the JSON are recomputed
from the package here (no model is built; the live-proxy attempts read the proxy-values table
and are recomputed by ``python -m studies.beyond``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from nasbench_bert import metrics as mt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # studies/ sits beside the package, outside the wheel

SPEC_FAMILIES = {"aggregate", "operations", "position"}


@pytest.fixture(scope="module")
def summary() -> dict:
    return json.loads((ROOT / "docs" / "beyond.json").read_text())


@pytest.fixture(scope="module")
def inputs(bench):
    from studies.beyond import load_inputs

    return load_inputs(live=False, bench=bench)


def test_page_is_the_rendering_of_its_json(summary):
    """docs/beyond.md is exactly what ``studies.beyond.render`` makes of docs/beyond.json
    (regenerate with ``python -m studies.beyond``)."""
    from studies.beyond import ATTEMPTS, render

    assert (ROOT / "docs" / "beyond.md").read_text() == render(summary)
    assert [a["key"] for a in summary["attempts"]] == [a.key for a in ATTEMPTS]  # the full study, live included
    assert summary["select_ids"] == [0, 249] and summary["held_ids"] == [250, 499]


def test_spec_attempts_are_recomputed_from_the_package(summary, inputs):
    """Every spec-only attempt: the choice made on ids 0-249 is the one recorded, and
    its point figures on both halves are the recorded ones."""
    from studies.beyond import ATTEMPTS, attempt_score, best_average, best_single, features_of

    sel = np.isin(inputs.ids, range(250))
    checked = 0
    for att in ATTEMPTS:
        if not set(att.families) <= SPEC_FAMILIES:
            continue
        rec = next(a for a in summary["attempts"] if a["key"] == att.key)
        feats = features_of(inputs, att.families)
        names = sorted(feats)
        comps = (best_single(names, feats, inputs.glue, inputs.cells, sel) if att.how == "single"
                 else best_average(names, feats, inputs.glue, inputs.cells, sel)[0])
        assert [{"name": c.name, "sign": c.sign} for c in comps] == rec["components"], att.key
        score = attempt_score(inputs, rec["components"], att.families)
        for half, ids in (("select", range(250)), ("held", range(250, 500))):
            m = np.isin(inputs.ids, ids)
            x, y, cells = score[m], inputs.glue[m], inputs.cells[m]
            assert mt.tau_within_cell(x, y, cells) == pytest.approx(rec[half]["tau_within_cell"][0], abs=1e-4)
            assert mt.kendall_tau_tiebroken(x, y) == pytest.approx(rec[half]["tau_tiebroken"][0], abs=1e-4)
            assert mt.kendall_tau_b(x, y) == pytest.approx(rec[half]["kendall_tau"][0], abs=1e-4)
        checked += 1
    assert checked >= 3


def test_baseline_figures_are_recomputed(summary, inputs):
    held = np.isin(inputs.ids, range(250, 500))
    rec = next(b for b in summary["baselines"] if b["key"] == "depth_width_then_size")["held"]
    x = inputs.baselines["depth_width_then_size"][held]
    assert mt.kendall_tau_tiebroken(x, inputs.glue[held]) == pytest.approx(rec["tau_tiebroken"][0], abs=1e-4)
    assert mt.tau_within_cell(x, inputs.glue[held], inputs.cells[held]) == pytest.approx(rec["tau_within_cell"][0],
                                                                                         abs=1e-4)


def test_lexicographic_keeps_the_cells_first():
    """Whatever X is, every arch of a higher (layers, hidden) cell scores above every arch
    of a lower one, and X orders the archs inside a cell."""
    from studies.beyond import lexicographic

    rng = np.random.default_rng(0)
    order = rng.choice([20128.0, 20256.0, 40128.0, 40256.0], size=200)
    x = rng.normal(size=200) * 1e6
    s = lexicographic(order, x, order)
    for a in np.unique(order):
        for b in np.unique(order):
            if a < b:
                assert s[order == a].max() < s[order == b].min()
        m = order == a
        assert mt.kendall_tau_b(s[m], x[m]) == pytest.approx(1.0)
