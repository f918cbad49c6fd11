"""docs/evaluate.md runs as written: every python block is executed, in order, in one
namespace (the page's examples build on each other), and every shell block that calls
``nasbench-bert`` is run by bash.

Only the size is changed, never the code: ``proxies.evaluate`` and the CLI get a tiny
id subset (the first few of the ids a block asks for), a small batch and few bootstrap
resamples, so the page's examples - the failing-on-NAS-Bench-NLP ``token_diversity`` and
``semantics="all"`` included - run here in seconds. A block whose assertions are wrong
about the package (a Batch field, the mode of a semantics, the cache key, the NaN rule)
fails this test.

Executing every block takes minutes on a 2-core machine (a dozen evaluations), so the
two whole-page tests are ``slow`` (CI's slow step runs them); the default suite runs the
page's first example (the one the issue found failing) and the structure check."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from nasbench_bert import proxies  # noqa: E402

PAGE = Path(__file__).resolve().parents[1] / "docs" / "evaluate.md"
#: the size the examples run at here
TINY_IDS, TINY_NLP, SMALL, BOOT = 6, 3, {"batch_size": 2, "seq_len": 16}, 20


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(), flags=re.S)


def _tiny(evaluate, tasks: bool = True):
    """``evaluate`` at the test's size: the first ids of those asked for (and, with
    ``tasks=False``, the GLUE average without the per-task rows, unless a block asks)."""
    @functools.wraps(evaluate)
    def run(proxy, **kw):
        if not tasks:
            kw.setdefault("tasks", False)
        kw["ids"] = list(kw.get("ids") or range(TINY_IDS))[:TINY_IDS]
        if kw.get("benchmarks") in (None, "nlp") or "nlp" in (kw.get("benchmarks") or ()):
            kw["nlp_ids"] = list(kw.get("nlp_ids") or range(TINY_NLP))[:TINY_NLP]
        if kw.get("benchmarks") == "nlp":
            kw.pop("ids")
        kw.setdefault("batch", SMALL)
        kw.setdefault("bootstrap", BOOT)
        kw.setdefault("progress", False)
        return evaluate(proxy, **kw)
    return run


def test_page_has_the_sections_the_issue_asks_for():
    text = PAGE.read_text()
    for needle in ("train mode", "eval mode", "`input_ids`", "`attention_mask`", "`token_type_ids`", "`tokenizer`",
                   "`spec`", "seeded", "proxies.objective", "batches=", "benchmarks=", "refresh", "version=",
                   "+inf", "NaN", "tie-broken", "depth_width_then_size"):
        assert needle in text, needle
    assert len(blocks("python")) >= 8 and blocks("bash")


@pytest.mark.slow
def test_python_blocks_run_as_written(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(proxies, "evaluate", _tiny(proxies.evaluate, tasks=False))
    ns: dict = {"__name__": "evaluate_md"}
    for k, code in enumerate(blocks("python")):
        try:
            exec(compile(code, f"{PAGE.name}[python block {k}]", "exec"), ns)
        except Exception as e:  # name the block: the page is what is wrong
            raise AssertionError(f"python block {k} of docs/evaluate.md fails: {type(e).__name__}: {e}\n{code}") from e
    assert isinstance(ns["res"], proxies.Evaluation)


def test_first_example_skips_nlp_with_one_line(data_dir, tmp_path, monkeypatch):
    """The page's own example (semantics "all", both benchmarks by default) gives the
    FlexiBERT rows of all three semantics and a one-line note for NAS-Bench-NLP."""
    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(proxies, "evaluate", _tiny(proxies.evaluate, tasks=False))
    ns: dict = {"__name__": "evaluate_md"}
    exec(blocks("python")[0], ns)
    res = ns["res"]
    cand = res.candidate()
    assert set(cand.benchmark) == {"flexibert"} and set(cand.semantics) == {"authors", "as_trained", "as_specified"}
    assert list(res.skipped) == ["nlp"] and "\n" not in res.skipped["nlp"] and "'tuple' object" in res.skipped["nlp"]
    assert res.to_markdown().count("**Verdict**") == 3


@pytest.mark.slow
def test_shell_blocks_run_as_written(data_dir, tmp_path):
    shell = [b for b in blocks("bash") if "nasbench-bert" in b]
    assert shell
    # the command at the test's size: the page's arguments, then a tiny subset and a small batch
    prelude = f"""set -euo pipefail
nasbench-bert() {{
  case "$*" in *"--benchmarks flexibert"*) extra="";; *) extra="--nlp-ids 0-{TINY_NLP - 1}";; esac
  {sys.executable} -m nasbench_bert.cli --data {data_dir} --quiet "$@" --ids 0-{TINY_IDS - 1} $extra --batch-size 2 \\
    --seq-len 16 --bootstrap {BOOT}
}}
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for k, code in enumerate(shell):
        r = subprocess.run(["bash", "-c", prelude + code], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert r.returncode == 0, f"bash block {k} of docs/evaluate.md fails:\n{code}\n{r.stderr[-3000:]}"
    out = (tmp_path / "result.md").read_text()
    assert "**Verdict**" in out and "nlp skipped" in out and out.count("### flexibert") == 3
