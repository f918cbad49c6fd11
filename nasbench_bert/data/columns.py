"""Column names of the tables, schema 2: the naming rule, the renames, the legacy names.

Why this module exists: data release 1 kept the release-era names of the parameter-count
columns (``num_params`` for the arch as specified, ``num_params_seed_compat`` for the
authors' proxy model) while the result objects and :data:`~nasbench_bert.semantics.PARAM_COLUMNS`
used the canonical semantics names. Schema 2 names every column by one rule
(``docs/data.md``, "Column names"):

    A column whose value depends on which model an arch string is read as ends in that
    model's canonical semantics name - ``num_params_as_specified``, ``num_params_authors``,
    ``num_params_as_trained`` - in every table it appears in, so the same quantity has the
    same name wherever it is and a join never pairs two different counts under one name.
    Old aliases of a semantics (``faithful``, ``seed_compat``) never appear in a column
    name. A quantity with one reading carries no suffix: NAS-Bench-NLP (one model per
    recipe; ``num_params`` is the count its logs record), and ``flexibert_hardware``,
    whose rows name their model in their own ``semantics`` column.

:data:`RENAMED` is every column that rule renamed, per table. For one minor version the
release-era names keep answering, with a :class:`DeprecationWarning` that names the
replacement, wherever a user reaches a column by name: :class:`TableFrame` (the DataFrames
of ``to_pandas()``, ``filter()``, ``query_many()``, ``nearest()``),
:class:`LegacyKeysDict` (``FlexiBERTResult.to_dict()``), the result attributes, and
``nasbench-bert export --legacy-names``.
"""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd

#: the package version in which the release-era names stop answering
LEGACY_REMOVED_IN = "0.4"

#: schema 1 -> schema 2: per table, release-era column name -> canonical name. Only the
#: columns the naming rule renames; every other column kept its name.
RENAMED: dict[str, dict[str, str]] = {
    "flexibert": {"num_params": "num_params_as_specified", "num_params_seed_compat": "num_params_authors"},
    "flexibert_proxies": {"num_params_seed_compat": "num_params_authors"},
}

#: every release-era name -> its canonical name (the same in every table that had it)
LEGACY_NAMES: dict[str, str] = {old: new for m in RENAMED.values() for old, new in m.items()}


def legacy_message(old: str, new: str, where: str = "column") -> str:
    """The one deprecation message, so every path says the same thing."""
    return (f"{where} {old!r} is the data release 1 name of {new!r} (schema 2 renamed it; docs/data.md, "
            f"'Column names'); use {new!r}: {old!r} stops answering in nasbench-bert {LEGACY_REMOVED_IN}")


def warn_legacy(old: str, new: str, where: str = "column", stacklevel: int = 3) -> None:
    """Emit the :class:`DeprecationWarning` for a release-era name (``stacklevel`` points
    at the user's line)."""
    warnings.warn(legacy_message(old, new, where), DeprecationWarning, stacklevel=stacklevel)


def canonical(name: Any, present: Any) -> Any:
    """``name``'s canonical name when it is a release-era name that ``present`` (a
    container of names) lacks and whose replacement it holds; else ``name`` unchanged."""
    if isinstance(name, str) and name in LEGACY_NAMES and name not in present and LEGACY_NAMES[name] in present:
        return LEGACY_NAMES[name]
    return name


class TableFrame(pd.DataFrame):
    """A :class:`pandas.DataFrame` of a FlexiBERT table whose release-era column names
    still answer for one minor version.

    ``df["num_params"]``, ``df[["id", "num_params"]]``, ``df.num_params`` and
    ``df.get("num_params")`` return the canonical column (``num_params_as_specified``)
    with a :class:`DeprecationWarning` naming it. A name is translated only when the
    frame lacks it and holds its replacement, so a column a user adds under an old name
    is theirs. Other pandas paths (``.loc``, ``query``, ``sort_values``, ``in``) see the
    canonical names only. Derived frames (slices, copies, ``reset_index``) keep the type.
    """

    @property
    def _constructor(self) -> type["TableFrame"]:
        return TableFrame

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            new = canonical(key, self.columns)
            if new is not key:
                warn_legacy(key, new)
                key = new
        elif isinstance(key, list) and any(isinstance(k, str) and k in LEGACY_NAMES for k in key):
            cols = self.columns
            mapped = [canonical(k, cols) for k in key]
            for k, m in zip(key, mapped):
                if m is not k:
                    warn_legacy(k, m)
            key = mapped
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        new = canonical(key, self.columns)
        if new is not key:
            warn_legacy(key, new)
            key = new
        return super().get(key, default)

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and name in LEGACY_NAMES:  # cheap test first: pandas looks up many attributes
            new = canonical(name, self.columns)
            if new is not name:
                warn_legacy(name, new, "attribute")
                return super().__getitem__(new)
        return super().__getattr__(name)


def table_frame(df: pd.DataFrame) -> TableFrame:
    """``df`` as a :class:`TableFrame` (no copy of the data)."""
    return df if isinstance(df, TableFrame) else TableFrame(df, copy=False)


class LegacyKeysDict(dict):  # type: ignore[type-arg]
    """A plain ``dict`` (JSON-serialisable, compares like one) of a result's fields in
    which a release-era key still answers: ``d["num_params"]`` and ``d.get(...)`` return
    the canonical entry with a :class:`DeprecationWarning` naming it."""

    def __missing__(self, key: Any) -> Any:
        new = canonical(key, self)
        if new is key:
            raise KeyError(key)
        warn_legacy(key, new, "key")
        return self[new]

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        new = canonical(key, self)
        if new is key:
            return default
        warn_legacy(key, new, "key")
        return self[new]



def canonical_column(name: Any, present: Any, stacklevel: int = 4) -> Any:
    """:func:`canonical`, with the :class:`DeprecationWarning` when it translates: for
    functions that take a column name as an argument (``scoring.score(control=...)``)."""
    new = canonical(name, present)
    if new is not name:
        warn_legacy(name, new, stacklevel=stacklevel)
    return new
