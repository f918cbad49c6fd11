"""The FlexiBERT/ELECTRA benchmark (Serianni & Kalita, ACL 2023): 500 trained archs.

Design, after NAS-Bench-101's ``api.py``: one small facade that validates keys, looks
results up in verified tables, and charges simulated training time to a budget, so that
search algorithms can report "wall-clock as if they had trained".

Fidelity never switches silently: :meth:`Benchmark.query` returns the benchmark's final
100,000-step result; learning curves (separate re-pretraining runs of a few archs for
0 ... 1,000,000 steps) come only from :meth:`Benchmark.curve` or an explicit ``steps=``.
What the numbers are - which model earned them, what the operation fields mean - is in
``docs/errata.md``; in short, the scores belong to the ``as_trained`` model, in which
every layer is scaled dot-product attention whatever its ``operation_type`` says.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..data.tables import GLUE_TASKS, RELEASE_TASK_NAMES, DataDir
from ..checks import check_seed
from ..checks import is_int as _is_int
from ..errors import DataNotFoundError, InvalidArgumentError, NotEvaluatedError
from ..semantics import SemanticsLike, get_semantics
from ..sizes import flexibert_num_params
from ..spaces.flexibert import (
    FLEXIBERT_SPACE,
    LAYER_FIELDS,
    Arch,
    ArchLike,
    arch_at,
    field_codes,
    field_distances,
)
from .base import TabularBenchmark
from .budget import Budget
from .results import FlexiBERTResult, HardwareMetrics

if TYPE_CHECKING:  # heavy (scipy), imported only when a surrogate is asked for
    from ..surrogate import Surrogate, SurrogateResult
    from .nlp import NLPBenchmark

FINAL_STEPS = 100_000
TABLE = "flexibert"
HARDWARE_TABLE = "flexibert_hardware"
_PARAM_COLUMNS = {"as_specified": "num_params", "authors": "num_params_seed_compat", "as_trained": "num_params_as_trained"}
_OPERATION_FILTERS = ["SA", "LT", "DSC", "SA-SDP", "SA-WMA", "LT-DFT", "LT-DCT", "DSC-5", "DSC-9"]


class Benchmark(TabularBenchmark[FlexiBERTResult]):
    """The FlexiBERT/ELECTRA benchmark (500 archs), with :attr:`nlp` for NAS-Bench-NLP.

    Keys: an id (0-499), an :class:`~nasbench_bert.Arch`, its canonical string, or its
    release dict. 9 archs were sampled twice: an arch key answers with the lowest id and
    names the repeat in ``other_ids``; :meth:`query_all` returns both runs.

    >>> bench = Benchmark.load()
    >>> bench.query(0).glue
    74.73375
    """

    def __init__(self, data: DataDir, budget: Budget | None = None):
        super().__init__(data, budget)
        t = data.table(TABLE)
        self._table = t
        self._df: pd.DataFrame | None = None
        self._cols = t.to_pydict()
        self._ids: list[int] = self._cols["id"]
        self._archs: list[Arch] = [arch_at(i) for i in self._cols["space_index"]]
        self._runs: dict[Arch, list[int]] = {}
        for i, a in enumerate(self._archs):
            self._runs.setdefault(a, []).append(i)
        self._by_arch = {a: rows[0] for a, rows in self._runs.items()}
        self._by_string = {str(a): i for a, i in self._by_arch.items()}
        self._by_key = {_release_key_of_arch(a): i for a, i in self._by_arch.items()}
        self._codes: np.ndarray | None = None
        self._nlp: NLPBenchmark | None = None
        self._regenerated: dict[Arch, list[FlexiBERTResult]] = {}
        self._surrogates: dict[str, Surrogate] = {}
        self._hw: dict[int, Mapping[str, HardwareMetrics]] | None = None
        self._curves: pd.DataFrame | None = None

    # -- construction ------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        source: str | Sequence[str] = "auto",
        repo_id: str | None = None,
        revision: str | None = None,
        endpoint: str | None = None,
        token: str | bool | None = None,
        verify: bool = True,
        progress: bool = True,
        results: str | os.PathLike[str] | None = None,
        strict_results: bool = False,
    ) -> "Benchmark":
        """Load the tables.

        ``source``:

        * ``"auto"`` (default): the documented order - an explicit ``path``,
          ``$NASBENCH_BERT_DATA``, the user cache, the Hub at the pinned revision, a build
          from release files (:mod:`nasbench_bert.data.resolve`);
        * ``"local"``: the first three only (nothing is downloaded or built);
        * ``"hub"``: ``repo_id`` at ``revision`` from the Hugging Face Hub (or ``endpoint``
          / ``$HF_ENDPOINT``), every file verified against the manifest and cached
          (:mod:`nasbench_bert.data.hub`); pin a commit sha to be reproducible;
        * ``"release"``: rebuild from the authors' raw release files at the pinned commits;
        * a list of ``"hub"``, ``"hub:<endpoint>"``, ``"release[:<folder|URL>]"``,
          ``"local[:<folder>]"``: the first that verifies wins, dead ones fall through with
          a :class:`~nasbench_bert.SourceUnavailableWarning`.

        ``results``: a folder of regenerated entries (a builders results table) loaded
        alongside (:meth:`attach_results`; ``strict_results`` refuses any bad entry).
        """
        from ..data import hub
        from ..data.resolve import fetch, resolve

        if not isinstance(source, (str, list, tuple)) or (not isinstance(source, str) and not all(isinstance(x, str) for x in source)):
            raise InvalidArgumentError(f"source = {source!r} is not allowed; allowed values: 'auto', 'local', 'hub', 'release', or a list "
                             "of 'hub', 'hub:<endpoint>', 'release[:<folder|URL>]', 'local[:<folder>]'")
        if isinstance(source, str) and source not in ("auto", "local", "hub") and not source.startswith(("hub:", "release", "local:")):
            raise InvalidArgumentError(
                f"source = {source!r} is not allowed; allowed values: 'auto', 'local', 'hub', 'release', "
                "or a list of 'hub', 'hub:<endpoint>', 'release[:<folder|URL>]', 'local[:<folder>]'")
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentError(f"path = {path!r} is not allowed; allowed: a folder (str or path) or None")
        if source in ("auto", "local"):
            if repo_id is not None or revision is not None or endpoint is not None:
                raise InvalidArgumentError(f"repo_id/revision/endpoint only apply to source='hub'; got source = {source!r}")
            data = resolve(path, hub=source == "auto", build=source == "auto", progress=progress, verify=verify)
        elif path is not None:
            raise InvalidArgumentError(f"path only applies to source='auto' or 'local'; got source = {source!r}")
        elif source == "hub":
            data = hub.download(repo_id or hub.DEFAULT_REPO_ID, revision or hub.DEFAULT_REVISION, endpoint=endpoint,
                                token=token, verify=verify)
        else:
            if endpoint is not None:
                raise InvalidArgumentError("endpoint= applies to source='hub'; in a source list write 'hub:<endpoint>'")
            data = fetch(source, repo_id=repo_id or hub.DEFAULT_REPO_ID, revision=revision or hub.DEFAULT_REVISION,
                             token=token, verify=verify, progress=progress)
        if results is not None and not isinstance(results, (str, os.PathLike)):
            raise InvalidArgumentError(f"results = {results!r} is not allowed; allowed: a folder (str or path) or None")
        bench = cls(data)
        if results is not None:
            bench.attach_results(results, strict=strict_results)
        return bench

    # -- container protocol --------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._archs)

    def __iter__(self) -> Iterator[FlexiBERTResult]:
        return (self._result(TABLE, i, self._others(i)) for i in range(len(self)))

    def __contains__(self, key: Any) -> bool:
        return self._has(key, TABLE)

    def __repr__(self) -> str:
        return f"<nasbench_bert.Benchmark: {len(self)} FlexiBERT archs from {self.data.path}>"

    @property
    def archs(self) -> list[Arch]:
        """The 500 archs in id order (9 appear twice)."""
        return list(self._archs)

    # -- key resolution ----------------------------------------------------------------
    def _rows(self, key: Any, table: str = TABLE) -> list[int]:
        row = self._row(key)
        return self._runs[self._archs[row]] if not _is_int(key) else [row, *self._others(row)]

    def _others(self, row: int) -> tuple[int, ...]:
        return tuple(j for j in self._runs[self._archs[row]] if j != row)

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
            return row if row is not None else self._row(Arch.from_string(key))
        if isinstance(key, Mapping):
            try:
                row = self._by_key.get(_release_key(key))
            except (KeyError, TypeError, AttributeError, _NotFast):
                row = None
            return row if row is not None else self._row(Arch.from_release(key))
        return self._row(Arch.coerce(key))  # raises InvalidArchitectureError naming the forms

    def _not_evaluated(self, arch: Arch) -> NotEvaluatedError:
        return NotEvaluatedError(
            f"{arch} is a valid FlexiBERT arch but not one of the {len(self)} evaluated archs (the space has "
            f"{FLEXIBERT_SPACE.size:,}). Find the closest evaluated ones with bench.nearest(arch)."
        )

    # -- results -------------------------------------------------------------------------
    def _build(self, table: str, row: int, others: tuple[int, ...]) -> FlexiBERTResult:
        c = self._cols
        hp = {k[3:]: c[k][row] for k in c if k.startswith("hp_")}
        hp["model_hparam_overrides"] = self._archs[row].to_release()
        return FlexiBERTResult(
            id=c["id"][row], arch=self._archs[row], scores=MappingProxyType({t: c[t][row] for t in GLUE_TASKS}),
            glue=c["glue"][row], time_to_train=c["time_to_train"][row], num_params=c["num_params"][row],
            num_params_seed_compat=c["num_params_seed_compat"][row], num_params_as_trained=c["num_params_as_trained"][row],
            pretrain_steps=c["pretrain_steps"][row], hparams=MappingProxyType(hp),
            other_ids=tuple(c["id"][j] for j in others), hardware=self._hardware_of(c["id"][row]),
        )

    def _hardware_of(self, ident: int) -> Mapping[str, HardwareMetrics]:
        if self._hw is None:  # built on first use: loading the benchmark stays cheap
            hw: dict[int, dict[str, HardwareMetrics]] = {}
            names = [f.name for f in dataclasses.fields(HardwareMetrics) if f.name != "device"]
            if not self.data.has_table(HARDWARE_TABLE):  # a build without a measurement: no figures
                self._hw = {}
                return MappingProxyType({})
            cols = self.data.table(HARDWARE_TABLE).select(["id", *names]).to_pydict()
            for j, i in enumerate(cols["id"]):
                m = HardwareMetrics(**{n: cols[n][j] for n in names})
                hw.setdefault(i, {})[m.semantics] = m
            self._hw = {i: MappingProxyType(d) for i, d in hw.items()}
        return self._hw.get(ident, MappingProxyType({}))

    def hardware(self, semantics: SemanticsLike | None = None) -> pd.DataFrame:
        """The measured hardware table (:mod:`nasbench_bert.hardware`): one row per arch
        id and semantics, or only ``semantics``'s rows. Where and how it was measured is
        in :attr:`hardware_machine`. A data folder built without a measurement raises
        :class:`~nasbench_bert.DataNotFoundError` saying how to measure one."""
        df = self.data.table(HARDWARE_TABLE).to_pandas()
        if semantics is not None:
            df = df[df["semantics"] == get_semantics(semantics).name].reset_index(drop=True)
        return df

    def to_syne_tune(self, **kwargs: Any) -> Any:
        """This benchmark as a syne-tune ``Blackbox`` (``[hpo]`` extra); the arguments
        (``oracle``, ``fidelity``, ``outside``, ``family``, ``noisy``, ``seed``,
        ``num_seeds``) are those of
        :func:`nasbench_bert.integrations.syne_tune.to_syne_tune`."""
        from .base import integration

        return integration("syne_tune")(self, **kwargs)

    @property
    def hardware_machine(self) -> dict[str, Any]:
        """The data manifest's ``hardware`` entry: the machine, the settings, the date and
        the measured run-to-run noise behind :meth:`hardware`."""
        return dict(self.data.manifest.get("hardware", {}))

    def _cost(self, result: FlexiBERTResult) -> float:
        return float(result.time_to_train)

    def _frame(self, table: str = TABLE) -> pd.DataFrame:
        if self._df is None:
            self._df = self._table.to_pandas()
        return self._df

    # -- queries ---------------------------------------------------------------------------
    def query(self, arch: ArchLike | int, *, charge: bool = True, steps: int | None = None,
              allow_surrogate: bool = False) -> "FlexiBERTResult | SurrogateResult":
        """The result of ``arch``: an :class:`Arch`, its string, its release dict or an id.

        ``charge`` adds the entry's training time to :attr:`budget`. ``steps`` asks for a
        point on a learning curve (only for archs in :meth:`curve_ids`). An arch that is
        valid but was never trained raises :class:`~nasbench_bert.NotEvaluatedError`,
        unless it is among the attached regenerated entries, or ``allow_surrogate``: then
        the :class:`~nasbench_bert.search.SurrogateOracle` answers with a
        :class:`~nasbench_bert.surrogate.SurrogateResult` (``predicted=True``). Tabular
        results are never replaced by predictions.
        """
        if steps is not None:
            return self._curve_result(self._row(arch), steps, charge)
        try:
            return self._lookup(arch, TABLE, charge=charge)
        except NotEvaluatedError:
            if _is_int(arch):
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
            hit = self._regenerated.get(Arch.coerce(arch)) if not _is_int(arch) else None
            if hit:
                return list(hit)
            raise
        return runs + list(self._regenerated.get(runs[0].arch, []))

    def query_many(self, archs: Any, *, missing: Literal["raise", "drop"] = "raise", charge: bool = True) -> pd.DataFrame:
        """Rows of the table for many keys at once, in the given order: one take from the
        table, no result objects. ``missing="drop"`` leaves out keys never evaluated."""
        return self._lookup_many(archs, TABLE, missing=missing, charge=charge, cost_column="time_to_train")

    def _first_rows(self, keys: list[Any], table: str, *, drop: bool) -> np.ndarray:
        # ids, Arch objects and canonical strings resolve by one dict lookup each (an
        # Arch caches its hash); any other key, or a miss, takes the general path
        by_arch, by_string, ids = self._by_arch, self._by_string, self._ids
        n = len(ids)
        for kind, index in ((Arch, by_arch), (str, by_string)):  # the common case: one key type, all evaluated
            if keys and all(type(k) is kind for k in keys):
                rows = list(map(index.get, keys))
                if None not in rows:
                    return np.asarray(rows, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        keep = np.ones(len(keys), dtype=bool)
        for j, k in enumerate(keys):
            t = type(k)
            r = by_arch.get(k) if t is Arch else by_string.get(k) if t is str else (
                k if t is int and 0 <= k < n and ids[k] == k else None)
            if r is None:
                try:
                    r = self._rows(k, table)[0]
                except NotEvaluatedError:
                    if not drop:
                        raise
                    keep[j] = False
                    continue
            out[j] = r
        return out if keep.all() else out[keep]

    def attach_results(self, path: str | os.PathLike[str], *, strict: bool = False) -> int:
        """Load regenerated entries from ``path/entries/*.json``; returns how many.

        Every file is validated first (JSON, the entry schema, the arch, a file name that
        is the arch's space index and the entry's recipe key). A bad one is skipped with a :class:`UserWarning` that
        names it and says why; with ``strict=True`` any bad file raises
        :class:`~nasbench_bert.DataIntegrityError` listing them all, and nothing is
        attached. A load never stops half-way.

        Archs only found there are answered from them (``source="regenerated"``). For an
        arch the release has, the bundled result stays the answer of :meth:`query` and a
        :class:`UserWarning` says so; :meth:`query_all` returns both.
        """
        from ..data.schemas import validate_entry
        from ..errors import DataIntegrityError

        if not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentError(f"results = {path!r} is not allowed; allowed: a folder (str or path)")
        if not isinstance(strict, bool):
            raise InvalidArgumentError(f"strict = {strict!r} is not allowed; allowed: True or False")
        d = Path(path) / "entries"
        if not d.is_dir():
            raise DataNotFoundError(f"results = {str(path)!r} holds no entries/ folder (a builders results table)")
        good: list[tuple[Arch, FlexiBERTResult]] = []
        bad: list[str] = []
        for f in sorted(d.glob("*.json")):
            try:
                if not f.is_file():
                    raise ValueError("not a file")
                e = json.loads(f.read_text(encoding="utf-8"))
                validate_entry(e)
                mo = e["hparams"]["model_hparam_overrides"]
                a = Arch.from_release({"hidden_size": mo["hidden_size"], "nas_config": mo["nas_config"]})
                recipe = (e.get("recipe") or {}).get("key") if isinstance(e.get("recipe"), dict) else None
                stem = f"{a.index:08d}" + (f"-{recipe}" if recipe else "")
                if f.stem != stem:
                    raise ValueError(f"the file name says {f.stem}, the entry's arch and recipe make {stem}")
                scores = {RELEASE_TASK_NAMES.get(k, k): float(v) for k, v in e["scores"].items() if k != "glue"}
                good.append((a, FlexiBERTResult(
                    id=e.get("id"), arch=a, scores=MappingProxyType(scores), glue=float(e["scores"]["glue"]),
                    time_to_train=float(e["time_to_train"]), num_params=flexibert_num_params(a, "as_specified"),
                    num_params_seed_compat=flexibert_num_params(a, "authors"),
                    num_params_as_trained=flexibert_num_params(a, "as_trained"),
                    pretrain_steps=int(e["hparams"]["num_train_steps"]), hparams=MappingProxyType(dict(e["hparams"])),
                    source="regenerated", semantics=get_semantics(e.get("semantics", "as_specified")).name)))
            except (ValueError, OSError, TypeError, KeyError, AttributeError, RecursionError) as err:
                # JSON, schema, arch and file errors alike: this entry is unusable, the others are not
                bad.append(f"{f.name}: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
        if bad and strict:
            raise DataIntegrityError(f"results = {str(path)!r}: {len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'}, nothing "
                                     "attached:\n  " + "\n  ".join(bad))
        for b in bad:
            warnings.warn(f"results = {str(path)!r}: skipped {b}", UserWarning, stacklevel=2)
        shadowed = 0
        for a, r in good:
            self._regenerated.setdefault(a, []).append(r)
            shadowed += a in self._by_arch
        if shadowed:
            warnings.warn(f"{shadowed} regenerated entries are archs the release already has: query() keeps answering "
                          "with the bundled result; query_all(arch) returns both", UserWarning, stacklevel=2)
        return len(good)

    def regenerated(self) -> dict[Arch, list[FlexiBERTResult]]:
        """The attached regenerated entries, by arch (see :meth:`attach_results`)."""
        return {a: list(rs) for a, rs in self._regenerated.items()}

    def surrogate(self, family: str | None = None) -> "Surrogate":
        """The surrogate fitted on this benchmark's archs (fitted once, then cached)."""
        from ..surrogate import DEFAULT_FAMILY, Surrogate

        fam = family or DEFAULT_FAMILY
        if fam not in self._surrogates:
            self._surrogates[fam] = Surrogate(self, fam)
        return self._surrogates[fam]

    def repeats(self) -> pd.DataFrame:
        """The archs trained more than once: their ids and GLUE scores (a noise floor)."""
        df = self._frame()
        groups = [rows for rows in self._runs.values() if len(rows) > 1]
        return pd.DataFrame({"arch": [str(self._archs[g[0]]) for g in groups],
                             "ids": [tuple(df["id"].iloc[g]) for g in groups],
                             "glue": [tuple(df["glue"].iloc[g]) for g in groups]})

    # -- tables ----------------------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """The whole FlexiBERT table (a copy you may modify)."""
        return self._frame().copy()

    def to_arrow(self) -> pa.Table:
        return self._table

    def sample(self, n: int, seed: int | None = None) -> list[Arch]:
        """``n`` distinct evaluated archs, uniformly (reproducible from ``seed``)."""
        if not _is_int(n) or not 0 <= n <= len(self):
            raise InvalidArgumentError(f"n = {n!r} must be an integer in [0, {len(self)}]")
        rng = np.random.default_rng(check_seed("seed", seed))
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
        **unknown: Any,
    ) -> pd.DataFrame:
        """Rows matching every given condition.

        ``contains`` / ``only`` take an operation type (``"SA"``, ``"LT"``, ``"DSC"``) or
        an operation (``"SA-WMA"``, ``"DSC-9"``): at least one layer / every layer is
        labelled with it (labels: the trained models are all SDP; see docs/errata.md).
        Parameter bounds use the ``semantics`` count: ``"as_trained"``, ``"as_specified"``
        (the default; old name ``"faithful"``) or ``"authors"`` (old name ``"seed_compat"``).
        """
        if unknown:
            raise InvalidArgumentError(f"filter field(s) {sorted(unknown)} not allowed; allowed: ['hidden_size', 'num_layers', "
                             "'contains', 'only', 'min_params', 'max_params', 'semantics']")
        df = self._frame()
        mask = np.ones(len(df), dtype=bool)
        for name, val, allowed in (("hidden_size", hidden_size, (128, 256)), ("num_layers", num_layers, (2, 4))):
            if val is None:
                continue
            vals = [val] if _is_int(val) else (list(val) if isinstance(val, (list, tuple, set)) else [val])
            bad = [v for v in vals if not _is_int(v) or v not in allowed]
            if bad or not vals:
                raise InvalidArgumentError(f"{name} = {val!r} is not allowed; allowed values: {list(allowed)} or a list of them")
            mask &= df[name].isin(vals).to_numpy()
        for name, op, every in (("contains", contains, False), ("only", only, True)):
            if op is None:
                continue
            hits = self._layer_matches(name, op)
            present = np.stack([df[f"l{i}_op"].notna().to_numpy() for i in range(4)], axis=1)
            mask &= np.where(present, hits, True).all(axis=1) if every else (hits & present).any(axis=1)
        col = _PARAM_COLUMNS[get_semantics(semantics).name]
        for name, bound, cmp in (("min_params", min_params, np.greater_equal), ("max_params", max_params, np.less_equal)):
            if bound is None:
                continue
            if not _is_int(bound) or bound < 0:
                raise InvalidArgumentError(f"{name} = {bound!r} is not allowed; allowed: a non-negative integer or None")
            mask &= cmp(df[col].to_numpy(), bound)
        return df[mask].reset_index(drop=True)

    def _layer_matches(self, name: str, op: str) -> np.ndarray:
        df = self._frame()
        if not isinstance(op, str) or op.upper() not in _OPERATION_FILTERS:
            raise InvalidArgumentError(f"{name} = {op!r} is not allowed; allowed values: {_OPERATION_FILTERS}")
        t, _, p = op.upper().partition("-")
        out = []
        for i in range(4):
            m = (df[f"l{i}_op"] == t).to_numpy().copy()
            if p:
                m &= (df[f"l{i}_param"] == p).to_numpy()
            out.append(m)
        return np.stack(out, axis=1)

    # -- neighbourhood ---------------------------------------------------------------------
    def _arch_codes(self) -> np.ndarray:
        if self._codes is None:
            self._codes = np.stack([field_codes(a) for a in self._archs])
        return self._codes

    def nearest(self, arch: ArchLike, k: int = 5) -> pd.DataFrame:
        """The ``k`` evaluated archs closest to ``arch`` (fewest differing fields; see
        :func:`~nasbench_bert.spaces.field_distances`), with a ``distance`` column."""
        if not _is_int(k) or k < 1:
            raise InvalidArgumentError(f"k = {k!r} is not allowed; allowed: a positive integer")
        a = Arch.coerce(arch)
        d = field_distances(field_codes(a), self._arch_codes())
        order = np.lexsort((np.arange(len(d)), d))[:k]
        out = self._frame().iloc[order].reset_index(drop=True)
        out.insert(0, "distance", d[order])
        return out

    # -- learning curves -------------------------------------------------------------------
    def curve_ids(self) -> list[int]:
        """Ids of the archs that have a learning curve."""
        return sorted(set(self.data.table("flexibert_curves").column("id").to_pylist()))

    def curve(self, arch: ArchLike | int) -> pd.DataFrame:
        """GLUE scores after 0, 50,000, ..., 1,000,000 pretraining steps.

        These are separate re-pretraining runs (the paper's train ablation), so their
        100,000-step point differs from the benchmark's main result by run-to-run noise.

        The release's 50,000- and 100,000-step points are damaged (the authors' result
        collection matched ``model.50000`` to the 500,000-step files and ``model.100000``
        to the 1,000,000-step ones): ``status`` says which points are ``ok``,
        ``recovered`` (``glue_corrected`` holds the checkpoint's GLUE; its task scores are
        the later checkpoint's) or ``lost``. ``glue`` is the release's value as stored.
        See docs/errata.md.
        """
        row = self._row(arch)
        if self._curves is None:  # converted once; every call returns its own copy
            self._curves = self.data.table("flexibert_curves").to_pandas()
        c = self._curves
        out = c[c["id"] == self._ids[row]].reset_index(drop=True)
        if out.empty:
            raise NotEvaluatedError(f"arch id {self._ids[row]} has no learning curve; archs with curves: {self.curve_ids()}")
        return out

    def _curve_result(self, row: int, steps: int, charge: bool) -> FlexiBERTResult:
        c = self.curve(row)
        if not _is_int(steps) or (c["steps"] == steps).sum() == 0:
            raise InvalidArgumentError(f"steps = {steps!r} is not on the curve; allowed values: {c['steps'].tolist()}")
        rec = c[c["steps"] == steps].iloc[0]
        if rec["status"] == "lost":  # never hand out another checkpoint's numbers as this one's
            ok = c.loc[c["status"] != "lost", "steps"].tolist()
            raise NotEvaluatedError(
                f"steps = {steps}: the release's {steps:,}-step point of arch id {self._ids[row]} holds a later "
                f"checkpoint's scores (a file-name collision in the authors' result collection; see docs/errata.md); "
                f"points with a result: {ok}")
        base = self._result(TABLE, row, self._others(row))
        tasks_valid = rec["status"] == "ok"  # a recovered point's task scores are the later checkpoint's
        r = FlexiBERTResult(
            id=base.id, arch=base.arch,
            scores=MappingProxyType({t: float(rec[t]) if tasks_valid else math.nan for t in GLUE_TASKS}),
            glue=float(rec["glue_corrected"]), time_to_train=base.time_to_train * steps / FINAL_STEPS,
            num_params=base.num_params, num_params_seed_compat=base.num_params_seed_compat,
            num_params_as_trained=base.num_params_as_trained, pretrain_steps=int(steps), hparams=base.hparams,
            source="curve",
        )
        return self._charge(r, charge)

    # -- coverage and NAS-Bench-NLP ----------------------------------------------------------
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
        """NAS-Bench-NLP (Penn Treebank and WikiText-2), sharing this benchmark's budget."""
        if self._nlp is None:
            from .nlp import NLPBenchmark

            self._nlp = NLPBenchmark(self.data, self.budget)
        return self._nlp


class _NotFast(Exception):
    pass


def _release_key(d: Mapping[str, Any]) -> tuple[Any, ...]:
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
    out: list[Any] = [h]
    for layer in nas["encoder_layers"]:
        if len(layer) != 5:
            raise _NotFast
        t, p, n, f, k = (layer["operation_type"], layer["operation_parameter"], layer["num_operation_heads"],
                         layer["feed_forward_dimension"], layer["num_feed_forward"])
        if type(n) is not int or type(f) is not int or type(k) is not int or type(p) not in (str, int):
            raise _NotFast
        out += (t, p, n, f, k)
    return tuple(out)


def _release_key_of_arch(a: Arch) -> tuple[Any, ...]:
    out: list[Any] = [a.hidden_size]
    for layer in a.layers:
        out += (getattr(layer, f) for f in LAYER_FIELDS)
    return tuple(out)

