"""Adapters to the optimisers and formats people already use (the ``[hpo]`` extra).

Each submodule imports its third-party library at import time, so this package imports
none of them until asked:

* :mod:`.syne_tune` - syne-tune blackboxes (tabular, learning curves, surrogate,
  NAS-Bench-NLP at every epoch), syne-tune's on-disk format, and :func:`~.syne_tune.simulate`
  (its parts: ``syne_tune_encoding``, ``syne_tune_tables``, ``syne_tune_surrogate``,
  ``syne_tune_files``);
* :mod:`.syne_tune_recipe` - syne-tune's blackbox repository: ``write_blackboxes`` (what
  ``nasbench-bert export --format syne-tune`` writes), the ``BlackboxRecipe`` subclasses an
  upstream pull request adds, and ``register()`` for ``load_blackbox(name, custom_repo_id=...)``;
* :mod:`.configspace` - ``FLEXIBERT_SPACE.configspace()`` (the function
  :func:`.configspace.configspace`; not re-exported here, where the name is the module): a ConfigSpace
  ``ConfigurationSpace`` with conditions, the Configuration <-> Arch bijection and an
  evaluate function behind the package's oracles;
* :mod:`.optuna` - a thin Optuna adapter (define-by-run, the same names);
* :mod:`.naszero` - NAS-Bench-Suite-Zero ``zc_<space>.json`` files (plain JSON, no extra).

This package sits above :mod:`~nasbench_bert.spaces`, :mod:`~nasbench_bert.benchmark`,
:mod:`~nasbench_bert.search` and :mod:`~nasbench_bert.surrogate`; none of those imports
it (``FLEXIBERT_SPACE.configspace()`` imports it lazily, inside the call).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "to_syne_tune": ".syne_tune", "nlp_to_syne_tune": ".syne_tune", "serialize_blackbox": ".syne_tune",
    "load_blackbox": ".syne_tune", "simulate": ".syne_tune",
    "configuration_to_arch": ".configspace", "arch_to_configuration": ".configspace",
    "evaluate": ".configspace",
    "suggest_arch": ".optuna", "run_optuna": ".optuna",
    "export_naszero": ".naszero", "read_naszero": ".naszero",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
