"""Getting the tables from the Hugging Face Hub (or a mirror), verified and cached.

Why this module exists: dead download links are the most common complaint against NAS
benchmarks. The tables are published as a Hub *dataset* repository; a user pins a
revision, ``huggingface_hub`` does the transfer (resume, ``HF_ENDPOINT``, offline mode,
its own cache), and this module adds what the Hub does not promise:

* every table is checked against the sha256 and size in the repository's
  ``v2/manifest.json`` before it is used, and a bad blob is evicted from the Hub cache so
  that the next try downloads it again;
* a revision that holds only an older schema's folder (``v1/``) is refused with one line
  that says what to do, never read with the wrong column names;
* a verified copy is *materialised* into ``<user cache>/hub/<repo>/<commit>/v2`` by an
  atomic rename, so a failed or corrupted download never touches a copy that was good
  before (each commit has its own folder);
* later loads of a pinned commit need no network at all, and a branch name resolves
  through the Hub cache when ``HF_HUB_OFFLINE=1``;
* ``nasbench-bert download`` records what it fetched (:func:`remember`), so the next
  ``Benchmark.load()`` or ``nasbench-bert query`` in the same user cache loads it
  (:func:`downloaded`, step 3 of :mod:`nasbench_bert.data.resolve`);
* sources can be listed in order (:func:`nasbench_bert.data.resolve.fetch`): the Hub, a
  mirror, the authors' raw release files rebuilt locally.

Repository layout (written by :mod:`nasbench_bert.builders.publish`)::

    README.md                 dataset card (licences, citation, ``configs:`` per table, what changed)
    v2/manifest.json          schema version, renamed columns, rows, columns, sha256 and bytes per table
    v2/<table>.parquet        one file per table
    v2/objectives-v1.json     task metadata (artifact: nasbench_bert.data.objectives)
    v2/surrogate-*-v1.npz     the pinned surrogate as plain arrays (artifact: docs/surrogate.md)

Artifacts (:mod:`nasbench_bert.data.artifacts`) are listed in the manifest's
``artifacts`` section with their sha256 and verified like the tables.

Schema 2 (nasbench-bert 0.3) renamed the parameter-count columns to their canonical names
(``manifest["renamed_columns"]``; :mod:`nasbench_bert.data.columns`). Its files live in
``v2/``, so a repository can keep the schema-1 folder ``v1/`` that earlier versions of the
package read, beside them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import atomic_write, replace_dir, staging_dir
from ..checks import check_real
from ..errors import (
    DataIntegrityError,
    DataNotFoundError,
    InvalidArgumentError,
    SourceUnavailableWarning,
    StaleDataError,
)
from . import pin
from .artifacts import fetch_artifacts
from .tables import (
    MANIFEST,
    SCHEMA_VERSION,
    VERSION_DIR,
    DataDir,
    check_manifest,
    sha256_file,
    user_cache_dir,
)

__all__ = ["download", "remember", "downloaded", "check_repo_id", "materialised_dir", "hub_cache_dir",
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


#: the record, in ``<user cache>/hub/``, of the tables ``nasbench-bert download`` fetched last
DOWNLOADED = "downloaded.json"


def remember(repo_id: str, data: DataDir) -> Path:
    """Record the materialised download ``data`` of ``repo_id`` as the tables the user cache
    serves when no tables were built there (step 3 of the resolution order).

    Why: a download lands in ``<user cache>/hub/<repo>/<commit>/``, a folder of its own per
    commit, so that a bad download never touches a good one; without this record the
    next ``Benchmark.load()`` looked only for built tables, failed, and advised the very
    ``download`` that had just run. Written atomically; returns the record's path.
    """
    return atomic_write(user_cache_dir() / "hub" / DOWNLOADED,
                        json.dumps({"repo_id": repo_id, "commit": data.path.parent.name}, indent=2) + "\n")


def downloaded(*, verify: bool = True) -> DataDir | None:
    """The tables :func:`remember` recorded, or None when there is no record. A record
    that names a folder gone, damaged or unreadable warns
    (:class:`SourceUnavailableWarning`, saying how to repair it) and is passed over."""
    rec = user_cache_dir() / "hub" / DOWNLOADED
    if not rec.is_file():
        return None
    try:
        r = json.loads(rec.read_text())
        repo_id, commit = r["repo_id"], r["commit"]
        check_repo_id(repo_id)
        if not isinstance(commit, str) or not re.fullmatch(r"[\w-]+", commit):
            raise DataIntegrityError(f"commit = {commit!r} is not a commit name")
        return DataDir.open(materialised_dir(repo_id, commit), verify=verify)
    except (ValueError, KeyError, TypeError, InvalidArgumentError, DataNotFoundError, DataIntegrityError,
            StaleDataError) as e:
        warnings.warn(f"{rec} names a download that cannot be used ({e}); passed over: run `nasbench-bert download` "
                      "again", SourceUnavailableWarning, stacklevel=3)
        return None


def check_repo_id(repo_id: str) -> None:
    """Raise ``ValueError`` unless ``repo_id`` has the Hub's ``namespace/name`` form."""
    if not isinstance(repo_id, str) or not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", repo_id):
        raise InvalidArgumentError(f"repo_id = {repo_id!r} is not a Hub repository id; allowed: 'namespace/name'")


def _evict(path: Path) -> None:
    """Remove a downloaded snapshot file and the blob it points to."""
    try:
        real = path.resolve()
        path.unlink(missing_ok=True)
        if real != path:
            real.unlink(missing_ok=True)
    except OSError:
        pass


#: seconds a whole :func:`download` may take by default (``timeout=`` overrides)
DEFAULT_TIMEOUT = 600.0


def _intact(done: Path, verify: bool) -> DataDir | None:
    """A materialised copy that still verifies end to end, or None (then it is evicted,
    so the next download replaces it instead of returning a damaged folder forever)."""
    if not (done / VERSION_DIR / MANIFEST).is_file():
        return None
    try:
        d = DataDir.open(done, verify=verify)
        if verify:
            d.verify_all()
        return d
    except (DataIntegrityError, DataNotFoundError):
        shutil.rmtree(done, ignore_errors=True)
        return None


def download(
    repo_id: str = DEFAULT_REPO_ID,
    revision: str = DEFAULT_REVISION,
    *,
    endpoint: str | None = None,
    token: str | bool | None = None,
    verify: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> DataDir:
    """Fetch a pinned revision of the tables, verify it and return the verified folder.

    Raises :class:`DataNotFoundError` when the repository, revision or a file does not
    exist, when the Hub cannot be reached and nothing is cached, or when the whole
    download takes longer than ``timeout`` seconds; :class:`DataIntegrityError` when the
    manifest is malformed or a file does not match it. Neither leaves anything where a
    later load looks. A verified copy that was damaged on disk later is found out at the
    next call, removed, and downloaded again.
    """
    check_repo_id(repo_id)
    if not isinstance(revision, str) or not revision:
        raise InvalidArgumentError(f"revision = {revision!r} is not allowed; allowed: a branch, tag or 40-hex commit sha")
    timeout = check_real("timeout", timeout, low=0, low_open=True, none=True)
    # a pinned commit that was verified before needs no network at all
    if _SHA_RE.match(revision):
        ok = _intact(materialised_dir(repo_id, revision), verify)
        if ok is not None:
            return ok
    hub = _HubFiles.connect(repo_id, revision, endpoint, token, timeout)
    mpath, manifest = _fetch_manifest(hub)
    done = materialised_dir(repo_id, mpath.parent.parent.name)  # .../snapshots/<commit>/v2/manifest.json
    ok = _intact(done, verify)
    if ok is not None and ok.manifest == manifest:
        return ok
    fetched = _fetch_tables(hub, manifest)
    fetched.update(fetch_artifacts(hub.get, manifest, VERSION_DIR, hub.where, _evict))  # pinned surrogate, objectives
    _materialise(done, fetched, mpath)
    return DataDir.open(done, verify=verify)


@dataclass(frozen=True)
class _HubFiles:
    """Files of one revision of a Hub repository, fetched through the Hub cache within
    one deadline; every failure becomes a :class:`DataNotFoundError` naming ``where``."""

    repo_id: str
    revision: str
    endpoint: str | None
    token: str | bool | None
    timeout: float | None
    #: ``repo@revision on host``, the prefix of every message
    where: str
    host: str
    deadline: float | None
    offline: bool
    local_only: bool

    @classmethod
    def connect(cls, repo_id: str, revision: str, endpoint: str | None, token: str | bool | None,
                timeout: float | None) -> "_HubFiles":
        """Start the deadline and probe the endpoint once, so that an unreachable one
        fails in seconds (files then come from the Hub cache only) instead of after retries."""
        import time

        from huggingface_hub import constants

        host = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
        deadline = None if timeout is None else time.monotonic() + timeout
        offline = bool(getattr(constants, "HF_HUB_OFFLINE", False))
        return cls(repo_id, revision, endpoint, token, timeout, f"{repo_id}@{revision} on {host}", host, deadline,
                   offline, offline or not _reachable(host))

    def get(self, filename: str) -> Path:
        """The local path of ``filename`` (in the Hub cache), downloaded if needed."""
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        where = self.where
        try:
            return Path(_with_deadline(lambda: hf_hub_download(
                self.repo_id, filename, repo_type=REPO_TYPE, revision=self.revision, endpoint=self.endpoint,
                token=self.token, cache_dir=hub_cache_dir(), local_files_only=self.local_only,
            ), self.deadline, f"{where}: the download of {filename!r} did not finish within timeout={self.timeout} s"))
        except LocalEntryNotFoundError:  # a subclass of EntryNotFoundError in huggingface_hub 2.x: first
            why = "HF_HUB_OFFLINE is set" if self.offline else f"{self.host} cannot be reached"
            raise DataNotFoundError(
                f"{where}: the Hub is unreachable ({why}) and {filename!r} is not in the cache {hub_cache_dir()}; "
                "connect, point HF_ENDPOINT at a mirror, or use source='release'") from None
        except RepositoryNotFoundError:
            raise DataNotFoundError(f"{where}: repository not found (check repo_id, or pass token= for a private repository)") from None
        except RevisionNotFoundError:
            raise DataNotFoundError(f"{where}: revision {self.revision!r} not found") from None
        except EntryNotFoundError:
            raise DataNotFoundError(f"{where}: the repository has no file {filename!r}; it is not a nasbench-bert data repository of schema {VERSION_DIR}") from None
        except DataNotFoundError:
            raise
        except Exception as e:  # transport boundary: httpx/HTTP errors from huggingface_hub, named in the message
            raise DataNotFoundError(f"{where}: download of {filename!r} failed ({e.__class__.__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None


def _fetch_manifest(hub: _HubFiles) -> tuple[Path, dict[str, Any]]:
    """The revision's manifest file and its checked content; a malformed or foreign one
    is evicted before anything is copied."""
    where = hub.where
    try:
        mpath = hub.get(f"{VERSION_DIR}/{MANIFEST}")
    except DataNotFoundError as e:
        if "has no file" in str(e):
            _refuse_older_schema(hub)
        raise
    try:
        manifest = json.loads(mpath.read_text())
        check_manifest(manifest, f"{where}: {VERSION_DIR}/{MANIFEST}", "the bad copy was removed; try again or use another source")
    except (ValueError, UnicodeDecodeError, DataIntegrityError) as e:
        _evict(mpath)  # never keep a malformed or foreign manifest: checked before anything is copied
        raise DataIntegrityError(str(e) if isinstance(e, DataIntegrityError) else
                                 f"{where}: {VERSION_DIR}/{MANIFEST} is not valid JSON ({e})") from None
    return mpath, manifest


def _refuse_older_schema(hub: _HubFiles) -> None:
    """Raise :class:`StaleDataError` when the revision, lacking this schema's folder,
    holds an older one's manifest (``v1/manifest.json``): one line that says what to do
    instead of "no such file"."""
    from .tables import SCHEMA_NOTES

    for old in range(SCHEMA_VERSION - 1, 0, -1):
        try:
            hub.get(f"v{old}/{MANIFEST}")
        except DataNotFoundError:
            continue
        raise StaleDataError(
            f"{hub.where}: this revision holds schema-{old} tables only (v{old}/; {SCHEMA_NOTES.get(old, 'an older layout')}); "
            f"this nasbench-bert reads schema {SCHEMA_VERSION} ({VERSION_DIR}/): use a revision published for schema "
            f"{SCHEMA_VERSION}, or build the tables locally with `nasbench-bert build-data`")


def _fetch_tables(hub: _HubFiles, manifest: dict[str, Any]) -> dict[str, Path]:
    """Every table of ``manifest`` (checked: every required table, and only known ones),
    by file name, each verified against its size and sha256; a bad blob is evicted."""
    where = hub.where
    fetched: dict[str, Path] = {}
    for name, meta in sorted(dict(manifest["tables"]).items()):
        p = hub.get(f"{VERSION_DIR}/{meta['file']}")
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
    return fetched


def _materialise(done: Path, fetched: dict[str, Path], mpath: Path) -> None:
    """Copy the verified files and the manifest to ``done`` atomically: stage beside the
    target, then swap it in (a failure leaves ``done`` as it was)."""
    staging = staging_dir(done)
    try:
        (staging / VERSION_DIR).mkdir(parents=True)
        for fname, src in fetched.items():
            shutil.copyfile(src, staging / VERSION_DIR / fname)
        shutil.copyfile(mpath, staging / VERSION_DIR / MANIFEST)
        replace_dir(staging, done)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


#: the port a URL without one connects to, by scheme (anything else: 80)
_DEFAULT_PORTS = {"https": 443, "http": 80}


def _reachable(url: str, timeout: float = 3.0) -> bool:
    """One TCP connection attempt to ``url``'s host."""
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(url)
    try:
        socket.create_connection((u.hostname, u.port or _DEFAULT_PORTS.get(u.scheme, 80)), timeout=timeout).close()
        return True
    except (OSError, ValueError):
        return False


def _with_deadline(fn, deadline: float | None, message: str):  # type: ignore[no-untyped-def]
    """Run ``fn`` and give up (``DataNotFoundError(message)``) at ``deadline``. The
    transfer thread is left to end on its own; nothing it writes is used."""
    import time
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as FutureTimeout

    if deadline is None:
        return fn()
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(fn).result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        raise DataNotFoundError(message) from None
    finally:
        pool.shutdown(wait=False)
