"""The rank context of a benchmark's rows: the cells, the 10 %-PW size and the strata
(controls) that the metrics beyond one τ are computed in, and the model of each row.

Why a module of its own: the context is a fact of the benchmark, not of the score - the
same (layers, hidden size) cells and equal-shape strata hold for every proxy scored on
those rows - and it is chosen before any score is looked at (see
:mod:`nasbench_bert.scoring` for each benchmark's choice and why). The model keys found
here also give the trivial baselines their archs and recipes (:mod:`.baselines`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from ..semantics import AS_SPECIFIED
from ..sizes import flexibert_num_params, nlp_num_params
from ..spaces.flexibert import Arch
from ..vocabulary import BenchmarkLike
from .lookup import _bench


# -- FlexiBERT: cells of (layers, hidden size), strata of equal coarse shape --------------------
@functools.lru_cache(maxsize=4096)
def _arch_facts(arch: str) -> tuple[float, float, float, float]:
    """(layers, hidden size, total heads, as-specified parameter count) of an arch."""
    a = Arch.coerce(arch)
    return (float(len(a.layers)), float(a.hidden_size), float(sum(int(layer.num_operation_heads) for layer in a.layers)),
            float(flexibert_num_params(a, AS_SPECIFIED)))


def _arch_or_none(value: Any) -> Arch | None:
    try:
        return Arch.coerce(value)
    except Exception:  # not an arch (NaN, junk): no context for this row
        return None


def _flexibert_keys(df: pd.DataFrame, bench: BenchmarkLike | None) -> list[Any]:
    """The arch of each row: by ``id`` (the benchmark's arch), else the ``arch`` column."""
    if "id" in df:
        flex = _bench(bench).to_pandas()
        by_id = dict(zip(flex.id.astype(int), flex.arch))
        out: list[Any] = []
        for i in df["id"]:
            try:
                out.append(_arch_or_none(by_id.get(int(i))))
            except (TypeError, ValueError):
                out.append(None)
        return out
    if "arch" in df:
        return [_arch_or_none(a) for a in df["arch"]]
    return [None] * len(df)


def _flexibert_context(df: pd.DataFrame, bench: BenchmarkLike | None) -> metrics.RankContext:
    facts = np.array([_arch_facts(str(a)) if a is not None else (np.nan,) * 4 for a in _flexibert_keys(df, bench)],
                     dtype=float).reshape(len(df), 4)
    cells = np.where(np.isfinite(facts[:, 0]), facts[:, 0] * 10_000 + facts[:, 1], np.nan)
    return metrics.RankContext(cells=cells, size=facts[:, 3], size_name="num_params (as specified)",
                               controls=facts[:, :3], control_names=("layers", "hidden_size", "total_heads"),
                               cells_name="(layers, hidden size)")


# -- NAS-Bench-NLP: cells of equal parameter count, no strata ------------------------------------
def _nlp_tables(bench: BenchmarkLike | None) -> list[pd.DataFrame]:
    nlp = _bench(bench).nlp
    return [nlp.ptb, nlp.wikitext2]


def _nlp_rows(df: pd.DataFrame, bench: BenchmarkLike | None) -> tuple[list[Any], np.ndarray]:
    """(recipe or None, parameter count or NaN) of each row: from its ``recipe``, or its
    run (``log_name``, or ``key`` as the sweep labels runs; PTB first, then WikiText-2),
    or its ``recipe_id`` (PTB)."""
    from ..spaces.nlp import parse_recipe

    n = len(df)
    recipes: list[Any] = [None] * n
    sizes = np.full(n, np.nan)
    label = "log_name" if "log_name" in df else "key" if "key" in df else None
    if label is not None or "recipe_id" in df:
        for t in reversed(_nlp_tables(bench)):  # PTB last: it wins where a run is in both
            col = label if label is not None else "recipe_id"
            src = "log_name" if label is not None else "recipe_id"
            if src not in t:
                continue
            rec = dict(zip(t[src], t["recipe"]))
            num = dict(zip(t[src], t["num_params"]))
            for i, k in enumerate(df[col]):
                if k in num:
                    sizes[i] = float(num[k])
                    if isinstance(rec.get(k), str):
                        recipes[i] = rec[k]
    if "recipe" in df:
        for i, r in enumerate(df["recipe"]):
            if recipes[i] is None and r is not None and not (isinstance(r, float) and math.isnan(r)):
                recipes[i] = r
    parsed: list[Any] = []
    for i, r in enumerate(recipes):
        try:
            parsed.append(parse_recipe(r) if r is not None else None)
        except Exception:  # not a recipe: no baselines for this row
            parsed.append(None)
        if parsed[-1] is not None and not np.isfinite(sizes[i]):
            sizes[i] = float(nlp_num_params(parsed[-1]))
    return parsed, sizes


def _nlp_keys(df: pd.DataFrame, bench: BenchmarkLike | None) -> list[Any]:
    return _nlp_rows(df, bench)[0]


def _nlp_context(df: pd.DataFrame, bench: BenchmarkLike | None) -> metrics.RankContext:
    size = _nlp_rows(df, bench)[1]
    # no arch strata (controls): every recipe has the same layers and hidden size
    return metrics.RankContext(cells=size.copy(), size=size, size_name="num_params", cells_name="(equal parameter count)")


# -- the context on the rows a score is computed on --------------------------------------------
def _take(ctx: metrics.RankContext, m: np.ndarray) -> metrics.RankContext:
    """The context on the rows of ``m``; a part with a missing value there is dropped
    (its metrics become NaN) rather than silently shrinking the rows every metric uses."""
    c = ctx.take(m)
    cells = c.cells if c.cells is None or pd.notna(c.cells).all() else None
    size = c.size if c.size is None or np.isfinite(c.size).all() else None
    ctrl = c.controls if c.controls is None or np.isfinite(c.controls).all() else None
    return metrics.RankContext(cells, size, c.size_name, ctrl, c.control_names, c.cells_name)


def _within_notes(x: np.ndarray, ctx: metrics.RankContext) -> list[str]:
    """Why a within-group metric is NaN for a score constant within every group: the
    reader sees "constant within every stratum", not a bare dash."""
    notes = []
    if ctx.cells is not None and metrics.constant_within_every_group(x, np.asarray(ctx.cells, dtype=float)):
        notes.append(f"within-cell τ undefined: constant within every cell {ctx.cells_name}".rstrip())
    if ctx.controls is not None and metrics.constant_within_every_group(x, metrics.strata_labels(ctx.controls, len(x))):
        notes.append(f"tau_within_arch undefined: constant within every stratum ({', '.join(ctx.control_names)})")
    return notes


def _describe(ctx: metrics.RankContext) -> dict[str, str]:
    return {"pw10_size": ctx.size_name if ctx.size is not None else "",
            "cells": ctx.cells_name if ctx.cells is not None else "",
            "arch_strata": ", ".join(ctx.control_names) if ctx.controls is not None else ""}
