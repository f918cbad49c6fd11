"""The companion file of ``docs/published.md``: the per-arch values of the page's own runs
(``docs/published_values.parquet``), written beside the page by ``python -m
studies.published`` (not shipped yet: until it is, the page's JSON records where the own
runs' carried figures come from, :mod:`studies.published_sources`).

Why a file: the page's own runs (real text, a second seed, SWAP at 16 sequences, the
W-PCA protocol runs, ZeroLM on instantiated weights) take hours on a CPU and are not in
the proxy-values table (they are other protocols). With their values committed, every
figure on the page can be recomputed from the table plus this file
(``python -m studies.published --from-values``, minutes), by CI or by a reader.

Layout: one row per (``run``, ``id``), the run's label and the benchmark id; one float64
column per proxy, null where a run does not compute it. ZeroLM on weights is the run
``zerolm_weights`` with the columns ``zerolm_attn`` and ``zerolm_ffn`` (S_attn and S_ffn).
The file holds only values this package computed and benchmark ids: no field of the
authors' release. What each run was - its batch key, proxies, mean seconds per arch and
tokenizer, the real-text batches' fill, the dtype, torch version and machine - is the parquet
file's key-value metadata (``published_runs``), so the file stands alone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

#: the run whose columns are ZeroLM's two sums on instantiated weights
ZEROLM_RUN = "zerolm_weights"
ZEROLM_COLUMNS = {"attn": "zerolm_attn", "ffn": "zerolm_ffn"}
#: the metadata key of the runs' description
META_KEY = b"published_runs"
#: the entries of :func:`studies.published_runs.own_values` that are not runs
NOT_RUNS = ("text_fill", ZEROLM_RUN)


def path_for(page: Path) -> Path:
    """The companion file of a page: ``docs/published.md`` -> ``docs/published_values.parquet``."""
    return page.with_name(f"{page.stem}_values.parquet")


def write(path: Path, values: dict[str, Any], *, dtype: str, torch_version: str, machine: str) -> dict[str, Any]:
    """Write ``values`` (the own runs, as :func:`studies.published_runs.own_values` returns
    them) to ``path`` (atomically; the same values always give the same bytes); returns
    :func:`describe` of the written file."""
    import pyarrow as pa

    from nasbench_bert.atomic import atomic_path
    from nasbench_bert.data.tables import write_parquet_deterministic

    labels = sorted(k for k in values if k not in NOT_RUNS)
    proxies = sorted({p for k in labels for p in values[k] if isinstance(values[k][p], list) and p != "ids"})
    rows: dict[str, list[Any]] = {"run": [], "id": [], **{p: [] for p in proxies},
                                  **{c: [] for c in ZEROLM_COLUMNS.values()}}

    def add(label: str, ids: list[int], cols: dict[str, list[float]]) -> None:
        rows["run"] += [label] * len(ids)
        rows["id"] += [int(i) for i in ids]
        for c in rows:
            if c not in ("run", "id"):
                rows[c] += [float(v) for v in cols[c]] if c in cols else [None] * len(ids)

    for label in labels:
        v = values[label]
        add(label, v["ids"], {p: v[p] for p in proxies if p in v})
    zw = values.get(ZEROLM_RUN)
    if zw is not None:
        add(ZEROLM_RUN, zw["ids"], {c: zw[k] for k, c in ZEROLM_COLUMNS.items()})
    meta = {"dtype": dtype, "torch": torch_version, "machine": machine, "text_fill": values.get("text_fill"),
            "runs": {label: {"batch": values[label]["batch"], "proxies": [p for p in proxies if p in values[label]],
                             "seconds": round(values[label]["seconds"], 3), "tokenizer": values[label]["tokenizer"]}
                     for label in labels}}
    schema = pa.schema([("run", pa.string()), ("id", pa.int64()), *[(c, pa.float64()) for c in rows if c not in ("run", "id")]],
                       metadata={META_KEY: json.dumps(meta, sort_keys=True).encode()})
    table = pa.table(rows, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        write_parquet_deterministic(table, tmp)
    return describe(path)


def read(path: Path) -> dict[str, Any]:
    """The own runs' values from a companion file, in the form
    :func:`studies.published_runs.own_values` returns them."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: compute the page's own runs first "
                                "(python -m studies.published --own-only)")
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[META_KEY])
    df = table.to_pandas()
    out: dict[str, Any] = {}
    for label, info in meta["runs"].items():
        part = df[df["run"] == label]
        out[label] = {"ids": part["id"].astype(int).tolist(), "batch": info["batch"], "seconds": info["seconds"],
                      "tokenizer": info["tokenizer"], **{p: part[p].astype(float).tolist() for p in info["proxies"]}}
    part = df[df["run"] == ZEROLM_RUN]
    if len(part):
        out[ZEROLM_RUN] = {"ids": part["id"].astype(int).tolist(),
                           **{k: part[c].astype(float).tolist() for k, c in ZEROLM_COLUMNS.items()}}
    if meta.get("text_fill") is not None:
        out["text_fill"] = meta["text_fill"]
    return out


def describe(path: Path) -> dict[str, Any]:
    """What the page's JSON records of its companion file: its name, sha256, rows, dtype."""
    import pyarrow.parquet as pq

    meta = json.loads(pq.read_schema(path).metadata[META_KEY])
    return {"file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "rows": pq.read_metadata(path).num_rows, "dtype": meta["dtype"], "torch": meta["torch"],
            "machine": meta["machine"]}
