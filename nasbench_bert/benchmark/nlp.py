"""NAS-Bench-NLP (Klyuchnikov et al. 2022): Penn Treebank and WikiText-2 training runs."""

from __future__ import annotations

import json
import math
from types import MappingProxyType
from typing import Any, Literal, Mapping

import pandas as pd

from ..checks import check_choice, is_int as _is_int
from ..data.tables import NLP_PROXY_COLUMNS, DataDir
from ..errors import DataNotFoundError, InvalidArchitectureError, InvalidArgumentError, NotEvaluatedError
from ..spaces.nlp import Recipe, isomorphic, parse_recipe, recipe_hash
from .base import TabularBenchmark
from .budget import Budget
from ..vocabulary import NLPDataset
from .results import NLPResult

NLP_DATASETS: tuple[str, ...] = ("ptb", "wikitext2")
#: PTB's training logs (optional: ``build-data --ptb-logs``)
PTB_LOGS_TABLE = "nlp_ptb_logs"
_TABLES = {"ptb": "nlp_ptb", "wikitext2": "nlp_wikitext2"}
#: the column a query of each dataset charges to the budget (PTB's runs record no time)
_COST_COLUMN = {NLPDataset.WIKITEXT2: "total_wall_time"}


class NLPBenchmark(TabularBenchmark[NLPResult]):
    """NAS-Bench-NLP: 8,794 Penn Treebank runs and 345 WikiText-2 runs.

    Keys: a recipe id (int), a log name (``log_stats_model_....json``), or a recipe (dict,
    JSON string or :class:`~nasbench_bert.spaces.Recipe`), matched up to renaming of
    intermediate nodes. PTB recipes are public only for the 275 PTB runs whose recipe id
    also has a WikiText-2 log. The "table" of the shared base is the dataset name.
    """

    _objectives_per_dataset = True  # bench.nlp.objectives["ptb"]["test_loss"]
    PROXY_BENCHMARK = "nlp"

    def __init__(self, data: DataDir, budget: Budget | None = None):
        super().__init__(data, budget)
        self._frames: dict[str, pd.DataFrame] = {}
        self._cols: dict[str, dict[str, list[Any]]] = {}
        self._index: dict[str, dict[str, dict[Any, list[int]]]] = {}

    def _frame(self, table: str) -> pd.DataFrame:
        if table not in NLP_DATASETS:
            raise InvalidArgumentError(f"dataset = {table!r} is not allowed; allowed values: {list(NLP_DATASETS)}")
        if table not in self._frames:
            t = self.data.table(_TABLES[table])
            df = t.to_pandas()
            self._frames[table] = df
            self._cols[table] = t.to_pydict()
            idx: dict[str, dict[Any, list[int]]] = {"recipe_id": {}, "log_name": {}, "recipe_hash": {}}
            for col in idx:
                for i, v in enumerate(df[col].tolist()):
                    if v is not None:
                        idx[col].setdefault(v, []).append(i)
            self._index[table] = idx
        return self._frames[table]

    @property
    def ptb(self) -> pd.DataFrame:
        return self._frame("ptb")

    def coverage(self) -> dict[str, Any]:
        """How many runs each dataset has, how many PTB runs have a public recipe and
        graph2vec features, and which WikiText-2 runs diverged."""
        ptb, wt2 = self.ptb, self.wikitext2
        return {"nlp_ptb_runs": len(ptb), "nlp_ptb_with_recipe": int(ptb["recipe"].notna().sum()),
                "nlp_ptb_with_graph2vec": int(ptb["g2v_0"].notna().sum()), "nlp_wikitext2_runs": len(wt2),
                "nlp_wikitext2_diverged": wt2.loc[wt2["diverged"], "log_name"].tolist()}

    @property
    def wikitext2(self) -> pd.DataFrame:
        return self._frame("wikitext2")

    @property
    def has_ptb_logs(self) -> bool:
        """Whether the data holds PTB's training logs (``nlp_ptb_logs``: per-epoch curves),
        which ``build-data --ptb-logs ZIP`` adds; the release's PTB files hold final results only."""
        return self.data.has_table(PTB_LOGS_TABLE)

    @property
    def ptb_logs(self) -> pd.DataFrame:
        """PTB's training logs, one row per run with the WikiText-2 table's columns (per-epoch
        ``train_losses``, ``val_losses``, ``test_losses``, ``wall_times``). Data built
        without them raises :class:`~nasbench_bert.DataNotFoundError` naming the command."""
        if not self.has_ptb_logs:
            raise DataNotFoundError(
                f"the data in {self.data.path} holds no PTB training logs (the release's PTB files hold final results "
                "only); build them in from NAS-Bench-NLP's train_logs_single_run/logs.zip with `nasbench-bert build-data "
                f"--force --ptb-logs ZIP --out {self.data.path.parent}`")
        if PTB_LOGS_TABLE not in self._frames:
            self._frames[PTB_LOGS_TABLE] = self.data.table(PTB_LOGS_TABLE).to_pandas()
        return self._frames[PTB_LOGS_TABLE]

    def __len__(self) -> int:
        return len(self.ptb)

    def __contains__(self, key: Any) -> bool:
        return self._has(key, "ptb")

    def _rows(self, key: Any, table: str) -> list[int]:
        df = self._frame(table)
        idx = self._index[table]
        if _is_int(key):
            rows = idx["recipe_id"].get(int(key))
            what = f"recipe_id {key}"
        elif isinstance(key, str) and key.startswith("log_stats_model_"):
            rows = idx["log_name"].get(key)
            what = f"log {key!r}"
        elif isinstance(key, (str, bytes, Mapping, Recipe)):
            recipe = parse_recipe(key)
            h = recipe_hash(recipe)
            rows = [i for i in idx["recipe_hash"].get(h, []) if isomorphic(recipe, self._cols[table]["recipe"][i])]
            what = f"this recipe (hash {h})"
        else:
            raise InvalidArchitectureError(
                f"cannot interpret {type(key).__name__} as a NAS-Bench-NLP key; expected a recipe id (int), "
                "a log name ('log_stats_model_...json') or a recipe (dict or JSON string)")
        if not rows:
            n_known = int(df["recipe"].notna().sum())
            raise NotEvaluatedError(
                f"{what} has no {table} run. {table} holds {len(df):,} runs, {n_known:,} of them with a public "
                f"recipe; list them with bench.nlp.{table}")
        return rows

    def _cost(self, result: NLPResult) -> float | None:
        return result.wall_time

    def query(self, key: Any, dataset: Literal["ptb", "wikitext2"] = "ptb", *, charge: bool = True) -> NLPResult:
        """The run of ``key`` on ``dataset``.

        When several runs match (the same cell sampled twice, or repeated training),
        the earliest log is returned and :attr:`NLPResult.other_runs` names the rest;
        :meth:`query_all` returns them all.
        """
        return self._lookup(key, dataset, charge=charge)

    def query_all(self, key: Any, dataset: Literal["ptb", "wikitext2"] = "ptb") -> list[NLPResult]:
        return self._lookup_all(key, dataset)

    def query_many(self, keys: Any, dataset: Literal["ptb", "wikitext2"] = "ptb", *,
                   missing: Literal["raise", "drop"] = "raise", charge: bool = True) -> pd.DataFrame:
        """Rows of ``dataset`` for many keys at once, in the given order."""
        check_choice("dataset", dataset, NLP_DATASETS)  # before the cost lookup, which needs a hashable name
        return self._lookup_many(keys, dataset, missing=missing, charge=charge, cost_column=_COST_COLUMN.get(dataset))

    def to_syne_tune(self, dataset: Literal["ptb", "wikitext2"] = "ptb") -> Any:
        """This benchmark's ``dataset`` as a syne-tune ``Blackbox`` (``[hpo]`` extra), as
        :func:`nasbench_bert.integrations.syne_tune.nlp_to_syne_tune` builds it."""
        from .base import integration

        return integration("syne_tune_nlp")(self, dataset)

    def _build(self, table: str, i: int, others: tuple[int, ...]) -> NLPResult:
        c = self._cols[table]
        names = tuple(c["log_name"][j] for j in others)
        recipe = json.loads(c["recipe"][i]) if c["recipe"][i] is not None else None
        if table == NLPDataset.PTB:
            loss = c["test_loss"][i]
            return NLPResult(
                dataset="ptb", log_name=c["log_name"][i], recipe_id=c["recipe_id"][i], test_loss=loss,
                num_params=c["num_params"][i], diverged=math.isnan(loss), status="OK" if not math.isnan(loss) else "missing",
                recipe=recipe, perplexity=c["perplexity"][i], bits_per_word=c["bits_per_word"][i],
                proxies=MappingProxyType({k: c[k][i] for k in NLP_PROXY_COLUMNS.values()}), other_runs=names)
        loss = c["final_test_loss"][i]
        return NLPResult(
            dataset="wikitext2", log_name=c["log_name"][i], recipe_id=c["recipe_id"][i], test_loss=loss,
            num_params=c["num_params"][i], diverged=c["diverged"][i], status=c["status"][i], recipe=recipe,
            perplexity=math.exp(loss) if not math.isnan(loss) else math.nan, bits_per_word=loss / math.log(2),
            curves=MappingProxyType({k: tuple(c[k][i]) for k in ("train_losses", "val_losses", "test_losses", "wall_times")}),
            hparams=MappingProxyType({k[3:]: c[k][i] for k in c if k.startswith("hp_")}),
            wall_time=c["total_wall_time"][i], other_runs=names)
