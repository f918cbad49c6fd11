"""Every accelerator figure the project needs, from one prepared script (issue 36).

    python bench/device_check.py --data DIR --release DIR --out DIR [--commit SHA]   # on a CUDA machine
    python bench/device_check.py --data DIR --release DIR --out DIR --part proxy-values
    python bench/device_check.py --dry-run --out DIR        # the same steps on the CPU, tiny sizes (CI)

A lent GPU comes rarely, for minutes, in one call (``/work/.library/device``): this script
is what that call runs, so the first GPU the project gets measures everything at once.
Steps (``--part``; ``all`` runs 1-5 in this order, ``proxy-values`` is a call of its own):

1. ``tests``: the ``cuda``-marked tests (the GPU-vs-CPU agreement of the proxies,
   tests/test_device_agreement.py, and the builders' GPU tolerance tests), their measured
   differences and taus kept in the figures;
2. ``pretrain``: ``bench/bench_pretrain.py`` on the small, median and largest arch, eager
   fp32 and the accelerated set: steps/s, tokens/s, MFU against the device's dense bf16
   (fp32) peak, projected hours for 100,000 steps at 128 x 128;
3. ``long-run``: 2,000 steps of the paper recipe (batch 128 x 128, the accelerated set) on
   the median arch, its loss curve (20-step means), and its first 20 steps against a CPU
   fp32 run of the same recipe made here (no 2,000-step CPU curve exists: about 7 h on a
   CPU), within the builders' documented GPU tolerance (``GPU_WINDOW_RTOL`` of
   tests/test_builders_accel.py, a 20-step mean);
4. ``proxies``: ``proxies.evaluate`` of a forward-only (head confidence) and a gradient
   proxy (synaptic diversity) on 500 ids x 3 semantics (1,249 distinct models), and the
   paper's 15 proxies on 500 ids, each with one process and with worker processes sharing
   the GPU: seconds and models/s (which is faster decides how a GPU sweep runs);
5. ``hardware``: GPU latency (CUDA events) and peak memory of 50 archs x 3 semantics;
6. ``proxy-values``: the proxy-values table (float64) built on the GPU
   (:func:`nasbench_bert.proxies.values.build`), written with its provenance.

Figures go to ``OUT/device_figures.json`` after every step (a call stopped at its time
limit keeps what finished): the machine, GPU, driver, torch and CUDA versions and the
commit (``--commit``: the device machine gets the tree without ``.git``), then each
step's figures, status and seconds. ``studies/device_figures.py`` turns that file into the
GPU sections of docs/figures.md, docs/builders.md and the README.

**Standard packages only**: torch, numpy, pandas, pyarrow, scipy, and what a step names
in :data:`NEEDS` (loading the tables validates them with jsonschema; pretraining trains a
tokenizer with tokenizers; the tests run under pytest); a step whose package is missing
is skipped with one line naming the wheel to carry. Nothing else is imported on these
paths (tests/test_device_check.py runs a part with the others made unimportable).
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import importlib.machinery
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _source_tree  # noqa: E402,F401  (nasbench_bert.builders / .schemas from a checkout that is not installed)

ROOT = _source_tree.ROOT
FIGURES = "device_figures.json"
#: the packages beyond torch, numpy, pandas, pyarrow and scipy each step imports
NEEDS: dict[str, tuple[str, ...]] = {
    "tests": ("pytest", "jsonschema", "networkx", "tokenizers", "rich"),  # rich: conftest builds the tables
    "pretrain": ("jsonschema", "tokenizers"),
    "long-run": ("jsonschema", "tokenizers"),
    "proxies": ("jsonschema",),
    "hardware": ("jsonschema",),
    "proxy-values": ("jsonschema", "networkx"),
}
ALL = ("tests", "pretrain", "long-run", "proxies", "hardware")
PARTS = (*ALL, "proxy-values")


@dataclass(frozen=True)
class Sizes:
    """How big each step is: the issue's sizes on a GPU, tiny ones for ``--dry-run``."""

    agreement: dict[str, str]  # the NASBENCH_BERT_AGREEMENT_* variables of the tests
    pretrain_args: tuple[str, ...]
    accelerated_args: tuple[str, ...]
    long_steps: int
    long_config: dict[str, Any]
    reference_steps: int
    ids: tuple[int, ...]
    paper_ids: tuple[int, ...]
    proxy_batch: dict[str, int] | None
    workers: tuple[int, ...]
    hardware_ids: tuple[int, ...]
    hardware_quick: bool
    values: dict[str, Any] = field(default_factory=dict)


FULL = Sizes({}, (), ("--accelerated",), 2000, {}, 20, tuple(range(500)), tuple(range(500)), None, (1, 4),
             tuple(range(0, 500, 10)), False)
DRY = Sizes({"DEVICE": "cpu", "ARCHS64": "2", "ARCHS32": "2", "RECIPES": "1", "BATCH": "2x16"},
            ("--quick", "--sizes", "small", "--no-hf"), ("--quick", "--sizes", "small", "--no-hf", "--precision", "bf16",
                                                         "--attention", "sdpa", "--adamw", "fused"),
            6, {"batch_size": 8, "seq_len": 32, "warmup_steps": 2, "vocab_size": 3000, "replicas": 8}, 4,
            (0, 1, 2, 3), (0, 1), {"batch_size": 2, "seq_len": 16}, (1, 2), (0, 1), True,
            {"ids": [0, 1], "recipes": 1, "semantics": ["as_trained"]})


def installed(name: str) -> bool:
    """Whether ``name`` can be imported in this process (a forbidden one, see ``_source_tree``, cannot)."""
    return importlib.util.find_spec(name) is not None


def missing(step: str) -> str | None:
    """One line naming the wheels ``step`` needs that this Python lacks, or None (looked up
    on the path itself: a step's own needs are never forbidden in the process it runs in)."""
    gone = [m for m in NEEDS[step] if importlib.machinery.PathFinder.find_spec(m) is None]
    if not gone:
        return None
    return (f"step {step!r} skipped: it needs {', '.join(gone)}, not installed in this Python ({sys.executable}); "
            f"carry the wheel(s) (pip download --no-deps {' '.join(gone)} ...) or pip install {' '.join(gone)}")


def driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def machine(device: str, commit: str | None) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                            "torch": torch.__version__, "cuda": torch.version.cuda, "device": device, "commit": commit}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    multiprocessors=props.multi_processor_count, driver=driver_version())
    return info


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def child_env(extra: dict[str, str], step: str) -> dict[str, str]:
    """The environment of a step's subprocess: the checkout first on the path (with
    ``_source_tree``), unbuffered output, the packages ``step`` needs taken off the
    forbidden list (CI's check of :data:`NEEDS`), and ``extra``."""
    env = {**os.environ, **extra, "PYTHONUNBUFFERED": "1"}
    forbidden = [n for n in env.get("NASBENCH_BERT_FORBID_IMPORTS", "").split(",") if n and n not in NEEDS[step]]
    env["NASBENCH_BERT_FORBID_IMPORTS"] = ",".join(forbidden)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "bench"), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


# -- the steps ----------------------------------------------------------------------------------
def step_tests(a: argparse.Namespace, sz: Sizes, device: str) -> dict[str, Any]:
    """1: the cuda-marked tests; pass/fail counts and the agreement they measured."""
    if not a.release:
        return {"status": "skipped", "reason": "the tests' conftest reads the release files: pass --release DIR"}
    report = Path(tempfile.mkdtemp(prefix="device-tests-"))
    junit = report / "junit.xml"
    env = child_env({"NASBENCH_BERT_RELEASE": str(a.release), "NASBENCH_BERT_DEVICE_REPORT": str(report),
                     **{f"NASBENCH_BERT_AGREEMENT_{k}": v for k, v in sz.agreement.items()}}, "tests")
    cmd = [sys.executable, "-m", "pytest", "-p", "_source_tree", "-p", "no:cacheprovider", "-q", "-rs", "-m", "cuda",
           "tests/test_device_agreement.py", "tests/test_builders_accel.py", f"--junitxml={junit}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, text=True, capture_output=True)
    print(proc.stdout[-4000:], proc.stderr[-2000:], sep="\n", flush=True)
    counts = junit_counts(junit)
    agreement = json.loads((report / "agreement.json").read_text()) if (report / "agreement.json").is_file() else {}
    ok = proc.returncode == 0
    return {"status": "ok" if ok else "failed", "returncode": proc.returncode, **counts, "agreement": agreement,
            "command": " ".join(cmd[2:])}


def junit_counts(path: Path) -> dict[str, int]:
    import xml.etree.ElementTree as ET

    if not path.is_file():
        return {}
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    get = lambda k: int(suite.get(k, 0)) if suite is not None else 0  # noqa: E731
    return {"tests": get("tests"), "failures": get("failures") + get("errors"), "skipped": get("skipped")}


def step_pretrain(a: argparse.Namespace, sz: Sizes, device: str) -> dict[str, Any]:
    """2: bench_pretrain eager fp32 and the accelerated set, its figures as JSON."""
    runs = []
    for label, extra in (("eager fp32", sz.pretrain_args), ("accelerated", sz.accelerated_args)):
        out = Path(tempfile.mkdtemp(prefix="device-pretrain-")) / "pretrain.json"
        cmd = [sys.executable, str(ROOT / "bench" / "bench_pretrain.py"), "--device", device, "--corpus", a.corpus,
               *extra, "--json", str(out)]
        if "--no-hf" not in cmd and not installed("transformers"):
            cmd.append("--no-hf")
            print("transformers is not installed: the comparison with its ELECTRA is left out", flush=True)
        proc = subprocess.run(cmd, cwd=ROOT, env=child_env({}, "pretrain"), text=True, capture_output=True)
        print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n", flush=True)
        runs.append({"label": label, "returncode": proc.returncode, **(json.loads(out.read_text()) if out.is_file() else {})})
    ok = all(r["returncode"] == 0 for r in runs)
    return {"status": "ok" if ok else "failed", "runs": runs}


def gpu_window_rtol() -> float:
    """The builders' GPU-vs-CPU tolerance on 20-step mean losses, read from the test that
    checks it (one number, stated once: tests/test_builders_accel.py, docs/builders.md)."""
    tree = ast.parse((ROOT / "tests" / "test_builders_accel.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "GPU_WINDOW_RTOL" for t in node.targets):
            return float(ast.literal_eval(node.value))
    raise RuntimeError("GPU_WINDOW_RTOL not found in tests/test_builders_accel.py")


class _Enough(Exception):
    pass


def step_long_run(a: argparse.Namespace, sz: Sizes, device: str) -> dict[str, Any]:
    """3: the paper recipe on the median arch; the first steps against a CPU fp32 run."""
    import dataclasses

    import numpy as np

    from nasbench_bert.builders.pretrain import ACCELERATED, PretrainConfig, pretrain
    from nasbench_bert.text import load_tokenizer, read_corpus

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_pretrain import pick_archs

    arch, _ = pick_archs(["median"])["median"] if not a.dry_run else pick_archs(["small"])["small"]
    tok = load_tokenizer(read_corpus(a.corpus), sz.long_config.get("vocab_size", 30522))
    fast = {k: ACCELERATED[k] for k in ("precision", "attention", "adamw", "compile", "pretokenized", "prefetch")}
    if a.dry_run:  # the accelerated set without compilation (minutes of C++ on a CPU)
        fast["compile"] = False
    cfg = PretrainConfig(steps=sz.long_steps, corpus=a.corpus, **sz.long_config, **fast)
    t0 = time.perf_counter()
    run = pretrain(arch, cfg, tokenizer=tok, device=device)
    seconds = time.perf_counter() - t0
    ref: list[float] = []

    def keep(step: int, loss: float) -> None:
        ref.append(float(loss))
        if len(ref) >= sz.reference_steps:
            raise _Enough

    plain = dataclasses.replace(cfg, precision="fp32", attention="eager", adamw="default", compile=False,
                                pretokenized=False, prefetch=0)
    try:  # the same total steps (the learning-rate schedule depends on them), stopped early
        pretrain(arch, plain, tokenizer=tok, device="cpu", on_step=keep)
    except _Enough:
        pass
    n = len(ref)
    gpu_mean, cpu_mean = float(np.mean(run.losses[:n])), float(np.mean(ref))
    rel, tol = abs(gpu_mean - cpu_mean) / cpu_mean, gpu_window_rtol()
    losses = np.asarray(run.losses, float)
    w = 20 if len(losses) >= 40 else 2
    windows = losses[: len(losses) // w * w].reshape(-1, w).mean(1)
    return {"status": "ok" if rel <= tol else "failed", "arch": str(arch), "steps": len(run.losses),
            "config": {"batch_size": cfg.batch_size, "seq_len": cfg.seq_len, **fast}, "seconds": seconds,
            "steady_tokens_per_second": run.steady_tokens_per_second,
            "steps_per_second": run.steady_tokens_per_second / (cfg.batch_size * cfg.seq_len),
            "first_loss": float(losses[0]), "last_loss": float(losses[-1]), "window": w,
            "window_means": [round(float(x), 5) for x in windows],
            "reference": {"steps": n, "device": "cpu", "precision": "fp32", "gpu_mean": gpu_mean, "cpu_mean": cpu_mean,
                          "relative_difference": rel, "tolerance": tol}}


def step_proxies(a: argparse.Namespace, sz: Sizes, device: str) -> dict[str, Any]:
    """4: evaluate a forward-only and a gradient proxy, and the paper's 15, per worker count."""
    from nasbench_bert import Benchmark, proxies

    bench = Benchmark.load(progress=False)
    out: dict[str, Any] = {"status": "ok", "runs": []}
    for jobs in sz.workers:
        for name in ("head_confidence", "synaptic_diversity"):
            t0 = time.perf_counter()
            ev = proxies.evaluate(name, semantics="all", benchmarks="flexibert", ids=list(sz.ids), tasks=False,
                                  bootstrap=0, progress=False, bench=bench, batch=sz.proxy_batch, jobs=jobs, device=device)
            s = time.perf_counter() - t0
            out["runs"].append({"what": f"evaluate {name}", "ids": len(sz.ids), "semantics": 3, "jobs": jobs,
                                "models": ev.computed, "seconds": s, "models_per_s": ev.computed / s})
        t0 = time.perf_counter()
        df = proxies.compute(list(sz.paper_ids), "paper", semantics="as_trained", bench=bench, batch=sz.proxy_batch,
                             jobs=jobs, device=device)
        s = time.perf_counter() - t0
        out["runs"].append({"what": "compute paper (15 proxies)", "ids": len(sz.paper_ids), "semantics": 1, "jobs": jobs,
                            "models": len(df), "seconds": s, "models_per_s": len(df) / s,
                            "errors": int(df.error.notna().sum())})
    print(json.dumps(out["runs"], indent=1), flush=True)
    return out


def step_hardware(a: argparse.Namespace, sz: Sizes, device: str) -> dict[str, Any]:
    """5: GPU latency and peak memory (the CPU's in a dry run) of 50 archs x 3 semantics."""
    from nasbench_bert import Benchmark, hardware

    bench = Benchmark.load(progress=False)
    settings = hardware.MeasureSettings(repeats=(3, 1), warmup=(1, 1)) if sz.hardware_quick else None
    t0 = time.perf_counter()
    df = hardware.measure_many(list(sz.hardware_ids), settings=settings, bench=bench, device=device)
    s = time.perf_counter() - t0
    if df.error.notna().any():
        return {"status": "failed", "error": str(df.error.dropna().iloc[0]), "failed_models": int(df.error.notna().sum())}
    gpu = device.startswith("cuda")
    cols = [c for c in ("latency_gpu_b1_ms", "latency_gpu_b32_ms", "peak_memory_gpu_b32_mib") if gpu] or \
        ["latency_b1_ms", "latency_b32_ms", "peak_memory_b32_mib"]
    per = {sem: {c: {"median": float(g[c].median()), "min": float(g[c].min()), "max": float(g[c].max())} for c in cols}
           for sem, g in df.groupby("semantics")}
    return {"status": "ok", "archs": len(sz.hardware_ids), "seconds": s,
            "models": int(df.drop_duplicates(["semantics", "model_key"]).shape[0]),
            "gpu": str(df["gpu"].iloc[0]) if gpu else None, "figures": per}


def step_proxy_values(a: argparse.Namespace, sz: Sizes, device: str) -> dict[str, Any]:
    """6: the proxy-values table built here, written with its provenance into OUT."""
    from nasbench_bert import Benchmark
    from nasbench_bert.data.proxy_values import write_standalone
    from nasbench_bert.proxies import values

    bench = Benchmark.load(progress=False)
    kw: dict[str, Any] = {}
    if sz.values:
        kw = {"ids": sz.values["ids"], "semantics": sz.values["semantics"],
              "recipes": [h for h, _ in values.nlp_recipes(bench)[: sz.values["recipes"]]]}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="device-values-") as cache:  # parts stay here: OUT holds what comes back
        res = values.build(bench, cache=cache, device=device, **kw)
    s = time.perf_counter() - t0
    meta = write_standalone(res.to_arrow(), res.provenance, Path(a.out) / "proxy_values.parquet")
    return {"status": "ok", "seconds": s, "rows": int(len(res.frame)), "proxies": len(res.columns),
            "sha256": meta.get("sha256"), "dtype": res.provenance.get("dtype")}


STEPS: dict[str, Callable[[argparse.Namespace, Sizes, str], dict[str, Any]]] = {
    "tests": step_tests, "pretrain": step_pretrain, "long-run": step_long_run, "proxies": step_proxies,
    "hardware": step_hardware, "proxy-values": step_proxy_values}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for device_figures.json (and the proxy-values table)")
    ap.add_argument("--data", default=None, help="the tables (a build-data folder); default: $NASBENCH_BERT_DATA, else "
                    "the usual resolution (no network on a lent machine: pass it)")
    ap.add_argument("--release", default=os.environ.get("NASBENCH_BERT_RELEASE"),
                    help="release files: the tests' conftest and the RTE pretraining corpus (default $NASBENCH_BERT_RELEASE)")
    ap.add_argument("--corpus", default=None, help="pretraining text (text:<file>; default: the RTE sentences of --release)")
    ap.add_argument("--part", default="all", choices=("all", *PARTS), help="which step (default all: 1-5)")
    ap.add_argument("--device", default="cuda", help="the accelerator (default cuda; --dry-run uses the CPU)")
    ap.add_argument("--commit", default=None, help="the commit measured (default: git rev-parse HEAD where .git exists)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="start no further step after this many seconds (the rest is marked 'not started')")
    ap.add_argument("--dry-run", action="store_true", help="the same steps on the CPU in tiny sizes (CI)")
    a = ap.parse_args(argv)
    from nasbench_bert.devices import check_device

    device = check_device("cpu" if a.dry_run else a.device)
    sz = DRY if a.dry_run else FULL
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.data:
        os.environ["NASBENCH_BERT_DATA"] = str(Path(a.data).resolve())
    if a.release:
        a.release = str(Path(a.release).resolve())
    if a.corpus is None and a.release:
        a.corpus = f"text:{rte_sentences(Path(a.release), out)}"
    figures: dict[str, Any] = {"format_version": 1, "dry_run": a.dry_run, "date": dt.date.today().isoformat(),
                               "machine": machine(device, a.commit or git_commit()), "steps": {}}
    parts = ALL if a.part == "all" else (a.part,)
    t_all = time.perf_counter()
    for step in parts:
        if a.budget_s is not None and time.perf_counter() - t_all > a.budget_s:
            figures["steps"][step] = {"status": "not started", "reason": f"--budget-s {a.budget_s:g} s spent"}
        elif (why := missing(step)) is not None or (step in ("pretrain", "long-run") and not a.corpus):
            why = why or f"step {step!r} skipped: no pretraining text (pass --corpus text:<file> or --release DIR)"
            print(why, flush=True)
            figures["steps"][step] = {"status": "skipped", "reason": why}
        else:
            print(f"=== {step} ({time.perf_counter() - t_all:.0f} s)", flush=True)
            t0 = time.perf_counter()
            try:
                res = STEPS[step](a, sz, device)
            except Exception as e:  # one broken step must not lose the others' figures
                res = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
            figures["steps"][step] = {**res, "step_seconds": round(time.perf_counter() - t0, 1)}
            release_gpu()
        figures["total_seconds"] = round(time.perf_counter() - t_all, 1)
        (out / FIGURES).write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    summary = {k: (v["status"], v.get("step_seconds")) for k, v in figures["steps"].items()}
    print(f"device_check: {json.dumps(summary)}; {figures['total_seconds']} s; wrote {out / FIGURES}", flush=True)
    return 0 if all(v["status"] in ("ok", "skipped", "not started") for v in figures["steps"].values()) else 1


def rte_sentences(release: Path, out: Path) -> Path:
    """The RTE sentences of the release as one text file (the benchmarks' default corpus)."""
    import csv

    rows = list(csv.reader(open(release / "glue-rte" / "train.tsv", newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))
    path = Path(tempfile.mkdtemp(prefix="device-corpus-")) / "rte_sentences.txt"
    path.write_text("\n".join(f"{r[1]} {r[2]}" for r in rows[1:]))
    return path


def release_gpu() -> None:
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


if __name__ == "__main__":
    raise SystemExit(main())
