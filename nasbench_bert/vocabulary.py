"""The package's typed vocabulary: the closed sets that travel between modules, and what a
benchmark must offer to the code above it.

Why one module: these names cross many files (a space, an executor, a dtype, an oracle
kind, a dataset). Spelled as ``Literal`` types here, a type checker sees a misspelt one
at the call site, and each has one tuple of allowed values that the validators in
:mod:`nasbench_bert.checks` quote in their messages - so no module keeps a private copy.

:class:`BenchmarkLike` is the seam between the lookup layer and everything above it
(search, proxies, scoring, integrations, surrogate): those modules type their ``bench``
argument with it instead of importing :class:`~nasbench_bert.Benchmark` (which would run
imports upward), and :func:`~nasbench_bert.checks.check_bench` refuses anything that is
not one with a message naming the argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Literal, Protocol, get_args

if TYPE_CHECKING:
    import pandas as pd

#: the two search spaces
SpaceName = Literal["flexibert", "nlp"]
#: where sweeps run: this process (or worker processes), Ray tasks, or a SLURM job array
Executor = Literal["local", "ray", "slurm"]
#: the precisions a proxy pass or a model can run in
Dtype = Literal["float32", "float64"]
#: what answers a search's questions (:mod:`nasbench_bert.search.oracle`)
OracleKind = Literal["tabular", "surrogate", "regenerated", "noisy_surrogate"]
#: NAS-Bench-NLP's two datasets
Dataset = Literal["ptb", "wikitext2"]

SPACES: tuple[str, ...] = get_args(SpaceName)
EXECUTORS: tuple[str, ...] = get_args(Executor)
DTYPES: tuple[str, ...] = get_args(Dtype)
ORACLE_KINDS: tuple[str, ...] = get_args(OracleKind)
DATASETS: tuple[str, ...] = get_args(Dataset)
#: each dataset's column of a run's final test loss (the NLP lookup names its tables
#: after the datasets: ``nlp.ptb``, ``nlp.wikitext2``)
FINAL_TEST_LOSS: dict[str, str] = {"ptb": "test_loss", "wikitext2": "final_test_loss"}

#: a FlexiBERT layer's operation type (``Layer.operation_type``)
OperationType = Literal["SA", "LT", "DSC"]
#: the operation types whose parameter is a convolution kernel size (an int), not the
#: name of a token mixing
KERNEL_OPERATIONS: frozenset[str] = frozenset({"DSC"})
#: the token mixing a built layer runs (``LayerPlan.mixing``)
Mixing = Literal["SDP", "WMA", "DFT", "DCT", "DSC"]
#: the rules a :class:`~nasbench_bert.semantics.Semantics` is made of (see its fields)
FFRule = Literal["arch", "fixed", "electra_tf", "first_layer"]
MixingRule = Literal["arch", "sdp"]
InitRule = Literal["normal", "truncated_normal"]
GeneratorRule = Literal["quarter", "electra_tf"]
MIXINGS: tuple[str, ...] = get_args(Mixing)
FF_RULES: tuple[str, ...] = get_args(FFRule)
MIXING_RULES: tuple[str, ...] = get_args(MixingRule)
INIT_RULES: tuple[str, ...] = get_args(InitRule)
GENERATOR_RULES: tuple[str, ...] = get_args(GeneratorRule)


class NLPBenchmarkLike(Protocol):
    """What NAS-Bench-NLP's lookup offers (:class:`~nasbench_bert.NLPBenchmark`)."""

    @property
    def ptb(self) -> "pd.DataFrame": ...

    @property
    def wikitext2(self) -> "pd.DataFrame": ...

    @property
    def has_ptb_logs(self) -> bool: ...

    @property
    def ptb_logs(self) -> "pd.DataFrame": ...

    def query(self, key: Any, dataset: str = "ptb", *, charge: bool = True) -> Any: ...


class BenchmarkLike(Protocol):
    """What the code above the lookup layer may use of a benchmark
    (:class:`~nasbench_bert.Benchmark` is the one implementation)."""

    data: Any
    budget: Any

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    def query(self, arch: Any, *, charge: bool = True) -> Any: ...

    def query_all(self, arch: Any) -> list[Any]: ...

    def to_pandas(self) -> "pd.DataFrame": ...

    @property
    def archs(self) -> list[Any]: ...

    @property
    def nlp(self) -> NLPBenchmarkLike: ...

    def surrogate(self, family: str | None = None) -> Any: ...

    def curve_ids(self) -> list[int]: ...

    def curve(self, arch: Any) -> "pd.DataFrame": ...

    def curve_point(self, arch: Any, steps: int, *, charge: bool = True) -> Any: ...

    def regenerated(self) -> dict[Any, list[Any]]: ...


#: the members :func:`~nasbench_bert.checks.check_bench` looks for (on the class, so a
#: lazy property such as ``nlp`` is not evaluated by the check)
BENCHMARK_MEMBERS: tuple[str, ...] = ("query", "query_all", "to_pandas", "archs", "nlp")
NLP_BENCHMARK_MEMBERS: tuple[str, ...] = ("query", "ptb", "wikitext2")

#: the kinds of an evaluation's leaderboard rows, in table order
#: (:func:`nasbench_bert.evaluation.evaluate`): the proxy evaluated, the proxies compared
#: with it, the published analytic scores, the trivial baselines
RowKind = Literal["candidate", "compare", "published", "baseline"]
ROW_KINDS: tuple[str, ...] = get_args(RowKind)
