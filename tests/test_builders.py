"""Entry regeneration: metrics, GLUE reading, ELECTRA pretraining (resume), the results
table under concurrency, the end-to-end build on real RTE data, and the Ray executor."""

from __future__ import annotations

import csv
import json
import multiprocessing as mp
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT, UPSTREAM  # noqa: E402
from nasbench_bert.builders.entry import build_entry, build_many, validate_entry  # noqa: E402
from nasbench_bert.sizes import flexibert_num_params  # noqa: E402
from nasbench_bert.builders.glue import TASKS, f1_binary, layerwise_groups, mcc, pearson, read_split, spearman  # noqa: E402
from nasbench_bert.builders.pretrain import PretrainConfig, pretrain, schedule  # noqa: E402
from nasbench_bert.builders.results import ArchClaimed, ResultsTable  # noqa: E402
from nasbench_bert import Benchmark  # noqa: E402

RTE = UPSTREAM / "glue-rte"
ARCH = "128/SA-SDP-h2-512x1/LT-DFT-h2-512x1"
TINY_PRE = {"steps": 200, "batch_size": 8, "seq_len": 32, "warmup_steps": 20, "vocab_size": 3000, "checkpoint_every": 100}
TINY_FT = {"epochs": 1, "max_train_examples": 256, "batch_size": 16, "max_seq_len": 64}


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> str:
    """A small real-English corpus: the RTE training sentences."""
    rows = list(csv.reader(open(RTE / "train.tsv", newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    p = tmp_path_factory.mktemp("corpus") / "rte_sentences.txt"
    p.write_text("\n".join(f"{r[1]} {r[2]}" for r in rows))
    return f"text:{p}"


# -- metrics and data -------------------------------------------------------------------------------
def test_metrics_agree_with_sklearn_and_scipy():
    from scipy.stats import pearsonr, spearmanr
    from sklearn.metrics import f1_score, matthews_corrcoef

    rng = np.random.default_rng(0)
    for _ in range(20):
        g, p = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
        assert mcc(p, g) == pytest.approx(matthews_corrcoef(g, p))
        assert f1_binary(p, g) == pytest.approx(f1_score(g, p))
        x, y = rng.normal(size=50), rng.normal(size=50)
        y[:5] = y[0]  # ties
        assert spearman(x, y) == pytest.approx(spearmanr(x, y)[0])
        assert pearson(x, y) == pytest.approx(pearsonr(x, y)[0])
    assert mcc(np.ones(10), np.r_[np.ones(5), np.zeros(5)]) == matthews_corrcoef(np.r_[np.ones(5), np.zeros(5)], np.ones(10)) == 0


def test_read_real_rte():
    tr, dv = read_split(TASKS["rte"], RTE, "train"), read_split(TASKS["rte"], RTE, "dev")
    assert len(tr) == 1244 and len(dv) == 139
    assert {lab for _, lab in tr} == {"entailment", "not_entailment"} and all(len(t) == 2 for t, _ in tr)
    with pytest.raises(FileNotFoundError, match="cola"):
        read_split(TASKS["cola"], UPSTREAM / "nonexistent", "train")


def test_schedule_and_layerwise_decay():
    # the authors' schedule (model/optimization.py, pinned at all 100,000 steps by
    # tests/reference/test_tf_recipe.py): polynomial decay from step 0 times a linear warm-up,
    # so the rate is 0 at step 0 and lr * (1 - W/T) at the end of warm-up - not lr (the
    # old builders warmed up to lr and decayed from there)
    cfg = PretrainConfig(steps=100, warmup_steps=10)
    f = np.float32
    assert schedule(0, cfg) == 0.0 and schedule(100, cfg) == 0.0
    assert schedule(5, cfg) == f(f(5e-4) * (f(1) - f(5) / f(100)) * (f(5) / f(10)))
    assert schedule(10, cfg) == f(f(5e-4) * (f(1) - f(10) / f(100))) and schedule(10, cfg) == pytest.approx(4.5e-4)
    assert schedule(50, cfg) == pytest.approx(2.5e-4) and schedule(10, cfg) > schedule(11, cfg)
    from nasbench_bert.models import SequenceClassifier, build_flexibert

    m = SequenceClassifier(build_flexibert("256/SA-SDP-h4-512x1/SA-SDP-h4-512x1/SA-SDP-h4-512x1/SA-SDP-h4-512x1"), 2)
    scales = sorted({g["lr_scale"] for g in layerwise_groups(m, 3e-4, 0.8, 0.01)}, reverse=True)
    assert scales == pytest.approx([1.0] + [0.8 ** k for k in range(2, 7)])  # ELECTRA: the top layer at decay^2
    n = sum(p.numel() for g in layerwise_groups(m, 3e-4, 0.8, 0.01) for p in g["params"])
    assert n == sum(p.numel() for p in m.parameters())  # every parameter in exactly one group
    with pytest.raises(ValueError, match="mask_prob"):
        PretrainConfig(mask_prob=1.5)
    with pytest.raises(ValueError, match="stepz"):
        build_entry(ARCH, pretrain_config={"stepz": 3})
    with pytest.raises(ValueError, match="tasks"):
        build_entry(ARCH, tasks=["wnli"])


# -- pretraining --------------------------------------------------------------------------------------
# 200 steps of the authors' recipe (each step split over 8 emulated replicas): about 75 s on an
# idle 2-core machine, so it runs in CI's slow step rather than in the README's test command
@pytest.mark.slow
def test_pretraining_loss_falls(corpus):
    r = pretrain(ARCH, PretrainConfig(**{**TINY_PRE, "corpus": corpus}))
    first, last = np.mean(r.disc_losses[:20]), np.mean(r.disc_losses[-20:])
    assert last < first * 0.9, (first, last)
    assert np.mean(r.gen_losses[-20:]) < np.mean(r.gen_losses[:20])
    assert r.tokens_per_second > 0


def _pretrain_child(corpus: str, workdir: str, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)  # the parent's count: losses are bit-equal only under the same count
    pretrain(ARCH, PretrainConfig(**{**TINY_PRE, "steps": 60, "checkpoint_every": 10, "corpus": corpus}), workdir=workdir)


@pytest.mark.slow  # two 60-step runs and a killed child: about 50 s idle (CI's slow step)
def test_kill_and_resume_gives_the_same_losses(corpus, tmp_path):
    cfg = PretrainConfig(**{**TINY_PRE, "steps": 60, "checkpoint_every": 10, "corpus": corpus})
    ref = pretrain(ARCH, cfg).losses
    wd = tmp_path / "wd"
    code = ("import sys; sys.path.insert(0, 'tests'); from test_builders import _pretrain_child; "
            f"_pretrain_child({corpus!r}, {str(wd)!r}, {torch.get_num_threads()})")  # a child's own count can differ
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    deadline = time.time() + 300
    while time.time() < deadline and not list((wd / "checkpoints").glob("step-0000002*.pt")):
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    cks = sorted((wd / "checkpoints").glob("step-*.pt"))
    assert cks, "no checkpoint before the kill"
    resumed = pretrain(ARCH, cfg, workdir=wd)
    assert 20 <= resumed.resumed_from < 60
    assert resumed.losses == ref  # bit-identical to the uninterrupted run


# -- results table ----------------------------------------------------------------------------------
def _fake_entry(arch: str, value: float) -> dict:
    from nasbench_bert.spaces.flexibert import Arch

    a = Arch.coerce(arch)
    return {"id": None, "completed": True, "time_to_train": 1.0, "scores": {"rte": value, "glue": value},
            "hparams": {"learning_rate": 5e-4, "train_batch_size": 8, "num_train_steps": 1, "model_hparam_overrides": a.to_release()},
            "num_params": 1, "source": "regenerated", "arch": str(a)}


def _writer(path: str, archs: list[str], tag: int) -> None:
    t = ResultsTable(path)
    for a in archs:
        try:
            with t.claim(a):
                if not t.has(a):
                    time.sleep(0.01)
                    t.write(_fake_entry(a, float(tag)))
        except ArchClaimed:
            pass


def test_concurrent_writers_lose_nothing(tmp_path):
    from nasbench_bert import FLEXIBERT_SPACE

    archs = [str(a) for a in FLEXIBERT_SPACE.sample(60, seed=0)]
    ctx = mp.get_context("spawn")
    # four writers, every arch, each starting at a different place: maximal contention
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), archs[15 * i:] + archs[:15 * i], i)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    # anything skipped because a claim was held is finished by a last pass
    _writer(str(tmp_path), archs, 9)
    t = ResultsTable(tmp_path)
    entries = t.entries()
    assert sorted(e["arch"] for e in entries) == sorted(archs)  # nothing lost, nothing duplicated
    assert not list(t.entries_dir.glob(".*"))  # no temp or lock files left
    for e in entries:
        validate_entry(e)


def test_claims_and_stale_locks(tmp_path):
    t = ResultsTable(tmp_path)
    with t.claim(ARCH):
        with pytest.raises(ArchClaimed):
            with t.claim(ARCH):
                pass
    lock = t.entries_dir / f".{t.key(ARCH)}.lock"
    import socket

    lock.write_text(f"{socket.gethostname()}:999999")  # a builder that died
    with t.claim(ARCH):
        pass
    assert not lock.exists()


def test_schema_rejects_bad_entries():
    e = _fake_entry(ARCH, 50.0)
    validate_entry(e)
    for path, value in [(("scores", "glue"), "high"), (("hparams", "model_hparam_overrides", "hidden_size"), 512), (("time_to_train",), -1)]:
        bad = json.loads(json.dumps(e))
        d = bad
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
        with pytest.raises(ValueError, match=path[-1]):
            validate_entry(bad)


# -- end to end -------------------------------------------------------------------------------------
def test_end_to_end_entry_on_real_rte(corpus, tmp_path, data_dir):
    res = tmp_path / "results"
    e = build_entry(ARCH, corpus=corpus, glue=RTE, tasks=["rte"], pretrain_config=TINY_PRE, finetune_config=TINY_FT,
                    results=res, workdir=tmp_path / "wd")
    validate_entry(e)
    assert e["scores"]["glue"] == e["scores"]["rte"] and 0 <= e["scores"]["rte"] <= 100
    assert e["tasks"]["rte"]["dev_examples"] == 139 and e["tasks"]["rte"]["train_examples"] == 256
    assert e["pretraining"]["final_loss"] < e["pretraining"]["first_loss"]
    # the default regenerates the benchmark's model (as trained); 4,319,616 as specified
    assert e["semantics"] == "as_trained" and e["environment"]["torch"] == torch.__version__
    assert e["num_params"] == flexibert_num_params(ARCH, "as_trained") == 4369408
    # the entry records its full recipe: the authors' optimiser and schedule, seeds,
    # versions, and the tiny run's departures from the authors' recipe, each named
    rec = e["recipe"]
    assert rec["optimizer"]["pretrain"]["name"] == rec["optimizer"]["finetune"]["name"] == "adam_weight_decay"
    assert rec["optimizer"]["pretrain"]["bias_correction"] is False and rec["optimizer"]["pretrain"]["eps"] == 1e-6
    assert rec["schedule"]["pretrain"] == {"kind": "polynomial_decay(power=1) * min(1, step / warmup)", "total_steps": 200,
                                           "warmup_steps": 20, "peak_learning_rate": 5e-4}
    assert rec["seeds"] == {"pretrain": 0, "finetune": 0} and rec["versions"]["torch"] == torch.__version__
    assert set(rec["deviations"]) == {f"pretrain.{k}" for k in ("steps", "batch_size", "seq_len", "warmup_steps", "vocab_size",
                                                                  "corpus")} | {f"finetune.{k}" for k in TINY_FT}
    assert rec["finetune"]["learning_rate"] == 5e-4 and rec["finetune"]["decay_layers"] == 12
    # idempotent: a second call returns the stored entry without rebuilding
    t0 = time.perf_counter()
    again = build_entry(ARCH, corpus=corpus, glue=RTE, tasks=["rte"], pretrain_config=TINY_PRE, finetune_config=TINY_FT, results=res)
    assert again == json.loads(json.dumps(e)) and time.perf_counter() - t0 < 1
    # the benchmark loads it alongside the bundled table and says where it came from
    b = Benchmark.load(str(data_dir), results=str(res))
    r = b.query(ARCH)
    assert r.source == "regenerated" and r.glue == e["scores"]["glue"]
    assert b.query(0).source == "bundled"


@pytest.mark.slow
def test_ray_executor_on_a_local_instance(corpus, tmp_path):
    pytest.importorskip("ray")
    import ray

    # one declared GPU: each arch's task is given it (Ray sets CUDA_VISIBLE_DEVICES, which the
    # entry records); without CUDA, torch stays on the CPU
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    try:
        archs = [ARCH, "128/LT-DCT-h2-512x1/SA-WMA-h2-512x1"]
        out = build_many(archs, executor="ray", corpus=corpus, glue=str(RTE), tasks=["rte"],
                         pretrain_config={**TINY_PRE, "steps": 30}, finetune_config={**TINY_FT, "max_train_examples": 64},
                         results=str(tmp_path / "res"))
    finally:
        ray.shutdown()
    assert [e["arch"] for e in out] == archs
    for e in out:
        validate_entry(e)
        assert e["environment"]["cuda_visible_devices"] == "0"
    assert len(ResultsTable(tmp_path / "res").entries()) == 2


def test_hub_dataset_loader_on_local_data(tmp_path):
    """The hf: path runs the real datasets.load_dataset code; a local folder in a
    format datasets recognises stands in for the Hub."""
    pytest.importorskip("datasets")
    from nasbench_bert.text import read_corpus

    d = tmp_path / "owt"
    d.mkdir()
    (d / "train.txt").write_text("first document here\nsecond one\n\nthird\n")
    docs = read_corpus(f"hf:{d}", max_documents=2)
    assert docs == ["first document here", "second one"]
    with pytest.raises(ValueError, match="corpus"):
        read_corpus("ftp:x")


# -- recipes: an entry means what its recipe says ---------------------------------------------------
def test_recipe_defaults_to_the_authors_and_records_deviations():
    """build_entry's default recipe is the authors' (no deviation); an explicit option such
    as bias-corrected AdamW is recorded as a deviation and changes the key; the record
    passes the entry schema, and a malformed one does not."""
    from nasbench_bert.builders.entry import make_recipe

    base = make_recipe()
    assert base.deviations() == {}
    pc, fc = base.pretrain, base.finetune
    assert (pc.optimizer, pc.learning_rate, pc.warmup_steps, pc.steps, pc.batch_size, pc.replicas, pc.adam_eps) == \
        ("adam_weight_decay", 5e-4, 10_000, 100_000, 128, 8, 1e-6)
    assert (fc.optimizer, fc.learning_rate, fc.layer_decay, fc.decay_layers, fc.double_unordered, fc.adam_eps) == \
        ("adam_weight_decay", 5e-4, 0.8, 12, True, 1e-6)
    fast = make_recipe(pretrain_config={"optimizer": "adamw"}, finetune_config={"optimizer": "adamw"})
    assert fast.deviations() == {"pretrain.optimizer": {"value": "adamw", "authors": "adam_weight_decay"},
                                 "finetune.optimizer": {"value": "adamw", "authors": "adam_weight_decay"}}
    assert fast.key != base.key and fast.record()["optimizer"]["pretrain"]["bias_correction"] is True
    spec = make_recipe(semantics="as_specified")  # Table 3's finetuning: listed as departures
    assert spec.deviations() == {"finetune.learning_rate": {"value": 3e-4, "authors": 5e-4},
                                 "finetune.decay_layers": {"value": None, "authors": 12}}
    e = {**_fake_entry(ARCH, 50.0), "recipe": fast.record()}
    validate_entry(e, require_recipe=True)
    with pytest.raises(ValueError, match="recipe"):
        validate_entry(_fake_entry(ARCH, 50.0), require_recipe=True)
    for path, value in [(("optimizer", "pretrain", "name"), "sgd"), (("key",), "xyz"), (("versions",), {})]:
        bad = json.loads(json.dumps(e))
        d = bad["recipe"]
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
        with pytest.raises(ValueError):
            validate_entry(bad)
    del e["recipe"]["deviations"]
    with pytest.raises(ValueError, match="deviations"):
        validate_entry(e)


def test_recipe_key_changes_with_what_is_computed_only():
    from nasbench_bert.builders.entry import EXECUTION_FIELDS, make_recipe

    base = make_recipe(glue=RTE, tasks=["rte"], pretrain_config=TINY_PRE, finetune_config=TINY_FT)
    same = [make_recipe(glue=str(RTE), tasks=["rte"], pretrain_config={**TINY_PRE, "checkpoint_every": 7, "log_every": 3},
                        finetune_config=TINY_FT),
            make_recipe(glue=RTE, tasks=("rte",), pretrain_config={**TINY_PRE, "adamw": "foreach"}, finetune_config=TINY_FT)]
    other = [make_recipe(glue=RTE, tasks=["rte"], pretrain_config={**TINY_PRE, "steps": 201}, finetune_config=TINY_FT),
             make_recipe(glue=RTE, tasks=["rte", "mrpc"], pretrain_config=TINY_PRE, finetune_config=TINY_FT),
             make_recipe(glue=RTE, tasks=["rte"], pretrain_config=TINY_PRE, finetune_config=TINY_FT, semantics="as_specified"),
             make_recipe(glue=RTE, tasks=["rte"], pretrain_config=TINY_PRE, finetune_config={**TINY_FT, "epochs": 2}),
             make_recipe(glue=RTE, tasks=["rte"], pretrain_config={**TINY_PRE, "precision": "bf16"}, finetune_config=TINY_FT),
             make_recipe(glue="hf:glue", tasks=["rte"], pretrain_config=TINY_PRE, finetune_config=TINY_FT)]
    assert all(r.key == base.key for r in same)
    keys = [r.key for r in other]
    assert base.key not in keys and len(set(keys)) == len(keys)
    assert not EXECUTION_FIELDS & set(base.fields()["pretrain"]) and len(base.key) == 12
    # a results table holds the same arch under two recipes as two entries
    from nasbench_bert import Arch

    assert ResultsTable.key(ARCH, base.key) == f"{Arch.from_string(ARCH).index:08d}-{base.key}"


@pytest.mark.parametrize("field, value", [("tasks", []), ("tasks", "rte"), ("tasks", ["rte", "rte"]),
                                          ("finetune_config", {"epochs": 0}),
                                          ("finetune_config", {"max_train_examples": 0}),
                                          ("finetune_config", {"batch_size": 0}), ("finetune_config", {"head": "x"}),
                                          ("finetune_config", {"learning_rate": 0.0}),
                                          ("pretrain_config", {"vocab_size": 5}), ("pretrain_config", {"warmup_steps": -1}),
                                          ("pretrain_config", {"max_documents": 0})])
def test_bad_recipe_fields_are_named_before_any_work(field, value, tmp_path):
    from nasbench_bert.builders.entry import make_recipe
    from nasbench_bert.errors import InvalidArgumentError

    name = field if field == "tasks" else next(iter(value))
    with pytest.raises(InvalidArgumentError, match=name):
        make_recipe(glue=RTE, **{field: value})
    with pytest.raises(InvalidArgumentError, match=name):
        build_entry(ARCH, glue=RTE, results=tmp_path / "r", **{field: value})
    assert not list((tmp_path / "r").glob("entries/*"))  # nothing written


def test_non_utf8_tsv_names_the_file(tmp_path):
    d = tmp_path / "rte"
    d.mkdir()
    (d / "train.tsv").write_bytes(b"index\tsentence1\tsentence2\tlabel\n0\ta \xff b\tc\tentailment\n")
    with pytest.raises(ValueError, match=r"train\.tsv is not UTF-8"):
        read_split(TASKS["rte"], d, "train")


def _build_cmd(corpus: str, data_dir: object, res: object) -> list[str]:
    return [sys.executable, "-m", "nasbench_bert.cli", "--data", str(data_dir), "build-entry", ARCH, "--corpus", corpus,
            "--glue", str(RTE), "--tasks", "rte", "--batch-size", "8", "--seq-len", "32", "--warmup-steps", "5",
            "--vocab-size", "3000", "--epochs", "1", "--max-train-examples", "64", "--results", str(res)]


def test_cli_refuses_empty_and_zero_recipe_fields(corpus, tmp_path, data_dir):
    base = _build_cmd(corpus, data_dir, tmp_path / "res")
    for args in (["--tasks", ""], ["--tasks", " , "], ["--epochs", "0"], ["--max-train-examples", "0"], ["--vocab-size", "5"]):
        r = subprocess.run([*base, "--steps", "30", *args], capture_output=True, text=True)
        flag = args[0].lstrip("-").replace("-", "_")
        assert r.returncode == 2 and "Traceback" not in r.stderr and (flag in r.stderr or args[0] in r.stderr), (args, r.stderr)
    assert not list((tmp_path / "res").glob("entries/*.json"))


@pytest.mark.slow  # three small builds in subprocesses: ~2 min on 2 cores
def test_cli_rerun_skips_only_the_same_recipe(corpus, tmp_path, data_dir):
    """The same recipe twice: built, then skipped. Another step count: a new entry,
    beside the first (the key holds the recipe, not the arch alone)."""
    res = tmp_path / "res"
    base = _build_cmd(corpus, data_dir, res)
    run = [subprocess.run([*base, "--steps", s], capture_output=True, text=True) for s in ("30", "30", "40")]
    assert all(r.returncode == 0 for r in run), [r.stderr for r in run]
    assert "skipped: already built" not in run[0].stdout and "skipped: already built" in run[1].stdout
    assert "skipped" not in run[2].stdout
    entries = ResultsTable(res).entries()
    assert sorted(e["hparams"]["num_train_steps"] for e in entries) == [30, 40]
    assert len({e["recipe"]["key"] for e in entries}) == 2
    b = Benchmark.load(str(data_dir), results=str(res))
    from nasbench_bert import Arch

    assert len(b.regenerated()[Arch.from_string(ARCH)]) == 2
