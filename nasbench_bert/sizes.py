"""Analytic parameter counts, without torch.

The lookup tables carry parameter counts, and ``import nasbench_bert`` must stay light,
so the counts are computed here from the layer shapes. :mod:`nasbench_bert.models`
builds the same layers in torch and the tests check, for every benchmark entry, that
``sum(p.numel() for p in model.parameters())`` equals these numbers.

Two FlexiBERT semantics exist (see DATA-NOTES and :mod:`nasbench_bert.models`):

* ``"faithful"`` - the arch as specified: its hidden size H and, per layer, a stack of
  ``num_feed_forward`` Linear layers of width ``feed_forward_dimension``;
* ``"seed_compat"`` - the model the paper's stored proxy table was computed on: H = 256
  and feed-forward width 1024 for every arch. Its counts equal the stored
  "Number of Parameters" column for all 500 benchmark archs.
"""

from __future__ import annotations

from typing import Any, Literal

from .spaces.flexibert import Arch, Layer
from .spaces.nlp import parse_recipe

Semantics = Literal["faithful", "seed_compat"]
SEMANTICS: tuple[str, ...] = ("faithful", "seed_compat")

VOCAB_SIZE = 30522
MAX_POSITIONS = 512
TYPE_VOCAB = 2
EMBEDDING_SIZE = 128
SEED_COMPAT_HIDDEN = 256
SEED_COMPAT_FF = 1024


def check_semantics(semantics: Any) -> str:
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics = {semantics!r} is not allowed; allowed values: {list(SEMANTICS)}")
    return str(semantics)


def _linear(i: int, o: int, bias: bool = True) -> int:
    return i * o + (o if bias else 0)


def _layer_norm(d: int) -> int:
    return 2 * d


def operation_params(layer: Layer, hidden: int) -> int:
    """Parameters of one layer's token-mixing operation, its output projection included."""
    H = hidden
    t = layer.operation_type
    if t == "SA":
        n = 3 * _linear(H, H) + _linear(H, H) + _layer_norm(H)
        if layer.operation_parameter == "WMA":
            n += H * H
        return n
    if t == "LT":
        return _linear(H, H)
    # DSC: half the width goes through attention heads, half through a dynamic conv
    k = int(layer.operation_parameter)
    heads = max(layer.num_operation_heads // 2, 1)
    A = H // 2
    n = 3 * _linear(H, A)
    n += H * k + H * A + A  # depthwise (no bias), pointwise (no bias), one shared bias
    n += _linear(A, heads * k)  # conv-kernel generator
    n += _linear(H, A)  # conv-output projection
    n += _linear(H, H) + _layer_norm(H)  # attention output over the concatenation
    return n


def feed_forward_params(hidden: int, width: int, depth: int) -> int:
    return _linear(hidden, width) + (depth - 1) * _linear(width, width) + _linear(width, hidden) + _layer_norm(hidden)


def embedding_params(hidden: int) -> int:
    n = (VOCAB_SIZE + MAX_POSITIONS + TYPE_VOCAB) * EMBEDDING_SIZE + _layer_norm(EMBEDDING_SIZE)
    if hidden != EMBEDDING_SIZE:
        n += _linear(EMBEDDING_SIZE, hidden)
    return n


def flexibert_num_params(arch: Arch | Any, semantics: str = "faithful") -> int:
    """Parameter count of the FlexiBERT encoder (embeddings + layers, no task heads)."""
    a = Arch.coerce(arch)
    check_semantics(semantics)
    H = a.hidden_size if semantics == "faithful" else SEED_COMPAT_HIDDEN
    n = embedding_params(H)
    for layer in a.layers:
        width = layer.feed_forward_dimension if semantics == "faithful" else SEED_COMPAT_FF
        n += operation_params(layer, H) + feed_forward_params(H, width, layer.num_feed_forward)
    return n


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
        if op == "linear":
            n += sum((input_size if i == "x" else hidden_size) * hidden_size for i in inputs) + hidden_size
    return n


def nlp_num_params(recipe: Any, vocab_size: int = PTB_VOCAB) -> int:
    """Parameter count of the NAS-Bench-NLP language model for ``recipe``.

    Embedding (vocab x 400) tied with the decoder, so the decoder adds only its bias;
    three stacked cells of widths 600, 600, 400.
    """
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise ValueError(f"vocab_size = {vocab_size!r} must be a positive integer (PTB 10000, WikiText-2 33278)")
    n = vocab_size * NLP_EMBEDDING + vocab_size
    inp = NLP_EMBEDDING
    for h in NLP_HIDDEN:
        n += nlp_cell_params(recipe, inp, h)
        inp = h
    return n
