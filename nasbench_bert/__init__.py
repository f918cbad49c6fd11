"""nasbench-bert: trained-architecture results for FlexiBERT/ELECTRA and NAS-Bench-NLP.

``import nasbench_bert`` stays light (no torch): the lookup API needs only pandas,
pyarrow and numpy. Models, proxies and builders live in subpackages that import torch.

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
from .spaces import FLEXIBERT_SPACE, Arch, Layer, Recipe, parse_recipe, recipe_hash

__version__ = "0.1.0"

__all__ = [
    "Benchmark", "Budget", "FlexiBERTResult", "NLPBenchmark", "NLPResult",
    "NasBenchError", "InvalidArchitectureError", "InvalidRecipeError", "NotEvaluatedError",
    "DataIntegrityError", "DataNotFoundError", "OutOfBudgetError",
    "FLEXIBERT_SPACE", "Arch", "Layer", "Recipe", "parse_recipe", "recipe_hash",
]
