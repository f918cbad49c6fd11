"""Shared fixtures: tests read the release files from ../shared/upstream and build
their own tables into a temporary folder, so they never depend on the checkout's data/."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # studies/ (the docs pages' code) sits beside the package, outside the wheel
    sys.path.insert(0, str(ROOT))
UPSTREAM = Path(os.environ.get("NASBENCH_BERT_RELEASE", ROOT.parent / "shared" / "upstream"))
TFN = UPSTREAM / "training-free-nas" / "data"
NLP = UPSTREAM / "nas-bench-nlp"


def pytest_configure(config):
    if not (TFN / "BERT_benchmark.json").is_file():
        raise pytest.UsageError(f"release files not found in {UPSTREAM}; set NASBENCH_BERT_RELEASE")
    # the data resolution order, pointed explicitly at test locations: release files from
    # ../shared/upstream and a private user cache (the Hub step is skipped: this version
    # pins no revision, and tests of the Hub run their own local server)
    os.environ["NASBENCH_BERT_RELEASE"] = str(UPSTREAM)
    os.environ.setdefault("NASBENCH_BERT_CACHE", tempfile.mkdtemp(prefix="nasbench-bert-test-cache-"))
    # the hardware measurement (build output, never committed): `.ci/run` measures it into
    # data/measured with `python -m nasbench_bert.builders.hardware` before the tests
    os.environ.setdefault("NASBENCH_BERT_HARDWARE", str(ROOT / "data" / "measured"))


def pytest_collection_modifyitems(config, items):
    # tests that read the measured hardware table carry a marker, so CI can run them again
    # after measuring (`pytest -m hardware_table`); without a measurement they skip
    for item in items:
        if "hardware_bench" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.hardware_table)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    from nasbench_bert.data.release import build_tables

    out = tmp_path_factory.mktemp("data")
    build_tables(UPSTREAM, out, progress=False)
    return out


@pytest.fixture(scope="session")
def bench(data_dir):
    from nasbench_bert import Benchmark

    return Benchmark.load(str(data_dir))


@pytest.fixture(scope="session")
def hardware_bench(bench):
    """The benchmark, when its data holds a hardware table (CI measures one first)."""
    if not bench.data.has_table("flexibert_hardware"):
        pytest.skip("no hardware measurement in $NASBENCH_BERT_HARDWARE: run python -m nasbench_bert.builders.hardware")
    return bench


@pytest.fixture(scope="session")
def release_entries() -> list[dict]:
    return json.loads((TFN / "BERT_benchmark.json").read_text())


@pytest.fixture(scope="session")
def wt2_logs() -> list[dict]:
    logs = []
    with zipfile.ZipFile(NLP / "train_logs_wikitext-2" / "logs.zip") as z:
        for name in sorted(z.namelist()):
            if name.endswith(".json"):
                d = json.loads(z.read(name))
                d["_log_name"] = Path(name).name
                logs.append(d)
    return logs


# -- reference runs must not pass by skipping ------------------------------------------------
# The reference tests skip where their inputs are missing (the authors' code, TensorFlow,
# transformers==4.30.2), so that the README's test command runs anywhere. In the reference
# venv that .ci/run builds every input is present, and a skip there would be a broken
# environment looking green: with NASBENCH_BERT_REQUIRE_REFERENCE=1 (set by .ci/run) a
# skipped reference test fails.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("NASBENCH_BERT_REQUIRE_REFERENCE") == "1" and item.get_closest_marker("reference"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"reference test skipped in the reference venv (NASBENCH_BERT_REQUIRE_REFERENCE=1): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """The same rule for a reference module that skips as a whole while it is collected
    (``pytest.importorskip`` at module level): the hook above never sees its tests."""
    outcome = yield
    report = outcome.get_result()
    path = getattr(collector, "path", None)
    if (report.skipped and os.environ.get("NASBENCH_BERT_REQUIRE_REFERENCE") == "1" and path is not None
            and Path(path).parent.name == "reference"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"reference module skipped in the reference venv (NASBENCH_BERT_REQUIRE_REFERENCE=1): {reason}"
