"""Typed query results: frozen, with ``to_dict()``."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ..semantics import AS_TRAINED, SemanticsLike, get_semantics
from ..spaces.flexibert import Arch


@dataclass(frozen=True)
class FlexiBERTResult:
    """One benchmark entry. Scores are GLUE dev scores x100 (CoLA: MCC, STS-B: Spearman).

    Parameter counts belong to a semantics (:mod:`nasbench_bert.semantics`):
    ``num_params_as_trained`` is the model that earned these scores;
    ``num_params`` is the arch as specified (the 0.1 meaning, kept) and
    ``num_params_seed_compat`` the authors' proxy model. :meth:`params` takes a name.
    """

    id: int | None
    arch: Arch
    scores: Mapping[str, float]
    glue: float
    time_to_train: float
    num_params: int
    num_params_seed_compat: int
    num_params_as_trained: int
    pretrain_steps: int
    hparams: Mapping[str, Any]
    source: str = "bundled"
    other_ids: tuple[int, ...] = ()  # the same arch trained again under other ids
    #: the semantics of the model that was trained for these scores: ``as_trained`` for
    #: the release; a regenerated entry records its own
    semantics: str = "as_trained"

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["arch"] = str(self.arch)
        d["scores"] = dict(self.scores)
        d["hparams"] = dict(self.hparams)
        return d

    def params(self, semantics: SemanticsLike = AS_TRAINED) -> int:
        """The parameter count of this arch's encoder under ``semantics``."""
        return {"as_specified": self.num_params, "authors": self.num_params_seed_compat,
                "as_trained": self.num_params_as_trained}[get_semantics(semantics).name]


@dataclass(frozen=True)
class NLPResult:
    """One NAS-Bench-NLP training run. Losses are per-token cross-entropy (nats).

    ``test_loss`` is the release's final value; for a diverged WikiText-2 run
    (``status == "loss is nan!"``) it is NaN and ``diverged`` is True - never the last
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
