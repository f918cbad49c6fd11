"""FLOP counts: torch's own counter, and an analytic count to check it against.

Both count a multiply-add as 2 FLOPs and only matrix products (Linear, attention
matmuls, the DCT's matrix products, convolutions); element-wise work, softmax,
LayerNorm and FFTs are not counted (torch's FlopCounterMode has no rule for ``fft``).
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from ..semantics import AS_SPECIFIED, EMBEDDING_SIZE, SemanticsLike, get_semantics
from ..spaces.flexibert import Arch, ArchLike


def count_flops(model: torch.nn.Module, *inputs: torch.Tensor, backward: bool = False) -> int:
    """FLOPs of one forward (and with ``backward``, forward + backward) measured by torch."""
    with FlopCounterMode(display=False) as counter:
        out = model(*inputs)
        if backward:
            (out[0] if isinstance(out, tuple) else out).float().sum().backward()
    return int(counter.get_total_flops())


def flexibert_flops(arch: ArchLike, batch: int, seq: int, semantics: SemanticsLike = AS_SPECIFIED) -> int:
    """Analytic forward FLOPs of the encoder (matrix products only; see module doc),
    for the model that ``semantics`` builds from ``arch``."""
    plan = get_semantics(semantics).plan(Arch.coerce(arch))
    H = plan.hidden
    N = batch * seq
    lin = lambda i, o: 2 * N * i * o  # noqa: E731
    total = lin(EMBEDDING_SIZE, H) if H != EMBEDDING_SIZE else 0
    for layer in plan.layers:
        heads = layer.heads
        if layer.mixing in ("SDP", "WMA"):
            total += 4 * lin(H, H) + (lin(H, H) if layer.mixing == "WMA" else 0)
            total += 2 * 2 * batch * seq * seq * H  # QK^T and PV over all heads
        elif layer.mixing in ("DFT", "DCT"):
            total += lin(H, H)
            if layer.mixing == "DCT":
                d = H // heads
                total += 2 * batch * heads * (seq * seq * d + seq * d * d)
        else:
            A, h, k = H // 2, max(heads // 2, 1), int(layer.kernel or 0)
            total += 3 * lin(H, A) + lin(A, h * k) + lin(H, A) + lin(H, H)  # q,k,v, kernel gen, conv out, output
            total += 2 * 2 * batch * seq * seq * A  # attention half
            total += 2 * N * H * k + lin(H, A)  # depthwise + pointwise convolutions
        dims = (H, *layer.ff_widths, H)
        total += sum(lin(a, b) for a, b in zip(dims[:-1], dims[1:]))
    return total
