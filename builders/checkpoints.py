"""Pretraining checkpoints on disk: written atomically, read without unpickling code.

Why a module of its own: a workdir is often a shared cluster file system or a results
folder copied from someone else, so a checkpoint there is input from a stranger. A
``torch.load(..., weights_only=False)`` of it runs whatever its pickle names - a planted
``step-*.pt`` would run arbitrary code the moment a build resumes. So checkpoints are
read with torch's weights-only unpickler, which builds only tensors, plain containers
and numbers, and with exactly the extra types a checkpoint written by :func:`save` holds:
none (:data:`ALLOWED_GLOBALS`; ``tests/test_checkpoints.py`` checks that a written
checkpoint names no other). A file that names anything else is refused with one line,
before anything in it is built or run.

Layout of ``step-<8 digits>.pt`` (a dict): ``step`` (int, steps done), ``model`` (the
model's ``state_dict``), ``optimizer`` (torch AdamW's ``state_dict``: tensors, numbers,
booleans and the ``lr_scale`` and ``decay`` of each group), ``losses``,
``disc_losses``, ``gen_losses`` (lists of floats). The two newest are kept.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any

import torch

from nasbench_bert.errors import DataIntegrityError

#: globals beyond torch's weights-only defaults that a checkpoint may name: a checkpoint
#: holds only tensors, dicts, lists, numbers, booleans and strings, which need none
ALLOWED_GLOBALS: tuple[Any, ...] = ()
#: how many checkpoints a workdir keeps (the newest); an older one is the fallback for a damaged newest
KEEP = 2


class CheckpointError(DataIntegrityError):
    """A checkpoint names a Python object a checkpoint never holds: refused unread."""


def save(folder: Path, step: int, model: Any, opt: Any, losses: list[float], dl: list[float], gl: list[float]) -> Path:
    """Write the checkpoint of ``step`` atomically (a kill never leaves half a file under a
    real name) and remove all but the :data:`KEEP` newest. Returns its path."""
    path = folder / f"step-{step:08d}.pt"
    tmp = folder / f".step-{step:08d}.{os.getpid()}.tmp"
    torch.save({"step": step, "model": model.state_dict(), "optimizer": opt.state_dict(),
                "losses": losses, "disc_losses": dl, "gen_losses": gl}, tmp)
    os.replace(tmp, path)
    for old in sorted(folder.glob("step-*.pt"))[:-KEEP]:
        old.unlink(missing_ok=True)
    return path


def load(path: Path, device: str | torch.device = "cpu") -> dict[str, Any]:
    """The checkpoint at ``path``, read by the weights-only unpickler. A file that names
    a foreign object raises :class:`CheckpointError` (one line: the object, the file, what
    to do); a damaged file raises what torch raises for it (``RuntimeError``, ``EOFError``)."""
    try:
        with torch.serialization.safe_globals(list(ALLOWED_GLOBALS)):
            return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as e:
        what = next((m.group(1) for pat in (r"Unsupported global: GLOBAL (\S+)", r"(Unsupported operand \S+)",
                                            r"WeightsUnpickler error: ([^\n.]+)") if (m := re.search(pat, str(e)))),
                    type(e).__name__)
        raise CheckpointError(
            f"checkpoint {path} holds a pickled object a nasbench-bert checkpoint never holds ({what}); refused without "
            "unpickling it (nothing in it ran): remove the file, or resume from a workdir you trust") from None


def latest(folder: Path, device: str | torch.device = "cpu") -> tuple[Path, dict[str, Any]] | None:
    """The newest readable checkpoint of ``folder`` and its content, or None. A damaged
    one (truncated by a full disk, say) is passed over for the one before; a foreign one
    stops everything (:class:`CheckpointError`)."""
    for p in sorted(folder.glob("step-*.pt"), reverse=True):
        try:
            state = load(p, device)
        except CheckpointError:
            raise
        except (RuntimeError, EOFError, OSError, ValueError, KeyError):  # damaged: the one before may be whole
            continue
        if isinstance(state, dict) and isinstance(state.get("step"), int):
            return p, state
    return None
