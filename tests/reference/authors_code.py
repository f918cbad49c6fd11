"""Load the authors' PyTorch proxy model and proxy functions from the upstream release.

Nothing is copied into this repository: ``modeling_electra.py`` and
``configuration_electra.py`` are imported from ``../shared/upstream/training-free-nas/code``
and the proxy functions are executed from the code cells of ``BERT_metrics.ipynb``
(cells that only define functions). They need ``transformers==4.30.2`` (the version the
model runs under unpatched); the ``reference`` venv made by ``.ci/run`` has it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = Path(os.environ.get("NASBENCH_BERT_RELEASE", REPO.parent / "shared" / "upstream"))
CODE = UPSTREAM / "training-free-nas" / "code"
REFERENCE_TRANSFORMERS = "4.30.2"


def require_reference() -> None:
    """Skip unless the authors' code and its transformers version are available."""
    import pytest

    if not (CODE / "modeling_electra.py").is_file():
        pytest.skip(f"the authors' code is not at {CODE}")
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != REFERENCE_TRANSFORMERS:
        pytest.skip(f"the authors' model runs under transformers=={REFERENCE_TRANSFORMERS}, "
                    f"found {transformers.__version__} (run in the reference venv)")


def authors_modules() -> SimpleNamespace:
    """``ElectraConfig``, ``ElectraModel``, ``ElectraLayer`` from the upstream files."""
    if str(CODE) not in sys.path:
        sys.path.insert(0, str(CODE))
    import configuration_electra  # noqa: F401  (imported by modeling_electra by name)
    import modeling_electra

    return SimpleNamespace(ElectraConfig=configuration_electra.ElectraConfig, ElectraModel=modeling_electra.ElectraModel,
                           ElectraLayer=modeling_electra.ElectraLayer)


def reference_model(nas_config: dict[str, Any], seed: int) -> Any:
    """The notebook's construction: seed, then ``ElectraModel(ElectraConfig(nas_config=...))``."""
    import torch

    m = authors_modules()
    cfg = m.ElectraConfig(nas_config=nas_config, num_hidden_layers=len(nas_config["encoder_layers"]),
                          output_hidden_states=True)
    torch.manual_seed(seed)
    return m.ElectraModel(cfg)


def notebook_functions() -> dict[str, Any]:
    """The proxy functions defined in ``BERT_metrics.ipynb``, executed from its cells.

    Only cells whose code is nothing but imports and ``def`` statements are run (the
    dataset-loading and sweep cells are not), in a namespace where ``ElectraLayer`` is
    the upstream class.
    """
    import ast

    m = authors_modules()
    nb = json.loads((CODE / "BERT_metrics.ipynb").read_text())
    ns: dict[str, Any] = {"ElectraLayer": m.ElectraLayer}
    exec("import numpy as np\nimport torch\nfrom sklearn.metrics import pairwise_distances", ns)
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        if tree.body and all(isinstance(n, ast.FunctionDef) for n in tree.body):
            exec(compile(tree, f"BERT_metrics.ipynb:{nb['cells'].index(cell)}", "exec"), ns)
    return ns


def register_notebook_hooks(model: Any) -> tuple[list, list, list]:
    """The notebook's hooks (its sweep cell, hook for hook): feed-forward activation
    modules, the query/key/value/input/weight projections, and every softmax module."""
    m = authors_modules()
    acts: list = []
    heads: list = []
    softmaxes: list = []
    for layer in model.modules():
        if isinstance(layer, m.ElectraLayer):
            layer.intermediate.intermediate_act_fn.register_forward_hook(lambda mod, i, o: acts.append(o))
            sub = layer.operation.operation
            for name in ("query", "key", "value", "input", "weight"):
                if hasattr(sub, name):
                    getattr(sub, name).register_forward_hook(lambda mod, i, o: heads.append(o))
            if hasattr(sub, "softmax"):
                sub.softmax.register_forward_hook(lambda mod, i, o: softmaxes.append(o))
    return acts, heads, softmaxes
