"""Featurisation of FlexiBERT archs by space index, vectorised (no torch).

An arch is decoded into per-layer choices with integer arithmetic
(:func:`decode_indices`) and looked up in small per-(hidden size, choice) tables, so
whole-space queries featurise hundreds of thousands of archs per second.

Two feature sets:

* :func:`featurize_indices` - the 0.1 layout, kept as it was (per-slot one-hots of
  operation, heads, feed-forward width and depth, then hidden size, depth and the log
  *as-specified* parameter count, in that order; ``studies.analysis`` reads it);
* :func:`surrogate_features` - what the surrogate fits on. The GLUE scores belong to the
  ``as_trained`` model (:data:`~nasbench_bert.semantics.AS_TRAINED`), in which every
  layer is scaled dot-product attention and the feed-forward stack is
  ``H -> 4H -> F x (n - 1) -> H``. So a layer is described by what that model sees: its
  head count, whether it has the 3-layer feed-forward stack, and, only then, whether F is
  1,024. Layers are encoded twice, counted from the input and from the output (a 2-layer
  arch's two layers sit in slots 0-1 from the input and in slots 2-3 from the output).
  Then analytic quantities of that model: its parameters and FLOPs. (SEPT, the ETAS
  expressivity score, is a function of hidden size and depth alone here - every block's
  output width is H - and its scale, about 129 log H, makes any linear or kernel model
  extrapolate wildly to an unseen hidden size; it is in ``kind="full"`` only.)
  Every column is a function of the as-trained model alone, so archs with the same
  as-trained model ("twins", 2,664 classes in the whole space) get the same features;
  :class:`~nasbench_bert.surrogate.Surrogate` scores each class once.
  ``kind="full"`` adds SEPT and what the trained models never saw - the operation
  one-hots and the as-specified FLOPs and parameter count - for the comparison in
  ``docs/surrogate.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..checks import check_choice
from ..semantics import AS_SPECIFIED, AS_TRAINED, DEFAULT_SEMANTICS, EMBEDDING_SIZE, ModelPlan, Semantics, get_semantics
from ..sizes import embedding_params, feed_forward_params, mixing_flops, operation_params
from ..spaces.flexibert import (
    BLOCK_SIZES, CHOICES_PER_LAYER, HIDDEN_SIZES, LAYER_CHOICES, LAYER_COUNTS, OPERATIONS, PER_HIDDEN, Arch,
)

MAX_LAYERS = max(LAYER_COUNTS)
SLOT = len(OPERATIONS) + 4  # op one-hot, heads=4, ff=1024, num_ff=3, present
#: the sequence length FLOPs and SEPT are evaluated at (the proxy batches' length)
SEQ_LEN = 128


@dataclass(frozen=True)
class FeatureSet:
    """What one ``features=`` choice holds. ``as_specified``: adds SEPT, the operation
    one-hots and the as-specified FLOPs and parameters (archs of one as-trained class then
    differ); else every feature is a function of the as-trained model, so the archs of one
    as-trained class share their features (``per_class``)."""

    as_specified: bool

    @property
    def per_class(self) -> bool:
        return not self.as_specified


#: ``features=`` -> what it holds
FEATURE_SETS: dict[str, FeatureSet] = {"as_trained": FeatureSet(as_specified=False), "full": FeatureSet(as_specified=True)}
FEATURE_KINDS: tuple[str, ...] = tuple(FEATURE_SETS)


# -- the 0.1 layout -------------------------------------------------------------------------
def _choice_table() -> np.ndarray:
    t = np.zeros((CHOICES_PER_LAYER + 1, SLOT))  # last row: an absent layer
    for c, layer in enumerate(LAYER_CHOICES):
        t[c, OPERATIONS.index((layer.operation_type, layer.operation_parameter))] = 1
        t[c, len(OPERATIONS)] = layer.num_operation_heads == 4
        t[c, len(OPERATIONS) + 1] = layer.feed_forward_dimension == 1024
        t[c, len(OPERATIONS) + 2] = layer.num_feed_forward == 3
        t[c, len(OPERATIONS) + 3] = 1
    return t


_CHOICES = _choice_table()


def decode_indices(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Space indices -> (hidden-size index, per-slot choices with 48 = absent), vectorised."""
    idx = np.asarray(idx, dtype=np.int64).reshape(-1)
    h, rest = np.divmod(idx, PER_HIDDEN)
    deep = rest >= BLOCK_SIZES[2]
    rest = np.where(deep, rest - BLOCK_SIZES[2], rest)
    choices = np.full((len(idx), MAX_LAYERS), CHOICES_PER_LAYER, dtype=np.int64)
    n = np.where(deep, 4, 2)
    for slot in range(MAX_LAYERS - 1, -1, -1):  # least significant digit = last layer
        live = slot < n
        rest_live, d = np.divmod(rest, CHOICES_PER_LAYER)
        # for a 2-layer arch slots 3 and 2 are absent; its digits fill slots 1 and 0
        choices[:, slot] = np.where(live, d, CHOICES_PER_LAYER)
        rest = np.where(live, rest_live, rest)
    return h, choices


# -- analytic per-layer tables ----------------------------------------------------------------
def plan_flops(plan: ModelPlan, batch: int = 1, seq: int = SEQ_LEN) -> int:
    """Forward FLOPs of a plan's encoder, matrix products only, a multiply-add = 2 FLOPs.

    The same count as :func:`nasbench_bert.models.flops.flexibert_flops` (a test pins the
    two together), written here without torch so that features stay importable on the
    light install.
    """
    return _embed_flops(plan.hidden, batch, seq) + sum(_layer_flops(lp, plan.hidden, batch, seq) for lp in plan.layers)


def _embed_flops(H: int, batch: int, seq: int) -> int:
    return 2 * batch * seq * EMBEDDING_SIZE * H if H != EMBEDDING_SIZE else 0


def _layer_flops(layer: Any, H: int, batch: int, seq: int) -> int:
    N = batch * seq
    total = mixing_flops(layer, H, batch, seq)
    dims = (H, *layer.ff_widths, H)
    return total + sum(2 * N * a * b for a, b in zip(dims[:-1], dims[1:]))


def sept_value(widths: Iterable[int], seq_len: int = SEQ_LEN) -> float:
    """SEPT (ETAS) from the L blocks' output widths, in log-space: log(sum d) +
    log(sum (d^(T+1) - 1) / (d - 1)). Torch-free twin of
    :func:`nasbench_bert.proxies.bert.sept_value` (a test pins them together)."""
    widths = list(widths)
    terms = []
    for d in widths:
        if d == 1:
            terms.append(math.log(seq_len + 1))
        else:
            terms.append((seq_len + 1) * math.log(d) + math.log1p(-d ** -(seq_len + 1)) - math.log(d - 1))
    m = max(terms)
    return math.log(sum(widths)) + m + math.log(sum(math.exp(t - m) for t in terms))


def _tables(sem: Semantics) -> dict[str, np.ndarray]:
    """Per hidden size: embedding parts, and per-choice layer parts (row 48 = absent = 0)."""
    E_p, E_f = np.zeros(len(HIDDEN_SIZES)), np.zeros(len(HIDDEN_SIZES))
    P = np.zeros((len(HIDDEN_SIZES), CHOICES_PER_LAYER + 1))
    F = np.zeros_like(P)
    for hi, H in enumerate(HIDDEN_SIZES):
        E_p[hi] = embedding_params(sem.fixed_hidden or H)
        E_f[hi] = _embed_flops(sem.fixed_hidden or H, 1, SEQ_LEN)
        for c, layer in enumerate(LAYER_CHOICES):
            plan = sem.plan(Arch(H, (layer, layer)))
            lp = plan.layers[0]
            P[hi, c] = operation_params(lp, plan.hidden) + feed_forward_params(plan.hidden, lp.ff_widths)
            F[hi, c] = _layer_flops(lp, plan.hidden, 1, SEQ_LEN)
    return {"E_params": E_p, "P": P, "E_flops": E_f, "F": F}


_TABLES: dict[str, dict[str, np.ndarray]] = {}


def tables(semantics: Any) -> dict[str, np.ndarray]:
    sem = get_semantics(semantics)
    if sem.key not in _TABLES:
        _TABLES[sem.key] = _tables(sem)
    return _TABLES[sem.key]


def num_params_indices(idx: np.ndarray, semantics: Any = DEFAULT_SEMANTICS) -> np.ndarray:
    """Analytic parameter counts of archs given by space index (vectorised; equal to
    :func:`nasbench_bert.sizes.flexibert_num_params`)."""
    h, ch = decode_indices(idx)
    t = tables(semantics)
    return t["E_params"][h] + t["P"][h[:, None], ch].sum(1)


def flops_indices(idx: np.ndarray, semantics: Any = DEFAULT_SEMANTICS) -> np.ndarray:
    """Analytic forward FLOPs (batch 1, :data:`SEQ_LEN` tokens) by space index."""
    h, ch = decode_indices(idx)
    t = tables(semantics)
    return t["E_flops"][h] + t["F"][h[:, None], ch].sum(1)


def _sept_table() -> np.ndarray:
    return np.array([[sept_value([H] * n) for n in LAYER_COUNTS] for H in HIDDEN_SIZES])


_SEPT = _sept_table()


def featurize_indices(idx: np.ndarray) -> np.ndarray:
    """The 0.1 features: per-slot one-hots, hidden size, depth and log parameter count
    (as specified), in that order."""
    h, ch = decode_indices(idx)
    slots = _CHOICES[ch].reshape(len(h), -1)
    params = num_params_indices(idx, AS_SPECIFIED)
    depth = (ch < CHOICES_PER_LAYER).sum(1)
    return np.column_stack([slots, h, depth == 4, np.log(params)]).astype(np.float64)


def featurize(archs: Iterable[Any]) -> np.ndarray:
    """:func:`featurize_indices` of arch objects, strings or release dicts."""
    return featurize_indices(np.fromiter((Arch.coerce(a).index for a in archs), dtype=np.int64))


def _layer_code_table() -> np.ndarray:
    """Per choice: heads = 4, a 3-layer feed-forward stack, and F = 1,024 within one."""
    t = np.zeros((CHOICES_PER_LAYER + 1, 3))
    for c, layer in enumerate(LAYER_CHOICES):
        deep = layer.num_feed_forward == 3
        t[c] = (layer.num_operation_heads == 4, deep, deep and layer.feed_forward_dimension == 1024)
    return t


_AT_CODES = _layer_code_table()


def feature_names(kind: str = "as_trained") -> list[str]:
    """Column names of :func:`surrogate_features`."""
    fs = feature_set(kind)
    names = ["hidden_256", "depth_4"]
    for side in ("in", "out"):
        names += [f"{side}{s}_{f}" for f in ("heads4", "ff3", "ff3_1024") for s in range(MAX_LAYERS)]
    names += ["log_params_as_trained", "log_flops_as_trained"]
    if fs.as_specified:
        names += ["sept"] + [f"in{s}_op{o}" for s in range(MAX_LAYERS) for o in range(len(OPERATIONS))]
        names += ["log_flops_as_specified", "log_params_as_specified"]
    return names


def feature_set(kind: str) -> FeatureSet:
    """The :class:`FeatureSet` named ``kind``; an error naming ``features`` otherwise."""
    return FEATURE_SETS[check_choice("features", kind, FEATURE_KINDS)]


def surrogate_features(idx: np.ndarray, kind: str = "as_trained") -> np.ndarray:
    """The surrogate's features of archs by space index (see the module doc and
    :func:`feature_names`). Vectorised: about a million archs per second here."""
    fs = feature_set(kind)
    idx = np.asarray(idx, dtype=np.int64).reshape(-1)
    h, ch = decode_indices(idx)
    n = len(h)
    depth = (ch < CHOICES_PER_LAYER).sum(1)
    codes_in = _AT_CODES[ch]  # (n, 4 slots, 3)
    # from the output: a 2-layer arch's layers go to slots 2 and 3
    two = depth == 2
    ch_out = ch.copy()
    ch_out[two] = np.column_stack([np.full((two.sum(), 2), CHOICES_PER_LAYER), ch[two][:, :2]])
    codes_out = _AT_CODES[ch_out]
    t_at = tables(AS_TRAINED)
    p_at = t_at["E_params"][h] + t_at["P"][h[:, None], ch].sum(1)
    f_at = t_at["E_flops"][h] + t_at["F"][h[:, None], ch].sum(1)
    sept = _SEPT[h, (depth == 4).astype(np.int64)]
    cols = [h[:, None], (depth == 4)[:, None],
            codes_in.transpose(0, 2, 1).reshape(n, -1), codes_out.transpose(0, 2, 1).reshape(n, -1),
            np.log(p_at)[:, None], np.log(f_at)[:, None]]
    if fs.as_specified:
        t_as = tables(AS_SPECIFIED)
        p_as = t_as["E_params"][h] + t_as["P"][h[:, None], ch].sum(1)
        f_as = t_as["E_flops"][h] + t_as["F"][h[:, None], ch].sum(1)
        cols += [sept[:, None], _CHOICES[ch][:, :, : len(OPERATIONS)].reshape(n, -1), np.log(f_as)[:, None],
                 np.log(p_as)[:, None]]
    return np.concatenate(cols, axis=1).astype(np.float64)



#: the columns of :func:`surrogate_features` that pin the as-trained model: hidden size,
#: depth and the 12 per-layer codes (heads, 3-layer feed-forward, F = 1,024 within one)
TWIN_KEY_COLUMNS = slice(0, 2 + 3 * MAX_LAYERS)


def twin_keys_of(X: np.ndarray) -> np.ndarray:
    """One integer per row of :func:`surrogate_features`; equal keys = the same
    as-trained model (< 2**14)."""
    B = X[:, TWIN_KEY_COLUMNS].astype(np.int64)
    return (B * (2 ** np.arange(B.shape[1]))).sum(1)


def twin_keys(idx: np.ndarray) -> np.ndarray:
    """As-trained class of archs by space index (see :func:`twin_keys_of`)."""
    return twin_keys_of(surrogate_features(np.asarray(idx, dtype=np.int64)))


def class_representatives() -> np.ndarray:
    """One or more space indices per as-trained class: every arch whose layers are all
    SA-SDP (8,320 archs covering all 2,664 classes)."""
    base = np.array([(hh * 2 + ff) * 2 + nf for hh in (0, 1) for ff in (0, 1) for nf in (0, 1)])  # op 0 choices
    out = []
    for hi in range(len(HIDDEN_SIZES)):
        for n in LAYER_COUNTS:
            digits = np.stack([g.reshape(-1) for g in np.meshgrid(*[base] * n, indexing="ij")], 1)
            val = sum(digits[:, k] * CHOICES_PER_LAYER ** (n - 1 - k) for k in range(n))
            out.append(hi * PER_HIDDEN + sum(BLOCK_SIZES[m] for m in LAYER_COUNTS if m < n) + val)
    return np.concatenate(out).astype(np.int64)
