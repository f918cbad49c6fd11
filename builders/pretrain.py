"""ELECTRA replaced-token-detection pretraining of a FlexiBERT arch, resumable, with the
training recipe of the authors' TensorFlow code step for step.

The recipe (``tensorflow-model/run_pretraining.py``, ``model/optimization.py``,
``pretrain/pretrain_helpers.py`` in the upstream release, executed against this module by
``tests/reference/test_tf_recipe.py``):

* **data**: batches of 128 sequences of 128 tokens; ELECTRA's dynamic masking
  (:func:`.corpus.electra_mask`): ``round(0.15 n)`` positions per sequence (at most 19),
  drawn with replacement among the real tokens other than [CLS], [SEP], [MASK]; 85 % of
  them become [MASK], the rest keep their token;
* **model**: ``ElectraPair(arch, semantics)`` (by default ``as_trained``, the model the TF
  code built), with the TF initialisers: truncated normal(0.02) everywhere except the
  embedding projections and the discriminator's output layer, which ``tf.layers.dense``
  initialises Glorot-uniform (:func:`apply_recipe_init`); dropout 0.1;
* **loss**: generator MLM loss (mean over the used slots) + 50 x discriminator loss (mean
  over the real tokens); replacements sampled from the generator by Gumbel-max;
* **optimiser**: ``AdamWeightDecayOptimizer`` - Adam *without bias correction*, beta
  0.9/0.999, eps 1e-6, decoupled weight decay 0.01 except for LayerNorm parameters and
  biases (:class:`RecipeOptimizer`);
* **schedule**: ``polynomial_decay(5e-4, step, 100000, power=1) * min(1, step / 10000)``
  (:func:`learning_rate`): 0 at step 0, ``lr (1 - W/T)`` at the end of warm-up, not ``lr``;
* **replicas**: the runs used a TPUv2-8 (``num_tpu_cores = 8``): each of the 8 cores took 16
  of the 128 sequences, computed its own losses and gradients, clipped them at global norm
  1.0 on its own, and the 8 clipped gradients were summed (``CrossShardOptimizer``'s
  ``cross_replica_sum``; ``create_optimizer`` takes gradients with ``tf.gradients``, so the
  loss is never divided by the replica count). ``replicas=8`` does exactly that.

Deviations are explicit options that the entry records: ``optimizer="adamw"`` (torch's
AdamW, with bias correction), ``replicas=1`` (one global clip), ``precision="bf16"``.

Reproducibility: the batch, the masking noise, the generator's samples and dropout at step
``s`` are all drawn from generators seeded by ``(seed, s)``, and a checkpoint stores model,
optimiser and the loss history. A run killed at any point and restarted from its last
checkpoint therefore produces exactly the losses of an uninterrupted run (on CPU, with any
of the options below; on a GPU the random streams are the same but reductions are not
bit-reproducible, see docs/builders.md, "Accelerators").

Accelerator options (all off by default, which gives exactly the losses of the plain
fp32 loop): ``precision="bf16"`` (autocast, fp32 master weights), ``attention="sdpa"``
(``scaled_dot_product_attention``), ``adamw="foreach"`` / ``"fused"`` (torch's multi-tensor
or fused AdamW kernels running the recipe's optimiser), ``compile=True``
(``torch.compile`` of both encoders), ``pretokenized=True`` (a memory-mapped corpus,
:mod:`.corpus`), ``prefetch=n`` (a background thread making batches ahead) and
``checkpoint_minutes`` (a cadence in wall time besides ``checkpoint_every`` steps).
:data:`ACCELERATED` holds the set meant for GPUs.

The modules, one concept each: :mod:`.pretrain_config` (what is trained, checked),
:mod:`.corpus` (data and batching), :mod:`.optimization` (optimiser, schedule,
gradients), :mod:`.electra` (the model's initialisation, the losses, one step),
:mod:`.accelerator` (device, precision, kernels) and this module, the resumable loop.
Every name they define that this module used to define is importable from here too.
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

from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.models import ElectraPair
from nasbench_bert.spaces.flexibert import Arch
from nasbench_bert.text import TextTokenizer, load_tokenizer, pack, read_corpus

from . import checkpoints
from .accelerator import (
    ACCELERATED, ADAMW_IMPLS, ATTENTION_IMPLS, PRECISIONS, _sync, autocast, check_accelerator_fields, make_adamw,
    resolve_device, use_attention,
)
from .corpus import Batch, BatchSource, Prefetcher, load_sequences, pretokenize, step_seed
from .electra import (
    Sampler, StepRecord, apply_recipe_init, build_model, electra_losses, glorot_uniform_, gumbel_sampler, schedule,
    train_step,
)
from .optimization import (
    OPTIMIZERS, RecipeOptimizer, check_optimizer_fields, decay_flags, decays, global_norm, learning_rate, make_optimizer,
    optimizer_groups, replica_gradients, unique_parameters,
)
from .pretrain_config import EXECUTION_FIELDS, MAX_VOCAB, MIN_VOCAB, PretrainConfig, recipe_fields

__all__ = [
    "pretrain", "PretrainResult",
    "PretrainConfig", "EXECUTION_FIELDS", "MIN_VOCAB", "MAX_VOCAB", "recipe_fields",
    "ACCELERATED", "ADAMW_IMPLS", "ATTENTION_IMPLS", "PRECISIONS", "autocast", "check_accelerator_fields", "make_adamw",
    "resolve_device", "use_attention",
    "OPTIMIZERS", "RecipeOptimizer", "check_optimizer_fields", "decay_flags", "decays", "global_norm", "learning_rate",
    "make_optimizer", "optimizer_groups", "replica_gradients", "unique_parameters",
    "Sampler", "StepRecord", "apply_recipe_init", "build_model", "electra_losses", "glorot_uniform_", "gumbel_sampler",
    "schedule", "train_step",
]


_TIMING_WARMUP = 3  # steps left out of steady_tokens_per_second (compilation, allocator warm-up)

_clock = time.monotonic  # the checkpoint_minutes clock (a test replaces it)


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


def _check_workdir_recipe(path: Path, cfg: PretrainConfig) -> None:
    """A workdir's checkpoints belong to one recipe: resuming them under another would mix two."""
    if not path.is_file():
        return
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    mine = recipe_fields(cfg)
    diff = sorted(k for k in mine if k in old and old[k] != mine[k])
    if diff:
        raise InvalidArgumentError(
            f"workdir = {str(path.parent)!r} holds checkpoints of another recipe (fields {diff} differ: "
            f"{ {k: old[k] for k in diff} } there, { {k: mine[k] for k in diff} } now); allowed: the same recipe, "
            "or another workdir")


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
    tok, seqs = _training_sequences(cfg, tokenizer)
    model = build_model(a, cfg).to(dev)
    opt = make_optimizer(model, cfg)
    ck_dir, hist = _resume(workdir, cfg, model, opt, dev)

    gen_encoder: Callable[..., torch.Tensor] = model.generator
    disc_encoder: Callable[..., torch.Tensor] = model.discriminator
    if cfg.compile:  # the encoders have static shapes; the heads at masked positions stay eager
        gen_encoder, disc_encoder = torch.compile(model.generator), torch.compile(model.discriminator)
    amp = autocast(dev, cfg.precision)
    source = BatchSource(seqs, tok, cfg.batch_size, cfg.seed, cfg.mask_prob)
    batches: Any = (Prefetcher(source, hist.start, cfg.steps, cfg.prefetch, pin=dev.type == "cuda") if cfg.prefetch
                    else (source(s) for s in range(hist.start, cfg.steps)))

    def step_fn(b: Batch) -> Any:
        return train_step(model, opt, b, cfg, dev, gen_encoder=gen_encoder, disc_encoder=disc_encoder, amp=amp)

    model.train()
    t0 = time.perf_counter()
    saved, t_warm = _run_steps(batches, step_fn, hist, cfg, dev, on_step, ck_dir, model, opt)
    t1 = time.perf_counter()
    secs = t1 - t0
    trained = cfg.steps - hist.start
    tokens = cfg.batch_size * cfg.seq_len
    steady = ((cfg.steps - hist.start - _TIMING_WARMUP) * tokens / (t1 - t_warm) if t_warm is not None and t1 > t_warm
              else math.nan)
    return PretrainResult(hist.losses, hist.disc, hist.gen, secs, trained * tokens / secs if secs > 0 and trained else math.nan,
                          hist.start, model, tok, str(dev), steady, saved)


def _training_sequences(cfg: PretrainConfig, tokenizer: TextTokenizer | None) -> tuple[TextTokenizer, np.ndarray]:
    """The tokenizer (``tokenizer``, or one fitted to the corpus) and the packed
    training sequences of ``cfg.corpus`` (from the pretokenized cache when
    ``cfg.pretokenized``; the corpus is then read only when the cache needs it)."""
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
    return tok, seqs


@dataclass
class _History:
    """The per-step losses of one run (restored from the checkpoint it resumes) and the
    step it starts at. A step's losses stay on the device until :meth:`flush`, so that
    one device sync serves every step since the last one."""

    losses: list[float] = field(default_factory=list)
    disc: list[float] = field(default_factory=list)
    gen: list[float] = field(default_factory=list)
    start: int = 0
    #: (loss, disc, gen) per step, still on the device
    pending: list[torch.Tensor] = field(default_factory=list)

    def add(self, rec: Any) -> None:
        self.pending.append(torch.stack([rec.total.mean(), rec.disc.mean(), rec.gen.mean()]))

    def flush(self) -> None:
        if self.pending:
            for total, d, g in torch.stack(self.pending).tolist():
                self.losses.append(total)
                self.disc.append(d)
                self.gen.append(g)
            self.pending.clear()


def _resume(workdir: str | os.PathLike[str] | None, cfg: PretrainConfig, model: ElectraPair, opt: RecipeOptimizer,
            dev: torch.device) -> tuple[Path | None, _History]:
    """The checkpoint folder of ``workdir`` (None without one) and the history to go on
    from: with a checkpoint there (of the same recipe, checked), ``model`` and ``opt``
    are restored from the latest and the history is its; else an empty one."""
    hist = _History()
    ck_dir = Path(workdir) / "checkpoints" if workdir is not None else None
    if ck_dir is not None:
        ck_dir.mkdir(parents=True, exist_ok=True)
        _check_workdir_recipe(Path(workdir) / "pretrain_config.json", cfg)
        (Path(workdir) / "pretrain_config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
        last = checkpoints.latest(ck_dir, dev)  # weights-only: a planted file is refused, never run
        if last is not None:
            st = last[1]
            model.load_state_dict(st["model"])
            opt.load_state_dict(st["optimizer"])
            hist = _History(st["losses"], st["disc_losses"], st["gen_losses"], st["step"])
    return ck_dir, hist


def _run_steps(batches: Any, step_fn: Callable[[Batch], Any], hist: _History, cfg: PretrainConfig, dev: torch.device,
               on_step: Callable[[int, float], None] | None, ck_dir: Path | None, model: ElectraPair,
               opt: RecipeOptimizer) -> tuple[list[int], float | None]:
    """Train on every batch of ``batches``, recording losses in ``hist`` and writing a
    checkpoint to ``ck_dir`` every ``cfg.checkpoint_every`` steps, at the last step and
    every ``cfg.checkpoint_minutes``. Returns the steps checkpointed and the time the
    steady-state timing starts (None when the run is too short for one); the device
    is synchronised before it returns."""
    saved: list[int] = []
    t_warm: float | None = None
    last_ck = _clock()
    try:
        for b in batches:
            step = b.step
            hist.add(step_fn(b))
            done = step + 1
            if on_step is not None:
                hist.flush()
                on_step(step, hist.losses[-1])
            if done - hist.start == _TIMING_WARMUP and cfg.steps - done > 0:
                _sync(dev)
                t_warm = time.perf_counter()
            if ck_dir is not None and (done % cfg.checkpoint_every == 0 or done == cfg.steps or (
                    cfg.checkpoint_minutes is not None and _clock() - last_ck >= 60 * cfg.checkpoint_minutes)):
                hist.flush()
                checkpoints.save(ck_dir, done, model, opt, hist.losses, hist.disc, hist.gen)
                saved.append(done)
                last_ck = _clock()
            elif done % cfg.log_every == 0:
                hist.flush()
    finally:
        if isinstance(batches, Prefetcher):
            batches.close()
    hist.flush()
    _sync(dev)
    return saved, t_warm
