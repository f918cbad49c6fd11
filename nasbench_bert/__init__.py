"""nasbench-bert: trained-architecture results for FlexiBERT/ELECTRA and NAS-Bench-NLP.

>>> from nasbench_bert import Benchmark
>>> bench = Benchmark.load()
>>> bench.query("256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3/SA-SDP-h4-512x3/SA-SDP-h4-1024x1").glue
74.73375

The layers, bottom up (each imports only from those below it; no import runs back up):

* :mod:`~nasbench_bert.errors`, :mod:`~nasbench_bert.atomic`, :mod:`~nasbench_bert.vocabulary`,
  :mod:`~nasbench_bert.progress` - the error hierarchy, atomic writes, the typed vocabulary
  (closed sets, the ``BenchmarkLike`` protocol), progress display;
* :mod:`~nasbench_bert.checks` - argument validators (one per concept);
* :mod:`~nasbench_bert.spaces`, :mod:`~nasbench_bert.executors`, :mod:`~nasbench_bert.devices`,
  :mod:`~nasbench_bert.metrics` - search spaces, where sweeps run and on which device, rank metrics;
* :mod:`~nasbench_bert.semantics`, then :mod:`~nasbench_bert.sizes` - what model an arch
  string means, analytic parameter and FLOP counts; beside them :mod:`~nasbench_bert.sweep`,
  the one resumable-sweep engine (typed tasks, a verifying part cache, the executors);
* :mod:`~nasbench_bert.data`, :mod:`~nasbench_bert.models` - tables, the release importer,
  the Hub, data resolution; PyTorch models (the ``[torch]`` extra);
* :mod:`~nasbench_bert.surrogate`, :mod:`~nasbench_bert.text` - whole-space predictions,
  corpora and tokenizers;
* :mod:`~nasbench_bert.benchmark` - the query API: a lookup facade over key resolution,
  curves, filters and the hardware table (it reaches the surrogate below it by name);
* :mod:`~nasbench_bert.hardware`, :mod:`~nasbench_bert.proxies` - hardware objectives and
  live zero-cost proxies, both swept on :mod:`~nasbench_bert.sweep`;
* :mod:`~nasbench_bert.scoring`, :mod:`~nasbench_bert.search`, :mod:`nasbench_bert.builders` -
  proxies scored against the stored results; NAS algorithms behind oracles; regenerating
  entries (the ``[build]`` extra; a plugin of the CLI that nothing in the library imports);
* :mod:`~nasbench_bert.evaluation`, :mod:`~nasbench_bert.integrations` - a new proxy
  evaluated beside the baselines in one call; adapters for syne-tune, Optuna, SMAC3,
  ConfigSpace, NAS-Bench-Suite-Zero;
* :mod:`~nasbench_bert.cli` - the ``nasbench-bert`` command.

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
from .version import __version__ as __version__  # re-exported: the version lives in the bottom layer

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
