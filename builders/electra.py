"""One ELECTRA replaced-token-detection step of the recipe: the model as the TF code
initialised it, the generator's sampling, the two losses, and the optimiser step over
the replicas.

Why apart from :mod:`.pretrain`: this is the step the reference test executes against
the authors' TF graph (``tests/reference/test_tf_recipe.py`` feeds :func:`train_step` the
reference's samples), while :mod:`.pretrain` is the loop around it - data, resuming,
checkpoints, timing - which that test does not need.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import torch
import torch.nn.functional as F

from nasbench_bert.models import ElectraPair
from nasbench_bert.models.operations import Embeddings
from nasbench_bert.spaces.flexibert import Arch

from .accelerator import use_attention
from .corpus import Batch, MaskedInputs, gumbel, scatter_update, step_seed
from .optimization import RecipeOptimizer, learning_rate, replica_gradients, unique_parameters
from .pretrain_config import PretrainConfig


@dataclass
class StepRecord:
    """What one optimiser step did, per replica: the losses (total, discriminator,
    generator; device tensors of shape (replicas,)), the global gradient norm before and
    after clipping, and the base learning rate of the step (float32)."""

    total: torch.Tensor
    disc: torch.Tensor
    gen: torch.Tensor
    grad_norm: torch.Tensor
    clipped_norm: torch.Tensor
    learning_rate: np.float32


def glorot_uniform_(weight: torch.Tensor) -> None:
    """TF's ``glorot_uniform_initializer`` (the default of ``tf.get_variable`` and hence of a
    ``tf.layers.dense`` without ``kernel_initializer``): U(-a, a), a = sqrt(6 / (fan_in + fan_out))."""
    torch.nn.init.xavier_uniform_(weight)


def apply_recipe_init(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Re-draw the weights the TF code initialised with ``tf.layers.dense``'s default
    (Glorot-uniform) rather than truncated normal(0.02): the embedding projections
    (``embeddings_project``, discriminator and generator), the discriminator's output layer
    (``discriminator_predictions/dense_1``) and a GLUE head's output layer
    (``task_specific/<task>/dense``). Drawn from a generator seeded by ``seed``."""
    from nasbench_bert.models import SequenceClassifier
    from nasbench_bert.models.flexibert import ElectraDiscriminatorHead

    targets: list[torch.Tensor] = []
    for m in model.modules():
        if isinstance(m, Embeddings) and isinstance(m.project, torch.nn.Linear):
            targets.append(m.project.weight)
        elif isinstance(m, ElectraDiscriminatorHead):
            targets.append(m.prediction.weight)
        elif isinstance(m, SequenceClassifier) and m.head_kind == "electra_tf":
            targets.append(m.head[-1].weight)
    seen: set[int] = set()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for w in targets:
            if id(w) not in seen:
                seen.add(id(w))
                glorot_uniform_(w)
    return model


def build_model(arch: Any, cfg: PretrainConfig) -> ElectraPair:
    """The generator + discriminator of ``arch`` under ``cfg.semantics``, initialised as the
    TF code initialises them (:func:`apply_recipe_init`), attention as ``cfg.attention``."""
    model = ElectraPair(Arch.coerce(arch), cfg.semantics, seed=cfg.seed)
    apply_recipe_init(model, cfg.seed + 1)
    use_attention(model, cfg.attention)
    return model


def schedule(step: int, cfg: PretrainConfig) -> np.float32:
    """The pretraining learning rate of ``step`` (:func:`learning_rate` with the config's
    ``learning_rate``, ``steps`` and ``warmup_steps``)."""
    return learning_rate(step, cfg.learning_rate, cfg.steps, cfg.warmup_steps)


#: ``sampler(replica, logits)``: the replacement token ids (replica batch, N) drawn from the
#: generator's ``logits`` (replica batch, N, vocabulary)
Sampler = Callable[[int, torch.Tensor], torch.Tensor]


def gumbel_sampler(batch: Batch, cfg: PretrainConfig, dev: torch.device) -> Sampler:
    """ELECTRA's sampler (``sample_from_softmax``): ``argmax(logits + gumbel(u))`` with uniform
    noise ``u`` drawn per replica from the step's CPU generator (on CPU) or from a device
    generator seeded by ``(seed, step)`` (on a GPU: 15 % x batch x 30522 numbers a step are
    too many to copy)."""
    gen = batch.generator if dev.type == "cpu" else torch.Generator(dev).manual_seed(step_seed(cfg.seed, batch.step) + 2)

    def sample(replica: int, logits: torch.Tensor) -> torch.Tensor:
        u = torch.rand(logits.shape, generator=gen, device=dev)
        return torch.argmax(logits + gumbel(u), dim=-1)

    return sample


def electra_losses(model: ElectraPair, b: Batch, cfg: PretrainConfig, *, replica: int, sampler: Sampler,
                   gen_encoder: Callable[..., torch.Tensor] | None = None,
                   disc_encoder: Callable[..., torch.Tensor] | None = None, amp: Any = None,
                   drop_full_mask: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The losses of one replica's batch ``b`` (on the model's device): (total, discriminator,
    generator), as ``PretrainingModel`` computes them.

    Generator: the MLM cross-entropy at the masked slots, ``sum(w * nll) / (sum(w) + 1e-6)``.
    The sampled replacements are written at the masked positions of the original ids
    (:func:`.corpus.scatter_update`); a position is "replaced" where its token changed.
    Discriminator: the sigmoid cross-entropy over the real tokens,
    ``sum(mask * bce) / (sum(mask) + 1e-6)``. Total: ``gen_weight * gen + disc_weight * disc``.
    """
    # "is None", not "or": a compiled module's truth value calls len(), which raises
    gen_encoder = model.generator if gen_encoder is None else gen_encoder
    disc_encoder = model.discriminator if disc_encoder is None else disc_encoder
    amp = amp if amp is not None else nullcontext()
    m = b.masked
    attn = None if drop_full_mask and b.all_attended else b.input_mask
    with amp:
        h = gen_encoder(m.generator_input, attn, b.segment_ids)
        at = torch.gather(h, 1, m.positions[..., None].expand(-1, -1, h.shape[-1]))
        gen_logits = model.generator_head(at).float()
    nll = F.cross_entropy(gen_logits.reshape(-1, gen_logits.shape[-1]), m.masked_ids.reshape(-1),
                          reduction="none").view_as(m.weights)
    gen_loss = (m.weights * nll).sum() / (m.weights.sum() + 1e-6)
    with torch.no_grad():
        sampled = sampler(replica, gen_logits.detach())
    fake, written = scatter_update(b.ids, sampled, m.positions)
    labels = (written * (fake != b.ids).long()).float()
    with amp:
        disc_logits = model.discriminator_head(disc_encoder(fake, attn, b.segment_ids)).float()
    w = b.input_mask.float()
    bce = F.binary_cross_entropy_with_logits(disc_logits, labels, reduction="none")
    disc_loss = (bce * w).sum() / (1e-6 + w.sum())
    return cfg.gen_weight * gen_loss + cfg.disc_weight * disc_loss, disc_loss, gen_loss


def _to(b: Batch, dev: torch.device) -> Batch:
    nb = dev.type == "cuda"
    m = b.masked
    return Batch(b.step, b.ids.to(dev, non_blocking=nb), b.input_mask.to(dev, non_blocking=nb),
                 b.segment_ids.to(dev, non_blocking=nb),
                 MaskedInputs(*(x.to(dev, non_blocking=nb) for x in (m.generator_input, m.positions, m.masked_ids, m.weights))),
                 b.generator)


def train_step(model: ElectraPair, opt: RecipeOptimizer, batch: Batch, cfg: PretrainConfig, dev: torch.device, *,
               gen_encoder: Callable[..., torch.Tensor] | None = None, disc_encoder: Callable[..., torch.Tensor] | None = None,
               amp: Any = None, sampler: Sampler | None = None) -> StepRecord:
    """One optimiser step of the recipe on ``batch`` (step ``batch.step``): the batch is cut
    into ``cfg.replicas`` consecutive shards; each shard's losses give gradients clipped at
    ``cfg.max_grad_norm`` on their own; the sum of the clipped gradients updates the model at
    the rate :func:`schedule` gives step ``batch.step``. ``sampler`` overrides the generator's
    sampling (the reference test feeds the reference's samples)."""
    drop_full_mask = cfg.attention == "sdpa"  # no padding: SDPA gets no mask (flash attention)
    sampler = sampler or gumbel_sampler(batch, cfg, dev)
    torch.manual_seed(step_seed(cfg.seed, batch.step) + 1)  # dropout (CPU and every GPU)
    params = unique_parameters(model)
    recs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def losses() -> Iterable[torch.Tensor]:
        for r in range(cfg.replicas):
            total, d, g = electra_losses(model, _to(batch.shard(r, cfg.replicas), dev), cfg, replica=r, sampler=sampler,
                                         gen_encoder=gen_encoder, disc_encoder=disc_encoder, amp=amp,
                                         drop_full_mask=drop_full_mask)
            recs.append((total.detach(), d.detach(), g.detach()))
            yield total

    grads, norms, clipped = replica_gradients(params, losses(), cfg.max_grad_norm)
    for p, g in zip(params, grads):
        p.grad = g
    lr = schedule(batch.step, cfg)
    opt.step(lr, batch.step + 1)
    for p in params:
        p.grad = None
    t, d, g = (torch.stack(x) for x in zip(*recs))
    return StepRecord(t, d, g, norms, clipped, lr)
