"""The recipe's optimiser, learning-rate schedule and gradients, as the authors' TF code
(``model/optimization.py``) computes them.

Why apart: these are the numbers a reference test holds step for step against the TF
graph (``tests/reference/test_tf_recipe.py``), and GLUE finetuning runs the same
optimiser with layer-wise rates (:mod:`.glue`), so neither training loop owns them:
Adam without bias correction run by torch's AdamW kernels (:class:`RecipeOptimizer`),
decoupled weight decay except for LayerNorm parameters and biases (:func:`decays`), the
polynomial decay with linear warm-up in float32 (:func:`learning_rate`), and per-replica
clipping summed over replicas as the TPU's ``cross_replica_sum`` did
(:func:`replica_gradients`).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import torch

from nasbench_bert.checks import check_int, check_real

from .accelerator import _check_choice, _keep_impl, make_adamw


#: ``optimizer``: "adam_weight_decay" (the authors' ``AdamWeightDecayOptimizer``: no bias
#: correction) or "adamw" (torch's AdamW with bias correction: a deviation from the recipe)
OPTIMIZERS = ("adam_weight_decay", "adamw")


def check_optimizer_fields(cfg: Any) -> None:
    """Validate the optimiser fields that PretrainConfig and FinetuneConfig share."""
    _check_choice("optimizer", cfg.optimizer, OPTIMIZERS)
    check_real("learning_rate", cfg.learning_rate, low=0, low_open=True)
    check_real("weight_decay", cfg.weight_decay, low=0)
    check_real("adam_eps", cfg.adam_eps, low=0, low_open=True)
    check_real("adam_beta1", cfg.adam_beta1, low=0, high=1)
    check_real("adam_beta2", cfg.adam_beta2, low=0, high=1)
    check_real("max_grad_norm", cfg.max_grad_norm, low=0, low_open=True)
    check_int("replicas", cfg.replicas, low=1)
    check_int("seed", cfg.seed, low=0)


def learning_rate(step: int, base: float, total: int, warmup: float) -> np.float32:
    """The learning rate of (0-based) ``step``, as ``model/optimization.create_optimizer``
    computes it in float32: ``polynomial_decay(base, step, total, end=0, power=1)``, i.e.
    ``base * (1 - min(step, total) / total)``, times ``min(1, step / warmup)``. It is 0 at
    step 0, and ``base * (1 - warmup / total)`` (not ``base``) at the end of warm-up."""
    f = np.float32
    s, t = f(step), f(total)
    lr = (f(base) - f(0.0)) * (f(1.0) - np.minimum(s, t) / t) + f(0.0)
    if warmup:
        lr = lr * np.minimum(f(1.0), s / f(warmup))
    return f(lr)


def decays(name: str, owner: torch.nn.Module) -> bool:
    """Whether the parameter ``name`` of module ``owner`` gets weight decay: the TF code
    excludes every variable whose name contains ``LayerNorm``, ``layer_norm`` or ``bias``,
    i.e. LayerNorm scales and offsets and every bias (dense biases, the generator's output
    bias, a convolution's bias)."""
    return not (isinstance(owner, torch.nn.LayerNorm) or "bias" in name.rsplit(".", 1)[-1])


def decay_flags(model: torch.nn.Module) -> dict[str, bool]:
    """:func:`decays` for every (named, deduplicated) parameter of ``model``."""
    owners = {f"{mn}.{pn}" if mn else pn: mod for mn, mod in model.named_modules() for pn, _ in mod.named_parameters(recurse=False)}
    return {n: decays(n, owners[n]) for n, _ in model.named_parameters()}


class RecipeOptimizer:
    """The authors' optimiser, run by torch's AdamW kernels.

    ``optimizer="adam_weight_decay"`` is BERT's ``AdamWeightDecayOptimizer``::

        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        p = p - lr (m / (sqrt(v) + eps) + wd p)          # no bias correction

    torch's AdamW computes ``p (1 - lr' wd') - lr' / c1 * m / (sqrt(v) / sqrt(c2) + eps')``
    with ``c1 = 1 - b1^t``, ``c2 = 1 - b2^t``; with ``lr' = lr c1 / sqrt(c2)``,
    ``eps' = eps / sqrt(c2)`` and ``wd' = wd sqrt(c2) / c1`` (set before every step) that is
    exactly the update above, so the "default", "foreach" and "fused" kernels all run it.
    ``optimizer="adamw"``: torch's AdamW as is (bias-corrected; a deviation).

    ``groups``: dicts with ``params``, ``lr_scale`` (the layer-wise factor; 1.0 in
    pretraining) and ``decay`` (:func:`decays`). Each group's rate is the step's base rate
    times ``lr_scale``, multiplied in float32 as the TF code multiplies its tensors.
    """

    def __init__(self, groups: list[dict[str, Any]], *, optimizer: str, weight_decay: float, betas: tuple[float, float],
                 eps: float, impl: str):
        _check_choice("optimizer", optimizer, OPTIMIZERS)
        self.kind, self.weight_decay, self.betas, self.eps, self.impl = optimizer, weight_decay, betas, eps, impl
        self.opt = make_adamw([{"params": g["params"], "lr_scale": float(g["lr_scale"]), "decay": bool(g["decay"])}
                               for g in groups if g["params"]], 0.0, eps, impl, betas)

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.opt.param_groups

    def group_rates(self, base: np.float32) -> list[np.float32]:
        """Each group's learning rate at base rate ``base`` (float32, as in the TF graph)."""
        return [np.float32(np.float32(base) * np.float32(g["lr_scale"])) for g in self.opt.param_groups]

    def step(self, base: np.float32, t: int) -> None:
        """One update at base rate ``base``; ``t`` counts the updates, this one included."""
        b1, b2 = self.betas
        c1, c2 = 1.0 - b1 ** t, math.sqrt(1.0 - b2 ** t)
        for g, lr in zip(self.opt.param_groups, self.group_rates(base)):
            wd = self.weight_decay if g["decay"] else 0.0
            if self.kind == "adamw":
                g["lr"], g["eps"], g["weight_decay"] = float(lr), self.eps, wd
            else:
                g["lr"], g["eps"], g["weight_decay"] = float(lr) * c1 / c2, self.eps / c2, wd * c2 / c1
        self.opt.step()

    def state_dict(self) -> dict[str, Any]:
        return self.opt.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.opt.load_state_dict(state)
        _keep_impl(self.opt, self.impl)


def optimizer_groups(model: torch.nn.Module, scales: Iterable[tuple[float, torch.nn.Module]] | None = None) -> list[dict[str, Any]]:
    """Parameter groups: for each ``(lr_scale, module)`` of ``scales`` (default: the whole
    model at 1.0), its parameters with and without weight decay (:func:`decays`)."""
    flags = decay_flags(model)
    by_id = {id(p): n for n, p in model.named_parameters()}
    groups = []
    for scale, module in (scales or [(1.0, model)]):
        ps = list(module.parameters())
        for d in (True, False):
            groups.append({"params": [p for p in ps if flags[by_id[id(p)]] is d], "lr_scale": scale, "decay": d})
    return [g for g in groups if g["params"]]


def make_optimizer(model: torch.nn.Module, cfg: Any,
                   scales: Iterable[tuple[float, torch.nn.Module]] | None = None) -> RecipeOptimizer:
    """The recipe's optimiser over ``model`` (layer-wise ``scales`` for finetuning)."""
    return RecipeOptimizer(optimizer_groups(model, scales), optimizer=cfg.optimizer, weight_decay=cfg.weight_decay,
                           betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps, impl=cfg.adamw)


def global_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """``tf.global_norm``: the 2-norm of all gradients together."""
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)).float())


def replica_gradients(params: list[torch.nn.Parameter], losses: Iterable[torch.Tensor],
                      clip: float) -> tuple[list[torch.Tensor | None], torch.Tensor, torch.Tensor]:
    """The summed, per-replica clipped gradients of ``params``: for each replica's loss the
    gradient, scaled by ``clip * min(1 / norm, 1 / clip)`` (``tf.clip_by_global_norm``), then
    summed over replicas (``cross_replica_sum``). Returns the sums (None for a parameter no
    replica's loss reaches, which the optimiser then leaves alone as the TF code does), and
    the per-replica norms before and after clipping."""
    acc: list[torch.Tensor] | None = None
    used = [False] * len(params)
    norms, clipped = [], []
    inv_clip = torch.tensor(1.0 / clip)
    for loss in losses:
        gs = torch.autograd.grad(loss, params, allow_unused=True)
        used = [u or g is not None for u, g in zip(used, gs)]
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, gs)]
        norm = global_norm(grads)
        scale = clip * torch.minimum(1.0 / norm, inv_clip.to(norm.device))
        torch._foreach_mul_(grads, scale)
        norms.append(norm)
        clipped.append(norm * scale)
        if acc is None:
            acc = grads
        else:
            torch._foreach_add_(acc, grads)
    assert acc is not None
    return [g if u else None for g, u in zip(acc, used)], torch.stack(norms), torch.stack(clipped)


def unique_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]
