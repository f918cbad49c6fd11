"""Building the tables writes nothing to stdout: a user's script (the README quickstart, run
from the wheel by .ci/deps_jobs.sh) owns its stdout. rich's bar, on its default console,
printed a blank line there when it stopped, even with nothing drawn (not a terminal)."""

from __future__ import annotations

from conftest import UPSTREAM
from nasbench_bert.data.release import build_tables


def test_build_tables_keeps_stdout_clean(tmp_path, capsys):
    build_tables(UPSTREAM, tmp_path / "data", progress=True)
    out, _ = capsys.readouterr()
    assert out == ""
