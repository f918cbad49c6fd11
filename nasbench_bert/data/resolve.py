"""Where the benchmark tables come from: one documented order, no guessing.

:func:`resolve` tries, first match wins:

1. an explicit ``path``;
2. ``$NASBENCH_BERT_DATA``;
3. the user cache (:func:`~nasbench_bert.data.tables.user_cache_dir`): tables built there,
   else the tables ``nasbench-bert download`` fetched into it last
   (:func:`~nasbench_bert.data.hub.downloaded`);
4. the Hugging Face Hub at the revision this package pins
   (:data:`~nasbench_bert.data.pin.PINNED_REVISION`, written by ``nasbench-bert publish``),
   verified and cached (:mod:`nasbench_bert.data.hub`);
5. a build from the authors' release files - ``$NASBENCH_BERT_RELEASE`` (a folder or a
   base URL), else their GitHub repositories at the pinned commits - into the user
   cache (:mod:`nasbench_bert.data.release`).

Nothing depends on the current directory or on where the package is installed. Each
source that is tried and fails (offline, missing, corrupt) emits a
:class:`~nasbench_bert.errors.SourceUnavailableWarning` saying why and what is tried
next; when every source fails, :class:`~nasbench_bert.errors.DataNotFoundError` lists
all the reasons and the fix.
"""

from __future__ import annotations

import os
import re
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import (
    DataNotFoundError,
    InvalidArgumentError,
    NasBenchError,
    SourceUnavailableWarning,
    StaleDataError,
)
from . import pin
from .tables import MANIFEST, VERSION_DIR, DataDir, has_data, other_schema, user_cache_dir

ORDER: tuple[str, ...] = ("path", "$NASBENCH_BERT_DATA", "user cache", "hub", "release")


def release_source() -> str:
    """``$NASBENCH_BERT_RELEASE`` if set, else ``"github"`` (the pinned commits)."""
    return os.environ.get("NASBENCH_BERT_RELEASE") or "github"


def _hub_step(verify: bool) -> DataDir:
    if pin.PINNED_REVISION is None:
        raise DataNotFoundError("this version of nasbench-bert pins no Hub revision (nothing published for it yet)")
    from .hub import download

    return download(pin.PINNED_REPO_ID, pin.PINNED_REVISION, verify=verify)


#: what a caller above the data layer adds to tables it just built (``Benchmark.load`` passes
#: the writer of the pinned surrogate and objectives-v1.json, so that tables built on first
#: load are the folder ``build-data`` writes; this layer never imports the surrogate)
Complete = Callable[[DataDir], Any]


def _release_step(progress: bool, verify: bool, complete: Complete | None = None) -> DataDir:
    from .release import build_tables

    dest = user_cache_dir()
    build_tables(release_source(), dest, progress=progress)
    return _completed(DataDir.open(dest, verify=verify), complete)


def _completed(data: DataDir, complete: Complete | None) -> DataDir:
    """``data``, just built, after ``complete`` added its artifacts to it."""
    if complete is not None:
        complete(data)
    return data


def resolve(path: str | os.PathLike[str] | None = None, *, hub: bool = True, build: bool = True, progress: bool = True,
            verify: bool = True, complete: Complete | None = None) -> DataDir:
    """Find (or fetch, or build) the benchmark tables in the order of the module doc.

    ``hub=False`` skips step 4 and ``build=False`` step 5 (``Benchmark.load(source="local")``
    uses neither). An explicit ``path`` or ``$NASBENCH_BERT_DATA`` that holds no tables
    is an error, never silently passed over. ``complete`` runs on tables step 5 has just
    built (:data:`Complete`).
    """
    if path is not None:
        return DataDir.open(path, verify=verify)
    env = os.environ.get("NASBENCH_BERT_DATA")
    if env:
        if not has_data(Path(env)):
            stale = other_schema(Path(env))
            if stale:  # an explicit location is never rebuilt behind the user's back: refused, with the command
                raise StaleDataError(f"$NASBENCH_BERT_DATA: {stale}")
            raise DataNotFoundError(
                f"$NASBENCH_BERT_DATA={env} holds no {VERSION_DIR}/{MANIFEST}; unset it, or build there with "
                f"`nasbench-bert build-data --out {env}`")
        return DataDir.open(env, verify=verify)
    cache = user_cache_dir()
    if not has_data(cache):
        from .hub import downloaded

        fetched = downloaded(verify=verify)
        if fetched is not None:
            return fetched
    failures = [f"user cache {cache}: empty"]
    stale = None if has_data(cache) else other_schema(cache)
    if stale:  # e.g. v1/ from nasbench-bert 0.2: left for that version, this one's is built beside it
        if not (hub or build):
            raise StaleDataError(f"user cache: {stale}")
        failures = [f"user cache: {stale}"]
        warnings.warn(f"user cache: {stale}; fetching or building them now", SourceUnavailableWarning, stacklevel=2)
    elif has_data(cache):
        try:
            return DataDir.open(cache, verify=verify)
        except StaleDataError as e:  # kept from another nasbench-bert: fetch or build afresh (replaced atomically)
            if not (hub or build):
                raise
            failures = [f"user cache {cache}: {e}"]
            warnings.warn(f"the user cache holds tables of another nasbench-bert version ({e}); fetching them afresh",
                          SourceUnavailableWarning, stacklevel=2)
    steps = ([("hub", lambda: _hub_step(verify))] if hub else []) + \
            ([(f"release ({release_source()})", lambda: _release_step(progress, verify, complete))] if build else [])
    for i, (name, step) in enumerate(steps):
        try:
            return step()
        except (NasBenchError, OSError) as e:
            failures.append(f"{name}: {e}")
            nxt = f"trying {steps[i + 1][0]}" if i + 1 < len(steps) else "no source left"
            warnings.warn(f"data source {name}: {e}; {nxt}", SourceUnavailableWarning, stacklevel=2)
    raise DataNotFoundError(
        "no nasbench-bert tables found (order: " + ", ".join(ORDER) + "):\n  " + "\n  ".join(failures)
        + "\nFix: " + _fix(cache))


def _fix(cache: Path) -> str:
    """What to do, given what is already set: never advice to set what is set."""
    probe = cache
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        where = "$NASBENCH_BERT_CACHE" if os.environ.get("NASBENCH_BERT_CACHE") else "the user cache"
        return (f"{where} ({cache}) is not writable: set $NASBENCH_BERT_CACHE to a folder you can write to, or point "
                "$NASBENCH_BERT_DATA at built tables.")
    if os.environ.get("NASBENCH_BERT_RELEASE"):
        return (f"$NASBENCH_BERT_RELEASE is set ({os.environ['NASBENCH_BERT_RELEASE']}); the release step's error above "
                "says what is wrong there. Or download with `nasbench-bert download --revision <sha>`.")
    return ("point $NASBENCH_BERT_RELEASE at the release files (a folder or base URL) and run `nasbench-bert build-data`, "
            "or download with `nasbench-bert download --revision <sha>`.")


def _from_release(location: str | None, verify: bool, progress: bool, complete: Complete | None = None) -> DataDir:
    from .release import build_tables

    src = location or "github"
    dest = user_cache_dir() / "release" / re.sub(r"[^\w.-]+", "_", src)[-80:]
    if not (dest / VERSION_DIR / MANIFEST).is_file():
        build_tables(src, dest, progress=progress)
        return _completed(DataDir.open(dest, verify=verify), complete)
    return DataDir.open(dest, verify=verify)


def parse_source(spec: str) -> tuple[str, str | None]:
    """``"hub"``, ``"hub:<endpoint URL>"``, ``"release"``, ``"release:<folder or URL>"``,
    ``"local"`` or ``"local:<folder>"`` -> (kind, argument)."""
    if not isinstance(spec, str):
        raise InvalidArgumentError(f"source = {spec!r} is not allowed; allowed: 'hub', 'hub:<endpoint>', 'release', 'release:<folder|URL>', 'local', 'local:<folder>'")
    kind, _, arg = spec.partition(":")
    if kind not in _FETCHERS or (spec.endswith(":") and not arg):
        raise InvalidArgumentError(f"source = {spec!r} is not allowed; allowed: 'hub', 'hub:<endpoint>', 'release', 'release:<folder|URL>', 'local', 'local:<folder>'")
    return kind, (arg or None)


def fetch(
    sources: Sequence[str] | str = ("hub", "release"),
    *,
    repo_id: str = pin.PINNED_REPO_ID,
    revision: str = pin.PINNED_REVISION or "main",
    token: str | bool | None = None,
    verify: bool = True,
    progress: bool = True,
    complete: Complete | None = None,
) -> DataDir:
    """Try each source in order; the first whose files verify wins (``complete``: as in
    :func:`resolve`, for tables a ``release`` source builds).

    A source that fails (unreachable, missing, corrupt) emits a
    :class:`SourceUnavailableWarning` naming the reason and the next source. When all
    fail, :class:`DataNotFoundError` lists every reason.
    """
    if isinstance(sources, str):
        sources = [sources]
    specs = [parse_source(s) for s in sources]
    if not specs:
        raise InvalidArgumentError("sources is empty; allowed: a list of 'hub', 'hub:<endpoint>', 'release[:<folder|URL>]', 'local[:<folder>]'")
    failures: list[str] = []
    for i, (spec, (kind, arg)) in enumerate(zip(sources, specs)):
        try:
            return _FETCHERS[kind](arg, repo_id=repo_id, revision=revision, token=token, verify=verify, progress=progress,
                                   complete=complete)
        except NasBenchError as e:
            failures.append(f"{spec}: {e}")
            nxt = f"trying {sources[i + 1]!r}" if i + 1 < len(specs) else "no source left"
            warnings.warn(f"data source {spec!r} failed ({e}); {nxt}", SourceUnavailableWarning, stacklevel=2)
    raise DataNotFoundError("no data source worked:\n  " + "\n  ".join(failures))


def _fetch_hub(arg: str | None, *, repo_id: str, revision: str | None, token: Any, verify: bool, progress: bool,
               **_: Any) -> DataDir:
    from .hub import download

    return download(repo_id, revision, endpoint=arg, token=token, verify=verify)


def _fetch_release(arg: str | None, *, verify: bool, progress: bool, complete: Complete | None = None,
                   **_: Any) -> DataDir:
    return _from_release(arg, verify, progress, complete)


def _fetch_local(arg: str | None, *, verify: bool, **_: Any) -> DataDir:
    return resolve(arg, hub=False, build=False, verify=verify)


#: a source's kind (:func:`parse_source`) -> how its tables are fetched
_FETCHERS: dict[str, Callable[..., DataDir]] = {"hub": _fetch_hub, "release": _fetch_release, "local": _fetch_local}


def default_locations(release: str | None, out: str | None) -> tuple[str, str]:
    """Release source and output folder for ``build-data``: ``release`` else
    $NASBENCH_BERT_RELEASE else ``"github"``; ``out`` else the user cache (step 3)."""
    return release or release_source(), out or str(user_cache_dir())


class Source(StrEnum):
    """The one-word values of ``fetch(source=...)``; the others are forms with a colon
    (``hub:<endpoint>``, ``release[:<folder|URL>]``, ``local:<folder>``) or a list of them."""

    AUTO = "auto"
    LOCAL = "local"
    HUB = "hub"


_SOURCE_WORDS: tuple[str, ...] = tuple(s.value for s in Source)
_SOURCE_FORMS = ("'auto', 'local', 'hub', 'release', or a list of 'hub', 'hub:<endpoint>', 'release[:<folder|URL>]', "
                 "'local[:<folder>]'")


def load_data(path: str | os.PathLike[str] | None = None, *, source: str | Sequence[str] = "auto",
              repo_id: str | None = None, revision: str | None = None, endpoint: str | None = None,
              token: str | bool | None = None, verify: bool = True, progress: bool = True,
              complete: Complete | None = None) -> DataDir:
    """The tables from ``source`` (the forms of :meth:`nasbench_bert.Benchmark.load`),
    with every argument checked first: a bad one names itself and the allowed forms,
    and nothing is downloaded or built for a call that cannot succeed. ``complete`` runs
    on tables built here from release files (:data:`Complete`)."""
    from . import hub

    if not isinstance(source, (str, list, tuple)) or (not isinstance(source, str)
                                                       and not all(isinstance(x, str) for x in source)):
        raise InvalidArgumentError(f"source = {source!r} is not allowed; allowed values: {_SOURCE_FORMS}")
    if isinstance(source, str) and source not in _SOURCE_WORDS and not source.startswith(
            ("hub:", "release", "local:")):
        raise InvalidArgumentError(f"source = {source!r} is not allowed; allowed values: {_SOURCE_FORMS}")
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"path = {path!r} is not allowed; allowed: a folder (str or path) or None")
    if source in (Source.AUTO, Source.LOCAL):
        if repo_id is not None or revision is not None or endpoint is not None:
            raise InvalidArgumentError(f"repo_id/revision/endpoint only apply to source='hub'; got source = {source!r}")
        auto = source == Source.AUTO  # the whole resolution order; "local" stops before the network
        return resolve(path, hub=auto, build=auto, progress=progress, verify=verify, complete=complete)
    if path is not None:
        raise InvalidArgumentError(f"path only applies to source='auto' or 'local'; got source = {source!r}")
    if source == Source.HUB:
        return hub.download(repo_id or hub.DEFAULT_REPO_ID, revision or hub.DEFAULT_REVISION, endpoint=endpoint,
                            token=token, verify=verify)
    if endpoint is not None:
        raise InvalidArgumentError("endpoint= applies to source='hub'; in a source list write 'hub:<endpoint>'")
    return fetch(source, repo_id=repo_id or hub.DEFAULT_REPO_ID, revision=revision or hub.DEFAULT_REVISION,
                 token=token, verify=verify, progress=progress, complete=complete)
