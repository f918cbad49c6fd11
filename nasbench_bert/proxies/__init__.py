"""Zero-cost (training-free) NAS proxies, computed live and scored against the benchmarks.

>>> from nasbench_bert import proxies
>>> df = proxies.compute([0, 1, 2], "paper", semantics="seed_compat")   # one row per arch
>>> proxies.score(df, target="glue")                                    # tau, rho, CIs, ...
>>> proxies.score_stored("nlp")                                         # the release's values

Importing this subpackage needs PyTorch (the ``[torch]`` extra); scoring stored values
(:func:`score_stored`) does not build models but lives here for one front door.
"""

from __future__ import annotations

from . import bert as _bert  # noqa: F401  (registers the FlexiBERT proxies)
from . import rnn as _rnn  # noqa: F401  (registers the NAS-Bench-NLP proxies)
from .compute import COMBINED, compute, ntsr
from .inputs import BatchSpec, make_batch
from .registry import NEEDS, REGISTRY, Proxy, ProxyValue, get, register
from .scoring import paper_figures, partial_tau, scatter, score, score_stored, to_markdown

__all__ = [
    "compute", "score", "score_stored", "ntsr", "register", "get", "REGISTRY", "NEEDS", "COMBINED",
    "Proxy", "ProxyValue", "BatchSpec", "make_batch", "scatter", "paper_figures", "partial_tau", "to_markdown",
]
