"""What an evaluation found: :class:`Evaluation`, its leaderboard rows by kind, and its
Markdown tables.

Why a module of its own: the result is what a user keeps, prints and hands to
:mod:`nasbench_bert.report`; how it was computed (:mod:`.compute`, :mod:`.ranking`,
:mod:`.verdict`) is not needed to read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..vocabulary import ROW_KINDS, RowKind, Kind
from .benchmarks import _BENCHMARK_SPECS, HEADLINE


#: row kinds, in table order
KINDS: tuple[str, ...] = ROW_KINDS


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate` found.

    ``rows``: one row per benchmark x semantics x target x score, with ``kind``
    (``candidate``, ``compare``, ``published``, ``baseline``) and every column of
    :func:`nasbench_bert.scoring.score` (τ-b, tie-broken τ, ρ, 10 %-PW τ, within-cell
    τ and within-stratum τ ``tau_within_arch`` in both forms, top-10 %, each with its
    bootstrap interval; the partial τ given the size column). ``values``: the
    per-arch values of every score (``shared``: the row reused the computation of an
    identical model). ``notes``: what a reader must know (which runs, failures,
    sharing)."""

    proxy: str
    rows: pd.DataFrame
    values: pd.DataFrame
    notes: tuple[str, ...]
    seconds: float
    #: models computed in this call (not read from the cache), and rows that reused one
    computed: int
    cached: int
    shared: int
    #: one line per benchmark and semantics: the proxy against the ``depth_width_then_size``
    #: rule on the headline target (tie-broken τ and within-cell τ, ties broken, with the
    #: paired difference and its 95 % interval); keys ``(benchmark, semantics)``
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    #: benchmarks left out because the callable rejected their first model (not named by
    #: the user), with the one-line reason
    skipped: dict[str, str] = field(default_factory=dict)

    def to_pandas(self) -> pd.DataFrame:
        """The leaderboard rows (a copy)."""
        return self.rows.copy()

    def candidate(self) -> pd.DataFrame:
        """The proxy's own rows."""
        return self.rows[_is_candidate(self.rows)].reset_index(drop=True)

    def to_markdown(self, digits: int = 3) -> str:
        """One table per benchmark and semantics on the headline target (GLUE average,
        PTB test loss), every score beside the proxy, sorted by the tie-broken τ (τ-b
        rewards a coarse score's ties; see ``docs/evaluate.md``), each opened by its
        verdict against the ``depth_width_then_size`` rule; then the proxy's per-task τ."""
        from ..scoring import to_markdown

        out = [f"## Evaluation of `{self.proxy}`\n"]
        for (bm, sem), block in self.rows.groupby(["benchmark", "semantics"], sort=False):
            head = block[block.target == HEADLINE[bm]].copy()
            head["proxy"] = [_label(p, k) for p, k in zip(head.proxy, head.kind)]
            head = head.drop(columns=[c for c in head if c.startswith("rule_diff_")])
            head = head.sort_values(SORT_BY, ascending=False, na_position="last", kind="stable")
            is_cand = _is_candidate(block)
            n = int(block.loc[is_cand, "n"].max()) if is_cand.any() else 0
            what = _BENCHMARK_SPECS[bm].headline_label
            verdict = self.verdicts.get((bm, sem))
            out.append(f"### {bm}, semantics `{sem}`: {what}, n = {n}\n\n" + (f"{verdict}\n\n" if verdict else "")
                       + to_markdown(head, digits))
            cand = block[is_cand & (block.target != HEADLINE[bm])]
            if len(cand):
                t = cand[[c for c in ("target", "n", "kendall_tau", "tau_ci_low", "tau_ci_high", "tau_tiebroken",
                                      "tau_tiebroken_ci_low", "tau_tiebroken_ci_high", "tau_within_cell", "cells",
                                      "tau_within_arch_tb", "tau_within_arch_tb_ci_low", "tau_within_arch_tb_ci_high",
                                      "arch_strata") if c in cand]].copy()
                t.insert(0, "proxy", [self.proxy] * len(t))
                out.append(f"Per task ({bm}, `{sem}`):\n\n" + to_markdown(t, digits))
        if self.notes:
            out.append("Notes:\n\n" + "".join(f"* {n}\n" for n in self.notes))
        return "\n".join(out)


#: the column the tables are sorted by: the tie-broken τ, which a score cannot raise by
#: tying archs (τ-b can: depth's two values reach τ-b 0.68)
SORT_BY = "tau_tiebroken"


def _is_candidate(rows: pd.DataFrame) -> pd.Series:
    """Which leaderboard rows are the evaluated proxy's own."""
    return rows.kind == Kind.CANDIDATE


#: how the Markdown report labels a score of each row kind
_LABELS: dict[str, str] = {Kind.CANDIDATE: "**{name}**", Kind.COMPARE: "{name}", Kind.PUBLISHED: "{name} (published)",
                           Kind.BASELINE: "{name} (baseline)"}


def _label(name: str, kind: RowKind) -> str:
    return _LABELS[kind].format(name=name)
