"""The FlexiBERT search space: bijection, round trips, validation, fuzzing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nasbench_bert import FLEXIBERT_SPACE, Arch, InvalidArchitectureError
from nasbench_bert.spaces.flexibert import LAYER_FIELDS, OPERATIONS, SPACE_SIZE, Layer

SCHEMA = json.loads((Path(__file__).parent.parent / "schemas" / "flexibert_arch.schema.json").read_text())

layers = st.builds(
    lambda op, h, f, n: Layer(op[0], op[1], h, f, n),
    st.sampled_from(OPERATIONS), st.sampled_from([2, 4]), st.sampled_from([512, 1024]), st.sampled_from([1, 3]),
)
archs = st.builds(
    lambda h, ls: Arch(h, tuple(ls)),
    st.sampled_from([128, 256]),
    st.one_of(st.lists(layers, min_size=2, max_size=2), st.lists(layers, min_size=4, max_size=4)),
)


def test_space_size():
    assert FLEXIBERT_SPACE.size == len(FLEXIBERT_SPACE) == SPACE_SIZE == 10_621_440


def test_index_endpoints_and_order():
    assert Arch.from_index(0).index == 0
    assert Arch.from_index(SPACE_SIZE - 1).index == SPACE_SIZE - 1
    with pytest.raises(InvalidArchitectureError, match="out of range"):
        Arch.from_index(SPACE_SIZE)
    with pytest.raises(InvalidArchitectureError):
        Arch.from_index(-1)
    # the first block is hidden 128 with 2 layers, in lexicographic layer order
    assert [Arch.from_index(i).num_layers for i in (0, 48**2 - 1, 48**2)] == [2, 2, 4]


@given(st.integers(0, SPACE_SIZE - 1))
def test_index_bijection_from_int(i):
    assert Arch.from_index(i).index == i


@given(archs)
def test_round_trips(a):
    assert Arch.from_index(a.index) == a
    assert Arch.from_string(str(a)) == a
    assert Arch.from_release(a.to_release()) == a
    assert Arch.from_release(json.loads(json.dumps(a.to_release()))) == a
    jsonschema.validate(a.to_release(), SCHEMA)
    assert hash(Arch.from_string(str(a))) == hash(a)


def test_every_release_arch_round_trips(release_entries):
    for e in release_entries:
        d = e["hparams"]["model_hparam_overrides"]
        a = Arch.from_release(d)
        assert a.to_release() == d
        assert Arch.from_string(str(a)) == a
        assert Arch.from_index(a.index) == a
        assert Arch.from_release(e) == a  # a whole entry is accepted too


def test_sample_is_uniform_distinct_and_reproducible():
    s1, s2 = FLEXIBERT_SPACE.sample(2000, seed=3), FLEXIBERT_SPACE.sample(2000, seed=3)
    assert s1 == s2 and len(set(s1)) == 2000
    assert FLEXIBERT_SPACE.sample(50, seed=4) != s1[:50]
    # 4-layer archs are 48**2 times as many as 2-layer ones: nearly every sample is 4-layer
    frac4 = np.mean([a.num_layers == 4 for a in s1])
    assert frac4 > 0.99
    # hidden sizes are balanced (binomial, 5 sigma)
    n128 = sum(a.hidden_size == 128 for a in s1)
    assert abs(n128 - 1000) < 5 * math.sqrt(500)


@given(archs)
def test_neighbours_differ_in_one_field(a):
    nb = FLEXIBERT_SPACE.neighbours(a)
    assert len(nb) == len(set(nb)) == 1 + 8 * a.num_layers
    for b in nb:
        assert b.num_layers == a.num_layers
        diff = (a.hidden_size != b.hidden_size) + sum(
            ((x.operation_type, x.operation_parameter) != (y.operation_type, y.operation_parameter))
            + (x.num_operation_heads != y.num_operation_heads)
            + (x.feed_forward_dimension != y.feed_forward_dimension)
            + (x.num_feed_forward != y.num_feed_forward)
            for x, y in zip(a.layers, b.layers)
        )
        assert diff == 1


@given(archs, st.integers(0, 2**32 - 1))
def test_mutate_gives_a_different_valid_arch(a, seed):
    rng = np.random.default_rng(seed)
    b = FLEXIBERT_SPACE.mutate(a, rng)
    assert isinstance(b, Arch) and b != a
    c = FLEXIBERT_SPACE.mutate(a, rng, allow_depth=False)
    assert c in FLEXIBERT_SPACE.neighbours(a)


def test_lazy_iteration():
    it = iter(FLEXIBERT_SPACE)
    first = [next(it) for _ in range(3)]
    assert [a.index for a in first] == [0, 1, 2]


def test_error_names_field_value_and_allowed():
    d = Arch.from_index(5).to_release()
    d["nas_config"]["encoder_layers"][1]["num_operation_heads"] = 3
    with pytest.raises(InvalidArchitectureError, match=r"encoder_layers\[1\]\.num_operation_heads = 3 .*allowed values: \[2, 4\]"):
        Arch.from_release(d)
    with pytest.raises(InvalidArchitectureError, match=r"hidden_size = '512' .*\[128, 256\]"):
        Arch.from_string("512/SA-SDP-h2-512x1/SA-SDP-h2-512x1")
    with pytest.raises(InvalidArchitectureError, match=r"operation_parameter .*DSC.* = 7"):
        Arch.from_string("128/DSC-7-h2-512x1/SA-SDP-h2-512x1")
    with pytest.raises(InvalidArchitectureError, match="number of encoder layers"):
        Arch.from_string("128/SA-SDP-h2-512x1/SA-SDP-h2-512x1/SA-SDP-h2-512x1")
    assert issubclass(InvalidArchitectureError, ValueError)


# -- fuzzing: malformed input gives InvalidArchitectureError and nothing else -------------------
junk = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2000) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=12), c, max_size=5),
    max_leaves=12,
)
field_values = st.one_of(
    junk, st.sampled_from(["SA", "LT", "DSC", "SDP", "WMA", "DFT", "DCT", 5, 9, 5.0, "5", 2, 4, 512, 1024, 1, 3, True, 128, 256])
)


@st.composite
def mutated_release(draw):
    d = draw(archs).to_release()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 5))
        layers = d.get("nas_config", {}).get("encoder_layers") if isinstance(d.get("nas_config"), dict) else None
        if kind == 0:
            d["hidden_size"] = draw(field_values)
        elif kind == 1 and isinstance(layers, list) and layers and isinstance(layers[0], dict):
            layer = layers[draw(st.integers(0, len(layers) - 1))]
            if isinstance(layer, dict):
                layer[draw(st.sampled_from(LAYER_FIELDS))] = draw(field_values)
        elif kind == 2 and isinstance(layers, list) and layers:
            layers.pop(draw(st.integers(0, len(layers) - 1)))
        elif kind == 3:
            d[draw(st.sampled_from(["hidden_size", "nas_config", "extra"]))] = draw(junk)
        elif kind == 4 and isinstance(layers, list) and layers and isinstance(layers[0], dict):
            layers[0].pop(draw(st.sampled_from(LAYER_FIELDS)), None)
        else:
            d["nas_config"] = draw(junk)
    return d


def _python_accepts(x) -> bool:
    try:
        Arch.from_release(x)
    except InvalidArchitectureError:
        return False
    return True


@settings(max_examples=1500, deadline=None)
@given(st.one_of(mutated_release(), junk))
def test_fuzzed_release_dicts_raise_only_invalid_arch(d):
    ok = _python_accepts(d)  # any other exception fails the test
    if not isinstance(d, dict) or "hparams" in d:
        return
    # the JSON Schema in schemas/ agrees with the Python validator
    # (except integral floats like 5.0, which JSON Schema counts as integers)
    try:
        jsonschema.validate(d, SCHEMA)
        schema_ok = True
    except jsonschema.ValidationError:
        schema_ok = False
    if schema_ok != ok:
        assert "5.0" in repr(d) or ".0" in repr(d), (d, ok, schema_ok)


@settings(max_examples=1200, deadline=None)
@given(st.one_of(st.text(max_size=60), st.builds(lambda a, i, c: str(a)[:i] + c + str(a)[i:], archs, st.integers(0, 60), st.text(max_size=3))))
def test_fuzzed_strings_raise_only_invalid_arch(s):
    try:
        a = Arch.from_string(s)
    except InvalidArchitectureError:
        return
    assert Arch.from_string(str(a)) == a


@settings(max_examples=300, deadline=None)
@given(junk)
def test_coerce_rejects_anything_else(x):
    try:
        Arch.coerce(x)
    except InvalidArchitectureError:
        pass
