"""Task metadata (``bench.objectives``): the names of :mod:`nasbench_bert.data.objectives`.

Why a second name: the module moved to the data layer so that the surrogate, which
writes ``objectives-v1.json`` beside its own file, imports it downward rather than
reaching up into the lookup API. Code written against
``nasbench_bert.benchmark.objectives`` keeps working unchanged.
"""

from __future__ import annotations

from ..data.objectives import (
    DIRECTIONS, FILE, FORMAT, FORMAT_VERSION, SECTIONS, Fidelity, Objective, flexibert_objectives, from_json, nlp_objectives,
    objectives_of, pair_sigma, release_objectives, to_json,
)

__all__ = [
    "DIRECTIONS", "FILE", "FORMAT", "FORMAT_VERSION", "SECTIONS", "Fidelity", "Objective", "flexibert_objectives", "from_json",
    "nlp_objectives", "objectives_of", "pair_sigma", "release_objectives", "to_json",
]
