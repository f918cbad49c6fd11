"""The README's quickstart runs as written, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from conftest import ROOT


README = (ROOT / "README.md").read_text()


def _quickstart() -> str:
    section = README.split("## Quickstart", 1)[1]
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


def test_cli_block_is_one_command_per_line_and_help_points_to_real_sections():
    """Item 9 of issue 24: the README's CLI block reads as commands, not a pipeline, and
    every 'docs/<page>.md <section>' the CLI's help names exists."""
    from nasbench_bert.cli import build_parser

    block = README.split("## Command line", 1)[1].split("```", 2)[1]
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert lines and all(ln.startswith("nasbench-bert ") for ln in lines), lines
    assert not any(re.search(r"\s\|\s", ln.split("#", 1)[0]) for ln in lines)  # no '|' outside the comments
    helps = " ".join(a.help or "" for a in build_parser()._actions)
    refs = re.findall(r"docs/(\w+)\.md '([^']+)'", helps)
    assert refs
    for page, section in refs:
        headings = [h.replace("`", "") for h in re.findall(r"^#+ (.+)$", (ROOT / "docs" / f"{page}.md").read_text(), re.M)]
        assert section in headings, (page, section, headings)


def test_one_install_command_for_the_hpo_extra():
    """The [hpo] extra is installed one way in the README and the integrations page."""
    docs = (ROOT / "docs" / "integrations.md").read_text()
    assert "pip install 'nasbench-bert[hpo]'" in docs and "'.[torch,build,test,docs,hpo]'" in README
    assert "--no-deps" not in docs and "xgboost" not in docs.split("pip install", 1)[1].split("\n", 1)[0]


def test_the_torch_pin_comes_with_the_cpu_index():
    """On a stock index `torch==2.13.0` alone is the CUDA build: the set-up says so and gives
    PyTorch's CPU index (issue 37, item 11), in the README and in docs/getting-started.md,
    while the README's two commands stay as CI runs them here (a local CPU wheel)."""
    cpu = "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    setup = README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert cpu in setup and "It is the CPU build" not in setup
    page = (ROOT / "docs" / "getting-started.md").read_text()
    pins = [line for line in page.splitlines() if re.match(r"pip install torch==", line)]
    assert pins and all(cpu in line for line in pins), pins


def _sub_bullet(block: str, label: str) -> str:
    m = re.search(rf"\n  \* {label}: (.*?)(?=\n  \* |\Z)", block, re.S)
    assert m, f"the README's NAS-Bench-NLP bullet has no '{label}:' line"
    return " ".join(m.group(1).split())


def test_the_nlp_bullet_says_per_dataset_what_the_tables_hold(bench):
    """Issue 37, item 12: the README promised per-epoch curves for PTB, whose release files
    hold final results only. Each dataset's line is checked against its table: the counts,
    where per-epoch curves and stored proxies exist, and how PTB's curves get in."""
    block = README.split("* **NAS-Bench-NLP**", 1)[1].split("\n\n", 1)[0]
    ptb, wt2 = _sub_bullet(block, "Penn Treebank"), _sub_bullet(block, "WikiText-2")
    ptb_df = bench.data.table("nlp_ptb").to_pandas()
    wt2_df = bench.data.table("nlp_wikitext2").to_pandas()

    def number(text: str, pattern: str) -> int:
        return int(re.search(pattern, text).group(1).replace(",", ""))

    assert number(ptb, r"^([\d,]+) runs") == len(ptb_df) == 8794
    assert number(ptb, r"recipe for the ([\d,]+) runs") == int(ptb_df["recipe"].notna().sum())
    assert number(wt2, r"^([\d,]+) training logs") == len(wt2_df)
    curves = {"train_losses", "val_losses", "test_losses", "wall_times"}
    assert curves <= set(wt2_df.columns) and "per-epoch (1–50)" in wt2 and set(wt2_df["hp_epochs"]) == {50}
    assert not curves & set(ptb_df.columns) and "no per-epoch curves for PTB" in ptb and "--ptb-logs ZIP" in ptb
    assert "activation_distance" in ptb_df.columns and "stored proxies" in ptb
    assert "activation_distance" not in wt2_df.columns and "no stored proxies" in wt2
    from nasbench_bert.cli import build_parser

    build = build_parser()._subparsers._group_actions[0].choices["build-data"]
    assert any("--ptb-logs" in a.option_strings for a in build._actions)
