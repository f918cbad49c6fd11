"""The accelerator path of the builders: where a run trains and how fast, never what it computes.

Why apart: precision, the attention kernel, torch's AdamW kernels and the device are
execution choices (:data:`~builders.pretrain_config.EXECUTION_FIELDS`, except precision,
which is recorded as a deviation). Pretraining and GLUE finetuning share every one of
them, so both configs validate them here (:func:`check_accelerator_fields`) and the
loops ask this module for the device, the autocast context and the AdamW kernel. All
off by default: the plain fp32 loop on the CPU gives the recipe's losses exactly.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch

from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.models.flexibert import FlexiBERTEncoder
from nasbench_bert.models.operations import ATTENTION_IMPLS as ATTENTION_IMPLS  # the values of ``attention``
from nasbench_bert.models.operations import SelfAttention, check_attention


#: ``precision``: "fp32" everywhere, or "bf16" autocast (weights, gradients and the
#: optimiser stay fp32; the losses are computed in fp32)
PRECISIONS = ("fp32", "bf16")

#: ``adamw``: the implementation of torch's AdamW that runs the optimiser ("default":
#: torch's choice, the single-tensor loop on CPU; "foreach": multi-tensor; "fused": one kernel)
ADAMW_IMPLS = ("default", "foreach", "fused")

#: the options for a GPU run (docs/builders.md, "Accelerators"):
#: ``PretrainConfig(**ACCELERATED)`` or ``pretrain_config=ACCELERATED`` in ``build_entry``
ACCELERATED: dict[str, Any] = {"precision": "bf16", "attention": "sdpa", "adamw": "fused", "compile": True,
                               "pretokenized": True, "prefetch": 4, "checkpoint_minutes": 10.0}

_DEVICES = "'auto', 'cpu', 'cuda', 'cuda:<index>'"


def _check_choice(field_name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if not any(type(value) is type(a) and value == a for a in allowed):  # strict: 1 is not True, True not "fp32"
        raise InvalidArgumentError(f"{field_name} = {value!r} is not allowed; allowed values: {list(allowed)}")


def check_accelerator_fields(cfg: Any) -> None:
    """Validate the accelerator fields that PretrainConfig and FinetuneConfig share."""
    _check_choice("precision", cfg.precision, PRECISIONS)
    check_attention(cfg.attention, "attention")
    _check_choice("adamw", cfg.adamw, ADAMW_IMPLS)
    _check_choice("compile", cfg.compile, (False, True))


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


def make_adamw(groups: Any, lr: float, eps: float, impl: str, betas: tuple[float, float] = (0.9, 0.999)) -> torch.optim.AdamW:
    """torch's AdamW with the implementation ``impl`` (see :data:`ADAMW_IMPLS`)."""
    _check_choice("adamw", impl, ADAMW_IMPLS)
    kw = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}[impl]
    return torch.optim.AdamW(groups, lr=lr, eps=eps, betas=betas, **kw)


def _keep_impl(opt: torch.optim.Optimizer, impl: str) -> None:
    """After ``load_state_dict``: the implementation configured now, not the saved one."""
    for g in opt.param_groups:
        g["foreach"] = True if impl == "foreach" else None
        g["fused"] = True if impl == "fused" else None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
