"""Two published transformer proxies, implemented here from their papers' definitions.

* **W-PCA** (Shang Wang, *W-PCA Based Gradient-Free Proxy for Efficient Search of
  Lightweight Language Models*, ICLR 2025, arXiv:2504.15983). For every feed-forward
  block, the pre-activation hidden states ``H = X W1 + b1`` of a minibatch are reshaped
  to (tokens, D'), centred per unit, and the number ``k`` of principal components whose
  cumulative share of the variance first reaches ``eta`` is counted. The proxy is the
  parameter count times the sum of ``k`` over the blocks. No gradient is taken, which is
  the paper's point: one forward pass per arch.

  Choices made here, because the package's FlexiBERT differs from the paper's BERT or
  because the paper's text available to this project does not fix them:
  ``eta = 0.99`` (:data:`W_PCA_ETA`; the paper names a threshold, its value was not
  verified here); a layer with a 3-Linear feed-forward stack contributes one count per
  hidden (pre-activation) width of the stack; the parameter count is the whole model's
  (embeddings included), as the paper's #Params; all tokens of the batch are samples.

* **Non-embedding parameter count** (LiteTransformerSearch: Javaheripi et al.,
  *LiteTransformerSearch: Training-free Neural Architecture Search for Efficient
  Language Models*, NeurIPS 2022): the number of parameters of the encoder layers,
  i.e. without the token / position / type embeddings, their LayerNorm and the
  embedding-to-hidden projection. LTS found it ranks trained language models as well as
  training-free proxies that cost a forward and backward pass.

``w_pca`` counts the PCA dimension of every hidden Linear of a layer's feed-forward
stack (this package's extension to FlexiBERT's 3-Linear stacks); ``w_pca_first`` (group
``published``) counts the first one only, as W-PCA's BERT (one hidden Linear) and the NSC
and LPZero authors' FlexiBERT runs do (they hook ``intermediate.dense_in``). Both are
registered for the ``flexibert`` space, so every semantics computes them
(``proxies.compute(ids, ["w_pca", "nonembedding_params"])``); the NSC authors' protocol is
:data:`nasbench_bert.proxies.protocols.W_PCA_NSC`.
"""

from __future__ import annotations

from .._torch import torch
from torch import nn

from ..vocabulary import DeviceKind
from .capture import Capture
from .registry import ProxyValue, register

S = "flexibert"

#: W-PCA's cumulative-variance threshold eta (this package's choice; see the module doc)
W_PCA_ETA = 0.99
#: the generator seed of W-PCA's own forward pass (dropout masks under train-mode semantics)
W_PCA_SEED = 0


def pca_dim(x: torch.Tensor, eta: float = W_PCA_ETA) -> int:
    """Number of principal components of the rows of ``x`` (samples x units, any leading
    shape flattened into samples) whose cumulative share of the variance first reaches
    ``eta``. Float64 eigenvalues of the smaller Gram side (the same non-zero spectrum as
    the covariance). Zero for a matrix whose rows are all equal."""
    _check_eta(eta)
    return _dim(spectrum(x).cpu(), eta)


def _check_eta(eta: float) -> None:
    if not 0.0 < eta <= 1.0:
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(f"eta = {eta!r} is not allowed; allowed values: 0 < eta <= 1")


def spectrum(x: torch.Tensor) -> torch.Tensor:
    """The float64 eigenvalues behind :func:`pca_dim`, largest first, on ``x``'s device."""
    a = x.detach().double().reshape(-1, x.shape[-1])
    a = a - a.mean(0, keepdim=True)
    small = a @ a.T if a.shape[0] < a.shape[1] else a.T @ a
    return torch.linalg.eigvalsh(small).clamp_min(0).flip(0)


def _dim(lam: torch.Tensor, eta: float) -> int:
    """:func:`pca_dim` from the spectrum (a CPU tensor)."""
    total = float(lam.sum())
    if total <= 0:
        return 0
    share = torch.cumsum(lam, 0) / total
    # the first k with share >= eta (a tiny tolerance so eta = 1 is reachable in float64)
    k = int(torch.searchsorted(share, torch.tensor(eta - 1e-12, dtype=share.dtype, device=share.device)).item()) + 1
    return min(k, len(lam))


def ff_preactivations(model: nn.Module, cap: Capture, *, first_only: bool = False) -> list[tuple[int, torch.Tensor]]:
    """(layer index, ``X W + b`` before the activation) for every hidden Linear of every
    feed-forward stack (``first_only``: the first Linear of each stack, the authors'
    ``intermediate.dense_in``), from one forward pass of ``model`` on the capture's batch.

    The shared proxy pass records activations *after* GELU; W-PCA is defined on the
    pre-activation, so it runs its own forward (no gradient; the global RNG is left as
    it was; dropout masks, where the semantics runs in train mode, come from
    :data:`W_PCA_SEED`)."""
    out: list[tuple[int, torch.Tensor]] = []
    handles = []
    try:
        for li, layer in enumerate(model.layers):
            stack = layer.feed_forward.layers
            for lin in (stack[:1] if first_only else stack):  # Linear layers followed by the activation
                handles.append(lin.register_forward_hook(lambda m, i, o, li=li: out.append((li, o.detach()))))
        b = cap.batch
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(W_PCA_SEED)
            model(b.input_ids, b.attention_mask, b.token_type_ids)
    finally:
        for h in handles:
            h.remove()
    return out


def _w_pca(cap: Capture, first_only: bool) -> ProxyValue:
    per = [0] * len(cap.model.layers)
    pre = ff_preactivations(cap.model, cap, first_only=first_only)
    lams = [spectrum(h) for _, h in pre]
    # every spectrum to the host in one copy (not one synchronisation per Linear); the
    # dimensions are counted there, as pca_dim counts them
    on_cpu = not lams or lams[0].device.type == DeviceKind.CPU
    host = lams if on_cpu else torch.cat(lams).cpu().split([len(lam) for lam in lams])
    for (li, _), lam in zip(pre, host):
        per[li] += _dim(lam, W_PCA_ETA)
    n = sum(p.numel() for p in cap.model.parameters())
    return ProxyValue(float(n) * sum(per), [float(v) for v in per])


@register("w_pca", space=S, group=("baseline",), version=2)
def w_pca(cap: Capture) -> ProxyValue:
    """W-PCA (Wang, ICLR 2025) extended to FlexiBERT's stacks: parameter count x summed PCA
    dimension (share eta of the variance) of every feed-forward pre-activation of the stack;
    per layer: that layer's dimensions."""
    return _w_pca(cap, first_only=False)


@register("w_pca_first", space=S, group=("published",))
def w_pca_first(cap: Capture) -> ProxyValue:
    """W-PCA (Wang, ICLR 2025) as published and as the NSC and LPZero authors run it on
    FlexiBERT: parameter count x summed PCA dimension of each layer's *first* feed-forward
    pre-activation (``intermediate.dense_in``); per layer: that dimension."""
    return _w_pca(cap, first_only=True)


@register("nonembedding_params", space=S, group=("baseline",))
def nonembedding_params(cap: Capture) -> ProxyValue:
    """LiteTransformerSearch's proxy (Javaheripi et al., NeurIPS 2022): the parameters of
    the encoder layers only (no embeddings, embedding LayerNorm or projection)."""
    per = [sum(p.numel() for p in layer.parameters()) for layer in cap.model.layers]
    return ProxyValue(float(sum(per)), [float(v) for v in per])
