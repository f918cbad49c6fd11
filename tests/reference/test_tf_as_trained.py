"""What the authors' TensorFlow code built for each benchmark arch.

``data/tf_as_trained.json.gz`` is produced by ``tf_as_trained.py`` (beside this file), which
executes the authors' ``tensorflow-model`` code from the upstream release folder. The default
tests here need neither TensorFlow nor the network: they check the committed file against the
release (ids, ``nas_config``, source hashes) and pin the closed-form parameter count it
establishes. The ``reference`` tests rebuild a few archs with TensorFlow and compare; run them
in a venv with ``tensorflow`` (2.x, ``compat.v1``) and ``tf_slim``::

    python -m pytest tests/reference -m reference -o markers=reference
"""

from __future__ import annotations

import hashlib
import gzip
import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
UPSTREAM = Path(os.environ.get("NASBENCH_BERT_RELEASE", REPO.parent / "shared" / "upstream"))
BENCHMARK = UPSTREAM / "training-free-nas" / "data" / "BERT_benchmark.json"
DATA = HERE / "data" / "tf_as_trained.json.gz"

# cover every operation (SA/SDP, SA/WMA, LT/DFT, LT/DCT, DSC/5, DSC/9), both hidden sizes,
# both depths, num_feed_forward 1 and 3, feed_forward_dimension 512 and 1024, 2 and 4 heads
REFERENCE_IDS = (0, 1, 2, 3, 5, 497)

VOCAB, POSITIONS, TOKEN_TYPES, EMBEDDING = 30522, 512, 2, 128


@pytest.fixture(scope="module")
def committed() -> dict:
    return load_reference()


def load_reference() -> dict:
    """The committed output of ``tf_as_trained.py`` (gzipped JSON)."""
    return json.loads(gzip.decompress(DATA.read_bytes()))


@pytest.fixture(scope="module")
def release() -> list[dict]:
    if not BENCHMARK.is_file():
        pytest.skip(f"upstream release not found at {UPSTREAM}")
    return json.loads(BENCHMARK.read_text())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- closed form (pinned) ----

def layer_params(h: int, n_ff: int, f: int) -> int:
    """One encoder layer as the TF code built it (scaled dot-product attention whatever the
    operation): q, k, v, attention-output dense (h x h + bias each), LayerNorm; feed-forward
    h -> 4h, then (n_ff - 1) dense layers -> f, then -> h, LayerNorm."""
    attention = 4 * (h * h + h) + 2 * h
    widths = [h, 4 * h] + [f] * (n_ff - 1) + [h]
    ff = sum(a * b + b for a, b in zip(widths, widths[1:])) + 2 * h
    return attention + ff


def discriminator_params(h: int, layers: list[dict]) -> int:
    """Embeddings (word, position, token type at 128, LayerNorm), a 128 -> h projection when
    h != 128, and the encoder."""
    emb = (VOCAB + POSITIONS + TOKEN_TYPES) * EMBEDDING + 2 * EMBEDDING
    proj = 0 if h == EMBEDDING else EMBEDDING * h + h
    return emb + proj + sum(layer_params(h, x["num_feed_forward"], x["feed_forward_dimension"]) for x in layers)


def pretraining_params(h: int, layers: list[dict]) -> int:
    """Whole ELECTRA pretraining graph: discriminator + generator (hidden h/4, the same layer
    list, its own 128 -> h/4 projection, embeddings shared) + generator head (dense g -> 128,
    LayerNorm, output bias over the vocabulary) + discriminator head (dense h -> h, dense h -> 1)."""
    g = h // 4
    generator = EMBEDDING * g + g + sum(
        layer_params(g, x["num_feed_forward"], x["feed_forward_dimension"]) for x in layers)
    gen_head = g * EMBEDDING + EMBEDDING + 2 * EMBEDDING + VOCAB
    disc_head = h * h + h + h + 1
    return discriminator_params(h, layers) + generator + gen_head + disc_head


# ---------------------------------------------------------------- default suite ----------

def test_committed_file_has_all_500_archs(committed):
    ids = [a["id"] for a in committed["archs"]]
    assert ids == list(range(500))
    assert committed["summary"]["n_archs"] == 500


def test_nas_config_equals_release(committed, release):
    by_id = {e["id"]: e for e in release}
    for a in committed["archs"]:
        overrides = by_id[a["id"]]["hparams"]["model_hparam_overrides"]
        assert a["nas_config"] == overrides["nas_config"], a["id"]
        assert a["hidden_size"] == overrides["hidden_size"], a["id"]


def test_recorded_sources_equal_current_upstream(committed):
    prov = committed["provenance"]
    hashes = prov["upstream_sha256"]
    for must in ("training-free-nas/code/tensorflow-model/model/modeling.py",
                 "training-free-nas/code/tensorflow-model/run_pretraining.py",
                 "training-free-nas/code/tensorflow-model/configure_pretraining.py",
                 "training-free-nas/code/nas_runner.ipynb",
                 "training-free-nas/data/BERT_benchmark.json"):
        assert must in hashes
    if not BENCHMARK.is_file():
        pytest.skip(f"upstream release not found at {UPSTREAM}")
    changed = [rel for rel, sha in hashes.items() if _sha256(UPSTREAM / rel) != sha]
    assert not changed, f"upstream files changed since tf_as_trained.json was made: {changed}"
    for key in ("command", "date_utc", "versions", "platform"):
        assert prov[key]


def test_reference_ids_cover_the_space(release):
    seen = set()
    for i in REFERENCE_IDS:
        o = release[i]["hparams"]["model_hparam_overrides"]
        layers = o["nas_config"]["encoder_layers"]
        seen |= {("H", o["hidden_size"]), ("L", len(layers))}
        for x in layers:
            seen |= {("op", x["operation_type"], x["operation_parameter"]),
                     ("n_ff", x["num_feed_forward"]), ("F", x["feed_forward_dimension"]),
                     ("heads", x["num_operation_heads"])}
    ops = {("SA", "SDP"), ("SA", "WMA"), ("LT", "DFT"), ("LT", "DCT"), ("DSC", 5), ("DSC", 9)}
    assert {("op", *o) for o in ops} <= seen
    assert {("H", 128), ("H", 256), ("L", 2), ("L", 4), ("n_ff", 1), ("n_ff", 3),
            ("F", 512), ("F", 1024), ("heads", 2), ("heads", 4)} <= seen


def test_every_layer_was_scaled_dot_product_attention(committed):
    for a in committed["archs"]:
        for part in ("discriminator", "generator"):
            layers = a[part]["layers"]
            assert len(layers) == a["num_layers"]
            for lay, given in zip(layers, a["nas_config"]["encoder_layers"]):
                assert lay["attention_path"] == "SDP", (a["id"], part, lay["layer"])
                assert lay["heads_built"] == lay["heads_config"] == given["num_operation_heads"]
        assert not any(v for s in a["string_identity"] for v in s.values())
    c = committed["controls"]
    assert {k: v["attention_path"] for k, v in c["flags"].items()} == {
        "default": "SDP", "is_weighted_multiplicative": "WMA", "is_dft": "LT-DFT",
        "is_dct": "LT-DCT", "is_dsc_k9": "DSC"}
    for v in c["interned_strings"].values():
        assert v["operation_type_is_code_constant"] and v["raised"].startswith("TypeError")


def test_feed_forward_widths(committed):
    for a in committed["archs"]:
        h = a["hidden_size"]
        g = a["generator"]["hidden_size_built"]
        assert g == h // 4
        for x, d, gl in zip(a["nas_config"]["encoder_layers"], a["discriminator"]["layers"],
                            a["generator"]["layers"]):
            rest = [x["feed_forward_dimension"]] * (x["num_feed_forward"] - 1)
            assert d["ff_widths"] == [4 * h, *rest, h]
            assert gl["ff_widths"] == [4 * g, *rest, g]


def test_closed_form_parameter_counts(committed):
    for a in committed["archs"]:
        h, layers = a["hidden_size"], a["nas_config"]["encoder_layers"]
        pc = a["param_counts"]
        assert pc["discriminator_total"] == discriminator_params(h, layers), a["id"]
        assert pc["total"] == pretraining_params(h, layers), a["id"]
        for lay, x in zip(a["discriminator"]["layers"], layers):
            assert lay["params"] == layer_params(h, x["num_feed_forward"], x["feed_forward_dimension"])
        ft = a["finetuning"]
        assert ft["encoder_equals_pretraining_discriminator"]
        assert ft["encoder_params"] == pc["discriminator_total"]
        assert ft["trainable_params"] == pc["discriminator_total"] + 2 * h + 2  # RTE: dense h -> 2


# ---------------------------------------------------------------- reference (TensorFlow) --

def _tool():
    pytest.importorskip("tensorflow")
    pytest.importorskip("tf_slim")
    if not BENCHMARK.is_file():
        pytest.skip(f"upstream release not found at {UPSTREAM}")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import tf_as_trained

    return tf_as_trained


@pytest.mark.reference
@pytest.mark.parametrize("arch_id", REFERENCE_IDS)
def test_rebuild_matches_committed(arch_id, committed):
    tool = _tool()
    rec = json.loads(json.dumps(tool.build_arch(arch_id, UPSTREAM)))
    assert rec == committed["archs"][arch_id]


@pytest.mark.reference
def test_controls_match_committed(committed):
    tool = _tool()
    assert json.loads(json.dumps(tool.run_controls(UPSTREAM))) == committed["controls"]
