"""The wheel: one import name, schemas as package data, the documented data order.

Builds the wheel, installs it into a fresh folder (``pip install --target``), and runs
Python from a directory outside the checkout with only that folder on the path (the
dependencies come from the test environment). Marked ``slow``: CI runs it once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT, UPSTREAM

pytestmark = pytest.mark.slow

PROBE = r'''
import json, sys, warnings
import nasbench_bert
out = {"file": nasbench_bert.__file__}
try:
    import builders  # noqa: F401
    out["builders"] = "importable"
except ModuleNotFoundError:
    out["builders"] = "absent"
import nasbench_bert.builders
out["nasbench_bert.builders"] = nasbench_bert.builders.__file__
from nasbench_bert.data.schemas import validate_entry
entry = json.loads(sys.argv[1])
validate_entry(entry)
bad = dict(entry, time_to_train="abc")
try:
    validate_entry(bad)
    out["bad_entry"] = "accepted"
except ValueError as e:
    out["bad_entry"] = str(e)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    from nasbench_bert import Benchmark
    b = Benchmark.load(progress=False)
    out["first_load"] = {"n": len(b), "path": str(b.data.path), "warnings": [str(x.message) for x in w]}
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    b = Benchmark.load(progress=False)
    out["second_load"] = {"path": str(b.data.path), "warnings": [str(x.message) for x in w]}
print(json.dumps(out))
'''


def test_wheel_installs_one_import_name_and_finds_its_data(tmp_path, release_entries):
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(wheels), str(ROOT)], check=True,
                           capture_output=True, text=True)
    # setuptools builds without a warning (it warned that carps_configs.task.NASBenchBERT, the CARP-S
    # task configs' folder, looked importable but was not listed: issue 37, item 14)
    assert "Package would be ignored" not in built.stdout + built.stderr, built.stdout[-3000:]
    assert not re.search(r"Setuptools\w*Warning", built.stdout + built.stderr), built.stdout[-3000:]
    (whl,) = wheels.glob("nasbench_bert-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"nasbench_bert"}, tops  # one import name
    assert "nasbench_bert/schemas/flexibert_entry.schema.json" in names
    assert "nasbench_bert/builders/entry.py" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)  # Apache-2.0 section 4(a)
    # the code behind the docs pages stays in the checkout's studies/, outside the wheel
    study_modules = {p.stem for p in (ROOT / "studies").glob("*.py")} - {"__init__"}
    assert {"leaderboard", "proxy_study", "errata", "surrogate_study", "analysis", "published"} <= study_modules
    # compare bytes, not file names: the package legitimately has its own
    # ``proxies/published.py`` (the published proxies), unrelated to studies/published.py
    wheel = zipfile.ZipFile(whl)
    shipped = {hashlib.sha256(wheel.read(n)).hexdigest(): n for n in names if n.endswith(".py")}
    studies = {hashlib.sha256((ROOT / "studies" / f"{m}.py").read_bytes()).hexdigest(): m for m in study_modules}
    copied = {studies[h]: shipped[h] for h in studies.keys() & shipped.keys()}
    assert not copied, copied
    assert not any(n.startswith("studies/") for n in names)
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(whl)], check=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NASBENCH_BERT_")}
    env.update(PYTHONPATH=str(site), NASBENCH_BERT_CACHE=str(tmp_path / "cache"), NASBENCH_BERT_RELEASE=str(UPSTREAM))
    entry = dict(release_entries[0], num_params=1, semantics="as_trained")
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(entry)], cwd=outside, env=env, capture_output=True,
                       text=True, check=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["file"].startswith(str(site)) and out["nasbench_bert.builders"].startswith(str(site))
    assert out["builders"] == "absent"
    assert "time_to_train" in out["bad_entry"]
    first = out["first_load"]
    assert first["n"] == 500 and first["path"].startswith(str(tmp_path / "cache"))
    assert any("hub" in m and "pins no Hub revision" in m for m in first["warnings"])  # step 4 said why it was skipped
    assert out["second_load"] == {"path": first["path"], "warnings": []}  # step 3: the user cache, no fallbacks
