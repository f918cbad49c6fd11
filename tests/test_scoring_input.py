"""Scoring never drops a user's data silently (issue 28, item 2).

``scoring.score`` and ``proxies score --values`` refuse, with one line naming the column
and the offending ids, a column with non-numbers, duplicate ids, unknown ids and a
column that collides with a built-in baseline or a benchmark target; duplicates and
unknown ids are merged or dropped only on an explicit option, which says what it did.
Each test here failed on the code before that rule (the scores came out, wrong). Torch-free.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from nasbench_bert import cli, scoring
from nasbench_bert.errors import InvalidArgumentError


@pytest.fixture(scope="module")
def flex(bench):
    return bench.to_pandas()


@pytest.fixture(scope="module")
def values(flex):
    """A proxy over the 500 ids: the as-trained size plus noise (τ about 0.49 against GLUE)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame({"id": flex.id.to_numpy(), "myproxy": flex.num_params_as_trained.to_numpy() * rng.lognormal(0, 0.5, len(flex))})


def _tau(df, bench, **kw):
    return scoring.score(df, "glue", bench=bench, bootstrap=0, **kw).set_index("proxy")


# -- non-numeric values and object dtype ------------------------------------------------------
def test_one_non_number_is_refused_naming_the_column_and_ids(bench, values):
    df = values.copy()
    df["myproxy"] = df["myproxy"].astype(object)
    df.loc[7, "myproxy"] = "abc"
    df.loc[9, "myproxy"] = "1,5"
    with pytest.raises(InvalidArgumentError) as e:  # before: the proxy vanished, an empty frame came back
        scoring.score(df, "glue", bench=bench, bootstrap=0)
    msg = str(e.value)
    assert "'myproxy'" in msg and "[7, 9]" in msg and "2 of 500 rows" in msg and "\n" not in msg
    with pytest.raises(InvalidArgumentError, match="myproxy"):  # named explicitly: the same refusal
        scoring.score(df, "glue", proxies=["myproxy"], bench=bench, bootstrap=0)


def test_object_dtype_numbers_are_converted_and_scored(bench, values):
    as_float = _tau(values, bench)
    for obj in (values.assign(myproxy=values.myproxy.astype(object)),
                values.assign(myproxy=[repr(float(v)) for v in values.myproxy])):  # numeric strings
        got = _tau(obj, bench)  # before: an empty frame
        assert list(got.index) == ["myproxy"]
        assert got.loc["myproxy", "kendall_tau"] == as_float.loc["myproxy", "kendall_tau"]
        assert got.loc["myproxy", "n"] == 500
    # missing values stay missing (n says so), they are not refused
    gap = values.assign(myproxy=values.myproxy.astype(object))
    gap.loc[3, "myproxy"] = None
    assert _tau(gap, bench).loc["myproxy", "n"] == 499


def test_a_text_column_is_a_label_not_a_proxy(bench, values):
    got = _tau(values.assign(objective="mlm"), bench)
    assert list(got.index) == ["myproxy"]


# -- duplicate ids ---------------------------------------------------------------------------
def test_duplicate_ids_are_refused_by_default(bench, values):
    dup = pd.concat([values, values.iloc[:50]], ignore_index=True)
    with pytest.raises(InvalidArgumentError) as e:  # before: n = 550, the first 50 archs counted twice
        scoring.score(dup, "glue", bench=bench, bootstrap=0)
    msg = str(e.value)
    assert "'id'" in msg and "50 ids" in msg and "[0, 1, 2, 3, 4" in msg and "duplicates=" in msg


def test_duplicates_first_and_mean_say_what_they_did(bench, values, flex):
    base = _tau(values, bench).loc["myproxy"]
    dup = pd.concat([values, values.iloc[:50].assign(myproxy=values.myproxy.iloc[:50] * 3)], ignore_index=True)
    with pytest.warns(UserWarning, match="50 duplicate"):
        first = scoring.score(dup, "glue", bench=bench, bootstrap=0, duplicates="first")
    assert first.n.iloc[0] == 500 and first.kendall_tau.iloc[0] == base.kendall_tau
    assert any("first" in n for n in first.attrs["notes"])
    with pytest.warns(UserWarning, match="mean"):
        mean = scoring.score(dup, "glue", bench=bench, bootstrap=0, duplicates="mean")
    expect = values.myproxy.to_numpy().copy()
    expect[:50] *= 2  # (v + 3 v) / 2
    assert mean.n.iloc[0] == 500
    assert mean.kendall_tau.iloc[0] == pytest.approx(kendalltau(expect, flex.glue)[0], abs=1e-12)
    with pytest.raises(InvalidArgumentError, match="duplicates"):
        scoring.score(dup, "glue", bench=bench, duplicates="sum")


# -- unknown ids ----------------------------------------------------------------------------
def test_unknown_ids_are_refused_by_default(bench, values):
    unk = pd.concat([values, pd.DataFrame({"id": [600, -1], "myproxy": [1.0, 2.0]})], ignore_index=True)
    with pytest.raises(InvalidArgumentError) as e:  # before: both rows left out without a word
        scoring.score(unk, "glue", bench=bench, bootstrap=0)
    msg = str(e.value)
    assert "'id'" in msg and "[600, -1]" in msg and "2 rows" in msg and "unknown_ids=" in msg
    with pytest.warns(UserWarning, match="2 rows"):
        got = scoring.score(unk, "glue", bench=bench, bootstrap=0, unknown_ids="drop")
    assert got.n.iloc[0] == 500 and any("600" in n for n in got.attrs["notes"])
    assert got.kendall_tau.iloc[0] == _tau(values, bench).loc["myproxy", "kendall_tau"]


def test_nlp_runs_duplicate_and_unknown(bench):
    ptb = bench.nlp.ptb
    runs = ptb[["log_name", "num_params"]].iloc[:200].rename(columns={"num_params": "size"})
    ok = scoring.score(runs, "test_loss", space="nlp", bench=bench, bootstrap=0)
    assert ok.n.iloc[0] == 200
    with pytest.raises(InvalidArgumentError, match=r"'log_name'.*1 id"):
        scoring.score(pd.concat([runs, runs.iloc[:1]]), "test_loss", space="nlp", bench=bench, bootstrap=0)
    bad = pd.concat([runs, pd.DataFrame({"log_name": ["log_stats_model_nope"], "size": [1.0]})])
    with pytest.raises(InvalidArgumentError, match=r"'log_name'.*log_stats_model_nope"):
        scoring.score(bad, "test_loss", space="nlp", bench=bench, bootstrap=0)
    # by recipe id as well; a WikiText-2 run is unknown to the PTB target
    by_recipe = ptb[["recipe_id", "num_params"]].iloc[:100].rename(columns={"num_params": "size"})
    with pytest.raises(InvalidArgumentError, match=r"'recipe_id'.*\[-5\]"):
        scoring.score(pd.concat([by_recipe, pd.DataFrame({"recipe_id": [-5], "size": [1.0]})]), "test_loss", space="nlp",
                      bench=bench, bootstrap=0)
    wt2 = bench.nlp.wikitext2.log_name.iloc[0]
    with pytest.raises(InvalidArgumentError, match="unknown"):
        scoring.score(pd.concat([runs, pd.DataFrame({"log_name": [wt2], "size": [1.0]})]), "test_loss", space="nlp",
                      bench=bench, bootstrap=0)


# -- names that collide with a target ---------------------------------------------------------
def test_a_column_named_like_a_target_that_is_not_the_benchmarks_is_refused(bench, values, flex):
    mine = values.assign(glue=np.arange(500.0))
    with pytest.raises(InvalidArgumentError) as e:  # before: the column silently became the target (τ -0.04)
        scoring.score(mine, "glue", bench=bench, bootstrap=0)
    assert "'glue'" in str(e.value) and "500 rows" in str(e.value)
    with pytest.raises(InvalidArgumentError, match="'rte'"):  # another target's name, scored as a proxy before
        scoring.score(values.assign(rte=np.arange(500.0)), "glue", bench=bench, bootstrap=0)
    # the benchmark's own column (an export) is its target, not a proxy
    same = _tau(values.assign(glue=flex.glue.to_numpy(), rte=flex.rte.to_numpy()), bench)
    assert list(same.index) == ["myproxy"]
    assert same.loc["myproxy", "kendall_tau"] == _tau(values, bench).loc["myproxy", "kendall_tau"]
    # a Series aligned with the rows is still a target of the user's choosing
    got = scoring.score(mine, mine["glue"], proxies=["myproxy"], bench=bench, bootstrap=0)
    assert got.kendall_tau.iloc[0] == pytest.approx(kendalltau(mine.myproxy, mine.glue)[0], abs=1e-12)


# -- the command line ------------------------------------------------------------------------
def _score_cli(data_dir, tmp_path, frame, *extra):
    src = tmp_path / "values.csv"
    frame.to_csv(src, index=False)
    out = tmp_path / "scores.csv"
    rc = cli.main(["--data", str(data_dir), "-q", "proxies", "score", "--values", str(src), "--bootstrap", "0",
                   "--csv", str(out), *extra])
    return rc, out


def test_cli_refuses_and_writes_nothing(data_dir, tmp_path, values, capsys):
    bad = values.astype({"myproxy": object})
    bad.loc[4, "myproxy"] = "abc"
    cases = {
        "abc": (bad, "'myproxy'"),
        "dup": (pd.concat([values, values.iloc[:3]]), "--duplicates"),
        "unknown": (pd.concat([values, pd.DataFrame({"id": [600, -1], "myproxy": [1.0, 2.0]})]), "--unknown-ids"),
        "depth": (values.assign(depth=np.arange(500.0)), "'depth'"),  # before: replaced by the baseline
        "glue": (values.assign(glue=np.arange(500.0)), "'glue'"),  # before: became the target
    }
    for name, (frame, needle) in cases.items():
        rc, out = _score_cli(data_dir, tmp_path, frame)
        err = capsys.readouterr().err
        assert rc == 2, name
        assert needle in err and err.count("\n") == 1, (name, err)
        assert not out.exists(), name


def test_cli_duplicates_and_unknown_options(data_dir, tmp_path, values, capsys):
    frame = pd.concat([values, values.iloc[:3], pd.DataFrame({"id": [600], "myproxy": [1.0]})])
    rc, out = _score_cli(data_dir, tmp_path, frame, "--duplicates", "first", "--unknown-ids", "drop", "--no-baselines")
    err = capsys.readouterr().err
    assert rc == 0 and out.exists()
    assert "3 duplicate" in err and "600" in err
    got = pd.read_csv(out).set_index("proxy")
    assert got.loc["myproxy", "n"] == 500
    # the user's depth equal to the built-in one is the same data: kept, scored once
    flexdepth = scoring.baseline_values(values[["id"]], "flexibert", names=["depth"]).depth
    rc, out = _score_cli(data_dir, tmp_path, values.assign(depth=flexdepth.to_numpy()))
    capsys.readouterr()
    assert rc == 0 and list(pd.read_csv(out).proxy).count("depth") == 1


def test_stored_scoring_passes_the_checks(bench):
    """The release's own PTB table passes every check (run ids unique and known, its
    test_loss column the benchmark's), with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        s = scoring.score_stored("nlp", bench=bench, bootstrap=0)
    assert (s.n > 8000).all() and s.attrs["notes"] == []


def test_fuzz_finds_library_errors_only(bench):
    """Two inputs the fuzz test found: a FlexiBERT target on NAS-Bench-NLP runs (a raw
    KeyError from pandas before) and an integer beyond any float in a proxy column."""
    runs = bench.nlp.ptb[["recipe_id"]].iloc[:5].assign(x=np.arange(5.0))
    with pytest.raises(InvalidArgumentError, match=r"target = 'glue' is not a target of space = 'nlp'"):
        scoring.score(runs, "glue", space="nlp", bench=bench, bootstrap=0)
    huge = pd.DataFrame({"id": range(5), "x": pd.Series([10**400, 1.0, 2.0, 3.0, 4.0], dtype=object)})
    with pytest.raises(InvalidArgumentError, match=r"'x' holds non-numbers at 1 of 5 rows \(id \[0\]"):
        scoring.score(huge, "glue", bench=bench, bootstrap=0)
