"""Deterministic input minibatches for the proxies.

A :class:`BatchSpec` names where the tokens come from and how many; :func:`make_batch`
turns it into tensors, identically on every call (the spec's seed fixes everything), so
cached proxy values can be keyed by ``spec.key``.

Sources (``BatchSpec.source``):

* ``"random"`` - reproducible random tokens (the default: needs nothing downloaded):
  ids uniform on [1000, vocab), the first [CLS] and the last [SEP];
* ``"uniform"`` - ids uniform on [0, vocab) and nothing else, drawn exactly as
  ``torch.manual_seed(seed); torch.randint(0, vocab, (B, T))`` (the W-PCA batch of the
  NSC authors' ``eval_flexibert.py``);
* ``"text:<file or folder>"`` - a local plain-text corpus (one document per line or
  per file);
* ``"glue:<folder>"`` - a GLUE-format TSV folder (``train.tsv``; sentence pairs become
  ``[CLS] a [SEP] b [SEP]``), e.g. ``../shared/upstream/glue-rte``;
* ``"hf:<dataset>[:<config>]"`` - a Hugging Face dataset's ``text`` column (e.g.
  ``hf:openwebtext``, what the paper used), when the Hub is reachable.

FlexiBERT text is tokenised by :func:`nasbench_bert.text.load_tokenizer` (ELECTRA-small's
WordPiece when it can be loaded, else one of the same size trained locally and stored
per corpus; the name is in each row's ``tokenizer`` column). NAS-Bench-NLP text is split
on whitespace into a word vocabulary of the benchmark's size, PTB style.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .._torch import torch

from ..checks import check_int, check_seed
from ..errors import InvalidArgumentError
from ..sizes import PTB_VOCAB
from ..text import BERT_VOCAB, Document, flat_text, load_tokenizer, read_documents

CLS, SEP, PAD = 101, 102, 0



@dataclass(frozen=True)
class BatchSpec:
    source: str = "random"
    batch_size: int = 8
    seq_len: int = 128
    seed: int = 0
    space: str = "flexibert"
    vocab_size: int | None = None  # NLP: 10,000 (PTB) or 33,278 (WikiText-2)

    def __post_init__(self) -> None:
        for f in ("batch_size", "seq_len"):
            check_int(f, getattr(self, f), low=2)
        check_seed("seed", self.seed, none=False)
        check_int("vocab_size", self.vocab_size, low=2, none=True)
        if not isinstance(self.source, str):
            raise InvalidArgumentError(f"source = {self.source!r} is not allowed; allowed: 'random', 'uniform', 'text:<path>', "
                                       "'glue:<folder>', 'hf:<dataset>[:<config>]'")
        from .spaces import PROXY_SPACES

        if not isinstance(self.space, str) or self.space not in PROXY_SPACES:
            raise InvalidArgumentError(f"space = {self.space!r} is not allowed; allowed values: {list(PROXY_SPACES)}")
        top = PROXY_SPACES[self.space].max_seq_len
        if top is not None and self.seq_len > top:
            raise InvalidArgumentError(f"seq_len = {self.seq_len} is not allowed for {self.space}; allowed: 2 ... {top} (position table size)")
        kind = self.source.split(":", 1)[0]
        if kind not in ("random", "uniform", "text", "glue", "hf") or (kind not in ("random", "uniform") and ":" not in self.source):
            raise InvalidArgumentError(f"source = {self.source!r} is not allowed; allowed: 'random', 'uniform', 'text:<path>', 'glue:<folder>', 'hf:<dataset>[:<config>]'")

    @property
    def key(self) -> str:
        """A short string that identifies the batch (part of every cache key)."""
        src = self.source
        if ":" in src and self.source.split(":", 1)[0] in ("text", "glue"):
            src = f"{src.split(':', 1)[0]}:{_digest_path(Path(src.split(':', 1)[1]))}"
        v = f",V={self.vocab_size}" if self.vocab_size else ""
        return f"{src},B={self.batch_size},T={self.seq_len},seed={self.seed}{v}"


def _digest_path(p: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p.rglob("*")) if p.is_dir() else [p]
    for f in files:
        if f.is_file():
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


@dataclass
class Batch:
    spec: BatchSpec
    input_ids: torch.Tensor                 # (B, T) for FlexiBERT, (T, B) for NLP
    attention_mask: torch.Tensor | None = None
    token_type_ids: torch.Tensor | None = None
    tokenizer: str = "none"


# -- text sources (the shared text module) ---------------------------------------------------
def _documents(spec: BatchSpec) -> list[Document]:
    return read_documents(spec.source, spec.batch_size * 64 if spec.source.startswith("hf:") else None)


def make_batch(spec: BatchSpec) -> Batch:
    """The input batch ``spec`` describes, drawn from its own seeded generator."""
    g = torch.Generator().manual_seed(spec.seed)
    return _BATCH_MAKERS[spec.space](spec, g)


def _nlp_batch(spec: BatchSpec, g: torch.Generator) -> Batch:
    """(T, B) word ids: uniform random tokens, or the source's text in a word vocabulary
    of the benchmark's size (PTB style), batchified as NAS-Bench-NLP does."""
    B, T = spec.batch_size, spec.seq_len
    V = spec.vocab_size or PTB_VOCAB
    if spec.source in _SYNTHETIC_IDS:  # NAS-Bench-NLP's random tokens are uniform already
        return Batch(spec, torch.randint(0, V, (T, B), generator=g))
    words = " ".join(flat_text(d) for d in _documents(spec)).split()
    from collections import Counter

    vocab = {w: i + 1 for i, (w, _) in enumerate(Counter(words).most_common(V - 1))}  # 0 = <unk>
    ids = torch.tensor([vocab.get(w, 0) for w in words])
    need = B * T
    if len(ids) < need:
        ids = ids.repeat(need // max(len(ids), 1) + 1)
    # batchify as NAS-Bench-NLP does: B contiguous streams, first T steps
    streams = ids[: (len(ids) // B) * B].view(B, -1).t()
    return Batch(spec, streams[:T].contiguous(), tokenizer=f"words-{len(vocab) + 1}")


def _uniform_ids(B: int, T: int, g: torch.Generator) -> torch.Tensor:
    return torch.randint(0, BERT_VOCAB, (B, T), generator=g)


def _random_ids(B: int, T: int, g: torch.Generator) -> torch.Tensor:
    ids = torch.randint(1000, BERT_VOCAB, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP
    return ids


#: the synthetic sources: (B, T, generator) -> FlexiBERT token ids
_SYNTHETIC_IDS: dict[str, Callable[[int, int, torch.Generator], torch.Tensor]] = {
    "uniform": _uniform_ids, "random": _random_ids}


def _flexibert_batch(spec: BatchSpec, g: torch.Generator) -> Batch:
    """(B, T) token ids with mask and segment ids: synthetic, or ``B`` documents of the
    source (drawn by ``g``) through the BERT tokenizer fitted on them."""
    B, T = spec.batch_size, spec.seq_len
    synthetic = _SYNTHETIC_IDS.get(spec.source)
    if synthetic is not None:
        ids = synthetic(B, T, g)
        return Batch(spec, ids, torch.ones(B, T, dtype=torch.long), torch.zeros(B, T, dtype=torch.long), spec.source)
    docs = _documents(spec)
    perm = torch.randperm(len(docs), generator=g).tolist()
    chosen = [docs[i] for i in perm[:B]]
    while len(chosen) < B:
        chosen += chosen[: B - len(chosen)]
    tok = load_tokenizer(docs, BERT_VOCAB)
    ids = torch.full((B, T), tok.pad_id, dtype=torch.long)
    tt = torch.zeros(B, T, dtype=torch.long)
    mask = torch.zeros(B, T, dtype=torch.long)
    for i, d in enumerate(chosen):
        parts = d if isinstance(d, tuple) else (d,)
        row, types = tok.encode(*parts[:2], max_len=T)  # pairs keep both segments (longest-first)
        ids[i, : len(row)] = torch.tensor(row[:T])
        tt[i, : len(types)] = torch.tensor(types[:T])
        mask[i, : len(row)] = 1
    return Batch(spec, ids, mask, tt, tok.name)


#: a batch maker per space (``BatchSpec.space`` is checked against the spaces)
_BATCH_MAKERS: dict[str, Callable[[BatchSpec, torch.Generator], Batch]] = {
    "flexibert": _flexibert_batch, "nlp": _nlp_batch}
