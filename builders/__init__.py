"""Builders: regenerating benchmark entries and publishing the tables.

Installed as ``nasbench_bert.builders`` (the repository's top-level ``builders/`` folder):
``from nasbench_bert.builders import build_entry`` regenerates an entry (ELECTRA
pretraining + GLUE finetuning; needs the ``[build]`` extra: torch, tokenizers; datasets
for Hub corpora; ray for sweeps). The ``nasbench-bert`` command finds this package's
subcommands (``build-entry``, ``publish``) through an entry point, so the core never
imports it: the builders sit on top of the library, not inside it.

* :mod:`.corpus`, :mod:`.pretrain`, :mod:`.glue`, :mod:`.entry`, :mod:`.results` -
  regeneration, following the authors' training recipe step for step (pretraining is
  the loop in :mod:`.pretrain` around :mod:`.pretrain_config`, :mod:`.optimization`,
  :mod:`.electra` and :mod:`.accelerator`; finetuning reuses the last three);
* :mod:`.hardware` - measuring the hardware table of the 500 archs;
* :mod:`.publish` - uploading the tables to the Hugging Face Hub.

The studies whose results are in ``docs/`` live in the checkout's ``studies/`` folder,
outside the wheel (the packaging test checks that none is shipped).
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
