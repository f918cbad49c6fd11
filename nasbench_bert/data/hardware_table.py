"""The package's own hardware measurement as a table of the data directory.

Why apart from the release parsers: it is not a release file. ``python -m
nasbench_bert.builders.hardware`` measures it on a machine of the user's; the build
looks for it (:func:`hardware_dir`), reads it with its sidecar (:func:`measured_hardware`)
and joins it to the release's arch ids only where each row's :func:`arch_sha` matches,
so a measurement can never be attached to another arch.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import DataIntegrityError
from .tables import sha256_file, user_cache_dir

#: the package's own hardware measurement (not a release file, never committed): the files
#: ``python -m nasbench_bert.builders.hardware`` writes, joined into the tables by arch id
MEASURED_HARDWARE = ("flexibert_hardware.parquet", "flexibert_hardware.json")


def hardware_dir() -> Path:
    """Where a hardware measurement is looked for, and written by default:
    ``$NASBENCH_BERT_HARDWARE``, else ``<user cache>/measured``."""
    env = os.environ.get("NASBENCH_BERT_HARDWARE")
    return Path(env) if env else user_cache_dir() / "measured"


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
