"""Each benchmark as scoring sees it: one :class:`ScoringSpace` per search space
(:data:`SCORING_SPACES`) - its targets, how rows find them, its stored proxies, the size
the stored scores are controlled for, its rank context and its model keys.

Why one table: what differs per benchmark is gathered in one place, so the steps above it
(:mod:`.inputs`, :mod:`.scores`, :mod:`.baselines`, :mod:`.stored`) are written once for
both; a space added to the vocabulary fails at import until it has an entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import metrics
from ..checks import check_choice
from ..data.tables import FLEXIBERT_PROXY_COLUMNS, GLUE_TASKS, NLP_PROXY_COLUMNS
from ..errors import InvalidArgumentError
from ..semantics import PARAM_COLUMNS
from ..vocabulary import SPACES, BenchmarkLike, Space, SpaceName
from .context import _flexibert_context, _flexibert_keys, _nlp_context, _nlp_keys
from .lookup import _bench, _flexibert_lookup, _flexibert_stored, _nlp_lookup


@dataclass(frozen=True)
class ScoringSpace:
    """What scoring needs to know about one benchmark."""

    name: str
    #: target names this space's rows can be looked up against
    targets: tuple[str, ...]
    #: rows -> target values, from the benchmark
    lookup: Callable[[pd.DataFrame, str, Any], np.ndarray]
    #: the release's stored proxy values with identifying columns and the target
    stored: Callable[[Any], pd.DataFrame]
    stored_target: str
    stored_columns: Callable[[pd.DataFrame], list[str]]
    #: the size the stored scores are controlled for
    control: str
    #: rows -> the context of the metrics beyond τ (cells, pw10 size, controls)
    context: Callable[[pd.DataFrame, Any], metrics.RankContext]
    #: rows -> the model key (arch, recipe or None) of each, for the analytic scores
    keys: Callable[[pd.DataFrame, Any], list[Any]]


#: one per search space of the package vocabulary (:data:`~nasbench_bert.vocabulary.SPACES`)
SCORING_SPACES: dict[SpaceName, ScoringSpace] = {
    "flexibert": ScoringSpace(
        "flexibert", ("glue", *GLUE_TASKS, *PARAM_COLUMNS.values()),
        _flexibert_lookup, _flexibert_stored, "glue",
        lambda df: [*FLEXIBERT_PROXY_COLUMNS.values(), *(["activation_distance_dedup"] if "activation_distance_dedup" in df else []),
                    "num_params_as_specified", "num_params_as_trained"],
        "num_params_as_trained", _flexibert_context, _flexibert_keys),
    "nlp": ScoringSpace(
        "nlp", ("test_loss", "wikitext2_loss", "num_params"), _nlp_lookup, lambda bench: _bench(bench).nlp.ptb.copy(),
        "test_loss", lambda df: ["num_params", *NLP_PROXY_COLUMNS.values()], "num_params", _nlp_context, _nlp_keys),
}
assert tuple(SCORING_SPACES) == SPACES  # a space added to the vocabulary needs its scoring adapter here


def scoring_space(space: Any) -> ScoringSpace:
    """The scoring space named ``space`` (``"flexibert"`` or ``"nlp"``)."""
    return SCORING_SPACES[check_choice("space", space, SPACES)]


def _lookup(df: pd.DataFrame, target: str, bench: BenchmarkLike | None, space: str = "flexibert") -> np.ndarray:
    """The benchmark's ``target`` of each row of ``df``: PTB's and WikiText-2's losses (and
    a run's parameter count) from NAS-Bench-NLP whatever ``space`` says, else ``space``'s."""
    sp = SCORING_SPACES[Space.NLP] if target in ("test_loss", "wikitext2_loss") or (
        target == "num_params" and ("log_name" in df or "recipe_id" in df)) else scoring_space(space)
    return sp.lookup(df, target, bench)


def rank_context(values: pd.DataFrame, space: str = "flexibert", bench: BenchmarkLike | None = None) -> metrics.RankContext:
    """The cells, pw10 size and controls of the rows of ``values`` (see
    :mod:`nasbench_bert.scoring`): FlexiBERT rows are found by ``id`` or ``arch``, NAS-Bench-NLP rows by
    ``log_name`` (or ``key``), ``recipe_id`` or ``recipe``. A row that cannot be found
    gets NaN (the metrics that need it are then NaN for every score)."""
    if not isinstance(values, pd.DataFrame):
        raise InvalidArgumentError(f"values = {type(values).__name__} is not allowed; allowed: a pandas DataFrame")
    return scoring_space(space).context(values.reset_index(drop=True), bench)
