"""NAS-Bench-NLP proxies: the paper's RNN set and size baselines.

The model is the NAS-Bench-NLP language model of the recipe (:mod:`..models.nlp_rnn`),
initialised as the benchmark's training code does, in eval mode, on a (T, B) batch.
What the gradient proxies differentiate follows the semantics' ``nlp_objective``
(:mod:`.capture_nlp` describes both passes; ``Capture.objective`` records which ran):

* ``"rnn_output"`` (``authors``): the notebook ``RNN_metrics.ipynb`` that computed the
  stored table. R is the last RNN layer's output y (no decoder): the Jacobian family
  uses d(sum y)/d(embeddings), synaptic saliency y.backward(y), hidden synaptic saliency
  sums over every forward pass of the notebook, activation distance accumulates the
  codes of its two forwards before ``hooklogdet`` (and, like ``hooklogdet``, returns
  log|K| whatever the sign of the determinant), sums skip NaN (``torch.nansum``).
* ``"decoder_logits"`` (``as_trained``, ``as_specified``; the current choice, kept as it
  was): R is the decoder's logits, one forward; activation distance is NaN where the
  determinant is not positive.

Version 2 of every gradient or activation proxy here is the per-semantics protocol;
their ``decoder_logits`` values are those of version 1 (the hidden covariances and the
parameter count did not change).
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
from .._torch import torch

from ..semantics import NLPObjectiveRule
from .common import cosine_score, covariance_score, group_sums, module_sums
from .capture import Capture
from .capture_nlp import NOISE_AMPLITUDES
from .registry import ProxyValue, register

S = "nlp"


def _rows_by_sequence(g: torch.Tensor) -> np.ndarray:
    """(T, B, E) gradient -> (B, T*E): one row per sequence of the batch."""
    return g.detach().double().transpose(0, 1).reshape(g.shape[1], -1).cpu().numpy()


def _notebook(cap: Capture) -> bool:
    """Whether the capture follows the authors' notebook (objective ``rnn_output``)."""
    return cap.objective == NLPObjectiveRule.RNN_OUTPUT


def _sums(cap: Capture, groups) -> list[float]:
    """float64 sum of each group's tensors (one host copy for all); under the notebook
    protocol NaNs are skipped (``torch.nansum``)."""
    return group_sums(groups, nan=_notebook(cap))


def _hidden_cov(cap: Capture, layer: int) -> ProxyValue:
    h = cap.hidden_states[layer]  # (T, B, H): incoming h_{t-1}
    rows = h.double().permute(2, 1, 0).reshape(h.shape[2], -1).cpu().numpy()  # H x (B*T)
    return ProxyValue(covariance_score(rows))


@register("hidden_covariance_layer1", space=S, needs={"hidden_states"}, paper="hidden_covariance_layer1", group=("paper",))
def hidden_covariance_layer1(cap: Capture) -> ProxyValue:
    """Eigen-score of the correlation between the first cell's hidden units over all
    steps and sequences (its incoming state h_{t-1})."""
    return _hidden_cov(cap, 0)


@register("hidden_covariance_layer2", space=S, needs={"hidden_states"}, paper="hidden_covariance_layer2", group=("paper",))
def hidden_covariance_layer2(cap: Capture) -> ProxyValue:
    """The same for the second cell."""
    return _hidden_cov(cap, 1)


@register("hidden_covariance_layer3", space=S, needs={"hidden_states"}, paper="hidden_covariance_layer3", group=("paper",))
def hidden_covariance_layer3(cap: Capture) -> ProxyValue:
    """The same for the third cell. Under ``rnn_output`` the states are the last pass's, as
    the notebook's ``hidden_states[-70:]`` took them (same tokens and weights: the same
    values as the first pass's)."""
    return _hidden_cov(cap, 2)


def _jac(cap: Capture) -> np.ndarray:
    return _rows_by_sequence(cap.input_grad)


@register("jacobian_covariance", space=S, needs={"input_grad"}, paper="jacobian_covariance", group=("paper",), version=2)
def jacobian_covariance(cap: Capture) -> ProxyValue:
    """Eigen-score of the correlations between sequences of d(sum y)/d(embeddings)."""
    return ProxyValue(covariance_score(_jac(cap)))


@register("jacobian_cosine", space=S, needs={"input_grad"}, paper="jacobian_cosine", group=("paper",), version=2)
def jacobian_cosine(cap: Capture) -> ProxyValue:
    """Cosine score of the same rows."""
    return ProxyValue(cosine_score(_jac(cap)))


def _noised(cap: Capture, fn) -> dict[float, float]:
    return {a: fn(_rows_by_sequence(cap.noise_grads[a])) for a in NOISE_AMPLITUDES}


@register("jacobian_covariance_large_noise", space=S, needs={"input_grad", "noise_jacobians"}, paper="jacobian_covariance_large_noise", group=("paper",), version=2)
def jacobian_covariance_large_noise(cap: Capture) -> ProxyValue:
    """1 - |J - J(noise x10)|: stability of the Jacobian score under large input noise."""
    j = covariance_score(_jac(cap))
    return ProxyValue(1 - abs(j - _noised(cap, covariance_score)[10.0]))


@register("jacobian_cosine_large_noise", space=S, needs={"input_grad", "noise_jacobians"}, paper="jacobian_cosine_large_noise", group=("paper",), version=2)
def jacobian_cosine_large_noise(cap: Capture) -> ProxyValue:
    """1 - |C - C(noise x10)| for the cosine score."""
    c = cosine_score(_jac(cap))
    return ProxyValue(1 - abs(c - _noised(cap, cosine_score)[10.0]))


@register("jacobian_covariance_more_noise", space=S, needs={"input_grad", "noise_jacobians"}, paper="jacobian_covariance_more_noise", group=("paper",), version=2)
def jacobian_covariance_more_noise(cap: Capture) -> ProxyValue:
    """J * J(x0.1) * J(x10) * J(x100)."""
    n = _noised(cap, covariance_score)
    return ProxyValue(covariance_score(_jac(cap)) * n[0.1] * n[10.0] * n[100.0])


@register("jacobian_cosine_more_noise", space=S, needs={"input_grad", "noise_jacobians"}, paper="jacobian_cosine_more_noise", group=("paper",), version=2)
def jacobian_cosine_more_noise(cap: Capture) -> ProxyValue:
    """C * C(x0.1) * C(x10) * C(x100)."""
    n = _noised(cap, cosine_score)
    return ProxyValue(cosine_score(_jac(cap)) * n[0.1] * n[10.0] * n[100.0])


@register("activation_distance", space=S, needs={"ff_activations"}, paper="activation_distance", group=("paper",), version=2)
def activation_distance(cap: Capture) -> ProxyValue:
    """log|K|, K = agreements between sequences of the binary codes of every activation
    node at every step (NASWOT applied to the cell)."""
    sign, logdet = np.linalg.slogdet(cap.rnn_activation_codes.cpu().numpy())
    if _notebook(cap):  # hooklogdet returns the log-determinant whatever the sign
        return ProxyValue(logdet)
    return ProxyValue(logdet if sign > 0 else float("nan"))


def _cell_terms(cell: Any) -> Iterator[torch.Tensor]:
    for lins in cell.weights.values():
        for lin in list(lins)[1:]:  # every weight of a linear node but its first, as published
            if lin.weight.grad is not None:
                yield (lin.weight.detach().double() * lin.weight.grad.double()).abs()


@register("synaptic_saliency", space=S, needs={"loss_backward"}, paper="synaptic_saliency", group=("paper",), version=2)
def synaptic_saliency(cap: Capture) -> ProxyValue:
    """Sum of |W * dR/dW|, R = |y|^2 / 2 (the published y.backward(y)), over the cells'
    linear weights (all but each node's first) and the decoder (tied to the embedding:
    under ``rnn_output`` the decoder is not applied and its gradient is the embedding's)."""
    dec = cap.model.decoder.weight
    decoder = [(dec.detach().double() * dec.grad.double()).abs()] if dec.grad is not None else None
    *per, d = _sums(cap, [*(_cell_terms(c) for c in cap.model.cells), decoder or []])
    return ProxyValue(sum(per) + (d if decoder is not None else 0.0), per)


@register("hidden_synaptic_saliency", space=S, needs={"loss_backward", "input_grad", "noise_jacobians"},
          paper="hidden_synaptic_saliency", group=("paper",), version=2)
def hidden_synaptic_saliency(cap: Capture) -> ProxyValue:
    """Sum of |h * dR/dh| over every cell's incoming state at every step. Under
    ``rnn_output`` over the states of every backpropagated pass of the notebook (the
    Jacobian pass, the three noised passes and the synflow pass, each with its own
    pass's gradient); under ``decoder_logits`` over the one pass, R = |logits|^2 / 2."""
    if "hidden_passes" in cap.extra:
        n = len(cap.model.cells)
        per = _sums(cap, [[(hs[i].double() * gs[i].double()).abs() for _, hs, gs in cap.extra["hidden_passes"]]
                          for i in range(n)])
    else:
        per = group_sums([[(h.double() * g.double()).abs()] for h, g in zip(cap.hidden_states, cap.hidden_grads)])
    return ProxyValue(sum(per), per)


@register("num_params", space=S, group=("baseline",))
def num_params(cap: Capture) -> ProxyValue:
    """Parameters of the language model (tied decoder counted once)."""
    return ProxyValue(sum(p.numel() for p in cap.model.parameters()), [sum(p.numel() for p in c.parameters()) for c in cap.model.cells])


@register("grad_norm", space=S, needs={"loss_backward"}, group=("baseline",), version=2)
def grad_norm(cap: Capture) -> ProxyValue:
    """Sum over the cells' parameter tensors of the L2 norm of dR/dW."""
    cells = [[p for p in c.parameters() if p.grad is not None] for c in cap.model.cells]
    _, per = module_sums(lambda p: p.grad.double().norm(), [p for ps in cells for p in ps], cells)
    return ProxyValue(sum(per), per)


@register("snip", space=S, needs={"loss_backward"}, group=("baseline",), version=2)
def snip(cap: Capture) -> ProxyValue:
    """Sum over every cell weight of |w * dR/dw|."""
    per = group_sums([((p.detach().double() * p.grad.double()).abs() for p in c.parameters() if p.grad is not None)
                      for c in cap.model.cells])
    return ProxyValue(sum(per), per)
