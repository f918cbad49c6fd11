"""docs/frameworks.md ("Use it from your framework", issue 31, item 4): every line a
framework's user types there runs.

The page has one ``##`` section per framework. Each section's code blocks run in order in
an empty folder: ``pip install`` lines are checked (the extras exist in pyproject.toml and
hold the framework; a package outside the extras is one ``.ci/run`` installs), every other
bash line runs in bash with this venv's ``bin`` first on ``PATH``, and every python block
is exec'd in a fresh namespace in that folder. Each test then checks what the lines made
against the benchmark's own answers. Where the lines run:

* default run: syne-tune, Optuna, ConfigSpace, NAS-Bench-Suite-Zero, Ray (two archs; ~13 s,
  most of it starting Ray), SLURM (up to ``sbatch``);
* ``-k smac`` (``.ci/run``'s SMAC3 step, after it installs SMAC3): SMAC3;
* ``-m carps`` in ``.venv-carps`` (``.ci/run``'s CARP-S step): CARP-S.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT

PAGE = ROOT / "docs" / "frameworks.md"
#: section heading -> a distribution the section's install line must bring
FRAMEWORKS = {"syne-tune": "syne-tune", "CARP-S": "carps", "Optuna": "optuna", "SMAC3": "smac",
              "ConfigSpace": "configspace", "NAS-Bench-Suite-Zero": "nasbench-bert", "Ray": "ray", "SLURM": "submitit"}
SLURM_SHARED = "/shared"


def sections(text: str | None = None) -> dict[str, list[tuple[str, str]]]:
    """Section heading -> its fenced code blocks, ``(language, code)``, in page order."""
    text = PAGE.read_text() if text is None else text
    out: dict[str, list[tuple[str, str]]] = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, body = part.split("\n", 1)
        out[heading.strip()] = re.findall(r"^```(\w+)\n(.*?)^```", body, re.S | re.M)
    return out


def commands(code: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, blanks and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def is_install(cmd: str) -> bool:
    return cmd.startswith("pip install ")


def requirement_names(cmd: str) -> tuple[set[str], set[str]]:
    """(extras of nasbench-bert, other distributions) a ``pip install`` line names."""
    extras: set[str] = set()
    others: set[str] = set()
    for arg in shlex.split(cmd)[2:]:
        m = re.fullmatch(r"nasbench-bert(?:\[([\w,-]+)\])?", arg)
        if m:
            extras |= set(filter(None, (m.group(1) or "").split(",")))
            others.add("nasbench-bert")
        else:
            others.add(re.split(r"[<>=!~\[ ]", arg, maxsplit=1)[0].lower())
    return extras, others


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower()


@pytest.fixture
def run_section(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """``run(heading, replace=..., env=..., expect_fail=..., page=...)``: runs a section's
    lines (of ``page``, default the page's text) in ``tmp_path``; returns the python blocks' namespaces and the bash commands' results."""
    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    monkeypatch.setenv("SYNETUNE_FOLDER", str(tmp_path / "syne-tune"))
    monkeypatch.chdir(tmp_path)

    def run(heading: str, replace: dict[str, str] | None = None, env: dict[str, str] | None = None,
            expect_fail: bool = False, page: str | None = None,
            ) -> tuple[list[dict[str, Any]], list[subprocess.CompletedProcess[str]]]:
        blocks = sections(page)[heading]
        assert blocks, f"docs/frameworks.md has no code in section {heading!r}"
        namespaces: list[dict[str, Any]] = []
        done: list[subprocess.CompletedProcess[str]] = []
        path = os.pathsep.join([*(env or {}).get("PATH_FIRST", "").split(os.pathsep), str(Path(sys.executable).parent),
                                os.environ.get("PATH", "")]).strip(os.pathsep)
        full_env = {**os.environ, **{k: v for k, v in (env or {}).items() if k != "PATH_FIRST"}, "PATH": path}
        for lang, code in blocks:
            for old, new in (replace or {}).items():
                code = code.replace(old, new)
            if lang == "python":
                ns: dict[str, Any] = {"__name__": "__main__"}
                exec(compile(code, f"docs/frameworks.md, {heading}", "exec"), ns)
                namespaces.append(ns)
                continue
            assert lang == "bash", (heading, lang)
            for cmd in commands(code):
                if is_install(cmd):
                    continue  # checked by test_install_lines_name_real_extras
                p = subprocess.run(["bash", "-eo", "pipefail", "-c", cmd], cwd=tmp_path, env=full_env,
                                   capture_output=True, text=True, timeout=600)
                if not expect_fail:
                    assert p.returncode == 0, f"{cmd}\nfailed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
                done.append(p)
        return namespaces, done

    return run


# -- the page itself ------------------------------------------------------------------------

def test_one_section_per_framework_each_with_an_install_line_and_lines_to_run():
    secs = sections()
    assert list(secs) == list(FRAMEWORKS)
    for heading, blocks in secs.items():
        cmds = [c for lang, code in blocks if lang == "bash" for c in commands(code)]
        assert cmds and is_install(cmds[0]), f"{heading}: the first line is not its install line"
        assert any(not is_install(c) for c in cmds) or any(lang == "python" for lang, _ in blocks), heading
        assert {lang for lang, _ in blocks} <= {"bash", "python"}, heading


def test_install_lines_name_real_extras():
    """Each install line names extras pyproject.toml declares, and brings its framework:
    through an extra's requirements, or as a package ``.ci/run`` itself installs."""
    extras_decl = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    ci = (ROOT / ".ci" / "run").read_text()
    for heading, blocks in sections().items():
        installs = [c for lang, code in blocks if lang == "bash" for c in commands(code) if is_install(c)]
        assert len(installs) == 1, (heading, installs)
        extras, others = requirement_names(installs[0])
        assert "nasbench-bert" in others, f"{heading}: {installs[0]!r} does not install nasbench-bert"
        unknown = extras - set(extras_decl)
        assert not unknown, f"{heading}: {installs[0]!r} names extras pyproject.toml does not declare: {unknown}"
        brought = {_name(r) for e in extras for r in extras_decl[e]} | others
        assert FRAMEWORKS[heading] in brought, f"{heading}: {installs[0]!r} does not install {FRAMEWORKS[heading]}"
        for dist in others - {"nasbench-bert"}:
            assert re.search(rf"\$PIP\s+\S*['\"]?{re.escape(dist)}\b", ci), f"{heading}: .ci/run never installs {dist}"


@pytest.mark.parametrize("line, expected", [
    ("pip install 'nasbench-bert[torch,slurm]'", ({"torch", "slurm"}, {"nasbench-bert"})),
    ("pip install 'nasbench-bert[hpo]' smac", ({"hpo"}, {"nasbench-bert", "smac"})),
    ("pip install nasbench-bert", (set(), {"nasbench-bert"})),
])
def test_requirement_names(line, expected):
    assert requirement_names(line) == expected


def test_a_broken_snippet_fails_its_section(run_section):
    """The runner is not a formality: a section whose python raises, or whose command exits
    non-zero, fails."""
    from nasbench_bert.errors import InvalidArgumentError

    page = PAGE.read_text()
    broken_py = page.replace("configuration_to_arch(cs.sample_configuration())", "configuration_to_arch({})")
    assert broken_py != page
    with pytest.raises(InvalidArgumentError):
        run_section("ConfigSpace", page=broken_py)
    broken_sh = page.replace("proxies export --format naszero", "proxies export --format naslib")
    assert broken_sh != page
    with pytest.raises(AssertionError, match="invalid choice: 'naslib'"):
        run_section("NAS-Bench-Suite-Zero", page=broken_sh)


# -- the sections, run ------------------------------------------------------------------------

def test_syne_tune(run_section, bench):
    pytest.importorskip("syne_tune")
    from nasbench_bert.integrations.syne_tune import config_to_arch
    from nasbench_bert.spaces.flexibert import Arch

    (sim, loaded, mf), _ = run_section("syne-tune")
    results = sim["results"]
    assert results["trial_id"].nunique() >= 20
    # the arch that answered each trial, and one of its runs' table values: the page passes no
    # seed, so an arch trained twice (9 of them) answers with the run syne-tune draws
    for _, row in results.iterrows():
        answered = Arch.from_index(int(row["space_index"]))
        runs = [r.glue for r in bench.query_all(answered)] if answered in bench else []
        assert row["metric_glue"] in runs, (answered, row["metric_glue"], runs)
    bb = loaded["bb"]
    glue = bb.objectives_evaluations[:, 0, 0, list(bb.objectives_names).index("metric_glue")]
    assert len(glue) == 491
    for (_, hp), g in zip(bb.hyperparameters.iterrows(), glue):
        assert g == bench.query(config_to_arch(hp.to_dict()), charge=False).glue
    # multi-fidelity from disk: ASHA over WikiText-2's epochs, every value the run's logged loss
    asha = mf["results"]
    assert asha["trial_id"].nunique() >= 50
    top = asha.groupby("trial_id")["epoch"].max()
    assert (top < 50).any() and (top == 50).any()
    for _, row in asha.iterrows():
        q = bench.nlp.query(int(row["config_recipe_id"]), "wikitext2", charge=False)
        assert row["metric_val_loss"] == q.curves["val_losses"][int(row["epoch"]) - 1]


def test_optuna(run_section, bench):
    pytest.importorskip("optuna")
    (ns,), _ = run_section("Optuna")
    study, oracle = ns["study"], ns["oracle"]
    assert len(study.trials) == 20 and len(oracle.evaluations) == 20
    for t, e in zip(study.trials, oracle.evaluations):
        assert t.value == e.glue == bench.query(e.arch, charge=False).glue
    assert study.best_value == max(e.glue for e in oracle.evaluations)


def test_configspace(run_section):
    pytest.importorskip("ConfigSpace")
    from nasbench_bert import FLEXIBERT_SPACE
    from nasbench_bert.integrations.configspace import arch_to_configuration, configuration_to_arch

    (ns,), _ = run_section("ConfigSpace")
    arch = ns["arch"]
    assert configuration_to_arch(arch_to_configuration(arch)) == arch
    assert arch == configuration_to_arch(FLEXIBERT_SPACE.configspace(seed=0).sample_configuration())
    assert len(list(ns["cs"].values())) == 30


def test_nas_bench_suite_zero(run_section, bench):
    (ns,), _ = run_section("NAS-Bench-Suite-Zero")
    assert len(ns["archs"]) == 491 and all(isinstance(a, tuple) for a in ns["archs"])
    entry = ns["entry"]
    r = bench.query(entry["id"], charge=False)
    assert entry["val_accuracy"] == r.glue
    stored = bench.data.table("flexibert_proxies").to_pandas().set_index("id")
    assert entry["head_confidence@authors:release"]["score"] == stored.loc[entry["id"], "head_confidence"]
    assert Path("zc/zc_nasbench_nlp.json").is_file()


def test_slurm_up_to_sbatch(run_section, tmp_path):
    """The page's SLURM command, as written, up to ``sbatch``: a stand-in keeps the script
    submitit wrote from the command's options and refuses the job."""
    pytest.importorskip("submitit")
    pytest.importorskip("torch")
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "sbatch").write_text('#!/bin/sh\ncp "$1" "$SBATCH_RECORD"\n'
                                 'echo "sbatch (stand-in of tests/test_frameworks_page.py): job refused" >&2\nexit 1\n')
    (fake / "srun").write_text("#!/bin/sh\nexit 1\n")  # submitit looks for it; never run (the job is refused)
    for f in ("sbatch", "srun"):
        (fake / f).chmod(0o755)
    record = tmp_path / "submitted.sh"
    _, (p,) = run_section("SLURM", replace={SLURM_SHARED: str(tmp_path / "shared")}, expect_fail=True,
                          env={"PATH_FIRST": str(fake), "SBATCH_RECORD": str(record)})
    assert record.is_file(), f"no batch script reached sbatch:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    assert p.returncode != 0 and "job refused" in p.stdout + p.stderr
    script = record.read_text()
    flags = dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(.*))?$", script, re.M))
    assert flags["array"] == "0-19%20"   # 500 archs, 25 per array task; 20 at once
    assert flags["partition"] == "cpu"
    assert flags["time"] == "60"
    assert flags["mem"] == "4GB"
    assert flags["cpus-per-task"] == "1"
    assert str(tmp_path / "shared" / "slurm-logs") in flags["output"]


def test_ray(run_section, bench):
    pytest.importorskip("ray")
    pytest.importorskip("torch")
    import pandas as pd

    run_section("Ray")
    df = pd.read_parquet("ray.parquet")
    assert sorted(df["id"]) == [0, 1]
    for _, row in df.iterrows():
        assert row["num_params"] == bench.query(int(row["id"]), charge=False).num_params_as_trained


def test_smac3(run_section, bench):
    """Runs in .ci/run's SMAC3 step (``-k smac``), after SMAC3 is installed; SMAC3 is in no
    extra, so the default run (before that step) skips it."""
    pytest.importorskip("smac", reason="SMAC3 is not installed (.ci/run installs it in its SMAC3 step)")
    (ns,), _ = run_section("SMAC3")
    t = ns["t"]
    assert len(t) == 20
    assert t.best_glue == max(e["glue"] for e in t.evaluations)
    for e in t.evaluations:
        assert e["glue"] == bench.query(e["arch"], charge=False).glue


@pytest.mark.carps
def test_carps(run_section, bench):
    """Runs in .ci/run's CARP-S step (``-m carps`` in ``.venv-carps``), where a missing
    carps fails (``NASBENCH_BERT_REQUIRE_CARPS=1``)."""
    if not os.environ.get("NASBENCH_BERT_REQUIRE_CARPS"):
        pytest.importorskip("carps")
    from nasbench_bert.integrations.configspace import as_cost

    run_section("CARP-S")
    logs = list(Path("runs").glob("RandomSearch/NASBenchBERT/nasbench_bert/flexibert500/1/trial_logs.jsonl"))
    assert len(logs) == 1, sorted(str(p) for p in Path("runs").rglob("*.jsonl"))
    trials = [json.loads(ln) for ln in logs[0].read_text().splitlines() if ln.strip()]
    assert len(trials) == 100
    for t in trials:
        arch, cost = t["trial_value"]["additional_info"]["arch"], t["trial_value"]["cost"]
        assert cost == as_cost(bench.query(arch, charge=False).glue, bench.objectives["glue"])
    # the multi-fidelity line: SMAC3's Hyperband at several epochs, each value the run's logged validation loss
    mf = list(Path("runs").glob("SMAC3-Hyperband/NASBenchBERT/nasbench_bert/nlp_wikitext2/1/trial_logs.jsonl"))
    assert len(mf) == 1
    trials = [json.loads(ln) for ln in mf[0].read_text().splitlines() if ln.strip()]
    assert len({t["trial_value"]["additional_info"]["epoch"] for t in trials}) >= 3
    for t in trials:
        info = t["trial_value"]["additional_info"]
        q = bench.nlp.query(info["recipe_id"], "wikitext2", charge=False)
        assert t["trial_value"]["cost"] == q.curves["val_losses"][info["epoch"] - 1]
