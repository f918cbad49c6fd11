"""FlexiBERT encoders in PyTorch, ELECTRA heads, and GLUE heads.

Layer shapes follow DATA-NOTES exactly, so that parameter counts equal
:func:`nasbench_bert.sizes.flexibert_num_params` (and, under ``seed_compat``, the
stored "Number of Parameters" of all 500 archs):

* embeddings: word 30522 x 128, position 512 x 128, token type 2 x 128, LayerNorm(128),
  then Linear 128 -> H when H != 128;
* SA: query/key/value H -> H; WMA adds a bias-free H x H map on the projected query;
  output Linear H -> H + LayerNorm (residual);
* LT: one Linear H -> H, then per head the real part of a 2-D DFT, or a 2-D DCT-II, over
  (sequence, head dim); residual, no output projection and no LayerNorm;
* DSC: ConvBERT-style mixed attention. Half the width (A = H/2) is self-attention with
  max(heads // 2, 1) heads; the other half a span-based dynamic convolution (separable
  conv H -> A, kernel generator A -> heads*k, conv-output Linear H -> A); both halves are
  concatenated and projected H -> H + LayerNorm;
* feed-forward: H -> F, (num_feed_forward - 1) x F -> F, F -> H, GELU between, + LayerNorm.

Semantics: ``faithful`` uses the arch's H and F; ``seed_compat`` uses H = 256 and
F = 1024 for every arch (the model the paper's stored proxies were computed on).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..sizes import (
    EMBEDDING_SIZE, MAX_POSITIONS, SEED_COMPAT_FF, SEED_COMPAT_HIDDEN, TYPE_VOCAB, VOCAB_SIZE, check_semantics,
)
from ..spaces.flexibert import Arch, ArchLike, Layer

_NEG = -1e4  # additive mask value: finite, so fully padded rows stay NaN-free


def _extended_mask(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    if mask is None:
        return None
    return (1.0 - mask[:, None, None, :].to(dtype)) * _NEG


class Embeddings(nn.Module):
    """ELECTRA embeddings: 128-d word/position/type tables, projected to the hidden size."""

    def __init__(self, hidden: int, dropout: float = 0.1, word: nn.Embedding | None = None):
        super().__init__()
        self.word = word if word is not None else nn.Embedding(VOCAB_SIZE, EMBEDDING_SIZE)
        self.position = nn.Embedding(MAX_POSITIONS, EMBEDDING_SIZE)
        self.token_type = nn.Embedding(TYPE_VOCAB, EMBEDDING_SIZE)
        self.norm = nn.LayerNorm(EMBEDDING_SIZE)
        self.dropout = nn.Dropout(dropout)
        self.project = nn.Linear(EMBEDDING_SIZE, hidden) if hidden != EMBEDDING_SIZE else nn.Identity()

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        T = input_ids.shape[1]
        pos = torch.arange(T, device=input_ids.device)[None]
        tt = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        x = self.word(input_ids) + self.position(pos) + self.token_type(tt)
        return self.project(self.dropout(self.norm(x)))


class SelfAttention(nn.Module):
    """Multi-head scaled dot-product (SDP) or weighted multiplicative (WMA) attention.

    Attention probabilities of the last forward are kept in ``self.probs`` when
    ``keep_probs`` is set (the proxies' head confidence reads them without hooks).
    """

    def __init__(self, hidden: int, heads: int, wma: bool, width: int | None = None):
        super().__init__()
        width = width or hidden
        self.heads, self.head_dim = heads, width // heads
        self.query, self.key, self.value = nn.Linear(hidden, width), nn.Linear(hidden, width), nn.Linear(hidden, width)
        self.wma = nn.Linear(width, width, bias=False) if wma else None
        self.keep_probs = False
        self.probs: torch.Tensor | None = None

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, q: torch.Tensor | None = None) -> torch.Tensor:
        q = self.query(x) if q is None else q
        if self.wma is not None:
            q = self.wma(q)
        q, k, v = self._split(q), self._split(self.key(x)), self._split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if ext_mask is not None:
            scores = scores + ext_mask
        probs = scores.softmax(-1)
        if self.keep_probs:
            self.probs = probs
        ctx = probs @ v
        B, _, T, _ = ctx.shape
        return ctx.transpose(1, 2).reshape(B, T, -1)


class SAOperation(nn.Module):
    def __init__(self, hidden: int, heads: int, wma: bool):
        super().__init__()
        self.attention = SelfAttention(hidden, heads, wma)
        self.output = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        return self.norm(x + self.output(self.attention(x, ext_mask)))


def dct_matrix(n: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Orthonormal DCT-II matrix (``D @ x`` transforms along the first axis of x)."""
    k = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(n, dtype=torch.float64)[None]
    d = torch.cos(math.pi / n * (i + 0.5) * k) * math.sqrt(2.0 / n)
    d[0] /= math.sqrt(2.0)
    return d.to(dtype)


class LTOperation(nn.Module):
    """Linear transform mixing (FNet-style): a Linear, then a per-head 2-D DFT or DCT."""

    def __init__(self, hidden: int, heads: int, kind: str):
        super().__init__()
        self.heads, self.head_dim, self.kind = heads, hidden // heads, kind
        self.linear = nn.Linear(hidden, hidden)
        self._dct: dict[tuple[int, torch.device, torch.dtype], torch.Tensor] = {}

    def _d(self, n: int, like: torch.Tensor) -> torch.Tensor:
        key = (n, like.device, like.dtype)
        if key not in self._dct:
            self._dct[key] = dct_matrix(n, like.dtype).to(like.device)
        return self._dct[key]

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        y = self.linear(x)
        if mask is not None:  # padded tokens must not leak into the sequence transform
            y = y * mask[..., None].to(y.dtype)
        B, T, _ = y.shape
        h = y.view(B, T, self.heads, self.head_dim).transpose(1, 2)  # B, heads, T, d
        if self.kind == "DFT":
            h = torch.fft.fft2(h.float(), dim=(-2, -1)).real.to(y.dtype)
        else:
            h = self._d(T, h) @ h @ self._d(self.head_dim, h).T
        return x + h.transpose(1, 2).reshape(B, T, -1)


class DSCOperation(nn.Module):
    """ConvBERT mixed attention: half self-attention, half span-based dynamic convolution."""

    def __init__(self, hidden: int, heads: int, kernel: int):
        super().__init__()
        self.h = max(heads // 2, 1)
        self.A = hidden // 2
        self.k = kernel
        self.attention = SelfAttention(hidden, self.h, wma=False, width=self.A)
        self.depthwise = nn.Conv1d(hidden, hidden, kernel, padding=kernel // 2, groups=hidden, bias=False)
        self.pointwise = nn.Conv1d(hidden, self.A, 1, bias=False)
        self.conv_bias = nn.Parameter(torch.zeros(self.A))
        self.conv_kernel = nn.Linear(self.A, self.h * kernel)
        self.conv_out = nn.Linear(hidden, self.A)
        self.output = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.attention.query(x)  # shared by the attention half and the kernel generator
        att = self.attention(x, ext_mask, q)
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
        return self.norm(x + self.output(torch.cat([att, conv], dim=-1)))


class FeedForward(nn.Module):
    def __init__(self, hidden: int, width: int, depth: int, dropout: float = 0.1):
        super().__init__()
        dims = [hidden] + [width] * depth
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(width, hidden)
        self.act = nn.GELU()  # a module, so proxies can hook every activation of the stack
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for lin in self.layers:
            y = self.act(lin(y))
        return self.norm(x + self.dropout(self.out(y)))


def make_operation(layer: Layer, hidden: int) -> nn.Module:
    t, p, heads = layer.operation_type, layer.operation_parameter, layer.num_operation_heads
    if t == "SA":
        return SAOperation(hidden, heads, wma=p == "WMA")
    if t == "LT":
        return LTOperation(hidden, heads, str(p))
    return DSCOperation(hidden, heads, int(p))


class EncoderLayer(nn.Module):
    def __init__(self, layer: Layer, hidden: int, ff_width: int):
        super().__init__()
        self.spec = layer
        self.operation = make_operation(layer, hidden)
        self.feed_forward = FeedForward(hidden, ff_width, layer.num_feed_forward)

    def forward(self, x: torch.Tensor, ext_mask: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        return self.feed_forward(self.operation(x, ext_mask, mask))


class FlexiBERTEncoder(nn.Module):
    """Embeddings + heterogeneous encoder layers. ``forward`` returns the last hidden state
    (B, T, H); with ``output_hidden_states`` also every layer's output."""

    def __init__(self, arch: Arch, semantics: str = "faithful", *, hidden: int | None = None,
                 ff_scale: float = 1.0, word_embeddings: nn.Embedding | None = None):
        super().__init__()
        self.arch, self.semantics = arch, check_semantics(semantics)
        H = hidden or (arch.hidden_size if semantics == "faithful" else SEED_COMPAT_HIDDEN)
        self.hidden_size = H
        self.embeddings = Embeddings(H, word=word_embeddings)
        self.layers = nn.ModuleList(
            EncoderLayer(
                layer, H,
                int((layer.feed_forward_dimension if semantics == "faithful" else SEED_COMPAT_FF) * ff_scale),
            )
            for layer in arch.layers
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, output_hidden_states: bool = False) -> Any:
        x = self.embeddings(input_ids, token_type_ids)
        ext = _extended_mask(attention_mask, x.dtype)
        states = [x]
        for layer in self.layers:
            x = layer(x, ext, attention_mask)
            states.append(x)
        return (x, states) if output_hidden_states else x


def build_flexibert(arch: ArchLike, semantics: str = "faithful", seed: int | None = 0) -> FlexiBERTEncoder:
    """The FlexiBERT encoder of ``arch``, initialised deterministically from ``seed``.

    ``sum(p.numel() for p in model.parameters())`` equals
    :func:`nasbench_bert.sizes.flexibert_num_params` for the same semantics.
    """
    a = Arch.coerce(arch)
    check_semantics(semantics)
    if seed is not None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return FlexiBERTEncoder(a, semantics)
    return FlexiBERTEncoder(a, semantics)


# -- ELECTRA ---------------------------------------------------------------------------------
class ElectraGeneratorHead(nn.Module):
    """MLM head: H_g -> 128, GELU, LayerNorm, then scores against the tied word embeddings."""

    def __init__(self, hidden: int, word: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(hidden, EMBEDDING_SIZE)
        self.norm = nn.LayerNorm(EMBEDDING_SIZE)
        self.word = word
        self.bias = nn.Parameter(torch.zeros(word.num_embeddings))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(F.gelu(self.dense(h))) @ self.word.weight.T + self.bias


class ElectraPair(nn.Module):
    """ELECTRA generator + discriminator sharing the token embedding table.

    The generator has the discriminator's layer pattern at 1/4 of its hidden size (and
    feed-forward widths), as in ELECTRA-Small.
    """

    def __init__(self, arch: ArchLike, semantics: str = "faithful", seed: int | None = 0):
        super().__init__()
        a = Arch.coerce(arch)
        if seed is not None:
            torch.manual_seed(seed)
        self.discriminator = FlexiBERTEncoder(a, semantics)
        word = self.discriminator.embeddings.word
        H = self.discriminator.hidden_size
        self.generator = FlexiBERTEncoder(a, semantics, hidden=H // 4, ff_scale=0.25, word_embeddings=word)
        self.generator_head = ElectraGeneratorHead(H // 4, word)
        self.discriminator_head = nn.Sequential(nn.Linear(H, H), nn.GELU(), nn.Linear(H, 1))

    def generator_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.generator_head(self.generator(input_ids, attention_mask))

    def discriminator_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.discriminator_head(self.discriminator(input_ids, attention_mask)).squeeze(-1)


class SequenceClassifier(nn.Module):
    """GLUE head on the first token: Linear H -> H, GELU, dropout, Linear H -> labels
    (``num_labels=1`` is regression, for STS-B)."""

    def __init__(self, encoder: FlexiBERTEncoder, num_labels: int, dropout: float = 0.1):
        super().__init__()
        H = encoder.hidden_size
        self.encoder = encoder
        self.head = nn.Sequential(nn.Linear(H, H), nn.GELU(), nn.Dropout(dropout), nn.Linear(H, num_labels))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.encoder(input_ids, attention_mask, token_type_ids)[:, 0])
