"""What one proxy pass records (:class:`Capture`), and the gradient objectives.

A proxy reads a :class:`Capture` and never mutates it. The capture for an arch is made
by the space's capture function (:mod:`.capture_bert`, :mod:`.capture_nlp`), which
follows the proxy protocol of the semantics asked for
(:class:`~nasbench_bert.semantics.ProxyProtocol`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .._torch import torch
from torch import nn

from ..checks import check_choice
from ..semantics import Objective, Semantics
from .inputs import Batch

#: seeds of the fixed random tensors, offset from the proxy seed so they never coincide
#: with the seed that initialises the model
PROJECTION_SEED_OFFSET = 104_729


@dataclass
class Capture:
    """Everything one arch's pass recorded; proxies read from it and never mutate it."""

    model: nn.Module
    batch: Batch
    semantics: Semantics
    objective: str = "ones"
    output: torch.Tensor | None = None
    ff_activations: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    head_outputs: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    #: outputs of every softmax module the published hooks see: attention
    #: probabilities, and under ``authors`` semantics the LT layers' unused softmax
    attention_probs: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    hidden_states: list[torch.Tensor] = field(default_factory=list)
    input_grad: torch.Tensor | None = None
    embeddings: torch.Tensor | None = None
    noise_grads: dict[float, torch.Tensor] = field(default_factory=dict)
    hidden_grads: list[torch.Tensor] = field(default_factory=list)
    rnn_activation_codes: torch.Tensor | None = None
    ntk_trace: float | None = None
    synflow_grads: dict[str, torch.Tensor] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def projection(shape: torch.Size | tuple[int, ...], seed: int, dtype: torch.dtype, device: torch.device | None = None,
               ) -> torch.Tensor:
    """The fixed Gaussian P of the ``projection`` objective R = sum(P * output).

    Drawn in float64 from its own generator (seeded by the proxy seed), then cast, so
    float32 and float64 runs backpropagate the same P and the global RNG is untouched.
    """
    g = torch.Generator().manual_seed(int(seed) + PROJECTION_SEED_OFFSET)
    return torch.randn(tuple(shape), generator=g, dtype=torch.float64).to(dtype=dtype, device=device)


def _ones_objective(out: torch.Tensor, seed: int) -> torch.Tensor:
    return out.sum()


def _projection_objective(out: torch.Tensor, seed: int) -> torch.Tensor:
    return (out * projection(out.shape, seed, out.dtype, out.device)).sum()


#: each gradient objective of ``ProxyProtocol``: (output, seed) -> the scalar to differentiate
_OBJECTIVES: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "ones": _ones_objective, "projection": _projection_objective}


def objective_value(out: torch.Tensor, objective: Objective, seed: int) -> torch.Tensor:
    """The scalar the gradient proxies differentiate (see ``ProxyProtocol``).

    ``"ones"``: sum(output), i.e. the published ``backward(ones_like(output))``.
    ``"projection"``: sum(P * output) for the fixed Gaussian :func:`projection`.
    """
    return _OBJECTIVES[check_choice("objective", objective, tuple(_OBJECTIVES))](out, seed)
