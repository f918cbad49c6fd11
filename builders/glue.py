"""GLUE finetuning of a pretrained FlexiBERT discriminator, and the official metrics.

Tasks are the 8 the paper uses (no WNLI), read from local GLUE-format TSV folders (the
layout of the GLUE distribution: ``<task>/train.tsv``, ``<task>/dev.tsv``;
``dev_matched.tsv`` for MNLI) or from the ``glue`` dataset on the Hugging Face Hub.
Defaults follow the paper's Table 3 (ELECTRA-Small finetuning): learning rate 3e-4 with
layer-wise decay 0.8, batch 32, 3 epochs (10 for RTE and STS-B), 10 % warm-up, weight
decay 0.01, sequence length 128.
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

from .pretrain import autocast, check_accelerator_fields, make_adamw, resolve_device, use_attention

csv.field_size_limit(1 << 24)


@dataclass(frozen=True)
class Task:
    name: str
    text: tuple[str, ...]          # TSV columns (or 0-based indices for header-less CoLA)
    label: str
    labels: tuple[str, ...] | None  # None: regression
    metric: str
    epochs: int
    dev: str = "dev.tsv"
    header: bool = True
    release_key: str = ""


TASKS: dict[str, Task] = {
    "cola": Task("cola", ("3",), "1", ("0", "1"), "mcc", 3, header=False, release_key="cola"),
    "mnli": Task("mnli", ("sentence1", "sentence2"), "gold_label", ("contradiction", "entailment", "neutral"), "accuracy", 3, "dev_matched.tsv", release_key="mnli"),
    "mrpc": Task("mrpc", ("#1 String", "#2 String"), "Quality", ("0", "1"), "accuracy", 3, release_key="mrpc"),
    "qnli": Task("qnli", ("question", "sentence"), "label", ("entailment", "not_entailment"), "accuracy", 3, release_key="qnli"),
    "qqp": Task("qqp", ("question1", "question2"), "is_duplicate", ("0", "1"), "accuracy", 3, release_key="qqp"),
    "rte": Task("rte", ("sentence1", "sentence2"), "label", ("entailment", "not_entailment"), "accuracy", 10, release_key="rte"),
    "sst2": Task("sst2", ("sentence",), "label", ("0", "1"), "accuracy", 3, release_key="sst"),
    "stsb": Task("stsb", ("sentence1", "sentence2"), "score", None, "spearman", 10, release_key="sts"),
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
    folder = Path(src)
    if (folder / task.name).is_dir():
        folder = folder / task.name
    path = folder / (task.dev if split == "dev" else "train.tsv")
    if not path.is_file():
        raise FileNotFoundError(f"task {task.name!r}: no {path.name} in {folder} (GLUE TSV layout expected)")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    except UnicodeDecodeError as e:
        raise ValueError(f"task {task.name!r}: {path} is not UTF-8 text (byte {e.start}: {e.reason}); GLUE TSVs are "
                         "UTF-8, re-encode the file") from None
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
    y = torch.tensor([lab for _, lab in examples], dtype=torch.float32) if task.labels is None else \
        torch.tensor([task.labels.index(lab) for _, lab in examples], dtype=torch.long)
    return ids, (ids != tok.pad_id).long(), tt, y


#: the finetuning options for a GPU run (docs/builders.md, "Accelerators"); no
#: ``compile``: a GLUE task is too short to repay compiling for every batch shape
ACCELERATED_FINETUNE: dict[str, Any] = {"precision": "bf16", "attention": "sdpa", "adamw": "fused"}


#: the classifier heads :class:`FinetuneConfig` builds
HEADS: tuple[str, ...] = ("electra_tf", "electra_hf")


@dataclass
class FinetuneConfig:
    """GLUE finetuning settings. The defaults are the paper's Table 3 (ELECTRA-Small).

    ``decay_layers``: the layer count in ELECTRA's layer-wise learning-rate decay
    (layer i gets ``lr * layer_decay ** (n + 1 - i)``, the embeddings
    ``lr * layer_decay ** (n + 2)``); ``None`` uses the arch's depth. The benchmark's
    runs used 12 (the config default the runner never overrode) and the pretraining
    rate 5e-4: :func:`builders.entry.build_entry` applies that recipe for
    ``semantics="as_trained"``. ``head``: ``"electra_tf"`` (dropout + one Linear, as
    ELECTRA's TF finetuning builds it) or ``"electra_hf"`` (transformers' head).

    Accelerator options (docs/builders.md, "Accelerators"), off by default as in
    :class:`~builders.pretrain.PretrainConfig`: ``precision`` ("fp32" | "bf16"
    autocast), ``attention`` ("eager" | "sdpa"), ``adamw`` ("default" | "foreach" |
    "fused") and ``compile`` (``torch.compile`` of the classifier).
    """

    learning_rate: float = 3e-4
    layer_decay: float = 0.8
    decay_layers: int | None = None
    head: str = "electra_tf"
    batch_size: int = 32
    epochs: int | None = None  # None: the task's default (3; 10 for RTE and STS-B)
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    max_seq_len: int = 128
    max_train_examples: int | None = None
    max_dev_examples: int | None = None
    seed: int = 0
    precision: str = "fp32"
    attention: str = "eager"
    adamw: str = "default"
    compile: bool = False

    def __post_init__(self) -> None:
        check_accelerator_fields(self)
        for f, low, none in (("batch_size", 1, False), ("epochs", 1, True), ("max_train_examples", 1, True),
                             ("max_dev_examples", 1, True), ("decay_layers", 1, True), ("max_seq_len", 8, False)):
            v = getattr(self, f)
            if v is None and none:
                continue
            if not isinstance(v, int) or isinstance(v, bool) or v < low or (f == "max_seq_len" and v > 512):
                allowed = f"an integer >= {low}" if f != "max_seq_len" else "an integer in 8 ... 512"
                raise InvalidArgumentError(f"{f} = {v!r} is not allowed; allowed: {'None or ' if none else ''}{allowed}")
        for f, zero_ok in (("learning_rate", False), ("layer_decay", False), ("warmup_fraction", True), ("weight_decay", True)):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v if zero_ok else 0 < v) or v > 1:
                raise InvalidArgumentError(f"{f} = {v!r} is not allowed; allowed: a number in {'[0' if zero_ok else '(0'}, 1]")
        if self.head not in HEADS:
            raise InvalidArgumentError(f"head = {self.head!r} is not allowed; allowed values: {list(HEADS)}")


def layerwise_groups(model: SequenceClassifier, lr: float, decay: float, weight_decay: float,
                     n_layers: int | None = None) -> list[dict[str, Any]]:
    """Parameter groups with ELECTRA's layer-wise learning rates (``_get_layer_lrs`` of
    its ``optimization.py``): with n layers, the head at ``lr``, encoder layer i at
    ``lr * decay ** (n + 1 - i)``, the embeddings at ``lr * decay ** (n + 2)``.
    ``n_layers`` defaults to the encoder's depth."""
    enc: FlexiBERTEncoder = model.encoder
    L = len(enc.layers) if n_layers is None else n_layers
    groups: list[dict[str, Any]] = []

    def add(params: list[torch.nn.Parameter], scale: float) -> None:
        dec = [p for p in params if p.ndim >= 2]
        nod = [p for p in params if p.ndim < 2]
        groups.append({"params": dec, "lr": lr * scale, "weight_decay": weight_decay, "lr_scale": scale})
        groups.append({"params": nod, "lr": lr * scale, "weight_decay": 0.0, "lr_scale": scale})

    add(list(model.head.parameters()), 1.0)
    for i, layer in enumerate(enc.layers):
        add(list(layer.parameters()), decay ** (L + 1 - i))
    add(list(enc.embeddings.parameters()), decay ** (L + 2))
    return [g for g in groups if g["params"]]


def finetune(encoder: FlexiBERTEncoder, task_name: str, data: str | Path, tok: TextTokenizer,
             cfg: FinetuneConfig | None = None, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Finetune a copy of ``encoder`` on one task; returns dev metrics, the mean training
    loss of the last epoch, and timings. ``device``: "cpu", "cuda[:<index>]" or "auto"."""
    import copy

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
    Xtr = _encode(train, task, tok, cfg.max_seq_len)
    Xdv = _encode(dev_set, task, tok, cfg.max_seq_len)
    torch.manual_seed(cfg.seed)
    model = SequenceClassifier(copy.deepcopy(encoder), 1 if task.labels is None else len(task.labels), head=cfg.head).to(dev)
    use_attention(model, cfg.attention)
    groups = layerwise_groups(model, cfg.learning_rate, cfg.layer_decay, cfg.weight_decay, cfg.decay_layers)
    opt = make_adamw(groups, cfg.learning_rate, 1e-8, cfg.adamw)  # torch's default eps, as before
    forward = torch.compile(model) if cfg.compile else model
    amp = autocast(dev, cfg.precision)
    nb = dev.type == "cuda"
    epochs = cfg.epochs or task.epochs
    steps = epochs * math.ceil(len(train) / cfg.batch_size)
    warm = max(1, int(cfg.warmup_fraction * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (steps - s) / max(1, steps - warm)))
    t0 = time.perf_counter()
    model.train()
    epoch_loss = torch.zeros((), device=dev)
    for ep in range(epochs):
        perm = torch.from_numpy(np.random.default_rng([cfg.seed, ep]).permutation(len(train)))
        epoch_loss = torch.zeros((), device=dev)  # summed on the device: no sync per step
        for s in range(0, len(train), cfg.batch_size):
            b = perm[s : s + cfg.batch_size]
            ids, m, tt, y = (x[b].to(dev, non_blocking=nb) for x in Xtr)
            with amp:
                out = forward(ids, m, tt)
            out = out.float()
            loss = F.mse_loss(out.squeeze(-1), y) if task.labels is None else F.cross_entropy(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            epoch_loss += loss.detach()
    train_loss = float(epoch_loss) / math.ceil(len(train) / cfg.batch_size)
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
    return {"task": task.name, "score": 100 * metrics[task.metric if task.metric != "mcc" else "mcc"], "metrics": metrics,
            "train_examples": len(train), "dev_examples": len(dev_set), "epochs": epochs, "steps": steps,
            "train_loss": train_loss, "seconds": train_s}
