"""Analyses of the benchmark whose results are reported in ``docs/`` (not part of the API).

    python -m studies.analysis

* :func:`operation_effect` - how much GLUE variance the per-layer operation fields explain
  beyond hidden size, depth, heads and feed-forward settings (nested OLS, partial F-test,
  permutation test). With the as-trained facts (docs/errata.md) the expected answer is
  "nothing": every layer was trained as scaled dot-product attention.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nasbench_bert.spaces.flexibert import OPERATIONS
from nasbench_bert.surrogate import MAX_LAYERS, SLOT, training_data


def operation_effect(bench: Any, permutations: int = 2000, seed: int = 0) -> dict[str, float]:
    """How much GLUE variance the operation fields explain beyond the others.

    Nested OLS on the 500 runs: a base model with hidden size, depth and per-layer heads,
    feed-forward width and depth, against base + per-layer operation one-hots. Reports
    both R^2, the partial F-test p-value, and a permutation p-value (operation
    assignments shuffled across archs, keeping everything else fixed).
    """
    from scipy.stats import f as f_dist

    X, Y, _ = training_data(bench)
    y = Y[:, 0]
    nop = len(OPERATIONS)
    slots = X[:, : MAX_LAYERS * SLOT].reshape(len(X), MAX_LAYERS, SLOT)
    ops = slots[:, :, 1:nop].reshape(len(X), -1)  # drop one op column per slot (collinear with 'present')
    base = np.column_stack([np.ones(len(X)), X[:, -3], X[:, -2], slots[:, :, nop:].reshape(len(X), -1)])

    def r2(A: np.ndarray) -> tuple[float, float]:
        w, *_ = np.linalg.lstsq(A, y, rcond=None)
        rss = float(((y - A @ w) ** 2).sum())
        return 1 - rss / float(((y - y.mean()) ** 2).sum()), rss

    r2_base, rss_base = r2(base)
    full = np.column_stack([base, ops])
    r2_full, rss_full = r2(full)
    q = np.linalg.matrix_rank(full) - np.linalg.matrix_rank(base)
    dof = len(y) - np.linalg.matrix_rank(full)
    F = ((rss_base - rss_full) / q) / (rss_full / dof)
    rng = np.random.default_rng(seed)
    gains = np.empty(permutations)
    for i in range(permutations):
        gains[i] = r2(np.column_stack([base, ops[rng.permutation(len(y))]]))[0] - r2_base
    gain = r2_full - r2_base
    return {"r2_size_and_heads": r2_base, "r2_with_operations": r2_full, "r2_gain_from_operations": gain,
            "f_statistic": float(F), "f_df": (int(q), int(dof)), "f_p_value": float(f_dist.sf(F, q, dof)),
            "permutation_p_value": float((1 + (gains >= gain).sum()) / (1 + permutations)), "permutations": permutations}


def main() -> int:
    from nasbench_bert import Benchmark

    for k, v in operation_effect(Benchmark.load(progress=False)).items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
