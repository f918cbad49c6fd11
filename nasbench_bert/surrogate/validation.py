"""Validating surrogates: k-fold by arch, leave-one-region-out, calibration.

Every split keeps the runs of one arch together (the 9 repeated archs never sit on both
sides). Metrics on held-out archs: Kendall tau and Spearman rho of GLUE (mean over
folds), RMSE, mean bias, and the empirical coverage of the central 50 / 80 / 95 %
Gaussian predictive intervals (mean +- z * std). A coverage well below its level is an
over-confident surrogate.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ..checks import check_bench
from ..errors import InvalidArgumentError
from .features import surrogate_features
from .models import lightgbm_available, make_family
from ..vocabulary import BenchmarkLike

LEVELS: tuple[float, ...] = (0.5, 0.8, 0.95)


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf((1 + level) / 2))


def training_arrays(bench: BenchmarkLike, features: str = "as_trained") -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """(X, Y, table): the surrogate features, GLUE then the 8 tasks, and the table."""
    bench = check_bench(bench)
    from . import TARGETS

    df = bench.to_pandas()
    X = surrogate_features(df["space_index"].to_numpy(dtype=np.int64), features)
    return X, df[list(TARGETS)].to_numpy(dtype=float), df


def metrics(pred: np.ndarray, std: np.ndarray | None, y: np.ndarray, levels: Sequence[float] = LEVELS) -> dict[str, float]:
    from scipy.stats import kendalltau, spearmanr

    out = {"kendall_tau": float(kendalltau(pred, y)[0]), "spearman_rho": float(spearmanr(pred, y)[0]),
           "rmse_glue": float(np.sqrt(np.mean((pred - y) ** 2))), "bias": float(np.mean(pred - y))}
    for lv in levels:
        out[f"coverage_{int(round(lv * 100))}"] = (float(np.mean(np.abs(y - pred) <= _z(lv) * std))
                                                   if std is not None else math.nan)
    return out


def evaluate_model(model: Any, X: np.ndarray, y: np.ndarray, levels: Sequence[float] = LEVELS) -> dict[str, float]:
    """Metrics of a fitted model on (X, y); coverage from the model's own intervals when
    it has them (:meth:`~.models.Calibrated.interval`), else Gaussian."""
    mean, std = model.predict(X, return_std=True)
    out = metrics(mean[:, 0], None if std is None else std[:, 0], y, levels)
    if hasattr(model, "interval"):
        for lv in levels:
            lo, hi = model.interval(X, lv)
            out[f"coverage_{int(round(lv * 100))}"] = float(np.mean((y >= lo) & (y <= hi)))
    return out


def arch_folds(arch: np.ndarray, folds: int, seed: int) -> np.ndarray:
    uniq, inv = np.unique(arch, return_inverse=True)
    return (np.random.default_rng(seed).permutation(len(uniq)) % folds)[inv]


def default_families() -> tuple[str, ...]:
    fams = ("gp", "ridge", "gbt", "ensemble+cal")  # +cal changes intervals, not means: "ensemble" ranks alike
    return fams + (("lgbm",) if lightgbm_available() else ())


def cross_validate(bench: BenchmarkLike, families: Sequence[str] | None = None, folds: int = 5, seed: int = 0,
                   extra: dict[str, Callable[[], Any]] | None = None, features: str = "as_trained",
                   repeats: int = 1, ceiling: bool = True, levels: Sequence[float] = LEVELS) -> pd.DataFrame:
    """K-fold CV by arch: one row per family (and per ``extra`` factory), then the
    parameter-count baselines on the same folds (as specified, as trained), then, with
    ``ceiling``, the noise ceiling: the expected tau of a perfect predictor of each arch's
    mean GLUE under the measured run-to-run noise (:func:`~.noise.tau_ceiling`). Metric
    columns are means over folds and over ``repeats`` fold seeds; ``tau_sd`` is the spread
    of the per-repeat means (the fold-to-fold spread when ``repeats == 1``). The noise
    floor itself is in ``result.attrs["noise"]`` when ``ceiling``."""
    bench = check_bench(bench)
    X, Y, df = training_arrays(bench, features)
    arch = df["arch"].to_numpy()
    y = Y[:, 0]
    models: dict[str, Callable[[], Any] | None] = {f: (lambda f=f: make_family(f)) for f in (families or default_families())}
    models.update(extra or {})
    models["num_params_as_specified (baseline)"] = None
    models["num_params_as_trained (baseline)"] = None
    base = {"num_params_as_specified (baseline)": df["num_params_as_specified"].to_numpy(float),
            "num_params_as_trained (baseline)": df["num_params_as_trained"].to_numpy(float)}
    rows = []
    for name, make in models.items():
        per_rep: list[dict[str, float]] = []
        fold_taus = []
        for r in range(repeats):
            fold = arch_folds(arch, folds, seed + r)
            ms = []
            for k in range(folds):
                tr, te = fold != k, fold == k
                if make is None:
                    m = metrics(base[name][te], None, y[te], levels)
                    m["rmse_glue"] = m["bias"] = math.nan
                else:
                    m = evaluate_model(make().fit(X[tr], Y[tr]), X[te], y[te], levels)
                ms.append(m)
                fold_taus.append(m["kendall_tau"])
            per_rep.append({k: float(np.mean([m[k] for m in ms])) for k in ms[0]})
        row = {"model": name, **{k: float(np.mean([p[k] for p in per_rep])) for k in per_rep[0]}}
        row["tau_sd"] = float(np.std([p["kendall_tau"] for p in per_rep])) if repeats > 1 else float(np.std(fold_taus))
        row["folds"], row["repeats"] = folds, repeats
        rows.append(row)
    out = pd.DataFrame(rows)
    if ceiling:
        from .noise import RunNoise, noise_floor, tau_ceiling

        nf = noise_floor(bench, bootstrap=500, reps=100, seed=seed)
        c = tau_ceiling(bench, noise=RunNoise(bench).sample, reps=100, folds=folds, seed=seed)
        ev = nf["every_repeat_pair"]
        lo, hi = ev["sigma_ci_chi2"]
        floor = (f"noise floor: run-to-run GLUE sigma {ev['sigma']:.2f} [95% CI {lo:.2f}, {hi:.2f}] from "
                 f"{ev['pairs']} repeat pairs; tau of a perfect predictor at that sigma")
        out = pd.concat([out, pd.DataFrame([
            {"model": floor, "kendall_tau": ev["ceiling_gaussian"][f"{ev['sigma']:.3f}"], "folds": folds},
            {"model": "noise ceiling (perfect predictor of the mean; measured noise incl. collapses)",
             "kendall_tau": c[0], "tau_sd": (c[2] - c[1]) / 3.92, "folds": folds}])], ignore_index=True)
        out.attrs["noise"] = nf
    cols = ["model", "kendall_tau", "tau_sd", "spearman_rho", "rmse_glue", "bias",
            *[f"coverage_{int(round(lv * 100))}" for lv in levels], "folds", "repeats"]
    return out[[c for c in cols if c in out]]


#: the leave-one-region-out splits: name -> (train mask, test mask) from the table
def _op_present(df: pd.DataFrame, op: str) -> np.ndarray:
    return np.stack([(df[f"l{i}_op"] == op).to_numpy() for i in range(4)], axis=1).any(1)


REGIONS: dict[str, Callable[[pd.DataFrame], tuple[np.ndarray, np.ndarray]]] = {
    "hidden 128 -> 256": lambda d: ((d.hidden_size == 128).to_numpy(), (d.hidden_size == 256).to_numpy()),
    "hidden 256 -> 128": lambda d: ((d.hidden_size == 256).to_numpy(), (d.hidden_size == 128).to_numpy()),
    "2 layers -> 4 layers": lambda d: ((d.num_layers == 2).to_numpy(), (d.num_layers == 4).to_numpy()),
    "4 layers -> 2 layers": lambda d: ((d.num_layers == 4).to_numpy(), (d.num_layers == 2).to_numpy()),
    **{f"without {op} -> with {op}": (lambda d, op=op: (~_op_present(d, op), _op_present(d, op))) for op in ("SA", "LT", "DSC")},
}


def region_cv(bench: BenchmarkLike, families: Sequence[str] | None = None, regions: Sequence[str] | None = None,
              features: str = "as_trained", levels: Sequence[float] = LEVELS) -> pd.DataFrame:
    """Leave-one-region-out: train on one region of the space, test on another it never
    saw (NAS-Bench-301's check). Rows: region x family, plus the as-trained parameter
    count on the test region."""
    bench = check_bench(bench)
    X, Y, df = training_arrays(bench, features)
    rows = []
    for reg in regions or list(REGIONS):
        if reg not in REGIONS:
            raise InvalidArgumentError(f"region = {reg!r} is not allowed; allowed values: {list(REGIONS)}")
        tr, te = REGIONS[reg](df)
        y = Y[te, 0]
        p = df["num_params_as_trained"].to_numpy(float)[te]
        m = metrics(p, None, y, levels)
        rows.append({"region": reg, "model": "num_params_as_trained (baseline)", "n_train": int(tr.sum()),
                     "n_test": int(te.sum()), **m, "rmse_glue": math.nan, "bias": math.nan})
        for fam in families or default_families():
            rows.append({"region": reg, "model": fam, "n_train": int(tr.sum()), "n_test": int(te.sum()),
                         **evaluate_model(make_family(fam).fit(X[tr], Y[tr]), X[te], y, levels)})
    return pd.DataFrame(rows)
