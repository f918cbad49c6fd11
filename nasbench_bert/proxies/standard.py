"""NAS-Bench-Suite-Zero's remaining standard proxies: EPE-NAS, Fisher, GraSP, L2 norm,
plain and Zen-score, as NASLib computes them (``naslib/predictors/pruners/measures``).

NASLib wrote them for image classifiers: a cross-entropy loss on class labels,
Conv2d/Linear layers, images as input, BatchNorm. Each FlexiBERT proxy here keeps
NASLib's computation and changes only what a language model lacks, the same way for all
six (each proxy's docstring says its own):

* **the loss** is the semantics' proxy objective R (:func:`.capture.objective_value`:
  ``sum(P * last_hidden_state)`` under ``as_trained``/``as_specified``,
  ``sum(last_hidden_state)`` under ``authors``), as this package's ``snip`` and
  ``grad_norm`` use;
* **the layers** are every ``nn.Linear`` of the model (NASLib's ``get_layer_metric_array``
  takes Conv2d and Linear; FlexiBERT has no Conv2d, and its DSC convolutions are Conv1d,
  which NASLib skips too); a proxy's value is NASLib's per-layer arrays summed
  (``find_measures``' ``sum_arr``), in float64; per layer: each encoder layer's share
  (the embedding projection counts in the total only);
* **the input** of the proxies that perturb or differentiate it (``epe_nas``, ``zen``) is
  the word-embedding output (the ``inputs_embeds`` of Hugging Face models: position and
  token-type embeddings, the embedding LayerNorm and projection stay part of the network),
  since token ids cannot be differentiated or drawn from a Gaussian;
* **train mode**: NASLib runs whatever mode the network is in (its ``fisher`` forces
  ``train()``); here the semantics decides, as for every proxy of the package (eval for
  ``as_trained``/``as_specified``, train with dropout for ``authors``). A proxy that runs
  its own passes seeds the generator with the proxy seed first, so a train-mode value is
  reproducible; the global generator is left as it was.

``higher_is_better`` is True for all six: NAS-Bench-Suite-Zero (Krishnakumar et al.,
NeurIPS 2022 Datasets and Benchmarks) ranks by every one of them unsigned, and NASLib's
``grasp`` already carries the sign flip it found necessary (``-theta * Hg``).

Registered for NAS-Bench-NLP (``space="nlp"``): ``l2_norm`` (every ``nn.Linear`` of the
language model: the cells' linear nodes and the decoder, whose weight is tied to the
embedding), ``plain`` (over the same layers, with the RNN protocol's y.backward(y)
objective that ``snip`` and ``grad_norm`` there use) and ``epe_nas`` (on the input
Jacobian the shared pass already records, d(sum y)/d(embeddings): EPE-NAS's own
``y.backward(ones_like(y))``). Not registered for NAS-Bench-NLP: ``fisher``, ``grasp``
and ``zen``. Each needs passes of its own (activation-gradient hooks, a Hessian-gradient
product, Gaussian weights and inputs), and the NAS-Bench-NLP proxy protocol of each
semantics is defined pass by pass in :mod:`.capture_nlp` (the authors' notebook runs six
passes whose order fixes which gradients the saliency proxies read); a second,
independent definition of that protocol's objective here would be an adaptation with no
reference to pin it to, so they are left out rather than guessed.
"""

from __future__ import annotations

import copy
import math
from typing import Callable

import numpy as np
from .._torch import torch
from torch import nn

from .capture import Capture, objective_value
from .common import host_values, module_sums
from .placement import host_normal_
from .registry import ProxyValue, register

S = "flexibert"
N = "nlp"

#: EPE-NAS's k in log(|corr| + k) (NASLib's ``eval_score_perclass``)
EPE_K = 1e-5
#: Zen-score's mixup_gamma, the size of the input perturbation (NASLib's default)
ZEN_MIXUP_GAMMA = 1e-2


# -- shared helpers ----------------------------------------------------------------------------
def linears(module: nn.Module) -> list[nn.Linear]:
    """Every Linear layer of ``module`` in ``modules()`` order (NASLib's
    ``get_layer_metric_array`` with Conv2d absent)."""
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def _by_layer(cap: Capture, term: Callable[[nn.Linear], float | torch.Tensor]) -> ProxyValue:
    """Sum of ``term`` over every Linear of the model; per layer: each encoder layer's sum
    (each term computed once, all copied to the host together: :func:`.common.module_sums`)."""
    return ProxyValue(*module_sums(term, linears(cap.model), [linears(layer) for layer in cap.model.layers]))


def _by_layer_values(cap: Capture, values: dict[int, float]) -> ProxyValue:
    """Like :func:`_by_layer` for per-Linear values computed beforehand (keyed by ``id``)."""
    return _by_layer(cap, lambda m: values.get(id(m), 0.0))


def _seed(cap: Capture) -> int:
    return int(cap.extra.get("seed", 0))


def _run(model: nn.Module, cap: Capture, words: torch.Tensor | None = None) -> torch.Tensor:
    """The model's last hidden state on the capture's batch; with ``words``, that tensor
    stands in for the word-embedding lookup (a forward hook replaces its output), so
    position and token-type embeddings, the embedding LayerNorm and projection still run."""
    b = cap.batch
    handle = None
    if words is not None:
        handle = model.embeddings.word.register_forward_hook(lambda m, i, o: words)
    try:
        return model(b.input_ids, b.attention_mask, b.token_type_ids)
    finally:
        if handle is not None:
            handle.remove()


# -- L2 norm -----------------------------------------------------------------------------------
def _l2(m: nn.Linear) -> torch.Tensor:
    return m.weight.detach().double().norm()


@register("l2_norm", space=S, group=("standard",))
def l2_norm(cap: Capture) -> ProxyValue:
    """L2 norm (NAS-Bench-Suite-Zero; NASLib ``l2_norm``): sum over Linear layers of the
    Frobenius norm of the weight at initialisation. No pass is needed beyond the forward
    every capture runs."""
    return _by_layer(cap, _l2)


@register("l2_norm", space=N, group=("standard",))
def l2_norm_nlp(cap: Capture) -> ProxyValue:
    """L2 norm over every Linear of the language model: the cells' linear nodes and the
    decoder (its weight is the tied embedding's); per layer: each cell's."""
    return ProxyValue(*module_sums(_l2, linears(cap.model), [linears(c) for c in cap.model.cells]))


# -- plain -------------------------------------------------------------------------------------
def _plain(m: nn.Linear) -> float | torch.Tensor:
    g = m.weight.grad
    return 0.0 if g is None else (m.weight.detach().double() * g.double()).sum()


@register("plain", space=S, needs={"backward"}, group=("standard",))
def plain(cap: Capture) -> ProxyValue:
    """plain (Mozaffari/Abdelfattah et al.'s zero-cost-nas; NASLib ``plain``): sum over
    Linear weights of w * dR/dw, signed (no absolute value, unlike SNIP), R the
    protocol's objective; the gradient is the shared backward's."""
    return _by_layer(cap, _plain)


@register("plain", space=N, needs={"loss_backward"}, group=("standard",))
def plain_nlp(cap: Capture) -> ProxyValue:
    """plain over every Linear of the language model (cells and tied decoder), R the
    protocol's y.backward(y) objective (R = |y|^2 / 2, as ``snip`` here); per layer:
    each cell's. Under ``rnn_output`` the decoder is not applied and its (tied) weight's
    gradient is the embedding's, which NASLib's per-Linear loop reads too."""
    return ProxyValue(*module_sums(_plain, linears(cap.model), [linears(c) for c in cap.model.cells]))


# -- Fisher ------------------------------------------------------------------------------------
def fisher_per_linear(model: nn.Module, cap: Capture) -> dict[int, float]:
    """Per Linear (by ``id``): NASLib's channel Fisher summed over the weight,
    ``in_features * sum_c |0.5 * mean_n (sum_s a_nsc g_nsc)^2|``, where a is the Linear's
    output, g = dR/da, n the sequences, s the token positions (NASLib's spatial axes) and
    c the output units (its channels), accumulated over calls as NASLib's hook does.

    One forward and one backward of R on ``model`` (the generator seeded with the proxy
    seed first, so train-mode dropout is reproducible)."""
    fisher: dict[int, torch.Tensor] = {}
    handles = []

    def on_forward(m: nn.Linear, inputs: tuple, out: torch.Tensor) -> None:
        if not out.requires_grad:
            return
        act = out.detach()

        def on_grad(g: torch.Tensor) -> None:
            prod = act.double() * g.detach().double()
            g_nc = prod.sum(dim=tuple(range(1, prod.dim() - 1))) if prod.dim() > 2 else prod
            d = g_nc.pow(2).mean(0).mul(0.5)
            fisher[id(m)] = d if id(m) not in fisher else fisher[id(m)] + d

        out.register_hook(on_grad)

    mods = linears(model)
    try:
        for m in mods:
            handles.append(m.register_forward_hook(on_forward))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_seed(cap))
            out = _run(model, cap)
            objective_value(out, cap.objective, _seed(cap)).backward()
    finally:
        for h in handles:
            h.remove()
    got = [m for m in mods if id(m) in fisher]
    return {id(m): v * m.weight.shape[1] for m, v in zip(got, host_values(fisher[id(m)].abs().sum() for m in got))}


@register("fisher", space=S, needs={"model"}, group=("standard",))
def fisher(cap: Capture) -> ProxyValue:
    """Fisher (Theis et al. 2018; Turner et al. 2020; NASLib ``fisher``): per Linear output
    unit, 0.5 * mean over sequences of (sum over tokens of activation * dR/dactivation)^2,
    broadcast over the unit's weights and summed. Tokens play NASLib's spatial positions
    and output units its channels (see :func:`fisher_per_linear`); R the protocol's
    objective. Its own forward and backward (the activations' gradients are not kept by
    the shared pass)."""
    return _by_layer_values(cap, fisher_per_linear(cap.model, cap))


# -- GraSP -------------------------------------------------------------------------------------
def grasp_per_linear(model: nn.Module, cap: Capture) -> dict[int, float]:
    """Per Linear (by ``id``): sum of -W * (H g) with g = dR/dW over every Linear weight
    and H the Hessian of R in those weights (NASLib's z = sum(g.detach() * g),
    z.backward()). One forward serves both of NASLib's passes: g is taken with
    ``create_graph`` and detached for the product, which equals NASLib's first pass in eval
    mode, and in train mode equals it with both passes drawing the same dropout masks."""
    mods = linears(model)
    weights = [m.weight for m in mods]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed(cap))
        out = _run(model, cap)
    r = objective_value(out, cap.objective, _seed(cap))
    grads = torch.autograd.grad(r, weights, create_graph=True, allow_unused=True)
    z = sum((g.detach() * g).sum() for g in grads if g is not None)
    for w in weights:
        w.grad = None
    if isinstance(z, torch.Tensor) and z.requires_grad:
        z.backward()
    vals = host_values(0.0 if m.weight.grad is None else (-m.weight.detach().double() * m.weight.grad.double()).sum()
                       for m in mods)
    return {id(m): v for m, v in zip(mods, vals)}


@register("grasp", space=S, needs={"model"}, group=("standard",))
def grasp(cap: Capture) -> ProxyValue:
    """GraSP (Wang et al. 2020; NASLib ``grasp``): sum over Linear weights of -w * (H g)_w,
    g = dR/dw, H the Hessian of R (NASLib's sign: it found accuracy correlating with the
    negated score). R the protocol's objective; its own forward and double backward."""
    return _by_layer_values(cap, grasp_per_linear(cap.model, cap))


# -- EPE-NAS -----------------------------------------------------------------------------------
def epe_score(rows: np.ndarray, k: float = EPE_K) -> float:
    """EPE-NAS's score of one class (NASLib's ``eval_score_perclass`` with every sample in
    one class, so n_classes = 1 and its <= 100-class branch): |sum_ij log(|corr_ij| + k)|
    over the correlations between the rows (one per sample). NaN where a row is constant
    (corrcoef is undefined there)."""
    r = np.asarray(rows, dtype=np.float64)
    with np.errstate(all="ignore"):
        c = np.corrcoef(r)
        return float(abs(np.sum(np.log(np.abs(c) + k))))


def input_jacobian_rows(model: nn.Module, cap: Capture) -> np.ndarray:
    """(B, T*128) rows: dR/d(word embeddings) per sequence, R the protocol's objective.
    Sequences do not interact in the encoder, so row i is dR_i/dx_i (EPE-NAS's per-sample
    Jacobian of the summed output)."""
    b = cap.batch
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_seed(cap))
        words = model.embeddings.word(b.input_ids).detach().requires_grad_(True)
        out = _run(model, cap, words)
    (g,) = torch.autograd.grad(objective_value(out, cap.objective, _seed(cap)), [words])
    return g.detach().double().reshape(g.shape[0], -1).cpu().numpy()


@register("epe_nas", space=S, needs={"model"}, group=("standard",))
def epe_nas(cap: Capture) -> ProxyValue:
    """EPE-NAS (Lopes et al. 2021; NASLib ``epe_nas``): |sum log(|corr| + 1e-5)| of the
    correlations between the sequences' Jacobians dR/d(word embeddings). The proxy batch
    has no class labels, so every sequence is one class (n_classes = 1: NASLib's <= 100
    branch); R the protocol's objective in place of EPE's sum of the outputs (the two
    coincide under ``authors``). Its own forward and backward (the shared pass keeps no
    input gradient)."""
    return ProxyValue(epe_score(input_jacobian_rows(cap.model, cap)))


@register("epe_nas", space=N, needs={"input_grad"}, group=("standard",))
def epe_nas_nlp(cap: Capture) -> ProxyValue:
    """EPE-NAS on the input Jacobian the shared pass records, d(sum y)/d(embeddings)
    (EPE-NAS's own y.backward(ones_like(y))), one row per sequence, every sequence one
    class."""
    g = cap.input_grad
    return ProxyValue(epe_score(g.detach().double().transpose(0, 1).reshape(g.shape[1], -1).cpu().numpy()))


# -- Zen-score ---------------------------------------------------------------------------------
def gaussian_init(model: nn.Module) -> None:
    """NASLib's ``network_weight_gaussian_init``: Linear weights N(0, 1), biases 0 (Conv2d
    the same, BatchNorm2d/GroupNorm 1 / 0; FlexiBERT has neither), in ``modules()`` order;
    embeddings and LayerNorms untouched (LayerNorms are 1 / 0 at initialisation). The
    normal draws come from the CPU generator wherever the model is (:func:`.placement.host_normal_`)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                host_normal_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)) and m.weight is not None:
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)


def zen_value(model: nn.Module, cap: Capture, mixup_gamma: float = ZEN_MIXUP_GAMMA) -> float:
    """Zen-score of ``model`` (modified in place: pass a copy), as NASLib computes it with
    ``repeat=1``: Gaussian weights, then x, x2 ~ N(0, 1) of the word-embedding shape
    (drawn after the weights, from the proxy seed), and
    log(mean_n sum |f(x) - f(x + gamma x2)|) with f the last hidden state. The BatchNorm
    correction of NASLib's code sums over BatchNorm2d layers; FlexiBERT normalises with
    LayerNorm, which keeps no running variance, so the term is 0, as NASLib's code gives
    for a network without BatchNorm2d. Both forwards draw the same dropout masks (train
    mode, ``authors``), so f is one function."""
    seed = _seed(cap)
    b = cap.batch
    B, T = b.input_ids.shape
    E = model.embeddings.word.embedding_dim
    dtype, device = model.embeddings.word.weight.dtype, model.embeddings.word.weight.device
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        gaussian_init(model)
        x = torch.randn(B, T, E, dtype=dtype).to(device)  # drawn on the CPU wherever the model is
        x2 = torch.randn(B, T, E, dtype=dtype).to(device)
        torch.manual_seed(seed)
        out = _run(model, cap, x)
        torch.manual_seed(seed)
        mixed = _run(model, cap, x + mixup_gamma * x2)
        score = (out.double() - mixed.double()).abs().sum(dim=tuple(range(1, out.dim()))).mean()
    return float(torch.log(score)) if float(score) > 0 else -math.inf


@register("zen", space=S, needs={"model"}, group=("standard",))
def zen(cap: Capture) -> ProxyValue:
    """Zen-score (Lin et al. 2021; NASLib ``zen``): log of the mean L1 change of the last
    hidden state when the Gaussian input (at the word embeddings) is perturbed by 0.01 x
    Gaussian noise, on a copy of the model with N(0, 1) Linear weights; no BatchNorm
    term (LayerNorm keeps no running variance). -inf if the output does not move."""
    return ProxyValue(zen_value(copy.deepcopy(cap.model), cap))


__all__ = ["linears", "epe_score", "fisher_per_linear", "grasp_per_linear", "input_jacobian_rows", "gaussian_init",
           "zen_value"]
