"""What every tabular benchmark shares: query flow, result cache, batch queries, budget.

A space's benchmark (:class:`~.flexibert.Benchmark`, :class:`~.nlp.NLPBenchmark`)
supplies only what differs per space: how a key finds its rows in a table
(:meth:`TabularBenchmark._rows`), how a row becomes a typed result
(:meth:`TabularBenchmark._build`) and what a result costs (:meth:`TabularBenchmark._cost`).
Looking up, caching, charging the :class:`~.budget.Budget` and answering many keys at
once are written here, once - the shape of NATS-Bench's per-space API classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import Any, Generic, Iterable, Literal, Mapping, TypeVar

import numpy as np
import pandas as pd

from ..checks import check_choice
from ..data.tables import DataDir
from ..errors import InvalidArchitectureError, InvalidArgumentError, NotEvaluatedError
from .budget import Budget

R = TypeVar("R")
#: ``missing=`` of a many-key lookup -> whether keys without a row are dropped (else refused)
_DROPS: dict[str, bool] = {"raise": False, "drop": True}

#: entry-point group of the optimiser adapters (``nasbench_bert.integrations``)
INTEGRATIONS_GROUP = "nasbench_bert.integrations"


def integration(name: str) -> Any:
    """The adapter registered as ``name`` in the :data:`INTEGRATIONS_GROUP` entry points.

    Methods such as ``bench.to_syne_tune()`` find their adapter here instead of importing
    it: the integrations sit above the lookup layer and import it, so a static import
    the other way would be a cycle. Any package can register an adapter the same way.
    """
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group=INTEGRATIONS_GROUP) if ep.name == name]
    if not eps:
        raise InvalidArgumentError(f"integration = {name!r} is not registered (entry-point group {INTEGRATIONS_GROUP!r}); "
                                   "reinstall nasbench-bert (pip install 'nasbench-bert[hpo]')")
    try:
        return eps[0].load()
    except ImportError as e:
        raise ImportError(f"the {name} integration needs the [hpo] extra: pip install 'nasbench-bert[hpo]' ({e})") from e


class TabularBenchmark(ABC, Generic[R]):
    """A benchmark whose answers are rows of verified tables (see module doc)."""

    #: this benchmark's rows of the proxy-values table (:mod:`nasbench_bert.data.proxy_values`)
    PROXY_BENCHMARK: str = ""

    def proxy_values(self, semantics: Any = "as_trained", proxies: Iterable[str] | str | None = None) -> pd.DataFrame:
        """Every zero-cost proxy the package ships, precomputed under ``semantics``: a
        DataFrame indexed by the benchmark's key (FlexiBERT: id 0-499; NAS-Bench-NLP: the
        ``recipe_hash`` of each distinct WikiText-2 recipe, which joins to :attr:`ptb` and
        :attr:`wikitext2`), one float64 column per proxy (``proxies`` selects), provenance
        (package version and commit, torch, device, dtype, batch, seed, machine, each
        proxy's definition version and cost) in ``.attrs``. The values are the data
        release's pinned table: no model is built, no torch needed. NAS-Bench-NLP under
        ``"as_specified"`` serves the ``as_trained`` rows (the same model and protocol
        there; ``.attrs["rows_of"]`` says so)."""
        from ..data.proxy_values import read_proxy_values

        return read_proxy_values(self.data, self.PROXY_BENCHMARK, semantics, proxies)

    def __init__(self, data: DataDir, budget: Budget | None = None):
        self.data = data
        self.budget = budget if budget is not None else Budget()
        self._cache: dict[tuple[str, int, tuple[int, ...]], R] = {}

    # -- what a space supplies ---------------------------------------------------------
    @abstractmethod
    def _rows(self, key: Any, table: str) -> list[int]:
        """Every row of ``table`` that holds ``key`` (first = the canonical run); raises
        :class:`InvalidArchitectureError` for a malformed key and
        :class:`NotEvaluatedError` for a valid one with no row."""

    @abstractmethod
    def _build(self, table: str, row: int, others: tuple[int, ...]) -> R:
        """The typed result of ``row``; ``others`` are the rows of the same key's other runs."""

    @abstractmethod
    def _cost(self, result: R) -> float | None:
        """Simulated seconds charged for ``result`` (None: nothing to charge)."""

    @abstractmethod
    def _frame(self, table: str) -> pd.DataFrame:
        """The whole ``table`` as a DataFrame (shared, do not modify)."""

    # -- the shared flow ---------------------------------------------------------------
    def _result(self, table: str, row: int, others: tuple[int, ...] = ()) -> R:
        k = (table, row, others)
        r = self._cache.get(k)
        if r is None:
            r = self._cache[k] = self._build(table, row, others)
        return r

    def _charge(self, result: R, charge: bool) -> R:
        cost = self._cost(result)
        if charge and cost is not None:
            self.budget.charge(cost)
        return result

    def _lookup(self, key: Any, table: str, *, charge: bool) -> R:
        rows = self._rows(key, table)
        return self._charge(self._result(table, rows[0], tuple(rows[1:])), charge)

    def _lookup_all(self, key: Any, table: str) -> list[R]:
        rows = self._rows(key, table)
        return [self._result(table, r, tuple(x for x in rows if x != r)) for r in rows]

    def _lookup_many(self, keys: Iterable[Any], table: str, *, missing: Literal["raise", "drop"], charge: bool,
                     cost_column: str | None) -> pd.DataFrame:
        check_choice("missing", missing, _DROPS)  # an unhashable value gets the line too, not a TypeError
        if keys is None or isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
            raise InvalidArgumentError(f"archs = {keys!r} is not allowed; allowed: an iterable of keys (ids, archs, strings, dicts)")
        idx = self._first_rows(list(keys), table, drop=_DROPS[missing])
        frame = self._frame(table)
        if charge and len(idx) and cost_column is not None:
            costs = frame[cost_column].to_numpy(dtype=float)[idx]
            self.budget.charge(float(np.nansum(costs)), queries=len(idx))
        return frame.iloc[idx].reset_index(drop=True)

    def _first_rows(self, keys: list[Any], table: str, *, drop: bool) -> np.ndarray:
        """The canonical row of every key, in order (``drop``: keys with none are left
        out, else they raise). A space with a fast path for common key types overrides
        this; the result must equal ``[self._rows(k, table)[0] for k in keys]``."""
        rows = []
        for k in keys:
            try:
                rows.append(self._rows(k, table)[0])
            except NotEvaluatedError:
                if not drop:
                    raise
        return np.asarray(rows, dtype=np.int64)

    def _has(self, key: Any, table: str) -> bool:
        try:
            self._rows(key, table)
        except (InvalidArchitectureError, NotEvaluatedError):
            return False
        return True

    #: whether ``objectives`` answers per dataset (NAS-Bench-NLP) rather than per objective
    _objectives_per_dataset: bool = False

    @cached_property
    def objectives(self) -> Mapping[str, Any]:
        """Task metadata per objective - direction, bounds, best value in the table, noise
        sigma, unit, fidelities (:class:`~nasbench_bert.data.objectives.Objective`) - from the
        data release's objectives.json, else computed from the tables
        (:mod:`nasbench_bert.data.objectives`). NAS-Bench-NLP answers per dataset:
        ``bench.nlp.objectives["ptb"]["test_loss"]``."""
        from ..data.objectives import objectives_of

        return objectives_of(self, nlp=self._objectives_per_dataset)

    # -- budget --------------------------------------------------------------------------
    def reset_budget(self) -> None:
        """Zero the time and queries spent (limits stay)."""
        self.budget.reset()

    def set_budget(self, seconds: float | None) -> None:
        """Set (or with ``None`` remove) a limit on simulated training seconds."""
        from .budget import _check_limit

        self.budget.limit = _check_limit("budget", seconds, "a non-negative number of seconds or None")
