"""The report's two figures: ``scatter.png`` (the score against the headline target,
coloured by cell, the noise ceiling stated) and ``cells.png`` (the within-cell τ of each
cell, the proxy beside the baselines that vary inside a cell).

Why every figure is read from the Evaluation: a paper's figure drawn by hand could drift
from the numbers the harness printed; here the points, the τ in each title and the cell
intervals are the table's own (:mod:`.cells`, :mod:`.tables`), and matplotlib is
imported only when a report is written.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError
from ..vocabulary import BenchmarkLike, Space, Kind
from .cells import _cell_scores, cell_taus
from .inputs import _HEADLINE, _KIND_LABEL, EvaluationLike, _ReportData
from .tables import _fmt

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
    exact repeats' σ), else computed here (:func:`nasbench_bert.surrogate.noise.rank_ceilings`)."""
    ceil = (board or {}).get("ceilings")
    if not ceil:
        from ..surrogate.noise import rank_ceilings

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
        if bm == Space.FLEXIBERT:
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
    sems = list(dict.fromkeys(ev.values.loc[ev.values.benchmark == Space.FLEXIBERT, "semantics"]))
    fig, axes = plt.subplots(1, max(len(sems), 1), figsize=(PANEL_SIZE[0] * max(len(sems), 1), PANEL_SIZE[1] + 1.2),
                             squeeze=False)
    if not sems:
        axes[0][0].text(0.5, 0.5, "within-cell τ per cell is drawn for FlexiBERT only\n(this evaluation has no "
                        "FlexiBERT rows)", ha="center", va="center", fontsize=9)
        axes[0][0].set_axis_off()
    flex = ev.rows[ev.rows.benchmark == Space.FLEXIBERT]
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
            star = kinds.get(name) == Kind.CANDIDATE
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
