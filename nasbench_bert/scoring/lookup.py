"""What scoring reads of a benchmark for a row: the targets it can look up, and the
release's stored proxy values.

Why a module of its own: the checks of a user's rows (:mod:`.inputs`), the scores
(:mod:`.scores`) and the rank context (:mod:`.context`) all ask the benchmark the same
questions - which rows it knows, what their target is - and must get the same answers,
so each question is answered here once. Without a ``bench`` the benchmark is loaded
(:func:`~nasbench_bert.benchmark.flexibert.ensure_benchmark`), which every public function
of :mod:`nasbench_bert.scoring` says it does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..benchmark.flexibert import ensure_benchmark
from ..data.columns import canonical_column
from ..data.tables import GLUE_TASKS
from ..errors import InvalidArgumentError
from ..vocabulary import BenchmarkLike, Space


#: targets and whether higher is better
TARGETS: dict[str, bool] = {"glue": True, **{t: True for t in GLUE_TASKS}, "test_loss": False, "wikitext2_loss": False}


def _bench(bench: BenchmarkLike | None) -> BenchmarkLike:
    """``bench``, checked; without one the benchmark is loaded (``Benchmark.load``: the
    documented data resolution), which every public function here says it does."""
    return ensure_benchmark(bench)


def _flexibert_lookup(df: pd.DataFrame, target: str, bench: BenchmarkLike | None) -> np.ndarray:
    flex = _bench(bench).to_pandas()
    # scoring's size name "num_params" (the default control) is FlexiBERT's as-specified count; the other
    # data release 1 name (num_params_seed_compat) answers with a DeprecationWarning (data.columns)
    target = "num_params_as_specified" if target == "num_params" else canonical_column(target, flex.columns)
    if "id" in df:
        m = dict(zip(flex.id, flex[target]))
        return np.array([m.get(k, np.nan) for k in df["id"]], dtype=float)
    if "arch" in df:
        m = flex.groupby("arch")[target].mean().to_dict()  # repeated archs: mean of their runs
        return np.array([m.get(k, np.nan) for k in df["arch"]], dtype=float)
    raise InvalidArgumentError(f"target = {target!r} needs an 'id' or 'arch' column in values")


def _nlp_lookup(df: pd.DataFrame, target: str, bench: BenchmarkLike | None) -> np.ndarray:
    nlp = _bench(bench).nlp
    table = nlp.wikitext2 if target == "wikitext2_loss" else nlp.ptb
    col = {"wikitext2_loss": "final_test_loss"}.get(target, target)  # NaN for the 4 diverged runs
    if "log_name" in df:
        m = dict(zip(table.log_name, table[col]))
        return np.array([m.get(k, np.nan) for k in df.log_name], dtype=float)
    if "recipe_id" in df:
        m = table.groupby("recipe_id")[col].mean().to_dict()
        return np.array([m.get(k, np.nan) for k in df.recipe_id], dtype=float)
    raise InvalidArgumentError(f"target = {target!r} needs a 'log_name' or 'recipe_id' column in values")


def _flexibert_stored(bench: BenchmarkLike | None) -> pd.DataFrame:
    bench = _bench(bench)
    p = bench.data.table("flexibert_proxies").to_pandas()
    if "activation_distance_hook_multiplicity" in p:  # the per-pass value (docs/errata.md)
        p["activation_distance_dedup"] = p["activation_distance"] / p.pop("activation_distance_hook_multiplicity")
    f = bench.to_pandas()[["id", "glue", "num_params_as_specified", "num_params_as_trained"]]
    return p.merge(f, on="id")


def _lookup_space(target: str, space: str) -> str:
    """The space whose table :func:`.benchmarks._lookup` reads ``target`` from."""
    return Space.NLP if target in ("test_loss", "wikitext2_loss") else space


def _known_keys(space: str, column: str, target: str, bench: BenchmarkLike | None) -> set[Any] | None:
    """The values of ``column`` the benchmark can look ``target`` up for (exactly the
    keys :func:`.benchmarks._lookup` finds), or None when ``target`` is not looked up by that column."""
    if space == Space.FLEXIBERT and column in ("id", "arch"):
        flex = _bench(bench).to_pandas()
        return set(flex[column].astype(int) if column == "id" else flex[column])
    if space == Space.NLP and column in ("log_name", "recipe_id"):
        nlp = _bench(bench).nlp
        return set((nlp.wikitext2 if target == "wikitext2_loss" else nlp.ptb)[column])
    return None
