"""PyTorch models: exact parameter counts, forward/backward everywhere, FLOPs, masks."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from nasbench_bert import Arch, Layer  # noqa: E402
from nasbench_bert.models import (  # noqa: E402
    ElectraPair, FlexiBERTEncoder, SequenceClassifier, build_flexibert, build_nlp_rnn, count_flops, flexibert_flops,
    num_params,
)
from nasbench_bert.sizes import flexibert_num_params, nlp_num_params  # noqa: E402
from nasbench_bert.spaces.flexibert import OPERATIONS  # noqa: E402

pytestmark = pytest.mark.torch


def test_seed_compat_counts_equal_stored_for_all_500(bench):
    stored = bench.data.table("flexibert_proxies").to_pandas().set_index("id")["num_params_authors"]
    with torch.device("meta"):
        for i, a in enumerate(bench.archs):
            n = num_params(FlexiBERTEncoder(a, "seed_compat"))
            assert n == stored[bench.to_arrow()["id"][i].as_py()], a
            assert num_params(FlexiBERTEncoder(a, "faithful")) == flexibert_num_params(a, "faithful")


def test_faithful_counts_are_the_table_column(bench):
    df = bench.to_pandas()
    with torch.device("meta"):
        for a, n in zip(bench.archs[:50], df.num_params_as_specified[:50]):
            assert num_params(FlexiBERTEncoder(a, "faithful")) == n


def test_nlp_counts_equal_all_345_wikitext2_logs(wt2_logs):
    with torch.device("meta"):
        for d in wt2_logs:
            m = build_nlp_rnn(d["recepie"], 33278)
            assert num_params(m) == d["num_params"] == nlp_num_params(d["recepie"], 33278)


COMBOS = list(itertools.product(OPERATIONS, (128, 256), (2, 4), (2, 4)))


@pytest.mark.parametrize("op, hidden, heads, layers", COMBOS, ids=lambda v: str(v))
def test_forward_backward_every_combination(op, hidden, heads, layers):
    layer = Layer(op[0], op[1], heads, 512, 1)
    arch = Arch(hidden, tuple([layer] + [Layer("SA", "SDP", 2, 512, 3)] * (layers - 1)))
    m = build_flexibert(arch, seed=1)
    ids = torch.randint(0, 30522, (2, 12))
    mask = torch.ones(2, 12)
    mask[1, 7:] = 0
    out = m(ids, mask)
    assert out.shape == (2, 12, hidden) and torch.isfinite(out).all()
    out.sum().backward()
    grads = [p.grad for p in m.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_padding_does_not_change_real_tokens():
    for s in ("128/SA-WMA-h2-512x1/DSC-9-h4-512x1", "256/DSC-5-h4-512x1/SA-SDP-h2-1024x3"):
        m = build_flexibert(s, seed=0).eval()
        ids = torch.randint(0, 30522, (1, 10))
        short = m(ids[:, :6], torch.ones(1, 6))
        padded = m(ids, torch.tensor([[1.0] * 6 + [0.0] * 4]))
        torch.testing.assert_close(short, padded[:, :6], atol=1e-5, rtol=1e-4)


def test_deterministic_init_and_semantics():
    a = "256/LT-DCT-h2-512x3/SA-SDP-h4-1024x1"
    x, y = build_flexibert(a, seed=3), build_flexibert(a, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(x.parameters(), y.parameters()))
    z = build_flexibert(a, seed=4)
    assert not all(torch.equal(p, q) for p, q in zip(x.parameters(), z.parameters()))
    assert build_flexibert("128/SA-SDP-h2-512x1/SA-SDP-h2-512x1", "seed_compat").hidden_size == 256
    with pytest.raises(ValueError, match="allowed values"):
        build_flexibert(a, semantics="paper")


def test_dct_is_orthonormal():
    from nasbench_bert.models.flexibert import dct_matrix
    import scipy.fft

    d = dct_matrix(8, torch.float64)
    torch.testing.assert_close(d @ d.T, torch.eye(8, dtype=torch.float64))
    x = torch.randn(8, dtype=torch.float64)
    torch.testing.assert_close(d @ x, torch.from_numpy(scipy.fft.dct(x.numpy(), norm="ortho")))


@pytest.mark.parametrize("arch", ["128/SA-SDP-h2-512x1/SA-WMA-h4-1024x3", "256/LT-DCT-h2-512x1/SA-SDP-h4-512x3",
                                  "256/DSC-5-h2-512x3/DSC-9-h4-1024x1", "128/DSC-9-h4-512x1/LT-DFT-h2-512x1"])
def test_analytic_flops_equal_torch_counter(arch):
    m = build_flexibert(arch).eval()
    ids = torch.randint(0, 30522, (2, 16))
    assert count_flops(m, ids) == flexibert_flops(arch, 2, 16)


def test_electra_pair_and_classifier():
    pair = ElectraPair("256/SA-SDP-h4-512x1/DSC-9-h4-1024x3", seed=0)
    assert pair.generator.hidden_size == 64
    assert pair.generator.embeddings.word is pair.discriminator.embeddings.word  # shared
    ids = torch.randint(0, 30522, (2, 8))
    g = pair.generator_logits(ids)
    d = pair.discriminator_logits(ids)
    assert g.shape == (2, 8, 30522) and d.shape == (2, 8)
    (g.logsumexp(-1).mean() + d.mean()).backward()
    assert torch.isfinite(pair.discriminator.embeddings.word.weight.grad).all()
    clf = SequenceClassifier(build_flexibert("128/LT-DFT-h2-512x1/SA-SDP-h2-512x1"), num_labels=3)
    assert clf(ids).shape == (2, 3)


def test_forward_backward_all_345_recipes(wt2_logs):
    torch.manual_seed(0)
    for d in wt2_logs:
        m = build_nlp_rnn(d["recepie"], 50)
        toks = torch.randint(0, 50, (3, 2))
        logits, states, extra = m(toks, return_states=True)
        assert logits.shape == (3, 2, 50) and torch.isfinite(logits).all(), d["_log_name"]
        assert [x.shape[-1] for x in extra["incoming"]] == [600, 600, 400]
        assert torch.equal(extra["incoming"][0][0], torch.zeros(2, 600))  # h_{-1} = 0
        logits.sum().backward()
        assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


def test_nlp_vocab_validation():
    with pytest.raises(ValueError, match="vocab_size"):
        build_nlp_rnn({"h_new_0": {"op": "linear", "input": ["x", "h_prev_0"]}}, 0)
