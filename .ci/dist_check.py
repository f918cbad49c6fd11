"""Checks for .ci/deps_jobs.sh (the wheel and dependency-range jobs). Three subcommands:

    python .ci/dist_check.py contents DIST_DIR       # in the checkout: what the sdist and wheel hold
    python .ci/dist_check.py versions lowest|any [EXTRA,...]   # in a job's venv: the deps' resolved versions
    python -c ... quickstart                         # in the wheel's venv (see deps_jobs.sh): README quickstart

Each exits non-zero with a message that says what is missing or wrong.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _fail(msg: str) -> None:
    raise SystemExit(f"dist_check: {msg}")


def _tracked(*folders: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *folders], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if p]


def contents(dist: Path) -> None:
    """The sdist holds what a build needs (the package, builders/ and schemas/, mapped into the
    package by pyproject.toml, and the LICENSE); the wheel holds every module, py.typed, the
    schemas' JSON, the CARP-S task configs and the LICENSE (Apache-2.0 section 4(a): the text
    travels with every copy), under one import name, and declares the ranges pyproject.toml
    declares."""
    (sdist,) = dist.glob("nasbench_bert-*.tar.gz")
    (wheel,) = dist.glob("nasbench_bert-*.whl")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    tracked = [p for p in _tracked("nasbench_bert", "builders", "schemas")
               if p.endswith((".py", ".json", ".yaml")) or p == "nasbench_bert/py.typed"]
    if not any(p.startswith("builders/") for p in tracked) or not any(p.endswith(".schema.json") for p in tracked):
        _fail(f"git ls-files found no builders/ or schemas/ files in {ROOT}")

    with tarfile.open(sdist) as t:
        prefix = f"nasbench_bert-{project['version']}/"
        in_sdist = {n[len(prefix):] for n in t.getnames() if n.startswith(prefix)}
    need = set(tracked) | {"pyproject.toml", "README.md", "LICENSE", "PKG-INFO"}
    if missing := sorted(need - in_sdist):
        _fail(f"{sdist.name} lacks {missing}")
    licence = (ROOT / "LICENSE").read_bytes()
    with tarfile.open(sdist) as t:
        if t.extractfile(prefix + "LICENSE").read() != licence:
            _fail(f"{sdist.name}'s LICENSE differs from the checkout's")

    def installed_as(p: str) -> str:  # pyproject's package-dir mapping
        for folder in ("builders", "schemas"):
            if p.startswith(folder + "/"):
                return f"nasbench_bert/{p}"
        return p
    names = set(zipfile.ZipFile(wheel).namelist())
    if missing := sorted(installed_as(p) for p in tracked if installed_as(p) not in names):
        _fail(f"{wheel.name} lacks {missing} (a package missing from [tool.setuptools] packages, or package-data?)")
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    if tops != {"nasbench_bert"}:
        _fail(f"{wheel.name} installs {sorted(tops)}, not one import name")
    for must in ("nasbench_bert/py.typed", "nasbench_bert/schemas/flexibert_entry.schema.json",
                 "nasbench_bert/schemas/table_columns.json"):
        if must not in names:
            _fail(f"{wheel.name} lacks {must}")

    from packaging.requirements import Requirement  # the tools venv has it (build needs it)

    meta = zipfile.ZipFile(wheel).read(f"nasbench_bert-{project['version']}.dist-info/METADATA").decode()
    key = lambda r: (r.name.lower(), str(r.specifier), str(r.marker))  # noqa: E731
    requires = {key(Requirement(r)) for r in re.findall(r"^Requires-Dist: (.+)$", meta, re.M) if "extra ==" not in r}
    declared = {key(Requirement(d)) for d in project["dependencies"]}
    if requires != declared:
        _fail(f"wheel METADATA Requires-Dist {sorted(requires)} != pyproject.toml dependencies {sorted(declared)}")
    lic = f"nasbench_bert-{project['version']}.dist-info/licenses/LICENSE"
    if "License-File: LICENSE" not in meta or lic not in names:
        _fail(f"{wheel.name} does not carry the LICENSE file (pyproject.toml's license-files)")
    if zipfile.ZipFile(wheel).read(lic) != licence or f"License-Expression: {project['license']}" not in meta:
        _fail(f"{wheel.name}: its LICENSE differs from the checkout's, or METADATA lacks License-Expression: {project['license']}")
    if f"Requires-Python: {project['requires-python']}" not in meta:
        _fail(f"wheel METADATA lacks Requires-Python: {project['requires-python']}")
    print(f"dist_check: {sdist.name} ({len(in_sdist)} files) and {wheel.name} ({len(names)} files) hold the "
          f"{len(tracked)} tracked package files, py.typed, the schemas and the LICENSE; Requires-Dist = pyproject's {len(declared)} ranges")


def versions(mode: str, extras: list[str]) -> None:
    """Print the resolved version of each declared dependency (and of the named extras');
    ``lowest``: each must be its declared lower bound (else the bound is not what this
    resolution tested)."""
    from importlib.metadata import version

    from packaging.requirements import Requirement
    from packaging.version import Version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wrong = []
    deps = list(project["dependencies"]) + [d for e in extras for d in project["optional-dependencies"][e]]
    for dep in dict.fromkeys(deps):
        req = Requirement(dep)
        got = Version(Version(version(req.name)).base_version)  # 2.13.0+cpu: the CPU build of 2.13.0
        lower = next((Version(s.version) for s in req.specifier if s.operator == ">="), None)
        if got not in req.specifier:
            wrong.append(f"{req.name} {got} is outside {req.specifier}")
        elif mode == "lowest" and got != lower:
            wrong.append(f"{req.name} resolved to {got}, not its lower bound {lower}")
        print(f"  {req.name:16} {got!s:10} (declared {req.specifier})")
    print(f"  {'python':16} {sys.version.split()[0]:10} ({sys.executable}; requires-python {project['requires-python']})")
    if wrong:
        _fail("; ".join(wrong))


def quickstart() -> None:
    """The README's quickstart, as shipped (the wheel's long description), run from the
    installed package: its first line prints what its comment says."""
    from importlib.metadata import metadata

    readme = metadata("nasbench-bert").get_payload()  # type: ignore[attr-defined]
    code = re.search(r"```python\n(.*?)```", readme.split("## Quickstart", 1)[1], re.S).group(1)
    promised = re.search(r"print\(r\.glue.*#\s*(.+)", code).group(1).strip()
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md quickstart (from the wheel's METADATA)", "exec"), {})
    print(out.getvalue(), end="")
    first = out.getvalue().splitlines()[0]
    if first != promised:
        _fail(f"quickstart printed {first!r}; its comment promises {promised!r}")
    import nasbench_bert

    if "torch" in sys.modules:
        _fail("the lookup quickstart imported torch")
    print(f"dist_check: quickstart ran from {Path(nasbench_bert.__file__).parent} and printed what it promises")


if __name__ == "__main__":
    cmd, *rest = sys.argv[1:] or ["?"]
    if cmd == "contents":
        contents(Path(rest[0]))
    elif cmd == "versions":
        versions(rest[0] if rest else "any", rest[1].split(",") if len(rest) > 1 and rest[1] else [])
    elif cmd == "quickstart":
        quickstart()
    else:
        _fail(f"unknown subcommand {cmd!r}: contents DIST_DIR | versions lowest|any [EXTRA,...] | quickstart")
