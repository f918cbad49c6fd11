"""The ``nasbench-bert`` command line: one module per subcommand group, each registering
its own parsers and owning its handlers.

* :mod:`~nasbench_bert.cli.data_lookup` - ``info``, ``query``, ``sample``, ``export``;
* :mod:`~nasbench_bert.cli.data_build` - ``build-data``, ``build-surrogate``,
  ``build-proxy-values``, ``download``;
* :mod:`~nasbench_bert.cli.proxies` - ``proxies compute``, ``export``, ``values``, and
  :mod:`~nasbench_bert.cli.proxies_rank` - ``proxies score``, ``evaluate``;
* :mod:`~nasbench_bert.cli.search` - ``search run``, ``compare``, ``cv``;
* :mod:`~nasbench_bert.cli.hardware` - ``hardware``;
* plugins' subcommands, found through the entry-point group ``nasbench_bert.cli``
  (``build-entry`` and ``publish`` from :mod:`nasbench_bert.builders`).

Below them, :mod:`~nasbench_bert.cli.common` holds the consoles, the options several
commands share and the checks every handler runs on its flags before anything heavy loads;
:mod:`~nasbench_bert.cli.exit_codes` holds the rule that turns an error into one line and
an exit code. A new command is a module with an ``add_*(sub)`` function that
:func:`build_parser` calls.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from .common import console, err_console, print_error
from .data_build import add_build_data, add_build_proxy_values, add_download
from .data_lookup import add_export, add_info, add_query, add_sample
from .exit_codes import FIELD_FLAGS, as_flags, run_command
from .hardware import add_hardware
from .proxies import add_proxies
from .search import add_search

__all__ = ["FIELD_FLAGS", "as_flags", "build_parser", "console", "err_console", "main", "print_error"]

#: the core's subcommand groups, in ``--help`` order
_GROUPS = (add_info, add_query, add_sample, add_export, add_build_data, add_build_proxy_values, add_download,
           add_proxies, add_hardware, add_search)


def build_parser() -> argparse.ArgumentParser:
    """The ``nasbench-bert`` parser: the global options, one registering function per
    subcommand, and the plugins' subcommands (``build-entry``, ``publish``)."""
    ap = argparse.ArgumentParser(prog="nasbench-bert", description="Query the FlexiBERT and NAS-Bench-NLP benchmarks")
    ap.add_argument("--data", default=None, help="data directory (default: the documented order, docs/data.md 'Where Benchmark.load() finds them')")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for add in _GROUPS:
        add(sub)
    _load_plugins(sub)
    return ap


def _load_plugins(sub: Any) -> None:
    """Subcommands other packages register under the entry-point group
    ``nasbench_bert.cli`` (``nasbench_bert.builders`` adds ``build-entry`` and
    ``publish`` this way, so the core never imports the builders). A plugin whose
    dependencies are missing is skipped."""
    from importlib.metadata import entry_points

    seen: set[str] = set()
    for ep in entry_points(group="nasbench_bert.cli"):
        if ep.name in seen:  # the same plugin seen twice (e.g. an editable and a regular install)
            continue
        seen.add(ep.name)
        try:
            ep.load()(sub)
        except ImportError:  # pragma: no cover - an extra is not installed
            continue


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; library errors become one red line and exit code 2
    (:mod:`~nasbench_bert.cli.exit_codes`)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    return run_command(ap, args, args.fn)
