"""Checking and aligning a user's values before any is scored: nothing the user gave is
dropped without a word.

Why a step of its own: a score is only as honest as the rows it counts. A column with a
stray non-number, an id given twice (another model in the τ), an id the benchmark lacks
(a row silently without a target) and a column named like a benchmark target but holding
other values each changed a figure without telling anyone; each is now refused here with
one line naming the column and the first ids, or, under an explicit option
(``duplicates=``, ``unknown_ids=``), merged or dropped with a note
(:class:`~nasbench_bert.errors.InputRowsWarning`). :func:`_prepare` runs the four steps in
order; :mod:`.scores` scores what it returns.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics
from ..checks import check_choice
from ..errors import InputRowsWarning, InvalidArgumentError
from ..vocabulary import BenchmarkLike
from .benchmarks import SCORING_SPACES, _lookup, scoring_space
from .lookup import TARGETS, _known_keys, _lookup_space


#: what :func:`score` does with rows that share an id (``duplicates=``; CLI ``--duplicates``)
DUPLICATES: tuple[str, ...] = ("error", "first", "mean")
#: what :func:`score` does with rows whose id the benchmark lacks (``unknown_ids=``; CLI ``--unknown-ids``)
UNKNOWN_IDS: tuple[str, ...] = ("error", "drop")
#: the columns of ``values`` that are never scores (identifiers, bookkeeping, targets)
_NOT_SCORES = frozenset({"id", "arch", "key", "semantics", "seed", "batch", "dtype", "device", "error", "seconds", "seconds_pass",
                         "seconds_proxies", "tokenizer", "proxy_versions", "cached", "log_name", "recipe_id",
                         "experiment_id", "init_time", "perplexity", "bits_per_word", "recipe", "recipe_hash",
                         "num_trainable_params"})


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


def _numeric(df: pd.DataFrame, column: str, role: str) -> np.ndarray:
    try:
        return df[column].to_numpy(dtype=float)
    except (ValueError, TypeError):
        raise InvalidArgumentError(f"{role} = {column!r}: the column holds non-numbers (dtype {df[column].dtype})") from None


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
