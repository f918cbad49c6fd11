"""The FlexiBERT/ELECTRA benchmark (Serianni & Kalita, ACL 2023): 500 trained archs.

Design, after NAS-Bench-101's ``api.py``: one small facade that validates keys, looks
results up in verified tables, and charges simulated training time to a budget, so that
search algorithms can report "wall-clock as if they had trained". The facade only looks
up; each other concern has its own module beside it:

* :mod:`.keys` - how ids, archs, strings and release dicts find rows;
* :mod:`.curves` - learning curves (:meth:`Benchmark.curve`, :meth:`Benchmark.curve_point`);
* :mod:`.filters` - :meth:`Benchmark.filter`;
* :mod:`.measured` - the optional hardware table;
* :mod:`nasbench_bert.data.entries` - regenerated entries on disk;
* :mod:`nasbench_bert.surrogate` - predictions for the 10.6M archs never trained,
  reached by name (:meth:`Benchmark.surrogate`), never through :meth:`Benchmark.query`.

What the numbers are - which model earned them, what the operation fields mean - is in
``docs/errata.md``; in short, the scores belong to the ``as_trained`` model, in which
every layer is scaled dot-product attention whatever its ``operation_type`` says.
"""

from __future__ import annotations

import os
import warnings
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterator, Literal, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..checks import check_bench, check_seed, is_int
from ..data.columns import table_frame
from ..data.entries import read_entries
from ..data.resolve import load_data
from ..data.tables import GLUE_TASKS, DataDir
from ..errors import DataIntegrityError, InvalidArgumentError, NotEvaluatedError
from ..semantics import DEFAULT_SPEC_SEMANTICS, SemanticsLike
from ..spaces.flexibert import FLEXIBERT_SPACE, Arch, ArchLike, arch_at, field_codes, field_distances
from .base import TabularBenchmark, integration
from .budget import Budget
from .curves import FINAL_STEPS, LearningCurves
from .filters import FILTER_FIELDS, filter_mask
from .keys import KeyIndex
from .measured import MeasuredHardware
from .results import FlexiBERTResult
from ..vocabulary import BenchmarkLike

if TYPE_CHECKING:  # heavy (scipy), imported only when a surrogate is asked for
    from ..surrogate import Surrogate, SurrogateResult
    from .nlp import NLPBenchmark

__all__ = ["Benchmark", "FINAL_STEPS", "TABLE", "complete_build"]

TABLE = "flexibert"


def complete_build(data: DataDir, *, surrogate: bool = True) -> dict[str, dict[str, Any]]:
    """Add to freshly built tables the files made from them - ``objectives-v1.json`` and,
    unless ``surrogate=False``, the pinned surrogate - and return their manifest entries.

    Why one function: ``nasbench-bert build-data`` and :meth:`Benchmark.load` building on
    first use must leave the same folder (the same sha256 for each file), or every process
    of the README's path refits the surrogate (seconds to a minute) where loading the
    file takes a fraction of a second. The writer lives below
    (:func:`nasbench_bert.surrogate.portable.write_artifacts`); the data layer that builds
    the tables calls this through ``complete=`` without importing anything above it.
    """
    from ..surrogate.portable import write_artifacts

    return write_artifacts(Benchmark(data), surrogate=surrogate)


class Benchmark(TabularBenchmark[FlexiBERTResult]):
    """The FlexiBERT/ELECTRA benchmark (500 archs), with :attr:`nlp` for NAS-Bench-NLP.

    Keys: an id (0-499), an :class:`~nasbench_bert.Arch`, its canonical string, or its
    release dict. 9 archs were sampled twice: an arch key answers with the lowest id and
    names the repeat in ``other_ids``; :meth:`query_all` returns both runs.

    >>> bench = Benchmark.load()
    >>> bench.query(0).glue
    74.73375
    """

    PROXY_BENCHMARK = TABLE  # its rows of the proxy-values table (TabularBenchmark.proxy_values)

    def __init__(self, data: DataDir, budget: Budget | None = None):
        super().__init__(data, budget)
        self._table = data.table(TABLE)
        self._df: pd.DataFrame | None = None
        self._cols = self._table.to_pydict()
        self._keys = KeyIndex(self._cols["id"], [arch_at(i) for i in self._cols["space_index"]])
        self._codes: np.ndarray | None = None
        self._nlp: NLPBenchmark | None = None
        self._regenerated: dict[Arch, list[FlexiBERTResult]] = {}
        self._surrogates: dict[str, Surrogate] = {}
        self._hardware = MeasuredHardware(data)
        self._curves = LearningCurves(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, *, source: str | Sequence[str] = "auto",
             repo_id: str | None = None, revision: str | None = None, endpoint: str | None = None,
             token: str | bool | None = None, verify: bool = True, progress: bool = True,
             results: str | os.PathLike[str] | None = None, strict_results: bool = False) -> "Benchmark":
        """Load the tables; the keywords come in three groups.

        *Where from* - ``source``:

        * ``"auto"`` (default): the documented order - an explicit ``path``,
          ``$NASBENCH_BERT_DATA``, the user cache, the Hub at the pinned revision, a build
          from release files (:mod:`nasbench_bert.data.resolve`);
        * ``"local"``: the first three only (nothing is downloaded or built);
        * ``"hub"``: ``repo_id`` at ``revision`` from the Hugging Face Hub (or ``endpoint``
          / ``$HF_ENDPOINT``, with ``token``), every file verified against the manifest and
          cached (:mod:`nasbench_bert.data.hub`); pin a commit sha to be reproducible;
        * ``"release"``: rebuild from the authors' raw release files at the pinned commits;
        * a list of ``"hub"``, ``"hub:<endpoint>"``, ``"release[:<folder|URL>]"``,
          ``"local[:<folder>]"``: the first that verifies wins, dead ones fall through with
          a :class:`~nasbench_bert.SourceUnavailableWarning`.

        *How* - ``verify`` checks every table's sha256 against the manifest;
        ``progress`` shows downloads and builds; a build adds what ``build-data`` adds (:func:`complete_build`).

        *What else* - ``results``: a folder of regenerated entries loaded alongside
        (:meth:`attach_results`; ``strict_results`` refuses any bad entry).
        """
        if results is not None and not isinstance(results, (str, os.PathLike)):
            raise InvalidArgumentError(f"results = {results!r} is not allowed; allowed: a folder (str or path) or None")
        data = load_data(path, source=source, repo_id=repo_id, revision=revision, endpoint=endpoint, token=token,
                         verify=verify, progress=progress, complete=complete_build)
        bench = cls(data)
        if results is not None:
            bench.attach_results(results, strict=strict_results)
        return bench

    # -- container protocol --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[FlexiBERTResult]:
        return (self._result(TABLE, i, self._keys.others(i)) for i in range(len(self)))

    def __contains__(self, key: Any) -> bool:
        return self._has(key, TABLE)

    def __repr__(self) -> str:
        return f"<nasbench_bert.Benchmark: {len(self)} FlexiBERT archs from {self.data.path}>"

    @property
    def archs(self) -> list[Arch]:
        """The 500 archs in id order (9 appear twice)."""
        return list(self._keys.archs)

    # -- what the shared flow asks of a space (base.TabularBenchmark) --------------------
    def _rows(self, key: Any, table: str = TABLE) -> list[int]:
        return self._keys.rows(key)

    def _first_rows(self, keys: list[Any], table: str, *, drop: bool) -> np.ndarray:
        return self._keys.first_rows(keys, drop=drop)

    def _build(self, table: str, row: int, others: tuple[int, ...]) -> FlexiBERTResult:
        c = self._cols
        hp = {k[3:]: c[k][row] for k in c if k.startswith("hp_")}
        hp["model_hparam_overrides"] = self._keys.archs[row].to_release()
        return FlexiBERTResult(
            id=c["id"][row], arch=self._keys.archs[row], scores=MappingProxyType({t: c[t][row] for t in GLUE_TASKS}),
            glue=c["glue"][row], time_to_train=c["time_to_train"][row],
            num_params_as_specified=c["num_params_as_specified"][row], num_params_authors=c["num_params_authors"][row],
            num_params_as_trained=c["num_params_as_trained"][row],
            pretrain_steps=c["pretrain_steps"][row], hparams=MappingProxyType(hp),
            other_ids=tuple(c["id"][j] for j in others), hardware=self._hardware.of(c["id"][row]))

    def _cost(self, result: FlexiBERTResult) -> float:
        return float(result.time_to_train)

    def _frame(self, table: str = TABLE) -> pd.DataFrame:
        if self._df is None:  # a TableFrame: the data release 1 column names still answer, with a warning
            self._df = table_frame(self._table.to_pandas())
        return self._df

    # -- queries ---------------------------------------------------------------------------
    def query(self, arch: ArchLike | int, *, charge: bool = True, steps: int | None = None,
              allow_surrogate: bool | None = None) -> "FlexiBERTResult | SurrogateResult":
        """The final (100,000-step) result of ``arch``: an :class:`Arch`, its string, its
        release dict or an id. ``charge`` adds the entry's training time to :attr:`budget`.

        An arch that is valid but was never trained raises
        :class:`~nasbench_bert.NotEvaluatedError`, unless it is among the attached
        regenerated entries (:meth:`attach_results`). Predictions for untrained archs come
        from :meth:`surrogate`, points on a learning curve from :meth:`curve_point`:
        ``steps=`` and ``allow_surrogate=`` still work here, with a ``DeprecationWarning``.
        """
        if steps is not None:
            _deprecated("query(arch, steps=...)", "bench.curve_point(arch, steps)")
            return self.curve_point(arch, steps, charge=charge)
        if allow_surrogate is not None:
            _deprecated("query(arch, allow_surrogate=...)", "bench.surrogate().predict(arch) for untrained archs")
        try:
            return self._lookup(arch, TABLE, charge=charge)
        except NotEvaluatedError:
            if is_int(arch):
                raise
            hit = self._regenerated.get(Arch.coerce(arch))
            if hit:
                return self._charge(hit[0], charge)
            if allow_surrogate:
                return self.surrogate().predict(arch)
            raise

    def query_all(self, arch: ArchLike | int) -> list[FlexiBERTResult]:
        """Every run of ``arch``: two for the 9 archs the benchmark trained twice, plus any
        attached regenerated entries (which a plain :meth:`query` of a bundled arch does
        not return: the bundled result stays the answer)."""
        try:
            runs = self._lookup_all(arch, TABLE)
        except NotEvaluatedError:
            hit = self._regenerated.get(Arch.coerce(arch)) if not is_int(arch) else None
            if hit:
                return list(hit)
            raise
        return runs + list(self._regenerated.get(runs[0].arch, []))

    def query_many(self, archs: Any, *, missing: Literal["raise", "drop"] = "raise", charge: bool = True) -> pd.DataFrame:
        """Rows of the table for many keys at once, in the given order: one take from the
        table, no result objects. ``missing="drop"`` leaves out keys never evaluated."""
        return self._lookup_many(archs, TABLE, missing=missing, charge=charge, cost_column="time_to_train")

    def repeats(self) -> pd.DataFrame:
        """The archs trained more than once: their ids and GLUE scores (a noise floor)."""
        df = self._frame()
        groups = [rows for rows in self._keys.runs.values() if len(rows) > 1]
        return pd.DataFrame({"arch": [str(self._keys.archs[g[0]]) for g in groups],
                             "ids": [tuple(df["id"].iloc[g]) for g in groups],
                             "glue": [tuple(df["glue"].iloc[g]) for g in groups]})

    # -- learning curves (.curves) -------------------------------------------------------
    def curve_ids(self) -> list[int]:
        """Ids of the archs that have a learning curve."""
        return self._curves.ids()

    def curve(self, arch: ArchLike | int) -> pd.DataFrame:
        """GLUE after 0, 50,000, ..., 1,000,000 pretraining steps: separate re-pretraining
        runs, whose damaged 50k/100k points carry a ``status`` (see :mod:`.curves`)."""
        return self._curves.frame(self._keys.ids[self._keys.row(arch)])

    def curve_point(self, arch: ArchLike | int, steps: int, *, charge: bool = True) -> FlexiBERTResult:
        """The result of ``arch`` after ``steps`` pretraining steps on its learning curve
        (``source="curve"``), charged at the steps' share of its training time."""
        row = self._keys.row(arch)
        final = self._result(TABLE, row, self._keys.others(row))
        return self._charge(self._curves.point(final, steps), charge)

    # -- regenerated entries and the surrogate -------------------------------------------
    def attach_results(self, path: str | os.PathLike[str], *, strict: bool = False) -> int:
        """Load regenerated entries from ``path/entries/*.json``; returns how many.

        Every file is validated first (:mod:`nasbench_bert.data.entries`). A bad one is
        skipped with a :class:`UserWarning` that names it and says why; with
        ``strict=True`` any bad file raises :class:`~nasbench_bert.DataIntegrityError`
        listing them all, and nothing is attached. Archs only found there are answered
        from them (``source="regenerated"``); for an arch the release has, the bundled
        result stays the answer of :meth:`query` and :meth:`query_all` returns both."""
        if not isinstance(strict, bool):
            raise InvalidArgumentError(f"strict = {strict!r} is not allowed; allowed: True or False")
        good, bad = read_entries(path)
        if bad and strict:
            raise DataIntegrityError(f"results = {str(path)!r}: {len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'}, nothing "
                                     "attached:\n  " + "\n  ".join(bad))
        for b in bad:
            warnings.warn(f"results = {str(path)!r}: skipped {b}", UserWarning, stacklevel=2)
        for e in good:
            self._regenerated.setdefault(e.arch, []).append(FlexiBERTResult.from_entry(e))
        shadowed = sum(e.arch in self._keys.by_arch for e in good)
        if shadowed:
            warnings.warn(f"{shadowed} regenerated entries are archs the release already has: query() keeps answering "
                          "with the bundled result; query_all(arch) returns both", UserWarning, stacklevel=2)
        return len(good)

    def regenerated(self) -> dict[Arch, list[FlexiBERTResult]]:
        """The attached regenerated entries, by arch (see :meth:`attach_results`)."""
        return {a: list(rs) for a, rs in self._regenerated.items()}

    def surrogate(self, family: str | None = None, *, refit: bool = False) -> "Surrogate":
        """The surrogate (``.predict(arch)`` for any of the 10.6M archs), cached: the data's pinned
        file for ``family`` if any (loaded, not fitted: docs/surrogate.md), else a fit; ``refit=True`` fits."""
        from ..surrogate import DEFAULT_FAMILY, load_or_fit

        fam = family or DEFAULT_FAMILY
        if refit or fam not in self._surrogates:
            self._surrogates[fam] = load_or_fit(self, fam, refit=refit)
        return self._surrogates[fam]

    # -- tables, filters, neighbours -------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """The whole FlexiBERT table (a copy you may modify). Columns have their schema-2
        names (docs/data.md); the data release 1 names (``num_params``,
        ``num_params_seed_compat``) still answer ``df[name]`` and ``df.name`` until 0.4,
        with a ``DeprecationWarning`` naming the replacement."""
        return self._frame().copy()

    def to_arrow(self) -> pa.Table:
        return self._table  # the verified table itself: Arrow tables are immutable

    def sample(self, n: int, seed: int | None = None) -> list[Arch]:
        """``n`` distinct evaluated archs, uniformly (reproducible from ``seed``)."""
        if not is_int(n) or not 0 <= n <= len(self):
            raise InvalidArgumentError(f"n = {n!r} must be an integer in [0, {len(self)}]")
        rng = np.random.default_rng(check_seed("seed", seed))
        return [self._keys.archs[i] for i in rng.choice(len(self), size=n, replace=False)]

    def filter(self, *, hidden_size: int | Sequence[int] | None = None, num_layers: int | Sequence[int] | None = None,
               contains: str | None = None, only: str | None = None, min_params: int | None = None,
               max_params: int | None = None, semantics: SemanticsLike = DEFAULT_SPEC_SEMANTICS,
               **unknown: Any) -> pd.DataFrame:
        """Rows matching every given condition (:mod:`.filters`).

        ``contains`` / ``only`` take an operation type (``"SA"``, ``"LT"``, ``"DSC"``) or
        an operation (``"SA-WMA"``, ``"DSC-9"``): at least one layer / every layer is
        labelled with it (labels: the trained models are all SDP; see docs/errata.md).
        Parameter bounds count the ``semantics`` model: ``"as_specified"`` (the default,
        as for every count of an arch as written), ``"as_trained"`` or ``"authors"``."""
        if unknown:
            raise InvalidArgumentError(f"filter field(s) {sorted(unknown)} not allowed; allowed: {list(FILTER_FIELDS)}")
        df = self._frame()
        mask = filter_mask(df, hidden_size=hidden_size, num_layers=num_layers, contains=contains, only=only,
                           min_params=min_params, max_params=max_params, semantics=semantics)
        return df[mask].reset_index(drop=True)

    def nearest(self, arch: ArchLike, k: int = 5) -> pd.DataFrame:
        """The ``k`` evaluated archs closest to ``arch`` (fewest differing fields; see
        :func:`~nasbench_bert.spaces.field_distances`), with a ``distance`` column."""
        if not is_int(k) or k < 1:
            raise InvalidArgumentError(f"k = {k!r} is not allowed; allowed: a positive integer")
        if self._codes is None:
            self._codes = np.stack([field_codes(a) for a in self._keys.archs])
        d = field_distances(field_codes(Arch.coerce(arch)), self._codes)
        order = np.lexsort((np.arange(len(d)), d))[:k]
        out = self._frame().iloc[order].reset_index(drop=True)
        out.insert(0, "distance", d[order])
        return out

    # -- hardware (.measured) ----------------------------------------------------------------
    def hardware(self, semantics: SemanticsLike | None = None) -> pd.DataFrame:
        """The measured hardware table (:mod:`nasbench_bert.hardware`): one row per arch id
        and semantics, or only ``semantics``'s rows; without a measurement,
        :class:`~nasbench_bert.DataNotFoundError` says how to measure one."""
        return self._hardware.table(semantics)

    @property
    def hardware_machine(self) -> dict[str, Any]:
        """The machine, settings, date and run-to-run noise behind :meth:`hardware`."""
        return self._hardware.machine()

    # -- adapters, coverage and NAS-Bench-NLP ----------------------------------------------
    def to_syne_tune(self, **kwargs: Any) -> Any:
        """This benchmark as a syne-tune ``Blackbox`` (``[hpo]`` extra); the arguments are
        those of :func:`nasbench_bert.integrations.syne_tune.to_syne_tune`."""
        return integration("syne_tune")(self, **kwargs)

    def coverage(self) -> dict[str, Any]:
        """What is evaluated, with curves, with recipes, and which runs diverged."""
        return {"flexibert_evaluated": len(self), "flexibert_space_size": FLEXIBERT_SPACE.size,
                "flexibert_curve_ids": self.curve_ids(), **self.nlp.coverage()}

    @property
    def nlp(self) -> "NLPBenchmark":
        """NAS-Bench-NLP (Penn Treebank and WikiText-2), sharing this benchmark's budget."""
        if self._nlp is None:
            from .nlp import NLPBenchmark

            self._nlp = NLPBenchmark(self.data, self.budget)
        return self._nlp


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"Benchmark.{old} is deprecated and will be removed in 0.4; use {new}", DeprecationWarning,
                  stacklevel=3)


def ensure_benchmark(bench: BenchmarkLike | None, archs: Sequence[Any] | None = None) -> BenchmarkLike | None:
    """``bench``, checked (:func:`~nasbench_bert.checks.check_bench`); or, when it is None,
    ``Benchmark.load(progress=False)`` - loaded once, and only when needed: always without
    ``archs``, else only when ``archs`` holds a benchmark id (ids are rows of a benchmark;
    archs themselves need none). The public functions that take ``bench`` (sweeps,
    scoring, evaluation) call this at their boundary and say so in their docstrings;
    nothing below them loads a benchmark."""
    if bench is not None:
        return check_bench(bench)
    if archs is None or any(is_int(a) for a in archs):
        return Benchmark.load(progress=False)
    return None
