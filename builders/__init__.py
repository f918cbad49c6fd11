"""Builders: regenerating benchmark entries, publishing tables, and the studies behind the docs.

Installed as ``nasbench_bert.builders`` (the repository's top-level ``builders/`` folder):
``from nasbench_bert.builders import build_entry`` regenerates an entry (ELECTRA
pretraining + GLUE finetuning; needs the ``[build]`` extra: torch, tokenizers; datasets
for Hub corpora; ray for sweeps). The ``nasbench-bert`` command finds this package's
subcommands (``build-entry``, ``publish``) through an entry point, so the core never
imports it: the builders sit on top of the library, not inside it.

* :mod:`.pretrain`, :mod:`.glue`, :mod:`.entry`, :mod:`.results` - regeneration;
* :mod:`.publish` - uploading the tables to the Hugging Face Hub;
* :mod:`.proxy_study`, :mod:`.errata`, :mod:`.analysis` - the studies whose results are
  in ``docs/``.
"""

from __future__ import annotations

from typing import Any


def build_entry(arch: Any, **kwargs: Any) -> dict[str, Any]:
    """See :func:`nasbench_bert.builders.entry.build_entry` (imported lazily: it needs torch)."""
    from .entry import build_entry as _build

    return _build(arch, **kwargs)


def build_many(archs: Any, **kwargs: Any) -> list[Any]:
    """See :func:`nasbench_bert.builders.entry.build_many`."""
    from .entry import build_many as _many

    return _many(archs, **kwargs)


__all__ = ["build_entry", "build_many"]
