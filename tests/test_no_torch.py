"""Without PyTorch, a torch-only module says so in one line that names the ``[torch]`` extra.

Each check runs in a fresh interpreter where ``import torch`` fails as it does when torch
is not installed (a meta-path finder answers ``ModuleNotFoundError(name="torch")``). CI's
wheel job (``.ci/deps_jobs.sh wheel``) checks the same in a venv that really has no torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

NO_TORCH = r'''
import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NoTorch())
'''

# what the torch-free part of the package is: these import without torch
TORCH_FREE = ["nasbench_bert", "nasbench_bert.proxies", "nasbench_bert.scoring", "nasbench_bert.hardware",
              "nasbench_bert.search", "nasbench_bert.surrogate", "nasbench_bert.cli"]
# ... and these need it
TORCH_ONLY = ["nasbench_bert.models", "nasbench_bert.models.flexibert", "nasbench_bert.proxies.bert",
              "nasbench_bert.proxies.sweep", "nasbench_bert.proxies.builtin"]


def _missing() -> str:
    """The one line (read from a venv without torch too, where importing _torch raises it)."""
    try:
        from nasbench_bert._torch import MISSING
    except ModuleNotFoundError as e:
        return str(e)
    return MISSING


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_TORCH + code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def _modules() -> list[str]:
    """Every module of the package, found on disk (walk_packages would import the packages,
    and cannot look inside one that fails to import without torch)."""
    import nasbench_bert

    pkg = Path(nasbench_bert.__file__).parent
    names = {".".join(("nasbench_bert",) + p.relative_to(pkg).with_suffix("").parts).removesuffix(".__init__")
             for p in pkg.rglob("*.py")}
    # builders: the [build] extra; integrations: the [hpo] extras (each names its own)
    return sorted(n for n in names if not n.startswith(("nasbench_bert.builders", "nasbench_bert.integrations")))


def test_every_module_imports_or_names_the_torch_extra():
    MISSING = _missing()

    probe = r'''
import importlib, json
out = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        out[name] = None
    except ImportError as e:
        out[name] = [type(e).__name__, e.name, str(e)]
print(json.dumps(out))
'''
    modules = _modules()
    assert set(TORCH_FREE) | set(TORCH_ONLY) <= set(modules) | {"nasbench_bert"}
    r = _run(probe, "nasbench_bert", *modules)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert {m: out[m] for m in TORCH_FREE if out[m] is not None} == {}
    failed = {m: e for m, e in out.items() if e is not None}
    assert set(TORCH_ONLY) <= set(failed), failed  # the blocker works: these cannot import
    wrong = {m: e for m, e in failed.items() if e != ["ModuleNotFoundError", "torch", MISSING]}
    assert not wrong, wrong  # every failure is the one line, never "No module named 'torch'" from inside
    assert "\n" not in MISSING and "[torch]" in MISSING and "pip install 'nasbench-bert[torch]'" in MISSING


@pytest.mark.parametrize("module", ["nasbench_bert.models", "nasbench_bert.proxies.bert"])
def test_import_error_is_one_line_without_a_chained_traceback(module):
    MISSING = _missing()

    r = _run(f"import {module}")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == f"ModuleNotFoundError: {MISSING}"
    assert "During handling of the above exception" not in r.stderr  # raised `from None`
    assert "No module named 'torch'" not in r.stderr


def test_public_names_that_need_torch_say_so():
    MISSING = _missing()

    r = _run("from nasbench_bert.proxies import compute")
    assert r.stderr.strip().splitlines()[-1] == f"ModuleNotFoundError: {MISSING}"


def test_cli_command_that_needs_torch_prints_one_line(tmp_path, data_dir):
    MISSING = _missing()

    code = "from nasbench_bert.cli import main; sys.exit(main(sys.argv[1:]))"
    r = _run(code, "--data", str(data_dir), "proxies", "compute", "--ids", "0-1", "--proxies", "paper",
             "--out", str(tmp_path / "p.parquet"))
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.strip().splitlines() == [f"error: {MISSING}"]
    # and a torch-free command still works in the same interpreter setup
    r = _run(code, "--data", str(data_dir), "query", "0")
    assert r.returncode == 0, r.stderr[-3000:]
