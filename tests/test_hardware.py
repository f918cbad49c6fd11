"""Hardware objectives (issue 14, item 4): the measurement, the sweep, and the packaged
table joined into query results.

No test asserts a time: latency is only checked for being a positive number that the
table and the result agree on. Everything deterministic (parameters, FLOPs, peak memory)
is checked exactly against an independent computation.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from nasbench_bert import Arch, InvalidArgumentError, NotEvaluatedError  # noqa: E402
from nasbench_bert import hardware as hw  # noqa: E402
from nasbench_bert.errors import DataIntegrityError  # noqa: E402
from nasbench_bert.models.flops import flexibert_flops  # noqa: E402
from nasbench_bert.semantics import get_semantics  # noqa: E402
from nasbench_bert.sizes import flexibert_num_params  # noqa: E402

TINY = hw.MeasureSettings(batches=(1, 2), repeats=(2, 1), warmup=(1, 0))
SMALL_ARCH = "128/SA-SDP-h2-512x1/LT-DFT-h2-512x1"


def test_peak_forward_bytes_equals_a_hand_count():
    """Linear 256->1024, GELU, Linear 1024->256 on (32, 128, 256) float32: the first
    Linear's output (16 MiB) is still alive while GELU writes its own (16 MiB); after
    that only 16 + 4 MiB. The peak is 32 MiB, exactly."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).eval()
    x = torch.randn(32, 128, 256)
    with torch.inference_mode():
        assert hw.peak_forward_bytes(net, x) == 32 * 2**20
        # and without the GELU: 16 MiB then 4 MiB, both alive at the end
        assert hw.peak_forward_bytes(torch.nn.Sequential(net[0], net[2]), x) == 20 * 2**20


@pytest.mark.parametrize("semantics", ["authors", "as_trained", "as_specified"])
def test_measure_agrees_with_independent_counts(semantics):
    row = hw.measure(SMALL_ARCH, semantics, TINY)
    sem = get_semantics(semantics)
    assert row["semantics"] == sem.name
    assert row["num_params"] == flexibert_num_params(SMALL_ARCH, sem)
    assert row["threads"] == TINY.threads == 1
    assert row["latency_b1_ms"] > 0 and row["latency_b2_ms"] > 0 and row["latency_b1_mad_ms"] >= 0
    # weights + activations: at least the weights and the (B, 128, H) float32 output
    weights = row["num_params"] * 4
    hidden = sem.plan(Arch.coerce(SMALL_ARCH)).hidden
    for b in (1, 2):
        act = row[f"activation_peak_b{b}_mib"] * 2**20
        assert act >= b * 128 * hidden * 4
        assert row[f"peak_memory_b{b}_mib"] * 2**20 >= weights + act - 1  # + buffers
    assert row["activation_peak_b2_mib"] > row["activation_peak_b1_mib"]
    assert row["flops_per_seq"] == flexibert_flops(SMALL_ARCH, 1, 128, sem)  # torch's counter = the analytic count


def test_measure_is_deterministic_except_for_time():
    a, b = hw.measure(SMALL_ARCH, "as_trained", TINY), hw.measure(SMALL_ARCH, "as_trained", TINY)
    for k in ("flops_per_seq", "num_params", "peak_memory_b1_mib", "peak_memory_b2_mib", "activation_peak_b2_mib",
              "model_key"):
        assert a[k] == b[k], k


def test_bad_settings_and_arguments_are_named():
    with pytest.raises(InvalidArgumentError, match="seq"):
        hw.MeasureSettings(seq=0)
    with pytest.raises(InvalidArgumentError, match="repeats"):
        hw.MeasureSettings(batches=(1, 32), repeats=(3,), warmup=(1, 1))
    with pytest.raises(InvalidArgumentError, match="batches"):
        hw.MeasureSettings(batches=(4, 4), repeats=(1, 1), warmup=(0, 0))
    with pytest.raises(InvalidArgumentError, match="executor"):
        hw.measure_many([SMALL_ARCH], executor="gpu")
    with pytest.raises(InvalidArgumentError, match="archs"):
        hw.measure_many(SMALL_ARCH)
    with pytest.raises(InvalidArgumentError, match="semantics"):
        hw.measure_many([SMALL_ARCH], semantics=[])
    with pytest.raises(InvalidArgumentError, match="settings"):
        hw.measure_many([SMALL_ARCH], settings={"seq": 128})


@settings(max_examples=60, deadline=None)
@given(seq=st.integers(-5, 600), threads=st.integers(-2, 5), reps=st.lists(st.integers(-1, 3), min_size=0, max_size=3),
       batches=st.lists(st.integers(-1, 64), min_size=0, max_size=3))
def test_settings_fuzz(seq, threads, reps, batches):
    """Any settings either construct, or raise InvalidArgumentError naming the field."""
    try:
        s = hw.MeasureSettings(seq=seq, threads=threads, batches=tuple(batches), repeats=tuple(reps),
                               warmup=tuple(0 for _ in reps))
    except InvalidArgumentError as e:
        assert any(f in str(e) for f in ("seq", "threads", "batches", "repeats", "warmup"))
    else:
        assert hw.settings_from_row({"settings": s.key}) == s


def test_sweep_dedupes_models_and_resumes(bench, tmp_path, monkeypatch):
    """Archs the trained model cannot tell apart (the operations differ; every layer was
    trained as attention) are measured once; a second sweep reads everything from the
    cache; a damaged part is measured again."""
    keys = {}
    for i in range(len(bench)):
        keys.setdefault(hw.model_key(get_semantics("as_trained").plan(bench.query(i, charge=False).arch)), []).append(i)
    ids = next(v[:2] for v in keys.values() if len(v) > 1 and bench.query(v[0]).arch != bench.query(v[1]).arch)
    assert len(ids) == 2 and bench.query(ids[0]).arch != bench.query(ids[1]).arch
    cache = tmp_path / "cache"
    measured: list[str] = []
    real = hw.measure
    monkeypatch.setattr(hw, "measure", lambda a, *args, **kw: measured.append(str(a)) or real(a, *args, **kw))
    first = hw.measure_many(ids, "as_trained", settings=TINY, bench=bench, cache=cache)
    assert list(first["shared"]) == [False, True] and first["model_key"].nunique() == 1
    assert measured == [str(bench.query(ids[0]).arch)]  # measured on the row not marked shared
    assert len(list(cache.iterdir())) == 1
    again = hw.measure_many(ids, "as_trained", settings=TINY, bench=bench, cache=cache)
    assert again["cached"].all() and list(again["latency_b1_ms"]) == list(first["latency_b1_ms"])
    part = next(cache.iterdir())
    part.write_text("{not json")
    third = hw.measure_many(ids, "as_trained", settings=TINY, bench=bench, cache=cache)
    assert not third["cached"].any() and json.loads(part.read_text())["model_key"] == first["model_key"][0]
    other = hw.measure_many(ids[:1], "as_trained", settings=hw.MeasureSettings(batches=(1,), repeats=(1,), warmup=(0,)),
                            bench=bench, cache=cache)
    assert not other["cached"].any()  # other settings: another cache key


# -- the packaged table ---------------------------------------------------------------------
def test_every_arch_has_hardware_under_every_measured_semantics(hardware_bench):
    """Each measured semantics covers all 500 ids, once each; the trained model's always."""
    bench = hardware_bench
    t = bench.hardware()
    sems = set(t["semantics"])
    assert "as_trained" in sems and sems <= set(hw.ALL_SEMANTICS)
    assert len(t) == 500 * len(sems) and not t.duplicated(["id", "semantics"]).any()
    assert t.groupby("id").size().eq(len(sems)).all() and sorted(t["id"].unique()) == list(range(500))
    assert (t["threads"] == 1).all()
    for col in ("latency_b1_ms", "latency_b32_ms", "peak_memory_b1_mib", "peak_memory_b32_mib"):
        assert (t[col] > 0).all(), col
    assert (t["latency_b32_ms"] > t["latency_b1_ms"]).all()
    assert (t["peak_memory_b32_mib"] > t["peak_memory_b1_mib"]).all()
    m = bench.hardware_machine
    assert m["machine"]["device"] == "cpu" and m["settings"]["seq"] == 128 and m["settings"]["batches"] == [1, 32]
    assert {r["semantics"] for r in m["noise"]["summary"]} == sems


def test_a_build_without_a_measurement_has_no_hardware_and_says_how(tmp_path):
    from nasbench_bert import Benchmark, DataNotFoundError
    from nasbench_bert.data.release import build_tables
    from conftest import UPSTREAM

    with pytest.raises(DataNotFoundError, match="holds no hardware measurement"):  # asked for by name: never skipped
        build_tables(UPSTREAM, tmp_path / "d", progress=False, hardware=tmp_path / "none")
    assert not (tmp_path / "d").exists()
    build_tables(UPSTREAM, tmp_path / "d", progress=False, hardware=False)
    b = Benchmark.load(str(tmp_path / "d"))
    assert not b.data.has_table("flexibert_hardware") and b.hardware_machine == {}
    assert b.query(0).hardware == {}
    with pytest.raises(DataNotFoundError, match="builders.hardware"):
        b.hardware()
    with pytest.raises(NotEvaluatedError, match="builders.hardware"):
        b.query(0).hw()


def test_measured_counts_equal_the_analytic_ones_for_all_500(hardware_bench):
    """The measured models are the semantics' models: the parameter count of every row
    equals the analytic count, and the counted FLOPs equal the analytic matrix-product
    count, for every row (1,500 with all three semantics measured)."""
    bench = hardware_bench
    t = bench.hardware()
    for r in t.itertuples():
        res = bench.query(int(r.id), charge=False)
        assert r.num_params == res.params(r.semantics), (r.id, r.semantics)
        assert r.arch == str(res.arch)
        assert r.flops_per_seq == flexibert_flops(res.arch, 1, 128, r.semantics), (r.id, r.semantics)


def test_query_results_carry_the_table_row(hardware_bench):
    bench = hardware_bench
    t = bench.hardware().set_index(["id", "semantics"])
    sems = sorted(set(t.index.get_level_values("semantics")))
    for i in (0, 137, 499):
        res = bench.query(i, charge=False)
        assert sorted(res.hardware) == sems
        for sem in sems:
            m, row = res.hw(sem), t.loc[(i, sem)]
            assert m.latency_b1_ms == row["latency_b1_ms"] and m.latency_b32_ms == row["latency_b32_ms"]
            assert m.peak_memory_b32_mib == row["peak_memory_b32_mib"] and m.flops_per_seq == row["flops_per_seq"]
        assert res.hw() == res.hw("as_trained") == res.hardware["as_trained"]
        if "authors" in sems:
            assert res.hw("seed_compat") == res.hardware["authors"]  # old names resolve
        assert res.to_dict()["hardware"]["as_trained"]["latency_b1_ms"] == res.hw().latency_b1_ms
    with pytest.raises(InvalidArgumentError, match="semantics"):
        bench.query(0).hw("fast")


def test_regenerated_entries_say_how_to_measure():
    from nasbench_bert import FlexiBERTResult

    r = FlexiBERTResult(id=None, arch=Arch.coerce(SMALL_ARCH), scores={}, glue=0.0, time_to_train=0.0,
                        num_params_as_specified=1, num_params_authors=1, num_params_as_trained=1, pretrain_steps=0, hparams={})
    with pytest.raises(NotEvaluatedError, match="hardware.measure"):
        r.hw()


@pytest.mark.parametrize("i", [3, 250])
def test_remeasuring_reproduces_the_deterministic_figures(hardware_bench, i):
    """A live measurement of a table row's model gives the same parameters, FLOPs and
    peak memory, exactly (latency is machine-dependent and never compared)."""
    bench = hardware_bench
    res = bench.query(i, charge=False)
    settings_ = hw.settings_from_row(bench.hardware().iloc[0])
    quick = hw.MeasureSettings(seq=settings_.seq, batches=settings_.batches, repeats=(1, 1), warmup=(0, 0))
    live = hw.measure(res.arch, "as_trained", quick)
    m = res.hw("as_trained")
    assert live["model_key"] == m.model_key and live["num_params"] == m.num_params
    assert live["flops_per_seq"] == m.flops_per_seq
    assert live["peak_memory_b1_mib"] == m.peak_memory_b1_mib and live["peak_memory_b32_mib"] == m.peak_memory_b32_mib


def test_a_measurement_cannot_join_another_arch(hardware_bench):
    from nasbench_bert.data.release import flexibert_hardware_table, measured_hardware

    flex = hardware_bench.data.table("flexibert")
    measured = measured_hardware()[0]
    assert flexibert_hardware_table(flex, measured).num_rows == measured.num_rows
    shas = measured.column("arch_sha").to_pylist()
    shas[7] = "0" * 16
    bad = measured.set_column(measured.column_names.index("arch_sha"), "arch_sha", pa.array(shas))
    with pytest.raises(DataIntegrityError, match="does not match the release's arch"):
        flexibert_hardware_table(flex, bad)


@pytest.mark.slow
def test_ray_executor_equals_local(bench, tmp_path):
    """The same sweep on a local Ray instance: the deterministic figures equal the local
    executor's, and each finished model is cached."""
    ray = pytest.importorskip("ray")
    ids = [0, 250]
    local = hw.measure_many(ids, ["as_trained", "authors"], settings=TINY, bench=bench)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = hw.measure_many(ids, ["as_trained", "authors"], settings=TINY, bench=bench, executor="ray",
                                 cache=tmp_path / "c")
    finally:
        ray.shutdown()
    for k in ("model_key", "num_params", "flops_per_seq", "peak_memory_b2_mib", "semantics", "arch"):
        assert list(local[k]) == list(remote[k]), k
    assert remote["error"].isna().all() and len(list((tmp_path / "c").iterdir())) == 4


def test_cli_measures_and_resumes(hardware_bench, data_dir, tmp_path, capsys):
    """`nasbench-bert hardware`: the one-command sweep (here one small arch), resumed from
    its cache on the second call; the values equal the packaged table's deterministic ones."""
    import pandas as pd

    from nasbench_bert import Benchmark, cli

    args = ["--data", str(data_dir), "-q", "hardware", "--ids", "250", "--semantics", "as_trained,authors",
            "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "hw.parquet")]
    cli.main(args)
    assert "0 from cache" in capsys.readouterr().out
    cli.main(args)
    assert "2 from cache" in capsys.readouterr().out
    df = pd.read_parquet(tmp_path / "hw.parquet")
    table = Benchmark.load(str(data_dir)).hardware().set_index(["id", "semantics"])
    for r in df.itertuples():
        if (250, r.semantics) not in table.index:
            continue  # that semantics was not measured into this table
        ref = table.loc[(250, r.semantics)]
        assert (r.flops_per_seq, r.num_params, r.peak_memory_b32_mib) == (
            ref["flops_per_seq"], ref["num_params"], ref["peak_memory_b32_mib"])
    assert cli.main(["--data", str(data_dir), "hardware", "--sample", "3", "--ids", "1",
                     "--out", str(tmp_path / "x.parquet")]) != 0
    assert "--sample" in capsys.readouterr().err and not (tmp_path / "x.parquet").exists()


def test_pareto_front_and_the_docs_page_are_regenerable():
    """The front helper on a hand case, and docs/hardware.md equals what the builder
    renders from the measurement it names (the page is never edited by hand). That
    measurement is build output of the machine that made it: elsewhere (a CI machine
    measures its own) the page comparison is skipped."""
    import json

    from conftest import ROOT, UPSTREAM
    from nasbench_bert.builders.hardware import pareto_front, release_archs, render
    from nasbench_bert.data.release import measured_hardware

    # (glue, latency): 0 dominates 1; 2 is the fastest; 3 the best; 4 is dominated by 3
    assert pareto_front([70, 69, 60, 75, 74], [10, 11, 2, 30, 31]) == {0, 2, 3}
    page = (ROOT / "docs" / "hardware.md").read_text()
    measured = measured_hardware()
    if measured is None or f"sha256 `{measured[2]}`" not in page:
        pytest.skip("the measurement here is not the one docs/hardware.md was rendered from")
    table, meta, sha = measured
    md = render(table, json.loads(json.dumps(meta)), release_archs(str(UPSTREAM)).set_index("id")["glue"], sha)
    assert md == page
