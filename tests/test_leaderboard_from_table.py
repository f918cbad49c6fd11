"""Every live figure of the leaderboard recomputes from the proxy-values table alone, with
the package's public metrics, to the digits the page prints (issue 35, item 3).

Why a test and not a promise on the page: the page's JSON names the table it scored by
sha256; if the shipped table and the page drift apart (a rebuilt table, a page generated
from a cache), a reader recomputing a row would get another number. The recomputation
here uses nothing of the leaderboard generator: ``bench.proxy_values`` for the values, the
GLUE column of the lookup table, and :mod:`nasbench_bert.metrics`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from nasbench_bert import Arch, metrics

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "leaderboard.json"
#: the page prints these figures with 3 decimals
PRINTED = {"kendall_tau": metrics.kendall_tau_b, "tau_tiebroken": metrics.kendall_tau_tiebroken,
           "spearman_rho": metrics.spearman_rho}
WITHIN = {"tau_within_cell": metrics.tau_within_cell, "tau_within_cell_tb": metrics.tau_within_cell_tb}


def _page() -> dict:
    return json.loads(PAGE.read_text())


def _live_rows(page: dict) -> list[dict]:
    return [r for r in page["leaderboard"] if r.get("source") == "live"]


def _same_printed(a: float, b: float, digits: int = 3) -> bool:
    return f"{a:.{digits}f}" == f"{b:.{digits}f}"


@pytest.fixture(scope="module")
def scored(bench):
    """The table's sha256 must be the page's: otherwise the page scored other values."""
    page = _page()
    if not bench.data.has_table("proxy_values"):
        pytest.skip("no proxy-values table in the data folder: build it with nasbench-bert build-proxy-values "
                    "--out nasbench_bert/data/pinned/proxy_values.parquet (built output, not committed)")
    here = bench.data.manifest["tables"]["proxy_values"]["sha256"]
    assert page["proxy_values"]["sha256"] == here, (
        "docs/leaderboard.json scored another proxy-values table than the one shipped: "
        "regenerate it with python -m studies.leaderboard")
    return page


def test_every_live_row_recomputes_from_the_table(bench, scored):
    flex = bench.to_pandas().set_index("id")
    cells = np.array([len(Arch.coerce(a).layers) * 10_000 + Arch.coerce(a).hidden_size for a in flex["arch"]])
    frames = {s: bench.proxy_values(s) for s in ("as_trained", "as_specified", "authors")}
    checked, off = 0, []
    for row in _live_rows(scored):
        values = frames[row["semantics"]][row["proxy"]]
        ids = values.index.to_numpy()
        x = values.to_numpy(float)
        keep = np.isfinite(x)
        if "ids 250-499 only" in str(row.get("note") or ""):
            keep &= ids >= 250
        y = flex.loc[ids, "glue"].to_numpy(float)
        c = cells[ids]
        assert int(keep.sum()) == row["n"], (row["proxy"], row["semantics"])
        if np.unique(x[keep]).size < 2:
            continue
        for col, f in {**PRINTED, **WITHIN}.items():
            if row.get(col) is None or (isinstance(row[col], float) and math.isnan(row[col])):
                continue
            got = f(x[keep], y[keep], c[keep]) if col in WITHIN else f(x[keep], y[keep])
            if not _same_printed(got, row[col]):
                off.append(f"{row['proxy']} {row['semantics']} {col}: {got:.6f} vs page {row[col]:.6f}")
            checked += 1
    assert not off, off
    assert checked > 100


def test_the_checker_fails_on_a_moved_value(bench, scored):
    """The check can fail: one arch's value moved changes a printed figure of a dense proxy."""
    row = next(r for r in _live_rows(scored) if r["proxy"] == "zico" and r["semantics"] == "as_trained")
    v = bench.proxy_values("as_trained", ["zico"])["zico"].copy()
    flex = bench.to_pandas().set_index("id")
    y = flex.loc[v.index, "glue"].to_numpy(float)
    order = np.argsort(y)
    # the 50 worst archs get the largest values: a proxy reading that no page printed
    v.iloc[order[:50]] = v.max() + np.arange(1, 51)
    assert not _same_printed(metrics.kendall_tau_b(v.to_numpy(), y), row["kendall_tau"])
