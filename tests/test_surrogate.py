"""The surrogate: features, families, calibration, noise floor, noisy oracle, fidelity,
and the two proxies added for the leaderboard."""

from __future__ import annotations

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from nasbench_bert import FLEXIBERT_SPACE, search
from nasbench_bert.semantics import AS_SPECIFIED, AS_TRAINED, AUTHORS
from nasbench_bert.sizes import flexibert_num_params
from nasbench_bert.spaces.flexibert import SPACE_SIZE, Arch, Layer, arch_at
from nasbench_bert.surrogate import (
    Calibrated, GBTSurrogate, RidgeSurrogate, cross_validate, feature_names, surrogate_features,
)
from nasbench_bert.surrogate.features import class_representatives, flops_indices, plan_flops, sept_value, twin_keys
from nasbench_bert.surrogate.fidelity import CurveFidelity, curve_table, leave_one_curve_out
from nasbench_bert.surrogate.noise import RunNoise, noise_floor, repeat_pairs, tau_ceiling, twin_residuals


@pytest.fixture(scope="module")
def idx():
    return np.random.default_rng(0).integers(0, SPACE_SIZE, 300)


# -- features -----------------------------------------------------------------------------------
def test_features_carry_the_analytic_counts(idx):
    F = surrogate_features(idx)
    names = feature_names()
    assert F.shape == (len(idx), len(names))
    full = surrogate_features(idx, "full")
    assert full.shape[1] == len(feature_names("full")) > F.shape[1]
    for i, j in enumerate(idx[:60]):
        a = arch_at(int(j))
        assert math.exp(F[i, names.index("log_params_as_trained")]) == pytest.approx(flexibert_num_params(a, AS_TRAINED), rel=1e-12)
        assert math.exp(full[i, -1]) == pytest.approx(flexibert_num_params(a, AS_SPECIFIED), rel=1e-12)
        assert math.exp(F[i, names.index("log_flops_as_trained")]) == pytest.approx(plan_flops(AS_TRAINED.plan(a)), rel=1e-12)
    with pytest.raises(ValueError, match="features"):
        surrogate_features(idx, "everything")


def test_flops_and_sept_equal_the_torch_definitions(idx):
    pytest.importorskip("torch")
    from nasbench_bert.models.flops import flexibert_flops
    from nasbench_bert.proxies.bert import sept_value as sept_torch

    for j in idx[:40]:
        a = arch_at(int(j))
        for sem in (AS_TRAINED, AS_SPECIFIED, AUTHORS):
            assert plan_flops(sem.plan(a), 2, 32) == flexibert_flops(a, 2, 32, sem)
        assert sept_value([a.hidden_size] * a.num_layers, 128) == pytest.approx(sept_torch([a.hidden_size] * a.num_layers, 128))
    assert flops_indices(idx[:1], AS_SPECIFIED)[0] == plan_flops(AS_SPECIFIED.plan(arch_at(int(idx[0]))))


def test_twins_are_the_same_trained_model(idx):
    keys = twin_keys(idx)
    for i in range(0, 200, 7):
        for k in range(i + 1, 200, 13):
            a, b = arch_at(int(idx[i])), arch_at(int(idx[k]))
            same = AS_TRAINED.plan(a).layers == AS_TRAINED.plan(b).layers and a.hidden_size == b.hidden_size
            assert (keys[i] == keys[k]) == same
    a = Arch(256, (Layer("SA", "SDP", 4, 512, 1), Layer("DSC", 9, 2, 1024, 3)))
    b = Arch(256, (Layer("LT", "DFT", 4, 1024, 1), Layer("SA", "WMA", 2, 1024, 3)))  # ops and a dead F differ
    c = Arch(256, (Layer("SA", "SDP", 4, 512, 1), Layer("DSC", 9, 2, 512, 3)))  # a live F differs
    k = twin_keys(np.array([a.index, b.index, c.index]))
    assert k[0] == k[1] != k[2]
    reps = class_representatives()
    assert len(np.unique(twin_keys(reps))) == 2 * (6**2 + 6**4) == 2664


# -- families ---------------------------------------------------------------------------------------
def test_gbt_learns_an_interaction_and_is_seeded():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (400, 6)).astype(float)
    y = 3 * X[:, 0] * X[:, 1] - 2 * X[:, 2] + rng.normal(0, 0.1, 400)
    Y = np.column_stack([y, -y])
    a = GBTSurrogate(seed=3).fit(X[:300], Y[:300])
    m, s = a.predict(X[300:])
    assert m.shape == s.shape == (100, 2)
    assert np.sqrt(np.mean((m[:, 0] - y[300:]) ** 2)) < 0.3
    assert np.allclose(m, GBTSurrogate(seed=3).fit(X[:300], Y[:300]).predict(X[300:])[0])
    assert not np.allclose(m, GBTSurrogate(seed=4).fit(X[:300], Y[:300]).predict(X[300:])[0])


def test_recalibration_fixes_a_wrong_std():
    """Ridge's std is one number for all rows; noise 8x larger in one group makes it
    over-confident there and under-confident in the other. Recalibrated per group, the
    80 % intervals cover ~80 % in both."""
    rng = np.random.default_rng(0)
    n = 3000
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 2, n), rng.normal(size=n)])
    y = X[:, 0] - X[:, 2] + rng.normal(size=n) * np.where(X[:, 1] > 0.5, 0.25, 2.0)
    Y = y[:, None]
    tr, te = slice(0, 2000), slice(2000, None)
    raw = RidgeSurrogate().fit(X[tr], Y[tr])
    cal = Calibrated("ridge").fit(X[tr], Y[tr])
    g = X[te, 1] > 0.5
    m, s = raw.predict(X[te])
    raw_cov = np.abs(y[te] - m[:, 0]) <= 1.2816 * s[:, 0]
    assert raw_cov[g].mean() > 0.97 and raw_cov[~g].mean() < 0.75  # the defect the wrapper fixes
    lo, hi = cal.interval(X[te], 0.8)
    cov = (y[te] >= lo) & (y[te] <= hi)
    assert 0.74 < cov[g].mean() < 0.86 and 0.74 < cov[~g].mean() < 0.86
    mc, sc = cal.predict(X[te])
    assert np.allclose(mc, m) and sc[g, 0].max() < sc[~g, 0].min()


def test_cross_validate_reports_coverage_and_baselines(bench):
    cv = cross_validate(bench, families=("ridge", "ridge+cal"), folds=3, ceiling=False).set_index("model")
    assert {"kendall_tau", "spearman_rho", "rmse_glue", "coverage_50", "coverage_80", "coverage_95"} <= set(cv.columns)
    assert cv.loc["ridge", "kendall_tau"] > cv.loc["num_params_as_trained (baseline)", "kendall_tau"] + 0.1
    assert cv.loc["num_params_as_trained (baseline)", "kendall_tau"] > cv.loc["num_params_as_specified (baseline)", "kendall_tau"]
    for lv in (50, 80, 95):
        assert abs(cv.loc["ridge+cal", f"coverage_{lv}"] - lv / 100) < 0.08


def test_default_surrogate_scores_classes_once(bench):
    """Scoring each as-trained class once is exact; only the batch the model sees changes.

    The surrogate's features are per as-trained class, so it predicts each class's
    representative once and looks the rest up. (1) Every arch's features equal its
    representative's, bit for bit; (2) the lookup holds exactly the model's predictions of
    the representatives. (3) Against predicting the 500 archs directly, the values differ
    only because the model sees another batch: its BLAS sums run in another order, and the
    GP's predictive variance (a difference of two close terms) amplifies that. Predicting
    the same rows one at a time instead of in one batch moves the std by up to 4.3e-5 and
    the mean by 1.3e-6 relative (measured here with numpy 2.4 / scipy 1.17 / scikit-learn
    1.9), so the tolerances are 1e-3 (std) and 1e-4 (mean): an order above that floor,
    far below any real difference between classes."""
    from nasbench_bert.surrogate.features import class_representatives, twin_keys_of

    sur = bench.surrogate()
    assert sur.family == "ensemble+cal"
    idx = np.random.default_rng(5).integers(0, SPACE_SIZE, 500)
    X = surrogate_features(idx, sur.features)
    rep = surrogate_features(class_representatives(), sur.features)
    keys, first = np.unique(twin_keys_of(rep), return_index=True)
    pos = np.searchsorted(keys, twin_keys_of(X))
    assert np.array_equal(keys[pos], twin_keys_of(X)) and np.array_equal(X, rep[first][pos])  # (1)
    m, s = sur.predict_indices(idx)
    # (2) on one BLAS thread, as the surrogate scores the classes (threadpoolctl): on two,
    # OpenBLAS sums the float32 products in another order
    with threadpool_limits(limits=1):
        mr, sr = sur.model.predict(rep[first])
    assert np.array_equal(m, mr[pos]) and np.array_equal(s, sr[pos])  # (2)
    m2, s2 = sur.model.predict(X)
    np.testing.assert_allclose(m, m2, rtol=1e-4)  # (3)
    np.testing.assert_allclose(s, s2, rtol=1e-3)
    assert np.isfinite(m).all() and (s > 0).all()
    lo, hi = sur.interval(idx[:50], 0.8)
    assert (lo < m[:50, 0]).all() and (m[:50, 0] < hi).all()


# -- noise floor ----------------------------------------------------------------------------------
def test_curve_table_repairs_the_prefix_collision(bench):
    c = curve_table(bench)
    hit = c[c.steps.isin([50_000, 100_000])]
    assert (~hit.tasks_valid).all() and c[~c.steps.isin([50_000, 100_000])].tasks_valid.all()
    assert sorted(hit[hit.status == "recovered"].id.unique()) == [11, 12, 15, 16, 19]
    assert (hit.status == "lost").sum() == 20 and (hit.status == "recovered").sum() == 10
    r = hit[(hit.status == "recovered") & (hit.steps == 100_000)].set_index("id")
    later = c[c.steps == 1_000_000].set_index("id")
    assert np.allclose(r.glue, r.stored_glue - later.loc[r.index, "glue"])
    assert r.glue.between(60, 80).all()


def test_noise_floor_numbers(bench):
    pairs = repeat_pairs(bench)
    ex = pairs[pairs.kind == "exact repeat"]
    assert len(ex) == 9 and len(pairs) == 14
    nf = noise_floor(bench, bootstrap=200, reps=20)
    e = nf["exact_repeats"]
    assert e["sigma"] == pytest.approx(np.sqrt((ex["diff"] ** 2).mean() / 2))
    assert e["sigma_ci_chi2"][0] < e["sigma"] < e["sigma_ci_chi2"][1]
    tw = nf["as_trained_twins"]
    assert tw["2_layers"]["dof"] > 100 and tw["2_layers"]["sigma"] > 2 * tw["4_layers"]["sigma"]
    assert 0.7 < nf["ceiling_empirical_noise"][0] < 0.9
    ev = nf["every_repeat_pair"]
    assert ev["pairs"] == 14
    assert ev["sigma"] == pytest.approx(np.sqrt((pairs["diff"] ** 2).mean() / 2))
    assert ev["sigma_ci_chi2"][0] < ev["sigma"] < ev["sigma_ci_chi2"][1]
    g = ev["ceiling_gaussian"]
    lo, mid, hi = (g[f"{v:.3f}"] for v in (ev["sigma_ci_chi2"][1], ev["sigma"], ev["sigma_ci_chi2"][0]))
    assert lo < mid < hi  # more noise, a lower ceiling


def test_twin_residuals_come_from_identical_models(bench):
    r = twin_residuals(bench)
    df = bench.to_pandas().set_index("id")
    for _, g in list(r.groupby("key"))[:30]:
        plans = {(AS_TRAINED.plan(df.loc[i, "arch"]).layers, df.loc[i, "hidden_size"]) for i in g.id}
        assert len(plans) == 1
        assert df.loc[list(g.id), "num_params_as_trained"].nunique() == 1


def test_tau_ceiling_falls_with_noise(bench):
    t0 = tau_ceiling(bench, sigma=1e-6, reps=3)[0]
    t1 = tau_ceiling(bench, sigma=0.6, reps=10)[0]
    t2 = tau_ceiling(bench, sigma=2.0, reps=10)[0]
    assert t0 > 0.99 and t0 > t1 > t2


# -- noisy oracle -------------------------------------------------------------------------------------
def test_noisy_oracle_is_seeded_and_order_free(bench):
    archs = FLEXIBERT_SPACE.sample(20, seed=2)
    a = search.SurrogateOracle(bench, noisy=True, seed=7)
    b = search.SurrogateOracle(bench, noisy=True, seed=7)
    c = search.SurrogateOracle(bench, noisy=True, seed=8)
    va = [a.evaluate(x) for x in archs]
    vb = [b.evaluate(x) for x in reversed(archs)][::-1]
    assert va == vb  # the same draws whatever the order of queries
    assert va != [c.evaluate(x) for x in archs]
    again = [a.evaluate(x) for x in archs]  # re-runs: same expected GLUE, new run noise
    assert again != va and [a.expected_glue(x) for x in archs] == [b.expected_glue(x) for x in archs]
    plain = search.SurrogateOracle(bench)
    m, _ = bench.surrogate().predict_indices(np.array([x.index for x in archs]), return_std=False)
    assert [plain.evaluate(x) for x in archs] == pytest.approx(list(m[:, 0]))
    with pytest.raises(ValueError, match="noisy"):
        search.SurrogateOracle(bench, noisy="yes")


def test_noisy_runs_restart_per_run(bench):
    o = search.SurrogateOracle(bench, noisy=True, seed=1)
    t1 = search.run("regularized_evolution", bench, budget=30, seed=0, oracle=o)
    t2 = search.run("regularized_evolution", bench, budget=30, seed=0, oracle=o)
    t3 = search.run("regularized_evolution", bench, budget=30, seed=0, oracle="noisy_surrogate")
    assert t1.to_pandas().equals(t2.to_pandas()) and t3.oracle == "noisy_surrogate"
    assert all(e["predicted"] for e in t1.evaluations)


def test_simulated_reruns_scatter_like_real_ones(bench):
    from scipy.stats import ks_2samp

    real = {2: [], 4: []}
    for _, g in twin_residuals(bench).groupby("key"):
        v = g.glue.to_numpy()
        real[int(g.num_layers.iloc[0])] += [abs(v[i] - v[j]) for i in range(len(v)) for j in range(i + 1, len(v))]
    sim = {2: [], 4: []}
    for s in range(4):
        o = search.SurrogateOracle(bench, noisy=True, seed=s)
        for a in list(dict.fromkeys(bench.archs)):
            sim[a.num_layers].append(abs(o.glue(a) - o.glue(a)))
    for d in (2, 4):
        assert ks_2samp(real[d], sim[d]).pvalue > 0.01
        assert 0.6 < np.std(sim[d]) / np.std(real[d]) < 1.6
    rn = RunNoise(bench)
    assert rn.sd[2] > 2 * rn.sd[4]


# -- the steps fidelity ------------------------------------------------------------------------------
def test_fidelity_leave_one_curve_out(bench):
    from nasbench_bert.surrogate.fidelity import loco_summary

    s = loco_summary(leave_one_curve_out(bench))
    assert s["rmse_shape"] < 0.9 * s["rmse_shape_flat"]  # the shape is learnt
    assert s["rmse_anchored"] < 1.1 * s["rmse_anchored_no_change"] and s["median_abs_anchored"] < 1.5
    fid = CurveFidelity().fit(curve_table(bench))
    assert fid.predict(60.0, 0) == pytest.approx(fid.predict(75.0, 0))  # no pretraining: no ranking
    assert fid.n[100_000] == 5 and fid.n[200_000] == 15


def test_oracle_steps_fidelity(bench):
    o = search.SurrogateOracle(bench)
    a = FLEXIBERT_SPACE.sample(1, seed=3)[0]
    assert 200_000 in o.fidelities and 0 in o.fidelities
    g = o.evaluate(a, steps=200_000)
    assert g == pytest.approx(float(o.fidelity.predict(o.expected_glue(a), 200_000)))
    assert o.evaluations[-1]["steps"] == 200_000
    assert o.budget.time_spent == pytest.approx(o.cost(a) * 2)
    with pytest.raises(ValueError, match="steps"):
        o.evaluate(a, steps=123)
    with pytest.raises(ValueError, match="no steps fidelity"):
        search.TabularOracle(bench).evaluate(bench.archs[0], steps=200_000)


# -- the leaderboard's proxies ------------------------------------------------------------------------
def test_nonembedding_params_by_hand():
    """LTS's count for a 128-hidden 2-layer arch under as_trained, worked out by hand.

    as_trained: every layer is SDP attention (Q, K, V, output: 4 x (128*128 + 128)) plus
    its LayerNorm (256); the feed-forward stack is H -> 4H -> F x (n - 1) -> H + LayerNorm.
    """
    pytest.importorskip("torch")
    from nasbench_bert import proxies

    attn = 4 * (128 * 128 + 128) + 256                                   # 66,304
    ff1 = (128 * 512 + 512) + (512 * 128 + 128) + 256                    # n = 1: 131,968
    ff3 = (128 * 512 + 512) + (512 * 1024 + 1024) + (1024 * 1024 + 1024) + (1024 * 128 + 128) + 256
    arch = "128/SA-SDP-h2-512x1/LT-DFT-h4-1024x3"
    df = proxies.compute([arch], ["nonembedding_params", "num_params"], semantics="as_trained",
                         batch={"batch_size": 2, "seq_len": 8})
    r = df.iloc[0]
    assert r.nonembedding_params == attn + ff1 + attn + ff3 == 2_036_992
    assert list(r.nonembedding_params__layers) == [attn + ff1, attn + ff3]
    embed = (30522 + 512 + 2) * 128 + 256  # no projection at H = 128
    assert r.num_params == r.nonembedding_params + embed


def test_pca_dim_by_hand():
    """Three orthogonal directions with variances 9 : 4 : 1 (shares 9/14, 13/14, 1)."""
    torch = pytest.importorskip("torch")
    from nasbench_bert.errors import InvalidArgumentError
    from nasbench_bert.proxies.published import pca_dim

    g = torch.Generator().manual_seed(0)
    q = torch.linalg.qr(torch.randn(12, 3, generator=g, dtype=torch.float64))[0]  # 3 orthonormal columns in R^12
    signs = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    rows = [signs * s * q[:, j] for j, s in enumerate((3.0, 2.0, 1.0))]   # +-s along direction j
    x = torch.cat(rows)  # 6 samples; variance along direction j is proportional to s^2
    assert pca_dim(x, 0.60) == 1     # 9/14 = 0.643
    assert pca_dim(x, 0.90) == 2     # 13/14 = 0.929
    assert pca_dim(x, 0.95) == 3
    assert pca_dim(x, 1.0) == 3
    assert pca_dim(torch.ones(10, 4)) == 0
    with pytest.raises(InvalidArgumentError, match="eta"):
        pca_dim(x, 0.0)


@pytest.mark.torch
def test_w_pca_is_params_times_preactivation_pca():
    torch = pytest.importorskip("torch")
    from nasbench_bert import proxies
    from nasbench_bert.proxies.capture_bert import capture_flexibert
    from nasbench_bert.proxies.inputs import BatchSpec, make_batch
    from nasbench_bert.proxies.published import ff_preactivations, pca_dim

    arch = Arch.coerce("128/SA-SDP-h2-512x1/DSC-5-h4-1024x3")
    spec = {"batch_size": 2, "seq_len": 16}
    for sem in ("as_trained", "authors"):
        df = proxies.compute([arch], ["w_pca", "num_params"], semantics=sem, batch=spec)
        r = df.iloc[0]
        cap = capture_flexibert(arch, set(), make_batch(BatchSpec(**spec)), sem, 0)
        pre = ff_preactivations(cap.model, cap)
        # one hidden pre-activation per Linear before the activation: 1 + 3 (as trained: H -> 4H, 4H -> F, F -> F)
        assert [li for li, _ in pre] == ([0, 1, 1, 1] if sem == "as_trained" else [0, 1, 1, 1])
        assert min(float(h.min()) for _, h in pre) < -0.2  # below GELU's minimum: these are pre-activations
        dims = [0, 0]
        for li, h in pre:
            dims[li] += pca_dim(h)
        assert r.w_pca == r.num_params * sum(dims)
        assert list(r.w_pca__layers) == dims
    # its forward leaves the global generator alone
    torch.manual_seed(5)
    a = torch.rand(1)
    torch.manual_seed(5)
    ff_preactivations(cap.model, cap)
    assert torch.equal(torch.rand(1), a)


def test_rank_ceilings_use_the_exact_repeats_sigma_and_cells(bench):
    """The leaderboard's ceilings: Gaussian noise at the 9 exact repeats' sigma (the
    primary figure) and the empirical model; within a cell the ceiling is lower than over
    all archs (depth and width no longer help), and both sit well below 1."""
    from nasbench_bert.surrogate.noise import noise_floor, rank_ceilings

    c = rank_ceilings(bench, reps=8)
    sigma = noise_floor(bench, bootstrap=10, reps=4)["exact_repeats"]["sigma"]
    g = c[f"gaussian_exact_repeats_sigma_{sigma:.3f}"]
    assert abs(sigma - 0.603) < 0.001
    for model in (g, c["empirical_per_depth"]):
        assert 0.8 < model["kendall_tau"][0] < 0.95 and 0.45 < model["tau_within_cell"][0] < model["kendall_tau"][0] - 0.15
