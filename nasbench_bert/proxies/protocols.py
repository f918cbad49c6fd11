"""Each published proxy's own protocol: the model its paper built, the batch, the seed.

The papers that scored FlexiBERT-500 each built the 500 models their own way, and fed
them different batches; a proxy's published number belongs to that protocol, not to one
of this package's semantics. A :class:`Protocol` names the three things a sweep needs
to redo a paper's run, and :func:`nasbench_bert.proxies.compute` takes it::

    from nasbench_bert import proxies
    from nasbench_bert.proxies.protocols import W_PCA_NSC
    proxies.compute(range(500), ["w_pca"], protocol=W_PCA_NSC)

* ``semantics``: the model construction, as a :class:`~nasbench_bert.semantics.Semantics`
  (one of the three, or a variant such as :data:`NSC_EVAL`), which also fixes train or
  eval mode;
* ``batch``: the input batch (:class:`~nasbench_bert.proxies.inputs.BatchSpec`);
* ``seed``: ``torch.manual_seed`` right before the model is built.

Where a paper's batch came from data this machine cannot fetch (OpenWebText,
WikiText-2), the protocol keeps the paper's source (``hf:openwebtext``: the code path
works where the Hub is reachable, or with a local file in the same format via
:meth:`Protocol.with_batch`), and ``substitute`` says what stands in for it here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..checks import check_seed
from ..errors import InvalidArgumentError
from ..semantics import AS_SPECIFIED, AUTHORS, ProxyProtocol, Semantics
from .inputs import BatchSpec


@dataclass(frozen=True)
class Protocol:
    """One paper's way of computing a proxy (see the module doc)."""

    name: str
    paper: str
    proxies: tuple[str, ...]
    semantics: Semantics
    batch: BatchSpec
    seed: int = 0
    #: what stands in for the paper's batch on a machine without its data ("" if nothing)
    substitute: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.semantics, Semantics):
            raise InvalidArgumentError(f"semantics = {self.semantics!r} is not allowed; allowed: a Semantics object")
        if not isinstance(self.batch, BatchSpec):
            raise InvalidArgumentError(f"batch = {self.batch!r} is not allowed; allowed: a BatchSpec")
        check_seed("seed", self.seed, none=False)

    def with_batch(self, batch: BatchSpec | None = None, **fields: object) -> "Protocol":
        """The same protocol on another batch: a whole :class:`BatchSpec`, or the
        paper's batch with some fields changed (``with_batch(source="text:owt.txt")``,
        ``with_batch(batch_size=16, seq_len=128)``)."""
        if batch is not None and fields:
            raise InvalidArgumentError("pass either batch or batch fields, not both")
        if batch is None:
            allowed = {f.name for f in dataclasses.fields(BatchSpec)}
            unknown = sorted(set(fields) - allowed)
            if unknown:
                raise InvalidArgumentError(f"batch field(s) {unknown} not allowed; allowed: {sorted(allowed)}")
            batch = dataclasses.replace(self.batch, **fields)  # type: ignore[arg-type]
        return dataclasses.replace(self, batch=batch)


#: The NSC authors' model for their FlexiBERT baselines (``ranking/eval_flexibert.py``,
#: ``eval_all_zcps.py``): the authors' ``modeling_electra.py`` given the arch's own
#: ``hidden_size`` and layer 0's feed-forward width as ``intermediate_size`` (so every
#: layer's stack is F_0 wide), in eval mode. Everything else is the ``authors`` model.
NSC_EVAL = dataclasses.replace(
    AUTHORS, name="nsc_eval", aliases=(),
    summary="the authors' PyTorch model at the arch's own H with layer 0's feed-forward width in every layer, "
            "eval mode (the NSC authors' eval_flexibert.py)",
    fixed_hidden=None, ff_rule="first_layer", fixed_ff=None,
    protocol=ProxyProtocol(train_mode=False, objective="ones", nlp_objective="rnn_output"),
)

#: the paper's OpenWebText batch: the first documents, ELECTRA-small's tokenizer, 512 tokens
OPENWEBTEXT_128x512 = BatchSpec(source="hf:openwebtext", batch_size=128, seq_len=512, seed=0)

NSC = Protocol(
    name="nsc", paper="Zhu, Zhao & Lu 2026 (Neural Spectral Capacity)", proxies=("nsc", "zerolm"),
    semantics=AS_SPECIFIED, batch=BatchSpec(), seed=0,
    note="a closed form on the spec (ranking/compute_flexibert.py): no model and no batch; the semantics is unused",
)

W_PCA_NSC = Protocol(
    name="w_pca_nsc", paper="Wang 2025 (W-PCA), as re-run by the NSC authors", proxies=("w_pca_first",),
    semantics=NSC_EVAL, batch=BatchSpec(source="uniform", batch_size=4, seq_len=64, seed=0), seed=42,
    note="torch.manual_seed(42) before the model; random ids uniform on the vocabulary, 4 x 64, seed 0; "
         "eval mode; the first feed-forward Linear of each layer (intermediate.dense_in); threshold 0.99",
)

LPZERO = Protocol(
    name="lpzero", paper="Dong et al. 2024 (LPZero)", proxies=("lpzero",),
    semantics=AUTHORS, batch=OPENWEBTEXT_128x512, seed=0,
    substitute="random tokens (OpenWebText cannot be fetched here)",
    note="the authors' model at its default config, train mode; the paper seeds nothing per arch (seed 0 here)",
)

SWAP = Protocol(
    name="swap", paper="Peng et al. 2026 (SWAP-Score)", proxies=("swap",),
    semantics=AUTHORS, batch=OPENWEBTEXT_128x512, seed=0,
    substitute="random tokens (OpenWebText cannot be fetched here)",
    note="the authors' model at its default config, train mode, no seed; 128 documents truncated at 512 and "
         "padded to the longest (OpenWebText documents fill 512)",
)

#: every paper protocol, by name
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (NSC, W_PCA_NSC, LPZERO, SWAP)}


def get_protocol(value: object) -> Protocol:
    """A :class:`Protocol` from itself or its name; anything else raises naming the allowed values."""
    if isinstance(value, Protocol):
        return value
    if isinstance(value, str) and value in PROTOCOLS:
        return PROTOCOLS[value]
    raise InvalidArgumentError(f"protocol = {value!r} is not allowed; allowed values: {list(PROTOCOLS)} or a Protocol")
