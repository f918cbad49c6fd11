"""proxies.evaluate and 'nasbench-bert proxies evaluate': its rows against scoring.score
on proxies.compute's output, identical models computed once with the same values, the
callable path against a model built by hand, cache resume, errors, and a fuzz of its
arguments. Small id subsets and the small batch of the other proxy tests keep it fast."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from nasbench_bert import proxies, scoring  # noqa: E402
from nasbench_bert.data.tables import GLUE_TASKS  # noqa: E402
from nasbench_bert.errors import InvalidArgumentError  # noqa: E402
from nasbench_bert.hardware import model_key  # noqa: E402
from nasbench_bert.models import build_flexibert  # noqa: E402
from nasbench_bert.models.nlp_rnn import build_nlp_rnn  # noqa: E402
from nasbench_bert.proxies import registry  # noqa: E402
from nasbench_bert.evaluation import nlp_runs  # noqa: E402
from nasbench_bert.proxies.inputs import make_batch  # noqa: E402
from nasbench_bert.proxies.sweep import WORKER_THREADS, default_batch, torch_threads  # noqa: E402
from nasbench_bert.semantics import get_semantics  # noqa: E402
from nasbench_bert.spaces.nlp import parse_recipe  # noqa: E402

SMALL = {"batch_size": 2, "seq_len": 16}


def out_sum(model, batch):
    """A forward-only score that reads every weight on the path: the sum of the output."""
    with torch.no_grad():
        if batch.attention_mask is not None:  # FlexiBERT
            out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        else:  # NAS-Bench-NLP: logits
            out, _ = model(batch.input_ids)
    return out.double().sum()


def dropout_draw(model, batch):
    """Reads the global generator: reproducible only if evaluate seeds it."""
    return float(torch.rand(()))


def returns_text(model, batch):
    return "high"


_CALLS = {"n": 0, "stop_at": 10 ** 9}


def stops(model, batch):
    """out_sum, but a Ctrl-C on the n-th call (an interrupted sweep)."""
    _CALLS["n"] += 1
    if _CALLS["n"] == _CALLS["stop_at"]:
        raise KeyboardInterrupt
    return out_sum(model, batch)


def _cand(res):
    return res.candidate().set_index(["benchmark", "semantics", "target"])


def test_rows_equal_score_of_compute(bench):
    ids = list(range(12))
    name = "head_softmax_confidence"
    res = proxies.evaluate(name, benchmarks="flexibert", ids=ids, batch=SMALL, bootstrap=20, bench=bench, progress=False)
    df = proxies.compute(ids, [name], bench=bench, batch=SMALL)
    want = scoring.score(df, ["glue", *GLUE_TASKS], proxies=[name], control="num_params_as_trained", bootstrap=20,
                         bench=bench)
    got = res.candidate()
    assert list(got.target) == ["glue", *GLUE_TASKS]
    cols = [c for c in want.columns if pd.api.types.is_numeric_dtype(want[c])]
    pd.testing.assert_frame_equal(got[cols].reset_index(drop=True), want[cols].reset_index(drop=True), check_exact=False,
                                  rtol=1e-12, atol=1e-12)
    # every baseline beside it, scored on the same rows
    base = res.rows[(res.rows.kind == "baseline") & (res.rows.target == "glue")]
    assert set(base.proxy) == set(proxies.baselines.trivial_names("flexibert"))
    b = scoring.baseline_values(pd.DataFrame({"id": ids}), bench=bench)
    flex = bench.to_pandas().set_index("id").loc[ids]
    d = base.set_index("proxy").loc["depth"]
    assert d.kendall_tau == pytest.approx(scoring.metrics.kendall_tau_b(b.depth, flex.glue), abs=1e-12)
    assert "τ-b (scipy)" in res.to_markdown() and f"**{name}**" in res.to_markdown()


def _shared_ids(bench, n_groups=2):
    """Ids whose as_trained models coincide (two groups), plus two ids with a model of their own."""
    sem = get_semantics("as_trained")
    groups: dict[str, list[int]] = {}
    for i in range(len(bench)):
        groups.setdefault(model_key(sem.plan(bench.query(i, charge=False).arch)), []).append(i)
    multi = [g[:2] for g in groups.values() if len(g) >= 2][:n_groups]
    single = [g[0] for g in groups.values() if len(g) == 1][:2]
    return sorted([i for g in multi for i in g] + single)


def test_identical_models_once_same_values(bench):
    ids = _shared_ids(bench)
    kw = dict(semantics="as_trained", benchmarks=["flexibert", "nlp"], ids=ids, nlp_ids=range(6), batch=SMALL,
              bootstrap=0, bench=bench, progress=False, tasks=False)
    once = proxies.evaluate(out_sum, **kw)
    every = proxies.evaluate(out_sum, dedupe=False, **kw)
    name = once.proxy
    assert name == f"{__name__}:out_sum"
    assert once.shared >= 2 and every.shared == 0 and once.computed == every.computed - once.shared
    np.testing.assert_array_equal(once.values[name].to_numpy(), every.values[name].to_numpy())
    flex = once.values[once.values.benchmark == "flexibert"]
    assert flex.shared.sum() == 2 and flex.model_key.nunique() == len(ids) - 2


def test_callable_gets_the_semantics_model_and_batch(bench):
    ids, pos = [3, 250], [0, 7]
    res = proxies.evaluate(out_sum, semantics=["authors", "as_trained"], ids=ids, nlp_ids=pos, batch=SMALL, bootstrap=0,
                           bench=bench, progress=False, tasks=False)
    v = res.values
    for sem in ("authors", "as_trained"):
        s = get_semantics(sem)
        batch = make_batch(default_batch("flexibert", **SMALL))
        for i in ids:
            m = build_flexibert(bench.query(i, charge=False).arch, s, seed=0).train(s.protocol.train_mode)
            # the sweep computes every model under WORKER_THREADS torch threads, so the
            # reference does too (the sum of outputs cancels: its last bits follow the count)
            with torch.random.fork_rng(devices=[]), torch_threads(WORKER_THREADS):
                torch.manual_seed(0)
                want = float(out_sum(m, batch))
            got = v[(v.benchmark == "flexibert") & (v.semantics == sem) & (v.id == i)][res.proxy].item()
            assert got == want, (sem, i)
    runs = nlp_runs(bench).iloc[pos]
    nb = make_batch(default_batch("nlp", **SMALL))
    for r in runs.itertuples():
        with torch_threads(WORKER_THREADS):
            want = float(out_sum(build_nlp_rnn(parse_recipe(r.recipe), 10_000, seed=0).eval(), nb))
        got = v[(v.benchmark == "nlp") & (v.log_name == r.log_name)][res.proxy].to_numpy()
        assert (got == want).all()  # both semantics: the language model is the same
    assert any("computed once" in n for n in res.notes)
    # the global generator is seeded for the callable: reproducible, and left as it was
    state = torch.random.get_rng_state()
    a = proxies.evaluate(dropout_draw, benchmarks="flexibert", ids=[0, 1, 2], batch=SMALL, bootstrap=0, bench=bench,
                         progress=False, tasks=False)
    b = proxies.evaluate(dropout_draw, benchmarks="flexibert", ids=[0, 1, 2], batch=SMALL, bootstrap=0, bench=bench,
                         progress=False, tasks=False)
    assert torch.equal(state, torch.random.get_rng_state())
    np.testing.assert_array_equal(a.values[a.proxy], b.values[b.proxy])


def test_cache_resumes_an_interrupted_call(bench, tmp_path):
    kw = dict(benchmarks="flexibert", ids=range(8), batch=SMALL, bootstrap=0, bench=bench, progress=False, tasks=False,
              cache=tmp_path / "c")
    _CALLS.update(n=0, stop_at=5)  # the probe, then three models, then Ctrl-C
    with pytest.raises(KeyboardInterrupt):
        proxies.evaluate(stops, **kw)
    parts = list((tmp_path / "c" / "flexibert").glob("*.parquet"))
    assert len(parts) == 3
    _CALLS.update(n=0, stop_at=10 ** 9)
    res = proxies.evaluate(stops, **kw)
    assert res.cached == 3 and res.computed == 5
    fresh = proxies.evaluate(stops, **{**kw, "cache": None})
    np.testing.assert_array_equal(res.values[res.proxy].to_numpy(), fresh.values[fresh.proxy].to_numpy())
    again = proxies.evaluate(stops, **kw)
    assert again.cached == 8 and again.computed == 0


def test_published_analytic_rows_appear(bench, monkeypatch):
    name = "test_published_width_per_layer"
    p = registry.Proxy(name, "flexibert", lambda s: registry.ProxyValue(s.key.hidden_size / s.key.num_layers),
                       frozenset({"spec"}), True, 1, None, "", ("published",))
    monkeypatch.setitem(registry.REGISTRY["flexibert"], name, p)
    res = proxies.evaluate("depth", benchmarks="flexibert", ids=range(30), bootstrap=0, bench=bench, progress=False,
                           tasks=False, compare=["total_heads"])
    kinds = res.rows.set_index("proxy").kind
    assert kinds[name] == "published" and kinds["depth"] == "candidate" and kinds["total_heads"] == "compare"
    assert "depth" not in set(res.rows[res.rows.kind == "baseline"].proxy)
    assert res.computed == 0  # analytic scores build no model


@pytest.mark.parametrize("kwargs, match", [
    ({"semantics": "bogus"}, "semantics"),
    ({"semantics": []}, "semantics"),
    ({"benchmarks": ["cnn"]}, "benchmarks"),
    ({"benchmarks": "nlp", "proxy": "head_confidence"}, "not registered for 'nlp'"),
    ({"ids": [999]}, "ids"),
    ({"ids": "0-5"}, "ids"),
    ({"ids": []}, "ids"),
    ({"nlp_ids": [275]}, "nlp_ids"),
    ({"compare": ["nope"]}, "compare"),
    ({"compare": 3}, "compare"),
    ({"proxy": 42}, "proxy"),
    ({"proxy": "nope"}, "proxy"),
    ({"proxy": "no_such_module_xyz:fn"}, "cannot be imported"),
    ({"proxy": "json:no_such_fn"}, "no attribute"),
    ({"proxy": "json:__name__"}, "not a callable"),
    ({"bootstrap": -1}, "bootstrap"),
    ({"jobs": 0}, "jobs"),
    ({"executor": "dask"}, "executor"),
    ({"dtype": "float16"}, "dtype"),
    ({"tasks": 1}, "tasks"),
    ({"higher_is_better": "yes"}, "higher_is_better"),
    ({"batch": 5}, "batch"),
    ({"batch": {"batch_sizes": 2}}, "batch"),
    ({"seed": -1}, "seed"),
])
def test_errors_name_the_field(bench, kwargs, match):
    kw = {"proxy": "depth", "benchmarks": "flexibert", "ids": [0, 1, 2], "bench": bench, "progress": False,
          "bootstrap": 0, **kwargs}
    if "nlp_ids" in kwargs:
        kw.update(benchmarks="nlp", proxy="recipe_num_nodes", ids=None)
    if kwargs.get("benchmarks") == ["cnn"] or kwargs.get("benchmarks") == "nlp":
        kw["ids"] = None
    with pytest.raises(InvalidArgumentError, match=match):
        proxies.evaluate(kw.pop("proxy"), **kw)


def test_bad_return_names_the_proxy_and_the_arch(bench, tmp_path):
    with pytest.raises(InvalidArgumentError, match=r"returns_text' returned str 'high' for arch \d+/"):
        proxies.evaluate(returns_text, benchmarks="flexibert", ids=[0, 1], batch=SMALL, bench=bench, progress=False)
    f = tmp_path / "c.txt"
    f.write_text("x")
    with pytest.raises(InvalidArgumentError, match="cache"):
        proxies.evaluate("depth", benchmarks="flexibert", ids=[0, 1, 2], cache=f, bench=bench, progress=False)


VALID = {"semantics": ["as_trained", "all", ["authors", "faithful"]], "benchmarks": [None, "flexibert", ["flexibert"] * 2],
         "bootstrap": [0, 3], "jobs": [1], "tasks": [False, True], "compare": [(), ["total_heads"], "hidden_size"]}
BAD = {"semantics": ["bogus", 3, None, []], "benchmarks": ["nlp", ["cnn"], 7, []], "bootstrap": [-1, "2", True, 1.5],
       "jobs": [0, "1", 2.0], "tasks": ["no", 1, None], "compare": [["nope"], 5, [3]]}


def _among(value, allowed):
    """Membership by type and value: ``1 in [False, True]`` is True in Python, but the
    library refuses 1 where it wants a bool (and True where it wants an int)."""
    return any(type(value) is type(v) and value == v for v in allowed)


def _arg(name):
    """Mostly valid values (so that whole valid calls are drawn often), sometimes a bad one."""
    return st.one_of(st.sampled_from(VALID[name]), st.sampled_from(VALID[name]), st.sampled_from(VALID[name]),
                     st.sampled_from(VALID[name]), st.sampled_from(BAD[name]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_arg("semantics"), _arg("benchmarks"),
       st.one_of(st.lists(st.integers(0, 499), min_size=1, max_size=6), st.lists(st.integers(-2, 520), max_size=4),
                 st.sampled_from([None, "0-3", 4.5, [1.0], [True]])),
       _arg("bootstrap"), _arg("jobs"), _arg("tasks"), _arg("compare"))
def test_fuzz_arguments(bench, semantics, benchmarks, ids, bootstrap, jobs, tasks, compare):
    """Any argument either gives an Evaluation with the candidate's rows or an
    InvalidArgumentError; never a raw KeyError/TypeError. An analytic candidate keeps
    every valid draw cheap (no model is built)."""
    args = dict(semantics=semantics, benchmarks=benchmarks, ids=ids, bootstrap=bootstrap, jobs=jobs, tasks=tasks,
                compare=compare)
    valid = all(_among(args[k], VALID[k]) for k in VALID) and (ids is None or (
        isinstance(ids, list) and ids and all(type(i) is int and 0 <= i < 500 for i in ids)))
    try:
        res = proxies.evaluate("depth", bench=bench, progress=False, **args)
    except InvalidArgumentError:
        assert not valid, args
        return
    assert valid, args
    cand = res.candidate()
    assert len(cand) and set(cand.benchmark) == {"flexibert"}
    assert all(math.isnan(v) or -1 <= v <= 1 for v in cand.kendall_tau)


def _cli(tmp_path, data_dir, *args):
    return subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "--data", str(data_dir), "proxies", "evaluate", *args],
                          capture_output=True, text=True, cwd=tmp_path)


def test_cli_evaluate_module_function(tmp_path, data_dir):
    (tmp_path / "tinyprox.py").write_text(
        "import torch\n\n"
        "def score(model, batch):\n"
        "    with torch.no_grad():\n"
        "        out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids) if batch.attention_mask is not None "
        "else model(batch.input_ids)[0]\n"
        "    return float(out.abs().mean())\n\n"
        "def text(model, batch):\n"
        "    return [1.0]\n")
    r = _cli(tmp_path, data_dir, "tinyprox:score", "--ids", "0-5", "--nlp-ids", "0-3", "--batch-size", "2", "--seq-len", "16",
             "--bootstrap", "5", "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads((tmp_path / "r.json").read_text())
    rows = pd.DataFrame(out["rows"])
    cand = rows[rows.kind == "candidate"]
    assert out["proxy"] == "tinyprox:score" and out["models_computed"] == 10
    assert set(cand.target) == {"glue", *GLUE_TASKS, "test_loss"}
    assert cand[cand.target == "glue"].n.item() == 6 and cand[cand.target == "test_loss"].n.item() == 4
    assert {"depth", "depth_then_width", "recipe_num_nodes"} <= set(rows.proxy)
    assert "\x1b[" not in r.stderr  # no redrawn bar on a pipe (short work prints no progress lines at all)
    # a rerun reads the cache, and Markdown goes to stdout
    r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "--data", str(data_dir), "-q", "proxies", "evaluate",
                        "tinyprox:score", "--ids", "0-5", "--nlp-ids", "0-3", "--batch-size", "2", "--seq-len", "16",
                        "--bootstrap", "5", "--cache", str(tmp_path / "cache")], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "| **tinyprox:score** | 6 |" in r.stdout and "τ, ties broken at random" in r.stdout and r.stderr == ""
    # errors: a non-number names the proxy and the arch; options are checked before any work
    r = _cli(tmp_path, data_dir, "tinyprox:text", "--benchmarks", "flexibert", "--ids", "0-1", "--batch-size", "2",
             "--seq-len", "16")
    assert r.returncode == 2 and "'tinyprox:text' returned list" in r.stderr and "for arch" in r.stderr
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "r.txt").exists()


@pytest.mark.parametrize("args, match", [
    (["--out", "r.txt"], "--out"),
    (["--out", "r.csv", "--format", "json"], "--format"),
    (["--ids", "0-999"], "--ids"),
    (["--nlp-ids", "300"], "--nlp-ids = '300'"),
    (["--benchmarks", "cnn"], "--benchmarks"),
    (["--semantics", "bogus"], "semantics"),
])
def test_cli_evaluate_option_errors(tmp_path, data_dir, monkeypatch, capsys, args, match):
    from nasbench_bert import cli

    monkeypatch.chdir(tmp_path)
    assert cli.main(["--data", str(data_dir), "-q", "proxies", "evaluate", "depth", "--ids", "0-3", "--no-tasks", *args]) == 2
    assert match in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # no partial output file


def test_cli_evaluate_registered_name_csv(tmp_path, data_dir):
    r = _cli(tmp_path, data_dir, "depth_then_width", "--ids", "0-99", "--no-tasks", "--bootstrap", "0", "--format", "csv")
    assert r.returncode == 0, r.stderr[-3000:]
    from io import StringIO

    rows = pd.read_csv(StringIO(r.stdout))
    c = rows[rows.kind == "candidate"].iloc[0]
    assert c.proxy == "depth_then_width" and c.n == 100 and c.target == "glue" and np.isnan(c.tau_within_cell)
    # a function of (layers, hidden size, total heads): no within-arch τ, in either form, never a number
    assert np.isnan(c.tau_within_arch) and np.isnan(c.tau_within_arch_tb) and "partial_tau_arch" not in rows


def test_one_list_of_spaces_and_row_kinds():
    """The benchmarks evaluate ranks, the proxy registry's spaces and the scoring
    adapters all follow the vocabulary's one list; every row kind has a label."""
    from nasbench_bert import evaluation, vocabulary

    assert registry.SPACES == evaluation.BENCHMARKS == tuple(scoring.SCORING_SPACES) == vocabulary.SPACES
    assert evaluation.KINDS == vocabulary.ROW_KINDS
    assert [evaluation._label("p", k) for k in evaluation.KINDS] == ["**p**", "p", "p (published)", "p (baseline)"]
