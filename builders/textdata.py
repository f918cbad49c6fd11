"""Text for pretraining: a corpus (Hugging Face dataset or local files) and a WordPiece
tokenizer (ELECTRA's from the Hub, or one trained locally with ``tokenizers``)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from nasbench_bert.tables import user_cache_dir

ELECTRA_TOKENIZER = "google/electra-small-discriminator"


def read_corpus(source: str, max_documents: int | None = None) -> list[str]:
    """Documents from ``text:<file or folder>`` (one document per non-empty line) or
    ``hf:<dataset>[:<config>]`` (its ``text`` column, streamed; OpenWebText is
    ``hf:openwebtext``)."""
    kind, _, arg = source.partition(":")
    if kind == "text" and arg:
        p = Path(arg)
        if not p.exists():
            raise FileNotFoundError(f"corpus = {source!r}: {p} does not exist")
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        docs = [ln.strip() for f in files for ln in f.read_text(errors="replace").splitlines() if ln.strip()]
    elif kind == "hf" and arg:
        import datasets

        name, _, config = arg.partition(":")
        docs = []
        for ex in datasets.load_dataset(name, config or None, split="train", streaming=True):
            docs.append(ex["text"])
            if max_documents is not None and len(docs) >= max_documents:
                break
    else:
        raise ValueError(f"corpus = {source!r} is not allowed; allowed: 'text:<file or folder>' or 'hf:<dataset>[:<config>]'")
    if not docs:
        raise ValueError(f"corpus = {source!r} holds no text")
    return docs[:max_documents] if max_documents else docs


@dataclass
class TextTokenizer:
    """A WordPiece tokenizer with the special ids the pretraining and GLUE code need."""

    backend: Any
    name: str
    pad_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    vocab_size: int

    def encode(self, a: str, b: str | None = None, max_len: int | None = None) -> tuple[list[int], list[int]]:
        """Ids and token-type ids of ``[CLS] a [SEP] (b [SEP])``, truncated longest-first."""
        if self.name.startswith("electra"):
            enc = self.backend(a, b, truncation=max_len is not None, max_length=max_len)
            return list(enc["input_ids"]), list(enc["token_type_ids"])
        if max_len is not None:
            self.backend.enable_truncation(max_length=max_len, strategy="longest_first")
        else:
            self.backend.no_truncation()
        e = self.backend.encode(a, b) if b is not None else self.backend.encode(a)
        return list(e.ids), list(e.type_ids)

    def encode_plain(self, text: str) -> list[int]:
        """Ids without special tokens (for packing a pretraining stream)."""
        if self.name.startswith("electra"):
            return list(self.backend(text, add_special_tokens=False)["input_ids"])
        self.backend.no_truncation()
        return list(self.backend.encode(text, add_special_tokens=False).ids)


def load_tokenizer(corpus: list[str] | None = None, vocab_size: int = 30522, prefer_hub: bool = True) -> TextTokenizer:
    """ELECTRA-small's tokenizer when it can be loaded (cache or Hub), else a WordPiece of
    ``vocab_size`` trained on ``corpus`` and stored per corpus (training is not
    deterministic, so the stored one is reused)."""
    if prefer_hub:
        try:
            from transformers import AutoTokenizer

            from nasbench_bert.proxies.inputs import _hub_reachable

            try:
                t = AutoTokenizer.from_pretrained(ELECTRA_TOKENIZER, local_files_only=True)
            except Exception:
                t = AutoTokenizer.from_pretrained(ELECTRA_TOKENIZER) if _hub_reachable() else None
            if t is not None:
                return TextTokenizer(t, "electra-small", t.pad_token_id, t.cls_token_id, t.sep_token_id, t.mask_token_id, t.vocab_size)
        except ImportError:
            pass
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    texts = corpus or ["empty"]
    digest = hashlib.sha256(("\n".join(texts) + f"|{vocab_size}").encode()).hexdigest()[:16]
    path = user_cache_dir() / "tokenizers" / f"wordpiece-{vocab_size}-{digest}.json"
    if path.is_file():
        tok = Tokenizer.from_file(str(path))
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.train_from_iterator(texts, trainer=trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
        tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tok.save(str(tmp))
        os.replace(tmp, path)
    ids = {s: tok.token_to_id(s) for s in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")}
    return TextTokenizer(tok, f"wordpiece-local-{digest}", ids["[PAD]"], ids["[CLS]"], ids["[SEP]"], ids["[MASK]"], tok.get_vocab_size())


def pack(docs: list[str], tok: TextTokenizer, seq_len: int) -> Iterator[list[int]]:
    """Pack documents into ``[CLS] ... [SEP]`` sequences of exactly ``seq_len`` tokens
    (ELECTRA's pretraining format: documents concatenated, no padding)."""
    body = seq_len - 2
    buf: list[int] = []
    for d in docs:
        buf.extend(tok.encode_plain(d))
        buf.append(tok.sep_id)
        while len(buf) >= body:
            yield [tok.cls_id, *buf[:body], tok.sep_id]
            buf = buf[body:]
