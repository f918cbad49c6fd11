"""The builders' subcommands of ``nasbench-bert``: ``build-entry`` and ``publish``.

Registered through the entry point ``nasbench_bert.cli`` (see ``pyproject.toml``), so the
core command line discovers them without importing this package; heavy dependencies
(torch, huggingface_hub's upload API) are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from nasbench_bert.semantics import SEMANTICS_NAMES

console = Console()


def cmd_build_entry(args: argparse.Namespace) -> None:
    from nasbench_bert import Benchmark

    from .entry import build_many

    archs: list[Any] = []
    for a in args.arch:
        if a.isdigit():
            archs.append(Benchmark.load(args.data, progress=not args.quiet).query(int(a), charge=False).arch)
        else:
            archs.append(json.loads(a) if a.lstrip().startswith("{") else a)
    pre = {k: v for k, v in {"steps": args.steps, "batch_size": args.batch_size, "seq_len": args.seq_len,
                             "warmup_steps": args.warmup_steps, "vocab_size": args.vocab_size,
                             "max_documents": args.max_documents, "checkpoint_every": args.checkpoint_every}.items() if v is not None}
    fin = {k: v for k, v in {"epochs": args.epochs, "max_train_examples": args.max_train_examples,
                             "batch_size": args.finetune_batch_size}.items() if v is not None}
    out = build_many(archs, executor=args.executor, ray_address=args.ray_address, corpus=args.corpus, glue=args.glue,
                     tasks=args.tasks.split(",") if args.tasks else None, pretrain_config=pre, finetune_config=fin,
                     results=args.results, workdir=args.workdir, semantics=args.semantics)
    for a, e in zip(archs, out):
        if e is None:
            console.print(f"{a}: claimed by another builder, skipped")
        else:
            console.print(f"{e['arch']}: GLUE {e['scores']['glue']:.2f} ({', '.join(f'{k} {v:.2f}' for k, v in e['scores'].items() if k != 'glue')}), {e['time_to_train']:.0f} s")
    if args.json:
        print(json.dumps(out, indent=1, default=str))


def cmd_publish(args: argparse.Namespace) -> None:
    from .publish import publish, write_pin

    sha = publish(args.repo_id, data=args.data, revision=args.revision, endpoint=args.endpoint, private=args.private,
                  commit_message=args.message)
    console.print(f"published to {args.repo_id}@{args.revision}: commit {sha} (pin this)")
    if args.pin:
        console.print(f"pinned in {write_pin(args.repo_id, sha)}")


def register(sub: Any) -> None:
    """Add this package's subcommands to the ``nasbench-bert`` parser."""
    from .publish import add_arguments

    be = sub.add_parser("build-entry", help="regenerate entries: ELECTRA pretraining + GLUE finetuning (needs the [build] extra)")
    be.add_argument("arch", nargs="+", help="benchmark ids, canonical strings or release JSON")
    be.add_argument("--corpus", default="hf:openwebtext", help="hf:<dataset> or text:<file|folder>")
    be.add_argument("--glue", default="hf:glue", help="hf:glue or a folder of GLUE-format TSVs")
    be.add_argument("--tasks", default=None, help="comma-separated (default all 8)")
    be.add_argument("--steps", type=int, default=None, help="pretraining steps (default 100,000)")
    be.add_argument("--batch-size", type=int, default=None, help="pretraining batch (default 128)")
    be.add_argument("--seq-len", type=int, default=None, help="pretraining sequence length (default 128)")
    be.add_argument("--warmup-steps", type=int, default=None, help="learning-rate warm-up steps (default 10,000)")
    be.add_argument("--vocab-size", type=int, default=None, help="of a locally trained WordPiece (offline)")
    be.add_argument("--max-documents", type=int, default=None, help="read at most this many corpus documents")
    be.add_argument("--checkpoint-every", type=int, default=None, help="steps between checkpoints (default 1,000)")
    be.add_argument("--epochs", type=int, default=None, help="finetuning epochs (default 3; 10 for RTE/STS-B)")
    be.add_argument("--max-train-examples", type=int, default=None, help="finetune on at most this many examples")
    be.add_argument("--finetune-batch-size", type=int, default=None, help="finetuning batch (default 32)")
    be.add_argument("--results", default=None, help="results table folder (skip finished, safe for parallel builders)")
    be.add_argument("--workdir", default=None, help="checkpoints (a killed build resumes)")
    be.add_argument("--semantics", default="as_trained", choices=list(SEMANTICS_NAMES),
                    help="the model to train: as_trained (the benchmark's; default) or as_specified (a corrected benchmark)")
    be.add_argument("--executor", default="local", choices=["local", "ray"], help="one process, or one Ray task per arch")
    be.add_argument("--ray-address", default=None, help="join this Ray cluster (default: a local instance)")
    be.add_argument("--json", action="store_true", help="print the entries as JSON")
    be.set_defaults(fn=cmd_build_entry)
    p = sub.add_parser("publish", help="upload the built tables to a Hub dataset repository as one commit")
    add_arguments(p)
    p.set_defaults(fn=cmd_publish)
