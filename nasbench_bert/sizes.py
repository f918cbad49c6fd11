"""Analytic parameter counts, without torch.

The lookup tables carry parameter counts, and ``import nasbench_bert`` must stay light,
so the counts are computed here from the :class:`~nasbench_bert.semantics.ModelPlan`
that :mod:`nasbench_bert.semantics` makes for each arch. :mod:`nasbench_bert.models`
builds the same plan in torch and the tests check, for every benchmark entry and every
semantics, that ``sum(p.numel() for p in model.parameters())`` equals these numbers,
that the ``authors`` counts equal the stored "Number of Parameters" column, and that
the ``as_trained`` counts equal the variables of the authors' TensorFlow graph.
"""

from __future__ import annotations

from typing import Any, Callable

from .errors import InvalidArgumentError
from .semantics import (
    DEFAULT_SPEC_SEMANTICS,
    EMBEDDING_SIZE,
    MAX_POSITIONS,
    SEMANTICS,
    TYPE_VOCAB,
    VOCAB_SIZE,
    LayerPlan,
    ModelPlan,
    SemanticsLike,
    get_semantics,
)
from .spaces.flexibert import Arch
from .spaces.nlp import INPUT, WEIGHTED_OPS, parse_recipe

#: the authors' proxy model's fixed widths (kept for code written against 0.1)
SEED_COMPAT_HIDDEN = 256
SEED_COMPAT_FF = 1024

__all__ = [
    "EMBEDDING_SIZE", "MAX_POSITIONS", "TYPE_VOCAB", "VOCAB_SIZE", "SEMANTICS", "check_semantics",
    "flexibert_num_params", "plan_num_params", "operation_params", "mixing_flops", "feed_forward_params", "embedding_params",
    "nlp_num_params", "nlp_cell_params", "PTB_VOCAB", "WIKITEXT2_VOCAB", "NLP_EMBEDDING", "NLP_HIDDEN",
]


def check_semantics(semantics: Any) -> str:
    """The canonical name of ``semantics`` (old names accepted); ValueError otherwise."""
    return get_semantics(semantics).name


def _linear(i: int, o: int, bias: bool = True) -> int:
    return i * o + (o if bias else 0)


def _layer_norm(d: int) -> int:
    return 2 * d


def _attention_params(layer: LayerPlan, H: int) -> int:
    return 3 * _linear(H, H) + _linear(H, H) + _layer_norm(H)


def _transform_params(layer: LayerPlan, H: int) -> int:
    return _linear(H, H)  # one input Linear; no output projection, no LayerNorm


def _dsc_params(layer: LayerPlan, H: int) -> int:
    # half the width goes through attention heads, half through a dynamic conv
    k = int(layer.kernel or 0)
    heads = max(layer.heads // 2, 1)
    A = H // 2
    n = 3 * _linear(H, A)
    n += H * k + H * A + A  # depthwise (no bias), pointwise (no bias), one shared bias
    n += _linear(A, heads * k)  # conv-kernel generator
    n += _linear(H, A)  # conv-output projection
    n += _linear(H, H) + _layer_norm(H)  # attention output over the concatenation
    return n


#: parameters of each token mixing, its output projection included (WMA adds one H x H
#: weight to scaled dot-product attention)
_MIXING_PARAMS: dict[str, Callable[[LayerPlan, int], int]] = {
    "SDP": _attention_params,
    "WMA": lambda layer, H: _attention_params(layer, H) + H * H,
    "DFT": _transform_params,
    "DCT": _transform_params,
    "DSC": _dsc_params,
}


def operation_params(layer: LayerPlan, hidden: int) -> int:
    """Parameters of one layer's token mixing, its output projection included."""
    return _MIXING_PARAMS[layer.mixing](layer, hidden)


# -- analytic FLOPs (matrix products only; a multiply-add counts 2) ------------------------
def _attention_flops(layer: LayerPlan, H: int, batch: int, seq: int) -> int:
    N = batch * seq
    return 4 * 2 * N * H * H + 2 * 2 * batch * seq * seq * H  # q, k, v, output; QK^T and PV over all heads


def _dft_flops(layer: LayerPlan, H: int, batch: int, seq: int) -> int:
    return 2 * batch * seq * H * H  # the input Linear (FFTs are not counted)


def _dct_flops(layer: LayerPlan, H: int, batch: int, seq: int) -> int:
    d = H // layer.heads
    return _dft_flops(layer, H, batch, seq) + 2 * batch * layer.heads * (seq * seq * d + seq * d * d)


def _dsc_flops(layer: LayerPlan, H: int, batch: int, seq: int) -> int:
    N = batch * seq
    lin = lambda i, o: 2 * N * i * o  # noqa: E731
    A, h, k = H // 2, max(layer.heads // 2, 1), int(layer.kernel or 0)
    total = 3 * lin(H, A) + lin(A, h * k) + lin(H, A) + lin(H, H)  # q,k,v, kernel gen, conv out, output
    total += 2 * 2 * batch * seq * seq * A  # attention half
    return total + 2 * N * H * k + lin(H, A)  # depthwise + pointwise convolutions


_MIXING_FLOPS: dict[str, Callable[[LayerPlan, int, int, int], int]] = {
    "SDP": _attention_flops,
    "WMA": lambda layer, H, batch, seq: _attention_flops(layer, H, batch, seq) + 2 * batch * seq * H * H,
    "DFT": _dft_flops,
    "DCT": _dct_flops,
    "DSC": _dsc_flops,
}


def mixing_flops(layer: LayerPlan, hidden: int, batch: int, seq: int) -> int:
    """Analytic forward FLOPs of one layer's token mixing (its feed-forward excluded)."""
    return _MIXING_FLOPS[layer.mixing](layer, hidden, batch, seq)


def feed_forward_params(hidden: int, widths: tuple[int, ...]) -> int:
    """H -> widths[0] -> ... -> widths[-1] -> H, plus the closing LayerNorm."""
    dims = (hidden, *widths, hidden)
    return sum(_linear(a, b) for a, b in zip(dims[:-1], dims[1:])) + _layer_norm(hidden)


def embedding_params(hidden: int) -> int:
    n = (VOCAB_SIZE + MAX_POSITIONS + TYPE_VOCAB) * EMBEDDING_SIZE + _layer_norm(EMBEDDING_SIZE)
    if hidden != EMBEDDING_SIZE:
        n += _linear(EMBEDDING_SIZE, hidden)
    return n


def plan_num_params(plan: ModelPlan, *, embeddings: bool = True) -> int:
    """Parameter count of a :class:`ModelPlan` (embeddings, projection and encoder)."""
    n = embedding_params(plan.hidden) if embeddings else 0
    for layer in plan.layers:
        n += operation_params(layer, plan.hidden) + feed_forward_params(plan.hidden, layer.ff_widths)
    return n


def flexibert_num_params(arch: Arch | Any, semantics: SemanticsLike = DEFAULT_SPEC_SEMANTICS) -> int:
    """Parameter count of the FlexiBERT encoder (embeddings + layers, no task heads)
    under ``semantics`` (``"as_trained"``, ``"as_specified"``/``"faithful"`` - the
    default, as in 0.1 - or ``"authors"``/``"seed_compat"``)."""
    return plan_num_params(get_semantics(semantics).plan(Arch.coerce(arch)))


# -- NAS-Bench-NLP -----------------------------------------------------------------------
NLP_EMBEDDING = 400
NLP_HIDDEN = (600, 600, 400)  # the last cell's width equals the embedding (tied decoder)
PTB_VOCAB = 10_000
WIKITEXT2_VOCAB = 33_278


def nlp_cell_params(recipe: Any, input_size: int, hidden_size: int) -> int:
    """Parameters of one recipe cell: one weight per linear input plus one bias."""
    r = parse_recipe(recipe)
    n = 0
    for _, op, inputs in r.nodes:
        if op in WEIGHTED_OPS:
            n += sum((input_size if i == INPUT else hidden_size) * hidden_size for i in inputs) + hidden_size
    return n


def nlp_num_params(recipe: Any, vocab_size: int = PTB_VOCAB) -> int:
    """Parameter count of the NAS-Bench-NLP language model for ``recipe``.

    Embedding (vocab x 400) tied with the decoder, so the decoder adds only its bias;
    three stacked cells of widths 600, 600, 400.
    """
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise InvalidArgumentError(f"vocab_size = {vocab_size!r} must be a positive integer (PTB 10000, WikiText-2 33278)")
    n = vocab_size * NLP_EMBEDDING + vocab_size
    inp = NLP_EMBEDDING
    for h in NLP_HIDDEN:
        n += nlp_cell_params(recipe, inp, h)
        inp = h
    return n
