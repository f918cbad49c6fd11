"""Row filters of the FlexiBERT table (:meth:`nasbench_bert.Benchmark.filter`).

Conditions combine by AND. Operation filters read the arch's *labels*: the trained
models are all scaled dot-product attention whatever ``operation_type`` says
(docs/errata.md), so ``contains="LT"`` selects archs labelled LT, not archs that ran a
Fourier transform. Parameter bounds count the model of the ``semantics`` asked for.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..checks import is_int
from ..errors import InvalidArgumentError
from ..semantics import DEFAULT_SPEC_SEMANTICS, PARAM_COLUMNS, SemanticsLike, get_semantics
from ..spaces.flexibert import HIDDEN_SIZES, LAYER_COUNTS, OPERATION_TYPES, OPERATIONS

#: what ``contains`` / ``only`` accept: an operation type, or a type and its parameter
OPERATION_FILTERS: tuple[str, ...] = (*OPERATION_TYPES, *(f"{t}-{p}" for t, p in OPERATIONS))
FILTER_FIELDS: tuple[str, ...] = ("hidden_size", "num_layers", "contains", "only", "min_params", "max_params", "semantics")
_MAX_LAYERS = max(LAYER_COUNTS)


def filter_mask(df: pd.DataFrame, *, hidden_size: int | Sequence[int] | None = None,
                num_layers: int | Sequence[int] | None = None, contains: str | None = None, only: str | None = None,
                min_params: int | None = None, max_params: int | None = None,
                semantics: SemanticsLike = DEFAULT_SPEC_SEMANTICS) -> np.ndarray:
    """A boolean mask over ``df``'s rows that meet every given condition (see
    :meth:`nasbench_bert.Benchmark.filter`); a bad value names its field."""
    mask = np.ones(len(df), dtype=bool)
    for name, val, allowed in (("hidden_size", hidden_size, HIDDEN_SIZES), ("num_layers", num_layers, LAYER_COUNTS)):
        if val is not None:
            mask &= df[name].isin(_global_values(name, val, allowed)).to_numpy()
    present = np.stack([df[f"l{i}_op"].notna().to_numpy() for i in range(_MAX_LAYERS)], axis=1)
    if contains is not None:
        mask &= (_layer_matches(df, "contains", contains) & present).any(axis=1)
    if only is not None:
        mask &= np.where(present, _layer_matches(df, "only", only), True).all(axis=1)
    col = PARAM_COLUMNS[get_semantics(semantics).name]
    for name, bound, cmp in (("min_params", min_params, np.greater_equal), ("max_params", max_params, np.less_equal)):
        if bound is not None:
            if not is_int(bound) or bound < 0:
                raise InvalidArgumentError(f"{name} = {bound!r} is not allowed; allowed: a non-negative integer or None")
            mask &= cmp(df[col].to_numpy(), bound)
    return mask


def _global_values(name: str, val: Any, allowed: tuple[int, ...]) -> list[Any]:
    vals = [val] if is_int(val) else (list(val) if isinstance(val, (list, tuple, set)) else [val])
    if not vals or any(not is_int(v) or v not in allowed for v in vals):
        raise InvalidArgumentError(f"{name} = {val!r} is not allowed; allowed values: {list(allowed)} or a list of them")
    return vals


def _layer_matches(df: pd.DataFrame, name: str, op: Any) -> np.ndarray:
    """Per row and layer slot: is the layer labelled with ``op``."""
    if not isinstance(op, str) or op.upper() not in OPERATION_FILTERS:
        raise InvalidArgumentError(f"{name} = {op!r} is not allowed; allowed values: {list(OPERATION_FILTERS)}")
    kind, _, param = op.upper().partition("-")
    out = []
    for i in range(_MAX_LAYERS):
        m = (df[f"l{i}_op"] == kind).to_numpy().copy()
        if param:
            m &= (df[f"l{i}_param"] == param).to_numpy()
        out.append(m)
    return np.stack(out, axis=1)
