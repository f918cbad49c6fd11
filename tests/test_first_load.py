"""The README's path - ``Benchmark.load()`` on an empty cache - leaves the folder
``nasbench-bert build-data`` leaves (issue 37, item 2), and says what it does in one line
(item 14).

Before, tables built on first load lacked the pinned surrogate file and
``objectives-v1.json``, so every later process refitted the surrogate, silently (33-78 s
on loaded cores against 0.2 s to load the file), and the refit ran with the BLAS
library's default thread count, oversubscribing busy cores. The warning that the Hub step
was skipped printed in Python's form: a file and line inside the library, then that
line of library code.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, UPSTREAM

from nasbench_bert.data.tables import MANIFEST, VERSION_DIR

#: process 1: the README's load on an empty cache, recording the BLAS threads the fit ran with
FIRST = r"""
import json
from threadpoolctl import threadpool_info
import nasbench_bert.surrogate.models as m
threads = []
fit = m.GPSurrogate.fit
def recording(self, X, Y):
    threads.extend(i["num_threads"] for i in threadpool_info())
    return fit(self, X, Y)
m.GPSurrogate.fit = recording
from nasbench_bert import Benchmark
b = Benchmark.load(progress=False)
import warnings
warnings.warn("a user's own warning")
print(json.dumps({"path": str(b.data.path), "threads": sorted(set(threads))}))
"""

#: process 2: the surrogate must come from the file: any fit raises
SECOND = r"""
import nasbench_bert.surrogate.models as m
def refused(self, *a, **k):
    raise SystemExit("the surrogate was refitted")
for cls in (m.Calibrated, m.EnsembleSurrogate, m.GPSurrogate, m.GBTSurrogate, m.RidgeSurrogate):
    cls.fit = refused
from nasbench_bert import Benchmark
b = Benchmark.load(progress=False)
print(b.surrogate().predict(b.query(0).arch).glue)
"""


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NASBENCH_BERT_DATA"}
    return {**env, "NASBENCH_BERT_CACHE": str(cache), "NASBENCH_BERT_RELEASE": str(UPSTREAM), "OMP_NUM_THREADS": "2"}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _artifacts(folder: Path) -> dict[str, dict]:
    manifest = json.loads((folder / VERSION_DIR / MANIFEST).read_text())
    for entry in manifest.get("artifacts", {}).values():  # the file on disk is the one listed
        assert hashlib.sha256((folder / VERSION_DIR / entry["file"]).read_bytes()).hexdigest() == entry["sha256"]
    return manifest.get("artifacts", {})


def test_load_on_an_empty_cache_writes_what_build_data_writes(tmp_path):
    cache = tmp_path / "cache"
    run = _run(["-c", FIRST], _env(cache))
    first = json.loads(run.stdout.strip().splitlines()[-1])
    # what the user sees: the skipped Hub step in one line, no library file, line or code; the
    # user's own warning keeps Python's form
    assert run.stderr.splitlines() == [
        "nasbench-bert: SourceUnavailableWarning: data source hub: this version of nasbench-bert pins no Hub revision "
        f"(nothing published for it yet); trying release ({UPSTREAM})",
        "<string>:14: UserWarning: a user's own warning"], run.stderr
    assert first["path"] == str(cache / VERSION_DIR)
    assert first["threads"] in ([1], []), first  # one BLAS thread while fitting ([] where no BLAS is found)
    loaded = _artifacts(cache)
    assert set(loaded) == {"objectives", "surrogate"}, loaded

    glue = float(_run(["-c", SECOND], _env(cache)).stdout.strip().splitlines()[-1])  # no refit in a second process
    assert 60 < glue < 90

    built = tmp_path / "built"
    _run(["-m", "nasbench_bert.cli", "build-data", "--release", str(UPSTREAM), "--out", str(built)], _env(tmp_path / "other"))
    by_build_data = _artifacts(built)
    assert {n: (e["file"], e["sha256"], e["bytes"]) for n, e in loaded.items()} == \
           {n: (e["file"], e["sha256"], e["bytes"]) for n, e in by_build_data.items()}
