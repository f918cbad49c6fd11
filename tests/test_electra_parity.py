"""The builders' ELECTRA equals Hugging Face transformers' ELECTRA.

With weights copied, an all-SDP arch (one head count, num_feed_forward 1, so that
transformers' ``ElectraConfig`` can express it) under ``as_trained`` semantics gives the
same outputs as ``transformers.ElectraForPreTraining`` (discriminator),
``ElectraForMaskedLM`` (generator) and ``ElectraForSequenceClassification`` (GLUE head),
in eval mode, with and without padding, to <= 1e-10 in float64. The defaults the builders train with - init
N(0, 0.02), LayerNorm eps 1e-12, dropout 0.1 on hidden states and attention
probabilities - are ELECTRA's too.
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from nasbench_bert import Arch  # noqa: E402
from nasbench_bert.models import ElectraPair, SequenceClassifier, build_flexibert  # noqa: E402
from nasbench_bert.semantics import AS_TRAINED  # noqa: E402

pytestmark = pytest.mark.torch

#: float64 on both sides; a LayerNorm eps of 1e-5 instead of ELECTRA's 1e-12 moves the
#: outputs by ~1e-6, so this tolerance tells the two apart
TOL = 1e-10
ARCHS = ["256/SA-SDP-h4-512x1/SA-SDP-h4-1024x1", "128/SA-SDP-h2-512x1/SA-SDP-h2-1024x1/SA-SDP-h2-512x1/SA-SDP-h2-512x1"]


def hf_config(arch: Arch, hidden: int | None = None, **kw) -> "transformers.ElectraConfig":
    H = hidden or arch.hidden_size
    return transformers.ElectraConfig(
        vocab_size=30522, embedding_size=128, hidden_size=H, num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.layers[0].num_operation_heads, intermediate_size=4 * H, hidden_act="gelu",
        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
        layer_norm_eps=1e-12, attn_implementation="eager", **kw)


_ENCODER_RULES = [
    (r"embeddings\.word_embeddings\.weight", "embeddings.word.weight"),
    (r"embeddings\.position_embeddings\.weight", "embeddings.position.weight"),
    (r"embeddings\.token_type_embeddings\.weight", "embeddings.token_type.weight"),
    (r"embeddings\.LayerNorm\.(weight|bias)", "embeddings.norm.{0}"),
    (r"embeddings_project\.(weight|bias)", "embeddings.project.{0}"),
    (r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.(weight|bias)", "layers.{0}.operation.attention.{1}.{2}"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense\.(weight|bias)", "layers.{0}.operation.output.{1}"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(weight|bias)", "layers.{0}.operation.norm.{1}"),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.(weight|bias)", "layers.{0}.feed_forward.layers.0.{1}"),
    (r"encoder\.layer\.(\d+)\.output\.dense\.(weight|bias)", "layers.{0}.feed_forward.out.{1}"),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm\.(weight|bias)", "layers.{0}.feed_forward.norm.{1}"),
]


def copy_weights(hf: torch.nn.Module, ours: dict[str, torch.Tensor], rules: list[tuple[str, str]]) -> None:
    """Load ``ours`` (our names) into the HF model through ``rules``; every HF tensor
    must be covered exactly once."""
    sd = hf.state_dict()
    new = {}
    for k in sd:
        if k.endswith("position_ids") or k.endswith("token_type_ids"):
            new[k] = sd[k]
            continue
        for pattern, template in rules:
            m = re.fullmatch(pattern, k)
            if m:
                src = template.format(*m.groups())
                assert ours[src].shape == sd[k].shape, (k, src)
                new[k] = ours[src]
                break
        else:
            raise AssertionError(f"no rule for {k}")
    hf.load_state_dict(new, strict=True)


def _inputs():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 30522, (3, 20), generator=g)
    mask = torch.ones(3, 20, dtype=torch.long)
    mask[2, 12:] = 0
    tt = torch.zeros(3, 20, dtype=torch.long)
    tt[:, 10:] = 1
    return ids, mask, tt


def _prefixed(prefix: str) -> list[tuple[str, str]]:
    return [(rf"electra\.{p}", f"{prefix}.{t}") for p, t in _ENCODER_RULES]


@pytest.mark.parametrize("s", ARCHS)
def test_discriminator_equals_electra_for_pretraining(s):
    a = Arch.coerce(s)
    pair = ElectraPair(a, AS_TRAINED, seed=0).double().eval()
    hf = transformers.ElectraForPreTraining(hf_config(a)).double().eval()
    rules = _prefixed("discriminator") + [(r"discriminator_predictions\.dense\.(weight|bias)", "discriminator_head.dense.{0}"),
                                          (r"discriminator_predictions\.dense_prediction\.(weight|bias)",
                                           "discriminator_head.prediction.{0}")]
    copy_weights(hf, pair.state_dict(), rules)
    ids, mask, tt = _inputs()
    with torch.no_grad():
        for m in (mask, torch.ones_like(mask)):
            ours = pair.discriminator_logits(ids, m, tt)
            ref = hf(input_ids=ids, attention_mask=m, token_type_ids=tt).logits
            assert float((ours - ref).abs().max()) <= TOL


@pytest.mark.parametrize("s", ARCHS)
def test_generator_equals_electra_for_masked_lm(s):
    a = Arch.coerce(s)
    pair = ElectraPair(a, AS_TRAINED, seed=1).double().eval()
    assert pair.generator.hidden_size == a.hidden_size // 4
    hf = transformers.ElectraForMaskedLM(hf_config(a, hidden=a.hidden_size // 4)).double().eval()
    rules = _prefixed("generator") + [
        (r"generator_predictions\.dense\.(weight|bias)", "generator_head.dense.{0}"),
        (r"generator_predictions\.LayerNorm\.(weight|bias)", "generator_head.norm.{0}"),
        (r"generator_lm_head\.weight", "generator_head.word.weight"),
        (r"generator_lm_head\.bias", "generator_head.bias"),
    ]
    copy_weights(hf, pair.state_dict(), rules)
    ids, mask, tt = _inputs()
    with torch.no_grad():
        ours = pair.generator_logits(ids, mask, tt)
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=tt).logits
    assert float((ours - ref).abs().max()) <= TOL


@pytest.mark.parametrize("s", ARCHS)
def test_glue_head_equals_electra_for_sequence_classification(s):
    a = Arch.coerce(s)
    clf = SequenceClassifier(build_flexibert(a, AS_TRAINED, seed=2), num_labels=3, head="electra_hf").double().eval()
    hf = transformers.ElectraForSequenceClassification(hf_config(a, num_labels=3)).double().eval()
    rules = _prefixed("encoder") + [(r"classifier\.dense\.(weight|bias)", "head.1.{0}"),
                                    (r"classifier\.out_proj\.(weight|bias)", "head.4.{0}")]
    copy_weights(hf, clf.state_dict(), rules)
    ids, mask, tt = _inputs()
    with torch.no_grad():
        ours = clf(ids, mask, tt)
        ref = hf(input_ids=ids, attention_mask=mask, token_type_ids=tt).logits
    assert float((ours - ref).abs().max()) <= TOL


def test_builder_defaults_are_electras():
    """Init N(0, 0.02) truncated at 2 std (ELECTRA's TF initializer), zero biases,
    LayerNorm eps 1e-12 and weight 1, dropout 0.1 on hidden states and attention."""
    pair = ElectraPair("256/SA-SDP-h4-512x1/SA-SDP-h4-1024x3", seed=0)
    cfg = transformers.ElectraConfig()
    lin = [m for m in pair.modules() if isinstance(m, torch.nn.Linear)]
    w = torch.cat([m.weight.flatten() for m in lin])
    w = w.detach()
    assert abs(float(w.std()) - 0.02 * 0.8796) < 1e-3  # std of N(0, 1) truncated at 2: 0.8796
    assert float(w.abs().max()) <= 0.04 + 1e-7
    assert all(float(m.bias.detach().abs().max()) == 0 for m in lin if m.bias is not None)
    norms = [m for m in pair.modules() if isinstance(m, torch.nn.LayerNorm)]
    assert {m.eps for m in norms} == {cfg.layer_norm_eps} == {1e-12}
    drops = {m.p for m in pair.modules() if isinstance(m, torch.nn.Dropout)}
    assert drops == {cfg.hidden_dropout_prob} == {cfg.attention_probs_dropout_prob} == {0.1}
    # attention-probability dropout exists and acts in train mode
    att = pair.discriminator.layers[0].operation.attention
    assert isinstance(att.dropout, torch.nn.Dropout) and att.dropout.p == 0.1
    pair.train()
    ids = torch.randint(1000, 30522, (2, 16))
    a1, a2 = pair.discriminator_logits(ids), pair.discriminator_logits(ids)
    assert not torch.equal(a1, a2)
