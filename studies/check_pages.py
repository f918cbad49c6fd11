"""CI's check that every generated docs page is what its generator makes today.

    python -m studies.check_pages [--only errata,baselines] [--keep DIR]

Each page of :data:`PAGES` is made again into a scratch folder and compared with the
committed ``docs/`` copy (the page and its JSON); any difference fails, with a unified
diff. Two modes, chosen by how long the generator runs here (measured on the 2-core CI
machine; :attr:`Page.seconds`):

* ``regenerate``: the generator runs from scratch (seconds to a few minutes), so a page
  that drifted from its code, or was edited by hand, fails;
* ``render-only``: generators of an hour (live proxies on 500 archs) re-render the page
  from the committed JSON (``--render-only``): a hand edit of the page, or a JSON that
  the page no longer matches, fails. Their JSON carries a ``provenance`` entry (the code
  version and the inputs that made it; :func:`studies.pages.provenance`), checked here
  to be present.

Machine-dependent figures: a figure printed with a trailing ``†`` (the page says why) is
compared as ``†`` alone. Only figures that are rounding noise or timings carry it; every
other figure is compared byte for byte.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent

#: a generator that runs in at most this many CPU seconds here is regenerated in CI; the
#: others are re-rendered from their JSON (the whole step stays at a few minutes)
QUICK_SECONDS = 300

#: a machine-dependent figure: the non-blank run before a dagger (``-183803†``)
MACHINE_DEPENDENT = re.compile(r"[^\s|]+†")


@dataclass(frozen=True)
class Page:
    """One generated page: its generator, its file, and how CI checks it."""

    name: str
    module: str
    page: str  # relative to the repository root
    mode: Literal["regenerate", "render-only"]
    #: CPU seconds (user) of a from-scratch run here, which decided the mode: measured for
    #: errata (58), baselines (231) and beyond (439 from an empty cache); the generator's own docstring for the others
    #: (published, leaderboard, proxy_study "about an hour", surrogate "about 10 minutes")
    seconds: int
    has_json: bool = True
    args: tuple[str, ...] = ()


PAGES: tuple[Page, ...] = (
    Page("errata", "studies.errata", "docs/errata_numbers.md", "regenerate", 58, has_json=False),
    Page("baselines", "studies.baselines", "docs/baselines.md", "regenerate", 231),
    Page("beyond", "studies.beyond", "docs/beyond.md", "render-only", 439),
    Page("published", "studies.published", "docs/published.md", "render-only", 3600),
    Page("leaderboard", "studies.leaderboard", "docs/leaderboard.md", "render-only", 3600),
    Page("proxy_values", "studies.proxy_values_page", "docs/proxy_values.md", "render-only", 1800),
    Page("surrogate", "studies.surrogate_study", "docs/surrogate.md", "render-only", 600),
    Page("proxy_study", "studies.proxy_study", "docs/proxy_study.md", "render-only", 3600),
)


def masked(text: str) -> str:
    """``text`` with every machine-dependent figure (``value†``) reduced to ``†``."""
    return MACHINE_DEPENDENT.sub("†", text)


def diff(committed: str, made: str, name: str) -> list[str]:
    """The unified diff between a committed file and the one made now, machine-dependent
    figures masked; empty when they agree."""
    a, b = masked(committed).splitlines(keepends=True), masked(made).splitlines(keepends=True)
    return list(difflib.unified_diff(a, b, f"committed/{name}", f"generated/{name}"))


def json_diff(committed: object, made: object, where: str = "", rel: float = 1e-9) -> list[str]:
    """Where two JSON values differ: structure and strings exactly, numbers to a relative
    ``rel``. Why a tolerance: the figures' last bits follow the order of floating-point
    sums (BLAS, vector kernels), e.g. 0.3828868193665404 here for ...405 committed; the
    page, which prints them rounded, is still compared exactly."""
    if isinstance(committed, bool) or isinstance(made, bool) or not (
            isinstance(committed, (int, float)) and isinstance(made, (int, float))):
        if isinstance(committed, dict) and isinstance(made, dict):
            out = [f"{where}/{k}: only in {'committed' if k in committed else 'generated'}\n"
                   for k in sorted(set(committed) ^ set(made))]
            for k in sorted(set(committed) & set(made)):
                out += json_diff(committed[k], made[k], f"{where}/{k}", rel)
            return out
        if isinstance(committed, list) and isinstance(made, list):
            if len(committed) != len(made):
                return [f"{where}: {len(committed)} items committed, {len(made)} generated\n"]
            return [d for i, (x, y) in enumerate(zip(committed, made)) for d in json_diff(x, y, f"{where}[{i}]", rel)]
        same = type(committed) is type(made) and committed == made
        return [] if same else [f"{where}: committed {committed!r}, generated {made!r}\n"]
    x, y = float(committed), float(made)
    if x == y or (x != x and y != y) or abs(x - y) <= rel * max(abs(x), abs(y)):
        return []
    return [f"{where}: committed {committed!r}, generated {made!r}\n"]


def make(page: Page, docs_root: Path, work: Path, python: str = sys.executable) -> Path:
    """Make ``page`` into ``work`` (regenerated, or rendered from the JSON copied from
    ``docs_root``); returns the page's path there."""
    out = work / Path(page.page).name
    cmd = [python, "-m", page.module, *page.args, "--out", str(out)]
    if page.mode == "render-only":
        shutil.copyfile(docs_root / Path(page.page).with_suffix(".json"), out.with_suffix(".json"))
        cmd.append("--render-only")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}:\n{res.stderr[-3000:]}")
    return out


def check(page: Page, docs_root: Path = ROOT, work: Path | None = None) -> list[str]:
    """The problems of one page: diffs between the committed page (and JSON) under
    ``docs_root`` and what :func:`make` gives, and a long generator's JSON lacking its
    provenance. Empty when the page is reproducible."""
    with tempfile.TemporaryDirectory() as tmp:
        work = work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        out = make(page, docs_root, work)
        committed = docs_root / page.page
        problems = diff(committed.read_text(), out.read_text(), page.page)
        if page.has_json:
            cj = committed.with_suffix(".json")
            problems += json_diff(json.loads(cj.read_text()), json.loads(out.with_suffix(".json").read_text()),
                                  str(Path(page.page).with_suffix(".json")))
            if page.mode == "render-only" and "provenance" not in json.loads(cj.read_text()):
                problems.append(f"{cj}: no 'provenance' entry (code version and inputs); regenerate it with "
                                f"`python -m {page.module}`\n")
        return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.check_pages", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated page names (default: all): " +
                    ", ".join(p.name for p in PAGES))
    ap.add_argument("--keep", default=None, help="write the generated pages here instead of a temporary folder")
    a = ap.parse_args(argv)
    names = [n for n in a.only.split(",") if n]
    unknown = sorted(set(names) - {p.name for p in PAGES})
    if unknown:
        raise SystemExit(f"--only: {', '.join(unknown)} not allowed; allowed values: {', '.join(p.name for p in PAGES)}")
    failed = 0
    for page in PAGES:
        if names and page.name not in names:
            continue
        t = time.perf_counter()
        problems = check(page, ROOT, Path(a.keep) if a.keep else None)
        state = "ok" if not problems else "DIFFERS"
        print(f"{page.name:12s} {page.mode:12s} {time.perf_counter() - t:6.1f} s  {state}", flush=True)
        if problems:
            failed += 1
            sys.stdout.writelines(problems)
    if failed:
        print(f"{failed} page(s) differ from their generators: run the generator (python -m studies.<name>) and "
              "commit the page with its JSON")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
