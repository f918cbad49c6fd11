"""The one-pass engine: build a model, record what the requested proxies need, evaluate.

For FlexiBERT every paper proxy reads one forward and one backward of
``sum(last_hidden_state)`` (the published code's ``backward(ones_like(output))``):
activations, head outputs and attention probabilities are captured by forward hooks
in that same forward, gradients by that same backward. Only NTKT (one extra
random-projection backward) and synflow (a pass on ``|weights|``) cost more, and only
when they are asked for. Hooks are always removed afterwards, the model is in eval
mode, and the seed is set before construction.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import torch
from torch import nn

from ..models.flexibert import LTOperation, SelfAttention, build_flexibert
from ..models.nlp_rnn import build_nlp_rnn
from ..sizes import check_semantics
from ..spaces.flexibert import Arch
from ..spaces.nlp import Recipe
from .inputs import Batch, BatchSpec
from .registry import Proxy


@dataclass
class Capture:
    """Everything one arch's pass recorded; proxies read from it and never mutate it."""

    model: nn.Module
    batch: Batch
    semantics: str
    output: torch.Tensor | None = None
    ff_activations: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    head_outputs: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    attention_probs: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    hidden_states: list[torch.Tensor] = field(default_factory=list)
    input_grad: torch.Tensor | None = None
    embeddings: torch.Tensor | None = None
    noise_grads: dict[float, torch.Tensor] = field(default_factory=dict)
    hidden_grads: list[torch.Tensor] = field(default_factory=list)
    rnn_activation_codes: torch.Tensor | None = None
    ntk_trace: float | None = None
    synflow_grads: dict[str, torch.Tensor] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


# -- FlexiBERT ---------------------------------------------------------------------------
def capture_flexibert(arch: Arch, needs: set[str], batch: Batch, semantics: str, seed: int) -> Capture:
    model = build_flexibert(arch, semantics, seed=seed)
    model.eval()
    cap = Capture(model, batch, semantics)
    handles = []
    try:
        if "ff_activations" in needs:
            for li, layer in enumerate(model.layers):
                handles.append(layer.feed_forward.act.register_forward_hook(
                    lambda m, i, o, li=li: cap.ff_activations.append((li, o.detach()))))
        if "head_outputs" in needs:
            for li, layer in enumerate(model.layers):
                for mod in _head_modules(layer.operation):
                    handles.append(mod.register_forward_hook(
                        lambda m, i, o, li=li: cap.head_outputs.append((li, o.detach()))))
        attn = [m for m in model.modules() if isinstance(m, SelfAttention)]
        if "attention_probs" in needs:
            for m in attn:
                m.keep_probs = True
        torch.manual_seed(seed)
        if "ntk_probe" in needs:
            cap.ntk_trace = _ntk_trace(model, batch, seed)
            model.zero_grad(set_to_none=True)
        out, states = model(batch.input_ids, batch.attention_mask, batch.token_type_ids, output_hidden_states=True)
        cap.output = out.detach()
        if "hidden_states" in needs:
            cap.hidden_states = [s.detach() for s in states]
        if "attention_probs" in needs:
            li_of = {id(m): li for li, layer in enumerate(model.layers) for m in layer.modules() if isinstance(m, SelfAttention)}
            cap.attention_probs = [(li_of[id(m)], m.probs.detach()) for m in attn if m.probs is not None]
        if needs & {"backward"}:
            out.backward(torch.ones_like(out))
        if "synflow" in needs:
            cap.synflow_grads = _synflow_flexibert(arch, batch, semantics, seed)
    finally:
        for h in handles:
            h.remove()
        for m in model.modules():
            if isinstance(m, SelfAttention):
                m.keep_probs, m.probs = False, None
    return cap


def _head_modules(op: nn.Module) -> list[nn.Module]:
    """The per-head projections the published code hooks: query, key, value (SA, DSC),
    the WMA weight, and the LT input linear."""
    mods: list[nn.Module] = []
    for m in op.modules():
        if isinstance(m, SelfAttention):
            mods += [m.query, m.key, m.value] + ([m.wma] if m.wma is not None else [])
        elif isinstance(m, LTOperation):
            mods.append(m.linear)
    return mods


def _ntk_trace(model: nn.Module, batch: Batch, seed: int, probes: int = 1) -> float:
    """Hutchinson estimate of trace(NTK) of the token-averaged output.

    With z_bd = mean_t(h_btd) and J its Jacobian w.r.t. all weights, trace(J J^T) =
    E_v ||J^T v||^2 for Rademacher v. Each probe is one backward of sum(v * z); the
    estimate is divided by the batch size (per input). Exact in expectation, and the
    same probe vectors are used for every arch (seeded), so ranks are comparable.
    """
    g = torch.Generator().manual_seed(seed + 7919)
    total = 0.0
    params = [p for p in model.parameters() if p.requires_grad]
    for _ in range(probes):
        out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        z = out.mean(dim=1)  # (B, H): token-averaged
        v = torch.randint(0, 2, z.shape, generator=g).to(z.dtype) * 2 - 1
        grads = torch.autograd.grad((z * v).sum(), params, allow_unused=True)
        total += float(sum((gr.double() ** 2).sum() for gr in grads if gr is not None))
    return total / probes / batch.input_ids.shape[0]


def _synflow_flexibert(arch: Arch, batch: Batch, semantics: str, seed: int) -> dict[str, torch.Tensor]:
    """SynFlow (Tanaka et al. 2020) on a copy with |weights|, in float64, all-ones
    embedding input: returns |w * dR/dw| per parameter name."""
    model = build_flexibert(arch, semantics, seed=seed).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.abs_()
    ids = batch.input_ids[:1]
    emb = torch.ones(1, ids.shape[1], model.embeddings.word.embedding_dim, dtype=torch.float64)
    x = model.embeddings.project(emb)
    for layer in model.layers:
        x = layer(x, None, None)
    x.sum().backward()
    return {n: (p * p.grad).abs().detach() for n, p in model.named_parameters() if p.grad is not None}


# -- NAS-Bench-NLP ----------------------------------------------------------------------
NOISE_AMPLITUDES = (0.1, 10.0, 100.0)


def capture_nlp(recipe: Recipe, needs: set[str], batch: Batch, semantics: str, seed: int) -> Capture:
    V = batch.spec.vocab_size or 10000
    model = build_nlp_rnn(recipe, V, seed=seed)
    model.eval()
    cap = Capture(model, batch, semantics)
    B = batch.input_ids.shape[1]
    codes = torch.zeros(B, B, dtype=torch.float64)

    def act_hook(name: str, out: torch.Tensor) -> None:
        nonlocal codes
        x = (out.detach() > 0).double().reshape(B, -1)
        codes += x @ x.T + (1 - x) @ (1 - x).T

    try:
        if "ff_activations" in needs:
            for c in model.cells:
                c.activation_hook = act_hook
        torch.manual_seed(seed)
        emb = model.embedding(batch.input_ids).detach().requires_grad_(True)
        logits, _, st = model(None, return_states=True, inputs_embeds=emb)
        cap.output = logits.detach()
        cap.embeddings = emb.detach()
        cap.hidden_states = [s.detach() for s in st["incoming"]]
        if "ff_activations" in needs:
            cap.rnn_activation_codes = codes.clone()
            for c in model.cells:
                c.activation_hook = None
        # 1) the Jacobian family: y.backward(ones) w.r.t. the embedding output
        if needs & {"backward", "input_grad"}:
            logits.backward(torch.ones_like(logits), retain_graph="loss_backward" in needs)
            cap.input_grad = emb.grad.detach().clone()
        # 2) the same on noised embeddings (small / large / very large noise)
        if "noise_jacobians" in needs:
            g = torch.Generator().manual_seed(seed)
            e = cap.embeddings
            var = e.var(dim=1, keepdim=True, unbiased=False)  # over the batch axis, as published
            noise = torch.randn(e.shape, generator=g)
            for amp in NOISE_AMPLITUDES:
                noisy = (e + amp * var * noise).detach().requires_grad_(True)
                y, _ = model(None, inputs_embeds=noisy)
                y.backward(torch.ones_like(y))
                cap.noise_grads[amp] = noisy.grad.detach()
        # 3) synaptic saliency's objective: y.backward(y), on the main graph
        if "loss_backward" in needs:
            model.zero_grad(set_to_none=True)
            for layer_steps in st["incoming_steps"]:
                for s_ in layer_steps:
                    s_.grad = None
            logits.backward(logits.detach())
            cap.hidden_grads = [
                torch.stack([s_.grad.detach() if s_.grad is not None else torch.zeros_like(s_) for s_ in layer_steps])
                for layer_steps in st["incoming_steps"]
            ]
    finally:
        for c in model.cells:
            c.activation_hook = None
    return cap


# -- evaluation --------------------------------------------------------------------------
def evaluate(proxies: Iterable[Proxy], cap: Capture) -> dict[str, Any]:
    """Run each proxy on a capture; one proxy failing records its error, not the arch's."""
    row: dict[str, Any] = {}
    for p in proxies:
        t0 = time.perf_counter()
        try:
            v = p.fn(cap)
            row[p.name] = v.value
            row[f"{p.name}__layers"] = list(v.per_layer) if v.per_layer is not None else None
        except Exception as e:  # isolate: one broken proxy must not lose the others
            row[p.name] = math.nan
            row[f"{p.name}__layers"] = None
            row[f"{p.name}__error"] = f"{type(e).__name__}: {e}"
        row[f"{p.name}__seconds"] = time.perf_counter() - t0
    return row


def run_one(space: str, key: Any, proxies: list[Proxy], spec: BatchSpec, batch: Batch, semantics: str, seed: int) -> dict[str, Any]:
    needs: set[str] = set().union(*(p.needs for p in proxies)) if proxies else {"forward"}
    t0 = time.perf_counter()
    if space == "flexibert":
        cap = capture_flexibert(key, needs, batch, check_semantics(semantics), seed)
    else:
        cap = capture_nlp(key, needs, batch, semantics, seed)
    t1 = time.perf_counter()
    row = evaluate(proxies, cap)
    row["seconds_pass"] = t1 - t0
    row["seconds_proxies"] = time.perf_counter() - t1
    return row
