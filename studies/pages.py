"""One way to write a generated docs page: its figures as JSON, the page as the rendering
of that JSON.

Rendering the page from the JSON *as stored* (not from the in-memory summary) is what
makes ``--render-only`` reproduce the page byte for byte, and what the page tests check.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def stored_or_computed(out: Path, render_only: bool, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The page's summary: read back from ``<out>.json`` with ``--render-only``, else computed."""
    if render_only:
        return json.loads(out.with_suffix(".json").read_text())
    return compute()


def write_page(out: Path, summary: dict[str, Any], render: Callable[[dict[str, Any]], str],
               default: Callable[[Any], Any] | None = None) -> None:
    """Write ``<out>.json`` and then ``out`` (each atomically), the page rendered from the JSON."""
    from nasbench_bert.atomic import atomic_write

    text = json.dumps(summary, indent=1, sort_keys=True, default=default) + "\n"
    atomic_write(out.with_suffix(".json"), text)
    atomic_write(out, render(json.loads(text)))
    print(f"wrote {out} and {out.with_suffix('.json')}")


#: the sources whose hash stands for "the code that made a page": the studies and the package
CODE_GLOBS = ("studies/*.py", "nasbench_bert/**/*.py")
ROOT = Path(__file__).resolve().parent.parent


def code_version(root: Path = ROOT) -> dict[str, Any]:
    """What code made a page: the git commit checked out, whether the studies or the
    package differed from it (``dirty``), and a sha256 over the sources themselves.

    Why both: a long generator's JSON is committed and re-rendered in CI without being
    recomputed, so a reader must be able to tell which code made it. The commit names it
    when the tree was clean; the source hash names it exactly even when it was not (and
    is what to compare when re-running the generator later).
    """
    import hashlib
    import subprocess

    h = hashlib.sha256()
    for pattern in CODE_GLOBS:
        for p in sorted(root.glob(pattern)):
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    dirty = git("status", "--porcelain", "--", "studies", "nasbench_bert")
    return {"git_commit": git("rev-parse", "HEAD") or None, "dirty": bool(dirty), "sources_sha256": h.hexdigest()}


def tables_sha256(bench: Any) -> str:
    """sha256 of the benchmark tables' manifest (which holds every table's own sha256):
    the input data a page was computed from, in one hash."""
    import hashlib

    return hashlib.sha256((Path(bench.data.path) / "manifest.json").read_bytes()).hexdigest()


def provenance(command: str, bench: Any | None, **inputs: Any) -> dict[str, Any]:
    """The ``provenance`` entry of a long generator's JSON: the command, the code version
    (:func:`code_version`), the tables' manifest hash, and the other inputs that made the
    figures (ids, seeds, bootstrap counts, caches), so a JSON that CI only re-renders
    still says what made it."""
    import datetime

    return {"command": command, "code": code_version(), "tables_manifest_sha256": tables_sha256(bench) if bench else None,
            "generated": datetime.date.today().isoformat(), "inputs": inputs}
