"""Typed query results: frozen, with ``to_dict()``."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Mapping

from ..data.columns import LegacyKeysDict, warn_legacy
from ..data.entries import RegeneratedEntry
from ..errors import NotEvaluatedError
from ..semantics import AS_TRAINED, PARAM_COLUMNS, SemanticsLike, get_semantics
from ..sizes import flexibert_num_params
from ..spaces.flexibert import Arch


@dataclass(frozen=True)
class HardwareMetrics:
    """Measured hardware figures of one arch's encoder under one semantics (the
    ``flexibert_hardware`` table; :mod:`nasbench_bert.hardware` says how they were
    measured, the data manifest's ``hardware`` entry on which machine).

    Latencies are medians over timed repeats of one forward at sequence length 128, in
    milliseconds, with the median absolute deviation beside them; memory is the
    weights plus the allocator's peak during one forward, in MiB; ``flops_per_seq`` is
    one forward at batch 1. ``threads`` is the torch thread count used.
    """

    semantics: str
    latency_b1_ms: float
    latency_b1_mad_ms: float
    latency_b32_ms: float
    latency_b32_mad_ms: float
    peak_memory_b1_mib: float
    peak_memory_b32_mib: float
    flops_per_seq: int
    num_params: int
    threads: int
    model_key: str
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class FlexiBERTResult:
    """One benchmark entry. Scores are GLUE dev scores x100 (CoLA: MCC, STS-B: Pearson).

    Parameter counts belong to a semantics (:mod:`nasbench_bert.semantics`) and are named
    by it, like the table's columns (docs/data.md, "Column names"):
    ``num_params_as_trained`` is the model that earned these scores,
    ``num_params_as_specified`` the arch as the paper specifies it and
    ``num_params_authors`` the authors' proxy model. :meth:`params` takes a semantics.
    The data release 1 names ``num_params`` and ``num_params_seed_compat`` still answer,
    as attributes and as :meth:`to_dict` keys, with a :class:`DeprecationWarning`.
    """

    id: int | None
    arch: Arch
    scores: Mapping[str, float]
    glue: float
    time_to_train: float
    num_params_as_specified: int
    num_params_authors: int
    num_params_as_trained: int
    pretrain_steps: int
    hparams: Mapping[str, Any]
    source: str = "bundled"
    other_ids: tuple[int, ...] = ()  # the same arch trained again under other ids
    #: the semantics of the model that was trained for these scores: ``as_trained`` for
    #: the release; a regenerated entry records its own
    semantics: str = "as_trained"
    #: measured CPU latency, memory and FLOPs per semantics name, from the
    #: ``flexibert_hardware`` table when the data holds one (empty otherwise, and for
    #: regenerated entries - measure those with :func:`nasbench_bert.hardware.measure`)
    hardware: Mapping[str, HardwareMetrics] = field(default_factory=dict)

    @classmethod
    def from_entry(cls, e: RegeneratedEntry) -> "FlexiBERTResult":
        """The result a regenerated entry holds (``source="regenerated"``); its parameter
        counts are computed from the arch, under every semantics."""
        return cls(id=e.id, arch=e.arch, scores=MappingProxyType(dict(e.scores)), glue=e.glue,
                   time_to_train=e.time_to_train, num_params_as_specified=flexibert_num_params(e.arch, "as_specified"),
                   num_params_authors=flexibert_num_params(e.arch, "authors"),
                   num_params_as_trained=flexibert_num_params(e.arch, "as_trained"), pretrain_steps=e.pretrain_steps,
                   hparams=MappingProxyType(dict(e.hparams)), source="regenerated",
                   semantics=get_semantics(e.semantics).name)

    @property
    def num_params(self) -> int:
        """Deprecated (data release 1 name): :attr:`num_params_as_specified`."""
        warn_legacy("num_params", "num_params_as_specified", "attribute")
        return self.num_params_as_specified

    @property
    def num_params_seed_compat(self) -> int:
        """Deprecated (data release 1 name): :attr:`num_params_authors`."""
        warn_legacy("num_params_seed_compat", "num_params_authors", "attribute")
        return self.num_params_authors

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (a :class:`~nasbench_bert.data.columns.LegacyKeysDict`:
        the release-era keys still answer, with a ``DeprecationWarning``)."""
        d = LegacyKeysDict((f.name, getattr(self, f.name)) for f in fields(self))
        d["arch"] = str(self.arch)
        d["scores"] = dict(self.scores)
        d["hparams"] = dict(self.hparams)
        d["hardware"] = {k: v.to_dict() for k, v in self.hardware.items()}
        return d

    def hw(self, semantics: SemanticsLike = AS_TRAINED) -> HardwareMetrics:
        """The measured hardware figures of this arch's model under ``semantics``
        (default: the model that earned the scores)."""
        name = get_semantics(semantics).name
        try:
            return self.hardware[name]
        except KeyError:
            raise NotEvaluatedError(
                f"no hardware measurement for {self.arch} under semantics {name!r} (measured: "
                f"{sorted(self.hardware) or 'none'}); measure it with nasbench_bert.hardware.measure(arch, {name!r}), or "
                "the whole table with `python -m nasbench_bert.builders.hardware` and `nasbench-bert build-data --force`") from None

    def params(self, semantics: SemanticsLike = AS_TRAINED) -> int:
        """The parameter count of this arch's encoder under ``semantics``."""
        return int(getattr(self, PARAM_COLUMNS[get_semantics(semantics).name]))


@dataclass(frozen=True)
class NLPResult:
    """One NAS-Bench-NLP training run. Losses are per-token cross-entropy (nats).

    ``test_loss`` is the release's final value; for a diverged WikiText-2 run
    (status ``loss is nan!``) it is NaN and ``diverged`` is True - never the last
    finite epoch.
    """

    dataset: str
    log_name: str
    recipe_id: int
    test_loss: float
    num_params: int | None
    diverged: bool
    status: str
    recipe: Mapping[str, Any] | None
    perplexity: float | None = None
    bits_per_word: float | None = None
    proxies: Mapping[str, float] = field(default_factory=dict)
    curves: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    hparams: Mapping[str, Any] = field(default_factory=dict)
    wall_time: float | None = None
    other_runs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in ("recipe", "proxies", "curves", "hparams"):
            v = getattr(self, k)
            d[k] = None if v is None else {kk: (list(vv) if isinstance(vv, tuple) else vv) for kk, vv in v.items()}
        return d
