"""How the beyond study builds a score and chooses it: the spec features of an arch, ranks
within a (layers, hidden size) cell, the lexicographic score (cell first, then ``X``),
rank averages of signed features, and the one selection rule (the largest within-cell
tau on ids 0-249).

Why separate from :mod:`studies.beyond`: this is the method, pure functions of arrays
that read nothing from the benchmark; :mod:`studies.beyond` holds the study that applies
it (its inputs, the attempts, the figures on both halves, the JSON) and imports from here,
never the other way.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: how many of the best single features (on ids 0-249) enter a rank-average search, and
#: the most features averaged: a fixed, small search so that the held-out half can tell
#: selection luck from signal
POOL = 10
MAX_K = 4


# -- features ----------------------------------------------------------------------------------------
def spec_features(archs: list[Any]) -> dict[str, dict[str, np.ndarray]]:
    """Spec features of each arch, by family: ``aggregate`` (sums over the layers),
    ``operations`` (counts of operation types and parameters: the TF code trained every
    layer as scaled dot-product attention, so these test that finding), ``position``
    (one layer's fields: first, second, second-to-last, last; and the feed-forward count
    of every layer but the last). All higher-is-more; the sign is chosen later."""
    from nasbench_bert import Arch
    from nasbench_bert.sizes import flexibert_num_params

    a = [Arch.coerce(x) for x in archs]

    def f(fn: Callable[[Any], float]) -> np.ndarray:
        return np.array([fn(x) for x in a], dtype=float)

    agg = {
        "total heads": f(lambda x: sum(la.num_operation_heads for la in x.layers)),
        "mean heads per layer": f(lambda x: np.mean([la.num_operation_heads for la in x.layers])),
        "feed-forward layers": f(lambda x: sum(la.num_feed_forward for la in x.layers)),
        "feed-forward dimension, summed": f(lambda x: sum(la.feed_forward_dimension for la in x.layers)),
        "feed-forward units (dimension x count)":
            f(lambda x: sum(la.feed_forward_dimension * la.num_feed_forward for la in x.layers)),
        "deep feed-forward units (dimension x (count - 1))":
            f(lambda x: sum(la.feed_forward_dimension * (la.num_feed_forward - 1) for la in x.layers)),
        "parameters (as_trained)": f(lambda x: flexibert_num_params(x, "as_trained")),
        "parameters (as_specified)": f(lambda x: flexibert_num_params(x, "as_specified")),
    }
    ops = {f"{t} layers": f(lambda x, t=t: sum(la.operation_type == t for la in x.layers)) for t in ("SA", "LT", "DSC")}
    ops.update({f"{t}-{p} layers": f(lambda x, t=t, p=p: sum(la.operation_type == t and str(la.operation_parameter) == p
                                                             for la in x.layers))
                for t, p in (("SA", "SDP"), ("SA", "WMA"), ("LT", "DFT"), ("LT", "DCT"), ("DSC", "5"), ("DSC", "9"))})
    pos: dict[str, np.ndarray] = {}
    for where, i in (("first", 0), ("second", 1), ("second-to-last", -2), ("last", -1)):
        pos[f"{where} layer: heads"] = f(lambda x, i=i: x.layers[i].num_operation_heads)
        pos[f"{where} layer: feed-forward count"] = f(lambda x, i=i: x.layers[i].num_feed_forward)
        pos[f"{where} layer: feed-forward dimension"] = f(lambda x, i=i: x.layers[i].feed_forward_dimension)
        pos[f"{where} layer: is SA"] = f(lambda x, i=i: x.layers[i].operation_type == "SA")
    pos["feed-forward layers, all but the last layer"] = f(lambda x: sum(la.num_feed_forward for la in x.layers[:-1]))
    return {"aggregate": agg, "operations": ops, "position": pos}


def within_cell_rank(v: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Each value's rank inside its cell, scaled to [0, 1] (average ranks for ties)."""
    from scipy.stats import rankdata

    out = np.zeros(len(v))
    for c in np.unique(cells):
        m = cells == c
        out[m] = (rankdata(v[m]) - 1) / max(int(m.sum()) - 1, 1)
    return out


def lexicographic(cell_order: np.ndarray, x: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """The cell first (``cell_order``: layers * 10**4 + hidden, the ``depth_then_width``
    baseline's encoding), then ``x`` inside the cell (as its within-cell rank / 2, which
    stays below the smallest gap between cells)."""
    return cell_order + 0.5 * within_cell_rank(x, cells)


@dataclass(frozen=True)
class Component:
    """One feature with the sign chosen for it on ids 0-249."""

    name: str
    sign: int

    def label(self) -> str:
        return ("−" if self.sign < 0 else "") + self.name


def combine(components: tuple[Component, ...], features: dict[str, np.ndarray], cells: np.ndarray) -> np.ndarray:
    """The plain mean of the components' signed within-cell ranks (no weights)."""
    return np.mean([within_cell_rank(c.sign * features[c.name], cells) for c in components], axis=0)


# -- selection on ids 0-249 ---------------------------------------------------------------------
def within_cell_tau(x: np.ndarray, y: np.ndarray, cells: np.ndarray) -> float:
    from nasbench_bert import metrics as mt

    return mt.tau_within_cell(x, y, cells)


def orient(names: list[str], features: dict[str, np.ndarray], y: np.ndarray, cells: np.ndarray,
           sel: np.ndarray) -> list[tuple[Component, float]]:
    """Each feature with the sign that gives the larger within-cell tau on the selection
    half, and that tau, best first (ties by name)."""
    out = []
    for n in names:
        t = within_cell_tau(features[n][sel], y[sel], cells[sel])
        if not math.isfinite(t):
            continue
        out.append((Component(n, 1 if t >= 0 else -1), abs(t)))
    return sorted(out, key=lambda p: (-p[1], p[0].name))


def best_single(names: list[str], features: dict[str, np.ndarray], y: np.ndarray, cells: np.ndarray,
                sel: np.ndarray) -> tuple[Component, ...]:
    return (orient(names, features, y, cells, sel)[0][0],)


def best_average(names: list[str], features: dict[str, np.ndarray], y: np.ndarray, cells: np.ndarray,
                 sel: np.ndarray) -> tuple[tuple[Component, ...], int]:
    """The rank average (of 1 to :data:`MAX_K` of the :data:`POOL` best single features,
    each with its chosen sign) with the largest within-cell tau on the selection half;
    ties go to fewer features, then to the earlier combination. Returns it and the
    number of combinations tried."""
    pool = [c for c, _ in orient(names, features, y, cells, sel)[:POOL]]
    ranks = {c.name: within_cell_rank(c.sign * features[c.name], cells) for c in pool}
    best: tuple[float, tuple[Component, ...]] = (-math.inf, ())
    tried = 0
    for k in range(1, MAX_K + 1):
        for combo in itertools.combinations(pool, k):
            tried += 1
            s = np.mean([ranks[c.name] for c in combo], axis=0)
            t = within_cell_tau(s[sel], y[sel], cells[sel])
            if t > best[0] + 1e-12:
                best = (t, combo)
    return best[1], tried
