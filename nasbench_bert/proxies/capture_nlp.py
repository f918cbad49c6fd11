"""The NAS-Bench-NLP proxy pass: the recipe's language model on a (T, B) batch.

The model is the NAS-Bench-NLP language model of the recipe (:mod:`..models.nlp_rnn`),
initialised as the benchmark's training code does, in eval mode. What the pass
differentiates is the semantics' ``protocol.nlp_objective``; the objective used is
recorded in :attr:`Capture.objective`.

``"rnn_output"`` (``authors`` semantics): the authors' notebook
(``training-free-nas/code/RNN_metrics.ipynb``, ``run_scores``), pass by pass. ``y`` is
the last RNN layer's output flattened to (T*B, 400), as ``AWDRNNModel.forward`` returns
it; the decoder is never applied. The notebook runs, on one model:

1. the Jacobian pass: ``y.backward(ones_like(y))``; the gradient w.r.t. the embedding
   output is the Jacobian (``get_batch_jacobian``);
2. the K pass: a second forward on the same tokens. Its ``calculate_activations``
   hooks and those of pass 1 both add to the global ``K_score`` before ``hooklogdet``
   reads it, so the activation-distance matrix is accumulated over both passes (twice
   one pass's: log|K| is one pass's plus B log 2);
3. - 5. three noised passes (``noised_jacobian``, amplitudes 0.1, 10, 100): the
   embeddings plus ``amplitude * var * noise``, with ``var`` the variance over the
   *batch* axis of the (T, B, E) embedding output (``np.var(axis=1)``, as published) and
   ``noise`` standard normal, each followed by ``y.backward(ones_like(y))``;
6. the synflow pass: a fresh forward on the tokens, ``y.backward(y)`` (R = |y|^2 / 2);
   the parameter gradients read by the saliency proxies are this pass's only (every
   pass starts with ``net.zero_grad()``). The decoder weight is tied to the embedding,
   so its gradient is the embedding's - without the last vocabulary row, which the
   release's ``embedded_dropout`` treats as padding (``padding_idx=-1``).

The notebook's modified cell appends every cell's incoming state ``h_{t-1}`` of every
forward to one global list and keeps its gradient (``retain_grad``). Each pass builds
its own graph and is backpropagated at most once, so a state's gradient is the one of
its own pass's backward (none for the K pass, whose states count zero). Hidden synaptic
saliency sums |h dR/dh| over the states of every pass that ran (recorded per pass in
``Capture.extra["hidden_passes"]``). Hidden covariance reads layers 1 and 2 from pass 1
and layer 3 from the *last* pass (``hidden_states[-70:]``; here the last T steps), which
is the synflow pass when it ran - the same tokens and weights in eval mode, so the same
values as pass 1.

Noise: the notebook seeds ``random``, ``numpy`` and ``torch`` with ``seed_num`` at the
start of ``run_scores`` and nothing draws from numpy's global generator before
``np.random.normal(size=embedding_output.shape)``, so its noise is the first draw of
``np.random.seed(seed_num)``. Here it is the first draw of a private
``np.random.RandomState(seed % 2**32)`` (the proxy seed; the global numpy generator is
left alone): the notebook's exact noise when ``seed_num`` equals the proxy seed. The sum is
formed as the notebook does (embeddings and variance in the model's precision, noise in
float64, the noisy embeddings cast back to the model's dtype).

Passes run only where a requested proxy reads them: pass 1 always (its forward; its
backward for ``input_grad``), pass 2 for ``ff_activations``, 3 - 5 for
``noise_jacobians``, 6 for ``loss_backward``. Hidden synaptic saliency declares all
three gradient needs, so it always sums over the notebook's full sequence.

``"decoder_logits"`` (``as_trained`` and ``as_specified``, the current choice, kept as
it was): one forward from the embedding output as a leaf; the Jacobian family
differentiates the sum of the decoder logits (``logits.backward(ones)``), the noised
Jacobians perturb the embeddings with ``torch.randn`` noise from a generator seeded by
the proxy seed (variance over the batch axis as above), and the saliency proxies use
``logits.backward(logits)`` on the same graph; activation codes and every hidden state
come from that one pass.
"""

from __future__ import annotations

import numpy as np
from .._torch import torch
import torch.nn.functional as F

from ..models.nlp_rnn import RecipeLM, build_nlp_rnn
from ..semantics import NLPObjectiveRule, Semantics, SemanticsLike, get_semantics
from ..spaces.nlp import Recipe
from .capture import Capture
from .inputs import Batch
from .placement import place

NOISE_AMPLITUDES = (0.1, 10.0, 100.0)


def capture_nlp(recipe: Recipe, needs: set[str], batch: Batch, semantics: SemanticsLike, seed: int,
                dtype: torch.dtype = torch.float32, *, model: RecipeLM | None = None) -> Capture:
    """Run the proxy pass of ``recipe`` (see the module docstring).

    ``model``: use this language model (cast to ``dtype``, put in eval mode) instead of
    building one from ``seed`` - reference tests load the reference's weights into it.
    """
    semantics = get_semantics(semantics)
    V = batch.spec.vocab_size or 10000
    if model is None:
        model = build_nlp_rnn(recipe, V, seed=seed)
    model = place(model.to(dtype), batch.input_ids.device)  # built on the CPU, put where the batch is
    model.eval()
    if needs == {"model"}:  # a callable proxy runs its own pass on the fresh model
        cap = Capture(model, batch, semantics, "none")
        cap.extra.update(seed=seed, key=recipe.hash if hasattr(recipe, "hash") else str(recipe))
        return cap
    if semantics.protocol.nlp_objective == NLPObjectiveRule.RNN_OUTPUT:
        return _capture_notebook(model, needs, batch, semantics, seed)
    return _capture_decoder_logits(model, needs, batch, semantics, seed)


# -- "rnn_output": the authors' notebook -------------------------------------------------------
def _notebook_embedding(model: RecipeLM, ids: torch.Tensor) -> torch.Tensor:
    """The embedding lookup of the release's ``embedded_dropout`` (dropout 0 in eval).

    It calls ``F.embedding(..., padding_idx=-1, ...)`` because the embedding has no
    padding index, and a negative ``padding_idx`` counts from the end: the last
    vocabulary row gets no gradient. Values are the plain lookup; only the embedding
    (= tied decoder) weight's gradient, which synaptic saliency reads, changes.
    """
    w = model.embedding.weight
    return F.embedding(ids, w, padding_idx=w.shape[0] - 1)


def _step_grads(steps: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """Per layer, (T, B, H) gradients of the incoming states (zeros where none reached)."""
    return [torch.stack([s.grad.detach() if s.grad is not None else torch.zeros_like(s) for s in layer])
            for layer in steps]


def _capture_notebook(model: RecipeLM, needs: set[str], batch: Batch, semantics: Semantics, seed: int) -> Capture:
    cap = Capture(model, batch, semantics, "rnn_output")
    ids = batch.input_ids
    T, B = ids.shape
    dtype = model.embedding.weight.dtype
    codes = torch.zeros(B, B, dtype=torch.float64, device=ids.device)
    passes: list[str] = []
    hidden_passes: list[tuple[str, list[torch.Tensor], list[torch.Tensor]]] = []

    def act_hook(name: str, out: torch.Tensor) -> None:
        nonlocal codes
        x = (out.detach() > 0).double().reshape(B, -1)
        codes += x @ x.T + (1 - x) @ (1 - x).T

    def forward(emb: torch.Tensor, name: str):
        y, _, st = model(None, return_states=True, inputs_embeds=emb, decode=False)
        passes.append(name)
        return y, st

    def keep_hidden(name: str, st) -> None:
        hidden_passes.append((name, [s.detach() for s in st["incoming"]], _step_grads(st["incoming_steps"])))

    want_k = "ff_activations" in needs
    try:
        # 1) the Jacobian pass (get_batch_jacobian): y.backward(ones) w.r.t. the embedding output
        if want_k:
            for c in model.cells:
                c.activation_hook = act_hook
        emb = _notebook_embedding(model, ids)
        emb.retain_grad()
        y, st = forward(emb, "jacobian")
        cap.output = y.detach()
        cap.embeddings = emb.detach()
        cap.hidden_states = [s.detach() for s in st["incoming"]]
        if needs & {"backward", "input_grad"}:
            y.backward(torch.ones_like(y))
            cap.input_grad = emb.grad.detach().clone()
            keep_hidden("jacobian", st)
        del y, st
        # 2) the K pass: a second forward whose activations add to the same K matrix
        if want_k:
            with torch.no_grad():
                model(None, inputs_embeds=_notebook_embedding(model, ids), decode=False)
            passes.append("k_score")
            cap.rnn_activation_codes = codes.clone()
        for c in model.cells:
            c.activation_hook = None
        # 3-5) noised Jacobians, noise as the notebook draws it (see the module docstring)
        if "noise_jacobians" in needs:
            e = cap.embeddings.cpu().numpy()
            var = np.var(e, axis=1, keepdims=True)
            noise = np.random.RandomState(int(seed) % 2**32).normal(size=e.shape)
            for amp in NOISE_AMPLITUDES:
                noisy = torch.from_numpy(e + amp * var * noise).to(dtype=dtype, device=ids.device).requires_grad_(True)
                model.zero_grad(set_to_none=True)
                y, st = forward(noisy, f"noise_{amp:g}")
                y.backward(torch.ones_like(y))
                cap.noise_grads[amp] = noisy.grad.detach()
                keep_hidden(f"noise_{amp:g}", st)
                del y, st
        # 6) the synflow pass: a fresh forward, y.backward(y)
        if "loss_backward" in needs:
            model.zero_grad(set_to_none=True)
            y, st = forward(_notebook_embedding(model, ids), "synflow")
            y.backward(y.detach())
            keep_hidden("synflow", st)
            cap.hidden_grads = hidden_passes[-1][2]
            # hidden_states[-T:]: layer 3 as the last pass saw it
            cap.hidden_states[-1] = st["incoming"][-1].detach()
            del y, st
    finally:
        for c in model.cells:
            c.activation_hook = None
    cap.extra["passes"] = passes
    cap.extra["hidden_passes"] = hidden_passes
    return cap


# -- "decoder_logits": one pass on the decoder logits (as_trained, as_specified) ----------------
def _capture_decoder_logits(model: RecipeLM, needs: set[str], batch: Batch, semantics: Semantics, seed: int) -> Capture:
    cap = Capture(model, batch, semantics, "decoder_logits")
    B = batch.input_ids.shape[1]
    codes = torch.zeros(B, B, dtype=torch.float64, device=batch.input_ids.device)

    def act_hook(name: str, out: torch.Tensor) -> None:
        nonlocal codes
        x = (out.detach() > 0).double().reshape(B, -1)
        codes += x @ x.T + (1 - x) @ (1 - x).T

    try:
        if "ff_activations" in needs:
            for c in model.cells:
                c.activation_hook = act_hook
        torch.manual_seed(seed)
        emb = model.embedding(batch.input_ids).detach().requires_grad_(True)
        logits, _, st = model(None, return_states=True, inputs_embeds=emb)
        cap.output = logits.detach()
        cap.embeddings = emb.detach()
        cap.hidden_states = [s.detach() for s in st["incoming"]]
        if "ff_activations" in needs:
            cap.rnn_activation_codes = codes.clone()
            for c in model.cells:
                c.activation_hook = None
        # 1) the Jacobian family: y.backward(ones) w.r.t. the embedding output
        if needs & {"backward", "input_grad"}:
            logits.backward(torch.ones_like(logits), retain_graph="loss_backward" in needs)
            cap.input_grad = emb.grad.detach().clone()
        # 2) the same on noised embeddings (small / large / very large noise)
        if "noise_jacobians" in needs:
            g = torch.Generator().manual_seed(seed)
            e = cap.embeddings
            var = e.var(dim=1, keepdim=True, unbiased=False)  # over the batch axis, as published
            noise = torch.randn(e.shape, generator=g).to(e.device)  # drawn on the CPU wherever the model is
            for amp in NOISE_AMPLITUDES:
                noisy = (e + amp * var * noise).detach().requires_grad_(True)
                y, _ = model(None, inputs_embeds=noisy)
                y.backward(torch.ones_like(y))
                cap.noise_grads[amp] = noisy.grad.detach()
        # 3) synaptic saliency's objective: y.backward(y), on the main graph
        if "loss_backward" in needs:
            model.zero_grad(set_to_none=True)
            for layer_steps in st["incoming_steps"]:
                for s_ in layer_steps:
                    s_.grad = None
            logits.backward(logits.detach())
            cap.hidden_grads = [
                torch.stack([s_.grad.detach() if s_.grad is not None else torch.zeros_like(s_) for s_ in layer_steps])
                for layer_steps in st["incoming_steps"]
            ]
    finally:
        for c in model.cells:
            c.activation_hook = None
    return cap
