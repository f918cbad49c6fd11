"""The ``nasbench-bert`` command line: info, query, sample, export, build-data, download,
proxies, search - plus subcommands of installed plugins (``build-entry``, ``publish`` from
:mod:`nasbench_bert.builders`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .benchmark import Benchmark
from .checks import check_int, check_writable_folder
from .errors import InvalidArgumentError, MissingExtraError, NasBenchError
from .search.algorithms import ALGORITHMS
from .search.oracle import ORACLES
from .semantics import SEMANTICS_NAMES
from .slurm import FIELD_FLAGS as SLURM_FIELD_FLAGS
from .slurm import add_arguments as add_slurm_arguments
from .slurm import from_arguments as slurm_resources
from .sizes import WIKITEXT2_VOCAB

#: long paths and messages stay on one line for grep. ``markup=False, emoji=False``: every
#: line may echo user input (an arch string, a path, a proxy name), and rich would rewrite
#: ``[bold]`` as a style and ``:thumbs_up:`` (or the ``:b:`` in ``a:b:c``) as an emoji; a
#: message must quote the input verbatim, so styles are given as :class:`Text` styles.
console = Console(soft_wrap=True, markup=False, emoji=False)
#: errors go to stderr so that ``--json`` / export output on stdout stays parseable
err_console = Console(stderr=True, soft_wrap=True, markup=False, emoji=False)


def print_error(message: str) -> None:
    """One red ``error:`` line on stderr, the message printed verbatim (no markup, no emoji)."""
    err_console.print(Text.assemble(("error:", "red"), " ", message), highlight=False)


#: Python argument names whose option is not ``--`` and the name with dashes; each applies
#: only to a command that has that option (``time`` is ``--slurm-time`` where there is one)
FIELD_FLAGS: dict[str, str] = {**SLURM_FIELD_FLAGS, "algorithm": "--algorithms", "version": "--proxy-version",
                               "proxy": "--proxies", "finetune_config.batch_size": "--finetune-batch-size"}
#: ``name = `` in a library message: the argument it names (dotted for a config's field,
#: ``a/b`` for two at once), at a line's start or after a space, comma or bracket
_NAMED = re.compile(r"(?:(?<=^)|(?<=[\s,(]))([A-Za-z_][\w.]*(?:/[A-Za-z_][\w.]*)*)(?= = )", re.M)


def _options(ap: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """``dest -> option`` of every option of the command ``args`` ran (its global options,
    then each subcommand's down to the one that ran)."""
    out: dict[str, str] = {}
    parser: argparse.ArgumentParser | None = ap
    while parser is not None:
        chosen = None
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                chosen = a.choices.get(getattr(args, a.dest, None) or "")
            elif a.option_strings:
                out[a.dest] = next((o for o in a.option_strings if o.startswith("--")), a.option_strings[0])
        parser = chosen
    return out


def as_flags(message: str, options: dict[str, str]) -> str:
    """``message`` with each Python argument it names (``report = ...``, ``cpus_per_task
    = 0``, ``finetune_config.batch_size = 0``) written as the option that set it
    (``--report``, ``--slurm-cpus``, ``--finetune-batch-size``): the library names its
    arguments, a command-line user typed options. Names no option of the command sets
    are left as they are."""
    typed = set(options.values())

    def flag(name: str) -> str | None:
        if FIELD_FLAGS.get(name) in typed:
            return FIELD_FLAGS[name]
        if name in options:
            return options[name]
        return flag(name.rsplit(".", 1)[1]) if "." in name else None

    def one(m: re.Match[str]) -> str:
        names = [flag(n) for n in m.group(1).split("/")]
        return m.group(1) if None in names else "/".join(n for n in names if n is not None)

    return _NAMED.sub(one, message)


def _bench(args: argparse.Namespace) -> Benchmark:
    return Benchmark.load(args.data, progress=not args.quiet)


def cmd_info(args: argparse.Namespace) -> None:
    bench = _bench(args)
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
    bench = _bench(args)
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
    from .spaces.flexibert import FLEXIBERT_SPACE

    if args.space:
        for a in FLEXIBERT_SPACE.sample(args.n, args.seed):
            print(a)
        return
    bench = _bench(args)
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


def cmd_export(args: argparse.Namespace) -> None:
    if args.format not in EXPORT_FORMATS:
        raise InvalidArgumentError(f"--format = {args.format!r} is not allowed; allowed values: {list(EXPORT_FORMATS)}")
    if args.format == "syne-tune":
        return _export_syne_tune(args)
    if args.table is None:
        from .data.tables import TABLES

        raise InvalidArgumentError(f"table is missing; allowed values: {sorted(TABLES)} (with --format table)")
    _check_out(Path(args.out))
    bench = _bench(args)
    name = args.table
    df = bench.to_pandas() if name == "flexibert" else bench.data.table(name).to_pandas()
    if args.legacy_names:  # the file as data release 1 named its columns, until 0.4; stderr says what replaces them
        from .data.columns import RENAMED, legacy_message

        back = {new: old for old, new in RENAMED.get(name, {}).items()}
        df = df.rename(columns=back)
        for new, old in back.items():
            err_console.print(f"deprecated: {legacy_message(old, new)}", highlight=False)
    out = Path(args.out)
    _write_frame(df, out)  # atomic: a failed export leaves no partial file
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
        from .integrations.syne_tune_recipe import write_blackboxes
    except ModuleNotFoundError as e:
        raise MissingExtraError(f"--format syne-tune needs syne-tune: pip install 'nasbench-bert[hpo]' ({e.name} "
                                "is not installed)", name=e.name) from None
    names = None if args.table is None else (SYNE_TUNE_TABLES[args.table],)
    _writable(Path(args.out), "--out")  # before loading, as build-data checks --out (not a staging folder's name after it)
    folders = write_blackboxes(_bench(args), args.out, names)
    for name, folder in folders.items():
        console.print(f"wrote syne-tune blackbox {name} to {folder}")


def cmd_build_data(args: argparse.Namespace) -> None:
    from .data.release import build_tables
    from .data.resolve import default_locations
    from .data.tables import DataDir, has_data

    src, out = default_locations(args.release, args.out)
    outp = Path(out)
    if has_data(outp) and not args.force:
        try:
            d = DataDir.open(outp)
            d.verify_all()
            if not (args.ptb_logs and not d.has_table("nlp_ptb_logs")):  # asked for PTB logs it lacks: rebuild
                console.print(f"{d.path} already holds verified tables; rebuild with --force")
                return
        except NasBenchError as e:
            console.print(f"the tables in {outp} do not verify ({e}); rebuilding")
    _writable(outp, "--out")
    path = build_tables(src, out, progress=not args.quiet, allow_modified=args.allow_modified_release,
                        hardware=args.hardware, ptb_logs=args.ptb_logs, proxy_values=args.proxy_values)
    console.print(f"built tables from {src} into {path}")
    _write_artifacts(path, surrogate=not args.no_surrogate)


def cmd_build_surrogate(args: argparse.Namespace) -> None:
    from .data.resolve import default_locations

    path = Path(args.data or default_locations(None, None)[1])
    _writable(path, "--data")  # before the fit, as build-data checks --out (not the write's temporary name after it)
    _write_artifacts(path, surrogate=True)


def _write_artifacts(path: Path, *, surrogate: bool) -> None:
    """The files made from the built tables (objectives.json, the pinned surrogate), listed
    in the manifest: fitted here, above the data layer (docs/surrogate.md)."""
    from .benchmark.flexibert import complete_build
    from .data.tables import DataDir

    for name, e in complete_build(DataDir.open(path), surrogate=surrogate).items():  # what Benchmark.load() adds too
        console.print(f"wrote {name} {e['file']} ({e['bytes']:,} bytes, sha256 {e['sha256'][:16]}…)")


def _writable(folder: Path, option: str) -> None:
    """A clear error, before any work, when ``folder`` cannot be written (the library's
    one check, :func:`~nasbench_bert.checks.check_writable_folder`, naming the option)."""
    check_writable_folder(option, folder)


def cmd_download(args: argparse.Namespace) -> None:
    from .data.hub import download, remember
    from .data.tables import has_data, user_cache_dir

    d = download(args.repo_id, args.revision, endpoint=args.endpoint)
    d.verify_all()
    remember(args.repo_id, d)  # what Benchmark.load() and the commands load next (step 3 of docs/data.md's order)
    console.print(f"verified {len(d.manifest['tables'])} tables of {args.repo_id}@{args.revision} (commit {d.path.parent.name}) in {d.path}")
    if has_data(user_cache_dir()):
        console.print(f"the user cache also holds tables built there ({user_cache_dir()}), which load first; load these "
                      f"with --data {d.path} or Benchmark.load({str(d.path)!r})")


#: the value of ``--ids``, ``--nlp-ids`` and ``--semantics`` that selects everything
ALL = "all"


def _is_all(text: str) -> bool:
    return text == ALL


def _ids_or_all(text: str, n: int, option: str = "--ids") -> list[int] | None:
    """:func:`_parse_ids`, or None for 'all'."""
    return None if _is_all(text) else _parse_ids(text, n, option)


def _parse_ids(text: str, n: int, option: str = "--ids") -> list[int]:
    """'all' or ids and ranges like '0-99,250'; every id in 0 .. n-1 (checked before any
    list is built, so a huge range is refused at once)."""
    if _is_all(text):
        return list(range(n))
    spans: list[tuple[int, int]] = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        if not (a.isascii() and a.isdigit()) or (b and not (b.isascii() and b.isdigit())):
            raise InvalidArgumentError(f"{option} = {text!r} is not allowed; allowed: 'all', or ids and ranges like '0-99,250'")
        lo, hi = int(a), int(b) if b else int(a)
        if lo > hi or hi >= n:
            raise InvalidArgumentError(f"{option} = {text!r}: {part!r} is not within 0-{n - 1} (or a range runs backwards)")
        spans.append((lo, hi))
    return [i for lo, hi in spans for i in range(lo, hi + 1)]


def _check_out(out: Path, option: str = "--out", suffixes: tuple[str, ...] = (".csv", ".parquet")) -> Path:
    """Refuse an output path before any work is done: a wrong suffix, a folder in its
    place, or a folder that cannot be written."""
    if out.suffix not in suffixes:
        raise InvalidArgumentError(f"{option} = {str(out)!r} must end in {' or '.join(suffixes)}")
    if out.is_dir():
        raise InvalidArgumentError(f"{option} = {str(out)!r} is a folder; give a file name ending in {' or '.join(suffixes)}")
    _writable(out.parent, option)
    if out.parent.is_dir():  # permissions can say yes where the file system says no (/proc, read-only mounts)
        try:
            tempfile.NamedTemporaryFile(dir=out.parent, prefix=".nasbench-bert-probe-").close()
        except OSError as e:
            raise InvalidArgumentError(f"{option} = {str(out)!r} cannot be written there ({e.strerror}); choose a file in "
                                       "a folder you can write to") from None
    return out


def _write_frame(df: "Any", out: Path, option: str = "--out") -> None:
    from .atomic import atomic_path

    _check_out(out, option)
    flat = df.copy()
    for c in flat.columns:
        if c.endswith("__layers"):
            flat[c] = [json.dumps(v) for v in flat[c]]
    with atomic_path(out) as tmp:  # a failed export leaves no partial file
        flat.to_csv(tmp, index=False) if out.suffix == ".csv" else flat.to_parquet(tmp, index=False)


def _read_frame(path: str, option: str) -> "Any":
    """A table given on the command line (.csv or .parquet), or an error naming the option."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise InvalidArgumentError(f"{option} = {path!r}: no such file")
    try:
        return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise InvalidArgumentError(f"{option} = {path!r} is not a readable .csv or .parquet table ({type(e).__name__}: {e})") from None


def _check_sample(n: int | None) -> None:
    """``--sample N``: at least one arch (an empty sweep is a mistake, not a result)."""
    if n is not None:
        from .spaces.flexibert import FLEXIBERT_SPACE

        check_int("--sample", n, low=1, high=FLEXIBERT_SPACE.size)


def cmd_proxies_compute(args: argparse.Namespace) -> None:
    _check_out(Path(args.out))  # before a long computation (and before loading anything), not after it
    _check_sample(args.sample)
    if args.cache is not None:
        _writable(Path(args.cache), "--cache")
    slurm = slurm_resources(args)
    device = _device(args, slurm)
    from . import proxies

    bench = _bench(args)
    batch = {"batch_size": args.batch_size, "seq_len": args.seq_len, "source": args.source}
    batch = {k: v for k, v in batch.items() if v is not None}
    if args.sample is not None:  # archs drawn from the whole space, not the benchmark's 500
        if args.space not in _SAMPLED_SPACES or not _is_all(args.ids):
            raise InvalidArgumentError("--sample draws FlexiBERT archs from the whole space; it takes no --ids and "
                                       "needs --space flexibert")
        from .spaces.flexibert import FLEXIBERT_SPACE

        items: list[Any] = FLEXIBERT_SPACE.sample(args.sample, seed=args.seed)
    else:
        items = _PROXY_ITEMS[args.space](args, bench, batch)
    names = args.proxies.split(",") if "," in args.proxies else args.proxies
    df = proxies.compute(items, names, semantics=args.semantics, seed=args.seed, batch=batch, space=args.space, dtype=args.dtype,
                         bench=bench, cache=args.cache, jobs=args.jobs, progress=not args.quiet,
                         executor=args.executor, ray_address=args.ray_address, slurm=slurm, device=device)
    _write_frame(df, Path(args.out))
    console.print(f"wrote {len(df)} rows ({int(df.error.notna().sum())} errors, {int(df.cached.sum())} from cache) to {args.out}")


def _choices(text: str, allowed: Sequence[str], option: str) -> list[str]:
    """'all' or comma-separated names, each one of ``allowed`` (one line naming the flag otherwise)."""
    if _is_all(text):
        return list(allowed)
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise InvalidArgumentError(f"{option} = {text!r} is not allowed; allowed values: 'all' or names from {list(allowed)}")
    return names


def _verify_ids(text: str | None, n: int, option: str) -> list[int] | None:
    """``--ids``/``--nlp-ids`` of ``proxies values --verify``: None (every row) for 'all',
    else positions; 'every:K' is every K-th row (the CI sample: every:25)."""
    if text is None or _is_all(text):
        return None
    if text.startswith("every:"):
        k = text.split(":", 1)[1]
        if not (k.isascii() and k.isdigit() and int(k) >= 1):
            raise InvalidArgumentError(f"{option} = {text!r} is not allowed; allowed: 'all', 'every:K' (K >= 1), or ids "
                                       "and ranges like '0-99,250'")
        return list(range(0, n, int(k)))
    return _parse_ids(text, n, option)


def cmd_build_proxy_values(args: argparse.Namespace) -> None:
    from .data.proxy_values import TABLE
    from .proxies.values import BENCHMARKS, SEMANTICS

    benches = _choices(args.benchmarks, BENCHMARKS, "--benchmarks")
    sems = _choices(args.semantics, SEMANTICS, "--semantics")
    if args.out is not None:
        _check_out(Path(args.out), suffixes=(".parquet",))
    cache = Path(args.cache) if args.cache else None
    if cache is not None:
        _writable(cache, "--cache")
    slurm = slurm_resources(args)
    device = _device(args, slurm)
    bench = _bench(args)
    if args.out is None:
        _writable(bench.data.path, "--data")
    ids = None if _is_all(args.ids) else _parse_ids(args.ids, len(bench))
    from .proxies.values import build, default_cache

    res = build(bench, benchmarks=benches, semantics=sems, ids=ids, cache=cache or default_cache(), jobs=args.jobs,
                executor=args.executor, ray_address=args.ray_address, slurm=slurm, progress=not args.quiet, device=device)
    from .data.proxy_values import add_to_data, write_standalone

    table = res.to_arrow()
    if args.out is not None:
        meta = write_standalone(table, res.provenance, Path(args.out))
        console.print(f"wrote {TABLE} ({table.num_rows} rows, {len(res.columns)} proxies, sha256 {meta['sha256'][:16]}…) "
                      f"to {args.out} and its provenance to {Path(args.out).with_suffix('.json')}")
    else:
        entry = add_to_data(bench.data, table, res.provenance)
        console.print(f"added {TABLE} ({table.num_rows} rows, {len(res.columns)} proxies, sha256 {entry['sha256'][:16]}…) "
                      f"to {bench.data.path}")


def cmd_proxies_values(args: argparse.Namespace) -> None:
    from .proxies.values import BENCHMARKS, SEMANTICS

    if args.verify:
        _proxies_values_verify(args)
        return
    if args.benchmark not in BENCHMARKS:
        raise InvalidArgumentError(f"--benchmark = {args.benchmark!r} is not allowed; allowed values: {list(BENCHMARKS)}")
    if args.semantics not in SEMANTICS:
        raise InvalidArgumentError(f"--semantics = {args.semantics!r} is not allowed; allowed values: {list(SEMANTICS)}")
    if args.out is not None:
        _check_out(Path(args.out))
    bench = _bench(args)
    names = None if args.proxies is None or _is_all(args.proxies) else args.proxies.split(",")
    lookup = bench.proxy_values if args.benchmark == "flexibert" else bench.nlp.proxy_values
    df = lookup(args.semantics, names)
    if args.out is None:
        console.print(df.to_string(max_rows=20, max_cols=8))
        return
    _write_frame(df.reset_index(), Path(args.out))
    console.print(f"wrote {len(df)} rows x {df.shape[1]} proxies ({args.benchmark}, {args.semantics}) to {args.out}")


def _proxies_values_verify(args: argparse.Namespace) -> None:
    from .proxies.values import BENCHMARKS, SEMANTICS, verify
    from .proxies.values import nlp_recipes

    benches = _choices(args.benchmark, BENCHMARKS, "--benchmark")
    sems = _choices(args.semantics, SEMANTICS, "--semantics")
    names = None if args.proxies is None or _is_all(args.proxies) else [p.strip() for p in args.proxies.split(",")]
    if args.out is not None:
        _check_out(Path(args.out), suffixes=(".json",))
    bench = _bench(args)
    ids = _verify_ids(args.ids, len(bench), "--ids")
    recipes = [h for h, _ in nlp_recipes(bench)] if "nlp" in benches else []
    pos = _verify_ids(args.nlp_ids, len(recipes), "--nlp-ids")
    checks = verify(bench, benchmarks=benches, semantics=sems, ids=ids,
                    recipes=None if pos is None else [recipes[i] for i in pos], proxies=names, jobs=args.jobs,
                    progress=not args.quiet)
    t = Table(title="recomputed here vs the proxy-values table (relative difference, Kendall τ)")
    for c in ("benchmark", "semantics", "proxy", "n", "largest rel. diff", "τ", "tolerance", ""):
        t.add_column(c)
    for c in checks:
        t.add_row(c.benchmark, c.semantics, c.proxy, str(c.n), f"{c.max_rel_diff:.1e}", f"{c.tau:.4f}",
                  "noise" if c.tolerance is None else f"{c.tolerance:.0e}", "ok" if c.ok else "FAIL")
    console.print(t)
    bad = [c for c in checks if not c.ok]
    if args.out is not None:
        from .atomic import atomic_write

        atomic_write(Path(args.out), json.dumps([c.as_dict() for c in checks], indent=1) + "\n")
    console.print(f"{len(checks) - len(bad)} of {len(checks)} (benchmark, semantics, proxy) checks within tolerance"
                  + (f"; {sum(c.tolerance is None for c in checks)} are noise by construction (not checked)"))
    if bad:
        raise SystemExit(1)


def _flexibert_items(args: argparse.Namespace, bench: Benchmark, batch: dict[str, Any]) -> list[Any]:
    return _parse_ids(args.ids, len(bench))  # FlexiBERT keys are benchmark ids


def _nlp_items(args: argparse.Namespace, bench: Benchmark, batch: dict[str, Any]) -> list[Any]:
    w = getattr(bench.nlp, args.dataset)  # the NLP lookup names its tables after the datasets
    w = w[w.recipe.notna()]
    items = [(r.log_name, r.recipe) for r in w.itertuples()]
    ids = _ids_or_all(args.ids, len(items))
    batch.update(_NLP_BATCH[args.dataset])
    return items if ids is None else [items[i] for i in ids]


#: ``--space`` -> the items ``proxies compute`` runs on (NLP: (log name, recipe) rows by position)
_PROXY_ITEMS = {"flexibert": _flexibert_items, "nlp": _nlp_items}
#: the spaces ``--sample`` can draw from
_SAMPLED_SPACES = frozenset({"flexibert"})
#: ``--dataset`` -> what it changes in the proxy batch (its vocabulary; PTB's is the default)
_NLP_BATCH: dict[str, dict[str, Any]] = {"ptb": {}, "wikitext2": {"vocab_size": WIKITEXT2_VOCAB}}


def cmd_hardware(args: argparse.Namespace) -> None:
    _check_out(Path(args.out))  # before a long measurement (and before loading anything), not after it
    _check_sample(args.sample)
    if args.cache is not None:
        _writable(Path(args.cache), "--cache")
    slurm = slurm_resources(args)
    device = _device(args, slurm)
    from . import hardware

    bench = _bench(args)
    if args.sample is not None:  # archs drawn from the whole space, not the benchmark's 500
        if not _is_all(args.ids):
            raise InvalidArgumentError("--sample draws archs from the whole space; it takes no --ids")
        from .spaces.flexibert import FLEXIBERT_SPACE

        items: list[Any] = FLEXIBERT_SPACE.sample(args.sample, seed=args.seed)
    else:
        items = _parse_ids(args.ids, len(bench))
    sems = hardware.ALL_SEMANTICS if _is_all(args.semantics) else tuple(args.semantics.split(","))
    import dataclasses

    base = hardware.GPU_SETTINGS if device != "cpu" else hardware.MeasureSettings()
    settings = dataclasses.replace(base, threads=args.threads)
    df = hardware.measure_many(items, sems, settings=settings, bench=bench, cache=args.cache, jobs=args.jobs,
                               executor=args.executor, ray_address=args.ray_address, progress=not args.quiet,
                               slurm=slurm, device=device)
    _write_frame(df, Path(args.out))
    console.print(f"wrote {len(df)} rows ({int(df.error.notna().sum())} errors, {int(df.cached.sum())} from cache, "
                  f"{int(df.shared.sum())} sharing another row's model) to {args.out}")


def cmd_proxies_score(args: argparse.Namespace) -> None:
    import warnings

    from . import scoring as proxies  # torch-free: scoring stored values needs no models
    from .errors import InputRowsWarning

    if args.csv:
        _check_out(Path(args.csv), "--csv", (".csv",))
    if args.plots:
        _writable(Path(args.plots), "--plots")
    if args.bootstrap < 0:
        raise InvalidArgumentError(f"--bootstrap = {args.bootstrap} is not allowed; allowed: an integer >= 0")
    bench = _bench(args)
    target: Any = args.target or proxies.scoring_space(args.space).stored_target
    if args.tasks:
        if args.space != "flexibert":
            raise InvalidArgumentError("--tasks scores each GLUE task; it needs --space flexibert")
        from .data.tables import GLUE_TASKS

        target = ["glue", *GLUE_TASKS]
    rows = {"duplicates": args.duplicates, "unknown_ids": args.unknown_ids}  # what may be merged or dropped, if anything
    if args.values:
        df = _read_frame(args.values, "--values")
        if not args.no_baselines:  # the trivial spec baselines of the same rows, beside the proxies (torch-free)
            df = proxies.with_baselines(df, args.space, semantics=args.baseline_semantics, bench=bench)
        with warnings.catch_warnings():  # what the options merged or dropped is printed below, once
            warnings.simplefilter("ignore", InputRowsWarning)
            res = proxies.score(df, target, space=args.space, bench=bench, bootstrap=args.bootstrap, **rows)
    else:
        res = proxies.score_stored(args.space, bench=bench, bootstrap=args.bootstrap, baselines=not args.no_baselines,
                                   target=target)
    for note in res.attrs.get("notes", []):
        err_console.print(Text(f"note: {note}", style="yellow"), highlight=False)
    print(proxies.to_markdown(res.sort_values(["target", "kendall_tau"], ascending=[True, False])))
    for r in res.itertuples():
        if isinstance(getattr(r, "note", None), str):
            console.print(Text(f"{r.proxy}: {r.note}", style="yellow"))
    if args.csv:
        _write_frame(res, Path(args.csv), "--csv")
    if args.plots:  # one scatter per scored column (the paper's own Figures 1-3: python -m studies.paper_figures)
        if not args.values:
            df, _ = proxies.stored_values(args.space, bench)
        plot_target = args.target or proxies.scoring_space(args.space).stored_target
        for name in (n for n in dict.fromkeys(res.proxy) if n in df):
            with warnings.catch_warnings():  # said once above
                warnings.simplefilter("ignore", InputRowsWarning)
                path = proxies.scatter(df, name, plot_target, Path(args.plots) / f"{name}.png", space=args.space,
                                       bench=bench, **(rows if args.values else {}))
            console.print(f"wrote {path}")


def cmd_proxies_evaluate(args: argparse.Namespace) -> None:
    """One command for a new proxy: computed on every model, ranked beside the baselines."""
    from .report_dir import check_report_dir

    fmt = args.format
    if args.out is not None:
        suffix = {".md": "md", ".csv": "csv", ".json": "json"}.get(Path(args.out).suffix)
        if suffix is None:
            raise InvalidArgumentError(f"--out = {args.out!r} must end in .md, .csv or .json")
        if fmt is not None and fmt != suffix:
            raise InvalidArgumentError(f"--format = {fmt!r} does not match --out = {args.out!r}; allowed: {suffix!r}")
        fmt = suffix
        _check_out(Path(args.out), "--out", (".md", ".csv", ".json"))  # before a long computation, not after it
    fmt = fmt or "md"
    if args.cache is not None:
        _writable(Path(args.cache), "--cache")
    # the output options before the seconds of importing torch and loading the benchmark
    check_report_dir(args.report, "--report", cache=args.cache, cache_name="--cache")
    slurm = slurm_resources(args)
    device = _device(args, slurm)
    from .evaluation import BENCHMARKS, evaluate, nlp_runs

    if os.getcwd() not in sys.path:  # 'module:function' in the working folder, as 'python -m' would find it
        sys.path.insert(0, os.getcwd())
    bench = _bench(args)
    benchmarks = None if args.benchmarks is None else [b.strip() for b in args.benchmarks.split(",")]
    for b in benchmarks or ():
        if b not in BENCHMARKS:
            raise InvalidArgumentError(f"--benchmarks = {args.benchmarks!r} is not allowed; allowed values: {list(BENCHMARKS)}")
    sems: Any = args.semantics if _is_all(args.semantics) else [x.strip() for x in args.semantics.split(",")]
    batch = {k: v for k, v in (("batch_size", args.batch_size), ("seq_len", args.seq_len), ("source", args.source))
             if v is not None}
    ids = _ids_or_all(args.ids, len(bench))
    nlp_ids = _ids_or_all(args.nlp_ids, len(nlp_runs(bench)), "--nlp-ids")
    res = evaluate(args.proxy, semantics=sems, benchmarks=benchmarks,
                   compare=[c.strip() for c in args.compare.split(",") if c.strip()], ids=ids,
                   nlp_ids=nlp_ids, tasks=not args.no_tasks,
                   higher_is_better=not args.lower_is_better, dedupe=not args.no_dedupe, cache=args.cache, jobs=args.jobs,
                   executor=args.executor, ray_address=args.ray_address, slurm=slurm,
                   progress=not args.quiet, batch=batch or None, batches=args.batches, version=args.proxy_version,
                   refresh=args.refresh,
                   seed=args.seed, dtype=args.dtype, bootstrap=args.bootstrap, bench=bench, report=args.report,
                   device=device)
    if args.report is not None:
        err_console.print(f"wrote the report to {args.report}")
    text = _EVALUATION_FORMATS[fmt](res)
    if args.out is None:
        print(text)
        return
    from .atomic import atomic_path

    with atomic_path(Path(args.out)) as tmp:
        Path(tmp).write_text(text)
    err_console.print(f"wrote {len(res.rows)} rows for {res.proxy} to {args.out} ({res.computed} models computed, "
                      f"{res.cached} from the cache, {res.shared} rows shared an identical model; {res.seconds:.0f} s)")


def _evaluation_json(res: Any) -> str:
    rows = json.loads(res.to_pandas().to_json(orient="records"))  # NaN -> null
    return json.dumps({"proxy": res.proxy, "notes": list(res.notes), "seconds": res.seconds,
                       "verdicts": [{"benchmark": b, "semantics": s, "verdict": v} for (b, s), v in res.verdicts.items()],
                       "skipped": res.skipped,
                       "models_computed": res.computed, "models_cached": res.cached, "rows_shared": res.shared,
                       "rows": rows}, indent=1)


#: ``--format`` of ``proxies evaluate`` -> the text written
_EVALUATION_FORMATS = {
    "md": lambda res: res.to_markdown(),
    "csv": lambda res: res.to_pandas().to_csv(index=False),
    "json": _evaluation_json,
}


def cmd_proxies_export(args: argparse.Namespace) -> None:
    """Stored (and optionally live) proxies in another tool's file layout."""
    from .integrations.naszero import export_naszero

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InvalidArgumentError(f"--out = {args.out!r} is a file; give a folder (zc_*.json files are written into it)")
    _writable(out, "--out")
    from_table = args.live == "table"
    live = _read_frame(args.live, "--live") if args.live and not from_table and args.live != "none" else None
    live_nlp = _read_frame(args.live_nlp, "--live-nlp") if args.live_nlp else None
    bench = _bench(args)
    if from_table:  # the data's proxy-values table: every proxy of the package, every semantics
        from .integrations.naszero import live_from_table

        live, table_nlp = live_from_table(bench)
        live_nlp = live_nlp if live_nlp is not None else table_nlp
        if live is None:
            console.print("the data holds no proxy-values table: the files carry the release's stored proxies only "
                          "(build the table with `nasbench-bert build-proxy-values`)")
    paths = export_naszero(bench, out, live=live, live_nlp=live_nlp, spaces=args.spaces.split(","),
                           tasks=args.tasks.split(","))
    for path in paths:
        console.print(f"wrote {path}")


def cmd_search(args: argparse.Namespace) -> None:
    if getattr(args, "out", None):
        _check_out(Path(args.out))
    if getattr(args, "plot", None):
        _check_out(Path(args.plot), "--plot", (".png", ".pdf", ".svg"))
    args.search_fn(args, _bench(args))  # the search subcommand's own function (see _add_search)


def _search_run(args: argparse.Namespace, bench: Benchmark) -> None:
    from . import search

    kw = {"proxy": args.proxy} if args.proxy else {}  # refused by search.run for algorithms without a proxy
    t = search.run(args.algorithm, bench, budget=args.budget, seed=args.seed, oracle=args.oracle,
                   progress=not args.quiet, **kw)
    df = t.to_pandas()
    if args.out:
        _write_frame(df, Path(args.out))
    console.print(f"{args.algorithm} ({args.oracle}), seed {args.seed}: {len(t)} evaluations, "
                  f"{df.seconds.iloc[-1] / 3600:.1f} simulated hours, best GLUE {t.best_glue:.3f}: {t.best_arch}")


def _search_compare(args: argparse.Namespace, bench: Benchmark) -> None:
    from . import search

    curves = search.compare(bench, args.algorithms.split(","), seeds=args.seeds, budget=args.budget, oracle=args.oracle,
                            axis=args.axis, progress=not args.quiet)
    end = curves.groupby("algorithm", sort=False).tail(1)
    t = Table(title=f"best GLUE at the end ({args.budget} evaluations), {args.seeds} seeds ({args.oracle})")
    for c in ("algorithm", "mean", "std", "q25", "q75"):
        t.add_column(c)
    for r in end.itertuples():
        t.add_row(r.algorithm, f"{r.mean:.3f}", f"{r.std:.3f}", f"{r.q25:.3f}", f"{r.q75:.3f}")
    console.print(t)
    if args.out:
        _write_frame(curves, Path(args.out))
    if args.plot:
        search.plot_comparison(curves, args.plot)
        console.print(f"wrote {args.plot}")


def _search_cv(args: argparse.Namespace, bench: Benchmark) -> None:
    from .surrogate import cross_validate

    err_console.print("cross-validating the surrogate: 5 folds x 3 families (about a minute on 2 cores)", highlight=False)
    cv = cross_validate(bench)
    console.print(cv.to_string(index=False))


def _load_plugins(sub: Any) -> None:
    """Subcommands other packages register under the entry-point group
    ``nasbench_bert.cli`` (``nasbench_bert.builders`` adds ``build-entry`` and
    ``publish`` this way, so the core never imports the builders). A plugin whose
    dependencies are missing is skipped."""
    from importlib.metadata import entry_points

    seen: set[str] = set()
    for ep in entry_points(group="nasbench_bert.cli"):
        if ep.name in seen:  # the same plugin seen twice (e.g. an editable and a regular install)
            continue
        seen.add(ep.name)
        try:
            ep.load()(sub)
        except ImportError:  # pragma: no cover - an extra is not installed
            continue


def _add_query(sub: Any) -> None:
    """``query``: one arch or NAS-Bench-NLP run."""
    q = sub.add_parser("query", help="look up one arch (id, canonical string or release JSON) or NAS-Bench-NLP run")
    q.add_argument("arch", help="an id, a canonical arch string, inline JSON or a .json file (NLP: recipe id, log name, recipe)")
    q.add_argument("--nlp", action="store_true", help="query NAS-Bench-NLP (recipe id, log name or recipe JSON)")
    q.add_argument("--dataset", default="ptb", choices=["ptb", "wikitext2"], help="NAS-Bench-NLP dataset (with --nlp)")
    q.add_argument("--json", action="store_true", help="print the result as JSON")
    q.set_defaults(fn=cmd_query)


def _add_sample(sub: Any) -> None:
    """``sample``: evaluated archs, or the whole space."""
    s = sub.add_parser("sample", help="sample evaluated archs (or, with --space, from the whole space)")
    s.add_argument("-n", type=int, default=5, help="how many archs")
    s.add_argument("--seed", type=int, default=0, help="random seed (the same seed gives the same archs)")
    s.add_argument("--space", action="store_true", help="sample the whole 10.6M space instead of the evaluated archs")
    s.set_defaults(fn=cmd_sample)


def _add_export(sub: Any) -> None:
    """``export``: a table to CSV or parquet."""
    from .data.tables import TABLES

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


def _add_build_data(sub: Any) -> None:
    """``build-data``: the tables from the release files."""
    b = sub.add_parser("build-data", help="build the tables from the release files (folder, URL or 'github')")
    b.add_argument("--release", default=None, help="folder, base URL or 'github' (default: $NASBENCH_BERT_RELEASE, else 'github')")
    b.add_argument("--out", default=None, help="data folder (default: the user cache, where loading looks)")
    b.add_argument("--force", action="store_true", help="rebuild even when the folder already holds verified tables")
    b.add_argument("--allow-modified-release", action="store_true",
                   help="build from release files whose sha256 differs from the pinned release (recorded in the manifest)")
    b.add_argument("--hardware", default=None,
                   help="folder of a hardware measurement to include (default: $NASBENCH_BERT_HARDWARE, else <cache>/measured)")
    b.add_argument("--no-surrogate", action="store_true",
                   help="skip fitting the pinned surrogate file (bench.surrogate() then fits on first use)")
    b.add_argument("--ptb-logs", default=None, metavar="ZIP",
                   help="NAS-Bench-NLP's PTB training logs (train_logs_single_run/logs.zip): PTB's per-epoch curves, table "
                        "nlp_ptb_logs (default: that file in the release folder, when there)")
    b.add_argument("--proxy-values", default=None, metavar="FILE",
                   help="the proxy-values table to include (from build-proxy-values --out; default: the pinned table "
                        "shipped with the package)")
    b.set_defaults(fn=cmd_build_data)
    bs = sub.add_parser("build-surrogate", help="fit the default surrogate and pin it (and objectives.json) in a data folder")
    bs.add_argument("--data", default=None, help="data folder holding built tables (default: the user cache)")
    bs.set_defaults(fn=cmd_build_surrogate)


def _add_build_proxy_values(sub: Any) -> None:
    """``build-proxy-values``: compute the proxy-values table (resumable) into the data folder or a file."""
    b = sub.add_parser("build-proxy-values", help="compute every proxy per arch and semantics into the proxy-values "
                                                  "table (hours on a CPU; resumable with --cache)")
    b.add_argument("--out", default=None, help="write a standalone .parquet (and its provenance .json) instead of "
                                               "adding the table to the data folder (--data)")
    b.add_argument("--cache", default=None, help="part cache: a killed build resumes (default: <user cache>/proxy-values-cache)")
    b.add_argument("--benchmarks", default="all", help="'all', flexibert or nlp")
    b.add_argument("--semantics", default="all", help="'all' or names: as_trained, as_specified, authors")
    b.add_argument("--ids", default="all", help="FlexiBERT ids: 'all' or '0-99,250' (a partial table says so in its provenance)")
    b.add_argument("--jobs", type=int, default=1, help="worker processes (executor local)")
    b.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                   help="where each arch runs: local, one Ray task per arch, or a SLURM job array (--slurm-*)")
    b.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local instance)")
    add_slurm_arguments(b)
    _add_device_argument(b)
    b.set_defaults(fn=cmd_build_proxy_values)


def _add_download(sub: Any) -> None:
    """``download``: the tables from the Hugging Face Hub."""
    from .data.hub import DEFAULT_REPO_ID, DEFAULT_REVISION

    d = sub.add_parser("download", help="download and verify the tables from the Hugging Face Hub (or a mirror)")
    d.add_argument("--repo-id", default=DEFAULT_REPO_ID, help="Hub dataset repository (namespace/name)")
    d.add_argument("--revision", default=DEFAULT_REVISION, help="branch, tag or commit sha (pin a sha)")
    d.add_argument("--endpoint", default=None, help="Hub endpoint or mirror (default $HF_ENDPOINT or huggingface.co)")
    d.set_defaults(fn=cmd_download)


def _add_proxies(sub: Any) -> None:
    """``proxies``: its four subcommands."""
    px = sub.add_parser("proxies", help="zero-cost proxies: compute live, score against the benchmarks")
    psub = px.add_subparsers(dest="pcmd", required=True)
    _add_proxies_compute(psub)
    _add_proxies_score(psub)
    _add_proxies_evaluate(psub)
    _add_proxies_export(psub)
    _add_proxies_values(psub)


def _add_proxies_values(psub: Any) -> None:
    """``proxies values``: the pinned table of every proxy's values, exported or verified."""
    pv = psub.add_parser("values", help="every proxy's precomputed values per arch (the proxy-values table); --verify "
                                        "recomputes a sample here and compares")
    pv.add_argument("--benchmark", default="flexibert", help="flexibert or nlp (--verify: also 'all' or both, comma-separated)")
    pv.add_argument("--semantics", default="as_trained", help="authors, as_trained or as_specified (--verify: also 'all' "
                                                             "or several, comma-separated)")
    pv.add_argument("--proxies", default=None, help="proxy names, comma-separated (default: every proxy)")
    pv.add_argument("--out", default=None, help="a .csv or .parquet file (default: print); with --verify, a .json report")
    pv.add_argument("--verify", action="store_true", help="recompute the rows given by --ids/--nlp-ids with the table's "
                                                          "dtype, seed and batch; exit 1 beyond a proxy's tolerance")
    pv.add_argument("--ids", default="every:25", help="--verify: FlexiBERT ids: 'all', 'every:K' or '0-19,250' "
                                                       "(default every:25, 20 archs)")
    pv.add_argument("--nlp-ids", default="every:53", help="--verify: positions among the NAS-Bench-NLP recipes: 'all', "
                                                          "'every:K' or '0-4' (default every:53, 5 recipes)")
    pv.add_argument("--jobs", type=int, default=1, help="--verify: worker processes")
    pv.set_defaults(fn=cmd_proxies_values)


def _add_proxies_compute(psub: Any) -> None:
    """``proxies compute``: live values on real models."""
    pc = psub.add_parser("compute", help="compute proxies on real models (resumable with --cache)")
    pc.add_argument("--space", default="flexibert", choices=["flexibert", "nlp"], help="which benchmark's archs")
    pc.add_argument("--ids", default="all", help="FlexiBERT ids / NLP row numbers: 'all' or '0-99,250'")
    pc.add_argument("--dataset", default="ptb", choices=["ptb", "wikitext2"], help="NLP: whose recipes and vocabulary")
    pc.add_argument("--proxies", default="paper", help="names (comma-separated) or a group: paper, etas, baseline, all")
    pc.add_argument("--semantics", default="as_trained", choices=list(SEMANTICS_NAMES),
                    help="model and proxy protocol: as_trained (default), as_specified (=faithful), authors (=seed_compat)")
    pc.add_argument("--dtype", default="float32", choices=["float32", "float64"], help="precision of the proxy pass")
    pc.add_argument("--seed", type=int, default=0, help="seed of the model init, the batch and the projection")
    pc.add_argument("--batch-size", type=int, default=None, help="sequences per batch (FlexiBERT 8, NLP 10)")
    pc.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (FlexiBERT 128, NLP 70)")
    pc.add_argument("--source", default=None, help="random (default), text:<path>, glue:<folder>, hf:<dataset>")
    pc.add_argument("--cache", default=None, help="folder for per-arch results: reruns skip finished archs")
    pc.add_argument("--jobs", type=int, default=1, help="worker processes (executor local)")
    pc.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                    help="local processes, one Ray task per arch over a cluster, or a SLURM job array (resumable with --cache)")
    pc.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local instance)")
    add_slurm_arguments(pc)
    _add_device_argument(pc)
    pc.add_argument("--sample", type=int, default=None, metavar="N",
                    help="N archs sampled from the whole 10.6M space (seeded by --seed) instead of benchmark ids")
    pc.add_argument("--out", required=True, help="result table (.parquet or .csv)")
    pc.set_defaults(fn=cmd_proxies_compute)


def _add_proxies_score(psub: Any) -> None:
    """``proxies score``: rank metrics against a benchmark."""
    ps = psub.add_parser("score", help="Kendall tau / Spearman rho (+ CIs, top-10%%, size-controlled) of proxies")
    ps.add_argument("--space", default="flexibert", choices=["flexibert", "nlp"], help="which benchmark")
    ps.add_argument("--values", default=None, help="a table from 'proxies compute' (default: the stored proxies)")
    ps.add_argument("--target", default=None, help="glue, a GLUE task, test_loss or wikitext2_loss")
    ps.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples for the confidence intervals")
    ps.add_argument("--csv", default=None, help="also write the scores to this CSV")
    ps.add_argument("--plots", default=None, help="folder for one scatter plot per scored proxy")
    ps.add_argument("--tasks", action="store_true", help="FlexiBERT: every GLUE task as well as the average")
    ps.add_argument("--no-baselines", action="store_true", help="leave out the trivial spec baselines' rows")
    ps.add_argument("--baseline-semantics", default="as_trained", choices=list(SEMANTICS_NAMES),
                    help="whose parameters the baselines' counts are, with --values (stored: as_trained)")
    ps.add_argument("--duplicates", default="error", choices=["error", "first", "mean"],
                    help="with --values: rows that share an id are refused (error), or the first kept, or averaged "
                         "(first, mean; a note says how many)")
    ps.add_argument("--unknown-ids", default="error", choices=["error", "drop"],
                    help="with --values: ids the benchmark lacks are refused (error), or left out (drop; a note says which)")
    ps.set_defaults(fn=cmd_proxies_score)


def _add_proxies_evaluate(psub: Any) -> None:
    """``proxies evaluate``: a new proxy beside the baselines."""
    pv = psub.add_parser("evaluate", help="rank a new proxy (module:function or a registered name) on every model, "
                                          "beside the trivial baselines and the published analytic scores")
    pv.add_argument("proxy", help="'module:function' or 'path/file.py:function' taking (model, batch) -> float, "
                                  "or a registered proxy name")
    pv.add_argument("--semantics", default="as_trained", help="'all' or names (comma-separated): authors, as_trained, "
                                                              "as_specified")
    pv.add_argument("--benchmarks", default=None, help="flexibert, nlp or both, comma-separated (default: both for a "
                                                       "callable, else those the name is registered for)")
    pv.add_argument("--compare", default="", help="registered proxies computed the same way (comma-separated)")
    pv.add_argument("--ids", default="all", help="FlexiBERT ids: 'all' or '0-99,250'")
    pv.add_argument("--nlp-ids", default="all", help="positions among the 275 PTB runs with a public recipe: 'all' or '0-19'")
    pv.add_argument("--no-tasks", action="store_true", help="FlexiBERT: the GLUE average only, no per-task rows")
    pv.add_argument("--lower-is-better", action="store_true", help="the proxy's declared orientation (default higher)")
    pv.add_argument("--no-dedupe", action="store_true", help="compute every row, even where another row's model is identical")
    pv.add_argument("--cache", default=None, help="folder for per-model results: reruns (and killed runs) resume")
    pv.add_argument("--jobs", type=int, default=1, help="worker processes (executor local)")
    pv.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                    help="this machine, one Ray task per model, or a SLURM job array")
    pv.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local instance)")
    add_slurm_arguments(pv)
    _add_device_argument(pv)
    pv.add_argument("--batch-size", type=int, default=None, help="sequences per batch (FlexiBERT 8, NLP 10)")
    pv.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (FlexiBERT 128, NLP 70)")
    pv.add_argument("--source", default=None, help="random (default), text:<path>, glue:<folder>, hf:<dataset>")
    pv.add_argument("--seed", type=int, default=0, help="seed of the model init, the batch and the bootstrap")
    pv.add_argument("--dtype", default="float32", choices=["float32", "float64"], help="precision of the models")
    pv.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples for the confidence intervals")
    pv.add_argument("--batches", type=int, default=1, help="a callable receives a list of this many batches (default 1: "
                                                           "one batch)")
    pv.add_argument("--proxy-version", default=None, help="the callable's cache version label (default: a digest of its "
                                                          "module file, qualname, closure and defaults)")
    pv.add_argument("--refresh", action="store_true", help="compute every model again, replacing the cached values")
    pv.add_argument("--out", default=None, help="result file (.md, .csv or .json), written atomically (default: stdout)")
    pv.add_argument("--format", default=None, choices=["md", "csv", "json"], help="output format (default: from --out, else md)")
    pv.add_argument("--report", default=None, help="also write a paper-ready report to this folder (table.md, table.tex, "
                                                   "scatter.png, cells.png, values.parquet; needs matplotlib)")
    pv.set_defaults(fn=cmd_proxies_evaluate)


def _add_proxies_export(psub: Any) -> None:
    """``proxies export``: NAS-Bench-Suite-Zero files."""
    from .data.tables import GLUE_TASKS

    pe = psub.add_parser("export", help="proxies and results in NAS-Bench-Suite-Zero's zc_<space>.json layout")
    pe.add_argument("--format", default="naszero", choices=["naszero"], help="file layout (NAS-Bench-Suite-Zero)")
    pe.add_argument("--out", required=True, help="folder for zc_flexibert.json and zc_nasbench_nlp.json")
    pe.add_argument("--live", default="table", help="'table' (default: the data's proxy-values table, every proxy "
                    "and semantics), 'none' (the release's stored proxies only), or a FlexiBERT table from 'proxies "
                    "compute'; live values are added as <proxy>@<semantics>:live "
                    "(the release's values are <proxy>@authors:release)")
    pe.add_argument("--live-nlp", default=None, help="a NAS-Bench-NLP table from 'proxies compute --space nlp'")
    pe.add_argument("--spaces", default="flexibert,nlp", help="which files: flexibert, nlp or both (comma-separated)")
    pe.add_argument("--tasks", default=",".join(("glue", *GLUE_TASKS)),
                    help="FlexiBERT tasks (comma-separated): glue and the GLUE tasks")
    pe.set_defaults(fn=cmd_proxies_export)


def _add_device_argument(p: Any) -> None:
    """``--device`` of the commands that build models (proxies compute/evaluate, hardware)."""
    p.add_argument("--device", default="cpu", help="where the models run: cpu (default), cuda, cuda:<i>, or auto (a GPU "
                   "when CUDA is available); a value's device is recorded beside it and keys its cache part")


def _device(args: argparse.Namespace, slurm: Any) -> str:
    """``--device``, checked before anything is loaded (:mod:`nasbench_bert.devices`; the
    message names the option through :func:`as_flags`)."""
    from .devices import check_device

    return check_device(args.device, executor=args.executor, slurm=slurm)


def _add_hardware(sub: Any) -> None:
    """``hardware``: CPU latency, memory and FLOPs."""
    hw = sub.add_parser("hardware", help="measure CPU latency, peak memory and FLOPs (resumable with --cache)")
    hw.add_argument("--ids", default="all", help="benchmark ids: 'all' or '0-99,250'")
    hw.add_argument("--sample", type=int, default=None, metavar="N",
                    help="N archs sampled from the whole 10.6M space (seeded by --seed) instead of benchmark ids")
    hw.add_argument("--seed", type=int, default=0, help="seed of --sample")
    hw.add_argument("--semantics", default="all", help="'all' or names (comma-separated): authors, as_trained, as_specified")
    hw.add_argument("--threads", type=int, default=1, help="torch threads per measurement (recorded in every row)")
    hw.add_argument("--cache", default=None, help="folder for per-model results: reruns skip measured models")
    hw.add_argument("--jobs", type=int, default=1, help="worker processes (executor local)")
    hw.add_argument("--executor", default="local", choices=["local", "ray", "slurm"],
                    help="this machine, one Ray task per model, or a SLURM job array")
    hw.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local instance)")
    add_slurm_arguments(hw)
    _add_device_argument(hw)
    hw.add_argument("--out", required=True, help="result table (.parquet or .csv)")
    hw.set_defaults(fn=cmd_hardware)


def _add_search(sub: Any) -> None:
    """``search``: run, compare, cv."""
    se = sub.add_parser("search", help="NAS algorithms on the benchmark; surrogate quality")
    ssub = se.add_subparsers(dest="scmd", required=True)
    sr = ssub.add_parser("run", help="one search run -> trajectory")
    sr.add_argument("--algorithm", default="regularized_evolution", choices=list(ALGORITHMS), help="search algorithm")
    sr.add_argument("--budget", type=int, default=100, help="evaluations")
    sr.add_argument("--seed", type=int, default=0, help="random seed (a run is reproducible from it)")
    sr.add_argument("--oracle", "--mode", dest="oracle", default="tabular", choices=list(ORACLES),
                    help="what answers evaluations: the table, the surrogate (whole space), regenerated entries")
    sr.add_argument("--proxy", default=None, help="ETAS: the ranking proxy (default ntsr)")
    sr.add_argument("--out", default=None, help="trajectory table (.csv or .parquet)")
    sr.set_defaults(search_fn=_search_run)
    sc = ssub.add_parser("compare", help="algorithms x seeds -> anytime curves (table, PNG)")
    sc.add_argument("--algorithms", default="random,regularized_evolution,local_search", help="comma-separated algorithm names")
    sc.add_argument("--seeds", type=int, default=20, help="runs per algorithm")
    sc.add_argument("--budget", type=int, default=100, help="evaluations per run")
    sc.add_argument("--oracle", "--mode", dest="oracle", default="tabular", choices=list(ORACLES), help="what answers evaluations")
    sc.add_argument("--axis", default="evaluations", choices=["evaluations", "seconds"], help="x of the anytime curves")
    sc.add_argument("--out", default=None, help="curves table (.csv or .parquet)")
    sc.add_argument("--plot", default=None, help="curves plot (.png)")
    sc.set_defaults(search_fn=_search_compare)
    ssub.add_parser("cv", help="surrogate cross-validation (5 folds by arch)").set_defaults(search_fn=_search_cv)
    se.set_defaults(fn=cmd_search)


def build_parser() -> argparse.ArgumentParser:
    """The ``nasbench-bert`` parser: the global options, one registering function per
    subcommand, and the plugins' subcommands (``build-entry``, ``publish``)."""
    ap = argparse.ArgumentParser(prog="nasbench-bert", description="Query the FlexiBERT and NAS-Bench-NLP benchmarks")
    ap.add_argument("--data", default=None, help="data directory (default: the documented order, docs/data.md 'Where Benchmark.load() finds them')")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="tables, coverage and a summary of both benchmarks").set_defaults(fn=cmd_info)
    for add in (_add_query, _add_sample, _add_export, _add_build_data, _add_build_proxy_values, _add_download,
                _add_proxies, _add_hardware, _add_search):
        add(sub)
    _load_plugins(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; library errors become one red line and exit code 2."""
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        args.fn(args)
    except KeyboardInterrupt:  # one line and the shell's convention, not a traceback
        err_console.print("interrupted", highlight=False)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): nothing is wrong; keep the exit flush quiet too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:
        if os.environ.get("NASBENCH_BERT_TRACEBACK"):
            raise
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        print_error(as_flags(e.strerror or str(e), _options(ap, args)) + where)
        return 2
    except (NasBenchError, ValueError) as e:
        if os.environ.get("NASBENCH_BERT_TRACEBACK"):  # for bug reports and the fuzz suite
            raise
        print_error(as_flags(str(e), _options(ap, args)))  # the options typed, not the library's argument names
        return 2
    except ModuleNotFoundError as e:  # a command that needs the [torch] extra, without it: _torch's one line
        if e.name != "torch" or os.environ.get("NASBENCH_BERT_TRACEBACK"):
            raise
        print_error(str(e))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
