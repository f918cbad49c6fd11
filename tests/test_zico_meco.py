"""ZiCo and MeCo through the public entry point, and the facts their adaptations rest on.

The values themselves are pinned to the authors' code in
``tests/reference/test_zico_meco_reference.py``; here:

* both run through ``proxies.compute`` under all three semantics (FlexiBERT ids 0 and 1)
  and on one NAS-Bench-NLP recipe, with finite values and no recorded error;
* ZiCo equals an independent numpy transcription of the definition on the same
  per-mini-batch gradients, and uses ``MINIBATCHES`` equal mini-batches;
* MeCo's maps are the pre-LayerNorm layer outputs (LayerNorm of them is the layer's
  output), and the LayerNorm output itself has the exact eigenvalue 0 that made it
  unusable; fewer positions than channels give the exact 0.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from nasbench_bert import proxies  # noqa: E402
from nasbench_bert.proxies import make_batch  # noqa: E402
from nasbench_bert.proxies.capture_bert import capture_flexibert  # noqa: E402
from nasbench_bert.proxies.inputs import BatchSpec  # noqa: E402
from nasbench_bert.proxies import meco, zico  # noqa: E402
from nasbench_bert.proxies.registry import get  # noqa: E402
from nasbench_bert.spaces.flexibert import Arch  # noqa: E402

pytestmark = pytest.mark.torch

UPSTREAM = Path(os.environ.get("NASBENCH_BERT_RELEASE", Path(__file__).resolve().parents[2] / "shared" / "upstream"))
BATCH = {"batch_size": 8, "seq_len": 40}  # MeCo: 320 positions > 256 hidden units; ZiCo: 2 x 4
ARCH = "128/DSC-5-h4-512x1/LT-DFT-h2-1024x3"


@pytest.mark.parametrize("semantics", ["as_trained", "as_specified", "authors"])
def test_compute_flexibert_all_semantics(semantics):
    before = torch.get_rng_state()
    df = proxies.compute([0, 1], ["zico", "meco"], semantics=semantics, batch=BATCH)
    assert torch.equal(before, torch.get_rng_state())  # their own passes leave the global generator alone
    assert df.error.isna().all(), df.error.tolist()
    assert not [c for c in df.columns if c.endswith("__error")]
    for name in ("zico", "meco"):
        assert np.isfinite(df[name]).all(), (name, df[name].tolist())
        layers = df[f"{name}__layers"]
        assert [len(v) for v in layers] == [len(Arch.from_string(a).layers) for a in df.arch]
    assert (df.meco > 0).all()  # pre-LayerNorm maps with more positions than channels: not singular


def test_compute_nlp_one_recipe():
    path = UPSTREAM / "nas-bench-nlp" / "data" / "recepies_example.json"
    if not path.is_file():
        pytest.skip(f"no recipe file at {path}")
    recipe = json.loads(path.read_text())[0]
    for semantics in ("authors", "as_trained"):
        df = proxies.compute([("r0", recipe)], ["zico", "meco"], space="nlp", semantics=semantics,
                             batch={"batch_size": 4, "seq_len": 12})
        assert df.error.isna().all() and not [c for c in df.columns if c.endswith("__error")]
        assert math.isfinite(df.zico.iloc[0]) and len(df.zico__layers.iloc[0]) == 3
        # (12 - 1) x 4 = 44 positions <= 400..600 hidden units: singular, exactly 0 by definition
        assert df.meco__layers.iloc[0] == [0.0, 0.0, 0.0]


def test_registered_in_standard_group_both_spaces():
    for space in ("flexibert", "nlp"):
        names = {p.name: p for p in get(space, "standard")}
        assert {"zico", "meco"} <= set(names)
        assert names["zico"].higher_is_better and names["meco"].higher_is_better


def _numpy_zico(stacks: dict[str, np.ndarray]) -> float:
    """ZiCo's statistic written out independently (population std over mini-batches)."""
    total = 0.0
    for g in stacks.values():
        std = g.std(axis=0)
        nz = std != 0
        s = np.sum(np.abs(g).mean(axis=0)[nz] / std[nz])
        total += np.log(s) if s != 0 else 0.0
    return total


def test_zico_statistic_and_minibatches(monkeypatch):
    seen = []
    orig = zico._collect

    def spy(model, passes):
        passes = list(passes)
        seen.append(len(passes))
        out = orig(model, passes)
        seen.append(out)
        return out

    monkeypatch.setattr(zico, "_collect", spy)
    cap = capture_flexibert(Arch.from_string(ARCH), {"model"}, make_batch(BatchSpec(batch_size=5, seq_len=16)),
                            "as_specified", 0)  # builds the DSC operation (as_trained's model has none)
    v = zico.zico_flexibert(cap)
    assert seen[0] == zico.MINIBATCHES == 2  # 5 sequences: 2 mini-batches of 2, the fifth left out
    grads = seen[1]
    assert any("depthwise" in n for n in grads) and any("pointwise" in n for n in grads)  # DSC Conv1d counted
    stacks = {n: torch.stack(gs).numpy() for n, gs in grads.items()}
    assert v.value == pytest.approx(_numpy_zico(stacks), rel=1e-12)
    assert v.value != pytest.approx(_numpy_zico({n: g * [[1.0], [1.5]] for n, g in stacks.items()}), rel=1e-6)
    assert v.value == pytest.approx(sum(v.per_layer), rel=1e-12)  # H 128: no embedding projection outside the layers


def test_zico_needs_two_minibatches():
    cap = capture_flexibert(Arch.from_string(ARCH), {"model"}, make_batch(BatchSpec(batch_size=2, seq_len=8)),
                            "as_trained", 0)
    assert math.isfinite(zico.zico_flexibert(cap).value)  # 2 sequences: 2 mini-batches of 1
    assert zico._splits(1) == []  # one sequence: no std over mini-batches, the proxy is NaN


def test_meco_maps_are_pre_layernorm_outputs():
    arch = Arch.from_string(ARCH)
    batch = make_batch(BatchSpec(batch_size=8, seq_len=40))
    cap = capture_flexibert(arch, {"model"}, batch, "as_trained", 0)
    maps = meco._pre_norm_maps(cap)
    ref = capture_flexibert(arch, {"hidden_states"}, batch, "as_trained", 0)
    keep = batch.attention_mask.bool()
    for layer, pre, out in zip(cap.model.layers, maps, ref.hidden_states[1:]):
        n = layer.feed_forward.norm
        torch.testing.assert_close(F.layer_norm(pre, n.normalized_shape, n.weight, n.bias, n.eps), out[keep])
        # the layer's own (LayerNorm) output: sum_c sigma_c z_c = 0, its smallest eigenvalue is 0
        lam = torch.linalg.eigvalsh(torch.corrcoef(out[keep].double().T))
        assert abs(float(lam[0])) < 1e-10 < float(lam[1])
    v = meco.meco_flexibert(cap)
    assert all(x > 1e-8 for x in v.per_layer) and v.value == pytest.approx(sum(v.per_layer))


def test_meco_term_definition():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 200, generator=g, dtype=torch.float64)
    x[1] = 0.5 * x[0] + 0.5 * x[2]  # a dependent channel lowers the smallest eigenvalue
    lam = np.linalg.eigvalsh(np.corrcoef(x.numpy()))[0]
    assert meco.smallest_correlation_eigenvalue(x) == pytest.approx(lam, rel=1e-10)
    x[3] = 1.0  # a constant channel: its NaN correlations set to 0 (the authors' rule)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.corrcoef(x.numpy())
    c[~np.isfinite(c)] = 0
    assert meco.smallest_correlation_eigenvalue(x) == pytest.approx(np.linalg.eigvalsh(c)[0], rel=1e-10, abs=1e-14)
    assert meco.smallest_correlation_eigenvalue(torch.randn(50, 50, generator=g)) == 0.0  # positions <= channels
