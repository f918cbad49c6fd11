"""A surrogate for the 10.6M FlexiBERT archs the table does not cover.

Why a Gaussian process: with 500 evaluated archs an exact GP is cheap (one 500 x 500
Cholesky), gives an honest predictive uncertainty, and needs only numpy, so
``Benchmark.query(arch, allow_surrogate=True)`` works on the light install. Its
cross-validated quality, next to ridge regression, k-nearest neighbours and the trivial
"rank by parameter count", is measured by :func:`cross_validate` (numbers in README).

Featurisation is vectorised over *space indices*: an arch is decoded into per-layer
choices with integer arithmetic and looked up in small per-choice tables, so hundreds of
thousands of archs are featurised per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
from scipy.stats import kendalltau, spearmanr

from .sizes import flexibert_num_params
from .spaces.flexibert import (
    BLOCK_SIZES, CHOICES_PER_LAYER, LAYER_CHOICES, PER_HIDDEN, HIDDEN_SIZES, LAYER_COUNTS, OPERATIONS, Arch,
)
from .data.tables import GLUE_TASKS

TARGETS: tuple[str, ...] = ("glue", *GLUE_TASKS)
MAX_LAYERS = max(LAYER_COUNTS)
SLOT = len(OPERATIONS) + 4  # op one-hot, heads=4, ff=1024, num_ff=3, present


def _choice_table() -> np.ndarray:
    t = np.zeros((CHOICES_PER_LAYER + 1, SLOT))  # last row: an absent layer
    for c, layer in enumerate(LAYER_CHOICES):
        t[c, OPERATIONS.index((layer.operation_type, layer.operation_parameter))] = 1
        t[c, len(OPERATIONS)] = layer.num_operation_heads == 4
        t[c, len(OPERATIONS) + 1] = layer.feed_forward_dimension == 1024
        t[c, len(OPERATIONS) + 2] = layer.num_feed_forward == 3
        t[c, len(OPERATIONS) + 3] = 1
    return t


_CHOICES = _choice_table()


def _layer_params() -> tuple[np.ndarray, np.ndarray]:
    """Per hidden size: embedding params E[h] and per-choice layer params P[h, c]."""
    E, P = np.zeros(len(HIDDEN_SIZES)), np.zeros((len(HIDDEN_SIZES), CHOICES_PER_LAYER + 1))
    L0 = LAYER_CHOICES[0]
    for hi, H in enumerate(HIDDEN_SIZES):
        base = flexibert_num_params(Arch(H, (L0, L0)))
        p0 = (flexibert_num_params(Arch(H, (L0,) * 4)) - base) / 2
        E[hi] = base - 2 * p0
        for c, layer in enumerate(LAYER_CHOICES):
            P[hi, c] = flexibert_num_params(Arch(H, (layer, L0))) - base + p0
    return E, P


_E, _P = _layer_params()


def decode_indices(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Space indices -> (hidden-size index, per-slot choices with 48 = absent), vectorised."""
    idx = np.asarray(idx, dtype=np.int64)
    h, rest = np.divmod(idx, PER_HIDDEN)
    deep = rest >= BLOCK_SIZES[2]
    rest = np.where(deep, rest - BLOCK_SIZES[2], rest)
    choices = np.full((len(idx), MAX_LAYERS), CHOICES_PER_LAYER, dtype=np.int64)
    n = np.where(deep, 4, 2)
    for slot in range(MAX_LAYERS - 1, -1, -1):  # least significant digit = last layer
        live = slot < n
        rest_live, d = np.divmod(rest, CHOICES_PER_LAYER)
        # for a 2-layer arch slots 3 and 2 are absent; its digits fill slots 1 and 0
        choices[:, slot] = np.where(live, d, CHOICES_PER_LAYER)
        rest = np.where(live, rest_live, rest)
    return h, choices


def featurize_indices(idx: np.ndarray) -> np.ndarray:
    """Features of archs given by space index: per-slot one-hots, hidden size, depth and
    log parameter count (faithful)."""
    h, ch = decode_indices(idx)
    slots = _CHOICES[ch].reshape(len(h), -1)
    params = _E[h] + _P[h[:, None], ch].sum(1)
    depth = (ch < CHOICES_PER_LAYER).sum(1)
    return np.column_stack([slots, h, depth == 4, np.log(params)]).astype(np.float64)


def featurize(archs: Iterable[Any]) -> np.ndarray:
    return featurize_indices(np.fromiter((Arch.coerce(a).index for a in archs), dtype=np.int64))


# -- models ---------------------------------------------------------------------------------
@dataclass
class GPSurrogate:
    """Exact GP regression with an RBF kernel on standardised features; hyper-parameters
    (length-scale, noise) chosen by marginal likelihood on a grid."""

    lengthscale: float = 0.0
    noise: float = 0.0
    name: str = "gp"

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "GPSurrogate":
        self.mu_x, self.sd_x = X.mean(0), X.std(0) + 1e-9
        Z = (X - self.mu_x) / self.sd_x
        self.mu_y, self.sd_y = Y.mean(0), Y.std(0) + 1e-12
        T = (Y - self.mu_y) / self.sd_y
        d2 = _sqdist(Z, Z)
        best = None
        for ls in ([self.lengthscale] if self.lengthscale else [2.0, 3.0, 4.0, 6.0, 8.0, 12.0]):
            K0 = np.exp(-0.5 * d2 / ls**2)
            for nz in ([self.noise] if self.noise else [0.05, 0.1, 0.2, 0.4, 0.8]):
                L = np.linalg.cholesky(K0 + nz * np.eye(len(Z)))
                a = np.linalg.solve(L.T, np.linalg.solve(L, T[:, 0]))
                ll = -0.5 * T[:, 0] @ a - np.log(np.diag(L)).sum()
                if best is None or ll > best[0]:
                    best = (ll, ls, nz, L)
        _, self.lengthscale, self.noise, L = best
        self.Z, self.L = Z, L
        self.alpha = np.linalg.solve(L.T, np.linalg.solve(L, T))
        return self

    def predict(self, X: np.ndarray, return_std: bool = True, chunk: int = 20_000) -> tuple[np.ndarray, np.ndarray | None]:
        """Predictive mean and std (n, targets). Kernel algebra runs in float32 in chunks
        (fast; the noise term keeps the variance well away from float32 round-off)."""
        if not hasattr(self, "_kinv32"):
            Kinv = np.linalg.solve(self.L.T, np.linalg.solve(self.L, np.eye(len(self.Z))))
            self._kinv32 = Kinv.astype(np.float32)
            self._z32 = self.Z.astype(np.float32)
            self._zz = (self._z32 * self._z32).sum(1)
            self._alpha32 = self.alpha.astype(np.float32)
        means, stds = [], []
        g = np.float32(-0.5 / self.lengthscale**2)
        for s in range(0, len(X), chunk):
            Z = ((X[s : s + chunk] - self.mu_x) / self.sd_x).astype(np.float32)
            d2 = (Z * Z).sum(1)[:, None] + self._zz[None] - 2 * Z @ self._z32.T
            Ks = np.exp(np.maximum(d2, 0) * g)
            means.append((Ks @ self._alpha32).astype(np.float64) * self.sd_y + self.mu_y)
            if return_std:
                q = ((Ks @ self._kinv32) * Ks).sum(1).astype(np.float64)
                stds.append(np.sqrt(np.clip(1.0 + self.noise - q, 1e-12, None))[:, None] * self.sd_y)
        return np.vstack(means), (np.vstack(stds) if return_std else None)


@dataclass
class RidgeSurrogate:
    alpha: float = 1.0
    name: str = "ridge"

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "RidgeSurrogate":
        self.mu_x, self.sd_x = X.mean(0), X.std(0) + 1e-9
        Z = np.column_stack([(X - self.mu_x) / self.sd_x, np.ones(len(X))])
        self.w = np.linalg.solve(Z.T @ Z + self.alpha * np.eye(Z.shape[1]), Z.T @ Y)
        self.resid = (Y - Z @ self.w).std(0)
        return self

    def predict(self, X: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        Z = np.column_stack([(X - self.mu_x) / self.sd_x, np.ones(len(X))])
        m = Z @ self.w
        return m, (np.tile(self.resid, (len(X), 1)) if return_std else None)


@dataclass
class KNNSurrogate:
    k: int = 10
    name: str = "knn"

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "KNNSurrogate":
        self.mu_x, self.sd_x = X.mean(0), X.std(0) + 1e-9
        self.Z, self.Y = (X - self.mu_x) / self.sd_x, Y
        return self

    def predict(self, X: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        d = _sqdist((X - self.mu_x) / self.sd_x, self.Z)
        nn = np.argsort(d, axis=1)[:, : self.k]
        vals = self.Y[nn]
        return vals.mean(1), (vals.std(1) if return_std else None)


def _sqdist(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.clip((A * A).sum(1)[:, None] + (B * B).sum(1)[None] - 2 * A @ B.T, 0, None)


FAMILIES = {"gp": GPSurrogate, "ridge": RidgeSurrogate, "knn": KNNSurrogate}
DEFAULT_FAMILY = "gp"


def training_data(bench: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    df = bench.to_pandas()
    idx = df["space_index"].to_numpy(dtype=np.int64)
    return featurize_indices(idx), df[list(TARGETS)].to_numpy(dtype=float), df["num_params"].to_numpy(dtype=float)


def cross_validate(bench: Any, families: Sequence[str] = ("gp", "ridge", "knn"), folds: int = 5, seed: int = 0,
                   extra: dict[str, Any] | None = None) -> "Any":
    """K-fold CV on the evaluated archs (repeated archs kept in one fold, so no arch is
    both trained on and tested on): Kendall tau, Spearman rho and RMSE of GLUE on the
    held-out folds, for each family and for "rank by parameter count" on the same folds."""
    import pandas as pd

    X, Y, params = training_data(bench)
    arch = bench.to_pandas()["arch"].to_numpy()
    uniq, inv = np.unique(arch, return_inverse=True)
    rng = np.random.default_rng(seed)
    fold_of_arch = rng.permutation(len(uniq)) % folds
    fold = fold_of_arch[inv]
    models = {f: (lambda f=f: FAMILIES[f]()) for f in families}
    models.update(extra or {})
    rows = []
    for name, make in [*models.items(), ("num_params (baseline)", None)]:
        taus, rhos, rmses = [], [], []
        for k in range(folds):
            tr, te = fold != k, fold == k
            if make is None:
                pred = params[te]
                rmse = math.nan
            else:
                m = make().fit(X[tr], Y[tr])
                pred = m.predict(X[te], return_std=False)[0][:, 0]
                rmse = float(np.sqrt(np.mean((pred - Y[te, 0]) ** 2)))
            taus.append(kendalltau(pred, Y[te, 0])[0])
            rhos.append(spearmanr(pred, Y[te, 0])[0])
            rmses.append(rmse)
        rows.append({"model": name, "kendall_tau": float(np.mean(taus)), "tau_sd": float(np.std(taus)),
                     "spearman_rho": float(np.mean(rhos)), "rmse_glue": float(np.mean(rmses)), "folds": folds})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class SurrogateResult:
    """A *predicted* result for an arch the benchmark never trained."""

    arch: Arch
    glue: float
    glue_std: float
    scores: dict[str, float]
    scores_std: dict[str, float]
    model: str
    predicted: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"arch": str(self.arch), "glue": self.glue, "glue_std": self.glue_std, "scores": dict(self.scores),
                "scores_std": dict(self.scores_std), "model": self.model, "predicted": True,
                "source": "surrogate (not a trained result)"}


class Surrogate:
    """The fitted default surrogate of a benchmark: ``predict`` and ``predict_indices``."""

    def __init__(self, bench: Any, family: str = DEFAULT_FAMILY):
        if family not in FAMILIES:
            raise ValueError(f"family = {family!r} is not allowed; allowed values: {sorted(FAMILIES)}")
        X, Y, _ = training_data(bench)
        self.family = family
        self.model = FAMILIES[family]().fit(X, Y)

    def predict_indices(self, idx: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """(mean, std) arrays of shape (n, 9): glue then the 8 tasks."""
        return self.model.predict(featurize_indices(idx), return_std)

    def predict(self, arch: Any) -> SurrogateResult:
        a = Arch.coerce(arch)
        m, s = self.predict_indices(np.array([a.index]))
        return SurrogateResult(
            a, float(m[0, 0]), float(s[0, 0]),
            {t: float(m[0, i + 1]) for i, t in enumerate(GLUE_TASKS)},
            {t: float(s[0, i + 1]) for i, t in enumerate(GLUE_TASKS)}, self.family,
        )
