"""The docs pages' live proxy values: read from the proxy-values table of the data release,
never from a build cache.

Why one reader: the leaderboard, beyond and published pages score the same values (the
package's default batch, random tokens 8 x 128, seed 0, float64), and a reader of a page
must be able to recompute every figure from the table alone
(``Benchmark.proxy_values``) with the package's public metrics. Each page's JSON records
:func:`record` - the table's sha256 and how it was built - so a page names the exact
values it scored.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

#: the groups of proxies scored as rows of their own elsewhere (the trivial spec rules and
#: the parameter counts: ``baseline_values`` and the analytic-count rows)
SPEC_GROUPS = frozenset({"trivial"})


def live(bench: Any, semantics: str, proxies: Iterable[str] | None = None) -> pd.DataFrame:
    """The table's FlexiBERT values under ``semantics`` as a frame with ``id`` and ``arch``
    columns first, one row per benchmark id in id order (``proxies``: a subset)."""
    df = bench.proxy_values(semantics, None if proxies is None else list(proxies))
    out = df.reset_index()
    archs = bench.archs
    out.insert(1, "arch", [str(archs[i]) for i in out["id"]])
    out.attrs = dict(df.attrs)
    return out.sort_values("id").reset_index(drop=True)


def scored_proxies(frame: pd.DataFrame) -> list[str]:
    """The frame's proxy columns that are scored as live rows: every column of the table but
    the spec groups (:data:`SPEC_GROUPS`), which pages score as baselines of their own."""
    info = frame.attrs.get("proxies", {})
    return [c for c in frame.columns if c in info and not set((info[c] or {}).get("group", ())) & SPEC_GROUPS]


def seconds_per_row(frame: pd.DataFrame, proxy: str) -> float:
    """What one value of ``proxy`` cost where the table was built (its own evaluation plus its
    layer's shared pass, mean over the rows), from the table's provenance; NaN if unknown."""
    info = (frame.attrs.get("proxies", {}).get(proxy) or {})
    return float(info.get("seconds_per_row", {}).get(frame.attrs.get("semantics"), np.nan))


def noise(frame: pd.DataFrame) -> set[str]:
    """The proxies of ``frame`` that are rounding noise by construction under its semantics
    (the table's provenance lists them: a vanishing gradient objective)."""
    return set(frame.attrs.get("noise", {}).get(frame.attrs.get("semantics"), ()))


def record(bench: Any) -> dict[str, Any]:
    """What a page's JSON records of the table it scored: sha256, rows, and how it was built."""
    entry = bench.data.manifest["tables"]["proxy_values"]
    p = bench.data.manifest["proxy_values"]
    m = p.get("machine", {})
    return {"sha256": entry["sha256"], "rows": entry["rows"], "package_version": p.get("package_version"),
            "commit": p.get("commit"), "dirty": p.get("dirty"), "dtype": p.get("dtype"), "seed": p.get("seed"),
            "device": p.get("device"), "built": p.get("built"),
            "machine": f"{m.get('processor')} ({m.get('cpus')} CPUs), torch {m.get('torch')}, Python {m.get('python')}",
            "batch": p.get("benchmarks", {}).get("flexibert", {}).get("batch")}
