"""Regenerated benchmark entries on disk: read, validated, and named by arch and recipe.

The builders (:mod:`nasbench_bert.builders.results`) write one JSON file per entry under
``<results>/entries/``, named ``<space index:08d>[-<recipe key>].json``. Reading them is
data-layer work: each file must parse, satisfy the entry schema
(``flexibert_entry.schema.json``), hold a valid arch, and carry the name its arch and
recipe give it (so a file copied under another arch's name is never believed). This
module does all of that and returns typed :class:`RegeneratedEntry` records and the list
of refused files; :meth:`nasbench_bert.Benchmark.attach_results` decides what to do
with them (warn, or refuse the whole folder).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import DataNotFoundError, InvalidArgumentError
from ..spaces.flexibert import Arch
from .schemas import validate_entry
from .tables import RELEASE_TASK_NAMES


@dataclass(frozen=True)
class RegeneratedEntry:
    """One validated entry: the arch, its scores (task names as in the tables), and what
    the entry says about how it was made."""

    file: str
    arch: Arch
    id: int | None
    scores: Mapping[str, float]
    glue: float
    time_to_train: float
    pretrain_steps: int
    hparams: Mapping[str, Any]
    #: the semantics of the model the builder trained (entries before semantics were
    #: recorded were built as specified)
    semantics: str
    recipe_key: str | None


def entry_stem(arch: Arch, recipe_key: str | None) -> str:
    """The file name (without ``.json``) an entry of ``arch`` built with ``recipe_key`` has."""
    return f"{arch.index:08d}" + (f"-{recipe_key}" if recipe_key else "")


def parse_entry(path: Path) -> RegeneratedEntry:
    """One entry file, validated; ``ValueError``/``OSError`` say why it is unusable."""
    if not path.is_file():
        raise ValueError("not a file")
    e = json.loads(path.read_text(encoding="utf-8"))
    arch = validate_entry(e)
    recipe = e.get("recipe")
    key = recipe.get("key") if isinstance(recipe, dict) else None
    stem = entry_stem(arch, key)
    if path.stem != stem:
        raise ValueError(f"the file name says {path.stem}, the entry's arch and recipe make {stem}")
    return RegeneratedEntry(
        file=path.name, arch=arch, id=e.get("id"),
        scores={RELEASE_TASK_NAMES.get(k, k): float(v) for k, v in e["scores"].items() if k != "glue"},
        glue=float(e["scores"]["glue"]), time_to_train=float(e["time_to_train"]),
        pretrain_steps=int(e["hparams"]["num_train_steps"]), hparams=dict(e["hparams"]),
        semantics=e.get("semantics", "as_specified"), recipe_key=key)


def read_entries(results: str | os.PathLike[str]) -> tuple[list[RegeneratedEntry], list[str]]:
    """Every entry under ``results/entries/``, in file-name order: the valid ones, and one
    line per refused file naming it and saying why. Reading never stops half-way."""
    if not isinstance(results, (str, os.PathLike)):
        raise InvalidArgumentError(f"results = {results!r} is not allowed; allowed: a folder (str or path)")
    d = Path(results) / "entries"
    if not d.is_dir():
        raise DataNotFoundError(f"results = {str(results)!r} holds no entries/ folder (a builders results table)")
    good: list[RegeneratedEntry] = []
    bad: list[str] = []
    for f in sorted(d.glob("*.json")):
        try:
            good.append(parse_entry(f))
        except (ValueError, OSError, TypeError, KeyError, AttributeError, RecursionError) as err:
            # JSON, schema, arch and file errors alike: this entry is unusable, the others are not
            bad.append(f"{f.name}: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
    return good, bad
