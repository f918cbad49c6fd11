#!/usr/bin/env python
"""What the authors' TensorFlow code actually built for each benchmark architecture.

For every FlexiBERT benchmark arch (ids 0-499 of the release's ``BERT_benchmark.json``) this
script *executes* the authors' modified ELECTRA code (``training-free-nas/code/tensorflow-model``
in the upstream release folder, loaded from there by path, never copied) and records the
trainable variables it creates:

* the ELECTRA pretraining graph, built by ``run_pretraining.model_fn_builder(config)`` in
  ``TRAIN`` mode (``PretrainingModel``: generator + discriminator with shared embeddings, the
  two heads, and the optimizer), in a fresh ``tf.Graph`` on small constant inputs;
* the GLUE finetuning graph for one task (RTE), built by ``run_finetuning.model_fn_builder``
  in ``TRAIN`` mode; its encoder is restored (``tf.train.init_from_checkpoint``, called
  through the model_fn's TPU ``scaffold_fn`` as TPUEstimator would) from a checkpoint holding
  exactly the pretraining graph's variables (names, shapes, dtypes), and the script checks
  that every restored variable's initializer reads the checkpoint tensor of its own name.

The config reaches the code the way the authors' runner (``nas_runner.ipynb``) delivered it:
the runner ``json.loads`` the benchmark file, takes ``configs[id]["hparams"]``, appends the
Colab TPU address to ``tpu_name``, ``json.dump``s that to ``hparams.json`` and runs
``run_pretraining.py --hparams hparams.json``, whose ``main`` reads it back with
``util.utils.load_json`` and calls ``PretrainingConfig(model_name, data_dir, **hparams)``.
For finetuning the runner ``json.load``s ``hparams.json``, sets both batch sizes to 32, pops
``num_train_steps``, sets ``task_names`` and ``results_txt``, dumps ``hparams_finetuning.json``
and runs ``run_finetuning.py``, which loads it the same way. This script repeats those steps
(same file round trips, same upstream functions), so the strings that reach
``modeling.attention_layer`` are fresh objects decoded by ``json``, as in the real runs.

The only change to the upstream code's environment: ``model/modeling.py`` imports
``tensorflow.contrib.layers`` (TF 1.x only); a ``sys.modules`` entry points it at
``tf_slim.layers`` (the same ``layer_norm`` code). TF 2.x runs in ``tf.compat.v1`` with
``disable_v2_behavior()`` (the authors used TF 1.x). ``pretrain_helpers`` and the finetuning
tokenizer read a ``vocab.txt`` from the data folder; a stand-in with the uncased BERT size
(30,522) and the standard special-token ids is written to a temporary folder (it only sets
integer constants in the masking ops). ``tpu_name`` gets a placeholder address. Nothing is
trained or run: with ``use_tpu=True`` (as in the release's hparams) both graphs contain a
TPU-only ``CrossReplicaSum`` op, so no CPU session can run them; the checkpoint for the
finetuning restore is written from a fresh graph that re-creates the pretraining graph's
global variables by name.

Run from the repository root::

    /work/refvenv/bin/python tests/reference/tf_as_trained.py --upstream ../shared/upstream \
        --out tests/reference/data/tf_as_trained.json.gz [--ids 0-499] [--jobs 2]

Importable: ``build_arch(arch_id, upstream)`` returns the per-arch dict (loads TensorFlow
in the calling process on first use).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import gzip
import json
import multiprocessing
import os
import platform
import re
import shlex
import sys
import tempfile
import time
import types
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_UPSTREAM = REPO_ROOT.parent / "shared" / "upstream"
TF_MODEL_REL = "training-free-nas/code/tensorflow-model"
BENCHMARK_REL = "training-free-nas/data/BERT_benchmark.json"
RUNNER_REL = "training-free-nas/code/nas_runner.ipynb"
# what the runner appends to hparams["tpu_name"] (os.environ["COLAB_TPU_ADDR"]); unused here
COLAB_TPU_ADDR_PLACEHOLDER = "10.0.0.2:8470"
BATCH, SEQ = 2, 128  # input shape of the graphs built here (shapes of variables do not depend on it)
FINETUNE_TASK = "rte"
FINETUNE_NUM_TRAIN_STEPS = 778  # nominal (2,490 RTE train examples x 10 epochs / 32); no variable depends on it
VOCAB_SIZE = 30522
SPECIAL_TOKEN_IDS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
# op types that tell the attention variants apart in the graph (besides their variables)
SIGNATURE_OPS = {"Softmax", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "FFT", "FFT2D",
                 "RFFT", "RFFT2D", "Conv2D", "DepthwiseConv2dNative"}

_STATE: dict = {}  # per process: the upstream folder and the modules loaded from it


# ----------------------------------------------------------------------------------------
# loading the upstream code
# ----------------------------------------------------------------------------------------

def _setup(upstream: Path) -> dict:
    """Import TensorFlow and the authors' modules (once per process)."""
    upstream = Path(upstream).resolve()
    if _STATE.get("upstream") is not None:
        if _STATE["upstream"] != upstream:
            raise RuntimeError(f"this process already loaded the upstream code from {_STATE['upstream']}")
        return _STATE
    tf_model_dir = upstream / TF_MODEL_REL
    if not (tf_model_dir / "model" / "modeling.py").is_file():
        raise FileNotFoundError(f"authors' TensorFlow code not found in {tf_model_dir}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import warnings

    import tensorflow as tf2
    import tf_slim

    tf = tf2.compat.v1
    tf.disable_v2_behavior()
    tf.logging.set_verbosity(tf.logging.ERROR)

    # The one patch: `from tensorflow.contrib import layers as contrib_layers` (TF 1.x only).
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = tf_slim.layers
    sys.modules["tensorflow.contrib"] = contrib
    sys.modules["tensorflow.contrib.layers"] = tf_slim.layers

    sys.path.insert(0, str(tf_model_dir))
    with warnings.catch_warnings():
        # `operation_type is "SA"` etc. raise SyntaxWarning at compile time; executed as written
        warnings.simplefilter("ignore", SyntaxWarning)
        import configure_finetuning
        import configure_pretraining
        import run_finetuning
        import run_pretraining
        from finetune import task_builder
        from model import modeling, optimization
        from util import training_utils, utils

    _STATE.update(
        upstream=upstream, tf=tf, tf2=tf2, tf_slim=tf_slim, modeling=modeling,
        optimization=optimization, configure_pretraining=configure_pretraining,
        configure_finetuning=configure_finetuning, run_pretraining=run_pretraining,
        run_finetuning=run_finetuning, task_builder=task_builder,
        training_utils=training_utils, utils=utils,
    )
    return _STATE


def imported_upstream_files(upstream: Path) -> list[str]:
    """Upstream source files imported in this process, relative to the upstream folder."""
    upstream = Path(upstream).resolve()
    out = set()
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if not f:
            continue
        p = Path(f).resolve()
        if upstream in p.parents:
            out.add(p.relative_to(upstream).as_posix())
    return sorted(out)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------
# the runner's config plumbing
# ----------------------------------------------------------------------------------------

def _write_stand_in_vocab(path: Path) -> None:
    inv = {i: t for t, i in SPECIAL_TOKEN_IDS.items()}
    lines = []
    for i in range(VOCAB_SIZE):
        if i in inv:
            lines.append(inv[i])
        elif i < 1000:
            lines.append(f"[unused{i}]")
        else:
            lines.append(f"tok{i}")
    path.write_text("\n".join(lines) + "\n")


def _runner_hparams(arch_id: int, upstream: Path, workdir: Path) -> Path:
    """nas_runner.ipynb get_config(): json.loads the file, configs[id]['hparams'],
    tpu_name += COLAB_TPU_ADDR, json.dump(indent=4) to hparams.json. Returns that path."""
    configs = json.loads((upstream / BENCHMARK_REL).read_bytes())
    config = configs[arch_id]
    if config["id"] != arch_id:
        raise ValueError(f"configs[{arch_id}] has id {config['id']}")
    hparams = config["hparams"]
    hparams["tpu_name"] += COLAB_TPU_ADDR_PLACEHOLDER
    path = workdir / "hparams.json"
    with open(path, "w") as f:
        json.dump(hparams, f, indent=4)
    return path


def _runner_finetuning_hparams(hparams_path: Path, model_name: str, task: str, workdir: Path) -> Path:
    """nas_runner.ipynb run_finetuning(): the per-task hparams_finetuning.json."""
    with open(hparams_path) as f:
        hparams_finetuning = json.load(f)
    hparams_finetuning["eval_batch_size"] = 32
    hparams_finetuning["train_batch_size"] = 32
    hparams_finetuning.pop("num_train_steps")
    hparams_finetuning["task_names"] = [task]
    hparams_finetuning["results_txt"] = (
        "gs://bucket/electra_data/models/" + model_name + "/results/model." + task + "_results.txt")
    path = workdir / "hparams_finetuning.json"
    with open(path, "w") as f:
        json.dump(hparams_finetuning, f, indent=4)
    return path


# ----------------------------------------------------------------------------------------
# reading the built graphs
# ----------------------------------------------------------------------------------------

def _vname(v) -> str:
    return re.sub(r":\d+$", "", v.name)


def _shape(v) -> list[int]:
    return [int(d) for d in v.shape.as_list()]


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def attention_path(var_names: list[str], op_types: set[str]) -> str:
    """Which branch of modeling.attention_layer built these variables (names relative to
    the layer, e.g. 'attention/self/query/kernel'): 'SDP' (only query/key/value),
    'WMA' (+ weighted_query), 'LT-DFT' / 'LT-DCT' (input_layer, told apart by the FFT
    ops: fft -> FFT, dct -> RFFT), 'DSC' (+ conv_attn_*); 'UNKNOWN' otherwise."""
    sa = {n[len("attention/self/"):] for n in var_names if n.startswith("attention/self/")}
    qkv = {f"{p}/{k}" for p in ("query", "key", "value") for k in ("kernel", "bias")}
    if sa == qkv:
        return "SDP"
    if sa == qkv | {"weighted_query/kernel"}:
        return "WMA"
    if sa == {"input_layer/kernel", "input_layer/bias"}:
        if "FFT" in op_types and "RFFT" not in op_types:
            return "LT-DFT"
        if "RFFT" in op_types and "FFT" not in op_types:
            return "LT-DCT"
        return "LT-?"
    dsc = qkv | {"conv_attn_key/depthwise_kernel", "conv_attn_key/pointwise_kernel",
                 "conv_attn_key/bias", "conv_attn_kernel/kernel", "conv_attn_kernel/bias",
                 "conv_attn_point/kernel", "conv_attn_point/bias"}
    if sa == dsc:
        return "DSC"
    return "UNKNOWN"


def _attention_ops(graph, name_prefix: str):
    """Ops under name scope `name_prefix` (e.g. 'electra_1/encoder/layer_0/attention/self/')."""
    return [op for op in graph.get_operations() if op.name.startswith(name_prefix)]


def _encoder_name_scopes(graph) -> dict[str, str]:
    """Map variable-scope prefix ('generator', 'electra') -> the op name scope its encoder
    got (name scopes are uniquified separately from variable scopes)."""
    scopes = set()
    for op in graph.get_operations():
        m = re.match(r"^([^/]+)/encoder/layer_\d+/attention/self/", op.name)
        if m:
            scopes.add(m.group(1))
    out = {}
    for s in scopes:
        key = "generator" if s.startswith("generator") else ("electra" if s.startswith("electra") else s)
        if key in out:
            raise RuntimeError(f"two op name scopes for {key}: {out[key]}, {s}")
        out[key] = s
    return out


def _layer_record(graph, var_scope: str, name_scope: str, idx: int, variables: list,
                  heads_config: int) -> dict:
    prefix = f"{var_scope}/encoder/layer_{idx}/"
    lv = [(n[len(prefix):], s) for n, s in variables if n.startswith(prefix)]
    names = [n for n, _ in lv]
    ops = _attention_ops(graph, f"{name_scope}/encoder/layer_{idx}/attention/self/")
    op_types = {op.type for op in ops}
    heads_built = head_size_built = None
    softmax = [op for op in ops if op.type == "Softmax"]
    if softmax:
        heads_built = int(softmax[0].outputs[0].shape.as_list()[1])
    bmm = [op for op in ops if op.type.startswith("BatchMatMul")]
    if bmm:
        head_size_built = int(bmm[0].inputs[0].shape.as_list()[-1])
    # the feed-forward block: the `intermediate` dense layers in creation order, then output/dense
    ff = [s[-1] for n, s in lv if n.startswith("intermediate/") and n.endswith("/kernel")]
    out_k = [s[-1] for n, s in lv if n == "output/dense/kernel"]
    return {
        "layer": idx,
        "attention_path": attention_path(names, op_types),
        "attention_op_types": sorted(op_types & SIGNATURE_OPS),
        "heads_config": heads_config,
        "heads_built": heads_built,
        "head_size_built": head_size_built,
        "ff_widths": ff + out_k,
        "params": sum(_numel(s) for _, s in lv),
        "variables": [[n, s] for n, s in lv],
    }


def _scope_of(name: str) -> str:
    if name.startswith("electra/embeddings/"):
        return "embeddings"
    if name.startswith("electra/embeddings_project/"):
        return "discriminator_embeddings_project"
    if name.startswith("electra/encoder/"):
        return "discriminator_encoder"
    if name.startswith("generator/embeddings_project/"):
        return "generator_embeddings_project"
    if name.startswith("generator/encoder/"):
        return "generator_encoder"
    if name.startswith("generator_predictions/"):
        return "heads_generator_predictions"
    if name.startswith("discriminator_predictions/"):
        return "heads_discriminator_predictions"
    return "heads_other"


def _session_config(tf):
    return tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)


# ----------------------------------------------------------------------------------------
# one arch
# ----------------------------------------------------------------------------------------

def _features(tf, rng_seed: int) -> dict:
    import numpy as np

    rng = np.random.RandomState(rng_seed)
    ids = rng.randint(1000, VOCAB_SIZE, size=(BATCH, SEQ)).astype("int32")
    ids[:, 0] = SPECIAL_TOKEN_IDS["[CLS]"]
    ids[:, -1] = SPECIAL_TOKEN_IDS["[SEP]"]
    seg = np.zeros((BATCH, SEQ), "int32")
    seg[:, SEQ // 2:] = 1
    return {
        "input_ids": tf.constant(ids),
        "input_mask": tf.ones([BATCH, SEQ], tf.int32),
        "segment_ids": tf.constant(seg),
    }


def _string_identity(nas_config: dict, modeling) -> list[dict]:
    """For each layer: is the operation_type / operation_parameter object that reached the
    model *identical* (`is`) to one of attention_layer's string constants?"""
    consts = [c for c in modeling.attention_layer.__code__.co_consts if isinstance(c, str)]
    out = []
    for layer in nas_config["encoder_layers"]:
        out.append({
            "operation_type_is_code_constant": any(layer["operation_type"] is c for c in consts),
            "operation_parameter_is_code_constant": any(layer["operation_parameter"] is c for c in consts),
        })
    return out


def build_arch(arch_id: int, upstream: Path | str = DEFAULT_UPSTREAM, finetuning: bool = True) -> dict:
    """Build arch `arch_id`'s pretraining (and finetuning) graph with the authors' code and
    describe the trainable variables. Deterministic (no timings in the result)."""
    upstream = Path(upstream).resolve()
    S = _setup(upstream)
    tf, modeling = S["tf"], S["modeling"]
    release = json.loads((upstream / BENCHMARK_REL).read_bytes())[arch_id]
    given = release["hparams"]["model_hparam_overrides"]
    model_name = "nas" + str(arch_id)

    with tempfile.TemporaryDirectory(prefix=f"tf_as_trained_{arch_id}_") as tmp:
        tmp = Path(tmp)
        data_dir = tmp / "electra_data"
        data_dir.mkdir()
        _write_stand_in_vocab(data_dir / "vocab.txt")

        # ---------------- pretraining: run_pretraining.main(args) up to train_or_eval ----------
        hparams_path = _runner_hparams(arch_id, upstream, tmp)
        hparams = S["utils"].load_json(str(hparams_path))
        config = S["configure_pretraining"].PretrainingConfig(model_name, str(data_dir), **hparams)
        bert_config = S["training_utils"].get_bert_config(config)
        gen_config = S["run_pretraining"].get_generator_config(config, bert_config)
        identity = _string_identity(config.model_hparam_overrides["nas_config"], modeling)

        graph = tf.Graph()
        with graph.as_default():
            tf.set_random_seed(arch_id)
            features = _features(tf, arch_id)
            model_fn = S["run_pretraining"].model_fn_builder(config=config)
            spec = model_fn(features, None, tf.estimator.ModeKeys.TRAIN, {"batch_size": BATCH})
            if spec.train_op is None:
                raise RuntimeError("model_fn built no train_op")
            tvars = tf.trainable_variables()
            variables = [(_vname(v), _shape(v)) for v in tvars]
            gvars = tf.global_variables()
            slots = sorted(_vname(v) for v in gvars if re.search(r"/adam_[mv]$", _vname(v)))
            expected_slots = sorted(n + s for n, _ in variables for s in ("/adam_m", "/adam_v"))
            others = sorted(_vname(v) for v in gvars
                            if _vname(v) not in {n for n, _ in variables} and _vname(v) not in set(slots))
            scopes = _encoder_name_scopes(graph)

            counts = Counter()
            for n, s in variables:
                counts[_scope_of(n)] += _numel(s)
            groups = {}
            for n, s in variables:
                groups.setdefault(_scope_of(n), []).append([n, s])

            disc_layers = [
                _layer_record(graph, "electra", scopes["electra"], i, variables,
                              config.model_hparam_overrides["nas_config"]["encoder_layers"][i]["num_operation_heads"])
                for i in range(len(given["nas_config"]["encoder_layers"]))]
            gen_layers = [
                _layer_record(graph, "generator", scopes["generator"], i, variables,
                              gen_config.nas_config["encoder_layers"][i]["num_operation_heads"])
                for i in range(len(given["nas_config"]["encoder_layers"]))]
            n_layer_vars = sum(len(r["variables"]) for r in disc_layers + gen_layers)
            n_encoder_vars = sum(1 for n, _ in variables if "/encoder/" in n)
            if n_layer_vars != n_encoder_vars:
                raise RuntimeError(f"arch {arch_id}: encoder variables outside layer_0..layer_{len(disc_layers) - 1}")

            gen_proj = dict(groups.get("generator_embeddings_project", []))
            gen_hidden_built = gen_proj["generator/embeddings_project/kernel"][-1] if gen_proj else None
            disc_proj = dict(groups.get("discriminator_embeddings_project", []))
            emb = dict(groups["embeddings"])

            tnames = {n for n, _ in variables}
            ckpt_layout = [(_vname(v), _shape(v), v.dtype.base_dtype, _vname(v) in tnames) for v in gvars]

        ckpt_dir = data_dir / "models" / model_name
        if finetuning:
            _write_checkpoint(tf, ckpt_layout, ckpt_dir, arch_id)

        pc = {k: counts.get(k, 0) for k in (
            "embeddings", "discriminator_embeddings_project", "discriminator_encoder",
            "generator_embeddings_project", "generator_encoder",
            "heads_generator_predictions", "heads_discriminator_predictions", "heads_other")}
        pc["discriminator_total"] = pc["embeddings"] + pc["discriminator_embeddings_project"] + pc["discriminator_encoder"]
        pc["generator_total"] = pc["generator_embeddings_project"] + pc["generator_encoder"]
        pc["heads_total"] = (pc["heads_generator_predictions"] + pc["heads_discriminator_predictions"]
                             + pc["heads_other"])
        pc["total"] = sum(_numel(s) for _, s in variables)
        if pc["total"] != pc["discriminator_total"] + pc["generator_total"] + pc["heads_total"]:
            raise RuntimeError("parameter groups do not add up")

        rec = {
            "id": arch_id,
            "hidden_size": given["hidden_size"],
            "num_layers": len(given["nas_config"]["encoder_layers"]),
            "nas_config": given["nas_config"],
            "string_identity": identity,
            "pretraining_config": {
                k: getattr(config, k) for k in (
                    "model_size", "embedding_size", "vocab_size", "max_seq_length", "learning_rate",
                    "num_train_steps", "train_batch_size", "mask_prob", "gen_weight", "disc_weight",
                    "generator_hidden_size", "generator_layers", "untied_generator",
                    "untied_generator_embeddings", "electra_objective", "use_tpu")},
            "bert_config": {
                k: getattr(bert_config, k) for k in (
                    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                    "num_intermediate", "hidden_act", "is_weighted_multiplcative", "is_dft",
                    "is_dct", "is_dsc", "conv_kernel_size")},
            "param_counts": pc,
            "embeddings": {
                "variables": groups["embeddings"],
                "embedding_size": emb["electra/embeddings/word_embeddings"][-1],
                "discriminator_embeddings_project": groups.get("discriminator_embeddings_project", []),
                "discriminator_projects_to": disc_proj["electra/embeddings_project/kernel"][-1] if disc_proj else None,
            },
            "discriminator": {"layers": disc_layers},
            "generator": {
                "config": {k: getattr(gen_config, k) for k in (
                    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")},
                "hidden_size_built": gen_hidden_built,
                "intermediate_size_built": sorted({r["ff_widths"][0] for r in gen_layers}),
                "heads_built": [r["heads_built"] for r in gen_layers],
                "embeddings_project": groups.get("generator_embeddings_project", []),
                "layers": gen_layers,
            },
            "heads": {
                "generator_predictions": groups.get("heads_generator_predictions", []),
                "discriminator_predictions": groups.get("heads_discriminator_predictions", []),
                "other": groups.get("heads_other", []),
            },
            "optimizer": {
                "adam_slots_for_every_trainable_variable": slots == expected_slots,
                "other_non_trainable_variables": others,
            },
        }
        if finetuning:
            rec["finetuning"] = _finetuning_record(S, arch_id, hparams_path, model_name, data_dir,
                                                   ckpt_dir, variables)
    return rec


def _write_checkpoint(tf, layout, ckpt_dir: Path, seed: int) -> None:
    """A checkpoint with exactly the pretraining graph's global variables (names, shapes,
    dtypes). The pretraining graph itself cannot run on a CPU session (use_tpu=True puts a
    TPU-only CrossReplicaSum op in it), so the variables are re-created by name in a fresh
    graph; the values (truncated normal 0.02 / zeros) only serve the restore check."""
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        vs = []
        for name, shape, dtype, trainable in layout:
            init = (tf.truncated_normal_initializer(stddev=0.02) if trainable and dtype == tf.float32
                    else tf.zeros_initializer())
            vs.append(tf.get_variable(name, shape=shape, dtype=dtype, initializer=init, trainable=trainable))
        saver = tf.train.Saver(var_list=vs)
        with tf.Session(graph=graph, config=_session_config(tf)) as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, str(ckpt_dir / "model.ckpt"), global_step=0)


def _finetuning_record(S, arch_id, hparams_path, model_name, data_dir, ckpt_dir, pre_vars) -> dict:
    tf, modeling, optimization = S["tf"], S["modeling"], S["optimization"]
    ft_path = _runner_finetuning_hparams(hparams_path, model_name, FINETUNE_TASK, hparams_path.parent)
    hparams = S["utils"].load_json(str(ft_path))
    config = S["configure_finetuning"].FinetuningConfig(model_name, str(data_dir), **hparams)
    tasks = S["task_builder"].get_tasks(config)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(arch_id)
        features = _features(tf, arch_id)
        features["task_id"] = tf.zeros([BATCH], tf.int32)
        features[FINETUNE_TASK + "_label_ids"] = tf.constant([0, 1][:BATCH], tf.int32)
        features[FINETUNE_TASK + "_eid"] = tf.constant(list(range(BATCH)), tf.int32)
        model_fn = S["run_finetuning"].model_fn_builder(
            config=config, tasks=tasks, num_train_steps=FINETUNE_NUM_TRAIN_STEPS)
        spec = model_fn(features, None, tf.estimator.ModeKeys.TRAIN, {"batch_size": BATCH})
        if spec.scaffold_fn is not None:  # use_tpu: TPUEstimator calls this to restore
            spec.scaffold_fn()
        tvars = tf.trainable_variables()
        variables = [(_vname(v), _shape(v)) for v in tvars]
        assignment_map, _ = modeling.get_assignment_map_from_checkpoint(tvars, config.init_checkpoint)
        restored = set(assignment_map.values())
        # after init_from_checkpoint the initializer of a restored variable assigns the
        # checkpoint tensor of the same name (a RestoreV2 op); count those
        n_from_ckpt = 0
        for v in tvars:
            n = _vname(v)
            if n not in restored:
                continue
            init = v.initializer
            init = init if hasattr(init, "inputs") and hasattr(init, "type") else init.op
            src = init.inputs[1].op
            if src.type == "RestoreV2":
                names = tf.make_ndarray(src.inputs[1].op.get_attr("value"))
                n_from_ckpt += [x.decode() for x in names.ravel()] == [n]

    pre = {n: s for n, s in pre_vars}
    pre_disc = {n: s for n, s in pre_vars if n.startswith("electra/")}
    ft_electra = {n: s for n, s in variables if n.startswith("electra/")}
    not_restored = [[n, s] for n, s in variables if n not in restored]
    # learning rates: model_fn passes layerwise_lr_decay_power=config.layerwise_lr_decay,
    # n_transformer_layers=model.bert_config.num_hidden_layers; the optimizer gives each
    # variable the rate of every key contained in its name
    n_transformer_layers = S["training_utils"].get_bert_config(config).num_hidden_layers
    lrs = optimization._get_layer_lrs(1.0, config.layerwise_lr_decay, n_transformer_layers)
    key_counts = Counter()
    multi = []
    for n, _ in variables:
        keys = [k for k in lrs if k in n + ":0"]
        if len(keys) != 1:
            multi.append([n, keys])
        for k in keys:
            key_counts[k] += 1
    return {
        "task": FINETUNE_TASK,
        "config": {k: getattr(config, k) for k in (
            "task_names", "model_size", "embedding_size", "max_seq_length", "learning_rate",
            "layerwise_lr_decay", "num_train_epochs", "train_batch_size", "warmup_proportion",
            "weight_decay_rate", "use_tpu")},
        "trainable_params": sum(_numel(s) for _, s in variables),
        "encoder_params": sum(_numel(s) for s in ft_electra.values()),
        "encoder_equals_pretraining_discriminator": ft_electra == pre_disc,
        "restored_from_checkpoint": len(restored),
        "restored_initializers_read_checkpoint": n_from_ckpt,
        "restored_shapes_equal_pretraining": all(pre.get(n) == s for n, s in variables if n in restored),
        "not_restored": not_restored,
        "layerwise_lr": {
            "n_transformer_layers": n_transformer_layers,
            "multiplier_by_key": {k: lrs[k] for k in lrs if key_counts[k]},
            "variables_by_key": {k: key_counts[k] for k in lrs if key_counts[k]},
            "variables_not_matching_exactly_one_key": multi,
        },
    }


# ----------------------------------------------------------------------------------------
# controls: the detector recognises every branch, and interned strings would crash
# ----------------------------------------------------------------------------------------

def run_controls(upstream: Path | str = DEFAULT_UPSTREAM) -> dict:
    """Call modeling.attention_layer directly (H = 256, 4 heads) (a) with each variant's
    BertConfig flag, to show the variable/op detector recognises every branch, and (b) with
    operation_type strings *identical* to the code's constants (sys.intern), i.e. what
    would have happened had `is` matched."""
    S = _setup(Path(upstream))
    tf, modeling = S["tf"], S["modeling"]
    out = {"flags": {}, "interned_strings": {}}

    def build(**kw):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.zeros([BATCH * SEQ, 256])
            mask = tf.ones([BATCH, SEQ, SEQ])
            with tf.variable_scope("layer_0/attention/self"):
                ctx, _ = modeling.attention_layer(
                    from_tensor=x, to_tensor=x, attention_mask=mask, num_attention_heads=4,
                    size_per_head=64, do_return_2d_tensor=True, batch_size=BATCH,
                    from_seq_length=SEQ, to_seq_length=SEQ, **kw)
            names = [_vname(v)[len("layer_0/"):] for v in tf.trainable_variables()]
            ops = {op.type for op in graph.get_operations() if op.name.startswith("layer_0/attention/self/")}
            return {"attention_path": attention_path(names, ops), "context_width": int(ctx.shape[-1]),
                    "variables": [[_vname(v)[len("layer_0/"):], _shape(v)] for v in tf.trainable_variables()]}

    for name, kw in [("default", {}), ("is_weighted_multiplicative", {"is_weighted_multiplicative": True}),
                     ("is_dft", {"is_dft": True}), ("is_dct", {"is_dct": True}),
                     ("is_dsc_k9", {"is_dsc": True, "conv_kernel_size": 9})]:
        out["flags"][name] = build(**kw)
    for op_type, param in [("SA", "SDP"), ("SA", "WMA"), ("LT", "DFT"), ("LT", "DCT"), ("DSC", 5)]:
        t = sys.intern("".join(list(op_type)))  # a fresh string, then the interned object
        p = sys.intern("".join(list(param))) if isinstance(param, str) else param
        consts = [c for c in modeling.attention_layer.__code__.co_consts if isinstance(c, str)]
        res = {"operation_type_is_code_constant": any(t is c for c in consts)}
        try:
            r = build(operation_type=t, operation_parameter=p)
            res.update(raised=None, attention_path=r["attention_path"])
        except Exception as e:  # noqa: BLE001 - recording what the upstream code does
            res["raised"] = f"{type(e).__name__}: {e}"
        out["interned_strings"][f"{op_type}/{param}"] = res
    # and the json-decoded strings (as the runner delivered them) take the default path
    t = json.loads('["SA", "WMA"]')
    out["json_strings_SA/WMA"] = {"attention_path": build(operation_type=t[0], operation_parameter=t[1])["attention_path"]}
    return out


# ----------------------------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------------------------

def _worker_init(upstream: str) -> None:
    _setup(Path(upstream))


def _worker(arch_id: int, upstream: str, finetuning: bool):
    t0 = time.time()
    rec = build_arch(arch_id, upstream, finetuning=finetuning)
    return arch_id, rec, time.time() - t0, imported_upstream_files(Path(upstream))


def _parse_ids(spec: str) -> list[int]:
    ids = set()
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            ids.update(range(int(a), int(b) + 1))
        else:
            ids.add(int(part))
    return sorted(ids)


def summarize(archs: list[dict]) -> dict:
    paths = {"discriminator": Counter(), "generator": Counter()}
    by_op = Counter()
    ff_rule_ok = 0
    for a in archs:
        H = a["hidden_size"]
        for lay, given in zip(a["discriminator"]["layers"], a["nas_config"]["encoder_layers"]):
            paths["discriminator"][lay["attention_path"]] += 1
            key = f"{given['operation_type']}/{given['operation_parameter']}->{lay['attention_path']}"
            by_op[key] += 1
            n, F = given["num_feed_forward"], given["feed_forward_dimension"]
            ff_rule_ok += lay["ff_widths"] == [4 * H] + [F] * (n - 1) + [H]
        for lay in a["generator"]["layers"]:
            paths["generator"][lay["attention_path"]] += 1
    n_layers = sum(paths["discriminator"].values())
    return {
        "n_archs": len(archs),
        "archs_by_hidden_and_layers": dict(sorted(Counter(
            f"H{a['hidden_size']}/L{a['num_layers']}" for a in archs).items())),
        "n_discriminator_layers": n_layers,
        "attention_path_counts": {k: dict(sorted(v.items())) for k, v in paths.items()},
        "given_operation_to_attention_path": dict(sorted(by_op.items())),
        "discriminator_ff_widths_equal_4H_then_F_x_(n-1)_then_H": ff_rule_ok,
        "heads_built_equal_num_operation_heads": sum(
            lay["heads_built"] == lay["heads_config"] for a in archs
            for lay in a["discriminator"]["layers"] + a["generator"]["layers"]),
        "n_layers_total": sum(len(a["discriminator"]["layers"]) + len(a["generator"]["layers"]) for a in archs),
        "discriminator_embeddings_project_by_hidden": {
            str(h): sorted({a["embeddings"]["discriminator_projects_to"] for a in archs if a["hidden_size"] == h},
                           key=lambda x: (x is None, x or 0))
            for h in sorted({a["hidden_size"] for a in archs})},
        "generator_hidden_by_hidden": {
            str(h): sorted({a["generator"]["hidden_size_built"] for a in archs if a["hidden_size"] == h})
            for h in sorted({a["hidden_size"] for a in archs})},
        "any_string_identical_to_code_constant": any(
            v for a in archs for s in a["string_identity"] for v in s.values()),
        "finetuning_encoder_equals_pretraining_discriminator": sum(
            bool(a.get("finetuning", {}).get("encoder_equals_pretraining_discriminator")) for a in archs),
    }


def write_output(path: Path, provenance: dict, summary: dict, controls: dict, archs: list[dict]) -> None:
    """Compact JSON, one arch per line, written atomically."""
    sep = (",", ":")
    text = ("{\"provenance\":" + json.dumps(provenance, separators=sep) + ",\n"
            + "\"summary\":" + json.dumps(summary, separators=sep) + ",\n"
            + "\"controls\":" + json.dumps(controls, separators=sep) + ",\n"
            + "\"archs\":[\n" + ",\n".join(json.dumps(a, separators=sep) for a in archs) + "\n]}\n")
    json.loads(text)  # sanity
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:  # gzip for a .gz path (mtime 0: same input, same bytes)
            data = text.encode()
            f.write(gzip.compress(data, 9, mtime=0) if path.suffix == ".gz" else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for dist in ("tensorflow-cpu", "tensorflow", "tensorflow-estimator", "tf-slim", "numpy", "six",
                 "scipy", "scikit-learn"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", default=str(DEFAULT_UPSTREAM), help="the upstream release folder")
    ap.add_argument("--out", default=str(REPO_ROOT / "tests/reference/data/tf_as_trained.json.gz"))
    ap.add_argument("--ids", default="0-499", help="e.g. 0-499 or 0,5,17")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-finetuning", action="store_true", help="skip the finetuning graph")
    args = ap.parse_args(argv)

    upstream = Path(args.upstream).expanduser()
    if not upstream.is_absolute():
        upstream = (Path.cwd() / upstream)
    upstream = upstream.resolve()
    out = Path(args.out).expanduser()
    if not out.is_absolute():
        out = Path.cwd() / out
    ids = _parse_ids(args.ids)
    n_release = len(json.loads((upstream / BENCHMARK_REL).read_bytes()))
    bad = [i for i in ids if not 0 <= i < n_release]
    if bad:
        ap.error(f"ids out of range 0-{n_release - 1}: {bad[:5]}")
    finetuning = not args.no_finetuning
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.time()

    results: dict[int, dict] = {}
    files: set[str] = set()
    jobs = max(1, args.jobs)
    print(f"building {len(ids)} archs with {jobs} process(es) from {upstream / TF_MODEL_REL}", flush=True)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init,
                             initargs=(str(upstream),)) as pool:
        futs = [pool.submit(_worker, i, str(upstream), finetuning) for i in ids]
        # controls in the pool too (this process never imports TensorFlow)
        cfut = pool.submit(_controls_worker, str(upstream))
        for k, fut in enumerate(as_completed(futs), 1):
            arch_id, rec, dt, imported = fut.result()
            results[arch_id] = rec
            files.update(imported)
            el = time.time() - t0
            eta = el / k * (len(ids) - k)
            print(f"[{k}/{len(ids)}] arch {arch_id}: H={rec['hidden_size']} L={rec['num_layers']} "
                  f"total={rec['param_counts']['total']:,} disc={rec['param_counts']['discriminator_total']:,} "
                  f"{dt:.1f}s (elapsed {el:.0f}s, eta {eta:.0f}s)", flush=True)
        controls, imported = cfut.result()
        files.update(imported)

    archs = [results[i] for i in ids]
    read_files = sorted(files | {BENCHMARK_REL, RUNNER_REL})
    wall = time.time() - t0
    provenance = {
        "generated_by": "tests/reference/tf_as_trained.py",
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]) if argv is None
        else " ".join(shlex.quote(a) for a in [sys.executable, "tests/reference/tf_as_trained.py", *argv]),
        "cwd": str(Path.cwd()),
        "date_utc": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_time_s": round(wall, 1),
        "jobs": jobs,
        "versions": _versions(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "upstream_dir": str(upstream),
        "upstream_sha256": {f: sha256_file(upstream / f) for f in read_files},
        "method": {
            "pretraining": "run_pretraining.model_fn_builder(config)(features, None, TRAIN, params) "
                           "in a fresh tf.Graph; config = PretrainingConfig('nas<id>', data_dir, "
                           "**utils.load_json(hparams.json)) with hparams.json written as nas_runner.ipynb "
                           "get_config() writes it",
            "finetuning": f"run_finetuning.model_fn_builder(config, task_builder.get_tasks(config), "
                          f"{FINETUNE_NUM_TRAIN_STEPS})(features, None, TRAIN, params), task "
                          f"'{FINETUNE_TASK}', hparams_finetuning.json as nas_runner.ipynb run_finetuning() "
                          "writes it; the TPU scaffold_fn (init_from_checkpoint) is called, restoring from "
                          "a checkpoint of the pretraining graph built just before" if finetuning else None,
            "inputs": f"constant int32 input_ids/input_mask/segment_ids of shape [{BATCH}, {SEQ}]",
            "patches": ["sys.modules['tensorflow.contrib'] / ['tensorflow.contrib.layers'] -> tf_slim.layers "
                        "(modeling.py imports tensorflow.contrib.layers for layer_norm)"],
            "environment": ["tf.compat.v1.disable_v2_behavior()",
                            f"stand-in vocab.txt: {VOCAB_SIZE} tokens, special ids {SPECIAL_TOKEN_IDS}",
                            f"tpu_name += '{COLAB_TPU_ADDR_PLACEHOLDER}' (placeholder for COLAB_TPU_ADDR)"],
            "not_patched": "attention_layer's `is` comparisons run as written",
        },
    }
    summary = summarize(archs)
    write_output(out, provenance, summary, controls, archs)
    print(f"wrote {len(archs)} archs to {out} in {wall:.0f}s", flush=True)
    print(json.dumps(summary, indent=1), flush=True)
    return 0


def _controls_worker(upstream: str):
    c = run_controls(Path(upstream))
    return c, imported_upstream_files(Path(upstream))


if __name__ == "__main__":
    sys.exit(main())
