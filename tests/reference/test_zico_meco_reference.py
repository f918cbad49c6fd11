"""ZiCo and MeCo against their authors' own code, on the same modules and inputs.

The authors' functions are loaded at run time from ``../shared/upstream/zero-cost``
(never copied):

* ZiCo: ``zico/compute_zico.py``'s ``getgrad`` (which weights, one flattened gradient per
  mini-batch) and ``caculate_zico`` (the per-module statistic, log, sum). The file
  imports two modules of the authors' code base that these functions never use
  (``global_utils``, ``ModelLoader``); they are stood in by empty modules while it loads.
  The mini-batch loop of their ``getzico`` (zero_grad, forward, loss, backward,
  ``getgrad``) is run here as written, on CPU, with the protocol's objective as the loss.
* MeCo: ``meco/measures/meco.py``'s ``get_score``, whose forward hook computes the
  per-feature-map term. It hooks every module of the network it is given and runs it
  on its own random image; here the network is a module without children that returns
  one given feature map, laid out (1, channels, positions) like the (1, C, H*W) maps the
  hook reshapes, so the hook sees exactly that map.

Run with ``-s`` to see the largest relative difference of each proxy. Each test also
shows that a perturbed input moves the value past its tolerance, so it can fail.

    .venv/bin/python -m pytest -m reference -s -p no:cacheprovider tests/reference/test_zico_meco_reference.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types

import numpy as np
import pytest

from authors_code import UPSTREAM

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from nasbench_bert.proxies import make_batch  # noqa: E402
from nasbench_bert.proxies.capture import objective_value  # noqa: E402
from nasbench_bert.proxies.capture_bert import capture_flexibert  # noqa: E402
from nasbench_bert.proxies.capture_nlp import _notebook_embedding, capture_nlp  # noqa: E402
from nasbench_bert.proxies.inputs import BatchSpec  # noqa: E402
from nasbench_bert.proxies import meco, zico  # noqa: E402
from nasbench_bert.semantics import get_semantics  # noqa: E402
from nasbench_bert.spaces.flexibert import Arch  # noqa: E402
from nasbench_bert.spaces.nlp import parse_recipe  # noqa: E402

pytestmark = pytest.mark.reference

ZC = UPSTREAM / "zero-cost"
#: SA (plain and WMA), LT (DCT, DFT) and DSC layers, both hidden sizes, 2 and 4 layers
ARCHS = ["256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3/SA-SDP-h4-512x3/DSC-9-h2-1024x1",
         "128/DSC-5-h4-512x1/LT-DFT-h2-1024x3",
         "128/SA-SDP-h2-512x3/LT-DFT-h4-512x1/DSC-9-h2-512x3/SA-WMA-h2-1024x1"]
FLEX_BATCH = BatchSpec(batch_size=8, seq_len=48)  # MeCo: 384 positions > 256 hidden units
ZICO_BATCH = BatchSpec(batch_size=4, seq_len=32)  # ZiCo: 2 mini-batches of 2
NLP_BATCH = BatchSpec(space="nlp", batch_size=6, seq_len=120, vocab_size=10000)  # MeCo: 119 x 6 = 714 > 600
NLP_ZICO_BATCH = BatchSpec(space="nlp", batch_size=4, seq_len=20, vocab_size=10000)
#: relative; the models run in float64 so that the authors' numpy statistics do too (on
#: float32 gradients their float32 sums differ from our float64 ones by ~3e-5 relative)
ZICO_TOL = 1e-9
F64 = torch.float64
MECO_TOL = 1e-6   # relative (eig vs eigvalsh, both float64; the smallest eigenvalues here are ~1e-7 .. 1e-2)
MECO_ABS = 1e-13  # absolute floor: float64 eigensolver error on a correlation matrix (norm <= channels)
LARGEST: dict[str, float] = {}


def _load(name: str, path, package_dir=None) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=None if package_dir is None else [str(package_dir)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.fixture(scope="module")
def authors_zico() -> types.ModuleType:
    path = ZC / "zico" / "compute_zico.py"
    if not path.is_file():
        pytest.skip(f"ZiCo's code is not at {path}")
    stand_ins = [n for n in ("global_utils", "ModelLoader") if n not in sys.modules]
    for n in stand_ins:  # imported at the top of compute_zico.py, used by neither function
        sys.modules[n] = types.ModuleType(n)
    try:
        return _load("authors_compute_zico", path)
    finally:
        for n in stand_ins:
            del sys.modules[n]


@pytest.fixture(scope="module")
def authors_meco() -> types.ModuleType:
    root = ZC / "meco" / "measures"
    if not (root / "meco.py").is_file():
        pytest.skip(f"MeCo's code is not at {root}")
    _load("authors_meco_measures", root / "__init__.py", package_dir=root)  # its load_all() imports .meco
    return sys.modules["authors_meco_measures.meco"]


def _report(name: str, diff: float) -> None:
    LARGEST[name] = max(LARGEST.get(name, 0.0), diff)
    print(f"\n{name}: largest relative difference so far {LARGEST[name]:.3g}")


# -- ZiCo ------------------------------------------------------------------------------------
def _authors_grads(authors, model: nn.Module, passes) -> dict:
    """getzico's loop with the authors' getgrad; DSC Conv1d weights (ZiCo's Conv2d, one
    dimension down: our stated adaptation) are appended in getgrad's own format."""
    grad_dict: dict = {}
    convs = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Conv1d)]
    for i, run in enumerate(passes):
        model.zero_grad()
        run()
        grad_dict = authors.getgrad(model, grad_dict, i)
        for n, m in convs:
            grad_dict.setdefault(n, []).append(m.weight.grad.data.cpu().reshape(-1).numpy())
    return grad_dict


def _flex_passes(model, batch, objective, seed):
    def run(sl):
        def f():
            out = model(batch.input_ids[sl], batch.attention_mask[sl], batch.token_type_ids[sl])
            objective_value(out, objective, seed).backward()
        return f
    half = batch.input_ids.shape[0] // 2
    return [run(slice(0, half)), run(slice(half, 2 * half))]


def _perturbed(grad_dict: dict) -> dict:
    """The same gradients with one module's second mini-batch doubled."""
    out = {k: [np.array(g) for g in v] for k, v in grad_dict.items()}
    first = next(iter(out))
    out[first][1] = out[first][1] * 2.0
    return out


@pytest.mark.parametrize("semantics", ["as_specified", "authors"])  # as_specified builds the DSC Conv1d
@pytest.mark.parametrize("arch", ARCHS)
def test_zico_flexibert_equals_authors(authors_zico, arch, semantics):
    batch, seed = make_batch(ZICO_BATCH), 0
    mine = zico.zico_flexibert(capture_flexibert(Arch.from_string(arch), {"model"}, batch, semantics, seed, F64))
    cap = capture_flexibert(Arch.from_string(arch), {"model"}, batch, semantics, seed, F64)  # the same weights
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the same dropout masks (train mode under authors)
        grads = _authors_grads(authors_zico, cap.model,
                               _flex_passes(cap.model, batch, get_semantics(semantics).protocol.objective, seed))
    ref = authors_zico.caculate_zico({k: list(v) for k, v in grads.items()})
    diff = abs(mine.value - ref) / abs(ref)
    _report("zico flexibert", diff)
    assert np.isfinite(ref) and diff <= ZICO_TOL, (mine.value, ref)
    bad = authors_zico.caculate_zico(_perturbed(grads))
    assert abs(mine.value - bad) / abs(bad) > ZICO_TOL  # the comparison can fail


def _recipe() -> dict:
    return json.loads((UPSTREAM / "nas-bench-nlp" / "data" / "recepies_example.json").read_text())[0]


@pytest.mark.parametrize("semantics", ["as_trained", "authors"])
def test_zico_nlp_equals_authors(authors_zico, semantics):
    batch, seed = make_batch(NLP_ZICO_BATCH), 0
    recipe = parse_recipe(_recipe())
    mine = zico.zico_nlp(capture_nlp(recipe, {"model"}, batch, semantics, seed, F64))
    cap = capture_nlp(recipe, {"model"}, batch, semantics, seed, F64)
    model, ids = cap.model, batch.input_ids
    notebook = get_semantics(semantics).protocol.nlp_objective == "rnn_output"

    def run(sl):
        def f():
            if notebook:
                y, _ = model(None, inputs_embeds=_notebook_embedding(model, ids[:, sl]), decode=False)
            else:
                y, _ = model(None, inputs_embeds=model.embedding(ids[:, sl]).detach())
            y.backward(y.detach())
        return f

    grads = _authors_grads(authors_zico, model, [run(slice(0, 2)), run(slice(2, 4))])
    ref = authors_zico.caculate_zico({k: list(v) for k, v in grads.items()})
    diff = abs(mine.value - ref) / abs(ref)
    _report("zico nlp", diff)
    assert np.isfinite(ref) and diff <= ZICO_TOL, (mine.value, ref)
    bad = authors_zico.caculate_zico(_perturbed(grads))
    assert abs(mine.value - bad) / abs(bad) > ZICO_TOL


# -- MeCo ------------------------------------------------------------------------------------
class _FixedMap(nn.Module):
    """A network without children whose output is one given (channels, positions) map."""

    def __init__(self, fea: torch.Tensor):
        super().__init__()
        self.fea = fea

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fea.unsqueeze(0)


def _authors_term(authors, fea_positions_channels: torch.Tensor) -> float:
    """The authors' hook's value for one map (their get_score draws its own image: the
    global generator is restored afterwards)."""
    with torch.random.fork_rng(devices=[]):
        return float(authors.get_score(_FixedMap(fea_positions_channels.double().T), None, None, "cpu", 1))


def _close(v: float, ref: float) -> bool:
    return abs(v - ref) <= MECO_TOL * abs(ref) + MECO_ABS


def _check_maps(authors, maps, mine, name: str) -> None:
    worst, refs = 0.0, []
    for fea, v in zip(maps, mine.per_layer):
        ref = _authors_term(authors, fea)
        refs.append(ref)
        worst = max(worst, abs(v - ref) / abs(ref))
        assert _close(v, ref), (v, ref)
    assert _close(mine.value, sum(refs)), (mine.value, sum(refs))
    _report(name, worst)
    # can fail: one channel at one position moved changes the authors' value past the tolerance
    fea = maps[0].clone().double()
    fea[0, 0] += fea[:, 0].std()
    assert not _close(mine.per_layer[0], _authors_term(authors, fea))


@pytest.mark.parametrize("semantics", ["as_trained", "authors"])
@pytest.mark.parametrize("arch", ARCHS)
def test_meco_flexibert_equals_authors(authors_meco, arch, semantics):
    batch = make_batch(FLEX_BATCH)
    cap = capture_flexibert(Arch.from_string(arch), {"model"}, batch, semantics, 0)
    maps = meco._pre_norm_maps(cap)
    mine = meco.meco_flexibert(capture_flexibert(Arch.from_string(arch), {"model"}, batch, semantics, 0))
    _check_maps(authors_meco, maps, mine, "meco flexibert")


@pytest.mark.parametrize("semantics", ["as_trained", "authors"])
def test_meco_nlp_equals_authors(authors_meco, semantics):
    batch = make_batch(NLP_BATCH)
    cap = capture_nlp(parse_recipe(_recipe()), {"hidden_states"}, batch, semantics, 0)
    maps = [s[1:].reshape(-1, s.shape[-1]) for s in cap.hidden_states]
    _check_maps(authors_meco, maps, meco.meco_nlp(cap), "meco nlp")


def test_meco_singular_map_is_zero_where_authors_get_rounding(authors_meco):
    """Fewer positions than channels: the correlation matrix is singular; ours is the exact
    0 of the definition, the authors' general solver returns rounding noise around it."""
    fea = torch.randn(40, 64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ref = _authors_term(authors_meco, fea)
    _report("meco singular (|authors| value)", abs(ref))
    assert meco.smallest_correlation_eigenvalue(fea.T) == 0.0 and abs(ref) < 1e-12
