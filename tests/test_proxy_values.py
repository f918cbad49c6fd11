"""The proxy-values table (issue 35): built through the sweep, pinned with its provenance,
verified on load, refused with one line when it does not belong to this package, and
recomputable by ``--verify``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from nasbench_bert import DataIntegrityError, DataNotFoundError, InvalidArgumentError, StaleDataError
from nasbench_bert.data import proxy_values as pv
from nasbench_bert.data.tables import DataDir

torch = pytest.importorskip("torch")

from nasbench_bert import proxies  # noqa: E402
from nasbench_bert.proxies import values  # noqa: E402
from conftest import ROOT  # noqa: E402

FLEX_PROXIES = ["l2_norm", "nsc", "zico", "ntkt", "sept", "ntsr", "synaptic_saliency"]
NLP_PROXIES = ["l2_norm", "recipe_num_params"]
IDS = [0, 3]


@pytest.fixture(scope="module")
def built(bench, tmp_path_factory):
    """A small table: 2 FlexiBERT ids under two semantics, one NAS-Bench-NLP recipe."""
    in_ptb = set(bench.nlp.ptb["recipe_hash"].dropna())
    recipe = next(h for h, _ in values.nlp_recipes(bench) if h in in_ptb)  # one with a PTB run too
    cache = tmp_path_factory.mktemp("pv-cache")
    res = values.build(bench, semantics=["as_trained", "authors"], ids=IDS, recipes=[recipe], cache=cache,
                       proxies=FLEX_PROXIES + NLP_PROXIES)
    return res, recipe


@pytest.fixture()
def data_copy(bench, tmp_path) -> DataDir:
    """A private copy of the session's data folder, without a proxy-values table."""
    dst = tmp_path / "data"
    shutil.copytree(bench.data.path.parent, dst)
    d = DataDir.open(dst)
    manifest = json.loads((d.path / "manifest.json").read_text())
    manifest["tables"].pop(pv.TABLE, None)
    manifest.pop(pv.TABLE, None)
    (d.path / "manifest.json").write_text(json.dumps(manifest))
    return DataDir.open(dst)


def _bench_on(data: DataDir):
    from nasbench_bert import Benchmark

    return Benchmark(data)


def test_values_equal_a_plain_sweep_of_the_same_protocol(bench, built):
    """Every value is what proxies.compute gives for that arch, semantics, float64 and seed 0
    (exactly: the same computation), and NTSR is ranked within the table's rows."""
    res, recipe = built
    df = res.frame
    for sem in ("as_trained", "authors"):
        ref = proxies.compute(IDS, [p for p in FLEX_PROXIES if p != "ntsr"], semantics=sem, dtype="float64", seed=0,
                              bench=bench).set_index("id")
        got = df[(df.benchmark == "flexibert") & (df.semantics == sem)].set_index("id")
        for p in FLEX_PROXIES:
            if p == "ntsr":
                continue
            assert np.array_equal(got.loc[IDS, p].to_numpy(float), ref.loc[IDS, p].to_numpy(float)), (sem, p)
        assert np.array_equal(got.loc[IDS, "ntsr"].to_numpy(float), proxies.ntsr(ref.loc[IDS]).to_numpy(float))
    nlp = df[df.benchmark == "nlp"]
    assert set(nlp.semantics) == {"as_trained"} and set(nlp.recipe_hash) == {recipe}
    rec = dict(values.nlp_recipes(bench))[recipe]
    ref = proxies.compute([(recipe, rec)], NLP_PROXIES, space="nlp", semantics="as_trained", dtype="float64")
    row = nlp[nlp.semantics == "as_trained"].iloc[0]
    assert [row[p] for p in NLP_PROXIES] == [ref[p].iloc[0] for p in NLP_PROXIES]


def test_provenance_names_version_machine_dtype_batch_and_definitions(built):
    from nasbench_bert import __version__

    res, _ = built
    p = res.provenance
    assert p["package_version"] == __version__ and p["dtype"] == "float64" and p["seed"] == 0 and p["threads"] == 1
    assert p["device"] == "cpu" and p["machine"]["torch"] == torch.__version__
    flex = p["benchmarks"]["flexibert"]
    assert flex["batch"] == "random,B=8,T=128,seed=0" and flex["semantics"] == ["as_trained", "authors"]
    assert flex["proxies"]["zico"]["version"] == proxies.get("flexibert", ["zico"])[0].version
    assert set(flex["proxies"]) == set(FLEX_PROXIES) - {"ntsr"} and set(flex["combined"]) == {"ntsr"}
    assert flex["proxies"]["zico"]["layer"] == "own" and flex["proxies"]["l2_norm"]["layer"] == "pass"
    assert all(s > 0 for s in flex["proxies"]["zico"]["seconds_per_row"].values())
    assert p["benchmarks"]["nlp"]["semantics"] == ["as_trained"]


def test_standalone_file_round_trip_and_refusals(built, tmp_path):
    res, _ = built
    table = res.to_arrow()
    out = tmp_path / "pv.parquet"
    meta = pv.write_standalone(table, res.provenance, out)
    again, meta2 = pv.read_standalone(out)
    assert again.schema == table.schema and again.to_pandas().equals(table.to_pandas()) and meta2 == meta
    # a column a benchmark does not register is null on its rows, never NaN
    nlp_rows = again.filter(again.column("benchmark").to_numpy(zero_copy_only=False) == "nlp")
    assert nlp_rows.column("nsc").null_count == nlp_rows.num_rows and nlp_rows.column("l2_norm").null_count == 0
    assert list(table.column_names[:4]) == list(pv.KEY_COLUMNS)
    # the same frame always gives the same bytes
    pv.write_standalone(pv.to_arrow(res.frame.sample(frac=1, random_state=1), res.columns, res.owners), res.provenance,
                        tmp_path / "again.parquet")
    assert (tmp_path / "again.parquet").read_bytes() == out.read_bytes()
    # one flipped byte: refused, naming the rebuild command
    raw = bytearray(out.read_bytes())
    raw[len(raw) // 2] ^= 1
    out.write_bytes(bytes(raw))
    with pytest.raises(DataIntegrityError, match="build-proxy-values"):
        pv.read_standalone(out)


def test_table_in_a_data_folder_loads_verified(built, data_copy):
    res, recipe = built
    pv.add_to_data(data_copy, res.to_arrow(), res.provenance)
    b = _bench_on(DataDir.open(data_copy.path))
    df = b.proxy_values("authors", ["zico", "nsc"])
    assert list(df.index) == IDS and list(df.columns) == ["zico", "nsc"]
    want = res.frame[(res.frame.benchmark == "flexibert") & (res.frame.semantics == "authors")].set_index("id")
    assert df["zico"].tolist() == want.loc[IDS, "zico"].tolist()
    assert df.attrs["semantics"] == "authors" and df.attrs["dtype"] == "float64"
    assert df.attrs["proxies"]["zico"]["version"] >= 1
    nlp = b.nlp.proxy_values()
    assert list(nlp.index) == [recipe] and nlp.index.name == "recipe_hash"
    same = b.nlp.proxy_values("as_specified")  # the same model and protocol: as_trained's rows, said in attrs
    assert same.equals(nlp) and same.attrs["rows_of"] == "as_trained"
    for bad, match in ((lambda: b.proxy_values("as_specified"), "allowed values"),
                       (lambda: b.proxy_values("authors", ["nope"]), "'nope' is not in the flexibert proxy values"),
                       (lambda: b.proxy_values("bogus"), "semantics = 'bogus'"),
                       (lambda: b.proxy_values("authors", [3]), "proxies = ")):
        with pytest.raises(InvalidArgumentError, match=match):
            bad()


def test_nlp_as_specified_is_as_trained_there():
    """SAME_AS stands only while the two semantics prescribe NAS-Bench-NLP the same protocol."""
    from nasbench_bert.semantics import get_semantics

    for (bench, sem), other in pv.SAME_AS.items():
        assert bench == "nlp"
        a, b = get_semantics(sem).protocol, get_semantics(other).protocol
        assert (a.train_mode, a.nlp_objective) == (b.train_mode, b.nlp_objective)


def test_missing_stale_or_damaged_table_is_refused_with_one_line(built, data_copy):
    res, _ = built
    b = _bench_on(data_copy)
    with pytest.raises(DataNotFoundError, match="build-proxy-values") as e:
        b.proxy_values()
    assert "\n" not in str(e.value)
    stale = {**res.provenance, "package_version": "0.0.1"}
    pv.add_to_data(data_copy, res.to_arrow(), stale)
    with pytest.raises(StaleDataError, match=r"built by nasbench-bert 0\.0\.1.*build-proxy-values"):
        _bench_on(DataDir.open(data_copy.path)).proxy_values()
    # columns that are not the provenance's proxies
    extra = {**res.provenance, "benchmarks": {**res.provenance["benchmarks"], "flexibert": {
        **res.provenance["benchmarks"]["flexibert"],
        "proxies": {k: v for k, v in res.provenance["benchmarks"]["flexibert"]["proxies"].items() if k != "nsc"}}}}
    pv.add_to_data(data_copy, res.to_arrow(), extra)
    fresh = DataDir.open(data_copy.path)
    assert "nsc" not in fresh.manifest[pv.TABLE]["benchmarks"]["flexibert"]["proxies"]
    with pytest.raises(DataIntegrityError, match="columns do not match"):
        _bench_on(fresh).proxy_values()
    # a table file swapped behind the manifest's back
    pv.add_to_data(data_copy, res.to_arrow(), res.provenance)
    path = data_copy.path / "proxy_values.parquet"
    pq.write_table(pv.to_arrow(res.frame.iloc[:3], res.columns, res.owners), path)
    with pytest.raises(DataIntegrityError, match="proxy_values"):
        _bench_on(DataDir.open(data_copy.path)).proxy_values()


def test_tables_build_includes_a_given_table_and_checks_its_arch_list(built, tmp_path):
    from conftest import UPSTREAM
    from nasbench_bert.data.release import build_tables

    res, _ = built
    f = tmp_path / "pv.parquet"
    pv.write_standalone(res.to_arrow(), res.provenance, f)
    out = build_tables(UPSTREAM, tmp_path / "d", progress=False, proxy_values=f)
    d = DataDir.open(out)
    assert d.manifest[pv.TABLE]["package_version"] == res.provenance["package_version"]
    assert _bench_on(d).proxy_values("as_trained", ["l2_norm"]).shape == (2, 1)
    wrong = json.loads(json.dumps(res.provenance))
    wrong["benchmarks"]["flexibert"]["arch_list_sha256"] = "0" * 64
    pv.write_standalone(res.to_arrow(), wrong, f)
    with pytest.raises(DataIntegrityError, match="another arch list"):
        build_tables(UPSTREAM, tmp_path / "e", progress=False, proxy_values=f)
    assert not (tmp_path / "e" / "v2").exists()
    stale = {**res.provenance, "package_version": "0.0.1"}
    pv.write_standalone(res.to_arrow(), stale, f)
    with pytest.raises(StaleDataError, match="build-proxy-values"):  # a file asked for by name: refused
        build_tables(UPSTREAM, tmp_path / "f", progress=False, proxy_values=f)


def test_stale_pinned_table_builds_without_it_saying_so(built, tmp_path, monkeypatch):
    """The pinned file of another version (between a version bump and its rebuild): the
    tables build without proxy values and a warning says why, rather than not at all."""
    res, _ = built
    f = tmp_path / "pinned" / "proxy_values.parquet"
    f.parent.mkdir()
    pv.write_standalone(res.to_arrow(), {**res.provenance, "package_version": "0.0.1"}, f)
    monkeypatch.setattr(pv, "PINNED", f)
    with pytest.warns(UserWarning, match="built without proxy values"):
        assert pv.for_build() is None
    with pytest.raises(DataNotFoundError, match="proxy_values = .*is not a file"):
        pv.for_build(tmp_path / "nothing.parquet")


def test_verify_passes_on_the_table_and_fails_on_a_changed_value(bench, built, data_copy):
    res, recipe = built
    pv.add_to_data(data_copy, res.to_arrow(), res.provenance)
    b = _bench_on(DataDir.open(data_copy.path))
    checks = values.verify(b, benchmarks=["flexibert", "nlp"], semantics=["as_trained", "authors"], ids=[3],
                           recipes=[recipe], proxies=["l2_norm", "zico", "nsc", "synaptic_saliency"])
    assert {(c.benchmark, c.semantics, c.proxy) for c in checks} >= {("flexibert", "authors", "zico"),
                                                                      ("nlp", "as_trained", "l2_norm")}
    assert all(c.ok and c.max_rel_diff == 0 for c in checks), [c for c in checks if c.max_rel_diff]
    noise = [c for c in checks if c.tolerance is None]
    assert {(c.semantics, c.proxy) for c in noise} == {("authors", "zico"), ("authors", "synaptic_saliency")}
    # one value changed by 1e-6 relative: that proxy fails, the others pass
    frame = res.frame.copy()
    at = (frame.benchmark == "flexibert") & (frame.semantics == "as_trained") & (frame.id == 3)
    frame.loc[at, "l2_norm"] *= 1 + 1e-6
    pv.add_to_data(data_copy, pv.to_arrow(frame, res.columns, res.owners), res.provenance)
    b = _bench_on(DataDir.open(data_copy.path))
    checks = values.verify(b, semantics=["as_trained"], ids=[3], proxies=["l2_norm", "nsc"])
    bad = [c.proxy for c in checks if not c.ok]
    assert bad == ["l2_norm"]
    with pytest.raises(InvalidArgumentError, match="'nope' is not a proxy"):
        values.verify(b, ids=[3], proxies=["nope"])


def test_noise_list_is_every_proxy_that_differentiates_the_vanishing_objective():
    """Under ``authors`` the FlexiBERT objective is ``ones``: the shared-pass proxies that read
    its backward (or synflow's pass) are exactly NOISE's shared-pass members."""
    from nasbench_bert.semantics import get_semantics

    assert get_semantics("authors").protocol.objective == "ones"
    noise = values.NOISE["flexibert", "authors"]
    # the package's own proxies: a test elsewhere (test_proxies) registers one of its own in
    # the same process, which the table never holds
    reg = [p for p in proxies.get("flexibert", "all") if p.fn.__module__.startswith("nasbench_bert.")]
    shared = {p.name for p in reg if not p.model_only and p.needs & {"backward", "synflow"}}
    assert {n for n in noise if not proxies.get("flexibert", [n])[0].model_only} == shared
    own = {p.name for p in reg if p.model_only}
    assert noise & own == {"fisher", "grasp", "epe_nas", "zico"} and own - noise == {"meco", "zen"}
    assert not any(values.is_noise("flexibert", s, "zico") for s in ("as_trained", "as_specified"))


def test_cli_exports_and_refuses_in_one_line(built, data_copy, tmp_path, capsys):
    from nasbench_bert.cli import main

    res, _ = built
    pv.add_to_data(data_copy, res.to_arrow(), res.provenance)
    out = tmp_path / "zc.csv"
    assert main(["--data", str(data_copy.path.parent), "-q", "proxies", "values", "--semantics", "authors",
                 "--proxies", "zico,nsc", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["id", "zico", "nsc"] and df["id"].tolist() == IDS
    for argv, flag in ((["--benchmark", "cifar"], "--benchmark"), (["--semantics", "nope"], "--semantics"),
                       (["--out", str(tmp_path / "x.txt")], "--out"), (["--proxies", "nope"], "'nope'")):
        capsys.readouterr()
        assert main(["--data", str(data_copy.path.parent), "-q", "proxies", "values", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert flag in err and err.count("\n") == 0, err
    rep = tmp_path / "verify.json"
    assert main(["--data", str(data_copy.path.parent), "-q", "proxies", "values", "--verify", "--ids", "3",
                 "--proxies", "l2_norm,nsc", "--out", str(rep)]) == 0
    assert all(r["ok"] for r in json.loads(rep.read_text()))
    capsys.readouterr()
    assert main(["--data", str(data_copy.path.parent), "-q", "proxies", "values", "--verify", "--ids", "every:0"]) == 2
    assert "every:K" in capsys.readouterr().err


def test_build_proxy_values_refuses_bad_flags_before_any_work(tmp_path, capsys):
    from nasbench_bert.cli import main

    for argv, flag in ((["--benchmarks", "cifar"], "--benchmarks"), (["--semantics", "x"], "--semantics"),
                       (["--out", str(tmp_path / "t.csv")], "--out")):
        capsys.readouterr()
        assert main(["-q", "build-proxy-values", *argv]) == 2
        err = capsys.readouterr().err
        assert flag in err and err.strip().count("\n") == 0, err


def test_naszero_export_takes_its_live_values_from_the_table(built, data_copy, tmp_path):
    """`proxies export --format naszero` writes the table's values (every semantics it holds)
    as <proxy>@<semantics>:live, with the table's recorded cost per arch as the time."""
    from nasbench_bert.cli import main
    from nasbench_bert.integrations.naszero import arch_key, read_naszero

    res, recipe = built
    pv.add_to_data(data_copy, res.to_arrow(), res.provenance)
    b = _bench_on(DataDir.open(data_copy.path))
    assert main(["--data", str(data_copy.path.parent), "-q", "proxies", "export", "--format", "naszero", "--out",
                 str(tmp_path / "zc")]) == 0
    flex = read_naszero(tmp_path / "zc" / "zc_flexibert.json")
    row = flex[(flex.task == "glue") & (flex.arch == arch_key(b.archs[3]))].iloc[0]
    table = b.proxy_values("authors")
    assert row["zico@authors:live"] == table.loc[3, "zico"]
    assert row["nsc@as_trained:live"] == b.proxy_values("as_trained").loc[3, "nsc"]
    assert row["zico@authors:live__time"] == table.attrs["proxies"]["zico"]["seconds_per_row"]["authors"]
    assert "depth@as_trained:live" not in flex.columns  # the trivial spec rules are not proxies of the file
    nlp = read_naszero(tmp_path / "zc" / "zc_nasbench_nlp.json")
    got = nlp["l2_norm@as_trained:live"].dropna().unique()
    assert list(got) == [b.nlp.proxy_values("as_trained").loc[recipe, "l2_norm"]]


def test_every_tolerance_follows_the_measured_thread_effect():
    """The rule :data:`values.TOLERANCE` states: at least 100 times the largest relative
    difference two torch threads made in float64 on the sample docs/proxy_values.json
    records, for every proxy that is not noise, on both benchmarks. A proxy whose measured
    thread effect grows (or a tolerance someone lowers) fails here, before a user's
    ``--verify`` would fail on another machine; and no tolerance is looser than the rule
    plus one power of ten (so a typo like 1e-2 fails too)."""
    import math

    rows = json.loads((ROOT / "docs" / "proxy_values.json").read_text())["measure"]["rows"]
    assert {r["benchmark"] for r in rows} == {"flexibert", "nlp"}
    worst: dict[tuple[str, str], float] = {}
    for r in rows:
        if not r["noise"]:
            key = (r["benchmark"], r["proxy"])
            worst[key] = max(worst.get(key, 0.0), float(r["threads2_max_rel_diff"]))
    for (b, p), d in worst.items():
        tol = values.tolerance(b, p)
        assert tol >= 100 * d, (b, p, d, tol)
        rule = max(values.DEFAULT_TOLERANCE, 10 ** math.ceil(math.log10(100 * d))) if d > 0 else values.DEFAULT_TOLERANCE
        assert tol <= 10 * rule, (b, p, d, tol, rule)
