"""The FlexiBERT search space of Serianni & Kalita (ACL 2023, Table 1).

An architecture is a global hidden size (128 or 256) and 2 or 4 encoder layers, each
layer choosing freely among 48 configurations (6 operations x 2 head counts x 2
feed-forward widths x 2 feed-forward depths), so the space holds
2 x (48**2 + 48**4) = 10,621,440 architectures.

Three interchangeable forms exist and round-trip exactly:

* :class:`Arch` - immutable and hashable, the form every API accepts;
* the release's JSON form ``{"hidden_size": 256, "nas_config": {"encoder_layers": [...]}}``
  (DSC's ``operation_parameter`` is the integer kernel size);
* a canonical string ``"256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3"``: hidden size, then one
  ``OP-PARAM-hHEADS-FFDIMxNUMFF`` group per layer.

The integer index is a bijection onto ``range(10_621_440)`` so that a whole-space
experiment can address architectures by number (mixed radix: hidden size, depth, then
one base-48 digit per layer, first layer most significant).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence, get_args

import numpy as np

from ..checks import check_bool, check_int, check_seed
from ..checks import is_int as _is_int
from ..errors import InvalidArchitectureError
from ..vocabulary import KERNEL_OPERATIONS, OperationType

HIDDEN_SIZES: tuple[int, ...] = (128, 256)
LAYER_COUNTS: tuple[int, ...] = (2, 4)
OPERATION_TYPES: tuple[str, ...] = get_args(OperationType)
OPERATION_PARAMETERS: dict[str, tuple[Any, ...]] = {"SA": ("SDP", "WMA"), "LT": ("DFT", "DCT"), "DSC": (5, 9)}
#: The six (operation_type, operation_parameter) pairs, in index order.
OPERATIONS: tuple[tuple[str, Any], ...] = tuple(
    (t, p) for t in OPERATION_TYPES for p in OPERATION_PARAMETERS[t]
)
NUM_HEADS: tuple[int, ...] = (2, 4)
FF_DIMS: tuple[int, ...] = (512, 1024)
NUM_FF: tuple[int, ...] = (1, 3)
LAYER_FIELDS: tuple[str, ...] = (
    "operation_type",
    "operation_parameter",
    "num_operation_heads",
    "feed_forward_dimension",
    "num_feed_forward",
)
CHOICES_PER_LAYER = len(OPERATIONS) * len(NUM_HEADS) * len(FF_DIMS) * len(NUM_FF)  # 48
#: archs per (hidden size, depth): the mixed-radix blocks of :func:`index`
BLOCK_SIZES: dict[int, int] = {n: CHOICES_PER_LAYER**n for n in LAYER_COUNTS}
#: archs per hidden size
PER_HIDDEN = sum(BLOCK_SIZES.values())
SPACE_SIZE = len(HIDDEN_SIZES) * PER_HIDDEN  # 10,621,440


def _bad(path: str, value: Any, allowed: Sequence[Any] | str) -> InvalidArchitectureError:
    allowed_s = allowed if isinstance(allowed, str) else "[" + ", ".join(map(repr, allowed)) + "]"
    return InvalidArchitectureError(f"{path} = {value!r} is not allowed; allowed values: {allowed_s}")


@dataclass(frozen=True, slots=True)
class Layer:
    """One encoder layer: an operation with its heads and its feed-forward stack."""

    operation_type: str
    operation_parameter: str | int
    num_operation_heads: int
    feed_forward_dimension: int
    num_feed_forward: int

    def __post_init__(self) -> None:
        _validate_layer_values(
            "layer",
            self.operation_type,
            self.operation_parameter,
            self.num_operation_heads,
            self.feed_forward_dimension,
            self.num_feed_forward,
        )

    @property
    def choice(self) -> int:
        """Index of this layer among the 48 per-layer choices."""
        op = OPERATIONS.index((self.operation_type, self.operation_parameter))
        return ((op * 2 + NUM_HEADS.index(self.num_operation_heads)) * 2 + FF_DIMS.index(self.feed_forward_dimension)) * 2 + NUM_FF.index(self.num_feed_forward)

    @classmethod
    def from_choice(cls, c: int) -> "Layer":
        c, nff = divmod(c, 2)
        c, ff = divmod(c, 2)
        op, heads = divmod(c, 2)
        t, p = OPERATIONS[op]
        return cls(t, p, NUM_HEADS[heads], FF_DIMS[ff], NUM_FF[nff])

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in LAYER_FIELDS}

    def to_string(self) -> str:
        return f"{self.operation_type}-{self.operation_parameter}-h{self.num_operation_heads}-{self.feed_forward_dimension}x{self.num_feed_forward}"


def operation_parameter(operation_type: str, parameter: Any) -> str | int:
    """A layer's operation parameter in its stored type: the kernel size of a convolution
    (:data:`~nasbench_bert.vocabulary.KERNEL_OPERATIONS`) as an int, a mixing name as given."""
    return int(parameter) if operation_type in KERNEL_OPERATIONS else parameter


def _validate_layer_values(path: str, t: Any, p: Any, h: Any, f: Any, n: Any) -> None:
    if not isinstance(t, str) or t not in OPERATION_TYPES:
        raise _bad(f"{path}.operation_type", t, OPERATION_TYPES)
    allowed_p = OPERATION_PARAMETERS[t]
    if t in KERNEL_OPERATIONS:
        if not _is_int(p) or int(p) not in allowed_p:
            raise _bad(f"{path}.operation_parameter (kernel size for DSC)", p, allowed_p)
    elif not isinstance(p, str) or p not in allowed_p:
        raise _bad(f"{path}.operation_parameter (for {t})", p, allowed_p)
    for name, v, allowed in (
        ("num_operation_heads", h, NUM_HEADS),
        ("feed_forward_dimension", f, FF_DIMS),
        ("num_feed_forward", n, NUM_FF),
    ):
        if not _is_int(v) or int(v) not in allowed:
            raise _bad(f"{path}.{name}", v, allowed)


@dataclass(frozen=True, slots=True)
class Arch:
    """A FlexiBERT architecture: immutable, hashable and always valid.

    Construct it with :meth:`from_release`, :meth:`from_string`, :meth:`from_index`
    or directly from a hidden size and a tuple of :class:`Layer`.
    """

    hidden_size: int
    layers: tuple[Layer, ...]
    #: the hash, computed once: archs key every lookup table, and hashing the nested
    #: layers anew on each lookup was most of a batch query's time
    _hash: int = field(init=False, repr=False, compare=False, hash=False, default=0)

    def __post_init__(self) -> None:
        if not _is_int(self.hidden_size) or int(self.hidden_size) not in HIDDEN_SIZES:
            raise _bad("hidden_size", self.hidden_size, HIDDEN_SIZES)
        if not isinstance(self.layers, tuple) or not all(isinstance(x, Layer) for x in self.layers):
            raise InvalidArchitectureError("layers must be a tuple of nasbench_bert.Layer objects")
        if len(self.layers) not in LAYER_COUNTS:
            raise _bad("number of encoder layers", len(self.layers), LAYER_COUNTS)
        object.__setattr__(self, "_hash", hash((self.hidden_size, self.layers)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt through the constructor: string hashes differ between processes, so a
        # pickled hash must never travel to a worker
        return (Arch, (self.hidden_size, self.layers))

    # -- conversions -------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def to_string(self) -> str:
        """The canonical string, e.g. ``"256/SA-WMA-h4-1024x3/LT-DCT-h2-512x3"``."""
        return "/".join([str(self.hidden_size), *(layer.to_string() for layer in self.layers)])

    __str__ = to_string

    def to_release(self) -> dict[str, Any]:
        """The release's JSON form (``hparams.model_hparam_overrides`` of an entry)."""
        return {
            "hidden_size": self.hidden_size,
            "nas_config": {"encoder_layers": [layer.to_dict() for layer in self.layers]},
        }

    @property
    def index(self) -> int:
        """Position of this arch in ``range(SPACE_SIZE)``; inverse of :meth:`from_index`."""
        return index(self)

    @classmethod
    def from_index(cls, i: int) -> "Arch":
        return arch_at(i)

    @classmethod
    def from_string(cls, s: str) -> "Arch":
        return parse_string(s)

    @classmethod
    def from_release(cls, d: Mapping[str, Any]) -> "Arch":
        return from_release(d)

    @classmethod
    def coerce(cls, value: "ArchLike") -> "Arch":
        """Accept an :class:`Arch`, its canonical string or its release dict."""
        if isinstance(value, Arch):
            return value
        if isinstance(value, str):
            return parse_string(value)
        if isinstance(value, Mapping):
            return from_release(value)
        raise InvalidArchitectureError(
            f"cannot interpret {type(value).__name__} as a FlexiBERT arch; expected an Arch, "
            "a canonical string like '128/SA-SDP-h2-512x1/LT-DFT-h4-1024x3' or a release dict "
            "{'hidden_size': ..., 'nas_config': {'encoder_layers': [...]}}"
        )


ArchLike = Arch | str | Mapping[str, Any]


# -- parsing ----------------------------------------------------------------------------
def from_release(d: Any) -> Arch:
    """Parse and validate the release's JSON form.

    Accepts ``{"hidden_size", "nas_config"}``, or a whole benchmark entry (the arch is
    then read from ``hparams.model_hparam_overrides``). Unknown keys are errors, because
    a typo such as ``num_heads`` would otherwise be silently ignored.
    """
    if isinstance(d, Mapping) and "hparams" in d and "hidden_size" not in d:
        hp = d.get("hparams")
        if not isinstance(hp, Mapping) or not isinstance(hp.get("model_hparam_overrides"), Mapping):
            raise InvalidArchitectureError("entry.hparams.model_hparam_overrides is missing or not a mapping")
        d = hp["model_hparam_overrides"]
    if not isinstance(d, Mapping):
        raise InvalidArchitectureError(f"a release arch must be a mapping, got {type(d).__name__}")
    extra = sorted(map(str, set(d) - {"hidden_size", "nas_config"}))
    if extra:
        raise InvalidArchitectureError(f"unknown key(s) {extra}; allowed keys: ['hidden_size', 'nas_config']")
    if "hidden_size" not in d:
        raise InvalidArchitectureError(f"hidden_size is missing; allowed values: {list(HIDDEN_SIZES)}")
    h = d["hidden_size"]
    if not _is_int(h) or int(h) not in HIDDEN_SIZES:
        raise _bad("hidden_size", h, HIDDEN_SIZES)
    nas = d.get("nas_config")
    if not isinstance(nas, Mapping):
        raise InvalidArchitectureError("nas_config is missing or not a mapping {'encoder_layers': [...]}")
    extra = sorted(map(str, set(nas) - {"encoder_layers"}))
    if extra:
        raise InvalidArchitectureError(f"unknown key(s) {extra} in nas_config; allowed keys: ['encoder_layers']")
    layers = nas.get("encoder_layers")
    if not isinstance(layers, Sequence) or isinstance(layers, (str, bytes)):
        raise InvalidArchitectureError("nas_config.encoder_layers is missing or not a list")
    if len(layers) not in LAYER_COUNTS:
        raise _bad("len(nas_config.encoder_layers)", len(layers), LAYER_COUNTS)
    out = []
    for i, layer in enumerate(layers):
        path = f"nas_config.encoder_layers[{i}]"
        if not isinstance(layer, Mapping):
            raise InvalidArchitectureError(f"{path} must be a mapping, got {type(layer).__name__}")
        missing = [f for f in LAYER_FIELDS if f not in layer]
        extra = sorted(map(str, set(layer) - set(LAYER_FIELDS)))
        if missing or extra:
            raise InvalidArchitectureError(
                f"{path} has missing key(s) {missing} / unknown key(s) {extra}; required keys: {list(LAYER_FIELDS)}"
            )
        vals = [layer[f] for f in LAYER_FIELDS]
        _validate_layer_values(path, *vals)
        t, p, hh, ff, n = vals
        out.append(Layer(t, operation_parameter(t, p), int(hh), int(ff), int(n)))
    return Arch(int(h), tuple(out))


def parse_string(s: Any) -> Arch:
    """Parse the canonical string form (whitespace and operation case are forgiven).

    Only ASCII is accepted: Unicode digits (``²``, ``①``, fullwidth ``２``) and letters that
    upper-case to ASCII (``ſ``) would otherwise slip through ``int()`` and ``str.upper()``.
    """
    if not isinstance(s, str):
        raise InvalidArchitectureError(f"an arch string must be str, got {type(s).__name__}")
    fmt = "expected 'HIDDEN/OP-PARAM-hHEADS-FFDIMxNUMFF/...' e.g. '256/SA-WMA-h4-1024x3/DSC-5-h2-512x1'"
    if not s.isascii():
        bad = next(c for c in s if not c.isascii())
        raise InvalidArchitectureError(f"arch string {s!r} holds the non-ASCII character {bad!r}; arch strings are ASCII: {fmt}")
    parts = [p.strip() for p in s.strip().split("/")]
    if len(parts) < 2:
        raise InvalidArchitectureError(f"cannot parse arch string {s!r}: {fmt}")
    if not parts[0].isdigit() or int(parts[0]) not in HIDDEN_SIZES:
        raise _bad("hidden_size", parts[0], HIDDEN_SIZES)
    if len(parts) - 1 not in LAYER_COUNTS:
        raise _bad("number of encoder layers", len(parts) - 1, LAYER_COUNTS)
    layers = []
    for i, p in enumerate(parts[1:]):
        path = f"layer {i}"
        bits = p.split("-")
        if len(bits) != 4 or not bits[2].lower().startswith("h") or "x" not in bits[3].lower():
            raise InvalidArchitectureError(f"cannot parse {path} {p!r} of {s!r}: {fmt}")
        t = bits[0].upper()
        par: Any = bits[1].upper()
        if t in KERNEL_OPERATIONS:
            if not par.isdigit():
                raise _bad(f"{path}.operation_parameter (kernel size for DSC)", bits[1], OPERATION_PARAMETERS["DSC"])
            par = int(par)
        ff_s, _, n_s = bits[3].lower().partition("x")
        nums = []
        for name, raw in (("num_operation_heads", bits[2][1:]), ("feed_forward_dimension", ff_s), ("num_feed_forward", n_s)):
            if not raw.isdigit():
                raise InvalidArchitectureError(f"{path}.{name} = {raw!r} is not an integer in {s!r}: {fmt}")
            nums.append(int(raw))
        _validate_layer_values(path, t, par, *nums)
        layers.append(Layer(t, par, *nums))
    return Arch(int(parts[0]), tuple(layers))


# -- the index bijection -------------------------------------------------------------------
def index(arch: Arch) -> int:
    """Index of ``arch`` in ``range(SPACE_SIZE)``."""
    base = HIDDEN_SIZES.index(arch.hidden_size) * PER_HIDDEN
    for n in LAYER_COUNTS:
        if n == arch.num_layers:
            break
        base += BLOCK_SIZES[n]
    k = 0
    for layer in arch.layers:
        k = k * CHOICES_PER_LAYER + layer.choice
    return base + k


def arch_at(i: Any) -> Arch:
    """The architecture at index ``i`` (inverse of :func:`index`)."""
    if not _is_int(i) or not 0 <= int(i) < SPACE_SIZE:
        raise InvalidArchitectureError(f"space index {i!r} is out of range; allowed: integers 0 <= i < {SPACE_SIZE}")
    h, rest = divmod(int(i), PER_HIDDEN)
    for n in LAYER_COUNTS:
        if rest < BLOCK_SIZES[n]:
            break
        rest -= BLOCK_SIZES[n]
    digits = []
    for _ in range(n):
        rest, d = divmod(rest, CHOICES_PER_LAYER)
        digits.append(d)
    return Arch(HIDDEN_SIZES[h], tuple(LAYER_CHOICES[d] for d in reversed(digits)))


# -- the space object -----------------------------------------------------------------
class FlexiBERTSpace:
    """The whole space as an object: size, bijection, sampling, mutation, neighbours."""

    size: int = SPACE_SIZE

    def __len__(self) -> int:
        return SPACE_SIZE

    def __contains__(self, value: Any) -> bool:
        try:
            Arch.coerce(value)
        except InvalidArchitectureError:
            return False
        return True

    def __iter__(self) -> Iterator[Arch]:
        """Lazily iterate over all 10.6M archs in index order."""
        return (arch_at(i) for i in range(SPACE_SIZE))

    index = staticmethod(index)
    arch = staticmethod(arch_at)

    def validate(self, value: Any) -> Arch:
        return Arch.coerce(value)

    def configspace(self, seed: int | None = None) -> Any:
        """This space as a ConfigSpace ``ConfigurationSpace`` (the ``[hpo]`` extra), the
        form SMAC3, DEHB, HPOBench and YAHPO-style tools take: ``hidden_size`` and
        ``num_layers``; per layer slot ``i`` the ``layer{i}_operation_type``, its
        parameter as a child active only under that type
        (``layer{i}_operation_parameter_<TYPE>``) and the ordinals
        ``layer{i}_num_operation_heads``, ``layer{i}_feed_forward_dimension``,
        ``layer{i}_num_feed_forward``; slots 2-3 active only when ``num_layers == 4``.
        Valid configurations and archs are in bijection
        (:mod:`nasbench_bert.integrations.configspace` converts both ways).
        ``seed`` seeds the space's own sampler."""
        from ConfigSpace import CategoricalHyperparameter, ConfigurationSpace, EqualsCondition, OrdinalHyperparameter

        seed = check_seed("seed", seed)
        deepest = max(LAYER_COUNTS)
        cs = ConfigurationSpace(seed=seed)
        depth = OrdinalHyperparameter("num_layers", list(LAYER_COUNTS))
        cs.add([OrdinalHyperparameter("hidden_size", list(HIDDEN_SIZES)), depth])
        for i in range(deepest):
            op = CategoricalHyperparameter(f"layer{i}_operation_type", list(OPERATION_TYPES))
            params = {t: (OrdinalHyperparameter if t in KERNEL_OPERATIONS else CategoricalHyperparameter)(
                f"layer{i}_operation_parameter_{t}", list(OPERATION_PARAMETERS[t])) for t in OPERATION_TYPES}
            ords = [OrdinalHyperparameter(f"layer{i}_{k}", list(v)) for k, v in
                    (("num_operation_heads", NUM_HEADS), ("feed_forward_dimension", FF_DIMS), ("num_feed_forward", NUM_FF))]
            cs.add([op, *params.values(), *ords])
            cs.add([EqualsCondition(params[t], op, t) for t in OPERATION_TYPES])
            if i >= min(LAYER_COUNTS):
                cs.add([EqualsCondition(hp, depth, deepest) for hp in (op, *ords)])
        return cs

    def sample(self, n: int, seed: int | None = None, *, replace: bool = False) -> list[Arch]:
        """``n`` architectures drawn uniformly from the whole space (distinct by default)."""
        n = check_int("n", n, low=0, high=None if replace else SPACE_SIZE)
        seed = check_seed("seed", seed)
        check_bool("replace", replace)
        rng = np.random.default_rng(seed)
        idx = rng.choice(SPACE_SIZE, size=n, replace=replace)
        return [arch_at(int(i)) for i in idx]

    def neighbours(self, arch: ArchLike) -> list[Arch]:
        """Every arch that differs from ``arch`` in exactly one field, at the same depth.

        Fields: the hidden size, and per layer the operation (type and parameter as one
        field, 5 alternatives), heads, feed-forward width and feed-forward depth; that is
        1 + 8 x layers neighbours. Depth changes are left to :meth:`mutate` because a
        2 -> 4 change has no single natural neighbour.
        """
        a = Arch.coerce(arch)
        out = [Arch(h, a.layers) for h in HIDDEN_SIZES if h != a.hidden_size]
        for i, layer in enumerate(a.layers):
            for alt in _layer_alternatives(layer):
                out.append(Arch(a.hidden_size, a.layers[:i] + (alt,) + a.layers[i + 1 :]))
        return out

    def mutate(self, arch: ArchLike, rng: np.random.Generator | int | None = None, *, allow_depth: bool = True) -> Arch:
        """A random one-field change of ``arch``.

        With ``allow_depth`` the depth is one more field: 4 -> 2 drops two random layers,
        2 -> 4 inserts two uniformly random layers at random positions.
        """
        a = Arch.coerce(arch)
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        n_fields = 1 + 4 * a.num_layers + (1 if allow_depth else 0)
        f = int(rng.integers(n_fields))
        if f == 0:
            return Arch(HIDDEN_SIZES[1 - HIDDEN_SIZES.index(a.hidden_size)], a.layers)
        if allow_depth and f == n_fields - 1:
            layers = list(a.layers)
            if a.num_layers == 4:
                keep = sorted(rng.choice(4, size=2, replace=False))
                return Arch(a.hidden_size, tuple(layers[k] for k in keep))
            for _ in range(2):
                pos = int(rng.integers(len(layers) + 1))
                layers.insert(pos, Layer.from_choice(int(rng.integers(CHOICES_PER_LAYER))))
            return Arch(a.hidden_size, tuple(layers))
        li, which = divmod(f - 1, 4)
        layer = a.layers[li]
        if which == 0:
            ops = [o for o in OPERATIONS if o != (layer.operation_type, layer.operation_parameter)]
            t, p = ops[int(rng.integers(len(ops)))]
            new = Layer(t, p, layer.num_operation_heads, layer.feed_forward_dimension, layer.num_feed_forward)
        else:
            new = _layer_alternatives(layer)[4 + which]
        return Arch(a.hidden_size, a.layers[:li] + (new,) + a.layers[li + 1 :])


def _layer_alternatives(layer: Layer) -> list[Layer]:
    """The 8 one-field changes of a layer: 5 operations, then heads, ff width, ff depth."""
    out = [
        Layer(t, p, layer.num_operation_heads, layer.feed_forward_dimension, layer.num_feed_forward)
        for t, p in OPERATIONS
        if (t, p) != (layer.operation_type, layer.operation_parameter)
    ]
    flip = lambda v, opts: opts[1 - opts.index(v)]  # noqa: E731 - two-valued fields
    out.append(Layer(layer.operation_type, layer.operation_parameter, flip(layer.num_operation_heads, NUM_HEADS), layer.feed_forward_dimension, layer.num_feed_forward))
    out.append(Layer(layer.operation_type, layer.operation_parameter, layer.num_operation_heads, flip(layer.feed_forward_dimension, FF_DIMS), layer.num_feed_forward))
    out.append(Layer(layer.operation_type, layer.operation_parameter, layer.num_operation_heads, layer.feed_forward_dimension, flip(layer.num_feed_forward, NUM_FF)))
    return out


FLEXIBERT_SPACE = FlexiBERTSpace()
#: the 48 possible layers, in choice order; Layer is immutable, so archs can share them
LAYER_CHOICES: tuple[Layer, ...] = tuple(Layer.from_choice(c) for c in range(CHOICES_PER_LAYER))

# -- field codes: the neighbourhood metric ---------------------------------------------------
_OPERATION_NAMES = [f"{t}-{p}" for t, p in OPERATIONS]
#: length of :func:`field_codes`: hidden size, depth, then 4 fields for each of 4 layer slots
CODE_LENGTH = 2 + 4 * max(LAYER_COUNTS)


def field_codes(arch: Arch) -> np.ndarray:
    """An integer vector of the arch's fields: hidden size, depth, then per layer slot
    (operation, heads, ff width, ff depth); -1 marks an absent layer."""
    v = np.full(CODE_LENGTH, -1, dtype=np.int64)
    v[0], v[1] = arch.hidden_size, arch.num_layers
    for i, layer in enumerate(arch.layers):
        v[2 + 4 * i: 6 + 4 * i] = (
            _OPERATION_NAMES.index(f"{layer.operation_type}-{layer.operation_parameter}"),
            layer.num_operation_heads, layer.feed_forward_dimension, layer.num_feed_forward,
        )
    return v


def field_distances(query: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Number of differing fields between ``query`` and each row of ``codes`` (both from
    :func:`field_codes`); a layer present in one arch only counts as 4."""
    return (codes[:, 0] != query[0]).astype(np.int64) + (codes[:, 2:] != query[2:]).sum(axis=1)

assert SPACE_SIZE == 10_621_440 == 2 * (48**2 + 48**4)
assert math.prod((len(OPERATIONS), len(NUM_HEADS), len(FF_DIMS), len(NUM_FF))) == CHOICES_PER_LAYER
