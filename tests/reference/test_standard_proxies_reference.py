"""NAS-Bench-Suite-Zero's standard proxies (``nasbench_bert.proxies.standard``) against
NASLib's own measure functions, on the same models, batch and objective.

NASLib's ``pruners/measures/{epe_nas,fisher,grasp,l2_norm,plain,zen}.py`` are loaded
from ``../shared/upstream/zero-cost/naslib`` at run time (``published_code.naslib_measures``)
and called on a thin wrapper of this package's model; ``find_measures``' ``sum_arr``
(the sum of the per-layer arrays) gives the value. What the wrapper supplies is what an
image classifier has and a language model lacks, and nothing else:

* ``loss_fn(outputs, targets)`` is the semantics' objective R (``objective_value``);
  the targets are unused zeros;
* the input of ``epe_nas`` is the word-embedding output, and the network's output the
  per-sequence R_i (one output: NASLib's ``n_classes = y.shape[-1] = 1``); every
  sequence is class 0;
* ``zen``'s ``forward_before_global_avg_pool`` is the last hidden state with a trailing
  axis (NASLib sums over dims 1, 2, 3), its Gaussian input taking the word embeddings'
  place;
* ``fisher``'s Linear forward (``fisher_forward_linear``, the only function replaced)
  hands its hook the output with the units moved to axis 1, NASLib's channel axis
  (N, C, spatial...), tokens being the spatial axis; the hook, the mean, the broadcast
  over the weights are NASLib's. The wrapper's ``train()`` keeps the semantics' mode
  (NASLib's ``fisher`` calls ``net.train()``);
* where a proxy runs its own passes, every forward of the wrapper first seeds the
  generator with the proxy seed, as the package does (train-mode dropout, ``authors``).

Gradient proxies are compared in float64 (both sides), Zen in float32 (NASLib draws its
Gaussian input in float32). Run in the reference venv::

    python -m pytest -m reference -s tests/reference/test_standard_proxies_reference.py

Each test prints its largest relative difference.
"""

from __future__ import annotations

import json
import types
import zipfile

import numpy as np
import pytest

from authors_code import UPSTREAM
from published_code import NASLIB

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from nasbench_bert import Arch, Layer  # noqa: E402
from nasbench_bert.models.flexibert import FlexiBERTEncoder  # noqa: E402
from nasbench_bert.models.nlp_rnn import build_nlp_rnn  # noqa: E402
from nasbench_bert.proxies import engine, make_batch, standard  # noqa: E402
from nasbench_bert.proxies.capture import objective_value, projection  # noqa: E402
from nasbench_bert.proxies.inputs import BatchSpec  # noqa: E402
from nasbench_bert.semantics import get_semantics  # noqa: E402
from nasbench_bert.spaces.nlp import parse_recipe  # noqa: E402

pytestmark = pytest.mark.reference

if not (NASLIB / "pruners" / "measures").is_dir():
    pytest.skip(f"NASLib's measures are not at {NASLIB / 'pruners' / 'measures'}", allow_module_level=True)

from published_code import naslib_measures  # noqa: E402

SEMANTICS = ("as_trained", "as_specified", "authors")
SEED = 3
SPEC = BatchSpec(batch_size=4, seq_len=16, seed=1)
TOL = 1e-9       # float64 both sides
TOL_ZEN = 1e-5   # float32 outputs; NASLib sums in float32
#: NASLib's fisher broadcasts each unit's value into ``torch.Tensor(shape)``, float32
#: whatever the model's dtype: its values carry float32 rounding (about 6e-8 each)
TOL_FISHER = 1e-6


def archs() -> list[Arch]:
    """Four archs, one per (hidden size, depth), whose layers hold every operation type
    (SDP, WMA, DFT, DCT, DSC) and both feed-forward counts."""
    out = []
    for k in range(4):
        hidden, depth = (128, 256)[k % 2], (2, 4)[(k // 2) % 2]
        out.append(Arch(hidden, tuple(Layer.from_choice((11 * k + 7 * i) % 48) for i in range(depth))))
    return out


ARCHS = archs()


def test_coverage():
    ops = {(layer.operation_type, layer.operation_parameter) for a in ARCHS for layer in a.layers}
    assert {t for t, _ in ops} == {"SA", "LT", "DSC"} and {("SA", "SDP"), ("SA", "WMA"), ("LT", "DFT"), ("LT", "DCT")} <= ops, ops
    assert {layer.num_feed_forward for a in ARCHS for layer in a.layers} == {1, 3}
    assert {(a.hidden_size, a.num_layers) for a in ARCHS} == {(128, 2), (128, 4), (256, 2), (256, 4)}


@pytest.fixture(scope="module")
def ref():
    return naslib_measures()


@pytest.fixture(scope="module")
def batch():
    return make_batch(SPEC)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def sum_arr(arr) -> float:
    """``find_measures``' sum of the per-layer arrays (float64 accumulation of torch sums)."""
    return float(sum(float(torch.sum(a).detach()) for a in arr))


class Net(nn.Module):
    """The FlexiBERT model as NASLib's measures call a network (see the module doc)."""

    def __init__(self, model: nn.Module, batch, objective: str, seed: int, reseed: bool):
        super().__init__()
        self.model, self.batch, self.objective, self.seed, self.reseed = model, batch, objective, seed, reseed

    def train(self, mode: bool = True):  # NASLib's fisher calls net.train(): keep the semantics' mode
        return self

    def _hidden(self, x: torch.Tensor) -> torch.Tensor:
        if self.reseed:
            torch.manual_seed(self.seed)
        b = self.batch
        handle = None
        if x.is_floating_point():  # word embeddings in place of the lookup
            handle = self.model.embeddings.word.register_forward_hook(lambda m, i, o: x)
        try:
            return self.model(b.input_ids, b.attention_mask, b.token_type_ids)
        finally:
            if handle is not None:
                handle.remove()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._hidden(x)

    def forward_before_global_avg_pool(self, x: torch.Tensor) -> torch.Tensor:
        return self._hidden(x).unsqueeze(-1)


class PerSequenceR(Net):
    """Output: R_i per sequence, (B, 1), summing to R (EPE-NAS's y)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self._hidden(x)
        if self.objective == "projection":
            out = out * projection(out.shape, self.seed, out.dtype)
        return out.sum(dim=(1, 2))[:, None]


def fresh(arch: Arch, sem, dtype=torch.float64) -> nn.Module:
    """The capture's model: seeded, built, cast, put in the semantics' mode (the generator
    left where the build left it, as the capture's forward finds it)."""
    torch.manual_seed(SEED)
    m = FlexiBERTEncoder(sem.plan(arch)).to(dtype)
    m.train(sem.protocol.train_mode)
    return m


def ours(name: str, arch: Arch, sem, batch, dtype=torch.float64):
    from nasbench_bert.proxies.registry import REGISTRY

    proxy = REGISTRY["flexibert"][name]
    cap = engine.capture_flexibert(arch, set(proxy.needs), batch, sem, SEED, dtype)
    return proxy.fn(cap)


def loss_fn(sem):
    return lambda out, targets: objective_value(out, sem.protocol.objective, SEED)


def zeros(batch):
    return torch.zeros(batch.input_ids.shape[0], dtype=torch.long)


def words(model, batch) -> torch.Tensor:
    return model.embeddings.word(batch.input_ids).detach().clone()


# -- the six, against NASLib ------------------------------------------------------------------
def naslib_value(name: str, ref, arch: Arch, sem, batch, *, fisher_layout: bool = True, **kw) -> float:
    """NASLib's value of proxy ``name`` on ``arch``'s model (see the module doc)."""
    obj = sem.protocol.objective
    if name == "l2_norm":
        return sum_arr(ref.l2_norm.get_l2_norm_array(fresh(arch, sem), batch.input_ids, zeros(batch), mode="param"))
    if name == "plain":  # the shared pass: the forward right after the build, no reseeding
        m = fresh(arch, sem)
        return sum_arr(ref.plain.compute_plain_per_weight(Net(m, batch, obj, SEED, False), batch.input_ids,
                                                          zeros(batch), mode="param", loss_fn=loss_fn(sem)))
    if name == "grasp":
        m = fresh(arch, sem)
        return sum_arr(ref.grasp.compute_grasp_per_weight(Net(m, batch, obj, SEED, True), batch.input_ids,
                                                          zeros(batch), mode="param", loss_fn=loss_fn(sem), **kw))
    if name == "fisher":
        m = fresh(arch, sem)
        orig = ref.fisher.fisher_forward_linear

        def channel_first(self, x):  # NASLib's fisher_forward_linear, units on axis 1 for its hook
            x = F.linear(x, self.weight, self.bias)
            if x.dim() > 2:
                self.act = self.dummy(x.movedim(-1, 1))
                return self.act.movedim(1, -1)
            self.act = self.dummy(x)
            return self.act

        ref.fisher.fisher_forward_linear = channel_first if fisher_layout else orig
        try:
            arr = ref.fisher.compute_fisher_per_weight(Net(m, batch, obj, SEED, True), batch.input_ids, zeros(batch),
                                                       loss_fn=loss_fn(sem), mode="channel")
        finally:
            ref.fisher.fisher_forward_linear = orig
        # NASLib's hook leaves each unit's value on the layer (``layer.fisher``) before the
        # float32 broadcast: the same sum from those, in the model's precision
        FISHER_UNBROADCAST[0] = sum(float(l.fisher.detach().abs().double().sum()) * l.weight.shape[1]
                                    for l in standard.linears(m) if l.fisher is not None)
        return sum_arr(arr)
    if name == "epe_nas":
        m = fresh(arch, sem)
        return float(ref.epe_nas.compute_epe_score(PerSequenceR(m, batch, obj, SEED, True), words(m, batch),
                                                   zeros(batch), loss_fn=None))
    if name == "zen":
        m = fresh(arch, sem, torch.float32)
        x = words(m, batch)
        torch.manual_seed(SEED)  # the package seeds with the proxy seed before the Gaussian weights
        return float(ref.zen.compute_zen_score(Net(m, batch, obj, SEED, True), x, zeros(batch), **kw))
    raise AssertionError(name)


#: the last fisher call's sum over NASLib's per-unit values before their float32 broadcast
FISHER_UNBROADCAST = [float("nan")]

CASES = [("l2_norm", TOL), ("plain", TOL), ("fisher", TOL_FISHER), ("grasp", TOL), ("epe_nas", TOL), ("zen", TOL_ZEN)]


@pytest.mark.parametrize("name,tol", CASES)
def test_equals_naslib(name, tol, ref, batch):
    worst, worst_at, worst_unbroadcast = 0.0, None, 0.0
    for s in SEMANTICS:
        sem = get_semantics(s)
        for a in ARCHS:
            dtype = torch.float32 if name == "zen" else torch.float64
            got = ours(name, a, sem, batch, dtype).value
            want = naslib_value(name, ref, a, sem, batch)
            assert np.isfinite(want) and np.isfinite(got), (name, s, str(a), got, want)
            d = rel(got, want)
            if d >= worst:
                worst, worst_at = d, (s, str(a), got, want)
            if name == "fisher":
                worst_unbroadcast = max(worst_unbroadcast, rel(got, FISHER_UNBROADCAST[0]))
    print(f"\n{name}: max rel diff {worst:.2e} over {len(ARCHS)} archs x {len(SEMANTICS)} semantics (at {worst_at})")
    assert worst < tol
    if name == "fisher":
        print(f"fisher before NASLib's float32 broadcast: max rel diff {worst_unbroadcast:.2e}")
        assert worst_unbroadcast < TOL


def _perturbed(name: str, ref, arch: Arch, sem, batch) -> tuple[float, float]:
    """(a perturbed definition's value, NASLib's) for one arch: each must differ."""
    dtype = torch.float32 if name == "zen" else torch.float64
    if name == "l2_norm":  # squared norms
        m = fresh(arch, sem)
        return sum(float(l.weight.detach().double().norm()) ** 2 for l in standard.linears(m)), naslib_value(name, ref, arch, sem, batch)
    if name == "plain":  # |w g|, i.e. SNIP
        from nasbench_bert.proxies.bert import snip

        cap = engine.capture_flexibert(arch, {"forward", "backward"}, batch, sem, SEED, dtype)
        return snip(cap).value, naslib_value(name, ref, arch, sem, batch)
    if name == "fisher":  # NASLib's literal layout: the last axis (units) summed as if spatial
        return ours(name, arch, sem, batch, dtype).value, naslib_value(name, ref, arch, sem, batch, fisher_layout=False)
    if name == "grasp":  # a temperature T = 2 on the outputs
        return ours(name, arch, sem, batch, dtype).value, naslib_value(name, ref, arch, sem, batch, T=2)
    if name == "epe_nas":  # another k in log(|corr| + k)
        cap = engine.capture_flexibert(arch, {"model"}, batch, sem, SEED, dtype)
        return standard.epe_score(standard.input_jacobian_rows(cap.model, cap), k=1e-3), naslib_value(name, ref, arch, sem, batch)
    if name == "zen":  # another mixup gamma
        return ours(name, arch, sem, batch, dtype).value, naslib_value(name, ref, arch, sem, batch, mixup_gamma=2e-2)
    raise AssertionError(name)


@pytest.mark.parametrize("name,tol", CASES)
def test_a_perturbed_definition_fails(name, tol, ref, batch):
    sem = get_semantics("as_trained")
    got, want = _perturbed(name, ref, ARCHS[1], sem, batch)
    print(f"\n{name} perturbed: rel diff {rel(got, want):.2e}")
    assert rel(got, want) > 100 * tol


# -- NAS-Bench-NLP: l2_norm, plain, epe_nas ---------------------------------------------------------
def nlp_recipes(n: int = 2) -> list:
    path = UPSTREAM / "nas-bench-nlp" / "train_logs_wikitext-2" / "logs.zip"
    if not path.is_file():
        pytest.skip(f"NAS-Bench-NLP's logs are not at {path}")
    out = []
    with zipfile.ZipFile(path) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".json"):
                out.append(parse_recipe(json.loads(json.loads(z.read(name))["recepie"])))
                if len(out) == n:
                    break
    return out


class RNNNet(nn.Module):
    """The recipe's language model as NASLib calls a network, under the semantics' pass:
    ``decoder_logits`` runs from the detached embedding lookup to the logits,
    ``rnn_output`` from the notebook's embedding (``padding_idx = V - 1``) to the last
    cell's output; a float input (B, T, E) stands in for the embeddings and the output is
    then each sequence's sum, (B, 1)."""

    def __init__(self, model: nn.Module, objective: str):
        super().__init__()
        self.model, self.objective = model, objective

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        decode = self.objective == "decoder_logits"
        if x.is_floating_point():
            y, _ = self.model(None, inputs_embeds=x.transpose(0, 1), decode=decode)
            return y.sum(dim=(0, 2))[:, None]
        w = self.model.embedding.weight
        emb = w[x].detach().requires_grad_(True) if decode else F.embedding(x, w, padding_idx=w.shape[0] - 1)
        y, _ = self.model(None, inputs_embeds=emb, decode=decode)
        return y


@pytest.mark.parametrize("name", ["l2_norm", "plain", "epe_nas"])
def test_nlp_equals_naslib(name, ref):
    from nasbench_bert.proxies.registry import REGISTRY

    spec = BatchSpec(space="nlp", batch_size=4, seq_len=6, vocab_size=10000, seed=1)
    b = make_batch(spec)
    proxy = REGISTRY["nlp"][name]
    worst = 0.0
    for s in SEMANTICS:
        sem = get_semantics(s)
        obj = sem.protocol.nlp_objective
        for r in nlp_recipes():
            got = proxy.fn(engine.capture_nlp(r, set(proxy.needs), b, sem, SEED, torch.float64)).value
            m = build_nlp_rnn(r, 10000, seed=SEED).to(torch.float64).eval()
            net = RNNNet(m, obj)
            t = torch.zeros(b.input_ids.shape[1], dtype=torch.long)
            if name == "l2_norm":
                want = sum_arr(ref.l2_norm.get_l2_norm_array(net, b.input_ids, t, mode="param"))
            elif name == "plain":  # the RNN protocol's y.backward(y): R = |y|^2 / 2
                want = sum_arr(ref.plain.compute_plain_per_weight(net, b.input_ids, t, mode="param",
                                                                  loss_fn=lambda y, _: 0.5 * (y ** 2).sum()))
            else:
                x = m.embedding(b.input_ids).transpose(0, 1).detach().clone()
                want = float(ref.epe_nas.compute_epe_score(net, x, t, loss_fn=None))
            assert np.isfinite(got) and np.isfinite(want), (s, got, want)
            worst = max(worst, rel(got, want))
    print(f"\nnlp {name}: max rel diff {worst:.2e}")
    assert worst < TOL


def test_bad_reference_is_not_silently_accepted(ref):
    """The loaded functions are NASLib's (not stand-ins): their modules live in the upstream folder."""
    for n in ("epe_nas", "fisher", "grasp", "l2_norm", "plain", "zen"):
        mod = getattr(ref, n)
        assert isinstance(mod, types.ModuleType) and str(NASLIB) in mod.__file__
