"""Atomic writes: a reader sees the old file or folder, or the complete new one, never a part.

Every file this package writes - tables, manifests, proxy cache parts, checkpoints,
results entries, tokenizers, exports, figures - goes through :func:`atomic_path` (or
:func:`atomic_write`), and every folder that is replaced as a whole (a data version, a
verified Hub snapshot) through :func:`replace_dir`. The recipe is the usual one: write
beside the target under a hidden temporary name, ``fsync``, then ``os.replace``, which
is atomic on POSIX and Windows within one file system.

A process killed between the two renames of :func:`replace_dir` leaves the good old
folder under a ``.<name>.old-*`` name and no target; :func:`recover_dir` (called by
readers and by the next write) puts it back, so no kill ever loses the last good copy.
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "atomic_write", "replace_dir", "recover_dir", "staging_dir", "pid_alive"]


def _tmp_name(target: Path, tag: str) -> Path:
    return target.with_name(f".{target.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _fsync(path: Path) -> None:
    try:
        with open(path, "rb") as f:
            os.fsync(f.fileno())
    except OSError:  # some file systems refuse fsync on read-only handles; the rename still protects readers
        pass


@contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; when the block ends without an error the
    file written there replaces ``target`` in one rename, otherwise it is removed.

    The parent folder is created. A target that is an existing folder is refused with
    :class:`IsADirectoryError` before anything is written.
    """
    target = Path(target)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a folder; cannot write a file there")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_name(target, "tmp")
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"nothing was written to the temporary file for {target}")
        _fsync(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write(target: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8 encoded) to ``target`` atomically; returns ``target``."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    return Path(target)


def staging_dir(target: str | os.PathLike[str]) -> Path:
    """A fresh hidden folder beside ``target`` to build a replacement in."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    d = _tmp_name(target, "staging")
    d.mkdir()
    return d


def replace_dir(staging: Path, target: str | os.PathLike[str]) -> Path:
    """Swap a complete ``staging`` folder into ``target`` (the old one, if any, removed).

    Two renames: target -> ``.<name>.old-*``, staging -> target. A kill between them is
    repaired by :func:`recover_dir`.
    """
    target = Path(target)
    for p in staging.rglob("*"):
        if p.is_file():
            _fsync(p)
    old = None
    if target.exists():
        old = _tmp_name(target, "old")
        os.replace(target, old)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


def recover_dir(target: str | os.PathLike[str]) -> bool:
    """Undo a :func:`replace_dir` that was killed between its renames: when ``target`` is
    missing and an old copy is beside it, rename the newest old copy back. Leftover
    staging folders of processes that no longer run are removed. Returns True when
    something was recovered."""
    target = Path(target)
    parent = target.parent
    if not parent.is_dir():
        return False
    recovered = False
    olds = sorted(parent.glob(f".{target.name}.old-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    if not target.exists() and olds:
        os.replace(olds[0], target)
        olds = olds[1:]
        recovered = True
    if target.exists():
        for p in olds:
            shutil.rmtree(p, ignore_errors=True)
    for p in parent.glob(f".{target.name}.staging-*"):
        parts = p.name.rsplit("-", 2)
        pid = parts[-2] if len(parts) == 3 else ""
        if pid.isdigit() and int(pid) != os.getpid() and pid_alive(int(pid)):
            continue  # another live writer is building it
        shutil.rmtree(p, ignore_errors=True)
    return recovered


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
