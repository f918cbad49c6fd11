"""One small error hierarchy for the whole package.

Every error says what was wrong, what was allowed and what to do next, so that a user
never has to read a traceback into library internals to understand a bad input.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any


class NasBenchError(Exception):
    """Base class of every error raised on purpose by :mod:`nasbench_bert`."""


class InvalidArchitectureError(NasBenchError, ValueError):
    """An architecture (FlexiBERT arch or NAS-Bench-NLP recipe) is not in its search space.

    Also a :class:`ValueError`, so generic input-validation code catches it.
    """


class InvalidArgumentError(NasBenchError, ValueError):
    """An argument of a public function or CLI option is outside what it allows.

    The message names the argument and the allowed values. Also a :class:`ValueError`, so
    code that already catches bad values keeps working.
    """


class InvalidRecipeError(InvalidArchitectureError):
    """A NAS-Bench-NLP recipe is malformed (unknown op, dangling input, cycle, ...)."""


class NotEvaluatedError(NasBenchError, KeyError):
    """A valid architecture that the benchmark never trained.

    Also a :class:`KeyError` (it is a failed lookup), but with a readable message.
    """

    def __str__(self) -> str:  # KeyError would repr() the message; keep it readable
        return str(self.args[0]) if self.args else ""


class DataIntegrityError(NasBenchError):
    """A table on disk is missing, truncated or does not match its manifest checksum."""


class StaleDataError(DataIntegrityError):
    """Intact tables written by another version of nasbench-bert (they lack columns this
    version declares). The resolution order rebuilds a stale user cache; an explicit path
    gets this error and the command that rebuilds it."""


class DataNotFoundError(NasBenchError, FileNotFoundError):
    """No benchmark tables could be found or built from any configured source."""


class OutOfBudgetError(NasBenchError):
    """A query would exceed the simulated training-time budget set on the benchmark."""


class MissingExtraError(NasBenchError, ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra that brings it.

    A :class:`NasBenchError`, so the CLI prints it as one line (exit 2), and a
    :class:`ModuleNotFoundError` (``name`` is the missing module), so ``except
    ImportError`` and ``pytest.importorskip`` treat it as the import failure it is.
    """


class IncompleteSweepError(NasBenchError, RuntimeError):
    """Some jobs of a sweep ended without a result (killed, preempted, out of time or
    memory). The parts the others wrote are in the cache: the message says so, and that
    running the same call again computes only the missing ones."""


class SubmissionError(NasBenchError, RuntimeError):
    """The scheduler refused a sweep's jobs (``sbatch`` exited with an error: an unknown
    partition or account, a time or memory limit above the partition's). Nothing was
    submitted and nothing computed; the message carries the scheduler's own words."""


class NasBenchWarning(UserWarning):
    """Base class of the package's own warnings. Each prints as one line,
    ``nasbench-bert: <Category>: <message>``, instead of Python's form, which adds the
    file and line inside the library and echoes that source line (a newcomer's first
    ``Benchmark.load()`` showed ``resolve.py:260`` and a line of its code): :func:`_one_line`."""


class SourceUnavailableWarning(NasBenchWarning):
    """A data source failed (offline, missing, corrupt); the next one in the order is tried."""


class InputRowsWarning(NasBenchWarning):
    """Rows of a user's table were merged or dropped because an explicit option said so
    (``scoring.score``'s ``duplicates=`` / ``unknown_ids=``); the message says which and
    how many, so that what was scored is never a silent subset of what was given."""


@dataclass(frozen=True)
class InputProblem:
    """One input a long job would need and cannot use: ``field`` names the argument (CLI
    option without its dashes), ``message`` says what is wrong and what is allowed."""

    field: str
    message: str


class PreflightError(InvalidArgumentError):
    """The inputs of a long job (a build, a sweep) checked before its first step, and some
    unusable: every problem at once (:attr:`problems`, each naming its field), so a user
    fixes them in one go instead of finding the next after hours of work."""

    def __init__(self, problems: list[InputProblem]) -> None:
        self.problems = list(problems)
        lines = [p.message for p in self.problems]
        head = lines[0] if len(lines) == 1 else f"{len(lines)} inputs cannot be used:\n  " + "\n  ".join(lines)
        super().__init__(head)

    def __reduce__(self) -> tuple[type, tuple[list[InputProblem]]]:  # pickled whole (Ray returns errors by pickle)
        return (type(self), (self.problems,))


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None) -> str:
    """How a warning prints: a :class:`NasBenchWarning` as one line naming its category
    (what a filter selects it by); every other warning as Python formats it. Installed
    over :func:`warnings.formatwarning` when the package is imported, chained to the
    formatter that was there, so nobody else's warnings change."""
    if isinstance(category, type) and issubclass(category, NasBenchWarning):
        return f"nasbench-bert: {category.__name__}: {message}\n"
    return _formatwarning(message, category, filename, lineno, line)


if getattr(warnings.formatwarning, "__module__", None) != __name__:  # once, also when this module is reloaded
    _formatwarning: Any = warnings.formatwarning
    warnings.formatwarning = _one_line
