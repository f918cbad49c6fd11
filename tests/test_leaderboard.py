"""The proxy leaderboard builder (docs/leaderboard.md): quoted records, the verdict, and
the partial-tau intervals. The full build reads the proxy cache; these tests use
synthetic frames so they run in a second."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT
from studies import leaderboard as lbm  # studies/ sits beside the package, outside the wheel (conftest puts the root on sys.path)


def test_every_published_number_is_in_its_quote():
    """A number in the records table must be one the quoted paper text states."""
    assert any(p["proxy"] == "ZeroLM" for p in lbm.PUBLISHED)
    for p in lbm.PUBLISHED:
        quoted = set(re.findall(r"\d+\.\d+", p["quote"]))
        for key in ("kendall_tau", "spearman_rho"):
            if p[key] is not None:
                assert f"{p[key]:.2f}" in quoted, (p["proxy"], key)
        if p["kendall_tau"] is None and p["spearman_rho"] is None:
            assert "not verified" in p["source"]


def _row(proxy, source, sem, tau, lo, hi, partial, plo=np.nan, phi=np.nan, size_like=False, tb=None, wc=0.1):
    tb = tau if tb is None else tb
    return {"proxy": proxy, "source": source, "semantics": sem, "n": 500, "kendall_tau": tau, "tau_ci_low": lo,
            "tau_ci_high": hi, "spearman_rho": tau + 0.1, "rho_ci_low": lo + 0.1, "rho_ci_high": hi + 0.1,
            "tau_tiebroken": tb, "tau_tiebroken_ci_low": tb - (tau - lo), "tau_tiebroken_ci_high": tb + (hi - tau),
            "tau_within_cell": wc, "tau_within_cell_ci_low": wc - 0.05, "tau_within_cell_ci_high": wc + 0.05,
            "tau_within_cell_tb": wc - 0.01, "tau_within_cell_tb_ci_low": wc - 0.06, "tau_within_cell_tb_ci_high": wc + 0.04,
            "tau_within_arch": wc - 0.02, "tau_within_arch_ci_low": wc - 0.07, "tau_within_arch_ci_high": wc + 0.03,
            "tau_within_arch_tb": wc - 0.03, "tau_within_arch_tb_ci_low": wc - 0.08, "tau_within_arch_tb_ci_high": wc + 0.02,
            "tau_pw10": 0.2,
            "partial_tau_given_params": partial, "top10_precision": 0.3, "seconds_per_arch": 0.5,
            "batch": "random,B=8,T=128,seed=0", "size_like": size_like, "partial_ci_low": plo, "partial_ci_high": phi}


def _cmp(proxy, rule, metric, value, rule_value, lo, hi, sem="as_trained", source="live"):
    """One record of the JSON's ``verdict_comparisons`` (what :func:`lbm.verdict_comparisons` writes)."""
    from studies.verdicts import word

    return {"proxy": proxy, "rule": rule, "metric": metric, "value": value, "rule_value": rule_value,
            "diff": value - rule_value, "ci_low": lo, "ci_high": hi, "word": word(lo, hi), "semantics": sem,
            "source": source}


def test_verdict_without_paired_differences_states_none():
    lb = pd.DataFrame([
        _row("num_params_as_trained", "analytic count", "as_trained", 0.57, 0.54, 0.60, np.nan, size_like=True),
        _row("depth_width_then_size", "trivial baseline (spec)", "as_trained", 0.76, 0.74, 0.78, 0.0, tb=0.74),
        _row("magic", "live", "as_trained", 0.85, 0.82, 0.88, 0.30, 0.25, 0.35, wc=0.45),
    ])
    md = lbm.render(lb, bootstrap=100, ceilings=CEIL)
    assert "No verdict: the paired differences were not computed." in md
    assert "better than" not in md.split("## Verdict")[1].split("## Published")[0]


CEIL = {"gaussian_exact_repeats_sigma_0.603": {"kendall_tau": (0.88, 0.87, 0.89), "tau_within_cell": (0.62, 0.59, 0.65)},
        "empirical_per_depth": {"kendall_tau": (0.87, 0.85, 0.88), "tau_within_cell": (0.60, 0.57, 0.63)}}


def test_verdict_puts_the_trivial_rule_beside_the_best_proxy():
    lb = pd.DataFrame([
        _row("num_params_as_trained", "analytic count", "as_trained", 0.57, 0.54, 0.60, np.nan, size_like=True),
        _row("depth_then_width", "trivial baseline (spec)", "as_trained", 0.80, 0.78, 0.82, 0.0, tb=0.69),
        _row("depth_width_then_size", "trivial baseline (spec)", "as_trained", 0.76, 0.74, 0.78, 0.0, tb=0.74),
        _row("head_confidence", "live", "as_trained", 0.66, 0.63, 0.69, 0.03, -0.01, 0.07, wc=0.22),
        _row("w_pca", "live", "authors", 0.40, 0.36, 0.44, 0.02, -0.02, 0.05),
    ])
    comps = [_cmp("head_confidence", "depth_then_width", "tau_tiebroken", 0.66, 0.69, -0.05, -0.01),
             _cmp("head_confidence", "depth_width_then_size", "tau_tiebroken", 0.66, 0.74, -0.11, -0.05),
             _cmp("head_confidence", "depth_width_then_size", "tau_within_cell", 0.22, 0.1, -0.02, 0.25),
             _cmp("head_confidence", "depth_width_then_size", "tau_within_cell_tb", 0.21, 0.09, 0.01, 0.2)]
    md = lbm.render(lb, bootstrap=100, ceilings=CEIL, depth_ranges={"2": (0.01, 0.02), "4": (0.03, 0.04)},
                    comparisons=comps)
    assert "The one-line rules on the spec rank GLUE better than the best training-free proxy." in md
    assert "`depth_width_then_size` 0.740 [0.720, 0.760]" in md
    assert ("`head_confidence` (as_trained, live), has 0.660 [0.630, 0.690]; against `depth_then_width` 0.690 "
            "(paired -0.030 [-0.050, -0.010]: below), `depth_width_then_size` 0.740 (paired -0.080 [-0.110, -0.050]: "
            "below)") in md
    # within cells: the tie-broken comparison's interval excludes 0, the τ-b one's does not
    assert "0.220 [0.170, 0.270], against `depth_width_then_size` 0.100 (paired +0.120 [-0.020, +0.250]: level with)" in md
    assert "(paired +0.120 [+0.010, +0.200]: above)" in md
    assert "separate the 2- and 4-layer archs completely" in md
    assert "within cells under Gaussian run-to-run noise at the 9 exact repeats' σ = 0.603" in md and "0.620 [0.590" in md
    assert "None is distinguishable from zero" in md
    assert "num_params_as_trained (size)" in md  # size counts are marked in the table
    # the within-group columns in both forms, each column once, no partial τ given the arch
    head = next(line for line in md.splitlines() if line.startswith("| rank |")).split(" | ")
    assert len(head) == len(set(head))
    for words in ("within cell τ-b [95 % CI]", "within cell, tie-broken [95 % CI]", "within arch τ-b [95 % CI]",
                  "within arch, tie-broken [95 % CI]", "partial τ given size"):
        assert words in head, words
    assert not any("given arch" in h for h in head)
    hc = next(line for line in md.splitlines() if "| head_confidence |" in line)
    assert "| 0.200 [0.150, 0.250] | 0.190 [0.140, 0.240] |" in hc  # within arch τ-b, then tie-broken


def test_verdict_says_so_when_a_proxy_clears_the_rule():
    lb = pd.DataFrame([
        _row("num_params_as_trained", "analytic count", "as_trained", 0.57, 0.54, 0.60, np.nan, size_like=True),
        _row("depth_width_then_size", "trivial baseline (spec)", "as_trained", 0.76, 0.74, 0.78, 0.0, tb=0.74),
        _row("magic", "live", "as_trained", 0.85, 0.82, 0.88, 0.30, 0.25, 0.35, wc=0.45),
    ])
    comps = [_cmp("magic", "depth_width_then_size", "tau_tiebroken", 0.85, 0.74, 0.05, 0.15)]
    md = lbm.render(lb, bootstrap=100, ceilings=CEIL, depth_ranges={"2": (0.01, 0.035), "4": (0.03, 0.04)},
                    comparisons=comps)
    assert "The best training-free proxy ranks GLUE better than the one-line rules on the spec." in md
    assert "(paired +0.110 [+0.050, +0.150]: above)" in md and "`magic`" in md
    assert "separate the 2- and 4-layer" not in md  # the ranges overlap
    assert "1 of these 1 intervals exclude zero" in md


def test_partial_ci_separates_information_from_size():
    rng = np.random.default_rng(0)
    n = 400
    size = rng.lognormal(15, 0.5, n)
    glue = 60 + 3 * np.log(size) / 10 + rng.normal(0, 1, n)
    flex = pd.DataFrame({"id": np.arange(n), "glue": glue, "num_params_as_trained": size})
    extra = glue - 3 * np.log(size) / 10 + rng.normal(0, 0.5, n)  # what GLUE holds beyond size, plus noise
    vals = pd.DataFrame({"id": np.arange(n), "informative": extra, "size_only": np.log(size) + rng.normal(0, 1e-3, n)})
    lo, hi = lbm._partial_ci(vals, "informative", flex, bootstrap=500)
    assert 0.2 < lo < hi
    lo, hi = lbm._partial_ci(vals, "size_only", flex, bootstrap=500)
    assert lo < 0.05 and hi > -0.05 and hi - lo < 0.2
    with pytest.raises(KeyError):
        lbm._partial_ci(vals, "missing", flex, bootstrap=100)


def test_proxies_page_table_is_the_leaderboards():
    """docs/proxies.md quotes the leaderboard by hand: every figure of its as-trained table
    must be the leaderboard's (docs/leaderboard.json), to three decimals."""
    import json

    rows = json.loads((ROOT / "docs" / "leaderboard.json").read_text())["leaderboard"]
    names = {"depth_then_width": ("depth_then_width", "trivial baseline (spec)"),
             "depth_width_then_size": ("depth_width_then_size", "trivial baseline (spec)"),
             "depth": ("depth", "trivial baseline (spec)"),
             "head softmax confidence": ("head_softmax_confidence", "live"),
             "SEPT over every Linear": ("sept_all_linear", "live"), "activation distance": ("activation_distance", "live"),
             "head confidence": ("head_confidence", "live"), "FLOPs": ("flops", "live"),
             "parameter count, as trained": ("num_params_as_trained", "analytic count"), "NASWOT": ("naswot", "live"),
             "SEPT (blocks": ("sept", "live"), "NTSR": ("ntsr", "live"), "NTKT": ("ntkt", "live")}
    page = (ROOT / "docs" / "proxies.md").read_text().split("| score | τ-b", 1)[1].split("\n\n", 1)[0]
    checked = 0
    for line in page.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        key = next(k for k in sorted(names, key=len, reverse=True) if k in cells[0])
        proxy, source = names[key]
        r = next(r for r in rows if r["proxy"] == proxy and r["source"] == source and r["semantics"] == "as_trained")
        for cell, cols in zip(cells[1:], (("kendall_tau", "tau_ci_low", "tau_ci_high"),
                                          ("tau_tiebroken", "tau_tiebroken_ci_low", "tau_tiebroken_ci_high"),
                                          ("tau_within_cell", "tau_within_cell_ci_low", "tau_within_cell_ci_high"),
                                          ("partial_tau_given_params",))):
            nums = [float(x.replace("−", "-")) for x in re.findall(r"[−-]?\d+\.\d+", cell)]
            for v, c in zip(nums, cols):
                assert v == pytest.approx(float(r[c]), abs=6e-4), (key, c, v, r[c])
                checked += 1
    assert checked >= 40


def test_a_noise_row_is_marked_and_never_named_by_a_verdict():
    """A row that is rounding noise by construction (the table's provenance lists it) is
    printed with '(noise)' and is never a verdict candidate, however high its tau."""
    lb = pd.DataFrame([
        _row("num_params_as_trained", "analytic count", "as_trained", 0.57, 0.54, 0.60, np.nan, size_like=True),
        _row("depth_width_then_size", "trivial baseline (spec)", "as_trained", 0.76, 0.74, 0.78, 0.0, tb=0.74),
        {**_row("lucky", "live", "authors", 0.95, 0.93, 0.97, 0.5, wc=0.9), "noise": True},
        {**_row("honest", "live", "as_trained", 0.60, 0.58, 0.62, 0.2, wc=0.2), "noise": False},
    ])
    lb["noise"] = lb["noise"].eq(True)
    assert all(p == "honest" for p, _, _ in lbm.verdict_candidates(lb))
    md = lbm.render(lb, bootstrap=100, ceilings=CEIL)
    assert "| lucky (noise) | authors |" in md and "| honest | as_trained |" in md
    verdict = md.split("## Verdict")[1].split("## Published")[0]
    assert "lucky" not in verdict and "`honest`" in verdict
