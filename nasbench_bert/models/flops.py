"""FLOP counts: torch's own counter, and an analytic count to check it against.

Both count a multiply-add as 2 FLOPs and only matrix products (Linear, attention
matmuls, the DCT's matrix products, convolutions); element-wise work, softmax,
LayerNorm and FFTs are not counted (torch's FlopCounterMode has no rule for ``fft``).
"""

from __future__ import annotations

from .._torch import torch
from torch.utils.flop_counter import FlopCounterMode

from ..semantics import DEFAULT_SEMANTICS, DEFAULT_SPEC_SEMANTICS, EMBEDDING_SIZE, VOCAB_SIZE, ModelPlan, SemanticsLike, get_semantics
from ..sizes import mixing_flops
from ..spaces.flexibert import Arch, ArchLike


def count_flops(model: torch.nn.Module, *inputs: torch.Tensor, backward: bool = False) -> int:
    """FLOPs of one forward (and with ``backward``, forward + backward) measured by torch."""
    with FlopCounterMode(display=False) as counter:
        out = model(*inputs)
        if backward:
            (out[0] if isinstance(out, tuple) else out).float().sum().backward()
    return int(counter.get_total_flops())


def flexibert_flops(arch: ArchLike, batch: int, seq: int, semantics: SemanticsLike = DEFAULT_SPEC_SEMANTICS) -> int:
    """Analytic forward FLOPs of the encoder (matrix products only; see module doc),
    for the model that ``semantics`` builds from ``arch``."""
    return plan_flops(get_semantics(semantics).plan(Arch.coerce(arch)), batch, seq)


def plan_flops(plan: ModelPlan, batch: int, seq: int) -> int:
    """Analytic forward FLOPs of the encoder built from ``plan`` (see :func:`flexibert_flops`)."""
    H = plan.hidden
    N = batch * seq
    lin = lambda i, o: 2 * N * i * o  # noqa: E731
    total = lin(EMBEDDING_SIZE, H) if H != EMBEDDING_SIZE else 0
    for layer in plan.layers:
        total += mixing_flops(layer, H, batch, seq)
        dims = (H, *layer.ff_widths, H)
        total += sum(lin(a, b) for a, b in zip(dims[:-1], dims[1:]))
    return total


def electra_pretraining_flops(arch: ArchLike, batch: int, seq: int, semantics: SemanticsLike = DEFAULT_SEMANTICS, *,
                              masked_tokens: float | None = None, mask_prob: float = 0.15, backward: bool = True) -> float:
    """Analytic FLOPs of one ELECTRA pretraining step as ``builders.pretrain`` computes it
    (matrix products only, as :func:`flexibert_flops`):

    * the discriminator encoder and its head (Linear H -> H, Linear H -> 1) on every token;
    * the generator encoder (:meth:`~nasbench_bert.semantics.Semantics.generator_plan`) on
      every token, and its head (Linear H_g -> 128, then the tied 128 x 30522 vocabulary
      projection) at the masked positions only;
    * with ``backward`` (the default) the training step: 3 x the forward (the backward
      computes the gradients of both operands of every product, 2 x the forward). This
      is torch's own count for the benchmark's model (``as_trained``: attention and
      Linear layers only), and the usual MFU convention otherwise (a DCT's constant
      matrices need only one gradient).

    ``masked_tokens``: the number of masked positions in the batch (a mean is fine);
    default ``mask_prob * batch * seq``. The result is a float when ``masked_tokens`` is.
    """
    sem = get_semantics(semantics)
    a = Arch.coerce(arch)
    m = mask_prob * batch * seq if masked_tokens is None else masked_tokens
    return electra_plan_flops(sem.plan(a), sem.generator_plan(a), batch, seq, masked_tokens=m, backward=backward)


def electra_plan_flops(disc: ModelPlan, gen: ModelPlan, batch: int, seq: int, *, masked_tokens: float,
                       backward: bool = True) -> float:
    """:func:`electra_pretraining_flops` for a discriminator and a generator given as plans."""
    n = batch * seq
    H, Hg = disc.hidden, gen.hidden
    fwd = plan_flops(disc, batch, seq) + 2 * n * (H * H + H)
    fwd += plan_flops(gen, batch, seq) + 2 * masked_tokens * (Hg * EMBEDDING_SIZE + EMBEDDING_SIZE * VOCAB_SIZE)
    return 3 * fwd if backward else fwd


def encoder_training_flops(arch: ArchLike, batch: int, seq: int, semantics: SemanticsLike = DEFAULT_SEMANTICS,
                           num_labels: int = 2) -> int:
    """Analytic FLOPs of one GLUE finetuning step: the encoder and ELECTRA's TF head
    (one Linear H -> labels on the first token), forward + backward (3 x forward)."""
    plan = get_semantics(semantics).plan(Arch.coerce(arch))
    return 3 * (plan_flops(plan, batch, seq) + 2 * batch * plan.hidden * num_labels)
