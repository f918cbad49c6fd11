"""A small NAS-Bench-NLP PTB logs archive, made by the tests, in the format of the real one.

The real PTB logs (``train_logs_single_run/logs.zip`` of fmsnew/nas-bench-nlp-release) are
not on this machine. Their format is the WikiText-2 logs' (SOURCES.md), so the tests make
an archive of that format from a few WikiText-2 logs, relabelled as PTB runs: each log
whose recipe id also has a PTB run in ``RNN_results.csv`` is stored under that PTB run's
log name (recipe id, date and experiment id from the name) with ``data`` set to PTB's.
The curves are WikiText-2's numbers: the archive tests the path from the archive to the
tables and the HPO adapters, not PTB values. Nothing of it is committed.
"""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path
from typing import Any

from conftest import UPSTREAM

WT2_LOGS = UPSTREAM / "nas-bench-nlp" / "train_logs_wikitext-2" / "logs.zip"
RNN_RESULTS = UPSTREAM / "training-free-nas" / "data" / "RNN_results.csv"


def ptb_log_names() -> dict[int, str]:
    """recipe id -> its PTB run's log name (``RNN_results.csv``'s first column)."""
    with open(RNN_RESULTS, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))[1:]
    return {int(r[0].split("_")[3]): r[0] for r in rows if r}


def make_ptb_logs(path: Path, n_ok: int = 10, n_diverged: int = 1) -> dict[str, dict[str, Any]]:
    """Write the archive to ``path``: the first ``n_ok`` finished and ``n_diverged``
    diverged WikiText-2 logs (in name order) whose recipe id has a PTB run. Returns
    {PTB log name: the relabelled log}."""
    names = ptb_log_names()
    picked: dict[str, dict[str, Any]] = {}
    want = {True: n_ok, False: n_diverged}
    with zipfile.ZipFile(WT2_LOGS) as z:
        for entry in sorted(z.namelist()):
            d = json.loads(z.read(entry))
            rid = int(d["recepie_id"])
            ok = d["status"] == "OK"
            if rid not in names or want[ok] == 0:
                continue
            want[ok] -= 1
            name = names[rid]
            parts = name.removesuffix(".json").split("_")
            d.update({"data": "data/ptb", "init_time": f"{parts[4]}_{parts[5]}", "experiment_id": int(parts[6])})
            picked[name] = d
            if not any(want.values()):
                break
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name, d in picked.items():
            out.writestr(f"logs/{name}", json.dumps(d))
    return picked
