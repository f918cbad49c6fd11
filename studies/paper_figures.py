"""The paper's Figures 1-3 redrawn from the stored tables (Serianni & Kalita, ACL 2023):
hidden covariance (layer 1) against PTB test loss, and the number of parameters and head
confidence (raw and normalised) against GLUE, each with its Kendall tau and Spearman rho.

    python -m studies.paper_figures --out figures/
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from nasbench_bert.scoring import scatter, stored_values
from nasbench_bert.vocabulary import BenchmarkLike


def paper_figures(out: str | Path, bench: BenchmarkLike | None = None) -> list[Path]:
    """The paper's Figures 1-3 from the stored tables: hidden covariance (layer 1) vs PTB
    test loss, and number of parameters and head confidence (raw, normalised) vs GLUE.
    Without ``bench`` the benchmark is loaded once here, not by each figure."""
    from nasbench_bert.benchmark.flexibert import ensure_benchmark

    bench = ensure_benchmark(bench, [0])  # stored values are keyed by benchmark id
    out = Path(out)
    nlp, _ = stored_values("nlp", bench)
    flex, _ = stored_values("flexibert", bench)
    return [
        scatter(nlp, "hidden_covariance_layer1", "test_loss", out / "fig1_nlp_hidden_covariance.png", space="nlp", bench=bench, logx=False),
        scatter(flex, "num_params_authors", "glue", out / "fig2_flexibert_num_params.png", bench=bench),
        scatter(flex, "head_confidence", "glue", out / "fig3a_flexibert_head_confidence.png", bench=bench),
        scatter(flex, "head_confidence_norm", "glue", out / "fig3b_flexibert_head_confidence_norm.png", bench=bench),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.paper_figures", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="figures", help="folder for the PNG files")
    a = p.parse_args(argv)
    for path in paper_figures(a.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
