"""bench/device_check.py, the one prepared script for a lent GPU (issue 36), on a CPU: its
one-line refusal of a missing wheel, its forbidden-imports check, its budget, and one
in-process part run with every non-standard package made unimportable. The whole dry run
(every step on the CPU in tiny sizes) is CI's (.ci/run, benchmarks step)."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, UPSTREAM

sys.path.insert(0, str(ROOT / "bench"))
import device_check  # noqa: E402

#: what a standard CUDA PyTorch image lacks and no step of the check needs (.ci/run forbids the same)
FORBID = "rich,matplotlib,transformers,datasets,ray,submitit,sklearn,huggingface_hub,threadpoolctl,syne_tune,optuna"


def test_a_missing_wheel_is_one_line_naming_it(monkeypatch):
    real = importlib.machinery.PathFinder.find_spec
    monkeypatch.setattr(importlib.machinery.PathFinder, "find_spec",
                        classmethod(lambda cls, name, *a: None if name in ("jsonschema", "tokenizers") else real(name, *a)))
    line = device_check.missing("pretrain")
    assert line is not None and "\n" not in line
    assert line.startswith("step 'pretrain' skipped: it needs jsonschema, tokenizers, not installed") and "wheel" in line
    assert device_check.missing("hardware").startswith("step 'hardware' skipped: it needs jsonschema,")


def test_every_part_declares_its_packages():
    assert set(device_check.NEEDS) == set(device_check.PARTS) == set(device_check.STEPS)
    assert not {m for needs in device_check.NEEDS.values() for m in needs} & set(FORBID.split(",")) - {"rich"}


def test_forbidden_packages_look_uninstalled():
    code = ("import importlib.util, sys; sys.path.insert(0, 'bench'); import _source_tree\n"
            "assert importlib.util.find_spec('sklearn') is None\n"
            "try:\n    import sklearn\nexcept ModuleNotFoundError:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NASBENCH_BERT_FORBID_IMPORTS": "sklearn"})
    assert out.returncode == 0 and out.stdout.strip() == "refused", out.stderr


def test_the_long_run_tolerance_is_the_builders_documented_one():
    assert device_check.gpu_window_rtol() == 0.08  # tests/test_builders_accel.py, docs/builders.md


def _run(tmp_path, *args):
    env = {**os.environ, "NASBENCH_BERT_FORBID_IMPORTS": FORBID, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "bench/device_check.py", "--dry-run", "--out", str(tmp_path / "out"),
                           "--release", str(UPSTREAM), *args], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env=env)


def test_a_spent_budget_starts_no_step_and_still_writes_the_figures(tmp_path):
    out = _run(tmp_path, "--budget-s", "0")
    assert out.returncode == 0, out.stderr
    f = json.loads((tmp_path / "out" / device_check.FIGURES).read_text())
    assert f["dry_run"] is True and f["machine"]["device"] == "cpu" and "commit" in f["machine"]
    assert {k: v["status"] for k, v in f["steps"].items()} == dict.fromkeys(device_check.ALL, "not started")


def test_the_hardware_part_runs_on_standard_packages(tmp_path, data_dir):
    out = _run(tmp_path, "--part", "hardware", "--data", str(data_dir))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    step = json.loads((tmp_path / "out" / device_check.FIGURES).read_text())["steps"]["hardware"]
    assert step["status"] == "ok" and step["archs"] == 2
    assert set(step["figures"]) == {"authors", "as_trained", "as_specified"}
    for per in step["figures"].values():
        assert 0 < per["latency_b1_ms"]["min"] <= per["latency_b1_ms"]["median"] <= per["latency_b1_ms"]["max"]


@pytest.mark.parametrize("argv", [["--part", "nothing", "--out", "x"], ["--dry-run"]])
def test_bad_arguments_exit_2(argv):
    out = subprocess.run([sys.executable, "bench/device_check.py", *argv], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and "error:" in out.stderr
