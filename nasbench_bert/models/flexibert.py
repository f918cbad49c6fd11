"""FlexiBERT encoders in PyTorch, ELECTRA heads, and GLUE heads - built from a plan.

Every model is built from the :class:`~nasbench_bert.semantics.ModelPlan` that
:mod:`nasbench_bert.semantics` makes for an arch, so one arch string gives the model
of whichever semantics is asked for (``as_trained``, ``as_specified``/``faithful`` or
``authors``/``seed_compat``), and parameter counts equal
:func:`nasbench_bert.sizes.flexibert_num_params` for the same semantics.

Layers (H the plan's hidden size):

* embeddings: word 30522 x 128, position 512 x 128, token type 2 x 128, LayerNorm(128),
  dropout, then Linear 128 -> H when H != 128;
* SDP / WMA: query/key/value H -> H; WMA adds a bias-free H x H map on the projected
  query; attention-probability dropout; output Linear H -> H, dropout, residual,
  LayerNorm;
* DFT / DCT (LT): one Linear H -> H, then per head the real part of an unnormalised
  2-D DFT, or a 2-D DCT-II (orthonormal, or torch-dct's unnormalised one), over
  (sequence, head dim); a residual or not, as the semantics says; no output
  projection and no LayerNorm;
* DSC: ConvBERT-style mixed attention. Half the width (A = H/2) is self-attention with
  max(heads // 2, 1) heads; the other half a span-based dynamic convolution (separable
  conv H -> A, kernel generator A -> heads*k, conv-output Linear H -> A); both halves are
  concatenated and projected H -> H, dropout, residual, LayerNorm;
* feed-forward: H -> w_1 -> ... -> w_n -> H with GELU after each hidden layer, dropout,
  residual, LayerNorm.

Under ``authors`` semantics the module tree, the order in which modules are created
and initialised, and the order of dropout calls mirror the authors'
``modeling_electra.py`` exactly, so ``torch.manual_seed(s)`` followed by
:func:`build_flexibert` gives the reference model's weights bit for bit, and a
forward pass in train mode draws the same dropout masks (tested against that code).

The blocks (embeddings, token mixings, feed-forward) live in :mod:`.operations`; this
module assembles them - the encoder, its initialisation, the ELECTRA and GLUE heads - and
re-exports the blocks, so ``from nasbench_bert.models.flexibert import SelfAttention``
keeps working.
"""

from __future__ import annotations

from typing import Any, Callable

from .._torch import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_seed
from ..errors import InvalidArgumentError
from ..semantics import (
    DEFAULT_SEMANTICS, DEFAULT_SPEC_SEMANTICS, EMBEDDING_SIZE, LayerPlan, ModelPlan, Semantics, SemanticsLike,
    get_semantics,
)
from ..spaces.flexibert import Arch, ArchLike
from .operations import (
    _TRUNCATED_INIT, ATTENTION_IMPLS, DSCOperation, Embeddings, FeedForward, LTOperation, SAOperation, SelfAttention,
    _extended_mask, check_attention, dct_matrix, make_operation,
)

__all__ = [
    "ATTENTION_IMPLS", "DSCOperation", "Embeddings", "FeedForward", "LTOperation", "SAOperation", "SelfAttention",
    "check_attention", "dct_matrix", "make_operation",
    "EncoderLayer", "init_weights", "FlexiBERTEncoder", "build_flexibert",
    "ElectraGeneratorHead", "ElectraDiscriminatorHead", "ElectraPair", "HEADS", "SequenceClassifier",
]


class EncoderLayer(nn.Module):
    def __init__(self, layer: LayerPlan, hidden: int, sem: Semantics):
        super().__init__()
        self.spec = layer
        self.operation = make_operation(layer, hidden, sem)
        self.feed_forward = FeedForward(hidden, layer.ff_widths, sem.layer_norm_eps, sem.hidden_dropout)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        return self.feed_forward(self.operation(x, ext_mask, mask))


def init_weights(module: nn.Module, sem: Semantics) -> None:
    """ELECTRA's initialisation: weights N(0, 0.02) (truncated at 2 std for the TF
    semantics), biases 0, LayerNorm 1 / 0, a zero padding row where the reference has
    one. Applied with ``model.apply`` (children first), in the reference's order."""
    std = sem.init_std

    def draw(w: torch.Tensor) -> None:
        w.normal_(0.0, std)
        if _TRUNCATED_INIT[sem.init] and not w.is_meta:  # TF's truncated_normal: redraw values beyond 2 std
            flat = w.view(-1)
            bad = (flat.abs() > 2 * std).nonzero().squeeze(1)
            while bad.numel():
                flat[bad] = torch.randn(bad.numel(), dtype=w.dtype, device=w.device) * std
                bad = bad[flat[bad].abs() > 2 * std]

    with torch.no_grad():
        if isinstance(module, nn.Linear):
            draw(module.weight)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            draw(module.weight)
            if module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
        elif isinstance(module, nn.Conv1d) and _TRUNCATED_INIT[sem.init]:  # else drawn at construction
            draw(module.weight)


class FlexiBERTEncoder(nn.Module):
    """Embeddings + heterogeneous encoder layers. ``forward`` returns the last hidden state
    (B, T, H); with ``output_hidden_states`` also the embedding output and every layer's.

    ``arch`` is an arch (with ``semantics``) or a :class:`ModelPlan`. Weights are
    initialised the way the semantics' reference does (:func:`init_weights`).
    """

    def __init__(self, arch: ArchLike | ModelPlan, semantics: SemanticsLike = DEFAULT_SPEC_SEMANTICS, *,
                 shared_embeddings: Embeddings | None = None, init: bool = True):
        super().__init__()
        plan = arch if isinstance(arch, ModelPlan) else get_semantics(semantics).plan(Arch.coerce(arch))
        sem = plan.semantics
        self.plan, self.arch, self.semantics = plan, plan.arch, sem.name
        self.hidden_size = H = plan.hidden
        self.use_mask = sem.attention_mask
        self.embeddings = Embeddings(H, sem.layer_norm_eps, sem.hidden_dropout, shared=shared_embeddings,
                                     padding_idx=0 if sem.zero_padding_row else None)
        self.layers = nn.ModuleList(EncoderLayer(layer, H, sem) for layer in plan.layers)
        if init:
            keep = set() if shared_embeddings is None else {id(m) for m in shared_embeddings.modules()} - {
                id(m) for m in (shared_embeddings.project, shared_embeddings.dropout)}
            self.apply(lambda m: None if id(m) in keep else init_weights(m, sem))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, output_hidden_states: bool = False) -> Any:
        x = self.embeddings(input_ids, token_type_ids)
        mask = attention_mask if self.use_mask else None  # the authors' model reads no mask
        ext = _extended_mask(mask, x.dtype)
        states = [x]
        for layer in self.layers:
            x = layer(x, ext, mask)
            states.append(x)
        return (x, states) if output_hidden_states else x


def build_flexibert(arch: ArchLike, semantics: SemanticsLike = DEFAULT_SPEC_SEMANTICS, seed: int | None = 0) -> FlexiBERTEncoder:
    """The FlexiBERT encoder of ``arch`` under ``semantics``, initialised from ``seed``.

    ``sum(p.numel() for p in model.parameters())`` equals
    :func:`nasbench_bert.sizes.flexibert_num_params` for the same semantics. With
    ``semantics="authors"`` the weights equal the authors' ``ElectraModel`` built after
    ``torch.manual_seed(seed)``, bit for bit. The global RNG is left untouched.
    """
    a = Arch.coerce(arch)
    sem = get_semantics(semantics)
    seed = check_seed("seed", seed)
    if seed is not None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return FlexiBERTEncoder(a, sem)
    return FlexiBERTEncoder(a, sem)


# -- ELECTRA ---------------------------------------------------------------------------------
class ElectraGeneratorHead(nn.Module):
    """MLM head: H_g -> 128, GELU, LayerNorm, then scores against the tied word embeddings
    (``transformers.ElectraForMaskedLM``'s generator_predictions + generator_lm_head)."""

    def __init__(self, hidden: int, word: nn.Embedding, eps: float = 1e-12):
        super().__init__()
        self.dense = nn.Linear(hidden, EMBEDDING_SIZE)
        self.norm = nn.LayerNorm(EMBEDDING_SIZE, eps=eps)
        self.word = word
        self.bias = nn.Parameter(torch.zeros(word.num_embeddings))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(F.gelu(self.dense(h))) @ self.word.weight.T + self.bias


class ElectraDiscriminatorHead(nn.Module):
    """Replaced-token head: Linear H -> H, GELU, Linear H -> 1 (ELECTRA's
    discriminator_predictions)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.prediction = nn.Linear(hidden, 1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.prediction(F.gelu(self.dense(h))).squeeze(-1)


class ElectraPair(nn.Module):
    """ELECTRA generator + discriminator sharing the embedding tables and their LayerNorm
    (ELECTRA's ``untied_generator_embeddings=False``; the generator keeps its own
    projection to its width).

    The generator has the discriminator's layer list at 1/4 of its hidden size, as in
    ELECTRA-Small; its feed-forward widths follow the semantics
    (:meth:`~nasbench_bert.semantics.Semantics.generator_plan`). Defaults are the
    benchmark's training model (``as_trained``).
    """

    def __init__(self, arch: ArchLike, semantics: SemanticsLike = DEFAULT_SEMANTICS, seed: int | None = 0):
        super().__init__()
        a = Arch.coerce(arch)
        sem = get_semantics(semantics)
        seed = check_seed("seed", seed)
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            self.discriminator = FlexiBERTEncoder(sem.plan(a))
            word = self.discriminator.embeddings.word
            gplan = sem.generator_plan(a)
            self.generator = FlexiBERTEncoder(gplan, shared_embeddings=self.discriminator.embeddings)
            self.generator_head = ElectraGeneratorHead(gplan.hidden, word, sem.layer_norm_eps)
            self.discriminator_head = ElectraDiscriminatorHead(self.discriminator.hidden_size)
            for m in (self.generator_head, self.discriminator_head):
                m.apply(lambda mod: None if mod is word else init_weights(mod, sem))

    def generator_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                         token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        return self.generator_head(self.generator(input_ids, attention_mask, token_type_ids))

    def discriminator_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                             token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        return self.discriminator_head(self.discriminator(input_ids, attention_mask, token_type_ids))


#: ``head`` -> the classification head on the first token (see :class:`SequenceClassifier`)
_HEADS: dict[str, Callable[[int, int, float], nn.Module]] = {
    "electra_tf": lambda H, n, p: nn.Sequential(nn.Dropout(p), nn.Linear(H, n)),
    "electra_hf": lambda H, n, p: nn.Sequential(nn.Dropout(p), nn.Linear(H, H), nn.GELU(), nn.Dropout(p),
                                                nn.Linear(H, n)),
}
HEADS = tuple(_HEADS)


class SequenceClassifier(nn.Module):
    """GLUE head on the first token (``num_labels=1`` is regression, for STS-B).

    ``head="electra_tf"``: dropout then one Linear H -> labels, as ELECTRA's TF
    finetuning code (which trained the benchmark) builds it. ``head="electra_hf"``:
    ``transformers.ElectraClassificationHead`` - dropout, Linear H -> H, GELU, dropout,
    Linear H -> labels.
    """

    def __init__(self, encoder: FlexiBERTEncoder, num_labels: int, dropout: float = 0.1, head: str = "electra_tf"):
        super().__init__()
        if head not in HEADS:
            raise InvalidArgumentError(f"head = {head!r} is not allowed; allowed values: {list(HEADS)}")
        H = encoder.hidden_size
        self.encoder, self.head_kind = encoder, head
        sem = encoder.plan.semantics  # normalised when the encoder was built
        self.head = _HEADS[head](H, num_labels, dropout)
        self.head.apply(lambda m: init_weights(m, sem))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.encoder(input_ids, attention_mask, token_type_ids)[:, 0])
