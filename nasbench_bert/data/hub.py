"""Getting the tables from the Hugging Face Hub (or a mirror), verified and cached.

Why this module exists: dead download links are the most common complaint against NAS
benchmarks. The tables are published as a Hub *dataset* repository; a user pins a
revision, ``huggingface_hub`` does the transfer (resume, ``HF_ENDPOINT``, offline mode,
its own cache), and this module adds what the Hub does not promise:

* every table is checked against the sha256 and size in the repository's
  ``v1/manifest.json`` before it is used, and a bad blob is evicted from the Hub cache so
  that the next try downloads it again;
* a verified copy is *materialised* into ``<user cache>/hub/<repo>/<commit>/v1`` by an
  atomic rename, so a failed or corrupted download never touches a copy that was good
  before (each commit has its own folder);
* later loads of a pinned commit need no network at all, and a branch name resolves
  through the Hub cache when ``HF_HUB_OFFLINE=1``;
* sources can be listed in order (:func:`nasbench_bert.data.resolve.fetch`): the Hub, a
  mirror, the authors' raw release files rebuilt locally.

Repository layout (written by :mod:`nasbench_bert.builders.publish`)::

    README.md                 dataset card (licences, citation, ``configs:`` per table)
    v1/manifest.json          schema version, rows, columns, sha256 and bytes per table
    v1/<table>.parquet        one file per table
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from ..atomic import replace_dir, staging_dir
from ..errors import DataIntegrityError, DataNotFoundError, SourceUnavailableWarning
from . import pin
from .tables import MANIFEST, TABLES, VERSION_DIR, DataDir, sha256_file, user_cache_dir

__all__ = ["download", "check_repo_id", "materialised_dir", "hub_cache_dir",
           "DEFAULT_REPO_ID", "DEFAULT_REVISION", "REPO_TYPE", "SourceUnavailableWarning"]

#: where the maintainers publish the tables; override with ``repo_id=``
DEFAULT_REPO_ID = pin.PINNED_REPO_ID
#: the revision a plain ``source="hub"`` load asks for: the pinned commit when this version
#: of the package has one, else ``main``; pin a commit sha yourself for reproducibility
DEFAULT_REVISION = pin.PINNED_REVISION or "main"
REPO_TYPE = "dataset"
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


def _safe(repo_id: str) -> str:
    return repo_id.replace("/", "--")


def hub_cache_dir() -> Path:
    """The ``huggingface_hub`` cache used for downloads (inside the package's user cache).

    Keeping it separate from ``~/.cache/huggingface`` means ``nasbench-bert`` can evict a
    blob that failed verification without touching anything else of the user's.
    """
    return user_cache_dir() / "hub" / "_hf"


def materialised_dir(repo_id: str, commit: str) -> Path:
    return user_cache_dir() / "hub" / _safe(repo_id) / commit


def check_repo_id(repo_id: str) -> None:
    """Raise ``ValueError`` unless ``repo_id`` has the Hub's ``namespace/name`` form."""
    if not isinstance(repo_id, str) or not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", repo_id):
        raise ValueError(f"repo_id = {repo_id!r} is not a Hub repository id; allowed: 'namespace/name'")


def _evict(path: Path) -> None:
    """Remove a downloaded snapshot file and the blob it points to."""
    try:
        real = path.resolve()
        path.unlink(missing_ok=True)
        if real != path:
            real.unlink(missing_ok=True)
    except OSError:
        pass


def download(
    repo_id: str = DEFAULT_REPO_ID,
    revision: str = DEFAULT_REVISION,
    *,
    endpoint: str | None = None,
    token: str | bool | None = None,
    verify: bool = True,
) -> DataDir:
    """Fetch a pinned revision of the tables, verify it and return the verified folder.

    Raises :class:`DataNotFoundError` when the repository, revision or a file does not
    exist (or the endpoint cannot be reached and nothing is cached) and
    :class:`DataIntegrityError` when a file does not match the manifest. Neither leaves
    anything where a later load looks.
    """
    check_repo_id(repo_id)
    if not isinstance(revision, str) or not revision:
        raise ValueError(f"revision = {revision!r} is not allowed; allowed: a branch, tag or 40-hex commit sha")
    # a pinned commit that was verified before needs no network at all
    if _SHA_RE.match(revision):
        done = materialised_dir(repo_id, revision)
        if (done / VERSION_DIR / MANIFEST).is_file():
            return DataDir.open(done, verify=verify)

    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError,
    )

    where = f"{repo_id}@{revision} on {endpoint or os.environ.get('HF_ENDPOINT') or 'huggingface.co'}"

    def get(filename: str) -> Path:
        try:
            return Path(hf_hub_download(
                repo_id, filename, repo_type=REPO_TYPE, revision=revision, endpoint=endpoint,
                token=token, cache_dir=hub_cache_dir(),
            ))
        except RepositoryNotFoundError:
            raise DataNotFoundError(f"{where}: repository not found (check repo_id, or pass token= for a private repository)") from None
        except RevisionNotFoundError:
            raise DataNotFoundError(f"{where}: revision {revision!r} not found") from None
        except EntryNotFoundError:
            raise DataNotFoundError(f"{where}: the repository has no file {filename!r}; it is not a nasbench-bert data repository of schema {VERSION_DIR}") from None
        except LocalEntryNotFoundError as e:
            raise DataNotFoundError(f"{where}: cannot reach the endpoint and {filename!r} is not cached ({e.__class__.__name__}); connect, or set HF_ENDPOINT to a mirror") from None
        except Exception as e:  # transport boundary: httpx/HTTP errors from huggingface_hub, named in the message
            raise DataNotFoundError(f"{where}: download of {filename!r} failed ({e.__class__.__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None

    mpath = get(f"{VERSION_DIR}/{MANIFEST}")
    commit = mpath.parent.parent.name  # .../snapshots/<commit>/v1/manifest.json
    try:
        manifest = json.loads(mpath.read_text())
        tables = manifest["tables"]
        files = {name: tables[name] for name in TABLES}
    except (ValueError, KeyError, TypeError) as e:
        _evict(mpath)
        raise DataIntegrityError(f"{where}: {VERSION_DIR}/{MANIFEST} is not a valid manifest ({e!r})") from None

    done = materialised_dir(repo_id, commit)
    if (done / VERSION_DIR / MANIFEST).is_file() and json.loads((done / VERSION_DIR / MANIFEST).read_text()) == manifest:
        return DataDir.open(done, verify=verify)

    fetched: dict[str, Path] = {}
    for name, meta in sorted(files.items()):
        p = get(f"{VERSION_DIR}/{meta['file']}")
        size = p.stat().st_size
        if size != meta["bytes"]:
            _evict(p)
            raise DataIntegrityError(
                f"{where}: table {name!r} ({meta['file']}) has {size} bytes, the manifest says {meta['bytes']} "
                "(truncated download?); the bad copy was removed, try again or use another source"
            )
        digest = sha256_file(p)
        if digest != meta["sha256"]:
            _evict(p)
            raise DataIntegrityError(
                f"{where}: table {name!r} ({meta['file']}) has sha256 {digest}, the manifest says {meta['sha256']}; "
                "the bad copy was removed, try again or use another source"
            )
        fetched[meta["file"]] = p

    # materialise atomically: stage beside the target, then swap it in
    staging = staging_dir(done)
    try:
        (staging / VERSION_DIR).mkdir(parents=True)
        for fname, src in fetched.items():
            shutil.copyfile(src, staging / VERSION_DIR / fname)
        shutil.copyfile(mpath, staging / VERSION_DIR / MANIFEST)
        replace_dir(staging, done)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return DataDir.open(done, verify=verify)
