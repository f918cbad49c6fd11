"""The ``authors`` semantics against the authors' own PyTorch model and proxy notebook.

Reference: ``training-free-nas/code/modeling_electra.py`` (run unpatched under
``transformers==4.30.2``) and the proxy functions of ``BERT_metrics.ipynb``, both loaded
from ``../shared/upstream`` (see ``authors_code.py``). Run in the reference venv::

    python -m pytest -m reference tests/reference

Each test prints its largest difference; ``tests/reference/report_authors.py`` prints all
of them in one table.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from authors_code import UPSTREAM, authors_modules, notebook_functions, register_notebook_hooks, reference_model, require_reference

torch = pytest.importorskip("torch")

from nasbench_bert import FLEXIBERT_SPACE, Arch, Layer  # noqa: E402
from nasbench_bert.models import build_flexibert, from_authors_state_dict, to_authors_state_dict  # noqa: E402
from nasbench_bert.semantics import AUTHORS, ProxyProtocol  # noqa: E402

pytestmark = pytest.mark.reference


def coverage_archs() -> list[Arch]:
    """64 archs: each of the 48 per-layer choices (every operation and parameter, both
    head counts, both FF widths and depths) at least once, over both hidden sizes and
    both depths, plus 16 benchmark archs."""
    rng = np.random.default_rng(0)
    out = []
    for c in range(48):
        hidden, depth = (128, 256)[c % 2], (2, 4)[(c // 2) % 2]
        others = [Layer.from_choice(int(rng.integers(48))) for _ in range(depth - 1)]
        pos = int(rng.integers(depth))
        layers = others[:pos] + [Layer.from_choice(c)] + others[pos:]
        out.append(Arch(hidden, tuple(layers)))
    release = json.loads((UPSTREAM / "training-free-nas" / "data" / "BERT_benchmark.json").read_text())
    out += [Arch.from_release(release[i]["hparams"]["model_hparam_overrides"]) for i in range(0, 500, 32)]
    return out


ARCHS = coverage_archs()


def test_coverage_is_complete():
    layers = [layer for a in ARCHS for layer in a.layers]
    assert len(ARCHS) >= 60
    assert {layer.choice for layer in layers} == set(range(48))
    assert {(a.hidden_size, a.num_layers) for a in ARCHS} == {(128, 2), (128, 4), (256, 2), (256, 4)}


def _inputs(T: int = 24):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1000, 30522, (3, T), generator=g)
    full = torch.ones(3, T, dtype=torch.long)
    padded = full.clone()
    padded[1, T // 2:] = 0
    ids_padded = ids.clone()
    ids_padded[1, T // 2:] = 0  # [PAD]
    return ids, full, ids_padded, padded


@pytest.mark.parametrize("k", range(len(ARCHS)), ids=[str(a) for a in ARCHS])
def test_seeded_init_is_the_reference_init(k):
    """``build_flexibert(arch, "authors", seed=s)`` holds exactly the weights of the
    authors' ``ElectraModel`` built after ``torch.manual_seed(s)`` (bit for bit)."""
    require_reference()
    a = ARCHS[k]
    ref = reference_model(a.to_release()["nas_config"], seed=k)
    ours = to_authors_state_dict(build_flexibert(a, "authors", seed=k))
    ref_sd = {n: t for n, t in ref.state_dict().items() if n not in ("embeddings.position_ids",)}
    assert set(ours) == set(ref_sd)
    unequal = [n for n in ours if not torch.equal(ours[n], ref_sd[n])]
    assert not unequal, unequal[:5]


@pytest.mark.parametrize("k", range(len(ARCHS)), ids=[str(a) for a in ARCHS])
def test_last_hidden_state_equals_reference_float64(k):
    """Same weights (copied), same inputs: the same last_hidden_state to <= 1e-10 in
    float64, with and without padding, in eval mode and in train mode with the same
    dropout masks."""
    require_reference()
    a = ARCHS[k]
    ref = reference_model(a.to_release()["nas_config"], seed=100 + k).double()
    ours = from_authors_state_dict(a, ref.state_dict())
    assert ours.embeddings.word.weight.dtype == torch.float64
    worst = 0.0
    ids, full, ids_p, padded = _inputs()
    for x, mask in ((ids, full), (ids_p, padded)):
        for train in (False, True):
            ref.train(train)
            ours.train(train)
            with torch.no_grad():
                torch.manual_seed(7)
                r = ref(input_ids=x, attention_mask=mask).last_hidden_state
                torch.manual_seed(7)
                o = ours(x, mask)
            worst = max(worst, float((r - o).abs().max()))
    print(f"{a}: max |diff| = {worst:.3e}")
    assert worst <= 1e-10


def test_state_dict_errors_name_the_tensor():
    require_reference()
    a = ARCHS[3]
    sd = reference_model(a.to_release()["nas_config"], seed=0).state_dict()
    bad = dict(sd)
    bad.pop(next(k for k in sd if k.endswith("output.dense.weight")))
    with pytest.raises(ValueError, match="lacks weights"):
        from_authors_state_dict(a, bad)
    with pytest.raises(ValueError, match="no counterpart"):
        from_authors_state_dict(a, {**sd, "encoder.layer.9.output.dense.weight": torch.zeros(1)})
    other = next(b for b in ARCHS if b.num_layers == a.num_layers and b.layers[0].operation_type != a.layers[0].operation_type)
    with pytest.raises(ValueError):
        from_authors_state_dict(other, sd)


# -- the proxy protocol -------------------------------------------------------------------
PROTOCOL_ARCHS = [ARCHS[i] for i in (0, 5, 9, 14, 18, 23, 29, 33, 40, 47, 50, 60)]
FORWARD_PROXIES = {
    "activation_distance_norm": "activation_distance_normalized",
    "head_confidence": "attention_condfidence",
    "head_confidence_norm": "attention_condfidence_normalized",
    "head_softmax_confidence": "attention_condfidence",
    "head_softmax_confidence_norm": "attention_condfidence_normalized",
    "num_params": "num_parameters",
}
#: the notebook accumulates every proxy in ``torch.tensor(0.0)``, a float32 scalar, while we
#: sum in float64: the two agree to float32 rounding of the running sum, a few 1e-8 relative
#: here (largest seen 1.1e-7). A definition difference would show as O(1) or at least 1e-3.
F32_ACCUMULATOR = 1e-6
GRADIENT_PROXIES = {
    "synaptic_diversity": "synaptic_diversity",
    "synaptic_diversity_norm": "synaptic_diversity_normalized",
    "synaptic_saliency": "synaptic_saliency",
    "synaptic_saliency_norm": "synaptic_saliency_normalized",
    "head_importance": "head_importance",
    "head_importance_norm": "head_importance_normalized",
    "jacobian_covariance": "jacobian_score",
    "jacobian_cosine": "jacobian_score_cosine",
}


def _notebook_values(a: Arch, batch, seed: int, objective: str) -> dict[str, float]:
    """The notebook's sweep for one arch, on our batch, in float64: seed, build, hook,
    forward in train mode (the notebook never calls eval()), backward, then its functions."""
    from nasbench_bert.proxies.capture import projection

    fn = notebook_functions()
    model = reference_model(a.to_release()["nas_config"], seed).double()  # .double() draws nothing
    acts, heads, softmaxes = register_notebook_hooks(model)
    model.zero_grad()
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                token_type_ids=batch.token_type_ids).last_hidden_state
    if objective == "ones":
        out.backward(torch.ones_like(out))
    else:
        out.backward(projection(out.shape, seed, out.dtype))
    vals = {}
    for ours, theirs in FORWARD_PROXIES.items():
        arg = {"head_confidence": heads, "head_confidence_norm": heads, "head_softmax_confidence": softmaxes,
               "head_softmax_confidence_norm": softmaxes, "activation_distance_norm": acts}.get(ours, model)
        vals[ours] = float(np.real(fn[theirs](arg)))
    vals["activation_distance"] = float(fn["activation_distance"](acts))
    for ours, theirs in GRADIENT_PROXIES.items():
        vals[ours] = float(np.real(fn[theirs](model)))  # np.linalg.eig may return complex
    vals["_first_layer_grad"] = float(model.encoder.layer[0].intermediate.dense_in.weight.grad.abs().max())
    return vals


def _ours(a: Arch, batch, seed: int, objective: str) -> dict[str, float]:
    from nasbench_bert import proxies
    from nasbench_bert.proxies import engine

    sem = dataclasses.replace(AUTHORS, protocol=dataclasses.replace(AUTHORS.protocol, objective=objective))
    assert isinstance(sem.protocol, ProxyProtocol)
    plist = proxies.get("flexibert", list(FORWARD_PROXIES) + list(GRADIENT_PROXIES) + ["activation_distance"])
    needs = set().union(*(p.needs for p in plist))
    cap = engine.capture_flexibert(a, needs, batch, sem, seed, torch.float64)
    row = engine.evaluate(plist, cap)
    return {p.name: row[p.name] for p in plist}


@pytest.fixture(scope="module")
def batch():
    from nasbench_bert import proxies

    spec = proxies.BatchSpec(batch_size=2, seq_len=32)
    b = proxies.make_batch(spec)
    b.attention_mask[1, 20:] = 0  # the notebook passes a mask, which the model ignores
    return b


@pytest.mark.parametrize("a", PROTOCOL_ARCHS, ids=str)
def test_forward_proxies_equal_the_notebook(a, batch):
    """Same seed, same batch, train mode: our ``authors`` protocol gives the notebook's
    values for every forward proxy (activation distance, head and softmax confidence,
    parameters), hook counts included, to the float32 rounding of the notebook's running
    sum (see :data:`F32_ACCUMULATOR`)."""
    require_reference()
    theirs = _notebook_values(a, batch, seed=0, objective="ones")
    ours = _ours(a, batch, seed=0, objective="ones")
    worst = 0.0
    for name in [*FORWARD_PROXIES, "activation_distance"]:
        rel = abs(ours[name] - theirs[name]) / max(abs(theirs[name]), 1e-300)
        worst = max(worst, rel)
        assert rel <= F32_ACCUMULATOR, (name, ours[name], theirs[name])
    print(f"{a}: forward proxies, max relative diff {worst:.2e}")


@pytest.mark.parametrize("a", PROTOCOL_ARCHS, ids=str)
def test_gradient_proxies_equal_the_notebook_definitions(a, batch):
    """With an objective whose gradient does not vanish (the projection), every
    gradient proxy of ours equals the notebook's function on the same model, batch and
    dropout masks: the definitions match term for term."""
    require_reference()
    theirs = _notebook_values(a, batch, seed=0, objective="projection")
    ours = _ours(a, batch, seed=0, objective="projection")
    worst = 0.0
    for name in GRADIENT_PROXIES:
        t, o = theirs[name], ours[name]
        rel = abs(o - t) / max(abs(t), 1e-300)
        worst = max(worst, rel)
        assert rel <= F32_ACCUMULATOR, (name, o, t)
    print(f"{a}: gradient proxies, max relative diff {worst:.2e}")


@pytest.mark.parametrize("a", PROTOCOL_ARCHS[:6], ids=str)
def test_the_notebook_objective_vanishes(a, batch):
    """The notebook's backward(ones_like(output)) gives the first layer a gradient at
    rounding level in float64 (exactly zero in exact arithmetic), while the projection
    objective gives it an O(1e-3..1) gradient: the stored gradient proxies measure
    rounding error."""
    require_reference()
    ones = _notebook_values(a, batch, seed=0, objective="ones")["_first_layer_grad"]
    proj = _notebook_values(a, batch, seed=0, objective="projection")["_first_layer_grad"]
    print(f"{a}: first-layer |grad| max, ones {ones:.2e}, projection {proj:.2e}")
    assert ones < 1e-12 < 1e-4 < proj


def test_reference_model_ignores_the_mask_and_so_do_we():
    require_reference()
    a = ARCHS[7]
    ref = reference_model(a.to_release()["nas_config"], seed=0).double().eval()
    ours = from_authors_state_dict(a, ref.state_dict()).eval()
    ids, full, _, padded = _inputs()
    with torch.no_grad():
        r1 = ref(input_ids=ids, attention_mask=full).last_hidden_state
        r2 = ref(input_ids=ids, attention_mask=padded).last_hidden_state
        o2 = ours(ids, padded)
    assert torch.equal(r1, r2)  # the reference never reads the mask
    assert float((o2 - r2).abs().max()) <= 1e-10


def test_space_sample_agrees():  # a few random archs beyond the coverage set, float32
    require_reference()
    for i, a in enumerate(FLEXIBERT_SPACE.sample(4, seed=3)):
        ref = reference_model(a.to_release()["nas_config"], seed=i)
        ours = build_flexibert(a, "authors", seed=i)
        ids = torch.randint(0, 30522, (2, 16))
        ref.eval()
        ours.eval()
        with torch.no_grad():
            d = float((ref(input_ids=ids).last_hidden_state - ours(ids)).abs().max())
        assert d <= 1e-5, (str(a), d)


def test_modules_resolve():
    require_reference()
    m = authors_modules()
    assert m.ElectraModel.__module__ == "modeling_electra"
