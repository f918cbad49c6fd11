"""NAS-Bench-NLP language models: any valid recipe as a recurrent cell.

Embedding 400 -> three stacked recipe cells (hidden 600, 600, 400) -> decoder tied to
the embedding (it adds only its bias). With these shapes the parameter count equals the
``num_params`` of every WikiText-2 log (vocab 33,278) and, with vocab 10,000, the PTB
counts of ``RNN_parameters.csv``.

``forward(..., return_states=True)`` also returns, per layer, the cell's *incoming*
state ``h_prev_0`` at every step and its outputs - what the hidden-covariance proxy
reads - so no monkey-patching is needed.
"""

from __future__ import annotations

from typing import Any, Callable

import networkx as nx
from .._torch import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_seed
from ..sizes import NLP_EMBEDDING, NLP_HIDDEN
from ..spaces.nlp import INPUT, WEIGHTED_OPS, Recipe, parse_recipe

_ACT = {"activation_tanh": torch.tanh, "activation_sigm": torch.sigmoid, "activation_leaky_relu": F.leaky_relu}


def _prod(args: list[torch.Tensor]) -> torch.Tensor:
    out = args[0]
    for a in args[1:]:
        out = out * a
    return out


#: the ops that combine several inputs: ``(the node's Linear layers or None, inputs) -> output``
_COMBINE: dict[str, Callable[[Any, list[torch.Tensor]], Any]] = {
    "linear": lambda lins, args: sum(lin(a) for lin, a in zip(lins, args)),
    "blend": lambda _, args: args[0] * args[1] + (1 - args[0]) * args[2],
    "elementwise_prod": lambda _, args: _prod(args),
    "elementwise_sum": lambda _, args: sum(args[1:], args[0]),
}


class RecipeCell(nn.Module):
    """One recurrent cell computed from a recipe DAG.

    Each ``linear`` node has one weight matrix per input and a single bias, as in
    NAS-Bench-NLP; every state ``h_prev_i`` / ``h_new_i`` has the cell's hidden size.
    """

    def __init__(self, recipe: Recipe, input_size: int, hidden_size: int):
        super().__init__()
        self.recipe, self.input_size, self.hidden_size = recipe, input_size, hidden_size
        self.num_states = recipe.num_states
        spec = {name: (op, inputs) for name, op, inputs in recipe.nodes}
        g = nx.DiGraph()
        g.add_nodes_from(spec)
        g.add_edges_from((i, n) for n, (_, inp) in spec.items() for i in inp if i in spec)
        self.order = list(nx.lexicographical_topological_sort(g))
        self.spec = spec
        #: called as ``hook(node_name, output)`` after every activation node (proxies)
        self.activation_hook: Any = None
        self.weights = nn.ModuleDict()
        for name in self.order:
            op, inputs = spec[name]
            if op in WEIGHTED_OPS:
                self.weights[name] = nn.ModuleList(
                    nn.Linear(input_size if i == INPUT else hidden_size, hidden_size, bias=(j == 0))
                    for j, i in enumerate(inputs)
                )

    def forward(self, x: torch.Tensor, states: list[torch.Tensor]) -> list[torch.Tensor]:
        values: dict[str, torch.Tensor] = {INPUT: x}
        for i, s in enumerate(states):
            values[f"h_prev_{i}"] = s
        for name in self.order:
            op, inputs = self.spec[name]
            args = [values[i] for i in inputs]
            if op in _ACT:
                out = _ACT[op](args[0])
                if self.activation_hook is not None:
                    self.activation_hook(name, out)
            else:
                out = _COMBINE[op](self.weights[name] if op in WEIGHTED_OPS else None, args)
            values[name] = out
        return [values[f"h_new_{i}"] for i in range(self.num_states)]


class RecipeLM(nn.Module):
    """The NAS-Bench-NLP language model (no dropout: it is used for proxies and counts)."""

    def __init__(self, recipe: Any, vocab_size: int):
        super().__init__()
        r = parse_recipe(recipe)
        self.recipe, self.vocab_size = r, vocab_size
        self.embedding = nn.Embedding(vocab_size, NLP_EMBEDDING)
        sizes = [NLP_EMBEDDING, *NLP_HIDDEN]
        self.cells = nn.ModuleList(RecipeCell(r, i, h) for i, h in zip(sizes[:-1], sizes[1:]))
        self.decoder = nn.Linear(NLP_EMBEDDING, vocab_size)
        self.decoder.weight = self.embedding.weight  # tied

    def init_states(self, batch: int, device: torch.device | None = None,
                    dtype: torch.dtype | None = None) -> list[list[torch.Tensor]]:
        """Zero states for every cell; ``device`` and ``dtype`` default to the model's
        (so a ``.double()`` model gets float64 states)."""
        w = self.embedding.weight
        device = w.device if device is None else device
        dtype = w.dtype if dtype is None else dtype
        return [[torch.zeros(batch, c.hidden_size, device=device, dtype=dtype) for _ in range(c.num_states)]
                for c in self.cells]

    def forward(self, tokens: torch.Tensor | None, states: list[list[torch.Tensor]] | None = None,
                return_states: bool = False, inputs_embeds: torch.Tensor | None = None, decode: bool = True) -> Any:
        """``tokens`` is (T, B). Returns logits (T, B, vocab), final states, and with
        ``return_states`` a dict of per-layer ``incoming`` (T, B, H) h_prev_0 and
        ``outputs`` (T, B, H). ``inputs_embeds`` (T, B, 400) replaces the embedding lookup
        (the noised-Jacobian proxies perturb the embeddings). With ``decode=False`` the
        first value is the last cell's output (T, B, 400) instead of the logits (what the
        NAS-Bench-NLP training code's ``AWDRNNModel.forward`` returns, before the decoder).
        Zero initial states take the dtype and device of the embeddings."""
        x = self.embedding(tokens) if inputs_embeds is None else inputs_embeds
        T, B = x.shape[:2]
        states = states or self.init_states(B, x.device, x.dtype)
        incoming: list[torch.Tensor] = []
        steps: list[list[torch.Tensor]] = []
        outputs: list[torch.Tensor] = []
        new_states = []
        for cell, st in zip(self.cells, states):
            inc, outs = [], []
            for t in range(T):
                if return_states and st[0].requires_grad:
                    st[0].retain_grad()  # proxies read d(objective)/d(h_{t-1})
                inc.append(st[0])
                st = cell(x[t], st)
                outs.append(st[0])
            x = torch.stack(outs)
            incoming.append(torch.stack(inc))
            steps.append(inc)
            outputs.append(x)
            new_states.append(st)
        logits = self.decoder(x) if decode else x
        if return_states:
            return logits, new_states, {"incoming": incoming, "outputs": outputs, "incoming_steps": steps}
        return logits, new_states


def build_nlp_rnn(recipe: Any, vocab_size: int, seed: int | None = None) -> RecipeLM:
    """The NAS-Bench-NLP language model of ``recipe`` (PTB: 10,000; WikiText-2: 33,278).

    With ``seed``, parameters are initialised the way NAS-Bench-NLP's training code does
    (cell parameters uniform in +-1/sqrt(hidden), embedding uniform in +-0.1, decoder bias
    zero) from that seed, so proxy values are reproducible.
    """
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise ValueError(f"vocab_size = {vocab_size!r} must be a positive integer (PTB 10000, WikiText-2 33278)")
    if check_seed("seed", seed) is None:
        return RecipeLM(recipe, vocab_size)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        m = RecipeLM(recipe, vocab_size)
        with torch.no_grad():
            for cell in m.cells:
                bound = cell.hidden_size ** -0.5
                for p in cell.parameters():
                    p.uniform_(-bound, bound)
            m.embedding.weight.uniform_(-0.1, 0.1)
            m.decoder.bias.zero_()
    return m
