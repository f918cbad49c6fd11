"""The benchmarks an evaluation ranks on: which rows each offers, which of its models are
the same, its headline target and the size its partial τ controls for.

Why a module of its own: everything that differs between FlexiBERT and NAS-Bench-NLP in
an evaluation is one :class:`_BenchmarkSpec` here (:data:`_BENCHMARK_SPECS`), so the
steps of :func:`~nasbench_bert.evaluation.evaluate` are written once for both, and a
space added to the vocabulary fails at import until it has an entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd

from ..data.tables import GLUE_TASKS
from ..semantics import Semantics
from ..vocabulary import SPACES, BenchmarkLike


#: the benchmarks :func:`evaluate` can rank on (the search spaces)
BENCHMARKS: tuple[str, ...] = SPACES


@dataclass
class _Items:
    """The rows of one benchmark: identifying columns, model keys, targets."""

    ident: pd.DataFrame       # id + arch (FlexiBERT) or log_name + recipe_hash (NLP)
    keys: list[Any]           # Arch or Recipe per row
    compute_items: list[Any]  # what proxies.compute takes for each row


def _flexibert_items(bench: BenchmarkLike | None, ids: list[int] | None) -> _Items:
    from ..spaces.flexibert import Arch

    flex = bench.to_pandas()
    ids = list(range(len(flex))) if ids is None else ids
    by_id = dict(zip(flex.id.astype(int), flex.arch))
    archs = [Arch.coerce(by_id[i]) for i in ids]
    return _Items(pd.DataFrame({"id": ids, "arch": [str(a) for a in archs]}), archs, list(ids))


def nlp_runs(bench: BenchmarkLike | None) -> pd.DataFrame:
    """The PTB runs whose recipe is public (log_name, recipe, recipe_hash), in table order:
    the NAS-Bench-NLP rows :func:`evaluate` ranks (``nlp_ids`` are positions here)."""
    p = bench.nlp.ptb
    return p.loc[p.recipe.notna(), ["log_name", "recipe", "recipe_hash"]].reset_index(drop=True)


def _nlp_items(bench: BenchmarkLike | None, pos: list[int] | None) -> _Items:
    from ..spaces.nlp import parse_recipe

    runs = nlp_runs(bench)
    if pos is not None:
        runs = runs.iloc[pos].reset_index(drop=True)
    recipes = [parse_recipe(r) for r in runs.recipe]
    return _Items(runs[["log_name", "recipe_hash"]].copy(), recipes, [(ln, r) for ln, r in zip(runs.log_name, recipes)])


def _flexibert_group_keys(items: _Items, sem: Semantics, dedupe: bool) -> list[str]:
    if not dedupe:
        return [f"row{i}" for i in range(len(items.keys))]
    from ..hardware import model_key

    return [model_key(sem.plan(a)) for a in items.keys]


def _nlp_group_keys(items: _Items, sem: Semantics, dedupe: bool) -> list[str]:
    return list(items.ident.recipe_hash) if dedupe else list(items.ident.log_name)


def _nlp_note(items: _Items) -> str:
    return (f"nlp: {len(items.keys)} PTB runs with a public recipe ({items.ident.recipe_hash.nunique()} distinct "
            "recipes) against their PTB test loss; the other PTB runs have no recipe to build a model from")


@dataclass(frozen=True)
class _BenchmarkSpec:
    """What :func:`evaluate` needs to know about one benchmark."""

    #: the headline target, and how the Markdown report names it
    headline: str
    headline_label: str
    #: the targets ranked beside the headline when ``tasks=True``
    task_targets: tuple[str, ...]
    #: the size column of the partial τ given the parameter count (``partial_tau_given_params``)
    control: str
    #: (bench, selected positions) -> the rows
    items: Callable[[BenchmarkLike | None, list[int] | None], _Items]
    #: (rows, semantics, dedupe) -> each row's model identity (equal ones are computed once)
    group_keys: Callable[[_Items, Semantics, bool], list[str]]
    #: whether a model depends on the semantics (a NAS-Bench-NLP language model does not)
    models_follow_semantics: bool
    #: rows -> what the notes say about the rows ranked (None: nothing)
    note: Callable[[_Items], str] | None = None


_BENCHMARK_SPECS: dict[str, _BenchmarkSpec] = {
    "flexibert": _BenchmarkSpec("glue", "GLUE average", GLUE_TASKS, "num_params_as_trained", _flexibert_items,
                                _flexibert_group_keys, True),
    "nlp": _BenchmarkSpec("test_loss", "PTB test loss (runs with a public recipe)", (), "num_params", _nlp_items,
                          _nlp_group_keys, False, _nlp_note),
}
assert tuple(_BENCHMARK_SPECS) == BENCHMARKS
#: each benchmark's headline target (its other targets follow it)
HEADLINE = {b: s.headline for b, s in _BENCHMARK_SPECS.items()}


def _group_keys(space: str, items: _Items, sem: Semantics, dedupe: bool) -> list[str]:
    """The identity of each row's model: rows with equal identities are computed once."""
    return _BENCHMARK_SPECS[space].group_keys(items, sem, dedupe)
