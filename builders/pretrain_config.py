"""What a pretraining run is asked to do: :class:`PretrainConfig`, checked in full when it
is made.

Why apart: the config is the recipe's record. An entry stores it, a workdir's
checkpoints are tied to it (:func:`recipe_fields` leaves out the
:data:`EXECUTION_FIELDS`, which never change the trained model beyond rounding), and
:mod:`.recipe` and the CLI read it without the training loop. Every bad value is refused
with one line naming the field before a corpus or a model is loaded.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any

from nasbench_bert.checks import check_int, check_real
from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.semantics import get_semantics

from .accelerator import _check_choice, check_accelerator_fields
from .optimization import check_optimizer_fields


#: the smallest and largest WordPiece vocabularies a config accepts (5 special tokens
#: and a byte-level alphabet need ~100 entries; ELECTRA's is 30,522)
MIN_VOCAB, MAX_VOCAB = 100, 1_000_000

#: fields that say how a run is executed, not what it computes: they never change the
#: trained model beyond float rounding, so they are recorded in an entry but are not part
#: of its recipe key (:func:`recipe_fields`)
EXECUTION_FIELDS = ("checkpoint_every", "log_every", "attention", "adamw", "compile", "pretokenized", "corpus_cache",
                    "prefetch", "checkpoint_minutes")


@dataclass
class PretrainConfig:
    """ELECTRA pretraining settings; the defaults are the authors' recipe (module doc)."""

    steps: int = 100_000
    batch_size: int = 128
    seq_len: int = 128
    learning_rate: float = 5e-4
    warmup_steps: int = 10_000
    optimizer: str = "adam_weight_decay"  # "adam_weight_decay" (the authors') | "adamw" (bias-corrected)
    weight_decay: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-6
    max_grad_norm: float = 1.0
    replicas: int = 8                     # TPU cores: per-replica losses and clipping, summed gradients
    mask_prob: float = 0.15
    gen_weight: float = 1.0
    disc_weight: float = 50.0
    seed: int = 0
    semantics: str = "as_trained"  # see nasbench_bert.semantics
    corpus: str = "hf:openwebtext"
    max_documents: int | None = None
    vocab_size: int = 30522               # of a locally trained WordPiece (the Hub tokenizer has 30,522)
    checkpoint_every: int = 1000
    log_every: int = 100
    # -- accelerator options (docs/builders.md, "Accelerators"); the defaults are the plain fp32 loop
    precision: str = "fp32"               # "fp32" | "bf16" (autocast; fp32 master weights)
    attention: str = "eager"              # "eager" | "sdpa" (not with semantics="authors")
    adamw: str = "default"                # "default" | "foreach" | "fused": torch's AdamW kernels
    compile: bool = False                 # torch.compile the generator and discriminator encoders
    pretokenized: bool = False            # pack the corpus once into a memory-mapped .npy (builders.corpus)
    corpus_cache: str | None = None       # its folder (default: the user cache's corpora/); needs pretokenized
    prefetch: int = 0                     # batches a background thread makes ahead (0: made in the loop)
    checkpoint_minutes: float | None = None  # also checkpoint when this much wall time has passed

    def __post_init__(self) -> None:
        for f in ("steps", "batch_size", "seq_len", "checkpoint_every", "log_every"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InvalidArgumentError(f"{f} = {v!r} is not allowed; allowed: a positive integer")
        check_int("warmup_steps", self.warmup_steps, low=0)
        if not isinstance(self.mask_prob, (int, float)) or isinstance(self.mask_prob, bool) or not 0 < self.mask_prob < 1:
            raise InvalidArgumentError(f"mask_prob = {self.mask_prob!r} is not allowed; allowed: 0 < mask_prob < 1")
        if not 4 <= self.seq_len <= 512:
            raise InvalidArgumentError(f"seq_len = {self.seq_len} is not allowed; allowed: 4 ... 512")
        v = self.vocab_size
        if not isinstance(v, int) or isinstance(v, bool) or not MIN_VOCAB <= v <= MAX_VOCAB:
            raise InvalidArgumentError(f"vocab_size = {v!r} is not allowed; allowed: an integer in {MIN_VOCAB} ... {MAX_VOCAB} "
                                       "(a WordPiece needs its special tokens and an alphabet besides)")
        check_int("max_documents", self.max_documents, low=1, none=True)
        check_real("gen_weight", self.gen_weight, low=0)
        check_real("disc_weight", self.disc_weight, low=0)
        check_optimizer_fields(self)
        if self.batch_size % self.replicas:
            raise InvalidArgumentError(f"batch_size = {self.batch_size} is not allowed with replicas = {self.replicas}; "
                                       "allowed: a multiple of replicas (each replica takes batch_size / replicas rows)")
        self.semantics = get_semantics(self.semantics).name  # old names accepted, stored canonical
        check_accelerator_fields(self)
        if self.attention == "sdpa" and self.semantics == "authors":
            raise InvalidArgumentError("attention = 'sdpa' is not allowed with semantics = 'authors' (its proxies hook the "
                             "softmax module); allowed values there: ['eager']")
        _check_choice("pretokenized", self.pretokenized, (False, True))
        if self.corpus_cache is not None:
            if not isinstance(self.corpus_cache, (str, os.PathLike)):
                raise InvalidArgumentError(f"corpus_cache = {self.corpus_cache!r} is not allowed; allowed: None or a folder path")
            if not self.pretokenized:
                raise InvalidArgumentError(f"corpus_cache = {str(self.corpus_cache)!r} is not allowed with pretokenized = False; "
                                 "allowed: None, or set pretokenized = True")
            self.corpus_cache = os.fspath(self.corpus_cache)
        if not isinstance(self.prefetch, int) or isinstance(self.prefetch, bool) or self.prefetch < 0:
            raise InvalidArgumentError(f"prefetch = {self.prefetch!r} is not allowed; allowed: an integer >= 0")
        cm = self.checkpoint_minutes
        if cm is not None and (isinstance(cm, bool) or not isinstance(cm, (int, float)) or not 0 < cm < math.inf):
            raise InvalidArgumentError(f"checkpoint_minutes = {cm!r} is not allowed; allowed: None or a number > 0")


def recipe_fields(cfg: Any) -> dict[str, Any]:
    """The fields of a config that define what is trained (all but :data:`EXECUTION_FIELDS`)."""
    return {k: v for k, v in dataclasses.asdict(cfg).items() if k not in EXECUTION_FIELDS}
