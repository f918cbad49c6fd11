"""Rank metrics for zero-cost scores against trained results, with bootstrap intervals.

Why a module of its own: every paper that ranks proxies on FlexiBERT-500 reports one
Kendall τ against GLUE, and on this benchmark that single number is mostly depth (the
number of layers alone reaches τ-b 0.68). The metrics here say what a score knows
*beyond* what a one-line rule on the spec already knows:

* :func:`kendall_tau_b` - scipy's τ-b (ties corrected), the usual headline;
* :func:`kendall_tau_tiebroken` - the expected τ-b when the score's ties are broken
  uniformly at random: a score with two distinct values (depth) cannot hide behind
  the tie correction any more (depth: 0.68 -> 0.48);
* :func:`spearman_rho`;
* :func:`tau_pw` - NSC's "10 %-PW τ": τ-b over the pairs whose size differs by less
  than 10 % (relative to the larger), where size cannot decide the order;
* :func:`tau_within_cell` - τ-b over the pairs inside one cell (FlexiBERT: the four
  (layers, hidden size) cells), where the real choice is; :func:`tau_within_cell_tb`
  its tie-broken form;
* :func:`tau_within_arch` - τ-b over the pairs that share every control variable
  (FlexiBERT: layers, hidden size and total heads, 16 strata): what a score knows
  beyond the arch's coarse shape; :func:`tau_within_arch_tb` its tie-broken form. A
  score that is a function of the controls is constant within every stratum and gets
  NaN in both forms, never a number;
* :func:`partial_tau` - partial τ given one or several control variables (the
  inverse of the τ-b matrix; with one control it is Kendall's 1942 formula). Not among
  :data:`METRICS`: with several coarse controls it does not remove them (an oracle
  that scores each arch by its (layers, hidden size) cell's mean GLUE got 0.421, and
  τ(score, layers) is not 1 for it), so it is reported only as "partial τ given the
  parameter count", with that meaning beside it;
* :func:`top_k_precision`.

Every pair-counting metric is a *quadratic form* in the multiplicities ``c`` of a
bootstrap resample: the τ-b numerator is ``(cᵀ (Sx∘Sy∘W) c) / 2`` for the pair signs
``S`` and a pair mask ``W``, and the pair and tie counts are quadratic forms of ``W``
and of the tie indicators. So :func:`rank_metrics` evaluates all bootstrap resamples
at once, exactly (a resampled arch's copies form tied pairs, as scipy would count
them), in memory-bounded row blocks; the point estimate is the same formula with
``c = 1``. Nothing here knows the benchmark: :mod:`nasbench_bert.scoring` supplies
the cells, sizes and controls.

Why one module of more than 500 lines (the one module of the library allowed to be):
it is one concept, the quadratic-form evaluation above. The plain metrics, the pair
masks (:class:`RankContext`), the block-wise pair sums (``_PairSums``, ``_Block``) and
the sparse within-cell and within-arch sums are the same formula at ``c = 1`` and at
every resample; the bootstrap results are only right while the point estimates and the
resampled forms count the same pairs and ties. Split, the two halves could drift apart
without either module's tests noticing; whole, ``tests/test_metrics.py`` holds the
resampled metrics equal to scipy's on the resampled rows and the sparse path equal to
the dense quadratic forms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np
from scipy.stats import kendalltau, rankdata, spearmanr

from .checks import check_int, check_real, check_seed
from .errors import InvalidArgumentError

#: the metric names :func:`rank_metrics` reports, in table order
METRICS: tuple[str, ...] = ("kendall_tau", "tau_tiebroken", "spearman_rho", "tau_pw10", "tau_within_cell",
                            "tau_within_cell_tb", "tau_within_arch", "tau_within_arch_tb", "top10_precision")
#: the metrics over pairs inside groups (cells, strata): NaN, never a number, for a score
#: that is constant within every group, in the τ-b and the tie-broken form alike
WITHIN_METRICS: tuple[str, ...] = ("tau_within_cell", "tau_within_cell_tb", "tau_within_arch", "tau_within_arch_tb")

#: NSC's pair window: pairs whose sizes differ by less than this share of the larger
PW_REL = 0.10

#: rows per block of the pair kernels (bounds memory at BLOCK x n floats per kernel)
BLOCK = 512

#: above this many rows :func:`rank_metrics` takes the sparse path (the same numbers):
#: τ-b over all pairs by scipy's O(n log n) count on each resample, and the cell and
#: 10 %-PW quadratic forms only over the pairs their masks keep (NAS-Bench-NLP's 8,794
#: runs: 77 M pairs, of which the cells keep 2 % and the window 28 %)
SPARSE_N = 2000
#: rows per block of the sparse path's windowed kernels (smaller: a tighter column window)
SPARSE_BLOCK = 256


@dataclass(frozen=True)
class Estimate:
    """A metric's value on the data and its 95 % bootstrap interval (NaN without one): the
    percentile interval, extended to the value where it would exclude it (:func:`interval`),
    so ``ci_low <= value <= ci_high`` always holds when there is an interval."""

    value: float
    ci_low: float = math.nan
    ci_high: float = math.nan

    def __str__(self) -> str:
        if math.isnan(self.ci_low):
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}]"

    def overlaps(self, other: "Estimate") -> bool:
        """Whether the two intervals overlap: a "beats" needs them apart."""
        return not (self.ci_low > other.ci_high or other.ci_low > self.ci_high)


@dataclass(frozen=True)
class RankContext:
    """What the metrics beyond τ need to know about the rows, besides score and target.

    ``cells``: one label per row (FlexiBERT: ``layers * 1000 + hidden``); pairs in the
    same cell make :func:`tau_within_cell`. ``size``: the size column NSC's pair window
    reads (name it in ``size_name``: the published 10 %-PW figures use the as-specified
    parameter count). ``controls``: an (n, k) array of variables whose equal values
    define the strata of :func:`tau_within_arch` (FlexiBERT: layers, hidden size, total
    heads), named in ``control_names``; two rows are in one stratum when every control
    is equal.
    """

    cells: np.ndarray | None = None
    size: np.ndarray | None = None
    size_name: str = ""
    controls: np.ndarray | None = None
    control_names: tuple[str, ...] = ()
    #: what the cells are, for tables (FlexiBERT: "(layers, hidden size)")
    cells_name: str = ""

    def take(self, mask: np.ndarray) -> "RankContext":
        """The context restricted to the rows where ``mask`` is true."""
        return RankContext(
            None if self.cells is None else self.cells[mask], None if self.size is None else self.size[mask],
            self.size_name, None if self.controls is None else self.controls[mask], self.control_names,
            self.cells_name)


# -- point metrics (the definitions; rank_metrics computes the same with resamples) ----------
def _vec(name: str, v: Sequence[float] | np.ndarray) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a sequence of numbers") from None
    if a.ndim != 1:
        raise InvalidArgumentError(f"{name} must be one-dimensional; got shape {a.shape}")
    return a


def _pair(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = _vec("x", x), _vec("y", y)
    if len(a) != len(b):
        raise InvalidArgumentError(f"x and y must have the same length; got {len(a)} and {len(b)}")
    return a, b


def kendall_tau_b(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Kendall's τ-b (scipy's default): ties corrected in both variables."""
    a, b = _pair(x, y)
    return float(kendalltau(a, b)[0]) if len(a) >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0 else math.nan


def kendall_tau_tiebroken(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """The expected τ-b when the ties of ``x`` (the score) are broken uniformly at random.

    Breaking a tie of ``x`` orders that pair concordantly or discordantly with equal
    probability (or leaves it at 0 where ``y`` ties too), so the expected numerator is
    the concordant-minus-discordant count C − D of ``x`` itself, while the denominator
    loses ``x``'s tie correction: ``(C − D) / sqrt(n0 (n0 − n_y))``. Exact, no sampling;
    a constant score gets 0, not NaN.
    """
    a, b = _pair(x, y)
    n = len(a)
    if n < 2:
        return math.nan
    n0 = n * (n - 1) / 2
    n1, n2 = _tied_pairs(a), _tied_pairs(b)
    if n0 - n2 <= 0:
        return math.nan
    if n0 - n1 <= 0:
        return 0.0
    cd = float(kendalltau(a, b)[0]) * math.sqrt((n0 - n1) * (n0 - n2))
    return cd / math.sqrt(n0 * (n0 - n2))


def _tied_pairs(v: np.ndarray) -> float:
    _, counts = np.unique(v, return_counts=True)
    return float((counts * (counts - 1) / 2).sum())


def spearman_rho(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's ρ (average ranks for ties)."""
    a, b = _pair(x, y)
    return float(spearmanr(a, b)[0]) if len(a) >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0 else math.nan


def tau_pw(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, size: Sequence[float] | np.ndarray,
           rel: float = PW_REL) -> float:
    """τ-b over the pairs whose ``size`` differs by less than ``rel`` of the larger one.

    NSC's "10 %-PW τ" (``rel = 0.10``): with the as-specified parameter count as
    ``size``, the parameter count itself scores 0.082 here, as NSC reports.
    """
    a, b = _pair(x, y)
    return _point(a, b, RankContext(size=_vec("size", size)), lambda blk: blk.pw_mask(rel))


def tau_within_cell(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                    cells: Sequence[object] | np.ndarray) -> float:
    """τ-b over the pairs in the same cell (one τ-b over the pooled within-cell pairs,
    so each cell weighs by its number of pairs)."""
    a, b = _pair(x, y)
    return _point(a, b, RankContext(cells=_labels(cells, len(a))), lambda blk: blk.cell_mask())


def tau_within_cell_tb(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                       cells: Sequence[object] | np.ndarray) -> float:
    """The tie-broken form of :func:`tau_within_cell`: the expected τ-b over the pairs in
    one cell when the score's ties are broken uniformly at random,
    ``(C − D) / sqrt(n0 (n0 − n_y))`` over those pairs (as :func:`kendall_tau_tiebroken`).

    Why: within a cell a size count ties many pairs (the as-trained count ties 15 % of
    them), and τ-b's tie correction lifts it (0.209 vs 0.192 tie-broken). NaN when the
    score is constant within every cell: it orders no pair there, and a 0 would rank it
    beside scores that order pairs at random."""
    a, b = _pair(x, y)
    return _point(a, b, RankContext(cells=_labels(cells, len(a))), lambda blk: blk.cell_mask(), tiebroken=True)


def tau_within_arch(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                    controls: Sequence[float] | np.ndarray) -> float:
    """τ-b over the pairs that are equal in every column of ``controls`` (one τ-b over the
    pooled within-stratum pairs, so each stratum weighs by its number of pairs).

    On FlexiBERT-500 the controls are layers, hidden size and total heads (16 strata):
    the figure is what a score orders among archs of one coarse shape, which no rule on
    those three can. A score that is a function of the controls is constant within every
    stratum: NaN ("constant within every stratum"), never a number; the target itself
    gets 1."""
    a, b = _pair(x, y)
    return _point(a, b, RankContext(cells=strata_labels(controls, len(a))), lambda blk: blk.cell_mask())


def tau_within_arch_tb(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                       controls: Sequence[float] | np.ndarray) -> float:
    """The tie-broken form of :func:`tau_within_arch` (the expected τ-b over the
    within-stratum pairs when the score's ties are broken at random); NaN for a score
    constant within every stratum, like its τ-b form."""
    a, b = _pair(x, y)
    return _point(a, b, RankContext(cells=strata_labels(controls, len(a))), lambda blk: blk.cell_mask(),
                  tiebroken=True)


def strata_labels(controls: Sequence[float] | np.ndarray, n: int) -> np.ndarray:
    """One float label per row, equal for rows equal in every column of ``controls``
    (an (n,) or (n, k) array): the strata of :func:`tau_within_arch`. A row with a
    non-finite control gets NaN (it is in no stratum)."""
    try:
        z = np.asarray(controls, dtype=float)
    except (TypeError, ValueError):
        raise InvalidArgumentError("controls must be numbers") from None
    z = z.reshape(len(z), -1) if z.ndim == 1 else z
    if z.ndim != 2 or z.shape[0] != n:
        raise InvalidArgumentError(f"controls must have one row per value; got shape {z.shape} for {n} values")
    out = np.full(n, np.nan)
    ok = np.isfinite(z).all(1)
    if ok.any():
        out[ok] = np.unique(z[ok], axis=0, return_inverse=True)[1].reshape(-1).astype(float)
    return out


def constant_within_every_group(x: Sequence[float] | np.ndarray, labels: Sequence[float] | np.ndarray) -> bool:
    """Whether ``x`` takes one value within every group of ``labels`` (NaN labels in no
    group) that holds two rows or more: then every within-group metric is NaN, and a
    table says why ("constant within every stratum"). False when no group has a pair."""
    a, g = _vec("x", x), _vec("labels", labels)
    ok = np.isfinite(a) & np.isfinite(g)
    a, g = a[ok], g[ok]
    paired = False
    for lab in np.unique(g):
        v = a[g == lab]
        if len(v) >= 2:
            paired = True
            if np.ptp(v) > 0:
                return False
    return paired


def partial_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                controls: Sequence[float] | np.ndarray) -> float:
    """Partial Kendall τ of ``x`` and ``y`` given the column(s) of ``controls``.

    From the inverse ``P`` of the τ-b matrix of (x, y, controls…):
    ``−P_xy / sqrt(P_xx P_yy)``. With a single control this is Kendall's (1942)
    ``(τxy − τxz τyz) / sqrt((1 − τxz²)(1 − τyz²))``.

    Not a stratified figure: given coarse controls such as (layers, hidden size, total
    heads) it does not remove them (a score that is a function of the controls still
    gets a number); :func:`tau_within_arch` is the figure for that question.
    """
    a, b = _pair(x, y)
    z = np.asarray(controls, dtype=float)
    z = z.reshape(len(a), -1) if z.ndim == 1 else z
    if z.shape[0] != len(a):
        raise InvalidArgumentError(f"controls must have one row per value; got {z.shape[0]} rows for {len(a)} values")
    cols = [a, b, *z.T]
    m = np.eye(len(cols))
    for i in range(len(cols)):
        for j in range(i + 1, len(cols)):
            m[i, j] = m[j, i] = kendalltau(cols[i], cols[j])[0]
    return _partial_from_matrix(m[None])[0]


def top_k_precision(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, frac: float = 0.1) -> float:
    """Share of the true top ``frac`` (by y) that the score also puts in its top ``frac``,
    in expectation over random tie-breaking of both at the k-th place.

    With ties at the boundary, "the top k" is not defined by the values; picking by row
    order would make the figure depend on how the table happens to be sorted (a depth rule,
    with two values, got 0.12 or 0.18 depending on the row order). Each row is in the top
    k of a variable with probability 1 above the k-th value, 0 below it, and (k - number
    above) / (number tied) at it; the two draws are independent, so the expected overlap
    is the sum over rows of the product of the two probabilities. Without ties this is
    the plain overlap."""
    a, b = _pair(x, y)
    k = max(1, int(round(frac * len(a))))
    return float(np.dot(_top_k_inclusion(a, k), _top_k_inclusion(b, k)) / k)


def _top_k_inclusion(v: np.ndarray, k: int) -> np.ndarray:
    """Each value's probability of being among the k largest under random tie-breaking."""
    if k >= len(v):
        return np.ones(len(v))
    t = np.partition(v, len(v) - k)[len(v) - k]  # the k-th largest value
    above, tied = v > t, v == t
    p = above.astype(float)
    p[tied] = (k - above.sum()) / tied.sum()
    return p


def _labels(cells: Sequence[object] | np.ndarray, n: int) -> np.ndarray:
    c = np.asarray(cells)
    if c.ndim != 1 or len(c) != n:
        raise InvalidArgumentError(f"cells must be one label per value; got shape {c.shape} for {n} values")
    return np.unique(c, return_inverse=True)[1].astype(float)


def _partial_from_matrix(m: np.ndarray) -> np.ndarray:
    """Partial correlation of variables 0 and 1 given the rest, for a stack of matrices."""
    out = np.full(len(m), np.nan)
    for i, mat in enumerate(m):
        if not np.all(np.isfinite(mat)):
            continue
        try:
            p = np.linalg.inv(mat)
        except np.linalg.LinAlgError:
            continue
        d = p[0, 0] * p[1, 1]
        if d > 0:
            out[i] = -p[0, 1] / math.sqrt(d)
    return out


# -- the quadratic-form engine ------------------------------------------------------------------
class _Block:
    """Pair kernels for one block of rows against all rows (``rows`` x n)."""

    def __init__(self, rows: slice, ctx: RankContext):
        self.rows, self.ctx = rows, ctx

    def sign(self, v: np.ndarray) -> np.ndarray:
        return np.sign(v[self.rows, None] - v[None, :])

    def cell_mask(self) -> np.ndarray:
        c = self.ctx.cells
        assert c is not None
        return (c[self.rows, None] == c[None, :]).astype(np.float64)

    def group_mask(self, labels: np.ndarray) -> np.ndarray:
        """1 where the two rows share a label (the strata of :func:`tau_within_arch`)."""
        return (labels[self.rows, None] == labels[None, :]).astype(np.float64)

    def pw_mask(self, rel: float) -> np.ndarray:
        s = self.ctx.size
        assert s is not None
        a, b = s[self.rows, None], s[None, :]
        d = np.abs(a - b)  # equal sizes are always inside the window (so a row pairs with itself)
        return ((d < rel * np.maximum(np.abs(a), np.abs(b))) | (d == 0)).astype(np.float64)


def _blocks(n: int, ctx: RankContext) -> Iterator[_Block]:
    for s in range(0, n, BLOCK):
        yield _Block(slice(s, min(n, s + BLOCK)), ctx)


def _quad(C: np.ndarray, rows: slice, K: np.ndarray) -> np.ndarray:
    """cᵀ K c restricted to this block's rows, for every resample (row of C)."""
    return np.einsum("bi,bi->b", C[:, rows], C @ K.T, optimize=True)


class _PairSums:
    """Accumulates, per resample, the τ-b ingredients over one set of pairs (mask ``W``):
    num = Σ Sx Sy W, n0 = Σ W, n1 = Σ Tx W, n2 = Σ Ty W over unordered pairs of
    distinct positions (two copies of one resampled row are a pair tied in both).

    ``cᵀ K c`` sums K over *ordered* row pairs with multiplicity c_i c_j, which for
    i = j counts c_i² where the resample has c_i (c_i − 1) distinct ordered positions;
    every mask here has W_ii = 1, so the surplus is Σ c_i = m in n0, n1, n2 (0 in num)."""

    def __init__(self, B: int):
        self.num, self.n0, self.n1, self.n2 = (np.zeros(B) for _ in range(4))

    def add(self, C: np.ndarray, rows: slice, sx: np.ndarray, sy: np.ndarray, w: np.ndarray | None) -> None:
        w = np.ones_like(sx) if w is None else w
        self.num += _quad(C, rows, sx * sy * w) / 2
        self.n0 += _quad(C, rows, w) / 2
        self.n1 += _quad(C, rows, (sx == 0) * w) / 2
        self.n2 += _quad(C, rows, (sy == 0) * w) / 2

    def finish(self, C: np.ndarray, *, within: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(τ-b, tie-broken τ) per resample. The diagonal (a position with itself) was
        counted once per position in n0, n1 and n2 (its mask is 1 and it ties with
        itself) and 0 in num; remove it.

        ``within``: the pairs are those inside groups (cells, strata), and a score tied in
        every such pair (constant within every group) gets NaN in the tie-broken form too,
        not the 0 that the all-pairs tie-broken τ gives a constant score."""
        m = C.sum(1) / 2
        n0, n1, n2 = self.n0 - m, self.n1 - m, self.n2 - m
        with np.errstate(invalid="ignore", divide="ignore"):
            tb = self.num / np.sqrt((n0 - n1) * (n0 - n2))
            tt = np.where(n0 - n1 > 0, self.num / np.sqrt(n0 * (n0 - n2)), 0.0)
        tb[~np.isfinite(tb)] = np.nan
        tt = np.where(n0 - n2 > 0, tt, np.nan)
        if within:
            tt = np.where(n0 - n1 > 0, tt, np.nan)
        return tb, tt


def _point(a: np.ndarray, b: np.ndarray, ctx: RankContext, mask: Callable[[_Block], np.ndarray], *,
           tiebroken: bool = False) -> float:
    """One pair-masked metric on the data (no resamples): τ-b, or with ``tiebroken`` its
    tie-broken form (NaN where the score ties every kept pair; the masks here are groups)."""
    ok = np.isfinite(a) & np.isfinite(b)
    if ctx.cells is not None:
        ok &= np.isfinite(ctx.cells)
    a, b, ctx = a[ok], b[ok], ctx.take(ok)
    if len(a) < 2:
        return math.nan
    C = np.ones((1, len(a)))
    acc = _PairSums(1)
    for blk in _blocks(len(a), ctx):
        acc.add(C, blk.rows, blk.sign(a), blk.sign(b), mask(blk))
    tb, tt = acc.finish(C, within=tiebroken)
    return float((tt if tiebroken else tb)[0])


# -- all metrics with bootstrap intervals ---------------------------------------------------------
def resamples(n: int, bootstrap: int, seed: int) -> np.ndarray:
    """Multiplicities of ``bootstrap`` resamples of n rows (one row of counts each), from
    ``numpy.random.default_rng(seed)``: the same seed gives the same resamples, so
    scores computed separately share them and their intervals are comparable."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(bootstrap, n))
    C = np.zeros((bootstrap, n))
    np.add.at(C, (np.repeat(np.arange(bootstrap), n), idx.ravel()), 1)
    return C


def rank_metrics(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    context: RankContext | None = None,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    top: float = 0.1,
    pw_rel: float = PW_REL,
) -> dict[str, Estimate]:
    """Every metric of :data:`METRICS` for score ``x`` against target ``y`` (both
    oriented so that higher is better), with 95 % percentile bootstrap intervals over
    rows (``bootstrap`` resamples from ``seed``; 0: no intervals), each extended to its
    estimate where it would exclude it (:func:`interval`).

    Rows where ``x`` or ``y`` is not finite are left out. A metric whose context is
    missing (no cells, no size, no controls) is NaN, and so is a within-group metric
    (:data:`WITHIN_METRICS`) of a score constant within every group. The resamples are
    shared by every metric, so their intervals describe the same uncertainty.
    """
    a, b = _pair(x, y)
    ctx = context or RankContext()
    for name, arr in (("cells", ctx.cells), ("size", ctx.size), ("controls", ctx.controls)):
        if arr is not None and len(arr) != len(a):
            raise InvalidArgumentError(f"context.{name} has {len(arr)} rows; x has {len(a)}")
    bootstrap = int(check_int("bootstrap", bootstrap, low=0, high=100_000))  # type: ignore[arg-type]
    seed = int(check_seed("seed", seed, none=False))  # type: ignore[arg-type]
    top = float(check_real("top", top, low=0.0, high=1.0, low_open=True))  # type: ignore[arg-type]
    pw_rel = float(check_real("pw_rel", pw_rel, low=0.0, high=1.0, low_open=True))  # type: ignore[arg-type]
    size = None if ctx.size is None else np.asarray(ctx.size, dtype=float)
    ctrl = None if ctx.controls is None else np.asarray(ctx.controls, dtype=float)
    if ctrl is not None and ctrl.ndim == 1:
        ctrl = ctrl[:, None]
    ok = np.isfinite(a) & np.isfinite(b)
    if size is not None:
        ok &= np.isfinite(size)
    if ctrl is not None:
        ok &= np.isfinite(ctrl).all(1)
    a, b = a[ok], b[ok]
    ctx = RankContext(None if ctx.cells is None else _labels(np.asarray(ctx.cells)[ok], int(ok.sum())),
                      None if size is None else size[ok], ctx.size_name, None if ctrl is None else ctrl[ok],
                      ctx.control_names, ctx.cells_name)
    n = len(a)
    if n < 3:
        return {m: Estimate(math.nan) for m in METRICS}
    # row 0 is the data itself (every multiplicity 1), the others the resamples; float64
    # keeps the pair counts exact integers for any n used here
    C = np.vstack([np.ones((1, n)), resamples(n, bootstrap, seed)]) if bootstrap else np.ones((1, n))
    vals = (_sparse_pair_metrics if n > SPARSE_N else _all_pair_metrics)(a, b, ctx, C, pw_rel)
    vals["spearman_rho"] = np.concatenate([[spearman_rho(a, b)], _resampled_spearman(a, b, C[1:])])
    vals["top10_precision"] = np.array([top_k_precision(a, b, top)] + [_resampled_topk(a, b, c, top) for c in C[1:]])
    out: dict[str, Estimate] = {}
    for m in METRICS:
        v = vals[m]
        if bootstrap and np.isfinite(v[0]):
            out[m] = interval(float(v[0]), v[1:])
        else:
            out[m] = Estimate(float(v[0]))
    return out


#: the metrics :func:`paired_difference` compares (those formed from pair sums)
PAIR_METRICS: tuple[str, ...] = ("kendall_tau", "tau_tiebroken", "tau_pw10", "tau_within_cell", "tau_within_cell_tb",
                                 "tau_within_arch", "tau_within_arch_tb")


def paired_difference(
    x1: Sequence[float] | np.ndarray,
    x2: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    context: RankContext | None = None,
    *,
    names: Sequence[str] = ("tau_tiebroken", "tau_within_cell_tb"),
    bootstrap: int = 1000,
    seed: int = 0,
    pw_rel: float = PW_REL,
) -> dict[str, Estimate]:
    """metric(x1, y) - metric(x2, y) for each pair metric of ``names``, with the 95 %
    bootstrap interval of the difference over the *same* resamples of the same rows.

    Why paired: two scores ranked on one set of archs share its sampling noise, so the
    intervals of the two figures overlap where their difference is clearly non-zero;
    the interval of the difference, resample by resample, is the one that says whether
    one beats the other. Rows where either score or ``y`` (or a context column) is not
    finite are left out of both; ``x1``, ``x2`` are oriented so that higher is better."""
    a1, b = _pair(x1, y)
    a2, _ = _pair(x2, y)
    bad = [m for m in names if m not in PAIR_METRICS]
    if bad or isinstance(names, str):
        raise InvalidArgumentError(f"names = {names!r} is not allowed; allowed: a list of {list(PAIR_METRICS)}")
    ctx = context or RankContext()
    bootstrap = int(check_int("bootstrap", bootstrap, low=0, high=100_000))  # type: ignore[arg-type]
    seed = int(check_seed("seed", seed, none=False))  # type: ignore[arg-type]
    size = None if ctx.size is None else np.asarray(ctx.size, dtype=float)
    ctrl = None if ctx.controls is None else np.asarray(ctx.controls, dtype=float)
    if ctrl is not None and ctrl.ndim == 1:
        ctrl = ctrl[:, None]
    ok = np.isfinite(a1) & np.isfinite(a2) & np.isfinite(b)
    if size is not None:
        ok &= np.isfinite(size)
    if ctrl is not None:
        ok &= np.isfinite(ctrl).all(1)
    n = int(ok.sum())
    if n < 3:
        return {m: Estimate(math.nan) for m in names}
    sub = RankContext(None if ctx.cells is None else _labels(np.asarray(ctx.cells)[ok], n),
                      None if size is None else size[ok], ctx.size_name, None if ctrl is None else ctrl[ok],
                      ctx.control_names, ctx.cells_name)
    C = np.vstack([np.ones((1, n)), resamples(n, bootstrap, seed)]) if bootstrap else np.ones((1, n))
    kernel = _sparse_pair_metrics if n > SPARSE_N else _all_pair_metrics
    v1, v2 = kernel(a1[ok], b[ok], sub, C, pw_rel), kernel(a2[ok], b[ok], sub, C, pw_rel)
    out: dict[str, Estimate] = {}
    for m in names:
        d = v1[m] - v2[m]
        out[m] = interval(float(d[0]), d[1:]) if bootstrap and np.isfinite(d[0]) else Estimate(float(d[0]))
    return out


def interval(value: float, resampled: np.ndarray, level: float = 0.95) -> Estimate:
    """``value`` with the percentile bootstrap interval of ``resampled``, extended to
    ``value`` where the whole interval lies on one side of it; NaN bounds when no
    resample gave a finite figure.

    Why extended: a percentile interval is the spread of the statistic over resamples,
    and where that spread is shifted from the estimate it can leave the estimate out.
    The tie-broken τ is such a statistic: a resample's copies of one row are pairs tied in
    both score and target, which its denominator counts as untied in the score
    (``sqrt(n0 (n0 - n_y))``), so every copy lowers it. A perfect ranking of 8 rows has
    tie-broken τ 1.000, yet every resample (about 3.5 copy pairs of 28) falls below 1:
    the plain percentile interval was [0.866, 0.982]. An interval that excludes the
    figure it qualifies reads as a contradiction, so the bound on the estimate's side is
    moved to the estimate: [0.866, 1.000]. This only widens (never narrows) the plain
    percentile interval, and only where the estimate is outside it; the bootstrap's
    shift then shows as an interval that ends at the estimate.
    """
    r = np.asarray(resampled, dtype=float)
    if not np.isfinite(r).any():
        return Estimate(value, math.nan, math.nan)
    tail = (1 - level) / 2 * 100
    lo, hi = np.nanpercentile(r, [tail, 100 - tail])
    return Estimate(value, float(min(lo, value)), float(max(hi, value)))


def _all_pair_metrics(a: np.ndarray, b: np.ndarray, ctx: RankContext, C: np.ndarray, pw_rel: float
                      ) -> dict[str, np.ndarray]:
    """Every pair metric on every row of ``C`` (row 0 the data, the others resamples) by
    the dense quadratic forms: all pairs, the 10 %-PW window, the cells and the strata
    of the controls (:func:`strata_labels`)."""
    B = C.shape[0]
    full, pw, cell, arch = _PairSums(B), _PairSums(B), _PairSums(B), _PairSums(B)
    strata = None if ctx.controls is None else strata_labels(ctx.controls, len(a))
    for blk in _blocks(len(a), ctx):
        sx, sy = blk.sign(a), blk.sign(b)
        full.add(C, blk.rows, sx, sy, None)
        if ctx.size is not None:
            pw.add(C, blk.rows, sx, sy, blk.pw_mask(pw_rel))
        if ctx.cells is not None:
            cell.add(C, blk.rows, sx, sy, blk.cell_mask())
        if strata is not None:
            arch.add(C, blk.rows, sx, sy, blk.group_mask(strata))
    tb, tt = full.finish(C)
    out = {"kendall_tau": tb, "tau_tiebroken": tt, "tau_pw10": pw.finish(C)[0] if ctx.size is not None else None}
    out.update(_within(cell if ctx.cells is not None else None, arch if strata is not None else None, C))
    return {k: (np.full(B, np.nan) if v is None else v) for k, v in out.items()}


def _within(cell: "_PairSums | None", arch: "_PairSums | None", C: np.ndarray) -> dict[str, np.ndarray | None]:
    """Both forms of the within-cell and within-stratum τ from their accumulated pair sums
    (None where the context lacks the groups)."""
    out: dict[str, np.ndarray | None] = {}
    for name, acc in (("tau_within_cell", cell), ("tau_within_arch", arch)):
        tb, tt = acc.finish(C, within=True) if acc is not None else (None, None)
        out[name], out[f"{name}_tb"] = tb, tt
    return out


def _sub_quad(C: np.ndarray, rows: np.ndarray, cols: np.ndarray, K: np.ndarray) -> np.ndarray:
    """cᵀ K c over the ordered pairs (rows x cols) for every resample: the dense
    :func:`_quad` restricted to the columns a mask keeps."""
    return np.einsum("bi,bi->b", C[:, rows], C[:, cols] @ K.T, optimize=True)


def _add_sub(acc: _PairSums, C: np.ndarray, rows: np.ndarray, cols: np.ndarray, a: np.ndarray, b: np.ndarray,
             w: np.ndarray) -> None:
    """:meth:`_PairSums.add` over rows x cols only (every row's own column among ``cols``,
    so the diagonal correction of :meth:`_PairSums.finish` still holds)."""
    sx = np.sign(a[rows, None] - a[None, cols])
    sy = np.sign(b[rows, None] - b[None, cols])
    acc.num += _sub_quad(C, rows, cols, sx * sy * w) / 2
    acc.n0 += _sub_quad(C, rows, cols, w) / 2
    acc.n1 += _sub_quad(C, rows, cols, (sx == 0) * w) / 2
    acc.n2 += _sub_quad(C, rows, cols, (sy == 0) * w) / 2


def _tied_counts(v: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Tied pairs of ``v`` in every resample: Σ over distinct values of k (k − 1) / 2 for
    k the resampled multiplicity of that value."""
    inv = np.unique(v, return_inverse=True)[1]
    k = np.stack([np.bincount(inv, weights=c) for c in C])
    return (k * (k - 1) / 2).sum(1)


def _sparse_pair_metrics(a: np.ndarray, b: np.ndarray, ctx: RankContext, C: np.ndarray, pw_rel: float
                         ) -> dict[str, np.ndarray]:
    """What :func:`_all_pair_metrics` computes, for many rows: τ-b over all pairs by scipy
    on each resample's rows, whose copies of one row are tied pairs exactly as in the
    quadratic forms; the tie-broken τ from τ-b and the tie counts; the cell, stratum and
    window metrics by quadratic forms over only the pairs their masks keep (rows sorted
    by cell, stratum or size, so each block's partners are few)."""
    B, n = C.shape
    idx = [np.repeat(np.arange(n), c.astype(int)) for c in C]
    tb = np.array([kendalltau(a[i], b[i])[0] if np.ptp(a[i]) > 0 and np.ptp(b[i]) > 0 else np.nan for i in idx])
    m = C.sum(1)
    n0 = m * (m - 1) / 2
    n1, n2 = _tied_counts(a, C), _tied_counts(b, C)
    with np.errstate(invalid="ignore", divide="ignore"):
        num = np.where(np.isfinite(tb), tb, 0.0) * np.sqrt(np.maximum((n0 - n1) * (n0 - n2), 0.0))
        tt = np.where(n0 - n1 > 0, num / np.sqrt(n0 * (n0 - n2)), 0.0)
    tt = np.where(n0 - n2 > 0, tt, np.nan)
    out: dict[str, np.ndarray | None] = {"kendall_tau": tb, "tau_tiebroken": tt, "tau_pw10": None}
    strata = None if ctx.controls is None else strata_labels(ctx.controls, n)
    out.update(_within(None if ctx.cells is None else _grouped_sums(C, ctx.cells, a, b),
                       None if strata is None else _grouped_sums(C, strata, a, b), C))
    if ctx.size is not None:
        acc = _PairSums(B)
        s = ctx.size
        order = np.argsort(s, kind="stable")
        ss = s[order]
        positive = bool(ss[0] > 0)
        for start in range(0, n, SPARSE_BLOCK):
            rows = order[start:start + SPARSE_BLOCK]
            if positive:  # partners of sizes in [lo, hi] lie in (lo (1 - rel), hi / (1 - rel)): a slice of the order
                lo = np.searchsorted(ss, ss[start] * (1 - pw_rel), side="left")
                hi = np.searchsorted(ss, ss[min(n, start + SPARSE_BLOCK) - 1] / (1 - pw_rel), side="right")
                cand = order[lo:hi]
            else:
                cand = order
            d = np.abs(s[rows, None] - s[None, cand])
            keep = (d < pw_rel * np.maximum(np.abs(s[rows, None]), np.abs(s[None, cand]))) | (d == 0)
            sel = keep.any(0)
            _add_sub(acc, C, rows, cand[sel], a, b, keep[:, sel].astype(np.float64))
        out["tau_pw10"] = acc.finish(C)[0]
    return {k: (np.full(B, np.nan) if v is None else v) for k, v in out.items()}


def _grouped_sums(C: np.ndarray, labels: np.ndarray, a: np.ndarray, b: np.ndarray) -> _PairSums:
    """The pair sums over the pairs that share a label, one group at a time (rows sorted
    by label, so only each group's own pairs are formed)."""
    acc = _PairSums(C.shape[0])
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    for g in np.split(order, bounds):
        _add_sub(acc, C, g, g, a, b, np.ones((len(g), len(g))))
    return acc


def _resampled_spearman(a: np.ndarray, b: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Spearman's ρ of every resample at once: the Pearson correlation of average ranks
    (scipy's definition) along the rows of the resampled values; NaN for a resample
    in which either variable is constant."""
    if len(C) == 0:
        return np.zeros(0)
    idx = np.stack([np.repeat(np.arange(len(a)), c.astype(int)) for c in C])
    ra, rb = rankdata(a[idx], axis=1), rankdata(b[idx], axis=1)
    ra -= ra.mean(1, keepdims=True)
    rb -= rb.mean(1, keepdims=True)
    den = np.sqrt((ra * ra).sum(1) * (rb * rb).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ra * rb).sum(1) / den, np.nan)


def _resampled_topk(a: np.ndarray, b: np.ndarray, c: np.ndarray, top: float) -> float:
    idx = np.repeat(np.arange(len(a)), c.astype(int))
    return top_k_precision(a[idx], b[idx], top)


def estimates_to_row(est: Mapping[str, Estimate]) -> dict[str, float]:
    """Flatten ``{metric: Estimate}`` into ``metric``, ``metric_ci_low``, ``metric_ci_high`` columns."""
    row: dict[str, float] = {}
    for m, e in est.items():
        row[m] = e.value
        row[f"{m}_ci_low"] = e.ci_low
        row[f"{m}_ci_high"] = e.ci_high
    return row
