"""A local results table of regenerated entries: atomic, idempotent, safe for several
concurrent builders.

Layout: ``<dir>/entries/<key>.json``, one file per arch and recipe (``key`` = the arch's
space index and the recipe's key, ``00001234-0123456789ab``; see
:class:`builders.entry.Recipe`; entries written before recipes were keyed have the
index alone). A write goes to a temporary file and is renamed into place, so a reader never
sees half an entry and a crash leaves none. A builder *claims* an arch with an
exclusive lock file (``O_CREAT | O_EXCL``) before working on it. A claim is stale when
its process is gone, or when its lock file is still empty after
:data:`EMPTY_LOCK_SECONDS` (a builder killed between creating and writing it). A stale
claim is taken over atomically: the lock is renamed to a name unique to the taker,
which only one builder can win, and then created afresh with ``O_EXCL``. Re-running
skips archs whose entry exists.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from nasbench_bert.spaces.flexibert import Arch
from nasbench_bert.atomic import atomic_write
from nasbench_bert.atomic import pid_alive as _alive
from nasbench_bert.data.tables import RELEASE_TASK_NAMES
from nasbench_bert.data.entries import entry_stem


#: an empty lock file older than this is a builder killed between create and write
EMPTY_LOCK_SECONDS = 60.0


class ArchClaimed(RuntimeError):
    """Another live builder is working on this arch."""


def _read(lock: Path) -> str | None:
    try:
        return lock.read_text()
    except FileNotFoundError:
        return None


class ResultsTable:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.entries_dir = self.path / "entries"
        self.entries_dir.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(arch: Any, recipe: str | None = None) -> str:
        """The entry's file stem: the arch's space index, then the recipe key."""
        if recipe is not None and not (isinstance(recipe, str) and len(recipe) == 12
                                       and all(c in "0123456789abcdef" for c in recipe)):
            raise ValueError(f"recipe = {recipe!r} is not allowed; allowed: a recipe key (12 hex digits) or None")
        return entry_stem(Arch.coerce(arch), recipe)  # the name the data layer checks on read

    def _file(self, arch: Any, recipe: str | None = None) -> Path:
        return self.entries_dir / f"{self.key(arch, recipe)}.json"

    def has(self, arch: Any, recipe: str | None = None) -> bool:
        return self._file(arch, recipe).is_file()

    def get(self, arch: Any, recipe: str | None = None) -> dict[str, Any] | None:
        f = self._file(arch, recipe)
        return json.loads(f.read_text()) if f.is_file() else None

    def write(self, entry: dict[str, Any]) -> Path:
        """Write ``entry`` atomically under its arch and recipe key; an entry that cannot
        be serialised raises before any file is created."""
        arch = Arch.from_release({"hidden_size": entry["hparams"]["model_hparam_overrides"]["hidden_size"],
                                  "nas_config": entry["hparams"]["model_hparam_overrides"]["nas_config"]})
        recipe = (entry.get("recipe") or {}).get("key")
        try:
            text = json.dumps(entry, indent=1, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"entry of {arch} cannot be written as JSON: {e}") from None
        return atomic_write(self._file(arch, recipe), text)

    @contextmanager
    def claim(self, arch: Any, recipe: str | None = None) -> Iterator[None]:
        lock = self.entries_dir / f".{self.key(arch, recipe)}.lock"
        me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"  # token: no two claims look alike
        for _ in range(3):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.write(fd, me.encode())
                os.close(fd)
                break
            except FileExistsError:
                owner = _read(lock)
                try:
                    inode = lock.stat().st_ino
                except FileNotFoundError:
                    owner = None
                if owner is None:
                    continue  # released between our two calls: try again
                if self._stale(lock, owner) and self._take_over(lock, inode, owner):
                    continue  # the stale lock is gone; now create ours exclusively
                raise ArchClaimed(f"arch {Arch.coerce(arch)} is being built by {owner or 'another builder'} ({lock})")
        else:
            raise ArchClaimed(f"could not claim {lock}")
        try:
            yield
        finally:
            if _read(lock) == me:
                lock.unlink(missing_ok=True)

    @staticmethod
    def _stale(lock: Path, owner: str) -> bool:
        if owner == "":
            try:
                return time.time() - lock.stat().st_mtime > EMPTY_LOCK_SECONDS
            except FileNotFoundError:
                return False
        host, _, rest = owner.partition(":")
        pid = rest.partition(":")[0]
        return host == socket.gethostname() and pid.isdigit() and not _alive(int(pid))

    @staticmethod
    def _take_over(lock: Path, inode: int, owner: str) -> bool:
        """Remove the stale lock (file ``inode`` holding ``owner``) so that exactly one of several racing
        builders does it: each renames the lock to a name of its own - only one rename of
        a file can succeed - and deletes its copy. A builder whose rename caught a
        *fresh* lock (another builder took over first and re-created it) puts it back
        with ``os.link`` and reports the arch as claimed. The losers compete again at
        ``O_EXCL``. Inode numbers are reused as soon as a file is deleted, so the lock is
        recognised by inode *and* content (every claim writes a fresh token)."""
        mine = lock.with_name(f"{lock.name}.stale-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(lock, mine)
        except FileNotFoundError:
            return True  # someone else took it over: compete for the fresh lock
        if mine.stat().st_ino != inode or _read(mine) != owner:  # not the stale lock we judged: restore it
            try:
                os.link(mine, lock)
            except FileExistsError:
                pass
            mine.unlink(missing_ok=True)
            return False
        mine.unlink(missing_ok=True)
        return True

    def entries(self) -> list[dict[str, Any]]:
        out = []
        for f in sorted(self.entries_dir.glob("*.json")):
            out.append(json.loads(f.read_text()))
        return out

    def to_pandas(self) -> pd.DataFrame:
        """One row per entry, columns as in the bundled table (GLUE names, ``arch``)."""
        rows = []
        for e in self.entries():
            mo = e["hparams"]["model_hparam_overrides"]
            a = Arch.from_release({"hidden_size": mo["hidden_size"], "nas_config": mo["nas_config"]})
            row = {"arch": str(a), "space_index": a.index, "time_to_train": e["time_to_train"], "glue": e["scores"]["glue"],
                   "num_params": e.get("num_params"), "source": "regenerated", "pretrain_steps": e["hparams"]["num_train_steps"],
                   "recipe": (e.get("recipe") or {}).get("key")}
            for k, v in e["scores"].items():
                if k != "glue":
                    row[RELEASE_TASK_NAMES.get(k, k)] = v
            rows.append(row)
        return pd.DataFrame(rows)

