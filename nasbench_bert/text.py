"""Text: corpora and WordPiece tokenizers, one implementation for proxies and builders.

Sources (one string, as the CLI takes it):

* ``text:<file or folder>`` - plain text, one document per non-empty line;
* ``glue:<folder or train.tsv>`` - a GLUE-format TSV; sentence pairs stay pairs;
* ``hf:<dataset>[:<config>]`` - a Hugging Face dataset's ``text`` column, streamed
  (``hf:openwebtext`` is what the paper pretrained and scored on).

Tokenizers: ELECTRA-small's WordPiece from the Hub cache or the Hub when reachable,
else a WordPiece of the same size trained locally with ``tokenizers``. Training is not
deterministic (ties), so a trained tokenizer is stored in the user cache under a digest
of its corpus and size, and reused: the same corpus always gives the same ids.
"""

from __future__ import annotations

import csv
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Union

from .errors import DataNotFoundError, InvalidArgumentError

ELECTRA_TOKENIZER = "google/electra-small-discriminator"
BERT_VOCAB = 30522
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_GLUE_TEXT_COLUMNS = ("sentence1", "sentence2", "question", "sentence", "question1", "question2", "premise", "hypothesis")

#: a document: a text, or a sentence pair
Document = Union[str, tuple[str, ...]]


def read_documents(source: str, limit: int | None = None) -> list[Document]:
    """The documents of ``source`` (see module doc), at most ``limit`` of them."""
    if not isinstance(source, str) or source.partition(":")[0] not in _READERS or not source.partition(":")[2]:
        raise InvalidArgumentError(f"source = {source!r} is not allowed; allowed: 'text:<file or folder>', 'glue:<folder>', "
                         "'hf:<dataset>[:<config>]'")
    kind, _, arg = source.partition(":")
    docs = _READERS[kind](source, arg, limit)
    if not docs:
        raise InvalidArgumentError(f"source = {source!r} holds no text")
    return docs[:limit] if limit else docs


def _read_text(source: str, arg: str, limit: int | None) -> list[Document]:
    p = Path(arg)
    if not p.exists():
        raise DataNotFoundError(f"source = {source!r}: {p} does not exist")
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    return [ln.strip() for f in files for ln in f.read_text(errors="replace").splitlines() if ln.strip()]


def _read_glue(source: str, arg: str, limit: int | None) -> list[Document]:
    p = Path(arg) / "train.tsv" if Path(arg).is_dir() else Path(arg)
    if not p.is_file():
        raise DataNotFoundError(f"source = {source!r}: no GLUE train.tsv at {p}")
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    cols = [c for c in _GLUE_TEXT_COLUMNS if rows and c in rows[0]]
    return [tuple(r[c] for c in cols[:2]) if len(cols) > 1 else r[cols[0]] for r in rows]


def _read_hf(source: str, arg: str, limit: int | None) -> list[Document]:
    import datasets  # optional dependency (the [build] / [hub] extras), only for hf:

    name, _, config = arg.partition(":")
    docs: list[Document] = []
    for ex in datasets.load_dataset(name, config or None, split="train", streaming=True):
        docs.append(ex["text"])
        if limit is not None and len(docs) >= limit:
            break
    return docs


#: a source's kind (the part before the first colon) -> its reader
_READERS: dict[str, Callable[[str, str, int | None], list[Document]]] = {
    "text": _read_text, "glue": _read_glue, "hf": _read_hf,
}


def flat_text(doc: Document) -> str:
    """A document as one string (pairs joined by a space)."""
    return " ".join(doc) if isinstance(doc, tuple) else doc


_DEFAULT_PORTS = {"http": 80, "https": 443}


def hub_reachable(timeout: float = 2.0) -> bool:
    """One quick TCP probe of ``$HF_ENDPOINT`` (default huggingface.co), so an offline
    machine does not sit through a client's retries; False under ``HF_HUB_OFFLINE``."""
    import socket
    from urllib.parse import urlsplit

    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        return False
    u = urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection((u.hostname, u.port or _DEFAULT_PORTS.get(u.scheme, 80)), timeout=timeout).close()
        return True
    except (OSError, ValueError):
        return False


@dataclass
class TextTokenizer:
    """A WordPiece tokenizer with the special ids pretraining, finetuning and proxies need."""

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


def load_tokenizer(corpus: list[Document] | None = None, vocab_size: int = BERT_VOCAB, prefer_hub: bool = True) -> TextTokenizer:
    """ELECTRA-small's tokenizer when it can be loaded (cache, or the Hub when reachable),
    else a WordPiece of ``vocab_size`` trained on ``corpus`` and stored per corpus."""
    if prefer_hub:
        try:
            from transformers import AutoTokenizer

            try:
                t = AutoTokenizer.from_pretrained(ELECTRA_TOKENIZER, local_files_only=True)
            except Exception:  # not cached: the Hub, if it answers at all
                t = AutoTokenizer.from_pretrained(ELECTRA_TOKENIZER) if hub_reachable() else None
            if t is not None:
                return TextTokenizer(t, "electra-small", t.pad_token_id, t.cls_token_id, t.sep_token_id, t.mask_token_id,
                                     t.vocab_size)
        except ImportError:
            pass
        except OSError:  # a broken cache or a refused download: fall back to a local tokenizer
            pass
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    from .atomic import atomic_path
    from .data.tables import user_cache_dir

    texts = [flat_text(d) for d in (corpus or ["empty"])]
    digest = hashlib.sha256(("\n".join(texts) + f"|{vocab_size}").encode()).hexdigest()[:16]
    path = user_cache_dir() / "tokenizers" / f"wordpiece-{vocab_size}-{digest}.json"
    if path.is_file():
        tok = Tokenizer.from_file(str(path))
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.train_from_iterator(texts, trainer=trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False))
        tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
        with atomic_path(path) as tmp:
            tok.save(str(tmp))
    ids = {s: tok.token_to_id(s) for s in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")}
    return TextTokenizer(tok, f"wordpiece-local-{digest}", ids["[PAD]"], ids["[CLS]"], ids["[SEP]"], ids["[MASK]"],
                         tok.get_vocab_size())


def pack(docs: list[Document], tok: TextTokenizer, seq_len: int) -> Iterator[list[int]]:
    """Pack documents into ``[CLS] ... [SEP]`` sequences of exactly ``seq_len`` tokens
    (ELECTRA's pretraining format: documents concatenated, no padding)."""
    body = seq_len - 2
    buf: list[int] = []
    for d in docs:
        buf.extend(tok.encode_plain(flat_text(d)))
        buf.append(tok.sep_id)
        while len(buf) >= body:
            yield [tok.cls_id, *buf[:body], tok.sep_id]
            buf = buf[body:]


def read_corpus(source: str, max_documents: int | None = None) -> list[str]:
    """Pretraining documents of ``text:`` or ``hf:`` ``source`` (pairs flattened)."""
    if isinstance(source, str) and source.startswith("glue:"):
        raise InvalidArgumentError(f"corpus = {source!r} is not allowed; allowed: 'text:<file or folder>' or 'hf:<dataset>[:<config>]'")
    try:
        return [flat_text(d) for d in read_documents(source, max_documents)]
    except ValueError as e:
        raise InvalidArgumentError(str(e).replace("source =", "corpus =", 1)) from None
