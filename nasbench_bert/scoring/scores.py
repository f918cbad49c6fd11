"""The scores: :func:`score` ranks each proxy column against a target with τ-b, ρ, the
metrics beyond one τ (:data:`NEW_METRICS`), top-k precision and the partial τ given a size
column, each with its bootstrap interval (which τ is which: :mod:`nasbench_bert.scoring`).

Why here and not in :mod:`nasbench_bert.metrics`: the metrics are pure functions of
arrays; this step is what makes arrays of a user's table - the rows checked
(:mod:`.inputs`), the target looked up and oriented, each proxy oriented by its declared
``higher_is_better`` (so a positive τ always means "ranks archs the way training did"),
the rank context taken on the rows where both are finite (:mod:`.context`) - and what
says why a figure is missing (the ``note`` column).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Iterable

import numpy as np
import pandas as pd
from scipy.stats import ConstantInputWarning, kendalltau, spearmanr

from .. import metrics
from ..checks import check_int, check_names, check_real, check_seed
from ..errors import InvalidArgumentError
from ..proxies import baselines as _baselines  # noqa: F401  (torch-free: registers the trivial spec baselines)
from ..proxies import nsc as _nsc  # noqa: F401  (torch-free: registers the NSC and ZeroLM closed forms)
from ..proxies import registry  # torch-free: the declarations, not the proxies
from ..vocabulary import BenchmarkLike
from .benchmarks import SCORING_SPACES, _lookup, rank_context, scoring_space
from .context import _describe, _take, _within_notes
from .inputs import _NOT_SCORES, _check_score_args, _numeric, _prepare
from .lookup import TARGETS, _lookup_space


#: stored columns whose orientation differs from "higher is better"
LOWER_IS_BETTER: set[str] = set()
#: the metrics beyond τ-b and ρ that every score row carries, with their intervals
NEW_METRICS: tuple[str, ...] = ("tau_tiebroken", "tau_pw10", "tau_within_cell", "tau_within_cell_tb", "tau_within_arch",
                                "tau_within_arch_tb")


def _orientation(name: str, space: str) -> bool:
    """A proxy's declared orientation when it is registered (live proxies), else
    higher-is-better unless listed in :data:`LOWER_IS_BETTER` (stored columns)."""
    reg = registry.REGISTRY.get(space, {})
    if name in reg:
        return reg[name].higher_is_better
    return name not in LOWER_IS_BETTER


def partial_tau(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    """Partial Kendall tau of x and y controlling for z (Kendall 1942)."""
    txy, tyz, txz = (kendalltau(a, b)[0] for a, b in ((x, y), (y, z), (x, z)))
    den = math.sqrt(max((1 - txz ** 2) * (1 - tyz ** 2), 0.0))
    return float((txy - txz * tyz) / den) if den > 0 else float("nan")


def strata_tau(x: np.ndarray, y: np.ndarray, z: np.ndarray, n_strata: int = 5) -> float:
    """Mean Kendall tau within quantile strata of z, weighted by stratum size."""
    edges = np.unique(np.quantile(z, np.linspace(0, 1, n_strata + 1)))
    idx = np.clip(np.searchsorted(edges, z, side="right") - 1, 0, len(edges) - 2)
    num = den = 0.0
    for s in np.unique(idx):
        m = idx == s
        if m.sum() >= 3:
            t = kendalltau(x[m], y[m])[0]
            if np.isfinite(t):
                num += t * m.sum()
                den += m.sum()
    return num / den if den else float("nan")


def _bootstrap(x: np.ndarray, y: np.ndarray, n: int, seed: int) -> tuple[float, float, float, float]:
    """τ-b's and ρ's 95 % percentile intervals from ``n`` resamples of ``seed``, one scipy
    call each: the definition that :func:`score`'s ``tau_ci_*`` and ``rho_ci_*`` (now
    computed with every other metric, from the same resamples) are tested against."""
    if n <= 0:
        return (math.nan,) * 4
    rng = np.random.default_rng(seed)
    taus, rhos = [], []
    with warnings.catch_warnings():  # a resample with one distinct value gives NaN, left out by nanpercentile
        warnings.simplefilter("ignore", ConstantInputWarning)
        for _ in range(n):
            i = rng.integers(0, len(x), len(x))
            taus.append(kendalltau(x[i], y[i])[0])
            rhos.append(spearmanr(x[i], y[i])[0])
    t, r = np.array(taus, dtype=float), np.array(rhos, dtype=float)
    return (float(np.nanpercentile(t, 2.5)), float(np.nanpercentile(t, 97.5)),
            float(np.nanpercentile(r, 2.5)), float(np.nanpercentile(r, 97.5)))


def score(
    values: pd.DataFrame,
    target: str | pd.Series | Iterable[str] = "glue",
    *,
    proxies: Iterable[str] | None = None,
    space: str = "flexibert",
    control: str | None = "num_params",
    bootstrap: int = 200,
    top: float = 0.1,
    seed: int = 0,
    bench: BenchmarkLike | None = None,
    context: metrics.RankContext | None = None,
    duplicates: str = "error",
    unknown_ids: str = "error",
) -> pd.DataFrame:
    """Score proxy columns of ``values`` against ``target``.

    ``target`` is a column of ``values``, a Series aligned with it, or a target name
    looked up in the benchmark: ``"glue"`` or a GLUE task (FlexiBERT rows need ``id``
    or ``arch``), ``"test_loss"`` (PTB; rows need ``log_name`` or ``recipe_id``) or
    ``"wikitext2_loss"`` (rows need ``log_name``); or a list of names (one block of
    rows per target, e.g. ``["glue", *GLUE_TASKS]``). Rows where the proxy or the
    target is not finite are left out of that proxy's score (``n`` says how many remain).

    ``control`` names the size column to control for (from ``values``, else the
    benchmark's column of that name, e.g. ``"num_params_as_trained"`` - the parameter
    count of the model that was trained - or ``"num_params"`` (the default), each space's stated count:
    FlexiBERT's ``num_params_as_specified``, NAS-Bench-NLP's logged ``num_params``):
    ``partial_tau_given_params`` and ``strata_tau_given_params`` then say what the proxy
    adds beyond size.

    Every row also carries the metrics of :data:`NEW_METRICS` and the top-k precision
    with bootstrap intervals (see the module docstring for which τ each is), in the
    context of :func:`rank_context` (or ``context``, one entry per row of ``values``);
    ``pw10_size``, ``cells`` and ``arch_strata`` name what they used.

    Nothing the user gave is dropped without a word: a column
    with a value that is not a number, an id that occurs twice, an id the benchmark
    lacks (when the target is looked up) and a column named like a benchmark target
    whose values are not the benchmark's are refused with one line naming the column
    and the ids. ``duplicates`` (``"error"``, ``"first"`` or ``"mean"``) and
    ``unknown_ids`` (``"error"`` or ``"drop"``) say what to do instead; what they merged
    or dropped is an :class:`~nasbench_bert.errors.InputRowsWarning` and a line of
    ``result.attrs["notes"]``. A column of numbers stored as text or Python objects is
    converted (every value parses as a number, or it is refused).
    """
    if isinstance(target, (str, pd.Series)):
        return _score_one(values, target, proxies=proxies, space=space, control=control, bootstrap=bootstrap, top=top,
                          seed=seed, bench=bench, context=context, duplicates=duplicates, unknown_ids=unknown_ids)
    if isinstance(target, (dict, bytes)) or not isinstance(target, Iterable):
        raise InvalidArgumentError(f"target = {target!r} is not allowed; allowed: a target name {sorted(TARGETS)}, a column "
                                   "name of values, a pandas Series aligned with values, or a list of target names")
    names = check_names("target", target)
    if not names:
        raise InvalidArgumentError("target = [] is not allowed; allowed: at least one target name")
    ctx = context if context is not None else rank_context(values, space, bench) if isinstance(values, pd.DataFrame) and \
        not values.empty else None
    parts = [_score_one(values, t, proxies=proxies, space=space, control=control, bootstrap=bootstrap, top=top, seed=seed,
                        bench=bench, context=ctx, duplicates=duplicates, unknown_ids=unknown_ids) for t in names]
    out = pd.concat(parts, ignore_index=True)
    out.attrs["notes"] = list(dict.fromkeys(n for p in parts for n in p.attrs.get("notes", [])))
    return out


def _score_one(values: pd.DataFrame, target: str | pd.Series, *, proxies: Iterable[str] | None, space: str,
               control: str | None, bootstrap: int, top: float, seed: int, bench: BenchmarkLike | None,
               context: metrics.RankContext | None, duplicates: str = "error", unknown_ids: str = "error") -> pd.DataFrame:
    """:func:`score` against one target: the arguments checked, the rows checked
    (:func:`_prepare`), the target, context and control looked up once, then one row per proxy."""
    _check_score_args(values, target, space, control, context)
    if proxies is not None:
        proxies = check_names("proxies", proxies)
    bootstrap = check_int("bootstrap", bootstrap, low=0, high=100_000)
    top = check_real("top", top, low=0.0, high=1.0, low_open=True)
    seed = check_seed("seed", seed, none=False)
    if context is not None:
        for name, arr in (("cells", context.cells), ("size", context.size), ("controls", context.controls)):
            if arr is not None and len(arr) != len(values):
                raise InvalidArgumentError(f"context.{name} has {len(arr)} rows; values has {len(values)}")
    prep = _prepare(values, target, proxies=proxies, space=space, control=control, bench=bench, duplicates=duplicates,
                    unknown_ids=unknown_ids)
    df = prep.frame
    if isinstance(target, pd.Series):  # the user's target follows the rows that were kept
        target = target.reset_index(drop=True).iloc[prep.rows] if len(target) == len(values) else target
    y, tname = _target_values(df, target, bench, space)
    ctx = context.take(prep.rows) if context is not None else rank_context(df, space, bench)
    z_raw = _control_values(df, control, bench, space)
    cols = list(proxies) if proxies is not None else [c for c in _proxy_columns(df, tname) if c not in prep.benchmark_columns]
    if not cols:
        raise InvalidArgumentError(f"values has no proxy column to score (columns: {[str(c) for c in values.columns][:12]}); "
                                   "allowed: at least one column of numbers that is not an identifier, a target or bookkeeping")
    described = _describe(ctx)
    out = []
    for c in cols:
        if c not in df:
            raise InvalidArgumentError(f"proxy = {c!r} is not a column of values; allowed values: {[x for x in df.columns if '__' not in x]}")
        row: dict[str, Any] = {"proxy": c, "target": tname, **described}
        row.update(_score_column(df, c, y, ctx, z_raw, control, space, bootstrap, seed, top))
        out.append(row)
    res = pd.DataFrame(out)
    res = res[[c for c in _SCORE_COLUMNS if c in res]]
    res.attrs["notes"] = list(prep.notes)
    return res


def _target_values(df: pd.DataFrame, target: str | pd.Series, bench: BenchmarkLike | None, space: str
                   ) -> tuple[np.ndarray, str]:
    """The target of each row of ``df``, oriented so that higher is better, and its name:
    a Series aligned with ``df``, a column of ``df``, or a target looked up in the benchmark."""
    if isinstance(target, pd.Series):
        if len(target) != len(df):
            raise InvalidArgumentError(f"target is a Series of {len(target)} values; values has {len(df)} rows")
        y_raw, tname, higher = target.reset_index(drop=True).to_numpy(dtype=float), str(target.name or "target"), True
    else:
        if target not in TARGETS and target not in df:
            raise InvalidArgumentError(f"target = {target!r} is not allowed; allowed values: {sorted(TARGETS)} or a column of values")
        tname, higher = target, TARGETS.get(target, True)
        if target not in df and target not in SCORING_SPACES[_lookup_space(target, space)].targets:
            raise InvalidArgumentError(f"target = {target!r} is not a target of space = {space!r}; allowed values: "
                                       f"{[t for t in scoring_space(space).targets if t in TARGETS]} or a column of values")
        y_raw = _numeric(df, target, "target") if target in df else _lookup(df, target, bench, space)
    return (y_raw if higher else -y_raw), tname


def _control_values(df: pd.DataFrame, control: str | None, bench: BenchmarkLike | None, space: str) -> np.ndarray | None:
    """The size column ``control`` for each row (from ``df``, else a ``num_params*``
    column of the benchmark); None when there is none, or it cannot be looked up."""
    if control is None:
        return None
    if control in df:
        return _numeric(df, control, "control")
    try:
        return _lookup(df, control, bench, space) if control.startswith("num_params") else None
    except (ValueError, KeyError):
        return None


def _proxy_columns(df: pd.DataFrame, tname: str) -> list[str]:
    """The numeric columns of ``df`` that are scores, when ``proxies`` names none."""
    skip = _NOT_SCORES | {tname}
    return [c for c in df.columns if c not in skip and "__" not in c and pd.api.types.is_numeric_dtype(df[c])
            and not c.startswith("g2v_")]


def _score_column(df: pd.DataFrame, c: str, y: np.ndarray, ctx: metrics.RankContext, z_raw: np.ndarray | None,
                  control: str | None, space: str, bootstrap: int, seed: int, top: float) -> dict[str, Any]:
    """The metrics of proxy column ``c`` against ``y`` over the rows where both are finite
    (with a note, and NaN for τ-b and ρ, where no correlation is defined)."""
    x = _numeric(df, c, "proxy") * (1 if _orientation(c, space) else -1)
    m = np.isfinite(x) & np.isfinite(y)
    if z_raw is not None:
        mz = m & np.isfinite(z_raw)
    n = int(m.sum())
    row: dict[str, Any] = {"n": n, "n_nonfinite": int((~np.isfinite(x)).sum()), "higher_is_better": _orientation(c, space)}
    if n < 3 or np.ptp(x[m]) == 0 or np.ptp(y[m]) == 0:
        row.update(kendall_tau=math.nan, spearman_rho=math.nan,
                   note=(f"no correlation: only {n} arch(s) with finite proxy and target values (3 needed)" if n < 3
                         else "no correlation: the proxy is constant over these archs" if np.ptp(x[m]) == 0
                         else "no correlation: the target is constant over these archs"))
        if n >= 3 and np.ptp(y[m]) > 0:  # a constant score still has a tie-broken τ: 0
            new = _new_metrics(x[m], y[m], _take(ctx, m), bootstrap, seed, top)
            row.update({k: v for k, v in new.items() if not k.startswith(("kendall_tau", "spearman_rho"))})
        return row
    within = _within_notes(x[m], _take(ctx, m))
    if within:
        row["note"] = "; ".join(within)
    row["kendall_tau"] = float(kendalltau(x[m], y[m])[0])
    row["spearman_rho"] = float(spearmanr(x[m], y[m])[0])
    new = _new_metrics(x[m], y[m], _take(ctx, m), bootstrap, seed, top)
    # τ-b's and ρ's intervals come from the same resamples as every other metric's
    # (the rows and the seed of _bootstrap, so the same numbers; tested)
    row.update(tau_ci_low=new.pop("kendall_tau_ci_low"), tau_ci_high=new.pop("kendall_tau_ci_high"),
               rho_ci_low=new.pop("spearman_rho_ci_low"), rho_ci_high=new.pop("spearman_rho_ci_high"))
    if z_raw is not None and mz.sum() >= 3 and c != control:
        row["partial_tau_given_params"] = partial_tau(x[mz], y[mz], z_raw[mz])
        row["strata_tau_given_params"] = strata_tau(x[mz], y[mz], z_raw[mz])
        row["size_control"] = control
    row.update(new)
    return row


#: the columns of a :func:`score` result, in order (those that occur)
_SCORE_COLUMNS: tuple[str, ...] = (
    "proxy", "target", "n", "kendall_tau", "spearman_rho", "tau_ci_low", "tau_ci_high", "rho_ci_low", "rho_ci_high",
    "top10_precision", "partial_tau_given_params", "strata_tau_given_params", "higher_is_better", "n_nonfinite", "note",
    *(f"{k}{sfx}" for k in NEW_METRICS for sfx in ("", "_ci_low", "_ci_high")), "top10_precision_ci_low",
    "top10_precision_ci_high", "pw10_size", "cells", "arch_strata", "size_control")


def _new_metrics(x: np.ndarray, y: np.ndarray, ctx: metrics.RankContext, bootstrap: int, seed: int, top: float
                 ) -> dict[str, float]:
    """The metrics of :data:`NEW_METRICS` and top-k precision with its interval, for one
    score (top-k is :func:`nasbench_bert.metrics.top_k_precision`, the expectation over
    tie-breaks, so a score with ties gets the same figure whatever the row order)."""
    est = metrics.rank_metrics(x, y, ctx, bootstrap=bootstrap, seed=seed, top=top)
    flat = metrics.estimates_to_row({k: est[k] for k in NEW_METRICS})
    for k in ("kendall_tau", "spearman_rho"):
        flat[f"{k}_ci_low"], flat[f"{k}_ci_high"] = est[k].ci_low, est[k].ci_high
    flat["top10_precision"] = est["top10_precision"].value
    flat["top10_precision_ci_low"] = est["top10_precision"].ci_low
    flat["top10_precision_ci_high"] = est["top10_precision"].ci_high
    return flat
