"""NSC's #FLOPs, SNIP and GradNorm rows on docs/published.md (studies/nsc_rows.py): the
FLOPs formula against hand counts, every figure of the rows against the values and the
formula, and the claim that the two gradient proxies are rounding noise in NSC's protocol.
The selection of SNIP's and GradNorm's Linears is pinned against the NSC authors' model in
tests/reference/test_published_proxies.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from nasbench_bert import Arch
from nasbench_bert import metrics as mt
from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.proxies.nsc import nsc_flops

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # studies/ sits beside the package, outside the wheel


def _stored() -> dict:
    return json.loads((ROOT / "docs" / "published.json").read_text())


def _page() -> str:
    return (ROOT / "docs" / "published.md").read_text()


# -- the formula ---------------------------------------------------------------------------------
@pytest.mark.parametrize("arch,seq_len,want", [
    # H 128, S 128. DSC: S H^2 = 2,097,152; FF 512 x 1: 2 S H 512 = 16,777,216; LT: 2 S H^2 = 4,194,304;
    # FF 1024 x 3: 3 branches of 341, 6 S H 341 = 33,521,664; pooler S H^2 = 2,097,152; classifier 2 H = 256
    ("128/DSC-9-h2-512x1/LT-DFT-h4-1024x3", 128, 58_687_744),
    # H 256, S 128. SA: S H 3H = 25,165,824 + 2 S^2 H = 8,388,608 + S H^2 = 8,388,608 -> 41,943,040, twice;
    # FF 512 x 3: 3 branches of 170, 6 S H 170 = 33,423,360; FF 1024 x 1: 2 S H 1024 = 67,108,864;
    # pooler 8,388,608; classifier 512
    ("256/SA-SDP-h4-512x3/SA-WMA-h2-1024x1", 128, 192_807_424),
    # H 128, S 64. LT: 2 S H^2 = 2,097,152; FF 512 x 1: 2 S H 512 = 8,388,608; SA: S H 3H = 3,145,728
    # + 2 S^2 H = 1,048,576 + S H^2 = 1,048,576; FF 1024 x 3: 6 S H 341 = 16,760,832; pooler 1,048,576; 256
    ("128/LT-DCT-h2-512x1/SA-SDP-h2-1024x3", 64, 33_538_304),
])
def test_nsc_flops_is_their_mac_count_by_hand(arch, seq_len, want):
    assert nsc_flops(arch, seq_len) == want
    assert nsc_flops(Arch.coerce(arch), seq_len) == want
    if seq_len == 128:
        assert nsc_flops(arch) == want  # their S = 128 is the default


def test_nsc_flops_refuses_a_bad_sequence_length():
    for bad in (0, -1, 1.5, True, "128"):
        with pytest.raises(InvalidArgumentError, match="seq_len"):
            nsc_flops("128/DSC-9-h2-512x1/LT-DFT-h4-1024x3", bad)


# -- the page's rows -----------------------------------------------------------------------------
def test_flops_row_is_the_formula_on_500_archs(bench):
    """The #FLOPs row recomputed from the formula with the package's metrics equals the
    JSON and the page, and reproduces NSC's tau 0.552 (10 %-PW 0.332 against their 0.329)."""
    from nasbench_bert.sizes import flexibert_num_params

    f = _stored()["nsc_table"]["flops"]
    df = bench.to_pandas().sort_values("id")
    assert list(df["id"]) == list(range(500))
    x = np.array([nsc_flops(a) for a in df["arch"]], float)
    y = df["glue"].to_numpy(float)
    size = np.array([flexibert_num_params(a, "as_specified") for a in df["arch"]], float)
    tau, pw = mt.kendall_tau_b(x, y), mt.tau_pw(x, y, size)
    assert (round(tau, 3), round(pw, 3)) == (0.552, 0.332)
    fig = f["figures"]
    assert fig["n"] == 500
    assert fig["tau"] == pytest.approx(tau, abs=5e-5) and fig["pw10"] == pytest.approx(pw, abs=5e-5)
    assert fig["tau_tb"] == pytest.approx(mt.kendall_tau_tiebroken(x, y), abs=5e-5)
    assert fig["rho"] == pytest.approx(mt.spearman_rho(x, y), abs=5e-5)
    assert f["distinct"] == len(np.unique(x))
    assert (f["paper"]["tau"], f["paper"]["pw10"]) == (0.552, 0.329)
    row = next(ln for ln in _page().splitlines() if ln.startswith("| #FLOPs (their MAC formula"))
    assert f"| 0.552, 0.329 | {tau:.3f} [" in row and f"/ {pw:.3f} |" in row


def test_gradient_rows_follow_from_their_values(bench):
    """Every SNIP / GradNorm figure recomputed from the per-arch values the JSON stores; the
    page prints them as noise with no verdict word; and the values are rounding error: the
    float64 gradient is ~1e-9 of the float32 one and both are negligible beside a gradient
    that does not vanish."""
    from studies import nsc_rows
    from studies.published import describe_ids

    g = _stored()["nsc_table"]["gradients"]
    glue = bench.to_pandas().set_index("id")["glue"]
    ids = list(nsc_rows.GRAD_IDS)
    assert g["ids"] == describe_ids(ids) and g["n"] == len(ids)
    y = glue.loc[ids].to_numpy(float)
    archs = [Arch.coerce(a) for a in bench.to_pandas().set_index("id")["arch"].loc[ids]]
    depth = np.array([len(a.layers) for a in archs], float)
    cells = depth * 1000 + np.array([a.hidden_size for a in archs], float)
    lt = np.array([sum(x.operation_type == "LT" for x in a.layers) for a in archs], float)
    runs = {r["label"]: r for r in g["runs"]}
    assert list(runs) == [r.label for r in nsc_rows.RUNS]
    for r in g["runs"]:
        for p in ("snip", "grad_norm"):
            x = np.array(r[p]["values"], float)
            assert len(x) == len(ids) and r[p]["figures"]["n"] == len(ids)
            assert r[p]["figures"]["tau"] == pytest.approx(mt.kendall_tau_b(x, y), abs=5e-5), (r["label"], p)
            assert r[p]["figures"]["rho"] == pytest.approx(mt.spearman_rho(x, y), abs=5e-5), (r["label"], p)
            assert r[p]["tau_within_cell_tb"] == pytest.approx(mt.tau_within_cell_tb(x, y, cells), abs=5e-5)
            assert r[p]["tau_with"]["lt_layers"] == pytest.approx(mt.kendall_tau_b(x, lt), abs=5e-5)
            assert r[p]["tau_with"]["layers"] == pytest.approx(mt.kendall_tau_b(x, depth), abs=5e-5)
            assert (r[p]["median"], r[p]["min"], r[p]["max"]) == (float(np.median(x)), x.min(), x.max())
    for q in g["pairs"]:
        xa, xb = (np.array(runs[k][q["proxy"]]["values"], float) for k in (q["a"], q["b"]))
        assert q["tau_between"] == pytest.approx(mt.kendall_tau_b(xa, xb), abs=5e-5)
        assert q["max_rel_diff"] == pytest.approx(float(np.max(np.abs(xa - xb) / np.maximum(xa, xb))), rel=1e-12)
        assert q["tau_change"] == pytest.approx(mt.kendall_tau_b(xb, y) - mt.kendall_tau_b(xa, y), abs=1e-4)
    f32, f64 = runs["float32, 1 thread, train"]["grad_norm"], runs["float64, 1 thread, train"]["grad_norm"]
    ref = g["reference"]
    assert ref["run"] == "float64, 1 thread, train" and len(ref["values"]) == len(ids)
    assert f64["max"] < 1e-9 < f32["min"] and f32["max"] < 1e-2 < 1.0 < min(ref["values"])
    assert ref["median_ratio"] == pytest.approx(float(np.median(np.array(f64["values"]) / np.array(ref["values"]))))
    page = _page()
    for name in ("SNIP", "GradNorm"):
        row = next(ln for ln in page.splitlines() if ln.startswith(f"| {name} (float32, 1 thread, train) |"))
        assert row.endswith("| noise | noise | noise |")
        assert not any(w in row for w in ("above", "below", "level"))
    assert f"GradNorm's median is {f32['median']:.1e} in float32 and {f64['median']:.1e} in float64" in page
    first = g["runs"][0]
    assert (f"within a (layers, hidden) cell their tie-broken tau against GLUE is "
            f"{first['snip']['tau_within_cell_tb']:+.3f} (SNIP) and {first['grad_norm']['tau_within_cell_tb']:+.3f}") in page


def test_the_page_still_renders_without_the_rows():
    """A JSON without ``nsc_table`` (the page before these rows) renders without the section."""
    from studies import published as pub

    stored = _stored()
    assert "## NSC's table, the other rows" in pub.render(stored)
    del stored["nsc_table"]
    assert "## NSC's table, the other rows" not in pub.render(stored)


# -- the NSC authors' SNIP and GradNorm on this package's model ------------------------------------
@pytest.mark.torch
def test_nsc_gradients_vanish_and_snip_leaves_out_the_embedding_projection():
    """On an H = 256 arch (which has an embedding projection): with a random cotangent the
    two sums are those of the named parameters (SNIP: the encoder layers' Linear weights
    only; GradNorm: every Linear weight); with NSC's ones the float64 gradient is rounding
    error (~1e-13, against ~1e4 with the random cotangent)."""
    torch = pytest.importorskip("torch")
    from torch import nn

    from nasbench_bert.proxies.inputs import make_batch
    from nasbench_bert.proxies.protocols import W_PCA_NSC
    from studies.nsc_rows import nsc_gradients, nsc_model

    arch = "256/DSC-5-h2-512x3/LT-DCT-h4-1024x1"
    batch = make_batch(W_PCA_NSC.batch)
    with torch.random.fork_rng(devices=[]):
        model = nsc_model(arch, "float64", train=False)
        cot = torch.randn((*batch.input_ids.shape, 256), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        snip, gn = nsc_gradients(model, batch, cot)
        linear = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, nn.Linear)}
        params = dict(model.named_parameters())
        assert "embeddings.project.weight" in linear
        with torch.no_grad():
            want_snip = sum(float((params[n] * params[n].grad).abs().sum()) for n in linear if n.startswith("layers."))
            want_gn = sum(float(params[n].grad.norm()) for n in linear)
            w = params["embeddings.project.weight"]
            project = float((w * w.grad).abs().sum())
        assert project > 0 and snip == pytest.approx(want_snip, rel=1e-12) and gn == pytest.approx(want_gn, rel=1e-12)
        assert gn > 1e2
        ones_snip, ones_gn = nsc_gradients(nsc_model(arch, "float64", train=True), batch)
        assert 0 < ones_gn < 1e-9 and 0 < ones_snip < 1e-9


def test_nsc_rows_flag_refuses_in_one_line_before_any_work(tmp_path, capsys):
    """``--nsc-rows`` adds rows to an existing JSON: with another mode, or without the JSON,
    it stops with one line naming the flag (exit 2) and writes nothing."""
    from studies import published as pub

    for argv, words in ((["--nsc-rows", "--small"], "does not combine with --small"),
                        (["--nsc-rows", "--render-only"], "does not combine with --render-only"),
                        (["--nsc-rows", "--out", str(tmp_path / "p.md")], "p.json does not exist")):
        with pytest.raises(SystemExit) as e:
            pub.main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and "--nsc-rows" in err[-1] and words in err[-1], argv
    assert list(tmp_path.iterdir()) == []
