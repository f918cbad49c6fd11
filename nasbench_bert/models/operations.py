"""The blocks of a FlexiBERT layer in PyTorch: the embeddings, the four token mixings
(SDP/WMA attention, DFT/DCT linear transforms, DSC mixed attention) and the feed-forward stack.

Why apart from :mod:`.flexibert`: these are the modules a zero-cost proxy hooks
(:mod:`nasbench_bert.proxies.capture_bert` looks for :class:`SelfAttention` and
:class:`LTOperation`) and the ones that differ between semantics; the encoder that
stacks them, its initialisation and the ELECTRA/GLUE heads are assembly, kept in
:mod:`.flexibert`. :func:`make_operation` is the one place that maps a plan's mixing
to its module, so a new mixing is a class here and one entry of ``_OPERATIONS``.
"""

from __future__ import annotations

import math
from typing import Callable

from .._torch import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_choice
from ..errors import InvalidArgumentError
from ..semantics import EMBEDDING_SIZE, MAX_POSITIONS, TYPE_VOCAB, VOCAB_SIZE, LayerPlan, Semantics

_NEG = -1e4  # additive mask value (as TF BERT/ELECTRA): finite, so fully padded rows stay NaN-free


def _extended_mask(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    if mask is None:
        return None
    return (1.0 - mask[:, None, None, :].to(dtype)) * _NEG


class Embeddings(nn.Module):
    """ELECTRA embeddings: 128-d word/position/type tables, projected to the hidden size."""

    def __init__(self, hidden: int, eps: float = 1e-12, dropout: float = 0.1, shared: "Embeddings | None" = None,
                 padding_idx: int | None = None):
        super().__init__()
        if shared is not None:  # ELECTRA's generator: the discriminator's tables and LayerNorm, its own projection
            self.word, self.position, self.token_type, self.norm = shared.word, shared.position, shared.token_type, shared.norm
        else:
            self.word = nn.Embedding(VOCAB_SIZE, EMBEDDING_SIZE, padding_idx=padding_idx)
            self.position = nn.Embedding(MAX_POSITIONS, EMBEDDING_SIZE)
            self.token_type = nn.Embedding(TYPE_VOCAB, EMBEDDING_SIZE)
            self.norm = nn.LayerNorm(EMBEDDING_SIZE, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.project = nn.Linear(EMBEDDING_SIZE, hidden) if hidden != EMBEDDING_SIZE else nn.Identity()

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        T = input_ids.shape[1]
        pos = torch.arange(T, device=input_ids.device)[None]
        tt = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        x = self.word(input_ids) + self.token_type(tt)  # the reference's order of additions
        x = x + self.position(pos)
        return self.project(self.dropout(self.norm(x)))


#: implementations of :class:`SelfAttention`: ``"eager"`` (the reference's matmul,
#: softmax module, dropout, matmul) and ``"sdpa"`` (``F.scaled_dot_product_attention``)
ATTENTION_IMPLS = ("eager", "sdpa")


def check_attention(value: object, field: str = "attention") -> str:
    """``value`` if it names an attention implementation, else an ``InvalidArgumentError`` naming ``field``."""
    if value not in ATTENTION_IMPLS:
        raise InvalidArgumentError(f"{field} = {value!r} is not allowed; allowed values: {list(ATTENTION_IMPLS)}")
    return str(value)


class SelfAttention(nn.Module):
    """Multi-head scaled dot-product (SDP) or weighted multiplicative (WMA) attention.

    ``attention="eager"`` (the default): the probabilities go through ``self.softmax``
    (a module, so proxies can hook it, as the published code does) and then
    attention-probability dropout (``self.dropout``).

    ``attention="sdpa"``: the same function through
    ``torch.nn.functional.scaled_dot_product_attention`` (flash / memory-efficient
    kernels on GPUs), with the same additive mask, scale ``1/sqrt(head_dim)`` and
    dropout probability ``self.dropout.p`` in train mode. In eval mode it equals the
    eager path to float rounding. In train mode the dropout is the reference's
    (Bernoulli keep-probability 1 - p on the probabilities, survivors scaled by
    1/(1 - p)). On CPU torch runs SDPA-with-dropout through its math path, which draws
    the masks from the same generator in the same order as the eager path, so training
    matches it to rounding; the fused GPU kernels draw their own masks, so there the
    losses are those of another dropout draw. ``self.softmax`` is not called: hooks on
    it see nothing (the proxies of the authors' model need the eager path).
    """

    def __init__(self, hidden: int, heads: int, wma: bool, width: int | None = None, dropout: float = 0.1,
                 attention: str = "eager"):
        super().__init__()
        width = width or hidden
        self.heads, self.head_dim = heads, width // heads
        self.query, self.key, self.value = nn.Linear(hidden, width), nn.Linear(hidden, width), nn.Linear(hidden, width)
        self.wma = nn.Linear(width, width, bias=False) if wma else None
        self.softmax = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)
        self.attention_impl = check_attention(attention)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, q: torch.Tensor | None = None) -> torch.Tensor:
        q = self.query(x) if q is None else q
        if self.wma is not None:
            q = self.wma(q)
        q, k, v = self._split(q), self._split(self.key(x)), self._split(self.value(x))
        return _ATTENTION[self.attention_impl](self, q, k, v, ext_mask)

    def _eager(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ext_mask: torch.Tensor | None) -> torch.Tensor:
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if ext_mask is not None:
            scores = scores + ext_mask
        probs = self.dropout(self.softmax(scores))
        ctx = probs @ v
        B, _, T, _ = ctx.shape
        return ctx.transpose(1, 2).reshape(B, T, -1)

    def _sdpa(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ext_mask: torch.Tensor | None) -> torch.Tensor:
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=None if ext_mask is None else ext_mask.to(q.dtype),
                                             dropout_p=self.dropout.p if self.training else 0.0)
        B, _, T, _ = ctx.shape
        return ctx.transpose(1, 2).reshape(B, T, -1)


#: ``attention_impl`` -> the :class:`SelfAttention` method that runs it
_ATTENTION = {"eager": SelfAttention._eager, "sdpa": SelfAttention._sdpa}


class SAOperation(nn.Module):
    def __init__(self, hidden: int, heads: int, wma: bool, eps: float, dropout: float, attention_dropout: float,
                 attention: str = "eager"):
        super().__init__()
        self.attention = SelfAttention(hidden, heads, wma, dropout=attention_dropout, attention=attention)
        self.output = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        return self.norm(self.dropout(self.output(self.attention(x, ext_mask))) + x)


def dct_matrix(n: int, dtype: torch.dtype = torch.float32, norm: str | None = "ortho") -> torch.Tensor:
    """DCT-II matrix (``D @ x`` transforms along the first axis of x).

    ``norm="ortho"``: orthonormal (scipy's ``norm="ortho"``); ``norm=None``: torch-dct's
    and scipy's unnormalised ``2 sum_i x_i cos(pi k (2i + 1) / 2n)``.
    """
    k = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(n, dtype=torch.float64)[None]
    c = torch.cos(math.pi / n * (i + 0.5) * k)
    if norm is None:
        return (2.0 * c).to(dtype)
    d = c * math.sqrt(2.0 / n)
    d[0] /= math.sqrt(2.0)
    return d.to(dtype)


class LTOperation(nn.Module):
    """Linear transform mixing (FNet-style): a Linear, then a per-head 2-D DFT or DCT.

    ``residual``: add the layer input (``as_specified``) or return the transform alone
    (the authors' model). ``softmax``: the authors' model also applies an unused softmax
    to the transform, which the published proxy hooks see; it never changes the output.
    """

    def __init__(self, hidden: int, heads: int, kind: str, *, residual: bool = True, dct_norm: str | None = "ortho",
                 softmax: bool = False, use_mask: bool = True):
        super().__init__()
        self.heads, self.head_dim, self.kind = heads, hidden // heads, check_choice("kind", kind, tuple(_TRANSFORMS))
        self.residual, self.dct_norm, self.use_mask = residual, dct_norm, use_mask
        self.linear = nn.Linear(hidden, hidden)
        self.softmax = nn.Softmax(dim=-1) if softmax else None
        self._dct: dict[tuple[int, torch.device, torch.dtype], torch.Tensor] = {}

    def _d(self, n: int, like: torch.Tensor) -> torch.Tensor:
        key = (n, like.device, like.dtype)
        if key not in self._dct:
            self._dct[key] = dct_matrix(n, like.dtype, self.dct_norm).to(like.device)
        return self._dct[key]

    def _dft(self, h: torch.Tensor) -> torch.Tensor:
        return torch.fft.fft2(h, dim=(-2, -1)).real  # in the input's precision (complex128 for float64)

    def _dct2(self, h: torch.Tensor) -> torch.Tensor:
        return self._d(h.shape[-2], h) @ h @ self._d(self.head_dim, h).T

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        y = self.linear(x)
        if mask is not None and self.use_mask:  # padded tokens must not leak into the sequence transform
            y = y * mask[..., None].to(y.dtype)
        B, T, _ = y.shape
        h = y.view(B, T, self.heads, self.head_dim).transpose(1, 2)  # B, heads, T, d
        h = _TRANSFORMS[self.kind](self, h)
        if self.softmax is not None:
            self.softmax(h)  # output unused, as in the reference; only hooks read it
        out = h.transpose(1, 2).reshape(B, T, -1)
        return x + out if self.residual else out


#: ``LTOperation.kind`` -> its per-head sequence transform
_TRANSFORMS = {"DFT": LTOperation._dft, "DCT": LTOperation._dct2}


class DSCOperation(nn.Module):
    """ConvBERT mixed attention: half self-attention, half span-based dynamic convolution."""

    def __init__(self, hidden: int, heads: int, kernel: int, *, eps: float, dropout: float, attention_dropout: float,
                 use_mask: bool = True, conv_init_std: float | None = None):
        super().__init__()
        self.h = max(heads // 2, 1)
        self.A = hidden // 2
        self.k = kernel
        self.use_mask = use_mask
        self.attention = SelfAttention(hidden, self.h, wma=False, width=self.A, dropout=attention_dropout)
        self.depthwise = nn.Conv1d(hidden, hidden, kernel, padding=kernel // 2, groups=hidden, bias=False)
        self.pointwise = nn.Conv1d(hidden, self.A, 1, bias=False)
        self.conv_bias = nn.Parameter(torch.zeros(self.A))
        if conv_init_std is not None:  # the reference draws these right here, before the next module exists
            with torch.no_grad():
                self.depthwise.weight.normal_(0.0, conv_init_std)
                self.pointwise.weight.normal_(0.0, conv_init_std)
        self.conv_kernel = nn.Linear(self.A, self.h * kernel)
        self.conv_out = nn.Linear(hidden, self.A)
        self.output = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        B, T, _ = x.shape
        mask = mask if self.use_mask else None
        q = self.attention.query(x)  # shared by the attention half and the kernel generator
        xm = x * mask[..., None].to(x.dtype) if mask is not None else x
        key_conv = self.pointwise(self.depthwise(xm.transpose(1, 2))).transpose(1, 2) + self.conv_bias  # B,T,A
        kernel = self.conv_kernel(key_conv * q).view(B, T, self.h, self.k).softmax(-1)  # B,T,h,k
        v = self.conv_out(x)  # B,T,A
        if mask is not None:  # padded positions act as the conv's zero padding
            v = v * mask[..., None].to(v.dtype)
        pad = self.k // 2
        windows = F.pad(v, (0, 0, pad, pad)).unfold(1, self.k, 1)  # B,T,A,k
        windows = windows.reshape(B, T, self.h, self.A // self.h, self.k)
        conv = (windows * kernel[:, :, :, None, :]).sum(-1).reshape(B, T, self.A)
        att = self.attention(x, ext_mask, q)
        return self.norm(self.dropout(self.output(torch.cat([att, conv], dim=-1))) + x)


class FeedForward(nn.Module):
    def __init__(self, hidden: int, widths: tuple[int, ...], eps: float = 1e-12, dropout: float = 0.1):
        super().__init__()
        dims = [hidden, *widths]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(widths[-1], hidden)
        self.act = nn.GELU()  # a module, so proxies can hook every activation of the stack
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for lin in self.layers:
            y = self.act(lin(y))
        return self.norm(self.dropout(self.out(y)) + x)


def _attention_op(layer: LayerPlan, hidden: int, sem: Semantics) -> nn.Module:
    return SAOperation(hidden, layer.heads, layer.mixing in _WEIGHTED_ATTENTION, sem.layer_norm_eps,
                       sem.hidden_dropout, sem.attention_dropout)


def _transform_op(layer: LayerPlan, hidden: int, sem: Semantics) -> nn.Module:
    return LTOperation(hidden, layer.heads, layer.mixing, residual=sem.lt_residual, dct_norm=sem.dct_norm,
                       softmax=sem.lt_softmax, use_mask=sem.attention_mask)


def _conv_op(layer: LayerPlan, hidden: int, sem: Semantics) -> nn.Module:
    return DSCOperation(hidden, layer.heads, int(layer.kernel or 0), eps=sem.layer_norm_eps, dropout=sem.hidden_dropout,
                        attention_dropout=sem.attention_dropout, use_mask=sem.attention_mask,
                        conv_init_std=None if _TRUNCATED_INIT[sem.init] else sem.init_std)


#: the mixings whose attention carries the extra WMA weight
_WEIGHTED_ATTENTION = frozenset({"WMA"})
#: ``LayerPlan.mixing`` -> the module that runs it
_OPERATIONS: dict[str, Callable[[LayerPlan, int, Semantics], nn.Module]] = {
    "SDP": _attention_op, "WMA": _attention_op, "DFT": _transform_op, "DCT": _transform_op, "DSC": _conv_op,
}
#: ``Semantics.init`` -> whether weights are redrawn beyond 2 std (TF's truncated_normal);
#: the untruncated rule draws the DSC convolutions at construction, the truncated one in
#: :func:`init_weights`
_TRUNCATED_INIT: dict[str, bool] = {"normal": False, "truncated_normal": True}


def make_operation(layer: LayerPlan, hidden: int, sem: Semantics) -> nn.Module:
    return _OPERATIONS[layer.mixing](layer, hidden, sem)
