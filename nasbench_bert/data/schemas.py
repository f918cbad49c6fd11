"""The JSON Schemas that ship with the package, and validation against them.

Schemas are package data (``nasbench_bert.schemas``, the repository's ``schemas/``
folder), found through :mod:`importlib.resources`, so they work without a checkout.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from ..errors import InvalidArgumentError
from ..spaces.flexibert import Arch

SCHEMAS: tuple[str, ...] = ("flexibert_arch", "flexibert_entry", "nlp_recipe", "manifest")


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (one of :data:`SCHEMAS`) as a dict."""
    if name not in SCHEMAS:
        raise InvalidArgumentError(f"schema = {name!r} is not allowed; allowed values: {list(SCHEMAS)}")
    return json.loads(resources.files("nasbench_bert.schemas").joinpath(f"{name}.schema.json").read_text())


def validate(instance: Any, name: str) -> None:
    """Raise ``ValueError`` naming the field when ``instance`` breaks schema ``name``."""
    import jsonschema

    try:
        jsonschema.validate(instance, load_schema(name))
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        raise InvalidArgumentError(f"{name.replace('_', ' ')} field {where}: {e.message}") from None


def validate_entry(entry: Any) -> Arch:
    """Raise ``ValueError`` naming the field when ``entry`` is not a valid benchmark entry
    (the release's JSON form plus this package's fields; ``flexibert_entry.schema.json``).
    The arch itself is then checked by the search space's own validator, and returned so
    that a reader need not parse it again."""
    validate(entry, "flexibert_entry")
    return Arch.from_release(entry["hparams"]["model_hparam_overrides"])


@lru_cache(maxsize=None)
def table_columns() -> dict[str, dict[str, str]]:
    """The columns each table must hold, with their Arrow types (``table_columns.json``)."""
    return json.loads(resources.files("nasbench_bert.schemas").joinpath("table_columns.json").read_text())["tables"]
