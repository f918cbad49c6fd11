"""Deterministic input minibatches for the proxies.

A :class:`BatchSpec` names where the tokens come from and how many; :func:`make_batch`
turns it into tensors, identically on every call (the spec's seed fixes everything), so
cached proxy values can be keyed by ``spec.key``.

Sources (``BatchSpec.source``):

* ``"random"`` - reproducible random tokens (the default: needs nothing downloaded);
* ``"text:<file or folder>"`` - a local plain-text corpus (one document per line or
  per file);
* ``"glue:<folder>"`` - a GLUE-format TSV folder (``train.tsv``; sentence pairs become
  ``[CLS] a [SEP] b [SEP]``), e.g. ``../shared/upstream/glue-rte``;
* ``"hf:<dataset>[:<config>]"`` - a Hugging Face dataset's ``text`` column (e.g.
  ``hf:openwebtext``, what the paper used), when the Hub is reachable.

FlexiBERT text is tokenised with the ELECTRA-small WordPiece tokenizer from the Hub when
it can be loaded, else with a WordPiece tokenizer of the same vocabulary size trained
locally on the corpus with ``tokenizers`` (recorded in ``BatchSpec.key``). NAS-Bench-NLP
text is split on whitespace into a word vocabulary of the benchmark's size, PTB style.
"""

from __future__ import annotations

import csv
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..sizes import PTB_VOCAB

BERT_VOCAB = 30522
CLS, SEP, PAD = 101, 102, 0

#: defaults chosen to fit a 2-core CPU: the full 500-arch sweep in well under 30 min
DEFAULT_BERT = dict(batch_size=8, seq_len=128)
DEFAULT_NLP = dict(batch_size=10, seq_len=70)  # NAS-Bench-NLP eval batch 10, bptt 70


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
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 2:
                raise ValueError(f"{f} = {v!r} is not allowed; allowed: an integer >= 2")
        if self.space not in ("flexibert", "nlp"):
            raise ValueError(f"space = {self.space!r} is not allowed; allowed values: ['flexibert', 'nlp']")
        if self.space == "flexibert" and self.seq_len > 512:
            raise ValueError(f"seq_len = {self.seq_len} is not allowed for FlexiBERT; allowed: 2 ... 512 (position table size)")
        kind = self.source.split(":", 1)[0]
        if kind not in ("random", "text", "glue", "hf") or (kind != "random" and ":" not in self.source):
            raise ValueError(f"source = {self.source!r} is not allowed; allowed: 'random', 'text:<path>', 'glue:<folder>', 'hf:<dataset>[:<config>]'")

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


# -- text sources ------------------------------------------------------------------------
def _documents(spec: BatchSpec) -> list[Any]:
    kind, _, arg = spec.source.partition(":")
    if kind == "text":
        p = Path(arg)
        if not p.exists():
            raise FileNotFoundError(f"source = {spec.source!r}: {p} does not exist")
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        docs = [line.strip() for f in files for line in f.read_text(errors="replace").splitlines() if line.strip()]
    elif kind == "glue":
        p = Path(arg) / "train.tsv" if Path(arg).is_dir() else Path(arg)
        if not p.is_file():
            raise FileNotFoundError(f"source = {spec.source!r}: no GLUE train.tsv at {p}")
        with open(p, newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        cols = [c for c in ("sentence1", "sentence2", "question", "sentence", "question1", "question2", "premise", "hypothesis") if rows and c in rows[0]]
        docs = [tuple(r[c] for c in cols[:2]) if len(cols) > 1 else r[cols[0]] for r in rows]
    else:
        import datasets  # optional dependency, only for hf:

        name, _, config = arg.partition(":")
        ds = datasets.load_dataset(name, config or None, split="train", streaming=True)
        docs = []
        for ex in ds:
            docs.append(ex["text"])
            if len(docs) >= spec.batch_size * 64:
                break
    if not docs:
        raise ValueError(f"source = {spec.source!r} holds no text")
    return docs


def _hub_reachable(timeout: float = 2.0) -> bool:
    """One quick TCP probe, so an offline machine does not sit through retries."""
    import socket
    from urllib.parse import urlsplit

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    u = urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((u.hostname, u.port or (443 if u.scheme == "https" else 80)), timeout=timeout).close()
        return True
    except OSError:
        return False


def bert_tokenizer(corpus: list[Any] | None = None) -> tuple[Any, str]:
    """ELECTRA-small's tokenizer from the Hub, else a local WordPiece of the same size."""
    try:
        from transformers import AutoTokenizer

        try:  # the Hub cache first: no network
            return AutoTokenizer.from_pretrained("google/electra-small-discriminator", local_files_only=True), "electra-small"
        except Exception:
            if _hub_reachable():
                return AutoTokenizer.from_pretrained("google/electra-small-discriminator"), "electra-small"
    except Exception:  # offline or transformers missing: train one locally
        pass
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    from ..tables import user_cache_dir

    texts = [" ".join(d) if isinstance(d, tuple) else d for d in (corpus or ["empty"])]
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    # WordPiece training is not deterministic (ties), so a trained tokenizer is stored
    # per corpus and reused: the same corpus always gives the same token ids here
    path = user_cache_dir() / "tokenizers" / f"wordpiece-{BERT_VOCAB}-{digest}.json"
    if path.is_file():
        return Tokenizer.from_file(str(path)), f"wordpiece-local-{digest}"
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=BERT_VOCAB, special_tokens=special, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tok.save(str(tmp))
    os.replace(tmp, path)
    return tok, f"wordpiece-local-{digest}"


def make_batch(spec: BatchSpec) -> Batch:
    g = torch.Generator().manual_seed(spec.seed)
    B, T = spec.batch_size, spec.seq_len
    if spec.space == "nlp":
        V = spec.vocab_size or PTB_VOCAB
        if spec.source == "random":
            return Batch(spec, torch.randint(0, V, (T, B), generator=g))
        words = " ".join(" ".join(d) if isinstance(d, tuple) else d for d in _documents(spec)).split()
        from collections import Counter

        vocab = {w: i + 1 for i, (w, _) in enumerate(Counter(words).most_common(V - 1))}  # 0 = <unk>
        ids = torch.tensor([vocab.get(w, 0) for w in words])
        need = B * T
        if len(ids) < need:
            ids = ids.repeat(need // max(len(ids), 1) + 1)
        # batchify as NAS-Bench-NLP does: B contiguous streams, first T steps
        streams = ids[: (len(ids) // B) * B].view(B, -1).t()
        return Batch(spec, streams[:T].contiguous(), tokenizer=f"words-{len(vocab) + 1}")
    if spec.source == "random":
        ids = torch.randint(1000, BERT_VOCAB, (B, T), generator=g)
        ids[:, 0], ids[:, -1] = CLS, SEP
        return Batch(spec, ids, torch.ones(B, T, dtype=torch.long), torch.zeros(B, T, dtype=torch.long), "random")
    docs = _documents(spec)
    perm = torch.randperm(len(docs), generator=g).tolist()
    chosen = [docs[i] for i in perm[:B]]
    while len(chosen) < B:
        chosen += chosen[: B - len(chosen)]
    tok, name = bert_tokenizer(docs)
    ids = torch.full((B, T), PAD, dtype=torch.long)
    tt = torch.zeros(B, T, dtype=torch.long)
    mask = torch.zeros(B, T, dtype=torch.long)
    if name != "electra-small":
        tok.enable_truncation(max_length=T, strategy="longest_first")  # pairs keep both segments
    for i, d in enumerate(chosen):
        parts = d if isinstance(d, tuple) else (d,)
        if name == "electra-small":
            enc = tok(*parts, truncation=True, max_length=T)
            row, types = enc["input_ids"], enc.get("token_type_ids", [0] * len(enc["input_ids"]))
        else:
            e = tok.encode(*parts)
            row, types = e.ids[:T], e.type_ids[:T]
        ids[i, : len(row)] = torch.tensor(row)
        tt[i, : len(types)] = torch.tensor(types)
        mask[i, : len(row)] = 1
    return Batch(spec, ids, mask, tt, name)
