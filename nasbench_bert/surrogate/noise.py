"""The benchmark's run-to-run noise, and the ceiling it puts on any predictor.

Three kinds of re-runs are in the release:

* **exact repeats** - the 9 archs sampled twice (``bench.repeats()``), all 2-layer;
* **curve re-runs** - the 100,000-step checkpoint of a learning-curve run is a second
  run of a benchmark arch, but (a) for 10 of the 15 curves that point is lost (the
  release stored the 1,000,000-step scores there, see :mod:`.fidelity`), and (b) it is a
  checkpoint of a 1,000,000-step schedule, so its learning rate had not decayed: it is a
  re-run under a different protocol, kept apart and used only as a check;
* **as-trained twins** - archs that differ only in fields the trained model ignored
  (operation type and parameter everywhere; the feed-forward width of a layer with a
  single feed-forward layer). The ``as_trained`` model of twins is identical
  (:data:`~nasbench_bert.semantics.AS_TRAINED`, docs/errata.md section 3), so twins are
  repeated trainings of one model. They give ~200 degrees of freedom instead of 9.

:func:`noise_floor` reports each, with confidence intervals, and :func:`tau_ceiling`
turns a noise model into the expected Kendall tau of a perfect predictor of the mean
(the per-arch expected GLUE), measured the way cross-validation measures a surrogate
(mean over 5 by-arch folds).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from ..checks import check_bench
from ..errors import InvalidArgumentError
from .features import twin_keys
from .fidelity import curve_table
from ..vocabulary import BenchmarkLike

#: the ``kind`` of a pair of runs (:func:`repeat_pairs`): the same arch sampled twice by
#: the release, or a 100,000-step curve checkpoint beside the benchmark run
EXACT_REPEAT = "exact repeat"
CURVE_CHECKPOINT = "curve 100k checkpoint"


def repeat_pairs(bench: BenchmarkLike) -> pd.DataFrame:
    """Every pair of runs of one arch in the release: the exact repeats, and the
    recoverable 100,000-step curve checkpoints paired with the benchmark run."""
    bench = check_bench(bench)
    df = bench.to_pandas().set_index("id")
    rows = []
    for r in bench.repeats().itertuples():
        a, b = r.ids[:2]
        rows.append({"kind": EXACT_REPEAT, "arch": r.arch, "id": int(a), "other": f"id {b}",
                     "glue_a": float(df.loc[a, "glue"]), "glue_b": float(df.loc[b, "glue"]),
                     "num_layers": int(df.loc[a, "num_layers"])})
    c = curve_table(bench)
    for r in c[(c["steps"] == 100_000) & np.isfinite(c["glue"])].itertuples():
        rows.append({"kind": CURVE_CHECKPOINT, "arch": str(df.loc[r.id, "arch"]), "id": int(r.id),
                     "other": f"curve of id {r.id} ({r.status})", "glue_a": float(r.bench_glue), "glue_b": float(r.glue),
                     "num_layers": int(r.num_layers)})
    out = pd.DataFrame(rows)
    out["diff"] = out["glue_a"] - out["glue_b"]
    return out


def twin_residuals(bench: BenchmarkLike) -> pd.DataFrame:
    """Each run of an as-trained twin class with >= 2 runs: its deviation from the class
    mean, scaled by sqrt(k / (k - 1)) so that it has the run-to-run variance (k runs)."""
    bench = check_bench(bench)
    df = bench.to_pandas()
    key = twin_keys(df["space_index"].to_numpy())
    d = pd.DataFrame({"key": key, "glue": df["glue"].to_numpy(float), "num_layers": df["num_layers"].to_numpy(),
                      "hidden_size": df["hidden_size"].to_numpy(), "id": df["id"].to_numpy()})
    k = d.groupby("key")["glue"].transform("size")
    d = d[k >= 2].copy()
    k = k[k >= 2]
    dev = d["glue"] - d.groupby("key")["glue"].transform("mean")
    d["residual"] = dev * np.sqrt(k / (k - 1))
    d["class_size"] = k
    return d


def _sigma_ci(diffs: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """sigma of one run from pair differences (d ~ N(0, 2 sigma^2)), chi-square CI."""
    from scipy.stats import chi2

    n = len(diffs)
    ss = float((diffs**2).sum())
    s = np.sqrt(ss / (2 * n))
    lo = np.sqrt(ss / (2 * chi2.ppf((1 + level) / 2, n)))
    hi = np.sqrt(ss / (2 * chi2.ppf((1 - level) / 2, n)))
    return float(s), float(lo), float(hi)


def _boot(values: np.ndarray, stat: Callable[[np.ndarray], float], n: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    b = [stat(values[rng.integers(0, len(values), len(values))]) for _ in range(n)]
    return float(np.percentile(b, 2.5)), float(np.percentile(b, 97.5))


def twin_pairs(bench: BenchmarkLike) -> pd.DataFrame:
    """Every pair of runs within an as-trained twin class: depth and the difference."""
    bench = check_bench(bench)
    r = twin_residuals(bench)
    rows = []
    for _, g in r.groupby("key"):
        v, ids = g["glue"].to_numpy(float), g["id"].to_numpy()
        d = int(g["num_layers"].iloc[0])
        rows += [(ids[i], ids[j], d, v[i] - v[j]) for i in range(len(v)) for j in range(i + 1, len(v))]
    return pd.DataFrame(rows, columns=["id_a", "id_b", "num_layers", "diff"])


class RunNoise:
    """The run-to-run noise model, per depth (2 or 4 layers), fitted to the as-trained
    twin pairs: a Gaussian core plus rare collapses.

    * core: sigma from the median |difference| of the pairs (median |d| = 0.6745 sqrt(2)
      sigma for Gaussian runs), robust to the collapses;
    * collapses: a pair further apart than ``tail`` core sigmas holds one collapsed run;
      its |difference| is a collapse size. A run collapses with probability half the
      share of such pairs, by a size resampled from them, downwards;
    * the mixture is centred (the surrogate is fitted to runs that include collapses).

    ``sample(depth, rng)`` draws one run's deviation from its arch's expected GLUE.
    """

    def __init__(self, bench: BenchmarkLike, tail: float = 4.0):
        bench = check_bench(bench)
        p = twin_pairs(bench)
        self.core, self.p_collapse, self.sizes, self.sd = {}, {}, {}, {}
        for d, g in p.groupby("num_layers"):
            a = np.abs(g["diff"].to_numpy(float))
            core = float(np.median(a) / (0.6745 * np.sqrt(2)))
            big = a > tail * np.sqrt(2) * core
            d = int(d)
            self.core[d], self.p_collapse[d] = core, float(big.mean() / 2)
            self.sizes[d] = np.sort(a[big])
            m = self.sizes[d].mean() if big.any() else 0.0
            v = self.sizes[d].var() + m**2 if big.any() else 0.0
            self.sd[d] = float(np.sqrt(core**2 + self.p_collapse[d] * v - (self.p_collapse[d] * m) ** 2))

    def sample(self, depth: np.ndarray | int, rng: np.random.Generator) -> np.ndarray:
        depth = np.atleast_1d(np.asarray(depth))
        out = np.zeros(len(depth))
        for d in np.unique(depth):
            m = depth == d
            k = int(m.sum())
            core, p, sizes = self.core[int(d)], self.p_collapse[int(d)], self.sizes[int(d)]
            x = rng.normal(0.0, core, k)
            if len(sizes):
                hit = rng.random(k) < p
                x -= np.where(hit, sizes[rng.integers(0, len(sizes), k)], 0.0)
                x += p * sizes.mean()
            out[m] = x
        return out


def tau_ceiling(bench: BenchmarkLike, noise: Callable[[np.ndarray, np.random.Generator], np.ndarray] | None = None,
                sigma: float | None = None, reps: int = 200, folds: int = 5, seed: int = 0) -> tuple[float, float, float]:
    """Expected Kendall tau (mean over by-arch folds, as :func:`cross_validate` scores)
    between the per-arch expected GLUE and one noisy run of it: the best any predictor
    can reach. Returns (mean, 2.5 %, 97.5 %) over ``reps`` simulated benchmarks.

    The expected GLUE is unknown; it is approximated by shrinking the observed GLUE
    toward its (hidden size, depth) group mean by the reliability
    sqrt(1 - noise variance / group variance). The noise is ``noise(depth, rng)`` (e.g.
    :meth:`RunNoise.sample`) or Gaussian with ``sigma``.
    """
    bench = check_bench(bench)
    from scipy.stats import kendalltau

    mu, depth, arch, noise = _expected_glue(bench, noise, sigma, seed)
    rng = np.random.default_rng(seed)
    uniq, inv = np.unique(arch, return_inverse=True)
    taus = []
    for r in range(reps):
        obs = mu + noise(depth, rng)
        fold = (np.random.default_rng(r).permutation(len(uniq)) % folds)[inv]
        taus.append(np.mean([kendalltau(mu[fold == k], obs[fold == k])[0] for k in range(folds)]))
    t = np.array(taus)
    return float(t.mean()), float(np.percentile(t, 2.5)), float(np.percentile(t, 97.5))


def _expected_glue(bench: BenchmarkLike, noise: Callable[[np.ndarray, np.random.Generator], np.ndarray] | None,
                   sigma: float | None, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, Callable[..., np.ndarray]]:
    """The shrunken per-arch expected GLUE (see :func:`tau_ceiling`), depth, arch and the sampler."""
    df = bench.to_pandas()
    y = df["glue"].to_numpy(float)
    depth = df["num_layers"].to_numpy()
    hidden = df["hidden_size"].to_numpy()
    arch = df["arch"].to_numpy()
    if noise is None:
        if sigma is None:
            raise InvalidArgumentError("noise = None and sigma = None: give noise= (a sampler) or sigma= (a float)")
        noise = lambda d, g: g.normal(0.0, sigma, len(d))  # noqa: E731
    # noise variance per depth, for the shrinkage (a large sample of the sampler)
    var = {d: float(np.var(noise(np.full(20_000, d), np.random.default_rng(seed + 1)))) for d in np.unique(depth)}
    mu = y.copy()
    for d in np.unique(depth):
        for h in np.unique(hidden):
            m = (depth == d) & (hidden == h)
            if m.sum() < 2:
                continue
            f = np.sqrt(max(1 - var[d] / y[m].var(), 0.0))
            mu[m] = y[m].mean() + f * (y[m] - y[m].mean())
    return mu, depth, arch, noise


def rank_ceilings(bench: BenchmarkLike, reps: int = 100, seed: int = 0) -> dict[str, dict[str, tuple[float, float, float]]]:
    """The best a score of the spec or the model can reach against one noisy GLUE per
    arch, over all ids as a leaderboard ranks them: tau-b, the expected tau-b under
    random tie-breaking, and the within-cell tau (pairs of one (layers, hidden size)
    cell, where the trivial rules stop), each (mean, 2.5 %, 97.5 %) over ``reps``
    simulated benchmarks. Two noise models: Gaussian at the 9 exact repeats' sigma
    (the primary figure) and the empirical per-depth model with collapses
    (:class:`RunNoise`)."""
    bench = check_bench(bench)
    from .. import metrics

    pairs = repeat_pairs(bench)
    sigma = _sigma_ci(pairs[pairs["kind"] == EXACT_REPEAT]["diff"].to_numpy())[0]
    df = bench.to_pandas()
    cells = df["num_layers"].to_numpy(np.int64) * 1000 + df["hidden_size"].to_numpy(np.int64)
    out: dict[str, dict[str, tuple[float, float, float]]] = {}
    for name, kw in ((f"gaussian_exact_repeats_sigma_{sigma:.3f}", {"sigma": sigma}),
                     ("empirical_per_depth", {"noise": RunNoise(bench).sample})):
        mu, depth, _, noise = _expected_glue(bench, kw.get("noise"), kw.get("sigma"), seed)
        rng = np.random.default_rng(seed)
        got: dict[str, list[float]] = {"kendall_tau": [], "tau_within_cell": []}
        for _ in range(reps):
            obs = mu + noise(depth, rng)
            got["kendall_tau"].append(metrics.kendall_tau_b(mu, obs))
            got["tau_within_cell"].append(metrics.tau_within_cell(mu, obs, cells))
        out[name] = {k: (float(np.mean(v)), float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5)))
                     for k, v in got.items()}
    return out


def noise_floor(bench: BenchmarkLike, bootstrap: int = 2000, reps: int = 200, seed: int = 0) -> dict[str, Any]:
    """Run-to-run noise from every kind of re-run, with 95 % intervals, and the implied
    ceilings on Kendall tau (see the module doc). Plain floats, ready for JSON."""
    bench = check_bench(bench)
    pairs = repeat_pairs(bench)
    is_exact = pairs["kind"] == EXACT_REPEAT
    exact = pairs[is_exact]["diff"].to_numpy()
    curve = pairs[~is_exact]["diff"].to_numpy()
    s, lo, hi = _sigma_ci(exact)
    blo, bhi = _boot(exact, lambda d: float(np.sqrt((d**2).mean() / 2)), bootstrap, seed)
    tw = twin_residuals(bench)
    twin: dict[str, Any] = {}
    for d, g in tw.groupby("num_layers"):
        r = g["residual"].to_numpy()
        dof = int((g.groupby("key").size() - 1).sum())
        core = float(np.subtract(*np.percentile(r, [75, 25])) / 1.349)
        sd = float(np.sqrt((r**2).mean()))
        twin[f"{int(d)}_layers"] = {
            "runs": int(len(g)), "classes": int(g["key"].nunique()), "dof": dof, "sigma": sd,
            "sigma_ci": _boot(r, lambda v: float(np.sqrt((v**2).mean())), bootstrap, seed),
            "sigma_core_iqr": core, "tail_share": float((np.abs(r) > 3 * core).mean()),
            "quantiles": {str(q): float(np.quantile(r, q)) for q in (0.01, 0.05, 0.5, 0.95, 0.99)},
        }
    rn = RunNoise(bench)
    for d, key in ((2, "2_layers"), (4, "4_layers")):
        if key in twin and d in rn.core:
            twin[key].update({"pairs": int((twin_pairs(bench)["num_layers"] == d).sum()), "pair_core_sigma": rn.core[d],
                              "collapse_probability": rn.p_collapse[d],
                              "collapse_median_size": float(np.median(rn.sizes[d])) if len(rn.sizes[d]) else 0.0})
    ceiling_emp = tau_ceiling(bench, noise=rn.sample, reps=reps, seed=seed)
    ceiling_g = {f"{v:.3f}": tau_ceiling(bench, sigma=v, reps=max(reps // 4, 20), seed=seed)[0] for v in (s, lo, hi)}
    # every repeat pair of the release together (exact repeats and recoverable curve checkpoints)
    every = pairs["diff"].to_numpy()
    ps, plo, phi = _sigma_ci(every)
    pblo, pbhi = _boot(every, lambda d: float(np.sqrt((d**2).mean() / 2)), bootstrap, seed)
    pooled = {"pairs": int(len(every)), "sigma": ps, "sigma_ci_chi2": (plo, phi), "sigma_ci_bootstrap": (pblo, pbhi),
              "ceiling_gaussian": {f"{v:.3f}": tau_ceiling(bench, sigma=v, reps=max(reps // 4, 20), seed=seed)[0]
                                   for v in (ps, plo, phi)}}
    return {
        "exact_repeats": {"pairs": int(len(exact)), "sigma": s, "sigma_ci_chi2": (lo, hi), "sigma_ci_bootstrap": (blo, bhi),
                          "mean_abs_diff": float(np.abs(exact).mean()), "max_abs_diff": float(np.abs(exact).max())},
        "curve_checkpoints": {"pairs": int(len(curve)),
                              "sigma": float(np.sqrt((curve**2).mean() / 2)) if len(curve) else float("nan"),
                              "mean_diff_benchmark_minus_checkpoint": float(curve.mean()) if len(curve) else float("nan")},
        "every_repeat_pair": pooled,
        "as_trained_twins": twin,
        "ceiling_empirical_noise": ceiling_emp,
        "ceiling_gaussian_exact_repeats": ceiling_g,
    }
