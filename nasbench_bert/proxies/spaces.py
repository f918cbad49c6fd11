"""What the proxy engine needs to know about each search space, in one object each.

A :class:`ProxySpace` says how user keys become models' inputs (ids, archs, recipes),
the default batch, which gradient objective a semantics' protocol prescribes there,
which rank combinations (NTSR) exist, and the largest sequence a model can take. The
engine, the sweep and the CLI ask :func:`proxy_space` instead of comparing strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable


from ..benchmark.keys import flexibert_keys
from ..checks import check_choice
from ..semantics import Semantics
from ..sizes import PTB_VOCAB
from ..spaces.nlp import Recipe, parse_recipe, recipe_hash
from ..vocabulary import BenchmarkLike

Item = tuple[dict[str, Any], Any]  # (identifying columns, model key)


def _flexibert_items(archs: Iterable[Any], bench: BenchmarkLike | None) -> list[Item]:
    keys = flexibert_keys(archs, bench)
    return [({"id": i, "arch": str(a)} if i is not None else {"arch": str(a)}, a) for i, a in keys]


def _nlp_items(archs: Iterable[Any], bench: BenchmarkLike) -> list[Item]:
    out: list[Item] = []
    for a in archs:
        if isinstance(a, tuple) and len(a) == 2:  # (label, recipe)
            label, rec = a
            r = parse_recipe(rec)
            out.append(({"key": str(label), "arch": recipe_hash(r)}, r))
        else:
            r = a if isinstance(a, Recipe) else parse_recipe(a)
            out.append(({"arch": recipe_hash(r)}, r))
    return out


@dataclass(frozen=True)
class ProxySpace:
    name: str
    #: keys (ids, archs, recipes, ...) -> (identifying columns, model key)
    items: Callable[[Iterable[Any], Any], list[Item]]
    #: BatchSpec fields this space defaults to
    default_batch: dict[str, Any]
    #: the objective a semantics' protocol prescribes for this space's gradient proxies
    objective: Callable[[Semantics], str]
    #: rank combinations computed across the compared set: name -> parts
    combined: dict[str, tuple[str, ...]] = field(default_factory=dict)
    max_seq_len: int | None = None


PROXY_SPACES: dict[str, ProxySpace] = {
    "flexibert": ProxySpace("flexibert", _flexibert_items, {"batch_size": 8, "seq_len": 128},
                            lambda sem: sem.protocol.objective, {"ntsr": ("ntkt", "sept")}, max_seq_len=512),
    # NAS-Bench-NLP eval batch 10, bptt 70; vocabulary of PTB unless told
    "nlp": ProxySpace("nlp", _nlp_items, {"batch_size": 10, "seq_len": 70, "vocab_size": PTB_VOCAB},
                      lambda sem: sem.protocol.nlp_objective),
}


def proxy_space(name: Any) -> ProxySpace:
    """The adapter of the space named ``name`` (``"flexibert"`` or ``"nlp"``)."""
    return PROXY_SPACES[check_choice("space", name, tuple(PROXY_SPACES))]
