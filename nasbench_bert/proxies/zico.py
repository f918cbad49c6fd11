"""ZiCo (Li, Yang, Wang, Yang & Marculescu, *ZiCo: Zero-shot NAS via Inverse Coefficient
of Variation on Gradients*, ICLR 2023).

The definition (the authors' ``compute_zico.py``: ``getgrad`` + ``caculate_zico``):
backpropagate the training loss of K mini-batches one by one; for every ``Conv2d`` /
``Linear`` module, stack the K gradients of its weight, g (K x n), and take per weight
the mean of |g| and the standard deviation of g over the mini-batches (``np.std``:
population, ddof 0). A module's term is

    log( sum over the weights whose std is not 0 of mean|g| / std(g) )

and a module whose sum is 0 (no weight with a nonzero std, or all of them with a zero
mean) adds nothing. ZiCo is the sum of the module terms; higher is better (the paper:
high mean and low variance of the gradients predict fast convergence and good
generalisation).

Adaptations to this package's language models, and why:

* **Loss.** ZiCo differentiates a classifier's cross-entropy; neither model here has a
  labelled head. As this package's other parameter-gradient proxies (SNIP, grad_norm,
  synaptic saliency) do, each mini-batch backpropagates the semantics protocol's
  objective R applied to that mini-batch's output: FlexiBERT ``objective_value`` of the
  last hidden state (``ones``: sum(h); ``projection``: sum(P * h) for the seeded
  Gaussian P, the same P for every mini-batch since they share a shape); NAS-Bench-NLP
  R = |y|^2 / 2 (the published ``y.backward(y)``) with y the protocol's output
  (``rnn_output``: the last RNN layer's output via the release's embedding lookup;
  ``decoder_logits``: the decoder logits, from detached embeddings), exactly as the
  shared NLP pass does for synaptic saliency. Under the ``authors`` semantics the
  FlexiBERT objective is ``ones``, whose gradient vanishes in exact arithmetic behind the
  final LayerNorm (``docs/errata.md``): ZiCo there measures rounding error, as the
  other gradient proxies of that protocol do.
* **Mini-batches.** ZiCo needs at least two mini-batches (a standard deviation over
  them); the authors' runs draw several batches from the training loader. Here the
  proxy batch is split along its batch axis into :data:`MINIBATCHES` equal consecutive
  mini-batches (the default FlexiBERT batch of 8 sequences: 2 of 4; NAS-Bench-NLP's of
  10: 2 of 5); when the batch size is not a multiple, the last ``B mod K`` sequences are
  left out. The passes run in the protocol's mode (``authors``: train, dropout on, with
  torch's generator seeded by the proxy seed; the others: eval), as the package's other
  gradient proxies are; ZiCo itself calls ``train()``, which in its CNNs switches
  batch-norm statistics, a layer these models lack.
* **Modules.** Every ``nn.Linear`` weight (ZiCo's ``Linear``), and on FlexiBERT also the
  DSC operation's depthwise and pointwise ``nn.Conv1d`` weights: the 1-D counterparts of
  the ``Conv2d`` modules ZiCo counts, so they fit the definition. A module whose weight
  got no gradient in some mini-batch (one the forward never used) is left out, where
  the authors' code would stop with an error. On NAS-Bench-NLP the decoder, tied to the
  embedding, is a ``Linear`` and counts, as in ``getgrad`` (under ``rnn_output`` it is
  not applied and its gradient is the embedding lookup's).

Per layer: the sum of the module terms inside each encoder layer (FlexiBERT) or RNN cell
(NAS-Bench-NLP); the total also holds modules outside them (FlexiBERT's embedding
projection, NAS-Bench-NLP's decoder).

Cost: K forwards and backwards of B/K sequences each, about one forward + backward of
the whole batch, on the freshly built model (``needs={"model"}``: its passes are its
own, so the shared pass is not rerun for it). Gradients are copied to float64 before
the statistics; the reference test (``tests/reference/test_zico_meco_reference.py``) feeds the
same per-mini-batch gradients to the authors' ``getgrad`` / ``caculate_zico``.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

from .._torch import torch
from torch import nn

from ..semantics import NLPObjectiveRule
from .capture import Capture, objective_value
from .capture_nlp import _notebook_embedding
from .common import host_values
from .registry import ProxyValue, register

#: how many equal mini-batches the proxy batch is split into (ZiCo needs >= 2)
MINIBATCHES = 2
#: the module types whose weight gradients ZiCo reads (ZiCo: Conv2d and Linear; here the
#: DSC convolutions are Conv1d)
MODULE_TYPES: tuple[type[nn.Module], ...] = (nn.Linear, nn.Conv1d, nn.Conv2d)


def _ratio_sum(grads: torch.Tensor) -> torch.Tensor:
    """sum over std != 0 of mean|g| / std(g), on the gradients' device (0-dim)."""
    g = grads.double()
    std = (g - g.mean(dim=0)).pow(2).mean(dim=0).sqrt()
    return torch.where(std != 0, g.abs().mean(dim=0) / std, g.new_zeros(())).sum()


def _term(s: float) -> float | None:
    return None if s == 0 else math.log(s)


def module_term(grads: torch.Tensor) -> float | None:
    """One module's ZiCo term from its (K, n) stack of per-mini-batch weight gradients:
    log(sum over std != 0 of mean|g| / std(g)), or None when that sum is 0 (the
    authors' code then adds nothing). std is ``np.std``'s: sqrt(mean((g - mean g)^2))."""
    return _term(float(_ratio_sum(grads)))


def zico_from_gradients(per_module: dict[str, Sequence[torch.Tensor]],
                        groups: Sequence[Callable[[str], bool]] = ()) -> ProxyValue:
    """ZiCo of per-module gradient lists (one flattened weight gradient per mini-batch);
    per layer: the sum of the terms of the modules each predicate of ``groups`` selects."""
    sums = host_values(_ratio_sum(torch.stack([g.reshape(-1) for g in gs])) for gs in per_module.values())
    terms = {}
    for name, s in zip(per_module, sums):  # one host copy for the model, not one per module
        t = _term(s)
        terms[name] = 0.0 if t is None else t
    per = [sum(v for n, v in terms.items() if sel(n)) for sel in groups]
    return ProxyValue(sum(terms.values()), per)


def _splits(n: int) -> list[slice]:
    size = n // MINIBATCHES
    return [slice(k * size, (k + 1) * size) for k in range(MINIBATCHES)] if size else []


def _collect(model: nn.Module, passes: Iterable[Callable[[], None]]) -> dict[str, list[torch.Tensor]]:
    """Run each mini-batch pass (forward + backward) on zeroed gradients and keep every
    counted module's weight gradient, as float64 copies (ZiCo's ``getgrad``)."""
    mods = [(n, m) for n, m in model.named_modules() if isinstance(m, MODULE_TYPES)]
    grads: dict[str, list[torch.Tensor]] = {n: [] for n, _ in mods}
    for run in passes:
        model.zero_grad(set_to_none=True)
        run()
        for n, m in mods:
            g = m.weight.grad
            grads[n].append(None if g is None else g.detach().to(torch.float64, copy=True).reshape(-1))  # type: ignore[arg-type]
    model.zero_grad(set_to_none=True)
    return {n: gs for n, gs in grads.items() if gs and all(g is not None for g in gs)}


def _flexibert_passes(cap: Capture) -> list[Callable[[], None]]:
    b, seed, objective = cap.batch, int(cap.extra["seed"]), cap.semantics.protocol.objective

    def run(sl: slice) -> Callable[[], None]:
        def f() -> None:
            cut = lambda t: None if t is None else t[sl]  # noqa: E731
            out = cap.model(b.input_ids[sl], cut(b.attention_mask), cut(b.token_type_ids))
            objective_value(out, objective, seed).backward()
        return f

    return [run(sl) for sl in _splits(b.input_ids.shape[0])]


def _nlp_passes(cap: Capture) -> list[Callable[[], None]]:
    model, ids = cap.model, cap.batch.input_ids
    notebook = cap.semantics.protocol.nlp_objective == NLPObjectiveRule.RNN_OUTPUT

    def run(sl: slice) -> Callable[[], None]:
        def f() -> None:
            part = ids[:, sl]
            if notebook:
                y, _ = model(None, inputs_embeds=_notebook_embedding(model, part), decode=False)
            else:
                y, _ = model(None, inputs_embeds=model.embedding(part).detach())
            y.backward(y.detach())  # R = |y|^2 / 2
        return f

    return [run(sl) for sl in _splits(ids.shape[1])]


def _zico(cap: Capture, passes: list[Callable[[], None]], groups: Sequence[Callable[[str], bool]]) -> ProxyValue:
    if len(passes) < 2:
        return ProxyValue(math.nan, [])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(cap.extra["seed"]))  # dropout masks under ``authors`` (train mode)
        grads = _collect(cap.model, passes)
    return zico_from_gradients(grads, groups)


def _prefix(p: str) -> Callable[[str], bool]:
    return lambda n: n.startswith(p)


@register("zico", space="flexibert", needs={"model"}, group=("standard",))
def zico_flexibert(cap: Capture) -> ProxyValue:
    """ZiCo (Li et al., ICLR 2023): sum over Linear / DSC-conv weights of log(sum mean|g| / std(g))
    over MINIBATCHES mini-batches of the proxy batch, R the protocol's objective; per encoder layer."""
    groups = [_prefix(f"layers.{i}.") for i in range(len(cap.model.layers))]
    return _zico(cap, _flexibert_passes(cap), groups)


@register("zico", space="nlp", needs={"model"}, group=("standard",))
def zico_nlp(cap: Capture) -> ProxyValue:
    """ZiCo (Li et al., ICLR 2023) on the recipe LM: Linear weights (cells and tied decoder),
    R = |y|^2 / 2 per mini-batch of sequences; per RNN cell."""
    groups = [_prefix(f"cells.{i}.") for i in range(len(cap.model.cells))]
    return _zico(cap, _nlp_passes(cap), groups)
