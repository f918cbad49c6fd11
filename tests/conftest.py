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


@pytest.fixture
def one_torch_thread():
    """Compute on one torch thread, as the sweep's workers do. Near-cancelling sums (a
    float32 out_sum of about 1e-5, a float64 hidden covariance of about -5.7e7) come out in
    another order on two threads (OMP_NUM_THREADS unset, the README's test command): -2.0e-6
    against -1.3e-5, and 2.3e-12 relative, beyond tests that compare with a one-thread value."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def published_values_file() -> Path:
    """docs/published_values.parquet, the published page's own runs per arch: built output
    (like the proxy-values table), so a clean clone has none and its tests skip, naming the
    command that writes it."""
    path = ROOT / "docs" / "published_values.parquet"
    if not path.is_file():
        pytest.skip("docs/published_values.parquet is built output (python -m studies.published --own-only), absent here")
    return path


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


# -- no test leaves torch's process-global state changed ---------------------------------------
# torch's intra-op thread count, default dtype, deterministic-algorithms flag and grad mode are
# process-global: a test that changes one and does not give it back changes the numbers of
# every later test (issue 28: a leaked thread count moved a proxy value of a later test by
# 1.16e-8, which only failed in the whole suite). The autouse fixture below compares each
# test's end state with the suite's baseline, restores the baseline, and fails the test that
# left a change, naming it - a change made by a module fixture is caught at the first test
# that used it. The global RNG is restored silently (seeding it is legitimate). torch is only
# looked at once something imported it, so tests that never touch torch stay light; the
# inter-op thread count cannot be set twice in a process and is not checked.
TorchState = dict[str, Any]
#: the state every test must end in: taken after collection (test modules that import torch
#: have then done so), else when torch is first seen
_TORCH_BASELINE: dict[str, TorchState] = {}


def torch_state() -> TorchState | None:
    """torch's process-global settings that change numbers, or None if torch is not imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return {"num_threads": torch.get_num_threads(), "default_dtype": torch.get_default_dtype(),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
            "grad_enabled": torch.is_grad_enabled()}


def torch_import_defaults() -> TorchState:
    """The settings torch starts with (all but the thread count, which depends on the machine)."""
    torch = sys.modules["torch"]
    return {"default_dtype": torch.float32, "deterministic_algorithms": False, "deterministic_warn_only": False,
            "grad_enabled": True}


def torch_state_leaks(expected: TorchState, now: TorchState) -> list[str]:
    """What differs from ``expected``, one ``"name before -> after"`` per setting."""
    return [f"{k} {v} -> {now.get(k)}" for k, v in expected.items() if now.get(k) != v]


def restore_torch_state(state: TorchState) -> None:
    """Set every setting of ``state`` (a :func:`torch_state`, or part of one)."""
    torch = sys.modules["torch"]
    if "num_threads" in state:
        torch.set_num_threads(state["num_threads"])
    if "default_dtype" in state:
        torch.set_default_dtype(state["default_dtype"])
    if "deterministic_algorithms" in state or "deterministic_warn_only" in state:
        torch.use_deterministic_algorithms(state.get("deterministic_algorithms", False),
                                           warn_only=state.get("deterministic_warn_only", False))
    if "grad_enabled" in state:
        torch.set_grad_enabled(state["grad_enabled"])


def pytest_collection_finish(session: pytest.Session) -> None:
    state = torch_state()
    if state is not None:
        _TORCH_BASELINE.setdefault("state", state)


@pytest.fixture(autouse=True)
def _torch_state_kept(request: pytest.FixtureRequest) -> Any:
    """Fail a test that leaves torch's global state changed, and restore it (see above)."""
    before = torch_state()
    if before is not None:
        _TORCH_BASELINE.setdefault("state", before)
    rng = sys.modules["torch"].get_rng_state() if before is not None else None
    yield
    now = torch_state()
    if now is None:
        return
    # torch first imported by this test: its import defaults, and the thread count it found
    expected = _TORCH_BASELINE.setdefault("state", {**now, **torch_import_defaults()})
    leaks = torch_state_leaks(expected, now)
    restore_torch_state(expected)
    if rng is not None:
        sys.modules["torch"].set_rng_state(rng)
    if leaks:
        pytest.fail(f"{request.node.nodeid} (or a fixture it used) left torch's global state changed: "
                    f"{'; '.join(leaks)}. Restored for the next test; give it back in the test (try/finally, or "
                    "nasbench_bert.proxies.sweep.torch_threads for the thread count)", pytrace=False)
