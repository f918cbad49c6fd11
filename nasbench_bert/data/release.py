"""Turn the authors' release files into the project's parquet tables.

Input is a folder laid out like ``shared/upstream`` (see ``SOURCES.md`` there), or a
base URL serving the same layout, or the ``github`` preset that fetches each file from
the authors' repositories at the pinned commits. Output is a data directory written by
:func:`nasbench_bert.data.tables.write_dataset` (atomic, with a checksummed manifest).

The build is deterministic: the same release files give byte-identical tables. Floats
are parsed with Python's ``float`` (CSV) and ``json`` (JSON), which round-trip the
release's decimal strings exactly, so every stored value equals the release value.

The steps, one module each: :mod:`.release_files` (which files, their checksums,
fetching them), :mod:`.release_flexibert` and :mod:`.release_nlp` (each benchmark's
parsers), :mod:`.hardware_table` (the package's own measurement, joined by arch), and
this module, the build: check every file, parse them all, check every table, write them
at once. Every name those modules define that this one used to is importable from here.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Iterable, Literal

import pyarrow as pa

from ..errors import DataIntegrityError, DataNotFoundError
from .hardware_table import MEASURED_HARDWARE, arch_sha, flexibert_hardware_table, hardware_dir, measured_hardware
from .nlp_logs import PTB_LOGS, PTB_LOGS_TABLE, find_ptb_logs, nlp_logs_table, ptb_logs_table, read_logs
from .proxy_values import TABLE as PROXY_VALUES
from .proxy_values import check_arch_list
from .proxy_values import for_build as proxy_values_for_build
from .release_files import FILES, GITHUB, PINNED_SHA256, fetch_release
from .release_flexibert import (
    LAYER_COLUMNS, MAX_LAYERS, PREFIX_COLLISIONS, curve_point_status, flexibert_curves_table, flexibert_proxies_table,
    flexibert_table, stored_hook_multiplicity,
)
from .release_nlp import nlp_ptb_table, nlp_wikitext2_table, read_graph2vec
from .tables import sha256_file, user_cache_dir, write_dataset

__all__ = [
    "build_tables", "main", "PINNED_ROWS", "NULLABLE",
    "FILES", "GITHUB", "PINNED_SHA256", "fetch_release",
    "MEASURED_HARDWARE", "arch_sha", "flexibert_hardware_table", "hardware_dir", "measured_hardware",
    "LAYER_COLUMNS", "MAX_LAYERS", "PREFIX_COLLISIONS", "curve_point_status", "flexibert_curves_table",
    "flexibert_proxies_table", "flexibert_table", "stored_hook_multiplicity",
    "nlp_ptb_table", "nlp_wikitext2_table",
]

#: rows each table has when built from the pinned release
PINNED_ROWS: dict[str, int] = {"flexibert": 500, "flexibert_curves": 315, "flexibert_proxies": 500, "nlp_ptb": 8794,
                               "nlp_wikitext2": 345}

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
        g2v = read_graph2vec(rel / current)
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
