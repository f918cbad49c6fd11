"""Registers every built-in proxy and analytic score: importing this module is what
fills :data:`~nasbench_bert.proxies.registry.REGISTRY`.

One list, so a new definition module is added in one place and the sweep, the CLI and
the scorer all see it. The model-based modules import torch; :mod:`.baselines` (the trivial
spec baselines) does not, and :mod:`nasbench_bert.scoring` imports it alone.
"""

from __future__ import annotations

from . import baselines, bert, callables, lpzero, meco, nsc, published, rnn, standard, swap, zico  # noqa: F401  (each registers on import)
