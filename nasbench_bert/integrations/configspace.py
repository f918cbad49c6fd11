"""The FlexiBERT space as a ConfigSpace ``ConfigurationSpace``, with conditions.

HPO libraries that take a ConfigSpace (SMAC3, DEHB, HPOBench, YAHPO Gym, CARP-S) get the
space with its real structure rather than a flattened one:

* ``hidden_size`` and ``num_layers`` (ordinals);
* per layer slot ``i`` (0-3): ``layer{i}_operation_type`` (``SA``, ``LT``, ``DSC``), the
  operation's own parameter as a child active only under its type -
  ``layer{i}_operation_parameter_SA`` (``SDP``, ``WMA``),
  ``layer{i}_operation_parameter_LT`` (``DFT``, ``DCT``),
  ``layer{i}_operation_parameter_DSC`` (kernel ``5``, ``9``) - and the ordinals
  ``layer{i}_num_operation_heads``, ``layer{i}_feed_forward_dimension``,
  ``layer{i}_num_feed_forward``;
* slots 2 and 3 active only when ``num_layers == 4``.

A valid configuration sets exactly the active hyperparameters, so configurations and
:class:`~nasbench_bert.Arch` objects are in bijection (10,621,440 each):
:func:`arch_to_configuration` and :func:`configuration_to_arch` are inverse.
:func:`evaluate` scores a configuration with one of the package's oracles, so a budget,
the evaluation log and the search comparisons work as for the package's own algorithms.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from ConfigSpace import Configuration, ConfigurationSpace

from ..errors import InvalidArgumentError
from ..spaces.flexibert import (
    FF_DIMS, FLEXIBERT_SPACE, LAYER_COUNTS, NUM_FF, NUM_HEADS, Arch, Layer, operation_parameter,
)

MAX_LAYERS = max(LAYER_COUNTS)
#: per-layer ordinal fields and their values
LAYER_ORDINALS: dict[str, tuple[int, ...]] = {"num_operation_heads": NUM_HEADS, "feed_forward_dimension": FF_DIMS,
                                              "num_feed_forward": NUM_FF}


def param_name(i: int, op_type: str) -> str:
    """The name of layer ``i``'s parameter of ``op_type`` (active only under that type)."""
    return f"layer{i}_operation_parameter_{op_type}"


def configspace(seed: int | None = None) -> ConfigurationSpace:
    """The conditional FlexiBERT space (see the module doc; built by
    :meth:`FLEXIBERT_SPACE.configspace <nasbench_bert.spaces.flexibert.FlexiBERTSpace.configspace>`);
    ``seed`` seeds its sampler."""
    return FLEXIBERT_SPACE.configspace(seed)


_SPACE: ConfigurationSpace | None = None


def _space() -> ConfigurationSpace:
    global _SPACE
    if _SPACE is None:
        _SPACE = configspace()
    return _SPACE


def arch_to_values(arch: Any) -> dict[str, Any]:
    """The active hyperparameter values of ``arch`` (an Arch, its string or release dict)."""
    a = Arch.coerce(arch)
    out: dict[str, Any] = {"hidden_size": a.hidden_size, "num_layers": a.num_layers}
    for i, layer in enumerate(a.layers):
        out[f"layer{i}_operation_type"] = layer.operation_type
        out[param_name(i, layer.operation_type)] = layer.operation_parameter
        for k in LAYER_ORDINALS:
            out[f"layer{i}_{k}"] = getattr(layer, k)
    return out


def arch_to_configuration(arch: Any, space: ConfigurationSpace | None = None) -> Configuration:
    """The ConfigSpace ``Configuration`` of ``arch`` in ``space`` (default: :func:`configspace`)."""
    return Configuration(space if space is not None else _space(), values=arch_to_values(arch))


def configuration_to_arch(config: Configuration | Mapping[str, Any]) -> Arch:
    """The arch of a configuration (a ``Configuration`` or a mapping of its active values).

    A mapping is validated as a configuration first: a missing active value, a value
    for an inactive hyperparameter or an illegal value raises
    :class:`~nasbench_bert.InvalidArgumentError` naming the hyperparameter, so the map
    stays a bijection and never guesses.
    """
    if not isinstance(config, Configuration):
        if not isinstance(config, Mapping):
            raise InvalidArgumentError(f"config = {config!r} is not allowed; allowed: a ConfigSpace Configuration or a "
                                       "mapping of hyperparameter -> value")
        unknown = sorted(map(str, set(config) - set(_space())))
        if unknown:
            raise InvalidArgumentError(f"config has unknown hyperparameter(s) {unknown}; allowed: {list(_space())}")
        try:
            config = Configuration(_space(), values={k: (v.item() if isinstance(v, np.generic) else v)
                                                     for k, v in config.items()})
        except Exception as e:  # ConfigSpace's own errors name the hyperparameter; keep the message
            raise InvalidArgumentError(f"config is not a valid FlexiBERT configuration: {e}") from None
    d = dict(config)
    n = int(d["num_layers"])
    layers = []
    for i in range(n):
        t = d[f"layer{i}_operation_type"]
        p = d[param_name(i, t)]
        layers.append(Layer(t, operation_parameter(t, p),
                            *(int(d[f"layer{i}_{k}"]) for k in LAYER_ORDINALS)))
    return Arch(int(d["hidden_size"]), tuple(layers))


def as_cost(value: float, objective: Any) -> float:
    """``value`` of ``objective`` (``bench.objectives[name]``) as a cost to minimise - what
    SMAC, DEHB and the other ConfigSpace optimisers take: negated when the task metadata
    says larger is better."""
    return float(value) if objective.minimize else -float(value)


def evaluate(config: Configuration | Mapping[str, Any], oracle: Any, *, rng: np.random.Generator | int | None = None,
             steps: int | None = None) -> float | None:
    """GLUE of a configuration from ``oracle`` (a :class:`~nasbench_bert.search.Oracle`,
    e.g. ``make_oracle("tabular", bench, Budget(max_queries=300))``), charged to its
    budget and logged in ``oracle.evaluations``; None once the budget is spent.

    A table oracle (tabular, regenerated) answers a configuration it has not trained
    with its nearest evaluated arch, exactly as its own mutations do (ties broken by
    ``rng``); the log records the arch that answered. ``steps``: the surrogate's
    pretraining-steps fidelity.
    """
    from ..search.oracle import Oracle

    if not isinstance(oracle, Oracle):
        raise InvalidArgumentError(f"oracle = {type(oracle).__name__} is not allowed; allowed: a nasbench_bert.search "
                                   "Oracle (make_oracle('tabular' | 'surrogate' | ..., bench, budget))")
    arch = configuration_to_arch(config)
    table = getattr(oracle, "_glue", None)
    if table is not None and arch not in table:
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        arch = oracle.nearest(arch, gen)
    return oracle.evaluate(arch, steps=steps)
