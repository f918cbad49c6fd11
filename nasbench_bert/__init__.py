"""nasbench-bert: trained-architecture results for FlexiBERT/ELECTRA and NAS-Bench-NLP.

>>> from nasbench_bert import Benchmark
>>> bench = Benchmark.load()
>>> bench.query("256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3/SA-SDP-h4-512x3/SA-SDP-h4-1024x1").glue
74.73375

The layers, bottom up (each imports only from those below it):

* :mod:`~nasbench_bert.errors`, :mod:`~nasbench_bert.atomic` - the error hierarchy, atomic writes;
* :mod:`~nasbench_bert.spaces`, :mod:`~nasbench_bert.semantics`, :mod:`~nasbench_bert.sizes` -
  search spaces, what model an arch string means, analytic parameter counts;
* :mod:`~nasbench_bert.data` - tables, the release importer, the Hub, data resolution;
* :mod:`~nasbench_bert.benchmark` - the query API;
* :mod:`~nasbench_bert.surrogate`, :mod:`~nasbench_bert.text` - whole-space predictions,
  corpora and tokenizers;
* :mod:`~nasbench_bert.models`, :mod:`~nasbench_bert.proxies` - PyTorch models and live
  proxies (the ``[torch]`` extra);
* :mod:`~nasbench_bert.scoring`, :mod:`~nasbench_bert.evaluation` - proxies scored against
  the stored results, and the one-call evaluation of a new proxy beside the baselines;
* :mod:`~nasbench_bert.search` - NAS algorithms behind oracles;
* :mod:`~nasbench_bert.cli` - the ``nasbench-bert`` command;
* :mod:`nasbench_bert.builders` - regenerating entries (the ``[build]`` extra; a plugin of
  the CLI that nothing above imports).

``import nasbench_bert`` stays light: only the lookup API is imported; everything else
on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .benchmark import Benchmark, Budget, FlexiBERTResult, HardwareMetrics, NLPBenchmark, NLPResult
from .errors import (
    DataIntegrityError, DataNotFoundError, InvalidArchitectureError, InvalidArgumentError, InvalidRecipeError, NasBenchError,
    NotEvaluatedError, OutOfBudgetError, SourceUnavailableWarning, StaleDataError,
)
from .semantics import AS_SPECIFIED, AS_TRAINED, AUTHORS, Semantics, get_semantics
from .spaces import FLEXIBERT_SPACE, Arch, Layer, Recipe, parse_recipe, recipe_hash

__version__ = "0.2.0"

#: names imported on first use (heavy dependencies, or modules above the lookup API)
_LAZY = {"SurrogateResult": ("nasbench_bert.surrogate", "SurrogateResult"), "hub": ("nasbench_bert.data.hub", None)}

__all__ = [
    "Benchmark", "Budget", "FlexiBERTResult", "HardwareMetrics", "NLPBenchmark", "NLPResult",
    "NasBenchError", "InvalidArchitectureError", "InvalidArgumentError", "InvalidRecipeError", "NotEvaluatedError",
    "DataIntegrityError", "StaleDataError", "DataNotFoundError", "OutOfBudgetError", "SourceUnavailableWarning",
    "FLEXIBERT_SPACE", "Arch", "Layer", "Recipe", "parse_recipe", "recipe_hash",
    "Semantics", "AUTHORS", "AS_TRAINED", "AS_SPECIFIED", "get_semantics", "SurrogateResult",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        mod = importlib.import_module(module)
        value = mod if attr is None else getattr(mod, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
