"""NAS-Bench-NLP's PTB training logs: the per-epoch curves the PTB release files lack.

The release this package pins holds PTB's *final* results only (``RNN_results.csv``:
one test loss per run), so PTB has one fidelity, epoch 50. NAS-Bench-NLP's own
repository also publishes the PTB training logs (``train_logs_single_run/logs.zip``,
not reachable from every build machine) in the format of the WikiText-2 logs: one JSON
per run with its recipe, hyper-parameters and per-epoch ``train_losses`` /
``val_losses`` / ``test_losses`` / ``wall_times``. When ``build-data`` is given that
archive (``--ptb-logs ZIP``, or the file at :data:`PTB_LOGS` inside the release folder)
it becomes the optional table ``nlp_ptb_logs``, with exactly the WikiText-2 table's
columns, parsed by the same code (so the two cannot be read differently); the HPO
adapters then serve PTB at every epoch.

The archive is not pinned (no sha256 of it is known here): its sha256 is recorded in
the manifest's ``sources`` so a table can be traced to the archive it came from.

This module sits below :mod:`.release`, which calls it (and reads the WikiText-2 logs with
:func:`read_logs` too).
"""

from __future__ import annotations

import json
import math
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import DataIntegrityError, DataNotFoundError
from ..spaces.nlp import recipe_hash
from .tables import GRAPH2VEC_COLUMNS

#: the PTB logs' place in a release folder laid out like the authors' repository
PTB_LOGS = "nas-bench-nlp/train_logs_single_run/logs.zip"
#: the table built from them
PTB_LOGS_TABLE = "nlp_ptb_logs"
#: a log's file name: ``log_stats_model_<recipe id>_<date>_<time>_<experiment id>.json``
_LOG_NAME = re.compile(r"log_stats_model_(\d+)_(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})_(\d+)\.json")


def find_ptb_logs(release: Path, given: str | os.PathLike[str] | None) -> Path | None:
    """The PTB logs archive to build from: ``given`` (refused with one line when it is not
    a readable zip, before any work), else :data:`PTB_LOGS` inside the release folder
    when it is there, else None (the tables are built without PTB curves)."""
    if given is None:
        found = release / PTB_LOGS
        return found if found.is_file() else None
    p = Path(given)
    if not p.is_file():
        raise DataNotFoundError(f"PTB logs (--ptb-logs) {str(given)!r} is not a file; allowed: NAS-Bench-NLP's PTB logs "
                                "archive (train_logs_single_run/logs.zip of fmsnew/nas-bench-nlp-release), or none")
    if not zipfile.is_zipfile(p):
        raise DataIntegrityError(f"PTB logs (--ptb-logs) {str(given)!r} is not a zip archive; allowed: NAS-Bench-NLP's PTB "
                                 "logs archive (train_logs_single_run/logs.zip), one log_stats_model_*.json per run")
    return p


def read_logs(path: Path) -> list[dict[str, Any]]:
    """Every ``*.json`` log in the archive, in name order, each with ``_log_name`` (its
    file name without folders). An archive without one log is refused: it is not a
    NAS-Bench-NLP logs archive."""
    logs = []
    with zipfile.ZipFile(path) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".json") and not Path(name).name.startswith("."):
                d = json.loads(z.read(name))
                d["_log_name"] = Path(name).name
                logs.append(d)
    if not logs:
        raise DataIntegrityError(f"{path.name} holds no *.json training log")
    return logs


def check_ptb_logs(logs: list[dict[str, Any]]) -> None:
    """Each log is a PTB run: a ``log_stats_model_<recipe>_<date>_<time>_<experiment>.json``
    name whose recipe id is the log's ``recepie_id``, and no log name twice. (A WikiText-2
    archive passed by mistake has the same names; its ``data`` field says so.)"""
    seen: set[str] = set()
    for d in logs:
        name = d["_log_name"]
        m = _LOG_NAME.fullmatch(name)
        if m is None:
            raise DataIntegrityError(f"unexpected NAS-Bench-NLP log name {name!r}; expected "
                                     "log_stats_model_<recipe>_<date>_<time>_<experiment>.json")
        rid = int(m.group(1))
        if int(d["recepie_id"]) != rid:
            raise DataIntegrityError(f"log {name}: recepie_id {d['recepie_id']} differs from the recipe id in its name")
        if "wikitext" in str(d.get("data", "")).lower():
            raise DataIntegrityError(f"log {name} is a WikiText-2 run (data = {d['data']!r}), not a PTB one")
        if name in seen:
            raise DataIntegrityError(f"log {name} appears twice")
        seen.add(name)


def nlp_logs_table(logs: list[dict[str, Any]], g2v: dict[int, list[float]]) -> pa.Table:
    """One row per training log (``nlp_wikitext2``, and ``nlp_ptb_logs`` from the PTB
    archive): recipe, status, final and per-epoch losses, wall times, hyper-parameters and
    the recipe's graph2vec features (``g2v``: recipe id -> 10 floats; empty where none)."""
    f64 = pa.float64()
    lst = pa.list_(f64)
    ok = [d["status"] == "OK" for d in logs]

    def final(d: dict[str, Any], key: str, good: bool) -> float:
        # a diverged run has no final value: NaN, never the last finite epoch
        return float(d[key][-1]) if good and d[key] else math.nan

    cols: dict[str, Any] = {
        "log_name": pa.array([d["_log_name"] for d in logs], pa.string()),
        "recipe_id": pa.array([int(d["recepie_id"]) for d in logs], pa.int64()),
        "experiment_id": pa.array([int(d["experiment_id"]) for d in logs], pa.int64()),
        "init_time": pa.array([d["init_time"] for d in logs], pa.string()),
        "recipe": pa.array([json.dumps(json.loads(d["recepie"]), sort_keys=True) for d in logs], pa.string()),
        "recipe_hash": pa.array([recipe_hash(d["recepie"]) for d in logs], pa.string()),
        "status": pa.array([d["status"] for d in logs], pa.string()),
        "diverged": pa.array([not g for g in ok], pa.bool_()),
        "epochs_completed": pa.array([len(d["train_losses"]) for d in logs], pa.int16()),
        "num_params": pa.array([int(d["num_params"]) for d in logs], pa.int64()),
        "final_train_loss": pa.array([final(d, "train_losses", g) for d, g in zip(logs, ok)], f64),
        "final_val_loss": pa.array([final(d, "val_losses", g) for d, g in zip(logs, ok)], f64),
        "final_test_loss": pa.array([final(d, "test_losses", g) for d, g in zip(logs, ok)], f64),
        "total_wall_time": pa.array([float(sum(d["wall_times"])) for d in logs], f64),
        "train_losses": pa.array([[float(v) for v in d["train_losses"]] for d in logs], lst),
        "val_losses": pa.array([[float(v) for v in d["val_losses"]] for d in logs], lst),
        "test_losses": pa.array([[float(v) for v in d["test_losses"]] for d in logs], lst),
        "wall_times": pa.array([[float(v) for v in d["wall_times"]] for d in logs], lst),
    }
    hp = ["batch_size", "emsize", "nhid", "nlayers", "dropout", "dropouth", "dropouti", "dropoute", "wdrop",
          "tied", "bptt", "lr", "wdecay", "epochs", "alpha", "beta", "clip", "eval_batch_size", "model"]
    for k in hp:
        cols[f"hp_{k}"] = pa.array([d[k] for d in logs])
    for i, c in enumerate(GRAPH2VEC_COLUMNS):
        cols[c] = pa.array([g2v[int(d["recepie_id"])][i] if int(d["recepie_id"]) in g2v else None for d in logs], f64)
    return pa.table(cols)


def ptb_logs_table(path: Path, g2v: dict[int, list[float]]) -> pa.Table:
    """The ``nlp_ptb_logs`` table of a PTB logs archive (checked by :func:`check_ptb_logs`)."""
    logs = read_logs(path)
    check_ptb_logs(logs)
    return nlp_logs_table(logs, g2v)
