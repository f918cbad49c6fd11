"""What every subcommand of ``nasbench-bert`` shares: the consoles, the options several
commands take, and the checks of flag values.

Why the checks live here: a command checks every flag it was given *before* anything
heavy happens (importing torch, loading the benchmark, starting a sweep), so that a
mistyped ``--out`` or ``--device`` costs a second, not the minutes of work before it
(issue 37, item 10). Each check below raises one
:class:`~nasbench_bert.errors.InvalidArgumentError` line naming the flag and what is
allowed; a handler runs them first, then calls :func:`load_bench`. Nothing here imports
pandas, torch or the benchmark's tables at import time.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from ..benchmark import Benchmark
from ..checks import check_int, check_writable_folder
from ..errors import InvalidArgumentError
from ..slurm import add_arguments as add_slurm_arguments
from ..slurm import from_arguments as slurm_resources
from ..vocabulary import EXECUTORS

if TYPE_CHECKING:
    import pandas as pd

    from ..slurm import SlurmResources

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


def load_bench(args: argparse.Namespace) -> Benchmark:
    """The benchmark a command works on (``--data``, ``--quiet``). Handlers call it as
    ``common.load_bench`` after their checks, so a test can stand in one benchmark for all
    of them."""
    return Benchmark.load(args.data, progress=not args.quiet)


# -- options several commands take ------------------------------------------------------------
def add_device_argument(p: Any) -> None:
    """``--device`` of the commands that build models (proxies compute/evaluate, hardware)."""
    p.add_argument("--device", default="cpu", help="where the models run: cpu (default), cuda, cuda:<i>, or auto (a GPU "
                   "when CUDA is available); a value's device is recorded beside it and keys its cache part")


def add_sweep_arguments(p: Any, executor_help: str) -> None:
    """Where a sweep runs: ``--jobs``, ``--executor`` (its help says what one task is for
    this command), ``--ray-address``, the ``--slurm-*`` group and ``--device``, in this order."""
    p.add_argument("--jobs", type=int, default=1, help="worker processes (executor local)")
    p.add_argument("--executor", default="local", choices=list(EXECUTORS), help=executor_help)
    p.add_argument("--ray-address", default=None, help="Ray cluster to join (default: a local instance)")
    add_slurm_arguments(p)
    add_device_argument(p)


def sweep_placement(args: argparse.Namespace) -> tuple[SlurmResources | None, str]:
    """The ``--slurm-*`` resources and the canonical ``--device`` of a sweep, both checked
    before anything is loaded (:mod:`nasbench_bert.slurm`, :mod:`nasbench_bert.devices`;
    their messages name the options through ``as_flags``)."""
    from ..devices import check_device

    slurm = slurm_resources(args)
    return slurm, check_device(args.device, executor=args.executor, slurm=slurm)


def check_cache(args: argparse.Namespace) -> None:
    """``--cache``, when given: a folder this process can write."""
    if args.cache is not None:
        writable(Path(args.cache), "--cache")


# -- ids and names ----------------------------------------------------------------------------
#: the value of ``--ids``, ``--nlp-ids`` and ``--semantics`` that selects everything
ALL = "all"


def is_all(text: str) -> bool:
    return text == ALL


def parse_ids(text: str, n: int, option: str = "--ids") -> list[int]:
    """'all' or ids and ranges like '0-99,250'; every id in 0 .. n-1 (checked before any
    list is built, so a huge range is refused at once)."""
    if is_all(text):
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


def ids_or_all(text: str, n: int, option: str = "--ids") -> list[int] | None:
    """:func:`parse_ids`, or None for 'all'."""
    return None if is_all(text) else parse_ids(text, n, option)


def sampled_ids(text: str | None, n: int, option: str) -> list[int] | None:
    """``--ids``/``--nlp-ids`` of a check on a sample (``proxies values --verify``): None
    (every row) for 'all', else positions; 'every:K' is every K-th row (the CI sample: every:25)."""
    if text is None or is_all(text):
        return None
    if text.startswith("every:"):
        k = text.split(":", 1)[1]
        if not (k.isascii() and k.isdigit() and int(k) >= 1):
            raise InvalidArgumentError(f"{option} = {text!r} is not allowed; allowed: 'all', 'every:K' (K >= 1), or ids "
                                       "and ranges like '0-99,250'")
        return list(range(0, n, int(k)))
    return parse_ids(text, n, option)


def names_or_all(text: str, allowed: Sequence[str], option: str) -> list[str]:
    """'all' or comma-separated names, each one of ``allowed`` (one line naming the flag otherwise)."""
    if is_all(text):
        return list(allowed)
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise InvalidArgumentError(f"{option} = {text!r} is not allowed; allowed values: 'all' or names from {list(allowed)}")
    return names


def check_sample(n: int | None) -> None:
    """``--sample N``: at least one arch (an empty sweep is a mistake, not a result)."""
    if n is not None:
        from ..spaces.flexibert import FLEXIBERT_SPACE

        check_int("--sample", n, low=1, high=FLEXIBERT_SPACE.size)


def check_sweep_flags(args: argparse.Namespace) -> tuple[SlurmResources | None, str]:
    """The flags every sweep command (``proxies compute``, ``hardware``) takes, checked in
    one place before anything loads: ``--out``, ``--sample``, ``--cache``, then the
    ``--slurm-*`` resources and ``--device`` (returned, canonical)."""
    check_out(Path(args.out))  # before a long computation (and before loading anything), not after it
    check_sample(args.sample)
    if args.sample is not None and not is_all(args.ids):
        raise InvalidArgumentError("--sample draws archs from the whole FlexiBERT space; it takes no --ids")
    check_cache(args)
    return sweep_placement(args)


def sampled_archs(args: argparse.Namespace) -> list[Any]:
    """``--sample N`` archs drawn from the whole FlexiBERT space (seeded by ``--seed``),
    instead of benchmark ids (:func:`check_sweep_flags` refused ``--ids`` beside it)."""
    from ..spaces.flexibert import FLEXIBERT_SPACE

    return list(FLEXIBERT_SPACE.sample(args.sample, seed=args.seed))


# -- files ------------------------------------------------------------------------------------
def writable(folder: Path, option: str) -> None:
    """A clear error, before any work, when ``folder`` cannot be written (the library's
    one check, :func:`~nasbench_bert.checks.check_writable_folder`, naming the option)."""
    check_writable_folder(option, folder)


def check_out(out: Path, option: str = "--out", suffixes: tuple[str, ...] = (".csv", ".parquet")) -> Path:
    """Refuse an output path before any work is done: a wrong suffix, a folder in its
    place, or a folder that cannot be written."""
    if out.suffix not in suffixes:
        raise InvalidArgumentError(f"{option} = {str(out)!r} must end in {' or '.join(suffixes)}")
    if out.is_dir():
        raise InvalidArgumentError(f"{option} = {str(out)!r} is a folder; give a file name ending in {' or '.join(suffixes)}")
    writable(out.parent, option)
    if out.parent.is_dir():  # permissions can say yes where the file system says no (/proc, read-only mounts)
        try:
            tempfile.NamedTemporaryFile(dir=out.parent, prefix=".nasbench-bert-probe-").close()
        except OSError as e:
            raise InvalidArgumentError(f"{option} = {str(out)!r} cannot be written there ({e.strerror}); choose a file in "
                                       "a folder you can write to") from None
    return out


#: a table file's suffix -> the pandas method that writes it (what :func:`check_out` allows by default)
_WRITERS = {".csv": "to_csv", ".parquet": "to_parquet"}
#: a table file's suffix -> the pandas function that reads it (any other suffix is read as CSV)
_READERS = {".parquet": "read_parquet"}


def write_frame(df: pd.DataFrame, out: Path, option: str = "--out", stamp: dict[str, str] | None = None) -> None:
    """``df`` as a .csv or .parquet file, its per-layer list columns as JSON text; written
    atomically, so a failed export leaves no partial file.

    ``stamp`` (an export's provenance: the package version that wrote it, the table) goes
    where each format keeps it without changing what a reader loads: a parquet file's schema
    metadata (``nasbench_bert`` key), a CSV's sidecar ``FILE.csv.json``. Why: an exported
    table outlives the version that wrote it, and column meanings change between versions
    (``--legacy-names``)."""
    from ..atomic import atomic_path

    check_out(out, option)
    flat = df.copy()
    for c in flat.columns:
        if c.endswith("__layers"):
            flat[c] = [json.dumps(v) for v in flat[c]]
    if stamp is not None and out.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(flat, preserve_index=False)
        meta = {**(table.schema.metadata or {}), STAMP_KEY: json.dumps(stamp, sort_keys=True).encode()}
        with atomic_path(out) as tmp:
            pq.write_table(table.replace_schema_metadata(meta), tmp)
        return
    if stamp is not None:
        side = out.with_name(out.name + ".json")
        with atomic_path(side) as tmp:
            tmp.write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    with atomic_path(out) as tmp:
        getattr(flat, _WRITERS[out.suffix])(tmp, index=False)


#: the parquet schema-metadata key of an export's stamp (:func:`write_frame`)
STAMP_KEY = b"nasbench_bert"


def export_stamp(table: str) -> dict[str, str]:
    """What an exported table carries of its making: the package version and the table."""
    from ..version import __version__

    return {"nasbench_bert_version": __version__, "generated_by": f"nasbench-bert {__version__}", "table": table}


def read_frame(path: str, option: str) -> pd.DataFrame:
    """A table given on the command line (.csv or .parquet), or an error naming the option."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise InvalidArgumentError(f"{option} = {path!r}: no such file")
    try:
        return getattr(pd, _READERS.get(p.suffix, "read_csv"))(p)
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise InvalidArgumentError(f"{option} = {path!r} is not a readable .csv or .parquet table ({type(e).__name__}: {e})") from None
