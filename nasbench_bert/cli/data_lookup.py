"""``info``, ``query``, ``sample``, ``export``: reading the built tables.

Each ``add_*`` function registers one subcommand's parser; its ``cmd_*`` handler checks the
flags first (:mod:`nasbench_bert.cli.common`) and loads the benchmark after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from ..errors import InvalidArgumentError, MissingExtraError
from ..vocabulary import DATASETS
from . import common
from .common import console, err_console

if TYPE_CHECKING:
    import pandas as pd

    from ..benchmark import Benchmark


def cmd_info(args: argparse.Namespace) -> None:
    bench = common.load_bench(args)
    cov = bench.coverage()
    t = Table(title=f"nasbench-bert tables in {bench.data.path}")
    for c in ("table", "rows", "columns", "sha256"):
        t.add_column(c)
    for name, meta in sorted(bench.data.manifest["tables"].items()):
        t.add_row(name, f"{meta['rows']:,}", str(len(meta["columns"])), meta["sha256"][:16])
    console.print(t)
    df = bench.to_pandas()
    s = Table(title="FlexiBERT summary (GLUE dev, mean of 8 tasks)")
    for c in ("hidden", "layers", "archs", "GLUE mean", "GLUE best", "params (as specified, M)"):
        s.add_column(c)
    for (h, n), g in df.groupby(["hidden_size", "num_layers"]):
        s.add_row(str(h), str(n), str(len(g)), f"{g.glue.mean():.2f}", f"{g.glue.max():.2f}", f"{g.num_params_as_specified.mean() / 1e6:.2f}")
    console.print(s)
    console.print(
        f"space size {cov['flexibert_space_size']:,}; curves for ids {cov['flexibert_curve_ids']}\n"
        f"NAS-Bench-NLP: {cov['nlp_ptb_runs']:,} PTB runs ({cov['nlp_ptb_with_recipe']} with public recipe), "
        f"best test loss {bench.nlp.ptb.test_loss.min():.4f}; {cov['nlp_wikitext2_runs']} WikiText-2 runs, "
        f"{len(cov['nlp_wikitext2_diverged'])} diverged"
    )
    hw = bench.hardware_machine
    if hw:
        lat = bench.hardware("as_trained")["latency_b1_ms"]
        m = hw.get("machine", {})
        console.print(f"hardware table: measured {hw.get('date')} on {m.get('cpu')} ({m.get('usable_cpus')} CPUs, torch "
                      f"{m.get('torch')}, {hw.get('settings', {}).get('threads')} thread); trained models' batch-1 "
                      f"latency {lat.median():.1f} ms median [{lat.min():.1f}, {lat.max():.1f}]")


def _key(text: str) -> Any:
    """A query key from the command line: an integer id, inline JSON, a JSON file, or a
    string (canonical arch, log name); a path that does not exist is said to be one."""
    t = text.strip()
    if re.fullmatch(r"-?[0-9]+", t):
        return int(t)
    if t.startswith(("{", "[", '"')):
        try:
            return json.loads(t)
        except ValueError as e:
            raise InvalidArgumentError(f"arch = {text!r} is not valid JSON ({e})") from None
    if t.endswith(".json") or os.sep in t and not re.fullmatch(r"[0-9]+(/[A-Za-z]+-[A-Za-z0-9]+-h[0-9]+-[0-9]+x[0-9]+)+", t):
        p = Path(t)
        if t.startswith("log_stats_model_"):
            return t
        if not p.is_file():
            raise InvalidArgumentError(f"arch = {text!r}: the file {p} does not exist (give an id, a canonical arch string, "
                             "inline JSON, or an existing .json file)")
        try:
            return json.loads(p.read_text())
        except (ValueError, UnicodeDecodeError) as e:
            raise InvalidArgumentError(f"arch = {text!r}: {p} is not valid JSON ({e})") from None
    return t


def cmd_query(args: argparse.Namespace) -> None:
    bench = common.load_bench(args)
    key = _key(args.arch)
    if args.nlp:
        r = bench.nlp.query(key, args.dataset, charge=False)
        d = r.to_dict()
        d.pop("curves")
    else:
        d = bench.query(key, charge=False).to_dict()
    if args.json:
        print(json.dumps(d, indent=2, default=str))
        return
    t = Table(show_header=False)
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")  # wrapped, never cut: an arch string must stay whole
    hardware = d.pop("hardware", None) or {}
    for k, v in d.items():
        t.add_row(k, json.dumps(v, default=str) if isinstance(v, (dict, list)) else str(v))
    for sem, h in hardware.items():  # one readable line per semantics (--json has every field)
        t.add_row(f"hardware ({sem})", f"CPU latency b1 {h['latency_b1_ms']:.1f} ms, b32 {h['latency_b32_ms']:.0f} ms; "
                  f"peak memory b32 {h['peak_memory_b32_mib']:.1f} MiB; {h['flops_per_seq'] / 1e9:.2f} GFLOPs/seq; "
                  f"{h['threads']} thread(s)")
    console.print(t)


def cmd_sample(args: argparse.Namespace) -> None:
    from ..spaces.flexibert import FLEXIBERT_SPACE

    if args.space:
        for a in FLEXIBERT_SPACE.sample(args.n, args.seed):
            print(a)
        return
    bench = common.load_bench(args)
    df = bench.query_many(bench.sample(args.n, args.seed), charge=False)
    t = Table()
    for c in ("id", "arch", "glue", "params (as trained)"):
        t.add_column(c, overflow="fold", no_wrap=False)  # never cut an arch string
    for r in df.itertuples():
        t.add_row(str(r.id), r.arch, f"{r.glue:.3f}", f"{r.num_params_as_trained:,}")
    console.print(t)


#: ``export --format``: a table as one CSV / parquet file, or syne-tune's blackbox-repository folders
EXPORT_FORMATS: tuple[str, ...] = ("table", "syne-tune")
#: ``export --format syne-tune [table]``: which blackbox a table name selects (none: every one the data can make)
SYNE_TUNE_TABLES: dict[str, str] = {"flexibert": "nasbench-bert-flexibert", "flexibert_curves": "nasbench-bert-flexibert-curves",
                                    "nlp_ptb": "nasbench-bert-nlp-ptb", "nlp_ptb_logs": "nasbench-bert-nlp-ptb-epochs",
                                    "nlp_wikitext2": "nasbench-bert-nlp-wikitext2"}
#: tables whose export is the lookup's frame rather than the stored table (FlexiBERT: with
#: the columns the lookup derives); any other table is written as stored
_LOOKUP_FRAMES: dict[str, Callable[[Benchmark], pd.DataFrame]] = {"flexibert": lambda bench: bench.to_pandas()}


def cmd_export(args: argparse.Namespace) -> None:
    if args.format not in EXPORT_FORMATS:
        raise InvalidArgumentError(f"--format = {args.format!r} is not allowed; allowed values: {list(EXPORT_FORMATS)}")
    _EXPORTERS[args.format](args)


def _export_table(args: argparse.Namespace) -> None:
    """``export --format table --out FILE TABLE``: one table as one .csv or .parquet file."""
    if args.table is None:
        from ..data.tables import TABLES

        raise InvalidArgumentError(f"table is missing; allowed values: {sorted(TABLES)} (with --format table)")
    common.check_out(Path(args.out))
    bench = common.load_bench(args)
    name = args.table
    frame = _LOOKUP_FRAMES.get(name)
    df = frame(bench) if frame is not None else bench.data.table(name).to_pandas()
    if args.legacy_names:  # the file as data release 1 named its columns, until 0.4; stderr says what replaces them
        from ..data.columns import RENAMED, legacy_message

        back = {new: old for old, new in RENAMED.get(name, {}).items()}
        df = df.rename(columns=back)
        for new, old in back.items():
            err_console.print(f"deprecated: {legacy_message(old, new)}", highlight=False)
    out = Path(args.out)
    # atomic: a failed export leaves no partial file; stamped with the version that wrote it
    common.write_frame(df, out, stamp=common.export_stamp(name))
    console.print(f"wrote {len(df):,} rows of {name} to {out}")


def _export_syne_tune(args: argparse.Namespace) -> None:
    """``export --format syne-tune --out DIR [TABLE]``: DIR/<blackbox>/ in syne-tune's serialisation
    (nasbench_bert.integrations.syne_tune_recipe; each folder swapped in whole, a user's file never touched)."""
    if args.table is not None and args.table not in SYNE_TUNE_TABLES:
        raise InvalidArgumentError(f"table = {args.table!r} is not allowed with --format syne-tune; allowed values: "
                                   f"{sorted(SYNE_TUNE_TABLES)} or none (every blackbox the data can make)")
    if args.legacy_names:
        raise InvalidArgumentError("--legacy-names is not allowed with --format syne-tune; allowed: --format table")
    try:
        from ..integrations.syne_tune_recipe import write_blackboxes
    except ModuleNotFoundError as e:
        raise MissingExtraError(f"--format syne-tune needs syne-tune: pip install 'nasbench-bert[hpo]' ({e.name} "
                                "is not installed)", name=e.name) from None
    names = None if args.table is None else (SYNE_TUNE_TABLES[args.table],)
    common.writable(Path(args.out), "--out")  # before loading, as build-data checks --out (not a staging folder's name after it)
    folders = write_blackboxes(common.load_bench(args), args.out, names)
    for name, folder in folders.items():
        console.print(f"wrote syne-tune blackbox {name} to {folder}")


#: ``export --format`` -> what writes it
_EXPORTERS: dict[str, Callable[[argparse.Namespace], None]] = {"table": _export_table, "syne-tune": _export_syne_tune}
assert tuple(_EXPORTERS) == EXPORT_FORMATS


def add_info(sub: Any) -> None:
    """``info``: tables and coverage."""
    sub.add_parser("info", help="tables, coverage and a summary of both benchmarks").set_defaults(fn=cmd_info)


def add_query(sub: Any) -> None:
    """``query``: one arch or NAS-Bench-NLP run."""
    q = sub.add_parser("query", help="look up one arch (id, canonical string or release JSON) or NAS-Bench-NLP run")
    q.add_argument("arch", help="an id, a canonical arch string, inline JSON or a .json file (NLP: recipe id, log name, recipe)")
    q.add_argument("--nlp", action="store_true", help="query NAS-Bench-NLP (recipe id, log name or recipe JSON)")
    q.add_argument("--dataset", default="ptb", choices=list(DATASETS), help="NAS-Bench-NLP dataset (with --nlp)")
    q.add_argument("--json", action="store_true", help="print the result as JSON")
    q.set_defaults(fn=cmd_query)


def add_sample(sub: Any) -> None:
    """``sample``: evaluated archs, or the whole space."""
    s = sub.add_parser("sample", help="sample evaluated archs (or, with --space, from the whole space)")
    s.add_argument("-n", type=int, default=5, help="how many archs")
    s.add_argument("--seed", type=int, default=0, help="random seed (the same seed gives the same archs)")
    s.add_argument("--space", action="store_true", help="sample the whole 10.6M space instead of the evaluated archs")
    s.set_defaults(fn=cmd_sample)


def add_export(sub: Any) -> None:
    """``export``: a table to CSV or parquet."""
    from ..data.tables import TABLES

    e = sub.add_parser("export", help="export a table to CSV or parquet, or the benchmarks as syne-tune blackboxes")
    e.add_argument("table", nargs="?", default=None, choices=sorted(TABLES),
                   help="which table (--format table: required; --format syne-tune: one of "
                        f"{', '.join(sorted(SYNE_TUNE_TABLES))}, default every blackbox the data can make)")
    e.add_argument("--format", default="table",
                   help=f"one of {', '.join(EXPORT_FORMATS)} (default table): 'syne-tune' writes OUT/<blackbox>/ in "
                        "syne-tune's blackbox-repository serialisation (docs/integrations.md)")
    e.add_argument("--out", required=True, help="output file (.csv or .parquet), written atomically; with --format "
                                                "syne-tune a folder (each blackbox subfolder it wrote before replaced "
                                                "whole; any other file there is refused)")
    e.add_argument("--legacy-names", action="store_true",
                   help="write the data release 1 column names (num_params, num_params_seed_compat; deprecated, "
                        "removed in 0.4)")
    e.set_defaults(fn=cmd_export)
