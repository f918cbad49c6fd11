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
from rich.text import Text

from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.semantics import SEMANTICS_NAMES
from nasbench_bert.slurm import add_arguments as add_slurm_arguments
from nasbench_bert.slurm import from_arguments as slurm_resources

#: plain text: the lines echo user paths and arch strings, which rich's markup and emoji
#: codes would rewrite (``[bold]``, ``:thumbs_up:``, the ``:b:`` of ``a:b:c``)
console = Console(soft_wrap=True, markup=False, emoji=False)


def cmd_build_entry(args: argparse.Namespace) -> None:
    slurm = slurm_resources(args)  # the --slurm-* options before anything is imported, loaded or built
    from nasbench_bert import Benchmark

    from .entry import build_many
    from .preflight import preflight
    from .glue import TASKS

    archs: list[Any] = []
    for a in args.arch:
        if a.isascii() and a.isdigit():
            archs.append(Benchmark.load(args.data, progress=not args.quiet).query(int(a), charge=False).arch)
        elif a.lstrip().startswith("{"):
            try:
                archs.append(json.loads(a))
            except ValueError as e:
                raise InvalidArgumentError(f"arch = {a!r} is not valid JSON ({e}); give an id, a canonical arch "
                                           "string or a release dict") from None
        else:
            archs.append(a)
    pre = {k: v for k, v in {"steps": args.steps, "batch_size": args.batch_size, "seq_len": args.seq_len,
                             "warmup_steps": args.warmup_steps, "vocab_size": args.vocab_size,
                             "max_documents": args.max_documents, "checkpoint_every": args.checkpoint_every}.items() if v is not None}
    fin = {k: v for k, v in {"epochs": args.epochs, "max_train_examples": args.max_train_examples,
                             "batch_size": args.finetune_batch_size}.items() if v is not None}
    pre, fin = accelerator_options(args, pre, fin)
    tasks = None
    if args.tasks is not None:
        tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
        if not tasks:
            raise InvalidArgumentError(f"--tasks = {args.tasks!r} names no task; allowed: comma-separated names of "
                                       f"{sorted(TASKS)}, or leave it out for all 8")
    # every input checked (and the recipe key made) before any work or any folder is made:
    # corpus, GLUE files of each task, results and work folders, recipe fields, device
    # (builders.preflight). A rerun of the same recipe is "skipped", a changed recipe
    # (steps, tasks, semantics, ...) is a new entry
    recipe = preflight(archs, corpus=args.corpus, glue=args.glue, tasks=tasks, pretrain_config=pre, finetune_config=fin,
                       results=args.results, workdir=args.workdir, semantics=args.semantics, device=args.device,
                       executor=args.executor)
    done_before: set[int] = set()
    if args.results:
        from .results import ResultsTable

        table = ResultsTable(args.results)
        done_before = {i for i, a in enumerate(archs) if table.has(a, recipe.key)}
    todo = len(archs) - len(done_before)
    with console.status(Text(f"building {todo} entr{'y' if todo == 1 else 'ies'} ({len(done_before)} already built): "
                             "pretraining, then finetuning on each GLUE task")):  # a str status would be parsed as markup
        out = build_many(archs, executor=args.executor, ray_address=args.ray_address, corpus=args.corpus, glue=args.glue,
                         tasks=tasks, pretrain_config=pre, finetune_config=fin,
                         results=args.results, workdir=args.workdir, semantics=args.semantics, device=args.device,
                         slurm=slurm,
                         **({"gpus_per_arch": args.gpus_per_arch} if args.gpus_per_arch is not None else {}),
                         **({"cpus_per_arch": args.cpus_per_arch} if args.cpus_per_arch is not None else {}))
    for i, (a, e) in enumerate(zip(archs, out)):
        if i in done_before:
            console.print(f"{a}: skipped: already built with this recipe ({recipe.key}) in {args.results}")
        elif e is None:
            console.print(f"{a}: claimed by another builder, skipped")
        else:
            console.print(f"{e['arch']}: GLUE {e['scores']['glue']:.2f} ({', '.join(f'{k} {v:.2f}' for k, v in e['scores'].items() if k != 'glue')}), {e['time_to_train']:.0f} s")
    if args.json:
        print(json.dumps(out, indent=1, default=str))


def accelerator_options(args: argparse.Namespace, pre: dict[str, Any],
                        fin: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The accelerator flags as ``pretrain_config`` / ``finetune_config`` entries.

    ``--accelerated`` starts from the builders' GPU sets (``accelerator.ACCELERATED``,
    ``glue.ACCELERATED_FINETUNE``); a flag given explicitly overrides it, so
    ``--accelerated --no-compile`` is the GPU set without compilation. Pretraining and
    finetuning get the same precision, attention and AdamW; ``--compile`` applies to
    pretraining only (a GLUE task is too short to repay compiling).
    """
    from .accelerator import ACCELERATED
    from .glue import ACCELERATED_FINETUNE

    p = dict(ACCELERATED) if args.accelerated else {}
    f = dict(ACCELERATED_FINETUNE) if args.accelerated else {}
    for key in ("precision", "attention", "adamw"):
        if getattr(args, key) is not None:
            p[key] = f[key] = getattr(args, key)
    for key in ("compile", "pretokenized", "prefetch", "checkpoint_minutes"):
        if getattr(args, key) is not None:
            p[key] = getattr(args, key)
    return {**p, **pre}, {**f, **fin}


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
    be.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                    help="one process, one Ray task per arch, or a SLURM job array (one array task per arch)")
    be.add_argument("--ray-address", default=None, help="join this Ray cluster (default: a local instance)")
    add_slurm_arguments(be)
    acc = be.add_argument_group("accelerators", "docs/builders.md, 'Accelerators'; all off by default (the plain fp32 loop)")
    acc.add_argument("--device", default=None, help="auto (default: a GPU when there is one), cpu, cuda or cuda:<index>")
    acc.add_argument("--accelerated", action="store_true",
                     help="the GPU set: bf16, SDPA, fused AdamW, compile, memory-mapped corpus, prefetch 4, checkpoint every 10 min")
    acc.add_argument("--precision", default=None, choices=["fp32", "bf16"], help="bf16: autocast with fp32 master weights")
    acc.add_argument("--attention", default=None, choices=["eager", "sdpa"], help="sdpa: scaled_dot_product_attention")
    acc.add_argument("--adamw", default=None, choices=["default", "foreach", "fused"], help="torch's AdamW implementation")
    acc.add_argument("--compile", default=None, action=argparse.BooleanOptionalAction, help="torch.compile the encoders")
    acc.add_argument("--pretokenized", default=None, action=argparse.BooleanOptionalAction,
                     help="pack the corpus once into a memory-mapped file in the user cache")
    acc.add_argument("--prefetch", type=int, default=None, help="batches a background thread makes ahead (default 0)")
    acc.add_argument("--checkpoint-minutes", type=float, default=None, help="also checkpoint after this much wall time")
    acc.add_argument("--gpus-per-arch", type=float, default=None,
                     help="Ray: GPUs per arch's task (default 1 when the cluster has GPUs or --device cuda; 0.5 packs two)")
    acc.add_argument("--cpus-per-arch", type=float, default=None, help="Ray: CPUs per arch's task (default 1)")
    be.add_argument("--json", action="store_true", help="print the entries as JSON")
    be.set_defaults(fn=cmd_build_entry)
    p = sub.add_parser("publish", help="upload the built tables to a Hub dataset repository as one commit")
    add_arguments(p)
    p.set_defaults(fn=cmd_publish)
