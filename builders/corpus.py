"""Pre-tokenised, memory-mapped pretraining corpora, and the batches built from them.

Packing a corpus (tokenising every document and cutting the stream into ``[CLS] ...
[SEP]`` sequences, :func:`nasbench_bert.text.pack`) is the slowest part of starting a
pretraining run, and an in-memory int64 array of OpenWebText (~9e9 tokens) would not fit
in memory. :func:`pretokenize` packs a corpus once into a ``.npy`` file of shape
``(sequences, seq_len)`` (``uint16`` when the vocabulary fits, else ``int32``), written
atomically and keyed by a digest of the corpus, the tokenizer and the sequence length,
so every later run - and every Ray task on the same machine - maps the same file
read-only (``np.load(mmap_mode="r")``) and pages in only the rows it uses.

:class:`BatchSource` makes the batch of step ``s`` from ``(seed, s)`` alone: the same
rows, in the same order, with the same masks, whether the sequences are in memory or
memory-mapped, and whether the batches are made in the training loop or ahead of it
by :class:`Prefetcher` (a background thread with a bounded queue).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.atomic import atomic_path, atomic_write
from nasbench_bert.text import TextTokenizer, pack, read_corpus

#: bump when the file layout or the packing changes: old caches are then never read
FORMAT_VERSION = 1
_CHUNK = 4096  # sequences per write


def step_seed(seed: int, step: int) -> int:
    """The seed of everything random at ``step`` of a run seeded ``seed``."""
    return (seed * 1_000_003 + step * 7919 + 17) % (2**63 - 1)


# -- digests ---------------------------------------------------------------------------------------
def corpus_digest(source: str, max_documents: int | None = None) -> str:
    """A digest of what ``read_corpus(source, max_documents)`` reads, computed without
    tokenising: for ``text:`` the bytes and relative names of the files (in the order
    they are read), for ``hf:`` the dataset name and configuration (the Hub versions
    the data; pin a revision in the name to pin the cache)."""
    h = hashlib.sha256(f"{source}|{max_documents}".encode())
    if isinstance(source, str) and source.startswith("text:"):
        p = Path(source[5:])
        if not p.exists():
            raise FileNotFoundError(f"corpus = {source!r}: {p} does not exist")
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode() + b"\0")
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:20]


def tokenizer_digest(tok: TextTokenizer) -> str:
    """A digest of the tokenizer's full definition (vocabulary, normaliser, special ids)."""
    b = tok.backend
    text: str | None = None
    for get in (lambda: b.to_str(), lambda: b.backend_tokenizer.to_str()):
        try:
            text = get()
            break
        except AttributeError:
            continue
    if text is None:  # a slow tokenizer: its vocabulary
        text = json.dumps(sorted(b.get_vocab().items()))
    ids = (tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id, tok.vocab_size)
    return hashlib.sha256((text + repr(ids)).encode()).hexdigest()[:20]


def cache_key(source: str, max_documents: int | None, tok: TextTokenizer, seq_len: int) -> str:
    parts = {"format": FORMAT_VERSION, "corpus": corpus_digest(source, max_documents), "tokenizer": tokenizer_digest(tok),
             "seq_len": seq_len}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def default_cache_dir() -> Path:
    from nasbench_bert.data.tables import user_cache_dir

    return user_cache_dir() / "corpora"


# -- the pre-tokenised file --------------------------------------------------------------------------
def pretokenize(source: str, tok: TextTokenizer, seq_len: int, *, max_documents: int | None = None,
                cache_dir: str | os.PathLike[str] | None = None, docs: Sequence[str] | None = None) -> Path:
    """The path of ``source`` packed into ``seq_len``-token sequences by ``tok``, as a
    ``.npy`` file in ``cache_dir`` (default: the user cache's ``corpora/``); made on the
    first call, reused after. ``docs``: the documents if the caller has read them
    already (they must be ``read_corpus(source, max_documents)``).

    The file is written in two passes (the packed stream to a scratch file, then into a
    ``.npy`` of the now known shape) and moved into place with one rename, so a reader
    never sees a partial file; builders racing to make the same file write the same
    bytes, and the last rename wins. A JSON file beside it records what it holds.
    """
    if not isinstance(seq_len, int) or isinstance(seq_len, bool) or not 4 <= seq_len <= 512:
        raise InvalidArgumentError(f"seq_len = {seq_len!r} is not allowed; allowed: 4 ... 512")
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = cache_key(source, max_documents, tok, seq_len)
    path = folder / f"corpus-{key}.npy"
    if path.is_file():
        return path
    if docs is None:
        docs = read_corpus(source, max_documents)
    dtype = np.uint16 if tok.vocab_size <= np.iinfo(np.uint16).max + 1 else np.int32
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{path.name}.scratch-", delete=False) as scratch:
        try:
            chunk: list[list[int]] = []
            for seq in pack(docs if isinstance(docs, list) else list(docs), tok, seq_len):
                chunk.append(seq)
                if len(chunk) == _CHUNK:
                    scratch.write(np.asarray(chunk, dtype=dtype).tobytes())
                    n += len(chunk)
                    chunk = []
            if chunk:
                scratch.write(np.asarray(chunk, dtype=dtype).tobytes())
                n += len(chunk)
            scratch.flush()
            if n == 0:
                raise ValueError(f"corpus = {source!r} is too short for one sequence of {seq_len} tokens")
            raw = np.memmap(scratch.name, dtype=dtype, mode="r", shape=(n, seq_len))
            with atomic_path(path) as tmp:
                out = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(n, seq_len))
                for i in range(0, n, _CHUNK * 16):
                    out[i : i + _CHUNK * 16] = raw[i : i + _CHUNK * 16]
                out.flush()
                del out
            del raw
        finally:
            os.unlink(scratch.name)
    atomic_write(path.with_suffix(".json"), json.dumps({
        "format": FORMAT_VERSION, "corpus": source, "max_documents": max_documents,
        "corpus_digest": corpus_digest(source, max_documents), "tokenizer": tok.name,
        "tokenizer_digest": tokenizer_digest(tok), "seq_len": seq_len, "sequences": n, "dtype": np.dtype(dtype).name,
    }, indent=1))
    return path


def load_sequences(path: str | os.PathLike[str]) -> np.ndarray:
    """The packed sequences of a :func:`pretokenize` file, memory-mapped read-only."""
    arr = np.load(path, mmap_mode="r")
    if arr.ndim != 2:
        raise ValueError(f"{path}: expected a (sequences, seq_len) array, found shape {arr.shape}")
    return arr


# -- batches ---------------------------------------------------------------------------------------
def max_predictions(mask_prob: float, seq_len: int) -> int:
    """ELECTRA's ``max_predictions_per_seq``: ``int((mask_prob + 0.005) * seq_len)`` masked
    slots per sequence (19 for 15 % of 128), whatever the sequence's length."""
    return int((mask_prob + 0.005) * seq_len)


def gumbel(u: torch.Tensor) -> torch.Tensor:
    """ELECTRA's Gumbel noise from uniform noise ``u`` in [0, 1): ``-log(-log(u + 1e-9) + 1e-9)``
    (``pretrain_helpers.sample_from_softmax``), in ``u``'s precision."""
    return -torch.log(-torch.log(u + 1e-9) + 1e-9)


def scatter_update(sequence: torch.Tensor, updates: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ELECTRA's ``scatter_update`` of integer sequences: ``sequence`` (B, L) with the ``updates``
    (B, N) written at ``positions`` (B, N). Updates to position 0 are ignored (a slot whose
    position is 0 is an unused slot); a position named twice receives the integer mean of its
    updates (the sum floor-divided by the count), as the reference does. Returns the updated
    sequence and the (B, L) 0/1 mask of the positions written."""
    B, L = sequence.shape
    flat = (positions + L * torch.arange(B, device=positions.device)[:, None]).reshape(-1)
    sums = torch.zeros(B * L, dtype=sequence.dtype, device=sequence.device).index_add_(0, flat, updates.reshape(-1).to(sequence.dtype))
    counts = torch.zeros(B * L, dtype=sequence.dtype, device=sequence.device).index_add_(
        0, flat, torch.ones_like(flat, dtype=sequence.dtype))
    counts = counts.view(B, L)
    counts[:, 0] = 0  # not_first_token
    written = counts.clamp(max=1)
    values = torch.div(sums.view(B, L), counts.clamp(min=1), rounding_mode="floor")
    return (1 - written) * sequence + written * values, written


@dataclass
class MaskedInputs:
    """ELECTRA's masked inputs (``pretrain_helpers.mask``) of a (B, L) batch.

    ``positions`` (B, N): the masked positions, drawn with replacement among the maskable
    ones (0 in the slots beyond the sequence's count); ``masked_ids``: the original tokens
    there (0 in unused slots); ``weights``: 1.0 for the used slots; ``generator_input``: the
    ids with 85 % of the masked positions replaced by ``[MASK]`` (the rest keep their token).
    """

    generator_input: torch.Tensor
    positions: torch.Tensor
    masked_ids: torch.Tensor
    weights: torch.Tensor


def electra_mask(ids: torch.Tensor, input_mask: torch.Tensor, u_positions: torch.Tensor, u_keep: torch.Tensor, *,
                 mask_prob: float, cls_id: int, sep_id: int, mask_id: int) -> MaskedInputs:
    """ELECTRA's dynamic masking (``pretrain_helpers.mask``), with its random draws given as
    uniform noise: ``u_positions`` (B, N, L) for the positions (a categorical draw over the
    maskable positions, by Gumbel-max), ``u_keep`` (B, N) for the 85 % that become ``[MASK]``.

    Per sequence ``max(1, min(N, round(n * mask_prob)))`` slots are used, where ``n`` counts
    its real tokens ([CLS] and [SEP] included) and N = :func:`max_predictions`; the maskable
    positions are the real tokens other than [CLS], [SEP] and [MASK]. Positions are drawn
    with replacement, so two slots can name one position (both count in the generator loss).
    """
    B, L = ids.shape
    N = u_keep.shape[1]
    if u_positions.shape != (B, N, L):
        raise ValueError(f"u_positions has shape {tuple(u_positions.shape)}; expected {(B, N, L)}")
    special = torch.tensor([sep_id, cls_id, mask_id], device=ids.device)
    candidates = input_mask.bool() & ~torch.isin(ids, special)
    num_tokens = input_mask.sum(-1).to(u_keep.dtype)
    count = torch.round(num_tokens * mask_prob).to(torch.long).clamp(max=N).clamp(min=1)
    weights = (torch.arange(N, device=ids.device)[None, :] < count[:, None]).to(u_keep.dtype)
    cand = candidates.to(u_keep.dtype)
    logp = torch.log(cand / cand.sum(-1, keepdim=True))
    positions = torch.argmax(logp[:, None, :] + gumbel(u_positions), dim=-1) * weights.long()
    masked_ids = torch.gather(ids, 1, positions) * weights.long()
    replace = positions * (u_keep < 0.85).long()
    gen_in, _ = scatter_update(ids, torch.full_like(replace, mask_id), replace)
    return MaskedInputs(gen_in, positions, masked_ids, weights)


@dataclass
class Batch:
    """Everything the training step needs about step ``step`` (CPU tensors).

    ``ids``, ``input_mask``, ``segment_ids``: the (B, L) sequences; ``masked``: ELECTRA's
    masking of them (:func:`electra_mask`); ``generator``: the step's CPU generator, after
    the masking draws (the generator's sampled replacements on CPU come next from it).
    """

    step: int
    ids: torch.Tensor
    input_mask: torch.Tensor
    segment_ids: torch.Tensor
    masked: MaskedInputs
    generator: torch.Generator | None = None

    @property
    def all_attended(self) -> bool:
        return bool(self.input_mask.all())

    def shard(self, index: int, count: int) -> "Batch":
        """Rows ``index * B/count ... (index + 1) * B/count``: the batch of one of ``count``
        replicas (a TPU core of the reference runs: consecutive per-core batches)."""
        b = self.ids.shape[0] // count
        rows = slice(index * b, (index + 1) * b)
        m = self.masked
        return Batch(self.step, self.ids[rows], self.input_mask[rows], self.segment_ids[rows],
                     MaskedInputs(m.generator_input[rows], m.positions[rows], m.masked_ids[rows], m.weights[rows]),
                     self.generator)

    def pin(self) -> "Batch":
        for f in ("ids", "input_mask", "segment_ids"):
            setattr(self, f, getattr(self, f).pin_memory())
        for f in ("generator_input", "positions", "masked_ids", "weights"):
            setattr(self.masked, f, getattr(self.masked, f).pin_memory())
        return self


class BatchSource:
    """The batch of step ``s``: rows ``perm[(pos + i) % n]`` of epoch ``e``, where
    ``e, pos = divmod(s * batch_size, n)`` and ``perm`` is the ``default_rng([seed, e])``
    permutation of the ``n`` sequences; then ELECTRA's masking (:func:`electra_mask`) with
    noise from a CPU generator seeded by ``(seed, s)``."""

    def __init__(self, sequences: np.ndarray, tok: TextTokenizer, batch_size: int, seed: int, mask_prob: float):
        self.seqs, self.tok = sequences, tok
        self.batch_size, self.seed, self.mask_prob = batch_size, seed, mask_prob
        self.n = len(sequences)
        self.max_predictions = max_predictions(mask_prob, sequences.shape[1])
        self._epoch: int | None = None
        self._perm: np.ndarray | None = None

    def rows(self, step: int) -> np.ndarray:
        epoch, pos = divmod(step * self.batch_size, self.n)
        if epoch != self._epoch:
            self._perm, self._epoch = np.random.default_rng([self.seed, epoch]).permutation(self.n), epoch
        assert self._perm is not None
        return self._perm[(pos + np.arange(self.batch_size)) % self.n]

    def __call__(self, step: int) -> Batch:
        g = torch.Generator().manual_seed(step_seed(self.seed, step))
        ids = torch.from_numpy(np.asarray(self.seqs[self.rows(step)], dtype=np.int64))
        B, L = ids.shape
        input_mask = (ids != self.tok.pad_id).long()
        N = self.max_predictions
        u_pos = torch.rand((B, N, L), generator=g)
        u_keep = torch.rand((B, N), generator=g)
        masked = electra_mask(ids, input_mask, u_pos, u_keep, mask_prob=self.mask_prob, cls_id=self.tok.cls_id,
                              sep_id=self.tok.sep_id, mask_id=self.tok.mask_id)
        return Batch(step, ids, input_mask, torch.zeros_like(ids), masked, g)


class _Failed:
    def __init__(self, exc: BaseException):
        self.exc = exc


class Prefetcher:
    """Batches ``make(start) ... make(stop - 1)`` made by a background thread, at most
    ``depth`` ahead of the consumer (pinned when ``pin``, for asynchronous copies to a
    GPU). An error in the thread is raised in the consumer. Use as a context manager,
    or call :meth:`close`."""

    def __init__(self, make: Any, start: int, stop: int, depth: int, pin: bool = False):
        if not isinstance(depth, int) or depth < 1:
            raise InvalidArgumentError(f"depth = {depth!r} is not allowed; allowed: a positive integer")
        self._q: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._make, self._start, self._end, self._pin = make, start, stop, pin
        self._thread = threading.Thread(target=self._run, name="nasbench-bert-prefetch", daemon=True)
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for s in range(self._start, self._end):
                b = self._make(s)
                if self._pin:
                    b = b.pin()
                if not self._put(b):
                    return
        except BaseException as e:  # handed to the consumer
            self._put(_Failed(e))

    def __iter__(self) -> Iterator[Batch]:
        for _ in range(self._start, self._end):
            item = self._q.get()
            if isinstance(item, _Failed):
                raise item.exc
            yield item

    def close(self) -> None:
        self._stop.set()
        while True:
            try:
                self._q.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=10)

    def __enter__(self) -> "Prefetcher":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
