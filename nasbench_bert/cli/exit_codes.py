"""The error-to-exit-code rule of ``nasbench-bert``, in one place.

A command's handler raises; this module decides what the user sees and the exit code:

=====================================  ====  =========================================
what was raised                        exit  what is printed
=====================================  ====  =========================================
nothing                                0     the command's own output
``SystemExit`` (e.g. a failed verify)  its   what the command printed before
``KeyboardInterrupt``                  130   ``interrupted`` (the shell's convention)
``BrokenPipeError`` (``| head``)       141   nothing (stdout is closed quietly)
``OSError``                            2     one ``error:`` line, with the file name
``NasBenchError`` or ``ValueError``    2     one ``error:`` line
``ModuleNotFoundError`` for torch      2     the ``[torch]`` extra's one line
=====================================  ====  =========================================

Why the messages are rewritten: the library names its arguments (``cpus_per_task = 0``),
a command-line user typed options (``--slurm-cpus``); :func:`as_flags` writes each name as
the option of the command that ran. ``NASBENCH_BERT_TRACEBACK=1`` lets every error out
with its traceback (for bug reports and the fuzz suite).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable

from ..errors import NasBenchError
from ..slurm import FIELD_FLAGS as SLURM_FIELD_FLAGS
from .common import err_console, print_error

#: Python argument names whose option is not ``--`` and the name with dashes; each applies
#: only to a command that has that option (``time`` is ``--slurm-time`` where there is one)
FIELD_FLAGS: dict[str, str] = {**SLURM_FIELD_FLAGS, "algorithm": "--algorithms", "version": "--proxy-version",
                               "proxy": "--proxies", "finetune_config.batch_size": "--finetune-batch-size"}
#: ``name = `` in a library message: the argument it names (dotted for a config's field,
#: ``a/b`` for two at once), at a line's start or after a space, comma or bracket
_NAMED = re.compile(r"(?:(?<=^)|(?<=[\s,(]))([A-Za-z_][\w.]*(?:/[A-Za-z_][\w.]*)*)(?= = )", re.M)
#: the modules whose ``ModuleNotFoundError`` carries the package's own one line (the
#: ``[torch]`` extra: :mod:`nasbench_bert._torch`); any other missing module is a bug to show whole
_ONE_LINE_MISSING = frozenset({"torch"})
#: the environment variable that lets every error out with its traceback
TRACEBACK_ENV = "NASBENCH_BERT_TRACEBACK"


def command_options(ap: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """``dest -> option`` of every option of the command ``args`` ran (its global options,
    then each subcommand's down to the one that ran)."""
    out: dict[str, str] = {}
    parser: argparse.ArgumentParser | None = ap
    while parser is not None:
        chosen = None
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                chosen = a.choices.get(getattr(args, a.dest, None) or "")
            elif a.option_strings:
                out[a.dest] = next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
        parser = chosen
    return out


def as_flags(message: str, options: dict[str, str]) -> str:
    """``message`` with each Python argument it names (``report = ...``, ``cpus_per_task
    = 0``, ``finetune_config.batch_size = 0``) written as the option that set it
    (``--report``, ``--slurm-cpus``, ``--finetune-batch-size``): the library names its
    arguments, a command-line user typed options. Names no option of the command sets
    are left as they are."""
    typed = set(options.values())

    def flag(name: str) -> str | None:
        if FIELD_FLAGS.get(name) in typed:
            return FIELD_FLAGS[name]
        if name in options:
            return options[name]
        return flag(name.rsplit(".", 1)[1]) if "." in name else None

    def one(m: re.Match[str]) -> str:
        names = [flag(n) for n in m.group(1).split("/")]
        return m.group(1) if None in names else "/".join(n for n in names if n is not None)

    return _NAMED.sub(one, message)


def run_command(ap: argparse.ArgumentParser, args: argparse.Namespace, fn: Callable[[argparse.Namespace], object]) -> int:
    """Run one command's handler ``fn`` and return its exit code by the rule above."""
    try:
        fn(args)
    except KeyboardInterrupt:  # one line and the shell's convention, not a traceback
        err_console.print("interrupted", highlight=False)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): nothing is wrong; keep the exit flush quiet too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:
        if os.environ.get(TRACEBACK_ENV):
            raise
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        print_error(as_flags(e.strerror or str(e), command_options(ap, args)) + where)
        return 2
    except (NasBenchError, ValueError) as e:
        if os.environ.get(TRACEBACK_ENV):  # for bug reports and the fuzz suite
            raise
        print_error(as_flags(str(e), command_options(ap, args)))  # the options typed, not the library's argument names
        return 2
    except ModuleNotFoundError as e:  # a command that needs the [torch] extra, without it: _torch's one line
        if e.name not in _ONE_LINE_MISSING or os.environ.get(TRACEBACK_ENV):
            raise
        print_error(str(e))
        return 2
    return 0
