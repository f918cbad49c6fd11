"""ELECTRA pretraining throughput (python bench/bench_pretrain.py [--steps 15]).

Tokens per second of a full ELECTRA step (mask, generator, sampled replacements,
discriminator, backward, AdamW) for a 2-layer and a 4-layer arch, against Hugging Face
transformers' own ELECTRA (ElectraForMaskedLM generator + ElectraForPreTraining
discriminator) of the same size, in the same run, same batch, same threads. Also prints
the estimated wall time of the paper-size run (100,000 steps x 128 x 128 tokens).
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from nasbench_bert.builders.pretrain import PretrainConfig, pretrain
from nasbench_bert.text import load_tokenizer, pack, read_corpus

ROOT = Path(__file__).resolve().parent.parent
ARCHS = {
    "2-layer": "256/SA-SDP-h4-1024x1/SA-SDP-h4-1024x1",
    "4-layer": "256/SA-SDP-h4-1024x1/SA-SDP-h4-1024x1/SA-SDP-h4-1024x1/SA-SDP-h4-1024x1",
}


def hf_throughput(layers: int, batch: torch.Tensor, steps: int, mask_id: int) -> float:
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    torch.manual_seed(0)
    d = ElectraForPreTraining(ElectraConfig(vocab_size=30522, embedding_size=128, hidden_size=256, num_hidden_layers=layers,
                                            num_attention_heads=4, intermediate_size=1024))
    g = ElectraForMaskedLM(ElectraConfig(vocab_size=30522, embedding_size=128, hidden_size=64, num_hidden_layers=layers,
                                         num_attention_heads=1, intermediate_size=256))
    g.electra.embeddings.word_embeddings = d.electra.embeddings.word_embeddings  # shared token embeddings
    params = list({id(p): p for p in [*d.parameters(), *g.parameters()]}.values())
    opt = torch.optim.AdamW(params, lr=5e-4, eps=1e-6, weight_decay=0.01)
    d.train(), g.train()

    def step() -> None:
        masked = torch.rand(batch.shape) < 0.15
        gin = batch.masked_fill(masked, mask_id)
        logits = g(input_ids=gin).logits[masked]
        gl = F.cross_entropy(logits, batch[masked])
        with torch.no_grad():
            s = (logits - torch.log(-torch.log(torch.rand(logits.shape).clamp_min(1e-20)))).argmax(-1)
        din = batch.clone()
        din[masked] = s
        dl = F.binary_cross_entropy_with_logits(d(input_ids=din).logits, (din != batch).float())
        loss = gl + 50 * dl
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    for _ in range(3):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * batch.numel() / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=128)
    a = ap.parse_args()
    rows = list(csv.reader(open(ROOT.parent / "shared" / "upstream" / "glue-rte" / "train.tsv", newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "c.txt"
        corpus.write_text("\n".join(f"{r[1]} {r[2]}" for r in rows))
        docs = read_corpus(f"text:{corpus}")
        tok = load_tokenizer(docs, 30522)
        seqs = list(pack(docs, tok, a.seq_len))[: a.batch_size]
        batch = torch.tensor(seqs)
        print(f"# ELECTRA pretraining throughput, batch {a.batch_size} x {a.seq_len}, {torch.get_num_threads()} threads")
        for name, arch in ARCHS.items():
            cfg = PretrainConfig(steps=a.steps + 3, batch_size=a.batch_size, seq_len=a.seq_len, warmup_steps=2,
                                 corpus=f"text:{corpus}")
            warm = pretrain(arch, PretrainConfig(**{**cfg.__dict__, "steps": 3}), tokenizer=tok)  # noqa: F841 (warm-up)
            ours = pretrain(arch, cfg, tokenizer=tok).tokens_per_second
            hf = hf_throughput(2 if name == "2-layer" else 4, batch, a.steps, tok.mask_id)
            paper_h = 100_000 * 128 * 128 / ours / 3600
            print(f"{name}: nasbench-bert {ours:9,.0f} tok/s | transformers ELECTRA {hf:9,.0f} tok/s (baseline) | "
                  f"ratio {ours / hf:.2f}x (target >= 1) | paper-size run here: {paper_h:,.0f} h")


if __name__ == "__main__":
    main()
