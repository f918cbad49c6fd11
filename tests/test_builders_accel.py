"""The builders' accelerator path, checked on CPU: bf16 autocast, SDPA attention, fused
AdamW, torch.compile, the memory-mapped corpus and its prefetching loader, checkpoints
by wall time, device selection, the training-FLOPs count behind the MFU benchmark, and
Ray's GPU request. Tolerances are the ones docs/builders.md ("Accelerators") states."""

from __future__ import annotations

import copy
import csv
import json
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import UPSTREAM  # noqa: E402
from nasbench_bert.builders import corpus as corpus_mod  # noqa: E402
from nasbench_bert.builders import pretrain as pretrain_mod  # noqa: E402
from nasbench_bert.builders.corpus import BatchSource, Prefetcher, load_sequences, pretokenize  # noqa: E402
from nasbench_bert.builders.entry import build_entry, build_many, ray_resources, validate_entry  # noqa: E402
from nasbench_bert.builders.glue import FinetuneConfig, finetune  # noqa: E402
from nasbench_bert.errors import InvalidArgumentError  # noqa: E402
from nasbench_bert.builders.pretrain import (  # noqa: E402
    ACCELERATED, PretrainConfig, autocast, make_adamw, pretrain, resolve_device, use_attention,
)
from nasbench_bert.models import ElectraPair, SequenceClassifier, build_flexibert  # noqa: E402
from nasbench_bert.models.flops import electra_pretraining_flops  # noqa: E402
from nasbench_bert.text import load_tokenizer, pack, read_corpus  # noqa: E402

pytestmark = pytest.mark.torch

RTE = UPSTREAM / "glue-rte"
ARCH = "128/SA-SDP-h2-512x1/LT-DFT-h2-512x1"
TINY = {"steps": 200, "batch_size": 8, "seq_len": 32, "warmup_steps": 20, "vocab_size": 3000, "checkpoint_every": 100}
TINY_FT = {"epochs": 1, "max_train_examples": 64, "max_dev_examples": 64, "batch_size": 16, "max_seq_len": 64}
#: bf16 autocast vs fp32 over 200 steps (docs/builders.md): means over 20-step windows
BF16_WINDOW_RTOL = 0.01
BF16_STEP_RTOL = 0.10
#: a CUDA run against the CPU's fp32 run (docs/builders.md, "Seeding and tolerances"):
#: other random draws (Gumbel noise from the GPU's generator, the fused kernels' dropout
#: masks), so only 20-step means are compared. Another seed altogether (init, batches and
#: draws) moves them by up to 4.9 % on CPU; a GPU run shares init and batches
GPU_WINDOW_RTOL = 0.08
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none here); on one run: "
                                "python -m pytest -m cuda tests/test_builders_accel.py (bench/device_check.py runs it)")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    rows = list(csv.reader(open(RTE / "train.tsv", newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    p = tmp_path_factory.mktemp("corpus") / "rte_sentences.txt"
    p.write_text("\n".join(f"{r[1]} {r[2]}" for r in rows))
    return f"text:{p}"


@pytest.fixture(scope="module")
def tok(corpus):
    return load_tokenizer(read_corpus(corpus), 3000)


def cfg(corpus: str, **kw) -> PretrainConfig:
    return PretrainConfig(**{**TINY, "corpus": corpus, **kw})


# -- options and their validation -------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [
    ("precision", "fp16"), ("precision", True), ("attention", "flash"), ("adamw", "sgd"), ("compile", "yes"),
    ("compile", 1), ("pretokenized", "true"), ("prefetch", -1), ("prefetch", 1.5), ("checkpoint_minutes", 0),
    ("checkpoint_minutes", float("inf")), ("checkpoint_minutes", "10"), ("corpus_cache", 3),
])
def test_bad_pretrain_options_name_the_field_and_the_allowed_values(field, value):
    with pytest.raises(InvalidArgumentError, match=rf"{field} = .* not allowed.*allowed"):
        PretrainConfig(**{field: value})


def test_option_combinations_that_cannot_work_are_refused():
    with pytest.raises(ValueError, match="corpus_cache.*pretokenized"):
        PretrainConfig(corpus_cache="/tmp/x")
    with pytest.raises(ValueError, match="attention = 'sdpa'.*authors.*allowed values there: \\['eager'\\]"):
        PretrainConfig(attention="sdpa", semantics="seed_compat")
    with pytest.raises(ValueError, match="attention = 'sdpa'.*authors"):
        use_attention(build_flexibert(ARCH, "authors"), "sdpa")
    for field, value in [("precision", "fp64"), ("attention", "xformers"), ("adamw", "lion"), ("compile", None)]:
        with pytest.raises(InvalidArgumentError, match=rf"{field} = .* allowed values"):
            FinetuneConfig(**{field: value})
    # the defaults are the plain loop; the GPU set is valid as a whole
    c = PretrainConfig()
    assert (c.precision, c.attention, c.adamw, c.compile, c.pretokenized, c.prefetch, c.checkpoint_minutes) == (
        "fp32", "eager", "default", False, False, 0, None)
    assert PretrainConfig(**ACCELERATED).precision == "bf16"


def test_device_selection():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device(None) == resolve_device("auto")
    for bad in ("tpu", "gpu", "cuda:x", 3):
        with pytest.raises(InvalidArgumentError, match="device = .* not allowed.*'auto', 'cpu', 'cuda'"):
            resolve_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device = 'cuda' is not allowed here: CUDA is not available"):
            resolve_device("cuda")


# -- SDPA attention ---------------------------------------------------------------------------------
@pytest.mark.parametrize("arch, semantics", [
    (ARCH, "as_trained"),
    ("256/SA-WMA-h4-1024x1/DSC-5-h4-512x3", "as_specified"),  # WMA and DSC's attention half
])
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_sdpa_equals_eager_in_eval_mode(arch, semantics, dtype, tol):
    eager = build_flexibert(arch, semantics, seed=3).to(dtype).eval()
    sdpa = use_attention(copy.deepcopy(eager), "sdpa")
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 30522, (3, 40), generator=g)
    mask = torch.ones(3, 40, dtype=torch.long)
    mask[1, 25:] = 0  # padding: the additive mask goes to SDPA too
    seen = []
    for m in (eager, sdpa):
        for mod in m.modules():
            if isinstance(mod, torch.nn.Softmax):
                mod.register_forward_hook(lambda *_: seen.append(1))
    with torch.no_grad():
        a = eager(ids, mask)
        n_eager = len(seen)
        b = sdpa(ids, mask)
    assert n_eager > 0 and len(seen) == n_eager  # the SDPA model really took the other path
    diff = (a - b).abs().max().item()
    assert diff <= tol, diff


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_attention_dropout_has_the_reference_distribution(impl):
    """q = k = 0 gives uniform probabilities 1/T and v = I returns them, so the output is
    the dropped-out probability matrix: every entry 0 or 1/(T (1 - p)), zeros at rate p."""
    from nasbench_bert.models.flexibert import SelfAttention

    T, p = 64, 0.1
    att = SelfAttention(T, 1, wma=False, dropout=p, attention=impl).train()
    with torch.no_grad():
        for lin in (att.query, att.key):
            lin.weight.zero_(), lin.bias.zero_()
        att.value.weight.copy_(torch.eye(T)), att.value.bias.zero_()
    x = torch.eye(T).expand(16, T, T).contiguous()
    torch.manual_seed(0)
    out = att(x, None)
    keep = 1 / (T * (1 - p))
    assert torch.all((out == 0) | ((out - keep).abs() < 1e-6))
    rate = (out == 0).double().mean().item()
    assert abs(rate - p) < 0.01, rate  # 65,536 draws: 3 sigma is 0.0035
    torch.manual_seed(1)
    assert not torch.equal(att(x, None), out)  # a fresh draw per call
    assert torch.allclose(att.eval()(x, None), torch.full((16, T, T), 1 / T))  # eval: no dropout


def test_sdpa_pretraining_follows_the_eager_losses_on_cpu(corpus, tok):
    """In training, with dropout: torch's CPU SDPA with dropout runs its math path, which
    draws the masks from the same generator in the same order as the eager path, so the
    losses agree to rounding (measured 2e-7 relative over 200 steps). A wrong dropout
    probability, scale or mask in the SDPA path breaks this. (GPU kernels draw their
    own masks: there only the distribution is the same, see the test above.)"""
    small = {"steps": 10, "batch_size": 4, "seq_len": 16, "replicas": 2}  # batch 4 over 2 replicas (the recipe's 8 need a multiple of 8); options are compared with each other
    a = np.array(pretrain(ARCH, cfg(corpus, **small), tokenizer=tok).losses)
    b = np.array(pretrain(ARCH, cfg(corpus, **small, attention="sdpa"), tokenizer=tok).losses)
    assert np.max(np.abs(a - b) / a) <= 1e-5


# -- bf16 autocast ----------------------------------------------------------------------------------
def bf16_vs_fp32(corpus: str, tok, steps: int, window: int, **kw) -> tuple[float, float, np.ndarray]:
    """Pretrain in fp32 and in bf16 autocast from the same seed; return the largest relative
    difference of ``window``-step mean losses, of single-step losses, and the bf16 losses."""
    f = pretrain(ARCH, cfg(corpus, steps=steps, **kw), tokenizer=tok)
    b = pretrain(ARCH, cfg(corpus, steps=steps, precision="bf16", **kw), tokenizer=tok)
    x, y = np.array(f.losses), np.array(b.losses)
    assert len(x) == len(y) == steps and not np.array_equal(x, y)  # bf16 really ran
    # fp32 master weights: parameters (and so the optimiser state) stay float32
    assert {p.dtype for p in b.model.parameters()} == {torch.float32}
    wx, wy = x.reshape(-1, window).mean(1), y.reshape(-1, window).mean(1)
    return float(np.max(np.abs(wx - wy) / wx)), float(np.max(np.abs(x - y) / x)), wy


def test_bf16_loss_curve_stays_within_tolerance_of_fp32_short(corpus, tok):
    """The default suite's form (40 steps of batch 4 x 16, ~5 s), with the tolerances of
    the 200-step test below."""
    win_rel, step_rel, wy = bf16_vs_fp32(corpus, tok, 40, 10, batch_size=4, seq_len=16, replicas=2)
    assert win_rel <= BF16_WINDOW_RTOL and step_rel <= BF16_STEP_RTOL, (win_rel, step_rel)
    assert wy[-1] < 0.9 * wy[0]


def test_autocast_context_casts_matmuls_to_bf16_only_when_asked():
    with autocast(torch.device("cpu"), "bf16"):
        assert torch.nn.Linear(4, 4)(torch.ones(2, 4)).dtype == torch.bfloat16
    with autocast(torch.device("cpu"), "fp32"):
        assert torch.nn.Linear(4, 4)(torch.ones(2, 4)).dtype == torch.float32


@pytest.mark.slow
def test_bf16_loss_curve_stays_within_tolerance_of_fp32(corpus, tok):
    """200 steps of batch 8 x 32 (~35 s on one core): the issue's check, run by .ci/run's
    slow pass. Measured on the development CPU: 20-step means within 0.13 %, single
    steps within 2.3 % (the documented tolerances are 1 % and 10 %)."""
    win_rel, step_rel, wy = bf16_vs_fp32(corpus, tok, 200, 20)
    assert win_rel <= BF16_WINDOW_RTOL and step_rel <= BF16_STEP_RTOL, (win_rel, step_rel)
    assert wy[-1] < 0.9 * wy[0]  # and it learns


# -- AdamW implementations ----------------------------------------------------------------------------
def test_fused_and_foreach_adamw_follow_the_default(corpus, tok, tmp_path):
    small = {"steps": 8, "batch_size": 4, "seq_len": 16, "replicas": 2}  # batch 4 over 2 replicas (the recipe's 8 need a multiple of 8); options are compared with each other
    base = pretrain(ARCH, cfg(corpus, **small), tokenizer=tok).losses
    for impl in ("foreach", "fused"):
        wd = tmp_path / impl
        r = pretrain(ARCH, cfg(corpus, **small, adamw=impl, checkpoint_every=8), tokenizer=tok, workdir=wd).losses
        rel = np.max(np.abs(np.array(r) - base) / np.array(base))
        assert rel <= 1e-5, (impl, rel)
        st = torch.load(next((wd / "checkpoints").glob("step-*.pt")), weights_only=False)
        assert st["optimizer"]["param_groups"][0][impl] is True
    p = [torch.nn.Parameter(torch.ones(3))]
    assert make_adamw(p, 1e-3, 1e-6, "fused").defaults["fused"] is True
    assert make_adamw(p, 1e-3, 1e-6, "default").defaults["fused"] is None


# -- torch.compile ------------------------------------------------------------------------------------
def test_compiled_encoder_gives_the_eager_outputs():
    """inductor (the real compiler, C++ on CPU) against eager, eval mode, with padding."""
    m = build_flexibert("128/SA-SDP-h2-512x1/SA-SDP-h4-512x3", "as_trained", seed=0).eval()
    ids = torch.randint(5, 30522, (2, 32), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 32, dtype=torch.long)
    mask[1, 20:] = 0
    with torch.no_grad():
        ref = m(ids, mask)
        out = torch.compile(m)(ids, mask)
    assert (out - ref).abs().max().item() <= 1e-5


@pytest.fixture
def compile_spy(monkeypatch):
    """torch.compile with the tracing front end (dynamo) and no code generation, recorded."""
    real = torch.compile
    calls: list[type] = []

    def spy(model, **kw):
        calls.append(type(model))
        return real(model, backend="eager")

    monkeypatch.setattr(torch, "compile", spy)
    yield calls
    torch._dynamo.reset()


def test_compile_option_compiles_both_encoders_and_keeps_the_losses(corpus, tok, compile_spy):
    from nasbench_bert.models import FlexiBERTEncoder

    base = pretrain(ARCH, cfg(corpus, steps=4), tokenizer=tok).losses
    r = pretrain(ARCH, cfg(corpus, steps=4, compile=True), tokenizer=tok)
    assert compile_spy == [FlexiBERTEncoder, FlexiBERTEncoder]
    assert np.max(np.abs(np.array(r.losses) - base) / np.array(base)) <= 1e-6
    assert not any(k.startswith("_orig_mod") for k in r.model.state_dict())  # checkpoints keep their keys


@pytest.mark.slow
def test_compiled_pretraining_gives_the_eager_losses(corpus, tok, monkeypatch):
    """The whole loop under inductor; with inductor's random numbers replaced by torch's
    (fallback_random) the dropout masks are the eager ones, so the losses must agree."""
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config, "fallback_random", True)
    c = {"steps": 5, "batch_size": 4, "replicas": 2}  # batch 4 over 2 replicas (the recipe's 8 need a multiple of 8); options are compared with each other
    base = pretrain("128/SA-SDP-h2-512x1/SA-SDP-h2-512x1", cfg(corpus, **c), tokenizer=tok).losses
    r = pretrain("128/SA-SDP-h2-512x1/SA-SDP-h2-512x1", cfg(corpus, **c, compile=True), tokenizer=tok).losses
    torch._dynamo.reset()
    assert np.max(np.abs(np.array(r) - base) / np.array(base)) <= 1e-5


# -- the memory-mapped corpus and the loader -----------------------------------------------------------
def test_pretokenized_corpus_is_the_packed_corpus(corpus, tok, tmp_path, monkeypatch):
    path = pretokenize(corpus, tok, 32, cache_dir=tmp_path)
    seqs = load_sequences(path)
    assert isinstance(seqs, np.memmap) and seqs.dtype == np.uint16 and not seqs.flags.writeable
    packed = np.array(list(pack(read_corpus(corpus), tok, 32)), dtype=np.int64)
    assert seqs.shape == packed.shape and np.array_equal(seqs, packed)
    assert json.loads(path.with_suffix(".json").read_text())["sequences"] == len(packed)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.with_suffix(".json").name, path.name]  # no scratch left
    # a second call maps the cached file without reading (or tokenising) the corpus
    monkeypatch.setattr(corpus_mod, "read_corpus", lambda *a, **k: pytest.fail("corpus read on a cache hit"))
    assert pretokenize(corpus, tok, 32, cache_dir=tmp_path) == path
    # the key follows the sequence length, the tokenizer and the corpus bytes
    monkeypatch.undo()
    assert pretokenize(corpus, tok, 64, cache_dir=tmp_path) != path
    big = copy.copy(tok)
    big.vocab_size = 70_000  # ids beyond uint16: stored as int32
    p32 = pretokenize(corpus, big, 32, cache_dir=tmp_path)
    assert p32 != path and load_sequences(p32).dtype == np.int32
    other = tmp_path / "other.txt"
    other.write_text(open(corpus[len("text:"):]).read() + "\none more line")
    assert pretokenize(f"text:{other}", tok, 32, cache_dir=tmp_path) != path
    with pytest.raises(ValueError, match="seq_len"):
        pretokenize(corpus, tok, 1024, cache_dir=tmp_path)


def test_batches_are_the_same_rows_and_masks_in_the_same_order(corpus, tok, tmp_path):
    """BatchSource against the loop's original formula, in memory and memory-mapped,
    across epoch boundaries (a batch that straddles one wraps within its epoch)."""
    docs = read_corpus(corpus)
    mem = np.array(list(pack(docs, tok, 32)), dtype=np.int64)
    mapped = load_sequences(pretokenize(corpus, tok, 32, cache_dir=tmp_path))
    n, B, seed = len(mem), 48, 5
    special = torch.tensor(sorted({tok.pad_id, tok.cls_id, tok.sep_id}))
    a, b = BatchSource(mem, tok, B, seed, 0.15), BatchSource(mapped, tok, B, seed, 0.15)
    steps = [0, 1, n // B, n // B + 1, 2 * n // B + 1, 3 * n // B]  # around the epoch boundaries
    for step in steps:
        # the original loop, verbatim
        g = torch.Generator().manual_seed(pretrain_mod._step_seed(seed, step))
        epoch, pos = divmod(step * B, n)
        perm = np.random.default_rng([seed, epoch]).permutation(n)
        rows = [perm[(pos + i) % n] for i in range(B)]
        ids = torch.from_numpy(mem[rows])
        # ELECTRA's masking (pinned to the authors' TF code by tests/reference/test_tf_recipe.py)
        # on the step generator's draws: the positions' noise, then the [MASK]-or-keep noise
        N = corpus_mod.max_predictions(0.15, 32)
        u_pos, u_keep = torch.rand((B, N, 32), generator=g), torch.rand((B, N), generator=g)
        m = corpus_mod.electra_mask(ids, (ids != tok.pad_id).long(), u_pos, u_keep, mask_prob=0.15, cls_id=tok.cls_id,
                                    sep_id=tok.sep_id, mask_id=tok.mask_id)
        u = torch.rand(5, generator=g)  # the next draw from the step's generator
        for src in (a, b):
            x = src(step)
            assert torch.equal(x.ids, ids) and x.ids.dtype == torch.int64
            assert torch.equal(x.masked.positions, m.positions) and torch.equal(x.masked.weights, m.weights)
            assert torch.equal(x.masked.generator_input, m.generator_input)
            used = x.masked.weights.bool()  # the used slots name real, non-special tokens
            assert used.any() and not torch.isin(ids.gather(1, x.masked.positions)[used], special).any()
            assert torch.equal(torch.rand(5, generator=x.generator), u)


def test_prefetcher_yields_the_same_batches_and_stops_cleanly(corpus, tok):
    seqs = np.array(list(pack(read_corpus(corpus), tok, 32)), dtype=np.int64)
    src = BatchSource(seqs, tok, 8, 0, 0.15)
    with Prefetcher(src, 3, 20, depth=2) as pf:
        got = list(pf)
    assert [x.step for x in got] == list(range(3, 20))
    assert all(torch.equal(x.ids, src(x.step).ids) and torch.equal(x.masked.positions, src(x.step).masked.positions)
               for x in got)

    def boom(step):
        if step == 5:
            raise RuntimeError("bad batch")
        return src(step)

    with pytest.raises(RuntimeError, match="bad batch"):
        with Prefetcher(boom, 0, 10, depth=2) as pf:
            list(pf)
    pf = Prefetcher(src, 0, 10_000, depth=2)
    next(iter(pf))
    pf.close()  # the consumer leaves early: the thread must end, not block on a full queue
    assert not pf._thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name == "nasbench-bert-prefetch" and t.is_alive()]
    with pytest.raises(ValueError, match="depth"):
        Prefetcher(src, 0, 1, depth=0)


def test_pretokenized_corpus_and_prefetch_give_the_plain_loops_losses(corpus, tok, tmp_path):
    """The memory-mapped corpus and the prefetching thread change where batches come
    from, not what they are: the losses are bit-identical to the plain loop's."""
    small = {"steps": 6, "batch_size": 4, "seq_len": 16, "replicas": 2}  # batch 4 over 2 replicas (the recipe's 8 need a multiple of 8); options are compared with each other
    base = pretrain(ARCH, cfg(corpus, **small), tokenizer=tok)
    r = pretrain(ARCH, cfg(corpus, **small, pretokenized=True, corpus_cache=str(tmp_path), prefetch=2), tokenizer=tok)
    assert r.losses == base.losses and r.gen_losses == base.gen_losses
    assert len(list(tmp_path.glob("corpus-*.npy"))) == 1  # the cache was made, and used


# -- checkpoints and resume ---------------------------------------------------------------------------
def test_checkpoint_minutes_saves_by_wall_time(corpus, tok, tmp_path, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(pretrain_mod, "_clock", lambda: now[0])

    def tick(step, loss):  # every step takes 25 s of "wall time"
        now[0] += 25.0

    c = {"steps": 10, "checkpoint_every": 1000, "batch_size": 4, "seq_len": 16, "replicas": 2}  # batch 4 over 2 replicas (the recipe's 8 need a multiple of 8); options are compared with each other
    r = pretrain(ARCH, cfg(corpus, **c, checkpoint_minutes=1.0), tokenizer=tok, workdir=tmp_path / "a", on_step=tick)
    assert r.checkpoints == [3, 6, 9, 10]  # 75 s, 150 s, 225 s after the last one; and the end
    r = pretrain(ARCH, cfg(corpus, **c), tokenizer=tok, workdir=tmp_path / "b", on_step=tick)
    assert r.checkpoints == [10]


class _Stop(Exception):
    pass


def test_resume_is_bit_identical_with_the_cpu_accelerator_options(corpus, tok, tmp_path):
    """bf16 + SDPA + fused AdamW + memory-mapped corpus + prefetching: a run stopped after
    its step-8 checkpoint and resumed gives exactly the losses of an uninterrupted run."""
    c = cfg(corpus, steps=16, checkpoint_every=4, precision="bf16", attention="sdpa", adamw="fused", pretokenized=True,
            corpus_cache=str(tmp_path / "cache"), prefetch=3)
    ref = pretrain(ARCH, c, tokenizer=tok)

    def stop(step, loss):
        if step == 9:  # steps 0-9 done, the last checkpoint at 8
            raise _Stop

    wd = tmp_path / "wd"
    with pytest.raises(_Stop):
        pretrain(ARCH, c, tokenizer=tok, workdir=wd, on_step=stop)
    resumed = pretrain(ARCH, c, tokenizer=tok, workdir=wd)
    assert resumed.resumed_from == 8
    assert resumed.losses == ref.losses and resumed.disc_losses == ref.disc_losses and resumed.gen_losses == ref.gen_losses
    assert json.loads((wd / "pretrain_config.json").read_text())["precision"] == "bf16"
    # a checkpoint written by one AdamW implementation resumes under the configured one
    wd2 = tmp_path / "wd2"
    with pytest.raises(_Stop):
        pretrain(ARCH, cfg(corpus, steps=12, checkpoint_every=4), tokenizer=tok, workdir=wd2, on_step=stop)
    r = pretrain(ARCH, cfg(corpus, steps=12, checkpoint_every=4, adamw="fused"), tokenizer=tok, workdir=wd2)
    st = torch.load(sorted((wd2 / "checkpoints").glob("step-*.pt"))[-1], weights_only=False)
    assert r.resumed_from == 8 and st["optimizer"]["param_groups"][0]["fused"] is True


# -- FLOPs behind MFU ---------------------------------------------------------------------------------
@pytest.mark.parametrize("arch, semantics", [
    ("256/SA-SDP-h4-1024x1/SA-WMA-h4-512x3/LT-DCT-h4-512x1/SA-SDP-h2-512x1", "as_trained"),
    ("128/DSC-9-h4-512x1/DSC-5-h2-512x1", "as_trained"),
    ("256/SA-WMA-h4-1024x1/LT-DCT-h4-512x3/DSC-5-h4-1024x1/LT-DFT-h4-512x1", "as_specified"),
])
def test_training_flops_equal_torchs_count_of_a_pretraining_step(arch, semantics, corpus, tok):
    """The analytic count is torch's own count of the step's matrix products: the forward
    for every semantics; forward + backward (3 x forward) exactly for the benchmark's
    model (as_trained, attention everywhere). As specified, 3 x forward stays the MFU
    convention: torch counts one gradient for the DCT's constant matrices and over-counts
    the grouped convolution's backward."""
    from torch.utils.flop_counter import FlopCounterMode

    seqs = np.array(list(pack(read_corpus(corpus), tok, 32)), dtype=np.int64)
    b = BatchSource(seqs, tok, 4, 0, 0.15)(0)
    model = ElectraPair(arch, semantics, seed=0)
    c = cfg("text:unused", batch_size=4, replicas=1, semantics=semantics)
    dev = torch.device("cpu")
    with FlopCounterMode(display=False) as fwd:
        loss, _, _ = pretrain_mod.electra_losses(model, b, c, replica=0, sampler=pretrain_mod.gumbel_sampler(b, c, dev),
                                                 amp=autocast(dev, "fp32"))
    with FlopCounterMode(display=False) as bwd:
        loss.backward()
    # ELECTRA's generator head runs at all max_predictions slots of every sequence (unused
    # slots carry weight 0), so the masked-token count is B x N
    m = b.masked.positions.numel()
    forward = electra_pretraining_flops(arch, 4, 32, semantics, masked_tokens=m, backward=False)
    assert fwd.get_total_flops() == forward
    assert electra_pretraining_flops(arch, 4, 32, semantics, masked_tokens=m) == 3 * forward
    if semantics == "as_trained":
        assert bwd.get_total_flops() == 2 * forward


# -- GLUE -------------------------------------------------------------------------------------------
def test_glue_accelerator_options(tok, compile_spy):
    enc = build_flexibert(ARCH, "as_trained", seed=0)
    base = finetune(enc, "rte", RTE, tok, FinetuneConfig(**TINY_FT))
    assert compile_spy == []
    for opts, rtol in [({"precision": "bf16"}, 0.02), ({"attention": "sdpa", "adamw": "fused"}, 1e-4),
                       ({"compile": True}, 1e-6)]:
        r = finetune(enc, "rte", RTE, tok, FinetuneConfig(**TINY_FT, **opts))
        rel = abs(r["train_loss"] - base["train_loss"]) / base["train_loss"]
        assert rel <= rtol, (opts, rel)
        assert 0 <= r["score"] <= 100 and r["dev_examples"] == 64
    assert compile_spy == [SequenceClassifier]
    with pytest.raises(ValueError, match="authors"):
        finetune(build_flexibert(ARCH, "authors"), "rte", RTE, tok, FinetuneConfig(**TINY_FT, attention="sdpa"))


def test_entry_records_the_accelerator_options(corpus, tmp_path):
    e = build_entry(ARCH, corpus=corpus, glue=RTE, tasks=["rte"], device="auto",
                    pretrain_config={**TINY, "steps": 12, "precision": "bf16", "attention": "sdpa", "prefetch": 2,
                                     "pretokenized": True, "corpus_cache": str(tmp_path / "c"), "checkpoint_minutes": 5},
                    finetune_config={**TINY_FT, "precision": "bf16", "adamw": "fused"}, workdir=tmp_path / "wd")
    validate_entry(e)
    pc, fc = e["pretraining"]["config"], e["pretraining"]["finetune_config"]
    assert (pc["precision"], pc["attention"], pc["prefetch"], pc["pretokenized"], pc["checkpoint_minutes"]) == (
        "bf16", "sdpa", 2, True, 5)
    assert (fc["precision"], fc["adamw"], fc["compile"]) == ("bf16", "fused", False)
    assert e["environment"]["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert e["pretraining"]["steady_tokens_per_second"] > 0


# -- the command line -----------------------------------------------------------------------------------
def test_build_entry_command_line_accelerator_flags():
    import argparse

    from nasbench_bert.builders.cli import accelerator_options, register
    from nasbench_bert.builders.glue import ACCELERATED_FINETUNE

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["build-entry", "17"])
    assert accelerator_options(args, {}, {}) == ({}, {})  # nothing given: the plain loop
    args = parser.parse_args(["build-entry", "17", "--accelerated", "--no-compile", "--precision", "fp32",
                              "--checkpoint-minutes", "2.5", "--device", "cuda", "--gpus-per-arch", "0.5"])
    pre, fin = accelerator_options(args, {"steps": 10}, {"epochs": 1})
    assert pre == {**ACCELERATED, "compile": False, "precision": "fp32", "checkpoint_minutes": 2.5, "steps": 10}
    assert fin == {**ACCELERATED_FINETUNE, "precision": "fp32", "epochs": 1}
    assert (args.device, args.gpus_per_arch) == ("cuda", 0.5)
    PretrainConfig(**pre), FinetuneConfig(**fin)  # both valid
    with pytest.raises(SystemExit):
        parser.parse_args(["build-entry", "17", "--precision", "fp16"])


# -- Ray -----------------------------------------------------------------------------------------------
def test_ray_asks_for_one_gpu_per_arch():
    assert ray_resources({"CPU": 64, "GPU": 8}) == {"num_cpus": 1, "num_gpus": 1}
    assert ray_resources({"CPU": 64}) == {"num_cpus": 1, "num_gpus": 0}
    assert ray_resources({"CPU": 64, "GPU": 8}, gpus_per_arch=0.5, cpus_per_arch=4) == {"num_cpus": 4, "num_gpus": 0.5}
    assert ray_resources({"CPU": 64, "GPU": 8}, gpus_per_arch=0)["num_gpus"] == 0
    with pytest.raises(InvalidArgumentError, match="gpus_per_arch = 1, device = None is not allowed: the Ray cluster has no GPUs"):
        ray_resources({"CPU": 64}, gpus_per_arch=1)
    # the device asked of build_entry decides the default request
    assert ray_resources({"CPU": 64, "GPU": 8}, device="cuda")["num_gpus"] == 1
    assert ray_resources({"CPU": 64, "GPU": 8}, device="auto")["num_gpus"] == 1
    assert ray_resources({"CPU": 64, "GPU": 8}, device="cpu")["num_gpus"] == 0
    assert ray_resources({"CPU": 64}, device="cpu")["num_gpus"] == 0
    assert ray_resources({"CPU": 64, "GPU": 8}, device="cuda", gpus_per_arch=0.25)["num_gpus"] == 0.25
    with pytest.raises(InvalidArgumentError, match="device = 'cuda' is not allowed: the Ray cluster has no GPUs"):
        ray_resources({"CPU": 64}, device="cuda")
    with pytest.raises(InvalidArgumentError, match="gpus_per_arch = 1 is not allowed with device = 'cpu'"):
        ray_resources({"GPU": 8}, gpus_per_arch=1, device="cpu")
    with pytest.raises(InvalidArgumentError, match="gpus_per_arch = 0 is not allowed with device = 'cuda'"):
        ray_resources({"GPU": 8}, gpus_per_arch=0, device="cuda")
    with pytest.raises(InvalidArgumentError, match="device = 'tpu' is not allowed; allowed values"):
        ray_resources({"GPU": 8}, device="tpu")
    for bad in (-1, "1", True, 1.5):
        with pytest.raises(ValueError, match="gpus_per_arch"):
            ray_resources({"GPU": 8}, gpus_per_arch=bad)
    with pytest.raises(ValueError, match="cpus_per_arch = 0 is not allowed; allowed: a number > 0"):
        ray_resources({"GPU": 8}, cpus_per_arch=0)
    with pytest.raises(ValueError, match="gpus_per_arch.*executor"):
        build_many([ARCH], executor="local", gpus_per_arch=1)


# (Ray: each arch task is given a declared GPU - tests/test_builders.py::test_ray_executor_on_a_local_instance)


# -- on a GPU (skipped without one; docs/builders.md, "On an H100") -----------------------------------
@pytest.mark.slow
@pytest.mark.cuda
@needs_cuda
def test_cuda_accelerated_loss_curve_within_tolerance_of_cpu_fp32(corpus, tok, tmp_path):
    """The GPU set (bf16, SDPA, fused AdamW, compile, memory-mapped corpus, prefetch) on
    CUDA against the plain fp32 loop on the CPU, 200 steps."""
    ref = pretrain(ARCH, cfg(corpus), tokenizer=tok)
    gpu = pretrain(ARCH, cfg(corpus, **{**ACCELERATED, "corpus_cache": str(tmp_path)}), tokenizer=tok, device="cuda")
    assert gpu.device.startswith("cuda")
    x, y = np.array(ref.losses), np.array(gpu.losses)
    wx, wy = x.reshape(10, 20).mean(1), y.reshape(10, 20).mean(1)
    assert np.max(np.abs(wx - wy) / wx) <= GPU_WINDOW_RTOL, np.abs(wx - wy) / wx
    assert wy[-1] < 0.9 * wy[0]


@pytest.mark.slow
@pytest.mark.cuda
@needs_cuda
def test_cuda_resume_within_tolerance(corpus, tok, tmp_path):
    """On a GPU the random streams of a resumed run are the same, its kernels are not
    bit-reproducible: the losses after a resume stay within the bf16 tolerances."""
    c = cfg(corpus, steps=60, checkpoint_every=20, **{**ACCELERATED, "corpus_cache": str(tmp_path / "cache")})
    ref = pretrain(ARCH, c, tokenizer=tok, device="cuda")

    def stop(step, loss):
        if step == 25:
            raise _Stop

    with pytest.raises(_Stop):
        pretrain(ARCH, c, tokenizer=tok, device="cuda", workdir=tmp_path / "wd", on_step=stop)
    r = pretrain(ARCH, c, tokenizer=tok, device="cuda", workdir=tmp_path / "wd")
    assert r.resumed_from == 20 and len(r.losses) == 60  # the first 20 from the interrupted run's checkpoint
    x, y = np.array(ref.losses), np.array(r.losses)
    assert np.max(np.abs(x - y) / x) <= BF16_STEP_RTOL
    assert np.max(np.abs(x.reshape(3, 20).mean(1) - y.reshape(3, 20).mean(1)) / x.reshape(3, 20).mean(1)) <= BF16_WINDOW_RTOL
