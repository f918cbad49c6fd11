"""The FlexiBERT proxy pass: one forward and one backward under a semantics' protocol.

Every paper proxy reads one forward and one backward: activations, head outputs and
softmax outputs are captured by forward hooks in that forward, gradients by that
backward. Only NTKT (one extra random-projection backward) and synflow (a pass on
``|weights|``) cost more, and only when asked for, after the main pass.

The protocol comes from the semantics (:class:`~nasbench_bert.semantics.ProxyProtocol`):

* ``authors`` reproduces ``BERT_metrics.ipynb`` by construction: the model is built
  right after ``torch.manual_seed(seed)`` and run at once in train mode, so its
  weights *and* dropout masks are the reference notebook's; the backward is of
  ``ones_like(last_hidden_state)`` (which vanishes in exact arithmetic: the gradient
  proxies of this protocol measure rounding error, see ``docs/errata.md``); hooks sit
  where the notebook put them (feed-forward activation modules; query/key/value/WMA/LT
  input projections; every softmax module, the LT layers' unused one included).
* ``as_trained`` / ``as_specified``: eval mode, and the backward of
  ``sum(P * last_hidden_state)`` for a fixed seeded Gaussian P, whose gradient reaches
  every layer, so gradient proxies agree between float32 and float64 and between
  thread counts.

Hooks are always removed afterwards and the global RNG is left as it was. The model is
built on the CPU and put where the batch is (:func:`.placement.place`), so on a GPU its
weights and dropout masks are the CPU run's.
"""

from __future__ import annotations

from .._torch import torch
from torch import nn

from ..models.flexibert import FlexiBERTEncoder
from ..models.operations import LTOperation, SelfAttention
from ..semantics import ObjectiveRule, Semantics, SemanticsLike, get_semantics
from ..spaces.flexibert import Arch
from .capture import Capture, objective_value, projection
from .inputs import Batch
from .placement import place


def capture_flexibert(arch: Arch, needs: set[str], batch: Batch, semantics: SemanticsLike, seed: int,
                      dtype: torch.dtype = torch.float32) -> Capture:
    sem = get_semantics(semantics)
    proto = sem.protocol
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the notebook: seed, build, run - in that order
        model = place(FlexiBERTEncoder(sem.plan(arch)).to(dtype), batch.input_ids.device)
        model.train(proto.train_mode)
        cap = Capture(model, batch, sem, proto.objective)
        if needs == {"model"}:  # a callable proxy runs its own pass on the fresh model
            cap.extra.update(seed=seed, key=str(arch))
            return cap
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
            if "attention_probs" in needs:
                for li, layer in enumerate(model.layers):
                    for mod in layer.operation.modules():
                        if isinstance(mod, nn.Softmax):
                            handles.append(mod.register_forward_hook(
                                lambda m, i, o, li=li: cap.attention_probs.append((li, o.detach()))))
            out, states = model(batch.input_ids, batch.attention_mask, batch.token_type_ids, output_hidden_states=True)
            # where the generator stood after the pass: a proxy whose reference runs a second
            # forward (LPZero's) continues from here and draws that pass's dropout masks
            cap.extra["rng_after_forward"] = torch.get_rng_state()
            cap.output = out.detach()
            if "hidden_states" in needs:
                cap.hidden_states = [s.detach() for s in states]
            if "backward" in needs:
                objective_value(out, proto.objective, seed).backward()
        finally:
            for h in handles:
                h.remove()
    if "ntk_probe" in needs:
        cap.ntk_trace = _ntk_trace(model, batch, seed)
    if "synflow" in needs:
        cap.synflow_grads = _synflow_flexibert(arch, batch, sem, seed)
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
    """Hutchinson estimate of trace(NTK) of the token-averaged output, per input.

    With z_bd = mean_t(h_btd) and J its Jacobian w.r.t. all weights, trace(J J^T) =
    E_v ||J^T v||^2 for Rademacher v. Because z averages over tokens before the
    Jacobian is taken, cross-token terms are kept: this is the ETAS paper's eq. 12
    (its eq. 13 as printed keeps only the per-token diagonal). Each probe is one
    backward of sum(v * z), run in eval mode; the same probe vectors are used for every
    arch (seeded), so ranks are comparable.
    """
    was = model.training
    model.eval()
    g = torch.Generator().manual_seed(seed + 7919)
    total = 0.0
    params = [p for p in model.parameters() if p.requires_grad]
    try:
        for _ in range(probes):
            out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)
            z = out.mean(dim=1)  # (B, H): token-averaged
            v = torch.randint(0, 2, z.shape, generator=g).to(device=z.device, dtype=z.dtype) * 2 - 1
            grads = torch.autograd.grad((z * v).sum(), params, allow_unused=True)
            total += float(sum((gr.double() ** 2).sum() for gr in grads if gr is not None))
    finally:
        model.train(was)
    return total / probes / batch.input_ids.shape[0]


def _synflow_flexibert(arch: Arch, batch: Batch, sem: Semantics, seed: int) -> dict[str, torch.Tensor]:
    """SynFlow (Tanaka et al. 2020) on a float64 copy with ``|weights|`` and an all-ones
    input at the embedding output (token ids have no "ones"). Returns ``|w * dR/dw|``
    per parameter name.

    The published R = 1^T f(1) vanishes behind the final LayerNorm just as the ``ones``
    objective does (LayerNorm outputs sum to a constant), so under a ``projection``
    protocol R = sum(|P| * f(1)): positive weights keep SynFlow's positive paths, and the
    gradient reaches every layer.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = FlexiBERTEncoder(sem.plan(arch))
    model = place(model.double().eval(), batch.input_ids.device)
    with torch.no_grad():
        for p in model.parameters():
            p.abs_()
    T = batch.input_ids.shape[1]
    emb = torch.ones(1, T, model.embeddings.word.embedding_dim, dtype=torch.float64, device=batch.input_ids.device)
    x = model.embeddings.project(emb)
    for layer in model.layers:
        x = layer(x, None, None)
    if sem.protocol.objective == ObjectiveRule.ONES:
        x.sum().backward()
    else:
        (x * projection(x.shape, seed, x.dtype, x.device).abs()).sum().backward()
    return {n: (p * p.grad).abs().detach() for n, p in model.named_parameters() if p.grad is not None}
