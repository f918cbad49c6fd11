"""Learning curves: the release's train ablation, GLUE after 0 ... 1,000,000 steps.

These are separate re-pretraining runs of a few benchmark archs (the paper's train
ablation), so their 100,000-step point differs from the benchmark's main result by
run-to-run noise, and they live apart from the final results: :meth:`Benchmark.query`
answers from the final table only, and a point on a curve is asked for by name
(:meth:`Benchmark.curve_point`).

The release's 50,000- and 100,000-step points are damaged (the authors' result
collection matched ``model.50000`` to the 500,000-step files and ``model.100000`` to the
1,000,000-step ones). Each point carries a ``status``: ``ok``; ``recovered``
(``glue_corrected`` holds the checkpoint's GLUE, its task scores are the later
checkpoint's, so a result built from it has NaN task scores); or ``lost`` (refused).
See docs/errata.md.
"""

from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType

import pandas as pd

from ..checks import is_int
from ..data.tables import GLUE_TASKS, DataDir
from ..errors import InvalidArgumentError, NotEvaluatedError
from ..vocabulary import CurveStatus
from .results import FlexiBERTResult

#: the table of curve points
CURVES_TABLE = "flexibert_curves"
#: the pretraining steps of the benchmark's final results
FINAL_STEPS = 100_000


class LearningCurves:
    """The curve table of one data folder, converted once."""

    def __init__(self, data: DataDir):
        self._data = data
        self._frame: pd.DataFrame | None = None

    def _all(self) -> pd.DataFrame:
        if self._frame is None:  # converted on first use: loading the benchmark stays cheap
            self._frame = self._data.table(CURVES_TABLE).to_pandas()
        return self._frame

    def ids(self) -> list[int]:
        """Ids of the archs that have a learning curve."""
        return sorted(set(self._data.table(CURVES_TABLE).column("id").to_pylist()))

    def frame(self, ident: int) -> pd.DataFrame:
        """The curve of benchmark id ``ident`` (a copy), one row per checkpoint."""
        c = self._all()
        out = c[c["id"] == ident].reset_index(drop=True)
        if out.empty:
            raise NotEvaluatedError(f"arch id {ident} has no learning curve; archs with curves: {self.ids()}")
        return out

    def point(self, final: FlexiBERTResult, steps: int) -> FlexiBERTResult:
        """The result of ``final``'s arch after ``steps`` pretraining steps, on its curve:
        the same arch and hyper-parameters, the checkpoint's scores, and the training time
        scaled to the steps. A lost point raises instead of handing out another
        checkpoint's numbers."""
        if final.id is None:
            raise NotEvaluatedError(f"{final.arch} is not a benchmark arch, so it has no learning curve")
        c = self.frame(final.id)
        if not is_int(steps) or (c["steps"] == steps).sum() == 0:
            raise InvalidArgumentError(f"steps = {steps!r} is not on the curve; allowed values: {c['steps'].tolist()}")
        rec = c[c["steps"] == steps].iloc[0]
        if rec["status"] == CurveStatus.LOST:
            ok = c.loc[c["status"] != CurveStatus.LOST, "steps"].tolist()
            raise NotEvaluatedError(
                f"steps = {steps}: the release's {steps:,}-step point of arch id {final.id} holds a later checkpoint's "
                f"scores (a file-name collision in the authors' result collection; see docs/errata.md); points with a "
                f"result: {ok}")
        tasks_valid = rec["status"] == CurveStatus.OK  # a recovered point's task scores are the later checkpoint's
        return dataclasses.replace(
            final, scores=MappingProxyType({t: float(rec[t]) if tasks_valid else math.nan for t in GLUE_TASKS}),
            glue=float(rec["glue_corrected"]), time_to_train=final.time_to_train * steps / FINAL_STEPS,
            pretrain_steps=int(steps), source="curve", other_ids=(), hardware=MappingProxyType({}))
