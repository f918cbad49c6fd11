"""Task metadata: what each objective is, read off the tables (``bench.objectives``).

Why: an optimiser needs the direction, range and optimum of what it optimises, and a
benchmark user needs its noise to know which differences are real; without this they
read the docs and hard-code it (YAHPO Gym's ``target_stats`` and mf-prior-bench's
``Metric(minimize, bounds)`` answer the same need). Every number here is computed from
the verified tables, never typed in: ``best`` is the table's max (or min) of the
column, ``noise_sigma`` the run-to-run standard deviation from the runs the release
repeated (sqrt(sum d^2 / 2n) over n pairs of runs of one arch or recipe: for GLUE the
same 0.60 as :func:`nasbench_bert.surrogate.noise.noise_floor` reports), and a
fidelity's range the steps or epochs the tables hold.

The data release carries the same metadata as ``objectives.json`` (written by
``nasbench-bert build-data``, sha256 in the manifest); ``bench.objectives`` reads it
when the data folder has it and computes it otherwise - the two are equal (a test
checks). The optimiser adapters (:mod:`nasbench_bert.integrations`) take their
directions from here.

Why in the data layer: ``objectives-v1.json`` is a file of the data folder, computed
from the tables alone (through the :class:`~nasbench_bert.vocabulary.BenchmarkLike`
protocol, never a benchmark class), and the surrogate layer writes it beside its own
file when a build completes (:func:`nasbench_bert.surrogate.portable.write_artifacts`).
Living here, both the lookup API and the surrogate import it downward.
:mod:`nasbench_bert.benchmark.objectives` still answers with every name.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..checks import check_choice
from ..errors import DataIntegrityError, InvalidArgumentError
from ..vocabulary import BenchmarkLike, Direction, NLPBenchmarkLike, NLPDataset
from .tables import GLUE_TASKS

#: the ``format`` field of objectives.json, and the layout version this package reads
FORMAT = "nasbench-bert-objectives"
FORMAT_VERSION = 1
FILE = f"objectives-v{FORMAT_VERSION}.json"
#: allowed directions: larger is better, smaller is better
DIRECTIONS: tuple[str, ...] = tuple(d.value for d in Direction)
#: the sections of objectives.json: table -> what ``bench``/``bench.nlp`` calls it
SECTIONS: tuple[str, ...] = ("flexibert", "nlp_ptb", "nlp_wikitext2")


@dataclass(frozen=True)
class Fidelity:
    """A fidelity axis of an objective: the values the tables hold, from ``min`` to
    ``max`` every ``step``, and ``final``, the value of the main results."""

    name: str
    min: float
    max: float
    step: float
    final: float
    unit: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Objective:
    """One objective of a table (see the module doc for where each number comes from).

    ``bounds``: the range the metric can take by definition (not the table's range);
    ``best``: the best value in the table and ``best_key`` the id (FlexiBERT) or
    recipe id (NAS-Bench-NLP) that holds it; ``noise_sigma``: run-to-run standard
    deviation, None where the release repeated no run.
    """

    name: str
    table: str
    column: str
    direction: str
    bounds: tuple[float, float]
    best: float
    best_key: int
    noise_sigma: float | None
    noise_source: str
    unit: str
    fidelities: tuple[Fidelity, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise InvalidArgumentError(f"objective {self.name!r}: direction = {self.direction!r} is not allowed; allowed "
                                       f"values: {list(DIRECTIONS)}")

    @property
    def minimize(self) -> bool:
        """Whether smaller is better (direction ``min``): what SMAC and syne-tune's
        ``do_minimize`` ask."""
        return self.direction == Direction.MIN

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types; infinite bounds as the strings ``"inf"`` / ``"-inf"`` (JSON has none)."""
        d = asdict(self)
        d["bounds"] = [_num_out(b) for b in self.bounds]
        d["fidelities"] = [f.to_dict() for f in self.fidelities]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Objective":
        """The inverse of :meth:`to_dict`; a missing or unknown field is named."""
        want = {f for f in cls.__dataclass_fields__}
        missing, unknown = sorted(want - set(d) - {"fidelities"}), sorted(set(d) - want)
        if missing or unknown:
            raise InvalidArgumentError(f"objective {d.get('name')!r}: missing field(s) {missing}, unknown field(s) "
                                       f"{unknown}; allowed fields: {sorted(want)}")
        kw = dict(d)
        kw["bounds"] = tuple(float(b) for b in d["bounds"])
        kw["fidelities"] = tuple(Fidelity(**f) for f in d.get("fidelities", ()))
        return cls(**kw)


def _num_out(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


# -- computing them from the tables -------------------------------------------------------------
def pair_sigma(groups: list[np.ndarray]) -> tuple[float | None, int]:
    """Run-to-run sigma from groups of repeated runs: the first two finite runs of each
    group form a pair, d ~ N(0, 2 sigma^2), sigma = sqrt(sum d^2 / 2n). (sigma, n pairs)."""
    d = [g[np.isfinite(g)][:2] for g in groups]
    diffs = np.array([x[0] - x[1] for x in d if len(x) == 2])
    if not len(diffs):
        return None, 0
    return float(np.sqrt((diffs**2).sum() / (2 * len(diffs)))), int(len(diffs))


#: a direction -> the position of the best finite value (NaN, a missing result, is skipped)
_ARGBEST = {Direction.MAX: np.nanargmax, Direction.MIN: np.nanargmin}


def _best(df: pd.DataFrame, column: str, direction: str, key: str) -> tuple[float, int]:
    v = df[column].to_numpy(dtype=float)
    i = int(_ARGBEST[direction](v))
    return float(v[i]), int(df[key].iloc[i])


#: FlexiBERT objectives: name -> (direction, bounds, unit, has the steps fidelity)
_FLEX: dict[str, tuple[str, tuple[float, float], str, bool]] = {
    "glue": ("max", (-25.0, 100.0), "GLUE dev score x 100: the mean of the 8 task scores (CoLA and STS-B can be negative)", True),
    **{t: ("max", (-100.0, 100.0) if t in ("cola", "stsb") else (0.0, 100.0),
           {"cola": "Matthews correlation x 100", "stsb": "Pearson correlation x 100"}.get(t, "accuracy x 100"), True)
       for t in GLUE_TASKS},
    "time_to_train": ("min", (0.0, math.inf), "seconds of pretraining and finetuning on a TPUv2-8", False),
    "num_params_as_trained": ("min", (0.0, math.inf), "parameters of the trained (as_trained) model", False),
}


def flexibert_objectives(bench: BenchmarkLike) -> dict[str, "Objective"]:
    """The FlexiBERT table's objectives: GLUE, the 8 tasks, training time and the
    trained model's parameter count."""
    df = bench.to_pandas()
    runs = [df.index[df["space_index"] == s].to_numpy() for s in df["space_index"].unique()]
    repeated = [r for r in runs if len(r) > 1]
    curves = bench.data.table("flexibert_curves").column("steps").to_numpy()
    steps = np.unique(curves)
    finals = df["pretrain_steps"].unique()
    if len(finals) != 1:
        raise DataIntegrityError(f"table 'flexibert': pretrain_steps holds {sorted(finals)}; allowed: one value")
    fid = Fidelity("pretrain_steps", float(steps.min()), float(steps.max()), float(np.diff(steps).min()),
                   float(finals[0]), "pretraining steps",
                   f"flexibert_curves: {len(np.unique(bench.data.table('flexibert_curves').column('id')))} archs re-pretrained "
                   "(bench.curve, bench.curve_point; the 50,000 / 100,000 points are damaged: docs/errata.md)")
    out = {}
    for name, (direction, bounds, unit, has_fid) in _FLEX.items():
        sigma, n = pair_sigma([df[name].to_numpy(dtype=float)[r] for r in repeated])
        best, key = _best(df, name, direction, "id")
        out[name] = Objective(name, "flexibert", name, direction, bounds, best, key, sigma,
                              f"{n} archs trained twice (bench.repeats()): sqrt(sum d^2 / 2n)", unit,
                              (fid,) if has_fid else ())
    return out


#: NAS-Bench-NLP objectives per dataset: name -> (column, bounds, unit, has the epochs
#: fidelity where the dataset's table has per-epoch curves: the losses, not the size)
_NLP: dict[str, dict[str, tuple[str, tuple[float, float], str, bool]]] = {
    NLPDataset.PTB.value: {"test_loss": ("test_loss", (0.0, math.inf), "cross-entropy, nats per token", True),
                            "perplexity": ("perplexity", (1.0, math.inf), "exp(test loss)", True),
                            "bits_per_word": ("bits_per_word", (0.0, math.inf), "test loss / ln 2", True),
                            "num_params": ("num_params", (0.0, math.inf), "parameters", False)},
    NLPDataset.WIKITEXT2.value: {"train_loss": ("final_train_loss", (0.0, math.inf), "cross-entropy, nats per token", True),
                                  "test_loss": ("final_test_loss", (0.0, math.inf), "cross-entropy, nats per token", True),
                                  "val_loss": ("final_val_loss", (0.0, math.inf), "cross-entropy, nats per token", True),
                                  "num_params": ("num_params", (0.0, math.inf), "parameters", False)},
}


def nlp_objectives(nlp: NLPBenchmarkLike, dataset: str) -> dict[str, "Objective"]:
    """NAS-Bench-NLP's objectives on ``dataset`` (every one minimised); WikiText-2's
    losses have the epochs fidelity of its per-epoch curves (PTB stores final values only)."""
    check_choice("dataset", dataset, _NLP)
    df = nlp.ptb if dataset == NLPDataset.PTB else nlp.wikitext2
    fids: tuple[Fidelity, ...] = ()
    if dataset == NLPDataset.WIKITEXT2:  # the only dataset whose table holds per-epoch curves
        n = df["val_losses"].map(len)
        finals = df["hp_epochs"].unique()
        fids = (Fidelity("epoch", 1.0, float(n.max()), 1.0, float(finals.max()), "training epochs",
                         "nlp_wikitext2 per-epoch curves (train_losses, val_losses, test_losses)"),)
    groups = [g.index.to_numpy() for _, g in df.groupby("recipe_id") if len(g) > 1]
    out = {}
    for name, (column, bounds, unit, has_fid) in _NLP[dataset].items():
        sigma, n_pairs = pair_sigma([df[column].to_numpy(dtype=float)[g] for g in groups])
        best, key = _best(df, column, Direction.MIN, "recipe_id")
        src = (f"{n_pairs} recipe(s) trained twice: sqrt(sum d^2 / 2n)" if n_pairs else
               "not measured: the release trained no recipe twice on this dataset")
        out[name] = Objective(name, f"nlp_{dataset}", column, Direction.MIN.value, bounds, best, key, sigma, src, unit,
                              fids if has_fid else ())
    return out


def release_objectives(bench: BenchmarkLike) -> dict[str, dict[str, Objective]]:
    """Every section of objectives.json, computed from ``bench``'s tables."""
    return {"flexibert": flexibert_objectives(bench), "nlp_ptb": nlp_objectives(bench.nlp, "ptb"),
            "nlp_wikitext2": nlp_objectives(bench.nlp, "wikitext2")}


# -- objectives.json --------------------------------------------------------------------------
def to_json(sections: Mapping[str, Mapping[str, Objective]]) -> bytes:
    """objectives.json: deterministic bytes (sorted keys, shortest round-trip floats)."""
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION,
           **{s: {n: o.to_dict() for n, o in objs.items()} for s, objs in sections.items()}}
    return (json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n").encode()


def from_json(payload: bytes | str, where: str = "objectives.json") -> dict[str, dict[str, Objective]]:
    """The sections of an objectives.json; another format or version, or a malformed
    objective, raises :class:`DataIntegrityError` naming the field."""
    try:
        doc = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as e:
        raise DataIntegrityError(f"{where} is not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
        got = (doc.get("format"), doc.get("format_version")) if isinstance(doc, dict) else doc
        raise DataIntegrityError(f"{where}: fields format/format_version are {got!r}; allowed: ({FORMAT!r}, {FORMAT_VERSION}); "
                                 "rewrite it with `nasbench-bert build-data --force`")
    try:
        return {s: {n: Objective.from_dict(d) for n, d in doc[s].items()} for s in SECTIONS}
    except (KeyError, TypeError, ValueError) as e:
        raise DataIntegrityError(f"{where}: {type(e).__name__}: {e}") from None


def objectives_of(bench: "BenchmarkLike | NLPBenchmarkLike", nlp: bool) -> Mapping[str, Any]:
    """What ``bench.objectives`` returns: FlexiBERT's objectives by name, or for
    NAS-Bench-NLP ``{"ptb": {...}, "wikitext2": {...}}``; from the data release's
    objectives.json when it has one (sha256-checked), else computed from the tables.
    ``nlp`` says which of the two ``bench`` is (the benchmark classes pass it, so this
    module imports neither of them)."""
    from .artifacts import artifact_entry, read_artifact

    payload = read_artifact(bench.data, "objectives")
    if payload is not None:
        sections = from_json(payload, str(bench.data.path / artifact_entry(bench.data, "objectives")["file"]))  # type: ignore[index]
    elif nlp:
        sections = {"nlp_ptb": nlp_objectives(bench, "ptb"), "nlp_wikitext2": nlp_objectives(bench, "wikitext2")}
    else:
        sections = {"flexibert": flexibert_objectives(bench)}
    if nlp:
        return MappingProxyType({d: MappingProxyType(sections[f"nlp_{d}"]) for d in ("ptb", "wikitext2")})
    return MappingProxyType(sections["flexibert"])
