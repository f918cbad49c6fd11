"""Turn the authors' release files into the project's parquet tables.

Input is a folder laid out like ``shared/upstream`` (see ``SOURCES.md`` there), or a
base URL serving the same layout, or the ``github`` preset that fetches each file from
the authors' repositories at the pinned commits. Output is a data directory written by
:func:`nasbench_bert.data.tables.write_dataset` (atomic, with a checksummed manifest).

The build is deterministic: the same release files give byte-identical tables. Floats
are parsed with Python's ``float`` (CSV) and ``json`` (JSON), which round-trip the
release's decimal strings exactly, so every stored value equals the release value.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Any, Iterable, Literal

import pyarrow as pa

from ..atomic import atomic_path
from ..errors import DataIntegrityError, DataNotFoundError
from ..sizes import PTB_VOCAB, flexibert_num_params, nlp_num_params
from ..spaces.flexibert import Arch
from ..spaces.nlp import recipe_hash
from .nlp_logs import PTB_LOGS, PTB_LOGS_TABLE, find_ptb_logs, nlp_logs_table, ptb_logs_table, read_logs
from .proxy_values import TABLE as PROXY_VALUES
from .proxy_values import check_arch_list
from .proxy_values import for_build as proxy_values_for_build
from .tables import (
    FLEXIBERT_PROXY_COLUMNS,
    GLUE_TASKS,
    GRAPH2VEC_COLUMNS,
    NLP_PROXY_COLUMNS,
    RELEASE_TASK_NAMES,
    sha256_file,
    user_cache_dir,
    write_dataset,
)

#: the WikiText-2 logs' table (the builder of every NAS-Bench-NLP logs table, :mod:`.nlp_logs`)
nlp_wikitext2_table = nlp_logs_table

#: release files (relative to the release folder) -> what they feed
FILES: dict[str, str] = {
    "training-free-nas/data/BERT_benchmark.json": "flexibert",
    "training-free-nas/data/BERT_benchmark_train_ablation.json": "flexibert_curves",
    "training-free-nas/data/BERT_results_activation.csv": "flexibert_proxies",
    "training-free-nas/data/RNN_results.csv": "nlp_ptb",
    "training-free-nas/data/RNN_parameters.csv": "nlp_ptb",
    "nas-bench-nlp/data/doc2vec_features_lowdim.csv": "nlp_ptb, nlp_wikitext2",
    "nas-bench-nlp/train_logs_wikitext-2/logs.zip": "nlp_wikitext2",
}

#: sha256 of every release file at the pinned commits: a copy that differs is refused
#: (``DataIntegrityError``) unless the build is told it is a deliberately modified release
PINNED_SHA256: dict[str, str] = {
    "training-free-nas/data/BERT_benchmark.json": "fa2ff7198dcd71e0b8021ed2ace1c221672c33cc56931b6dff31fda3d044784f",
    "training-free-nas/data/BERT_benchmark_train_ablation.json": "9b4c5d93814cbb5b506c156a3f9b39a8c023af33b167cc1791cb98768f46eab3",
    "training-free-nas/data/BERT_results_activation.csv": "95fb60a0e702102d6b09a60d13745068270aa28183b7cc8dacb79d5ec6a4b36d",
    "training-free-nas/data/RNN_results.csv": "4f084a9b437e4f89475ddb2ada896de2d6cb32268c59924e5542dbf017b90852",
    "training-free-nas/data/RNN_parameters.csv": "536548fa3eb073264b7db8c2fa4625ac6e2333aee0ba0f67b4b154048ac86428",
    "nas-bench-nlp/data/doc2vec_features_lowdim.csv": "85cf5bfd28650ea00c649860d3bdcacfaea7de1b6c4a9d7e483020a6cb3ae7e8",
    "nas-bench-nlp/train_logs_wikitext-2/logs.zip": "f5052d6bea6398001e32c986322a243e8cdedffa906caf242eb0a62ee105aa12",
}
#: rows each table has when built from the pinned release
PINNED_ROWS: dict[str, int] = {"flexibert": 500, "flexibert_curves": 315, "flexibert_proxies": 500, "nlp_ptb": 8794,
                               "nlp_wikitext2": 345}
#: the package's own hardware measurement (not a release file, never committed): the files
#: ``python -m nasbench_bert.builders.hardware`` writes, joined into the tables by arch id
MEASURED_HARDWARE = ("flexibert_hardware.parquet", "flexibert_hardware.json")


def hardware_dir() -> Path:
    """Where a hardware measurement is looked for, and written by default:
    ``$NASBENCH_BERT_HARDWARE``, else ``<user cache>/measured``."""
    env = os.environ.get("NASBENCH_BERT_HARDWARE")
    return Path(env) if env else user_cache_dir() / "measured"
#: columns the release leaves empty for some rows; every other column must be filled in every row
NULLABLE: dict[str, tuple[str, ...]] = {
    "flexibert": ("l2_", "l3_"),
    "nlp_ptb": ("recipe", "g2v_"),
    "nlp_wikitext2": ("g2v_",),
    "proxy_values": ("",),  # each row fills its own benchmark's key and proxies only
    PTB_LOGS_TABLE: ("g2v_",),
}
_FIX = ("fetch the release files again (`nasbench-bert build-data --release github --force`), or build from a "
        "deliberately modified release with `--allow-modified-release` (recorded in the manifest)")

#: the authors' repositories at the commits the project was built from
GITHUB = {
    "training-free-nas/": "https://raw.githubusercontent.com/aaronserianni/training-free-nas/2d76e01/",
    "nas-bench-nlp/": "https://raw.githubusercontent.com/fmsnew/nas-bench-nlp-release/a6d90a3/",
}

MAX_LAYERS = 4
LAYER_COLUMNS = ("op", "param", "heads", "ff_dim", "num_ff")


# -- fetching ----------------------------------------------------------------------------
def fetch_release(source: str | os.PathLike[str], workdir: Path | None = None) -> Path:
    """Return a local folder with every file in :data:`FILES`.

    ``source`` is a folder, a base URL (``http(s)://host/path/`` with the same layout),
    or ``"github"`` for the authors' repositories at the pinned commits. Downloads go to
    a temporary file first and are renamed into place, so an interrupted download never
    leaves a truncated file behind.
    """
    s = os.fspath(source)
    github = s == "github"  # the authors' repositories, else a folder or a base URL
    if not github and not s.startswith(("http://", "https://", "file://")):
        p = Path(s)
        if not p.is_dir():
            raise DataNotFoundError(f"release folder {p} does not exist; pass a folder with the layout of shared/upstream "
                                    "(see SOURCES.md), a base URL, or 'github'")
        missing = [f for f in FILES if not (p / f).is_file()]
        if missing:
            raise DataNotFoundError(f"release folder {p} lacks {missing}; expected the layout of shared/upstream (see SOURCES.md)")
        return p
    dest = Path(workdir or tempfile.mkdtemp(prefix="nasbench-bert-release-"))
    for rel in FILES:
        if github:
            prefix = next(k for k in GITHUB if rel.startswith(k))
            url = GITHUB[prefix] + rel[len(prefix):]
        else:
            url = urllib.parse.urljoin(s.rstrip("/") + "/", rel)
        out = dest / rel
        if out.is_file():
            continue
        try:
            with atomic_path(out) as tmp, urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
                shutil.copyfileobj(r, f)
        except OSError as e:
            raise DataNotFoundError(f"cannot download release file {rel} from {url}: {e}") from None
    return dest


# -- parsing helpers ---------------------------------------------------------------------
def _csv_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8-sig") as f:  # RNN_results.csv starts with a BOM
        rows = list(csv.reader(f))
    return rows[0], [r for r in rows[1:] if r]


def _num(s: str) -> float:
    """Exact float of a CSV cell; 'nan' / '' become NaN (the release's missing marker)."""
    return math.nan if s.strip() in ("", "nan", "NaN") else float(s)


def _recipe_id_from_log(name: str) -> tuple[int, str, int]:
    """``log_stats_model_<recipe>_<date>_<time>_<experiment>.json`` -> its three parts."""
    stem = name[: -len(".json")] if name.endswith(".json") else name
    parts = stem.split("_")
    if len(parts) != 7 or parts[:3] != ["log", "stats", "model"]:
        raise DataIntegrityError(f"unexpected NAS-Bench-NLP log name {name!r}")
    return int(parts[3]), f"{parts[4]}_{parts[5]}", int(parts[6])


# -- FlexiBERT -----------------------------------------------------------------------------
def flexibert_table(entries: list[dict[str, Any]]) -> pa.Table:
    if not isinstance(entries, list) or not entries:
        raise DataIntegrityError("BERT_benchmark.json must be a non-empty JSON list of architecture entries")
    entries = sorted(entries, key=lambda e: e["id"])
    ids = [e["id"] for e in entries]
    if ids != list(range(len(ids))):
        raise DataIntegrityError("BERT_benchmark.json ids are not 0..N-1")
    archs = [Arch.from_release(e["hparams"]["model_hparam_overrides"]) for e in entries]
    cols: dict[str, Any] = {
        "id": pa.array(ids, pa.int32()),
        "arch": pa.array([str(a) for a in archs], pa.string()),
        "space_index": pa.array([a.index for a in archs], pa.int64()),
        "hidden_size": pa.array([a.hidden_size for a in archs], pa.int16()),
        "num_layers": pa.array([a.num_layers for a in archs], pa.int8()),
    }
    for i in range(MAX_LAYERS):
        ls = [a.layers[i] if i < a.num_layers else None for a in archs]
        cols[f"l{i}_op"] = pa.array([x.operation_type if x else None for x in ls], pa.string())
        cols[f"l{i}_param"] = pa.array([str(x.operation_parameter) if x else None for x in ls], pa.string())
        cols[f"l{i}_heads"] = pa.array([x.num_operation_heads if x else None for x in ls], pa.int8())
        cols[f"l{i}_ff_dim"] = pa.array([x.feed_forward_dimension if x else None for x in ls], pa.int16())
        cols[f"l{i}_num_ff"] = pa.array([x.num_feed_forward if x else None for x in ls], pa.int8())
    for rel, name in RELEASE_TASK_NAMES.items():
        cols[name] = pa.array([float(e["scores"][rel]) for e in entries], pa.float64())
    cols["glue"] = pa.array([float(e["scores"]["glue"]) for e in entries], pa.float64())
    cols["time_to_train"] = pa.array([float(e["time_to_train"]) for e in entries], pa.float64())
    cols["completed"] = pa.array([bool(e["completed"]) for e in entries], pa.bool_())
    hp_keys = sorted({k for e in entries for k in e["hparams"]} - {"model_hparam_overrides"})
    for k in hp_keys:
        vals = [e["hparams"].get(k) for e in entries]
        cols[f"hp_{k}"] = pa.array(vals)
    for sem in ("as_specified", "authors", "as_trained"):  # one column per semantics, named by it (docs/data.md)
        cols[f"num_params_{sem}"] = pa.array([flexibert_num_params(a, sem) for a in archs], pa.int64())
    cols["pretrain_steps"] = pa.array([int(e["hparams"]["num_train_steps"]) for e in entries], pa.int32())
    meta = {
        b"num_params_as_specified": b"semantics as_specified: the arch as the paper's Table 1 specifies it (encoder only, no task heads); data release 1 called it num_params",
        b"num_params_authors": b"semantics authors: the authors' PyTorch proxy model, on which the stored proxies were computed; equals the stored 'Number of Parameters'; data release 1 called it num_params_seed_compat",
        b"num_params_as_trained": b"semantics as_trained: the encoder the authors' TensorFlow code built and trained (equals its trainable variables for all 500 archs)",
        b"operations": b"The authors' TensorFlow code compared operation types with 'is', so every layer was trained as scaled dot-product attention (semantics as_trained; see docs/errata.md)",
        b"tasks": b"GLUE dev scores x100: cola=MCC, stsb=Pearson (the authors' scorer), others accuracy; glue = release mean of the 8 tasks",
    }
    return pa.table(cols).replace_schema_metadata(meta)


def measured_hardware(folder: str | os.PathLike[str] | None = None) -> tuple[pa.Table, dict[str, Any], str] | None:
    """The hardware measurement in ``folder`` (default :func:`hardware_dir`): its table,
    sidecar JSON and table sha256; None when there is none. A present but unreadable
    one raises :class:`DataIntegrityError` naming the file."""
    import pyarrow.parquet as pq

    d = Path(folder) if folder is not None else hardware_dir()
    tp, mp = d / MEASURED_HARDWARE[0], d / MEASURED_HARDWARE[1]
    if not tp.is_file():
        return None
    name = tp
    try:
        table, sha = pq.read_table(tp), sha256_file(tp)
        name = mp
        meta = json.loads(mp.read_text(encoding="utf-8"))
    except (OSError, ValueError, pa.ArrowException) as e:
        raise DataIntegrityError(f"hardware measurement {name} cannot be read ({type(e).__name__}: {e}); measure again "
                                 "with `python -m nasbench_bert.builders.hardware`") from None
    if not isinstance(meta, dict) or "machine" not in meta:
        raise DataIntegrityError(f"{mp} has no 'machine'; measure again with `python -m nasbench_bert.builders.hardware`")
    return table, meta, sha


def arch_sha(arch: str) -> str:
    """The first 16 hex digits of the sha256 of a canonical arch string: the join check
    between a hardware measurement and the release's arch list."""
    return hashlib.sha256(arch.encode()).hexdigest()[:16]


def flexibert_hardware_table(flexibert: pa.Table, measured: pa.Table) -> pa.Table:
    """The measured hardware rows joined to the release's arch ids. Each row's
    ``arch_sha`` must equal the sha256 prefix of the release's arch string for its id, so
    a measurement can never be attached to another arch."""

    arch_of = dict(zip(flexibert.column("id").to_pylist(), flexibert.column("arch").to_pylist()))
    ids, shas = measured.column("arch_id").to_pylist(), measured.column("arch_sha").to_pylist()
    archs = []
    for i, h in zip(ids, shas):
        a = arch_of.get(i)
        if a is None or arch_sha(a) != h:
            raise DataIntegrityError(f"measured hardware row for arch id {i} does not match the release's arch "
                                     f"{a!r} (arch_sha {h}); rebuild it with `python -m nasbench_bert.builders.hardware`")
        archs.append(a)
    t = measured.rename_columns([{"arch_id": "id"}.get(c, c) for c in measured.column_names])
    t = t.add_column(1, "arch", pa.array(archs, pa.string()))
    return t.replace_schema_metadata({
        b"description": b"CPU latency (encoder forward, sequence 128, median of repeats), peak memory (weights + the "
                        b"allocator's peak in one forward) and FLOPs per arch id and semantics; the machine is in the "
                        b"manifest ('hardware'); see nasbench_bert.hardware"})


def flexibert_curves_table(ablation: list[dict[str, Any]], bench: list[dict[str, Any]]) -> pa.Table:
    by_id = {e["id"]: e for e in bench}
    rows = []
    for e in sorted(ablation, key=lambda e: e["id"]):
        if not e["scores"]:
            continue  # arch listed without a curve (not all re-pretraining runs finished)
        if e["hparams"]["model_hparam_overrides"] != by_id[e["id"]]["hparams"]["model_hparam_overrides"]:
            raise DataIntegrityError(f"ablation arch {e['id']} differs from benchmark arch {e['id']}")
        for steps, sc in sorted(e["scores"].items(), key=lambda kv: int(kv[0])):
            rows.append((e["id"], int(steps), [float(sc[k]) for k in RELEASE_TASK_NAMES], float(sc["glue"]), e["time_to_train"]))
    cols: dict[str, Any] = {
        "id": pa.array([r[0] for r in rows], pa.int32()),
        "steps": pa.array([r[1] for r in rows], pa.int32()),
    }
    for j, name in enumerate(GLUE_TASKS):
        cols[name] = pa.array([r[2][j] for r in rows], pa.float64())
    cols["glue"] = pa.array([r[3] for r in rows], pa.float64())
    cols["run_time_to_train"] = pa.array([float(r[4]) for r in rows], pa.float64())
    status, corrected = curve_point_status(rows)
    cols["status"] = pa.array(status, pa.string())
    cols["glue_corrected"] = pa.array(corrected, pa.float64())
    meta = {
        b"glue": b"the release's value as stored (see status)",
        b"status": b"ok; recovered: the release stored the sum of this and the later checkpoint's GLUE, and the task "
                   b"scores are the later checkpoint's; lost: GLUE and task scores are the later checkpoint's (the "
                   b"authors' save_results matched model.50000 to model.500000.* and model.100000 to model.1000000.*)",
        b"glue_corrected": b"GLUE of this checkpoint: the release's where status is ok, recovered where it can be, "
                           b"NaN where it is lost",
    }
    return pa.table(cols).replace_schema_metadata(meta)


#: checkpoints whose result files share a name prefix with a later one's in the authors'
#: ``save_results`` (``nas_ablation.ipynb`` globs ``results/model.<steps>*``)
PREFIX_COLLISIONS: dict[int, int] = {50_000: 500_000, 100_000: 1_000_000}


def curve_point_status(rows: list[tuple[Any, ...]]) -> tuple[list[str], list[float]]:
    """Per curve row ``(id, steps, task scores, glue, time)``: its status and corrected GLUE.

    The authors' ``save_results`` collected a checkpoint's result files by the prefix
    ``results/model.<steps>``, so the 50,000- and 100,000-step points also picked up the
    500,000- and 1,000,000-step files. Where that happened the stored task scores equal
    the later checkpoint's exactly; the stored GLUE is then either the later one's too
    (``lost``) or both means added up (above 100: ``recovered`` by subtraction).
    """
    at = {(r[0], r[1]): r for r in rows}
    status, corrected = [], []
    for r in rows:
        later = at.get((r[0], PREFIX_COLLISIONS.get(r[1], -1)))
        if later is None or r[2] != later[2]:
            status.append("ok")
            corrected.append(r[3])
        elif r[3] > 100:
            status.append("recovered")
            corrected.append(r[3] - later[3])
        else:
            status.append("lost")
            corrected.append(float("nan"))
    return status, corrected


def stored_hook_multiplicity(bench: list[dict[str, Any]]) -> dict[int, int]:
    """How many times the authors' activation hook fired per activation call, per id.

    The stored raw "Activation Distance" is this many times the per-pass value: in the
    transformers version the proxy notebook ran under, every layer's GELU was one shared
    module, and the sweep added a hook to it for every layer of every arch built in the
    same Jupyter kernel, each appending to the current arch's list. The kernel began with
    26 layers' hooks in place and was restarted at id 365. This reconstruction explains
    raw / normalised for 500/500 archs (``tests/test_semantics.py``).
    """
    out, n = {}, 26
    for e in sorted(bench, key=lambda e: e["id"]):
        if e["id"] == 365:
            n = 0
        n += len(e["hparams"]["model_hparam_overrides"]["nas_config"]["encoder_layers"])
        out[e["id"]] = n
    return out


#: the stored proxy columns that are counts (int64); the others are scores (float64)
_COUNT_COLUMNS = frozenset({"num_params_authors"})


def flexibert_proxies_table(path: Path, bench: list[dict[str, Any]]) -> pa.Table:
    header, rows = _csv_rows(path)
    want = ["ID", "GLUE Score", *FLEXIBERT_PROXY_COLUMNS]
    if header != want:
        raise DataIntegrityError(f"{path.name}: columns {header} != expected {want}")
    rows = sorted(rows, key=lambda r: int(r[0]))
    glue = {e["id"]: e["scores"]["glue"] for e in bench}
    for r in rows:
        if float(r[1]) != glue[int(r[0])]:
            raise DataIntegrityError(f"{path.name}: GLUE score of arch {r[0]} differs from BERT_benchmark.json")
    cols: dict[str, Any] = {"id": pa.array([int(r[0]) for r in rows], pa.int32())}
    for j, (src, name) in enumerate(FLEXIBERT_PROXY_COLUMNS.items(), start=2):
        if name in _COUNT_COLUMNS:
            cols[name] = pa.array([int(float(r[j])) for r in rows], pa.int64())
        else:
            cols[name] = pa.array([_num(r[j]) for r in rows], pa.float64())
    mult = stored_hook_multiplicity(bench)
    cols["activation_distance_hook_multiplicity"] = pa.array([mult[int(r[0])] for r in rows], pa.int32())
    meta = {b"semantics": b"authors", b"jacobian_cosine": b"the CSV column 'Jacobian Score Normalized'",
            b"num_params_authors": b"the CSV column 'Number of Parameters' (the authors model); data release 1 called it "
                                   b"num_params_seed_compat",
            b"activation_distance_hook_multiplicity": b"the stored raw activation_distance is this many times the per-pass "
                                                      b"value (the notebook's hooks accumulated; see docs/errata.md)"}
    return pa.table(cols).replace_schema_metadata(meta)


# -- NAS-Bench-NLP ------------------------------------------------------------------------
def _graph2vec(path: Path) -> dict[int, list[float]]:
    header, rows = _csv_rows(path)
    if header != ["recepie_id", *(f"v{i:02d}" for i in range(10))]:
        raise DataIntegrityError(f"{path.name}: unexpected columns {header}")
    return {int(r[0]): [float(v) for v in r[1:]] for r in rows}


def _parameter_counts(path: Path) -> dict[str, tuple[int, int]]:
    """log name -> (trainable, total) parameters from ``RNN_parameters.csv``.

    The released file is several CSV dumps concatenated: one header is glued onto the
    last field of a row (``...,12738000log name,loss,...``), header lines recur, and
    some log names repeat with all-``nan`` rows. This parser repairs exactly those
    glitches, keeps the rows that carry counts, and refuses to guess when two rows with
    counts disagree.
    """
    out: dict[str, tuple[int, int]] = {}
    with open(path, encoding="utf-8-sig") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines[1:], start=2):
        if line.startswith("log name") or not line.strip():
            continue  # a repeated header
        glued = line.find("log name")
        if glued > 0:
            line = line[:glued]
        r = next(csv.reader([line]))
        if len(r) != 6:
            raise DataIntegrityError(f"{path.name} line {n}: expected 6 fields, got {len(r)}")
        if r[5].strip() in ("nan", ""):
            continue
        val = (int(float(r[4])), int(float(r[5])))
        if out.get(r[0], val) != val:
            raise DataIntegrityError(f"{path.name}: conflicting parameter counts for {r[0]}")
        out[r[0]] = val
    return out


def nlp_ptb_table(results: Path, params: Path, g2v: dict[int, list[float]], wt2: list[dict[str, Any]]) -> pa.Table:
    header, rows = _csv_rows(results)
    want = ["log name", "loss", "perplexity", "bits per word", *NLP_PROXY_COLUMNS]
    if header != want:
        raise DataIntegrityError(f"{results.name}: columns {header} != expected {want}")
    counts = _parameter_counts(params)
    recipes: dict[int, str] = {}
    for d in wt2:
        recipes.setdefault(int(d["recepie_id"]), json.dumps(json.loads(d["recepie"]), sort_keys=True))
    rows = sorted(rows, key=lambda r: r[0])
    parsed = [_recipe_id_from_log(r[0]) for r in rows]
    cols: dict[str, Any] = {
        "log_name": pa.array([r[0] for r in rows], pa.string()),
        "recipe_id": pa.array([p[0] for p in parsed], pa.int64()),
        "experiment_id": pa.array([p[2] for p in parsed], pa.int64()),
        "init_time": pa.array([p[1] for p in parsed], pa.string()),
        "test_loss": pa.array([_num(r[1]) for r in rows], pa.float64()),
        "perplexity": pa.array([_num(r[2]) for r in rows], pa.float64()),
        "bits_per_word": pa.array([_num(r[3]) for r in rows], pa.float64()),
        "num_params": pa.array([counts[r[0]][1] if r[0] in counts else None for r in rows], pa.int64()),
        "num_trainable_params": pa.array([counts[r[0]][0] if r[0] in counts else None for r in rows], pa.int64()),
    }
    for j, name in enumerate(NLP_PROXY_COLUMNS.values(), start=4):
        cols[name] = pa.array([_num(r[j]) for r in rows], pa.float64())
    rec = [recipes.get(p[0]) for p in parsed]
    cols["recipe"] = pa.array(rec, pa.string())
    cols["recipe_hash"] = pa.array([recipe_hash(x) if x else None for x in rec], pa.string())
    cols["recipe_num_params"] = pa.array([nlp_num_params(x, PTB_VOCAB) if x else None for x in rec], pa.int64())
    for i, c in enumerate(GRAPH2VEC_COLUMNS):
        cols[c] = pa.array([g2v[p[0]][i] if p[0] in g2v else None for p in parsed], pa.float64())
    meta = {b"recipe": b"from the WikiText-2 log with the same recipe_id (the PTB logs with recipes are not public in this release)",
            b"num_params": b"from RNN_parameters.csv ('total paramters')"}
    return pa.table(cols).replace_schema_metadata(meta)


# -- the build ---------------------------------------------------------------------------
def build_tables(
    source: str | os.PathLike[str], out: str | os.PathLike[str], *, progress: bool = True,
    allow_modified: bool = False, hardware: str | os.PathLike[str] | None | Literal[False] = None,
    ptb_logs: str | os.PathLike[str] | None = None,
    proxy_values: str | os.PathLike[str] | None | Literal[False] = None,
) -> Path:
    """Build all tables from the release at ``source`` into the data dir ``out``.

    Every release file is checked against :data:`PINNED_SHA256` first: a corrupt,
    truncated or modified copy raises :class:`DataIntegrityError` naming the file, and
    nothing is written. ``allow_modified=True`` builds from a deliberately modified
    release anyway and records each differing file in the manifest
    (``modified_release``). Whatever the source, a file that cannot be parsed raises
    :class:`DataIntegrityError` naming it, and every built table is checked (rows, and
    no empty cell where the release fills every row) before anything replaces the
    previous tables. Returns the written version folder (``out/v2``); the write is
    atomic (:func:`nasbench_bert.data.tables.write_dataset`).

    ``hardware``: a folder holding a hardware measurement (default :func:`hardware_dir`).
    When one is found it becomes the ``flexibert_hardware`` table, joined by arch id and
    checked against the release's archs, with its machine in the manifest. Without one
    the tables are built without it - unless ``hardware`` was given: a folder asked for
    by name that holds no measurement raises :class:`DataNotFoundError` before any work.
    ``hardware=False`` builds without a measurement whatever is there.

    ``proxy_values``: the proxy-values table to include (a file written by
    ``nasbench-bert build-proxy-values --out``); by default the pinned table shipped with
    the package, when this install has one (:mod:`nasbench_bert.data.proxy_values`);
    ``False``: none. A table built by another package version or for another arch list
    is refused before anything is written.

    ``ptb_logs``: NAS-Bench-NLP's PTB training logs archive (:mod:`.nlp_logs`; default: the
    file at ``nas-bench-nlp/train_logs_single_run/logs.zip`` in the release folder, when
    there). It becomes the ``nlp_ptb_logs`` table (PTB's per-epoch curves); its sha256 is
    recorded in ``sources``. A path that is not a zip is refused before any work.
    """
    from rich.console import Console
    from rich.progress import Progress

    if hardware is not None and hardware is not False and measured_hardware(hardware) is None:
        raise DataNotFoundError(f"hardware = {str(hardware)!r} holds no hardware measurement ({MEASURED_HARDWARE[0]} and "
                                f"{MEASURED_HARDWARE[1]}); measure one with `python -m nasbench_bert.builders.hardware "
                                "--out <folder>`, or build without --hardware")

    given_ptb = None if ptb_logs is None else find_ptb_logs(Path(), ptb_logs)  # a bad path: refused before any work
    pinned = proxy_values_for_build(proxy_values)  # the package's pinned proxy values (or a given file), checked now
    with tempfile.TemporaryDirectory(prefix="nasbench-bert-fetch-") as tmp:
        rel = fetch_release(source, Path(tmp))
        ptb_zip = given_ptb or find_ptb_logs(rel, None)
        with Progress(console=Console(stderr=True), disable=not progress, transient=True) as bar:
            task = bar.add_task("building nasbench-bert tables", total=10)
            sources = {f: sha256_file(rel / f) for f in FILES}
            modified = {f: h for f, h in sources.items() if h != PINNED_SHA256[f]}
            if modified and not allow_modified:
                f = sorted(modified)[0]
                raise DataIntegrityError(
                    f"release file {f} has sha256 {modified[f]}, the pinned release has {PINNED_SHA256[f]} (a corrupt, "
                    f"truncated or modified copy{'; ' + str(len(modified) - 1) + ' more differ' if len(modified) > 1 else ''}); "
                    + _FIX)
            bar.advance(task)
            tables = _parse_all(rel, bar, task, ptb_zip)
            if ptb_zip is not None:
                sources[PTB_LOGS] = sha256_file(ptb_zip)
            extra: dict[str, Any] = {"builder": "nasbench_bert.data.release", "licences": {
                "flexibert*": "CC BY 4.0", "nlp_*": "Apache-2.0 (NAS-Bench-NLP); proxy columns CC BY 4.0",
                PROXY_VALUES: "CC BY 4.0 (computed by nasbench-bert on the benchmark's archs)"}}
            _add_own_tables(tables, extra, None if hardware is False else measured_hardware(hardware), pinned)
            _check_tables(tables, strict_rows=not modified)
            hook = _interrupt_hook()
            if modified:
                extra["modified_release"] = dict(sorted(modified.items()))
            return write_dataset(tables, Path(out), sources, extra=extra,
                                 on_table=lambda name: (bar.advance(task), hook(name)))


def _add_own_tables(tables: dict[str, pa.Table], extra: dict[str, Any], measured: Any, pinned: Any) -> None:
    """The package's own tables (a hardware measurement, the proxy values), joined to and
    checked against the release's archs, with their provenance in the manifest."""
    if measured is not None:
        tables["flexibert_hardware"] = flexibert_hardware_table(tables["flexibert"], measured[0])
        _, hw_meta, hw_sha = measured
        extra["hardware"] = {"machine": hw_meta["machine"], "settings": hw_meta.get("settings"),
                             "date": hw_meta.get("date"), "noise": hw_meta.get("noise"), "sha256": hw_sha}
    if pinned is not None:
        check_arch_list(pinned[1], tables["flexibert"])
        tables[PROXY_VALUES] = pinned[0]
        extra[PROXY_VALUES] = pinned[1]


def _parse_all(rel: Path, bar: Any, task: Any, ptb_logs: Path | None = None) -> dict[str, pa.Table]:
    """Parse every release file (and the PTB logs archive, when given) into tables; any
    parse failure becomes a :class:`DataIntegrityError` that names the file."""
    current = ""

    def load_json(name: str) -> Any:
        nonlocal current
        current = name
        return json.loads((rel / name).read_text(encoding="utf-8"))

    try:
        bench = load_json("training-free-nas/data/BERT_benchmark.json")
        ablation = load_json("training-free-nas/data/BERT_benchmark_train_ablation.json")
        current = "nas-bench-nlp/data/doc2vec_features_lowdim.csv"
        g2v = _graph2vec(rel / current)
        current = "nas-bench-nlp/train_logs_wikitext-2/logs.zip"
        wt2 = read_logs(rel / current)
        bar.advance(task)
        current = "training-free-nas/data/BERT_benchmark.json"
        tables = {"flexibert": flexibert_table(bench)}
        current = "training-free-nas/data/BERT_benchmark_train_ablation.json"
        tables["flexibert_curves"] = flexibert_curves_table(ablation, bench)
        current = "training-free-nas/data/BERT_results_activation.csv"
        tables["flexibert_proxies"] = flexibert_proxies_table(rel / current, bench)
        current = "nas-bench-nlp/train_logs_wikitext-2/logs.zip"
        tables["nlp_wikitext2"] = nlp_logs_table(wt2, g2v)
        bar.advance(task, 2)
        current = "training-free-nas/data/RNN_results.csv and RNN_parameters.csv"
        tables["nlp_ptb"] = nlp_ptb_table(rel / "training-free-nas/data/RNN_results.csv",
                                          rel / "training-free-nas/data/RNN_parameters.csv", g2v, wt2)
        if ptb_logs is not None:
            current = str(ptb_logs)
            tables[PTB_LOGS_TABLE] = ptb_logs_table(ptb_logs, g2v)
        bar.advance(task)
    except DataIntegrityError as e:
        raise DataIntegrityError(f"release file {current}: {e}; " + _FIX) from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, UnicodeDecodeError, zipfile.BadZipFile,
            csv.Error, OSError, OverflowError) as e:  # JSONDecodeError is a ValueError
        raise DataIntegrityError(f"release file {current} cannot be parsed ({type(e).__name__}: {e}); " + _FIX) from None
    return tables


def _check_tables(tables: dict[str, pa.Table], *, strict_rows: bool) -> None:
    """Rows and filled cells of the built tables (see :data:`PINNED_ROWS`, :data:`NULLABLE`)."""
    for name, t in tables.items():
        if t.num_rows == 0 or (strict_rows and name in PINNED_ROWS and t.num_rows != PINNED_ROWS[name]):
            raise DataIntegrityError(f"table {name!r} built with {t.num_rows} rows, the release has {PINNED_ROWS[name]}; " + _FIX)
        for col in t.column_names:
            if col.startswith(NULLABLE.get(name, ())):
                continue
            empty = t.column(col).null_count
            if empty:
                raise DataIntegrityError(f"table {name!r}: column {col!r} is empty in {empty} of {t.num_rows} rows, but the "
                                         "release fills every row; " + _FIX)


def _interrupt_hook():
    """Test hook: ``NASBENCH_BERT_TEST_SLOW_BUILD=seconds`` sleeps after each table so
    that a test can kill a build midway and check nothing half-written is loaded."""
    delay = float(os.environ.get("NASBENCH_BERT_TEST_SLOW_BUILD", "0") or 0)
    if delay <= 0:
        return lambda name: None
    import time

    def hook(name: str) -> None:
        print(f"wrote {name}", flush=True)
        time.sleep(delay)

    return hook


def main(argv: Iterable[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Build nasbench-bert tables from the release files")
    ap.add_argument("--release", default=None, help="release folder, base URL, or 'github' (default: $NASBENCH_BERT_RELEASE, else 'github')")
    ap.add_argument("--out", default=None, help="data directory (default: the user cache)")
    a = ap.parse_args(list(argv) if argv is not None else None)
    src = a.release or os.environ.get("NASBENCH_BERT_RELEASE") or "github"
    print(build_tables(src, a.out or str(user_cache_dir())))


if __name__ == "__main__":
    main()
