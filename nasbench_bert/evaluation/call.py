"""One :func:`~nasbench_bert.evaluation.evaluate` call as it runs: its checked arguments
and what it has found so far (:class:`_Run`), and the scores it ranks on a benchmark, by
row kind (:class:`_Roles`).

Why a module of its own: each step (:mod:`.compute`, :mod:`.ranking`, :mod:`.verdict`,
the report) reads the same checked arguments and adds its notes and counts to the same
record, instead of passing a dozen arguments along.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..devices import DEFAULT_DEVICE
from ..proxies import registry
from ..proxies.baselines import trivial_names
from ..proxies.inputs import BatchSpec
from ..semantics import Semantics
from ..slurm import SlurmResources
from ..vocabulary import BenchmarkLike, Kind


@dataclass
class _Run:
    """One :func:`evaluate` call, its arguments checked, and what it has found so far
    (the notes and the counts of models computed, read from the cache and shared)."""

    name: str
    callable_proxy: bool
    sems: list[Semantics]
    compare: list[str]
    tasks: bool
    dedupe: bool
    cache_dir: Path | None
    jobs: int
    executor: str
    ray_address: str | None
    progress: bool
    seed: int
    dtype: str
    bootstrap: int
    bench: BenchmarkLike | None
    #: per benchmark: the rows asked for (None: all), and the proxies' input batch
    selection: dict[str, list[int] | None]
    specs: dict[str, BatchSpec]
    notes: list[str] = field(default_factory=list)
    computed: int = 0
    cached: int = 0
    shared: int = 0
    #: the array tasks' resources (executor "slurm")
    slurm: SlurmResources | None = None
    #: compute every model again (the cache is overwritten)
    refresh: bool = False
    #: whether the user named the benchmarks (a callable that fails on one then fails the call)
    named: bool = False
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    #: where the models run (canonical, :func:`nasbench_bert.devices.check_device`)
    device: str = DEFAULT_DEVICE


@dataclass(frozen=True)
class _Roles:
    """The scores ranked on one benchmark, by row kind, and which need a model."""

    kind: dict[str, str]
    #: every score, in row order: the proxy, the compared, the published, the baselines
    proxies: list[str]
    modelled: list[str]
    analytic: list[str]

    @classmethod
    def of(cls, bm: str, name: str, compare: list[str]) -> "_Roles":
        reg = registry.REGISTRY[bm]
        comp = [c for c in compare if c in reg and c != name]
        published = [p.name for p in reg.values() if "published" in p.group and p.analytic and p.name not in (name, *comp)]
        base = [b for b in trivial_names(bm) if b not in (name, *comp, *published)]
        kind = {name: Kind.CANDIDATE, **{c: Kind.COMPARE for c in comp}, **{p: Kind.PUBLISHED for p in published},
                **{b: Kind.BASELINE for b in base}}
        return cls(kind, [name, *comp, *published, *base], [n for n in [name, *comp] if not reg[n].analytic],
                   [n for n in [name, *comp] if reg[n].analytic] + published + base)
