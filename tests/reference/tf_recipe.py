"""Execute the authors' TensorFlow *training* code for a few steps, recording every step.

The authors' ``tensorflow-model`` code (upstream release, loaded from there by path, never
copied; TF 2.15 in ``compat.v1`` with the one import patch of ``tf_as_trained.py``) builds the
graphs exactly as ``run_pretraining.model_fn_builder`` and ``run_finetuning.model_fn_builder``
do in TRAIN mode, from the configs the runner (``nas_runner.ipynb``) delivered, and runs
them on a CPU session. What is replaced, and why:

* **randomness is fed in.** ``pretrain_helpers`` draws the masked positions with
  ``tf.random.categorical``, the 85 % [MASK] choice and the generator's samples with
  ``tf.random.uniform``. Its module-global ``tf`` is swapped for a view of TensorFlow in
  which those two functions return uniform noise fed through placeholders (the categorical
  by Gumbel-max over the same logits). Everything else in the module runs as written. The
  torch side takes the same noise. The finetuning head's ``tf.nn.dropout`` (hard-coded
  under ``is_training``) is the identity in the same way.
* **dropout is 0** (``hidden_dropout_prob`` / ``attention_probs_dropout_prob`` in
  ``model_hparam_overrides``, a config override), on both sides: dropout masks cannot be
  shared between the two frameworks. The dropout rate itself is recorded from the config.
* **the TPU collective is a sum.** The release's hparams say ``use_tpu=True``,
  ``num_tpu_cores=8``, so ``create_optimizer`` wraps the optimiser in
  ``tf.tpu.CrossShardOptimizer``, whose ``apply_gradients`` sums each gradient over the
  8 replicas with ``cross_replica_sum`` (a TPU-only op) before the real optimiser applies
  it. On a CPU the wrapper is replaced by one whose ``apply_gradients`` hands the real
  optimiser placeholders; the harness runs the graph once per replica (each on its 1/8 of
  the batch, as TPUEstimator gives each core its own per-core batch), fetches the clipped
  per-replica gradients that ``apply_gradients`` received, sums them in float32 and feeds
  the sum - what ``cross_replica_sum`` computes. ``tf_has_no_loss_scaling`` checks by
  building the graph with the real wrapper that nothing else changes: the gradients reach
  ``CrossReplicaSum`` straight from ``clip_by_global_norm`` (the loss is never divided by
  the replica count, because ``create_optimizer`` calls ``tf.gradients`` itself).

Everything is float32. Importable; needs the reference venv (TensorFlow, tf_slim).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from tf_as_trained import (  # noqa: E402
    DEFAULT_UPSTREAM, SPECIAL_TOKEN_IDS, VOCAB_SIZE, _runner_finetuning_hparams, _runner_hparams, _setup, _vname,
    _write_stand_in_vocab,
)

#: arch 49 of the release: H 256 (an embedding projection), 2 layers with 2 and 4 heads,
#: num_feed_forward 1 and 3 (as trained: FF 1024 and 1024 -> 512 -> 512), generator H 64
ARCH_ID = 49
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
CLS, SEP, MASK, PAD = (SPECIAL_TOKEN_IDS[t] for t in ("[CLS]", "[SEP]", "[MASK]", "[PAD]"))


# ----------------------------------------------------------------------------------------
# a view of a module with some attributes replaced (dotted names)
# ----------------------------------------------------------------------------------------

class _View:
    """``base`` with the attributes named in ``over`` (dotted paths) replaced."""

    def __init__(self, base: Any, over: dict[str, Any]):
        self._base, self._over = base, over

    def __getattr__(self, name: str) -> Any:
        if name in self._over:
            return self._over[name]
        sub = {k[len(name) + 1:]: v for k, v in self._over.items() if k.startswith(name + ".")}
        value = getattr(self._base, name)
        return _View(value, sub) if sub else value


@contextmanager
def _patched(module: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


class _ReplicaSum:
    """Stands in for ``tf.tpu.CrossShardOptimizer`` on a CPU: ``apply_gradients`` keeps the
    (clipped, per-replica) gradients it is given for fetching and applies placeholders
    through the real optimiser; the harness feeds them the sum over the replicas."""

    instances: list["_ReplicaSum"] = []

    def __init__(self, opt: Any, *args: Any, **kwargs: Any):
        self._opt = opt
        _ReplicaSum.instances.append(self)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: Any = None) -> Any:
        tf = _setup(DEFAULT_UPSTREAM)["tf"]
        gv = [(g, v) for g, v in grads_and_vars if g is not None]
        self.grads = [tf.convert_to_tensor(g) for g, _ in gv]  # IndexedSlices (gathers) made dense
        self.vars = [v for _, v in gv]
        self.summed = [tf.placeholder(tf.float32, v.shape, name="summed_" + _vname(v).replace("/", "__")) for v in self.vars]
        return self._opt.apply_gradients(list(zip(self.summed, self.vars)), global_step=global_step, name=name)


# ----------------------------------------------------------------------------------------
# fixed inputs (numpy only: the torch side makes the same arrays)
# ----------------------------------------------------------------------------------------

def sequences(rng: np.random.Generator, batch: int, seq: int, vocab: int, two_segments: bool = True
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids ``[CLS] a [SEP] (b [SEP]) [PAD]...`` of random lengths (some full), their
    input mask and segment ids; one raw [MASK] token in row 0 (never maskable)."""
    ids = np.full((batch, seq), PAD, np.int32)
    mask = np.zeros((batch, seq), np.int32)
    seg = np.zeros((batch, seq), np.int32)
    for i in range(batch):
        n = seq if i % 3 == 0 else int(rng.integers(seq // 3, seq))
        body = rng.integers(1000, vocab, size=n).astype(np.int32)
        body[0] = CLS
        cut = int(rng.integers(2, n - 2)) if two_segments else n - 1
        body[cut] = SEP
        body[n - 1] = SEP
        ids[i, :n] = body
        mask[i, :n] = 1
        if two_segments:
            seg[i, cut + 1:n] = 1
    ids[0, 2] = MASK
    return ids, mask, seg


def pretraining_inputs(step: int, batch: int, seq: int, n_pred: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The sequences and the masking / sampling noise of pretraining step ``step``."""
    rng = np.random.default_rng([seed, step])
    ids, mask, seg = sequences(rng, batch, seq, VOCAB_SIZE)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg,
            "u_positions": rng.random((batch, n_pred, seq), dtype=np.float32),
            "u_keep": rng.random((batch, n_pred), dtype=np.float32),
            "u_sample": rng.random((batch, n_pred, VOCAB_SIZE), dtype=np.float32)}


def finetuning_inputs(step: int, batch: int, seq: int, num_labels: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([seed, 1000 + step])
    ids, mask, seg = sequences(rng, batch, seq, VOCAB_SIZE)
    labels = (rng.integers(0, num_labels, size=batch).astype(np.int32) if num_labels
              else rng.uniform(0, 1, size=batch).astype(np.float32))  # regression: targets already scaled
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "labels": labels}


# ----------------------------------------------------------------------------------------
# records
# ----------------------------------------------------------------------------------------

@dataclass
class Step:
    """One optimiser step of the reference: per replica the losses, the global gradient
    norm before clipping and the norm of the clipped gradient; the learning rate of every
    variable; the weights after the update."""

    step: int
    losses: dict[str, list[float]]
    grad_norm: list[float]
    clipped_norm: list[float]
    lr: dict[str, np.float32]
    weights: dict[str, np.ndarray] = field(repr=False)
    masking: list[dict[str, np.ndarray]] = field(default_factory=list, repr=False)
    logits: list[np.ndarray] = field(default_factory=list, repr=False)


@dataclass
class Run:
    config: dict[str, Any]
    init: dict[str, np.ndarray] = field(repr=False)
    initializers: dict[str, str]
    decay: dict[str, bool]
    lr_keys: dict[str, list[str]]
    steps: Iterator[Step] = field(repr=False)


def _initializer_kind(v: Any) -> str:
    """How ``v`` is initialised: the op name under ``<var>/Initializer/`` (e.g.
    ``truncated_normal``, ``random_uniform`` (Glorot), ``zeros``, ``ones``)."""
    name = v.initial_value.op.name
    m = re.search(r"/Initializer/([A-Za-z_]+)", name)
    return m.group(1) if m else name


def _global_norm_tensor(graph: Any) -> Any:
    """The global norm ``clip_by_global_norm`` computes inside ``create_optimizer``."""
    cands = [op for op in graph.get_operations()
             if op.type == "Sqrt" and "clip_by_global_norm" in op.name and "global_norm" in op.name.split("/")[-2:][0]]
    if len(cands) != 1:
        cands = [op for op in graph.get_operations() if op.type == "Sqrt" and re.search(r"global_norm/global_norm$", op.name)]
    if len(cands) != 1:
        raise RuntimeError(f"expected one global-norm op, found {[op.name for op in cands]}")
    return cands[0].outputs[0]


def _session(tf: Any) -> Any:
    """A plain CPU session: grappler's graph rewrites are off (they only reorder work, and
    some of them log spurious errors on these graphs)."""
    config = tf.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return tf.Session(config=config)


def _lr_by_variable(tf: Any, lr: Any, variables: list[Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Each variable's learning-rate tensor, chosen as ``AdamWeightDecayOptimizer.apply_gradients``
    chooses it (every key of a dict contained in the variable's name), and the keys."""
    if not isinstance(lr, dict):
        return {_vname(v): lr for v in variables}, {_vname(v): [] for v in variables}
    out, keys = {}, {}
    for v in variables:
        ks = [k for k in lr if k in v.name]
        keys[_vname(v)] = ks
        if len(ks) == 1:
            out[_vname(v)] = lr[ks[0]]
    return out, keys


def _update_feed(rs: "_ReplicaSum", summed: list[np.ndarray], lr_tensors: dict[str, Any],
                 lr_values: dict[str, np.float32]) -> dict[Any, Any]:
    """The feed of the update run: the summed gradients, and every learning-rate tensor at
    the value it had when the step's losses were computed (global step ``s``).

    ``create_optimizer`` groups the update with ``global_step.assign(global_step + 1)``
    without a control dependency, so in a CPU session the learning rate may be read before
    or after the increment (google-research/bert#1050); in this harness it was read after
    it (the update of step ``s`` ran at the rate of step ``s + 1``). Feeding the rate of
    step ``s`` pins the order the code intends and the schedule states (the rate of step 0
    is 0); the value fed is the graph's own, computed from ``global_step`` = s."""
    feed: dict[Any, Any] = dict(zip(rs.summed, summed))
    for name, t in lr_tensors.items():
        feed[t] = lr_values[name]
    return feed


# ----------------------------------------------------------------------------------------
# pretraining
# ----------------------------------------------------------------------------------------

def run_pretraining(arch_id: int = ARCH_ID, *, replicas: int = 8, per_replica: int = 2, steps: int = 10,
                    num_train_steps: int = 20, warmup_steps: int = 3, seed: int = 0,
                    upstream: Path | str = DEFAULT_UPSTREAM, logits_steps: tuple[int, ...] = (0,)) -> Run:
    """Build arch ``arch_id``'s ELECTRA pretraining graph with ``run_pretraining.model_fn_builder``
    (the runner's hparams, plus dropout 0 and a short schedule ``num_train_steps`` /
    ``warmup_steps`` so that ten steps move the weights) and return a :class:`Run` whose
    ``steps`` iterator executes them one at a time."""
    S = _setup(Path(upstream))
    tf = S["tf"]
    import pretrain.pretrain_helpers as ph
    rp, opt_mod = S["run_pretraining"], S["optimization"]

    tmp = tempfile.TemporaryDirectory(prefix="tf_recipe_")
    root = Path(tmp.name)
    data_dir = root / "electra_data"
    data_dir.mkdir()
    _write_stand_in_vocab(data_dir / "vocab.txt")
    hparams = S["utils"].load_json(str(_runner_hparams(arch_id, Path(upstream), root)))
    hparams["model_hparam_overrides"].update(NO_DROPOUT)
    hparams.update(num_train_steps=num_train_steps, num_warmup_steps=warmup_steps)
    config = S["configure_pretraining"].PretrainingConfig(f"nas{arch_id}", str(data_dir), **hparams)
    B, L, N = per_replica, config.max_seq_length, config.max_predictions_per_seq

    graph = tf.Graph()
    cap: dict[str, Any] = {}
    with graph.as_default():
        tf.set_random_seed(seed)
        feats = {k: tf.placeholder(tf.int32, [B, L], name=k) for k in ("input_ids", "input_mask", "segment_ids")}
        noise = {"u_positions": tf.placeholder(tf.float32, [B, N, L]), "u_keep": tf.placeholder(tf.float32, [B, N]),
                 "u_sample": tf.placeholder(tf.float32, [B, N, config.vocab_size])}

        def categorical(logits: Any, num_samples: int, dtype: Any = None, seed: Any = None, name: Any = None) -> Any:
            assert num_samples == N
            g = -tf.log(-tf.log(noise["u_positions"] + 1e-9) + 1e-9)
            return tf.argmax(logits[:, None, :] + g, -1, output_type=dtype or tf.int64)

        def uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = tf.float32, seed: Any = None,
                    name: Any = None) -> Any:
            assert minval == 0 and maxval in (None, 1)
            u = {2: noise["u_keep"], 3: noise["u_sample"]}[len(shape)]
            assert [int(d) for d in u.shape] == [int(d) for d in shape], (shape, u.shape)
            return u

        model_holder: list[Any] = []

        class Capturing(rp.PretrainingModel):
            def __init__(self, *a: Any, **k: Any):
                super().__init__(*a, **k)
                model_holder.append(self)

            def _get_fake_data(self, inputs: Any, mlm_logits: Any) -> Any:
                out = super()._get_fake_data(inputs, mlm_logits)
                cap.update(masked=inputs, mlm_logits=mlm_logits, fake=out)
                return out

            def _get_discriminator_output(self, *a: Any, **k: Any) -> Any:
                out = super()._get_discriminator_output(*a, **k)
                cap["disc"] = out
                return out

        _ReplicaSum.instances.clear()
        with _patched(ph, "tf", _View(tf, {"random.categorical": categorical, "random.uniform": uniform})), \
                _patched(opt_mod, "tf", _View(tf, {"tpu.CrossShardOptimizer": _ReplicaSum})), \
                _patched(rp, "PretrainingModel", Capturing):
            spec = rp.model_fn_builder(config)(feats, None, tf.estimator.ModeKeys.TRAIN, {"batch_size": B})
        model = model_holder[0]
        rs = _ReplicaSum.instances[-1]
        lr_tensors, lr_keys = _lr_by_variable(tf, rs._opt.learning_rate, rs.vars)
        tvars = tf.trainable_variables()
        prenorm = _global_norm_tensor(graph)
        sess = _session(tf)
        sess.run(tf.global_variables_initializer())
        init_values = {_vname(v): val for v, val in zip(tvars, sess.run(tvars))}
        opt = rs._opt
        decay = {_vname(v): bool(opt._do_use_weight_decay(opt._get_variable_name(v.name))) for v in rs.vars}
        initializers = {_vname(v): _initializer_kind(v) for v in tvars}
        masked = cap["masked"]
        fetch = {"total": spec.loss, "gen": model.mlm_output.loss, "disc": cap["disc"].loss, "prenorm": prenorm,
                 "grads": rs.grads, "lr": lr_tensors,
                 "masking": {"generator_input": masked.input_ids, "positions": masked.masked_lm_positions,
                             "masked_ids": masked.masked_lm_ids, "weights": masked.masked_lm_weights,
                             "fake_input": cap["fake"].inputs.input_ids, "labels": cap["fake"].is_fake_tokens,
                             "sampled": tf.argmax(cap["fake"].sampled_tokens, -1, output_type=tf.int32)}}
        conf = {
            "arch_id": arch_id, "replicas": replicas, "per_replica": B, "seq_len": L, "max_predictions": N,
            "vocab_size": config.vocab_size, "do_lower_case": config.do_lower_case, "num_train_steps": config.num_train_steps,
            "num_warmup_steps": config.num_warmup_steps, "learning_rate": config.learning_rate,
            "weight_decay_rate": config.weight_decay_rate, "mask_prob": config.mask_prob, "gen_weight": config.gen_weight,
            "disc_weight": config.disc_weight, "embedding_size": config.embedding_size,
            "generator_hidden_size": config.generator_hidden_size, "use_tpu": config.use_tpu,
            "num_tpu_cores": config.num_tpu_cores, "train_batch_size": config.train_batch_size,
            "hparams": hparams, "seed": seed,
        }

    def steps_iter() -> Iterator[Step]:
        try:
            with graph.as_default():
                for step in range(steps):
                    x = pretraining_inputs(step, replicas * B, L, N, seed)
                    summed = None
                    rec = Step(step, {"total": [], "gen": [], "disc": []}, [], [], {}, {})
                    for r in range(replicas):
                        rows = slice(r * B, (r + 1) * B)
                        feed = {feats[k]: x[k][rows] for k in feats}
                        feed.update({noise[k]: x[k][rows] for k in noise})
                        f = dict(fetch)
                        if step in logits_steps:
                            f["logits"] = cap["mlm_logits"]
                        out = sess.run(f, feed)
                        for k in ("total", "gen", "disc"):
                            rec.losses[k].append(float(out[k]))
                        rec.grad_norm.append(float(out["prenorm"]))
                        rec.clipped_norm.append(float(np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64)))
                                                                  for g in out["grads"]))))
                        rec.masking.append(out["masking"])
                        if "logits" in out:
                            rec.logits.append(out["logits"])
                        summed = out["grads"] if summed is None else [a + g for a, g in zip(summed, out["grads"])]
                        rec.lr = out["lr"]
                    sess.run(spec.train_op, _update_feed(rs, summed, lr_tensors, rec.lr))
                    rec.weights = {_vname(v): val for v, val in zip(tvars, sess.run(tvars))}
                    yield rec
        finally:
            sess.close()
            tmp.cleanup()

    return Run(conf, init_values, initializers, decay, lr_keys, steps_iter())


# ----------------------------------------------------------------------------------------
# finetuning
# ----------------------------------------------------------------------------------------

def run_finetuning(arch_id: int = ARCH_ID, task: str = "rte", *, replicas: int = 8, per_replica: int = 4,
                   steps: int = 10, num_train_steps: int = 20, seed: int = 0,
                   upstream: Path | str = DEFAULT_UPSTREAM) -> Run:
    """Build arch ``arch_id``'s GLUE finetuning graph for ``task`` with
    ``run_finetuning.model_fn_builder`` (the runner's per-task hparams, plus dropout 0 and
    no checkpoint to restore: the initial weights are the graph's own, handed to the torch
    side) and return a :class:`Run` executing ``steps`` steps of a ``num_train_steps``
    schedule (warm-up ``0.1 * num_train_steps``, as ``warmup_proportion`` gives)."""
    S = _setup(Path(upstream))
    tf = S["tf"]
    rf, opt_mod = S["run_finetuning"], S["optimization"]
    from finetune.classification import classification_tasks as ct

    tmp = tempfile.TemporaryDirectory(prefix="tf_recipe_ft_")
    root = Path(tmp.name)
    data_dir = root / "electra_data"
    data_dir.mkdir()
    _write_stand_in_vocab(data_dir / "vocab.txt")
    model_name = f"nas{arch_id}"
    hp_path = _runner_hparams(arch_id, Path(upstream), root)
    ft_path = _runner_finetuning_hparams(hp_path, model_name, task, root)
    hparams = S["utils"].load_json(str(ft_path))
    hparams["model_hparam_overrides"].update(NO_DROPOUT)
    hparams["init_checkpoint"] = None  # the harness hands the graph's own initial weights to torch
    config = S["configure_finetuning"].FinetuningConfig(model_name, str(data_dir), **hparams)
    tasks = S["task_builder"].get_tasks(config)
    t = tasks[0]
    num_labels = len(t._label_list) if hasattr(t, "_label_list") else 0
    B, L = per_replica, config.max_seq_length

    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        feats = {k: tf.placeholder(tf.int32, [B, L], name=k) for k in ("input_ids", "input_mask", "segment_ids")}
        feats["task_id"] = tf.zeros([B], tf.int32)
        feats[f"{task}_eid"] = tf.zeros([B], tf.int32)
        label_key = f"{task}_label_ids" if num_labels else f"{task}_targets"
        labels = tf.placeholder(tf.int32 if num_labels else tf.float32, [B], name="labels")
        feats[label_key] = labels
        _ReplicaSum.instances.clear()
        with _patched(ct, "tf", _View(tf, {"nn.dropout": lambda x, keep_prob=None, **k: x})), \
                _patched(opt_mod, "tf", _View(tf, {"tpu.CrossShardOptimizer": _ReplicaSum})):
            spec = rf.model_fn_builder(config, tasks, num_train_steps)(feats, None, tf.estimator.ModeKeys.TRAIN,
                                                                      {"batch_size": B})
        rs = _ReplicaSum.instances[-1]
        lr_tensors, lr_keys = _lr_by_variable(tf, rs._opt.learning_rate, rs.vars)
        tvars = tf.trainable_variables()
        prenorm = _global_norm_tensor(graph)
        sess = _session(tf)
        sess.run(tf.global_variables_initializer())
        init_values = {_vname(v): val for v, val in zip(tvars, sess.run(tvars))}
        opt = rs._opt
        decay = {_vname(v): bool(opt._do_use_weight_decay(opt._get_variable_name(v.name))) for v in rs.vars}
        initializers = {_vname(v): _initializer_kind(v) for v in tvars}
        bert_config = S["training_utils"].get_bert_config(config)
        fetch = {"total": spec.loss, "prenorm": prenorm, "grads": rs.grads, "lr": lr_tensors}
        conf = {
            "arch_id": arch_id, "task": task, "num_labels": num_labels, "replicas": replicas, "per_replica": B,
            "seq_len": L, "num_train_steps": num_train_steps, "learning_rate": config.learning_rate,
            "layerwise_lr_decay": config.layerwise_lr_decay, "num_hidden_layers": bert_config.num_hidden_layers,
            "n_layers_built": len(config.model_hparam_overrides["nas_config"]["encoder_layers"]),
            "warmup_proportion": config.warmup_proportion, "weight_decay_rate": config.weight_decay_rate,
            "num_train_epochs": config.num_train_epochs, "train_batch_size": config.train_batch_size,
            "embedding_size": config.embedding_size, "double_unordered": config.double_unordered,
            "vocab_size": config.vocab_size, "do_lower_case": config.do_lower_case,
            "hidden_dropout_prob_default": S["modeling"].BertConfig(VOCAB_SIZE).hidden_dropout_prob,
            "hparams": hparams, "seed": seed,
        }

    def steps_iter() -> Iterator[Step]:
        try:
            with graph.as_default():
                for step in range(steps):
                    x = finetuning_inputs(step, replicas * B, L, num_labels, seed)
                    summed = None
                    rec = Step(step, {"total": []}, [], [], {}, {})
                    for r in range(replicas):
                        rows = slice(r * B, (r + 1) * B)
                        feed = {feats[k]: x[k][rows] for k in ("input_ids", "input_mask", "segment_ids")}
                        feed[labels] = x["labels"][rows]
                        out = sess.run(fetch, feed)
                        rec.losses["total"].append(float(out["total"]))
                        rec.grad_norm.append(float(out["prenorm"]))
                        rec.clipped_norm.append(float(np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64)))
                                                                  for g in out["grads"]))))
                        summed = out["grads"] if summed is None else [a + g for a, g in zip(summed, out["grads"])]
                        rec.lr = out["lr"]
                    sess.run(spec.train_op, _update_feed(rs, summed, lr_tensors, rec.lr))
                    rec.weights = {_vname(v): val for v, val in zip(tvars, sess.run(tvars))}
                    yield rec
        finally:
            sess.close()
            tmp.cleanup()

    return Run(conf, init_values, initializers, decay, lr_keys, steps_iter())


# ----------------------------------------------------------------------------------------
# the schedule, the loss scaling, the data, the scores
# ----------------------------------------------------------------------------------------

def learning_rates(num_train_steps: int, *, warmup_steps: int = 0, warmup_proportion: float = 0.0,
                   layerwise_lr_decay_power: float = -1, n_transformer_layers: int | None = None,
                   learning_rate: float = 5e-4, upstream: Path | str = DEFAULT_UPSTREAM,
                   steps: range | None = None) -> dict[str, np.ndarray]:
    """``create_optimizer``'s learning rate (one tensor, or one per layer-wise key) at every
    step of ``steps`` (default all ``num_train_steps``), evaluated by feeding the global step."""
    S = _setup(Path(upstream))
    tf, opt_mod = S["tf"], S["optimization"]
    graph = tf.Graph()
    with graph.as_default():
        with tf.variable_scope("task_specific"):  # a name that one layer-wise key matches
            w = tf.get_variable("w", [2])
        _ReplicaSum.instances.clear()
        with _patched(opt_mod, "tf", _View(tf, {"tpu.CrossShardOptimizer": _ReplicaSum})):
            opt_mod.create_optimizer(tf.reduce_sum(w * w), learning_rate, num_train_steps, weight_decay_rate=0.01,
                                     use_tpu=True, warmup_steps=warmup_steps, warmup_proportion=warmup_proportion,
                                     layerwise_lr_decay_power=layerwise_lr_decay_power,
                                     n_transformer_layers=n_transformer_layers)
        lr = _ReplicaSum.instances[-1]._opt.learning_rate
        lr = lr if isinstance(lr, dict) else {"": lr}
        gs = tf.train.get_or_create_global_step()
        keys = list(lr)
        with _session(tf) as sess:
            sess.run(tf.global_variables_initializer())
            f = sess.make_callable([lr[k] for k in keys], feed_list=[gs])
            rows = [f(s) for s in (steps or range(num_train_steps))]
    return {k: np.array([r[i] for r in rows], np.float32) for i, k in enumerate(keys)}


def tpu_gradient_path(arch_id: int = ARCH_ID, upstream: Path | str = DEFAULT_UPSTREAM) -> dict[str, Any]:
    """Build the pretraining graph with the *real* ``tf.tpu.CrossShardOptimizer`` (as on the
    TPU; the graph is built, never run) and describe what feeds each ``CrossReplicaSum``: the
    op types between it and the clipping, and whether the loss was scaled by 1/replicas."""
    S = _setup(Path(upstream))
    tf = S["tf"]
    rp = S["run_pretraining"]
    with tempfile.TemporaryDirectory(prefix="tf_recipe_tpu_") as tmp:
        root = Path(tmp)
        (root / "electra_data").mkdir()
        _write_stand_in_vocab(root / "electra_data" / "vocab.txt")
        hparams = S["utils"].load_json(str(_runner_hparams(arch_id, Path(upstream), root)))
        config = S["configure_pretraining"].PretrainingConfig(f"nas{arch_id}", str(root / "electra_data"), **hparams)
        graph = tf.Graph()
        with graph.as_default():
            B, L = 2, config.max_seq_length
            feats = {k: tf.zeros([B, L], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
            feats["input_mask"] = tf.ones([B, L], tf.int32)
            rp.model_fn_builder(config)(feats, None, tf.estimator.ModeKeys.TRAIN, {"batch_size": B})
            sums = [op for op in graph.get_operations() if op.type == "CrossReplicaSum"]
            inputs = sorted({op.inputs[0].op.name.split("/")[0] + "/" + op.inputs[0].op.type for op in sums})
            scaled = [op.name for op in graph.get_operations() if "CrossShardOptimizer" in op.name and op.type == "Mul"]
            return {"n_cross_replica_sums": len(sums), "n_trainable": len(tf.trainable_variables()),
                    "inputs": inputs, "loss_scaling_ops": scaled, "use_tpu": config.use_tpu,
                    "num_tpu_cores": config.num_tpu_cores}


def count_finetuning_steps(task: str, train_tsv_folder: Path, arch_id: int = ARCH_ID,
                           upstream: Path | str = DEFAULT_UPSTREAM) -> dict[str, Any]:
    """The number of finetuning steps ``ModelRunner`` trains ``task`` for on the GLUE folder
    ``train_tsv_folder`` (``Preprocessor.prepare_train``: featurise, pad to a multiple of the
    batch, ``int(n // batch * epochs)``), with the runner's per-task config."""
    S = _setup(Path(upstream))
    from finetune import preprocessing

    with tempfile.TemporaryDirectory(prefix="tf_recipe_count_") as tmp:
        root = Path(tmp)
        data_dir = root / "electra_data"
        (data_dir / "finetuning_data").mkdir(parents=True)
        _write_stand_in_vocab(data_dir / "vocab.txt")
        (data_dir / "finetuning_data" / task).symlink_to(Path(train_tsv_folder).resolve(), target_is_directory=True)
        hp = _runner_hparams(arch_id, Path(upstream), root)
        ft = _runner_finetuning_hparams(hp, f"nas{arch_id}", task, root)
        hparams = S["utils"].load_json(str(ft))
        config = S["configure_finetuning"].FinetuningConfig(f"nas{arch_id}", str(data_dir), **hparams)
        tasks = S["task_builder"].get_tasks(config)
        examples = tasks[0].get_examples("train")
        _, steps = preprocessing.Preprocessor(config, tasks).prepare_train()
        return {"steps": steps, "examples": len(examples), "epochs": config.num_train_epochs,
                "batch_size": config.train_batch_size}


def read_examples(task: str, folder: Path, split: str, upstream: Path | str = DEFAULT_UPSTREAM) -> list[tuple[tuple[str, ...], str]]:
    """``task.get_examples(split)`` of the authors' task class on a GLUE folder: ``((text_a[,
    text_b]), label)`` in their order (MRPC and STS train sets doubled by ``double_unordered``)."""
    S = _setup(Path(upstream))
    with tempfile.TemporaryDirectory(prefix="tf_recipe_read_") as tmp:
        root = Path(tmp)
        data_dir = root / "electra_data"
        (data_dir / "finetuning_data").mkdir(parents=True)
        _write_stand_in_vocab(data_dir / "vocab.txt")
        (data_dir / "finetuning_data" / task).symlink_to(Path(folder).resolve(), target_is_directory=True)
        config = S["configure_finetuning"].FinetuningConfig("nas", str(data_dir), task_names=[task])
        t = S["task_builder"].get_tasks(config)[0]
        return [((e.text_a,) if e.text_b is None else (e.text_a, e.text_b), e.label) for e in t.get_examples(split)]


def authors_score(task: str, preds: list[Any], golds: list[Any], upstream: Path | str = DEFAULT_UPSTREAM) -> dict[str, Any]:
    """Score predictions as the benchmark did: the task's scorer (``get_scorer()``),
    ``write_results`` into a results file, then the runner's ``save_results`` regex (read
    from ``nas_runner.ipynb``) on ``str(contents)`` of that file's bytes."""
    S = _setup(Path(upstream))
    import regex

    nb = json.loads((Path(upstream) / "training-free-nas/code/nas_runner.ipynb").read_text())
    src = "".join("".join(c["source"]) for c in nb["cells"] if "save_results" in "".join(c["source"]))
    pattern = re.search(r're\.search\("(.*?)", str\(contents\)\)', src).group(1)
    with tempfile.TemporaryDirectory(prefix="tf_recipe_score_") as tmp:
        config = S["configure_finetuning"].FinetuningConfig("nas", tmp, task_names=[task])
        t = S["task_builder"].get_task(config, task, None)
        scorer = t.get_scorer()
        key = "label_ids" if hasattr(t, "_label_list") else "targets"
        for p, g in zip(preds, golds):
            scorer.update({"loss": 0.0, key: g, "predictions": p})
        results = {task: dict(scorer.get_results())}
        S["run_finetuning"].write_results(config, [results])
        contents = Path(config.results_txt).read_bytes()
    value = float(regex.search(pattern, str(contents)).group())
    return {"score": value, "results": results[task], "file": contents.decode(), "pattern": pattern}
