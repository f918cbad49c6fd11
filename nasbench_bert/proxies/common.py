"""Numerical kernels shared by proxies (float64, symmetric eigensolvers, NaN kept)."""

from __future__ import annotations

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


def tsum(ts) -> float:
    """Sum of tensors' sums in float64 (sums of |w * g| overflow float32 on big models)."""
    return float(sum(float(t.double().sum()) for t in ts))
