"""The test suite collects whatever else is installed (issue 37, item 1).

Why: ``carps`` brings ``autorank`` and ``baycomp``, and each installs a top-level regular
package named ``tests`` into site-packages. The repository's ``tests/`` has no
``__init__.py`` (pytest's rootdir import mode), so ``import tests`` finds the installed
package first and ``from tests.conftest import ...`` fails: with every extra in one venv,
collection stopped with errors and no test ran. Shared values are imported from
``conftest`` (tests/ is first on ``sys.path`` under pytest), never through the name
``tests``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

HERE = ROOT / "tests"


def _imports_of_tests_package(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "tests":
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [f"{path.relative_to(ROOT)}:{node.lineno} import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "tests"]
    return found


def test_no_test_module_imports_the_tests_package_by_name():
    bad = [hit for p in sorted(HERE.rglob("*.py")) for hit in _imports_of_tests_package(p)]
    assert not bad, bad


def test_collection_survives_a_foreign_tests_package(tmp_path):
    """An installed regular package ``tests`` (what autorank and baycomp ship) on the path:
    the modules that share conftest's paths still collect."""
    shadow = tmp_path / "site" / "tests"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("# a foreign package named tests, as autorank and baycomp install\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")]))}
    files = ["tests/test_nlp_space.py", "tests/test_values.py", "tests/test_tables.py", "tests/test_structure.py"]
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "error" not in r.stdout.splitlines()[-1].lower(), r.stdout[-2000:]
