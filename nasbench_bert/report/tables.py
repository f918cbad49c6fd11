"""The report's table, in Markdown (``table.md``) and LaTeX (``table.tex``): per benchmark
and semantics, on the headline target, the proxy beside the scores the Evaluation ranked
on the same rows and the published ones it did not compute (read from the committed
leaderboard, marked †), every metric with its 95 % bootstrap interval.

Why both formats from one selection (:func:`_tables`): a paper's LaTeX table and the
Markdown a reader checks it against hold the same rows in the same order, by
construction.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..vocabulary import Space, Kind
from .cells import _cell_scores, cell_taus
from .inputs import _HEADLINE, _KIND_LABEL, _KIND_ORDER, LEADERBOARD_GROUPS, EvaluationLike, Provenance, _ReportData


#: (column, header, interval columns) of every metric of the table, in order
METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("kendall_tau", "τ-b", "tau_ci_low", "tau_ci_high"),
    ("tau_tiebroken", "tie-broken τ", "tau_tiebroken_ci_low", "tau_tiebroken_ci_high"),
    ("spearman_rho", "ρ", "rho_ci_low", "rho_ci_high"),
    ("tau_pw10", "10 %-PW τ", "tau_pw10_ci_low", "tau_pw10_ci_high"),
    ("tau_within_cell", "within-cell τ-b", "tau_within_cell_ci_low", "tau_within_cell_ci_high"),
    ("tau_within_cell_tb", "within-cell τ (tie-broken)", "tau_within_cell_tb_ci_low", "tau_within_cell_tb_ci_high"),
    ("tau_within_arch", "τ within arch strata", "tau_within_arch_ci_low", "tau_within_arch_ci_high"),
    ("tau_within_arch_tb", "τ within arch strata (tie-broken)", "tau_within_arch_tb_ci_low",
     "tau_within_arch_tb_ci_high"),
    ("top10_precision", "top-10 %", "top10_precision_ci_low", "top10_precision_ci_high"),
)


#: the LaTeX headers of :data:`METRICS` (math mode where the Markdown has Greek)
_TEX_HEADERS: dict[str, str] = {
    "kendall_tau": r"$\tau_b$", "tau_tiebroken": r"$\tau$ tie-br.", "spearman_rho": r"$\rho$",
    "tau_pw10": r"10\,\%-PW $\tau$", "tau_within_cell": r"cell $\tau_b$", "tau_within_cell_tb": r"cell $\tau$ tie-br.",
    "tau_within_arch": r"strata $\tau_b$", "tau_within_arch_tb": r"strata $\tau$ tie-br.", "top10_precision": r"top-10\,\%",
}


# -- the rows of each block ----------------------------------------------------------------------
def _tables(ev: EvaluationLike, board: dict[str, Any] | None, prov: Provenance) -> list[tuple[str, str, pd.DataFrame]]:
    """(benchmark, semantics, rows) per block: the Evaluation's headline rows, then the
    leaderboard's published/standard rows the Evaluation lacks (kind ``leaderboard``);
    within a kind, by tie-broken τ (the τ a coarse rule cannot inflate), best first."""
    from ..proxies import registry

    out = []
    for (bm, sem), block in ev.rows.groupby(["benchmark", "semantics"], sort=False):
        head = block[block.target == _HEADLINE[bm][0]].copy()
        if board is not None and bm == Space.FLEXIBERT:
            wanted = {n for n, p in registry.REGISTRY[bm].items() if set(p.group) & set(LEADERBOARD_GROUPS)}
            extra = [r for r in board.get("leaderboard", []) if r.get("proxy") in wanted and r.get("semantics") == sem
                     and r.get("target") == _HEADLINE[bm][0] and r.get("proxy") not in set(head.proxy)]
            if extra:  # a proxy with a live and a stored row: the live one (the package's own computation)
                lb = pd.DataFrame(extra)
                lb["_live"] = lb.get("source", pd.Series([""] * len(lb))).eq("live")
                lb = lb.sort_values("_live", ascending=False, kind="stable").drop_duplicates("proxy")
                lb["kind"], lb["benchmark"] = Kind.LEADERBOARD, bm
                lb["source"] = lb.get("source", pd.Series(["leaderboard"] * len(lb), index=lb.index)).fillna("leaderboard")
                head = pd.concat([head, lb[[c for c in lb.columns if c in head.columns or c in ("kind", "source")]]],
                                 ignore_index=True)
        head["_k"] = head.kind.map({k: i for i, k in enumerate(_KIND_ORDER)})
        head = head.sort_values(["_k", "tau_tiebroken"], ascending=[True, False], na_position="last", kind="stable")
        out.append((bm, sem, head.drop(columns="_k").reset_index(drop=True)))
    return out


def _kind_label(row: Mapping[str, Any]) -> str:
    """How the table names a row's kind; a leaderboard row says its source there too."""
    label = _KIND_LABEL[row["kind"]]
    if row["kind"] == Kind.LEADERBOARD:  # the proxy's own group (the seed paper's, ETAS's, published, standard)
        from ..proxies import registry

        proxy = registry.REGISTRY[Space.FLEXIBERT].get(str(row.get("proxy")))
        groups = [g for g in (proxy.group if proxy is not None else ()) if g in LEADERBOARD_GROUPS]
        label = f"{groups[0]} †" if groups else label
    src = row.get("source")
    return f"{label} ({src})" if row["kind"] == Kind.LEADERBOARD and isinstance(src, str) and src else label


def _fmt(v: Any, digits: int = 3) -> str:
    return "–" if v is None or not isinstance(v, (int, float, np.number)) or not math.isfinite(float(v)) \
        else f"{float(v):.{digits}f}"


def metric_cell(row: Mapping[str, Any], column: str, low: str, high: str, digits: int = 3) -> str:
    """``value [low, high]`` as the Markdown table prints it ("–" where undefined)."""
    v = _fmt(row.get(column), digits)
    if v == "–":
        return v
    lo, hi = _fmt(row.get(low), digits), _fmt(row.get(high), digits)
    return v if lo == "–" else f"{v} [{lo}, {hi}]"


def _board_line(board: dict[str, Any] | None) -> str:
    if board is None:
        return ("† none: docs/leaderboard.json was not found (an installed package has no docs/), so the published "
                "proxies the Evaluation did not compute are not shown.")
    ids = board.get("provenance", {}).get("inputs", {}).get("ids", "all")
    return (f"† from the committed docs/leaderboard.json (ids {ids}, input batch {board.get('live_batch', '?')}, "
            f"{board.get('bootstrap', '?')} bootstrap resamples), not recomputed on this report's rows.")


# -- Markdown --------------------------------------------------------------------------------------
def _markdown(ev: EvaluationLike, tables: list[tuple[str, str, pd.DataFrame]], board: dict[str, Any] | None,
              data: _ReportData) -> str:
    out = [f"# Report: `{ev.proxy}`\n",
           "Every metric with its 95 % bootstrap interval; rows of one block are scored on the same archs, "
           "except those marked †. Orientation: positive means the score ranks archs the way training did.\n"]
    for bm, sem, t in tables:
        n = int(t.loc[t.kind == Kind.CANDIDATE, "n"].max()) if (t.kind == Kind.CANDIDATE).any() else 0
        out.append(f"## {bm}, semantics `{sem}`: {_HEADLINE[bm][1]}, n = {n}\n")
        head = ["score", "kind", "n", *(h for _, h, _, _ in METRICS)]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
        for _, r in t.iterrows():
            name = f"**{r.proxy}**" if r.kind == Kind.CANDIDATE else str(r.proxy)
            cells = [name, _kind_label(r), _fmt(r.get("n"), 0),
                     *(metric_cell(r, c, lo, hi) for c, _, lo, hi in METRICS)]
            lines.append("| " + " | ".join(cells) + " |")
        out.append("\n".join(lines) + "\n")
        notes = [f"`{r.proxy}`: {r.note}" for _, r in t.iterrows() if r.kind != Kind.LEADERBOARD
                 and isinstance(r.get("note"), str) and r.get("note")]
        if notes:
            out.append("Notes on the rows: " + "; ".join(notes) + "\n")
    out.append(_board_line(board) + "\n")
    per_cell = _per_cell_markdown(ev, data)
    if per_cell:
        out.append(per_cell)
    if ev.notes:
        out.append("Notes:\n\n" + "".join(f"* {n}\n" for n in ev.notes))
    return "\n".join(out)


def _per_cell_markdown(ev: EvaluationLike, data: _ReportData) -> str:
    sems = list(dict.fromkeys(ev.values.loc[ev.values.benchmark == Space.FLEXIBERT, "semantics"]))
    if not sems:
        return ""
    out = ["## Within-cell τ per (layers, hidden size) cell (FlexiBERT)\n",
           "τ-b and tie-broken τ over the pairs of one cell, 95 % bootstrap interval (rows resampled within the cell); "
           "the data of cells.png.\n"]
    for sem in sems:
        lines = ["| score | layers | hidden | n | τ-b | tie-broken τ |", "|---|---:|---:|---:|---:|---:|"]
        for name in _cell_scores(ev, sem):
            for r in cell_taus(ev, data, sem, name).to_dict("records"):
                lines.append(f"| {name} | {r['layers']} | {r['hidden_size']} | {r['n']} | "
                             f"{metric_cell(r, 'kendall_tau', 'kendall_tau_ci_low', 'kendall_tau_ci_high')} | "
                             f"{metric_cell(r, 'tau_tiebroken', 'tau_tiebroken_ci_low', 'tau_tiebroken_ci_high')} |")
        out.append(f"Semantics `{sem}`:\n\n" + "\n".join(lines) + "\n")
    return "\n".join(out)


# -- LaTeX -----------------------------------------------------------------------------------------
_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
                "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "†": r"$^\dagger$",
                "τ": r"$\tau$", "ρ": r"$\rho$", "–": "--"}


def tex_escape(text: str) -> str:
    """``text`` safe in LaTeX text mode (``_``, ``%``, ``&`` and the other specials escaped)."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in str(text))


def _tex_number(v: Any, digits: int = 3) -> str:
    s = _fmt(v, digits)
    return "--" if s == "–" else f"${s}$"


def _tex_cell(row: Mapping[str, Any], column: str, low: str, high: str) -> str:
    v = _tex_number(row.get(column))
    if v == "--" or _fmt(row.get(low)) == "–":
        return v
    return f"{v} {{\\scriptsize $[{_fmt(row.get(low))}, {_fmt(row.get(high))}]$}}"


def _latex(ev: EvaluationLike, tables: list[tuple[str, str, pd.DataFrame]], board: dict[str, Any] | None) -> str:
    """A booktabs ``tabular`` (needs ``\\usepackage{booktabs}``): one block per benchmark
    and semantics, separated by ``\\midrule``."""
    ncol = 3 + len(METRICS)
    head = ["Score", "Kind", "$n$", *(_TEX_HEADERS[c] for c, _, _, _ in METRICS)]
    out = [f"% report of {tex_escape(ev.proxy)}; needs \\usepackage{{booktabs}}",
           "\\begin{tabular}{ll" + "r" * (ncol - 2) + "}", "\\toprule", " & ".join(head) + r" \\"]
    for bm, sem, t in tables:
        out.append("\\midrule")
        out.append(f"\\multicolumn{{{ncol}}}{{l}}{{\\emph{{{tex_escape(bm)}, semantics {tex_escape(sem)}: "
                   f"{tex_escape(_HEADLINE[bm][1])}}}}} \\\\")
        out.append("\\midrule")
        for _, r in t.iterrows():
            name = f"\\textbf{{{tex_escape(r.proxy)}}}" if r.kind == Kind.CANDIDATE else tex_escape(r.proxy)
            cells = [name, tex_escape(_kind_label(r)), _tex_number(r.get("n"), 0),
                     *(_tex_cell(r, c, lo, hi) for c, _, lo, hi in METRICS)]
            out.append(" & ".join(cells) + r" \\")
    out.append("\\bottomrule")
    out.append("\\end{tabular}")
    out.append("% " + tex_escape(_board_line(board)))
    return "\n".join(out) + "\n"
