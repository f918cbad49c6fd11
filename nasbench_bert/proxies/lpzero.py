"""LPZero's searched FlexiBERT proxy (Dong et al., *LPZero: Language Model Zero-cost
Proxy Search from Zero*, Findings of EMNLP 2024).

LPZero searches symbolic proxies: two inputs from a model pass, two unary operations on
each, one binary operation, then an average. The genotype it reports for FlexiBERT (the
authors' ``lpzero/runner/eval_searched_bert.py``, "Best SP 0.8515" in its search log) is

    inputs   ('head', 'act')
    head ->  element_wise_revert -> element_wise_pow       (-x)^2 = x^2
    act  ->  frobenius_norm -> logsoftmax                  log_softmax of a 0-d tensor = 0
    binary   element_wise_sum

'head' is, per encoder layer, the output of the first of the operation's ``query`` /
``key`` / ``value`` / ``input`` / ``weight`` projections (an ``elif`` chain: the query for
SA, WMA and DSC, the input Linear for LT); 'act' is every feed-forward activation output.
The authors' tree (``lpzero/structures/tree.py``) reduces each processed tensor to its
mean, pairs the two lists with ``zip`` and averages the pairs. So:

* the 'act' branch adds exactly 0 (``log_softmax`` of a scalar);
* each pair is ``mean(q^2)`` of one head entry;
* the head list is longer than one entry per layer: its forward hooks stay registered
  (``zc_candidates`` works on a shallow copy of the model), so the forward pass that
  collects 'act' appends every layer's query output a second time, with that pass's
  dropout masks. ``zip`` then stops at the shorter list, whose length is the number of
  activation calls, sum_l num_feed_forward_l.

The value computed by the authors' code is therefore

    LPZero = mean of the first P entries of [m_1 .. m_L (pass 1), m_1' .. m_L' (pass 2)],
    m_l = mean(q_l^2),  P = min(2L, sum_l num_feed_forward_l)

which this module computes from the shared capture plus one more forward pass that
continues the generator where the capture's pass left it (so under ``authors``, in
train mode, its dropout masks are the reference's second pass). The reference test
checks the value against the authors' tree, operators and input functions on the same
model and batch.

LPZero's protocol: the authors' ``modeling_electra.py`` at its default config (this
package's ``authors`` semantics: H 256, F 1024), never put in eval mode (dropout on),
and one OpenWebText batch of 128 documents padded to 512 tokens with ELECTRA-small's
tokenizer (:data:`nasbench_bert.proxies.protocols.LPZERO`).
"""

from __future__ import annotations

from .._torch import torch

from .capture import Capture
from .capture_bert import _head_modules
from .common import host_values
from .registry import ProxyValue, register

S = "flexibert"


def _first_head_outputs(cap: Capture) -> list[float]:
    """m_l of the capture's pass: its first recorded head output per layer (hooks fire in
    forward order, so the query, or the LT input Linear, comes first)."""
    first: dict[int, torch.Tensor] = {}
    for li, out in cap.head_outputs:
        if li not in first:
            first[li] = out.double().pow(2).mean()
    return host_values(first[li] for li in sorted(first))


def _second_pass(cap: Capture) -> list[float]:
    """m_l' of a second forward pass, continuing the generator after the capture's pass."""
    model, b = cap.model, cap.batch
    seen: dict[int, torch.Tensor] = {}
    handles = []
    try:
        def record(li: int, out: torch.Tensor) -> None:  # a forward hook must return None
            seen.setdefault(li, out.detach().double().pow(2).mean())  # to the host once, after the pass

        for li, layer in enumerate(model.layers):
            mod = _head_modules(layer.operation)[0]
            handles.append(mod.register_forward_hook(lambda m, i, o, li=li: record(li, o)))
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            state = cap.extra.get("rng_after_forward")
            if state is not None:
                torch.set_rng_state(state)
            model(b.input_ids, b.attention_mask, b.token_type_ids)
    finally:
        for h in handles:
            h.remove()
    return host_values(seen[li] for li in sorted(seen))


@register("lpzero", space=S, needs={"head_outputs"}, group=("published",))
def lpzero(cap: Capture) -> ProxyValue:
    """LPZero's searched FlexiBERT proxy (Dong et al., 2024), as its code computes it: the
    mean of the first sum(num_ff) of [mean(q_l^2) over two passes]; per layer: pass 1's mean(q_l^2)."""
    first = _first_head_outputs(cap)
    if not first:
        return ProxyValue(float("nan"), [])
    calls = sum(len(layer.feed_forward.layers) for layer in cap.model.layers)
    seq = first + _second_pass(cap)
    p = min(len(seq), calls)
    return ProxyValue(sum(seq[:p]) / p, first)
