"""Files that travel with the tables but are not tables: the pinned surrogate and the
task metadata.

Why a separate manifest section: the tables are built from the release by the data
layer alone, while these files are made from the *built* tables by layers above it (the
surrogate is fitted, the objectives are read off the tables and their repeats). So
``nasbench-bert build-data`` writes the tables first and then adds each artifact here:
the file is written atomically beside the tables, then the manifest gains an
``artifacts.<name>`` entry (file, sha256, bytes, format and format version) by an atomic
rewrite. A reader uses an artifact only through :func:`read_artifact`, which checks
size and sha256 against that entry, exactly as tables are checked; the Hub download
verifies them the same way (:func:`fetch_artifacts`).

This module knows nothing of what the files hold (the data layer never imports the
surrogate): the writers are :mod:`nasbench_bert.surrogate.portable` and
:mod:`nasbench_bert.data.objectives`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable

from ..atomic import atomic_write
from ..errors import DataIntegrityError, InvalidArgumentError
from .tables import MANIFEST, DataDir, data_root, sha256_file

#: artifact name -> what it holds (written into the manifest and the dataset card)
ARTIFACTS: dict[str, str] = {
    "surrogate": "the default surrogate (ensemble+cal) as plain arrays, fitted on the flexibert table: docs/surrogate.md",
    "objectives": "task metadata per objective: direction, bounds, best value, noise sigma, unit, fidelities",
}
#: a file name inside the version folder: no path separators, no '..' (a manifest can come from a server)
_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.(npz|json)$")


def _check_name(name: str) -> None:
    if name not in ARTIFACTS:
        raise InvalidArgumentError(f"artifact = {name!r} is not allowed; allowed values: {sorted(ARTIFACTS)}")


def add_artifact(data: DataDir, name: str, file: str, payload: bytes, **meta: Any) -> dict[str, Any]:
    """Write ``payload`` as ``file`` in the data folder and list it in the manifest under
    ``artifacts.<name>`` with its sha256, size and ``meta`` (e.g. ``format_version``).

    The file is written first, the manifest second, each atomically: a write killed
    between the two leaves an unlisted file, never a listed file that is not there. A
    previous file of the same artifact under another name is removed after the manifest
    no longer lists it. ``data.manifest`` is updated in place. Returns the entry.
    """
    _check_name(name)
    if not _FILE.match(file):
        raise InvalidArgumentError(f"file = {file!r} is not allowed; allowed: a plain file name ending .npz or .json")
    clash = [t for t, m in data.manifest["tables"].items() if m["file"] == file]
    if clash or file == MANIFEST:
        raise InvalidArgumentError(f"file = {file!r} is taken by {clash or 'the manifest'}; choose another name")
    atomic_write(data.path / file, payload)
    entry = {"file": file, "sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload),
             "description": ARTIFACTS[name], **meta}
    manifest = json.loads((data.path / MANIFEST).read_text())
    old = manifest.get("artifacts", {}).get(name, {}).get("file")
    manifest.setdefault("artifacts", {})[name] = entry
    manifest["artifacts"] = dict(sorted(manifest["artifacts"].items()))
    atomic_write(data.path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    data.manifest.clear()
    data.manifest.update(manifest)
    if old and old != file:
        (data.path / old).unlink(missing_ok=True)
    return entry


def artifact_entry(data: DataDir, name: str) -> dict[str, Any] | None:
    """The manifest entry of artifact ``name``, or None when this data folder has none
    (built before artifacts existed, or by ``build_tables`` alone)."""
    _check_name(name)
    entry = data.manifest.get("artifacts", {}).get(name)
    if entry is not None and not _FILE.match(str(entry.get("file", ""))):
        raise DataIntegrityError(f"{data.path / MANIFEST}: artifact {name!r} names file {entry.get('file')!r}, not a plain "
                                 "file name; rebuild with `nasbench-bert build-data --force`")
    return entry


def read_artifact(data: DataDir, name: str) -> bytes | None:
    """The bytes of artifact ``name``, checked against the manifest's size and sha256;
    None when the manifest lists no such artifact. A listed file that is missing or does
    not match raises :class:`DataIntegrityError` naming the file, both digests and the
    command that rewrites it."""
    entry = artifact_entry(data, name)
    if entry is None:
        return None
    path = data.path / entry["file"]
    # data_root: the folder build-surrogate --data opens to find this one (itself when flat, not its parent)
    fix = f"rewrite it with `nasbench-bert build-surrogate --data {data_root(data.path)}` (or download again)"
    if not path.is_file():
        raise DataIntegrityError(f"artifact {name!r}: file {path} is missing; {fix}")
    payload = path.read_bytes()
    digest = hashlib.sha256(payload).hexdigest()
    if len(payload) != entry["bytes"] or digest != entry["sha256"]:
        raise DataIntegrityError(f"artifact {name!r}: {path} has sha256 {digest} ({len(payload)} bytes), the manifest pins "
                                 f"{entry['sha256']} ({entry['bytes']} bytes); {fix}")
    return payload


def fetch_artifacts(get: Callable[[str], Path], manifest: dict[str, Any], prefix: str, where: str,
                    evict: Callable[[Path], None]) -> dict[str, Path]:
    """Every artifact the (already checked) ``manifest`` lists, fetched with ``get`` (a
    repository path -> local path) under ``prefix`` and verified against its size and
    sha256; a bad copy is evicted. Returns file name -> local path (the Hub download
    materialises them beside the tables)."""
    out: dict[str, Path] = {}
    for name, entry in sorted(manifest.get("artifacts", {}).items()):
        if not _FILE.match(str(entry.get("file", ""))):
            raise DataIntegrityError(f"{where}: artifact {name!r} names file {entry.get('file')!r}, not a plain file name")
        p = get(f"{prefix}/{entry['file']}")
        digest, size = sha256_file(p), p.stat().st_size
        if size != entry["bytes"] or digest != entry["sha256"]:
            evict(p)
            raise DataIntegrityError(f"{where}: artifact {name!r} ({entry['file']}) has sha256 {digest} ({size} bytes), the "
                                     f"manifest says {entry['sha256']} ({entry['bytes']} bytes); the bad copy was removed, "
                                     "try again or use another source")
        out[entry["file"]] = p
    return out
