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
