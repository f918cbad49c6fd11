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

from enum import StrEnum
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


# -- the same closed sets as members, for the code that branches on them -----------------------
# Why members as well as ``Literal`` types: a signature keeps accepting the plain string a
# user types, but code that *branches* on a value compares it with a member - a misspelt
# member is an AttributeError the first time the line runs (and a type checker's error
# before that), where a misspelt string compares unequal and silently takes the other
# branch. Each is a ``StrEnum``: a member equals its string, so a validated argument, a
# DataFrame cell or a ``torch.device.type`` compares with it directly, and dictionaries keyed
# by members answer plain strings. ``tests/test_vocabulary.py`` checks that every member set
# equals its ``Literal``'s values.
class Space(StrEnum):
    """:data:`SpaceName` (the two search spaces)."""

    FLEXIBERT = "flexibert"
    NLP = "nlp"


class ExecutorKind(StrEnum):
    """:data:`Executor` (where sweeps run)."""

    LOCAL = "local"
    RAY = "ray"
    SLURM = "slurm"


class NLPDataset(StrEnum):
    """:data:`Dataset` (NAS-Bench-NLP's datasets)."""

    PTB = "ptb"
    WIKITEXT2 = "wikitext2"


class DeviceKind(StrEnum):
    """What a ``device=`` argument names before its index (``cuda:1`` is ``CUDA``), and
    ``torch.device.type`` of the devices the package runs on."""

    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"


class Direction(StrEnum):
    """Whether larger (``MAX``) or smaller (``MIN``) is better: an objective's
    ``direction`` (:mod:`nasbench_bert.data.objectives`), an optimiser's mode."""

    MAX = "max"
    MIN = "min"


class ResultSource(StrEnum):
    """Where a FlexiBERT result comes from (``FlexiBERTResult.source``): the data release,
    or an entry regenerated with :mod:`nasbench_bert.builders`."""

    BUNDLED = "bundled"
    REGENERATED = "regenerated"


class CurveStatus(StrEnum):
    """The ``status`` of a learning-curve point (the ``flexibert_curves`` table; see
    :func:`nasbench_bert.data.release_flexibert.curve_point_status`): the release's value,
    one recovered from the authors' summed results, or one they lost."""

    OK = "ok"
    RECOVERED = "recovered"
    LOST = "lost"

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


class Kind(StrEnum):
    """The members of :data:`RowKind`, for the code that branches on a row's kind, and the
    report's one kind more: ``LEADERBOARD``, a row the report copies from the leaderboard's
    JSON beside the evaluated ones (never a row of ``evaluate()`` itself)."""

    CANDIDATE = "candidate"
    COMPARE = "compare"
    PUBLISHED = "published"
    BASELINE = "baseline"
    LEADERBOARD = "leaderboard"
