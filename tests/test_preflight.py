"""Issue 28, items 3 and 4: inputs are checked before any work, and error messages quote
the user's input verbatim.

Item 3: ``build-entry`` checked its GLUE folder only after pretraining had written its
checkpoint, and ``search run --budget 99999999999999999999`` ran with an ETA of trillions
of hours. Item 4: rich's markup and emoji codes rewrote the user's input in error
messages (``query ":thumbs_up:"`` printed a thumbs-up emoji, ``"a:b:c"`` printed
``'a🅱c'``).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import UPSTREAM

GLUE_RTE = UPSTREAM / "glue-rte"
ARCH = "128/SA-SDP-h2-512x1/SA-SDP-h2-512x1"
#: a pretraining recipe that runs in seconds, as CLI flags and as a config
TINY_ARGS = ["--steps", "2", "--batch-size", "8", "--seq-len", "16", "--warmup-steps", "1", "--vocab-size", "200",
             "--checkpoint-every", "1", "--epochs", "1", "--max-train-examples", "8"]
TINY_PRE = {"steps": 2, "batch_size": 8, "seq_len": 16, "warmup_steps": 1, "vocab_size": 200, "checkpoint_every": 1}
TINY_FT = {"epochs": 1, "max_train_examples": 8}

#: inputs rich would rewrite: markup tags, emoji codes, and a string that holds one (":b:")
TRICKY = ["[bold]x[/bold]", ":thumbs_up:", "a:b:c"]


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nasbench_bert.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "400", **(env or {})})


# -- item 4: errors quote the input verbatim ---------------------------------------------------------
@pytest.mark.parametrize("text", TRICKY)
def test_query_error_quotes_the_input_verbatim(data_dir, text):
    r = _cli("query", text, env={"NASBENCH_BERT_DATA": str(data_dir)})
    assert r.returncode == 2, r.stderr
    assert repr(text) in r.stderr, r.stderr  # the arch as given, neither styled nor turned into an emoji


@pytest.mark.parametrize("text", TRICKY)
def test_evaluate_error_quotes_the_proxy_verbatim(data_dir, capsys, monkeypatch, text):
    from nasbench_bert import cli

    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    assert cli.main(["proxies", "evaluate", text, "--ids", "0", "--benchmarks", "flexibert"]) == 2
    err = capsys.readouterr().err
    assert repr(text) in err, err


def test_os_error_quotes_the_path_verbatim(data_dir, capsys, monkeypatch):
    """An OSError's file name (a user path) is printed as given too."""
    from nasbench_bert import cli

    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))

    def boom(args):
        raise FileNotFoundError(2, "No such file or directory", "/tmp/:thumbs_up:/a:b:c/[bold]")

    monkeypatch.setattr(cli.data_lookup, "cmd_info", boom)  # build_parser binds the name when main() runs
    assert cli.main(["info"]) == 2
    assert "/tmp/:thumbs_up:/a:b:c/[bold]" in capsys.readouterr().err


def test_output_lines_quote_user_paths_verbatim(data_dir, tmp_path):
    """Lines that echo a user's path on success (``wrote ... to <out>``) keep it whole."""
    out = tmp_path / ":thumbs_up:[bold]a:b:c.csv"
    r = _cli("export", "nlp_ptb", "--out", str(out), env={"NASBENCH_BERT_DATA": str(data_dir)})
    assert r.returncode == 0, r.stderr
    assert str(out) in r.stdout, r.stdout


def test_progress_bar_label_is_verbatim():
    """The live bar (on a terminal) draws its label without markup or emoji codes."""
    from nasbench_bert.progress import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    s = Tty()
    label = "a:b:c :thumbs_up: [bold]x[/bold]"
    with Progress(label, 2, stream=s) as p:
        p.advance(2)
    assert label in s.getvalue(), repr(s.getvalue())


def test_build_entry_lines_quote_user_paths_verbatim(tmp_path, capsys):
    """build-entry's lines print the user's paths as given (here: an arch already built in a
    --results folder whose name holds markup and emoji codes)."""
    from builders import cli as bcli
    from builders.entry import make_recipe
    from builders.results import ResultsTable
    from nasbench_bert import cli

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a small corpus line\n" * 50)
    results = tmp_path / ":thumbs_up:[bold]a:b:c"
    recipe = make_recipe(corpus=f"text:{corpus}", glue=GLUE_RTE, tasks=["rte"], pretrain_config=TINY_PRE,
                         finetune_config=TINY_FT)
    table = ResultsTable(results)
    (table.entries_dir / f"{table.key(ARCH, recipe.key)}.json").write_text("{}")
    assert cli.main(["build-entry", ARCH, "--corpus", f"text:{corpus}", "--glue", str(GLUE_RTE), "--tasks", "rte",
                     *TINY_ARGS, "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert f"in {results}" in out, out
    assert bcli.console._markup is False and bcli.console._emoji is False


# -- item 3: a search budget above what the oracle can answer is refused ---------------------------
def test_cli_search_budget_above_the_table_is_refused_with_the_bound(data_dir):
    """It ran with an ETA of trillions of hours; now one line states the bound, at once."""
    r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "search", "run", "--budget", "99999999999999999999"],
                       capture_output=True, text=True, env={**os.environ, "NASBENCH_BERT_DATA": str(data_dir)}, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "budget = 99999999999999999999" in r.stderr and "491" in r.stderr, r.stderr
    assert "evaluations" not in r.stderr.split("error:")[0]  # no progress line: nothing ran


def test_search_run_refuses_budgets_beyond_the_oracle(bench):
    from nasbench_bert import InvalidArgumentError, search
    from nasbench_bert.search.oracle import make_oracle
    from nasbench_bert.spaces.flexibert import FLEXIBERT_SPACE

    distinct = len(set(bench.archs))
    assert make_oracle("tabular", bench).max_evaluations == distinct == 491
    with pytest.raises(InvalidArgumentError, match=rf"budget = {distinct + 1} .*1 \.\.\. {distinct}"):
        search.run("random", bench, budget=distinct + 1)
    with pytest.raises(InvalidArgumentError, match=r"10,621,440"):
        search.run("random", bench, budget=FLEXIBERT_SPACE.size + 1, oracle="surrogate")
    with pytest.raises(InvalidArgumentError, match=rf"budget = {10**20}"):
        search.compare(bench, ["random"], seeds=2, budget=10**20)
    # a time budget alone is bounded by the simulated seconds of evaluating every arch once
    total = float(sum(bench.query(a, charge=False).time_to_train for a in dict.fromkeys(bench.archs)))
    with pytest.raises(InvalidArgumentError, match=r"time_budget"):
        search.run("random", bench, budget=None, time_budget=total * 2)
    assert len(search.run("random", bench, budget=distinct, seed=0)) == distinct  # the bound itself is allowed


# -- item 3: build-entry checks every input before the first step ----------------------------------
def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def inputs(tmp_path) -> dict[str, Path]:
    """A tiny text corpus, a GLUE folder whose RTE lacks dev.tsv, and one with RTE whole."""
    corpus = tmp_path / "in" / "corpus.txt"
    corpus.parent.mkdir()
    corpus.write_text("the quick brown fox jumps over the lazy dog\n" * 200)
    no_dev = tmp_path / "in" / "glue_no_dev" / "rte"
    no_dev.mkdir(parents=True)
    (no_dev / "train.tsv").write_bytes((GLUE_RTE / "train.tsv").read_bytes())
    return {"corpus": corpus, "no_dev": no_dev.parent, "out": tmp_path / "out"}


#: (extra CLI arguments, the field the error must name); each case leaves a valid build otherwise
BAD_BUILD_INPUTS = [
    (["--glue", "/nonexistent"], "glue"),
    (["--glue", "{no_dev}"], "glue"),                       # rte/train.tsv there, rte/dev.tsv missing
    (["--tasks", "rte,mrpc"], "glue"),                      # the RTE folder has no MRPC files
    (["--corpus", "text:/nonexistent/corpus.txt"], "corpus"),
    (["--corpus", "text:{empty}"], "corpus"),                 # a corpus file that holds no text
    (["--results", "/proc/nasbench-results"], "results"),
    (["--workdir", "{corpus}"], "workdir"),                  # a file where a folder must go
]


@pytest.mark.parametrize("extra,field", BAD_BUILD_INPUTS, ids=[f"{f}:{' '.join(e)}" for e, f in BAD_BUILD_INPUTS])
def test_build_entry_cli_checks_inputs_before_pretraining(inputs, capsys, extra, field):
    """It pretrained (writing its checkpoint) before it found the GLUE folder missing; now
    every input is checked first, the error names the field, and nothing is written."""
    from nasbench_bert import cli

    empty = inputs["corpus"].parent / "empty.txt"
    empty.write_text("\n \n")
    fmt = {"no_dev": inputs["no_dev"], "corpus": inputs["corpus"], "empty": empty}
    extra = [a.format(**fmt) for a in extra]
    out = inputs["out"]
    before = _files(inputs["corpus"].parent)
    argv = ["build-entry", ARCH, "--corpus", f"text:{inputs['corpus']}", "--glue", str(GLUE_RTE), "--tasks", "rte",
            *TINY_ARGS, "--results", str(out / "results"), "--workdir", str(out / "work"), *extra]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"{field} = " in err and "Traceback" not in err, err
    assert not out.exists(), _files(out)  # no checkpoint, no results folder, no partial file
    assert _files(inputs["corpus"].parent) == before


def test_build_entry_python_api_preflight_names_every_problem(inputs, monkeypatch):
    """build_entry and build_many (both executors) run the same preflight first; its error
    is typed and lists each problem with its field."""
    from builders import entry
    from builders.preflight import InputProblem, PreflightError, preflight
    from nasbench_bert import InvalidArgumentError

    def never(*a, **k):
        raise AssertionError("pretraining started before the inputs were checked")

    monkeypatch.setattr(entry, "pretrain", never)
    kw = dict(corpus="text:/nonexistent.txt", glue=inputs["no_dev"], tasks=["rte"], pretrain_config=TINY_PRE,
              finetune_config=TINY_FT, results=inputs["out"] / "r", workdir=inputs["out"] / "w")
    with pytest.raises(PreflightError) as e:
        entry.build_entry(ARCH, **kw)
    assert isinstance(e.value, InvalidArgumentError)
    assert [p.field for p in e.value.problems] == ["corpus", "glue"]
    assert all(isinstance(p, InputProblem) for p in e.value.problems)
    assert "rte" in str(e.value) and "dev.tsv" in str(e.value)
    with pytest.raises(PreflightError):
        entry.build_many([ARCH], **kw)
    monkeypatch.setitem(sys.modules, "ray", None)  # the Ray path checks before it imports or starts Ray
    with pytest.raises(PreflightError):
        entry.build_many([ARCH], executor="ray", **kw)
    assert not inputs["out"].exists()
    # good inputs pass, and give the recipe the build will run
    ok = preflight([ARCH], corpus=f"text:{inputs['corpus']}", glue=GLUE_RTE, tasks=["rte"], pretrain_config=TINY_PRE,
                   finetune_config=TINY_FT, results=inputs["out"] / "r", workdir=inputs["out"] / "w")
    assert ok.tasks == ("rte",) and not inputs["out"].exists()


# -- item 3: hardware and proxies check their cache folder before any model ------------------------
@pytest.mark.parametrize("argv", [
    ["hardware", "--ids", "0", "--semantics", "as_trained", "--cache", "/proc/nb-cache", "--out", "{tmp}/h.csv"],
    ["proxies", "compute", "--ids", "0", "--proxies", "synflow", "--cache", "/proc/nb-cache", "--out", "{tmp}/p.csv"],
    ["proxies", "evaluate", "synflow", "--ids", "0", "--benchmarks", "flexibert", "--cache", "/proc/nb-cache"],
])
def test_sweeps_refuse_an_unusable_cache_before_any_model(data_dir, tmp_path, monkeypatch, capsys, argv):
    """A cache folder where permissions say yes but nothing can be made (/proc, a read-only
    mount) was found only inside the sweep; now a probe folder is made (and removed) first."""
    from nasbench_bert import cli, evaluation, hardware, proxies

    class Reached(Exception):
        pass

    def work(*a, **k):
        raise Reached

    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    for mod, name in ((hardware, "measure_many"), (proxies, "compute"), (evaluation, "evaluate")):
        monkeypatch.setattr(mod, name, work)
    assert cli.main([a.format(tmp=tmp_path) for a in argv]) == 2
    assert "--cache = '/proc/nb-cache'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
