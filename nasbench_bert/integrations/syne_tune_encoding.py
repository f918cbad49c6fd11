"""The flat encoding of FlexiBERT archs as syne-tune configurations, and argument checks
every blackbox of :mod:`nasbench_bert.integrations.syne_tune` shares.

syne-tune's configuration spaces have no conditions, so the FlexiBERT space is flattened
to 18 categorical fields: ``hidden_size``, ``num_layers`` and, for each of the 4 layer
slots ``i``, ``layer{i}_operation`` (``"SA-SDP"``, ``"SA-WMA"``, ``"LT-DFT"``,
``"LT-DCT"``, ``"DSC-5"``, ``"DSC-9"``: the operation type and its parameter as one field,
as the package's own mutation treats them), ``layer{i}_num_operation_heads``,
``layer{i}_feed_forward_dimension`` and ``layer{i}_num_feed_forward``. With
``num_layers = 2`` the fields of slots 2 and 3 are *inactive*: any value is accepted and
ignored, and the tables store the first choice of each (:data:`INACTIVE`).
:func:`arch_to_config` and :func:`config_to_arch` convert.

The lowest of the syne-tune modules: the tables (:mod:`.syne_tune_tables`), the surrogate
blackbox, the files and the public facade import it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Mapping

import numpy as np
from syne_tune.config_space import choice, randint

from ..checks import check_int, is_real
from ..errors import InvalidArgumentError
from ..spaces.flexibert import FF_DIMS, HIDDEN_SIZES, LAYER_COUNTS, NUM_FF, NUM_HEADS, OPERATIONS, Arch, Layer

#: the flat names of a layer slot's four fields
LAYER_KEYS: tuple[str, ...] = ("operation", "num_operation_heads", "feed_forward_dimension", "num_feed_forward")
MAX_LAYERS = max(LAYER_COUNTS)
OPERATION_NAMES: tuple[str, ...] = tuple(f"{t}-{p}" for t, p in OPERATIONS)
_CHOICES: dict[str, tuple[Any, ...]] = {"operation": OPERATION_NAMES, "num_operation_heads": NUM_HEADS,
                                        "feed_forward_dimension": FF_DIMS, "num_feed_forward": NUM_FF}
#: the value an inactive layer field has in the tables (the first choice of each field)
INACTIVE: dict[str, Any] = {k: v[0] for k, v in _CHOICES.items()}
#: the 18 flat hyperparameter names, in table column order
FLAT_KEYS: tuple[str, ...] = ("hidden_size", "num_layers",
                              *(f"layer{i}_{k}" for i in range(MAX_LAYERS) for k in LAYER_KEYS))
#: the cumulative cost a simulation advances its clock by (syne-tune's ``elapsed_time_attr``)
ELAPSED = "metric_elapsed_time"
#: the FlexiBERT blackboxes' cost that is the opposite of GLUE (``metric_glue_error``)
GLUE_ERROR = "glue_error"
#: reported beside the objectives by the FlexiBERT blackboxes: the search-space index of the
#: arch that answered (the nearest evaluated one for an untrained config); not an objective
SPACE_INDEX = "space_index"


class NLPFidelity(StrEnum):
    """The fidelities of a NAS-Bench-NLP blackbox: PTB's final results, or every epoch of
    the logs (WikiText-2's, or PTB's when the data holds them)."""

    FINAL = "final"
    EPOCHS = "epochs"


def flat_config_space() -> dict[str, Any]:
    """The flattened FlexiBERT space as a syne-tune configuration space (18 categoricals)."""
    cs: dict[str, Any] = {"hidden_size": choice(list(HIDDEN_SIZES)), "num_layers": choice(list(LAYER_COUNTS))}
    for i in range(MAX_LAYERS):
        for k in LAYER_KEYS:
            cs[f"layer{i}_{k}"] = choice(list(_CHOICES[k]))
    return cs


def arch_to_config(arch: Any) -> dict[str, Any]:
    """The flat configuration of ``arch`` (an Arch, its string or release dict); inactive
    slots hold :data:`INACTIVE`."""
    a = Arch.coerce(arch)
    cfg: dict[str, Any] = {"hidden_size": a.hidden_size, "num_layers": a.num_layers}
    for i in range(MAX_LAYERS):
        if i < a.num_layers:
            layer = a.layers[i]
            vals = (f"{layer.operation_type}-{layer.operation_parameter}", layer.num_operation_heads,
                    layer.feed_forward_dimension, layer.num_feed_forward)
        else:
            vals = tuple(INACTIVE[k] for k in LAYER_KEYS)
        cfg.update({f"layer{i}_{k}": v for k, v in zip(LAYER_KEYS, vals)})
    return cfg


def config_to_arch(config: Mapping[str, Any]) -> Arch:
    """The arch of a flat configuration; fields of inactive slots are ignored. A missing
    or invalid field raises :class:`~nasbench_bert.InvalidArgumentError` naming it."""
    if not isinstance(config, Mapping):
        raise InvalidArgumentError(f"config = {config!r} is not allowed; allowed: a mapping of {list(FLAT_KEYS)}")

    def get(key: str, allowed: tuple[Any, ...]) -> Any:
        if key not in config:
            raise InvalidArgumentError(f"config[{key!r}] is missing; allowed values: {list(allowed)}")
        v = config[key]
        v = v.item() if isinstance(v, np.generic) else v
        if v not in allowed or isinstance(v, bool):
            raise InvalidArgumentError(f"config[{key!r}] = {v!r} is not allowed; allowed values: {list(allowed)}")
        return v

    h = int(get("hidden_size", HIDDEN_SIZES))
    n = int(get("num_layers", LAYER_COUNTS))
    layers = []
    for i in range(n):
        op = get(f"layer{i}_operation", OPERATION_NAMES)
        t, p = OPERATIONS[OPERATION_NAMES.index(op)]
        layers.append(Layer(t, p, int(get(f"layer{i}_num_operation_heads", NUM_HEADS)),
                            int(get(f"layer{i}_feed_forward_dimension", FF_DIMS)),
                            int(get(f"layer{i}_num_feed_forward", NUM_FF))))
    return Arch(h, tuple(layers))


def steps_space(values: np.ndarray) -> dict[str, Any]:
    """The ``steps`` fidelity space spanning ``values`` (pretraining steps)."""
    return {"steps": randint(int(values.min()), int(values.max()))}


def check_choice(name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    """Refuse ``value`` unless it is one of the strings ``allowed``, naming ``name``."""
    if not isinstance(value, str) or value not in allowed:
        raise InvalidArgumentError(f"{name} = {value!r} is not allowed; allowed values: {list(allowed)}")


class CheckedObjective:
    """syne-tune's ``objective_function`` checks its arguments with ``assert`` (or not at
    all): a misspelt key, an out-of-range seed or ``None`` end in a bare AssertionError
    or TypeError. Every blackbox here checks them first and names the argument."""

    configuration_space: dict[str, Any]
    fidelity_space: dict[str, Any] | None

    def objective_function(self, configuration: Any, fidelity: Any = None, seed: Any = None) -> Any:
        if not isinstance(configuration, Mapping):
            raise InvalidArgumentError(f"configuration = {configuration!r} is not allowed; allowed: a dict of "
                                       f"{sorted(self.configuration_space)}")
        extra = sorted(set(configuration) - set(self.configuration_space))
        if extra:
            raise InvalidArgumentError(f"configuration key(s) {extra} not allowed; allowed keys: "
                                       f"{sorted(self.configuration_space)}")
        fid = self.fidelity_space or {}
        if isinstance(fidelity, Mapping):
            bad = sorted(set(fidelity) - set(fid))
            if bad or len(fidelity) != 1:
                raise InvalidArgumentError(f"fidelity = {dict(fidelity)!r} is not allowed; allowed: one of {sorted(fid)} "
                                           "with its value, a number, or None")
        elif fidelity is not None and not is_real(fidelity):
            raise InvalidArgumentError(f"fidelity = {fidelity!r} is not allowed; allowed: a number, a dict of "
                                       f"{sorted(fid)}, or None")
        num_seeds = int(getattr(self, "num_seeds", 1))
        if seed is not None:
            check_int("seed", seed, low=0, high=num_seeds - 1)
        return super().objective_function(dict(configuration), fidelity=fidelity, seed=seed)  # type: ignore[misc]
