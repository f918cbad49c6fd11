"""Issue 24: what a newcomer met on a fresh clone, each item reproduced and now refused
cleanly (a library error naming the argument, never a raw exception or a silent success)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, UPSTREAM
from nasbench_bert import DataNotFoundError, InvalidArgumentError

NOT_BENCH = [None, "bench", 3, {"a": 1}, pd.DataFrame()]


def _cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nasbench_bert.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kw)


# -- item 1: the README's commands are CI's first steps ---------------------------------------------
def test_ci_runs_the_readme_commands_first():
    sys.path.insert(0, str(ROOT / ".ci"))
    try:
        from readme_commands import readme_commands
    finally:
        sys.path.pop(0)
    cmds = readme_commands(ROOT / "README.md")
    assert len(cmds) == 2 and cmds[1] == ".venv/bin/python -m pytest"
    _check_ci_order((ROOT / ".ci" / "run").read_text())
    quick = (ROOT / "README.md").read_text().split("## Quickstart", 1)[1].split("```", 2)[1]
    assert ".hw(" not in quick  # the quickstart needs no hardware measurement


def _check_ci_order(run: str) -> None:
    """The README's commands run before every other step of ``.ci/run`` (comments aside)."""
    lines = [ln.strip() for ln in run.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]

    def first(text: str) -> int:
        hits = [i for i, ln in enumerate(lines) if text in ln]
        assert hits, f".ci/run has no step with {text!r}"
        return hits[0]

    readme = first('bash -eo pipefail -c "$cmd"')
    assert first("readme_commands.py") < readme
    for step in ("ruff check", "builders.hardware", ".venv-ref", "-m slow", "bench/", "mkdocs"):
        assert first(step) > readme, f".ci/run runs {step!r} before the README's commands"


def test_the_ci_order_check_can_fail():
    run = (ROOT / ".ci" / "run").read_text()
    _check_ci_order(run)
    lint = next(ln for ln in run.splitlines() if "ruff check" in ln)
    moved = lint + "\n" + run.replace(lint + "\n", "")  # lint first, the README's commands after it
    with pytest.raises(AssertionError, match="ruff check"):
        _check_ci_order(moved)


# -- item 4: every public function that takes `bench` checks it -------------------------------------
def _bench_takers(out, b_is_not_none: bool = True):
    from nasbench_bert import hardware, proxies, search
    from nasbench_bert.integrations import naszero

    calls = [
        ("search.run", lambda b: search.run("random", b, budget=2)),
        ("search.compare", lambda b: search.compare(b, ["random"], seeds=1, budget=2)),
        ("make_oracle", lambda b: search.make_oracle("tabular", b)),
        ("export_naszero", lambda b: naszero.export_naszero(b, out / "never-written")),
    ]
    if b_is_not_none:  # bench=None is documented there: ids are looked up in Benchmark.load()
        calls.append(("hardware.measure_many", lambda b: hardware.measure_many([0], "as_trained", bench=b)))
        calls.append(("proxies.evaluate", lambda b: proxies.evaluate("depth", benchmarks="flexibert", ids=[0, 1],
                                                                     tasks=False, bootstrap=0, progress=False, bench=b)))
    from nasbench_bert import surrogate
    from nasbench_bert.surrogate import fidelity, noise, validation

    calls += [(f.__name__, f) for f in (surrogate.Surrogate, surrogate.training_data, fidelity.curve_table,
                                        noise.noise_floor, noise.RunNoise, validation.cross_validate)]
    try:
        from nasbench_bert.integrations import optuna as opt
        from nasbench_bert.integrations import syne_tune as stn

        calls += [("to_syne_tune", lambda b: stn.to_syne_tune(b)), ("nlp_to_syne_tune", lambda b: stn.nlp_to_syne_tune(b)),
                ("run_optuna", lambda b: opt.run_optuna(b, n_trials=1)),
                ("run_optuna_nlp", lambda b: opt.run_optuna_nlp(b, n_trials=1))]
    except ImportError:  # the [hpo] extra is not installed
        pass
    return calls


@pytest.mark.parametrize("bad", NOT_BENCH, ids=lambda v: type(v).__name__)
def test_functions_taking_bench_refuse_what_is_not_one(bad, tmp_path):
    for name, call in _bench_takers(tmp_path, bad is not None):
        with pytest.raises(InvalidArgumentError, match="bench") as e:
            call(bad)
        assert "Benchmark.load()" in str(e.value), name
    assert not (tmp_path / "never-written").exists()


def test_syne_tune_objective_names_its_arguments(bench):
    stn = pytest.importorskip("nasbench_bert.integrations.syne_tune", reason="the [hpo] extra is not installed")
    bb = stn.to_syne_tune(bench)
    cfg = stn.arch_to_config(bench.archs[0])
    assert bb.objective_function(cfg, fidelity=stn.FINAL_STEPS, seed=1)["metric_glue"] in {r.glue for r in bench.query_all(bench.archs[0])}
    for kw, match in [({"seed": 5}, "seed"), ({"seed": -1}, "seed"), ({"fidelity": "x"}, "fidelity"),
                      ({"fidelity": {"epochs": 1}}, "fidelity")]:
        with pytest.raises(InvalidArgumentError, match=match):
            bb.objective_function(cfg, **{"fidelity": stn.FINAL_STEPS, **kw})
    with pytest.raises(InvalidArgumentError, match="key"):
        bb.objective_function({**cfg, "depth": 3})
    with pytest.raises(InvalidArgumentError, match="configuration"):
        bb.objective_function(None)


def test_multi_objective_example_without_hardware_says_how(bench, tmp_path):
    stn = pytest.importorskip("nasbench_bert.integrations.syne_tune", reason="the [hpo] extra is not installed")
    from syne_tune.optimizer.schedulers.multiobjective import MultiObjectiveRegularizedEvolution
    from syne_tune.optimizer.schedulers.single_fidelity_scheduler import SingleFidelityScheduler

    bb = stn.to_syne_tune(bench)
    for metrics, match in [(["metric_glue_error", "metric_glue_eror"], "metric_glue_eror")] + (
            [] if "metric_latency_b1_ms" in bb.objectives_names else
            [(["metric_glue_error", "metric_latency_b1_ms"], "builders.hardware")]):
        mo = SingleFidelityScheduler(bb.configuration_space, metrics=metrics, do_minimize=True,
                                     searcher=MultiObjectiveRegularizedEvolution(bb.configuration_space))
        with pytest.raises(InvalidArgumentError, match=match):
            stn.simulate(bb, mo, max_trials=3, folder=tmp_path)


# -- items 4, 5, 7: the command line ---------------------------------------------------------------
def test_cli_sample_zero_writes_nothing(data_dir, tmp_path):
    env = {"NASBENCH_BERT_DATA": str(data_dir)}
    for cmd in (["proxies", "compute"], ["hardware"]):
        out = tmp_path / "x.parquet"
        r = _cli(*cmd, "--sample", "0", "--out", str(out), env=env)
        assert r.returncode == 2 and "--sample = 0" in r.stderr and "Traceback" not in r.stderr
        assert not out.exists()


def test_cli_silent_successes_now_refused(data_dir, tmp_path):
    env = {"NASBENCH_BERT_DATA": str(data_dir)}
    r = _cli("search", "run", "--algorithm", "random", "--proxy", "ntsr", "--budget", "3", env=env)
    assert r.returncode == 2 and "proxy" in r.stderr
    r = _cli("hardware", "--ids", "0", "--semantics", "as_trained,as_trained", "--out", str(tmp_path / "h.csv"), env=env)
    assert r.returncode == 2 and "more than once" in r.stderr
    r = _cli("build-data", "--force", "--out", str(tmp_path / "d"), "--hardware", str(tmp_path / "nonexistent"),
             env={"NASBENCH_BERT_RELEASE": str(UPSTREAM)})
    assert r.returncode == 2 and "holds no hardware measurement" in r.stderr and not (tmp_path / "d").exists()


def test_build_tables_with_a_named_hardware_folder_that_is_empty(tmp_path):
    from nasbench_bert.data.release import build_tables

    with pytest.raises(DataNotFoundError, match="nonexistent"):
        build_tables(UPSTREAM, tmp_path / "d", progress=False, hardware=tmp_path / "nonexistent")


def test_cli_edges(data_dir, tmp_path):
    env = {"NASBENCH_BERT_DATA": str(data_dir)}
    r = _cli("search", "run", "--algorithm", "random", "--budget", "3", "--out", "/proc/x.csv", env=env)
    assert r.returncode == 2 and "cannot be written" in r.stderr and "Errno" not in r.stderr
    (tmp_path / "afile").write_text("x")
    r = _cli("proxies", "compute", "--ids", "0", "--cache", str(tmp_path / "afile"), "--out", str(tmp_path / "p.csv"),
             env=env)
    assert r.returncode == 2 and "is a file" in r.stderr
    # a reader that goes away (`| head`): no error line, no traceback
    p = subprocess.Popen([sys.executable, "-m", "nasbench_bert.cli", "sample", "-n", "5000", "--space"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env})
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "Broken pipe" not in err and "Traceback" not in err


def test_cli_query_json_into_head_is_quiet(data_dir):
    """The issue's own command: `query 17 --json | head` (a reader that stops early)."""
    r = subprocess.run(["bash", "-c", f"{sys.executable} -m nasbench_bert.cli query 17 --json | head -n 2"],
                       capture_output=True, text=True, env={**os.environ, "NASBENCH_BERT_DATA": str(data_dir)})
    assert r.returncode == 0 and r.stdout.count("\n") == 2
    assert "Broken pipe" not in r.stderr and "Traceback" not in r.stderr and "error" not in r.stderr
    # `head` may read the whole answer (it fits a pipe buffer) before it exits, so the line
    # above need not reach the broken pipe; a reader that reads nothing always does. With
    # pipefail the exit status is the CLI's own: 141, the shell's code for a closed pipe.
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m nasbench_bert.cli query 17 --json | true"],
                       capture_output=True, text=True, env={**os.environ, "NASBENCH_BERT_DATA": str(data_dir)})
    assert r.returncode == 141, r.stderr
    assert "Broken pipe" not in r.stderr and "Traceback" not in r.stderr and "error" not in r.stderr


def test_search_out_is_checked_before_the_search(data_dir, monkeypatch, capsys, tmp_path):
    """An unwritable --out is refused before any search runs (the search would take minutes)."""
    from nasbench_bert import cli, search

    class Reached(Exception):
        pass

    def searched(*a, **k):
        raise Reached

    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    monkeypatch.setattr(search, "run", searched)
    monkeypatch.setattr(search, "compare", searched)
    assert cli.main(["search", "run", "--algorithm", "etas", "--budget", "300", "--out", "/proc/x.csv"]) == 2
    assert cli.main(["search", "compare", "--seeds", "20", "--plot", "/proc/x.png"]) == 2
    assert "cannot be written" in capsys.readouterr().err
    with pytest.raises(Reached):  # with a writable --out the (patched) search is reached: the test can fail
        cli.main(["-q", "search", "run", "--algorithm", "random", "--budget", "3", "--out", str(tmp_path / "t.csv")])


def test_long_commands_print_plain_progress_off_a_terminal(data_dir, tmp_path):
    """Item 8: with stderr not a terminal, a long sweep prints plain progress lines."""
    env = {"NASBENCH_BERT_DATA": str(data_dir), "NASBENCH_BERT_PROGRESS_SECONDS": "0"}
    r = _cli("proxies", "compute", "--ids", "0-2", "--proxies", "num_params", "--out", str(tmp_path / "p.csv"), env=env)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "proxies" in ln and "/3" in ln]
    assert lines and "\x1b[" not in r.stderr, r.stderr  # plain lines, no terminal control codes


def test_cli_ctrl_c_is_one_line_and_130(data_dir, tmp_path):
    env = {**os.environ, "NASBENCH_BERT_DATA": str(data_dir)}
    p = subprocess.Popen([sys.executable, "-m", "nasbench_bert.cli", "search", "compare", "--seeds", "20000", "--budget",
                          "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # A terminal user's command starts with SIGINT at its default; a suite started in the
    # background (`cmd &` in a script) passes SIGINT on *ignored*, and Python then never
    # installs its KeyboardInterrupt handler - so the child gets the default back explicitly.
    # The signal must reach the command, not the interpreter still importing: on a loaded
    # CI machine the imports alone took over 6 s; this search runs for minutes
    time.sleep(20)
    assert p.poll() is None, "the search ended before it could be interrupted"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err.decode() and "interrupted" in err.decode()


def test_configspace_seed_bound_and_read_only_cache_advice(monkeypatch, tmp_path):
    from nasbench_bert import FLEXIBERT_SPACE
    from nasbench_bert.data.resolve import _fix

    pytest.importorskip("ConfigSpace")
    with pytest.raises(InvalidArgumentError, match="seed"):
        FLEXIBERT_SPACE.configspace(seed=2**70)
    monkeypatch.setenv("NASBENCH_BERT_RELEASE", "/somewhere")
    assert "is set" in _fix(tmp_path) and "point $NASBENCH_BERT_RELEASE" not in _fix(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):  # root writes anywhere
            assert "not writable" in _fix(ro / "cache")
    finally:
        ro.chmod(0o700)


def test_one_seed_check_everywhere(bench):
    from nasbench_bert import search
    from nasbench_bert.checks import MAX_SEED

    for bad in (-1, 2**32, True, 1.5, np.float64(2)):
        for call in (lambda s: search.run("random", bench, budget=2, seed=s), lambda s: bench.sample(2, seed=s),
                     lambda s: search.SurrogateOracle(bench, seed=s)):
            with pytest.raises(InvalidArgumentError, match="seed"):
                call(bad)
    search.run("random", bench, budget=2, seed=np.int64(MAX_SEED))


# -- item 10: a batch lookup is one take from the table -----------------------------------------------
def test_query_many_fast_paths_equal_the_general_path(bench):
    from nasbench_bert.spaces.flexibert import FLEXIBERT_SPACE

    rng = np.random.default_rng(0)
    archs = bench.archs
    outside = next(a for a in FLEXIBERT_SPACE.sample(50, seed=3) if a not in bench)
    for keys in (archs, [str(a) for a in archs], list(range(500)), [archs[i].to_release() for i in range(0, 500, 7)],
                 [archs[5], str(archs[9]), 17, np.int64(3), archs[40].to_release()] * 3):
        order = rng.permutation(len(keys))
        keys = [keys[i] for i in order]
        want = [bench._rows(k, "flexibert")[0] for k in keys]
        got = bench.query_many(keys, charge=False)
        pd.testing.assert_frame_equal(got, bench.to_pandas().iloc[want].reset_index(drop=True))
    got = bench.query_many([archs[1], outside, str(archs[2])], missing="drop", charge=False)
    assert list(got.id) == [bench.query(archs[1], charge=False).id, bench.query(archs[2], charge=False).id]
    with pytest.raises(Exception, match="not one of the"):
        bench.query_many([archs[1], outside], charge=False)
