"""NAS-Bench-NLP recipes: parsing, validation, renaming-invariant hashes, fuzzing."""

from __future__ import annotations

import json
import random
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nasbench_bert import InvalidArchitectureError, InvalidRecipeError, parse_recipe, recipe_hash
from nasbench_bert.spaces.nlp import isomorphic
from conftest import NLP

SCHEMA = json.loads((Path(__file__).parent.parent / "schemas" / "nlp_recipe.schema.json").read_text())
EXAMPLES = json.loads((NLP / "data" / "recepies_example.json").read_text())


def _rename(recipe: dict, seed: int) -> dict:
    """Rename every intermediate node and shuffle key order (same cell)."""
    rng = random.Random(seed)
    inner = [k for k in recipe if not k.startswith("h_new_")]
    new = [f"n{rng.randrange(10**9)}_{i}" for i in range(len(inner))]
    m = dict(zip(inner, new))
    items = list(recipe.items())
    rng.shuffle(items)
    out = {}
    for k, v in items:
        inputs = [m.get(i, i) for i in v["input"]]
        if v["op"] != "blend":
            rng.shuffle(inputs)  # commutative ops: order of inputs does not matter
        out[m.get(k, k)] = {"op": v["op"], "input": inputs}
    return out


def test_all_wikitext2_and_example_recipes_parse(wt2_logs):
    for r in [json.loads(d["recepie"]) for d in wt2_logs] + EXAMPLES:
        p = parse_recipe(r)
        assert p.to_dict() == {k: {"op": v["op"], "input": list(v["input"])} for k, v in r.items()}
        jsonschema.validate(r, SCHEMA)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 344), st.integers(0, 2**31))
def test_hash_is_invariant_to_renaming(wt2_logs, i, seed):
    r = json.loads(wt2_logs[i]["recepie"])
    r2 = _rename(r, seed)
    assert recipe_hash(r2) == recipe_hash(r)
    assert isomorphic(r, r2)


def test_hash_separates_different_cells():
    rnn, lstm, gru = EXAMPLES[0], EXAMPLES[1], EXAMPLES[2]
    assert len({recipe_hash(rnn), recipe_hash(lstm), recipe_hash(gru)}) == 3
    # blend is not commutative: swapping its last two arguments is another cell
    swapped = json.loads(json.dumps(gru))
    swapped["h_new_0"]["input"] = [swapped["h_new_0"]["input"][i] for i in (0, 2, 1)]
    assert recipe_hash(swapped) != recipe_hash(gru) and not isomorphic(swapped, gru)
    # a changed activation is another cell
    other = json.loads(json.dumps(rnn))
    other["h_new_0"]["op"] = "activation_sigm"
    assert recipe_hash(other) != recipe_hash(rnn)


@pytest.mark.parametrize(
    "recipe, msg",
    [
        ({"h_new_0": {"op": "conv", "input": ["x"]}}, "op = 'conv' is not allowed"),
        ({"h_new_0": {"op": "linear", "input": ["y"]}}, "input 'y' does not exist"),
        ({"h_new_0": {"op": "linear", "input": ["x", "h_prev_1"]}}, "input 'h_prev_1' does not exist"),
        ({"a": {"op": "activation_tanh", "input": ["x"]}}, "h_new_0"),
        ({"h_new_0": {"op": "blend", "input": ["x", "x"]}}, "exactly 3"),
        ({"h_new_0": {"op": "activation_tanh", "input": ["a"]}, "a": {"op": "linear", "input": ["h_new_0"]}}, "cycle"),
        ({"h_new_0": {"op": "linear", "input": ["x"]}, "h_new_2": {"op": "linear", "input": ["x"]}}, "without gaps"),
        ({"x": {"op": "linear", "input": ["x"]}, "h_new_0": {"op": "linear", "input": ["x"]}}, "reserved"),
        ("{not json", "not valid JSON"),
        ([], "must be a mapping"),
    ],
)
def test_invalid_recipes_name_the_problem(recipe, msg):
    with pytest.raises(InvalidRecipeError, match=msg):
        parse_recipe(recipe)
    assert issubclass(InvalidRecipeError, InvalidArchitectureError)


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6) | st.sampled_from(["x", "h_prev_0", "h_new_0", "linear", "blend"]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["op", "input", "h_new_0", "a", "x"]) | st.text(max_size=5), c, max_size=4),
    max_leaves=15,
)


@st.composite
def mutated_recipe(draw):
    r = json.loads(json.dumps(draw(st.sampled_from(EXAMPLES))))
    for _ in range(draw(st.integers(1, 3))):
        if not r:
            break
        k = draw(st.sampled_from(sorted(r)))
        kind = draw(st.integers(0, 4))
        if kind == 0:
            r[k] = draw(junk)
        elif kind == 1 and isinstance(r[k], dict):
            r[k]["op"] = draw(junk | st.sampled_from(["linear", "blend", "activation_tanh", "elementwise_sum"]))
        elif kind == 2 and isinstance(r[k], dict):
            r[k]["input"] = draw(st.lists(st.sampled_from(sorted(r) + ["x", "h_prev_0", "h_prev_3", "zz"]), max_size=4))
        elif kind == 3:
            del r[k]
        else:
            r[draw(st.text(max_size=6))] = draw(junk)
    return r


@settings(max_examples=1200, deadline=None)
@given(st.one_of(mutated_recipe(), junk))
def test_fuzzed_recipes_raise_only_invalid_recipe(r):
    try:
        p = parse_recipe(r)
    except InvalidRecipeError:
        return
    recipe_hash(p)  # a valid recipe always hashes
    jsonschema.validate(p.to_dict(), SCHEMA)
