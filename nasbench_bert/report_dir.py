"""Where a report may be written: :func:`check_report_dir`, the check that
:func:`nasbench_bert.evaluation.evaluate` and ``proxies evaluate --report`` run before any
work.

Why a module of its own: the command line runs this check before it imports torch or
loads the benchmark (seconds it would otherwise spend before saying the folder is
wrong), so it must not pull in what writing a report needs (:mod:`.report`: matplotlib,
the tables, the leaderboard).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from .errors import InvalidArgumentError

#: the files of a report folder
REPORT_FILES: tuple[str, ...] = ("table.md", "table.tex", "scatter.png", "cells.png", "values.parquet")


def check_report_dir(report: Any, field_name: str = "report", *, cache: Any = None,
                     cache_name: str = "cache") -> Path | None:
    """``report`` as a folder to write the report to (None: no report), checked before
    any work: a path (str or os.PathLike) that is absent, an empty folder or an earlier
    report; its parent must be creatable. ``cache``: the sweep's cache folder (named
    ``cache_name`` in the message), which the report folder may not be, hold or lie in -
    the report is swapped in as a whole folder and allows no other files, the cache fills
    its folder with parts, so the two would refuse or replace each other after the work."""
    if report is None:
        return None
    if isinstance(report, bool) or not isinstance(report, (str, os.PathLike)) or not str(report).strip():
        raise InvalidArgumentError(f"{field_name} = {report!r} is not allowed; allowed: None or a folder path (str or "
                                   "os.PathLike) that is absent, empty or an earlier report")
    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidArgumentError(f"{field_name} = {str(report)!r} needs matplotlib for the figures: "
                                   "pip install 'nasbench-bert[report]'")
    path = Path(report).expanduser()
    if path.exists() and not path.is_dir():
        raise InvalidArgumentError(f"{field_name} = {str(report)!r} is a file; allowed: a folder that is absent, empty "
                                   "or an earlier report")
    if path.is_dir():
        other = sorted(p.name for p in path.iterdir() if p.name not in REPORT_FILES)
        if other:
            raise InvalidArgumentError(f"{field_name} = {str(report)!r} holds files that are not a report's ({other[:5]}); "
                                       f"allowed: a folder that is absent, empty or holds only {list(REPORT_FILES)}")
    _apart_from_cache(path, field_name, cache, cache_name)
    parent = path.resolve().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidArgumentError(f"{field_name} = {str(report)!r}: {str(parent)!r} is not a writable folder")
    return path


def _apart_from_cache(path: Path, field_name: str, cache: Any, cache_name: str) -> None:
    if not isinstance(cache, (str, os.PathLike)):  # None, or a bad value the cache's own check names
        return
    r, c = path.resolve(), Path(cache).expanduser().resolve()
    how = "is" if r == c else "lies inside" if c in r.parents else "holds" if r in c.parents else None
    if how is not None:
        raise InvalidArgumentError(f"{field_name} = {str(path)!r} {how} the cache folder {cache_name} = {str(cache)!r}; "
                                   "allowed: a report folder apart from the cache (neither inside the other)")
