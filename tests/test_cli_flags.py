"""The command line names the option a user typed (issue 37, item 10).

The library's messages name its Python arguments (``report = ...``, ``cpus_per_task =
0``), which is right from Python; ``nasbench_bert.cli.main`` writes each as the option
that set it (``--report``, ``--slurm-cpus``). Every option of every subcommand is either
given a value the library refuses here, and the one ``error:`` line must name that option,
or listed in :data:`NOT_REFUSED_BY_THE_LIBRARY` with the reason it needs no case; a new
option fails :func:`test_every_option_is_covered` until it is one or the other.

Also here: ``--report`` and ``--slurm-*`` are refused before the benchmark is loaded or
torch imported, and a read-only destination of ``build-surrogate`` and of the syne-tune
export gets the one-line message that ``build-data`` gives (not a temporary file's name).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, UPSTREAM

pytest.importorskip("torch")  # proxies and hardware import it before their own checks
pytest.importorskip("submitit")  # --executor slurm

#: per subcommand: a valid command line that fails, if at all, only on the option under test
BASE: dict[str, list[str]] = {
    "sample": [],
    "export": ["flexibert", "--out", "{tmp}/e.csv"],
    "build-data": ["--release", str(UPSTREAM), "--out", "{tmp}/bd"],
    "build-surrogate": [],
    "download": [],
    "publish": [],
    "proxies compute": ["--ids", "0", "--proxies", "param_count", "--out", "{tmp}/p.csv"],
    "proxies score": ["--bootstrap", "0"],
    "proxies evaluate": ["depth", "--ids", "0-1", "--benchmarks", "flexibert", "--bootstrap", "0"],
    "proxies export": ["--out", "{tmp}/zc", "--spaces", "flexibert", "--tasks", "glue"],
    "hardware": ["--ids", "0", "--semantics", "as_trained", "--out", "{tmp}/h.csv"],
    "search run": ["--budget", "3"],
    "search compare": ["--seeds", "1", "--budget", "3"],
    "build-proxy-values": ["--ids", "0", "--benchmarks", "flexibert", "--semantics", "as_trained", "--out",
                           "{tmp}/v.parquet", "--cache", "{tmp}/vc"],
    "proxies values": [],
    "build-entry": ["128/SA-SDP-h2-512x1/LT-DFT-h2-512x1", "--corpus", "text:{tmp}/corpus.txt", "--glue",
                    str(UPSTREAM / "glue-rte"), "--tasks", "rte", "--device", "cpu"],
}
SLURM = {"--slurm-partition": "a b", "--slurm-time": "abc", "--slurm-cpus": "0", "--slurm-mem-gb": "-4",
         "--slurm-gpus": "-1", "--slurm-array-parallelism": "0", "--slurm-tasks-per-job": "0", "--slurm-account": "",
         "--slurm-folder": ""}
#: (subcommand, option) -> what is added to its BASE: the option with a value the library
#: refuses (and what that value needs beside it)
CASES: dict[tuple[str, str], list[str]] = {
    ("sample", "-n"): ["-n", "-1"], ("sample", "--seed"): ["--seed", "-1"],
    ("export", "--format"): ["--format", "csv"], ("export", "--out"): ["--out", "{tmp}/e.txt"],
    ("build-data", "--out"): ["--out", "{file}/bd"], ("build-data", "--hardware"): ["--hardware", "{tmp}/nothing"],
    ("build-data", "--proxy-values"): ["--proxy-values", "{tmp}/nothing.parquet"],
    ("build-surrogate", "--data"): ["--data", "{file}/d"],
    ("download", "--repo-id"): ["--repo-id", "a b"], ("publish", "--repo-id"): ["--repo-id", "a b"],
    ("proxies compute", "--ids"): ["--ids", "x"], ("proxies compute", "--proxies"): ["--proxies", "nope"],
    ("proxies compute", "--seed"): ["--seed", "-1"], ("proxies compute", "--batch-size"): ["--batch-size", "1"],
    ("proxies compute", "--seq-len"): ["--seq-len", "1"], ("proxies compute", "--source"): ["--source", "nope"],
    ("proxies compute", "--cache"): ["--cache", "{file}/c"], ("proxies compute", "--jobs"): ["--jobs", "0"],
    ("proxies compute", "--sample"): ["--sample", "0"], ("proxies compute", "--out"): ["--out", "{tmp}/p.txt"],
    ("proxies score", "--values"): ["--values", "{tmp}/none.csv"], ("proxies score", "--target"): ["--target", "nope"],
    ("proxies score", "--bootstrap"): ["--bootstrap", "-1"], ("proxies score", "--csv"): ["--csv", "{tmp}/s.txt"],
    ("proxies score", "--plots"): ["--plots", "{file}/plots"],
    ("proxies evaluate", "--semantics"): ["--semantics", "nope"], ("proxies evaluate", "--benchmarks"): ["--benchmarks", "x"],
    ("proxies evaluate", "--compare"): ["--compare", "nope"], ("proxies evaluate", "--ids"): ["--ids", "x"],
    ("proxies evaluate", "--nlp-ids"): ["--nlp-ids", "0"], ("proxies evaluate", "--cache"): ["--cache", "{file}/c"],
    ("proxies evaluate", "--jobs"): ["--jobs", "0"], ("proxies evaluate", "--batch-size"): ["--batch-size", "1"],
    ("proxies evaluate", "--seq-len"): ["--seq-len", "1"], ("proxies evaluate", "--source"): ["--source", "nope"],
    ("proxies evaluate", "--seed"): ["--seed", "-1"], ("proxies evaluate", "--bootstrap"): ["--bootstrap", "-1"],
    ("proxies evaluate", "--batches"): ["--batches", "2"], ("proxies evaluate", "--proxy-version"): ["--proxy-version", "v"],
    ("proxies evaluate", "--out"): ["--out", "{tmp}/r.txt"], ("proxies evaluate", "--report"): ["--report", "{file}"],
    ("proxies export", "--out"): ["--out", "{file}"], ("proxies export", "--live"): ["--live", "{tmp}/none.csv"],
    ("proxies export", "--live-nlp"): ["--live-nlp", "{tmp}/none.csv"], ("proxies export", "--spaces"): ["--spaces", "x"],
    ("proxies export", "--tasks"): ["--tasks", "x"],
    ("hardware", "--ids"): ["--ids", "x"], ("hardware", "--sample"): ["--sample", "0"],
    ("hardware", "--seed"): ["--ids", "all", "--sample", "1", "--seed", "-1"], ("hardware", "--semantics"): ["--semantics", "nope"],
    ("hardware", "--threads"): ["--threads", "0"], ("hardware", "--cache"): ["--cache", "{file}/c"],
    ("hardware", "--jobs"): ["--jobs", "0"], ("hardware", "--out"): ["--out", "{tmp}/h.txt"],
    ("search run", "--budget"): ["--budget", "0"], ("search run", "--seed"): ["--seed", "-1"],
    ("search run", "--proxy"): ["--algorithm", "etas", "--proxy", "nope"], ("search run", "--out"): ["--out", "{tmp}/t.txt"],
    ("search compare", "--algorithms"): ["--algorithms", "nope"], ("search compare", "--seeds"): ["--seeds", "0"],
    ("search compare", "--budget"): ["--budget", "0"], ("search compare", "--out"): ["--out", "{tmp}/c.txt"],
    ("search compare", "--plot"): ["--plot", "{tmp}/c.txt"],
    ("build-entry", "--corpus"): ["--corpus", "nope"], ("build-entry", "--glue"): ["--glue", "{tmp}/no-glue"],
    ("build-entry", "--tasks"): ["--tasks", "nope"], ("build-entry", "--steps"): ["--steps", "0"],
    ("build-entry", "--batch-size"): ["--batch-size", "0"], ("build-entry", "--seq-len"): ["--seq-len", "0"],
    ("build-entry", "--warmup-steps"): ["--warmup-steps", "-1"], ("build-entry", "--vocab-size"): ["--vocab-size", "0"],
    ("build-entry", "--max-documents"): ["--max-documents", "0"],
    ("build-entry", "--checkpoint-every"): ["--checkpoint-every", "0"], ("build-entry", "--epochs"): ["--epochs", "0"],
    ("build-entry", "--max-train-examples"): ["--max-train-examples", "0"],
    ("build-entry", "--finetune-batch-size"): ["--finetune-batch-size", "0"],
    ("build-entry", "--results"): ["--results", "{file}/r"], ("build-entry", "--workdir"): ["--workdir", "{file}/w"],
    ("build-entry", "--device"): ["--device", "nope"], ("build-entry", "--prefetch"): ["--prefetch", "-1"],
    ("build-entry", "--checkpoint-minutes"): ["--checkpoint-minutes", "-1"],
    ("build-entry", "--gpus-per-arch"): ["--gpus-per-arch", "1"], ("build-entry", "--cpus-per-arch"): ["--cpus-per-arch", "2"],
    ("build-proxy-values", "--out"): ["--out", "{tmp}/v.txt"], ("build-proxy-values", "--cache"): ["--cache", "{file}/c"],
    ("build-proxy-values", "--benchmarks"): ["--benchmarks", "nope"],
    ("build-proxy-values", "--semantics"): ["--semantics", "nope"], ("build-proxy-values", "--ids"): ["--ids", "x"],
    ("build-proxy-values", "--jobs"): ["--jobs", "0"],
    ("proxies values", "--benchmark"): ["--benchmark", "nope"], ("proxies values", "--semantics"): ["--semantics", "nope"],
    ("proxies values", "--proxies"): ["--proxies", "nope"], ("proxies values", "--out"): ["--out", "{tmp}/v.txt"],
    ("proxies values", "--ids"): ["--verify", "--ids", "x"], ("proxies values", "--nlp-ids"): ["--verify", "--nlp-ids", "x"],
    ("proxies values", "--jobs"): ["--verify", "--jobs", "0"],
    **{(cmd, "--device"): ["--device", "tpu"] for cmd in ("proxies compute", "proxies evaluate", "hardware",
                                                         "build-proxy-values")},
    **{(cmd, flag): ["--executor", "slurm", flag, value] for cmd in ("proxies compute", "proxies evaluate", "hardware",
                                                                        "build-proxy-values", "build-entry")
       for flag, value in SLURM.items()},
}
#: options no case covers, and why none is needed
NOT_REFUSED_BY_THE_LIBRARY: dict[str, str] = {
    "store_true": "a switch (--json, --force, ...): no value to refuse",
    "choices": "argparse refuses a value outside its choices itself, naming the option ('argument --dtype: invalid choice')",
    "--data": "a data folder: a missing one is named with the command that builds it",
    "--quiet": "a switch",
    "build-data --release": "a release folder, URL or 'github': the message names the folder and its expected layout",
    "build-data --ptb-logs": "its messages name --ptb-logs already",
    "download --revision": "only the Hub can refuse a revision (offline here): the message names repository@revision",
    "download --endpoint": "only reaching it can refuse an endpoint: the message names the endpoint",
    "publish --revision": "as download --revision", "publish --endpoint": "as download --endpoint",
    "publish --message": "any text is a commit message",
    "--ray-address": "any address is passed to Ray, which names it when it cannot connect",
}


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from nasbench_bert import cli

    out: dict[str, argparse.ArgumentParser] = {}

    def walk(p: argparse.ArgumentParser, path: list[str]) -> None:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs and path:
            out[" ".join(path)] = p
        for a in subs:
            for name, sp in a.choices.items():
                walk(sp, [*path, name])

    walk(cli.build_parser(), [])
    return out


def _skipped(cmd: str, action: argparse.Action) -> bool:
    flag = next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])
    return (isinstance(action, (argparse._StoreTrueAction, argparse.BooleanOptionalAction))
            or action.choices is not None or flag in NOT_REFUSED_BY_THE_LIBRARY
            or f"{cmd} {flag}" in NOT_REFUSED_BY_THE_LIBRARY)


def test_every_option_is_covered():
    """Each option of each subcommand has a case below, or a reason in
    NOT_REFUSED_BY_THE_LIBRARY (so a new option's message is checked too)."""
    uncovered = []
    for cmd, p in _subcommands().items():
        for a in p._actions:
            if not a.option_strings or isinstance(a, argparse._HelpAction) or _skipped(cmd, a):
                continue
            flag = next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
            if (cmd, flag) not in CASES:
                uncovered.append(f"{cmd} {flag}")
    assert not uncovered, uncovered


def _run(argv: list[str]) -> tuple[int | str, str]:
    from nasbench_bert import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc: int | str = cli.main(argv)
        except SystemExit as e:  # argparse's own usage error
            rc = f"usage error {e.code}"
    return rc, err.getvalue()


@pytest.mark.parametrize("cmd, flag", sorted(CASES), ids=[f"{c} {f}" for c, f in sorted(CASES)])
def test_the_error_names_the_option_typed(cmd, flag, bench, tmp_path, monkeypatch):
    from nasbench_bert import cli

    subs = _subcommands()
    if cmd not in subs:
        pytest.skip(f"{cmd} is a plugin whose extra is not installed")
    if cmd == "proxies values" and flag in ("--proxies", "--jobs") and not bench.data.has_table("proxy_values"):
        pytest.skip("checked once the proxy-values table is loaded; these tables have none")
    monkeypatch.setattr(cli.common, "load_bench", lambda args: bench)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PATH", f"{_fake_slurm(tmp_path)}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "corpus.txt").write_text("a few words of text for a tokenizer\n")
    extra = CASES[(cmd, flag)]
    base, kept = BASE[cmd], []
    i = 0
    while i < len(base):  # an option the case gives replaces the base's (with its value)
        if base[i].startswith("--") and base[i] in extra:
            i += 2
            continue
        kept.append(base[i])
        i += 1
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{file}", str(tmp_path / "a_file"))
            for a in ["-q", *cmd.split(), *kept, *extra]]
    rc, err = _run(argv)
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert rc == 2 and len(lines) == 1, (argv, rc, err[-2000:])
    assert flag in lines[0], (argv, lines[0])


def _fake_slurm(tmp_path: Path) -> Path:
    """sbatch and srun stand-ins (tests/test_slurm.py's): --executor slurm passes its own
    checks, and no case here gets as far as submitting."""
    fake = tmp_path / "fakebin"
    fake.mkdir(exist_ok=True)
    for name in ("sbatch", "srun"):
        (fake / name).write_text("#!/bin/sh\necho 'stand-in: refused' >&2\nexit 1\n")
        (fake / name).chmod(0o755)
    return fake


@pytest.mark.parametrize("option, value", [("--report", "{file}"), ("--report", "{tmp}"), ("--slurm-cpus", "0"),
                                           ("--slurm-mem-gb", "-4"), ("--slurm-time", "abc")])
def test_report_and_slurm_options_are_refused_before_loading(tmp_path, option, value):
    """Issue 37, item 10: a bad --report or --slurm-* option was refused after 10-16 s of
    importing torch and loading the benchmark. Here ``--data`` points at nothing: the
    option's own line comes first, and torch was never imported."""
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "cache").mkdir()
    value = value.replace("{file}", str(tmp_path / "a_file")).replace("{tmp}", str(tmp_path / "cache" / "report"))
    argv = ["--data", str(tmp_path / "no-data"), "-q", "proxies", "evaluate", "depth", "--cache", str(tmp_path / "cache"),
            *(["--executor", "slurm"] if option.startswith("--slurm") else []), option, value]
    code = ("import sys\nfrom nasbench_bert import cli\nrc = cli.main(sys.argv[1:])\n"
            "print(rc, 'torch' in sys.modules)\n")
    fake = _fake_slurm(tmp_path)
    r = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"})
    assert r.stdout.split() == ["2", "False"], (r.stdout, r.stderr[-2000:])
    assert r.stderr.startswith(f"error: {option} = "), r.stderr


@pytest.mark.parametrize("argv, named", [
    (["hardware", "--sample", "2", "--ids", "0-3", "--out", "{tmp}/h.csv"], "--ids"),
    (["proxies", "compute", "--proxies", "param_count", "--sample", "2", "--ids", "0-3", "--out", "{tmp}/p.csv"], "--ids"),
    (["proxies", "compute", "--proxies", "param_count", "--sample", "2", "--space", "nlp", "--out", "{tmp}/p.csv"], "--space"),
])
def test_sample_beside_ids_or_another_space_is_refused_before_loading(tmp_path, argv, named):
    """``--sample`` draws from the whole FlexiBERT space, so ``--ids`` beside it (or a
    space other than flexibert) is a mistake: one line naming the flag, from the checks
    both sweep commands share (cli.common.check_sweep_flags), before the benchmark loads
    (``--data`` points at nothing) or torch is imported."""
    argv = ["--data", str(tmp_path / "no-data"), "-q", *[a.replace("{tmp}", str(tmp_path)) for a in argv]]
    code = ("import sys\nfrom nasbench_bert import cli\nrc = cli.main(sys.argv[1:])\n"
            "print(rc, 'torch' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.stdout.split() == ["2", "False"], (r.stdout, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --sample") and named in lines[0], r.stderr


def _read_only(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``folder`` made read-only: its mode for every user, and, where this process is root
    (whom permission bits do not stop), ``os.access`` answering as they would for a user."""
    folder.chmod(0o555)
    if os.geteuid() == 0:
        real = os.access

        def access(path: str | os.PathLike[str], mode: int, *a: object, **k: object) -> bool:
            if Path(path).resolve() == folder.resolve() and mode & os.W_OK:
                return False
            return real(path, mode, *a, **k)

        monkeypatch.setattr(os, "access", access)


@pytest.mark.parametrize("command", ["build-surrogate", "export syne-tune"])
def test_a_read_only_destination_gets_build_datas_message(command, data_dir, bench, tmp_path, monkeypatch, capsys):
    """``build-surrogate`` on a read-only data folder and the syne-tune export into a
    read-only folder failed after their work, naming a temporary file or staging folder;
    now refused first with the line ``build-data --out`` gives for the same folder."""
    from nasbench_bert import cli

    monkeypatch.setattr(cli.common, "load_bench", lambda args: bench)
    ro = tmp_path / "ro"
    if command == "build-surrogate":
        shutil.copytree(data_dir, ro)
        argv, option = ["build-surrogate", "--data", str(ro)], "--data"
    else:
        pytest.importorskip("syne_tune")
        ro.mkdir()
        argv, option = ["export", "--format", "syne-tune", "nlp_ptb", "--out", str(ro)], "--out"
    before = sorted(p.name for p in ro.iterdir())
    _read_only(ro, monkeypatch)
    try:
        assert cli.main(["-q", *argv]) == 2
        assert cli.main(["-q", "build-data", "--release", str(UPSTREAM), "--out", str(ro), "--force"]) == 2
    finally:
        ro.chmod(0o755)
    mine, build_data = capsys.readouterr().err.strip().splitlines()
    assert mine == build_data.replace("--out", option, 1) == f"error: {option} = {str(ro)!r}: {ro} is not writable; choose a folder you can write to"
    assert sorted(p.name for p in ro.iterdir()) == before
