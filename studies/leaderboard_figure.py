"""The leaderboard's figure: tie-broken tau with its 95 % interval per (proxy, semantics),
grouped by semantics, beside the within-cell tau, with the one-line rules as reference
lines (docs/leaderboard.png).

Why the data is separate from the drawing: :func:`figure_data` is a pure function of the
leaderboard's records (what CI compares, through the JSON the page is rendered from),
and :func:`draw` turns it into a PNG without any timestamp or software tag, so the same
records and the same matplotlib give the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: the groups of rows, top to bottom, and how each is labelled
GROUPS: tuple[tuple[str, str, str], ...] = (
    ("live", "as_trained", "live, as trained"),
    ("live", "as_specified", "live, as specified"),
    ("live", "authors", "live, authors' model"),
    ("stored (release)", "authors", "stored (release)"),
)
RULES = ("depth_then_width", "depth_width_then_size")


def figure_data(lb: pd.DataFrame) -> dict[str, Any]:
    """Rows to draw (label, group, tie-broken tau and interval, within-cell tau-b and
    interval, noise) in drawing order, and the two rules' values."""
    rows = []
    for source, sem, title in GROUPS:
        g = lb[(lb.source == source) & (lb.semantics == sem)].sort_values("tau_tiebroken", ascending=False)
        for r in g.itertuples():
            rows.append({"group": title, "label": str(r.proxy), "noise": bool(getattr(r, "noise", False) is True),
                         **{k: _num(getattr(r, k, np.nan)) for k in (
                             "tau_tiebroken", "tau_tiebroken_ci_low", "tau_tiebroken_ci_high", "tau_within_cell",
                             "tau_within_cell_ci_low", "tau_within_cell_ci_high")}})
    base = lb[lb.source == "trivial baseline (spec)"].set_index("proxy")
    rules = {r: {"tau_tiebroken": _num(base.loc[r, "tau_tiebroken"]) if r in base.index else None,
                 "tau_within_cell": _num(base.loc[r, "tau_within_cell"]) if r in base.index else None} for r in RULES}
    return {"rows": rows, "rules": rules}


def _num(v: Any) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def draw(data: dict[str, Any], png: Path) -> None:
    """Two panels sharing the rows: tie-broken tau (left), within-cell tau-b (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    n = len(rows)
    fig, axes = plt.subplots(1, 2, figsize=(11, 2.0 + 0.16 * n), sharey=True)
    y = np.arange(n)[::-1]
    colours = {g[2]: c for g, c in zip(GROUPS, ("#1f77b4", "#2ca02c", "#d62728", "#9467bd"))}
    for ax, key, title in ((axes[0], "tau_tiebroken", "tie-broken τ (500 archs)"),
                           (axes[1], "tau_within_cell", "within-cell τ-b")):
        for yi, r in zip(y, rows):
            v, lo, hi = r[key], r[f"{key}_ci_low"], r[f"{key}_ci_high"]
            if v is None:
                continue
            c = "#aaaaaa" if r["noise"] else colours[r["group"]]
            if lo is not None and hi is not None:
                ax.plot([lo, hi], [yi, yi], color=c, lw=1.2)
            ax.plot([v], [yi], "o", color=c, ms=3)
        for rule, style in zip(RULES, ("--", ":")):
            v = data["rules"][rule][key]
            if v is not None:
                ax.axvline(v, color="black", ls=style, lw=1, label=f"{rule} {v:.3f}")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    axes[0].set_yticks(y)
    axes[0].set_yticklabels([r["label"] + (" (noise)" if r["noise"] else "") for r in rows], fontsize=6)
    for yi, r in zip(y, rows):
        axes[0].get_yticklabels()[n - 1 - yi].set_color("#aaaaaa" if r["noise"] else colours[r["group"]])
    handles = [plt.Line2D([], [], color=c, marker="o", ls="-", label=g) for g, c in colours.items()]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, frameon=False)
    axes[0].set_ylim(-1, n)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / (2.0 + 0.16 * n)))
    fig.savefig(png, dpi=90, metadata={"Software": None})
    plt.close(fig)
