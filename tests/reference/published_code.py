"""Load the published proxies' own code from ``../shared/upstream/zero-cost`` (never copied).

* NSC: ``nsc/nsc/nsc_utils.py`` and ``nsc/ranking/compute_flexibert_excerpt.py``;
* W-PCA: ``pca_torch`` from LPZero's copy of W-PCA's ``model/pca_torch.py``;
* LPZero: its ``TreeStructure`` (``lpzero/structures/tree.py``) with its own operators and
  input functions (``lpzero/operators``), and its copy of the authors' ``modeling_electra.py``;
* SWAP: ``src/metrics/swap.py`` and its copy of ``modeling_electra.py``.

LPZero's package ``__init__`` files import its whole research code base (datasets,
torchvision, GPT-2 and LLaMA tooling). The modules used here are imported without
running those ``__init__`` files (each package is entered as a bare namespace), and one
import that only its GPT-2 Jacobian candidate uses (``predictor/measures/jacob_cov``,
which pulls in torchvision) is stood in by an empty module; nothing that the FlexiBERT
proxy executes is replaced.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from authors_code import UPSTREAM

ZC = UPSTREAM / "zero-cost"


def _path(p: Path) -> None:
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def nsc_code() -> SimpleNamespace:
    """``psi_mp`` and the FlexiBERT construction (``compute_layer_psis``, ``agg_flat``,
    ``compute_zerolm``) of the NSC authors."""
    _path(ZC / "nsc" / "nsc")
    _path(ZC / "nsc" / "ranking")
    import compute_flexibert_excerpt as cf
    import nsc_utils

    return SimpleNamespace(psi_mp=nsc_utils.psi_mp, compute_layer_psis=cf.compute_layer_psis, agg_flat=cf.agg_flat,
                           compute_zerolm=cf.compute_zerolm)


def pca_torch() -> Any:
    """W-PCA's ``pca_torch(data, energy)`` (LPZero's copy)."""
    spec = importlib.util.spec_from_file_location("wpca_pca_torch", ZC / "lpzero" / "lpzero" / "model" / "pca_torch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.pca_torch


def lpzero_code() -> SimpleNamespace:
    """LPZero's ``TreeStructure`` and its copy of the authors' ``ElectraModel``/``ElectraConfig``."""
    root = ZC / "lpzero" / "lpzero"
    if "lpzero" not in sys.modules:
        for name, sub in (("lpzero", ""), ("lpzero.model", "model"), ("lpzero.model.hf_gpt2", "model/hf_gpt2"),
                          ("lpzero.predictor", "predictor"), ("lpzero.predictor.measures", "predictor/measures"),
                          ("lpzero.structures", "structures")):
            m = types.ModuleType(name)
            m.__path__ = [str(root / sub)]
            sys.modules[name] = m
        jc = types.ModuleType("lpzero.predictor.measures.jacob_cov")  # GPT-2 Jacobians only (see module doc)
        jc.modify_net = jc.get_batch_jacobian = None  # type: ignore[attr-defined]
        sys.modules[jc.__name__] = jc
    from lpzero.model.configuration_electra import ElectraConfig
    from lpzero.model.flexibert.modeling_electra import ElectraModel
    from lpzero.structures.tree import TreeStructure

    return SimpleNamespace(TreeStructure=TreeStructure, ElectraModel=ElectraModel, ElectraConfig=ElectraConfig)


def swap_code() -> SimpleNamespace:
    """SWAP's ``SWAP`` class and its copy of the authors' ``ElectraModel``/``ElectraConfig``."""
    _path(ZC / "swap")
    from src.metrics.swap import SWAP
    from src.utils.configuration_electra import ElectraConfig
    from src.utils.modeling_electra import ElectraModel

    return SimpleNamespace(SWAP=SWAP, ElectraModel=ElectraModel, ElectraConfig=ElectraConfig)


NASLIB = ZC / "naslib"


def naslib_measures() -> SimpleNamespace:
    """NASLib's zero-cost measure modules (``pruners/measures/*.py``) and ``p_utils``.

    The files sit in ``zero-cost/naslib/pruners`` without NASLib's package around them;
    ``p_utils`` does ``from ..models import *`` (NASLib's search-space models, not
    stored), so the parent package is entered as a bare namespace ``naslib_ref`` with an
    empty ``models`` module. Importing ``pruners.measures`` runs its ``load_all``; the
    ``measure`` decorator returns each undecorated function, which is what is used."""
    if "naslib_ref" not in sys.modules:
        pkg = types.ModuleType("naslib_ref")
        pkg.__path__ = [str(NASLIB)]
        sys.modules["naslib_ref"] = pkg
        sys.modules["naslib_ref.models"] = types.ModuleType("naslib_ref.models")
        pr = types.ModuleType("naslib_ref.pruners")
        pr.__path__ = [str(NASLIB / "pruners")]
        sys.modules["naslib_ref.pruners"] = pr
    import importlib

    ms = importlib.import_module("naslib_ref.pruners.measures")
    names = ("epe_nas", "fisher", "grasp", "l2_norm", "plain", "zen")
    mods = {n: importlib.import_module(f"naslib_ref.pruners.measures.{n}") for n in names}
    return SimpleNamespace(p_utils=importlib.import_module("naslib_ref.pruners.p_utils"), measures=ms, **mods)
