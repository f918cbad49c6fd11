"""The rank metrics against their definitions: scipy's τ-b and ρ, brute-force pair loops,
Monte Carlo tie-breaking, Kendall's partial-τ formula, and NSC's published 10 %-PW figure."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, spearmanr

from nasbench_bert import metrics as M
from nasbench_bert.errors import InvalidArgumentError


def _brute_tau_b(x, y, keep):
    """τ-b over the unordered pairs (i, j), i < j, for which keep(i, j) is true."""
    num = n0 = n1 = n2 = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        if not keep(i, j):
            continue
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        num += sx * sy
        n0 += 1
        n1 += sx == 0
        n2 += sy == 0
    return num / math.sqrt((n0 - n1) * (n0 - n2))


def _data(seed, n=60, ties=True):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 8, n).astype(float) if ties else rng.normal(size=n)
    y = x + rng.normal(scale=3, size=n)
    y[::7] = y[0]  # ties in the target too
    return x, y


@pytest.mark.parametrize("seed", range(4))
def test_point_metrics_equal_their_definitions(seed):
    x, y = _data(seed)
    cells = np.arange(len(x)) % 3
    size = np.random.default_rng(seed + 9).uniform(1, 1.5, len(x))
    assert M.kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y)[0], abs=1e-12)
    assert M.spearman_rho(x, y) == pytest.approx(spearmanr(x, y)[0], abs=1e-12)
    assert M.tau_within_cell(x, y, cells) == pytest.approx(_brute_tau_b(x, y, lambda i, j: cells[i] == cells[j]), abs=1e-12)
    rel = lambda i, j: abs(size[i] - size[j]) < 0.1 * max(size[i], size[j])  # noqa: E731
    assert M.tau_pw(x, y, size) == pytest.approx(_brute_tau_b(x, y, rel), abs=1e-12)
    # with every pair in one cell, the within-cell τ is the τ-b
    assert M.tau_within_cell(x, y, np.zeros(len(x))) == pytest.approx(kendalltau(x, y)[0], abs=1e-12)


def test_tiebroken_tau_is_the_mean_over_random_tie_breaks():
    x, y = _data(0, n=80)
    rng = np.random.default_rng(1)
    draws = [kendalltau(x + rng.uniform(0, 1e-6, len(x)), y)[0] for _ in range(3000)]  # ties broken at random
    se = np.std(draws) / math.sqrt(len(draws))
    assert abs(M.kendall_tau_tiebroken(x, y) - np.mean(draws)) < 4 * se + 1e-12
    assert M.kendall_tau_tiebroken(np.arange(9.0), np.arange(9.0)) == 1.0  # no ties: τ-b itself
    assert M.kendall_tau_tiebroken(np.ones(9), np.arange(9.0)) == 0.0      # a constant score ranks nothing


def test_partial_tau_with_one_control_is_kendalls_formula():
    rng = np.random.default_rng(3)
    z = rng.normal(size=200)
    x, y = z + rng.normal(size=200), z + rng.normal(size=200)
    txy, txz, tyz = kendalltau(x, y)[0], kendalltau(x, z)[0], kendalltau(y, z)[0]
    want = (txy - txz * tyz) / math.sqrt((1 - txz ** 2) * (1 - tyz ** 2))
    assert M.partial_tau(x, y, z) == pytest.approx(want, abs=1e-12)
    # a control identical to x leaves nothing for x to explain
    assert abs(M.partial_tau(x, y, np.c_[x + 0.0, rng.normal(size=200)])) < 1e-6 or math.isnan(M.partial_tau(x, y, np.c_[x, z]))


def test_bootstrap_resamples_equal_scipy_on_the_resampled_rows():
    x, y = _data(5, n=50)
    cells = np.arange(50) % 2
    ctx = M.RankContext(cells=cells.astype(float), size=np.linspace(1, 2, 50), controls=np.c_[cells, np.arange(50) % 5])
    C = np.vstack([np.ones((1, 50)), M.resamples(50, 6, seed=11)])
    vals = M._all_pair_metrics(x, y, ctx, C, 0.1)
    for r in range(1, 7):
        idx = np.repeat(np.arange(50), C[r].astype(int))
        xs, ys = x[idx], y[idx]
        assert vals["kendall_tau"][r] == pytest.approx(kendalltau(xs, ys)[0], abs=1e-12)
        assert vals["tau_within_cell"][r] == pytest.approx(
            _brute_tau_b(xs, ys, lambda i, j: cells[idx[i]] == cells[idx[j]]), abs=1e-12)
        strata = M.strata_labels(ctx.controls, 50)
        assert vals["tau_within_arch"][r] == pytest.approx(
            _brute_tau_b(xs, ys, lambda i, j: strata[idx[i]] == strata[idx[j]]), abs=1e-12)
        n0 = len(idx) * (len(idx) - 1) / 2
        _, cx = np.unique(xs, return_counts=True)
        _, cy = np.unique(ys, return_counts=True)
        n1, n2 = (cx * (cx - 1) / 2).sum(), (cy * (cy - 1) / 2).sum()
        cd = kendalltau(xs, ys)[0] * math.sqrt((n0 - n1) * (n0 - n2))
        assert vals["tau_tiebroken"][r] == pytest.approx(cd / math.sqrt(n0 * (n0 - n2)), abs=1e-12)
    # row 0 is the data itself
    assert vals["kendall_tau"][0] == pytest.approx(kendalltau(x, y)[0], abs=1e-12)


def test_rank_metrics_intervals_and_shared_resamples():
    x, y = _data(2, n=120, ties=False)
    a = M.rank_metrics(x, y, bootstrap=300, seed=4)
    b = M.rank_metrics(x, y, bootstrap=300, seed=4)
    assert repr(a) == repr(b)  # the same resamples (NaN-safe comparison)
    for m in ("kendall_tau", "tau_tiebroken", "spearman_rho", "top10_precision"):
        assert a[m].ci_low <= a[m].value <= a[m].ci_high, m
    assert math.isnan(a["tau_pw10"].value) and math.isnan(a["tau_within_cell"].value)  # no context given
    assert math.isnan(M.rank_metrics(x, y, bootstrap=0)["kendall_tau"].ci_low)
    nanx = x.copy()
    nanx[:5] = np.nan
    assert M.rank_metrics(nanx, y, bootstrap=0)["kendall_tau"].value == pytest.approx(kendalltau(x[5:], y[5:])[0])


def test_release_figures(bench):
    """Depth alone, NSC's #Params row (10 %-PW 0.082 over the as-specified count), and the
    size-given-cell figure, from the release's GLUE."""
    df = bench.to_pandas()
    y = df.glue.to_numpy(float)
    depth = df.num_layers.to_numpy(float)
    assert M.kendall_tau_b(depth, y) == pytest.approx(0.682, abs=5e-4)
    assert M.kendall_tau_tiebroken(depth, y) == pytest.approx(0.480, abs=5e-3)
    size = df.num_params_as_specified.to_numpy(float)  # NSC's #Params
    assert M.kendall_tau_b(size, y) == pytest.approx(0.485, abs=5e-4)
    assert M.tau_pw(size, y, size) == pytest.approx(0.082, abs=5e-4)


def test_bad_input_names_the_field():
    with pytest.raises(InvalidArgumentError, match="same length"):
        M.kendall_tau_b([1, 2, 3], [1, 2])
    with pytest.raises(InvalidArgumentError, match="cells"):
        M.tau_within_cell([1, 2, 3], [1, 2, 3], [0, 1])
    with pytest.raises(InvalidArgumentError, match="bootstrap"):
        M.rank_metrics([1, 2, 3], [1, 2, 3], bootstrap=-1)
    with pytest.raises(InvalidArgumentError, match="context.size"):
        M.rank_metrics([1, 2, 3], [1, 2, 3], M.RankContext(size=np.ones(2)))
    with pytest.raises(InvalidArgumentError, match="numbers"):
        M.kendall_tau_b(["a", "b"], [1, 2])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.floats(-5, 5, allow_nan=False), st.integers(0, 2)),
                min_size=0, max_size=25),
       st.integers(0, 20))
def test_rank_metrics_property(rows, boot):
    x = np.array([r[0] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows], dtype=float)
    cells = np.array([r[2] for r in rows], dtype=float)
    out = M.rank_metrics(x, y, M.RankContext(cells=cells, size=np.abs(x) + 1, controls=cells[:, None]), bootstrap=boot)
    assert set(out) == set(M.METRICS)
    for m, e in out.items():
        assert math.isnan(e.value) or -1 - 1e-9 <= e.value <= 1 + 1e-9, (m, e)
    if len(rows) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        assert out["kendall_tau"].value == pytest.approx(kendalltau(x, y)[0], abs=1e-9)


def test_sparse_path_equals_the_dense_quadratic_forms(monkeypatch):
    """The many-row path (scipy per resample, masked kernels over the kept pairs only)
    gives the dense path's numbers, intervals included."""
    rng = np.random.default_rng(0)
    n = 240
    x = rng.integers(0, 30, n).astype(float)
    y = x + rng.normal(scale=10, size=n)
    y[::9] = y[0]
    ctx = M.RankContext(cells=rng.integers(0, 7, n), size=rng.integers(0, 20, n) + 10.0, size_name="s",
                        controls=np.c_[rng.integers(0, 4, n), rng.integers(0, 3, n)], control_names=("a", "b"))
    dense = M.rank_metrics(x, y, ctx, bootstrap=30, seed=3)
    assert all(np.isfinite(e.value) for e in dense.values())  # 12 strata with pairs: every metric defined
    monkeypatch.setattr(M, "SPARSE_N", 0)
    monkeypatch.setattr(M, "SPARSE_BLOCK", 17)  # several windowed blocks
    sparse = M.rank_metrics(x, y, ctx, bootstrap=30, seed=3)
    for m in M.METRICS:
        for f in ("value", "ci_low", "ci_high"):
            assert getattr(sparse[m], f) == pytest.approx(getattr(dense[m], f), abs=1e-10), (m, f)
    signed = M.RankContext(size=rng.normal(size=n))  # sizes of both signs: no sorted window to slice
    monkeypatch.setattr(M, "SPARSE_N", 2000)
    want = M.rank_metrics(x, y, signed, bootstrap=5)["tau_pw10"]
    monkeypatch.setattr(M, "SPARSE_N", 0)
    got = M.rank_metrics(x, y, signed, bootstrap=5)["tau_pw10"]
    assert (got.value, got.ci_low, got.ci_high) == pytest.approx((want.value, want.ci_low, want.ci_high), abs=1e-10)
    const = M.rank_metrics(np.ones(n), y, ctx, bootstrap=3)
    assert const["tau_tiebroken"].value == 0.0 and math.isnan(const["kendall_tau"].value)


def test_top_k_precision_is_the_expectation_over_tie_breaks_and_ignores_row_order():
    """With ties at the k-th place the top k is not defined by the values: the figure is
    the expected overlap under random tie-breaking (checked by enumeration here), so it
    cannot depend on how the rows happen to be ordered."""
    # sorted: 5, 4, 3, 2, 2, 2, 2, 1, 0, 0. No tie at the cut for k = 1 (10 %) and k = 3
    # (30 %); a 4-way tie at 2 straddles the cut for k = 4 (40 %) and k = 5 (50 %)
    x = np.array([3.0, 2, 2, 2, 1, 0, 0, 5, 4, 2])
    y = np.array([9.0, 8, 1, 7, 6, 5, 4, 3, 2, 0])
    rng = np.random.default_rng(1)
    orders = [rng.permutation(len(x)) for _ in range(20)]
    for frac, tied_cut in ((0.1, False), (0.3, False), (0.4, True), (0.5, True)):
        k = max(1, int(round(frac * len(x))))
        # enumerate every order of the tied values (a tiny jitter per permutation)
        ties = np.flatnonzero(x == 2)
        overlaps = []
        for perm in itertools.permutations(range(len(ties))):
            jx = x.copy()
            jx[ties] += np.array(perm) * 1e-6
            overlaps.append(len(set(np.argsort(-jx)[:k]) & set(np.argsort(-y)[:k])) / k)
        assert (len(set(overlaps)) > 1) == tied_cut  # with a tie at the cut, the row order matters to argsort
        assert M.top_k_precision(x, y, frac) == pytest.approx(np.mean(overlaps), abs=1e-12)
        for order in orders:
            assert M.top_k_precision(x[order], y[order], frac) == pytest.approx(M.top_k_precision(x, y, frac), abs=1e-12)


def test_score_reports_the_tie_aware_top_k_whatever_the_row_order(bench):
    """``scoring.score`` reports the same top-10 % precision as :func:`metrics.top_k_precision`
    for a score with ties (the number of layers: two values), in table order and shuffled.
    Before, ``score`` picked the top k by row order: 0.18 sorted by id, 0.16 shuffled."""
    from nasbench_bert.scoring import score

    df = bench.to_pandas()[["id", "num_layers", "glue"]].rename(columns={"num_layers": "depth"})
    want = M.top_k_precision(df["depth"].to_numpy(float), df["glue"].to_numpy(float), 0.1)
    assert 0.185 < want < 0.195  # between the two row-order answers, as an expectation must be
    for frame in (df, df.sample(frac=1.0, random_state=3)):
        got = score(frame, proxies=["depth"], control=None, bootstrap=0, bench=bench)
        assert got["top10_precision"].iloc[0] == pytest.approx(want, abs=1e-12)


def test_tiebroken_interval_of_a_perfect_ranking_contains_its_estimate():
    """Issue 28: on 8 rows ranked perfectly every resample's tie-broken τ is below 1 (copies
    of a row are pairs tied in score and target), so the plain percentile interval was
    [0.866, 0.982] around an estimate of 1.000."""
    x = np.arange(8.0)
    e = M.rank_metrics(x, x, bootstrap=1000)["tau_tiebroken"]
    assert e.value == 1.0
    assert e.ci_low <= e.value <= e.ci_high
    assert e.ci_high == 1.0 and e.ci_low < 0.95  # the bootstrap's spread is kept, the bound moves to the estimate


def test_interval_extends_only_where_the_estimate_is_outside():
    r = np.linspace(0.2, 0.6, 401)
    plain = M.interval(0.4, r)
    assert (plain.ci_low, plain.ci_high) == pytest.approx((0.21, 0.59))  # inside: the percentile interval, unchanged
    assert (M.interval(0.9, r).ci_low, M.interval(0.9, r).ci_high) == pytest.approx((0.21, 0.9))
    assert (M.interval(0.0, r).ci_low, M.interval(0.0, r).ci_high) == pytest.approx((0.0, 0.59))
    assert math.isnan(M.interval(0.5, np.full(10, np.nan)).ci_low)  # no finite resample: no interval


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(0, 1)), min_size=3, max_size=14),
       st.integers(1, 60), st.integers(0, 2**32 - 1))
def test_every_interval_contains_its_estimate(rows, boot, seed):
    """Whatever the data (few rows, heavy ties in score and target, cells, size, controls),
    every metric's interval contains the metric's own value."""
    x = np.array([r[0] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows], dtype=float)
    cells = np.array([r[2] for r in rows], dtype=float)
    ctx = M.RankContext(cells=cells, size=np.abs(x) + 1, controls=cells[:, None])
    for m, e in M.rank_metrics(x, y, ctx, bootstrap=boot, seed=seed).items():
        if not (math.isnan(e.value) or math.isnan(e.ci_low)):
            assert e.ci_low <= e.value <= e.ci_high, (m, e)
