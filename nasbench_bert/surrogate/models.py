"""Surrogate model families: one interface, ``fit(X, Y) -> self`` and
``predict(X, return_std=True) -> (mean, std | None)``, both ``(n, targets)``.

* :class:`GPSurrogate` - exact GP, RBF kernel on standardised features, length-scale and
  noise by marginal likelihood on a grid (numpy only);
* :class:`RidgeSurrogate`, :class:`KNNSurrogate` - the simple baselines;
* :class:`GBTSurrogate` - gradient-boosted regression trees written here in numpy
  (histogram splits, shallow multi-output trees, row subsampling), so the default
  surrogate needs no compiled extra;
* :class:`LGBMSurrogate` - LightGBM, when it is installed (``pip install lightgbm``);
* :class:`EnsembleSurrogate` - the mean of several families; its spread joins the GP's
  variance;
* :class:`Calibrated` - wraps any family and rescales its predictive standard deviation
  so that out-of-fold standardised residuals on the training archs have unit spread
  (inner K-fold), and keeps their empirical quantiles for intervals (recalibration in
  the sense of Kuleshov et al., 2018).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError


def _standardiser(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale per column; a column constant in training keeps scale 1, so a test
    row that differs there (another hidden size or depth) stays at a finite distance."""
    sd = X.std(0)
    return X.mean(0), np.where(sd > 1e-12, sd, 1.0)


def _sqdist(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.clip((A * A).sum(1)[:, None] + (B * B).sum(1)[None] - 2 * A @ B.T, 0, None)


@dataclass
class GPSurrogate:
    """Exact GP regression with an RBF kernel on standardised features; hyper-parameters
    (length-scale, noise) chosen by marginal likelihood on a grid."""

    lengthscale: float = 0.0
    noise: float = 0.0
    name: str = "gp"

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "GPSurrogate":
        self.mu_x, self.sd_x = _standardiser(X)
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
        for k in ("_kinv32", "_z32", "_zz", "_alpha32"):
            self.__dict__.pop(k, None)
        return self

    def kinv32(self) -> np.ndarray:
        """K^-1 (training kernel plus noise, inverted from its Cholesky factor) rounded to
        float32: the one matrix :meth:`predict` uses, and what the portable file stores
        (:mod:`.portable`), so that a loaded GP predicts bit for bit like the fitted one."""
        if "_kinv32" not in self.__dict__:
            Kinv = np.linalg.solve(self.L.T, np.linalg.solve(self.L, np.eye(len(self.Z))))
            self._kinv32 = Kinv.astype(np.float32)
        return self._kinv32

    def _prepare(self) -> None:
        """The float32 copies :meth:`predict` multiplies with, made once."""
        self.kinv32()
        if "_z32" not in self.__dict__:
            self._z32 = self.Z.astype(np.float32)
            self._zz = (self._z32 * self._z32).sum(1)
            self._alpha32 = self.alpha.astype(np.float32)

    def predict(self, X: np.ndarray, return_std: bool = True, chunk: int = 20_000) -> tuple[np.ndarray, np.ndarray | None]:
        """Predictive mean and std (n, targets) of a new observation (the GP's noise term
        included). Kernel algebra runs in float32 in chunks (fast; the noise term keeps
        the variance well away from float32 round-off)."""
        self._prepare()
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
        self.mu_x, self.sd_x = _standardiser(X)
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
        self.mu_x, self.sd_x = _standardiser(X)
        self.Z, self.Y = (X - self.mu_x) / self.sd_x, Y
        return self

    def predict(self, X: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        d = _sqdist((X - self.mu_x) / self.sd_x, self.Z)
        nn = np.argsort(d, axis=1)[:, : self.k]
        vals = self.Y[nn]
        return vals.mean(1), (vals.std(1) if return_std else None)


# -- gradient-boosted trees in numpy ------------------------------------------------------------
@dataclass
class GBTSurrogate:
    """Gradient-boosted regression trees (squared loss), numpy only.

    Features are cut into at most ``bins`` quantile bins; each tree is grown level by
    level to ``max_depth`` on a ``subsample`` of the rows, choosing at every node the
    split with the largest drop in squared error (L2-regularised by ``l2``) summed over
    the standardised targets, GLUE weighted as much as the 8 tasks together. Leaves hold
    one value per target. A node with fewer than ``2 * min_leaf`` rows, or no split that
    helps, stays a leaf. ``return_std`` gives the training residuals' spread (constant);
    :class:`Calibrated` turns that into an honest interval.
    """

    n_estimators: int = 300
    learning_rate: float = 0.05
    max_depth: int = 3
    min_leaf: int = 8
    subsample: float = 0.8
    l2: float = 1.0
    bins: int = 32
    seed: int = 0
    name: str = "gbt"

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "GBTSurrogate":
        n, d = X.shape
        self.mu_y, self.sd_y = Y.mean(0), Y.std(0) + 1e-12
        T = (Y - self.mu_y) / self.sd_y
        t = T.shape[1]
        self.w_t = np.ones(t) if t == 1 else np.r_[1.0, np.full(t - 1, 1.0 / (t - 1))]
        # bin edges per feature: thresholds between consecutive distinct quantile values
        self.edges: list[np.ndarray] = []
        B = np.zeros((n, d), dtype=np.int64)
        for j in range(d):
            u = np.unique(X[:, j])
            if len(u) > self.bins:
                u = np.unique(np.quantile(X[:, j], np.linspace(0, 1, self.bins)))
            e = (u[:-1] + u[1:]) / 2 if len(u) > 1 else np.array([])
            self.edges.append(e)
            B[:, j] = np.searchsorted(e, X[:, j], side="left") if len(e) else 0
        nb = np.array([len(e) + 1 for e in self.edges])
        off = np.r_[0, np.cumsum(nb)[:-1]]
        OH = np.zeros((n, int(nb.sum())))
        OH[np.arange(n)[:, None], off[None] + B] = 1.0
        feat_of_bin = np.repeat(np.arange(d), nb)
        last_of_feat = off + nb - 1
        rng = np.random.default_rng(self.seed)
        F = np.zeros_like(T)
        nodes = 2**self.max_depth - 1
        self.feature = np.zeros((self.n_estimators, nodes), dtype=np.int64)
        self.threshold = np.full((self.n_estimators, nodes), np.inf)
        self.leaf = np.zeros((self.n_estimators, 2**self.max_depth, t))
        for k in range(self.n_estimators):
            rows = rng.random(n) < self.subsample if self.subsample < 1 else np.ones(n, bool)
            R = T - F
            node_of = np.where(rows, 0, -1)
            for depth in range(self.max_depth):
                first = 2**depth - 1
                for nd in range(first, 2 * first + 1):
                    m = node_of == nd
                    if m.sum() >= 2 * self.min_leaf:
                        split = self._best_split(OH[m], R[m], feat_of_bin, off, last_of_feat)
                    else:
                        split = None
                    if split is None:  # everything goes left, the right child stays empty
                        node_of[m] = 2 * nd + 1
                        continue
                    j, b = split
                    self.feature[k, nd], self.threshold[k, nd] = j, self.edges[j][b]
                    right = m & (X[:, j] > self.threshold[k, nd])
                    node_of[m] = 2 * nd + 1
                    node_of[right] = 2 * nd + 2
            leaf_of = node_of - nodes
            for lf in range(2**self.max_depth):
                m = leaf_of == lf
                if m.any():
                    self.leaf[k, lf] = self.learning_rate * R[m].sum(0) / (m.sum() + self.l2)
            F += self.leaf[k, self._leaves(X, k)]
        self.resid = (T - F).std(0) * self.sd_y
        return self

    def _best_split(self, OH: np.ndarray, R: np.ndarray, feat_of_bin: np.ndarray, off: np.ndarray,
                    last: np.ndarray) -> tuple[int, int] | None:
        G = OH.T @ R  # (bins, t) residual sums per bin
        C = OH.sum(0)
        Gc, Cc = np.cumsum(G, 0), np.cumsum(C)
        start_G = np.vstack([np.zeros((1, R.shape[1])), Gc])[off]  # cumulative sums before each feature
        start_C = np.r_[0, Cc][off]
        GL = Gc - start_G[feat_of_bin]
        CL = Cc - start_C[feat_of_bin]
        Gtot, Ctot = R.sum(0), len(R)
        GR, CR = Gtot - GL, Ctot - CL
        gain = ((GL**2 / (CL[:, None] + self.l2) + GR**2 / (CR[:, None] + self.l2)) * self.w_t).sum(1)
        ok = (CL >= self.min_leaf) & (CR >= self.min_leaf)
        ok[last] = False  # the last bin of a feature is no split
        if not ok.any():
            return None
        gain = np.where(ok, gain, -np.inf)
        i = int(np.argmax(gain))
        if gain[i] <= ((Gtot**2 / (Ctot + self.l2)) * self.w_t).sum() + 1e-12:
            return None
        j = int(feat_of_bin[i])
        return j, i - int(off[j])

    def _leaves(self, X: np.ndarray, k: int) -> np.ndarray:
        node = np.zeros(len(X), dtype=np.int64)
        for _ in range(self.max_depth):
            f, thr = self.feature[k, node], self.threshold[k, node]
            node = 2 * node + 1 + (X[np.arange(len(X)), f] > thr)
        return node - (2**self.max_depth - 1)

    def predict(self, X: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        out = np.zeros((len(X), self.leaf.shape[2]))
        for k in range(self.n_estimators):
            out += self.leaf[k, self._leaves(X, k)]
        m = out * self.sd_y + self.mu_y
        return m, (np.tile(self.resid, (len(X), 1)) if return_std else None)


@dataclass
class LGBMSurrogate:
    """LightGBM gradient boosting, one model per target (needs ``lightgbm``)."""

    n_estimators: int = 400
    learning_rate: float = 0.03
    num_leaves: int = 8
    min_child_samples: int = 10
    seed: int = 0
    name: str = "lgbm"

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "LGBMSurrogate":
        try:
            import lightgbm as lgb
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("the 'lgbm' surrogate family needs LightGBM: pip install lightgbm") from e
        kw = dict(n_estimators=self.n_estimators, learning_rate=self.learning_rate, num_leaves=self.num_leaves,
                  min_child_samples=self.min_child_samples, subsample=0.8, subsample_freq=1, colsample_bytree=0.8,
                  reg_lambda=1.0, random_state=self.seed, n_jobs=1, verbose=-1)
        self.models = [lgb.LGBMRegressor(**kw).fit(X, Y[:, i]) for i in range(Y.shape[1])]
        pred = np.column_stack([m.predict(X) for m in self.models])
        self.resid = (Y - pred).std(0)
        return self

    def predict(self, X: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        m = np.column_stack([mod.predict(X) for mod in self.models])
        return m, (np.tile(self.resid, (len(X), 1)) if return_std else None)


@dataclass
class EnsembleSurrogate:
    """The mean of several families' predictions. Its standard deviation combines the
    GP's predictive variance (where a GP is a member) with the members' disagreement."""

    members: tuple[str, ...] = ("gp", "gbt", "ridge")
    name: str = "ensemble"

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "EnsembleSurrogate":
        self.models = [make_family(m).fit(X, Y) for m in self.members]
        return self

    def predict(self, X: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        outs = [m.predict(X, return_std=return_std) for m in self.models]
        means = np.stack([o[0] for o in outs])
        mean = means.mean(0)
        if not return_std:
            return mean, None
        var = means.var(0) + np.mean([o[1] ** 2 for o in outs], axis=0)
        return mean, np.sqrt(var)


@dataclass
class Calibrated:
    """A family whose predictive std is recalibrated on out-of-fold residuals.

    At fit, an inner ``folds``-fold split of the training rows (identical feature rows -
    repeated archs and as-trained twins - kept together) gives out-of-fold means and
    stds. Their standardised residuals ``z = (y - mean) / std`` set, per group of
    ``group_col`` (column 1 of the surrogate features: 4 layers or 2, whose run-to-run
    noise differs fourfold) and per target, a scale ``c`` (the root mean square of z)
    applied to every later std, and their empirical quantiles, kept for
    :meth:`interval` (recalibration in the sense of Kuleshov et al., 2018: heavy-tailed
    residuals get intervals of the right coverage at every level, which one Gaussian
    scale cannot give). The base model is then refitted on all rows.
    """

    base: str = "ensemble"
    folds: int = 5
    seed: int = 0
    group_col: int | None = 1
    name: str = ""

    def _group(self, X: np.ndarray) -> np.ndarray:
        return (X[:, self.group_col] > 0.5).astype(np.int64) if self.group_col is not None else np.zeros(len(X), np.int64)

    def fit(self, X: np.ndarray, Y: np.ndarray) -> "Calibrated":
        self.name = self.name or f"{self.base}+cal"
        _, group = np.unique(np.round(X, 9), axis=0, return_inverse=True)
        group = group.reshape(-1)
        rng = np.random.default_rng(self.seed)
        fold = (rng.permutation(group.max() + 1) % self.folds)[group]
        Z = np.full(Y.shape, np.nan)
        for k in range(self.folds):
            tr, te = fold != k, fold == k
            if te.sum() == 0 or tr.sum() < 10:
                continue
            m, s = make_family(self.base).fit(X[tr], Y[tr]).predict(X[te], return_std=True)
            Z[te] = (Y[te] - m) / s
        ok = np.isfinite(Z).all(1)
        g = self._group(X)
        glob = np.sqrt(np.mean(Z[ok] ** 2, axis=0))
        self.scale, self.z = {}, {}
        for gv in (0, 1):
            sel = ok & (g == gv)
            sc = np.sqrt(np.mean(Z[sel] ** 2, axis=0)) if sel.sum() >= 20 else glob
            self.scale[gv] = sc
            self.z[gv] = np.sort((Z[sel] if sel.sum() >= 20 else Z[ok]) / sc, axis=0)
        self.model = make_family(self.base).fit(X, Y)
        return self

    def _scale(self, X: np.ndarray) -> np.ndarray:
        return np.stack([self.scale[int(gv)] for gv in (0, 1)])[self._group(X)]

    def predict(self, X: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        m, s = self.model.predict(X, return_std=return_std)
        return m, (s * self._scale(X) if return_std else None)

    def interval(self, X: np.ndarray, level: float, target: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """A central ``level`` interval from the out-of-fold residual quantiles."""
        m, s = self.predict(X)
        g = self._group(X)
        q = {gv: np.quantile(self.z[gv][:, target], [(1 - level) / 2, (1 + level) / 2]) for gv in (0, 1)}
        lo = np.array([q[int(v)][0] for v in g])
        hi = np.array([q[int(v)][1] for v in g])
        return m[:, target] + lo * s[:, target], m[:, target] + hi * s[:, target]


FAMILIES: dict[str, Callable[[], Any]] = {
    "gp": GPSurrogate, "ridge": RidgeSurrogate, "knn": KNNSurrogate, "gbt": GBTSurrogate, "lgbm": LGBMSurrogate,
    "ensemble": EnsembleSurrogate,
}


def make_family(name: str) -> Any:
    """A fresh model of family ``name``; ``"<family>+cal"`` wraps it in :class:`Calibrated`."""
    if isinstance(name, str) and name.endswith("+cal") and name[:-4] in FAMILIES:
        return Calibrated(name[:-4])
    if name not in FAMILIES:
        raise InvalidArgumentError(f"family = {name!r} is not allowed; allowed values: {sorted(FAMILIES)} (or '<family>+cal')")
    return FAMILIES[name]()


def lightgbm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("lightgbm") is not None
