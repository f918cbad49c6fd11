"""Scoring proxies against trained results: Kendall tau, Spearman rho, bootstrap CIs,
top-k precision, and the correlation left once parameter count is controlled for.

Signs are kept honest: each proxy is oriented by its declared ``higher_is_better`` and
each target by its own (GLUE up, loss down), so a positive tau always means "the proxy
ranks archs the way training did"; nothing is ``abs()``-ed.

This module needs no torch: scoring the release's stored proxies (:func:`score_stored`)
works on the light install. What differs per benchmark - its targets, how rows find
them, its stored proxies and the size to control for - is one :class:`ScoringSpace`
each (:data:`SCORING_SPACES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, spearmanr

from .checks import check_bench, check_choice, check_int, check_names, check_real, check_seed
from .data.tables import FLEXIBERT_PROXY_COLUMNS, GLUE_TASKS, NLP_PROXY_COLUMNS
from .errors import InvalidArgumentError
from .proxies import registry  # torch-free: the declarations, not the proxies
from .vocabulary import BenchmarkLike

#: targets and whether higher is better
TARGETS: dict[str, bool] = {"glue": True, **{t: True for t in GLUE_TASKS}, "test_loss": False, "wikitext2_loss": False}
#: stored columns whose orientation differs from "higher is better"
LOWER_IS_BETTER: set[str] = set()


def _orientation(name: str, space: str) -> bool:
    """A proxy's declared orientation when it is registered (live proxies), else
    higher-is-better unless listed in :data:`LOWER_IS_BETTER` (stored columns)."""
    reg = registry.REGISTRY.get(space, {})
    if name in reg:
        return reg[name].higher_is_better
    return name not in LOWER_IS_BETTER


def partial_tau(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    """Partial Kendall tau of x and y controlling for z (Kendall 1942)."""
    txy, tyz, txz = (kendalltau(a, b)[0] for a, b in ((x, y), (y, z), (x, z)))
    den = math.sqrt(max((1 - txz ** 2) * (1 - tyz ** 2), 0.0))
    return float((txy - txz * tyz) / den) if den > 0 else float("nan")


def strata_tau(x: np.ndarray, y: np.ndarray, z: np.ndarray, n_strata: int = 5) -> float:
    """Mean Kendall tau within quantile strata of z, weighted by stratum size."""
    edges = np.unique(np.quantile(z, np.linspace(0, 1, n_strata + 1)))
    idx = np.clip(np.searchsorted(edges, z, side="right") - 1, 0, len(edges) - 2)
    num = den = 0.0
    for s in np.unique(idx):
        m = idx == s
        if m.sum() >= 3:
            t = kendalltau(x[m], y[m])[0]
            if np.isfinite(t):
                num += t * m.sum()
                den += m.sum()
    return num / den if den else float("nan")


def top_k_precision(x: np.ndarray, y: np.ndarray, frac: float = 0.1) -> float:
    """Share of the true top ``frac`` (by y) that the proxy also puts in its top ``frac``."""
    k = max(1, int(round(frac * len(x))))
    return len(set(np.argsort(-x)[:k]) & set(np.argsort(-y)[:k])) / k


def _bootstrap(x: np.ndarray, y: np.ndarray, n: int, seed: int) -> tuple[float, float, float, float]:
    if n <= 0:
        return (math.nan,) * 4
    rng = np.random.default_rng(seed)
    taus, rhos = [], []
    for _ in range(n):
        i = rng.integers(0, len(x), len(x))
        taus.append(kendalltau(x[i], y[i])[0])
        rhos.append(spearmanr(x[i], y[i])[0])
    t, r = np.array(taus, dtype=float), np.array(rhos, dtype=float)
    return (float(np.nanpercentile(t, 2.5)), float(np.nanpercentile(t, 97.5)),
            float(np.nanpercentile(r, 2.5)), float(np.nanpercentile(r, 97.5)))


def score(
    values: pd.DataFrame,
    target: str | pd.Series = "glue",
    *,
    proxies: Iterable[str] | None = None,
    space: str = "flexibert",
    control: str | None = "num_params",
    bootstrap: int = 200,
    top: float = 0.1,
    seed: int = 0,
    bench: BenchmarkLike | None = None,
) -> pd.DataFrame:
    """Score proxy columns of ``values`` against ``target``.

    ``target`` is a column of ``values``, a Series aligned with it, or a target name
    looked up in the benchmark: ``"glue"`` or a GLUE task (FlexiBERT rows need ``id``
    or ``arch``), ``"test_loss"`` (PTB; rows need ``log_name`` or ``recipe_id``) or
    ``"wikitext2_loss"`` (rows need ``log_name``). Rows where the proxy or the target is
    not finite are left out of that proxy's score (``n`` says how many remain).

    ``control`` names the size column to control for (from ``values``, else the
    benchmark's column of that name, e.g. ``"num_params_as_trained"`` - the parameter
    count of the model that was trained - or ``"num_params"``, the arch as specified):
    ``partial_tau`` and ``strata_tau`` then say what the proxy adds beyond size.
    """
    if not isinstance(values, pd.DataFrame) or values.empty:
        raise InvalidArgumentError("values must be a non-empty pandas DataFrame of proxy columns")
    scoring_space(space)
    if not isinstance(target, (str, pd.Series)):
        raise InvalidArgumentError(f"target = {target!r} is not allowed; allowed: a target name {sorted(TARGETS)}, a column "
                                   "name of values, or a pandas Series aligned with values")
    if control is not None and not isinstance(control, str):
        raise InvalidArgumentError(f"control = {control!r} is not allowed; allowed: a size column name or None")
    if proxies is not None:
        proxies = check_names("proxies", proxies)
    bootstrap = check_int("bootstrap", bootstrap, low=0, high=100_000)
    top = check_real("top", top, low=0.0, high=1.0, low_open=True)
    seed = check_seed("seed", seed, none=False)
    df = values.reset_index(drop=True).copy()
    if isinstance(target, pd.Series):
        if len(target) != len(df):
            raise InvalidArgumentError(f"target is a Series of {len(target)} values; values has {len(df)} rows")
        y_raw, tname, higher = target.reset_index(drop=True).to_numpy(dtype=float), str(target.name or "target"), True
    else:
        if target not in TARGETS and target not in df:
            raise InvalidArgumentError(f"target = {target!r} is not allowed; allowed values: {sorted(TARGETS)} or a column of values")
        tname, higher = target, TARGETS.get(target, True)
        y_raw = _numeric(df, target, "target") if target in df else _lookup(df, target, bench, space)
    y = y_raw if higher else -y_raw
    z_raw = None
    if control is not None:
        if control in df:
            z_raw = _numeric(df, control, "control")
        else:
            try:
                z_raw = _lookup(df, control, bench, space) if control.startswith("num_params") else None
            except (ValueError, KeyError):
                z_raw = None
    skip = {"id", "arch", "key", "semantics", "seed", "batch", "dtype", "error", "seconds", "seconds_pass",
            "seconds_proxies", "tokenizer", "proxy_versions", "cached", "log_name", "recipe_id", "experiment_id",
            tname, "init_time", "perplexity", "bits_per_word", "recipe", "recipe_hash", "num_trainable_params"}
    cols = list(proxies) if proxies is not None else [
        c for c in df.columns if c not in skip and "__" not in c and pd.api.types.is_numeric_dtype(df[c])
        and not c.startswith("g2v_")]
    out = []
    for c in cols:
        if c not in df:
            raise InvalidArgumentError(f"proxy = {c!r} is not a column of values; allowed values: {[x for x in df.columns if '__' not in x]}")
        x = _numeric(df, c, "proxy") * (1 if _orientation(c, space) else -1)
        m = np.isfinite(x) & np.isfinite(y)
        if z_raw is not None:
            mz = m & np.isfinite(z_raw)
        n = int(m.sum())
        row: dict[str, Any] = {"proxy": c, "target": tname, "n": n, "n_nonfinite": int((~np.isfinite(x)).sum()),
                               "higher_is_better": _orientation(c, space)}
        if n < 3 or np.ptp(x[m]) == 0 or np.ptp(y[m]) == 0:
            row.update(kendall_tau=math.nan, spearman_rho=math.nan,
                       note=(f"no correlation: only {n} arch(s) with finite proxy and target values (3 needed)" if n < 3
                             else "no correlation: the proxy is constant over these archs" if np.ptp(x[m]) == 0
                             else "no correlation: the target is constant over these archs"))
        else:
            row["kendall_tau"] = float(kendalltau(x[m], y[m])[0])
            row["spearman_rho"] = float(spearmanr(x[m], y[m])[0])
            lo, hi, rlo, rhi = _bootstrap(x[m], y[m], bootstrap, seed)
            row.update(tau_ci_low=lo, tau_ci_high=hi, rho_ci_low=rlo, rho_ci_high=rhi,
                       top10_precision=top_k_precision(x[m], y[m], top))
            if z_raw is not None and mz.sum() >= 3 and c != control:
                row["partial_tau_given_params"] = partial_tau(x[mz], y[mz], z_raw[mz])
                row["strata_tau_given_params"] = strata_tau(x[mz], y[mz], z_raw[mz])
        out.append(row)
    cols_order = ["proxy", "target", "n", "kendall_tau", "spearman_rho", "tau_ci_low", "tau_ci_high", "rho_ci_low",
                  "rho_ci_high", "top10_precision", "partial_tau_given_params", "strata_tau_given_params",
                  "higher_is_better", "n_nonfinite", "note"]
    res = pd.DataFrame(out)
    return res[[c for c in cols_order if c in res]]


def _numeric(df: pd.DataFrame, column: str, role: str) -> np.ndarray:
    try:
        return df[column].to_numpy(dtype=float)
    except (ValueError, TypeError):
        raise InvalidArgumentError(f"{role} = {column!r}: the column holds non-numbers (dtype {df[column].dtype})") from None


def _bench(bench: BenchmarkLike | None) -> BenchmarkLike:
    """``bench``, checked; without one the benchmark is loaded (``Benchmark.load``: the
    documented data resolution), which every public function here says it does."""
    if bench is None:
        from .benchmark import Benchmark

        return Benchmark.load(progress=False)
    return check_bench(bench)


def _flexibert_lookup(df: pd.DataFrame, target: str, bench: BenchmarkLike) -> np.ndarray:
    flex = _bench(bench).to_pandas()
    if "id" in df:
        m = dict(zip(flex.id, flex[target]))
        return np.array([m.get(k, np.nan) for k in df["id"]], dtype=float)
    if "arch" in df:
        m = flex.groupby("arch")[target].mean().to_dict()  # repeated archs: mean of their runs
        return np.array([m.get(k, np.nan) for k in df["arch"]], dtype=float)
    raise InvalidArgumentError(f"target = {target!r} needs an 'id' or 'arch' column in values")


def _nlp_lookup(df: pd.DataFrame, target: str, bench: BenchmarkLike) -> np.ndarray:
    nlp = _bench(bench).nlp
    table = nlp.wikitext2 if target == "wikitext2_loss" else nlp.ptb
    col = {"wikitext2_loss": "final_test_loss"}.get(target, target)  # NaN for the 4 diverged runs
    if "log_name" in df:
        m = dict(zip(table.log_name, table[col]))
        return np.array([m.get(k, np.nan) for k in df.log_name], dtype=float)
    if "recipe_id" in df:
        m = table.groupby("recipe_id")[col].mean().to_dict()
        return np.array([m.get(k, np.nan) for k in df.recipe_id], dtype=float)
    raise InvalidArgumentError(f"target = {target!r} needs a 'log_name' or 'recipe_id' column in values")


def _flexibert_stored(bench: BenchmarkLike) -> pd.DataFrame:
    bench = _bench(bench)
    p = bench.data.table("flexibert_proxies").to_pandas()
    if "activation_distance_hook_multiplicity" in p:  # the per-pass value (docs/errata.md)
        p["activation_distance_dedup"] = p["activation_distance"] / p.pop("activation_distance_hook_multiplicity")
    f = bench.to_pandas()[["id", "glue", "num_params", "num_params_as_trained"]].rename(
        columns={"num_params": "num_params_faithful"})
    return p.merge(f, on="id")


@dataclass(frozen=True)
class ScoringSpace:
    """What scoring needs to know about one benchmark."""

    name: str
    #: target names this space's rows can be looked up against
    targets: tuple[str, ...]
    #: rows -> target values, from the benchmark
    lookup: Callable[[pd.DataFrame, str, Any], np.ndarray]
    #: the release's stored proxy values with identifying columns and the target
    stored: Callable[[Any], pd.DataFrame]
    stored_target: str
    stored_columns: Callable[[pd.DataFrame], list[str]]
    #: the size the stored scores are controlled for
    control: str


SCORING_SPACES: dict[str, ScoringSpace] = {
    "flexibert": ScoringSpace(
        "flexibert", ("glue", *GLUE_TASKS, "num_params", "num_params_seed_compat", "num_params_as_trained"),
        _flexibert_lookup, _flexibert_stored, "glue",
        lambda df: [*FLEXIBERT_PROXY_COLUMNS.values(), *(["activation_distance_dedup"] if "activation_distance_dedup" in df else []),
                    "num_params_faithful", "num_params_as_trained"],
        "num_params_as_trained"),
    "nlp": ScoringSpace(
        "nlp", ("test_loss", "wikitext2_loss", "num_params"), _nlp_lookup, lambda bench: _bench(bench).nlp.ptb.copy(),
        "test_loss", lambda df: ["num_params", *NLP_PROXY_COLUMNS.values()], "num_params"),
}


def scoring_space(space: Any) -> ScoringSpace:
    """The scoring space named ``space`` (``"flexibert"`` or ``"nlp"``)."""
    return SCORING_SPACES[check_choice("space", space, tuple(SCORING_SPACES))]


def _lookup(df: pd.DataFrame, target: str, bench: BenchmarkLike, space: str = "flexibert") -> np.ndarray:
    sp = SCORING_SPACES["nlp"] if target in ("test_loss", "wikitext2_loss") or (
        target == "num_params" and ("log_name" in df or "recipe_id" in df)) else scoring_space(space)
    return sp.lookup(df, target, bench)


def stored_values(space: str, bench: BenchmarkLike | None = None) -> tuple[pd.DataFrame, str]:
    """The release's stored proxy values with their identifying columns, and the target."""
    sp = scoring_space(space)
    return sp.stored(bench), sp.stored_target


def score_stored(space: str = "flexibert", *, bench: BenchmarkLike | None = None, bootstrap: int = 200, seed: int = 0) -> pd.DataFrame:
    """Score every stored proxy of the release against its benchmark's target
    (FlexiBERT: GLUE over the 500 ids, controlling for the as-trained size;
    NAS-Bench-NLP: -PTB test loss over its runs)."""
    sp = scoring_space(space)
    df = sp.stored(bench)
    return score(df, sp.stored_target, proxies=sp.stored_columns(df), space=space, control=sp.control,
                 bootstrap=bootstrap, seed=seed, bench=bench)


def to_markdown(scores: pd.DataFrame, digits: int = 3) -> str:
    """A Markdown table of a score() result."""
    cols = [c for c in ("proxy", "n", "kendall_tau", "tau_ci_low", "tau_ci_high", "spearman_rho", "top10_precision",
                        "partial_tau_given_params") if c in scores]
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = ""
    for _, r in scores[cols].iterrows():
        body += "| " + " | ".join(f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in r) + " |\n"
    return head + body


def scatter(values: pd.DataFrame, proxy: str, target: str | pd.Series, path: str | Path, *, space: str = "flexibert",
            bench: BenchmarkLike | None = None, logx: bool | None = None) -> Path:
    """Scatter plot of a proxy against a target with tau and rho in the title (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = score(values, target, proxies=[proxy], space=space, control=None, bootstrap=0, bench=bench).iloc[0]
    df = values.reset_index(drop=True)
    y = target.to_numpy(dtype=float) if isinstance(target, pd.Series) else (
        df[target].to_numpy(dtype=float) if target in df else _lookup(df, target, bench, space))
    x = df[proxy].to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(5, 4), dpi=120)
    ax.scatter(x, y, s=6, alpha=0.6)
    if logx or (logx is None and np.nanmin(x) > 0 and np.nanmax(x) / max(np.nanmin(x), 1e-300) > 1e3):
        ax.set_xscale("log")
    ax.set_xlabel(proxy)
    ax.set_ylabel(target if isinstance(target, str) else str(target.name))
    ax.set_title(f"{proxy}: Kendall τ = {s.kendall_tau:.3f}, Spearman ρ = {s.spearman_rho:.3f} (n = {s.n})", fontsize=8)
    fig.tight_layout()
    from .atomic import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")
    plt.close(fig)
    return path


def paper_figures(out: str | Path, bench: BenchmarkLike | None = None) -> list[Path]:
    """The paper's Figures 1-3 from the stored tables: hidden covariance (layer 1) vs PTB
    test loss, and number of parameters and head confidence (raw, normalised) vs GLUE."""
    out = Path(out)
    nlp, _ = stored_values("nlp", bench)
    flex, _ = stored_values("flexibert", bench)
    return [
        scatter(nlp, "hidden_covariance_layer1", "test_loss", out / "fig1_nlp_hidden_covariance.png", space="nlp", bench=bench, logx=False),
        scatter(flex, "num_params_seed_compat", "glue", out / "fig2_flexibert_num_params.png", bench=bench),
        scatter(flex, "head_confidence", "glue", out / "fig3a_flexibert_head_confidence.png", bench=bench),
        scatter(flex, "head_confidence_norm", "glue", out / "fig3b_flexibert_head_confidence_norm.png", bench=bench),
    ]
