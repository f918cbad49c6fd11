"""Optuna TPE against the package's regularised evolution and random search (the table
in docs/integrations.md): best GLUE found after 50 ... ``budget`` evaluations, ``seeds``
runs each, on the tabular and surrogate oracles.

    python -m studies.optuna_comparison --budget 300 --seeds 10
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

import numpy as np
import pandas as pd

from nasbench_bert.checks import check_int
from nasbench_bert.integrations.optuna import run_optuna
from nasbench_bert.vocabulary import BenchmarkLike


def compare_with_evolution(bench: BenchmarkLike, *, budget: int = 300, seeds: int = 10, oracles: Sequence[str] = ("tabular", "surrogate"),
                           checkpoints: Sequence[int] = (50, 100, 200, 300)) -> pd.DataFrame:
    """Best GLUE found after each checkpoint's number of evaluations: Optuna TPE against
    the package's regularised evolution and random search, ``seeds`` runs each, on each
    oracle. Columns: oracle, algorithm, evaluations, mean, std (over seeds)."""
    from nasbench_bert.search import run

    seeds = int(check_int("seeds", seeds, low=1))  # type: ignore[arg-type]
    cps = [c for c in checkpoints if c <= budget] or [budget]
    rows = []
    for oracle in oracles:
        runs: dict[str, list[Any]] = {"optuna_tpe": [], "regularized_evolution": [], "random": []}
        for s in range(seeds):
            runs["optuna_tpe"].append(run_optuna(bench, n_trials=budget, oracle=oracle, seed=s))
            for alg in ("regularized_evolution", "random"):
                runs[alg].append(run(alg, bench, budget=budget, seed=s, oracle=oracle))
        for alg, ts in runs.items():
            for c in cps:
                best = np.array([max(e["glue"] for e in t.evaluations[:c]) for t in ts])
                rows.append({"oracle": oracle, "algorithm": alg, "evaluations": c, "mean": float(best.mean()),
                             "std": float(best.std()), "seeds": seeds})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Print :func:`compare_with_evolution` as a Markdown table."""
    p = argparse.ArgumentParser(prog="python -m studies.optuna_comparison",
                                description="Optuna TPE vs regularised evolution and random search, best GLUE found")
    p.add_argument("--budget", type=int, default=300)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--oracles", default="tabular,surrogate")
    p.add_argument("--data", default=None, help="a data folder (default: the usual resolution)")
    a = p.parse_args(argv)
    from nasbench_bert import Benchmark

    bench = Benchmark.load(a.data, progress=False)
    df = compare_with_evolution(bench, budget=a.budget, seeds=a.seeds, oracles=a.oracles.split(","),
                                checkpoints=sorted({50, 100, a.budget // 2, a.budget}))
    wide = df.assign(cell=[f"{m:.2f} ± {s:.2f}" for m, s in zip(df["mean"], df["std"])]).pivot_table(
        index=["oracle", "evaluations"], columns="algorithm", values="cell", aggfunc="first")
    cols = ["optuna_tpe", "regularized_evolution", "random"]
    print("| oracle | evaluations | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for (orc, ev), r in wide.iterrows():
        print(f"| {orc} | {ev} | " + " | ".join(r[c] for c in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
