"""The GPU sections of docs/figures.md, docs/builders.md and the README (issue 36): what
``studies.device_figures`` makes from the committed figures (none yet: **unmeasured**, with
the commands), byte for byte, and how a real run's figures render."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from studies import device_figures as dfig

#: a GPU run's figures as bench/device_check.py writes them (made up: the layout, not a measurement)
RUN = {
    "format_version": 1, "dry_run": False, "date": "2027-01-02", "total_seconds": 470.0,
    "machine": {"gpu": "NVIDIA H100 80GB HBM3", "gpu_memory_gib": 79.2, "driver": "580.159.04", "torch": "2.13.0+cu130",
                "cuda": "13.0", "commit": "0123456789abcdef0123", "device": "cuda:0"},
    "steps": {
        "tests": {"status": "ok", "tests": 11, "failures": 0, "skipped": 0, "command": "pytest -m cuda ...", "agreement": {
            "float64, FlexiBERT, 20 archs, authors": {"kind": "max_rel_diff", "bound": 1e-9, "exceptions": ["plain"],
                                                      "values": {"plain": 0.37, "lpzero": 2.5e-14, "meco": 3.1e-12}},
            "float32, FlexiBERT, 100 archs, as_trained": {"kind": "kendall_tau", "bound": 0.99, "exceptions": [],
                                                          "values": {"zico": 0.995, "lpzero": 1.0}}}},
        "pretrain": {"status": "ok", "runs": [{"label": "accelerated", "rows": [
            {"size": "median", "steps_per_s": 52.25, "tokens_per_s": 856064.0, "mfu": 0.412, "paper_run_hours": 0.532}]}]},
        "long-run": {"status": "ok", "steps": 2000, "arch": "128/LT-DCT-h4-1024x3/DSC-9-h4-512x3", "steps_per_second": 48.5,
                     "first_loss": 44.1, "last_loss": 21.7, "reference": {"steps": 20, "gpu_mean": 40.1, "cpu_mean": 40.5,
                                                                          "relative_difference": 0.0099, "tolerance": 0.08}},
        "proxies": {"status": "ok", "runs": [
            {"what": "evaluate head_confidence", "ids": 500, "semantics": 3, "jobs": 1, "models": 1249, "seconds": 41.0,
             "models_per_s": 30.5},
            {"what": "evaluate head_confidence", "ids": 500, "semantics": 3, "jobs": 4, "models": 1249, "seconds": 22.5,
             "models_per_s": 55.5},
            {"what": "compute paper (15 proxies)", "ids": 500, "semantics": 1, "jobs": 4, "models": 500, "seconds": 35.0,
             "models_per_s": 14.3}]},
        "hardware": {"status": "ok", "archs": 50, "models": 131, "seconds": 61.0, "gpu": "NVIDIA H100 80GB HBM3",
                     "figures": {"as_trained": {c: {"median": 1.5, "min": 1.0, "max": 2.0} for c in
                                                ("latency_gpu_b1_ms", "latency_gpu_b32_ms", "peak_memory_gpu_b32_mib")}}},
    },
}


def test_committed_sections_are_what_the_generator_makes():
    assert dfig.main(["--check"]) == 0


def test_without_a_committed_run_every_section_says_unmeasured_and_shows_the_commands():
    if dfig.FIGURES.is_file():
        pytest.skip("a GPU run's figures are committed")
    for page in dfig.PAGES:
        text = (ROOT / page).read_text()
        body = text.split(dfig.START, 1)[1].split(dfig.END, 1)[0]
        assert "**unmeasured**" in body, page
    assert "python bench/device_check.py --data" in (ROOT / "docs" / "figures.md").read_text()


def test_a_runs_figures_render_with_their_goals():
    text = dfig.figures_section(RUN)
    assert "NVIDIA H100 80GB HBM3 (79.2 GiB, driver 580.159.04)" in text and "`0123456789ab`" in text
    assert "| median | accelerated | 52.2 | 856,064 | 41.2 % | 0.53 h |" in text
    assert "48.5 steps/s (goal ≥ 40)" in text and "0.99 %, within the 8 % GPU tolerance" in text
    assert "| evaluate head_confidence | 500 x 3 | 4 | 1,249 | 22.5 | 55.5 |" in text
    assert "largest relative difference 3.1e-12 (`meco`; bound 1e-09) over 2 proxies" in text
    assert "not compared: plain 0.37" in text and "smallest Kendall τ 0.99 (`zico`; bound 0.99)" in text
    assert "| `as_trained` | 1.50 [1.00, 2.00] |" in text
    readme = dfig.readme_section(RUN)
    assert "| a forward-only proxy, 500 ids x 3 semantics (1,249 models, 4 process(es)) | 22.5 s | ≤ 30 s |" in readme
    assert "| pretraining, median arch, 128 x 128, the paper's recipe | 48.5 steps/s | ≥ 40 steps/s |" in readme
    assert "48.5 steps/s" in dfig.builders_section(RUN)


def test_a_step_that_did_not_run_says_why():
    run = json.loads(json.dumps(RUN))
    run["steps"]["hardware"] = {"status": "skipped", "reason": "step 'hardware' skipped: it needs jsonschema"}
    assert "GPU latency and memory: not measured in this run (skipped: step 'hardware' skipped: it needs jsonschema)." \
        in dfig.figures_section(run)


def test_a_dry_runs_figures_are_refused(tmp_path):
    p = tmp_path / "f.json"
    p.write_text(json.dumps({**RUN, "dry_run": True}))
    with pytest.raises(SystemExit, match="dry run"):
        dfig.load(p)


def test_a_page_without_its_markers_is_refused():
    with pytest.raises(SystemExit, match="device-figures:start"):
        dfig.apply("no markers here", "x", "README.md")
