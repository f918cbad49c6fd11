"""The suite's guard on torch's global state (tests/conftest.py): a test that leaves the
thread count, default dtype, deterministic-algorithms flag or grad mode changed fails, and
the next test starts from the baseline again (issue 28: a leaked thread count changed a
later test's proxy values, so the suite failed where the test alone passed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from conftest import ROOT, restore_torch_state, torch_state, torch_state_leaks  # noqa: E402


def test_leak_checker_names_each_changed_setting() -> None:
    before = torch_state()
    assert before is not None
    try:
        torch.set_num_threads(before["num_threads"] + 1)
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        leaks = torch_state_leaks(before, torch_state())
    finally:
        restore_torch_state(before)
    assert [x.split()[0] for x in leaks] == ["num_threads", "default_dtype", "grad_enabled"], leaks
    assert f"num_threads {before['num_threads']} -> {before['num_threads'] + 1}" in leaks
    assert torch_state() == before and torch_state_leaks(before, torch_state()) == []


LEAKY = '''
import torch

N = torch.get_num_threads()


def test_a_leaks_threads():
    torch.set_num_threads(N + 1)


def test_b_sees_the_baseline_again_then_leaks_dtype_and_grad():
    assert torch.get_num_threads() == N
    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)


def test_c_sees_the_baseline_and_restores_its_own_change():
    assert torch.get_num_threads() == N and torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()
    torch.set_num_threads(N + 1)
    torch.set_num_threads(N)
'''


def test_a_test_that_leaks_fails_and_the_next_starts_clean(tmp_path: Path) -> None:
    """The real fixture (conftest loaded as a plugin) on a module whose tests leak."""
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "-rE",
                        "test_leaky.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "3 passed, 2 errors" in out, out
    # the subprocess's starting count is its own (an earlier test's library, Ray say, may have set
    # OMP_NUM_THREADS in this process's environment, which the subprocess inherits): read it back
    leak = re.search(r"test_leaky\.py::test_a_leaks_threads \(or a fixture it used\) left torch's global state "
                     r"changed: num_threads (\d+) -> (\d+)\. Restored", out)
    assert leak and int(leak[2]) == int(leak[1]) + 1, out
    assert ("test_leaky.py::test_b_sees_the_baseline_again_then_leaks_dtype_and_grad (or a fixture it used) left "
            "torch's global state changed: default_dtype torch.float32 -> torch.float64; grad_enabled True -> False") in out, out
    assert "ERROR at teardown of test_c" not in out and "FAILED" not in out, out
