"""ELECTRA replaced-token-detection pretraining of a FlexiBERT arch, resumable, with the
training recipe of the authors' TensorFlow code step for step.

The recipe (``tensorflow-model/run_pretraining.py``, ``model/optimization.py``,
``pretrain/pretrain_helpers.py`` in the upstream release, executed against this module by
``tests/reference/test_tf_recipe.py``):

* **data**: batches of 128 sequences of 128 tokens; ELECTRA's dynamic masking
  (:func:`.corpus.electra_mask`): ``round(0.15 n)`` positions per sequence (at most 19),
  drawn with replacement among the real tokens other than [CLS], [SEP], [MASK]; 85 % of
  them become [MASK], the rest keep their token;
* **model**: ``ElectraPair(arch, semantics)`` (by default ``as_trained``, the model the TF
  code built), with the TF initialisers: truncated normal(0.02) everywhere except the
  embedding projections and the discriminator's output layer, which ``tf.layers.dense``
  initialises Glorot-uniform (:func:`apply_recipe_init`); dropout 0.1;
* **loss**: generator MLM loss (mean over the used slots) + 50 x discriminator loss (mean
  over the real tokens); replacements sampled from the generator by Gumbel-max;
* **optimiser**: ``AdamWeightDecayOptimizer`` - Adam *without bias correction*, beta
  0.9/0.999, eps 1e-6, decoupled weight decay 0.01 except for LayerNorm parameters and
  biases (:class:`RecipeOptimizer`);
* **schedule**: ``polynomial_decay(5e-4, step, 100000, power=1) * min(1, step / 10000)``
  (:func:`learning_rate`): 0 at step 0, ``lr (1 - W/T)`` at the end of warm-up, not ``lr``;
* **replicas**: the runs used a TPUv2-8 (``num_tpu_cores = 8``): each of the 8 cores took 16
  of the 128 sequences, computed its own losses and gradients, clipped them at global norm
  1.0 on its own, and the 8 clipped gradients were summed (``CrossShardOptimizer``'s
  ``cross_replica_sum``; ``create_optimizer`` takes gradients with ``tf.gradients``, so the
  loss is never divided by the replica count). ``replicas=8`` does exactly that.

Deviations are explicit options that the entry records: ``optimizer="adamw"`` (torch's
AdamW, with bias correction), ``replicas=1`` (one global clip), ``precision="bf16"``.

Reproducibility: the batch, the masking noise, the generator's samples and dropout at step
``s`` are all drawn from generators seeded by ``(seed, s)``, and a checkpoint stores model,
optimiser and the loss history. A run killed at any point and restarted from its last
checkpoint therefore produces exactly the losses of an uninterrupted run (on CPU, with any
of the options below; on a GPU the random streams are the same but reductions are not
bit-reproducible, see docs/builders.md, "Accelerators").

Accelerator options (all off by default, which gives exactly the losses of the plain
fp32 loop): ``precision="bf16"`` (autocast, fp32 master weights), ``attention="sdpa"``
(``scaled_dot_product_attention``), ``adamw="foreach"`` / ``"fused"`` (torch's multi-tensor
or fused AdamW kernels running the recipe's optimiser), ``compile=True``
(``torch.compile`` of both encoders), ``pretokenized=True`` (a memory-mapped corpus,
:mod:`.corpus`), ``prefetch=n`` (a background thread making batches ahead) and
``checkpoint_minutes`` (a cadence in wall time besides ``checkpoint_every`` steps).
:data:`ACCELERATED` holds the set meant for GPUs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import torch
import torch.nn.functional as F

from nasbench_bert.checks import check_int, check_real
from nasbench_bert.errors import InvalidArgumentError
from nasbench_bert.models import ElectraPair
from nasbench_bert.models.flexibert import ATTENTION_IMPLS as ATTENTION_IMPLS  # the values of ``attention``
from nasbench_bert.models.flexibert import Embeddings, FlexiBERTEncoder, SelfAttention, check_attention
from nasbench_bert.semantics import get_semantics
from nasbench_bert.spaces.flexibert import Arch

from nasbench_bert.text import TextTokenizer, load_tokenizer, pack, read_corpus

from . import checkpoints
from .corpus import Batch, BatchSource, MaskedInputs, Prefetcher, gumbel, load_sequences, pretokenize, scatter_update, step_seed

#: ``precision``: "fp32" everywhere, or "bf16" autocast (weights, gradients and the
#: optimiser stay fp32; the losses are computed in fp32)
PRECISIONS = ("fp32", "bf16")
#: ``adamw``: the implementation of torch's AdamW that runs the optimiser ("default":
#: torch's choice, the single-tensor loop on CPU; "foreach": multi-tensor; "fused": one kernel)
ADAMW_IMPLS = ("default", "foreach", "fused")
#: ``optimizer``: "adam_weight_decay" (the authors' ``AdamWeightDecayOptimizer``: no bias
#: correction) or "adamw" (torch's AdamW with bias correction: a deviation from the recipe)
OPTIMIZERS = ("adam_weight_decay", "adamw")
#: the smallest and largest WordPiece vocabularies a config accepts (5 special tokens
#: and a byte-level alphabet need ~100 entries; ELECTRA's is 30,522)
MIN_VOCAB, MAX_VOCAB = 100, 1_000_000
#: the options for a GPU run (docs/builders.md, "Accelerators"):
#: ``PretrainConfig(**ACCELERATED)`` or ``pretrain_config=ACCELERATED`` in ``build_entry``
ACCELERATED: dict[str, Any] = {"precision": "bf16", "attention": "sdpa", "adamw": "fused", "compile": True,
                               "pretokenized": True, "prefetch": 4, "checkpoint_minutes": 10.0}
#: fields that say how a run is executed, not what it computes: they never change the
#: trained model beyond float rounding, so they are recorded in an entry but are not part
#: of its recipe key (:func:`recipe_fields`)
EXECUTION_FIELDS = ("checkpoint_every", "log_every", "attention", "adamw", "compile", "pretokenized", "corpus_cache",
                    "prefetch", "checkpoint_minutes")
_DEVICES = "'auto', 'cpu', 'cuda', 'cuda:<index>'"
_TIMING_WARMUP = 3  # steps left out of steady_tokens_per_second (compilation, allocator warm-up)
_clock = time.monotonic  # the checkpoint_minutes clock (a test replaces it)


def _check_choice(field_name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if not any(type(value) is type(a) and value == a for a in allowed):  # strict: 1 is not True, True not "fp32"
        raise InvalidArgumentError(f"{field_name} = {value!r} is not allowed; allowed values: {list(allowed)}")


def check_accelerator_fields(cfg: Any) -> None:
    """Validate the accelerator fields that PretrainConfig and FinetuneConfig share."""
    _check_choice("precision", cfg.precision, PRECISIONS)
    check_attention(cfg.attention, "attention")
    _check_choice("adamw", cfg.adamw, ADAMW_IMPLS)
    _check_choice("compile", cfg.compile, (False, True))


def check_optimizer_fields(cfg: Any) -> None:
    """Validate the optimiser fields that PretrainConfig and FinetuneConfig share."""
    _check_choice("optimizer", cfg.optimizer, OPTIMIZERS)
    check_real("learning_rate", cfg.learning_rate, low=0, low_open=True)
    check_real("weight_decay", cfg.weight_decay, low=0)
    check_real("adam_eps", cfg.adam_eps, low=0, low_open=True)
    check_real("adam_beta1", cfg.adam_beta1, low=0, high=1)
    check_real("adam_beta2", cfg.adam_beta2, low=0, high=1)
    check_real("max_grad_norm", cfg.max_grad_norm, low=0, low_open=True)
    check_int("replicas", cfg.replicas, low=1)
    check_int("seed", cfg.seed, low=0)


@dataclass
class PretrainConfig:
    """ELECTRA pretraining settings; the defaults are the authors' recipe (module doc)."""

    steps: int = 100_000
    batch_size: int = 128
    seq_len: int = 128
    learning_rate: float = 5e-4
    warmup_steps: int = 10_000
    optimizer: str = "adam_weight_decay"  # "adam_weight_decay" (the authors') | "adamw" (bias-corrected)
    weight_decay: float = 0.01
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-6
    max_grad_norm: float = 1.0
    replicas: int = 8                     # TPU cores: per-replica losses and clipping, summed gradients
    mask_prob: float = 0.15
    gen_weight: float = 1.0
    disc_weight: float = 50.0
    seed: int = 0
    semantics: str = "as_trained"  # see nasbench_bert.semantics
    corpus: str = "hf:openwebtext"
    max_documents: int | None = None
    vocab_size: int = 30522               # of a locally trained WordPiece (the Hub tokenizer has 30,522)
    checkpoint_every: int = 1000
    log_every: int = 100
    # -- accelerator options (docs/builders.md, "Accelerators"); the defaults are the plain fp32 loop
    precision: str = "fp32"               # "fp32" | "bf16" (autocast; fp32 master weights)
    attention: str = "eager"              # "eager" | "sdpa" (not with semantics="authors")
    adamw: str = "default"                # "default" | "foreach" | "fused": torch's AdamW kernels
    compile: bool = False                 # torch.compile the generator and discriminator encoders
    pretokenized: bool = False            # pack the corpus once into a memory-mapped .npy (builders.corpus)
    corpus_cache: str | None = None       # its folder (default: the user cache's corpora/); needs pretokenized
    prefetch: int = 0                     # batches a background thread makes ahead (0: made in the loop)
    checkpoint_minutes: float | None = None  # also checkpoint when this much wall time has passed

    def __post_init__(self) -> None:
        for f in ("steps", "batch_size", "seq_len", "checkpoint_every", "log_every"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InvalidArgumentError(f"{f} = {v!r} is not allowed; allowed: a positive integer")
        check_int("warmup_steps", self.warmup_steps, low=0)
        if not isinstance(self.mask_prob, (int, float)) or isinstance(self.mask_prob, bool) or not 0 < self.mask_prob < 1:
            raise InvalidArgumentError(f"mask_prob = {self.mask_prob!r} is not allowed; allowed: 0 < mask_prob < 1")
        if not 4 <= self.seq_len <= 512:
            raise InvalidArgumentError(f"seq_len = {self.seq_len} is not allowed; allowed: 4 ... 512")
        v = self.vocab_size
        if not isinstance(v, int) or isinstance(v, bool) or not MIN_VOCAB <= v <= MAX_VOCAB:
            raise InvalidArgumentError(f"vocab_size = {v!r} is not allowed; allowed: an integer in {MIN_VOCAB} ... {MAX_VOCAB} "
                                       "(a WordPiece needs its special tokens and an alphabet besides)")
        check_int("max_documents", self.max_documents, low=1, none=True)
        check_real("gen_weight", self.gen_weight, low=0)
        check_real("disc_weight", self.disc_weight, low=0)
        check_optimizer_fields(self)
        if self.batch_size % self.replicas:
            raise InvalidArgumentError(f"batch_size = {self.batch_size} is not allowed with replicas = {self.replicas}; "
                                       "allowed: a multiple of replicas (each replica takes batch_size / replicas rows)")
        self.semantics = get_semantics(self.semantics).name  # old names accepted, stored canonical
        check_accelerator_fields(self)
        if self.attention == "sdpa" and self.semantics == "authors":
            raise InvalidArgumentError("attention = 'sdpa' is not allowed with semantics = 'authors' (its proxies hook the "
                             "softmax module); allowed values there: ['eager']")
        _check_choice("pretokenized", self.pretokenized, (False, True))
        if self.corpus_cache is not None:
            if not isinstance(self.corpus_cache, (str, os.PathLike)):
                raise InvalidArgumentError(f"corpus_cache = {self.corpus_cache!r} is not allowed; allowed: None or a folder path")
            if not self.pretokenized:
                raise InvalidArgumentError(f"corpus_cache = {str(self.corpus_cache)!r} is not allowed with pretokenized = False; "
                                 "allowed: None, or set pretokenized = True")
            self.corpus_cache = os.fspath(self.corpus_cache)
        if not isinstance(self.prefetch, int) or isinstance(self.prefetch, bool) or self.prefetch < 0:
            raise InvalidArgumentError(f"prefetch = {self.prefetch!r} is not allowed; allowed: an integer >= 0")
        cm = self.checkpoint_minutes
        if cm is not None and (isinstance(cm, bool) or not isinstance(cm, (int, float)) or not 0 < cm < math.inf):
            raise InvalidArgumentError(f"checkpoint_minutes = {cm!r} is not allowed; allowed: None or a number > 0")


def recipe_fields(cfg: Any) -> dict[str, Any]:
    """The fields of a config that define what is trained (all but :data:`EXECUTION_FIELDS`)."""
    return {k: v for k, v in dataclasses.asdict(cfg).items() if k not in EXECUTION_FIELDS}


@dataclass
class StepRecord:
    """What one optimiser step did, per replica: the losses (total, discriminator,
    generator; device tensors of shape (replicas,)), the global gradient norm before and
    after clipping, and the base learning rate of the step (float32)."""

    total: torch.Tensor
    disc: torch.Tensor
    gen: torch.Tensor
    grad_norm: torch.Tensor
    clipped_norm: torch.Tensor
    learning_rate: np.float32


@dataclass
class PretrainResult:
    losses: list[float]
    disc_losses: list[float]
    gen_losses: list[float]
    seconds: float
    tokens_per_second: float
    resumed_from: int
    model: ElectraPair = field(repr=False)
    tokenizer: TextTokenizer = field(repr=False)
    #: the device trained on
    device: str = "cpu"
    #: tokens/s after the first steps of this call (compilation and warm-up left out)
    steady_tokens_per_second: float = math.nan
    #: the steps (counted done) at which this call wrote a checkpoint
    checkpoints: list[int] = field(default_factory=list)


_step_seed = step_seed  # the old private name


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``"auto"`` (or None): the GPU when CUDA is available, else the CPU; ``"cpu"``,
    ``"cuda"`` or ``"cuda:<index>"`` as given. Anything else, or a CUDA device where
    there is none, is an ``InvalidArgumentError`` (a ``ValueError``) naming the allowed values."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InvalidArgumentError(f"device = {device!r} is not allowed; allowed values: {_DEVICES}") from None
    if d.type not in ("cpu", "cuda"):
        raise InvalidArgumentError(f"device = {device!r} is not allowed; allowed values: {_DEVICES}")
    if d.type == "cuda" and not torch.cuda.is_available():
        raise InvalidArgumentError(f"device = {device!r} is not allowed here: CUDA is not available; allowed values: 'auto', 'cpu'")
    return d


def use_attention(model: torch.nn.Module, attention: str) -> torch.nn.Module:
    """Switch every :class:`SelfAttention` in ``model`` to ``attention`` (one of
    ``ATTENTION_IMPLS``); ``"sdpa"`` is refused for an encoder of the authors' semantics."""
    check_attention(attention, "attention")
    if attention == "sdpa":
        for m in model.modules():
            if isinstance(m, FlexiBERTEncoder) and m.semantics == "authors":
                raise InvalidArgumentError("attention = 'sdpa' is not allowed for a model of semantics 'authors'; allowed values "
                                 "there: ['eager']")
    for m in model.modules():
        if isinstance(m, SelfAttention):
            m.attention_impl = attention
    return model


def autocast(device: torch.device, precision: str) -> Any:
    """The autocast context of ``precision`` (a no-op context for fp32)."""
    return torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()


def make_adamw(groups: Any, lr: float, eps: float, impl: str, betas: tuple[float, float] = (0.9, 0.999)) -> torch.optim.AdamW:
    """torch's AdamW with the implementation ``impl`` (see :data:`ADAMW_IMPLS`)."""
    _check_choice("adamw", impl, ADAMW_IMPLS)
    kw = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}[impl]
    return torch.optim.AdamW(groups, lr=lr, eps=eps, betas=betas, **kw)


def _keep_impl(opt: torch.optim.Optimizer, impl: str) -> None:
    """After ``load_state_dict``: the implementation configured now, not the saved one."""
    for g in opt.param_groups:
        g["foreach"] = True if impl == "foreach" else None
        g["fused"] = True if impl == "fused" else None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# -- the recipe: schedule, initialisers, optimiser, gradients --------------------------------------
def learning_rate(step: int, base: float, total: int, warmup: float) -> np.float32:
    """The learning rate of (0-based) ``step``, as ``model/optimization.create_optimizer``
    computes it in float32: ``polynomial_decay(base, step, total, end=0, power=1)``, i.e.
    ``base * (1 - min(step, total) / total)``, times ``min(1, step / warmup)``. It is 0 at
    step 0, and ``base * (1 - warmup / total)`` (not ``base``) at the end of warm-up."""
    f = np.float32
    s, t = f(step), f(total)
    lr = (f(base) - f(0.0)) * (f(1.0) - np.minimum(s, t) / t) + f(0.0)
    if warmup:
        lr = lr * np.minimum(f(1.0), s / f(warmup))
    return f(lr)


def schedule(step: int, cfg: PretrainConfig) -> np.float32:
    """The pretraining learning rate of ``step`` (:func:`learning_rate` with the config's
    ``learning_rate``, ``steps`` and ``warmup_steps``)."""
    return learning_rate(step, cfg.learning_rate, cfg.steps, cfg.warmup_steps)


def decays(name: str, owner: torch.nn.Module) -> bool:
    """Whether the parameter ``name`` of module ``owner`` gets weight decay: the TF code
    excludes every variable whose name contains ``LayerNorm``, ``layer_norm`` or ``bias``,
    i.e. LayerNorm scales and offsets and every bias (dense biases, the generator's output
    bias, a convolution's bias)."""
    return not (isinstance(owner, torch.nn.LayerNorm) or "bias" in name.rsplit(".", 1)[-1])


def decay_flags(model: torch.nn.Module) -> dict[str, bool]:
    """:func:`decays` for every (named, deduplicated) parameter of ``model``."""
    owners = {f"{mn}.{pn}" if mn else pn: mod for mn, mod in model.named_modules() for pn, _ in mod.named_parameters(recurse=False)}
    return {n: decays(n, owners[n]) for n, _ in model.named_parameters()}


def glorot_uniform_(weight: torch.Tensor) -> None:
    """TF's ``glorot_uniform_initializer`` (the default of ``tf.get_variable`` and hence of a
    ``tf.layers.dense`` without ``kernel_initializer``): U(-a, a), a = sqrt(6 / (fan_in + fan_out))."""
    torch.nn.init.xavier_uniform_(weight)


def apply_recipe_init(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Re-draw the weights the TF code initialised with ``tf.layers.dense``'s default
    (Glorot-uniform) rather than truncated normal(0.02): the embedding projections
    (``embeddings_project``, discriminator and generator), the discriminator's output layer
    (``discriminator_predictions/dense_1``) and a GLUE head's output layer
    (``task_specific/<task>/dense``). Drawn from a generator seeded by ``seed``."""
    from nasbench_bert.models import SequenceClassifier
    from nasbench_bert.models.flexibert import ElectraDiscriminatorHead

    targets: list[torch.Tensor] = []
    for m in model.modules():
        if isinstance(m, Embeddings) and isinstance(m.project, torch.nn.Linear):
            targets.append(m.project.weight)
        elif isinstance(m, ElectraDiscriminatorHead):
            targets.append(m.prediction.weight)
        elif isinstance(m, SequenceClassifier) and m.head_kind == "electra_tf":
            targets.append(m.head[-1].weight)
    seen: set[int] = set()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for w in targets:
            if id(w) not in seen:
                seen.add(id(w))
                glorot_uniform_(w)
    return model


class RecipeOptimizer:
    """The authors' optimiser, run by torch's AdamW kernels.

    ``optimizer="adam_weight_decay"`` is BERT's ``AdamWeightDecayOptimizer``::

        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        p = p - lr (m / (sqrt(v) + eps) + wd p)          # no bias correction

    torch's AdamW computes ``p (1 - lr' wd') - lr' / c1 * m / (sqrt(v) / sqrt(c2) + eps')``
    with ``c1 = 1 - b1^t``, ``c2 = 1 - b2^t``; with ``lr' = lr c1 / sqrt(c2)``,
    ``eps' = eps / sqrt(c2)`` and ``wd' = wd sqrt(c2) / c1`` (set before every step) that is
    exactly the update above, so the "default", "foreach" and "fused" kernels all run it.
    ``optimizer="adamw"``: torch's AdamW as is (bias-corrected; a deviation).

    ``groups``: dicts with ``params``, ``lr_scale`` (the layer-wise factor; 1.0 in
    pretraining) and ``decay`` (:func:`decays`). Each group's rate is the step's base rate
    times ``lr_scale``, multiplied in float32 as the TF code multiplies its tensors.
    """

    def __init__(self, groups: list[dict[str, Any]], *, optimizer: str, weight_decay: float, betas: tuple[float, float],
                 eps: float, impl: str):
        _check_choice("optimizer", optimizer, OPTIMIZERS)
        self.kind, self.weight_decay, self.betas, self.eps, self.impl = optimizer, weight_decay, betas, eps, impl
        self.opt = make_adamw([{"params": g["params"], "lr_scale": float(g["lr_scale"]), "decay": bool(g["decay"])}
                               for g in groups if g["params"]], 0.0, eps, impl, betas)

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.opt.param_groups

    def group_rates(self, base: np.float32) -> list[np.float32]:
        """Each group's learning rate at base rate ``base`` (float32, as in the TF graph)."""
        return [np.float32(np.float32(base) * np.float32(g["lr_scale"])) for g in self.opt.param_groups]

    def step(self, base: np.float32, t: int) -> None:
        """One update at base rate ``base``; ``t`` counts the updates, this one included."""
        b1, b2 = self.betas
        c1, c2 = 1.0 - b1 ** t, math.sqrt(1.0 - b2 ** t)
        for g, lr in zip(self.opt.param_groups, self.group_rates(base)):
            wd = self.weight_decay if g["decay"] else 0.0
            if self.kind == "adamw":
                g["lr"], g["eps"], g["weight_decay"] = float(lr), self.eps, wd
            else:
                g["lr"], g["eps"], g["weight_decay"] = float(lr) * c1 / c2, self.eps / c2, wd * c2 / c1
        self.opt.step()

    def state_dict(self) -> dict[str, Any]:
        return self.opt.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.opt.load_state_dict(state)
        _keep_impl(self.opt, self.impl)


def optimizer_groups(model: torch.nn.Module, scales: Iterable[tuple[float, torch.nn.Module]] | None = None) -> list[dict[str, Any]]:
    """Parameter groups: for each ``(lr_scale, module)`` of ``scales`` (default: the whole
    model at 1.0), its parameters with and without weight decay (:func:`decays`)."""
    flags = decay_flags(model)
    by_id = {id(p): n for n, p in model.named_parameters()}
    groups = []
    for scale, module in (scales or [(1.0, model)]):
        ps = list(module.parameters())
        for d in (True, False):
            groups.append({"params": [p for p in ps if flags[by_id[id(p)]] is d], "lr_scale": scale, "decay": d})
    return [g for g in groups if g["params"]]


def global_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """``tf.global_norm``: the 2-norm of all gradients together."""
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)).float())


def replica_gradients(params: list[torch.nn.Parameter], losses: Iterable[torch.Tensor],
                      clip: float) -> tuple[list[torch.Tensor | None], torch.Tensor, torch.Tensor]:
    """The summed, per-replica clipped gradients of ``params``: for each replica's loss the
    gradient, scaled by ``clip * min(1 / norm, 1 / clip)`` (``tf.clip_by_global_norm``), then
    summed over replicas (``cross_replica_sum``). Returns the sums (None for a parameter no
    replica's loss reaches, which the optimiser then leaves alone as the TF code does), and
    the per-replica norms before and after clipping."""
    acc: list[torch.Tensor] | None = None
    used = [False] * len(params)
    norms, clipped = [], []
    inv_clip = torch.tensor(1.0 / clip)
    for loss in losses:
        gs = torch.autograd.grad(loss, params, allow_unused=True)
        used = [u or g is not None for u, g in zip(used, gs)]
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, gs)]
        norm = global_norm(grads)
        scale = clip * torch.minimum(1.0 / norm, inv_clip.to(norm.device))
        torch._foreach_mul_(grads, scale)
        norms.append(norm)
        clipped.append(norm * scale)
        if acc is None:
            acc = grads
        else:
            torch._foreach_add_(acc, grads)
    assert acc is not None
    return [g if u else None for g, u in zip(acc, used)], torch.stack(norms), torch.stack(clipped)


def unique_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def _check_workdir_recipe(path: Path, cfg: PretrainConfig) -> None:
    """A workdir's checkpoints belong to one recipe: resuming them under another would mix two."""
    if not path.is_file():
        return
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    mine = recipe_fields(cfg)
    diff = sorted(k for k in mine if k in old and old[k] != mine[k])
    if diff:
        raise InvalidArgumentError(
            f"workdir = {str(path.parent)!r} holds checkpoints of another recipe (fields {diff} differ: "
            f"{ {k: old[k] for k in diff} } there, { {k: mine[k] for k in diff} } now); allowed: the same recipe, "
            "or another workdir")


def pretrain(arch: Any, cfg: PretrainConfig | None = None, *, workdir: str | os.PathLike[str] | None = None,
             device: str | torch.device = "cpu", on_step: Callable[[int, float], None] | None = None,
             tokenizer: TextTokenizer | None = None) -> PretrainResult:
    """Pretrain ``arch`` with ELECTRA; with ``workdir``, checkpoint and resume there.

    ``device``: ``"cpu"`` (the default), ``"cuda"``, ``"cuda:<index>"`` or ``"auto"``
    (:func:`resolve_device`). ``tokenizer``: skip loading one (and, with a
    ``pretokenized`` corpus already in the cache, skip reading the corpus).
    """
    cfg = cfg or PretrainConfig()
    a = Arch.coerce(arch)
    dev = resolve_device(device)
    tok, seqs = _training_sequences(cfg, tokenizer)
    model = build_model(a, cfg).to(dev)
    opt = make_optimizer(model, cfg)
    ck_dir, hist = _resume(workdir, cfg, model, opt, dev)

    gen_encoder: Callable[..., torch.Tensor] = model.generator
    disc_encoder: Callable[..., torch.Tensor] = model.discriminator
    if cfg.compile:  # the encoders have static shapes; the heads at masked positions stay eager
        gen_encoder, disc_encoder = torch.compile(model.generator), torch.compile(model.discriminator)
    amp = autocast(dev, cfg.precision)
    source = BatchSource(seqs, tok, cfg.batch_size, cfg.seed, cfg.mask_prob)
    batches: Any = (Prefetcher(source, hist.start, cfg.steps, cfg.prefetch, pin=dev.type == "cuda") if cfg.prefetch
                    else (source(s) for s in range(hist.start, cfg.steps)))

    def step_fn(b: Batch) -> Any:
        return train_step(model, opt, b, cfg, dev, gen_encoder=gen_encoder, disc_encoder=disc_encoder, amp=amp)

    model.train()
    t0 = time.perf_counter()
    saved, t_warm = _run_steps(batches, step_fn, hist, cfg, dev, on_step, ck_dir, model, opt)
    t1 = time.perf_counter()
    secs = t1 - t0
    trained = cfg.steps - hist.start
    tokens = cfg.batch_size * cfg.seq_len
    steady = ((cfg.steps - hist.start - _TIMING_WARMUP) * tokens / (t1 - t_warm) if t_warm is not None and t1 > t_warm
              else math.nan)
    return PretrainResult(hist.losses, hist.disc, hist.gen, secs, trained * tokens / secs if secs > 0 and trained else math.nan,
                          hist.start, model, tok, str(dev), steady, saved)


def _training_sequences(cfg: PretrainConfig, tokenizer: TextTokenizer | None) -> tuple[TextTokenizer, np.ndarray]:
    """The tokenizer (``tokenizer``, or one fitted to the corpus) and the packed
    training sequences of ``cfg.corpus`` (from the pretokenized cache when
    ``cfg.pretokenized``; the corpus is then read only when the cache needs it)."""
    docs: list[str] | None = None
    if tokenizer is None:
        docs = read_corpus(cfg.corpus, cfg.max_documents)
        tok = load_tokenizer(docs, cfg.vocab_size)
    else:
        tok = tokenizer
    seqs: np.ndarray
    if cfg.pretokenized:
        seqs = load_sequences(pretokenize(cfg.corpus, tok, cfg.seq_len, max_documents=cfg.max_documents,
                                          cache_dir=cfg.corpus_cache, docs=docs))
    else:
        if docs is None:
            docs = read_corpus(cfg.corpus, cfg.max_documents)
        seqs = np.array(list(pack(docs, tok, cfg.seq_len)), dtype=np.int64)
    if len(seqs) == 0:
        raise ValueError(f"corpus = {cfg.corpus!r} is too short for one sequence of {cfg.seq_len} tokens")
    return tok, seqs


@dataclass
class _History:
    """The per-step losses of one run (restored from the checkpoint it resumes) and the
    step it starts at. A step's losses stay on the device until :meth:`flush`, so that
    one device sync serves every step since the last one."""

    losses: list[float] = field(default_factory=list)
    disc: list[float] = field(default_factory=list)
    gen: list[float] = field(default_factory=list)
    start: int = 0
    #: (loss, disc, gen) per step, still on the device
    pending: list[torch.Tensor] = field(default_factory=list)

    def add(self, rec: Any) -> None:
        self.pending.append(torch.stack([rec.total.mean(), rec.disc.mean(), rec.gen.mean()]))

    def flush(self) -> None:
        if self.pending:
            for total, d, g in torch.stack(self.pending).tolist():
                self.losses.append(total)
                self.disc.append(d)
                self.gen.append(g)
            self.pending.clear()


def _resume(workdir: str | os.PathLike[str] | None, cfg: PretrainConfig, model: ElectraPair, opt: RecipeOptimizer,
            dev: torch.device) -> tuple[Path | None, _History]:
    """The checkpoint folder of ``workdir`` (None without one) and the history to go on
    from: with a checkpoint there (of the same recipe, checked), ``model`` and ``opt``
    are restored from the latest and the history is its; else an empty one."""
    hist = _History()
    ck_dir = Path(workdir) / "checkpoints" if workdir is not None else None
    if ck_dir is not None:
        ck_dir.mkdir(parents=True, exist_ok=True)
        _check_workdir_recipe(Path(workdir) / "pretrain_config.json", cfg)
        (Path(workdir) / "pretrain_config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
        last = checkpoints.latest(ck_dir, dev)  # weights-only: a planted file is refused, never run
        if last is not None:
            st = last[1]
            model.load_state_dict(st["model"])
            opt.load_state_dict(st["optimizer"])
            hist = _History(st["losses"], st["disc_losses"], st["gen_losses"], st["step"])
    return ck_dir, hist


def _run_steps(batches: Any, step_fn: Callable[[Batch], Any], hist: _History, cfg: PretrainConfig, dev: torch.device,
               on_step: Callable[[int, float], None] | None, ck_dir: Path | None, model: ElectraPair,
               opt: RecipeOptimizer) -> tuple[list[int], float | None]:
    """Train on every batch of ``batches``, recording losses in ``hist`` and writing a
    checkpoint to ``ck_dir`` every ``cfg.checkpoint_every`` steps, at the last step and
    every ``cfg.checkpoint_minutes``. Returns the steps checkpointed and the time the
    steady-state timing starts (None when the run is too short for one); the device
    is synchronised before it returns."""
    saved: list[int] = []
    t_warm: float | None = None
    last_ck = _clock()
    try:
        for b in batches:
            step = b.step
            hist.add(step_fn(b))
            done = step + 1
            if on_step is not None:
                hist.flush()
                on_step(step, hist.losses[-1])
            if done - hist.start == _TIMING_WARMUP and cfg.steps - done > 0:
                _sync(dev)
                t_warm = time.perf_counter()
            if ck_dir is not None and (done % cfg.checkpoint_every == 0 or done == cfg.steps or (
                    cfg.checkpoint_minutes is not None and _clock() - last_ck >= 60 * cfg.checkpoint_minutes)):
                hist.flush()
                checkpoints.save(ck_dir, done, model, opt, hist.losses, hist.disc, hist.gen)
                saved.append(done)
                last_ck = _clock()
            elif done % cfg.log_every == 0:
                hist.flush()
    finally:
        if isinstance(batches, Prefetcher):
            batches.close()
    hist.flush()
    _sync(dev)
    return saved, t_warm


def build_model(arch: Any, cfg: PretrainConfig) -> ElectraPair:
    """The generator + discriminator of ``arch`` under ``cfg.semantics``, initialised as the
    TF code initialises them (:func:`apply_recipe_init`), attention as ``cfg.attention``."""
    model = ElectraPair(Arch.coerce(arch), cfg.semantics, seed=cfg.seed)
    apply_recipe_init(model, cfg.seed + 1)
    use_attention(model, cfg.attention)
    return model


def make_optimizer(model: torch.nn.Module, cfg: Any,
                   scales: Iterable[tuple[float, torch.nn.Module]] | None = None) -> RecipeOptimizer:
    """The recipe's optimiser over ``model`` (layer-wise ``scales`` for finetuning)."""
    return RecipeOptimizer(optimizer_groups(model, scales), optimizer=cfg.optimizer, weight_decay=cfg.weight_decay,
                           betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps, impl=cfg.adamw)


#: ``sampler(replica, logits)``: the replacement token ids (replica batch, N) drawn from the
#: generator's ``logits`` (replica batch, N, vocabulary)
Sampler = Callable[[int, torch.Tensor], torch.Tensor]


def gumbel_sampler(batch: Batch, cfg: PretrainConfig, dev: torch.device) -> Sampler:
    """ELECTRA's sampler (``sample_from_softmax``): ``argmax(logits + gumbel(u))`` with uniform
    noise ``u`` drawn per replica from the step's CPU generator (on CPU) or from a device
    generator seeded by ``(seed, step)`` (on a GPU: 15 % x batch x 30522 numbers a step are
    too many to copy)."""
    gen = batch.generator if dev.type == "cpu" else torch.Generator(dev).manual_seed(step_seed(cfg.seed, batch.step) + 2)

    def sample(replica: int, logits: torch.Tensor) -> torch.Tensor:
        u = torch.rand(logits.shape, generator=gen, device=dev)
        return torch.argmax(logits + gumbel(u), dim=-1)

    return sample


def electra_losses(model: ElectraPair, b: Batch, cfg: PretrainConfig, *, replica: int, sampler: Sampler,
                   gen_encoder: Callable[..., torch.Tensor] | None = None,
                   disc_encoder: Callable[..., torch.Tensor] | None = None, amp: Any = None,
                   drop_full_mask: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The losses of one replica's batch ``b`` (on the model's device): (total, discriminator,
    generator), as ``PretrainingModel`` computes them.

    Generator: the MLM cross-entropy at the masked slots, ``sum(w * nll) / (sum(w) + 1e-6)``.
    The sampled replacements are written at the masked positions of the original ids
    (:func:`.corpus.scatter_update`); a position is "replaced" where its token changed.
    Discriminator: the sigmoid cross-entropy over the real tokens,
    ``sum(mask * bce) / (sum(mask) + 1e-6)``. Total: ``gen_weight * gen + disc_weight * disc``.
    """
    # "is None", not "or": a compiled module's truth value calls len(), which raises
    gen_encoder = model.generator if gen_encoder is None else gen_encoder
    disc_encoder = model.discriminator if disc_encoder is None else disc_encoder
    amp = amp if amp is not None else nullcontext()
    m = b.masked
    attn = None if drop_full_mask and b.all_attended else b.input_mask
    with amp:
        h = gen_encoder(m.generator_input, attn, b.segment_ids)
        at = torch.gather(h, 1, m.positions[..., None].expand(-1, -1, h.shape[-1]))
        gen_logits = model.generator_head(at).float()
    nll = F.cross_entropy(gen_logits.reshape(-1, gen_logits.shape[-1]), m.masked_ids.reshape(-1),
                          reduction="none").view_as(m.weights)
    gen_loss = (m.weights * nll).sum() / (m.weights.sum() + 1e-6)
    with torch.no_grad():
        sampled = sampler(replica, gen_logits.detach())
    fake, written = scatter_update(b.ids, sampled, m.positions)
    labels = (written * (fake != b.ids).long()).float()
    with amp:
        disc_logits = model.discriminator_head(disc_encoder(fake, attn, b.segment_ids)).float()
    w = b.input_mask.float()
    bce = F.binary_cross_entropy_with_logits(disc_logits, labels, reduction="none")
    disc_loss = (bce * w).sum() / (1e-6 + w.sum())
    return cfg.gen_weight * gen_loss + cfg.disc_weight * disc_loss, disc_loss, gen_loss


def _to(b: Batch, dev: torch.device) -> Batch:
    nb = dev.type == "cuda"
    m = b.masked
    return Batch(b.step, b.ids.to(dev, non_blocking=nb), b.input_mask.to(dev, non_blocking=nb),
                 b.segment_ids.to(dev, non_blocking=nb),
                 MaskedInputs(*(x.to(dev, non_blocking=nb) for x in (m.generator_input, m.positions, m.masked_ids, m.weights))),
                 b.generator)


def train_step(model: ElectraPair, opt: RecipeOptimizer, batch: Batch, cfg: PretrainConfig, dev: torch.device, *,
               gen_encoder: Callable[..., torch.Tensor] | None = None, disc_encoder: Callable[..., torch.Tensor] | None = None,
               amp: Any = None, sampler: Sampler | None = None) -> StepRecord:
    """One optimiser step of the recipe on ``batch`` (step ``batch.step``): the batch is cut
    into ``cfg.replicas`` consecutive shards; each shard's losses give gradients clipped at
    ``cfg.max_grad_norm`` on their own; the sum of the clipped gradients updates the model at
    the rate :func:`schedule` gives step ``batch.step``. ``sampler`` overrides the generator's
    sampling (the reference test feeds the reference's samples)."""
    drop_full_mask = cfg.attention == "sdpa"  # no padding: SDPA gets no mask (flash attention)
    sampler = sampler or gumbel_sampler(batch, cfg, dev)
    torch.manual_seed(step_seed(cfg.seed, batch.step) + 1)  # dropout (CPU and every GPU)
    params = unique_parameters(model)
    recs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def losses() -> Iterable[torch.Tensor]:
        for r in range(cfg.replicas):
            total, d, g = electra_losses(model, _to(batch.shard(r, cfg.replicas), dev), cfg, replica=r, sampler=sampler,
                                         gen_encoder=gen_encoder, disc_encoder=disc_encoder, amp=amp,
                                         drop_full_mask=drop_full_mask)
            recs.append((total.detach(), d.detach(), g.detach()))
            yield total

    grads, norms, clipped = replica_gradients(params, losses(), cfg.max_grad_norm)
    for p, g in zip(params, grads):
        p.grad = g
    lr = schedule(batch.step, cfg)
    opt.step(lr, batch.step + 1)
    for p in params:
        p.grad = None
    t, d, g = (torch.stack(x) for x in zip(*recs))
    return StepRecord(t, d, g, norms, clipped, lr)

