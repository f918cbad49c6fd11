"""The NAS-Bench-NLP proxy pass: the recipe's language model on a (T, B) batch.

The model is the NAS-Bench-NLP language model of the recipe (:mod:`..models.nlp_rnn`),
initialised as the benchmark's training code does, in eval mode.
"""

from __future__ import annotations

import torch

from ..models.nlp_rnn import build_nlp_rnn
from ..semantics import SemanticsLike, get_semantics
from ..spaces.nlp import Recipe
from .capture import Capture
from .inputs import Batch

NOISE_AMPLITUDES = (0.1, 10.0, 100.0)


def capture_nlp(recipe: Recipe, needs: set[str], batch: Batch, semantics: SemanticsLike, seed: int,
                dtype: torch.dtype = torch.float32) -> Capture:
    semantics = get_semantics(semantics)
    V = batch.spec.vocab_size or 10000
    model = build_nlp_rnn(recipe, V, seed=seed).to(dtype)
    model.eval()
    cap = Capture(model, batch, semantics, "decoder_logits")
    B = batch.input_ids.shape[1]
    codes = torch.zeros(B, B, dtype=torch.float64)

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
            noise = torch.randn(e.shape, generator=g)
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


