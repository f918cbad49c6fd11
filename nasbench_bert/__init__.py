"""nasbench-bert: trained-architecture results for FlexiBERT/ELECTRA and NAS-Bench-NLP.

``import nasbench_bert`` stays light (no torch): the lookup API, the Hub download
(:mod:`nasbench_bert.hub`), search (:mod:`nasbench_bert.search`) and the surrogate
(:mod:`nasbench_bert.surrogate`) need only pandas, pyarrow, numpy and scipy. Models
(:mod:`nasbench_bert.models`) and proxies (:mod:`nasbench_bert.proxies`) import torch;
the entry builders live in the checkout's top-level ``builders`` package.

>>> from nasbench_bert import Benchmark
>>> bench = Benchmark.load()
>>> bench.query("256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3/SA-SDP-h4-512x3/SA-SDP-h4-1024x1").glue
74.73375
"""

from .benchmark import Benchmark, Budget, FlexiBERTResult, NLPBenchmark, NLPResult
from .errors import (
    DataIntegrityError, DataNotFoundError, InvalidArchitectureError, InvalidRecipeError,
    NasBenchError, NotEvaluatedError, OutOfBudgetError,
)
from .hub import SourceUnavailableWarning
from .spaces import FLEXIBERT_SPACE, Arch, Layer, Recipe, parse_recipe, recipe_hash
from .surrogate import SurrogateResult

__version__ = "0.1.0"

__all__ = [
    "Benchmark", "Budget", "FlexiBERTResult", "NLPBenchmark", "NLPResult",
    "NasBenchError", "InvalidArchitectureError", "InvalidRecipeError", "NotEvaluatedError",
    "DataIntegrityError", "DataNotFoundError", "OutOfBudgetError",
    "FLEXIBERT_SPACE", "Arch", "Layer", "Recipe", "parse_recipe", "recipe_hash",
    "SourceUnavailableWarning", "SurrogateResult",
]
