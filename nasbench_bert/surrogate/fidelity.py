"""The learning curves, cleaned, and a steps fidelity fitted to them.

The release's 15 curves (``BERT_benchmark_train_ablation.json``) are GLUE after 0,
50,000, ..., 1,000,000 steps of *one* 1,000,000-step pretraining run per arch (linear
learning-rate decay to step 1,000,000), finetuned from each checkpoint. Two of their 21
points are broken in the release:

* the authors' ``save_results`` lists result files by the prefix
  ``results/model.<steps>``, so ``model.50000`` also matches ``model.500000.*`` and
  ``model.100000`` matches ``model.1000000.*``. Every task score stored at 50,000 and
  100,000 steps is the 500,000 / 1,000,000-step score (the later files overwrite the
  earlier ones), for all 15 curves;
* the stored GLUE at those two steps sums all 16 matched result files and divides by
  8, i.e. it is ``glue(50k) + glue(500k)``, for 5 curves (ids 11, 12, 15, 16,
  19; values near 140). For these the true GLUE mean at 50,000 and 100,000 steps is
  recovered as the stored value minus the 500,000 / 1,000,000-step GLUE. For the other
  10 the stored GLUE equals the later checkpoint's and the earlier one is lost.

:func:`curve_table` returns the curves with these points repaired or marked missing
(it detects the duplication in the data, so a release fixed upstream passes through).
:class:`CurveFidelity` models GLUE at a checkpoint as an affine function of the arch's
benchmark GLUE (the 100,000-step run, or the surrogate's prediction of it), one per
checkpoint: ``glue(s) = a(s) + b(s) * glue_100k``, fitted on the curves that have that
checkpoint, with ``b`` shrunk toward 1 by a ridge penalty. Leave-one-curve-out error is
reported by :func:`leave_one_curve_out`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..checks import check_bench
from ..errors import InvalidArgumentError
from ..vocabulary import BenchmarkLike, CurveStatus

#: the benchmark's own pretraining length (the steps of every main result)
BENCHMARK_STEPS = 100_000


def curve_table(bench: BenchmarkLike) -> pd.DataFrame:
    """Every curve point with ``glue`` repaired or NaN, plus ``bench_glue`` (the arch's
    benchmark result), ``tasks_valid`` (False where the task scores are the later
    checkpoint's) and ``status`` ("ok", "recovered", "lost"), as the curves table
    records them (:func:`nasbench_bert.data.release.curve_point_status`)."""
    bench = check_bench(bench)
    rows = []
    flex = bench.to_pandas().set_index("id")
    for i in bench.curve_ids():
        for r in bench.curve(i).itertuples():
            rows.append({"id": int(i), "steps": int(r.steps), "glue": float(r.glue_corrected), "stored_glue": float(r.glue),
                         "status": r.status, "tasks_valid": r.status == CurveStatus.OK, "bench_glue": float(flex.loc[i, "glue"]),
                         "num_layers": int(flex.loc[i, "num_layers"]), "hidden_size": int(flex.loc[i, "hidden_size"])})
    return pd.DataFrame(rows)


@dataclass
class CurveFidelity:
    """GLUE at a pretraining checkpoint from the benchmark (100,000-step) GLUE.

    ``ridge`` shrinks each checkpoint's slope toward 1 (a pure shift), which keeps the
    per-checkpoint fits stable on 5-15 curves.
    """

    ridge: float = 5.0
    steps: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def fit(self, curves: pd.DataFrame) -> "CurveFidelity":
        ok = curves[np.isfinite(curves["glue"])]
        self.steps = np.array(sorted(ok["steps"].unique()))
        self.a, self.b, self.n, self.resid_sd = {}, {}, {}, {}
        self.anchor_range = (float(curves["bench_glue"].min()), float(curves["bench_glue"].max()))
        for s in self.steps:
            g = ok[ok["steps"] == s]
            x, y = g["bench_glue"].to_numpy(float), g["glue"].to_numpy(float)
            xm, ym = x.mean(), y.mean()
            # slope shrunk toward 1: minimise sum((y - ym) - b (x - xm))^2 + ridge (b - 1)^2
            b = (((x - xm) * (y - ym)).sum() + self.ridge) / (((x - xm) ** 2).sum() + self.ridge)
            if s == 0:
                b = 0.0  # no pretraining: the arch barely matters (finetuning from random weights)
            self.a[int(s)], self.b[int(s)], self.n[int(s)] = ym - b * xm, b, len(g)
            r = y - (self.a[int(s)] + b * x)
            self.resid_sd[int(s)] = float(np.sqrt((r**2).sum() / max(len(g) - 2, 1)))
        return self

    def predict(self, glue_100k: np.ndarray | float, steps: int) -> np.ndarray:
        """GLUE after ``steps`` pretraining steps (a checkpoint of the 1,000,000-step
        protocol) for archs whose benchmark GLUE is ``glue_100k``."""
        s = int(steps)
        if s not in self.a:
            raise InvalidArgumentError(f"steps = {steps!r} is not allowed; allowed values: {sorted(self.a)}")
        return self.a[s] + self.b[s] * np.asarray(glue_100k, dtype=float)


def leave_one_curve_out(bench: BenchmarkLike, ridge: float = 5.0) -> pd.DataFrame:
    """For every curve and checkpoint: the fidelity fitted on the other curves, its
    prediction from this arch's benchmark GLUE, the truth, and two naive predictions
    (the benchmark GLUE itself; the benchmark GLUE plus the other curves' mean shift)."""
    bench = check_bench(bench)
    curves = curve_table(bench)
    out = []
    for i in curves["id"].unique():
        train, test = curves[curves["id"] != i], curves[(curves["id"] == i) & np.isfinite(curves["glue"])]
        fid = CurveFidelity(ridge).fit(train)
        ok = train[np.isfinite(train["glue"])]
        shift = (ok["glue"] - ok["bench_glue"]).groupby(ok["steps"]).mean()
        for r in test.itertuples():
            if r.steps not in fid.a:
                continue
            out.append({"id": int(i), "steps": int(r.steps), "truth": r.glue, "status": r.status,
                        "pred": float(fid.predict(r.bench_glue, r.steps)), "naive_same": r.bench_glue,
                        "naive_shift": r.bench_glue + float(shift.get(r.steps, 0.0)), "bench_glue": r.bench_glue,
                        "train_curves": fid.n[int(r.steps)]})
    return pd.DataFrame(out)


def loco_summary(loco: pd.DataFrame, from_steps: int = 150_000) -> dict[str, float]:
    """Errors of :func:`leave_one_curve_out` from ``from_steps`` on: anchored on the
    benchmark GLUE (RMSE and median absolute error, the curve run's own noise included),
    and shape only (each held-out curve and its prediction centred on their own means,
    against a flat curve)."""
    b = loco[loco["steps"] >= from_steps].copy()
    err = b["pred"] - b["truth"]
    tc = b["truth"] - b.groupby("id")["truth"].transform("mean")
    pc = b["pred"] - b.groupby("id")["pred"].transform("mean")
    rmse = lambda e: float(np.sqrt(np.mean(np.square(e))))  # noqa: E731
    return {"rmse_anchored": rmse(err), "median_abs_anchored": float(np.median(np.abs(err))),
            "rmse_anchored_no_change": rmse(b["naive_same"] - b["truth"]),
            "rmse_anchored_shift": rmse(b["naive_shift"] - b["truth"]),
            "rmse_shape": rmse(pc - tc), "rmse_shape_flat": rmse(tc)}
