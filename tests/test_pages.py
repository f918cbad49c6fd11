"""The generated docs pages' CI check (studies/check_pages.py, a step of .ci/run): it must
fail when a page differs from what its generator makes, and only machine-dependent figures
(marked ``†`` on the page, with the reason) may differ. Also the issue-28 fixes to the
generators: the published page's small form, beyond's near-ties, errata's noise marks, and
the provenance every long generator's JSON carries."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # studies/ sits beside the package, outside the wheel

from studies import check_pages as cp  # noqa: E402

PUBLISHED = next(p for p in cp.PAGES if p.name == "published")


def _docs_copy(tmp_path: Path, page: cp.Page) -> Path:
    """A repository-shaped folder holding a copy of ``page`` and its JSON."""
    (tmp_path / "docs").mkdir(parents=True)
    for suffix in (".md", ".json"):
        src = (ROOT / page.page).with_suffix(suffix)
        shutil.copyfile(src, tmp_path / "docs" / src.name)
    return tmp_path


def test_check_passes_on_the_committed_page_and_fails_on_an_edited_figure(tmp_path):
    root = _docs_copy(tmp_path / "a", PUBLISHED)
    assert cp.check(PUBLISHED, root, tmp_path / "work0") == []
    page = root / PUBLISHED.page
    text = page.read_text()
    figure = "0.695"  # NSC's reproduced tau, printed in the first table
    assert figure in text
    page.write_text(text.replace(figure, "0.696", 1))
    problems = cp.check(PUBLISHED, root, tmp_path / "work1")
    assert problems and any(line.startswith("-") and "0.696" in line for line in problems)
    assert any(line.startswith("+") and "0.695" in line for line in problems)


def test_check_fails_when_the_json_no_longer_gives_the_page(tmp_path):
    root = _docs_copy(tmp_path / "b", PUBLISHED)
    js = root / "docs" / "published.json"
    d = json.loads(js.read_text())
    nsc = next(r for r in d["rows"] if r["proxy"].startswith("NSC"))
    nsc["reproduced"]["tau"] = 0.5
    js.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    problems = cp.check(PUBLISHED, root, tmp_path / "work")
    assert any("0.500" in line for line in problems)


def test_check_fails_on_a_long_generators_json_without_provenance(tmp_path):
    root = _docs_copy(tmp_path / "c", PUBLISHED)
    js = root / "docs" / "published.json"
    d = json.loads(js.read_text())
    del d["provenance"]
    js.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
    assert any("provenance" in p for p in cp.check(PUBLISHED, root, tmp_path / "work"))


def test_only_marked_figures_are_machine_dependent():
    assert cp.diff("| ones | -150772† | 4.84e-17† |\n", "| ones | -179210† | 5.1e-17† |\n", "p") == []
    assert cp.diff("| ones | -150772 |\n", "| ones | -179210 |\n", "p") != []
    assert cp.diff("Ids 0-39, 41† s.\n", "Ids 0-39, 133† s.\n", "p") == []
    assert cp.diff("Ids 0-39, 41† s.\n", "Ids 0-29, 41† s.\n", "p") != []  # the rest of the line still counts


def test_json_numbers_compare_to_their_last_bits_only():
    assert cp.json_diff({"t": 0.3828868193665404}, {"t": 0.3828868193665405}) == []
    assert cp.json_diff({"t": 0.3828}, {"t": 0.3829}) != []
    assert cp.json_diff({"t": [1, 2]}, {"t": [1, 2, 3]}) != []
    assert cp.json_diff({"t": "a"}, {"t": "b"}) != []
    assert cp.json_diff({"t": True}, {"t": 1}) != []
    assert cp.json_diff({"t": float("nan")}, {"t": float("nan")}) == []
    assert cp.json_diff({"t": 1}, {"u": 1}) != []


@pytest.mark.parametrize("page", [p for p in cp.PAGES if p.mode == "render-only"], ids=lambda p: p.name)
def test_long_generators_json_carries_code_version_and_inputs(page):
    prov = json.loads((ROOT / page.page).with_suffix(".json").read_text())["provenance"]
    assert prov["command"].startswith(f"python -m {page.module}")
    assert len(prov["code"]["git_commit"]) == 40 and prov["inputs"]


def test_regenerated_pages_are_the_quick_ones():
    """A page is regenerated in CI only if its generator runs in a few minutes here."""
    for p in cp.PAGES:
        assert (p.mode == "regenerate") == (p.seconds <= cp.QUICK_SECONDS), p


def test_code_version_hashes_the_sources(tmp_path):
    from studies.pages import code_version

    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "x.py").write_text("a = 1\n")
    first = code_version(tmp_path)
    assert first["git_commit"] is None  # not a repository: said, not invented
    (tmp_path / "studies" / "x.py").write_text("a = 2\n")
    assert code_version(tmp_path)["sources_sha256"] != first["sources_sha256"]


# -- the published page's small form --------------------------------------------------------------
def test_published_small_form_says_what_it_computes():
    from studies import published as pub

    assert len(pub.SMALL_IDS) == 40 and "40-arch form" in pub.__doc__
    assert pub.describe_ids(pub.SWEEP_IDS) == "all 500 ids"
    assert pub.describe_ids(pub.NSC_EVAL_IDS) == "every 10th id"
    assert pub.describe_ids(pub.SMALL_IDS) == "every 12th id, 0-468"
    assert pub.describe_ids(pub.SMALL_IDS[::4]) == "every 48th id, 0-432"
    assert pub.describe_ids([3, 7, 8]) == "3 ids"
    summary = json.loads((ROOT / "docs" / "published.json").read_text())
    small = {**summary, "small": True, "n": 40, "sweep_n": 40, "sweep_ids": list(pub.SMALL_IDS),
             "batch_ids": list(pub.SMALL_IDS[::4])}
    small.pop("nsc_table")  # a --small run computes no NSC rows (--nsc-rows is a step of its own)
    text = pub.render(small)
    assert "every 5th id" not in text and "every 10th id" not in text
    assert "every 12th id, 0-468" in text and "40 archs only" in text


# -- beyond: rounding-level near-ties --------------------------------------------------------------
def test_beyond_ties_values_that_differ_by_rounding_only():
    from studies.beyond import snap_near_ties

    v = np.array([3.0, 1.0, 1.0 + 1e-15, np.nan, 2.0, 1.0 + 2e-15, 5.0, 5.0 * (1 + 1e-12), 5.0 * (1 + 1e-6)])
    s = snap_near_ties(v)
    assert s[1] == s[2] == s[5] == 1.0 and s[6] == s[7] == 5.0 and s[8] > 5.0 and np.isnan(s[3])
    assert list(s[[0, 4]]) == [3.0, 2.0]


def test_beyond_within_cell_tau_does_not_depend_on_rounding():
    """Issue 28: synflow's within-cell tau moved by +-0.013 with the rounding of values
    that are equal in exact arithmetic; after snapping, any rounding gives one figure."""
    from nasbench_bert.metrics import tau_within_cell
    from studies.beyond import snap_near_ties

    rng = np.random.default_rng(0)
    exact = rng.integers(0, 30, 200).astype(float) * 1e3 + 1e3  # many exact ties
    y = exact + rng.normal(scale=2e3, size=200)
    cells = rng.integers(0, 4, 200)
    taus = set()
    for _ in range(10):
        noisy = exact * (1 + 1e-15 * rng.standard_normal(200))  # rounding-level disagreement
        taus.add(round(tau_within_cell(snap_near_ties(noisy), y, cells), 12))
    assert taus == {round(tau_within_cell(exact, y, cells), 12)}
    unsnapped = {round(tau_within_cell(exact * (1 + 1e-15 * rng.standard_normal(200)), y, cells), 12) for _ in range(10)}
    assert len(unsnapped) > 1  # without it the figure follows the rounding


# -- errata: which figures are rounding noise ---------------------------------------------------------
def test_errata_marks_only_the_vanishing_objective_as_machine_dependent():
    from studies.errata import NOISE_NOTE, _noise

    assert _noise("ones", "-150772") == "-150772†" and _noise("projection", "-118581") == "-118581"
    assert "rounding noise" in NOISE_NOTE
    page = (ROOT / "docs" / "errata_numbers.md").read_text()
    assert NOISE_NOTE in page
    for line in page.splitlines():
        if line.startswith("| as_trained (projection)") or line.startswith("| projection"):
            assert "†" not in line, line
