"""NAS-Bench-NLP recurrent-cell recipes (Klyuchnikov et al., 2020).

A recipe is a mapping ``node -> {"op": ..., "input": [...]}`` describing one recurrent
cell as a DAG. Inputs are ``x`` (the layer input), ``h_prev_<i>`` (the cell's previous
states) or other nodes; the new states are the nodes ``h_new_<i>``. The release stores
recipes as JSON strings under the (sic) key ``recepie``.

Two recipes that differ only by the names of intermediate nodes describe the same cell.
:func:`recipe_hash` gives them the same key (a Weisfeiler-Lehman hash of the labelled
DAG, in which the names that carry meaning - ``x``, ``h_prev_i``, ``h_new_i`` - are
labels and every other name is erased). WL hashes cannot separate every pair of
non-isomorphic graphs, so lookups confirm a hash match with :func:`isomorphic`.

Limits: a recipe has at most :data:`MAX_NODES` nodes (the benchmark's largest has 15),
node names are ASCII, and hashing runs at most :data:`WL_ITERATIONS` refinement rounds,
so it takes time linear in the recipe's size (lookups stay exact: the isomorphism test
settles every hash match).
"""

from __future__ import annotations

import graphlib
import hashlib
import json
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import InvalidRecipeError

if TYPE_CHECKING:
    import networkx as nx

#: op name -> (min inputs, max inputs or None for unbounded)
OPS: dict[str, tuple[int, int | None]] = {
    "linear": (1, None),
    "blend": (3, 3),
    "elementwise_prod": (2, None),
    "elementwise_sum": (2, None),
    "activation_tanh": (1, 1),
    "activation_sigm": (1, 1),
    "activation_leaky_relu": (1, 1),
}
#: the name of the cell's input (the token embedding or the layer below); every other
#: input is a state ``h_prev_<i>`` or another node
INPUT = "x"
#: ops that carry weights: one matrix per input plus one bias
WEIGHTED_OPS = frozenset({"linear"})
#: ops whose result does not depend on the order of their inputs
COMMUTATIVE = frozenset({"linear", "elementwise_prod", "elementwise_sum"})
_PREV = re.compile(r"^h_prev_([0-9]+)$")
_NEW = re.compile(r"^h_new_([0-9]+)$")
#: the largest recipe accepted (the benchmark's largest cell has 15 nodes)
MAX_NODES = 1000
#: Weisfeiler-Lehman refinement rounds: enough to tell every benchmark recipe apart
#: (their longest path is 15), bounded so that hashing stays linear in the recipe's size
WL_ITERATIONS = 32


@dataclass(frozen=True)
class Recipe:
    """A validated recipe. ``nodes`` keeps the original names; ``hash`` ignores them.

    Built directly (``Recipe(nodes)``) or by :func:`parse_recipe`, it is validated the
    same way: an invalid cell raises :class:`~nasbench_bert.InvalidRecipeError`.
    """

    nodes: tuple[tuple[str, str, tuple[str, ...]], ...]  # (name, op, inputs), sorted by name

    def __post_init__(self) -> None:
        if not isinstance(self.nodes, (tuple, list)):
            raise InvalidRecipeError(f"Recipe.nodes must be a tuple of (name, op, inputs), got {type(self.nodes).__name__}")
        nodes = []
        for n in self.nodes:
            if not isinstance(n, (tuple, list)) or len(n) != 3 or not isinstance(n[2], (tuple, list)):
                raise InvalidRecipeError(f"Recipe.nodes entries must be (name, op, inputs), got {n!r}")
            nodes.append((n[0], n[1], tuple(n[2])))
        object.__setattr__(self, "nodes", _validate(nodes))

    @property
    def num_states(self) -> int:
        """Number of recurrent states (``h_new_0`` .. ``h_new_{n-1}``)."""
        return sum(1 for name, _, _ in self.nodes if _NEW.match(name))

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: {"op": op, "input": list(inp)} for name, op, inp in self.nodes}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def hash(self) -> str:
        return recipe_hash(self)

    def graph(self) -> "nx.DiGraph":
        return _graph(self)

    def op_counts(self) -> dict[str, int]:
        return dict(Counter(op for _, op, _ in self.nodes))


def parse_recipe(value: Any) -> Recipe:
    """Parse a recipe from a dict or a JSON string and validate it.

    Checks: a mapping of node name -> ``{"op", "input"}``; known ops with the right
    number of inputs; every input is ``x``, an existing ``h_prev_i`` or another node;
    no cycles; ``h_new_0`` .. ``h_new_{n-1}`` present and contiguous; every
    ``h_prev_i`` used has a matching ``h_new_i``.
    """
    if isinstance(value, Recipe):
        return value
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except (ValueError, UnicodeDecodeError) as e:
            raise InvalidRecipeError(f"recipe is not valid JSON: {e}") from None
        except RecursionError:
            raise InvalidRecipeError("recipe JSON is nested too deeply to be a recipe") from None
    if not isinstance(value, Mapping):
        raise InvalidRecipeError(f"a recipe must be a mapping node -> {{'op', 'input'}}, got {type(value).__name__}")
    if not value:
        raise InvalidRecipeError("recipe is empty; it needs at least the node 'h_new_0'")
    if len(value) > MAX_NODES:
        raise InvalidRecipeError(f"recipe has {len(value)} nodes; at most {MAX_NODES} are allowed")
    nodes = []
    for name, spec in value.items():
        if not isinstance(spec, Mapping):
            raise InvalidRecipeError(f"node {name!r} must be a mapping {{'op', 'input'}}, got {type(spec).__name__}")
        extra = sorted(map(str, set(spec) - {"op", "input"}))
        if extra or "op" not in spec or "input" not in spec:
            raise InvalidRecipeError(f"node {name!r} must have exactly the keys ['input', 'op']; got {sorted(map(str, spec))}")
        inputs = spec["input"]
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(i, str) for i in inputs):
            raise InvalidRecipeError(f"node {name!r}: input must be a list of node names, got {inputs!r}")
        nodes.append((name, spec["op"], tuple(inputs)))
    return Recipe(tuple(nodes))


def _validate(nodes: list[tuple[Any, Any, tuple[Any, ...]]]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """The checks every recipe passes (see :func:`parse_recipe`); returns the nodes sorted."""
    if not nodes:
        raise InvalidRecipeError("recipe is empty; it needs at least the node 'h_new_0'")
    if len(nodes) > MAX_NODES:
        raise InvalidRecipeError(f"recipe has {len(nodes)} nodes; at most {MAX_NODES} are allowed")
    seen: set[str] = set()
    for name, op, inputs in nodes:
        if not isinstance(name, str) or not name or not name.isascii() or not name.isprintable():
            raise InvalidRecipeError(f"node name {name!r} must be a non-empty printable ASCII string")
        if name in seen:
            raise InvalidRecipeError(f"node name {name!r} appears twice")
        seen.add(name)
        if name == INPUT or _PREV.match(name):
            raise InvalidRecipeError(f"node name {name!r} is reserved for the cell's inputs (x, h_prev_<i>)")
        if not isinstance(op, str) or op not in OPS:
            raise InvalidRecipeError(f"node {name!r}: op = {op!r} is not allowed; allowed values: {sorted(OPS)}")
        if not all(isinstance(i, str) for i in inputs):
            raise InvalidRecipeError(f"node {name!r}: input must be a list of node names, got {list(inputs)!r}")
        lo, hi = OPS[op]
        if len(inputs) < lo or (hi is not None and len(inputs) > hi):
            want = f"exactly {lo}" if lo == hi else f"at least {lo}"
            raise InvalidRecipeError(f"node {name!r}: op {op!r} takes {want} input(s), got {len(inputs)}")
    names = {n for n, _, _ in nodes}
    new_idx = sorted(int(m.group(1)) for n in names if (m := _NEW.match(n)))
    if not new_idx or new_idx != list(range(len(new_idx))):
        raise InvalidRecipeError(
            f"outputs must be h_new_0 .. h_new_<n-1> without gaps; found {['h_new_%d' % i for i in new_idx]}"
        )
    for name, _, inputs in nodes:
        for i in inputs:
            m = _PREV.match(i)
            if i == INPUT or i in names:
                continue
            if m and int(m.group(1)) < len(new_idx):
                continue
            allowed = [INPUT] + [f"h_prev_{k}" for k in new_idx] + ["<another node>"]
            raise InvalidRecipeError(f"node {name!r}: input {i!r} does not exist; allowed: {allowed}")
    # the standard library's topological sort (networkx is imported only to hash or compare)
    order = graphlib.TopologicalSorter({n: [i for i in inp if i in names] for n, _, inp in nodes})
    try:
        order.prepare()
    except graphlib.CycleError as e:
        raise InvalidRecipeError(f"recipe has a cycle through nodes {list(e.args[1][:-1])}; a cell must be a DAG") from None
    return tuple(sorted(nodes))  # type: ignore[arg-type]


def _graph(recipe: Recipe) -> "nx.DiGraph":
    """The labelled DAG: node label = op (+ the name where the name has meaning)."""
    import networkx as nx  # 80 ms: only when a recipe is hashed or compared

    g = nx.DiGraph()
    for name, op, inputs in recipe.nodes:
        g.add_node(name, label=f"{op}:{name}" if _NEW.match(name) else op)
        # edge label = how the input is used: its multiplicity for commutative ops,
        # its argument positions otherwise (blend is a*b + (1-a)*c)
        if op in COMMUTATIVE:
            for src, k in Counter(inputs).items():
                g.add_edge(src, name, arg=f"x{k}")
        else:
            pos: dict[str, list[int]] = {}
            for p, src in enumerate(inputs):
                pos.setdefault(src, []).append(p)
            for src, ps in pos.items():
                g.add_edge(src, name, arg="@" + ",".join(map(str, ps)))
    for n in g.nodes:
        if "label" not in g.nodes[n]:  # x and h_prev_i
            g.nodes[n]["label"] = n
    return g


def recipe_hash(recipe: Any) -> str:
    """A key invariant to renaming intermediate nodes (hex, 32 chars)."""
    import networkx as nx

    r = parse_recipe(recipe)
    with warnings.catch_warnings():  # networkx >= 3.5 notes its (fixed) directed hashing
        warnings.simplefilter("ignore", UserWarning)
        wl = nx.weisfeiler_lehman_graph_hash(_graph(r), node_attr="label", edge_attr="arg",
                                             iterations=min(len(r.nodes) + 1, WL_ITERATIONS))
    return hashlib.sha256(wl.encode()).hexdigest()[:32]


def isomorphic(a: Any, b: Any) -> bool:
    """Exact test that two recipes are the same cell up to intermediate-node names."""
    import networkx as nx

    ga, gb = _graph(parse_recipe(a)), _graph(parse_recipe(b))
    return nx.is_isomorphic(
        ga, gb, node_match=lambda x, y: x["label"] == y["label"], edge_match=lambda x, y: x["arg"] == y["arg"]
    )
