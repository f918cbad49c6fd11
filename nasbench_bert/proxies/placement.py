"""Putting a proxy pass on a device without changing what it computes.

A proxy value on a GPU must be the CPU's value up to rounding (float64: within 1e-9
relative, tested on a CUDA machine), so nothing random may be drawn on the device:

* **weights**: every model is built on the CPU from the seeded CPU generator, exactly as
  a CPU run builds it (``authors`` reproduces the notebook's weights bit for bit), then
  moved (:func:`place`);
* **batches**: made on the CPU from their seeded generator, then moved (:func:`batch_on`);
* **dropout masks** (train mode, the ``authors`` semantics): a CUDA dropout kernel draws
  from the GPU's generator, which would give other masks. :func:`place` makes every
  ``nn.Dropout`` of a model that leaves the CPU a :class:`HostRngDropout`, which draws
  its mask on the CPU from the global CPU generator with the very call the CPU kernel
  makes (``bernoulli_(1 - p)`` on a CPU tensor shaped like the input, then ``/ (1 - p)``)
  and multiplies on the device. The masks and the CPU generator's state afterwards are
  the CPU run's (LPZero's second pass continues from that state);
* **other draws** (Zen's Gaussian weights and inputs, noise, probes): from CPU generators,
  moved (:func:`host_normal_`).

On the CPU none of this runs: :func:`place` and :func:`batch_on` return their argument,
so a CPU value is computed by the very code it was computed by before devices existed.
"""

from __future__ import annotations

import dataclasses

from .._torch import torch
from torch import nn

from ..vocabulary import DeviceKind
from .inputs import Batch

__all__ = ["HostRngDropout", "batch_on", "host_normal_", "place"]


class HostRngDropout(nn.Dropout):
    """``nn.Dropout`` whose train-mode mask comes from the CPU generator, whatever device
    the input is on (see the module docstring); in eval mode, or for ``p == 0``, the
    input itself, as ``nn.Dropout`` returns it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0 or x.numel() == 0:
            return x
        if self.p == 1:
            return x.mul_(0) if self.inplace else x * 0
        # the CPU kernel's own draw (ATen _dropout_impl): empty_like(input).bernoulli_(1 - p).div_(1 - p)
        noise = torch.empty_like(x, device="cpu").bernoulli_(1 - self.p).div_(1 - self.p).to(x.device)
        return x.mul_(noise) if self.inplace else x * noise


def place(model: nn.Module, device: torch.device | str) -> nn.Module:
    """``model`` on ``device``: unchanged on the CPU; elsewhere every ``nn.Dropout``
    becomes a :class:`HostRngDropout` (same ``p``, same module tree, hooks kept), then
    the weights move."""
    device = torch.device(device)
    if device.type == DeviceKind.CPU:
        return model
    for m in model.modules():
        if type(m) is nn.Dropout:
            m.__class__ = HostRngDropout
    return model.to(device)


def batch_on(batch: Batch, device: torch.device | str) -> Batch:
    """``batch`` with its tensors on ``device`` (the same object on the CPU)."""
    device = torch.device(device)
    if device.type == DeviceKind.CPU:
        return batch
    move = lambda t: None if t is None else t.to(device)  # noqa: E731
    return dataclasses.replace(batch, input_ids=move(batch.input_ids), attention_mask=move(batch.attention_mask),
                               token_type_ids=move(batch.token_type_ids))


def host_normal_(t: torch.Tensor) -> torch.Tensor:
    """Fill ``t`` with N(0, 1) from the global CPU generator, as ``t.normal_()`` does on a
    CPU tensor (``nn.init.normal_``): in place on the CPU, drawn there and copied elsewhere."""
    if t.device.type == DeviceKind.CPU:
        return nn.init.normal_(t)
    return t.copy_(nn.init.normal_(torch.empty_like(t, device="cpu")))
