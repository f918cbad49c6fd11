"""nasbench-bert: trained-architecture results for FlexiBERT/ELECTRA and NAS-Bench-NLP.

>>> from nasbench_bert import Benchmark
>>> bench = Benchmark.load()
>>> bench.query("256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3/SA-SDP-h4-512x3/SA-SDP-h4-1024x1").glue
74.73375

The layers, bottom up. Each bullet is one layer; a module imports only from its own
layer and those below it, never upward, and no import ever closes a circle
(``tests/test_structure.py`` reads this list and checks every import of the library
against it; docs/development.md draws the same map):

* :mod:`~nasbench_bert.errors`, :mod:`~nasbench_bert.atomic`, :mod:`~nasbench_bert.vocabulary`,
  :mod:`~nasbench_bert.progress`, :mod:`~nasbench_bert.version`, :mod:`~nasbench_bert._torch` -
  the error hierarchy, atomic writes, the typed vocabulary (closed sets as ``Literal`` types
  and ``StrEnum`` members, the ``BenchmarkLike`` protocol), progress display, the version,
  the one guarded torch import;
* :mod:`~nasbench_bert.checks`, :mod:`~nasbench_bert.report_dir`, :mod:`~nasbench_bert.hardware_gpu` -
  argument validators (one per concept), where a report may be written, GPU timers;
* :mod:`~nasbench_bert.spaces`, :mod:`~nasbench_bert.slurm`, :mod:`~nasbench_bert.metrics` -
  the search spaces, SLURM job arrays, rank metrics;
* :mod:`~nasbench_bert.semantics`, :mod:`~nasbench_bert.executors`, :mod:`~nasbench_bert.devices` -
  what model an arch string means; where sweeps run and on which device;
* :mod:`~nasbench_bert.sizes`, :mod:`~nasbench_bert.sweep` - analytic parameter and FLOP
  counts; the one resumable-sweep engine (typed tasks, a verifying part cache);
* :mod:`~nasbench_bert.data`, :mod:`~nasbench_bert.models` - tables, the release importer,
  the Hub, data resolution, the task metadata; PyTorch models (the ``[torch]`` extra);
* :mod:`~nasbench_bert.surrogate`, :mod:`~nasbench_bert.text` - whole-space predictions
  fitted on the tables (through ``BenchmarkLike``); corpora and tokenizers;
* :mod:`~nasbench_bert.benchmark` - the query API: a lookup facade over key resolution,
  curves, filters and the hardware table (``Benchmark.surrogate()`` reaches the surrogate
  below it; ``to_syne_tune()`` reaches the integrations above it by entry point, never by
  import);
* :mod:`nasbench_bert` (this facade), :mod:`~nasbench_bert.hardware` - the public names;
  hardware objectives, swept on :mod:`~nasbench_bert.sweep`;
* :mod:`~nasbench_bert.proxies`, :mod:`nasbench_bert.builders` - live zero-cost proxies,
  swept on :mod:`~nasbench_bert.sweep`; regenerating entries (the ``[build]`` extra; a
  plugin of the CLI that nothing in the library imports);
* :mod:`~nasbench_bert.scoring`, :mod:`~nasbench_bert.search`, :mod:`~nasbench_bert.report` -
  proxies scored against the stored results; NAS algorithms behind oracles; the report
  of an evaluation;
* :mod:`~nasbench_bert.evaluation`, :mod:`~nasbench_bert.integrations` - a new proxy
  evaluated beside the baselines in one call; adapters for syne-tune, Optuna, SMAC3,
  ConfigSpace, CARP-S, NAS-Bench-Suite-Zero;
* :mod:`~nasbench_bert.cli` - the ``nasbench-bert`` command, one module per subcommand group.

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
