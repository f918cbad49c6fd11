"""The report's per-arch values (``values.parquet``): one row per arch x semantics x score,
with what produced each value.

Why a file of its own: a reader who doubts a figure recomputes it from these rows, so
each row carries its provenance - input batch, seed, dtype, device, the proxy's registry
version (a callable's cache key), the package version, the model key and whether it came
from the cache - not only the value.
"""

from __future__ import annotations

import pandas as pd

from ..version import __version__
from .inputs import _HEADLINE, EvaluationLike, Provenance, _ReportData


def _values_frame(ev: EvaluationLike, data: _ReportData, prov: Provenance) -> pd.DataFrame:
    """One row per arch x semantics x score, with what produced each value."""
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
