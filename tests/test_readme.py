"""The README's quickstart runs as written, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from conftest import ROOT


def _quickstart() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quickstart", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_quickstart_runs_and_prints_its_comment(data_dir, monkeypatch):
    pytest.importorskip("torch")
    code = _quickstart()
    assert len(code.strip().splitlines()) <= 10
    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md quickstart", "exec"), {})
    first = out.getvalue().splitlines()[0]
    promised = re.search(r"print\(r\.glue.*#\s*(.+)", code).group(1).strip()
    assert first == promised
