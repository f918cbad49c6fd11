"""The query API, one class per space on one shared base.

* :class:`Benchmark` - FlexiBERT/ELECTRA (and :attr:`Benchmark.nlp`);
* :class:`NLPBenchmark` - NAS-Bench-NLP;
* :class:`FlexiBERTResult`, :class:`NLPResult` - typed results;
* :class:`Budget` - simulated training time, charged by every query.
"""

from .budget import Budget
from .flexibert import FINAL_STEPS, Benchmark
from .nlp import NLP_DATASETS, NLPBenchmark
from .results import FlexiBERTResult, HardwareMetrics, NLPResult

__all__ = ["Benchmark", "NLPBenchmark", "FlexiBERTResult", "HardwareMetrics", "NLPResult", "Budget", "FINAL_STEPS", "NLP_DATASETS"]
