"""Builders: the release importer, Hub publishing, and entry regeneration.

``from builders import build_entry`` regenerates a benchmark entry (needs the
``[build]`` extra: torch, tokenizers; datasets for Hub corpora; ray for sweeps).
"""

from __future__ import annotations

from typing import Any


def build_entry(arch: Any, **kwargs: Any) -> dict[str, Any]:
    """See :func:`builders.entry.build_entry` (imported lazily: it needs torch)."""
    from .entry import build_entry as _build

    return _build(arch, **kwargs)


def build_many(archs: Any, **kwargs: Any) -> list[Any]:
    """See :func:`builders.entry.build_many`."""
    from .entry import build_many as _many

    return _many(archs, **kwargs)


__all__ = ["build_entry", "build_many"]
