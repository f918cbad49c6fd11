"""ELECTRA pretraining throughput and model FLOPs utilisation (MFU), per arch size.

    python bench/bench_pretrain.py                              # CPU, fp32, the plain loop
    python bench/bench_pretrain.py --quick                      # CI's form: < 60 s on 2 CPU cores
    python bench/bench_pretrain.py --precision bf16 --attention sdpa --adamw fused
    python bench/bench_pretrain.py --device cuda --accelerated  # a GPU: the builders' GPU options
    python bench/bench_pretrain.py --device cuda --accelerated --long-run 2000   # + one arch, paper config
    python bench/bench_pretrain.py ... --json FILE              # the table's figures as JSON too (bench/device_check.py)

For the smallest, the median and the largest of the benchmark's 500 archs (ranked by the
analytic training FLOPs of the model the benchmark trained, ``as_trained``), it prints:

* tokens/s of full pretraining steps through ``builders.pretrain`` itself (batches,
  masking, generator, sampled replacements, discriminator, backward, clipping, AdamW),
  timed after warm-up steps (compilation included there, not in the rate);
* MFU: analytic training FLOPs per step
  (:func:`nasbench_bert.models.flops.electra_pretraining_flops`, 3 x the forward
  matrix products, the generator's vocabulary projection at the masked positions) x
  steps/s / the peak of the device in use;
* the projected wall time of the paper-size run (100,000 steps x 128 x 128 tokens) at
  that rate, beside the authors' TPUv2-8 (median 0.70 h over the 500 archs,
  ``time_to_train``; the arch's own figure is printed too).

Each is set beside Hugging Face transformers' ELECTRA of the same size (the arch's hidden
size, depth and most common head count, ELECTRA's feed-forward 4H, the generator at 1/4
width), measured in the same run, on the same device, with the same batches, masks,
precision, attention kind, AdamW implementation and compilation. Its FLOPs are counted
by the same formula (the as-trained model with one feed-forward layer per block is
transformers' ELECTRA exactly: tests/test_electra_parity.py). Where the arch's blocks
have three feed-forward layers (H -> 4H -> F -> F -> H) the two models differ in FLOPs
per step: compare MFU there, tokens/s only where the row says "the same model".

Peak: on CUDA, the dense (no sparsity) datasheet peak for the device's name and the
precision (table below); on CPU, the matmul rate measured in this run (a square fp32 or
bf16 matmul with the same threads, before and after the runs, the larger used), a
measured ceiling rather than a datasheet figure; a nominal peak from stated assumptions
(clock x FLOPs per cycle) is printed beside it with the factor that converts MFU to it.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _source_tree  # noqa: E402,F401  (nasbench_bert.builders from a checkout that is not installed)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from nasbench_bert.builders.corpus import BatchSource, step_seed  # noqa: E402
from nasbench_bert.builders.pretrain import (  # noqa: E402
    _TIMING_WARMUP, ACCELERATED, ADAMW_IMPLS, ATTENTION_IMPLS, PRECISIONS, PretrainConfig, autocast, make_adamw, pretrain,
    resolve_device,
)
from nasbench_bert.models.flops import electra_plan_flops, electra_pretraining_flops  # noqa: E402
from nasbench_bert.semantics import AS_TRAINED, LayerPlan, ModelPlan  # noqa: E402
from nasbench_bert.spaces.flexibert import Arch  # noqa: E402
from nasbench_bert.text import load_tokenizer, pack, read_corpus  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAPER_TOKENS = 100_000 * 128 * 128
TPU_MEDIAN_H = 0.70  # median time_to_train of the 500 archs on the authors' TPUv2-8 (the issue's figure)

#: dense peaks in TFLOP/s by device name: (substring of torch.cuda.get_device_name, fp32, bf16).
#: fp32 is the non-tensor-core FP32 rate (torch's default matmul precision does not use
#: TF32); bf16 the tensor-core rate without structured sparsity (half the datasheet's
#: "with sparsity" figure). Sources: NVIDIA H100 Tensor Core GPU datasheet (SXM5: FP32 67,
#: BF16 1,979 sparse; PCIe: 51, 1,513; NVL: 60, 1,671), NVIDIA H200 datasheet (as H100
#: SXM: 67, 1,979 sparse), NVIDIA A100 datasheet (19.5, BF16 312 dense), first match wins.
CUDA_PEAKS: list[tuple[str, float, float]] = [
    ("H100 PCIe", 51.0, 756.0),
    ("H100 NVL", 60.0, 835.0),
    ("H100", 67.0, 989.0),   # SXM5 ("NVIDIA H100 80GB HBM3")
    ("H200", 67.0, 989.0),
    ("A100", 19.5, 312.0),
]


def cuda_peak(name: str, precision: str) -> float | None:
    """FLOP/s peak of a CUDA device from the table, or None when it is not listed."""
    for key, fp32, bf16 in CUDA_PEAKS:
        if key in name:
            return (bf16 if precision == "bf16" else fp32) * 1e12
    return None


def cpu_peak(precision: str, n: int = 2048, reps: int = 5) -> float:
    """This CPU's matmul FLOP/s in ``precision``, measured now with the threads the
    benchmark uses: the best of ``reps`` square ``n`` x ``n`` products. A measured
    ceiling, not a datasheet figure; on a machine shared with other work it is measured
    before and after the runs and the larger is used, so a busy moment lowers MFU rather
    than inflating it."""
    dt = torch.bfloat16 if precision == "bf16" else torch.float32
    a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
    a @ b
    best = math.inf
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def cpu_nominal_peak(precision: str, flops_per_cycle: float | None = None) -> tuple[float, str]:
    """A nominal peak of this CPU, from stated assumptions: threads x the clock in
    /proc/cpuinfo ("cpu MHz"; turbo not counted) x FLOPs per cycle per core. Without
    ``flops_per_cycle`` the fp32 rate is taken as 32 (two 256-bit FMA pipes: AMD Zen 2-4,
    Intel client cores; Intel server cores with two 512-bit FMA units do 64: pass it),
    and bf16 as twice that when the CPU has avx512_bf16 (a bf16 dot product per lane pair),
    else the fp32 rate. Printed beside the measured ceiling, not used for MFU."""
    mhz, flags = math.nan, set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "cpu MHz" and math.isnan(mhz):
                mhz = float(v)
            elif k.strip() == "flags" and not flags:
                flags = set(v.split())
    except OSError:
        pass
    fpc = flops_per_cycle or 32.0
    if precision == "bf16" and "avx512_bf16" in flags:
        fpc *= 2
    threads = torch.get_num_threads()
    return threads * mhz * 1e6 * fpc, (f"{threads} thread(s) x {mhz / 1e3:.3f} GHz (/proc/cpuinfo) x {fpc:g} {precision} "
                                      f"FLOP/cycle{' (assumed)' if flops_per_cycle is None else ''}")


def pick_archs(sizes: list[str]) -> dict[str, tuple[Arch, float | None]]:
    """The smallest / median / largest of the benchmark's archs by as_trained training FLOPs,
    with the arch's TPU ``time_to_train`` (s)."""
    from nasbench_bert import Benchmark

    bench = Benchmark.load(progress=False)
    rows = []
    for i in range(len(bench)):
        r = bench.query(i, charge=False)
        rows.append((electra_pretraining_flops(r.arch, 1, 128), r.arch, r.time_to_train))
    rows.sort(key=lambda x: x[0])
    at = {"small": 0, "median": (len(rows) - 1) // 2, "largest": len(rows) - 1}
    return {s: (rows[at[s]][1], rows[at[s]][2]) for s in sizes}


def electra_twin(a: Arch) -> tuple[ModelPlan, ModelPlan]:
    """transformers' ELECTRA of the size of ``a``, as discriminator and generator plans:
    the arch's hidden size, depth and most common head count, ELECTRA's one feed-forward
    layer of 4H per block, the generator at 1/4 of the width. For an arch whose blocks have
    one feed-forward layer this is the benchmark's model exactly; for the others (H -> 4H
    -> F ... -> H) it is the standard ELECTRA of that width and depth, which does less work
    per token, so compare MFU rather than tokens/s there."""
    disc, gen = AS_TRAINED.plan(a), AS_TRAINED.generator_plan(a)
    heads = max(statistics.multimode([layer.heads for layer in disc.layers]))

    def twin(p: ModelPlan) -> ModelPlan:
        return ModelPlan(p.semantics, p.arch, p.hidden, tuple(LayerPlan("SDP", heads, None, (4 * p.hidden,)) for _ in p.layers))

    return twin(disc), twin(gen)


def same_model(a: Arch) -> bool:
    return all(len(lp.ff_widths) == 1 for lp in AS_TRAINED.plan(a).layers) and len({lp.heads for lp in AS_TRAINED.plan(a).layers}) == 1


def describe(d: ModelPlan, g: ModelPlan) -> str:
    return (f"H {d.hidden}, {len(d.layers)} layers, {d.layers[0].heads} heads, FF {d.layers[0].ff_widths[0]}; "
            f"generator H {g.hidden}, FF {g.layers[0].ff_widths[0]}")


def hf_tokens_per_second(a: Arch, source: BatchSource, args: argparse.Namespace, dev: torch.device, steps: int,
                         warmup: int) -> tuple[float, float]:
    """tokens/s of transformers' ELECTRA of the size of ``a`` on the builders' own batches,
    and its mean masked-token count per timed batch."""
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    dp, gp = electra_twin(a)
    L, heads = len(dp.layers), dp.layers[0].heads
    impl = "sdpa" if args.attention == "sdpa" else "eager"
    torch.manual_seed(0)
    d = ElectraForPreTraining(ElectraConfig(vocab_size=30522, embedding_size=128, hidden_size=dp.hidden, num_hidden_layers=L,
                                            num_attention_heads=heads, intermediate_size=dp.layers[0].ff_widths[0],
                                            attn_implementation=impl))
    g = ElectraForMaskedLM(ElectraConfig(vocab_size=30522, embedding_size=128, hidden_size=gp.hidden, num_hidden_layers=L,
                                         num_attention_heads=heads, intermediate_size=gp.layers[0].ff_widths[0],
                                         attn_implementation=impl))
    g.electra.embeddings.word_embeddings = d.electra.embeddings.word_embeddings  # shared token embeddings (ELECTRA)
    g.generator_lm_head.weight = d.electra.embeddings.word_embeddings.weight
    d, g = d.to(dev).train(), g.to(dev).train()
    params = list({id(p): p for p in [*d.parameters(), *g.parameters()]}.values())
    opt = make_adamw(params, 5e-4, 1e-6, args.adamw)
    d_enc, g_enc = (torch.compile(d.electra), torch.compile(g.electra)) if args.compile else (d.electra, g.electra)
    amp = autocast(dev, args.precision)
    masked_counts: list[int] = []

    def step(s: int) -> None:
        b = source(s)
        ids, gin, pos = b.ids.to(dev), b.masked.generator_input.to(dev), b.masked.positions.to(dev)
        masked_counts.append(pos.numel())  # ELECTRA's head runs at every masking slot
        torch.manual_seed(step_seed(0, s) + 1)
        with amp:
            h = g_enc(input_ids=gin).last_hidden_state
            at = torch.gather(h, 1, pos[..., None].expand(-1, -1, h.shape[-1]))
            logits = g.generator_lm_head(g.generator_predictions(at)).float()
        gl = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b.masked.masked_ids.to(dev).reshape(-1))
        with torch.no_grad():
            u = torch.rand(logits.shape, device=dev)
            sampled = (logits - torch.log(-torch.log(u.clamp_min(1e-20)))).argmax(-1)
        din = ids.scatter(1, pos, sampled)
        with amp:
            dl_logits = d.discriminator_predictions(d_enc(input_ids=din).last_hidden_state)
        dl = F.binary_cross_entropy_with_logits(dl_logits.float(), (din != ids).float())
        loss = gl + 50 * dl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    for s in range(warmup):
        step(s)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    t = time.perf_counter()
    for s in range(warmup, warmup + steps):
        step(s)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return steps * source.batch_size * source.seqs.shape[1] / (time.perf_counter() - t), statistics.fmean(masked_counts[warmup:])


def corpus_file(tmp: Path, corpus: str | None) -> str:
    if corpus:
        return corpus
    rows = list(csv.reader(open(ROOT.parent / "shared" / "upstream" / "glue-rte" / "train.tsv", newline=""), delimiter="\t",
                           quoting=csv.QUOTE_NONE))[1:]
    p = tmp / "rte_sentences.txt"
    p.write_text("\n".join(f"{r[1]} {r[2]}" for r in rows))
    return f"text:{p}"


def fmt_row(size: str, label: str, arch: str, gflop: float, tps: float, tokens_per_step: int, peak: float | None,
            tpu_s: float | None) -> str:
    """One table row: FLOPs per step, tokens/s, MFU, the paper-size run's projected hours
    and their ratio to the TPU median, the arch's own TPU time."""
    mfu = f"{gflop * 1e9 * tps / tokens_per_step / peak:6.1%}" if peak else "   n/a"
    hours = PAPER_TOKENS / tps / 3600
    tpu = f"{tpu_s / 3600:5.2f}" if tpu_s else "    -"
    return (f"{size:<8} {label:<22} {gflop:10.1f} {tps:12,.0f} {mfu:>7} {hours:12,.2f} {hours / TPU_MEDIAN_H:9.1f}x "
            f"{tpu:>7}  {arch}")


def write_json(path: Path, results: list, peak: float | None, peak_src: str, device: str, batch: int, seq_len: int,
               steps: int, warm: int, opts: dict) -> None:
    """The printed table's figures as JSON: per row steps/s, tokens/s, MFU against ``peak``
    and the paper-size run's projected hours (the ratio lines are left out)."""
    out = []
    for size, label, arch, gflop, tps, tpu_s in (r for r in results if not isinstance(r, str)):
        per_step = 128 * 128 if label == "nasbench-bert (long)" else batch * seq_len
        out.append({"size": size, "model": label, "arch": arch, "gflop_per_step": gflop, "tokens_per_s": tps,
                    "steps_per_s": tps / per_step, "mfu": gflop * 1e9 * tps / per_step / peak if peak else None,
                    "paper_run_hours": PAPER_TOKENS / tps / 3600, "tpu_hours": tpu_s / 3600 if tpu_s else None})
    path.write_text(json.dumps({"device": device, "batch": batch, "seq_len": seq_len, "timed_steps": steps,
                                "warmup_steps": warm, "options": opts, "peak_flops": peak, "peak_source": peak_src,
                                "rows": out}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:<i> or auto (default cpu)")
    ap.add_argument("--sizes", default="small,median,largest", help="comma-separated among small, median, largest")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per model (default 5 on CPU, 50 on a GPU)")
    ap.add_argument("--batch-size", type=int, default=None, help="default 16 on CPU, 128 (the paper's) on a GPU")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--quick", action="store_true",
                    help="CI's form (< 60 s on 2 CPU cores): batch 4, 2 timed steps, a 1024^3 peak matmul")
    ap.add_argument("--precision", default="fp32", choices=PRECISIONS)
    ap.add_argument("--attention", default="eager", choices=ATTENTION_IMPLS)
    ap.add_argument("--adamw", default="default", choices=ADAMW_IMPLS)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--accelerated", action="store_true", help="the builders' GPU options (pretrain.ACCELERATED)")
    ap.add_argument("--corpus", default=None, help="text:<path> or hf:<dataset> (default: the RTE sentences)")
    ap.add_argument("--max-documents", type=int, default=None)
    ap.add_argument("--no-hf", action="store_true", help="skip transformers' ELECTRA")
    ap.add_argument("--peak-tflops", type=float, default=None, help="override the device peak (TFLOP/s)")
    ap.add_argument("--cpu-flops-per-cycle", type=float, default=None,
                    help="fp32 FLOPs per cycle per core for the nominal CPU peak line (default 32, see cpu_nominal_peak)")
    ap.add_argument("--long-run", type=int, default=0, metavar="STEPS",
                    help="also pretrain the median arch for STEPS steps of the paper configuration (batch 128 x 128)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the table's figures to FILE as JSON")
    a = ap.parse_args()
    sizes = a.sizes.split(",")
    bad = [x for x in sizes if x not in ("small", "median", "largest")]
    if bad:
        ap.error(f"--sizes = {a.sizes!r}: {bad} not allowed; allowed values: small, median, largest")
    if a.accelerated:
        a.precision, a.attention, a.adamw, a.compile = (ACCELERATED[k] for k in ("precision", "attention", "adamw", "compile"))
    dev = resolve_device(a.device)
    gpu = dev.type == "cuda"
    batch = a.batch_size or (128 if gpu else 4 if a.quick else 16)
    steps = a.steps or (50 if gpu else 2 if a.quick else 5)
    peak_n = 1024 if a.quick else 2048
    tokens_per_step = batch * a.seq_len
    warm = _TIMING_WARMUP  # untimed steps first (compilation happens there), as pretrain() times them
    opts = {"precision": a.precision, "attention": a.attention, "adamw": a.adamw, "compile": a.compile}
    if a.accelerated:
        opts |= {"pretokenized": True, "prefetch": ACCELERATED["prefetch"]}
    measured: list[float] = []
    if a.peak_tflops:
        peak, peak_src = a.peak_tflops * 1e12, "given with --peak-tflops"
    elif gpu:
        name = torch.cuda.get_device_name(dev)
        peak = cuda_peak(name, a.precision)
        peak_src = f"{name}, datasheet dense {a.precision} peak" if peak else f"{name}: not in CUDA_PEAKS, MFU n/a"
    else:
        measured.append(cpu_peak(a.precision, peak_n))
        peak, peak_src = measured[0], ""
    dev_name = torch.cuda.get_device_name(dev) if gpu else f"cpu, {torch.get_num_threads()} threads"
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus_file(Path(tmp), a.corpus)
        docs = read_corpus(corpus, a.max_documents)
        tok = load_tokenizer(docs, 30522)
        seqs = np.array(list(pack(docs, tok, a.seq_len)), dtype=np.int64)
        source = BatchSource(seqs, tok, batch, 0, 0.15)
        archs = pick_archs(sizes)
        results = []  # (size, label, arch text, GFLOP/step, tokens/s, tpu s) and the ratio lines
        for size, (arch, tpu_s) in archs.items():
            # the recipe's 8 replicas where the batch allows (a smaller batch: fewer replicas)
            cfg = PretrainConfig(steps=warm + steps, batch_size=batch, seq_len=a.seq_len, warmup_steps=2, corpus=corpus,
                                 max_documents=a.max_documents, replicas=math.gcd(batch, 8), **opts)
            ours = pretrain(arch, cfg, tokenizer=tok, device=dev)
            m = statistics.fmean(source(s).masked.positions.numel() for s in range(warm, warm + steps))
            gflop = electra_pretraining_flops(arch, batch, a.seq_len, masked_tokens=m) / 1e9
            results.append((size, "nasbench-bert", str(arch), gflop, ours.steady_tokens_per_second, tpu_s))
            if not a.no_hf:
                dp, gp = electra_twin(arch)
                hf, hm = hf_tokens_per_second(arch, source, a, dev, steps, warm)
                hg = electra_plan_flops(dp, gp, batch, a.seq_len, masked_tokens=hm) / 1e9
                results.append(("", "transformers ELECTRA", describe(dp, gp), hg, hf, None))
                mfu_ratio = (gflop * ours.steady_tokens_per_second) / (hg * hf)
                note = ("the same model" if same_model(arch) else "the same FLOPs/step, another head split"
                        if abs(gflop - hg) <= 1e-6 * hg else "different FLOPs/step: compare MFU")
                results.append(f"{'':<8} {'ratio':<22} {'':>10} {ours.steady_tokens_per_second / hf:11.2f}x {mfu_ratio:6.2f}x"
                               f"  (nasbench-bert / transformers: tokens/s, MFU; {note})")
        long_line = None
        if a.long_run:
            arch, tpu_s = pick_archs(["median"])["median"]
            long_opts = {**opts, "checkpoint_minutes": ACCELERATED["checkpoint_minutes"]} if a.accelerated else opts
            cfg = PretrainConfig(steps=a.long_run, corpus=corpus, max_documents=a.max_documents, **long_opts)  # paper config
            with tempfile.TemporaryDirectory() as wd:
                r = pretrain(arch, cfg, tokenizer=tok, device=dev, workdir=wd)
            gflop = electra_pretraining_flops(arch, cfg.batch_size, cfg.seq_len) / 1e9
            long_line = (f"# long run: median arch, {a.long_run} steps of the paper configuration (batch 128 x 128, "
                         f"lr 5e-4, warm-up 10,000), checkpointing; loss {r.losses[0]:.3f} -> {r.losses[-1]:.3f}; "
                         f"{r.seconds:,.0f} s wall")
            results.append(("median", "nasbench-bert (long)", str(arch), gflop, r.steady_tokens_per_second, tpu_s))
    if measured:  # the CPU ceiling again, after the runs: the larger of the two
        measured.append(cpu_peak(a.precision, peak_n))
        peak = max(measured)
        peak_src = (f"{a.precision} {peak_n}^3 matmul measured in this run, best of before "
                    f"({measured[0] / 1e9:.1f} GFLOP/s) and after ({measured[1] / 1e9:.1f} GFLOP/s)")
    print(f"# ELECTRA pretraining, {dev_name}; batch {batch} x {a.seq_len}; {steps} timed steps after {warm} warm-up")
    print(f"# options: {' '.join(f'{k}={v}' for k, v in opts.items())}")
    print(f"# peak: {peak / 1e12 if peak else float('nan'):.4f} TFLOP/s ({peak_src})")
    if not gpu:
        nominal, how = cpu_nominal_peak(a.precision, a.cpu_flops_per_cycle)
        if math.isfinite(nominal) and peak:
            print(f"# nominal CPU peak (not used for MFU): {nominal / 1e12:.4f} TFLOP/s = {how}; "
                  f"MFU against it = MFU x {peak / nominal:.2f}")
    print(f"# MFU = analytic training FLOPs/step x steps/s / peak; paper run = 100,000 x 128 x 128 tokens; "
          f"TPUv2-8 median {TPU_MEDIAN_H} h")
    print(f"{'size':<8} {'model':<22} {'GFLOP/step':>10} {'tokens/s':>12} {'MFU':>7} {'paper run h':>12} "
          f"{'vs TPU med':>10} {'TPU h':>7}  arch (TPU h: the arch's time_to_train)")
    for row in results:
        rows.append(row if isinstance(row, str) else fmt_row(row[0], row[1], row[2], row[3], row[4], tokens_per_step
                                                              if row[1] != "nasbench-bert (long)" else 128 * 128, peak, row[5]))
    if long_line:
        rows.insert(len(rows) - 1, long_line)
    print("\n".join(rows))
    if a.json:
        write_json(Path(a.json), results, peak, peak_src, dev_name, batch, a.seq_len, steps, warm, opts)
    if not gpu:
        print("# GPU figures: not measured here (no CUDA device). On a GPU run: "
              "python bench/bench_pretrain.py --device cuda --accelerated --long-run 2000")


if __name__ == "__main__":
    main()
