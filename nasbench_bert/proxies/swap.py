"""SWAP-Score (Peng, Song, Fayek, Ciesielski & Chang, *Zero-Shot Neural Network
Evaluation with Sample-Wise Activation Patterns*, TPAMI 2026).

Every activation module (GELU here) is hooked; each call's output is flattened per
sample and the results are concatenated into a (samples x neurons) matrix, where a
"neuron" is one (call, token position, unit). Its signs are the sample-wise activation
pattern of each neuron (a vector of B values in {-1, 0, 1}); the SWAP-Score is the
number of *distinct* patterns over all neurons (the authors' ``src/metrics/swap.py``:
``torch.unique(sign(A).T, dim=0).size(0)``; their FlexiBERT run sets no
regularisation). The score is bounded by the number of neurons, T x (sum of every
feed-forward layer's width), and reaches it when no two neurons share a pattern.

Here the patterns are packed into integers (40 base-3 digits per int64 column) before
``unique``, which counts the same thing with far less memory; the reference test
compares with the authors' function on the same model and batch.

SWAP's protocol on FlexiBERT (``SWAP_Transformer.py``): the authors'
``modeling_electra.py`` at its default config (this package's ``authors`` semantics),
built without a seed and not put in eval mode, and one batch of 128 OpenWebText
documents tokenised by ELECTRA-small's tokenizer, truncated at 512 and padded to the
longest (:data:`nasbench_bert.proxies.protocols.SWAP`).
"""

from __future__ import annotations

from .._torch import torch

from ..vocabulary import DeviceKind
from .capture import Capture
from .registry import ProxyValue, register

S = "flexibert"
#: base-3 digits per int64 column (3^40 < 2^63)
_DIGITS = 40


def count_patterns(acts: torch.Tensor) -> int:
    """Distinct sign patterns among the columns of ``acts`` (samples x neurons)."""
    codes = (torch.sign(acts.detach()).to(torch.int64) + 1).T  # neurons x samples, digits 0/1/2
    n, b = codes.shape
    cols = []
    for start in range(0, b, _DIGITS):
        chunk = codes[:, start:start + _DIGITS]
        weights = 3 ** torch.arange(chunk.shape[1], dtype=torch.int64, device=chunk.device)
        # integer products: exact (modulo 2^64) in any order, so the CPU's matmul and the sum
        # a GPU runs (CUDA has no int64 matmul) give the same codes
        cols.append(chunk @ weights if chunk.device.type == DeviceKind.CPU else (chunk * weights).sum(1))
    packed = torch.stack(cols, 1) if len(cols) > 1 else cols[0]
    return int(torch.unique(packed, dim=0).shape[0]) if packed.dim() == 2 else int(torch.unique(packed).numel())


@register("swap", space=S, needs={"ff_activations"}, group=("published",))
def swap(cap: Capture) -> ProxyValue:
    """SWAP-Score (Peng et al., 2026): the number of distinct sample-wise sign patterns of
    every feed-forward activation output; per layer: that layer's count alone."""
    if not cap.ff_activations:
        return ProxyValue(float("nan"), [])
    B = cap.ff_activations[0][1].shape[0]
    layers = sorted({li for li, _ in cap.ff_activations})
    flat = {li: torch.cat([a.reshape(B, -1) for lj, a in cap.ff_activations if lj == li], 1) for li in layers}
    total = count_patterns(torch.cat([flat[li] for li in layers], 1))
    return ProxyValue(float(total), [float(count_patterns(flat[li])) for li in layers])
