"""Build the hardware-objectives table: CPU latency (batch 1 and 32, sequence 128), peak
memory and FLOPs for all 500 benchmark archs under each of the three semantics, plus a
run-to-run noise study, on this machine.

    python -m nasbench_bert.builders.hardware [--out DIR] [--cache data/hardware-cache]
        [--jobs 2] [--executor local|ray] [--ray-address A] [--semantics all|NAMES]
        [--quick] [--noise-archs 8] [--noise-passes 4] [--docs docs/hardware.md]

Writes ``flexibert_hardware.parquet`` (one row per arch id and semantics, keyed by
``arch_id`` with ``arch_sha``, the sha256 prefix of the canonical arch string, so that a
table can never be joined to the wrong arch) and ``flexibert_hardware.json`` (the
machine, the settings, the sweep's wall time and the noise study), both atomically,
into ``--out`` (default ``$NASBENCH_BERT_HARDWARE``, else ``<user cache>/measured``).
They are build output, never committed: a measurement belongs to its machine.
``nasbench-bert build-data --force`` joins them into the data folder as the
``flexibert_hardware`` table with the machine in the manifest; ``query`` results then
carry the figures. Measured models are cached one part each under ``--cache``: an
interrupted build resumes. See :mod:`nasbench_bert.hardware` for what each figure means.

``--device cuda`` measures on a GPU instead (CUDA events, ``max_memory_allocated``: see
:mod:`nasbench_bert.hardware_gpu`) into ``flexibert_hardware_gpu.parquet`` / ``.json``,
a table of its own with the GPU's objectives (``latency_gpu_b1_ms``, ...) and name, never
joined into the CPU table; it writes no docs page (the GPU figures of the docs come from
``bench/device_check.py``'s figures JSON, ``studies/device_figures.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

TABLE_FILE = "flexibert_hardware.parquet"
META_FILE = "flexibert_hardware.json"
#: the GPU measurement's files (``--device cuda``): a table of its own, never the CPU's
GPU_TABLE_FILE = "flexibert_hardware_gpu.parquet"
GPU_META_FILE = "flexibert_hardware_gpu.json"
#: the figures of the run-to-run noise study (on a GPU: their ``_gpu_`` columns)
_NOISE_FIGURES = ("latency_b1_ms", "latency_b32_ms", "peak_memory_b1_mib", "peak_memory_b32_mib", "flops_per_seq")
#: integer columns of either table (the rest are float64, the GPU's name a string)
_INT_COLUMNS = ("flops_per_seq", "num_params", "threads")


def to_table(df: pd.DataFrame, gpu: bool = False) -> pa.Table:
    """The measured sweep (``hardware.measure_many`` over ids) as the measurement table
    (``gpu``: the GPU sweep's columns)."""
    from nasbench_bert.data.hardware_table import arch_sha
    from nasbench_bert.hardware import HARDWARE_COLUMNS
    from nasbench_bert.hardware_gpu import HARDWARE_GPU_COLUMNS

    bad = df[df["error"].notna()]
    if len(bad):
        raise RuntimeError(f"{len(bad)} models failed to measure, e.g. {bad.iloc[0]['arch']}: {bad.iloc[0]['error']}")
    out = pd.DataFrame({"arch_id": df["id"].astype("int32"), "arch_sha": [arch_sha(a) for a in df["arch"]],
                        "semantics": df["semantics"].astype(str), "model_key": df["model_key"].astype(str),
                        "shared": df["shared"].astype(bool)})
    for c in ([*HARDWARE_GPU_COLUMNS, "threads", "device"] if gpu else HARDWARE_COLUMNS):
        out[c] = df[c].astype(str) if c in ("gpu", "device") else df[c].astype("int64" if c in _INT_COLUMNS else "float64")
    out["settings"] = df["settings"].astype(str)
    out = out.sort_values(["arch_id", "semantics"], kind="stable").reset_index(drop=True)
    t = pa.Table.from_pandas(out, preserve_index=False).replace_schema_metadata(None)
    # plain Arrow strings, as table_columns.json declares (pandas may hand over large_string)
    return t.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) else f.type)
                             for f in t.schema]))


def release_archs(release: str) -> pd.DataFrame:
    """``id``, ``arch``, ``num_params_as_trained`` and ``glue`` of the release's archs, read from the
    release files themselves: the data folder cannot be built before the measurement it
    includes exists."""
    import tempfile

    from nasbench_bert.data.release_files import fetch_release
    from nasbench_bert.data.release_flexibert import flexibert_table

    with tempfile.TemporaryDirectory(prefix="nasbench-bert-hw-") as tmp:
        rel = fetch_release(release, Path(tmp))
        entries = json.loads((rel / "training-free-nas/data/BERT_benchmark.json").read_text(encoding="utf-8"))
    return flexibert_table(entries).select(["id", "arch", "num_params_as_trained", "glue"]).to_pandas()


def noise_archs(archs: pd.DataFrame, n: int) -> list[str]:
    """``n`` archs spread over the size range: the benchmark's archs sorted by as-trained
    parameter count, taken at even quantiles."""
    df = archs.sort_values(["num_params_as_trained", "id"], kind="stable")
    idx = [round(i * (len(df) - 1) / max(n - 1, 1)) for i in range(n)]
    return [str(df.iloc[i]["arch"]) for i in idx]


def pareto_front(glue: Any, latency: Any) -> set[int]:
    """Positions of the archs no other arch beats on both GLUE (higher) and latency (lower)."""
    import numpy as np

    pts = np.c_[-np.asarray(glue, float), np.asarray(latency, float)]
    return {i for i, p in enumerate(pts) if not ((pts <= p).all(axis=1) & (pts < p).any(axis=1)).any()}


def semantics_section(t: pd.DataFrame, glue: pd.Series) -> list[str]:
    """Why the semantics matter for hardware: latency rankings and GLUE-latency Pareto
    fronts under each semantics, against the model that earned the scores."""
    from scipy.stats import kendalltau

    lat = t.pivot(index="id", columns="semantics", values="latency_b1_ms").sort_index()
    if "as_trained" not in lat.columns:
        return []
    lat = lat.dropna()
    g = glue.loc[lat.index].to_numpy()
    fronts = {s: pareto_front(g, lat[s].to_numpy()) for s in lat.columns}
    true = fronts["as_trained"]
    lines = ["", "## Which model's latency", "",
             "The GLUE scores belong to the `as_trained` model; a GLUE-latency trade-off is only real with that "
             "model's latency. Kendall tau of the batch-1 latency ranking against `as_trained`, and the GLUE-latency "
             "Pareto front over the 500 ids under each semantics:", "",
             "| semantics | latency tau vs `as_trained` | Pareto-front archs | of them on the `as_trained` front |",
             "| --- | ---: | ---: | ---: |"]
    for s in [c for c in ("as_trained", "as_specified", "authors") if c in lat.columns]:
        tau = kendalltau(lat["as_trained"], lat[s])[0]
        lines.append(f"| `{s}` | {tau:.3f} | {len(fronts[s])} | {len(fronts[s] & true)} |")
    lines += ["", f"GLUE against `as_trained` batch-1 latency: Kendall tau {kendalltau(g, lat['as_trained'])[0]:.3f} "
              "(bigger models score higher and run slower). Latency differences within the run-to-run noise below "
              "can move an arch on or off a front; the counts are for the table as measured."]
    return lines


def render(df: pa.Table, meta: dict[str, Any], glue: pd.Series | None = None, sha256: str | None = None) -> str:
    """docs/hardware.md: the figures per semantics, the noise, the machine; with ``glue``
    (indexed by id) also the Pareto fronts under each semantics; with ``sha256`` the
    measurement's checksum (which measurement the page was rendered from)."""
    t = df.to_pandas()
    if "id" not in t.columns:
        t = t.rename(columns={"arch_id": "id"})
    m = meta["machine"]
    lines = [
        "# Hardware objectives",
        "",
        "Generated by `python -m nasbench_bert.builders.hardware`; do not edit by hand. What each figure means is in "
        "`nasbench_bert.hardware`'s docstring: encoder forward in eval mode, sequence 128, median of timed repeats "
        "after warm-up, peak memory = weights + the allocator's peak during one forward, FLOPs from torch's counter.",
        "",
        f"**Machine.** {m['cpu']}, {m['usable_cpus']} usable CPUs, {m['memory']} memory, {m['platform']}, "
        f"Python {m['python']}, torch {m['torch']}. Torch threads per measurement: {meta['settings']['threads']}; "
        f"{meta['jobs']} measurement process(es) side by side ({meta['executor']} executor). "
        f"Sweep: {meta['models_measured']} distinct models for {t.shape[0]} rows, "
        f"{meta['measure_seconds'] / 60:.0f} process-minutes of measurement, measured {meta['date']}."
        + (f" Measurement `{TABLE_FILE}` sha256 `{sha256}`." if sha256 else ""),
        "",
        "## Figures over the 500 archs",
        "",
        "| semantics | distinct models | latency b1 ms (median [min, max]) | latency b32 ms (median [min, max]) | "
        "peak memory b32 MiB (median [min, max]) | GFLOPs per sequence (median [min, max]) |",
        "| --- | ---: | --- | --- | --- | --- |",
    ]

    def rng(s: pd.Series, f: str) -> str:
        return f"{s.median():{f}} [{s.min():{f}}, {s.max():{f}}]"

    for sem, g in t.groupby("semantics", sort=False):
        lines.append(f"| `{sem}` | {g['model_key'].nunique()} | {rng(g['latency_b1_ms'], '.1f')} | "
                     f"{rng(g['latency_b32_ms'], '.0f')} | {rng(g['peak_memory_b32_mib'], '.1f')} | "
                     f"{rng(g['flops_per_seq'] / 1e9, '.2f')} |")
    lines += ["", "Latency against FLOPs, per semantics (Spearman rho over distinct models): "
              + ", ".join(f"`{sem}` b1 {g.drop_duplicates('model_key')[['latency_b1_ms', 'flops_per_seq']].corr('spearman').iloc[0, 1]:.3f}"
                          f" / b32 {g.drop_duplicates('model_key')[['latency_b32_ms', 'flops_per_seq']].corr('spearman').iloc[0, 1]:.3f}"
                          for sem, g in t.groupby("semantics", sort=False)) + ".",
              *(semantics_section(t, glue) if glue is not None else []),
              "", "## Run-to-run noise", "",
              f"{meta['noise']['archs']} archs spread over the as-trained size range, each measured "
              f"{meta['noise']['passes']} times per semantics in interleaved passes (a fresh model and a fresh "
              "measurement each time), under the sweep's conditions. The coefficient of variation is the standard "
              "deviation over the passes divided by their mean, per arch.", "",
              "| semantics | figure | median CV | max CV | max max/min |", "| --- | --- | ---: | ---: | ---: |"]
    for r in meta["noise"]["summary"]:
        lines.append(f"| `{r['semantics']}` | {r['figure']} | {100 * r['median_cv']:.2f} % | {100 * r['max_cv']:.2f} % | "
                     f"{r['max_ratio']:.3f} |")
    lines += ["", "Peak memory and FLOPs are deterministic (same model, same input shapes); latency is not. Differences "
              "in latency smaller than the max CV between two archs are within noise. This is the CPU's table; "
              "a GPU's (`--device cuda`: CUDA events, `max_memory_allocated`) is a table of its own, unmeasured here: no "
              "GPU was available to this build.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nasbench_bert.builders.hardware", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None,
                    help="folder for the table and its JSON sidecar (default: $NASBENCH_BERT_HARDWARE, else <cache>/measured)")
    ap.add_argument("--semantics", default="all", help="'all' or names (comma-separated): authors, as_trained, as_specified")
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats (batch 1: 3, batch 32: 1, one warm-up each): a CI-sized check, not figures to publish")
    ap.add_argument("--cache", default="data/hardware-cache", help="one JSON part per measured model (resumable)")
    ap.add_argument("--jobs", type=int, default=1, help="local worker processes, one torch thread each")
    ap.add_argument("--executor", default="local", choices=["local", "ray"], help="this machine, or one Ray task per model")
    ap.add_argument("--ray-address", default=None, help="Ray cluster address (default: join or start a local instance)")
    ap.add_argument("--noise-archs", type=int, default=8, help="archs in the run-to-run noise study")
    ap.add_argument("--noise-passes", type=int, default=4, help="measurements per arch and semantics in the noise study")
    ap.add_argument("--docs", default="docs/hardware.md", help="the generated docs page")
    ap.add_argument("--ids", default=None, help="a subset of ids, e.g. 0-9 (default: all 500)")
    ap.add_argument("--release", default=None, help="release files (default: $NASBENCH_BERT_RELEASE, else the pinned GitHub commits)")
    ap.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:<i> or auto: a GPU writes the GPU table "
                    f"({GPU_TABLE_FILE}) and no docs page")
    a = ap.parse_args(argv)
    import pyarrow.parquet as pq

    from nasbench_bert import __version__
    from nasbench_bert import hardware as hw
    from nasbench_bert.atomic import atomic_path
    from nasbench_bert.data.resolve import release_source

    from nasbench_bert.data.hardware_table import hardware_dir
    from nasbench_bert.data.tables import sha256_file
    from nasbench_bert.semantics import get_semantics

    from nasbench_bert.devices import check_device, is_cuda

    device = check_device(a.device, executor=a.executor, name="--device")
    gpu = is_cuda(device)
    sems = hw.ALL_SEMANTICS if a.semantics == "all" else tuple(get_semantics(x).name for x in a.semantics.split(","))
    settings = (hw.MeasureSettings(repeats=(3, 1), warmup=(1, 1)) if a.quick else
                hw.GPU_SETTINGS if gpu else hw.MeasureSettings())
    archs = release_archs(a.release or release_source())
    if a.ids:
        lo, _, hi = a.ids.partition("-")
        archs = archs[archs["id"].between(int(lo), int(hi or lo))]
    df = hw.measure_many(list(archs["arch"]), sems, settings=settings, cache=a.cache, jobs=a.jobs, executor=a.executor,
                         ray_address=a.ray_address, progress=True, device=device)
    df["id"] = [i for i in archs["id"] for _ in sems]  # rows come arch by arch, semantics by semantics
    # process time summed over the distinct models (a resumed sweep has no single wall time)
    measure_seconds = float(df.drop_duplicates(["semantics", "model_key"])["seconds"].sum())
    table = to_table(df, gpu)
    summary = []
    chosen = noise_archs(archs, a.noise_archs)
    for sem in sems:
        nd = hw.noise(chosen, sem, passes=a.noise_passes, settings=settings, jobs=a.jobs, device=device)
        figures = [c.replace("_b", "_gpu_b", 1) if gpu and c != "flops_per_seq" else c for c in _NOISE_FIGURES]
        for r in hw.noise_summary(nd, figures).to_dict(orient="records"):
            summary.append({"semantics": sem, **r})
    meta = {"machine": hw.machine(device), "settings": json.loads(table.column("settings")[0].as_py()), "jobs": a.jobs,
            "executor": a.executor, "models_measured": int(df.drop_duplicates(["semantics", "model_key"]).shape[0]),
            "measure_seconds": measure_seconds, "date": dt.date.today().isoformat(),
            "noise": {"archs": len(chosen), "passes": a.noise_passes, "summary": summary},
            "licence": "CC BY 4.0 (measurements by nasbench-bert)", "package_version": __version__}
    out = Path(a.out) if a.out else hardware_dir()
    out.mkdir(parents=True, exist_ok=True)
    table_file, meta_file = (GPU_TABLE_FILE, GPU_META_FILE) if gpu else (TABLE_FILE, META_FILE)
    with atomic_path(out / table_file) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    with atomic_path(out / meta_file) as tmp:
        Path(tmp).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    if gpu:  # its own table; the docs' GPU figures come from bench/device_check.py
        print(f"wrote {out / table_file} ({table.num_rows} rows, {meta['machine']['gpu']}); it is not joined into "
              f"the CPU table")
        return 0
    md = render(table, meta, archs.set_index("id")["glue"], sha256_file(out / TABLE_FILE))
    if a.docs:
        with atomic_path(Path(a.docs)) as tmp:
            Path(tmp).write_text(md)
    print(md)
    print(f"wrote {out / TABLE_FILE}; include it with `nasbench-bert build-data --force --hardware {out}`")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
