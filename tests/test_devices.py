"""The device plumbing of the proxy and hardware harness, on any machine (issue 36): the
``device=`` check and every refusal (before any work), CPU values unchanged by it, the
cache keeping another device's values apart (a stand-in device label: no GPU needed),
the host-drawn dropout masks and host sums that make a GPU value the CPU's up to
rounding, and the proxies' audit for tensors made on the CPU implicitly. The agreement
on a real GPU is tests/test_device_agreement.py (marker ``cuda``)."""

from __future__ import annotations

import ast
import json
import math

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT  # noqa: E402
from nasbench_bert import cli, devices, proxies  # noqa: E402
from nasbench_bert.errors import InvalidArgumentError  # noqa: E402
from nasbench_bert.proxies import sweep as proxy_sweep  # noqa: E402
from nasbench_bert.proxies.common import group_sums, host_values, module_sums  # noqa: E402
from nasbench_bert.proxies.placement import HostRngDropout, batch_on, host_normal_, place  # noqa: E402
from nasbench_bert.slurm import SlurmResources  # noqa: E402
from nasbench_bert.sweep import PartCache  # noqa: E402

pytestmark = pytest.mark.torch

SMALL = {"batch_size": 2, "seq_len": 16}


@pytest.fixture
def no_cuda(monkeypatch):
    """This machine as one without CUDA, whatever it has."""
    monkeypatch.setattr(devices, "cuda_count", lambda: 0)


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setattr(devices, "cuda_count", lambda: 2)


# -- the check --------------------------------------------------------------------------------
@pytest.mark.parametrize("given, want", [("cpu", "cpu"), ("CPU", "cpu"), (" cuda ", "cuda:0"), ("cuda:1", "cuda:1"),
                                         ("auto", "cuda:0")])
def test_device_spellings_are_canonical(two_gpus, given, want):
    assert devices.check_device(given) == want
    assert devices.check_device(torch.device(given.strip().lower()) if given.strip().lower() != "auto" else "auto") == want


def test_auto_is_the_cpu_without_cuda(no_cuda):
    assert devices.check_device("auto") == "cpu"
    assert devices.check_device() == "cpu"


@pytest.mark.parametrize("bad", ["tpu", "gpu", "cuda:x", "cpu:0", "cuda:-1", "", "mps", 3, None, 1.5, ["cuda"]])
def test_unknown_devices_are_refused_naming_the_allowed_values(two_gpus, bad):
    with pytest.raises(InvalidArgumentError, match=r"^device = .* is not allowed; allowed values: 'auto', 'cpu', 'cuda' or "
                                                   r"'cuda:<index>'$"):
        devices.check_device(bad)


def test_cuda_without_cuda_is_refused(no_cuda):
    for d in ("cuda", "cuda:0"):
        with pytest.raises(InvalidArgumentError, match=rf"^device = '{d}' is not allowed here: CUDA is not available; "
                                                       "allowed values: 'auto', 'cpu'$"):
            devices.check_device(d)


def test_an_index_beyond_the_device_count_is_refused(two_gpus):
    with pytest.raises(InvalidArgumentError, match=r"'cuda:2' is not allowed here: this machine has 2 CUDA device\(s\); "
                                                   r".*index < 2$"):
        devices.check_device("cuda:2")


def test_slurm_checks_the_gpus_the_job_asks_for(no_cuda):
    none, one = SlurmResources(cluster="local"), SlurmResources(cluster="local", gpus_per_node=1)
    for d in ("cuda", "cuda:0"):
        with pytest.raises(InvalidArgumentError, match=r"the SLURM array tasks ask for 0 GPU\(s\) \(gpus_per_node, "
                                                       r"--slurm-gpus\); allowed values: 'auto', 'cpu'"):
            devices.check_device(d, executor="slurm", slurm=none)
    assert devices.check_device("cuda", executor="slurm", slurm=one) == "cuda:0"  # the login node has no GPU to ask
    with pytest.raises(InvalidArgumentError, match=r"'cuda:1' .*ask for 1 GPU\(s\).*index < 1"):
        devices.check_device("cuda:1", executor="slurm", slurm=one)
    assert devices.check_device("auto", executor="slurm", slurm=one) == "cuda:0"
    assert devices.check_device("auto", executor="slurm", slurm=none) == "cpu"


def test_ray_sweeps_run_on_cpus(two_gpus):
    with pytest.raises(InvalidArgumentError, match="device = 'cuda' is not allowed with executor 'ray'.*allowed there: "
                                                   "'cpu' or 'auto'"):
        devices.check_device("cuda", executor="ray")
    assert devices.check_device("auto", executor="ray") == "cpu"


def _no_work(monkeypatch):
    """Make loading a benchmark fail the test: a refusal must come before it."""
    def boom(*a, **k):
        raise AssertionError("work started before the device was checked")

    from nasbench_bert import evaluation, hardware

    for mod in (proxy_sweep, evaluation, hardware):
        monkeypatch.setattr(mod, "ensure_benchmark", boom)


@pytest.mark.parametrize("device", ["tpu", "cuda", "cuda:3"])
def test_entry_points_refuse_before_any_work(no_cuda, monkeypatch, tmp_path, device):
    from nasbench_bert import hardware

    _no_work(monkeypatch)
    cache = tmp_path / "cache"
    calls = [lambda: proxies.compute([0, 1], "paper", cache=cache, device=device),
             lambda: proxies.evaluate("synaptic_diversity", ids=[0, 1], cache=cache, progress=False, device=device),
             lambda: hardware.measure_many([0, 1], cache=cache, device=device)]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match=f"device = {device!r} is not allowed"):
            call()
    assert not cache.exists()


def test_slurm_sweep_without_a_gpu_request_is_refused(no_cuda, monkeypatch, tmp_path):
    pytest.importorskip("submitit")
    _no_work(monkeypatch)
    with pytest.raises(InvalidArgumentError, match=r"device = 'cuda' is not allowed here: the SLURM array tasks ask for 0"):
        proxies.compute([0], "paper", executor="slurm", slurm=SlurmResources(cluster="local", folder=tmp_path / "s"),
                        device="cuda")


@pytest.mark.parametrize("argv", [["proxies", "compute", "--ids", "0"], ["proxies", "evaluate", "synaptic_diversity"],
                                  ["hardware", "--ids", "0"]])
@pytest.mark.parametrize("device, says", [("tpu", "allowed values: 'auto', 'cpu', 'cuda' or 'cuda:<index>'"),
                                          ("cuda", "CUDA is not available; allowed values: 'auto', 'cpu'")])
def test_cli_refuses_a_bad_device_in_one_line(no_cuda, monkeypatch, tmp_path, capsys, argv, device, says):
    def boom(*a, **k):
        raise AssertionError("the benchmark was loaded before --device was checked")

    monkeypatch.setattr(cli.common, "load_bench", boom)
    out = ["--out", str(tmp_path / "x.parquet")] if argv[0] == "hardware" or argv[1] == "compute" else []
    assert cli.main(["-q", *argv, "--device", device, *out]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--device = {device!r} is not allowed" in err and says in err, err


# -- CPU values are the values they were ------------------------------------------------------
def _same(a: pd.DataFrame, b: pd.DataFrame, columns) -> list[str]:
    """Columns whose values differ in any bit (NaN equals NaN)."""
    bad = []
    for c in columns:
        for x, y in zip(a[c], b[c]):
            if x is None or y is None:
                ok = x is None and y is None
            elif isinstance(x, (list, tuple, np.ndarray)) or isinstance(y, (list, tuple, np.ndarray)):
                x, y = np.asarray(x, float), np.asarray(y, float)
                ok = x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))
            elif isinstance(x, float) or isinstance(y, float):
                ok = np.float64(x).view(np.int64) == np.float64(y).view(np.int64)  # NaN equals NaN, -0.0 not 0.0
            else:
                ok = type(x) is type(y) and x == y
            if not ok:
                bad.append(f"{c}: {x!r} != {y!r}")
    return bad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("semantics", ["as_trained", "as_specified", "authors"])
def test_device_cpu_is_the_run_without_a_device_bit_for_bit(bench, semantics, dtype):
    """Fresh runs (no cache), every registered proxy of both spaces, per-layer values too."""
    ptb = bench.nlp.ptb
    nlp = [(r.log_name, r.recipe) for r in ptb[ptb.recipe.notna()].head(1).itertuples()]
    # a small arch per dtype, every mixing kind but DCT between the two (DSC + SDP, DFT + WMA)
    arch = [6] if dtype == "float32" else [20]
    for space, items, batch in (("flexibert", arch, SMALL), ("nlp", nlp, {"batch_size": 3, "seq_len": 6})):
        kw = dict(semantics=semantics, dtype=dtype, bench=bench, batch=batch, space=space)
        plain, on_cpu = proxies.compute(items, "all", **kw), proxies.compute(items, "all", **kw, device="cpu")
        assert plain.error.isna().all() and on_cpu.error.isna().all()
        assert not plain.cached.any() and not on_cpu.cached.any()
        names = [p.name for p in proxies.get(space, "all")]
        assert set(names) <= set(plain.columns)
        cols = [c for c in plain.columns if c.split("__")[0] in names and not c.endswith("__seconds")]
        assert _same(plain, on_cpu, cols) == []
        assert set(on_cpu.device) == {"cpu"} and set(plain.device) == {"cpu"}


def test_device_is_a_column_that_scoring_never_takes_for_a_proxy(bench):
    df = proxies.compute([0, 1, 2], ["synaptic_diversity", "num_params"], bench=bench, batch=SMALL)
    assert list(df.device) == ["cpu"] * 3 and "threads" not in df.columns
    scored = proxies.score(df, "glue", bootstrap=0, control=None, bench=bench)
    assert set(scored.proxy) == {"synaptic_diversity", "num_params"}


# -- the cache keeps devices apart ----------------------------------------------------------------
def _task(bench, device: str) -> proxy_sweep.ProxyTask:
    plist, _ = proxy_sweep.resolve_proxies("flexibert", ["num_params", "synaptic_diversity"])
    st = proxy_sweep._settings("flexibert", "as_trained", 0, SMALL, None)
    items = proxy_sweep.proxy_space("flexibert").items([0], bench)
    return proxy_sweep._tasks("flexibert", items, plist, st, "float32", False, device)[0]


def test_cache_never_serves_another_devices_values(bench, tmp_path):
    """A part written by a (stand-in) GPU run is not served to a CPU run, nor a CPU part to
    a GPU run; each device has a part of its own, and a part carrying another device under
    this task's name is refused too."""
    cpu, gpu = _task(bench, "cpu"), _task(bench, "cuda:0")
    assert cpu.identity()[:-1] == gpu.identity()[:-1] and cpu.identity()[-1] != gpu.identity()[-1]
    parts = PartCache.open(tmp_path, "parquet", "arch")
    assert parts.path(cpu.identity()) != parts.path(gpu.identity())
    fake = {**proxy_sweep._finish(gpu, {"num_params": -1.0, "synaptic_diversity": -2.0, "error": None}),
            "num_params__layers": None, "synaptic_diversity__layers": None}
    parts.write(gpu, fake)
    assert parts.read(gpu) is not None and parts.read(cpu) is None
    df = proxies.compute([0], ["num_params", "synaptic_diversity"], bench=bench, batch=SMALL, cache=tmp_path)
    assert not df.cached.iloc[0] and df.num_params.iloc[0] > 0 and df.device.iloc[0] == "cpu"
    again = proxies.compute([0], ["num_params", "synaptic_diversity"], bench=bench, batch=SMALL, cache=tmp_path)
    assert again.cached.iloc[0] and again.num_params.iloc[0] == df.num_params.iloc[0]
    assert parts.read(gpu)["num_params"] == -1.0  # the GPU's part is still its own
    assert parts.read(cpu)["device"] == "cpu"
    planted = parts.path(cpu.identity())  # a GPU row copied under the CPU part's name: refused
    parts.write(gpu, fake)
    planted.write_bytes(parts.path(gpu.identity()).read_bytes())
    assert parts.read(cpu) is None


def test_a_cuda_sweep_with_workers_spawns_them(two_gpus, monkeypatch, bench):
    """jobs > 1 on a GPU: worker processes that share the device, started by spawn (CUDA does
    not survive a fork); the tasks carry the canonical device."""
    seen = {}

    def fake(work, tasks, cache, finish, how):
        seen.update(how=how, tasks=tasks)
        return [(finish(t, {"num_params": 1.0, "error": None}), False) for t in tasks]

    monkeypatch.setattr(proxy_sweep, "run_sweep", fake)
    df = proxies.compute([0, 1], ["num_params"], bench=bench, batch=SMALL, jobs=2, device="cuda")
    assert seen["how"].start_method == "spawn" and seen["how"].jobs == 2
    assert {t.device for t in seen["tasks"]} == {"cuda:0"} and list(df.device) == ["cuda:0", "cuda:0"]
    proxies.compute([0, 1], ["num_params"], bench=bench, batch=SMALL, jobs=2)
    assert seen["how"].start_method is None  # the CPU: the platform's default, as before


def test_hardware_keeps_the_cpu_parts_key_and_keys_a_gpu_by_device_and_name(two_gpus, monkeypatch, bench):
    from nasbench_bert import hardware, hardware_gpu

    st = hardware.MeasureSettings()
    cpu = hardware.HardwareTask("as_trained", "k", "a", st)
    assert cpu.identity() == ["as_trained", "k", st.key]  # the key every CPU part was written under
    assert cpu.expect() == {"semantics": "as_trained", "model_key": "k", "settings": st.key}
    gpu = hardware.HardwareTask("as_trained", "k", "a", hardware.GPU_SETTINGS, "cuda:1", "NVIDIA H100 80GB HBM3")
    assert gpu.identity()[-2:] == ["cuda:1", "NVIDIA H100 80GB HBM3"]
    assert gpu.expect()["device"] == "cuda:1" and gpu.expect()["gpu"] == "NVIDIA H100 80GB HBM3"
    seen = {}

    def fake(work, tasks, cache, finish, how):
        seen.update(how=how, tasks=tasks)
        return [({"semantics": t.semantics, "model_key": t.key, "device": t.device, "gpu": t.gpu, "error": None}, False)
                for t in tasks]

    monkeypatch.setattr(hardware, "run_sweep", fake)
    monkeypatch.setattr(hardware_gpu, "gpu_name", lambda device: f"fake GPU {device}")
    df = hardware.measure_many([0, 1], "as_trained", bench=bench, device="cuda", jobs=2)
    assert {(t.device, t.gpu, t.settings) for t in seen["tasks"]} == {("cuda:0", "fake GPU cuda:0", hardware.GPU_SETTINGS)}
    assert seen["how"].start_method == "spawn" and set(df.device) == {"cuda:0"}


def test_spawned_workers_compute_the_same_values(bench):
    from nasbench_bert.executors import run_tasks

    out: dict[int, float] = {}
    run_tasks(math.sqrt, [4.0, 9.0, 2.0], out.__setitem__, jobs=2, start_method="spawn")
    assert out == {0: 2.0, 1: 3.0, 2: math.sqrt(2.0)}
    with pytest.raises(InvalidArgumentError, match="start_method = 'thread' is not allowed"):
        run_tasks(math.sqrt, [4.0], out.__setitem__, start_method="thread")


# -- what makes a GPU value the CPU's: host-drawn masks, host sums --------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_host_dropout_draws_the_cpu_kernels_masks(dtype):
    x = torch.randn(3, 5, 16, 8, dtype=dtype, requires_grad=True)
    for inp in (x, x.transpose(1, 3)):  # a non-contiguous input too
        ref, host = torch.nn.Dropout(0.1).train(), HostRngDropout(0.1).train()
        torch.manual_seed(7)
        a = ref(inp)
        sa = torch.get_rng_state()
        torch.manual_seed(7)
        b = host(inp)
        assert torch.equal(a, b) and torch.equal(sa, torch.get_rng_state())
        ga, gb = (torch.autograd.grad((y * 1.3).sum(), x)[0] for y in (a, b))
        assert torch.equal(ga, gb)
    assert HostRngDropout(0.1).eval()(x) is x and HostRngDropout(0.0).train()(x) is x


def test_place_moves_weights_and_swaps_dropout_only_off_the_cpu():
    from nasbench_bert.models import build_flexibert

    model = build_flexibert("128/SA-SDP-h2-512x1/LT-DFT-h2-512x1", "authors", seed=0)
    assert place(model, "cpu") is model and not any(isinstance(m, HostRngDropout) for m in model.modules())
    drops = sum(type(m) is torch.nn.Dropout for m in model.modules())
    moved = place(model, "meta")  # a device that is not the CPU, on any machine
    assert sum(type(m) is HostRngDropout for m in moved.modules()) == drops > 0
    assert all(p.device.type == "meta" for p in moved.parameters())
    batch = proxies.make_batch(proxies.BatchSpec(**SMALL))
    assert batch_on(batch, "cpu") is batch
    on = batch_on(batch, "meta")
    assert on.input_ids.device.type == "meta" and on.attention_mask.device.type == "meta" and on.spec == batch.spec


@pytest.mark.parametrize("semantics", ["authors", "as_trained"])
def test_the_captures_run_where_the_batch_is(bench, semantics):
    """Every capture on a device that is not the CPU ("meta": shapes without values, on any
    machine): model, hooks, dropout, backward, SynFlow's own model and the NAS-Bench-NLP
    passes stay on it; a CPU tensor made inside a capture would be refused there."""
    from nasbench_bert import parse_recipe
    from nasbench_bert.proxies import engine
    from nasbench_bert.spaces.flexibert import Arch

    b = batch_on(proxies.make_batch(proxies.BatchSpec(**SMALL)), "meta")
    needs = {"forward", "backward", "ff_activations", "head_outputs", "attention_probs", "hidden_states", "synflow"}
    cap = engine.capture_flexibert(Arch.coerce("128/SA-WMA-h2-512x1/DSC-9-h2-1024x3"), needs, b, semantics, 0,
                                   torch.float64)
    tensors = [cap.output, *(t for _, t in cap.ff_activations + cap.head_outputs + cap.attention_probs),
               *cap.hidden_states, *cap.synflow_grads.values(), *(p.grad for p in cap.model.parameters() if p.grad is not None)]
    assert len(tensors) > 20 and {t.device.type for t in tensors} == {"meta"}
    ptb = bench.nlp.ptb
    recipe = parse_recipe(ptb[ptb.recipe.notna()].recipe.iloc[0])
    nb = batch_on(proxies.make_batch(proxies.BatchSpec(space="nlp", batch_size=3, seq_len=6, vocab_size=10000)), "meta")
    nlp_needs = {"forward", "input_grad", "loss_backward", "hidden_states", "ff_activations"}
    if semantics != "authors":  # the notebook draws its noise with numpy from the embeddings' values
        nlp_needs.add("noise_jacobians")
    cap = engine.capture_nlp(recipe, nlp_needs, nb, semantics, 0, torch.float64)
    got = [cap.input_grad, cap.rnn_activation_codes, *cap.hidden_states, *cap.noise_grads.values(), *cap.hidden_grads]
    assert {t.device.type for t in got} == {"meta"}


def test_host_normal_is_nn_init_normal():
    a, b = torch.empty(7, 33, dtype=torch.float64), torch.empty(7, 33, dtype=torch.float64)
    torch.manual_seed(3)
    torch.nn.init.normal_(a)
    torch.manual_seed(3)
    host_normal_(b)
    assert torch.equal(a, b)


def test_host_sums_are_the_per_tensor_float_loop_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    ts = [torch.randn(n, 17, generator=g, dtype=torch.float32) * 10 ** k for n, k in ((3, 0), (40, 5), (1, -7), (9, 2))]
    ts.append(torch.tensor([float("nan"), 1.0]))
    loop = float(sum(float(t.double().sum()) for t in ts[:4]))
    assert group_sums([ts[:4]])[0] == loop
    assert group_sums([ts[:2], [], ts[2:4]]) == [float(sum(float(t.double().sum()) for t in ts[:2])), 0.0,
                                                 float(sum(float(t.double().sum()) for t in ts[2:4]))]
    assert group_sums([ts[4:]], nan=True) == [float(ts[4].double().nansum())]
    assert host_values([ts[0].sum(), 2.5, 3, ts[1].double().norm()]) == [float(ts[0].sum()), 2.5, 3.0,
                                                                        float(ts[1].double().norm())]
    mods = [torch.nn.Linear(4, 3) for _ in range(4)]
    norm = lambda m: m.weight.detach().double().norm()  # noqa: E731
    total, per = module_sums(norm, mods, [mods[:1], mods[1:]])
    assert total == float(sum(float(norm(m)) for m in mods))
    assert per == [float(norm(mods[0])), float(sum(float(norm(m)) for m in mods[1:]))]


# -- the audit: no tensor made on the CPU by accident -----------------------------------------------
#: tensor factories that put their result on the CPU unless told otherwise
_FACTORIES = {"zeros", "ones", "empty", "full", "arange", "eye", "tensor", "randn", "rand", "randint", "randperm", "linspace"}
#: in-place draws from the generator of the tensor's own device (a GPU's would differ from the CPU's)
_DEVICE_DRAWS = {"normal_", "uniform_", "bernoulli_", "random_", "exponential_"}


def _audit(path) -> list[str]:
    tree = ast.parse(path.read_text())
    parent = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        f, up = node.func, parent.get(id(node))
        to = parent.get(id(up)) if isinstance(up, ast.Attribute) and up.attr == "to" else None
        moved = isinstance(to, ast.Call) and (any(k.arg == "device" for k in to.keywords) or  # .randn(...).to(device)
                                              any("device" in ast.unparse(x) for x in to.args))
        if (isinstance(f.value, ast.Name) and f.value.id == "torch" and f.attr in _FACTORIES and not moved
                and "device" not in {k.arg for k in node.keywords}):
            found.append(f"{path.name}:{node.lineno} torch.{f.attr} without device=")
        if f.attr == "numpy" and not (isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Attribute)
                                      and f.value.func.attr == "cpu"):
            found.append(f"{path.name}:{node.lineno} .numpy() without .cpu()")
        if f.attr in _DEVICE_DRAWS and path.name != "placement.py":
            found.append(f"{path.name}:{node.lineno} .{f.attr}() draws on the tensor's device")
    return found


def test_proxies_make_no_tensor_on_the_cpu_implicitly():
    """Every proxy module but the batch maker (batches are made on the CPU by design, then
    moved) creates tensors where its inputs are, reads them back with .cpu() and draws
    random numbers on the CPU (:mod:`nasbench_bert.proxies.placement`)."""
    files = sorted(p for p in (ROOT / "nasbench_bert" / "proxies").glob("*.py") if p.name != "inputs.py")
    assert len(files) > 15
    assert [x for p in files for x in _audit(p)] == []


def test_no_proxy_syncs_per_module_with_float():
    """``float(<tensor expression>)`` inside a loop or comprehension waits for a GPU at every
    module; the proxies reduce on the device and copy once (:mod:`.common`)."""
    loops = (ast.For, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp)
    found = []
    for path in sorted((ROOT / "nasbench_bert" / "proxies").glob("*.py")):
        if "\nfrom .._torch import torch\n" not in path.read_text():  # tables and sweeps (pandas), not tensors
            continue
        tree = ast.parse(path.read_text())
        for loop in (n for n in ast.walk(tree) if isinstance(n, loops)):
            for node in ast.walk(loop):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float"
                        and node.args and isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Attribute)
                        and node.args[0].func.attr in {"sum", "norm", "mean", "nansum", "item"}):
                    found.append(f"{path.name}:{node.lineno}")
    assert sorted(set(found)) == []


def test_report_values_and_provenance_record_the_device(bench, tmp_path):
    ev = proxies.evaluate("synaptic_diversity", benchmarks="flexibert", ids=[0, 1, 2, 3], bench=bench, progress=False,
                          batch=SMALL, bootstrap=0, tasks=False, report=tmp_path / "r", device="cpu")
    got = pd.read_parquet(tmp_path / "r" / "values.parquet")
    cand = got[got.proxy == ev.proxy]
    assert set(cand.device) == {"cpu"}
    assert got[got.proxy == "depth_width_then_size"].device.isna().all()  # analytic: no model, no device
    assert json.loads(json.dumps(list(cand.device))) == ["cpu"] * 4
