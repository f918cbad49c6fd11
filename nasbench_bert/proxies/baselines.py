"""Trivial spec baselines, registered as zero-cost scores (group ``("baseline", "trivial")``).

Why they exist: on FlexiBERT-500 the number of layers alone ranks GLUE at τ-b 0.68, and
"deeper, then wider" at 0.80, higher than every training-free proxy published on this
benchmark. A ranking figure means something only beside these one-line rules, so they
are scores like any other: the sweep, the cache, :func:`nasbench_bert.scoring.score` and
:func:`nasbench_bert.proxies.evaluate` handle them, and they build no model.

Every score here reads the spec alone (``needs={"spec"}``: a
:class:`~nasbench_bert.proxies.registry.SpecInput`) and imports no torch, so scoring
works on the light install. Every one is declared "higher is better" before looking at
any result: a bigger model (more layers, wider, more heads, more parameters, more
nodes) is the naive expectation; the measured τ says whether it holds.

FlexiBERT (the arch as written; only the parameter counts depend on the semantics):

* ``depth`` - number of layers;
* ``hidden_size`` - the arch's hidden size (the ``authors`` model ignores it; the spec
  does not);
* ``total_heads`` - operation heads summed over the layers;
* ``depth_then_width`` - layers, then hidden size: the lexicographic order, encoded as
  ``layers * 10**4 + hidden`` (hidden sizes are below 10**4, so no tie is broken and
  no order is changed by the encoding);
* ``depth_width_then_size`` - then the parameter count of the semantics' model
  (:func:`nasbench_bert.sizes.flexibert_num_params`), added as ``count / 10**9``
  (counts are below 10**9; float64 resolves a difference of one parameter);
* ``param_count`` - the parameter count of the semantics' model, analytic (the
  ``num_params`` proxy builds the model to count the same number);
* ``param_count_as_specified`` - the count of the arch as specified, whatever the
  semantics: the "#Params" of the papers (NSC's 0.485 and 10 %-PW 0.082).

NAS-Bench-NLP (the recipe; the language model around it is the same for every recipe):

* ``recipe_num_params`` - parameters of the PTB language model
  (:func:`nasbench_bert.sizes.nlp_num_params`; the vocabulary adds a constant, so the
  ranking is the same for WikiText-2);
* ``recipe_num_nodes`` - nodes of the cell (inputs ``x`` and ``h_prev_i`` not counted);
* ``recipe_num_linear`` - linear nodes of the cell (where the parameters are).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..semantics import AS_SPECIFIED
from ..sizes import PTB_VOCAB, flexibert_num_params, nlp_num_params
from ..spaces.flexibert import Arch
from ..spaces.nlp import parse_recipe
from .registry import REGISTRY, ProxyValue, SpecInput, register

#: the group every trivial baseline carries
GROUP = ("baseline", "trivial")
#: the lexicographic encodings' radices (see the module docstring)
WIDTH_RADIX = 10 ** 4
SIZE_RADIX = 10 ** 9


def _arch(inp: SpecInput) -> Arch:
    return Arch.coerce(inp.key)


def _heads(a: Arch) -> int:
    return sum(int(layer.num_operation_heads) for layer in a.layers)


def _lex(*parts: int) -> float:
    """``parts`` as one float ordered lexicographically (layers, hidden[, parameters])."""
    layers, hidden = parts[0], parts[1]
    if not hidden < WIDTH_RADIX:
        raise ValueError(f"hidden size {hidden} does not fit the encoding (< {WIDTH_RADIX})")
    v = float(layers * WIDTH_RADIX + hidden)
    if len(parts) > 2:
        if not 0 <= parts[2] < SIZE_RADIX:
            raise ValueError(f"parameter count {parts[2]} does not fit the encoding (< {SIZE_RADIX})")
        v += parts[2] / SIZE_RADIX
    return v


@register("depth", space="flexibert", needs={"spec"}, group=GROUP)
def depth(inp: SpecInput) -> ProxyValue:
    """Number of layers of the arch (trivial baseline)."""
    return ProxyValue(len(_arch(inp).layers))


@register("hidden_size", space="flexibert", needs={"spec"}, group=GROUP)
def hidden_size(inp: SpecInput) -> ProxyValue:
    """Hidden size of the arch as written (trivial baseline)."""
    return ProxyValue(_arch(inp).hidden_size)


@register("total_heads", space="flexibert", needs={"spec"}, group=GROUP)
def total_heads(inp: SpecInput) -> ProxyValue:
    """Operation heads summed over the layers (trivial baseline)."""
    a = _arch(inp)
    return ProxyValue(_heads(a), [float(layer.num_operation_heads) for layer in a.layers])


@register("depth_then_width", space="flexibert", needs={"spec"}, group=GROUP)
def depth_then_width(inp: SpecInput) -> ProxyValue:
    """Layers, then hidden size, in lexicographic order (trivial baseline)."""
    a = _arch(inp)
    return ProxyValue(_lex(len(a.layers), a.hidden_size))


@register("depth_width_then_size", space="flexibert", needs={"spec"}, group=GROUP)
def depth_width_then_size(inp: SpecInput) -> ProxyValue:
    """Layers, then hidden size, then the semantics' parameter count (trivial baseline)."""
    a = _arch(inp)
    return ProxyValue(_lex(len(a.layers), a.hidden_size, flexibert_num_params(a, inp.semantics)))


@register("param_count", space="flexibert", needs={"spec"}, group=GROUP)
def param_count(inp: SpecInput) -> ProxyValue:
    """Parameter count of the semantics' model, analytic (trivial baseline)."""
    return ProxyValue(flexibert_num_params(_arch(inp), inp.semantics))


@register("param_count_as_specified", space="flexibert", needs={"spec"}, group=GROUP)
def param_count_as_specified(inp: SpecInput) -> ProxyValue:
    """Parameter count of the arch as specified, the papers' #Params (trivial baseline)."""
    return ProxyValue(flexibert_num_params(_arch(inp), AS_SPECIFIED))


@register("recipe_num_params", space="nlp", needs={"spec"}, group=GROUP)
def recipe_num_params(inp: SpecInput) -> ProxyValue:
    """Parameters of the recipe's PTB language model (trivial baseline)."""
    return ProxyValue(nlp_num_params(inp.key, PTB_VOCAB))


@register("recipe_num_nodes", space="nlp", needs={"spec"}, group=GROUP)
def recipe_num_nodes(inp: SpecInput) -> ProxyValue:
    """Nodes of the recipe's cell (trivial baseline)."""
    return ProxyValue(len(parse_recipe(inp.key).nodes))


@register("recipe_num_linear", space="nlp", needs={"spec"}, group=GROUP)
def recipe_num_linear(inp: SpecInput) -> ProxyValue:
    """Linear nodes of the recipe's cell (trivial baseline)."""
    return ProxyValue(sum(1 for _, op, _ in parse_recipe(inp.key).nodes if op == "linear"))


def trivial_names(space: str) -> list[str]:
    """The trivial baselines of ``space``, in registration order."""
    return [p.name for p in REGISTRY[space].values() if "trivial" in p.group]


def analytic_values(space: str, keys: Sequence[Any], names: Iterable[str], semantics: Any) -> dict[str, np.ndarray]:
    """Values of the analytic scores ``names`` for each model key (an arch or a recipe;
    ``None``: NaN), without torch and without the sweep. A key a score cannot read
    gets NaN, as in the sweep, which isolates failures the same way."""
    from ..semantics import get_semantics

    sem = get_semantics(semantics)
    out: dict[str, np.ndarray] = {}
    for name in names:
        p = REGISTRY[space][name]
        if not p.analytic:
            raise ValueError(f"proxy {name!r} is not an analytic score of the spec")
        fn: Callable[[SpecInput], ProxyValue] = p.fn
        vals = np.full(len(keys), np.nan)
        for i, k in enumerate(keys):
            if k is None:
                continue
            try:
                vals[i] = fn(SpecInput(space, k, sem)).value
            except Exception:  # the sweep's isolation: a key this score cannot read is NaN
                vals[i] = np.nan
        out[name] = vals
    return out
