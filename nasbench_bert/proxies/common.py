"""Numerical kernels shared by proxies (float64, symmetric eigensolvers, NaN kept).

**One host copy per model.** A proxy summed per module with ``float(t.sum())`` waits for
the device at every module: on a GPU each ``float`` is a synchronisation. The sums here
(:func:`tsum`, :func:`group_sums`, :func:`host_values`) reduce each tensor on its device,
copy all the reductions to the host at once, and add them in Python in the order they
were given, so the result is the float the per-module ``float`` loop gave, bit for bit.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
from .._torch import torch

EIG_K = 1e-5


def covariance_score(rows: np.ndarray, k: float = EIG_K) -> float:
    """-sum_i (log(l_i + k) + 1/(l_i + k)) over the eigenvalues of corrcoef(rows).

    ``rows`` is (n, m): n variables observed m times. The correlation matrix is
    symmetric, so ``eigvalsh`` (the published code used a general solver, whose tiny
    imaginary parts it discarded). Constant rows make corrcoef NaN; the NaN is kept.
    """
    r = np.asarray(rows, dtype=np.float64)
    with np.errstate(all="ignore"):
        c = np.corrcoef(r)
    if not np.all(np.isfinite(c)):
        return float("nan")
    lam = np.linalg.eigvalsh(c)
    with np.errstate(all="ignore"):
        return float(-np.sum(np.log(lam + k) + 1.0 / (lam + k)))


def cosine_score(rows: np.ndarray) -> float:
    """1 - mean over off-diagonal pairs of |cos|^(1/20) / 2 (the published formula)."""
    r = np.asarray(rows, dtype=np.float64)
    with np.errstate(all="ignore"):
        normed = r / np.linalg.norm(r, axis=1, keepdims=True)
        cos = normed @ normed.T
        np.fill_diagonal(cos, 0.0)  # self-similarity excluded exactly (sklearn zeroes it too)
        n = r.shape[0]
        return float(1.0 - np.sum(np.abs(cos) ** (1.0 / 20)) / 2 / (n * n - n))


def binary_kernel(x: torch.Tensor) -> torch.Tensor:
    """x x^T + (1 - x)(1 - x)^T for binary codes x (float64): agreements between rows."""
    x = x.double()
    return x @ x.T + (1 - x) @ (1 - x).T


def host_values(values: Iterable[Any]) -> list[float]:
    """Each value as a Python float - 0-dim tensors copied to the host together, in one
    copy (one device synchronisation), plain numbers as they are - in the given order.
    ``float(v)`` of each, without a synchronisation per tensor."""
    vals = list(values)
    at = [i for i, v in enumerate(vals) if isinstance(v, torch.Tensor)]
    if at:
        got = torch.stack([vals[i].detach().reshape(()).double() for i in at]).tolist()
        for i, g in zip(at, got):
            vals[i] = g
    return [float(v) for v in vals]


def group_sums(groups: Sequence[Iterable[torch.Tensor]], nan: bool = False) -> list[float]:
    """``[tsum(g) for g in groups]`` (``nan``: NaNs skipped, ``torch.nansum``) with one
    host copy for all of them; each tensor is reduced as soon as it is made, so only the
    reductions are kept."""
    reduce = torch.nansum if nan else torch.sum
    sums = [[reduce(t.double()) for t in g] for g in groups]
    flat = host_values(t for g in sums for t in g)
    out, k = [], 0
    for g in sums:
        out.append(float(sum(flat[k:k + len(g)])))
        k += len(g)
    return out


def tsum(ts: Iterable[torch.Tensor]) -> float:
    """Sum of tensors' sums in float64 (sums of |w * g| overflow float32 on big models)."""
    return group_sums([ts])[0]


def module_sums(term: Any, modules: Sequence[torch.nn.Module], groups: Sequence[Sequence[torch.nn.Module]],
                ) -> tuple[float, list[float]]:
    """``float(sum(term(m) for m in modules))`` and the same over each group (groups are
    subsets of ``modules``): ``term`` (a number or a 0-dim tensor per module) is computed
    once per module and copied to the host once for all."""
    vals = dict(zip((id(m) for m in modules), host_values(term(m) for m in modules)))
    return float(sum(vals[id(m)] for m in modules)), [float(sum(vals[id(m)] for m in g)) for g in groups]
