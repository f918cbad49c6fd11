"""Semantics: one arch string, three models - each pinned to its reference.

* ``authors``: parameter counts equal the stored "Number of Parameters" and the hooks of
  our proxy protocol count exactly what the stored table's raw/normalised pairs imply
  (500/500 archs, every proxy family); the stored raw activation distance carries the
  notebook's hook-accumulation factor, reconstructed exactly.
* ``as_trained``: equals the authors' TensorFlow graph (``tests/reference/data/tf_as_trained.json.gz``,
  made by executing that code) for 500/500 archs.
* the LT transforms equal scipy's FFT/DCT in float64.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from nasbench_bert.semantics import AS_SPECIFIED, AS_TRAINED, AUTHORS, SEMANTICS, get_semantics
from nasbench_bert.sizes import flexibert_num_params
from nasbench_bert.spaces.flexibert import Arch

from nasbench_bert.data.release import stored_hook_multiplicity

HERE = Path(__file__).resolve().parent
TF_REFERENCE = HERE / "reference" / "data" / "tf_as_trained.json.gz"


def test_names_and_aliases():
    assert get_semantics("faithful") is AS_SPECIFIED and get_semantics("seed_compat") is AUTHORS
    assert get_semantics("as_trained") is AS_TRAINED and get_semantics(AUTHORS) is AUTHORS
    assert set(SEMANTICS) == {"authors", "as_trained", "as_specified"}
    for bad in ("paper", None, 3, ["authors"]):
        with pytest.raises(ValueError, match="allowed values: \\['authors', 'as_trained', 'as_specified'\\]"):
            get_semantics(bad)


def test_plans():
    a = Arch.coerce("128/LT-DCT-h2-512x3/DSC-9-h4-1024x1")
    p = AS_TRAINED.plan(a)
    assert p.hidden == 128 and [lp.mixing for lp in p.layers] == ["SDP", "SDP"]
    assert [lp.ff_widths for lp in p.layers] == [(512, 512, 512), (512,)]  # 4H = 512, then F
    assert [lp.heads for lp in p.layers] == [2, 4]
    q = AUTHORS.plan(a)
    assert q.hidden == 256 and [lp.mixing for lp in q.layers] == ["DCT", "DSC"]
    assert [lp.ff_widths for lp in q.layers] == [(1024,) * 3, (1024,)]
    r = AS_SPECIFIED.plan(a)
    assert r.hidden == 128 and [lp.ff_widths for lp in r.layers] == [(512,) * 3, (1024,)]
    assert r.block_widths == (128, 128)
    g = AS_TRAINED.generator_plan("256/SA-SDP-h4-512x3/SA-SDP-h2-1024x1")
    assert g.hidden == 64 and [lp.ff_widths for lp in g.layers] == [(256, 512, 512), (256,)]


def test_authors_counts_equal_the_stored_column(release_entries, bench):
    stored = bench.data.table("flexibert_proxies").to_pandas().set_index("id")["num_params_authors"]
    for e in release_entries:
        a = Arch.from_release(e["hparams"]["model_hparam_overrides"])
        assert flexibert_num_params(a, "authors") == stored[e["id"]]


# -- the stored table's hook counts ----------------------------------------------------------
def _stored_csv():
    import pandas as pd

    from conftest import TFN

    return pd.read_csv(TFN / "BERT_results_activation.csv").set_index("ID")


def test_stored_activation_distance_carries_the_hook_multiplicity(release_entries, bench):
    """raw / normalised = (hooks registered so far) x (activation calls) for 500/500."""
    d = _stored_csv()
    mult = stored_hook_multiplicity(release_entries)
    table = bench.data.table("flexibert_proxies").to_pandas().set_index("id")
    assert table.activation_distance_hook_multiplicity.to_dict() == mult
    for e in release_entries:
        calls = sum(lay["num_feed_forward"] for lay in e["hparams"]["model_hparam_overrides"]["nas_config"]["encoder_layers"])
        ratio = d.loc[e["id"], "Activation Distance"] / d.loc[e["id"], "Activation Distance Normalized"]
        assert ratio == pytest.approx(mult[e["id"]] * calls, rel=1e-6), e["id"]


def test_our_authors_hooks_count_what_the_stored_table_implies(release_entries):
    """For every proxy family, the stored raw / normalised ratio is the number of summed
    modules or hook outputs; our ``authors`` protocol sums over exactly as many, for all
    500 archs (models built on the meta device: no weights, no forward)."""
    torch = pytest.importorskip("torch")
    from torch import nn

    from nasbench_bert.models import FlexiBERTEncoder
    from nasbench_bert.proxies import bert
    from nasbench_bert.proxies.capture_bert import _head_modules

    d = _stored_csv()
    mult = stored_hook_multiplicity(release_entries)
    with torch.device("meta"):
        for e in release_entries:
            m = FlexiBERTEncoder(Arch.from_release(e["hparams"]["model_hparam_overrides"]), AUTHORS)
            ours = {
                "Head Confidence": sum(len(_head_modules(layer.operation)) for layer in m.layers),
                "Head Softmax Confidence": sum(isinstance(x, nn.Softmax) for layer in m.layers for x in layer.operation.modules()),
                "Synaptic Diversity": sum(len(bert._op_linears(layer)) for layer in m.layers),
                "Synaptic Saliency": sum(len(bert._ff_linears(layer)) for layer in m.layers),
                "Head Importance": sum(sum(x.weight.shape[0] >= 128 for x in bert._inner_linears(layer)) for layer in m.layers),
            }
            for col, n in ours.items():
                ratio = d.loc[e["id"], col] / d.loc[e["id"], col + " Normalized"]
                assert ratio == pytest.approx(n, rel=1e-6), (e["id"], col, ratio, n)
            # activation calls: one per feed-forward Linear but the output projection, times
            # the notebook's hook multiplicity
            calls = sum(len(layer.feed_forward.layers) for layer in m.layers)
            ratio = d.loc[e["id"], "Activation Distance"] / d.loc[e["id"], "Activation Distance Normalized"]
            assert ratio == pytest.approx(mult[e["id"]] * calls, rel=1e-6)


# -- as trained: the TF graph ---------------------------------------------------------------
@pytest.fixture(scope="module")
def tf_reference() -> dict:
    if not TF_REFERENCE.is_file():
        pytest.fail("tests/reference/data/tf_as_trained.json.gz is missing (make it with tests/reference/tf_as_trained.py)")
    return json.loads(gzip.decompress(TF_REFERENCE.read_bytes()))


# -- LT transforms --------------------------------------------------------------------------
def test_lt_transforms_equal_scipy_in_float64():
    torch = pytest.importorskip("torch")
    import scipy.fft

    from nasbench_bert.models.flexibert import LTOperation, dct_matrix

    x = np.random.default_rng(0).normal(size=(7, 9))
    for norm in ("ortho", None):
        d = dct_matrix(7, torch.float64, norm).numpy()
        np.testing.assert_allclose(d @ x, scipy.fft.dct(x, axis=0, norm=norm), rtol=0, atol=1e-12)
    for kind, ref in (("DFT", lambda h: np.fft.fft2(h).real),
                      ("DCT", lambda h: scipy.fft.dctn(h, axes=(-2, -1), norm=None))):
        op = LTOperation(8, 2, kind, residual=False, dct_norm=None).double()
        xx = torch.randn(2, 5, 8, dtype=torch.float64)
        y = op(xx, None, None)
        h = op.linear(xx).view(2, 5, 2, 4).transpose(1, 2).detach().numpy()
        want = ref(h).transpose(0, 2, 1, 3).reshape(2, 5, 8)
        # float64 all the way: the 0.1 code cast the FFT to float32 (error ~1e-7)
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=0, atol=1e-12)


def test_as_trained_is_the_tf_graph_for_all_500(tf_reference):
    """Per arch and per layer, the ``as_trained`` plan, the analytic counts and the torch
    model equal what the authors' TF code built: attention path, heads, feed-forward
    widths, discriminator / generator / head / finetuning parameter counts."""
    torch = pytest.importorskip("torch")
    from nasbench_bert.models import ElectraPair, FlexiBERTEncoder, SequenceClassifier, num_params
    from nasbench_bert.sizes import feed_forward_params, operation_params, plan_num_params

    archs = tf_reference["archs"]
    assert len(archs) == 500
    with torch.device("meta"):
        for r in archs:
            a = Arch.from_release({"hidden_size": r["hidden_size"], "nas_config": r["nas_config"]})
            plan = AS_TRAINED.plan(a)
            for lp, tl in zip(plan.layers, r["discriminator"]["layers"], strict=True):
                assert tl["attention_path"] == lp.mixing == "SDP"
                assert tl["heads_built"] == lp.heads
                assert tuple(tl["ff_widths"][:-1]) == lp.ff_widths and tl["ff_widths"][-1] == plan.hidden
                assert tl["params"] == operation_params(lp, plan.hidden) + feed_forward_params(plan.hidden, lp.ff_widths)
            gplan = AS_TRAINED.generator_plan(a)
            assert r["generator"]["hidden_size_built"] == gplan.hidden
            for lp, tl in zip(gplan.layers, r["generator"]["layers"], strict=True):
                assert tl["heads_built"] == lp.heads and tuple(tl["ff_widths"][:-1]) == lp.ff_widths
            counts = r["param_counts"]
            assert flexibert_num_params(a, "as_trained") == counts["discriminator_total"]
            assert plan_num_params(gplan) - plan_num_params(gplan, embeddings=False) - counts["embeddings"] \
                == counts["generator_embeddings_project"]
            pair = ElectraPair(a, AS_TRAINED, seed=None)
            assert num_params(pair.discriminator) == counts["discriminator_total"]
            assert num_params(pair) == counts["total"]  # shared embeddings counted once
            assert num_params(pair.generator_head) - pair.generator_head.word.weight.numel() \
                == counts["heads_generator_predictions"]
            assert num_params(pair.discriminator_head) == counts["heads_discriminator_predictions"]
            clf = SequenceClassifier(FlexiBERTEncoder(plan), num_labels=2, head="electra_tf")
            assert num_params(clf) == r["finetuning"]["trainable_params"]


def test_tf_finetuning_layer_rates_are_the_builders(tf_reference):
    """The builders' as-trained recipe uses ELECTRA's layer-wise rates over 12 layers, as
    the TF finetuning graph did (multipliers read from that graph)."""
    pytest.importorskip("torch")
    from nasbench_bert.builders.entry import BENCHMARK_FINETUNE
    from nasbench_bert.builders.glue import layerwise_groups
    from nasbench_bert.models import SequenceClassifier, build_flexibert

    r = next(x for x in tf_reference["archs"] if len(x["nas_config"]["encoder_layers"]) == 4)
    a = Arch.from_release({"hidden_size": r["hidden_size"], "nas_config": r["nas_config"]})
    want = r["finetuning"]["layerwise_lr"]["multiplier_by_key"]
    rec = BENCHMARK_FINETUNE["as_trained"]
    assert r["finetuning"]["config"]["learning_rate"] == rec["learning_rate"]
    assert r["finetuning"]["layerwise_lr"]["n_transformer_layers"] == rec["decay_layers"]
    clf = SequenceClassifier(build_flexibert(a, "as_trained", seed=None), 2)
    groups = layerwise_groups(clf, 1.0, 0.8, 0.01, rec["decay_layers"])
    scale = {}
    for g in groups:
        for p in g["params"]:
            scale[id(p)] = g["lr_scale"]
    assert scale[id(clf.head[1].weight)] == pytest.approx(want["task_specific/"])
    assert scale[id(clf.encoder.embeddings.word.weight)] == pytest.approx(want["/embeddings/"])
    for i, layer in enumerate(clf.encoder.layers):
        assert scale[id(layer.operation.attention.query.weight)] == pytest.approx(want[f"encoder/layer_{i}/"])
