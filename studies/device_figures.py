"""The GPU sections of docs/figures.md, docs/builders.md and the README, rendered from the
figures JSON of one run of ``bench/device_check.py`` (issue 36).

    python -m studies.device_figures            # write the three sections
    python -m studies.device_figures --check    # fail if a committed section is not what this makes

The JSON of a real run is committed as ``docs/device_figures.json``; each page holds its
section between ``<!-- device-figures:start -->`` and ``<!-- device-figures:end -->``.
Until a run's JSON is committed, every section says **unmeasured** and shows the
commands that measure it; a dry run's JSON (``--dry-run``: the CPU in tiny sizes) is
refused, since its figures are not a GPU's. The sections are this module's rendering of the
JSON, byte for byte (tests/test_device_figures.py checks the committed pages).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "device_figures.json"
START, END = "<!-- device-figures:start -->", "<!-- device-figures:end -->"

#: the issue's goals on one H100, printed beside the figures (never asserted)
GOALS = {"forward_only_s": 30.0, "paper_15_s": 60.0, "median_steps_per_s": 40.0, "float64_rtol": 1e-9}

COMMANDS = """```bash
# here, beforehand: the tables (no network there) and the release files the tests read, in a folder git ignores
echo /.device/ >> .git/info/exclude
nasbench-bert build-data --release ../shared/upstream --out .device/data --no-surrogate
cp -r ../shared/upstream .device/upstream
# on the GPU machine (one call; carry .device, and wheels of jsonschema if its Python lacks it):
python bench/device_check.py --data .device/data --release .device/upstream --out OUT --commit SHA --budget-s 480
python bench/device_check.py --data .device/data --release .device/upstream --out OUT2 --part proxy-values
# here: commit the figures and render this section
cp OUT/device_figures.json docs/device_figures.json && python -m studies.device_figures
```"""


def _unmeasured(what: str) -> str:
    return (f"**unmeasured**: no GPU run's figures are committed yet ({what}). `bench/device_check.py` measures "
            "every one of them in one prepared call; its dry run (the same steps on the CPU in tiny sizes) runs in "
            f"CI, so the script works when a GPU comes:\n\n{COMMANDS}")


def _machine(f: dict[str, Any]) -> str:
    m = f["machine"]
    return (f"{m.get('gpu')} ({m.get('gpu_memory_gib')} GiB, driver {m.get('driver')}), torch {m.get('torch')}, "
            f"CUDA {m.get('cuda')}, commit `{str(m.get('commit'))[:12]}`, {f['date']}")


def _step(f: dict[str, Any], name: str) -> dict[str, Any]:
    return f["steps"].get(name, {"status": "not run"})


def _status(s: dict[str, Any]) -> str | None:
    """None for a step that measured; else what the page says instead of figures."""
    return None if s.get("status") in ("ok", "failed") and "error" not in s else \
        f"not measured in this run ({s.get('status')}: {s.get('reason') or s.get('error') or 'see the JSON'})"


def pretrain_table(f: dict[str, Any]) -> list[str]:
    s = _step(f, "pretrain")
    if _status(s):
        return [f"Pretraining throughput: {_status(s)}."]
    lines = ["| arch | options | steps/s | tokens/s | MFU (dense peak) | paper run (100,000 x 128 x 128) |",
             "|---|---|---:|---:|---:|---:|"]
    for run in s.get("runs", []):
        for r in run.get("rows", []):
            mfu = "n/a" if r.get("mfu") is None else f"{100 * r['mfu']:.1f} %"
            lines.append(f"| {r['size']} | {run['label']} | {r['steps_per_s']:.1f} | {r['tokens_per_s']:,.0f} | {mfu} | "
                         f"{r['paper_run_hours']:.2f} h |")
    return lines


def long_run_line(f: dict[str, Any]) -> str:
    s = _step(f, "long-run")
    if _status(s):
        return f"The 2,000-step paper-recipe run: {_status(s)}."
    ref = s["reference"]
    verdict = "within" if ref["relative_difference"] <= ref["tolerance"] else "**outside**"
    return (f"{s['steps']:,} steps of the paper recipe on the median arch (`{s['arch']}`, bf16 set): "
            f"{s['steps_per_second']:.1f} steps/s (goal ≥ {GOALS['median_steps_per_s']:.0f}), loss {s['first_loss']:.3f} → "
            f"{s['last_loss']:.3f}; its first {ref['steps']} steps' mean loss {ref['gpu_mean']:.4f} against a CPU fp32 run "
            f"of the same recipe {ref['cpu_mean']:.4f}: {100 * ref['relative_difference']:.2f} %, {verdict} the "
            f"{100 * ref['tolerance']:.0f} % GPU tolerance.")


def proxies_table(f: dict[str, Any]) -> list[str]:
    s = _step(f, "proxies")
    if _status(s):
        return [f"Proxies on the GPU: {_status(s)}."]
    lines = ["| what | ids x semantics | processes | models | seconds | models/s |", "|---|---|---:|---:|---:|---:|"]
    for r in s["runs"]:
        lines.append(f"| {r['what']} | {r['ids']} x {r['semantics']} | {r['jobs']} | {r['models']:,} | {r['seconds']:.1f} | "
                     f"{r['models_per_s']:.1f} |")
    return lines


def agreement_lines(f: dict[str, Any]) -> list[str]:
    """The cuda tests' verdict and what they measured: the largest float64 difference and
    the smallest float32 tau outside the named exceptions, and the exceptions' own."""
    s = _step(f, "tests")
    if _status(s):
        return [f"GPU against CPU: {_status(s)}."]
    out = [f"The `cuda`-marked tests: {s.get('tests', 0) - s.get('failures', 0) - s.get('skipped', 0)} passed, "
           f"{s.get('failures', 0)} failed, {s.get('skipped', 0)} skipped (`{s.get('command', '')}`)."]
    for key, rec in sorted(s.get("agreement", {}).items()):
        exc = set(rec.get("exceptions", []))
        vals = rec["values"]
        inside = {n: v for n, v in vals.items() if n not in exc}
        worst = (max if rec["kind"] == "max_rel_diff" else min)(inside.items(), key=lambda kv: kv[1]) if inside else None
        noise = ", ".join(f"{n} {vals[n]:.2g}" for n in sorted(exc) if n in vals)
        what = "largest relative difference" if rec["kind"] == "max_rel_diff" else "smallest Kendall τ"
        line = (f"* {key}: {what} {worst[1]:.2g} (`{worst[0]}`; bound {rec['bound']:g}) over {len(inside)} proxies"
                if worst else f"* {key}: no proxy outside the exceptions")
        out.append(line + (f"; rounding noise by construction (the vanishing `authors` objective), not compared: {noise}"
                           if noise else ""))
    return out


def hardware_table(f: dict[str, Any]) -> list[str]:
    s = _step(f, "hardware")
    if _status(s):
        return [f"GPU latency and memory: {_status(s)}."]
    lines = [f"{s['archs']} archs x 3 semantics ({s['models']} distinct models) on {s.get('gpu')}, {s['seconds']:.0f} s; "
             "median [min, max]:", "",
             "| semantics | latency b1 ms | latency b32 ms | peak memory b32 MiB |", "|---|---|---|---|"]
    rng = lambda d: f"{d['median']:.2f} [{d['min']:.2f}, {d['max']:.2f}]"  # noqa: E731
    for sem, d in s["figures"].items():
        lines.append(f"| `{sem}` | {rng(d['latency_gpu_b1_ms'])} | {rng(d['latency_gpu_b32_ms'])} | "
                     f"{rng(d['peak_memory_gpu_b32_mib'])} |")
    return lines


def figures_section(f: dict[str, Any] | None) -> str:
    if f is None:
        return _unmeasured("pretraining, the proxy harness, hardware and the GPU-CPU agreement")
    return "\n".join([f"Measured by `bench/device_check.py` on {_machine(f)}.", "", *pretrain_table(f), "",
                      long_run_line(f), "", *proxies_table(f), "", *hardware_table(f), "", *agreement_lines(f)])


def builders_section(f: dict[str, Any] | None) -> str:
    if f is None:
        return _unmeasured("steps/s, MFU, the paper run's projected hours and the 2,000-step run")
    return "\n".join([f"Measured by `bench/device_check.py` on {_machine(f)}.", "", *pretrain_table(f), "",
                      long_run_line(f)])


def _best(runs: list[dict[str, Any]], what: str) -> dict[str, Any] | None:
    rows = [r for r in runs if r["what"] == what]
    return min(rows, key=lambda r: r["seconds"]) if rows else None


def readme_section(f: dict[str, Any] | None) -> str:
    if f is None:
        return ("GPU figures (the harness and pretraining on one GPU, against the goals of issue 36): **unmeasured**, "
                "no GPU run is committed yet; `bench/device_check.py` measures them in one call "
                "([figures](docs/figures.md#on-a-gpu)).")
    rows = ["| on one GPU | figure | goal |", "|---|---|---|"]
    pr = _step(f, "proxies")
    if not _status(pr):
        for what, label, goal in (("evaluate head_confidence", "a forward-only proxy, 500 ids x 3 semantics",
                                   GOALS["forward_only_s"]),
                                  ("compute paper (15 proxies)", "the paper's 15 proxies, 500 ids", GOALS["paper_15_s"])):
            r = _best(pr["runs"], what)
            if r:
                rows.append(f"| {label} ({r['models']:,} models, {r['jobs']} process(es)) | {r['seconds']:.1f} s | "
                            f"≤ {goal:.0f} s |")
    lr = _step(f, "long-run")
    if not _status(lr):
        rows.append(f"| pretraining, median arch, 128 x 128, the paper's recipe | {lr['steps_per_second']:.1f} steps/s | "
                    f"≥ {GOALS['median_steps_per_s']:.0f} steps/s |")
    return "\n".join([f"On {_machine(f)} ([figures](docs/figures.md#on-a-gpu)):", "", *rows])


#: each page with a GPU section, and how the section is rendered
PAGES: dict[str, Callable[[dict[str, Any] | None], str]] = {
    "docs/figures.md": figures_section, "docs/builders.md": builders_section, "README.md": readme_section}


def load(path: Path = FIGURES) -> dict[str, Any] | None:
    """The committed figures, or None (unmeasured); a dry run's are refused."""
    if not path.is_file():
        return None
    f = json.loads(path.read_text())
    if f.get("dry_run"):
        raise SystemExit(f"{path} holds a dry run's figures (the CPU in tiny sizes), not a GPU's; commit a real run's")
    return f


def apply(text: str, body: str, page: str) -> str:
    """``text`` with the section between the markers replaced by ``body``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise SystemExit(f"{page}: expected one {START} ... {END} block")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{body}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--figures", default=str(FIGURES), help="the figures JSON (default docs/device_figures.json)")
    ap.add_argument("--check", action="store_true", help="compare with the committed pages instead of writing them")
    a = ap.parse_args(argv)
    f = load(Path(a.figures))
    bad = 0
    for page, make in PAGES.items():
        path = ROOT / page
        old = path.read_text()
        new = apply(old, make(f), page)
        if a.check and new != old:
            bad += 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), page, page + " (made)"))
        elif not a.check and new != old:
            path.write_text(new)
            print(f"wrote the GPU section of {page}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
