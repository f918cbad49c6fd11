"""Run the benchmarks from a source checkout that is not installed (a lent GPU machine gets a
copy of the working tree and a Python with torch, nothing installed).

The wheel installs the repository's top-level ``builders/`` and ``schemas/`` folders as
``nasbench_bert.builders`` and ``nasbench_bert.schemas`` (``pyproject.toml``'s
package-dir); a bare checkout on ``sys.path`` has neither, so loading the tables
(``schemas``) or pretraining (``builders``) fails there. :func:`install` registers the two
folders under those names when, and only when, they cannot be imported otherwise.

Imported as a pytest plugin (``-p _source_tree``) it does the same before the tests are
collected.

``$NASBENCH_BERT_FORBID_IMPORTS`` (comma-separated top-level names) makes those packages
unimportable in every process that imports this module (``bench/device_check.py``, its
pytest and benchmark subprocesses, spawned workers): CI runs the device check's dry run
so, to hold its promise that a standard CUDA PyTorch image (torch, numpy, pandas,
pyarrow, scipy and the few wheels a step names) is enough.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: ``nasbench_bert.<name>`` -> the repository folder the wheel installs under that name
FOLDERS = {"builders": "builders", "schemas": "schemas"}


def install() -> list[str]:
    """Alias the folders that are not importable; returns the names it aliased."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import nasbench_bert

    done = []
    for name, folder in FOLDERS.items():
        full = f"nasbench_bert.{name}"
        if full in sys.modules or importlib.util.find_spec(full) is not None:
            continue
        spec = importlib.util.spec_from_file_location(full, ROOT / folder / "__init__.py",
                                                      submodule_search_locations=[str(ROOT / folder)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
        setattr(nasbench_bert, name, module)
        done.append(full)
    return done


def forbid(names: set[str]) -> None:
    """Make the top-level packages ``names`` unimportable from now on in this process, as
    if they were not installed: ``import`` raises ModuleNotFoundError and
    ``importlib.util.find_spec`` answers None (what torch's optional-package probes ask)."""
    for name in names:
        if name and name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]


forbid(set(os.environ.get("NASBENCH_BERT_FORBID_IMPORTS", "").split(",")))
install()
