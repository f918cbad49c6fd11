"""What a report is made from: the Evaluation it reads (:class:`EvaluationLike`), what
produced its values (:class:`Provenance`), each row's target and cell
(:class:`_ReportData`) and the committed leaderboard.

Why a module of its own: the tables, the figures and the values file read the same
facts, and read them here once, so the three cannot disagree about a row's target, its
cell or where a published figure came from.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

import numpy as np
import pandas as pd

from ..errors import InvalidArgumentError
from ..vocabulary import BenchmarkLike, Space, Kind


class EvaluationLike(Protocol):
    """What a report reads of an :class:`~nasbench_bert.evaluation.Evaluation`: the proxy's
    name, the table of rows, the per-arch values and the notes.

    Why a protocol and not the class: :mod:`nasbench_bert.evaluation` sits above this package and calls
    it (``evaluate(..., report=DIR)``), so importing the class here, even for its type
    only, would tie the two into an import circle. Read-only properties, so the frozen
    dataclass satisfies it."""

    @property
    def proxy(self) -> str: ...

    @property
    def rows(self) -> pd.DataFrame: ...

    @property
    def values(self) -> pd.DataFrame: ...

    @property
    def notes(self) -> tuple[str, ...]: ...


#: the committed leaderboard the published rows are read from (present in a checkout)
LEADERBOARD = Path(__file__).resolve().parent.parent.parent / "docs" / "leaderboard.json"
#: registry groups whose rows the table adds from the leaderboard when the Evaluation lacks them
LEADERBOARD_GROUPS: tuple[str, ...] = ("paper", "etas", "published", "standard")
#: each benchmark's headline target and how figures name it
_HEADLINE: dict[str, tuple[str, str]] = {Space.FLEXIBERT: ("glue", "GLUE average"),
                                         Space.NLP: ("test_loss", "PTB test loss (lower is better)")}
#: row kinds in table order, and how the table labels them
_KIND_ORDER: tuple[str, ...] = (Kind.CANDIDATE, Kind.COMPARE, Kind.PUBLISHED, Kind.LEADERBOARD, Kind.BASELINE)
_KIND_LABEL: dict[str, str] = {Kind.CANDIDATE: "proxy", Kind.COMPARE: "compared", Kind.PUBLISHED: "published",
                               Kind.LEADERBOARD: "published †", Kind.BASELINE: "baseline"}


@dataclass(frozen=True)
class Provenance:
    """What produced an Evaluation's values, beyond the values themselves: the input
    batch key per benchmark, the proxy seed, the dtype, the bootstrap resamples, each
    model-based score's registry version per benchmark (a callable's: its cache key), and
    the device the models ran on (a GPU changes the last bits of a value)."""

    batch: Mapping[str, str]
    seed: int
    dtype: str
    bootstrap: int
    versions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    device: str = "cpu"

    @classmethod
    def of_run(cls, run: Any) -> "Provenance":
        """From :func:`nasbench_bert.evaluation.evaluate`'s checked arguments (its
        ``_Run``: ``specs``, ``seed``, ``dtype``, ``bootstrap``, ``name``, ``compare``)."""
        from ..proxies import registry

        versions: dict[str, dict[str, str]] = {}
        for bm in run.specs:
            reg = registry.REGISTRY[bm]
            versions[bm] = {n: str(reg[n].version) for n in [run.name, *run.compare] if n in reg}
        return cls({bm: s.key for bm, s in run.specs.items()}, int(run.seed), str(run.dtype), int(run.bootstrap), versions,
                   str(getattr(run, "device", "cpu")))


@dataclass(frozen=True)
class _ReportData:
    """Per benchmark: each row's headline target and (FlexiBERT) its (layers, hidden size)
    cell, aligned with ``evaluation.values`` of that benchmark and semantics."""

    target: np.ndarray
    cells: np.ndarray
    bootstrap: int
    seed: int

    @classmethod
    def of(cls, ev: EvaluationLike, bench: BenchmarkLike, prov: Provenance) -> "_ReportData":
        v = ev.values
        target = np.full(len(v), np.nan)
        cells = np.full(len(v), np.nan)
        if Space.FLEXIBERT in set(v.benchmark):
            m = (v.benchmark == Space.FLEXIBERT).to_numpy()
            flex = bench.to_pandas().set_index("id")
            ids = v.loc[m, "id"].astype(int).to_numpy()
            target[m] = flex.loc[ids, "glue"].to_numpy(dtype=float)
            cells[m] = (flex.loc[ids, "num_layers"].to_numpy(dtype=float) * 10_000
                        + flex.loc[ids, "hidden_size"].to_numpy(dtype=float))
        if Space.NLP in set(v.benchmark):
            m = (v.benchmark == Space.NLP).to_numpy()
            loss = dict(zip(bench.nlp.ptb.log_name, bench.nlp.ptb.test_loss))
            target[m] = [loss.get(k, np.nan) for k in v.loc[m, "log_name"]]
        return cls(target, cells, prov.bootstrap, prov.seed)


def _read_leaderboard(path: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    """The committed leaderboard's JSON; None without one (the table then says so)."""
    if path is None or not Path(path).is_file():
        return None
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidArgumentError(f"leaderboard = {str(path)!r} is not a readable leaderboard JSON ({e})") from None
