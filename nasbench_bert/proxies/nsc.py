"""Closed forms on the spec: Neural Spectral Capacity (NSC) and the analytic ZeroLM.

Both score an architecture without building a model, so they are registered with
``needs={"spec"}`` and cost microseconds; this module imports no torch.

* **NSC** (Zhu, Zhao & Lu, 2026, *Neural Spectral Capacity*). For a weight matrix
  ``W`` (m x n) with i.i.d. entries of variance ``s^2``, ``psi(W) = ln det(I + W^T W)``
  converges to the Marchenko-Pastur integral
  ``psi_MP(m, n, s) = N * E_MP[ln(1 + M s^2 lambda)]`` (N = min, M = max, ratio
  gamma = N / M, Xavier ``s^2 = 2 / (m + n)`` by default). An architecture's NSC is the
  sum of ``psi_MP`` over its weight matrices.
* **ZeroLM** (Chen, Ding, Wang & Pedrycz, 2025, *ZeroLM: Data-Free Transformer
  Architecture Search for Language Models*), in the analytic form the NSC authors
  compare against: each matrix contributes ``E||W||_F^2 / min(m, n) = m n s^2 / min(m, n)``
  at Xavier init, and the score is ``S_ffn + alpha * S_attn``. ``alpha`` is a fitted
  constant: the NSC authors chose it for the best Spearman rho against GLUE on all 500
  archs (grid 0, 0.05, ..., 3). Here it is chosen the same way on ids 0-249 only
  (:data:`ZEROLM_ALPHA`; ``studies/published.py`` redoes the choice and a test checks
  the constant), so figures on ids 250-499 are honest.

Beside them, a plain (unregistered) function: :func:`nsc_flops`, the NSC authors' own
#FLOPs of an arch (a multiply-accumulate count on their construction), the #FLOPs row of
their table.

Two *readings* of an arch (which matrices are summed), each a registered score:

* ``nsc`` / ``zerolm``: the NSC authors' own construction of the spec (their
  ``ranking/compute_flexibert.py``): the arch's hidden size H; SA = merged Q, K, V
  (3H x H) + output (H x H); LT = two H x H; DSC = one H x H; a layer's feed-forward
  dimension F split evenly over its ``num_feed_forward`` branches, each H -> F/n -> H.
  ZeroLM splits SA per head (3 x heads matrices H x H/heads). This reading ignores the
  semantics: it is the paper's number.
* ``nsc_model`` / ``zerolm_model``: the same closed forms over the weight matrices of
  the model that the semantics builds (:class:`~nasbench_bert.semantics.ModelPlan`):
  every Linear of the token mixing and the feed-forward stack, the DSC pointwise conv as
  a matrix (its depthwise conv, one k-tap filter per channel, is not a matrix and is
  left out). These are the values "under" ``as_trained`` / ``as_specified`` / ``authors``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from scipy import integrate

from ..errors import InvalidArgumentError
from ..semantics import LayerPlan, ModelPlan
from ..spaces.flexibert import Arch
from .registry import ProxyValue, SpecInput, register

S = "flexibert"

#: ZeroLM's alpha, chosen for the best Spearman rho on ids 0-249 over the NSC authors'
#: grid (0, 0.05, ..., 3); re-derived by ``studies/published.py`` and checked by a test
ZEROLM_ALPHA = 0.15
#: the NSC authors' alpha grid
ZEROLM_ALPHA_GRID: tuple[float, ...] = tuple(a / 100 for a in range(0, 301, 5))

Shape = tuple[int, int]


# -- the closed forms -----------------------------------------------------------------------
def xavier_variance(m: int, n: int) -> float:
    """Glorot/Xavier variance ``2 / (m + n)``, the NSC and ZeroLM default."""
    return 2.0 / (m + n)


@lru_cache(maxsize=4096)
def psi_mp(m: int, n: int, variance: float | None = None) -> float:
    """``lim ln det(I + W^T W)`` for an m x n matrix of i.i.d. entries of the given
    variance (default Xavier), from the Marchenko-Pastur density.

    With N = min(m, n), M = max(m, n), gamma = N / M and the MP law on
    [(1 - sqrt(gamma))^2, (1 + sqrt(gamma))^2], ``psi = N * integral ln(1 + M s^2 x) f(x) dx``
    (adaptive quadrature; the density is integrable at both edges)."""
    for name, v in (("m", m), ("n", n)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a non-negative integer (a matrix dimension)")
    if m == 0 or n == 0:
        return 0.0
    s2 = xavier_variance(m, n) if variance is None else float(variance)
    if not s2 > 0 or not math.isfinite(s2):
        raise InvalidArgumentError(f"variance = {variance!r} is not allowed; allowed: a positive finite number")
    big, small = max(m, n), min(m, n)
    gamma = small / big
    lo, hi = (1 - math.sqrt(gamma)) ** 2, (1 + math.sqrt(gamma)) ** 2

    def integrand(x: float) -> float:
        if x <= lo or x >= hi:
            return 0.0
        return math.log1p(big * s2 * x) * math.sqrt((hi - x) * (x - lo)) / (2 * math.pi * gamma * x)

    return small * integrate.quad(integrand, lo, hi, limit=200)[0]


def zerolm_matrix(m: int, n: int) -> float:
    """ZeroLM's per-matrix term at Xavier init: ``E||W||_F^2 / min(m, n) = m n s^2 / min(m, n)``."""
    if m <= 0 or n <= 0:
        return 0.0
    return m * n * xavier_variance(m, n) / min(m, n)


# -- readings: which matrices an arch has -----------------------------------------------------
@dataclass(frozen=True)
class LayerMatrices:
    """The weight-matrix shapes of one layer, split as ZeroLM splits them."""

    attn: tuple[Shape, ...]
    ffn: tuple[Shape, ...]


def paper_matrices(arch: Arch, *, per_head_qkv: bool = False) -> list[LayerMatrices]:
    """The NSC authors' construction of the spec (see the module doc). ``per_head_qkv``:
    SA's Q, K, V as 3 x heads matrices H x H/heads (ZeroLM's reading) instead of one
    merged 3H x H (NSC's)."""
    a = Arch.coerce(arch)
    H = a.hidden_size
    out = []
    for layer in a.layers:
        attn = _PAPER_ATTENTION[layer.operation_type](layer, H, per_head_qkv)
        w = layer.feed_forward_dimension // layer.num_feed_forward
        ffn = ((w, H), (H, w)) * layer.num_feed_forward
        out.append(LayerMatrices(attn, ffn))
    return out


def _sa_matrices(layer: Any, H: int, per_head_qkv: bool) -> tuple[Shape, ...]:
    """SA: Q, K, V (one merged 3H x H, or H x H/heads per head), then the output H x H."""
    qkv: tuple[Shape, ...] = ((H, H // layer.num_operation_heads),) * (3 * layer.num_operation_heads) \
        if per_head_qkv else ((3 * H, H),)
    return qkv + ((H, H),)


def _lt_matrices(layer: Any, H: int, per_head_qkv: bool) -> tuple[Shape, ...]:
    return ((H, H), (H, H))


def _dsc_matrices(layer: Any, H: int, per_head_qkv: bool) -> tuple[Shape, ...]:
    return ((H, H),)


#: the attention matrices of a spec layer, by operation type (:func:`paper_matrices`)
_PAPER_ATTENTION: dict[str, Callable[[Any, int, bool], tuple[Shape, ...]]] = {
    "SA": _sa_matrices, "LT": _lt_matrices, "DSC": _dsc_matrices}
#: the H x H matrices of a built attention: SDP's Q, K, V and output; WMA's one more
_ATTENTION_HH: dict[str, int] = {"SDP": 4, "WMA": 5}


def _mixing_matrices(lp: LayerPlan, H: int) -> tuple[Shape, ...]:
    if lp.mixing in _ATTENTION_HH:
        return ((H, H),) * _ATTENTION_HH[lp.mixing]
    if lp.mixing in ("DFT", "DCT"):
        return ((H, H),)
    A, h, k = H // 2, max(lp.heads // 2, 1), int(lp.kernel or 0)
    # query, key, value H -> A; pointwise conv H -> A; kernel generator A -> h k; conv output H -> A; output H -> H
    return ((A, H),) * 3 + ((A, H), (h * k, A), (A, H), (H, H))


def plan_matrices(plan: ModelPlan) -> list[LayerMatrices]:
    """The weight matrices of a semantics' model (see the module doc)."""
    H = plan.hidden
    out = []
    for lp in plan.layers:
        dims = (H, *lp.ff_widths, H)
        ffn = tuple((b, a) for a, b in zip(dims[:-1], dims[1:]))
        out.append(LayerMatrices(_mixing_matrices(lp, H), ffn))
    return out


# -- scores -------------------------------------------------------------------------------------
def nsc_layers(matrices: Sequence[LayerMatrices]) -> list[float]:
    """Per-layer NSC: the sum of ``psi_mp`` over the layer's matrices (the NSC
    authors' "flat" aggregation, whose total is the paper's score). Sums are
    ``math.fsum`` (exactly rounded), so archs with the same matrices in another layer
    order get exactly equal scores: a tie, not a 1e-13 difference that would decide
    pairs in the 10 %-PW tau."""
    return [math.fsum(psi_mp(m, n) for m, n in lm.attn + lm.ffn) for lm in matrices]


def nsc_total(matrices: Sequence[LayerMatrices]) -> float:
    """The arch's NSC, exactly rounded over all of its matrices (order-independent)."""
    return math.fsum(psi_mp(m, n) for lm in matrices for m, n in lm.attn + lm.ffn)


def zerolm_parts(matrices: Sequence[LayerMatrices]) -> tuple[float, float]:
    """(S_attn, S_ffn) of ZeroLM, so that ``alpha`` can be chosen afterwards."""
    attn = math.fsum(zerolm_matrix(m, n) for lm in matrices for m, n in lm.attn)
    ffn = math.fsum(zerolm_matrix(m, n) for lm in matrices for m, n in lm.ffn)
    return attn, ffn


def choose_alpha(attn: Iterable[float], ffn: Iterable[float], target: Iterable[float],
                 grid: Sequence[float] = ZEROLM_ALPHA_GRID) -> float:
    """The NSC authors' choice of ZeroLM's alpha: the first grid value with the highest
    Spearman rho of ``ffn + alpha * attn`` against ``target``. Call it on the ids a
    figure is *not* reported on."""
    from scipy.stats import spearmanr

    a, f, y = (np.asarray(list(v), dtype=float) for v in (attn, ffn, target))
    if not (len(a) == len(f) == len(y)) or len(a) < 3:
        raise InvalidArgumentError(f"attn, ffn and target must have one equal length >= 3; got {len(a)}, {len(f)}, {len(y)}")
    if not len(grid):
        raise InvalidArgumentError("grid = () is not allowed; allowed: a non-empty sequence of alphas")
    best, best_rho = float(grid[0]), -math.inf
    for alpha in grid:
        rho = float(spearmanr(f + alpha * a, y)[0])
        if rho > best_rho:
            best, best_rho = float(alpha), rho
    return best


#: the sequence length of the NSC authors' #FLOPs (``ranking/compute_flops_all.py``: S = 128, batch 1)
NSC_FLOPS_SEQ_LEN = 128


def nsc_flops(arch: Arch | str, seq_len: int = NSC_FLOPS_SEQ_LEN) -> int:
    """The NSC authors' #FLOPs of an arch, in multiply-accumulates (their ``flops_mac``;
    ``ranking/compute_flops_all.py``, ``flexibert_layer_macs`` and ``compute_flexibert``),
    for their #FLOPs row (tau 0.552, 10 %-PW 0.329).

    With S = ``seq_len`` and the arch's H: every matrix of their construction
    (:func:`paper_matrices`: SA's merged 3H x H and H x H, LT's two H x H, DSC's one
    H x H, each feed-forward branch's H x F/n and F/n x H) costs S m n; an SA layer adds
    its two attention products, 2 S^2 H; then a pooler S H^2 and a two-way classifier 2 H.
    Embeddings are not counted. Why a plain function, not a registered score: the paper's
    row is reproduced by the published study; registering it would add a column to every
    proxy table. Integer arithmetic, so archs with the same matrices tie exactly."""
    if not isinstance(seq_len, (int, np.integer)) or isinstance(seq_len, bool) or seq_len < 1:
        raise InvalidArgumentError(f"seq_len = {seq_len!r} is not allowed; allowed: a positive integer")
    a = Arch.coerce(arch)
    H, S = a.hidden_size, int(seq_len)
    macs = sum(S * m * n for lm in paper_matrices(a) for m, n in lm.attn + lm.ffn)
    macs += sum(2 * S * S * H for layer in a.layers if layer.operation_type == "SA")
    return macs + S * H * H + 2 * H


def _arch(inp: SpecInput) -> Arch:
    if inp.space != S:
        raise InvalidArgumentError(f"space = {inp.space!r} is not allowed for this score; allowed values: ['{S}']")
    return Arch.coerce(inp.key)


@register("nsc", space=S, needs={"spec"}, group=("published",))
def nsc(inp: SpecInput) -> ProxyValue:
    """NSC (Zhu, Zhao & Lu, 2026), the authors' construction of the spec: sum of the
    Marchenko-Pastur psi over its matrices; per layer: that layer's sum. Semantics-independent."""
    mats = paper_matrices(_arch(inp))
    return ProxyValue(nsc_total(mats), nsc_layers(mats))


@register("nsc_model", space=S, needs={"spec"}, group=("published",))
def nsc_model(inp: SpecInput) -> ProxyValue:
    """NSC over the weight matrices of the semantics' model (its plan)."""
    mats = plan_matrices(inp.semantics.plan(_arch(inp)))
    return ProxyValue(nsc_total(mats), nsc_layers(mats))


def _zerolm(matrices: list[LayerMatrices], alpha: float) -> ProxyValue:
    attn, ffn = zerolm_parts(matrices)
    per = [zerolm_parts([lm])[1] + alpha * zerolm_parts([lm])[0] for lm in matrices]
    return ProxyValue(ffn + alpha * attn, per)


@register("zerolm", space=S, needs={"spec"}, group=("published",))
def zerolm(inp: SpecInput) -> ProxyValue:
    """Analytic ZeroLM (Chen et al., 2025) as the NSC authors compute it: S_ffn + alpha
    S_attn with alpha = ZEROLM_ALPHA (chosen on ids 0-249). Semantics-independent."""
    return _zerolm(paper_matrices(_arch(inp), per_head_qkv=True), ZEROLM_ALPHA)


@register("zerolm_model", space=S, needs={"spec"}, group=("published",))
def zerolm_model(inp: SpecInput) -> ProxyValue:
    """Analytic ZeroLM over the weight matrices of the semantics' model, alpha = ZEROLM_ALPHA."""
    return _zerolm(plan_matrices(inp.semantics.plan(_arch(inp))), ZEROLM_ALPHA)
