"""The trivial spec baselines beside a user's values: depth, width, parameter count and
the "deeper, then wider" rule (:mod:`nasbench_bert.proxies.baselines`), computed for the
same rows, torch-free.

Why they travel with every score: on FlexiBERT-500 depth alone reaches τ-b 0.68, so a
proxy's figure means something only beside the figure of a rule that never looked at a
model. The rows' archs and recipes come from :mod:`.context` (the benchmark's
:class:`~.benchmarks.ScoringSpace` ``keys``).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from ..checks import check_names
from ..errors import InvalidArgumentError
from ..proxies import baselines as _baselines  # torch-free: registers the trivial spec baselines
from ..proxies import registry  # torch-free: the declarations, not the proxies
from ..vocabulary import BenchmarkLike
from .benchmarks import scoring_space
from .inputs import _as_number, _where


def baseline_values(values: pd.DataFrame, space: str = "flexibert", *, semantics: Any = "as_trained", bench: BenchmarkLike | None = None,
                    names: Iterable[str] | None = None) -> pd.DataFrame:
    """The trivial spec baselines (:mod:`nasbench_bert.proxies.baselines`) of the rows
    of ``values``, one column each, aligned with its rows; torch-free. ``semantics``
    picks the model whose parameters ``param_count`` and ``depth_width_then_size``
    count (FlexiBERT). Rows whose arch or recipe cannot be found get NaN."""
    sp = scoring_space(space)
    if not isinstance(values, pd.DataFrame):
        raise InvalidArgumentError(f"values = {type(values).__name__} is not allowed; allowed: a pandas DataFrame")
    allowed = _baselines.trivial_names(space)
    chosen = allowed if names is None else check_names("names", names)
    bad = [n for n in chosen if n not in registry.REGISTRY[space] or not registry.REGISTRY[space][n].analytic]
    if bad:
        raise InvalidArgumentError(f"names = {bad} not allowed; allowed values: analytic scores of {space!r}, e.g. {allowed}")
    from ..semantics import get_semantics

    sem = get_semantics(semantics)
    keys = sp.keys(values.reset_index(drop=True), bench)
    return pd.DataFrame(_baselines.analytic_values(space, keys, chosen, sem))


def with_baselines(values: pd.DataFrame, space: str = "flexibert", *, semantics: Any = "as_trained",
                   bench: BenchmarkLike | None = None) -> pd.DataFrame:
    """``values`` with the trivial spec baselines (:func:`baseline_values`) beside its
    columns, as ``proxies score --values`` scores them; a baseline no row has is left out.

    A column of ``values`` with a baseline's name is the user's data: it is kept when it
    holds the baseline's own values (an export of ``proxies compute``) and refused,
    naming the rows where it differs, when it does not; before, it was silently replaced
    by the built-in baseline. Rows whose baseline cannot be computed (an unknown id) are
    not compared: :func:`score` reports them itself."""
    if not isinstance(values, pd.DataFrame):
        raise InvalidArgumentError(f"values = {type(values).__name__} is not allowed; allowed: a pandas DataFrame")
    df = values.reset_index(drop=True)
    base = baseline_values(df, space, semantics=semantics, bench=bench)
    base = base.loc[:, base.notna().any()]
    for c in [c for c in base.columns if c in df]:
        theirs = base[c].to_numpy(dtype=float)
        mine = np.array([_as_number(v) for v in df[c]], dtype=object)
        known = np.isfinite(theirs)
        differ = known & np.array([m is None or not np.isclose(m, t, rtol=1e-9, atol=0.0, equal_nan=True)
                                   for m, t in zip(mine, theirs)], dtype=bool)
        if differ.any():
            sem = getattr(semantics, "key", semantics)
            raise InvalidArgumentError(
                f"values column {c!r} has the name of a built-in baseline but differs from its {sem} values at "
                f"{int(differ.sum())} of {int(known.sum())} rows ({_where(df, space, differ)}); allowed: the baseline's own "
                "values under that name; rename the column to score it, or leave the baselines out (CLI: --no-baselines)")
    return pd.concat([df, base.drop(columns=[c for c in base.columns if c in df])], axis=1)
