"""A paper-ready report of one :class:`~nasbench_bert.evaluation.Evaluation`: the table,
the two figures and the per-arch values a proxy paper needs, written the same way for
everyone (``evaluate(..., report=DIR)``, ``nasbench-bert proxies evaluate ... --report DIR``).

Why a module of its own: every proxy paper drew its own scatter, its own per-cell plot
and its own LaTeX table, each differently, and the numbers in them could drift from the
ones the harness computed. Here every figure is read from the Evaluation (or from the
committed leaderboard, labelled as such), so the report cannot disagree with the table
the harness printed. The folder holds:

* ``table.md`` / ``table.tex``: per benchmark and semantics, on the headline target
  (GLUE average; PTB test loss), the proxy beside the compared proxies, the published
  analytic scores and the trivial baselines the Evaluation scored on the same rows, and
  the published and standard proxies the Evaluation did not compute, read from
  ``docs/leaderboard.json`` (marked †, with that file's ids and input batch named under
  the table: those rows are on all 500 ids, not necessarily on the candidate's rows).
  Every metric with its 95 % bootstrap interval. The LaTeX is a booktabs ``tabular``.
* ``scatter.png``: score against the headline target, coloured by the (layers, hidden
  size) cell, one panel per semantics, with the noise ceiling (the best τ a score can
  reach against one noisy GLUE run per arch) stated.
* ``cells.png``: the within-cell τ in each (layers, hidden size) cell with its bootstrap
  interval, the proxy beside the trivial baselines that vary inside a cell.
* ``values.parquet``: one row per arch x semantics x score, with what produced the
  value: proxy name, semantics, input batch key, seed, dtype, device, the proxy's registry
  version (for a callable: its cache key), the package version, the model key and
  whether it came from the cache.

The folder is built beside the target and swapped in whole (:mod:`.atomic`): an error
leaves no partial report. A target that exists must be an empty folder or an earlier
report (nothing but the report's files); anything else is refused, so a report never
deletes a user's files.

This module sits below :mod:`.evaluation` (which calls it) and does not import it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, TypeVar

import numpy as np
import pandas as pd

from . import metrics
from .atomic import replace_dir, staging_dir
from .errors import InvalidArgumentError
from .report_dir import REPORT_FILES, check_report_dir
from .vocabulary import BenchmarkLike


class EvaluationLike(Protocol):
    """What a report reads of an :class:`~nasbench_bert.evaluation.Evaluation`: the proxy's
    name, the table of rows, the per-arch values and the notes.

    Why a protocol and not the class: :mod:`.evaluation` sits above this module and calls
    it (``evaluate(..., report=DIR)``), so importing the class here, even for its type
    only, would tie the two into an import circle. Read-only properties, so the frozen
    dataclass satisfies it."""

    @property
    def proxy(self) -> str: ...

    @property
    def rows(self) -> pd.DataFrame: ...

    @property
    def values(self) -> pd.DataFrame: ...

    @property
    def notes(self) -> tuple[str, ...]: ...


#: the evaluation :func:`report_run` was given, handed back as the same type
_E = TypeVar("_E", bound=EvaluationLike)


#: the committed leaderboard the published rows are read from (present in a checkout)
LEADERBOARD = Path(__file__).resolve().parent.parent / "docs" / "leaderboard.json"
#: registry groups whose rows the table adds from the leaderboard when the Evaluation lacks them
LEADERBOARD_GROUPS: tuple[str, ...] = ("paper", "etas", "published", "standard")
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
#: each benchmark's headline target and how figures name it
_HEADLINE: dict[str, tuple[str, str]] = {"flexibert": ("glue", "GLUE average"),
                                         "nlp": ("test_loss", "PTB test loss (lower is better)")}
#: row kinds in table order, and how the table labels them
_KIND_ORDER: tuple[str, ...] = ("candidate", "compare", "published", "leaderboard", "baseline")
_KIND_LABEL: dict[str, str] = {"candidate": "proxy", "compare": "compared", "published": "published",
                               "leaderboard": "published †", "baseline": "baseline"}


@dataclass(frozen=True)
class Provenance:
    """What produced an Evaluation's values, beyond the values themselves: the input
    batch key per benchmark, the proxy seed, the dtype, the bootstrap resamples, each
    model-based score's registry version per benchmark (a callable's: its cache key), and
    the device the models ran on (a GPU changes the last bits of a value)."""

    batch: Mapping[str, str]
    seed: int
    dtype: str
    bootstrap: int
    versions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    device: str = "cpu"

    @classmethod
    def of_run(cls, run: Any) -> "Provenance":
        """From :func:`nasbench_bert.evaluation.evaluate`'s checked arguments (its
        ``_Run``: ``specs``, ``seed``, ``dtype``, ``bootstrap``, ``name``, ``compare``)."""
        from .proxies import registry

        versions: dict[str, dict[str, str]] = {}
        for bm in run.specs:
            reg = registry.REGISTRY[bm]
            versions[bm] = {n: str(reg[n].version) for n in [run.name, *run.compare] if n in reg}
        return cls({bm: s.key for bm, s in run.specs.items()}, int(run.seed), str(run.dtype), int(run.bootstrap), versions,
                   str(getattr(run, "device", "cpu")))


# -- the entry point ---------------------------------------------------------------------------
def write_report(evaluation: EvaluationLike, directory: str | os.PathLike[str], provenance: Provenance, *,
                 bench: BenchmarkLike, leaderboard: str | os.PathLike[str] | None = LEADERBOARD) -> Path:
    """Write the report of ``evaluation`` to ``directory`` (see the module docstring);
    return the folder. ``provenance``: what produced the values (:class:`Provenance`).
    ``bench``: the benchmark the Evaluation ranked on (targets and cells). ``leaderboard``:
    the JSON the published rows are read from (None or a missing file: none are added,
    and the table says so)."""
    target = check_report_dir(directory)
    assert target is not None
    if not isinstance(provenance, Provenance):
        raise InvalidArgumentError(f"provenance = {provenance!r} is not allowed; allowed: a report.Provenance")
    board = _read_leaderboard(leaderboard)
    data = _ReportData.of(evaluation, bench, provenance)
    stage = staging_dir(target)
    try:
        tables = _tables(evaluation, board, provenance)
        (stage / "table.md").write_text(_markdown(evaluation, tables, board, data), encoding="utf-8")
        (stage / "table.tex").write_text(_latex(evaluation, tables, board), encoding="utf-8")
        ceiling = _ceiling_line(board, bench)
        _scatter_png(stage / "scatter.png", evaluation, data, ceiling)
        _cells_png(stage / "cells.png", evaluation, data)
        _values_frame(evaluation, data, provenance).to_parquet(stage / "values.parquet", index=False)
        missing = [f for f in REPORT_FILES if not (stage / f).is_file()]
        if missing:
            raise RuntimeError(f"report files not written: {missing}")
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()  # an empty folder the user made: replaced by the report
        return replace_dir(stage, target)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def report_run(evaluation: _E, directory: Path | None, run: Any) -> _E:
    """:func:`write_report` of what :func:`nasbench_bert.evaluation.evaluate` found, when
    it was asked for one (``directory`` from :func:`check_report_dir`; None: nothing is
    written); returns ``evaluation``. ``run``: evaluate's checked arguments (its ``_Run``,
    read by :meth:`Provenance.of_run`; its ``bench`` gives the targets and cells)."""
    if directory is not None:
        write_report(evaluation, directory, Provenance.of_run(run), bench=run.bench)
    return evaluation


# -- what the figures and the values need beside the Evaluation -------------------------------------
@dataclass(frozen=True)
class _ReportData:
    """Per benchmark: each row's headline target and (FlexiBERT) its (layers, hidden size)
    cell, aligned with ``evaluation.values`` of that benchmark and semantics."""

    target: np.ndarray
    cells: np.ndarray
    bootstrap: int
    seed: int

    @classmethod
    def of(cls, ev: EvaluationLike, bench: BenchmarkLike, prov: Provenance) -> "_ReportData":
        v = ev.values
        target = np.full(len(v), np.nan)
        cells = np.full(len(v), np.nan)
        if "flexibert" in set(v.benchmark):
            m = (v.benchmark == "flexibert").to_numpy()
            flex = bench.to_pandas().set_index("id")
            ids = v.loc[m, "id"].astype(int).to_numpy()
            target[m] = flex.loc[ids, "glue"].to_numpy(dtype=float)
            cells[m] = (flex.loc[ids, "num_layers"].to_numpy(dtype=float) * 10_000
                        + flex.loc[ids, "hidden_size"].to_numpy(dtype=float))
        if "nlp" in set(v.benchmark):
            m = (v.benchmark == "nlp").to_numpy()
            loss = dict(zip(bench.nlp.ptb.log_name, bench.nlp.ptb.test_loss))
            target[m] = [loss.get(k, np.nan) for k in v.loc[m, "log_name"]]
        return cls(target, cells, prov.bootstrap, prov.seed)


def _read_leaderboard(path: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    if path is None or not Path(path).is_file():
        return None
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidArgumentError(f"leaderboard = {str(path)!r} is not a readable leaderboard JSON ({e})") from None


# -- the tables -------------------------------------------------------------------------------
def _tables(ev: EvaluationLike, board: dict[str, Any] | None, prov: Provenance) -> list[tuple[str, str, pd.DataFrame]]:
    """(benchmark, semantics, rows) per block: the Evaluation's headline rows, then the
    leaderboard's published/standard rows the Evaluation lacks (kind ``leaderboard``);
    within a kind, by tie-broken τ (the τ a coarse rule cannot inflate), best first."""
    from .proxies import registry

    out = []
    for (bm, sem), block in ev.rows.groupby(["benchmark", "semantics"], sort=False):
        head = block[block.target == _HEADLINE[bm][0]].copy()
        if board is not None and bm == "flexibert":
            wanted = {n for n, p in registry.REGISTRY[bm].items() if set(p.group) & set(LEADERBOARD_GROUPS)}
            extra = [r for r in board.get("leaderboard", []) if r.get("proxy") in wanted and r.get("semantics") == sem
                     and r.get("target") == _HEADLINE[bm][0] and r.get("proxy") not in set(head.proxy)]
            if extra:  # a proxy with a live and a stored row: the live one (the package's own computation)
                lb = pd.DataFrame(extra)
                lb["_live"] = lb.get("source", pd.Series([""] * len(lb))).eq("live")
                lb = lb.sort_values("_live", ascending=False, kind="stable").drop_duplicates("proxy")
                lb["kind"], lb["benchmark"] = "leaderboard", bm
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
    if row["kind"] == "leaderboard":  # the proxy's own group (the seed paper's, ETAS's, published, standard)
        from .proxies import registry

        proxy = registry.REGISTRY["flexibert"].get(str(row.get("proxy")))
        groups = [g for g in (proxy.group if proxy is not None else ()) if g in LEADERBOARD_GROUPS]
        label = f"{groups[0]} †" if groups else label
    src = row.get("source")
    return f"{label} ({src})" if row["kind"] == "leaderboard" and isinstance(src, str) and src else label


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


def _markdown(ev: EvaluationLike, tables: list[tuple[str, str, pd.DataFrame]], board: dict[str, Any] | None,
              data: _ReportData) -> str:
    out = [f"# Report: `{ev.proxy}`\n",
           "Every metric with its 95 % bootstrap interval; rows of one block are scored on the same archs, "
           "except those marked †. Orientation: positive means the score ranks archs the way training did.\n"]
    for bm, sem, t in tables:
        n = int(t.loc[t.kind == "candidate", "n"].max()) if (t.kind == "candidate").any() else 0
        out.append(f"## {bm}, semantics `{sem}`: {_HEADLINE[bm][1]}, n = {n}\n")
        head = ["score", "kind", "n", *(h for _, h, _, _ in METRICS)]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
        for _, r in t.iterrows():
            name = f"**{r.proxy}**" if r.kind == "candidate" else str(r.proxy)
            cells = [name, _kind_label(r), _fmt(r.get("n"), 0),
                     *(metric_cell(r, c, lo, hi) for c, _, lo, hi in METRICS)]
            lines.append("| " + " | ".join(cells) + " |")
        out.append("\n".join(lines) + "\n")
        notes = [f"`{r.proxy}`: {r.note}" for _, r in t.iterrows() if r.kind != "leaderboard"
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
            name = f"\\textbf{{{tex_escape(r.proxy)}}}" if r.kind == "candidate" else tex_escape(r.proxy)
            cells = [name, tex_escape(_kind_label(r)), _tex_number(r.get("n"), 0),
                     *(_tex_cell(r, c, lo, hi) for c, _, lo, hi in METRICS)]
            out.append(" & ".join(cells) + r" \\")
    out.append("\\bottomrule")
    out.append("\\end{tabular}")
    out.append("% " + tex_escape(_board_line(board)))
    return "\n".join(out) + "\n"


# -- per-cell within-cell τ ----------------------------------------------------------------------
def _oriented(ev: EvaluationLike, bm: str, sem: str, name: str, x: np.ndarray) -> np.ndarray:
    """``x`` with the score's declared orientation applied (higher = better)."""
    r = ev.rows[(ev.rows.benchmark == bm) & (ev.rows.semantics == sem) & (ev.rows.proxy == name)]
    hib = bool(r.higher_is_better.iloc[0]) if len(r) and "higher_is_better" in r else True
    return x if hib else -x


def cell_taus(ev: EvaluationLike, data: _ReportData, sem: str, name: str) -> pd.DataFrame:
    """The within-cell τ of score ``name`` under ``sem`` in each FlexiBERT (layers, hidden
    size) cell, both forms, each with its bootstrap interval (rows resampled within the
    cell): columns cell, layers, hidden_size, n, and the :data:`metrics.METRICS` estimates
    of ``kendall_tau`` and ``tau_tiebroken`` with ``_ci_low``/``_ci_high``. A score
    constant within a cell gets NaN there."""
    v = ev.values
    m = ((v.benchmark == "flexibert") & (v.semantics == sem)).to_numpy()
    x = _oriented(ev, "flexibert", sem, name, v.loc[m, name].to_numpy(dtype=float))
    y, cells = data.target[m], data.cells[m]
    rows = []
    for c in sorted(set(cells[np.isfinite(cells)])):
        k = cells == c
        xs, ys = x[k], y[k]
        ok = np.isfinite(xs) & np.isfinite(ys)
        row: dict[str, Any] = {"cell": c, "layers": int(c // 10_000), "hidden_size": int(c % 10_000), "n": int(ok.sum())}
        if ok.sum() >= 3 and np.ptp(xs[ok]) > 0:
            est = metrics.rank_metrics(xs[ok], ys[ok], bootstrap=data.bootstrap, seed=data.seed)
        else:
            est = {m_: metrics.Estimate(math.nan) for m_ in ("kendall_tau", "tau_tiebroken")}
        for mname in ("kendall_tau", "tau_tiebroken"):
            e = est[mname]
            row.update({mname: e.value, f"{mname}_ci_low": e.ci_low, f"{mname}_ci_high": e.ci_high})
        rows.append(row)
    return pd.DataFrame(rows)


def _cell_scores(ev: EvaluationLike, sem: str) -> list[str]:
    """The scores cells.png draws under ``sem``: the proxy, the compared, and the
    baselines that vary within some cell (the others are constant there)."""
    r = ev.rows[(ev.rows.benchmark == "flexibert") & (ev.rows.semantics == sem) & (ev.rows.target == "glue")]
    keep = r[r.kind.isin(["candidate", "compare"]) | ((r.kind == "baseline") & np.isfinite(
        pd.to_numeric(r.tau_within_cell, errors="coerce")))]
    return [p for p in keep.proxy if p in ev.values]


def _per_cell_markdown(ev: EvaluationLike, data: _ReportData) -> str:
    sems = list(dict.fromkeys(ev.values.loc[ev.values.benchmark == "flexibert", "semantics"]))
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


# -- figures ---------------------------------------------------------------------------------
def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise InvalidArgumentError("report needs matplotlib: pip install 'nasbench-bert[report]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ceiling_line(board: dict[str, Any] | None, bench: BenchmarkLike) -> str:
    """The noise ceiling in one line: the leaderboard's ``ceilings`` (Gaussian noise at the
    exact repeats' σ), else computed here (:func:`.surrogate.noise.rank_ceilings`)."""
    ceil = (board or {}).get("ceilings")
    if not ceil:
        from .surrogate.noise import rank_ceilings

        ceil = rank_ceilings(bench, reps=20)
    name = next((k for k in ceil if k.startswith("gaussian")), next(iter(ceil)))
    c = ceil[name]
    tau, cell = c["kendall_tau"], c["tau_within_cell"]
    what = (f"Gaussian noise at the exact repeats' σ {name.rsplit('_', 1)[1]}" if name.startswith("gaussian_exact")
            else name.replace("_", " "))
    return (f"FlexiBERT noise ceiling vs one noisy GLUE run per arch ({what}, all 500 ids): "
            f"τ-b {tau[0]:.3f} [{tau[1]:.3f}, {tau[2]:.3f}], within-cell τ {cell[0]:.3f} [{cell[1]:.3f}, {cell[2]:.3f}]")


def _panels(ev: EvaluationLike) -> list[tuple[str, str]]:
    return list(dict.fromkeys(zip(ev.values.benchmark, ev.values.semantics)))


def _save(fig: Any, path: Path, plt: Any) -> None:
    fig.savefig(path, format="png", dpi=FIG_DPI)
    plt.close(fig)


#: resolution of the figures (dots per inch); sizes are in inches per panel
FIG_DPI = 120
PANEL_SIZE: tuple[float, float] = (4.6, 3.8)
#: inches scatter.png adds above its panels for the title and the ceiling line (wrapped per panel width)
SCATTER_TITLE = 0.8


def _score_axis(x: np.ndarray, name: str) -> tuple[np.ndarray, str, bool]:
    """(x to draw, axis label, log scale): a positive score over three decades on a log
    axis; a score whose spread is tiny beside its level (a LayerNorm'd statistic near 1)
    drawn as its difference from the median, so tick labels stay readable."""
    fin = x[np.isfinite(x)]
    if not len(fin):
        return x, name, False
    lo, hi, mid = float(fin.min()), float(fin.max()), float(np.median(fin))
    if lo > 0 and hi / lo > 1e3:
        return x, name, True
    if mid != 0 and (hi - lo) < 1e-4 * abs(mid):
        return x - mid, f"{name} − {mid:.10g}", False
    return x, name, False


def _scatter_png(path: Path, ev: EvaluationLike, data: _ReportData, ceiling: str) -> None:
    plt = _pyplot()
    panels = _panels(ev)
    fig, axes = plt.subplots(1, len(panels), figsize=(PANEL_SIZE[0] * len(panels), PANEL_SIZE[1] + SCATTER_TITLE),
                             squeeze=False)
    v = ev.values
    for ax, (bm, sem) in zip(axes[0], panels):
        m = ((v.benchmark == bm) & (v.semantics == sem)).to_numpy()
        raw, y, cells = v.loc[m, ev.proxy].to_numpy(dtype=float), data.target[m], data.cells[m]
        ok = np.isfinite(raw) & np.isfinite(y)
        x, xlabel, logx = _score_axis(np.where(ok, raw, np.nan), ev.proxy)
        if bm == "flexibert":
            for i, c in enumerate(sorted(set(cells[ok]))):
                k = ok & (cells == c)
                ax.scatter(x[k], y[k], s=9, alpha=0.75, color=plt.cm.tab10(i),
                           label=f"{int(c // 10_000)} layers, hidden {int(c % 10_000)} (n={int(k.sum())})")
            ax.legend(fontsize=7, loc="best", title="(layers, hidden size) cell", title_fontsize=7)
        else:
            ax.scatter(x[ok], y[ok], s=9, alpha=0.75, color="0.3")
        if logx:
            ax.set_xscale("log")
        r = ev.rows[(ev.rows.benchmark == bm) & (ev.rows.semantics == sem) & (ev.rows.proxy == ev.proxy)
                    & (ev.rows.target == _HEADLINE[bm][0])]
        head = "" if r.empty else (f"τ-b {_fmt(r.kendall_tau.iloc[0])}, tie-broken τ {_fmt(r.tau_tiebroken.iloc[0])}, "
                                   f"within-cell τ {_fmt(r.tau_within_cell.iloc[0])}")
        ax.set_title(f"{bm}, {sem} (n = {int(ok.sum())})\n{head}", fontsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(_HEADLINE[bm][1], fontsize=8)
        ax.tick_params(labelsize=7)
    ceiling = textwrap.fill(ceiling, 70 * len(panels))  # a panel's width holds about 70 characters at this size
    fig.suptitle(f"{ev.proxy} against the trained result\n{ceiling}", fontsize=8)
    fig.tight_layout()
    _save(fig, path, plt)


def _cells_png(path: Path, ev: EvaluationLike, data: _ReportData) -> None:
    plt = _pyplot()
    sems = list(dict.fromkeys(ev.values.loc[ev.values.benchmark == "flexibert", "semantics"]))
    fig, axes = plt.subplots(1, max(len(sems), 1), figsize=(PANEL_SIZE[0] * max(len(sems), 1), PANEL_SIZE[1] + 1.2),
                             squeeze=False)
    if not sems:
        axes[0][0].text(0.5, 0.5, "within-cell τ per cell is drawn for FlexiBERT only\n(this evaluation has no "
                        "FlexiBERT rows)", ha="center", va="center", fontsize=9)
        axes[0][0].set_axis_off()
    flex = ev.rows[ev.rows.benchmark == "flexibert"]
    kinds = dict(zip(flex.proxy, flex.kind))
    handles: dict[str, Any] = {}
    for ax, sem in zip(axes[0], sems):
        names = _cell_scores(ev, sem)
        width = 0.8 / max(len(names), 1)
        labels: list[str] = []
        for j, name in enumerate(names):
            t = cell_taus(ev, data, sem, name)
            labels = [f"{r['layers']} layers\nhidden {r['hidden_size']}\nn = {r['n']}" for r in t.to_dict("records")]
            pos = np.arange(len(t)) - 0.4 + width * (j + 0.5)
            val = t.tau_tiebroken.to_numpy(dtype=float)
            err = np.vstack([val - t.tau_tiebroken_ci_low.to_numpy(dtype=float),
                             t.tau_tiebroken_ci_high.to_numpy(dtype=float) - val])
            star = kinds.get(name) == "candidate"
            h = ax.errorbar(pos, val, yerr=np.nan_to_num(err), fmt="o" if star else "s", ms=7 if star else 4,
                            capsize=2, lw=1.6 if star else 1.0, color="C3" if star else _BASELINE_COLOURS[j % 9])
            handles.setdefault(f"{_KIND_LABEL[kinds.get(name, 'baseline')]}: {name}", h)
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_xticks(np.arange(len(labels)), labels, fontsize=7)
        ax.set_ylim(-1.05, 1.05)
        ax.set_ylabel("within-cell τ (tie-broken), 95 % interval", fontsize=8)
        ax.set_title(f"flexibert, {sem}: within-cell τ in each (layers, hidden size) cell", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    bottom = 0.0
    if handles:  # two legend columns per panel (a long name takes about half a panel's width)
        ncol = min(len(handles), 2 * len(axes[0]))
        fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=ncol, fontsize=7, frameon=False)
        bottom = (0.1 + 0.2 * math.ceil(len(handles) / ncol)) / fig.get_figheight()
    fig.tight_layout(rect=(0, bottom, 1, 1))
    _save(fig, path, plt)


#: colours of the baselines in cells.png (tab10 without C3, the proxy's red)
_BASELINE_COLOURS: tuple[str, ...] = ("C0", "C1", "C2", "C4", "C5", "C6", "C7", "C8", "C9")


# -- values ----------------------------------------------------------------------------------
def _values_frame(ev: EvaluationLike, data: _ReportData, prov: Provenance) -> pd.DataFrame:
    """One row per arch x semantics x score, with what produced each value."""
    from . import __version__

    v = ev.values.reset_index(drop=True)
    kinds = dict(zip(zip(ev.rows.benchmark, ev.rows.proxy), ev.rows.kind))
    scores = list(dict.fromkeys(ev.rows.proxy))
    parts = []
    for name in (s for s in scores if s in v):
        kind = v.benchmark.map(lambda b, n=name: kinds.get((b, n)))
        versions = v.benchmark.map(lambda b, n=name: prov.versions.get(b, {}).get(n))
        modelled = versions.notna()
        err = v[f"{name}__error"] if f"{name}__error" in v else pd.Series([None] * len(v))
        parts.append(pd.DataFrame({
            "benchmark": v.benchmark, "semantics": v.semantics,
            "id": v["id"].astype("Int64") if "id" in v else pd.array([pd.NA] * len(v), dtype="Int64"),
            "arch": v["arch"] if "arch" in v else None, "log_name": v["log_name"] if "log_name" in v else None,
            "proxy": name, "kind": kind, "value": pd.to_numeric(v[name], errors="coerce").astype(float),
            "error": err.astype(object).where(err.notna(), None),
            "target": data.target, "target_name": v.benchmark.map(lambda b: _HEADLINE[b][0]),
            "batch": v.benchmark.map(prov.batch).where(modelled, None), "seed": prov.seed,
            "dtype": pd.Series([prov.dtype] * len(v)).where(modelled, None), "proxy_version": versions,
            "device": pd.Series([prov.device] * len(v)).where(modelled, None),
            "model_key": v["model_key"].where(modelled, None) if "model_key" in v else None,
            "cached": v["cached"].astype("boolean").where(modelled, pd.NA) if "cached" in v else pd.NA,
            "package_version": __version__,
        }))
    out = pd.concat(parts, ignore_index=True)
    for c in ("arch", "log_name", "error", "batch", "dtype", "device", "proxy_version", "model_key", "kind"):
        out[c] = out[c].astype("string")
    return out


__all__ = ["write_report", "report_run", "check_report_dir", "Provenance", "cell_taus", "metric_cell", "tex_escape", "REPORT_FILES",
           "LEADERBOARD", "METRICS"]
