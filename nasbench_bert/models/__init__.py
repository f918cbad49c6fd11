"""PyTorch models (the ``[torch]`` extra): FlexiBERT/ELECTRA and NAS-Bench-NLP cells."""

from __future__ import annotations

from .._torch import torch  # without PyTorch: one line naming the [torch] extra

from .authors import from_authors_state_dict, to_authors_state_dict
from .flexibert import (
    ElectraPair, FlexiBERTEncoder, SequenceClassifier, build_flexibert,
)
from .flops import count_flops, flexibert_flops
from .nlp_rnn import RecipeCell, RecipeLM, build_nlp_rnn


def num_params(model: "torch.nn.Module") -> int:
    """``sum(p.numel() for p in model.parameters())`` (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())


__all__ = [
    "ElectraPair", "FlexiBERTEncoder", "SequenceClassifier", "build_flexibert",
    "from_authors_state_dict", "to_authors_state_dict",
    "RecipeCell", "RecipeLM", "build_nlp_rnn", "count_flops", "flexibert_flops", "num_params",
]
