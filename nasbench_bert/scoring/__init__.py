"""Scoring proxies against trained results: Kendall tau, Spearman rho, bootstrap CIs,
top-k precision, the correlation left once parameter count is controlled for, and the
field's metrics beyond one τ (:mod:`nasbench_bert.metrics`).

Which τ is which (every table names it): ``kendall_tau`` is scipy's τ-b (ties
corrected); ``tau_tiebroken`` the expected τ-b when the score's ties are broken at
random (a score with few distinct values, such as depth, cannot hide behind the tie
correction); ``tau_pw10`` NSC's 10 %-PW τ-b over the pairs whose size differs by less
than 10 % (``pw10_size`` names the size); ``tau_within_cell`` τ-b over the pairs in the
same cell (``cells`` names them); ``tau_within_arch`` τ-b over the pairs equal in every
``arch_strata`` column (FlexiBERT: layers, hidden size, total heads; 16 strata on the
500 ids); ``tau_within_cell_tb`` and ``tau_within_arch_tb`` their tie-broken forms. A
score constant within every cell (stratum) gets NaN in both forms of that metric, with
a ``note`` saying so. Each has a 95 % percentile bootstrap interval
(``<metric>_ci_low``/``_ci_high``; τ-b and ρ keep their old ``tau_ci_*``/``rho_ci_*``),
all from the same resamples of the rows. ``partial_tau_given_params`` is Kendall's
(1942) partial τ given the ``size_control`` column: τ less what score and target each
share with the size (no interval; every table that prints it says so in its header).

The context of those metrics, per benchmark (:func:`rank_context`):

* FlexiBERT: cells = (layers, hidden size), the four blocks the trivial "deeper, then
  wider" rule already orders; pw10 size = the as-specified parameter count
  ``num_params`` (the column that reproduces NSC's published 10 %-PW figures); strata of
  ``tau_within_arch`` = equal layers, hidden size and total heads.
* NAS-Bench-NLP: every recipe sits in the same three-layer language model, so the
  parameter count is a function of the cell's linear inputs alone and takes only 92
  distinct values over the 8,794 PTB runs (50 over the 275 with a public recipe). Cells
  = the exact parameter count: pairs of equal size, where size cannot decide (chosen
  from this tie structure, before any loss was looked at); pw10 size = the parameter
  count. So ``tau_within_cell`` of hidden covariance says what it knows about PTB loss
  among cells of one size. No arch strata: every recipe has the same layers and hidden
  size, so ``tau_within_arch`` would be the τ-b itself; it is NaN and left out of tables.

Signs are kept honest: each proxy is oriented by its declared ``higher_is_better`` and
each target by its own (GLUE up, loss down), so a positive tau always means "the proxy
ranks archs the way training did"; nothing is ``abs()``-ed.

This package needs no torch: scoring the release's stored proxies (:func:`score_stored`)
works on the light install. Its modules are the steps a user's values go through, each
importing only the ones listed before it:

* :mod:`.lookup` - what a benchmark holds for a row: its targets, the release's stored
  proxy values;
* :mod:`.context` - the rank context of a benchmark's rows (cells, strata, controls) and
  the model of each row;
* :mod:`.benchmarks` - what differs per benchmark (its targets, how rows find them, its
  stored proxies, the size to control for, its context): one :class:`ScoringSpace` each
  (:data:`SCORING_SPACES`);
* :mod:`.inputs` - checking and aligning the input: the refusals that keep a score from
  dropping data silently (``duplicates=``, ``unknown_ids=``);
* :mod:`.scores` - the scores (:func:`score`);
* :mod:`.baselines`, :mod:`.stored` - what is scored beside a user's proxy: the trivial
  spec baselines, the release's stored proxies (:func:`score_stored`);
* :mod:`.render` - rendering: the Markdown table, the scatter plot.

Every public name is importable from ``nasbench_bert.scoring`` itself.
"""

from __future__ import annotations

from .. import metrics as metrics  # re-exported: scoring.metrics is the module the scores call
from .baselines import baseline_values, with_baselines
from .benchmarks import SCORING_SPACES, ScoringSpace, rank_context, scoring_space
from .inputs import DUPLICATES, UNKNOWN_IDS
from .lookup import TARGETS
from .render import scatter, to_markdown
from .scores import LOWER_IS_BETTER, NEW_METRICS, partial_tau, score, strata_tau
# private, re-exported: the definitions tests check score() against, and the target exactly
# as score() reads it (the evaluation's verdict)
from .scores import _bootstrap as _bootstrap, _target_values as _target_values
from .stored import STORED_BASELINE_SEMANTICS, score_stored, stored_values

__all__ = [
    "score", "score_stored", "stored_values", "rank_context", "baseline_values", "with_baselines", "partial_tau",
    "strata_tau", "to_markdown", "scatter", "scoring_space", "ScoringSpace", "SCORING_SPACES", "TARGETS",
    "LOWER_IS_BETTER", "NEW_METRICS", "STORED_BASELINE_SEMANTICS", "DUPLICATES", "UNKNOWN_IDS",
]
