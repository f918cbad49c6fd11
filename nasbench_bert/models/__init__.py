"""PyTorch models (the ``[torch]`` extra): FlexiBERT/ELECTRA and NAS-Bench-NLP cells."""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "nasbench_bert.models needs PyTorch: pip install torch==2.13.0 (CPU) then pip install 'nasbench-bert[torch]'"
    ) from e

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
