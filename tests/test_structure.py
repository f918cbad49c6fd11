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


# -- issue 38: no room over 500 lines; imports only go down ------------------------------------
#: the one module allowed over 500 lines, and the docstring sentence that says why
LONG_MODULE_EXCEPTIONS = {ROOT / "nasbench_bert" / "metrics.py": "Why one module of"}


def test_no_library_module_over_500_lines():
    """``metrics.py`` is the one exception, and only while its docstring says why."""
    long = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _sources()
            if (n := len(p.read_text().splitlines())) > 500 and p not in LONG_MODULE_EXCEPTIONS]
    assert not long, long
    for p, why in LONG_MODULE_EXCEPTIONS.items():
        assert why in (ast.get_docstring(ast.parse(p.read_text())) or ""), f"{p.relative_to(ROOT)} does not say why it is whole"


def _unit(module: str) -> str:
    """The layer unit of a dotted module name: ``nasbench_bert.data.tables`` -> ``data``, the
    package itself -> ``nasbench_bert`` (its ``__init__``, the facade)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "builders":  # installed as nasbench_bert.builders
        parts = ["nasbench_bert", *parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``nasbench_bert`` module ``path`` imports, lazy and ``TYPE_CHECKING`` ones
    included (an import inside a function still ties the two modules): (line, module).
    ``from . import x`` names module ``x`` when it is one, else the package."""
    me = _module_name(path)
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "nasbench_bert"]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if module.split(".")[0] != "nasbench_bert":
                continue
            out += [(node.lineno, f"{module}.{a.name}" if _is_module(f"{module}.{a.name}") else module) for a in node.names]
    return out


def _is_module(name: str) -> bool:
    """Whether a dotted name is a module or package of the checkout (not a name inside one)."""
    parts = name.split(".")
    where = ROOT / Path(*parts[1:]) if parts[1:2] == ["builders"] else ROOT / Path(*parts)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _layers() -> list[set[str]]:
    """The layer list of ``nasbench_bert/__init__.py``'s docstring, bottom up: one set of
    units per bullet, the modules it names before its `` - `` (the rule these tests hold
    the code to)."""
    doc = ast.get_docstring(ast.parse((ROOT / "nasbench_bert" / "__init__.py").read_text())) or ""
    bullets = re.split(r"\n\* ", doc.split("The layers, bottom up", 1)[1].split("\n\n", 2)[1])
    return [{m or "nasbench_bert" for m in re.findall(r":mod:`~?nasbench_bert(?:\.(\w+))?`", b.split(" - ", 1)[0])}
            for b in bullets]


def test_the_layer_list_names_every_unit_once():
    layers = _layers()
    named = [u for layer in layers for u in layer]
    units = {_unit(_module_name(p)) for p in _sources()}
    assert len(named) == len(set(named)), "a unit is named in two layers"
    assert set(named) == units, {"missing": sorted(units - set(named)), "not a unit": sorted(set(named) - units)}


def test_imports_only_go_down():
    """No module imports from a layer above its own (the layer list above), and the units
    import each other in no circle."""
    layer = {u: i for i, units in enumerate(_layers()) for u in units}
    up, edges = [], {}
    for p in _sources():
        src = _unit(_module_name(p))
        for line, target in _imports(p):
            dst = _unit(target)
            if dst == src:
                continue
            edges.setdefault(src, set()).add(dst)
            if layer[dst] > layer[src]:
                up.append(f"{p.relative_to(ROOT)}:{line} imports {target} (layer {layer[dst]} above {layer[src]})")
    assert not up, up
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(u: str, path: list[str]) -> None:
        seen[u] = 1
        for v in sorted(edges.get(u, ())):
            assert seen.get(v) != 1, f"circle: {' -> '.join(path + [u, v])}"
            if v not in seen:
                visit(v, path + [u])
        seen[u] = 2

    for u in sorted(edges):
        if u not in seen:
            visit(u, [])
