"""Weights in and out of the authors' PyTorch proxy model.

The stored proxy table of the FlexiBERT benchmark was computed on the ``ElectraModel``
of ``training-free-nas/code/modeling_electra.py`` (see :data:`~nasbench_bert.semantics.AUTHORS`).
:func:`from_authors_state_dict` takes that model's ``state_dict()`` for an arch and
returns this package's ``authors``-semantics encoder holding the same weights;
:func:`to_authors_state_dict` goes the other way. The reference tests use both to show
that the two models compute the same ``last_hidden_state`` (float64, eval and train
mode with the same dropout masks, with and without padding) on 60+ archs.

The name mapping is strict: a missing, unexpected or wrongly shaped tensor raises
``ValueError`` naming it, so a silent partial load cannot happen.
"""

from __future__ import annotations

import re
from typing import Mapping

from .._torch import torch

from ..semantics import AUTHORS
from ..spaces.flexibert import Arch, ArchLike
from .flexibert import FlexiBERTEncoder

#: reference buffers that carry no weights
_IGNORED = re.compile(r"^embeddings\.(position_ids|token_type_ids)$")

_EMBEDDINGS = {
    "embeddings.word_embeddings.weight": "embeddings.word.weight",
    "embeddings.position_embeddings.weight": "embeddings.position.weight",
    "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
    "embeddings.LayerNorm.weight": "embeddings.norm.weight",
    "embeddings.LayerNorm.bias": "embeddings.norm.bias",
    "embeddings_project.weight": "embeddings.project.weight",
    "embeddings_project.bias": "embeddings.project.bias",
}

# per-layer rules: (reference suffix regex, our suffix template); "{j}" is a captured index
_SA = [
    (r"operation\.operation\.(query|key|value)\.(weight|bias)", "operation.attention.{0}.{1}"),
    (r"operation\.operation\.weight\.weight", "operation.attention.wma.weight"),
    (r"operation\.output\.dense\.(weight|bias)", "operation.output.{0}"),
    (r"operation\.output\.LayerNorm\.(weight|bias)", "operation.norm.{0}"),
]
_LT = [(r"operation\.operation\.input\.(weight|bias)", "operation.linear.{0}")]
_DSC = [
    (r"operation\.operation\.(query|key|value)\.(weight|bias)", "operation.attention.{0}.{1}"),
    (r"operation\.operation\.key_conv_attn_layer\.(depthwise|pointwise)\.weight", "operation.{0}.weight"),
    (r"operation\.operation\.key_conv_attn_layer\.bias", "operation.conv_bias"),
    (r"operation\.operation\.conv_kernel_layer\.(weight|bias)", "operation.conv_kernel.{0}"),
    (r"operation\.operation\.conv_out_layer\.(weight|bias)", "operation.conv_out.{0}"),
    (r"operation\.output\.dense\.(weight|bias)", "operation.output.{0}"),
    (r"operation\.output\.LayerNorm\.(weight|bias)", "operation.norm.{0}"),
]
_FF = [
    (r"intermediate\.dense_in\.(weight|bias)", "feed_forward.layers.0.{0}"),
    (r"intermediate\.dense_list\.(\d+)\.(weight|bias)", None),  # index shifted by one, below
    (r"output\.dense\.(weight|bias)", "feed_forward.out.{0}"),
    (r"output\.LayerNorm\.(weight|bias)", "feed_forward.norm.{0}"),
]


def _ours(ref_key: str, mixing: list[str]) -> str | None:
    if ref_key in _EMBEDDINGS:
        return _EMBEDDINGS[ref_key]
    m = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)", ref_key)
    if m is None or int(m.group(1)) >= len(mixing):
        return None
    i, rest = int(m.group(1)), m.group(2)
    op = mixing[i]
    rules = (_SA if op in ("SDP", "WMA") else _LT if op in ("DFT", "DCT") else _DSC) + _FF
    for pattern, template in rules:
        g = re.fullmatch(pattern, rest)
        if g is None:
            continue
        if template is None:  # dense_list.j -> layers.(j + 1)
            return f"layers.{i}.feed_forward.layers.{int(g.group(1)) + 1}.{g.group(2)}"
        return f"layers.{i}." + template.format(*g.groups())
    return None


def from_authors_state_dict(arch: ArchLike, state_dict: Mapping[str, torch.Tensor]) -> FlexiBERTEncoder:
    """The ``authors``-semantics encoder of ``arch`` holding the weights of the authors'
    ``ElectraModel`` for that arch (its ``state_dict()``; an ``electra.`` prefix, as in
    ``ElectraForPreTraining``, is accepted). The model is returned in train mode, like
    a freshly built ``nn.Module``, in the dtype of the given tensors."""
    a = Arch.coerce(arch)
    model = FlexiBERTEncoder(a, AUTHORS, init=False)
    mixing = [lp.mixing for lp in model.plan.layers]
    ours = model.state_dict()
    new: dict[str, torch.Tensor] = {}
    for key, value in state_dict.items():
        k = key[len("electra."):] if key.startswith("electra.") else key
        if _IGNORED.match(k):
            continue
        target = _ours(k, mixing)
        if target is None or target not in ours:
            raise ValueError(f"state_dict key {key!r} has no counterpart in the authors-semantics model of {a}; "
                             "is this the state_dict of the authors' ElectraModel for this arch?")
        if target in new:
            raise ValueError(f"state_dict keys map twice onto {target!r} (at {key!r})")
        v = value.reshape(ours[target].shape) if target.endswith("conv_bias") and value.numel() == ours[target].numel() else value
        if tuple(v.shape) != tuple(ours[target].shape):
            raise ValueError(f"state_dict key {key!r} has shape {tuple(value.shape)}; the arch {a} needs "
                             f"{tuple(ours[target].shape)} for {target!r}")
        new[target] = v
    missing = sorted(set(ours) - set(new))
    if missing:
        raise ValueError(f"state_dict lacks weights for {missing[:5]}{' ...' if len(missing) > 5 else ''} of the arch {a}")
    dtype = next(iter(new.values())).dtype
    model = model.to(dtype)
    model.load_state_dict(new, strict=True)
    return model


def to_authors_state_dict(model: FlexiBERTEncoder) -> dict[str, torch.Tensor]:
    """The inverse of :func:`from_authors_state_dict`: reference names for the weights
    of an ``authors``-semantics encoder (buffers ``position_ids`` not included)."""
    if model.semantics != AUTHORS.name:
        raise ValueError(f"model.semantics = {model.semantics!r}; only 'authors' models have a reference counterpart")
    mixing = [lp.mixing for lp in model.plan.layers]
    ours = model.state_dict()
    out: dict[str, torch.Tensor] = {}
    # enumerate every reference name that can exist for this arch and keep those that map
    candidates = list(_EMBEDDINGS)
    for i, lp in enumerate(model.plan.layers):
        base = f"encoder.layer.{i}."
        for s in ("query", "key", "value"):
            candidates += [base + f"operation.operation.{s}.weight", base + f"operation.operation.{s}.bias"]
        candidates += [base + "operation.operation.weight.weight", base + "operation.operation.input.weight",
                       base + "operation.operation.input.bias"]
        candidates += [base + f"operation.operation.key_conv_attn_layer.{c}.weight" for c in ("depthwise", "pointwise")]
        candidates += [base + "operation.operation.key_conv_attn_layer.bias"]
        for c in ("conv_kernel_layer", "conv_out_layer"):
            candidates += [base + f"operation.operation.{c}.weight", base + f"operation.operation.{c}.bias"]
        for c in ("operation.output.dense", "operation.output.LayerNorm", "intermediate.dense_in", "output.dense",
                  "output.LayerNorm"):
            candidates += [base + f"{c}.weight", base + f"{c}.bias"]
        for j in range(len(lp.ff_widths) - 1):
            candidates += [base + f"intermediate.dense_list.{j}.weight", base + f"intermediate.dense_list.{j}.bias"]
    for ref in candidates:
        t = _ours(ref, mixing)
        if t is not None and t in ours:
            v = ours[t]
            out[ref] = v.reshape(-1, 1) if ref.endswith("key_conv_attn_layer.bias") else v
    if len(out) != len(ours):
        raise AssertionError(f"mapped {len(out)} of {len(ours)} tensors")  # pragma: no cover - mapping bug
    return out
