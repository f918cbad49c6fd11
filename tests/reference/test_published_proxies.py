"""The published proxies against their authors' own code, on the same weights and batch.

Reference code is loaded from ``../shared/upstream/zero-cost`` at test time
(``published_code.py``); the models are the authors' ``modeling_electra.py`` (the
training-free-nas original, LPZero's copy and SWAP's copy). Run in the reference venv::

    python -m pytest -m reference tests/reference/test_published_proxies.py -s

Each test prints its largest difference.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from authors_code import UPSTREAM, reference_model, require_reference
from published_code import lpzero_code, nsc_code, pca_torch, swap_code

torch = pytest.importorskip("torch")

from nasbench_bert import Arch, Layer  # noqa: E402
from nasbench_bert.proxies import engine, make_batch  # noqa: E402
from nasbench_bert.proxies.inputs import BatchSpec  # noqa: E402
from nasbench_bert.proxies.protocols import NSC_EVAL, W_PCA_NSC  # noqa: E402
from nasbench_bert.semantics import AUTHORS  # noqa: E402

pytestmark = pytest.mark.reference


def archs() -> list[Arch]:
    """24 archs holding each of the 48 per-layer choices (every operation and parameter,
    both head counts, both FF widths and counts) once, over both hidden sizes and both
    depths, plus 8 benchmark archs."""
    out = []
    for k in range(24):
        hidden, depth = (128, 256)[k % 2], (2, 4)[(k // 2) % 2]
        rng = np.random.default_rng(k)
        layers = [Layer.from_choice(2 * k), Layer.from_choice(2 * k + 1)]
        layers += [Layer.from_choice(int(rng.integers(48))) for _ in range(depth - 2)]
        out.append(Arch(hidden, tuple(layers)))
    release = json.loads((UPSTREAM / "training-free-nas" / "data" / "BERT_benchmark.json").read_text())
    out += [Arch.from_release(release[i]["hparams"]["model_hparam_overrides"]) for i in range(0, 500, 63)]
    return out


ARCHS = archs()


def test_coverage():
    assert {layer.choice for a in ARCHS for layer in a.layers} == set(range(48))
    assert {(a.hidden_size, a.num_layers) for a in ARCHS} == {(128, 2), (128, 4), (256, 2), (256, 4)}


def _spec(a: Arch):
    from nasbench_bert.proxies.registry import SpecInput

    return SpecInput("flexibert", a, AUTHORS)


# -- NSC and ZeroLM: closed forms -----------------------------------------------------------
def test_nsc_equals_the_authors_construction():
    from nasbench_bert.proxies.nsc import nsc, paper_matrices, psi_mp, zerolm_parts

    ref = nsc_code()
    worst_psi = max(abs(psi_mp(m, n) - ref.psi_mp(m, n)) / ref.psi_mp(m, n)
                    for m in (64, 128, 256, 512, 768, 1024, 3072) for n in (32, 128, 256, 341, 512))
    worst, worst_z = 0.0, 0.0
    for a in ARCHS:
        cfg = a.to_release()["nas_config"]["encoder_layers"]
        want = ref.agg_flat(ref.compute_layer_psis(cfg, a.hidden_size, 1024))
        got = nsc(_spec(a))
        worst = max(worst, abs(got.value - want) / want)
        za, zf = ref.compute_zerolm(cfg, a.hidden_size, 1024)
        ga, gf = zerolm_parts(paper_matrices(a, per_head_qkv=True))
        worst_z = max(worst_z, abs(ga - za) / za, abs(gf - zf) / zf)
    print(f"psi_mp max rel diff {worst_psi:.2e}; NSC {worst:.2e}; ZeroLM parts {worst_z:.2e} over {len(ARCHS)} archs")
    assert worst_psi < 1e-9 and worst < 1e-9 and worst_z < 1e-12


# -- the NSC authors' model for their baselines -------------------------------------------------
def _nsc_reference_model(a: Arch, seed: int):
    """``eval_flexibert.py``'s ``build_model``: the authors' model at the arch's H with
    layer 0's F as ``intermediate_size``, after ``torch.manual_seed(seed)``."""
    from authors_code import authors_modules

    m = authors_modules()
    nas = a.to_release()["nas_config"]
    layers = nas["encoder_layers"]
    cfg = m.ElectraConfig(vocab_size=30522, hidden_size=a.hidden_size, num_hidden_layers=len(layers),
                          num_attention_heads=layers[0]["num_operation_heads"],
                          intermediate_size=layers[0]["feed_forward_dimension"], nas_config=nas)
    torch.manual_seed(seed)
    return m.ElectraModel(cfg)


@pytest.mark.parametrize("k", range(len(ARCHS)), ids=[str(a) for a in ARCHS])
def test_nsc_eval_construction_is_the_reference_model(k):
    """``NSC_EVAL`` built after ``torch.manual_seed(42)`` holds the weights of the NSC
    authors' model bit for bit, and their forward passes agree (eval mode, float32)."""
    require_reference()
    from nasbench_bert.models.flexibert import FlexiBERTEncoder

    a = ARCHS[k]
    ref = _nsc_reference_model(a, 42).eval()
    torch.manual_seed(42)
    ours = FlexiBERTEncoder(NSC_EVAL.plan(a)).eval()
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in ref.parameters())
    ids = make_batch(W_PCA_NSC.batch).input_ids
    with torch.no_grad():
        r = ref(input_ids=ids).last_hidden_state
        o = ours(ids)
    diff = float((r - o).abs().max())
    print(f"{a}: max |diff| {diff:.2e}")
    assert diff < 1e-4


def test_nsc_snip_and_gradnorm_sum_what_eval_flexibert_sums():
    """``studies/nsc_rows.nsc_gradients`` against the NSC authors' ``compute_snip`` and
    ``compute_gradnorm`` (``ranking/eval_flexibert.py``, not in the release: their loops
    are written out here) on their model with the same weights: SNIP sums |w * g| over the
    Linear weights of each ``ElectraLayer``'s ``operation``, ``intermediate`` and ``output``,
    GradNorm sums ||g|| over every ``nn.Linear`` (``embeddings_project`` too). Their ones
    cotangent gives a gradient that vanishes in exact arithmetic (rounding error, which two
    models need not share), so the sums are compared on a random cotangent, float64, eval."""
    require_reference()
    import sys

    from torch import nn

    from authors_code import REPO, authors_modules
    from nasbench_bert.models.flexibert import FlexiBERTEncoder

    sys.path.insert(0, str(REPO))
    from studies.nsc_rows import nsc_gradients

    layer_cls = authors_modules().ElectraLayer
    batch = make_batch(W_PCA_NSC.batch)
    worst, projected = 0.0, 0
    for a in ARCHS:
        ref = _nsc_reference_model(a, 42).double().eval()
        torch.manual_seed(42)
        ours = FlexiBERTEncoder(NSC_EVAL.plan(a)).double().eval()
        cot = torch.randn((*batch.input_ids.shape, a.hidden_size), generator=torch.Generator().manual_seed(0),
                          dtype=torch.float64)
        ref(input_ids=batch.input_ids).last_hidden_state.backward(cot)
        with torch.no_grad():
            snip = sum(float(torch.abs(sub.weight * sub.weight.grad).sum()) for layer in ref.modules()
                       if isinstance(layer, layer_cls) for part in (layer.operation, layer.intermediate, layer.output)
                       for sub in part.modules() if isinstance(sub, nn.Linear) and sub.weight.grad is not None)
            gn = sum(float(m.weight.grad.norm()) for m in ref.modules()
                     if isinstance(m, nn.Linear) and m.weight.grad is not None)
        got = nsc_gradients(ours, batch, cot)
        worst = max(worst, abs(got[0] - snip) / snip, abs(got[1] - gn) / gn)
        projected += a.hidden_size != 128
    print(f"NSC SNIP / GradNorm: max rel diff {worst:.2e} over {len(ARCHS)} archs ({projected} with a projection)")
    assert worst < 1e-9 and projected


# -- W-PCA ----------------------------------------------------------------------------------------
def test_w_pca_nsc_protocol_equals_pca_torch_on_the_reference_model():
    """W-PCA under the NSC authors' protocol, against W-PCA's ``pca_torch`` (threshold
    0.99) on the reference model's ``intermediate.dense_in`` outputs, times its parameter
    count. The count rule differs only at exact ties (ours: first k whose share reaches
    0.99; ``pca_torch``: first k whose share exceeds it) and in precision (float64 here,
    float32 there); the largest difference in summed dimensions is printed."""
    require_reference()
    from nasbench_bert import proxies

    pt = pca_torch()
    worst, worst_rel = 0, 0.0
    for a in ARCHS:
        ref = _nsc_reference_model(a, W_PCA_NSC.seed).eval()
        acts = []
        for blk in ref.encoder.layer:
            blk.intermediate.dense_in.register_forward_hook(lambda m, i, o: acts.append(o.detach()))
        with torch.no_grad():
            ref(input_ids=make_batch(W_PCA_NSC.batch).input_ids)
        dims = sum(int(pt(h.reshape(-1, h.shape[-1]), (0.99,))[0]) for h in acts)
        want = sum(p.numel() for p in ref.parameters()) * dims
        got = float(proxies.compute([a], ["w_pca_first"], protocol=W_PCA_NSC).iloc[0].w_pca_first)
        worst = max(worst, abs(got - want) / sum(p.numel() for p in ref.parameters()))
        worst_rel = max(worst_rel, abs(got - want) / want)
    print(f"W-PCA (NSC protocol): largest difference {worst} principal components (relative {worst_rel:.2e}) over {len(ARCHS)} archs")
    assert worst <= 2


def test_pca_dim_equals_pca_torch_on_the_same_activations():
    """``pca_dim`` against ``pca_torch`` on the same (float64) pre-activations of every
    arch's first feed-forward Linear, under each semantics."""
    require_reference()
    from nasbench_bert.proxies.published import ff_preactivations, pca_dim

    pt = pca_torch()
    batch = make_batch(BatchSpec(batch_size=2, seq_len=32))
    worst, n = 0, 0
    for a in ARCHS[::3]:
        for sem in ("authors", "as_trained", "as_specified"):
            cap = engine.capture_flexibert(a, set(), batch, sem, 0, torch.float64)
            for _, h in ff_preactivations(cap.model, cap, first_only=True):
                worst = max(worst, abs(pca_dim(h) - int(pt(h.reshape(-1, h.shape[-1]), (0.99,))[0])))
                n += 1
    print(f"pca_dim vs pca_torch: largest difference {worst} over {n} activations")
    assert worst == 0


# -- LPZero -----------------------------------------------------------------------------------------
def test_lpzero_equals_the_authors_tree():
    """LPZero's searched FlexiBERT genotype, evaluated by the authors' ``TreeStructure``
    on their copy of the authors' model, against ``lpzero`` on this package's ``authors``
    model with the same seed: the same weights and, in train mode, the same dropout masks."""
    require_reference()
    ref = lpzero_code()
    spec = BatchSpec(batch_size=2, seq_len=32)
    batch = make_batch(spec)
    inputs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask, "token_type_ids": batch.token_type_ids}
    worst = 0.0
    from nasbench_bert.proxies.lpzero import lpzero

    for k, a in enumerate(ARCHS):
        nas = a.to_release()["nas_config"]
        tree = ref.TreeStructure()
        tree.genotype = {"input_geno": ["head", "act"], "op_geno": [[15, 3], [8, 13], 0]}
        torch.manual_seed(k)
        model = ref.ElectraModel(ref.ElectraConfig(nas_config=nas, num_hidden_layers=len(nas["encoder_layers"]),
                                                   output_hidden_states=True))
        want = float(tree(model, inputs))
        cap = engine.capture_flexibert(a, {"head_outputs"}, batch, AUTHORS, k, torch.float32)
        got = lpzero(cap).value
        worst = max(worst, abs(got - want) / abs(want))
    print(f"LPZero: max rel diff {worst:.2e} over {len(ARCHS)} archs (train mode, same dropout masks)")
    assert worst < 1e-5


# -- SWAP ------------------------------------------------------------------------------------------
def test_swap_equals_the_authors_swap():
    """SWAP-Score by the authors' ``SWAP`` class on their copy of the authors' model
    against ``swap`` on this package's ``authors`` model with the same seed (the same
    weights and dropout masks), at 16 samples (3^16 possible patterns per neuron), in
    float64 (in float32 the two models' activations differ by ~1e-6, enough to flip the
    sign of an activation that is almost exactly 0 and so split or merge a pattern)."""
    require_reference()
    ref = swap_code()
    batch = make_batch(BatchSpec(batch_size=16, seq_len=24))
    inputs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask, "token_type_ids": batch.token_type_ids}
    from nasbench_bert.proxies.swap import swap

    worst = 0.0
    for k, a in enumerate(ARCHS):
        nas = a.to_release()["nas_config"]
        torch.manual_seed(k)
        model = ref.ElectraModel(ref.ElectraConfig(nas_config=nas, num_hidden_layers=len(nas["encoder_layers"]),
                                                   output_hidden_states=True)).double()
        s = ref.SWAP(model=model, inputs=inputs, device=torch.device("cpu"), regular=False, mu=0.5, sigma=1.5)
        s.reinit()
        want = float(s.forward())
        cap = engine.capture_flexibert(a, {"ff_activations"}, batch, AUTHORS, k, torch.float64)
        got = swap(cap).value
        worst = max(worst, abs(got - want))
    print(f"SWAP: largest difference {worst} patterns over {len(ARCHS)} archs")
    assert worst == 0


def test_reference_model_helper_is_the_notebook_construction():
    """Guard: the NSC construction at H = 256 with F_0 = 1024 is the ``authors`` model."""
    require_reference()
    a = next(x for x in ARCHS if x.hidden_size == 256 and x.layers[0].feed_forward_dimension == 1024)
    r1 = _nsc_reference_model(a, 3).state_dict()
    r2 = reference_model(a.to_release()["nas_config"], 3).state_dict()
    assert all(torch.equal(r1[k], r2[k]) for k in r2 if k in r1)
