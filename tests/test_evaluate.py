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
from nasbench_bert.proxies.callables import register_callable  # noqa: E402
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


# -- issue 29, item 6: writing a proxy ---------------------------------------------------------
FAST = dict(benchmarks="flexibert", ids=[0, 3, 5], batch=SMALL, bootstrap=0, progress=False, tasks=False)


def _flex_capture(arch, needs, sem, seed=0):
    from nasbench_bert.proxies.capture_bert import capture_flexibert

    return capture_flexibert(arch, needs, make_batch(default_batch("flexibert", **SMALL)), sem, seed)


@pytest.mark.parametrize("sem", ["as_trained", "as_specified"])
def test_objective_is_what_the_gradient_proxies_differentiate_flexibert(bench, sem):
    """proxies.objective on the callable's fresh model: the same scalar as the package's
    pass (capture.objective_value of its output) and the same parameter gradients as the
    pass's backward, bit for bit (eval mode: no dropout draw)."""
    from nasbench_bert.proxies.capture import objective_value

    arch = bench.query(3, charge=False).arch
    s = get_semantics(sem)
    ref = _flex_capture(arch, {"backward"}, sem, seed=4)
    want_value = objective_value(ref.output, s.protocol.objective, 4)
    mine = _flex_capture(arch, {"model"}, sem, seed=4)
    r = proxies.objective(mine.model, mine.batch, semantics=sem, seed=4)
    assert r.item() == want_value.item()
    r.backward()
    ref_grads = {n: p.grad for n, p in ref.model.named_parameters() if p.grad is not None}
    my_grads = {n: p.grad for n, p in mine.model.named_parameters() if p.grad is not None}
    assert ref_grads.keys() == my_grads.keys() and ref_grads
    for n in ref_grads:
        assert torch.equal(ref_grads[n], my_grads[n]), n
    # another seed: another projection P, another objective (the seed is honoured)
    assert proxies.objective(mine.model, mine.batch, semantics=sem, seed=5).item() != want_value.item()


def test_objective_nlp_and_inside_a_callable(bench):
    """NAS-Bench-NLP: the sum of the decoder logits (as_trained) and of the last RNN
    output before the decoder (authors), as the capture records them; inside a callable
    the semantics and seed are the call's own."""
    from nasbench_bert.proxies.capture import objective_value
    from nasbench_bert.proxies.capture_nlp import capture_nlp

    recipe = parse_recipe(nlp_runs(bench).recipe.iloc[0])
    nb = make_batch(default_batch("nlp", **SMALL))
    for sem in ("as_trained", "authors"):
        ref = capture_nlp(recipe, {"forward"}, nb, sem, 0)
        mine = capture_nlp(recipe, {"model"}, nb, sem, 0)
        got = float(proxies.objective(mine.model, nb, semantics=sem))
        assert got == pytest.approx(float(ref.output.sum()), rel=1e-6), sem
    with pytest.raises(InvalidArgumentError, match="semantics"):
        proxies.objective(mine.model, nb)  # outside a callable: the semantics must be given

    def objective_value_proxy(model, batch):
        return proxies.objective(model, batch).detach()

    res = proxies.evaluate(objective_value_proxy, semantics=["as_trained", "authors"], bench=bench, **FAST)
    for sem in ("as_trained", "authors"):
        s = get_semantics(sem)
        for i in FAST["ids"]:
            ref = _flex_capture(bench.query(i, charge=False).arch, {"forward"}, sem)
            got = res.values[(res.values.semantics == sem) & (res.values.id == i)][res.proxy].item()
            want = float(objective_value(ref.output, s.protocol.objective, 0))
            if sem == "as_trained":
                assert got == want
            else:  # authors: train mode, and the callable's dropout masks come from its own seeded draw
                assert math.isfinite(got)


def test_batches_gives_a_list_of_distinct_batches(bench):
    seen = []

    def two(model, batches):
        seen.append([b.input_ids.clone() for b in batches])
        return float(len(batches))

    res = proxies.evaluate(two, batches=2, bench=bench, **FAST)
    assert (res.values[res.proxy] == 2.0).all()
    first, second = seen[0]
    assert torch.equal(first, make_batch(default_batch("flexibert", **SMALL)).input_ids)
    assert torch.equal(second, make_batch(default_batch("flexibert", seed=1, **SMALL)).input_ids)
    with pytest.raises(InvalidArgumentError, match="batches"):
        proxies.evaluate(two, batches=0, bench=bench, **FAST)
    with pytest.raises(InvalidArgumentError, match="batches"):
        proxies.evaluate("depth", batches=2, bench=bench, **FAST)


def _write_module(path, sign: str) -> None:
    path.write_text("import torch\n\n"
                    "def helper(x):\n"
                    f"    return {sign}float(x.mean())\n\n"
                    "def score(model, batch):\n"
                    "    with torch.no_grad():\n"
                    "        return helper(model(batch.input_ids, batch.attention_mask, batch.token_type_ids))\n")


def test_cache_key_covers_the_module_file_closures_version_and_refresh(bench, tmp_path, monkeypatch):
    """The issue's stale cache: a helper's sign flipped in the same file is recomputed
    (τ changes sign), two closures of one factory do not share values, version= names the
    definition instead, and refresh recomputes."""
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = tmp_path / "signprox.py"
    _write_module(mod, "")
    kw = dict(FAST, bench=bench, cache=tmp_path / "c")
    a = proxies.evaluate(f"{mod}:score", **kw)
    assert a.computed > 0 and a.cached == 0
    _write_module(mod, "-")  # in this process: the spec is loaded again from the edited file
    b = proxies.evaluate(f"{mod}:score", **kw)
    assert b.cached == 0 and b.computed == a.computed
    np.testing.assert_allclose(b.values[b.proxy].to_numpy(), -a.values[a.proxy].to_numpy())
    assert b.candidate().kendall_tau.item() == pytest.approx(-a.candidate().kendall_tau.item())

    # closures: one factory, two values -> two keys; the same value -> the same key (through
    # proxies.compute, the sweep evaluate runs, to keep this test short)
    def factory(k):
        def scaled(model, batch):
            with torch.no_grad():
                return k * float(model(batch.input_ids, batch.attention_mask, batch.token_type_ids).mean())
        return scaled

    def run(fn, **extra):
        name = register_callable(fn, version=extra.pop("version", None))
        df = proxies.compute(FAST["ids"], [name], batch=SMALL, bench=bench, cache=tmp_path / "k", **extra)
        return df[name].to_numpy(), df.cached.astype(bool).to_numpy()

    one, hit1 = run(factory(1.0))
    two, hit2 = run(factory(2.0))
    assert not hit1.any() and not hit2.any()
    np.testing.assert_allclose(two, 2 * one)
    assert run(factory(2.0))[1].all()
    # default values count too
    from nasbench_bert.proxies.callables import _version

    def with_default(model, batch, k=1.0):
        return k

    def with_other_default(model, batch, k=3.0):
        return k
    with_other_default.__qualname__ = with_default.__qualname__
    assert _version(with_default) != _version(with_other_default)
    # a function object whose same-module helper was redefined in memory (a notebook cell run
    # again) takes another key, though its file is the same
    ns: dict = {"__name__": "cell"}
    exec("def helper(x):\n    return x\n\ndef f(model, batch):\n    return helper(1.0)\n", ns)
    before = _version(ns["f"])
    exec("def helper(x):\n    return -x\n", ns)
    assert _version(ns["f"]) != before
    # an explicit version names the definition: the same label is served whatever changed
    assert not run(factory(5.0), version="v1")[1].any()
    five, hit = run(factory(7.0), version="v1")
    assert hit.all() and five[0] == pytest.approx(5 * one[0])
    # refresh: everything again, and the cache then holds the new values
    again, hit = run(factory(7.0), version="v1", refresh=True)
    assert not hit.any() and again[0] == pytest.approx(7 * one[0])
    with pytest.raises(InvalidArgumentError, match="refresh"):
        proxies.evaluate(factory(2.0), refresh="yes", **kw)


_FLAKY = {"fail_on": None}


def flaky(model, batch):
    """out_sum, but raising on models whose layer count is _FLAKY['fail_on']."""
    if len(model.layers) == _FLAKY["fail_on"]:
        raise RuntimeError("transient failure")
    return out_sum(model, batch)


def test_failed_models_are_retried_not_cached(bench, tmp_path):
    kw = dict(FAST, bench=bench, cache=tmp_path / "c")
    _FLAKY["fail_on"] = 2  # id 0 (the probe's) is a 4-layer arch, 3 and 5 are 2-layer
    try:
        a = proxies.evaluate(flaky, **kw)
    finally:
        _FLAKY["fail_on"] = None
    assert any("failed on 2 of 3 rows" in n and "transient failure" in n for n in a.notes)
    assert a.candidate().n.item() == 1
    b = proxies.evaluate(flaky, **kw)
    assert b.computed == 2 and b.cached == 1 and b.candidate().n.item() == 3
    assert not any("failed" in n for n in b.notes)


def test_probe_before_any_work(bench, tmp_path):
    """A callable that rejects a benchmark's model: skipped with a one-line note when the
    benchmark was not named; one line and no work when it was, or when it fits none."""
    def flexibert_only(model, batch):
        with torch.no_grad():
            return float(model(batch.input_ids, batch.attention_mask, batch.token_type_ids).norm())

    kw = dict(ids=[0, 3, 5], nlp_ids=[0, 1, 2], batch=SMALL, bootstrap=0, progress=False, tasks=False, bench=bench)
    res = proxies.evaluate(flexibert_only, **kw)
    assert set(res.candidate().benchmark) == {"flexibert"} and list(res.skipped) == ["nlp"]
    assert "'tuple' object has no attribute 'norm'" in res.skipped["nlp"] and "\n" not in res.skipped["nlp"]
    assert any(n.startswith("nlp skipped") for n in res.notes)
    cache = tmp_path / "c"
    with pytest.raises(InvalidArgumentError, match="first nlp model") as e:
        proxies.evaluate(flexibert_only, **{**kw, "benchmarks": ["flexibert", "nlp"]}, cache=cache)
    assert "\n" not in str(e.value) and not list(cache.rglob("*.parquet"))  # before any work

    def fits_none(model, batch):
        raise ValueError("no\nthanks")

    with pytest.raises(InvalidArgumentError, match="fits none") as e:
        proxies.evaluate(fits_none, **kw, cache=cache)
    assert "\n" not in str(e.value) and not list(cache.rglob("*.parquet"))


_INF = {}


def nonfinite(model, batch):
    """A value per model from _INF, keyed by out_sum (distinct across these archs)."""
    return _INF[float(out_sum(model, batch))]


def test_nan_and_inf_rule(bench, one_torch_thread):
    """NaN left out for every score of the table (the baselines on exactly the proxy's
    rows), +inf above every finite value, -inf below, in both orientations; the note
    counts them; all-NaN is one line."""
    from nasbench_bert.evaluation import ranked_values

    ids = list(range(8))
    base = proxies.evaluate(out_sum, benchmarks="flexibert", ids=ids, batch=SMALL, bootstrap=0, progress=False,
                            tasks=False, bench=bench, dedupe=False)
    keys = base.values[base.proxy].to_numpy(dtype=float)
    assert len(set(keys)) == len(ids)
    raw = keys.copy()
    raw[0], raw[1], raw[2], raw[3] = math.nan, math.inf, -math.inf, math.inf
    _INF.clear()
    _INF.update({k: x for k, x in zip(keys, raw)})
    for hib in (True, False):
        res = proxies.evaluate(nonfinite, benchmarks="flexibert", ids=ids, batch=SMALL, bootstrap=0, progress=False,
                               tasks=False, bench=bench, dedupe=False, higher_is_better=hib)
        rows = res.rows[res.rows.target == "glue"]
        assert (rows.n == 7).all()  # every score on the proxy's 7 rows
        note = [n for n in res.notes if "NaN/inf" in n]
        assert len(note) == 1 and "on 4 of 8 models" in note[0] and "+inf on 2" in note[0] and "-inf on 1" in note[0]
        # the reference: scoring.score on the same 11 rows with inf mapped to the ends
        frame = pd.DataFrame({"id": ids[1:], "x": ranked_values(raw[1:])})
        want = scoring.score(frame, "glue", proxies=["x"], bootstrap=0, bench=bench)
        cand = res.candidate().iloc[0]
        sign = 1 if hib else -1
        assert cand.kendall_tau == pytest.approx(sign * want.kendall_tau.item())
        assert cand.tau_tiebroken == pytest.approx(sign * want.tau_tiebroken.item())
        base_rows = scoring.score(pd.DataFrame({"id": ids[1:]}).assign(  # depth, on the 7 rows only
            layers=[float(str(bench.query(i, charge=False).arch).count("/")) for i in ids[1:]]), "glue",
            proxies=["layers"], bootstrap=0, bench=bench)
        assert rows[rows.proxy == "depth"].kendall_tau.item() == pytest.approx(base_rows.kendall_tau.item())
    got = ranked_values([1.0, math.inf, -math.inf, math.nan, 3.0, math.inf])
    assert got[1] == got[5] == np.nextafter(3.0, np.inf) and got[2] == np.nextafter(1.0, -np.inf) and np.isnan(got[3])
    _INF.update({k: math.nan for k in keys})
    with pytest.raises(InvalidArgumentError, match="NaN on every model"):
        proxies.evaluate(nonfinite, benchmarks="flexibert", ids=ids, batch=SMALL, bootstrap=0, progress=False,
                         tasks=False, bench=bench, dedupe=False)


def _tables(md):
    """(header cells, body rows) of each Markdown table of ``md``."""
    out, lines = [], md.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("| ") and k + 1 < len(lines) and lines[k + 1].startswith("|---"):
            body = []
            for row in lines[k + 2:]:
                if not row.startswith("| "):
                    break
                body.append([c.strip() for c in row.strip("|").split(" | ")])
            out.append(([c.strip() for c in line.strip("|").split(" | ")], body))
    return out


def test_table_sorted_by_tiebroken_tau_with_a_verdict_each_column_once(bench):
    res = proxies.evaluate(out_sum, ids=list(range(0, 500, 25)), nlp_ids=list(range(0, 275, 50)), batch=SMALL,
                           bootstrap=30, progress=False, bench=bench)
    md = res.to_markdown()
    tables = _tables(md)
    assert len(tables) >= 3  # flexibert headline + per task, nlp headline
    for head, body in tables:
        assert len(head) == len(set(head)), head  # each column once (NAS-Bench-NLP printed the partial τ twice)
    rows = res.rows
    for (bm, sem), block in rows[rows.target.isin(["glue", "test_loss"])].groupby(["benchmark", "semantics"]):
        want = block.sort_values("tau_tiebroken", ascending=False, na_position="last", kind="stable")
        table = next(t for t in tables if any(r[0] == f"**{res.proxy}**" for r in t[1]) and len(t[1]) == len(block))
        names = [r[0].replace("**", "").replace(" (baseline)", "").replace(" (published)", "") for r in table[1]]
        assert names == list(want.proxy), bm
    # the verdict: the paired difference of metrics.paired_difference on the same rows and resamples
    from nasbench_bert import metrics

    line = res.verdicts[("flexibert", "as_trained")]
    assert md.index(line) < md.index("| proxy |") and line.startswith("**Verdict**") and "\n" not in line
    d_tb = res.candidate().set_index("target").loc["glue"]
    word = ("above" if d_tb.rule_diff_tau_tiebroken_ci_low > 0 else "below" if d_tb.rule_diff_tau_tiebroken_ci_high < 0
            else "level")
    assert f"against the `depth_width_then_size` rule: {word} on tie-broken τ" in line
    v = res.values[res.values.benchmark == "flexibert"]
    frame = v[["id", res.proxy, "depth_width_then_size"]]
    y = scoring._target_values(frame, "glue", bench, "flexibert")[0]
    want = metrics.paired_difference(frame[res.proxy].to_numpy(float), frame["depth_width_then_size"].to_numpy(float), y,
                                     scoring.rank_context(frame, "flexibert", bench), bootstrap=30, seed=0)
    cand = res.candidate().set_index("target").loc["glue"]
    for m in ("tau_tiebroken", "tau_within_cell_tb"):
        assert cand[f"rule_diff_{m}"] == pytest.approx(want[m].value)
        assert (cand[f"rule_diff_{m}_ci_low"], cand[f"rule_diff_{m}_ci_high"]) == pytest.approx(
            (want[m].ci_low, want[m].ci_high))
        assert f"paired {want[m].value:+.3f} [{want[m].ci_low:+.3f}, {want[m].ci_high:+.3f}]" in line
    rule = res.rows[(res.rows.benchmark == "flexibert") & (res.rows.target == "glue") &
                    (res.rows.proxy == "depth_width_then_size")].iloc[0]
    assert cand.tau_tiebroken - rule.tau_tiebroken == pytest.approx(want["tau_tiebroken"].value)
    assert "no `depth_width_then_size` rule" in res.verdicts[("nlp", "as_trained")]


def test_paired_difference():
    from nasbench_bert import metrics

    rng = np.random.default_rng(1)
    y = rng.normal(size=40)
    x1, x2 = y + rng.normal(size=40), np.round(y + 2 * rng.normal(size=40))
    ctx = metrics.RankContext(cells=rng.integers(0, 4, 40))
    d = metrics.paired_difference(x1, x2, y, ctx, bootstrap=100, seed=2)
    a, b = metrics.rank_metrics(x1, y, ctx, bootstrap=0), metrics.rank_metrics(x2, y, ctx, bootstrap=0)
    for m in ("tau_tiebroken", "tau_within_cell_tb"):
        assert d[m].value == pytest.approx(a[m].value - b[m].value)
        assert d[m].ci_low <= d[m].value <= d[m].ci_high
    same = metrics.paired_difference(x1, x1, y, ctx, bootstrap=50)
    assert all((e.value, e.ci_low, e.ci_high) == (0.0, 0.0, 0.0) for e in same.values())
    with pytest.raises(InvalidArgumentError, match="names"):
        metrics.paired_difference(x1, x2, y, names=["spearman_rho"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=12))
def test_ranked_values_keeps_the_numeric_order(xs):
    """+inf above every finite value, -inf below, equal values tied, NaN stays NaN:
    the pairwise order of the mapped values is the numeric order of the given ones."""
    from nasbench_bert.evaluation import ranked_values

    x = np.array(xs, dtype=float)
    v = ranked_values(x)
    nan = np.isnan(x)
    assert (np.isnan(v) == nan).all() and np.isfinite(v[~nan]).all()
    a, b = x[~nan], v[~nan]
    np.testing.assert_array_equal(a[:, None] > a[None, :], b[:, None] > b[None, :])
    np.testing.assert_array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.integers(), st.text(max_size=5), st.tuples(st.integers(), st.floats(allow_nan=False))),
       st.one_of(st.integers(), st.text(max_size=5), st.tuples(st.integers(), st.floats(allow_nan=False))))
def test_closure_values_decide_the_version(a, b):
    """Two closures of one factory share a version exactly when their cell values are equal."""
    from nasbench_bert.proxies.callables import _version

    def factory(k):
        def proxy(model, batch):
            return k
        return proxy

    same = type(a) is type(b) and repr(a) == repr(b)
    assert (_version(factory(a)) == _version(factory(b))) == same
