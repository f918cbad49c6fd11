"""The release files agree with the package and with each other.

* ``CITATION.cff`` is valid CFF 1.2.0: validated against the JSON Schema that cffconvert ships
  (``cffconvert/schemas/1.2.0/schema.json``). cffconvert 2.0 needs ``jsonschema<4``, which the
  package's own range excludes, so it is not in the ``[test]`` extra: ``.ci/run`` installs it
  in a venv of its own, runs ``cffconvert --validate`` there and runs this module with
  ``$NASBENCH_BERT_CFF_SCHEMA`` pointing at that schema, where the test cannot skip.
  Elsewhere the test uses cffconvert when it is importable and skips, saying so, otherwise.
* One version: ``pyproject.toml``'s, ``nasbench_bert.__version__`` and ``CITATION.cff``'s.
  A release (``X.Y.Z``) is the newest released section of ``CHANGELOG.md``, whose date is the
  citation's ``date-released``; main between releases (``X.Y.Z.devN``) is above the newest
  released section and has no ``date-released``.
* ``CHANGELOG.md`` keeps the Keep a Changelog 1.1.0 shape, with a data release per version.
* The README's BibTeX ("How to cite") holds the package's entry and one entry per
  ``references`` item of ``CITATION.cff``, with the same titles, authors, years and venues.
"""

from __future__ import annotations

import copy
import datetime
import importlib.util
import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_ENV = "NASBENCH_BERT_CFF_SCHEMA"
CHANGE_TYPES = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


# -- readers ------------------------------------------------------------------------------

def _isoformat_dates(obj):
    """YAML reads an unquoted 2026-11-25 as a date; CFF's schema wants the string."""
    if isinstance(obj, dict):
        return {k: _isoformat_dates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_isoformat_dates(v) for v in obj]
    if isinstance(obj, (datetime.date, datetime.datetime)):
        return obj.isoformat()
    return obj


def _citation() -> dict:
    return _isoformat_dates(yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8")))


def _pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)
    return tomllib.loads(text)["project"]["version"]


def _changelog_sections() -> list[tuple[str, str | None, str]]:
    """(version, date or None, body) per ``## [...]`` section, in file order."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heads = list(re.finditer(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?[ \t]*$", text, re.M))
    assert heads, "CHANGELOG.md has no '## [version]' sections"
    ends = [h.start() for h in heads[1:]] + [len(text)]
    return [(h.group(1), h.group(2), text[h.end():end]) for h, end in zip(heads, ends)]


def _cff_schema() -> dict:
    """cffconvert's CFF 1.2.0 schema: from $NASBENCH_BERT_CFF_SCHEMA (set by .ci/run: a missing
    file fails) or from an importable cffconvert (found without importing it); else skip."""
    given = os.environ.get(SCHEMA_ENV)
    if given:
        path = Path(given)
        if not path.is_file():
            pytest.fail(f"${SCHEMA_ENV}={given} is not a file")
    else:
        spec = importlib.util.find_spec("cffconvert")
        if spec is None or not spec.submodule_search_locations:
            pytest.skip("cffconvert is not installed here (it needs jsonschema<4, outside the package's range); "
                        f".ci/run installs it in .venv-cff, runs `cffconvert --validate` and runs this test with ${SCHEMA_ENV}")
        path = Path(list(spec.submodule_search_locations)[0]) / "schemas" / "1.2.0" / "schema.json"
        if not path.is_file():
            pytest.fail(f"cffconvert is installed but ships no CFF 1.2.0 schema at {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def _cff_errors(doc: dict, schema: dict) -> list[str]:
    cls = jsonschema.validators.validator_for(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(doc)]


def _bibtex_entries(text: str) -> list[dict]:
    """Entries of the bibtex blocks in ``text``: {'type', 'key', field: value (braces kept)}."""
    entries = []
    for block in re.findall(r"```bibtex\n(.*?)```", text, re.S):
        for m in re.finditer(r"@(\w+)\s*\{\s*([^,\s]+)\s*,", block):
            entry, i = {"type": m.group(1).lower(), "key": m.group(2)}, m.end()
            while True:
                f = re.compile(r"\s*(\w+)\s*=\s*\{").match(block, i)
                if f is None:
                    break
                depth, j = 1, f.end()
                while depth:
                    depth += {"{": 1, "}": -1}.get(block[j], 0)
                    j += 1
                entry[f.group(1).lower()] = block[f.end():j - 1]
                i = re.compile(r"\s*,?").match(block, j).end()
            assert re.compile(r"\s*\}").match(block, i), f"unparsed BibTeX after {entry}"
            entries.append(entry)
    return entries


def _norm(s: str) -> str:
    return " ".join(s.replace("{", "").replace("}", "").split()).casefold()


def _readme_citation_entries() -> list[dict]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## How to cite", 1)[1].split("\n## ", 1)[0]
    return _bibtex_entries(section)


# -- CITATION.cff against the CFF 1.2.0 schema ---------------------------------------------

def test_citation_cff_is_valid_cff_1_2_0():
    schema = _cff_schema()
    cff = _citation()
    assert cff["cff-version"] == "1.2.0"
    assert _cff_errors(cff, schema) == []


def test_the_cff_check_can_fail():
    """The validation above is not vacuous: broken copies of the file are refused."""
    schema = _cff_schema()
    cff = _citation()
    no_authors = {k: v for k, v in cff.items() if k != "authors"}
    bad_ref = copy.deepcopy(cff)
    del bad_ref["references"][0]["authors"]
    bad_date = {**cff, "date-released": "25/11/2026"}
    for broken in (no_authors, bad_ref, bad_date, {**cff, "version": ["0.2.0"]}):
        assert _cff_errors(broken, schema), broken


def test_citation_cff_names_the_package_licence_and_the_papers():
    cff = _citation()
    assert cff["license"] == "Apache-2.0"
    assert cff["type"] == "software" and cff["title"].startswith("nasbench-bert")
    titles = [_norm(r["title"]) for r in cff["references"]]
    for must in ("training-free neural architecture search for rnns and transformers",
                 "nas-bench-nlp: neural architecture search benchmark for natural language processing",
                 "flexibert: are current transformer architectures too homogeneous and rigid?"):
        assert must in titles


# -- one version ------------------------------------------------------------------------------

def _package_version() -> str:
    text = (ROOT / "nasbench_bert" / "version.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"$', text, re.M).group(1)


def _version_problems(version: str, cff: dict, released: list[tuple[str, str]]) -> list[str]:
    """What is wrong with ``version`` against the citation and the released changelog
    sections (newest first): a release must be the newest section, dated as the citation;
    a ``.devN`` version (main between releases) must lie above the newest release and carry
    no release date. Empty when all is well."""
    m = re.fullmatch(r"(\d+\.\d+\.\d+)(?:\.dev(\d+))?", version)
    if m is None:
        return [f"version {version!r} is neither X.Y.Z (a release) nor X.Y.Z.devN (main between releases)"]
    if not released:
        return ["CHANGELOG.md has no released version"]
    newest, date = released[0]
    problems = [] if str(cff.get("version")) == version else [f"CITATION.cff version {cff.get('version')!r} != {version!r}"]
    if m.group(2) is None:
        if version != newest:
            problems.append(f"release {version} is not the newest released section of CHANGELOG.md ({newest})")
        if str(cff.get("date-released")) != date:
            problems.append(f"CITATION.cff date-released {cff.get('date-released')!r} != {newest}'s date {date}")
    else:
        if _version_key(m.group(1)) <= _version_key(newest):
            problems.append(f"{version} is not above the newest release {newest}: main would look older than it")
        if "date-released" in cff:
            problems.append(f"{version} is unreleased, but CITATION.cff has date-released {cff['date-released']!r}")
    return problems


def test_one_version_in_pyproject_package_citation_and_changelog():
    released = [(v, d) for v, d, _ in _changelog_sections() if v != "Unreleased"]
    version = _pyproject_version()
    assert _package_version() == version, "nasbench_bert.__version__ differs from pyproject.toml"
    assert _version_problems(version, _citation(), released) == []


def test_the_version_check_can_fail():
    """Each rule above refuses a broken combination (main built as the last release, as
    0.2.0 did while reading data release 2; a dev version below the release; a release date
    on an unreleased version; a release missing from the changelog)."""
    released = [("0.2.0", "2026-11-25"), ("0.1.0", "2026-11-23")]
    dev = {"version": "0.3.0.dev0"}
    assert _version_problems("0.3.0.dev0", dev, released) == []
    assert _version_problems("0.2.0", {"version": "0.2.0", "date-released": "2026-11-25"}, released) == []
    assert _version_problems("0.2.0.dev0", {"version": "0.2.0.dev0"}, released)
    assert _version_problems("0.3.0.dev0", {**dev, "date-released": "2026-11-25"}, released)
    assert _version_problems("0.3.0", {"version": "0.3.0", "date-released": "2026-11-27"}, released)
    assert _version_problems("0.3.0.dev0", {"version": "0.2.0"}, released)
    assert _version_problems("0.3", {"version": "0.3"}, released)
    assert _version_problems("0.3.0rc1", {"version": "0.3.0rc1"}, released)


def test_readme_install_lines_name_the_current_wheel():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    wheels = re.findall(r"nasbench_bert-([0-9][^-\s]*)-py3-none-any\.whl", readme)
    assert wheels and set(wheels) == {_pyproject_version()}


# -- CHANGELOG.md's shape -------------------------------------------------------------------

def _version_key(v: str) -> tuple[int, ...]:
    assert re.fullmatch(r"\d+\.\d+\.\d+", v), f"CHANGELOG.md: {v!r} is not X.Y.Z"
    return tuple(int(p) for p in v.split("."))


def test_changelog_follows_keep_a_changelog():
    sections = _changelog_sections()
    assert sections[0][0] == "Unreleased" and sections[0][1] is None
    versions = [v for v, _, _ in sections[1:]]
    assert [_version_key(v) for v in versions] == sorted((_version_key(v) for v in versions), reverse=True)
    assert len(set(versions)) == len(versions)
    dates = [d for _, d, _ in sections[1:]]
    assert all(dates), "every released version has a date (YYYY-MM-DD)"
    assert dates == sorted(dates, reverse=True)
    for version, _, body in sections:
        kinds = re.findall(r"^### (.+?)\s*$", body, re.M)
        assert kinds, f"{version}: no change type"
        assert all(k in CHANGE_TYPES for k in kinds), (version, kinds)
        assert len(set(kinds)) == len(kinds), (version, kinds)
        assert [CHANGE_TYPES.index(k) for k in kinds] == sorted(CHANGE_TYPES.index(k) for k in kinds), (version, kinds)
        for part in re.split(r"^### .+$", body, flags=re.M)[1:]:
            assert re.search(r"^- \S", part, re.M), f"{version}: an empty change type"
        if version != "Unreleased":
            assert re.search(r"Data release (\d+) \(schema version \1\)", body), f"{version}: which data release?"


# -- the README's BibTeX and CITATION.cff ----------------------------------------------------

def _families(bib_authors: str) -> list[str]:
    return [_norm(a.split(",")[0]) for a in re.split(r"\s+and\s+", bib_authors.strip())]


def test_readme_bibtex_matches_citation_cff():
    cff = _citation()
    entries = _readme_citation_entries()
    by_title = {_norm(e["title"]): e for e in entries}
    assert len(by_title) == len(entries), "two README entries with one title"

    package = by_title.pop(_norm(cff["title"]), None)
    assert package is not None, "README: no BibTeX entry for the package (Cite this package)"
    assert package["type"] == "software"
    assert package["version"] == str(cff["version"])
    if "date-released" in cff:  # a release: its year
        assert package["year"] == str(cff["date-released"])[:4]
    else:  # main between releases: the year of the snapshot, not before the newest release
        newest_date = next(d for v, d, _ in _changelog_sections() if v != "Unreleased")
        assert re.fullmatch(r"\d{4}", package["year"]) and package["year"] >= newest_date[:4]
    assert package["license"] == cff["license"]
    assert _norm(package["author"]) == _norm(cff["authors"][0]["name"])

    for ref in cff["references"]:
        e = by_title.pop(_norm(ref["title"]), None)
        assert e is not None, f"README: no BibTeX entry titled {ref['title']!r}"
        assert e["year"] == str(ref["year"]), ref["title"]
        assert _families(e["author"]) == [_norm(a["family-names"]) for a in ref["authors"]], ref["title"]
        venue = e.get("journal") or e.get("booktitle")
        assert _norm(venue) == _norm(ref.get("journal") or ref.get("collection-title")), ref["title"]
        assert e.get("doi") == ref.get("doi"), ref["title"]
        if "volume" in e or "volume" in ref:
            assert e.get("volume") == str(ref.get("volume")), ref["title"]
        if "pages" in e or "start" in ref:
            assert e.get("pages") == f"{ref.get('start')}--{ref.get('end')}", ref["title"]
    assert not by_title, f"README entries that CITATION.cff does not list: {sorted(by_title)}"


def test_dataset_card_cites_papers_the_readme_cites():
    from nasbench_bert.builders.publish import CITATION

    readme_titles = {_norm(e["title"]) for e in _readme_citation_entries()}
    card = _bibtex_entries(f"```bibtex\n{CITATION}\n```")
    assert card and {_norm(e["title"]) for e in card} <= readme_titles
