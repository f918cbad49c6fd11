"""The query API: :class:`Benchmark` (FlexiBERT) and :class:`NLPBenchmark` (NAS-Bench-NLP).

Design, after NAS-Bench-101's ``api.py``: one small facade that validates keys, looks
results up in tables, and charges simulated training time to a budget counter so that
search algorithms can report "wall-clock as if they had trained".

Fidelity never switches silently: :meth:`Benchmark.query` returns the benchmark's
final 100,000-step result; learning curves (separate re-pretraining runs of a few archs
for 0 ... 1,000,000 steps) come only from :meth:`Benchmark.curve` or an explicit
``steps=`` argument.

A note users deserve (DATA-NOTES): the released TensorFlow training code compares the
operation type with ``is`` against string literals, so - if that code trained the
benchmark - every layer may have been trained as scaled dot-product attention whatever
its ``operation_type`` says. Hidden size, depth, heads and feed-forward settings did
take effect. Treat per-operation conclusions drawn from these numbers with care.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from .errors import DataNotFoundError, InvalidArchitectureError, NotEvaluatedError, OutOfBudgetError
from .semantics import AS_TRAINED, SemanticsLike, get_semantics
from .sizes import flexibert_num_params
from .spaces.flexibert import FLEXIBERT_SPACE, LAYER_FIELDS, Arch, ArchLike, arch_at
from .spaces.nlp import Recipe, isomorphic, parse_recipe, recipe_hash
from .tables import GLUE_TASKS, NLP_PROXY_COLUMNS, RELEASE_TASK_NAMES, DataDir, resolve

FINAL_STEPS = 100_000
NLP_DATASETS: tuple[str, ...] = ("ptb", "wikitext2")


# -- results -------------------------------------------------------------------------------
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


@dataclass
class Budget:
    """Simulated training-time accounting (NAS-Bench-101 style).

    Every charged query adds the entry's ``time_to_train`` (seconds on the authors'
    TPUv2-8) to ``time_spent``. With a ``limit``, a query that would exceed it raises
    :class:`~nasbench_bert.OutOfBudgetError` and is not charged.
    """

    time_spent: float = 0.0
    queries: int = 0
    limit: float | None = None

    def charge(self, seconds: float) -> None:
        if self.limit is not None and self.time_spent + seconds > self.limit:
            raise OutOfBudgetError(
                f"this query costs {seconds:.0f} s of simulated training; {self.time_spent:.0f} of the "
                f"{self.limit:.0f} s budget are spent. Reset with bench.reset_budget() or raise the limit."
            )
        self.time_spent += seconds
        self.queries += 1

    def reset(self) -> None:
        self.time_spent = 0.0
        self.queries = 0


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


# -- FlexiBERT ---------------------------------------------------------------------------------
class Benchmark:
    """The FlexiBERT/ELECTRA benchmark (500 archs), with :attr:`nlp` for NAS-Bench-NLP.

    What is known about these numbers (measured in this package; see README):

    * the per-layer operation type/parameter explains no measurable GLUE variance beyond
      hidden size, depth, heads and feed-forward settings (OLS R^2 gain 0.0066, partial
      F-test p = 0.85), consistent with the released training code never applying the
      operation types: choose operations by lookup with care;
    * 9 archs were trained twice (GLUE differs by 0.67 on average): the noise floor;
    * the stored proxy table belongs to the ``seed_compat`` model, not the trained one.

    >>> bench = Benchmark.load()
    >>> bench.query(0).glue
    74.73375
    """

    def __init__(self, data: DataDir):
        self.data = data
        t = data.table("flexibert")
        self._table = t
        self._df: pd.DataFrame | None = None
        cols = t.to_pydict()
        self._cols = cols
        n = t.num_rows
        self._ids = cols["id"]
        self._archs = [arch_at(i) for i in cols["space_index"]]
        # 9 archs were sampled twice among the 500 ids: an arch key resolves to the lowest
        # id and its result names the repeats (query_all returns every run)
        self._runs: dict[Arch, list[int]] = {}
        for i, a in enumerate(self._archs):
            self._runs.setdefault(a, []).append(i)
        self._by_arch = {a: rows[0] for a, rows in self._runs.items()}
        self._by_string = {str(a): i for a, i in self._by_arch.items()}
        self._by_key = {_release_key_of_arch(a): i for a, i in self._by_arch.items()}
        self._results: list[FlexiBERTResult | None] = [None] * n
        self.budget = Budget()
        self._nlp: NLPBenchmark | None = None
        self._codes: np.ndarray | None = None

    # -- construction ------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        path: str | None = None,
        *,
        source: str | Sequence[str] = "auto",
        repo_id: str | None = None,
        revision: str | None = None,
        endpoint: str | None = None,
        token: str | bool | None = None,
        verify: bool = True,
        progress: bool = True,
        results: str | None = None,
    ) -> "Benchmark":
        """Load the tables.

        ``results``: a folder of regenerated entries (``builders``' results table) loaded
        alongside: archs only found there are answered from it with
        ``source="regenerated"``; bundled results stay the default for the others.

        ``source``:

        * ``"auto"`` (default): an explicit ``path``, ``$NASBENCH_BERT_DATA``, the
          checkout's ``data/``, the user cache, else a build from release files found
          beside the checkout (see :func:`nasbench_bert.tables.resolve`);
        * ``"local"``: the same without building;
        * ``"hub"``: download ``repo_id`` at ``revision`` from the Hugging Face Hub (or
          ``endpoint`` / ``$HF_ENDPOINT``), verify every file against the manifest and
          cache it (see :mod:`nasbench_bert.hub`); pin a commit sha to be reproducible;
        * ``"release"``: rebuild from the authors' raw release files at the pinned commits;
        * a list of such specs (``"hub:<endpoint>"``, ``"release:<folder|URL>"`` and
          ``"local:<folder>"`` allowed): the first that verifies wins, dead ones fall
          through with a warning.
        """
        bench = cls._load(path, source, repo_id, revision, endpoint, token, verify, progress)
        if results is not None:
            bench.attach_results(results)
        return bench

    @classmethod
    def _load(cls, path: Any, source: Any, repo_id: Any, revision: Any, endpoint: Any, token: Any, verify: bool,
              progress: bool) -> "Benchmark":
        from . import hub

        if isinstance(source, str) and source not in ("auto", "local", "hub") and not source.startswith(("hub:", "release", "local:")):
            raise ValueError(
                f"source = {source!r} is not allowed; allowed values: 'auto', 'local', 'hub', 'release', "
                "or a list of 'hub', 'hub:<endpoint>', 'release[:<folder|URL>]', 'local[:<folder>]'"
            )
        hub_kw = dict(repo_id=repo_id or hub.DEFAULT_REPO_ID, revision=revision or hub.DEFAULT_REVISION, token=token, verify=verify, progress=progress)
        if source in ("auto", "local"):
            if repo_id is not None or revision is not None or endpoint is not None:
                raise ValueError(f"repo_id/revision/endpoint only apply to source='hub'; got source = {source!r}")
            return cls(resolve(path, build=source == "auto", progress=progress, verify=verify))
        if path is not None:
            raise ValueError(f"path only applies to source='auto' or 'local'; got source = {source!r}")
        if source == "hub":
            return cls(hub.download(hub_kw["repo_id"], hub_kw["revision"], endpoint=endpoint, token=token, verify=verify))
        if endpoint is not None:
            raise ValueError("endpoint= applies to source='hub'; in a source list write 'hub:<endpoint>'")
        return cls(hub.fetch(source, **hub_kw))

    # -- container protocol --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._archs)

    def __iter__(self) -> Iterator[FlexiBERTResult]:
        return (self._result(i) for i in range(len(self)))

    def __contains__(self, key: Any) -> bool:
        try:
            self._row(key)
        except (InvalidArchitectureError, NotEvaluatedError):
            return False
        return True

    def __repr__(self) -> str:
        return f"<nasbench_bert.Benchmark: {len(self)} FlexiBERT archs from {self.data.path}>"

    @property
    def archs(self) -> list[Arch]:
        return list(self._archs)

    # -- key resolution --------------------------------------------------------------------
    def _row(self, key: Any) -> int:
        """Row index of ``key`` (id, Arch, canonical string or release dict)."""
        if isinstance(key, Arch):
            row = self._by_arch.get(key)
            if row is None:
                raise self._not_evaluated(key)
            return row
        if _is_int(key):
            k = int(key)
            if 0 <= k < len(self._ids) and self._ids[k] == k:
                return k
            raise NotEvaluatedError(f"id = {key!r} is not a benchmark id; allowed: integers 0 <= id < {len(self)}")
        if isinstance(key, str):
            row = self._by_string.get(key)
            if row is not None:
                return row
            return self._row(Arch.from_string(key))
        if isinstance(key, Mapping):
            try:
                row = self._by_key.get(_release_key(key))
            except (KeyError, TypeError, AttributeError, _NotFast):
                row = None
            if row is not None:
                return row
            return self._row(Arch.from_release(key))
        return self._row(Arch.coerce(key))  # raises InvalidArchitectureError with the forms

    def _not_evaluated(self, arch: Arch) -> NotEvaluatedError:
        return NotEvaluatedError(
            f"{arch} is a valid FlexiBERT arch but not one of the {len(self)} evaluated archs (the space has "
            f"{FLEXIBERT_SPACE.size:,}). Find the closest evaluated ones with bench.nearest(arch)."
        )

    # -- single queries ----------------------------------------------------------------------
    def _result(self, row: int) -> FlexiBERTResult:
        r = self._results[row]
        if r is None:
            c = self._cols
            hp = {k[3:]: c[k][row] for k in c if k.startswith("hp_")}
            hp["model_hparam_overrides"] = self._archs[row].to_release()
            r = FlexiBERTResult(
                id=c["id"][row],
                arch=self._archs[row],
                scores=MappingProxyType({t: c[t][row] for t in GLUE_TASKS}),
                glue=c["glue"][row],
                time_to_train=c["time_to_train"][row],
                num_params=c["num_params"][row],
                num_params_seed_compat=c["num_params_seed_compat"][row],
                num_params_as_trained=c["num_params_as_trained"][row],
                pretrain_steps=c["pretrain_steps"][row],
                hparams=MappingProxyType(hp),
                other_ids=tuple(c["id"][j] for j in self._runs[self._archs[row]] if j != row),
            )
            self._results[row] = r
        return r

    def query(self, arch: ArchLike | int, *, charge: bool = True, steps: int | None = None,
              allow_surrogate: bool = False) -> Any:
        """The result of ``arch``: an :class:`Arch`, its string, its release dict or an id.

        ``charge`` adds the entry's training time to :attr:`budget`. ``steps`` asks for a
        point on a learning curve (only for archs in :meth:`curve_ids`). An arch that is
        valid but was never trained raises :class:`~nasbench_bert.NotEvaluatedError`,
        unless ``allow_surrogate``: then a :class:`~nasbench_bert.surrogate.SurrogateResult`
        (``predicted=True``, with ``glue_std``) from :meth:`surrogate` is returned.
        Tabular results stay the default and are never replaced by predictions.
        """
        try:
            row = self._row(arch)
        except NotEvaluatedError:
            reg = self.__dict__.get("_regenerated")
            if reg and steps is None:
                hit = reg.get(Arch.coerce(arch))
                if hit:
                    if charge:
                        self.budget.charge(hit[0].time_to_train)
                    return hit[0]
            if allow_surrogate and steps is None:
                return self.surrogate().predict(arch)
            raise
        if steps is not None:
            return self._curve_result(row, steps, charge)
        r = self._result(row)
        if charge:
            self.budget.charge(r.time_to_train)
        return r

    def attach_results(self, path: str) -> int:
        """Load regenerated entries from ``path/entries/*.json``; returns how many."""
        from pathlib import Path as _P

        d = _P(path) / "entries"
        if not d.is_dir():
            raise DataNotFoundError(f"results = {path!r} holds no entries/ folder (a builders results table)")
        reg: dict[Arch, list[FlexiBERTResult]] = self.__dict__.setdefault("_regenerated", {})
        n = 0
        for f in sorted(d.glob("*.json")):
            e = json.loads(f.read_text())
            mo = e["hparams"]["model_hparam_overrides"]
            a = Arch.from_release({"hidden_size": mo["hidden_size"], "nas_config": mo["nas_config"]})
            scores = {RELEASE_TASK_NAMES.get(k, k): v for k, v in e["scores"].items() if k != "glue"}
            reg.setdefault(a, []).append(FlexiBERTResult(
                id=e.get("id"), arch=a, scores=MappingProxyType(scores), glue=e["scores"]["glue"],
                time_to_train=e["time_to_train"], num_params=flexibert_num_params(a, "as_specified"),
                num_params_seed_compat=flexibert_num_params(a, "authors"),
                num_params_as_trained=flexibert_num_params(a, "as_trained"), pretrain_steps=e["hparams"]["num_train_steps"],
                hparams=MappingProxyType(dict(e["hparams"])), source="regenerated",
                semantics=get_semantics(e.get("semantics", "as_specified")).name))
            n += 1
        return n

    def surrogate(self, family: str | None = None) -> Any:
        """The surrogate fitted on this benchmark's archs (fitted once, then cached)."""
        from .surrogate import DEFAULT_FAMILY, Surrogate

        fam = family or DEFAULT_FAMILY
        cache = self.__dict__.setdefault("_surrogates", {})
        if fam not in cache:
            cache[fam] = Surrogate(self, fam)
        return cache[fam]

    def query_all(self, arch: ArchLike | int) -> list[FlexiBERTResult]:
        """Every run of ``arch`` (two for the 9 archs the benchmark trained twice)."""
        reg = self.__dict__.get("_regenerated") or {}
        try:
            row = self._row(arch)
        except NotEvaluatedError:
            hit = reg.get(Arch.coerce(arch)) if not _is_int(arch) else None
            if hit:
                return list(hit)
            raise
        a = self._archs[row]
        return [self._result(j) for j in self._runs[a]] + list(reg.get(a, []))

    def repeats(self) -> pd.DataFrame:
        """The archs trained more than once: their ids and GLUE scores (a noise floor)."""
        df = self._frame()
        groups = [rows for rows in self._runs.values() if len(rows) > 1]
        return pd.DataFrame(
            {"arch": [str(self._archs[g[0]]) for g in groups],
             "ids": [tuple(df["id"].iloc[g]) for g in groups],
             "glue": [tuple(df["glue"].iloc[g]) for g in groups]}
        )

    def reset_budget(self) -> None:
        self.budget.reset()

    def set_budget(self, seconds: float | None) -> None:
        """Set (or with ``None`` remove) a limit on simulated training seconds."""
        if seconds is not None and (not isinstance(seconds, (int, float)) or seconds < 0 or math.isnan(seconds)):
            raise ValueError(f"budget = {seconds!r} must be a non-negative number of seconds or None")
        self.budget.limit = None if seconds is None else float(seconds)

    # -- many queries ---------------------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """The whole FlexiBERT table (a copy you may modify)."""
        return self._frame().copy()

    def to_arrow(self) -> pa.Table:
        return self._table

    def _frame(self) -> pd.DataFrame:
        if self._df is None:
            self._df = self._table.to_pandas()
        return self._df

    def query_many(self, archs: Iterable[ArchLike | int], *, missing: Literal["raise", "drop"] = "raise", charge: bool = True) -> pd.DataFrame:
        """Rows of the table for many keys at once, in the given order."""
        if missing not in ("raise", "drop"):
            raise ValueError(f"missing = {missing!r} is not allowed; allowed values: ['raise', 'drop']")
        rows = []
        for a in archs:
            try:
                rows.append(self._row(a))
            except NotEvaluatedError:
                if missing == "raise":
                    raise
        idx = np.asarray(rows, dtype=np.int64)
        if charge and len(idx):
            total = float(np.asarray(self._cols["time_to_train"])[idx].sum())
            self.budget.charge(total)
            self.budget.queries += len(idx) - 1
        return self._frame().iloc[idx].reset_index(drop=True)

    def sample(self, n: int, seed: int | None = None) -> list[Arch]:
        """``n`` distinct evaluated archs, uniformly (reproducible from ``seed``)."""
        if not _is_int(n) or not 0 <= n <= len(self):
            raise ValueError(f"n = {n!r} must be an integer in [0, {len(self)}]")
        rng = np.random.default_rng(seed)
        return [self._archs[i] for i in rng.choice(len(self), size=n, replace=False)]

    def filter(
        self,
        *,
        hidden_size: int | Sequence[int] | None = None,
        num_layers: int | Sequence[int] | None = None,
        contains: str | None = None,
        only: str | None = None,
        min_params: int | None = None,
        max_params: int | None = None,
        semantics: SemanticsLike = "faithful",
    ) -> pd.DataFrame:
        """Rows matching every given condition.

        ``contains`` / ``only`` take an operation type (``"SA"``, ``"LT"``, ``"DSC"``) or
        an operation (``"SA-WMA"``, ``"DSC-9"``): at least one layer / every layer uses it.
        Parameter bounds use the ``semantics`` count: ``"as_trained"``, ``"as_specified"``
        (the default; old name ``"faithful"``) or ``"authors"`` (old name ``"seed_compat"``).
        """
        df = self._frame()
        mask = np.ones(len(df), dtype=bool)
        for name, val, allowed in (("hidden_size", hidden_size, (128, 256)), ("num_layers", num_layers, (2, 4))):
            if val is None:
                continue
            vals = [val] if _is_int(val) else list(val)
            bad = [v for v in vals if v not in allowed]
            if bad:
                raise ValueError(f"{name} = {bad!r} is not allowed; allowed values: {list(allowed)}")
            mask &= df[name].isin(vals).to_numpy()
        for name, op, reducer in (("contains", contains, np.any), ("only", only, np.all)):
            if op is None:
                continue
            hits = self._layer_matches(name, op)
            present = np.stack([df[f"l{i}_op"].notna().to_numpy() for i in range(4)], axis=1)
            if reducer is np.all:
                mask &= np.where(present, hits, True).all(axis=1)
            else:
                mask &= (hits & present).any(axis=1)
        col = {"as_specified": "num_params", "authors": "num_params_seed_compat",
               "as_trained": "num_params_as_trained"}[get_semantics(semantics).name]
        if min_params is not None:
            mask &= (df[col] >= min_params).to_numpy()
        if max_params is not None:
            mask &= (df[col] <= max_params).to_numpy()
        return df[mask].reset_index(drop=True)

    def _layer_matches(self, name: str, op: str) -> np.ndarray:
        df = self._frame()
        allowed = ["SA", "LT", "DSC", "SA-SDP", "SA-WMA", "LT-DFT", "LT-DCT", "DSC-5", "DSC-9"]
        if not isinstance(op, str) or op.upper() not in allowed:
            raise ValueError(f"{name} = {op!r} is not allowed; allowed values: {allowed}")
        t, _, p = op.upper().partition("-")
        out = []
        for i in range(4):
            m = (df[f"l{i}_op"] == t).to_numpy().copy()
            if p:
                m &= (df[f"l{i}_param"] == p).to_numpy()
            out.append(m)
        return np.stack(out, axis=1)

    # -- neighbourhood ---------------------------------------------------------------------------
    def _arch_codes(self) -> np.ndarray:
        if self._codes is None:
            self._codes = np.stack([_encode(a) for a in self._archs])
        return self._codes

    def nearest(self, arch: ArchLike, k: int = 5) -> pd.DataFrame:
        """The ``k`` evaluated archs closest to ``arch`` (fields that differ; see :func:`distance`)."""
        a = Arch.coerce(arch)
        d = _distances(_encode(a), self._arch_codes())
        order = np.lexsort((np.arange(len(d)), d))[:k]
        out = self._frame().iloc[order].reset_index(drop=True)
        out.insert(0, "distance", d[order])
        return out

    # -- learning curves ----------------------------------------------------------------------------
    def curve_ids(self) -> list[int]:
        """Ids of the archs that have a learning curve."""
        return sorted(set(self.data.table("flexibert_curves").column("id").to_pylist()))

    def curve(self, arch: ArchLike | int) -> pd.DataFrame:
        """GLUE scores after 0, 50,000, ..., 1,000,000 pretraining steps.

        These are separate re-pretraining runs (the paper's train ablation), so their
        100,000-step point differs from the benchmark's main result by run-to-run noise.
        """
        row = self._row(arch)
        c = self.data.table("flexibert_curves").to_pandas()
        out = c[c["id"] == self._ids[row]].reset_index(drop=True)
        if out.empty:
            raise NotEvaluatedError(
                f"arch id {self._ids[row]} has no learning curve; archs with curves: {self.curve_ids()}"
            )
        return out

    def _curve_result(self, row: int, steps: int, charge: bool) -> FlexiBERTResult:
        c = self.curve(row)
        hit = c[c["steps"] == steps]
        if not _is_int(steps) or hit.empty:
            raise ValueError(f"steps = {steps!r} is not on the curve; allowed values: {c['steps'].tolist()}")
        base = self._result(row)
        rec = hit.iloc[0]
        r = FlexiBERTResult(
            id=base.id, arch=base.arch, scores=MappingProxyType({t: float(rec[t]) for t in GLUE_TASKS}),
            glue=float(rec["glue"]), time_to_train=base.time_to_train * steps / FINAL_STEPS,
            num_params=base.num_params, num_params_seed_compat=base.num_params_seed_compat,
            num_params_as_trained=base.num_params_as_trained,
            pretrain_steps=int(steps), hparams=base.hparams, source="curve",
        )
        if charge:
            self.budget.charge(r.time_to_train)
        return r

    # -- coverage and NAS-Bench-NLP ------------------------------------------------------------------
    def coverage(self) -> dict[str, Any]:
        """What is evaluated, with curves, with recipes, and which runs diverged."""
        nlp = self.nlp
        return {
            "flexibert_evaluated": len(self),
            "flexibert_space_size": FLEXIBERT_SPACE.size,
            "flexibert_curve_ids": self.curve_ids(),
            "nlp_ptb_runs": len(nlp.ptb),
            "nlp_ptb_with_recipe": int(nlp.ptb["recipe"].notna().sum()),
            "nlp_ptb_with_graph2vec": int(nlp.ptb["g2v_0"].notna().sum()),
            "nlp_wikitext2_runs": len(nlp.wikitext2),
            "nlp_wikitext2_diverged": nlp.wikitext2.loc[nlp.wikitext2["diverged"], "log_name"].tolist(),
        }

    @property
    def nlp(self) -> "NLPBenchmark":
        """NAS-Bench-NLP (Penn Treebank and WikiText-2), loaded on first access."""
        if self._nlp is None:
            self._nlp = NLPBenchmark(self.data, self.budget)
        return self._nlp


class _NotFast(Exception):
    pass


def _release_key(d: Mapping[str, Any]) -> tuple:
    """A hashable key of a release dict without full validation (fast path only).

    Any irregularity (extra keys, non-int numbers) raises so that the caller falls back
    to :func:`~nasbench_bert.spaces.flexibert.from_release` and its precise errors.
    """
    if len(d) != 2:
        raise _NotFast
    h = d["hidden_size"]
    nas = d["nas_config"]
    if type(h) is not int or len(nas) != 1:
        raise _NotFast
    out = [h]
    for layer in nas["encoder_layers"]:
        if len(layer) != 5:
            raise _NotFast
        t, p, n, f, k = (layer["operation_type"], layer["operation_parameter"], layer["num_operation_heads"],
                         layer["feed_forward_dimension"], layer["num_feed_forward"])
        if type(n) is not int or type(f) is not int or type(k) is not int or type(p) not in (str, int):
            raise _NotFast
        out += (t, p, n, f, k)
    return tuple(out)


def _release_key_of_arch(a: Arch) -> tuple:
    out: list[Any] = [a.hidden_size]
    for layer in a.layers:
        out += (getattr(layer, f) for f in LAYER_FIELDS)
    return tuple(out)


_OPS = ["SA-SDP", "SA-WMA", "LT-DFT", "LT-DCT", "DSC-5", "DSC-9"]


def _encode(a: Arch) -> np.ndarray:
    """hidden, depth, then per layer (operation, heads, ff width, ff depth); -1 = absent."""
    v = np.full(2 + 4 * 4, -1, dtype=np.int64)
    v[0], v[1] = a.hidden_size, a.num_layers
    for i, layer in enumerate(a.layers):
        v[2 + 4 * i : 6 + 4 * i] = (
            _OPS.index(f"{layer.operation_type}-{layer.operation_parameter}"),
            layer.num_operation_heads, layer.feed_forward_dimension, layer.num_feed_forward,
        )
    return v


def _distances(q: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Number of differing fields; a layer present in one arch only counts as 4."""
    return (codes[:, 0] != q[0]).astype(np.int64) + (codes[:, 2:] != q[2:]).sum(axis=1)


# -- NAS-Bench-NLP ---------------------------------------------------------------------------------
class NLPBenchmark:
    """NAS-Bench-NLP: 8,794 Penn Treebank runs and 345 WikiText-2 runs.

    Keys: a recipe id (int), a log name (``log_stats_model_....json``), or a recipe (dict,
    JSON string or :class:`~nasbench_bert.spaces.Recipe`), matched up to renaming of
    intermediate nodes. PTB recipes are public only for the 275 PTB runs whose recipe id
    also has a WikiText-2 log.
    """

    def __init__(self, data: DataDir, budget: Budget | None = None):
        self.data = data
        self.budget = budget or Budget()
        self._frames: dict[str, pd.DataFrame] = {}
        self._cols: dict[str, dict[str, list[Any]]] = {}
        self._results: dict[tuple[str, int, tuple[str, ...]], NLPResult] = {}
        self._index: dict[str, dict[str, dict[Any, list[int]]]] = {}

    def _df(self, dataset: str) -> pd.DataFrame:
        if dataset not in NLP_DATASETS:
            raise ValueError(f"dataset = {dataset!r} is not allowed; allowed values: {list(NLP_DATASETS)}")
        if dataset not in self._frames:
            t = self.data.table("nlp_ptb" if dataset == "ptb" else "nlp_wikitext2")
            df = t.to_pandas()
            self._frames[dataset] = df
            self._cols[dataset] = t.to_pydict()
            idx: dict[str, dict[Any, list[int]]] = {"recipe_id": {}, "log_name": {}, "recipe_hash": {}}
            for col in idx:
                for i, v in enumerate(df[col].tolist()):
                    if v is not None:
                        idx[col].setdefault(v, []).append(i)
            self._index[dataset] = idx
        return self._frames[dataset]

    @property
    def ptb(self) -> pd.DataFrame:
        return self._df("ptb")

    @property
    def wikitext2(self) -> pd.DataFrame:
        return self._df("wikitext2")

    def __len__(self) -> int:
        return len(self.ptb)

    def _rows(self, key: Any, dataset: str) -> list[int]:
        df = self._df(dataset)
        idx = self._index[dataset]
        if _is_int(key):
            rows = idx["recipe_id"].get(int(key))
            what = f"recipe_id {key}"
        elif isinstance(key, str) and key.startswith("log_stats_model_"):
            rows = idx["log_name"].get(key)
            what = f"log {key!r}"
        elif isinstance(key, (str, bytes, Mapping, Recipe)):
            recipe = parse_recipe(key)
            h = recipe_hash(recipe)
            rows = [i for i in idx["recipe_hash"].get(h, []) if isomorphic(recipe, self._cols[dataset]["recipe"][i])]
            what = f"this recipe (hash {h})"
        else:
            raise InvalidArchitectureError(
                f"cannot interpret {type(key).__name__} as a NAS-Bench-NLP key; expected a recipe id (int), "
                "a log name ('log_stats_model_...json') or a recipe (dict or JSON string)"
            )
        if not rows:
            n_known = int(df["recipe"].notna().sum())
            raise NotEvaluatedError(
                f"{what} has no {dataset} run. {dataset} holds {len(df):,} runs, {n_known:,} of them with a public "
                f"recipe; list them with bench.nlp.{dataset}"
            )
        return rows

    def query(self, key: Any, dataset: Literal["ptb", "wikitext2"] = "ptb", *, charge: bool = True) -> NLPResult:
        """The run of ``key`` on ``dataset``.

        When several runs match (the same cell sampled twice, or repeated training),
        the earliest log is returned and :attr:`NLPResult.other_runs` names the rest;
        :meth:`query_all` returns them all.
        """
        rows = self._rows(key, dataset)
        names = self._cols[dataset]["log_name"]
        r = self._result(dataset, rows[0], tuple(names[i] for i in rows[1:]) if len(rows) > 1 else ())
        if charge and r.wall_time is not None:
            self.budget.charge(r.wall_time)
        return r

    def query_all(self, key: Any, dataset: Literal["ptb", "wikitext2"] = "ptb") -> list[NLPResult]:
        return [self._result(dataset, i) for i in self._rows(key, dataset)]

    def _result(self, dataset: str, i: int, others: tuple[str, ...] = ()) -> NLPResult:
        key = (dataset, i, others)
        r = self._results.get(key)
        if r is not None:
            return r
        c = self._cols[dataset]
        recipe = json.loads(c["recipe"][i]) if c["recipe"][i] is not None else None
        if dataset == "ptb":
            loss = c["test_loss"][i]
            r = NLPResult(
                dataset="ptb", log_name=c["log_name"][i], recipe_id=c["recipe_id"][i], test_loss=loss,
                num_params=c["num_params"][i], diverged=math.isnan(loss), status="OK" if not math.isnan(loss) else "missing",
                recipe=recipe, perplexity=c["perplexity"][i], bits_per_word=c["bits_per_word"][i],
                proxies=MappingProxyType({k: c[k][i] for k in NLP_PROXY_COLUMNS.values()}), other_runs=others,
            )
        else:
            loss = c["final_test_loss"][i]
            r = NLPResult(
                dataset="wikitext2", log_name=c["log_name"][i], recipe_id=c["recipe_id"][i], test_loss=loss,
                num_params=c["num_params"][i], diverged=c["diverged"][i], status=c["status"][i], recipe=recipe,
                perplexity=math.exp(loss) if not math.isnan(loss) else math.nan,
                bits_per_word=loss / math.log(2),
                curves=MappingProxyType({k: tuple(c[k][i]) for k in ("train_losses", "val_losses", "test_losses", "wall_times")}),
                hparams=MappingProxyType({k[3:]: c[k][i] for k in c if k.startswith("hp_")}),
                wall_time=c["total_wall_time"][i], other_runs=others,
            )
        self._results[key] = r
        return r
