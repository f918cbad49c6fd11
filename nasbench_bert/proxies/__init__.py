"""Zero-cost (training-free) NAS proxies, computed live and scored against the benchmarks.

>>> from nasbench_bert import proxies
>>> df = proxies.compute([0, 1, 2], "paper", semantics="authors")   # one row per arch
>>> proxies.score(df, target="glue")                                # tau, rho, CIs, ...
>>> proxies.score_stored("nlp")                                     # the release's values
>>> proxies.evaluate("mymodule:my_score").to_markdown()             # a new proxy beside the baselines

Computing proxies needs PyTorch (the ``[torch]`` extra); scoring does not
(:mod:`nasbench_bert.scoring`, re-exported here). Names are imported on first use, so
``import nasbench_bert.proxies`` itself never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "compute": ".sweep", "ntsr": ".sweep", "COMBINED": ".sweep",
    "BatchSpec": ".inputs", "make_batch": ".inputs",
    "register": ".registry", "get": ".registry", "REGISTRY": ".registry", "NEEDS": ".registry",
    "Proxy": ".registry", "ProxyValue": ".registry",
    "evaluate": "..evaluation", "Evaluation": "..evaluation", "register_callable": ".callables",
    "objective": ".callables",
    "score": "..scoring", "score_stored": "..scoring", "scatter": "..scoring",
    "partial_tau": "..scoring", "to_markdown": "..scoring",
}
#: modules reached as attributes (imported on first use too; not in ``__all__``)
_MODULE_EXPORTS = {"scoring": "..scoring"}
#: the names whose first use registers the built-in proxies before anyone looks
_NEED_BUILTINS = frozenset({"register", "get", "REGISTRY"})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _MODULE_EXPORTS:
        value = importlib.import_module(_MODULE_EXPORTS[name], __name__)
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        if name in _NEED_BUILTINS:
            from . import builtin  # noqa: F401
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_MODULE_EXPORTS))
