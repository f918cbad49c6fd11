"""Gradient proxies measure the model, not float rounding.

Under ``as_trained`` / ``as_specified`` the gradient proxies backpropagate a seeded random
projection of the output, whose gradient reaches every layer. Tests:

* every gradient proxy agrees between float32 and float64 (<= 1e-3 relative) and between
  1 and 2 torch threads (<= 1e-4 relative);
* the first layer's share of per-layer synaptic saliency is far from rounding level -
  and under the authors' ``ones`` objective it is at rounding level (the erratum);
* snip, grad_norm and synflow equal the zero-cost-nas definitions
  (mohsaied/zero-cost-nas ``foresight/pruners/measures``: weight masks for SNIP, per-layer
  gradient norms, SynFlow on ``|weights|`` in float64) computed independently here on
  the same model, batch and objective (<= 1e-5 relative).
"""

from __future__ import annotations

import copy
import types

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from nasbench_bert import Arch, proxies  # noqa: E402
from nasbench_bert.models import build_flexibert  # noqa: E402
from nasbench_bert.proxies import engine  # noqa: E402
from nasbench_bert.proxies.capture import objective_value, projection  # noqa: E402

pytestmark = pytest.mark.torch

ARCHS = ["256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3/SA-SDP-h4-512x3/DSC-9-h2-1024x1", "128/DSC-5-h4-512x1/LT-DFT-h2-1024x3"]
BATCH = {"batch_size": 2, "seq_len": 24}
GRADIENT = ["synaptic_diversity", "synaptic_diversity_norm", "synaptic_saliency", "synaptic_saliency_norm",
            "head_importance", "head_importance_norm", "jacobian_covariance", "jacobian_cosine", "snip", "grad_norm",
            "synflow", "ntkt"]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


@pytest.mark.parametrize("semantics", ["as_trained", "as_specified"])
def test_float32_agrees_with_float64(semantics):
    f32 = proxies.compute(ARCHS, GRADIENT, semantics=semantics, batch=BATCH, dtype="float32")
    f64 = proxies.compute(ARCHS, GRADIENT, semantics=semantics, batch=BATCH, dtype="float64")
    assert (f32.objective == "projection").all() and (f64.dtype == "float64").all()
    worst = {p: max(_rel(x, y) for x, y in zip(f32[p], f64[p])) for p in GRADIENT}
    assert max(worst.values()) <= 1e-3, worst


def test_thread_count_does_not_change_values():
    """The caller's thread count does not reach the values: the sweep computes with its own
    fixed count (proxies.sweep.WORKER_THREADS), so they are equal to the last bit (1 and 2
    threads differed in the last bits before it did)."""
    import numpy as np

    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = proxies.compute(ARCHS, GRADIENT, batch=BATCH)
        torch.set_num_threads(2)
        two = proxies.compute(ARCHS, GRADIENT, batch=BATCH)
        assert torch.get_num_threads() == 2  # and the caller's count is given back
    finally:
        torch.set_num_threads(old)
    for p in GRADIENT:
        np.testing.assert_array_equal(one[p].to_numpy(), two[p].to_numpy(), err_msg=p)


def test_first_layer_saliency_is_not_rounding():
    """The first layer's share of per-layer synaptic saliency is O(0.1) under the
    projection objective. Under the published ones objective (float64) every layer's
    saliency is rounding error: ~1e-13 against ~1e3 (all of it sits before the final
    LayerNorm, whose output sums to a constant)."""
    proj = proxies.compute([ARCHS[0]], ["synaptic_saliency"], semantics="as_specified", batch=BATCH, dtype="float64")
    layers = proj["synaptic_saliency__layers"].iloc[0]
    assert layers[0] / sum(layers) > 1e-2
    ones = proxies.compute([ARCHS[0]], ["synaptic_saliency"], semantics="authors", batch=BATCH, dtype="float64")
    assert ones.objective.iloc[0] == "ones"
    assert ones.synaptic_saliency.iloc[0] < 1e-12 * proj.synaptic_saliency.iloc[0]


# -- zero-cost-nas definitions, computed the way that code does -----------------------------
def _capture(arch: str, needs: set[str]):
    spec = proxies.BatchSpec(**BATCH)
    batch = proxies.make_batch(spec)
    return engine.capture_flexibert(Arch.coerce(arch), needs, batch, "as_trained", 0), batch


def _same_model(arch: str) -> nn.Module:
    return build_flexibert(arch, "as_trained", seed=0).eval()


def _linears(net: nn.Module) -> list[nn.Linear]:
    return [m for m in net.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]  # get_layer_metric_array's rule


@pytest.mark.parametrize("arch", ARCHS)
def test_snip_equals_zero_cost_nas(arch):
    cap, batch = _capture(arch, {"backward"})
    ours = proxies.get("flexibert", ["snip"])[0].fn(cap).value
    net = _same_model(arch)
    for layer in _linears(net):  # compute_snip_per_weight: a mask per weight, d loss / d mask
        layer.weight_mask = nn.Parameter(torch.ones_like(layer.weight))
        layer.weight.requires_grad = False
        layer.forward = types.MethodType(lambda self, x: F.linear(x, self.weight * self.weight_mask, self.bias), layer)
    net.zero_grad()
    out = net(batch.input_ids, batch.attention_mask, batch.token_type_ids)
    objective_value(out, "projection", 0).backward()
    theirs = float(sum(layer.weight_mask.grad.abs().double().sum() for layer in _linears(net)))
    assert _rel(ours, theirs) <= 1e-5


@pytest.mark.parametrize("arch", ARCHS)
def test_grad_norm_equals_zero_cost_nas(arch):
    cap, batch = _capture(arch, {"backward"})
    ours = proxies.get("flexibert", ["grad_norm"])[0].fn(cap).value
    net = _same_model(arch)
    net.zero_grad()
    out = net(batch.input_ids, batch.attention_mask, batch.token_type_ids)
    objective_value(out, "projection", 0).backward()
    theirs = float(sum(layer.weight.grad.norm() for layer in _linears(net)))  # get_grad_norm_arr
    assert _rel(ours, theirs) <= 1e-5


@pytest.mark.parametrize("arch", ARCHS)
def test_synflow_equals_zero_cost_nas(arch):
    cap, batch = _capture(arch, {"synflow"})
    ours = proxies.get("flexibert", ["synflow"])[0].fn(cap).value
    net = copy.deepcopy(_same_model(arch))
    with torch.no_grad():  # linearize: every entry of the state dict to |.|
        for _, p in net.state_dict().items():
            p.abs_()
    net.zero_grad()
    net.double()
    T = batch.input_ids.shape[1]
    x = net.embeddings.project(torch.ones(1, T, 128, dtype=torch.float64))  # the all-ones input
    for layer in net.layers:
        x = layer(x, None, None)
    (x * projection(x.shape, 0, x.dtype).abs()).sum().backward()
    theirs = float(sum((layer.weight * layer.weight.grad).abs().sum().detach() for layer in _linears(net)))
    assert _rel(ours, theirs) <= 1e-5


def test_objective_value_refuses_an_unknown_objective():
    from nasbench_bert.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=r"objective = 'sum' is not allowed; allowed values: \['ones', 'projection'\]"):
        objective_value(torch.ones(2), "sum", 0)
