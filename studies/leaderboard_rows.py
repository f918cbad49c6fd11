"""The leaderboard's kinds of rows, shared by its computation (:mod:`studies.leaderboard`)
and its page (:mod:`studies.leaderboard_render`): the published records quoted beside the
table, the readings with one row, the rows scored on the held-out half only, the trivial
rules and the size counts, and which rows a verdict may name.

Why separate: the page and the computation both need these definitions, and the page
must not import the computation (it only renders the JSON's records); holding them here
keeps the imports one-way (computation -> page -> rows).
"""

from __future__ import annotations

from typing import Any

import pandas as pd


#: published training-free results on the FlexiBERT benchmark, quoted from the paper
#: text named in ``source``; ``None`` where the paper's text read here gives no number
PUBLISHED: list[dict[str, Any]] = [
    {"proxy": "ZeroLM", "kendall_tau": 0.53, "spearman_rho": 0.76,
     "citation": "Chen, Ding, Wang & Pedrycz, ZeroLM: Data-Free Transformer Architecture Search for Language Models, "
                 "arXiv:2503.18646 (2025)",
     "quote": "achieving a Spearman's rho of 0.76 and Kendall's tau of 0.53 on the FlexiBERT benchmark",
     "source": "abstract"},
    {"proxy": "LPZero", "kendall_tau": None, "spearman_rho": None,
     "citation": "Dong, Li, Liu, Tang, Liu, Wang & Chu, LPZero: Language Model Zero-cost Proxy Search from Zero, "
                 "Findings of EMNLP 2024, arXiv:2410.04808",
     "quote": "reports ranking correlations on FlexiBERT; the numbers are in the paper's tables, which could not be "
              "read here",
     "source": "not verified here"},
    {"proxy": "W-PCA", "kendall_tau": None, "spearman_rho": None,
     "citation": "Wang, W-PCA Based Gradient-Free Proxy for Efficient Search of Lightweight Language Models, "
                 "ICLR 2025, arXiv:2504.15983",
     "quote": "ranking evaluations on a dataset sampled from the FlexiBERT search space (its own 500 archs, trained "
              "with knowledge distillation); the numbers could not be read here",
     "source": "not verified here"},
]


#: proxies whose definition holds a constant chosen by looking at GLUE on ids 0-249
#: (ZeroLM's alpha, :data:`nasbench_bert.proxies.nsc.ZEROLM_ALPHA`): the leaderboard scores
#: them on ids 250-499 only, the half the choice never saw
FITTED_ON_FIRST_HALF = frozenset({"zerolm", "zerolm_model"})
HELD_OUT_IDS = range(250, 500)
#: readings of the spec that no semantics changes (the NSC authors' construction): one row each,
#: computed and listed under as_trained
SEMANTICS_FREE = ("nsc", "zerolm")


#: the trivial spec baselines shown (the parameter counts are the analytic-count rows)
TRIVIAL = ["depth", "hidden_size", "total_heads", "depth_then_width", "depth_width_then_size"]


#: proxies that are a size count of the model (parameters or FLOPs), not a training-free score
SIZE_LIKE = frozenset({"num_params", "nonembedding_params", "flops", "num_params_as_trained", "num_params_as_specified",
                       "num_params_authors"})


def free_rows(lb: pd.DataFrame) -> pd.DataFrame:
    """The training-free rows a verdict may name: live or stored, not a size count, and not
    rounding noise by construction (a noise row's figure is not the proxy's)."""
    noisy = lb["noise"].eq(True) if "noise" in lb.columns else pd.Series(False, index=lb.index)
    return lb[lb.source.isin(["live", "stored (release)"]) & ~lb.size_like.astype(bool) & ~noisy]
