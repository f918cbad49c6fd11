"""Semantics: which concrete model an architecture string stands for.

A FlexiBERT arch such as ``256/LT-DCT-h2-512x3/SA-SDP-h4-1024x1`` does not pin down one
model. Three different models have been built from the same 500 arch strings, and
the benchmark's numbers belong to different ones (see ``docs/errata.md``):

* :data:`AUTHORS` (alias ``"seed_compat"``) - the authors' PyTorch proxy model
  (``training-free-nas/code/modeling_electra.py``), on which the stored zero-cost
  proxies were computed. It ignores the arch's hidden size (always 256) and
  feed-forward width (always 1024); LT layers have no residual and an unnormalised
  DCT; no operation reads the attention mask; the proxy notebook left dropout on and
  backpropagated ``ones_like(last_hidden_state)``.
* :data:`AS_TRAINED` - what the authors' TensorFlow code actually pretrained and
  finetuned, established by executing its graph construction for all 500 archs
  (``tests/reference/tf_as_trained.py``). Operation types are compared with ``is`` in
  that code, so every layer became scaled dot-product attention with the layer's
  head count, and the first feed-forward layer is H -> 4H whatever
  ``feed_forward_dimension`` says. This is the model behind the GLUE scores.
* :data:`AS_SPECIFIED` (alias ``"faithful"``) - the arch as the paper's Table 1
  describes it: every operation as named, the arch's H and F. Nobody has trained it
  yet; the builders can (``build_entry(..., semantics="as_specified")``).

A :class:`Semantics` owns every choice that differs between these models: widths,
operations, the LT residual, the DCT normalisation, masking, LayerNorm eps, init and
dropout, plus the proxy protocol (train/eval mode, the gradient objective). Everything
else - the torch model (:mod:`nasbench_bert.models`), the analytic parameter counts
(:mod:`nasbench_bert.sizes`), FLOPs and the proxy engine - reads the per-arch
:class:`ModelPlan` made here, so there is one place that says what each semantics
means. This module is pure Python: ``import nasbench_bert`` stays torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Literal

from .errors import InvalidArgumentError
from .spaces.flexibert import Arch, ArchLike, Layer
from .checks import check_choice
from .vocabulary import (
    FF_RULES, GENERATOR_RULES, INIT_RULES, KERNEL_OPERATIONS, MIXING_RULES, FFRule, GeneratorRule, InitRule,
    Mixing, MixingRule,
)

EMBEDDING_SIZE = 128
VOCAB_SIZE = 30522
MAX_POSITIONS = 512
TYPE_VOCAB = 2

Objective = Literal["ones", "projection"]
NLPObjective = Literal["rnn_output", "decoder_logits"]


class ObjectiveRule(StrEnum):
    """:data:`Objective` as members, for the proxies that branch on it (a misspelt member
    fails where a misspelt string would take the other branch)."""

    ONES = "ones"
    PROJECTION = "projection"


class NLPObjectiveRule(StrEnum):
    """:data:`NLPObjective` as members."""

    RNN_OUTPUT = "rnn_output"
    DECODER_LOGITS = "decoder_logits"


@dataclass(frozen=True)
class LayerPlan:
    """One encoder layer as built: its token mixing and its feed-forward stack.

    ``ff_widths`` are the output widths of the feed-forward Linear layers before the
    final projection back to the hidden size (so ``H -> ff_widths[0] -> ... -> H``).
    """

    mixing: Mixing
    heads: int
    kernel: int | None
    ff_widths: tuple[int, ...]


@dataclass(frozen=True)
class ModelPlan:
    """The concrete model of one arch under one semantics (what every consumer reads)."""

    semantics: "Semantics"
    arch: Arch
    hidden: int
    layers: tuple[LayerPlan, ...]
    embedding_size: int = EMBEDDING_SIZE

    @property
    def block_widths(self) -> tuple[int, ...]:
        """d_z^l of the ETAS paper: the output width of each of the L blocks."""
        return tuple(self.hidden for _ in self.layers)


@dataclass(frozen=True)
class ProxyProtocol:
    """How zero-cost proxies are computed on this semantics' model.

    ``train_mode``: dropout active during the proxy pass (the authors' notebook never
    called ``eval()``). ``objective``: what the gradient proxies backpropagate -
    ``"ones"`` is ``backward(ones_like(last_hidden_state))``, which vanishes in exact
    arithmetic behind the final LayerNorm (kept only to reproduce the stored table);
    ``"projection"`` is ``sum(P * last_hidden_state)`` for a fixed seeded Gaussian P,
    whose gradient reaches every layer. ``nlp_objective``: NAS-Bench-NLP's Jacobian
    and saliency proxies differentiate the last RNN layer's output (the authors'
    notebook) or the decoder logits.
    """

    train_mode: bool
    objective: Objective
    nlp_objective: NLPObjective


@dataclass(frozen=True)
class Semantics:
    """Everything that makes one arch string into one concrete model (see module doc)."""

    name: str
    aliases: tuple[str, ...]
    summary: str
    #: a fixed hidden size for every arch, or None for the arch's own
    fixed_hidden: int | None
    #: "arch": F x num_ff; "fixed": ``fixed_ff`` x num_ff; "electra_tf": 4H, then F x (num_ff - 1);
    #: "first_layer": the first layer's F x num_ff in every layer (the authors' code given
    #: ``intermediate_size`` = layer 0's F, as the NSC authors' ``eval_flexibert.py`` builds it)
    ff_rule: FFRule
    fixed_ff: int | None
    #: "arch": the operation named; "sdp": scaled dot-product attention everywhere
    mixing_rule: MixingRule
    lt_residual: bool
    #: None: torch-dct's unnormalised DCT-II (2 sum x cos); "ortho": orthonormal
    dct_norm: Literal["ortho"] | None
    #: the authors' proxy model carries an unused softmax in LT layers (hooks see it)
    lt_softmax: bool
    attention_mask: bool
    layer_norm_eps: float
    #: "normal": N(0, 0.02) (Hugging Face); "truncated_normal": N(0, 0.02) cut at 2 std (TF ELECTRA)
    init: InitRule
    init_std: float
    zero_padding_row: bool
    hidden_dropout: float
    attention_dropout: float
    protocol: ProxyProtocol
    #: the generator's widths: "quarter" scales H and F by 1/4, "electra_tf" scales H
    #: only (the TF code's feed-forward layers after the first keep the arch's F)
    generator_rule: GeneratorRule

    def __post_init__(self) -> None:
        for field_name, allowed in (("ff_rule", FF_RULES), ("mixing_rule", MIXING_RULES), ("init", INIT_RULES),
                                    ("generator_rule", GENERATOR_RULES)):
            check_choice(f"Semantics.{field_name}", getattr(self, field_name), allowed)

    def __str__(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        """The name, for the three published semantics; for a variant made with
        ``dataclasses.replace`` (an ablation), the name plus a digest of every field, so
        results and caches of a variant are never taken for the original's."""
        if SEMANTICS.get(self.name) == self:
            return self.name
        import hashlib

        return f"{self.name}~{hashlib.sha1(repr(self).encode()).hexdigest()[:10]}"

    # -- the one mapping from an arch to a model ----------------------------------------
    def plan(self, arch: ArchLike, *, hidden: int | None = None) -> ModelPlan:
        """The model of ``arch`` under these semantics. ``hidden`` overrides the hidden
        size (the ELECTRA generator uses :meth:`generator_plan`)."""
        a = Arch.coerce(arch)
        H = hidden or self.fixed_hidden or a.hidden_size
        layers = []
        mixing_of = _MIXING_RULES[self.mixing_rule]
        ff_of = _FF_RULES[self.ff_rule]
        for layer in a.layers:
            mixing, kernel = mixing_of(layer)
            ff = ff_of(self, a, layer, H)
            layers.append(LayerPlan(mixing, layer.num_operation_heads, kernel, ff))
        return ModelPlan(self, a, H, tuple(layers))

    def generator_plan(self, arch: ArchLike) -> ModelPlan:
        """The ELECTRA generator: the discriminator's layer list at 1/4 of its width."""
        return _GENERATOR_RULES[self.generator_rule](self, arch, self.plan(arch))


def _mixing_as_named(layer: Layer) -> tuple[Mixing, int | None]:
    if layer.operation_type in KERNEL_OPERATIONS:
        return "DSC", int(layer.operation_parameter)
    return str(layer.operation_parameter), None  # type: ignore[return-value]


#: ``Semantics.mixing_rule`` -> the token mixing (and kernel) a layer is built with
_MIXING_RULES: dict[str, Callable[[Layer], tuple[Mixing, int | None]]] = {
    "arch": _mixing_as_named,
    "sdp": lambda layer: ("SDP", None),
}

#: ``Semantics.ff_rule`` -> the feed-forward widths of a layer (see the field's comment)
_FF_RULES: dict[str, Callable[["Semantics", Arch, Layer, int], tuple[int, ...]]] = {
    "arch": lambda sem, a, layer, H: (layer.feed_forward_dimension,) * layer.num_feed_forward,
    "fixed": lambda sem, a, layer, H: (int(sem.fixed_ff or 0),) * layer.num_feed_forward,
    "first_layer": lambda sem, a, layer, H: (a.layers[0].feed_forward_dimension,) * layer.num_feed_forward,
    "electra_tf": lambda sem, a, layer, H: (4 * H,) + (layer.feed_forward_dimension,) * (layer.num_feed_forward - 1),
}



def _quarter_generator(sem: "Semantics", arch: ArchLike, disc: ModelPlan) -> ModelPlan:
    layers = tuple(
        LayerPlan(lp.mixing, lp.heads, lp.kernel, tuple(w // 4 for w in lp.ff_widths)) for lp in disc.layers
    )
    return ModelPlan(sem, disc.arch, disc.hidden // 4, layers)


#: ``Semantics.generator_rule`` -> the generator's plan ("quarter" scales H and F by 1/4,
#: "electra_tf" plans the arch at H/4 with the arch's own F)
_GENERATOR_RULES: dict[str, Callable[["Semantics", ArchLike, ModelPlan], ModelPlan]] = {
    "quarter": _quarter_generator,
    "electra_tf": lambda sem, arch, disc: sem.plan(arch, hidden=disc.hidden // 4),
}


_ELECTRA = dict(layer_norm_eps=1e-12, init_std=0.02, hidden_dropout=0.1, attention_dropout=0.1)

AUTHORS = Semantics(
    name="authors",
    aliases=("seed_compat",),
    summary="the authors' PyTorch proxy model (modeling_electra.py): H = 256 and F = 1024 for every arch; "
            "the model behind the stored proxy table",
    fixed_hidden=256, ff_rule="fixed", fixed_ff=1024, mixing_rule="arch",
    lt_residual=False, dct_norm=None, lt_softmax=True, attention_mask=False,
    init="normal", zero_padding_row=True,
    protocol=ProxyProtocol(train_mode=True, objective="ones", nlp_objective="rnn_output"),
    generator_rule="quarter",
    **_ELECTRA,
)

AS_TRAINED = Semantics(
    name="as_trained",
    aliases=(),
    summary="what the authors' TensorFlow code built and trained: scaled dot-product attention in every layer, "
            "feed-forward H -> 4H -> F ... -> H; the model behind the GLUE scores",
    fixed_hidden=None, ff_rule="electra_tf", fixed_ff=None, mixing_rule="sdp",
    lt_residual=True, dct_norm="ortho", lt_softmax=False, attention_mask=True,
    init="truncated_normal", zero_padding_row=False,
    protocol=ProxyProtocol(train_mode=False, objective="projection", nlp_objective="decoder_logits"),
    generator_rule="electra_tf",
    **_ELECTRA,
)

AS_SPECIFIED = Semantics(
    name="as_specified",
    aliases=("faithful",),
    summary="the arch as the paper's Table 1 specifies it: every operation as named, the arch's own H and F",
    fixed_hidden=None, ff_rule="arch", fixed_ff=None, mixing_rule="arch",
    lt_residual=True, dct_norm="ortho", lt_softmax=False, attention_mask=True,
    init="truncated_normal", zero_padding_row=False,
    protocol=ProxyProtocol(train_mode=False, objective="projection", nlp_objective="decoder_logits"),
    generator_rule="quarter",
    **_ELECTRA,
)

#: every semantics, by canonical name
SEMANTICS: dict[str, Semantics] = {s.name: s for s in (AUTHORS, AS_TRAINED, AS_SPECIFIED)}
_BY_NAME: dict[str, Semantics] = {n: s for s in SEMANTICS.values() for n in (s.name, *s.aliases)}
#: canonical names and the old names that still work
SEMANTICS_NAMES: tuple[str, ...] = tuple(_BY_NAME)

SemanticsLike = Semantics | str

#: where each semantics' parameter count lives in the FlexiBERT table and the result
#: objects: ``num_params_<semantics>`` (schema 2; docs/data.md, "Column names"). Data
#: release 1 called two of them ``num_params`` and ``num_params_seed_compat``; those names
#: answer with a ``DeprecationWarning`` until 0.4 (:mod:`nasbench_bert.data.columns`)
PARAM_COLUMNS: dict[str, str] = {name: f"num_params_{name}" for name in ("as_specified", "authors", "as_trained")}

# -- the default-semantics policy, stated once ---------------------------------------------
#: the default where code reproduces or measures the benchmark's models (the ELECTRA
#: pretraining model and its FLOPs, finetuning FLOPs, proxies, hardware, results, the
#: surrogate's features): the model the authors' code trained, which the benchmark's
#: numbers are of
DEFAULT_SEMANTICS = AS_TRAINED
#: the default where code builds or counts an arch as written (``build_flexibert``,
#: ``FlexiBERTEncoder``, ``flexibert_num_params``, ``flexibert_flops``): the paper's
#: Table 1 reading of the arch string
DEFAULT_SPEC_SEMANTICS = AS_SPECIFIED


def get_semantics(value: Any) -> Semantics:
    """A :class:`Semantics` from itself, its name or an old alias (``"faithful"``,
    ``"seed_compat"``); anything else raises ``ValueError`` naming the allowed values."""
    if isinstance(value, Semantics):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    raise InvalidArgumentError(
        f"semantics = {value!r} is not allowed; allowed values: {list(SEMANTICS)} "
        f"(old names {[a for s in SEMANTICS.values() for a in s.aliases]} still work)"
    )
