"""ELECTRA replaced-token-detection pretraining of a FlexiBERT arch, resumable.

Defaults are the paper's Table 2 (ELECTRA-Small): 100,000 steps, batch 128, sequence
128, learning rate 5e-4 with 10,000 warm-up steps and linear decay, Adam (eps 1e-6,
weight decay 0.01), 15 % masking, discriminator loss weight 50, generator at 1/4 of
the discriminator's width sharing the token embeddings. The model is
``ElectraPair(arch, semantics)``: by default ``as_trained``, the model the authors'
TensorFlow code trained (ELECTRA's init, LayerNorm eps 1e-12, dropout 0.1 on hidden
states and attention probabilities).

Reproducibility: the batch, the mask, the generator's samples and dropout at step ``s``
are all drawn from generators seeded by ``(seed, s)``, and a checkpoint stores model,
optimiser, schedule and the loss history. A run killed at any point and restarted from
its last checkpoint therefore produces exactly the losses of an uninterrupted run (on
CPU, with any of the options below; on a GPU the random streams are the same but
reductions are not bit-reproducible, see docs/builders.md, "Accelerators").

Accelerator options (all off by default, which gives exactly the losses of the plain
fp32 loop): ``precision="bf16"`` (autocast, fp32 master weights), ``attention="sdpa"``
(``scaled_dot_product_attention``), ``adamw="fused"``, ``compile=True``
(``torch.compile`` of both encoders), ``pretokenized=True`` (a memory-mapped corpus,
:mod:`.corpus`), ``prefetch=n`` (a background thread making batches ahead) and
``checkpoint_minutes`` (a cadence in wall time besides ``checkpoint_every`` steps).
:data:`ACCELERATED` holds the set meant for GPUs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.models import ElectraPair
from nasbench_bert.models.flexibert import ATTENTION_IMPLS as ATTENTION_IMPLS  # the values of ``attention``
from nasbench_bert.models.flexibert import FlexiBERTEncoder, SelfAttention, check_attention
from nasbench_bert.semantics import get_semantics
from nasbench_bert.spaces.flexibert import Arch

from nasbench_bert.text import TextTokenizer, load_tokenizer, pack, read_corpus

from .corpus import Batch, BatchSource, Prefetcher, load_sequences, pretokenize, step_seed

#: ``precision``: "fp32" everywhere, or "bf16" autocast (weights, gradients and the
#: optimiser stay fp32; the losses are computed in fp32)
PRECISIONS = ("fp32", "bf16")
#: ``adamw``: torch's AdamW implementations ("default": torch's choice, the single-tensor
#: loop on CPU; "foreach": multi-tensor; "fused": one fused kernel)
ADAMW_IMPLS = ("default", "foreach", "fused")
#: the options for a GPU run (docs/builders.md, "Accelerators"):
#: ``PretrainConfig(**ACCELERATED)`` or ``pretrain_config=ACCELERATED`` in ``build_entry``
ACCELERATED: dict[str, Any] = {"precision": "bf16", "attention": "sdpa", "adamw": "fused", "compile": True,
                               "pretokenized": True, "prefetch": 4, "checkpoint_minutes": 10.0}
_DEVICES = "'auto', 'cpu', 'cuda', 'cuda:<index>'"
_TIMING_WARMUP = 3  # steps left out of steady_tokens_per_second (compilation, allocator warm-up)
_clock = time.monotonic  # the checkpoint_minutes clock (a test replaces it)


def _check_choice(field_name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if not any(type(value) is type(a) and value == a for a in allowed):  # strict: 1 is not True, True not "fp32"
        raise InvalidArgumentError(f"{field_name} = {value!r} is not allowed; allowed values: {list(allowed)}")


def check_accelerator_fields(cfg: Any) -> None:
    """Validate the accelerator fields that PretrainConfig and FinetuneConfig share."""
    _check_choice("precision", cfg.precision, PRECISIONS)
    check_attention(cfg.attention, "attention")
    _check_choice("adamw", cfg.adamw, ADAMW_IMPLS)
    _check_choice("compile", cfg.compile, (False, True))


@dataclass
class PretrainConfig:
    steps: int = 100_000
    batch_size: int = 128
    seq_len: int = 128
    learning_rate: float = 5e-4
    warmup_steps: int = 10_000
    weight_decay: float = 0.01
    adam_eps: float = 1e-6
    max_grad_norm: float = 1.0
    mask_prob: float = 0.15
    disc_weight: float = 50.0
    seed: int = 0
    semantics: str = "as_trained"  # see nasbench_bert.semantics
    corpus: str = "hf:openwebtext"
    max_documents: int | None = None
    vocab_size: int = 30522
    checkpoint_every: int = 1000
    log_every: int = 100
    # -- accelerator options (docs/builders.md, "Accelerators"); the defaults are the plain fp32 loop
    precision: str = "fp32"               # "fp32" | "bf16" (autocast; fp32 master weights)
    attention: str = "eager"              # "eager" | "sdpa" (not with semantics="authors")
    adamw: str = "default"                # "default" | "foreach" | "fused"
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
        if not isinstance(self.warmup_steps, int) or isinstance(self.warmup_steps, bool) or self.warmup_steps < 0:
            raise InvalidArgumentError(f"warmup_steps = {self.warmup_steps!r} is not allowed; allowed: an integer >= 0")
        v = self.vocab_size
        if not isinstance(v, int) or isinstance(v, bool) or not MIN_VOCAB <= v <= MAX_VOCAB:
            raise InvalidArgumentError(f"vocab_size = {v!r} is not allowed; allowed: an integer in {MIN_VOCAB} ... {MAX_VOCAB} "
                                       "(a WordPiece needs its special tokens and an alphabet besides)")
        md = self.max_documents
        if md is not None and (not isinstance(md, int) or isinstance(md, bool) or md < 1):
            raise InvalidArgumentError(f"max_documents = {md!r} is not allowed; allowed: None or a positive integer")
        if not 0 < self.mask_prob < 1:
            raise InvalidArgumentError(f"mask_prob = {self.mask_prob!r} is not allowed; allowed: 0 < mask_prob < 1")
        if self.seq_len > 512:
            raise InvalidArgumentError(f"seq_len = {self.seq_len} is not allowed; allowed: 4 ... 512")
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


#: the smallest and largest WordPiece vocabularies a config accepts (5 special tokens
#: and a byte-level alphabet need ~100 entries; ELECTRA's is 30,522)
MIN_VOCAB, MAX_VOCAB = 100, 1_000_000


@dataclass
class PretrainResult:
    losses: list[float]
    disc_losses: list[float]
    gen_losses: list[float]
    seconds: float
    tokens_per_second: float
    resumed_from: int
    model: ElectraPair = field(repr=False)
    tokenizer: TextTokenizer = field(repr=False)
    #: the device trained on
    device: str = "cpu"
    #: tokens/s after the first steps of this call (compilation and warm-up left out)
    steady_tokens_per_second: float = math.nan
    #: the steps (counted done) at which this call wrote a checkpoint
    checkpoints: list[int] = field(default_factory=list)


_step_seed = step_seed  # the old private name


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``"auto"`` (or None): the GPU when CUDA is available, else the CPU; ``"cpu"``,
    ``"cuda"`` or ``"cuda:<index>"`` as given. Anything else, or a CUDA device where
    there is none, is an ``InvalidArgumentError`` (a ``ValueError``) naming the allowed values."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InvalidArgumentError(f"device = {device!r} is not allowed; allowed values: {_DEVICES}") from None
    if d.type not in ("cpu", "cuda"):
        raise InvalidArgumentError(f"device = {device!r} is not allowed; allowed values: {_DEVICES}")
    if d.type == "cuda" and not torch.cuda.is_available():
        raise InvalidArgumentError(f"device = {device!r} is not allowed here: CUDA is not available; allowed values: 'auto', 'cpu'")
    return d


def use_attention(model: torch.nn.Module, attention: str) -> torch.nn.Module:
    """Switch every :class:`SelfAttention` in ``model`` to ``attention`` (one of
    ``ATTENTION_IMPLS``); ``"sdpa"`` is refused for an encoder of the authors' semantics."""
    check_attention(attention, "attention")
    if attention == "sdpa":
        for m in model.modules():
            if isinstance(m, FlexiBERTEncoder) and m.semantics == "authors":
                raise InvalidArgumentError("attention = 'sdpa' is not allowed for a model of semantics 'authors'; allowed values "
                                 "there: ['eager']")
    for m in model.modules():
        if isinstance(m, SelfAttention):
            m.attention_impl = attention
    return model


def autocast(device: torch.device, precision: str) -> Any:
    """The autocast context of ``precision`` (a no-op context for fp32)."""
    return torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()


def make_adamw(groups: Any, lr: float, eps: float, impl: str) -> torch.optim.AdamW:
    """torch's AdamW with the implementation ``impl`` (see :data:`ADAMW_IMPLS`)."""
    _check_choice("adamw", impl, ADAMW_IMPLS)
    kw = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}[impl]
    return torch.optim.AdamW(groups, lr=lr, eps=eps, **kw)


def _keep_impl(opt: torch.optim.Optimizer, impl: str) -> None:
    """After ``load_state_dict``: the implementation configured now, not the saved one."""
    for g in opt.param_groups:
        g["foreach"] = True if impl == "foreach" else None
        g["fused"] = True if impl == "fused" else None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def schedule(step: int, cfg: PretrainConfig) -> float:
    """Linear warm-up to 1, then linear decay to 0 at ``cfg.steps``."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    return max(0.0, (cfg.steps - step) / max(1, cfg.steps - cfg.warmup_steps))


def _latest_checkpoint(d: Path) -> Path | None:
    cks = sorted(d.glob("step-*.pt"))
    for p in reversed(cks):
        try:
            torch.load(p, map_location="cpu", weights_only=False)["step"]
            return p
        except Exception:  # a truncated checkpoint (killed mid-save cannot happen: atomic) is skipped
            continue
    return None


def pretrain(arch: Any, cfg: PretrainConfig | None = None, *, workdir: str | os.PathLike[str] | None = None,
             device: str | torch.device = "cpu", on_step: Callable[[int, float], None] | None = None,
             tokenizer: TextTokenizer | None = None) -> PretrainResult:
    """Pretrain ``arch`` with ELECTRA; with ``workdir``, checkpoint and resume there.

    ``device``: ``"cpu"`` (the default), ``"cuda"``, ``"cuda:<index>"`` or ``"auto"``
    (:func:`resolve_device`). ``tokenizer``: skip loading one (and, with a
    ``pretokenized`` corpus already in the cache, skip reading the corpus).
    """
    cfg = cfg or PretrainConfig()
    a = Arch.coerce(arch)
    dev = resolve_device(device)
    docs: list[str] | None = None
    if tokenizer is None:
        docs = read_corpus(cfg.corpus, cfg.max_documents)
        tok = load_tokenizer(docs, cfg.vocab_size)
    else:
        tok = tokenizer
    seqs: np.ndarray
    if cfg.pretokenized:
        seqs = load_sequences(pretokenize(cfg.corpus, tok, cfg.seq_len, max_documents=cfg.max_documents,
                                          cache_dir=cfg.corpus_cache, docs=docs))
    else:
        if docs is None:
            docs = read_corpus(cfg.corpus, cfg.max_documents)
        seqs = np.array(list(pack(docs, tok, cfg.seq_len)), dtype=np.int64)
    if len(seqs) == 0:
        raise ValueError(f"corpus = {cfg.corpus!r} is too short for one sequence of {cfg.seq_len} tokens")

    torch.manual_seed(cfg.seed)
    model = ElectraPair(a, cfg.semantics, seed=cfg.seed).to(dev)
    use_attention(model, cfg.attention)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = make_adamw([{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                     cfg.learning_rate, cfg.adam_eps, cfg.adamw)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: schedule(s, cfg))
    losses: list[float] = []
    dl: list[float] = []
    gl: list[float] = []
    start = 0
    ck_dir = Path(workdir) / "checkpoints" if workdir is not None else None
    if ck_dir is not None:
        ck_dir.mkdir(parents=True, exist_ok=True)
        (Path(workdir) / "pretrain_config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
        last = _latest_checkpoint(ck_dir)
        if last is not None:
            st = torch.load(last, map_location=dev, weights_only=False)
            model.load_state_dict(st["model"])
            opt.load_state_dict(st["optimizer"])
            _keep_impl(opt, cfg.adamw)
            sched.load_state_dict(st["scheduler"])
            losses, dl, gl, start = st["losses"], st["disc_losses"], st["gen_losses"], st["step"]

    gen_encoder: Callable[..., torch.Tensor] = model.generator
    disc_encoder: Callable[..., torch.Tensor] = model.discriminator
    if cfg.compile:  # the encoders have static shapes; the heads at masked positions stay eager
        gen_encoder, disc_encoder = torch.compile(model.generator), torch.compile(model.discriminator)
    amp = autocast(dev, cfg.precision)
    # with no padding in the batch (pretraining sequences are packed), SDPA gets no mask and
    # can use flash attention; the eager path keeps the all-ones mask (bit-identical losses)
    drop_full_mask = cfg.attention == "sdpa"
    source = BatchSource(seqs, tok, cfg.batch_size, cfg.seed, cfg.mask_prob)
    batches: Any = (Prefetcher(source, start, cfg.steps, cfg.prefetch, pin=dev.type == "cuda") if cfg.prefetch
                    else (source(s) for s in range(start, cfg.steps)))
    pending: list[torch.Tensor] = []  # (loss, disc, gen) per step, still on the device

    def flush() -> None:  # one device sync for all steps since the last flush
        if pending:
            for total, d, g in torch.stack(pending).tolist():
                losses.append(total)
                dl.append(d)
                gl.append(g)
            pending.clear()

    saved: list[int] = []
    model.train()
    t0 = time.perf_counter()
    t_warm: float | None = None
    last_ck = _clock()
    try:
        for b in batches:
            step = b.step
            loss, disc_loss, gen_loss = _step(model, gen_encoder, disc_encoder, b, dev, amp, cfg, drop_full_mask)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            opt.step()
            sched.step()
            pending.append(torch.stack([loss.detach(), disc_loss.detach(), gen_loss.detach()]))
            done = step + 1
            if on_step is not None:
                flush()
                on_step(step, losses[-1])
            if done - start == _TIMING_WARMUP and cfg.steps - done > 0:
                _sync(dev)
                t_warm = time.perf_counter()
            if ck_dir is not None and (done % cfg.checkpoint_every == 0 or done == cfg.steps or (
                    cfg.checkpoint_minutes is not None and _clock() - last_ck >= 60 * cfg.checkpoint_minutes)):
                flush()
                _save(ck_dir, done, model, opt, sched, losses, dl, gl)
                saved.append(done)
                last_ck = _clock()
            elif done % cfg.log_every == 0:
                flush()
    finally:
        if isinstance(batches, Prefetcher):
            batches.close()
    flush()
    _sync(dev)
    t1 = time.perf_counter()
    secs = t1 - t0
    trained = cfg.steps - start
    tokens = cfg.batch_size * cfg.seq_len
    steady = (cfg.steps - start - _TIMING_WARMUP) * tokens / (t1 - t_warm) if t_warm is not None and t1 > t_warm else math.nan
    return PretrainResult(losses, dl, gl, secs, trained * tokens / secs if secs > 0 and trained else math.nan,
                          start, model, tok, str(dev), steady, saved)


def _step(model: ElectraPair, gen_encoder: Callable[..., torch.Tensor], disc_encoder: Callable[..., torch.Tensor],
          b: Batch, dev: torch.device, amp: Any, cfg: PretrainConfig,
          drop_full_mask: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The forward of one ELECTRA step: (total loss, discriminator loss, generator loss).

    Masked and attended positions come as flat indices (``x.view(-1)[index]`` is
    ``x[mask]``, element for element), so nothing here waits for a GPU."""
    nb = dev.type == "cuda"
    ids = b.ids.to(dev, non_blocking=nb)
    gen_in = b.generator_input.to(dev, non_blocking=nb)
    midx = b.masked_index.to(dev, non_blocking=nb)
    aidx = b.attended_index.to(dev, non_blocking=nb)
    attn = None if drop_full_mask and b.all_attended else b.attention_mask.to(dev, non_blocking=nb)
    seed = step_seed(cfg.seed, b.step)
    torch.manual_seed(seed + 1)  # dropout (CPU and every GPU)
    with amp:
        h = gen_encoder(gen_in, attn)
        # the generator's vocabulary projection only at masked positions (15 % of the cost)
        gen_logits = model.generator_head(h.reshape(-1, h.shape[-1])[midx]).float()
    target = ids.view(-1)[midx]
    gen_loss = F.cross_entropy(gen_logits, target)
    with torch.no_grad():  # sampled replacements (Gumbel-max = a multinomial draw)
        if dev.type == "cpu":
            u = torch.rand(gen_logits.shape, generator=b.generator)
        else:  # drawn on the GPU: 15 % x batch x 30522 numbers a step are too many to copy
            u = torch.rand(gen_logits.shape, generator=torch.Generator(dev).manual_seed(seed + 2), device=dev)
        sampled = (gen_logits - torch.log(-torch.log(u.clamp_min(1e-20)))).argmax(-1)
    disc_in = ids.clone()
    disc_in.view(-1)[midx] = sampled
    labels = (disc_in != ids).float()
    with amp:
        disc_logits = model.discriminator_head(disc_encoder(disc_in, attn))
    disc_loss = F.binary_cross_entropy_with_logits(disc_logits.reshape(-1)[aidx].float(), labels.view(-1)[aidx])
    return gen_loss + cfg.disc_weight * disc_loss, disc_loss, gen_loss


def _save(d: Path, step: int, model: Any, opt: Any, sched: Any, losses: list[float], dl: list[float], gl: list[float]) -> None:
    path = d / f"step-{step:08d}.pt"
    tmp = d / f".step-{step:08d}.{os.getpid()}.tmp"
    torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "losses": losses, "disc_losses": dl, "gen_losses": gl}, tmp)
    os.replace(tmp, path)  # atomic: a kill never leaves a half-written checkpoint under a real name
    for old in sorted(d.glob("step-*.pt"))[:-2]:
        old.unlink(missing_ok=True)
