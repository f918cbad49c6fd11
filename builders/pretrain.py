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
its last checkpoint therefore produces exactly the losses of an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from nasbench_bert.models import ElectraPair
from nasbench_bert.semantics import get_semantics
from nasbench_bert.spaces.flexibert import Arch

from nasbench_bert.text import TextTokenizer, load_tokenizer, pack, read_corpus


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

    def __post_init__(self) -> None:
        for f in ("steps", "batch_size", "seq_len", "checkpoint_every", "log_every"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{f} = {v!r} is not allowed; allowed: a positive integer")
        if not 0 < self.mask_prob < 1:
            raise ValueError(f"mask_prob = {self.mask_prob!r} is not allowed; allowed: 0 < mask_prob < 1")
        if self.seq_len > 512:
            raise ValueError(f"seq_len = {self.seq_len} is not allowed; allowed: 4 ... 512")
        self.semantics = get_semantics(self.semantics).name  # old names accepted, stored canonical


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


def _step_seed(seed: int, step: int) -> int:
    return (seed * 1_000_003 + step * 7919 + 17) % (2**63 - 1)


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
             device: str = "cpu", on_step: Callable[[int, float], None] | None = None,
             tokenizer: TextTokenizer | None = None) -> PretrainResult:
    """Pretrain ``arch`` with ELECTRA; with ``workdir``, checkpoint and resume there."""
    cfg = cfg or PretrainConfig()
    a = Arch.coerce(arch)
    docs = read_corpus(cfg.corpus, cfg.max_documents)
    tok = tokenizer or load_tokenizer(docs, cfg.vocab_size)
    seqs = np.array(list(pack(docs, tok, cfg.seq_len)), dtype=np.int64)
    if len(seqs) == 0:
        raise ValueError(f"corpus = {cfg.corpus!r} is too short for one sequence of {cfg.seq_len} tokens")
    special = torch.tensor(sorted({tok.pad_id, tok.cls_id, tok.sep_id}))

    torch.manual_seed(cfg.seed)
    model = ElectraPair(a, cfg.semantics, seed=cfg.seed).to(device)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.learning_rate, eps=cfg.adam_eps)
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
            st = torch.load(last, map_location=device, weights_only=False)
            model.load_state_dict(st["model"])
            opt.load_state_dict(st["optimizer"])
            sched.load_state_dict(st["scheduler"])
            losses, dl, gl, start = st["losses"], st["disc_losses"], st["gen_losses"], st["step"]

    model.train()
    t0 = time.perf_counter()
    n_epoch = len(seqs)
    for step in range(start, cfg.steps):
        g = torch.Generator().manual_seed(_step_seed(cfg.seed, step))
        epoch, pos = divmod(step * cfg.batch_size, n_epoch)
        perm = np.random.default_rng([cfg.seed, epoch]).permutation(n_epoch)
        rows = [perm[(pos + i) % n_epoch] for i in range(cfg.batch_size)]
        ids = torch.from_numpy(seqs[rows]).to(device)
        attn = (ids != tok.pad_id).long()
        # mask 15 % of the non-special tokens
        maskable = ~torch.isin(ids.cpu(), special)
        masked = (torch.rand(ids.shape, generator=g) < cfg.mask_prob) & maskable
        if not masked.any():
            masked[0, 1] = True
        masked = masked.to(device)
        gen_in = ids.masked_fill(masked, tok.mask_id)
        torch.manual_seed(_step_seed(cfg.seed, step) + 1)  # dropout
        # the generator's vocabulary projection only at masked positions (15 % of the cost)
        gen_logits = model.generator_head(model.generator(gen_in, attn)[masked])
        gen_loss = F.cross_entropy(gen_logits, ids[masked])
        with torch.no_grad():  # sampled replacements (Gumbel-max = a multinomial draw)
            u = torch.rand(gen_logits.shape, generator=g).to(device)
            sampled = (gen_logits - torch.log(-torch.log(u.clamp_min(1e-20)))).argmax(-1)
        disc_in = ids.clone()
        disc_in[masked] = sampled
        labels = (disc_in != ids).float()
        disc_logits = model.discriminator_logits(disc_in, attn)
        disc_loss = F.binary_cross_entropy_with_logits(disc_logits[attn.bool()], labels[attn.bool()])
        loss = gen_loss + cfg.disc_weight * disc_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        dl.append(float(disc_loss.detach()))
        gl.append(float(gen_loss.detach()))
        if on_step is not None:
            on_step(step, losses[-1])
        done = step + 1
        if ck_dir is not None and (done % cfg.checkpoint_every == 0 or done == cfg.steps):
            _save(ck_dir, done, model, opt, sched, losses, dl, gl)
    secs = time.perf_counter() - t0
    trained = cfg.steps - start
    return PretrainResult(losses, dl, gl, secs, trained * cfg.batch_size * cfg.seq_len / secs if secs > 0 and trained else math.nan,
                          start, model, tok)


def _save(d: Path, step: int, model: Any, opt: Any, sched: Any, losses: list[float], dl: list[float], gl: list[float]) -> None:
    path = d / f"step-{step:08d}.pt"
    tmp = d / f".step-{step:08d}.{os.getpid()}.tmp"
    torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "losses": losses, "disc_losses": dl, "gen_losses": gl}, tmp)
    os.replace(tmp, path)  # atomic: a kill never leaves a half-written checkpoint under a real name
    for old in sorted(d.glob("step-*.pt"))[:-2]:
        old.unlink(missing_ok=True)
