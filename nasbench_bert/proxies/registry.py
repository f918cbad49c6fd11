"""The proxy registry: one declaration per proxy, read by the engine and the scorer.

A proxy is a function of a :class:`~nasbench_bert.proxies.engine.Capture` (what one
forward + backward recorded) plus a declaration of what that capture must contain. The
engine takes the union of the needs of every requested proxy, so a set of proxies costs
as few passes as possible: the paper's whole BERT set shares one forward and one
backward.

Adding a proxy is one small function::

    from nasbench_bert.proxies import register, ProxyValue

    @register("my_proxy", space="flexibert", needs={"backward"}, higher_is_better=True)
    def my_proxy(cap):
        per_layer = [float(l.operation.output.weight.grad.norm()) for l in cap.model.layers]
        return ProxyValue(sum(per_layer), per_layer)

after which ``compute(archs, ["my_proxy"])`` and ``score(...)`` handle it like the others.

A score of the arch spec alone (a closed form, a trivial baseline) declares
``needs={"spec"}``: it receives a :class:`SpecInput` (the arch or recipe and the
semantics) instead of a :class:`~nasbench_bert.proxies.capture.Capture`, and a set of
such scores builds no model at all. They are the baselines every ranking claim must
stand beside, so they go through the same sweep, cache and scorer as the proxies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..errors import InvalidArgumentError
from ..vocabulary import SPACES as _SPACES

#: what a proxy may ask the engine for
NEEDS = frozenset({
    "forward",          # one forward pass (always done)
    "backward",         # backward of sum(last hidden state) (the paper's ones_like backward)
    "ff_activations",   # outputs of every feed-forward activation (hooks)
    "head_outputs",     # outputs of the query/key/value/LT/WMA projections (hooks)
    "attention_probs",  # attention probabilities of every self-attention
    "hidden_states",    # every layer's output (BERT) / incoming states (RNN)
    "input_grad",       # gradient w.r.t. the embedding output (RNN Jacobian family)
    "noise_jacobians",  # three more backward passes on noised embeddings (RNN)
    "ntk_probe",        # one random-projection backward (NTKT)
    "synflow",          # a separate pass on |weights| with an all-ones input
    "loss_backward",    # backward of the RNN's y.backward(y) objective (synaptic saliency)
    "spec",             # the arch spec alone: no model is built (analytic scores; never mixed with the others)
    "model",            # the built model and the batch, no pass run (a callable runs its own; never mixed)
})
#: the group names :func:`get` accepts besides proxy names
#: (the seed paper's set, ETAS's, the size and trivial spec baselines, and the published
#: proxies of later papers: :mod:`.nsc`, :mod:`.lpzero`, :mod:`.swap`; and the field's standard
#: set, NAS-Bench-Suite-Zero's measures plus ZiCo and MeCo)
GROUPS: tuple[str, ...] = ("paper", "etas", "baseline", "trivial", "published", "standard")
#: the search spaces a proxy is registered for (the package vocabulary's; the keys of
#: proxies.spaces.PROXY_SPACES too)
SPACES: tuple[str, ...] = _SPACES
#: what turns a name not registered yet (``"module:function"``) into a registered proxy:
#: :mod:`.callables` adds its resolver when imported (:mod:`.builtin` imports it), so
#: this bottom module never imports the one above it
NAME_RESOLVERS: list[Callable[[str], Any]] = []


@dataclass(frozen=True)
class ProxyValue:
    """One proxy's value for one arch: the total and, where meaningful, per layer.

    NaN and inf are kept as they are (never replaced by a sentinel) so that a user sees
    when a proxy broke down for an arch.
    """

    value: float
    per_layer: tuple[float, ...] | None = None

    def __init__(self, value: float, per_layer: Iterable[float] | None = None):
        object.__setattr__(self, "value", float(value))
        object.__setattr__(self, "per_layer", None if per_layer is None else tuple(float(v) for v in per_layer))

    @property
    def finite(self) -> bool:
        return math.isfinite(self.value)


@dataclass(frozen=True)
class SpecInput:
    """What an analytic (``needs={"spec"}``) score sees: no model, only the spec.

    ``key`` is the space's model key: an :class:`~nasbench_bert.spaces.Arch`
    (FlexiBERT) or a :class:`~nasbench_bert.spaces.Recipe` (NAS-Bench-NLP).
    ``semantics`` says which model the spec stands for, for scores that count the
    model's parameters."""

    space: str
    key: Any
    semantics: Any


@dataclass(frozen=True)
class Proxy:
    name: str
    space: str                       # "flexibert" or "nlp"
    fn: Callable[[Any], ProxyValue]
    needs: frozenset[str]
    higher_is_better: bool           # keeps correlations' sign honest (no abs())
    version: int = 1                 # bump when the definition changes: invalidates caches
    paper: str | None = None         # column name of the stored value, if the paper has one
    description: str = ""
    group: tuple[str, ...] = field(default=())  # e.g. ("paper",), ("etas",), ("baseline",)

    @property
    def analytic(self) -> bool:
        """True for a score of the spec alone (``needs={"spec"}``): it builds no model."""
        return "spec" in self.needs

    @property
    def model_only(self) -> bool:
        """True for a proxy that receives the freshly built model and runs its own pass
        (``needs={"model"}``: a plain ``(model, batch)`` callable)."""
        return "model" in self.needs


REGISTRY: dict[str, dict[str, Proxy]] = {s: {} for s in SPACES}


def register(
    name: str, *, space: str, needs: Iterable[str] = (), higher_is_better: bool = True,
    version: int = 1, paper: str | None = None, group: Iterable[str] = (),
) -> Callable[[Callable[[Any], ProxyValue]], Callable[[Any], ProxyValue]]:
    """Decorator adding a proxy to :data:`REGISTRY` (see the module docstring)."""
    if space not in SPACES:
        raise InvalidArgumentError(f"space = {space!r} is not allowed; allowed values: {list(SPACES)}")
    unknown = set(needs) - NEEDS
    if unknown:
        raise InvalidArgumentError(f"needs = {sorted(unknown)} not allowed; allowed values: {sorted(NEEDS)}")
    for alone in ("spec", "model"):
        if alone in set(needs) and set(needs) != {alone}:
            raise InvalidArgumentError(f"needs = {sorted(needs)} not allowed: {alone!r} cannot be combined with other "
                                       f"needs; declare needs={{{alone!r}}} alone, or pass needs only")

    def deco(fn: Callable[[Any], ProxyValue]) -> Callable[[Any], ProxyValue]:
        if name in REGISTRY[space]:
            raise InvalidArgumentError(f"proxy {name!r} is already registered for space {space!r}")
        REGISTRY[space][name] = Proxy(
            name, space, fn, frozenset(needs) if set(needs) & {"spec", "model"} else frozenset(needs) | {"forward"},
            higher_is_better, version, paper,
            (fn.__doc__ or "").strip().split("\n")[0], tuple(group),
        )
        return fn

    return deco


def get(space: str, names: Iterable[str] | str | None) -> list[Proxy]:
    """The proxies named (``None`` or ``"all"``: every one of the space but the plain
    callables of :mod:`.callables`; a name of
    :data:`GROUPS`: a group). The built-in proxies are registered when
    :mod:`nasbench_bert.proxies.sweep` (or any name of :mod:`nasbench_bert.proxies`) is
    imported; this module itself imports no torch.

    A name ``"module:function"`` not registered yet is a plain ``(model, batch) ->
    float`` callable: it is imported and registered here
    (:func:`nasbench_bert.proxies.callables.register_callable`), so worker processes
    that never saw the caller's registration find it too."""
    if space not in SPACES:
        raise InvalidArgumentError(f"space = {space!r} is not allowed; allowed values: {list(SPACES)}")
    reg = REGISTRY[space]
    if names is None or names == "all":  # a callable registered for one evaluation is not a built-in: left out
        return [p for p in reg.values() if "callable" not in p.group]
    if isinstance(names, str):
        if names in GROUPS:
            return [p for p in reg.values() if names in p.group]
        names = [names]
    out = []
    for n in names:
        if n not in reg and isinstance(n, str) and ":" in n:
            for resolve in NAME_RESOLVERS:  # .callables' register_callable (added on import)
                resolve(n)
        if n not in reg:
            raise InvalidArgumentError(f"proxy = {n!r} is not registered for space {space!r}; allowed values: {sorted(reg)}, "
                                       f"a group {['all', *GROUPS]}, or 'module:function' (a (model, batch) -> float callable)")
        out.append(reg[n])
    return out
