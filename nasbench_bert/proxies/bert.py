"""FlexiBERT proxies: the paper's set (raw and normalised), baselines, and ETAS's.

The paper's set follows ``BERT_metrics.ipynb`` term for term (which modules each sum
runs over, what is hooked, how "normalised" divides); what the gradient proxies
differentiate is the semantics' protocol (:mod:`.capture_bert`). "Normalised" = the
sum divided by the number of summed modules (or hook calls). The baselines follow
their usual definitions (SNIP, GraSP-style grad norm and SynFlow as in
mohsaied/zero-cost-nas: sums over the weights of Linear layers).
"""

from __future__ import annotations

import math

import numpy as np
from .._torch import torch
from torch import nn

from ..models.flops import flexibert_flops
from .common import binary_kernel, cosine_score, covariance_score, group_sums, host_values, module_sums
from .capture import Capture
from .registry import ProxyValue, register

S = "flexibert"


def _layers(cap: Capture) -> list[nn.Module]:
    return list(cap.model.layers)


def _op_linears(layer: nn.Module) -> list[nn.Linear]:
    return [m for m in layer.operation.modules() if isinstance(m, nn.Linear)]


def _ff_linears(layer: nn.Module) -> list[nn.Linear]:
    return [m for m in layer.feed_forward.modules() if isinstance(m, nn.Linear)]


def _inner_linears(layer: nn.Module) -> list[nn.Linear]:
    """The operation's own projections, without the attention-output dense layer."""
    out = getattr(layer.operation, "output", None)
    return [m for m in layer.operation.modules() if isinstance(m, nn.Linear) and m is not out]


def _per_layer(cap: Capture, select, term) -> tuple[list[float], int]:
    """Per layer, the float64 sum of ``term`` over the selected modules that have a
    gradient (one host copy for the model, :func:`.common.group_sums`); and their count."""
    mods = [[m for m in select(layer) if m.weight.grad is not None] for layer in _layers(cap)]
    return group_sums([(term(m) for m in ms) for ms in mods]), sum(len(ms) for ms in mods)


def _norm(vals: list[float], count: int) -> ProxyValue:
    return ProxyValue(sum(vals) / count if count else math.nan, [v for v in vals])


# -- synaptic diversity ------------------------------------------------------------------
def _memo(cap: Capture, key: str, fn):
    """Raw and normalised variants share one computation per capture."""
    if key not in cap.extra:
        cap.extra[key] = fn()
    return cap.extra[key]


def _syn_div(m: nn.Linear) -> torch.Tensor:
    # singular values in float32 (SVD is the cost), their sums and product in float64
    w = torch.linalg.svdvals(m.weight.detach()).double().sum()
    g = torch.linalg.svdvals(m.weight.grad).double().sum()
    return (w * g).abs()


@register("synaptic_diversity", space=S, needs={"backward"}, paper="synaptic_diversity", group=("paper",))
def synaptic_diversity(cap: Capture) -> ProxyValue:
    """Sum over the operation's Linear layers of |nuc(W) * nuc(dR/dW)|."""
    vals, _ = _memo(cap, "syn_div", lambda: _per_layer(cap, _op_linears, _syn_div))
    return ProxyValue(sum(vals), vals)


@register("synaptic_diversity_norm", space=S, needs={"backward"}, paper="synaptic_diversity_norm", group=("paper",))
def synaptic_diversity_norm(cap: Capture) -> ProxyValue:
    """Synaptic diversity divided by the number of summed Linear layers."""
    return _norm(*_memo(cap, "syn_div", lambda: _per_layer(cap, _op_linears, _syn_div)))


# -- synaptic saliency -------------------------------------------------------------------
def _saliency(m: nn.Linear) -> torch.Tensor:
    return (m.weight.detach().double() * m.weight.grad.double()).abs()


@register("synaptic_saliency", space=S, needs={"backward"}, paper="synaptic_saliency", group=("paper",))
def synaptic_saliency(cap: Capture) -> ProxyValue:
    """Sum of |W * dR/dW| over the feed-forward Linear layers."""
    vals, _ = _memo(cap, "saliency", lambda: _per_layer(cap, _ff_linears, _saliency))
    return ProxyValue(sum(vals), vals)


@register("synaptic_saliency_norm", space=S, needs={"backward"}, paper="synaptic_saliency_norm", group=("paper",))
def synaptic_saliency_norm(cap: Capture) -> ProxyValue:
    """Synaptic saliency divided by the number of feed-forward Linear layers."""
    return _norm(*_memo(cap, "saliency", lambda: _per_layer(cap, _ff_linears, _saliency)))


# -- activation distance -----------------------------------------------------------------
def _act_dist(cap: Capture) -> tuple[list[float], int]:
    per = [0.0] * len(_layers(cap))
    sums = host_values(binary_kernel((o[0] > 0).reshape(o.shape[1], -1)).sum()  # first sequence: tokens x units
                       for _, o in cap.ff_activations)
    for (li, _), v in zip(cap.ff_activations, sums):
        per[li] += v
    return per, len(cap.ff_activations)


@register("activation_distance", space=S, needs={"ff_activations"}, paper="activation_distance", group=("paper",))
def activation_distance(cap: Capture) -> ProxyValue:
    """Sum over feed-forward activations of the token-by-token agreement of their
    binary codes (first sequence of the batch)."""
    vals, _ = _memo(cap, "act_dist", lambda: _act_dist(cap))
    return ProxyValue(sum(vals), vals)


@register("activation_distance_norm", space=S, needs={"ff_activations"}, paper="activation_distance_norm", group=("paper",))
def activation_distance_norm(cap: Capture) -> ProxyValue:
    """Activation distance divided by the number of activations."""
    return _norm(*_memo(cap, "act_dist", lambda: _act_dist(cap)))


# -- Jacobian ------------------------------------------------------------------------------
def _pos_grad(cap: Capture) -> np.ndarray:
    g = cap.model.embeddings.position.weight.grad
    return g.detach().double().T.cpu().numpy()  # (128 dims, 512 positions)


@register("jacobian_covariance", space=S, needs={"backward"}, paper="jacobian_covariance", group=("paper",))
def jacobian_covariance(cap: Capture) -> ProxyValue:
    """Eigen-score of the correlations between the 128 columns of the position-embedding
    gradient (the published code's 'Jacobian score')."""
    return ProxyValue(covariance_score(_pos_grad(cap)))


@register("jacobian_cosine", space=S, needs={"backward"}, paper="jacobian_cosine", group=("paper",))
def jacobian_cosine(cap: Capture) -> ProxyValue:
    """Cosine score of the same 128 columns (stored as 'Jacobian Score Normalized')."""
    return ProxyValue(cosine_score(_pos_grad(cap)))


# -- size ----------------------------------------------------------------------------------
@register("num_params", space=S, paper="num_params_authors", group=("paper", "baseline"))
def num_params(cap: Capture) -> ProxyValue:
    """Number of parameters of the model built (semantics decide which model)."""
    per = [sum(p.numel() for p in layer.parameters()) for layer in _layers(cap)]
    return ProxyValue(sum(p.numel() for p in cap.model.parameters()), per)


# -- heads ---------------------------------------------------------------------------------
@register("head_importance", space=S, needs={"backward"}, paper="head_importance", group=("paper",))
def head_importance(cap: Capture) -> ProxyValue:
    """Sum of |W * dR/dW| over the operation's own projections with >= 128 outputs."""
    vals, _ = _per_layer(cap, lambda l: [m for m in _inner_linears(l) if m.weight.shape[0] >= 128], _saliency)
    return ProxyValue(sum(vals), vals)


@register("head_importance_norm", space=S, needs={"backward"}, paper="head_importance_norm", group=("paper",))
def head_importance_norm(cap: Capture) -> ProxyValue:
    """Head importance divided by the number of summed projections."""
    return _norm(*_per_layer(cap, lambda l: [m for m in _inner_linears(l) if m.weight.shape[0] >= 128], _saliency))


def _confidence(items: list[tuple[int, torch.Tensor]], n_layers: int) -> tuple[list[float], int]:
    per = [0.0] * n_layers
    for (li, _), v in zip(items, host_values(o.double().max(dim=1).values.mean() for _, o in items)):
        per[li] += v
    return per, len(items)


@register("head_confidence", space=S, needs={"head_outputs"}, paper="head_confidence", group=("paper",))
def head_confidence(cap: Capture) -> ProxyValue:
    """Sum over query/key/value/WMA/LT projections of mean_b,d max_t of their output."""
    vals, _ = _confidence(cap.head_outputs, len(_layers(cap)))
    return ProxyValue(sum(vals), vals)


@register("head_confidence_norm", space=S, needs={"head_outputs"}, paper="head_confidence_norm", group=("paper",))
def head_confidence_norm(cap: Capture) -> ProxyValue:
    """Head confidence divided by the number of hooked projections."""
    return _norm(*_confidence(cap.head_outputs, len(_layers(cap))))


@register("head_softmax_confidence", space=S, needs={"attention_probs"}, paper="head_softmax_confidence", group=("paper",))
def head_softmax_confidence(cap: Capture) -> ProxyValue:
    """Sum over softmax modules of the mean of the max over heads of their output: the
    attention probabilities, and under ``authors`` semantics also the LT layers'
    (unused) softmax of the transform, which the published hooks saw."""
    vals, _ = _confidence(cap.attention_probs, len(_layers(cap)))
    return ProxyValue(sum(vals), vals)


@register("head_softmax_confidence_norm", space=S, needs={"attention_probs"}, paper="head_softmax_confidence_norm", group=("paper",))
def head_softmax_confidence_norm(cap: Capture) -> ProxyValue:
    """Softmax confidence divided by the number of softmax outputs (NaN if none)."""
    return _norm(*_confidence(cap.attention_probs, len(_layers(cap))))


# -- common baselines ----------------------------------------------------------------------
def _linear_weights(module: nn.Module) -> list[torch.nn.Parameter]:
    """The weights zero-cost-nas sums over: every Linear layer's weight (no biases,
    embeddings or LayerNorms; the DSC convolutions are Conv1d, which it skips too)."""
    return [m.weight for m in module.modules() if isinstance(m, nn.Linear) and m.weight.grad is not None]


@register("snip", space=S, needs={"backward"}, group=("baseline",), version=2)
def snip(cap: Capture) -> ProxyValue:
    """SNIP (Lee et al. 2019) as zero-cost-nas computes it: sum over Linear weights of
    |w * dR/dw| (its |dR/d mask|), R the protocol's objective."""
    total, per = module_sums(lambda w: (w.detach().double() * w.grad.double()).abs().sum(), _linear_weights(cap.model),
                             [_linear_weights(l) for l in _layers(cap)])
    return ProxyValue(total, per)


@register("grad_norm", space=S, needs={"backward"}, group=("baseline",), version=2)
def grad_norm(cap: Capture) -> ProxyValue:
    """Sum over Linear layers of the L2 norm of dR/dW (zero-cost-nas ``grad_norm``)."""
    total, per = module_sums(lambda w: w.grad.double().norm(), _linear_weights(cap.model),
                             [_linear_weights(l) for l in _layers(cap)])
    return ProxyValue(total, per)


@register("synflow", space=S, needs={"synflow"}, group=("baseline",), version=2)
def synflow(cap: Capture) -> ProxyValue:
    """SynFlow (Tanaka et al. 2020) on |weights| with an all-ones input, float64: sum
    over Linear weights of |w * dR/dw| (see ``capture_bert._synflow_flexibert``)."""
    lin = {f"{n}.weight" for n, m in cap.model.named_modules() if isinstance(m, nn.Linear)}
    g = {n: v for n, v in cap.synflow_grads.items() if n in lin}
    total, *per = group_sums([g.values(), *([v for n, v in g.items() if n.startswith(f"layers.{i}.")]
                                            for i in range(len(_layers(cap))))])
    return ProxyValue(total, per)


@register("naswot", space=S, needs={"ff_activations"}, group=("baseline",))
def naswot(cap: Capture) -> ProxyValue:
    """NASWOT (Mellor et al. 2021): log|K| of the sequence-by-sequence agreement of the
    binary codes of every feed-forward activation."""
    B = cap.batch.input_ids.shape[0]
    K = torch.zeros(B, B, dtype=torch.float64, device=cap.batch.input_ids.device)
    for _, o in cap.ff_activations:
        K += binary_kernel((o > 0).reshape(B, -1))
    sign, logdet = np.linalg.slogdet(K.cpu().numpy())
    return ProxyValue(logdet if sign > 0 else float("nan"))


@register("flops", space=S, group=("baseline",))
def flops(cap: Capture) -> ProxyValue:
    """Forward FLOPs of the encoder on the batch's shape (matrix products)."""
    B, T = cap.batch.input_ids.shape
    return ProxyValue(flexibert_flops(cap.model.arch, B, T, cap.semantics))


# -- ETAS -----------------------------------------------------------------------------------
@register("ntkt", space=S, needs={"ntk_probe"}, group=("etas",))
def ntkt(cap: Capture) -> ProxyValue:
    """NTK trace of the token-averaged output (trainability), per input: the ETAS
    paper's eq. 12 (cross-token terms kept), as a Hutchinson estimate with one
    Rademacher probe (see ``capture_bert._ntk_trace``)."""
    return ProxyValue(cap.ntk_trace if cap.ntk_trace is not None else math.nan)


def sept_value(widths: list[int], seq_len: int) -> float:
    """log(sum_l d_l) + log(sum_l (1 - d_l^(T+1)) / (1 - d_l)), in log-space."""
    terms = []
    for d in widths:
        if d == 1:
            terms.append(math.log(seq_len + 1))
        else:  # (d^(T+1) - 1) / (d - 1) for d > 1
            terms.append((seq_len + 1) * math.log(d) + math.log1p(-d ** -(seq_len + 1)) - math.log(d - 1))
    m = max(terms)
    return math.log(sum(widths)) + m + math.log(sum(math.exp(t - m) for t in terms))


def flexibert_widths(cap: Capture) -> list[int]:
    """Every Linear's output width in the encoder stack, in order (the all-Linear
    variant of d_l)."""
    return [m.out_features for layer in _layers(cap) for m in layer.modules() if isinstance(m, nn.Linear)]


def block_widths(cap: Capture) -> list[int]:
    """d_z^l of the ETAS paper: the output width of each of the L blocks."""
    return list(cap.model.plan.block_widths)


@register("sept", space=S, group=("etas",), version=2)
def sept(cap: Capture) -> ProxyValue:
    """SEPT (expressivity) as the ETAS paper defines it: from the output widths d_z^l of
    the L blocks and the sequence length T."""
    return ProxyValue(sept_value(block_widths(cap), cap.batch.input_ids.shape[1]))


@register("sept_all_linear", space=S, group=("baseline",))
def sept_all_linear(cap: Capture) -> ProxyValue:
    """SEPT over the output widths of every Linear layer instead of every block (this
    package's 0.1 reading; it agrees with the paper's at only tau 0.27 over the 500)."""
    return ProxyValue(sept_value(flexibert_widths(cap), cap.batch.input_ids.shape[1]))
