"""A local results table of regenerated entries: atomic, idempotent, safe for several
concurrent builders.

Layout: ``<dir>/entries/<key>.json``, one file per arch (``key`` = the arch's space
index). A write goes to a temporary file and is renamed into place, so a reader never
sees half an entry and a crash leaves none. A builder *claims* an arch with an
exclusive lock file (``O_CREAT | O_EXCL``) before working on it; a claim whose process
is gone is stale and may be taken over. Re-running skips archs whose entry exists.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from nasbench_bert.spaces.flexibert import Arch
from nasbench_bert.atomic import pid_alive as _alive
from nasbench_bert.data.tables import RELEASE_TASK_NAMES


class ArchClaimed(RuntimeError):
    """Another live builder is working on this arch."""


class ResultsTable:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.entries_dir = self.path / "entries"
        self.entries_dir.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(arch: Any) -> str:
        return f"{Arch.coerce(arch).index:08d}"

    def _file(self, arch: Any) -> Path:
        return self.entries_dir / f"{self.key(arch)}.json"

    def has(self, arch: Any) -> bool:
        return self._file(arch).is_file()

    def get(self, arch: Any) -> dict[str, Any] | None:
        f = self._file(arch)
        return json.loads(f.read_text()) if f.is_file() else None

    def write(self, entry: dict[str, Any]) -> Path:
        arch = Arch.from_release({"hidden_size": entry["hparams"]["model_hparam_overrides"]["hidden_size"],
                                  "nas_config": entry["hparams"]["model_hparam_overrides"]["nas_config"]})
        f = self._file(arch)
        tmp = f.with_name(f".{f.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        with open(tmp, "w") as fh:
            json.dump(entry, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, f)
        return f

    @contextmanager
    def claim(self, arch: Any) -> Iterator[None]:
        lock = self.entries_dir / f".{self.key(arch)}.lock"
        me = f"{socket.gethostname()}:{os.getpid()}"
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.write(fd, me.encode())
                os.close(fd)
                break
            except FileExistsError:
                owner = lock.read_text() if lock.exists() else ""
                host, _, pid = owner.partition(":")
                if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
                    lock.unlink(missing_ok=True)  # stale: its builder died
                    continue
                raise ArchClaimed(f"arch {Arch.coerce(arch)} is being built by {owner or 'another builder'} ({lock})")
        else:
            raise ArchClaimed(f"could not claim {lock}")
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)

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
                   "num_params": e.get("num_params"), "source": "regenerated", "pretrain_steps": e["hparams"]["num_train_steps"]}
            for k, v in e["scores"].items():
                if k != "glue":
                    row[RELEASE_TASK_NAMES.get(k, k)] = v
            rows.append(row)
        return pd.DataFrame(rows)

