"""The shape of the house (issue 22), held by tests so it does not grow back: a lookup
facade of at most 300 lines, no library function over 80 lines, no ``bench: Any`` seam,
and one seed validator."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

LIBRARY = [ROOT / "nasbench_bert", ROOT / "builders"]


def _sources() -> list[Path]:
    return [p for d in LIBRARY for p in sorted(d.rglob("*.py"))]


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_benchmark_is_a_facade_of_at_most_300_lines():
    tree = ast.parse((ROOT / "nasbench_bert" / "benchmark" / "flexibert.py").read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Benchmark"]
    assert cls.end_lineno - cls.lineno + 1 <= 300


def test_no_library_function_over_80_lines():
    long = [f"{p.relative_to(ROOT)}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1} lines)"
            for p in _sources() for f in _functions(p) if f.end_lineno - f.lineno + 1 > 80]
    assert not long, long


def test_bench_arguments_are_typed_with_the_protocol():
    untyped = [f"{p.relative_to(ROOT)}:{i}" for p in _sources() for i, line in enumerate(p.read_text().splitlines(), 1)
               if re.search(r"\bbench: Any\b", line)]
    assert not untyped, untyped


def test_one_seed_validator():
    """Seeds are checked by checks.check_seed alone: no other function hand-rolls a range."""
    rolled = [f"{p.relative_to(ROOT)}:{i}" for p in _sources() for i, line in enumerate(p.read_text().splitlines(), 1)
              if re.search(r"seed\w* = \{.*\}.*is not allowed|seed\w*\s*<\s*0\b|seed\w* must be", line)]
    assert not rolled, rolled
    defs = [f.name for p in _sources() for f in _functions(p) if re.fullmatch(r"_?check_\w*seed\w*", f.name)]
    assert defs == ["check_seed"], defs
