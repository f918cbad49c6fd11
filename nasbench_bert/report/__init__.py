"""A paper-ready report of one :class:`~nasbench_bert.evaluation.Evaluation`: the table,
the two figures and the per-arch values a proxy paper needs, written the same way for
everyone (``evaluate(..., report=DIR)``, ``nasbench-bert proxies evaluate ... --report DIR``).

Why a module of its own: every proxy paper drew its own scatter, its own per-cell plot
and its own LaTeX table, each differently, and the numbers in them could drift from the
ones the harness computed. Here every figure is read from the Evaluation (or from the
committed leaderboard, labelled as such), so the report cannot disagree with the table
the harness printed. The folder holds:

* ``table.md`` / ``table.tex``: per benchmark and semantics, on the headline target
  (GLUE average; PTB test loss), the proxy beside the compared proxies, the published
  analytic scores and the trivial baselines the Evaluation scored on the same rows, and
  the published and standard proxies the Evaluation did not compute, read from
  ``docs/leaderboard.json`` (marked †, with that file's ids and input batch named under
  the table: those rows are on all 500 ids, not necessarily on the candidate's rows).
  Every metric with its 95 % bootstrap interval. The LaTeX is a booktabs ``tabular``.
* ``scatter.png``: score against the headline target, coloured by the (layers, hidden
  size) cell, one panel per semantics, with the noise ceiling (the best τ a score can
  reach against one noisy GLUE run per arch) stated.
* ``cells.png``: the within-cell τ in each (layers, hidden size) cell with its bootstrap
  interval, the proxy beside the trivial baselines that vary inside a cell.
* ``values.parquet``: one row per arch x semantics x score, with what produced the
  value: proxy name, semantics, input batch key, seed, dtype, device, the proxy's registry
  version (for a callable: its cache key), the package version, the model key and
  whether it came from the cache.

The folder is built beside the target and swapped in whole (:mod:`.atomic`): an error
leaves no partial report. A target that exists must be an empty folder or an earlier
report (nothing but the report's files); anything else is refused, so a report never
deletes a user's files.

This package sits below :mod:`nasbench_bert.evaluation` (which calls it) and does not
import it. Its modules, each importing only those listed before it: :mod:`.inputs` (what
a report is made from: the Evaluation, the provenance, each row's target and cell, the
leaderboard), :mod:`.cells` (the within-cell τ per cell), :mod:`.tables` (Markdown and
LaTeX), :mod:`.figures` (the two PNGs), :mod:`.values` (the per-arch values); this module
writes the folder. Every public name is importable from ``nasbench_bert.report`` itself.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, TypeVar

from ..atomic import replace_dir, staging_dir
from ..errors import InvalidArgumentError
from ..report_dir import REPORT_FILES, check_report_dir
from ..vocabulary import BenchmarkLike
from .cells import cell_taus
from .figures import _cells_png, _ceiling_line, _scatter_png
from .inputs import LEADERBOARD, EvaluationLike, Provenance, _read_leaderboard, _ReportData
from .tables import METRICS, _latex, _markdown, _tables, metric_cell, tex_escape
from .values import _values_frame

# kept importable from here, as they were from the one module report.py: the figures' sizes,
# the leaderboard groups the table adds
from .figures import FIG_DPI as FIG_DPI, PANEL_SIZE as PANEL_SIZE, SCATTER_TITLE as SCATTER_TITLE
from .inputs import LEADERBOARD_GROUPS as LEADERBOARD_GROUPS


#: the evaluation :func:`report_run` was given, handed back as the same type
_E = TypeVar("_E", bound=EvaluationLike)


# -- the entry point ---------------------------------------------------------------------------
def write_report(evaluation: EvaluationLike, directory: str | os.PathLike[str], provenance: Provenance, *,
                 bench: BenchmarkLike, leaderboard: str | os.PathLike[str] | None = LEADERBOARD) -> Path:
    """Write the report of ``evaluation`` to ``directory`` (see the module docstring);
    return the folder. ``provenance``: what produced the values (:class:`Provenance`).
    ``bench``: the benchmark the Evaluation ranked on (targets and cells). ``leaderboard``:
    the JSON the published rows are read from (None or a missing file: none are added,
    and the table says so)."""
    target = check_report_dir(directory)
    assert target is not None
    if not isinstance(provenance, Provenance):
        raise InvalidArgumentError(f"provenance = {provenance!r} is not allowed; allowed: a report.Provenance")
    board = _read_leaderboard(leaderboard)
    data = _ReportData.of(evaluation, bench, provenance)
    stage = staging_dir(target)
    try:
        tables = _tables(evaluation, board, provenance)
        (stage / "table.md").write_text(_markdown(evaluation, tables, board, data), encoding="utf-8")
        (stage / "table.tex").write_text(_latex(evaluation, tables, board), encoding="utf-8")
        ceiling = _ceiling_line(board, bench)
        _scatter_png(stage / "scatter.png", evaluation, data, ceiling)
        _cells_png(stage / "cells.png", evaluation, data)
        _values_frame(evaluation, data, provenance).to_parquet(stage / "values.parquet", index=False)
        missing = [f for f in REPORT_FILES if not (stage / f).is_file()]
        if missing:
            raise RuntimeError(f"report files not written: {missing}")
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()  # an empty folder the user made: replaced by the report
        return replace_dir(stage, target)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def report_run(evaluation: _E, directory: Path | None, run: Any) -> _E:
    """:func:`write_report` of what :func:`nasbench_bert.evaluation.evaluate` found, when
    it was asked for one (``directory`` from :func:`check_report_dir`; None: nothing is
    written); returns ``evaluation``. ``run``: evaluate's checked arguments (its ``_Run``,
    read by :meth:`Provenance.of_run`; its ``bench`` gives the targets and cells)."""
    if directory is not None:
        write_report(evaluation, directory, Provenance.of_run(run), bench=run.bench)
    return evaluation


__all__ = ["write_report", "report_run", "check_report_dir", "Provenance", "cell_taus", "metric_cell", "tex_escape", "REPORT_FILES",
           "LEADERBOARD", "METRICS"]
