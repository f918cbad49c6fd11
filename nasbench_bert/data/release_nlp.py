"""NAS-Bench-NLP's release tables: the PTB results with their proxies and parameter
counts, and the WikiText-2 runs (whose logs :mod:`.nlp_logs` parses).

Why one module per benchmark: NAS-Bench-NLP's files have their own glitches - a
parameter file of several concatenated CSV dumps (:func:`_parameter_counts`), a PTB table
keyed by log name whose recipe only the WikiText-2 log of the same recipe id holds.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import DataIntegrityError
from ..sizes import PTB_VOCAB, nlp_num_params
from ..spaces.nlp import recipe_hash
from .nlp_logs import nlp_logs_table
from .release_files import cell_float, read_csv_rows
from .tables import GRAPH2VEC_COLUMNS, NLP_PROXY_COLUMNS

#: the WikiText-2 logs' table (the builder of every NAS-Bench-NLP logs table, :mod:`.nlp_logs`)
nlp_wikitext2_table = nlp_logs_table

def _recipe_id_from_log(name: str) -> tuple[int, str, int]:
    """``log_stats_model_<recipe>_<date>_<time>_<experiment>.json`` -> its three parts."""
    stem = name[: -len(".json")] if name.endswith(".json") else name
    parts = stem.split("_")
    if len(parts) != 7 or parts[:3] != ["log", "stats", "model"]:
        raise DataIntegrityError(f"unexpected NAS-Bench-NLP log name {name!r}")
    return int(parts[3]), f"{parts[4]}_{parts[5]}", int(parts[6])


def read_graph2vec(path: Path) -> dict[int, list[float]]:
    header, rows = read_csv_rows(path)
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
    header, rows = read_csv_rows(results)
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
        "test_loss": pa.array([cell_float(r[1]) for r in rows], pa.float64()),
        "perplexity": pa.array([cell_float(r[2]) for r in rows], pa.float64()),
        "bits_per_word": pa.array([cell_float(r[3]) for r in rows], pa.float64()),
        "num_params": pa.array([counts[r[0]][1] if r[0] in counts else None for r in rows], pa.int64()),
        "num_trainable_params": pa.array([counts[r[0]][0] if r[0] in counts else None for r in rows], pa.int64()),
    }
    for j, name in enumerate(NLP_PROXY_COLUMNS.values(), start=4):
        cols[name] = pa.array([cell_float(r[j]) for r in rows], pa.float64())
    rec = [recipes.get(p[0]) for p in parsed]
    cols["recipe"] = pa.array(rec, pa.string())
    cols["recipe_hash"] = pa.array([recipe_hash(x) if x else None for x in rec], pa.string())
    cols["recipe_num_params"] = pa.array([nlp_num_params(x, PTB_VOCAB) if x else None for x in rec], pa.int64())
    for i, c in enumerate(GRAPH2VEC_COLUMNS):
        cols[c] = pa.array([g2v[p[0]][i] if p[0] in g2v else None for p in parsed], pa.float64())
    meta = {b"recipe": b"from the WikiText-2 log with the same recipe_id (the PTB logs with recipes are not public in this release)",
            b"num_params": b"from RNN_parameters.csv ('total paramters')"}
    return pa.table(cols).replace_schema_metadata(meta)
