"""The published proxies' parts that can be checked without their authors' code (that
comparison is in tests/reference/test_published_proxies.py): closed forms against direct
counts and exact log-determinants, invariances, protocols, errors, and the page."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from nasbench_bert import Arch
from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.proxies.nsc import (
    ZEROLM_ALPHA, LayerMatrices, choose_alpha, nsc_total, paper_matrices, plan_matrices, psi_mp, zerolm_matrix,
    zerolm_parts,
)
from nasbench_bert.semantics import SEMANTICS

ROOT = Path(__file__).resolve().parent.parent
ARCHS = ["256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3/SA-SDP-h4-512x3/SA-SDP-h4-1024x1",
         "128/DSC-9-h2-512x1/LT-DFT-h4-1024x3", "128/DSC-5-h4-1024x3/SA-SDP-h2-512x1/LT-DCT-h4-512x1/DSC-9-h2-1024x3"]


@pytest.mark.parametrize("m,n", [(1024, 256), (256, 256), (768, 256), (128, 512)])
def test_psi_mp_is_the_log_det_of_a_large_xavier_matrix(m, n):
    """The Marchenko-Pastur closed form against ln det(I + W^T W) of one drawn matrix
    with i.i.d. N(0, 2 / (m + n)) entries: the law's limit, within 0.5 %."""
    rng = np.random.default_rng(0)
    w = rng.normal(0.0, math.sqrt(2.0 / (m + n)), (m, n))
    exact = float(np.linalg.slogdet(np.eye(n) + w.T @ w)[1])
    assert psi_mp(m, n) == pytest.approx(exact, rel=5e-3)
    assert psi_mp(m, n) == psi_mp(n, m)  # symmetric in the shape


def test_zerolm_term_is_the_expected_frobenius_norm():
    rng = np.random.default_rng(1)
    m, n = 512, 128
    draws = [float((rng.normal(0, math.sqrt(2 / (m + n)), (m, n)) ** 2).sum()) / min(m, n) for _ in range(20)]
    assert zerolm_matrix(m, n) == pytest.approx(np.mean(draws), rel=5e-3)  # 4 standard errors
    assert zerolm_matrix(m, n) == pytest.approx(2 * max(m, n) / (m + n))


def test_paper_matrices_are_the_nsc_construction_counted_by_hand():
    a = Arch.coerce(ARCHS[0])  # H 256: SA(3H x H, H x H), LT(2 x H x H), SA, SA; FF split F / n per branch
    mats = paper_matrices(a)
    H = 256
    assert mats[0].attn == ((3 * H, H), (H, H)) and mats[1].attn == ((H, H), (H, H))
    assert mats[0].ffn == ((341, H), (H, 341)) * 3  # 1024 // 3
    assert mats[3].ffn == ((1024, H), (H, 1024))
    per_head = paper_matrices(a, per_head_qkv=True)
    assert per_head[0].attn == ((H, 64),) * 12 + ((H, H),)  # 4 heads x (Q, K, V) of H x H/4


@pytest.mark.torch
@pytest.mark.parametrize("sem", list(SEMANTICS))
def test_plan_matrices_are_the_models_weight_matrices(sem):
    """Every matrix the semantics' closed forms sum over is a weight of the built model:
    the element counts of its Linear weights and DSC pointwise convs, layer by layer."""
    pytest.importorskip("torch")
    from torch import nn

    from nasbench_bert.models import build_flexibert

    for s in ARCHS:
        a = Arch.coerce(s)
        model = build_flexibert(a, sem, seed=0)
        for lm, layer in zip(plan_matrices(SEMANTICS[sem].plan(a)), model.layers):
            want = sorted(m * n for m, n in lm.attn + lm.ffn)
            got = sorted([mod.weight.numel() for mod in layer.modules() if isinstance(mod, nn.Linear)]
                         + [mod.weight.numel() for mod in layer.modules()
                            if isinstance(mod, nn.Conv1d) and mod.groups == 1])
            assert got == want, (sem, s)


def test_nsc_is_invariant_to_layer_order_exactly():
    a = Arch.coerce(ARCHS[2])
    b = Arch(a.hidden_size, tuple(reversed(a.layers)))
    assert nsc_total(paper_matrices(a)) == nsc_total(paper_matrices(b))  # a tie, not a 1e-13 difference
    assert zerolm_parts(paper_matrices(a, per_head_qkv=True)) == zerolm_parts(paper_matrices(b, per_head_qkv=True))
    # and grows with every matrix added
    more = [*paper_matrices(a), LayerMatrices(((256, 256),), ())]
    assert nsc_total(more) > nsc_total(paper_matrices(a))


def test_closed_form_errors_name_the_field():
    with pytest.raises(InvalidArgumentError, match="m = -1"):
        psi_mp(-1, 3)
    with pytest.raises(InvalidArgumentError, match="variance"):
        psi_mp(4, 3, -1.0)
    assert psi_mp(0, 7) == 0.0
    with pytest.raises(InvalidArgumentError, match="equal length"):
        choose_alpha([1, 2, 3], [1, 2], [1, 2, 3])
    with pytest.raises(InvalidArgumentError, match="grid"):
        choose_alpha([1, 2, 3], [1, 2, 3], [1, 2, 3], grid=())


def test_nsc_reproduces_the_paper_and_zerolm_alpha_is_chosen_on_the_first_half(bench):
    """NSC's 0.695 (scipy tau-b against GLUE, 500 archs), and the registered ZeroLM alpha
    is what the NSC authors' rule picks on ids 0-249 alone."""
    from scipy.stats import kendalltau

    from nasbench_bert import proxies

    df = proxies.compute(range(500), ["nsc", "zerolm"], semantics="as_trained", bench=bench)
    flex = bench.to_pandas().set_index("id")
    glue = flex.loc[df["id"], "glue"].to_numpy()
    assert round(float(kendalltau(df["nsc"], glue)[0]), 3) == 0.695
    parts = [zerolm_parts(paper_matrices(a, per_head_qkv=True)) for a in flex.loc[range(250), "arch"]]
    alpha = choose_alpha([p[0] for p in parts], [p[1] for p in parts], flex.loc[range(250), "glue"])
    assert alpha == ZEROLM_ALPHA
    a0 = Arch.coerce(flex.loc[0, "arch"])
    za, zf = zerolm_parts(paper_matrices(a0, per_head_qkv=True))
    assert df.loc[df["id"] == 0, "zerolm"].item() == pytest.approx(zf + ZEROLM_ALPHA * za, rel=1e-15)


def test_published_group_and_spec_scores_build_no_model(monkeypatch):
    from nasbench_bert import proxies
    from nasbench_bert.proxies import engine

    names = {p.name for p in proxies.get("flexibert", "published")}
    assert {"nsc", "nsc_model", "zerolm", "zerolm_model", "w_pca_first", "lpzero", "swap"} <= names
    monkeypatch.setattr(engine, "capture_flexibert", lambda *a, **k: (_ for _ in ()).throw(AssertionError("built")))
    df = proxies.compute([ARCHS[1]], ["nsc", "zerolm_model"], semantics="authors")
    assert df["error"].isna().all() and (df["nsc"] > 0).all()


# -- protocols -------------------------------------------------------------------------------------
@pytest.mark.torch
def test_protocol_sets_semantics_batch_and_seed():
    torch = pytest.importorskip("torch")
    from nasbench_bert import proxies
    from nasbench_bert.proxies.inputs import BatchSpec, make_batch
    from nasbench_bert.proxies.protocols import NSC_EVAL, PROTOCOLS, W_PCA_NSC, get_protocol

    # the NSC authors' W-PCA batch: torch.manual_seed(0); torch.randint(0, vocab, (4, 64))
    torch.manual_seed(0)
    assert torch.equal(make_batch(W_PCA_NSC.batch).input_ids, torch.randint(0, 30522, (4, 64)))
    # their construction: own H, layer 0's F in every layer's stack
    plan = NSC_EVAL.plan(ARCHS[2])
    assert plan.hidden == 128 and [lp.ff_widths for lp in plan.layers] == [(1024,) * 3, (1024,), (1024,), (1024,) * 3]
    df = proxies.compute([ARCHS[1]], ["w_pca_first", "num_params"], protocol="w_pca_nsc")
    r = df.iloc[0]
    assert r.semantics.startswith("nsc_eval~") and r.seed == 42 and r.batch == W_PCA_NSC.batch.key
    same = proxies.compute([ARCHS[1]], ["w_pca_first"], semantics=NSC_EVAL, batch=W_PCA_NSC.batch, seed=42)
    assert same.iloc[0].w_pca_first == r.w_pca_first
    with pytest.raises(InvalidArgumentError, match="protocol"):
        proxies.compute([ARCHS[1]], ["w_pca_first"], protocol=W_PCA_NSC, semantics="authors")
    with pytest.raises(InvalidArgumentError, match="allowed values"):
        get_protocol("nope")
    small = PROTOCOLS["swap"].with_batch(batch_size=4, seq_len=16, source="random")
    assert small.batch == BatchSpec(source="random", batch_size=4, seq_len=16) and small.semantics.name == "authors"
    with pytest.raises(InvalidArgumentError, match="not allowed"):
        PROTOCOLS["swap"].with_batch(colour="red")


# -- model-based proxies, by hand ---------------------------------------------------------------------
@pytest.mark.torch
def test_swap_counts_distinct_sign_patterns():
    torch = pytest.importorskip("torch")
    from nasbench_bert.proxies.swap import count_patterns

    g = torch.Generator().manual_seed(0)
    for b in (3, 16, 45, 90):  # one and several packed columns
        a = torch.randn(b, 400, generator=g)
        a[:, 100:200] = a[:, :100]            # 100 duplicated patterns
        a[:, 200:210] = 0.0                    # one all-zero pattern
        want = len({tuple(torch.sign(a[:, j]).tolist()) for j in range(a.shape[1])})
        assert count_patterns(a) == want


@pytest.mark.torch
def test_swap_and_lpzero_and_w_pca_first_by_hand():
    """On an eval-mode model (the second LPZero pass equals the first): LPZero is the mean
    of the first sum(num_ff) entries of twice the per-layer mean(q^2); SWAP the distinct
    patterns of all activation calls; W-PCA the parameter count times the first FF
    Linear's PCA dimension."""
    torch = pytest.importorskip("torch")
    from nasbench_bert.proxies import engine, make_batch
    from nasbench_bert.proxies.inputs import BatchSpec
    from nasbench_bert.proxies.published import ff_preactivations, pca_dim
    from nasbench_bert.proxies.registry import get
    from nasbench_bert.proxies.swap import count_patterns

    a = Arch.coerce("128/SA-SDP-h2-512x1/LT-DCT-h4-1024x1/DSC-5-h2-512x3/SA-WMA-h4-512x1")  # sum num_ff = 6 < 2L
    batch = make_batch(BatchSpec(batch_size=4, seq_len=16))
    plist = get("flexibert", ["lpzero", "swap", "w_pca_first"])
    cap = engine.capture_flexibert(a, set().union(*(p.needs for p in plist)), batch, "as_specified", 0, torch.float64)
    row = engine.evaluate(plist, cap)
    m = cap.model
    qs = []
    with torch.no_grad():
        x = m.embeddings(batch.input_ids, batch.token_type_ids)
        ext = (1.0 - batch.attention_mask[:, None, None, :].double()) * -1e4
        for layer in m.layers:
            op = layer.operation
            first = op.linear if hasattr(op, "linear") else op.attention.query
            qs.append(float(first(x).pow(2).mean()))
            x = layer(x, ext, batch.attention_mask)
    seq = (qs + qs)[:6]
    assert row["lpzero"] == pytest.approx(sum(seq) / 6, rel=1e-12)
    acts = torch.cat([t.reshape(4, -1) for _, t in cap.ff_activations], 1)
    assert row["swap"] == count_patterns(acts) <= acts.shape[1]
    dims = [pca_dim(h) for _, h in ff_preactivations(m, cap, first_only=True)]
    assert row["w_pca_first"] == sum(p.numel() for p in m.parameters()) * sum(dims)
    assert row["w_pca_first__layers"] == dims


# -- the page ---------------------------------------------------------------------------------------------
def _studies():
    import sys

    sys.path.insert(0, str(ROOT))  # studies/ sits beside the package, outside the wheel
    import studies.published as published

    return published


def _summary() -> dict:
    return json.loads((ROOT / "docs" / "published.json").read_text())


def test_page_is_the_rendering_of_its_json():
    """docs/published.md is exactly what ``studies.published.render`` makes of
    docs/published.json (regenerate with ``python -m studies.published``), on all 500
    ids, the sweeps on the package's default proxy batch (the leaderboard's)."""
    from nasbench_bert.proxies.sweep import default_batch

    summary = _summary()
    assert (ROOT / "docs" / "published.md").read_text() == _studies().render(summary)
    assert summary["n"] == 500 and not summary["small"]
    assert summary["sweep_ids"] == list(range(500)) and summary["sweep_n"] == 500
    assert summary["sweep_batch"] == default_batch("flexibert").key == "random,B=8,T=128,seed=0"
    nsc = next(r for r in summary["rows"] if r["proxy"].startswith("NSC"))
    assert nsc["reproduced"]["tau"] == pytest.approx(0.695, abs=5e-4)
    for r in summary["rows"]:  # every figure of the main table is on all 500 archs
        assert r["reproduced"]["n"] == 500 and all(u["n"] == 500 for u in r["under"].values()), r["proxy"]


def test_page_verdicts_and_gap_fractions_follow_from_their_figures():
    """Each verdict word is what its paired interval says, the page's counts are those
    words, and each gap fraction is (rho text - rho random) / (paper - rho random)."""
    pub = _studies()
    summary = _summary()
    page = (ROOT / "docs" / "published.md").read_text()
    assert len(summary["verdicts"]) == 6 * 4
    for v in summary["verdicts"]:
        for r in pub.RULES:
            for k in pub.VERDICT_METRICS:
                e = v[r][k]
                assert e["word"] == pub.word(e["lo"], e["hi"]), (v["proxy"], v["column"], r, k)
                if e["word"] == "above":
                    assert e["lo"] > 0
    words = [v["depth_width_then_size"]["tau_tiebroken"]["word"] for v in summary["verdicts"]]
    counted = ", ".join(f"{words.count(w)} {w}" for w in ("above", "level with", "below") if words.count(w))
    assert f"Tie-broken tau against `depth_width_then_size`: {counted} (of 24)" in page
    gaps = summary["text"]["gap"]
    assert {(g["proxy"], g["batch"]) for g in gaps} == {("lpzero", "8 x 128"), ("swap", "8 x 128"), ("swap", "16 x 128")}
    for g in gaps:
        want = (g["rho_text"] - g["rho_random"]) / (g["paper_rho"] - g["rho_random"])
        assert g["fraction"]["value"] == pytest.approx(want, abs=2e-3)
        assert g["fraction"]["lo"] <= g["fraction"]["value"] <= g["fraction"]["hi"]
        assert g["paper_rho"] == pub.PAPER_RHO[g["proxy"]]


def test_describe_ids_and_word():
    pub = _studies()
    assert pub.describe_ids(range(500)) == "all 500 ids"
    assert pub.describe_ids(range(0, 500, 10)) == "every 10th id"
    assert pub.describe_ids(range(0, 480, 12)) == "every 12th id, 0-468"
    assert pub.describe_ids([3, 7]) == "2 ids"
    assert (pub.word(0.01, 0.2), pub.word(-0.2, -0.01), pub.word(-0.1, 0.1), pub.word(float("nan"), 0.1)) == \
        ("above", "below", "level with", "undefined")


def _table_bench(bench):
    """The benchmark, when its data holds the proxy-values table (the pinned table, which
    build-data copies into every data folder); else a skip naming what is missing."""
    if not bench.data.has_table("proxy_values"):
        pytest.skip("the test data holds no proxy-values table (nasbench_bert/data/pinned/proxy_values.parquet "
                    "is not pinned yet)")
    return bench


def _scored_table(summary: dict, bench) -> None:
    """The page's JSON scored this table: its record's sha256 is the data folder's (else the
    page is stale: ``python -m studies.published --table-rows`` recomputes its table rows)."""
    got = (summary.get("proxy_values") or {}).get("sha256")
    want = bench.data.manifest["tables"]["proxy_values"]["sha256"]
    assert got == want, f"docs/published.json scored table {got}, the data holds {want}: run --table-rows"


@pytest.mark.torch
def test_table_values_compute_nothing(bench, monkeypatch):
    """The page reads its sweeps from the proxy-values table without computing: with the
    sweep's worker made to fail, the values at the page's ids are the table's, under each
    semantics, and carry the table's batch."""
    from nasbench_bert.proxies import sweep
    from studies import published_runs

    bench = _table_bench(bench)
    monkeypatch.setattr(sweep, "_work", lambda task: (_ for _ in ()).throw(AssertionError("computed")))
    got = published_runs.table_values(bench, [0, 1, 2, 250])
    for sem in published_runs.SEMANTICS:
        table = bench.proxy_values(sem, list(published_runs.MODEL_PROXIES))
        assert got[sem]["ids"] == [0, 1, 2, 250] and got[sem]["batch"] == "random,B=8,T=128,seed=0"
        for p in published_runs.MODEL_PROXIES:
            assert got[sem][p] == table.loc[[0, 1, 2, 250], p].tolist(), (sem, p)


@pytest.mark.torch
def test_sweep_figures_are_the_tables_values(bench):
    """The table's LPZero, SWAP and W-PCA figures under each semantics, recomputed with scipy
    from the proxy-values table on all 500 ids, and SWAP's cap counts."""
    from scipy.stats import kendalltau, spearmanr

    pub = _studies()
    summary = _summary()
    bench = _table_bench(bench)
    _scored_table(summary, bench)
    glue = bench.to_pandas().set_index("id")["glue"]
    rows = {r["proxy"].split(" ")[0]: r for r in summary["rows"]}
    for sem in pub.SEMANTICS:
        df = bench.proxy_values(sem, ["lpzero", "swap", "w_pca_first"]).loc[list(range(500))]
        y = glue.loc[df.index].to_numpy()
        for proxy, key in (("lpzero", "LPZero"), ("swap", "SWAP"), ("w_pca_first", "W-PCA")):
            got = rows[key]["under"][sem]
            assert got["tau"] == pytest.approx(kendalltau(df[proxy], y)[0], abs=1e-4, nan_ok=True), (sem, proxy)
            assert got["rho"] == pytest.approx(spearmanr(df[proxy], y)[0], abs=1e-4, nan_ok=True), (sem, proxy)
        caps = summary["swap_caps"][sem]
        assert caps["at_3^B"] == int((df["swap"] == 3 ** 8).sum()) and caps["at_2^B"] == int((df["swap"] == 2 ** 8).sum())
        assert caps["distinct"] == df["swap"].nunique()


def test_real_text_figures_are_the_companion_files_values(bench, published_values_file):
    """The real-text rows against the page's companion file: rho of the RTE batch (an own
    run) and of random tokens (the table's authors values) recomputed with scipy. (While
    the own runs' values are not shipped, their figures are carried over and the real-text
    section says its random tokens were not the table's.)"""
    from scipy.stats import spearmanr

    from studies import published_values

    pub = _studies()
    summary = _summary()
    if not summary.get("own_runs", {}).get("shipped"):
        pytest.skip("the own runs' per-arch values are not shipped (docs/published.json own_runs)")
    bench = _table_bench(bench)
    _scored_table(summary, bench)
    own = published_values.read(published_values_file)
    text = own["text/RTE"]
    rnd = bench.proxy_values("authors", list(pub.TEXT_PROXIES)).loc[text["ids"]]
    y = bench.to_pandas().set_index("id")["glue"].loc[text["ids"]].to_numpy()
    gap = {(g["proxy"], g["batch"]): g for g in summary["text"]["gap"]}
    for proxy in ("lpzero", "swap"):
        g = gap[proxy, "8 x 128"]
        assert g["rho_text"] == pytest.approx(spearmanr(text[proxy], y)[0], abs=1e-4)
        assert g["rho_random"] == pytest.approx(spearmanr(rnd[proxy], y)[0], abs=1e-4)
        assert g["n"] == len(text["ids"]) == len(pub.TEXT_IDS)


def test_rte_text_is_derived_outside_the_repository(tmp_path):
    """The real text is every RTE sentence pair (train, dev, test), one a line, written
    into the cache folder given, and the same file twice (its digest keys the cache)."""
    import csv

    pub = _studies()
    if not pub.rte_text_available():
        pytest.skip("GLUE RTE is not in the release folder")
    path = pub.rte_text(tmp_path)
    assert path.is_relative_to(tmp_path)
    lines = path.read_text().splitlines()
    want = 0
    for split in pub.RTE_SPLITS:
        with open(pub.release_dir() / "glue-rte" / f"{split}.tsv", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        want += len(rows)
        first = " ".join(f"{rows[0]['sentence1']} {rows[0]['sentence2']}".split())
        assert first in lines
    assert len(lines) == want and all(ln.strip() for ln in lines)
    before = path.stat().st_mtime_ns
    assert pub.rte_text(tmp_path) == path and path.stat().st_mtime_ns == before
