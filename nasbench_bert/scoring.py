"""Scoring proxies against trained results: Kendall tau, Spearman rho, bootstrap CIs,
top-k precision, the correlation left once parameter count is controlled for, and the
field's metrics beyond one τ (:mod:`nasbench_bert.metrics`).

Which τ is which (every table names it): ``kendall_tau`` is scipy's τ-b (ties
corrected); ``tau_tiebroken`` the expected τ-b when the score's ties are broken at
random (a score with few distinct values, such as depth, cannot hide behind the tie
correction); ``tau_pw10`` NSC's 10 %-PW τ-b over the pairs whose size differs by less
than 10 % (``pw10_size`` names the size); ``tau_within_cell`` τ-b over the pairs in the
same cell (``cells`` names them); ``tau_within_arch`` τ-b over the pairs equal in every
``arch_strata`` column (FlexiBERT: layers, hidden size, total heads; 16 strata on the
500 ids); ``tau_within_cell_tb`` and ``tau_within_arch_tb`` their tie-broken forms. A
score constant within every cell (stratum) gets NaN in both forms of that metric, with
a ``note`` saying so. Each has a 95 % percentile bootstrap interval
(``<metric>_ci_low``/``_ci_high``; τ-b and ρ keep their old ``tau_ci_*``/``rho_ci_*``),
all from the same resamples of the rows. ``partial_tau_given_params`` is Kendall's
(1942) partial τ given the ``size_control`` column: τ less what score and target each
share with the size (no interval; every table that prints it says so in its header).

The context of those metrics, per benchmark (:func:`rank_context`):

* FlexiBERT: cells = (layers, hidden size), the four blocks the trivial "deeper, then
  wider" rule already orders; pw10 size = the as-specified parameter count
  ``num_params`` (the column that reproduces NSC's published 10 %-PW figures); strata of
  ``tau_within_arch`` = equal layers, hidden size and total heads.
* NAS-Bench-NLP: every recipe sits in the same three-layer language model, so the
  parameter count is a function of the cell's linear inputs alone and takes only 92
  distinct values over the 8,794 PTB runs (50 over the 275 with a public recipe). Cells
  = the exact parameter count: pairs of equal size, where size cannot decide (chosen
  from this tie structure, before any loss was looked at); pw10 size = the parameter
  count. So ``tau_within_cell`` of hidden covariance says what it knows about PTB loss
  among cells of one size. No arch strata: every recipe has the same layers and hidden
  size, so ``tau_within_arch`` would be the τ-b itself; it is NaN and left out of tables.

Signs are kept honest: each proxy is oriented by its declared ``higher_is_better`` and
each target by its own (GLUE up, loss down), so a positive tau always means "the proxy
ranks archs the way training did"; nothing is ``abs()``-ed.

This module needs no torch: scoring the release's stored proxies (:func:`score_stored`)
works on the light install. What differs per benchmark - its targets, how rows find
them, its stored proxies and the size to control for - is one :class:`ScoringSpace`
each (:data:`SCORING_SPACES`).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
from scipy.stats import ConstantInputWarning, kendalltau, spearmanr

from . import metrics
from .benchmark.flexibert import ensure_benchmark
from .checks import check_choice, check_int, check_names, check_real, check_seed
from .data.columns import canonical_column
from .data.tables import FLEXIBERT_PROXY_COLUMNS, GLUE_TASKS, NLP_PROXY_COLUMNS
from .errors import InputRowsWarning, InvalidArgumentError
from .proxies import baselines as _baselines  # torch-free: registers the trivial spec baselines
from .proxies import nsc as _nsc  # noqa: F401  (torch-free: registers the NSC and ZeroLM closed forms)
from .proxies import registry  # torch-free: the declarations, not the proxies
from .semantics import AS_SPECIFIED, PARAM_COLUMNS
from .sizes import flexibert_num_params, nlp_num_params
from .spaces.flexibert import Arch
from .vocabulary import SPACES, BenchmarkLike, SpaceName

#: targets and whether higher is better
TARGETS: dict[str, bool] = {"glue": True, **{t: True for t in GLUE_TASKS}, "test_loss": False, "wikitext2_loss": False}
#: stored columns whose orientation differs from "higher is better"
LOWER_IS_BETTER: set[str] = set()
#: the metrics beyond τ-b and ρ that every score row carries, with their intervals
NEW_METRICS: tuple[str, ...] = ("tau_tiebroken", "tau_pw10", "tau_within_cell", "tau_within_cell_tb", "tau_within_arch",
                                "tau_within_arch_tb")
#: the semantics of the trivial baselines' parameter counts when the release's stored
#: values are scored (the model behind the GLUE scores)
STORED_BASELINE_SEMANTICS = "as_trained"
#: what :func:`score` does with rows that share an id (``duplicates=``; CLI ``--duplicates``)
DUPLICATES: tuple[str, ...] = ("error", "first", "mean")
#: what :func:`score` does with rows whose id the benchmark lacks (``unknown_ids=``; CLI ``--unknown-ids``)
UNKNOWN_IDS: tuple[str, ...] = ("error", "drop")


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


def _check_score_args(values: Any, target: Any, space: Any, control: Any, context: Any) -> None:
    """The shape checks of :func:`_score_one` (each message names the argument)."""
    if not isinstance(values, pd.DataFrame) or values.empty:
        raise InvalidArgumentError("values must be a non-empty pandas DataFrame of proxy columns")
    scoring_space(space)
    if not isinstance(target, (str, pd.Series)):
        raise InvalidArgumentError(f"target = {target!r} is not allowed; allowed: a target name {sorted(TARGETS)}, a column "
                                   "name of values, or a pandas Series aligned with values")
    if control is not None and not isinstance(control, str):
        raise InvalidArgumentError(f"control = {control!r} is not allowed; allowed: a size column name or None")
    if context is not None and not isinstance(context, metrics.RankContext):
        raise InvalidArgumentError(f"context = {context!r} is not allowed; allowed: a metrics.RankContext or None")


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


#: the columns of ``values`` that are never scores (identifiers, bookkeeping, targets)
_NOT_SCORES = frozenset({"id", "arch", "key", "semantics", "seed", "batch", "dtype", "device", "error", "seconds", "seconds_pass",
                         "seconds_proxies", "tokenizer", "proxy_versions", "cached", "log_name", "recipe_id",
                         "experiment_id", "init_time", "perplexity", "bits_per_word", "recipe", "recipe_hash",
                         "num_trainable_params"})


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


def _numeric(df: pd.DataFrame, column: str, role: str) -> np.ndarray:
    try:
        return df[column].to_numpy(dtype=float)
    except (ValueError, TypeError):
        raise InvalidArgumentError(f"{role} = {column!r}: the column holds non-numbers (dtype {df[column].dtype})") from None


# -- the user's rows, checked before any is scored (nothing is dropped without a word) ----------
@dataclass(frozen=True)
class _Prepared:
    """The rows :func:`score` scores: ``frame`` (index 0..n-1), ``rows`` the position in
    the user's table of each (the first of a merged group), ``notes`` what an explicit
    option merged or dropped, ``benchmark_columns`` the columns named like a target that
    hold the benchmark's own values (a target, never a proxy)."""

    frame: pd.DataFrame
    rows: np.ndarray
    notes: tuple[str, ...]
    benchmark_columns: frozenset[str]


#: the columns that identify a row, per space, in the order the lookups prefer them
_ID_COLUMNS: dict[str, tuple[str, ...]] = {"flexibert": ("id", "arch"), "nlp": ("log_name", "recipe_id", "key")}


def _id_column(df: pd.DataFrame, space: str) -> str | None:
    """The column that identifies the rows of ``df`` in ``space`` (the one the target
    lookup and the context use), or None."""
    return next((c for c in _ID_COLUMNS[space] if c in df), None)


def _show(items: list[Any], k: int = 5) -> str:
    """The first ``k`` of ``items`` as a list, with ``...`` when there are more."""
    shown = [v.item() if isinstance(v, np.generic) else v for v in items[:k]]
    return repr(shown) if len(items) <= k else repr(shown)[:-1] + ", ...]"


def _where(df: pd.DataFrame, space: str, mask: np.ndarray) -> str:
    """'id [7, 9]' (or 'rows [...]' without an id column): which rows ``mask`` marks."""
    col = _id_column(df, space)
    if col is None:
        return f"rows {_show(list(np.flatnonzero(mask)))}"
    return f"{col} {_show(df.loc[mask, col].tolist())}"


def _as_number(v: Any) -> float | None:
    """``v`` as a float (missing values are NaN), or None when it is not a number."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT:
        return math.nan
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, float, np.integer, np.floating)):
        try:
            return float(v)
        except OverflowError:  # an integer beyond any float: not a value a score can hold
            return None
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return None
    return None


def _to_numbers(df: pd.DataFrame, column: str, role: str, space: str, *, strict: bool) -> bool:
    """Make ``df[column]`` float in place when every value is a number (numbers stored
    as text or objects, as a CSV with one stray cell or an object-typed frame gives);
    refuse, naming the rows, a column that mixes numbers with non-numbers. A column with
    no number at all is a label when not ``strict`` (returns False: not a score)."""
    col = df[column]
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        return True
    parsed = [_as_number(v) for v in col]
    bad = np.array([v is None for v in parsed], dtype=bool)
    if bad.all() and not strict:
        return False
    if bad.any():
        raise InvalidArgumentError(
            f"{role} column {column!r} holds non-numbers at {int(bad.sum())} of {len(df)} rows ({_where(df, space, bad)}; "
            f"values {_show(col[bad].tolist(), 3)}); allowed: numbers (missing values are NaN); fix those rows or leave "
            "the column out")
    df[column] = np.array(parsed, dtype=float)
    return True


def _known_keys(space: str, column: str, target: str, bench: BenchmarkLike | None) -> set[Any] | None:
    """The values of ``column`` the benchmark can look ``target`` up for (exactly the
    keys :func:`_lookup` finds), or None when ``target`` is not looked up by that column."""
    if space == "flexibert" and column in ("id", "arch"):
        flex = _bench(bench).to_pandas()
        return set(flex[column].astype(int) if column == "id" else flex[column])
    if space == "nlp" and column in ("log_name", "recipe_id"):
        nlp = _bench(bench).nlp
        return set((nlp.wikitext2 if target == "wikitext2_loss" else nlp.ptb)[column])
    return None


def _lookup_space(target: str, space: str) -> str:
    """The space whose table :func:`_lookup` reads ``target`` from."""
    return "nlp" if target in ("test_loss", "wikitext2_loss") else space


def _prepare(values: pd.DataFrame, target: str | pd.Series, *, proxies: list[str] | None, space: str, control: str | None,
             bench: BenchmarkLike | None, duplicates: str, unknown_ids: str) -> _Prepared:
    """The rows :func:`score` scores, after the checks that keep it from dropping data
    silently: non-numbers, duplicate ids, unknown ids and target-named columns (each
    refusal is one line naming the column and the first ids, with their count)."""
    duplicates = check_choice("duplicates", duplicates, DUPLICATES)
    unknown_ids = check_choice("unknown_ids", unknown_ids, UNKNOWN_IDS)
    df = values.reset_index(drop=True).copy()
    df.columns = [str(c) for c in df.columns]
    rows = np.arange(len(df))
    tname = target if isinstance(target, str) else None
    _convert_numbers(df, proxies, tname, control, space)
    df, rows, dup_note = _merge_duplicates(df, rows, space, duplicates)
    df, rows, unknown_note = _drop_unknown_ids(df, rows, tname, space, bench, unknown_ids)
    notes = [n for n in (dup_note, unknown_note) if n is not None]
    for n in notes:
        warnings.warn(n, InputRowsWarning, stacklevel=4)
    same = _benchmark_named_columns(df, tname, proxies, space, bench)
    return _Prepared(df, rows, tuple(notes), frozenset(same))


def _convert_numbers(df: pd.DataFrame, proxies: list[str] | None, tname: str | None, control: str | None,
                     space: str) -> None:
    """Step 1 of :func:`_prepare`, in place: the columns scored, the user's target column
    and the control column made float, or refused where a value is not a number."""
    for c in list(df.columns):
        if proxies is not None and c in proxies:
            _to_numbers(df, c, "proxy", space, strict=True)
        elif c == tname and c not in TARGETS:
            _to_numbers(df, c, "target", space, strict=True)
        elif c == control:
            _to_numbers(df, c, "control", space, strict=True)
        elif proxies is None and c not in _NOT_SCORES and "__" not in c and not c.startswith("g2v_"):
            _to_numbers(df, c, "proxy", space, strict=False)


def _merge_duplicates(df: pd.DataFrame, rows: np.ndarray, space: str, duplicates: str
                      ) -> tuple[pd.DataFrame, np.ndarray, str | None]:
    """Step 2 of :func:`_prepare`: one row per model, or the user says how to make it so
    (``duplicates``); the rows kept, their positions, and a note of what was merged."""
    idc = _id_column(df, space)
    if idc is None:
        return df, rows, None
    keys = df[idc]
    present = keys.notna().to_numpy()
    dup = (keys.duplicated(keep=False).to_numpy() & present)
    if not dup.any():
        return df, rows, None
    ids = list(dict.fromkeys(keys[dup].tolist()))
    if duplicates == "error":
        raise InvalidArgumentError(
            f"values column {idc!r} holds {len(ids)} ids more than once ({_show(ids)}; {int(dup.sum())} rows in "
            "all): each would count as another model; allowed: each id once, or duplicates='first' (keep the "
            "first row of each) or 'mean' (average its rows) (CLI: --duplicates first|mean)")
    first = ~(keys.duplicated(keep="first").to_numpy() & present)
    if duplicates == "mean":
        num = [c for c in df.columns if c != idc and pd.api.types.is_numeric_dtype(df[c])
               and not pd.api.types.is_bool_dtype(df[c])]
        means = df.loc[present].groupby(idc, sort=False)[num].mean()
        kept = df.loc[first].copy()
        has = kept[idc].notna().to_numpy()
        kept.loc[has, num] = means.loc[kept.loc[has, idc]].to_numpy()
        df = kept
    else:
        df = df.loc[first]
    df = df.reset_index(drop=True)
    how = "kept the first row of each" if duplicates == "first" else "averaged their numeric columns"
    return df, rows[first], (f"duplicates={duplicates!r}: {len(ids)} duplicate {idc}s ({_show(ids)}; {int(dup.sum())} "
                             f"rows) {how}; {len(df)} rows remain")


def _drop_unknown_ids(df: pd.DataFrame, rows: np.ndarray, tname: str | None, space: str, bench: BenchmarkLike | None,
                      unknown_ids: str) -> tuple[pd.DataFrame, np.ndarray, str | None]:
    """Step 3 of :func:`_prepare`: a row whose target cannot be looked up is not scored
    without a word; refused, or dropped with a note under ``unknown_ids='drop'``."""
    if tname is None or tname not in TARGETS or tname not in SCORING_SPACES[_lookup_space(tname, space)].targets:
        return df, rows, None
    lsp = _lookup_space(tname, space)
    lidc = _id_column(df, lsp)
    known = _known_keys(lsp, lidc, tname, bench) if lidc is not None else None
    if known is None:
        return df, rows, None
    unknown = np.array([not _hashable_in(k, known) for k in df[lidc]], dtype=bool)
    if not unknown.any():
        return df, rows, None
    ids = df.loc[unknown, lidc].tolist()
    table = {"test_loss": "PTB", "wikitext2_loss": "WikiText-2"}.get(tname, "FlexiBERT")
    if unknown_ids == "error":
        raise InvalidArgumentError(
            f"values column {lidc!r} holds unknown ids at {int(unknown.sum())} rows ({_show(ids)}): the "
            f"{table} table has no {tname!r} for them; allowed: {_allowed_keys(lidc, known)}, or "
            "unknown_ids='drop' to leave those rows out (CLI: --unknown-ids drop)")
    df = df.loc[~unknown].reset_index(drop=True)
    return df, rows[~unknown], (f"unknown_ids='drop': {int(unknown.sum())} rows with an unknown {lidc} ({_show(ids)}) "
                                f"left out; {len(df)} rows remain")


def _benchmark_named_columns(df: pd.DataFrame, tname: str | None, proxies: list[str] | None, space: str,
                             bench: BenchmarkLike | None) -> set[str]:
    """Step 4 of :func:`_prepare`: a column named like a benchmark target is the
    benchmark's (returned: a target, never a proxy), or it is refused."""
    same: set[str] = set()
    for c in [c for c in df.columns if c in TARGETS and (c == tname or proxies is None)]:
        try:
            theirs = _lookup(df, c, bench, space)
        except (InvalidArgumentError, KeyError):  # no id to look it up by: only the user's column has that name
            continue
        mine = _to_numbers(df, c, "target", space, strict=False) and df[c].to_numpy(dtype=float)
        differ = np.ones(len(df), dtype=bool) if mine is False else ~np.isclose(mine, theirs, rtol=1e-9, atol=0.0,
                                                                                  equal_nan=True)
        if differ.any():
            raise InvalidArgumentError(
                f"values column {c!r} has the name of a benchmark target but differs from the benchmark's {c!r} at "
                f"{int(differ.sum())} of {len(df)} rows ({_where(df, space, differ)}); allowed: the benchmark's own "
                f"values under that name; rename the column to score it as a proxy, or pass it as target=values[{c!r}]")
        same.add(c)
    return same


def _hashable_in(k: Any, known: set[Any]) -> bool:
    try:
        return k in known
    except TypeError:  # an unhashable cell (a list from parquet): not an id
        return False


def _allowed_keys(column: str, known: set[Any]) -> str:
    """The ids a lookup by ``column`` accepts, in words."""
    if column == "id" and known:
        return f"ids {min(known)}-{max(known)}"
    return f"the {len(known)} {column}s of the benchmark's table"


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


# -- the context of the metrics beyond τ, and the model keys of the trivial baselines ------------
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


def _nlp_tables(bench: BenchmarkLike | None) -> list[pd.DataFrame]:
    nlp = _bench(bench).nlp
    return [nlp.ptb, nlp.wikitext2]


def _nlp_rows(df: pd.DataFrame, bench: BenchmarkLike | None) -> tuple[list[Any], np.ndarray]:
    """(recipe or None, parameter count or NaN) of each row: from its ``recipe``, or its
    run (``log_name``, or ``key`` as the sweep labels runs; PTB first, then WikiText-2),
    or its ``recipe_id`` (PTB)."""
    from .spaces.nlp import parse_recipe

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


def rank_context(values: pd.DataFrame, space: str = "flexibert", bench: BenchmarkLike | None = None) -> metrics.RankContext:
    """The cells, pw10 size and controls of the rows of ``values`` (see the module
    docstring): FlexiBERT rows are found by ``id`` or ``arch``, NAS-Bench-NLP rows by
    ``log_name`` (or ``key``), ``recipe_id`` or ``recipe``. A row that cannot be found
    gets NaN (the metrics that need it are then NaN for every score)."""
    if not isinstance(values, pd.DataFrame):
        raise InvalidArgumentError(f"values = {type(values).__name__} is not allowed; allowed: a pandas DataFrame")
    return scoring_space(space).context(values.reset_index(drop=True), bench)


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
    from .semantics import get_semantics

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
    sp = SCORING_SPACES["nlp"] if target in ("test_loss", "wikitext2_loss") or (
        target == "num_params" and ("log_name" in df or "recipe_id" in df)) else scoring_space(space)
    return sp.lookup(df, target, bench)


def stored_values(space: str, bench: BenchmarkLike | None = None) -> tuple[pd.DataFrame, str]:
    """The release's stored proxy values with their identifying columns, and the target."""
    sp = scoring_space(space)
    return sp.stored(bench), sp.stored_target


def score_stored(space: str = "flexibert", *, bench: BenchmarkLike | None = None, bootstrap: int = 200, seed: int = 0,
                 baselines: bool = False, target: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Score every stored proxy of the release against its benchmark's target
    (FlexiBERT: GLUE over the 500 ids, controlling for the as-trained size;
    NAS-Bench-NLP: -PTB test loss over its runs).

    ``baselines``: add the trivial spec baselines' rows (FlexiBERT: parameter counts
    of the as-trained model, :data:`STORED_BASELINE_SEMANTICS`; NAS-Bench-NLP: only the
    runs with a public recipe have one, ``n`` says how many). ``target``: another
    target or a list (e.g. ``["glue", *GLUE_TASKS]``); default the benchmark's."""
    sp = scoring_space(space)
    if not isinstance(baselines, bool):
        raise InvalidArgumentError(f"baselines = {baselines!r} is not allowed; allowed: True or False")
    df = sp.stored(bench)
    names = sp.stored_columns(df)
    if baselines:
        base = baseline_values(df, space, semantics=STORED_BASELINE_SEMANTICS, bench=bench)
        df = pd.concat([df.reset_index(drop=True).drop(columns=[c for c in base.columns if c in df]), base], axis=1)
        names = names + [c for c in base.columns if c not in names]
    return score(df, sp.stored_target if target is None else target, proxies=names, space=space, control=sp.control,
                 bootstrap=bootstrap, seed=seed, bench=bench)


#: the to_markdown columns: (value column, interval columns or None, header); the
#: within-stratum columns only where the rows have strata (``arch_strata``)
_MD_COLUMNS: tuple[tuple[str, tuple[str, str] | None, str], ...] = (
    ("kendall_tau", ("tau_ci_low", "tau_ci_high"), "τ-b (scipy)"),
    ("tau_tiebroken", ("tau_tiebroken_ci_low", "tau_tiebroken_ci_high"), "τ, ties broken at random"),
    ("spearman_rho", ("rho_ci_low", "rho_ci_high"), "Spearman ρ"),
    ("tau_pw10", ("tau_pw10_ci_low", "tau_pw10_ci_high"), "10 %-PW τ-b{pw}"),
    ("tau_within_cell", ("tau_within_cell_ci_low", "tau_within_cell_ci_high"), "τ-b within cells{cells}"),
    ("tau_within_cell_tb", ("tau_within_cell_tb_ci_low", "tau_within_cell_tb_ci_high"),
     "τ within cells, ties broken at random"),
    ("tau_within_arch", ("tau_within_arch_ci_low", "tau_within_arch_ci_high"), "τ-b within equal ({strata})"),
    ("tau_within_arch_tb", ("tau_within_arch_tb_ci_low", "tau_within_arch_tb_ci_high"),
     "τ within equal ({strata}), ties broken at random"),
    ("top10_precision", ("top10_precision_ci_low", "top10_precision_ci_high"), "top-10 % precision"),
    ("partial_tau_given_params", None, "partial τ given {size} (Kendall 1942: τ less what both share with {size})"),
)


def _first(scores: pd.DataFrame, col: str) -> str:
    if col not in scores:
        return ""
    vals = [v for v in scores[col] if isinstance(v, str) and v]
    return vals[0] if vals else ""


def to_markdown(scores: pd.DataFrame, digits: int = 3, *, intervals: bool = True) -> str:
    """A Markdown table of a score() result; each header names its τ (τ-b is scipy's,
    ties corrected; the tie-broken τ is the expected τ-b with the score's ties broken
    at random) and what the 10 %-PW size, the cells and the controls were. Values come
    with their 95 % bootstrap interval where one was computed (``intervals``); "–" is
    not defined (e.g. the within-cell τ of a score constant in every cell)."""
    pw, cells, strata = _first(scores, "pw10_size"), _first(scores, "cells"), _first(scores, "arch_strata")
    fmt = {"pw": f" (size: {pw})" if pw else "", "cells": f" {cells}" if cells else "",
           "strata": strata or "the strata", "size": _first(scores, "size_control") or "the size column"}
    cols = ["proxy"] + (["target"] if "target" in scores and scores["target"].nunique() > 1 else []) + \
        (["n"] if "n" in scores else [])
    # without strata (NAS-Bench-NLP) the within-arch columns hold only NaN and say nothing: left out
    spec = [(c, ci, h.format(**fmt)) for c, ci, h in _MD_COLUMNS
            if c in scores and (strata or not c.startswith("tau_within_arch") or scores[c].notna().any())]
    head = "| " + " | ".join([*cols, *(h for _, _, h in spec)]) + " |\n|" + "---|" * (len(cols) + len(spec)) + "\n"

    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return "–" if not np.isfinite(v) else f"{v:.{digits}f}"
        return str(v)

    body = ""
    for _, r in scores.iterrows():
        parts = [cell(r[c]) for c in cols]
        for c, ci, _ in spec:
            v = r[c]
            txt = cell(v)
            if intervals and ci is not None and all(k in r for k in ci) and txt != "–" and \
                    all(isinstance(r[k], (float, np.floating)) and np.isfinite(r[k]) for k in ci):
                txt += f" [{r[ci[0]]:.{digits}f}, {r[ci[1]]:.{digits}f}]"
            parts.append(txt)
        body += "| " + " | ".join(parts) + " |\n"
    return head + body


def scatter(values: pd.DataFrame, proxy: str, target: str | pd.Series, path: str | Path, *, space: str = "flexibert",
            bench: BenchmarkLike | None = None, logx: bool | None = None, duplicates: str = "error",
            unknown_ids: str = "error") -> Path:
    """Scatter plot of a proxy against a target with tau and rho in the title (PNG): the
    rows :func:`score` scores (``duplicates`` and ``unknown_ids`` as there), so the plot
    shows the points its τ counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = score(values, target, proxies=[proxy], space=space, control=None, bootstrap=0, bench=bench,
              duplicates=duplicates, unknown_ids=unknown_ids).iloc[0]
    with warnings.catch_warnings():  # score() above said what was merged or dropped
        warnings.simplefilter("ignore", InputRowsWarning)
        prep = _prepare(values, target, proxies=[proxy], space=space, control=None, bench=bench, duplicates=duplicates,
                        unknown_ids=unknown_ids)
    df = prep.frame
    if isinstance(target, pd.Series):
        target = target.reset_index(drop=True).iloc[prep.rows]
    y = target.to_numpy(dtype=float) if isinstance(target, pd.Series) else (
        df[target].to_numpy(dtype=float) if target in df else _lookup(df, target, bench, space))
    x = df[proxy].to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(5, 4), dpi=120)
    ax.scatter(x, y, s=6, alpha=0.6)
    if logx or (logx is None and np.nanmin(x) > 0 and np.nanmax(x) / max(np.nanmin(x), 1e-300) > 1e3):
        ax.set_xscale("log")
    ax.set_xlabel(proxy)
    ax.set_ylabel(target if isinstance(target, str) else str(target.name))
    ax.set_title(f"{proxy}: Kendall τ = {s.kendall_tau:.3f}, Spearman ρ = {s.spearman_rho:.3f} (n = {s.n})", fontsize=8)
    fig.tight_layout()
    from .atomic import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path
