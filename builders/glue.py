"""GLUE finetuning of a pretrained FlexiBERT discriminator, and the official metrics.

Tasks are the 8 the paper uses (no WNLI), read from local GLUE-format TSV folders (the
layout of the GLUE distribution: ``<task>/train.tsv``, ``<task>/dev.tsv``;
``dev_matched.tsv`` for MNLI) or from the ``glue`` dataset on the Hugging Face Hub.

The defaults are the recipe the authors' runs executed (``nas_runner.ipynb`` ->
``run_finetuning.py`` with the pretraining hparams; pinned by
``tests/reference/test_tf_recipe.py``): learning rate 5e-4 (the runner copies the
pretraining rate), batch 32 over 8 TPU replicas (4 examples each, the loss *summed* over
them, gradients clipped per replica at global norm 1.0 and summed), 3 epochs (10 for RTE
and STS-B), ``polynomial_decay`` with a warm-up over the first 10 % of the steps (0 at
step 0), the authors' Adam without bias correction (eps 1e-6, weight decay 0.01 except
LayerNorm and biases), ELECTRA's layer-wise decay 0.8 counted over the config's
``num_hidden_layers`` = 12 (the runner never sets it), MRPC and STS-B trained on both
sentence orders (``double_unordered``), STS-B targets scaled to [0, 1], sequence length
128, a Glorot-uniform task layer on the [CLS] vector. The score of a task is its first
reported metric rounded to 2 decimals: MCC for CoLA, Pearson for STS-B, accuracy for the
others (x 100); ``glue`` is their mean.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.models import SequenceClassifier
from nasbench_bert.models.flexibert import FlexiBERTEncoder

from nasbench_bert.text import TextTokenizer

from nasbench_bert.checks import check_int, check_real

from .accelerator import _check_choice, autocast, check_accelerator_fields, resolve_device, use_attention
from .electra import glorot_uniform_
from .optimization import (
    check_optimizer_fields, learning_rate, make_optimizer, optimizer_groups, replica_gradients, unique_parameters,
)

csv.field_size_limit(1 << 24)


@dataclass(frozen=True)
class Task:
    name: str
    text: tuple[str, ...]          # TSV columns (or 0-based indices for header-less CoLA)
    label: str
    labels: tuple[str, ...] | None  # None: regression
    metric: str                    # the first metric the authors' scorer reports: the task's score
    epochs: int
    dev: str = "dev.tsv"
    header: bool = True
    release_key: str = ""
    double_unordered: bool = False  # trained on both sentence orders (MRPC, STS-B)
    label_max: float = 1.0          # regression targets are divided by it (STS-B: 5, to [0, 1])


TASKS: dict[str, Task] = {
    "cola": Task("cola", ("3",), "1", ("0", "1"), "mcc", 3, header=False, release_key="cola"),
    "mnli": Task("mnli", ("sentence1", "sentence2"), "gold_label", ("contradiction", "entailment", "neutral"), "accuracy", 3, "dev_matched.tsv", release_key="mnli"),
    "mrpc": Task("mrpc", ("#1 String", "#2 String"), "Quality", ("0", "1"), "accuracy", 3, release_key="mrpc",
                 double_unordered=True),
    "qnli": Task("qnli", ("question", "sentence"), "label", ("entailment", "not_entailment"), "accuracy", 3, release_key="qnli"),
    "qqp": Task("qqp", ("question1", "question2"), "is_duplicate", ("0", "1"), "accuracy", 3, release_key="qqp"),
    "rte": Task("rte", ("sentence1", "sentence2"), "label", ("entailment", "not_entailment"), "accuracy", 10, release_key="rte"),
    "sst2": Task("sst2", ("sentence",), "label", ("0", "1"), "accuracy", 3, release_key="sst"),
    "stsb": Task("stsb", ("sentence1", "sentence2"), "score", None, "pearson", 10, release_key="sts",
                 double_unordered=True, label_max=5.0),
}
HUB_LABELS = {"mnli": ("entailment", "neutral", "contradiction"), "qnli": ("entailment", "not_entailment"),
              "rte": ("entailment", "not_entailment")}


# -- metrics (checked against scikit-learn / scipy in the tests) ------------------------------
def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(gold)))


def f1_binary(pred: np.ndarray, gold: np.ndarray) -> float:
    pred, gold = np.asarray(pred), np.asarray(gold)
    tp = float(((pred == 1) & (gold == 1)).sum())
    fp = float(((pred == 1) & (gold == 0)).sum())
    fn = float(((pred == 0) & (gold == 1)).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def mcc(pred: np.ndarray, gold: np.ndarray) -> float:
    """Matthews correlation (binary); 0 when a margin is empty, as scikit-learn does."""
    p, g = np.asarray(pred).astype(float), np.asarray(gold).astype(float)
    tp, tn = ((p == 1) & (g == 1)).sum(), ((p == 0) & (g == 0)).sum()
    fp, fn = ((p == 1) & (g == 0)).sum(), ((p == 0) & (g == 1)).sum()
    den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / den) if den else 0.0


def _rank(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x)


def pearson(pred: np.ndarray, gold: np.ndarray) -> float:
    p, g = np.asarray(pred, float), np.asarray(gold, float)
    p, g = p - p.mean(), g - g.mean()
    den = math.sqrt(float((p * p).sum() * (g * g).sum()))
    return float((p * g).sum() / den) if den else float("nan")


def spearman(pred: np.ndarray, gold: np.ndarray) -> float:
    return pearson(_rank(pred), _rank(gold))


def task_metrics(task: Task, pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    if task.labels is None:
        return {"spearman": spearman(pred, gold), "pearson": pearson(pred, gold)}
    out = {"accuracy": accuracy(pred, gold)}
    if task.name == "cola":
        out["mcc"] = mcc(pred, gold)
    if task.name in ("mrpc", "qqp"):
        out["f1"] = f1_binary(pred, gold)
    return out


# -- data ---------------------------------------------------------------------------------------
def split_path(task: Task, folder: str | Path, split: str) -> Path:
    """The TSV file of ``split`` ('train' or 'dev') of ``task`` in a local GLUE ``folder``:
    ``<folder>/<task>/<file>``, or ``<folder>/<file>`` when ``folder`` is a single task's
    folder. One place, so that the preflight checks the very file the build reads."""
    base = Path(folder)
    if (base / task.name).is_dir():
        base = base / task.name
    return base / (task.dev if split == "dev" else "train.tsv")


def split_problem(task: Task, path: Path) -> str | None:
    """What keeps ``path`` from being read as ``task``'s split, from its first line alone
    (cheap, so a build can check every task before pretraining): missing, unreadable, not
    UTF-8, empty, or without the task's columns; None when it looks right."""
    if not path.is_file():
        return f"task {task.name!r} has no {path.name} in {path.parent}"
    try:
        with open(path, newline="", encoding="utf-8") as f:
            first = f.readline()
    except UnicodeDecodeError as e:
        return f"task {task.name!r}: {path} is not UTF-8 text (byte {e.start}: {e.reason})"
    except OSError as e:
        return f"task {task.name!r}: {path} cannot be read ({e.strerror})"
    if not first.strip():
        return f"task {task.name!r}: {path} is empty"
    head = next(csv.reader([first], delimiter="\t", quoting=csv.QUOTE_NONE))
    if task.header:
        missing = [c for c in (*task.text, task.label) if c not in head]
        if missing:
            return f"task {task.name!r}: {path} lacks column(s) {missing}; it has {head}"
    elif len(head) <= max(int(c) for c in (*task.text, task.label)):
        return f"task {task.name!r}: {path} has {len(head)} column(s); a header-less {task.name} row needs " \
               f"{max(int(c) for c in (*task.text, task.label)) + 1}"
    elif task.labels is not None and head[int(task.label)] not in task.labels:
        return f"task {task.name!r}: {path}'s first row has label {head[int(task.label)]!r} in column {task.label}; " \
               f"allowed: {list(task.labels)}"
    return None


def read_split(task: Task, source: str | Path, split: str) -> list[tuple[tuple[str, ...], Any]]:
    """Examples ``((text_a[, text_b]), label)`` of ``split`` ('train' or 'dev')."""
    src = str(source)
    if src.startswith("hf:"):
        import datasets

        ds = datasets.load_dataset("glue", task.name, split="train" if split == "train" else ("validation_matched" if task.name == "mnli" else "validation"))
        cols = [c for c in ("sentence", "sentence1", "sentence2", "question", "question1", "question2", "premise", "hypothesis") if c in ds.column_names]
        out = []
        for ex in ds:
            lab = ex["label"]
            lab = float(lab) if task.labels is None else (HUB_LABELS[task.name][lab] if task.name in HUB_LABELS else str(lab))
            out.append((tuple(ex[c] for c in cols), lab))
        return out
    path = split_path(task, src, split)
    folder = path.parent
    if not path.is_file():
        raise FileNotFoundError(f"task {task.name!r}: no {path.name} in {folder} (GLUE TSV layout expected)")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    except UnicodeDecodeError as e:
        raise InvalidArgumentError(f"task {task.name!r}: {path} is not UTF-8 text (byte {e.start}: {e.reason}); allowed: a "
                                   "GLUE TSV file in UTF-8 (re-encode the file)") from None
    if not rows:
        raise ValueError(f"task {task.name!r}: {path} is empty")
    if task.header:
        head, rows = rows[0], rows[1:]
        missing = [c for c in (*task.text, task.label) if c not in head]
        if missing:
            raise ValueError(f"task {task.name!r}: {path} lacks column(s) {missing}; it has {head}")
        idx = [head.index(c) for c in task.text]
        li = head.index(task.label)
    else:
        idx, li = [int(c) for c in task.text], int(task.label)
    out = []
    for r in rows:
        if len(r) <= max(*idx, li):
            continue
        lab = r[li]
        if task.labels is None:
            out.append((tuple(r[i] for i in idx), float(lab)))
        elif lab in task.labels:
            out.append((tuple(r[i] for i in idx), lab))
    if not out:
        raise ValueError(f"task {task.name!r}: no labelled examples in {path}")
    return out


def _encode(examples: list[tuple[tuple[str, ...], Any]], task: Task, tok: TextTokenizer, max_len: int) -> tuple[torch.Tensor, ...]:
    ids = torch.full((len(examples), max_len), tok.pad_id, dtype=torch.long)
    tt = torch.zeros_like(ids)
    for i, (texts, _) in enumerate(examples):
        a, t = tok.encode(texts[0], texts[1] if len(texts) > 1 else None, max_len)
        ids[i, : len(a)] = torch.tensor(a)
        tt[i, : len(t)] = torch.tensor(t)
    y = torch.tensor([lab / task.label_max for _, lab in examples], dtype=torch.float32) if task.labels is None else \
        torch.tensor([task.labels.index(lab) for _, lab in examples], dtype=torch.long)
    return ids, (ids != tok.pad_id).long(), tt, y


#: the finetuning options for a GPU run (docs/builders.md, "Accelerators"); no
#: ``compile``: a GLUE task is too short to repay compiling for every batch shape
ACCELERATED_FINETUNE: dict[str, Any] = {"precision": "bf16", "attention": "sdpa", "adamw": "fused"}
#: FinetuneConfig fields that say how a run is executed, not what it computes (not in the recipe key)
FINETUNE_EXECUTION_FIELDS = ("attention", "adamw", "compile")


#: the classifier heads :class:`FinetuneConfig` builds
HEADS: tuple[str, ...] = ("electra_tf", "electra_hf")


@dataclass
class FinetuneConfig:
    """GLUE finetuning settings. The defaults are the authors' executed recipe (module doc).

    ``decay_layers``: the layer count in ELECTRA's layer-wise learning-rate decay
    (``_get_layer_lrs``: the task layer at ``lr``, encoder layer i (0-based) at
    ``lr * layer_decay ** (n + 1 - i)``, the embeddings and their projection at
    ``lr * layer_decay ** (n + 2)``). The benchmark's runs used the config's
    ``num_hidden_layers`` = 12 whatever the arch's depth (the runner never set it);
    ``None`` uses the arch's depth instead (a deviation). ``head``: ``"electra_tf"`` (dropout
    + one Glorot-initialised Linear, as the TF finetuning builds it) or ``"electra_hf"``
    (transformers' head; a deviation). ``replicas``: the TPU cores the batch was split over
    (each sums its examples' losses and clips its gradient on its own; the clipped
    gradients are summed). ``double_unordered``: train MRPC and STS-B on both sentence orders.

    Accelerator options (docs/builders.md, "Accelerators"), off by default as in
    :class:`~builders.pretrain.PretrainConfig`: ``precision`` ("fp32" | "bf16"
    autocast), ``attention`` ("eager" | "sdpa"), ``adamw`` ("default" | "foreach" |
    "fused") and ``compile`` (``torch.compile`` of the classifier).
    """

    learning_rate: float = 5e-4
    layer_decay: float = 0.8
    decay_layers: int | None = 12
    head: str = "electra_tf"
    batch_size: int = 32
    epochs: int | None = None  # None: the task's default (3; 10 for RTE and STS-B)
    warmup_fraction: float = 0.1
    optimizer: str = "adam_weight_decay"
    weight_decay: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-6
    max_grad_norm: float = 1.0
    replicas: int = 8
    double_unordered: bool = True
    max_seq_len: int = 128
    max_train_examples: int | None = None
    max_dev_examples: int | None = None
    seed: int = 0
    precision: str = "fp32"
    attention: str = "eager"
    adamw: str = "default"
    compile: bool = False

    def __post_init__(self) -> None:
        check_real("learning_rate", self.learning_rate, low=0, high=1, low_open=True)
        check_real("layer_decay", self.layer_decay, low=0, high=1, low_open=True)
        check_int("decay_layers", self.decay_layers, low=1, none=True)
        _check_choice("head", self.head, HEADS)
        check_int("batch_size", self.batch_size, low=1)
        check_int("epochs", self.epochs, low=1, none=True)
        check_real("warmup_fraction", self.warmup_fraction, low=0, high=1)
        check_real("weight_decay", self.weight_decay, low=0, high=1)
        check_optimizer_fields(self)
        if self.batch_size % self.replicas:
            raise InvalidArgumentError(f"batch_size = {self.batch_size} is not allowed with replicas = {self.replicas}; "
                                       "allowed: a multiple of replicas")
        _check_choice("double_unordered", self.double_unordered, (False, True))
        check_int("max_seq_len", self.max_seq_len, low=8, high=512)
        check_int("max_train_examples", self.max_train_examples, low=1, none=True)
        check_int("max_dev_examples", self.max_dev_examples, low=1, none=True)
        check_accelerator_fields(self)


def layer_scales(model: SequenceClassifier, decay: float, n_layers: int | None = None) -> list[tuple[float, torch.nn.Module]]:
    """ELECTRA's layer-wise learning-rate factors (``_get_layer_lrs`` of its
    ``optimization.py``) as ``(factor, module)``: with n layers, the head at 1, encoder layer
    i (0-based) at ``decay ** (n + 1 - i)``, the embeddings (with their projection) at
    ``decay ** (n + 2)``. ``n_layers`` defaults to the encoder's depth."""
    enc: FlexiBERTEncoder = model.encoder
    L = len(enc.layers) if n_layers is None else n_layers
    return ([(1.0, model.head)] + [(decay ** (L + 1 - i), layer) for i, layer in enumerate(enc.layers)]
            + [(decay ** (L + 2), enc.embeddings)])


def layerwise_groups(model: SequenceClassifier, lr: float, decay: float, weight_decay: float,
                     n_layers: int | None = None) -> list[dict[str, Any]]:
    """Parameter groups with ELECTRA's layer-wise learning rates (:func:`layer_scales`), each
    split by weight decay (LayerNorm parameters and biases get none)."""
    groups = optimizer_groups(model, layer_scales(model, decay, n_layers))
    for g in groups:
        g["lr"] = lr * g["lr_scale"]
        g["weight_decay"] = weight_decay if g["decay"] else 0.0
    return groups


def classifier(encoder: FlexiBERTEncoder, task: Task, cfg: FinetuneConfig) -> SequenceClassifier:
    """The encoder with the task's head, initialised as the TF code does (the output layer
    Glorot-uniform from a generator seeded by ``cfg.seed``, its bias 0)."""
    import copy

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = SequenceClassifier(copy.deepcopy(encoder), 1 if task.labels is None else len(task.labels), head=cfg.head)
        if cfg.head == "electra_tf":
            with torch.no_grad():
                glorot_uniform_(model.head[-1].weight)
    return use_attention(model, cfg.attention)


def task_loss(task: Task, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The TF task's loss of a replica's examples, *summed* over them (``FinetuningModel``
    sums the per-example losses): cross-entropy, or the squared error of the (scaled) target."""
    if task.labels is None:
        return ((out.squeeze(-1) - y) ** 2).sum()
    return F.cross_entropy(out, y, reduction="sum")


def training_examples(task: Task, train: list[tuple[tuple[str, ...], Any]], cfg: FinetuneConfig,
                      ) -> list[tuple[tuple[str, ...], Any]]:
    """The examples the task trains on: ``train``, then - for MRPC and STS-B with
    ``double_unordered`` - each pair again with its sentences swapped (as ``MRPC`` and
    ``STS._create_examples`` append them)."""
    if cfg.double_unordered and task.double_unordered:
        return train + [((t[1], t[0]), lab) for t, lab in train]
    return list(train)


def finetune_steps(n_examples: int, epochs: int, batch_size: int) -> int:
    """The reference's step count: the examples padded to a multiple of the batch, then
    ``int(n_padded // batch_size * epochs)``."""
    return int(math.ceil(n_examples / batch_size) * epochs)


def finetune(encoder: FlexiBERTEncoder, task_name: str, data: str | Path, tok: TextTokenizer,
             cfg: FinetuneConfig | None = None, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Finetune a copy of ``encoder`` on one task; returns the score (the authors' rounding),
    dev metrics, the mean training loss of the last epoch, and timings. ``device``: "cpu",
    "cuda[:<index>]" or "auto"."""
    cfg = cfg or FinetuneConfig()
    dev = resolve_device(device)
    if task_name not in TASKS:
        raise InvalidArgumentError(f"task = {task_name!r} is not allowed; allowed values: {sorted(TASKS)}")
    task = TASKS[task_name]
    train = read_split(task, data, "train")
    dev_set = read_split(task, data, "dev")
    rng = np.random.default_rng(cfg.seed)
    if cfg.max_train_examples:
        train = [train[i] for i in sorted(rng.permutation(len(train))[: cfg.max_train_examples])]
    if cfg.max_dev_examples:
        dev_set = dev_set[: cfg.max_dev_examples]
    n_read = len(train)
    train = training_examples(task, train, cfg)
    Xtr = _encode(train, task, tok, cfg.max_seq_len)
    Xdv = _encode(dev_set, task, tok, cfg.max_seq_len)
    model = classifier(encoder, task, cfg).to(dev)
    opt = make_optimizer(model, cfg, layer_scales(model, cfg.layer_decay, cfg.decay_layers))
    forward = torch.compile(model) if cfg.compile else model
    amp = autocast(dev, cfg.precision)
    nb = dev.type == "cuda"
    epochs = cfg.epochs or task.epochs
    per_epoch = math.ceil(len(train) / cfg.batch_size)
    steps = finetune_steps(len(train), epochs, cfg.batch_size)
    warmup = steps * cfg.warmup_fraction
    params = unique_parameters(model)
    shard = cfg.batch_size // cfg.replicas
    t0 = time.perf_counter()
    model.train()
    epoch_loss = torch.zeros((), device=dev)
    step = 0
    for ep in range(epochs):
        perm = torch.from_numpy(np.random.default_rng([cfg.seed, ep]).permutation(len(train)))
        epoch_loss = torch.zeros((), device=dev)  # summed on the device: no sync per step
        torch.manual_seed(cfg.seed * 1_000_003 + ep)  # dropout
        for s in range(0, len(train), cfg.batch_size):
            b = perm[s : s + cfg.batch_size]
            ids, m, tt, y = (x[b].to(dev, non_blocking=nb) for x in Xtr)

            def losses() -> Any:
                for r in range(0, len(b), shard):  # a replica with no examples adds a zero gradient
                    with amp:
                        out = forward(ids[r : r + shard], m[r : r + shard], tt[r : r + shard])
                    loss = task_loss(task, out.float(), y[r : r + shard])
                    nonlocal epoch_loss
                    epoch_loss = epoch_loss + loss.detach() / len(b)
                    yield loss

            finetune_step(model, opt, params, losses(), cfg, step, steps, warmup)
            step += 1
    train_loss = float(epoch_loss) / per_epoch
    train_s = time.perf_counter() - t0
    model.eval()
    preds = []
    with torch.no_grad():
        for s in range(0, len(dev_set), 128):
            ids, m, tt, _ = (x[s : s + 128].to(dev, non_blocking=nb) for x in Xdv)
            with amp:
                out = forward(ids, m, tt)
            out = out.float()
            preds.append(out.squeeze(-1).cpu() if task.labels is None else out.argmax(-1).cpu())
    pred = torch.cat(preds).numpy()
    gold = Xdv[3].numpy()
    metrics = task_metrics(task, pred, gold)
    return {"task": task.name, "score": task_score(task, metrics), "metrics": metrics, "train_examples_read": n_read,
            "train_examples": len(train), "dev_examples": len(dev_set), "epochs": epochs, "steps": steps,
            "warmup_steps": warmup, "train_loss": train_loss, "seconds": train_s}


def finetune_step(model: torch.nn.Module, opt: Any, params: list[torch.nn.Parameter], losses: Any, cfg: FinetuneConfig,
                  step: int, total: int, warmup: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimiser step: the replicas' ``losses`` (an iterable, computed one at a time)
    give per-replica clipped gradients that are summed; the update runs at
    ``learning_rate(step, cfg.learning_rate, total, warmup)`` times each group's layer
    factor. Returns the per-replica gradient norms before and after clipping."""
    grads, norms, clipped = replica_gradients(params, losses, cfg.max_grad_norm)
    for p, g in zip(params, grads):
        p.grad = g
    opt.step(learning_rate(step, cfg.learning_rate, total, warmup), step + 1)
    for p in params:
        p.grad = None
    return norms, clipped


def task_score(task: Task, metrics: dict[str, float]) -> float:
    """The task's benchmark score: its first reported metric x 100 rounded to 2 decimals
    (``write_results`` prints ``{:.2f}``, the runner parses the first number)."""
    return float(f"{100 * metrics[task.metric]:.2f}")
