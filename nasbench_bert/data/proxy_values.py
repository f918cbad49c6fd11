"""The proxy-values table: every proxy the package ships, per arch and semantics, as data.

Why a table: computing the 50-odd live proxies of 500 FlexiBERT archs under three
semantics takes hours on a CPU, and a zero-cost-proxy researcher wants the values (to
combine proxies, plot them, score a subset, fit a predictor), not the sweep. So the
values are computed once (``nasbench-bert build-proxy-values``, :mod:`nasbench_bert.proxies.values`),
pinned, and served like the release's tables: listed in the manifest with their sha256,
verified on first read, carried by ``publish`` and ``download``.

Layout (one parquet table, ``proxy_values``):

* one row per (``benchmark``, key, ``semantics``): FlexiBERT rows are keyed by ``id``
  (0-499), NAS-Bench-NLP rows by ``recipe_hash`` (the distinct recipes of the WikiText-2
  logs; the PTB runs with a public recipe are a subset), the other key column null;
* one float64 column per proxy. A proxy name registered for both benchmarks (``l2_norm``,
  ``zico``, ...) is one column: each benchmark's rows hold that benchmark's definition;
  a column a benchmark does not register is null on its rows.

The table holds only values this package computed (no field of the authors' release
besides the benchmark's id), so it can ship with the package: ``build-data`` copies the
pinned file (:data:`PINNED`) into every data folder it writes.

Provenance - package version and commit, torch version, device, dtype, batch key, seed,
threads and machine, each proxy's definition version - is the manifest's
``proxy_values`` section (and the pinned file's sidecar JSON). :func:`read_proxy_values`
refuses a table whose provenance, columns or proxy definitions do not match this
package, with one line naming the command that rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..atomic import atomic_path, atomic_write
from ..errors import DataIntegrityError, DataNotFoundError, InvalidArgumentError, StaleDataError
from .tables import MANIFEST, TABLES, DataDir, sha256_file, write_parquet_deterministic

TABLE = "proxy_values"
#: the key columns, in order; every other column is a proxy
KEY_COLUMNS: tuple[str, ...] = ("benchmark", "id", "recipe_hash", "semantics")
#: what keys a benchmark's rows (the index of :func:`read_proxy_values`), and its dtype
INDEX: dict[str, str] = {"flexibert": "id", "nlp": "recipe_hash"}
INDEX_DTYPES: dict[str, str] = {"id": "int64", "recipe_hash": "object"}
#: a (benchmark, semantics) the table does not compute because another semantics' rows are
#: the same values: NAS-Bench-NLP builds one model per recipe whatever the semantics, and
#: ``as_specified`` prescribes the same protocol there as ``as_trained``
#: (tests/test_proxy_values.py checks that the two protocols still agree)
SAME_AS: dict[tuple[str, str], str] = {("nlp", "as_specified"): "as_trained"}
#: the sidecar's and the manifest section's format
FORMAT_VERSION = 1
#: the pinned table shipped with the package (written by
#: ``nasbench-bert build-proxy-values --out``); build-data copies it into each data folder
PINNED = Path(__file__).resolve().parent / "pinned" / "proxy_values.parquet"
#: the command that rebuilds the table, quoted by every refusal
REBUILD = "nasbench-bert build-proxy-values"
_KEY_TYPES = {"benchmark": pa.string(), "id": pa.int64(), "recipe_hash": pa.string(), "semantics": pa.string()}


def sidecar(path: Path) -> Path:
    """The provenance file written beside a standalone table (``x.parquet`` -> ``x.json``)."""
    return path.with_suffix(".json")


def to_arrow(frame: pd.DataFrame, proxies: Iterable[str], owners: Mapping[str, Iterable[str]] | None = None) -> pa.Table:
    """The table's Arrow form: the key columns with fixed types, then ``proxies`` in the
    given order as float64, rows sorted by benchmark, semantics and key (the same frame
    always gives the same bytes). ``owners``: each benchmark's proxy columns; a cell of a
    column its row's benchmark does not own is null (not NaN, which is a proxy's own
    value where it broke down)."""
    cols = list(proxies)
    clash = sorted(set(cols) & set(KEY_COLUMNS))
    if clash:
        raise InvalidArgumentError(f"proxy name(s) {clash} collide with the table's key columns {list(KEY_COLUMNS)}")
    df = frame.copy()
    for k in KEY_COLUMNS:
        if k not in df.columns:
            df[k] = None
    df["_id"] = pd.to_numeric(df["id"], errors="coerce").fillna(-1)
    df = df.sort_values(["benchmark", "semantics", "_id", "recipe_hash"], na_position="first", kind="stable")
    arrays = {k: pa.array([None if pd.isna(v) else v for v in df[k]], _KEY_TYPES[k]) for k in KEY_COLUMNS}
    owned = {b: set(v) for b, v in (owners or {}).items()}
    for c in cols:
        v = pd.to_numeric(df[c], errors="coerce").to_numpy(float) if c in df else np.full(len(df), np.nan)
        mask = np.array([owners is not None and c not in owned.get(b, ()) for b in df["benchmark"]], dtype=bool)
        arrays[c] = pa.array(v, pa.float64(), mask=mask if mask.any() else None)
    return pa.table(arrays)


def write_standalone(table: pa.Table, provenance: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """Write ``table`` to ``path`` and its provenance (with the file's sha256) beside it,
    each atomically, the table first: a write killed between the two leaves a table
    without a matching sidecar, which :func:`read_standalone` refuses."""
    path = Path(path)
    with atomic_path(path) as tmp:
        write_parquet_deterministic(table, tmp)
    meta = {**provenance, "file": path.name, "sha256": sha256_file(path), "bytes": path.stat().st_size,
            "rows": table.num_rows, "columns": table.column_names}
    atomic_write(sidecar(path), json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return meta


def read_standalone(path: Path) -> tuple[pa.Table, dict[str, Any]]:
    """A table written by :func:`write_standalone`, checked against its sidecar (sha256,
    size, rows, columns); one :class:`DataIntegrityError` line otherwise."""
    path = Path(path)
    side = sidecar(path)
    fix = f"rebuild it with `{REBUILD} --out {path}`"
    if not path.is_file() or not side.is_file():
        raise DataNotFoundError(f"proxy values {path}: {'the table' if not path.is_file() else 'its sidecar ' + side.name} "
                                f"is missing; {fix}")
    try:
        meta = json.loads(side.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise DataIntegrityError(f"proxy values {side} is not valid JSON ({e}); {fix}") from None
    digest = sha256_file(path)
    if not isinstance(meta, dict) or meta.get("sha256") != digest or meta.get("bytes") != path.stat().st_size:
        raise DataIntegrityError(f"proxy values {path} has sha256 {digest}, its sidecar pins "
                                 f"{meta.get('sha256') if isinstance(meta, dict) else None}; {fix}")
    table = pq.read_table(path)
    _check_layout(table, meta, str(path), fix)
    return table, meta


def _check_layout(table: pa.Table, meta: Mapping[str, Any], where: str, fix: str) -> None:
    """The table's rows and columns are the ones its provenance lists, keys first."""
    if meta.get("format_version") != FORMAT_VERSION:
        raise StaleDataError(f"proxy values {where} have format {meta.get('format_version')!r}; this nasbench-bert reads "
                             f"{FORMAT_VERSION}: {fix}")
    cols = table.column_names
    if tuple(cols[:len(KEY_COLUMNS)]) != KEY_COLUMNS or cols != list(meta.get("columns", [])):
        raise DataIntegrityError(f"proxy values {where}: columns {cols[:6]}... do not match the provenance's "
                                 f"{list(meta.get('columns', []))[:6]}...; {fix}")
    if table.num_rows != meta.get("rows"):
        raise DataIntegrityError(f"proxy values {where}: {table.num_rows} rows, the provenance says {meta.get('rows')}; {fix}")


def add_to_data(data: DataDir, table: pa.Table, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """List ``table`` in the data folder as its ``proxy_values`` table: the parquet file is
    written first, then the manifest (``tables.proxy_values`` and the ``proxy_values``
    provenance section), each atomically, as :func:`nasbench_bert.data.artifacts.add_artifact`
    does. ``data.manifest`` is updated in place; returns the table's manifest entry."""
    path = data.path / f"{TABLE}.parquet"
    with atomic_path(path) as tmp:
        write_parquet_deterministic(table, tmp)
    entry = {"file": path.name, "rows": table.num_rows, "columns": table.column_names, "sha256": sha256_file(path),
             "bytes": path.stat().st_size, "description": TABLES[TABLE]}
    manifest = json.loads((data.path / MANIFEST).read_text())
    manifest["tables"][TABLE] = entry
    manifest[TABLE] = {k: v for k, v in provenance.items() if k not in ("file", "sha256", "bytes", "rows", "columns")}
    atomic_write(data.path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    data.manifest.clear()
    data.manifest.update(manifest)
    data._cache.pop(TABLE, None)
    return entry


def provenance(data: DataDir) -> dict[str, Any]:
    """The ``proxy_values`` provenance section of a data folder's manifest; one line naming
    the build command when the folder has no table."""
    if not data.has_table(TABLE) or not isinstance(data.manifest.get(TABLE), dict):
        raise DataNotFoundError(f"{data.path} holds no proxy-values table; build it with `{REBUILD}` (hours on a CPU, "
                                f"minutes on a GPU) or rebuild the tables with `nasbench-bert build-data --force`, which "
                                "copies the pinned one")
    return dict(data.manifest[TABLE])


def check_current(meta: Mapping[str, Any], where: str, *, version: str, proxy_versions: Mapping[str, Mapping[str, int]]
                  ) -> None:
    """Refuse (one line, with the rebuild command) a table built by another package
    version, or whose proxy definitions differ from the registered ones: its numbers
    would not be what this package computes."""
    if meta.get("format_version") != FORMAT_VERSION:
        raise StaleDataError(f"{where}: proxy-values format {meta.get('format_version')!r}, this nasbench-bert reads "
                             f"{FORMAT_VERSION}; rebuild it with `{REBUILD}`")
    built = meta.get("package_version")
    if built != version:
        raise StaleDataError(f"{where}: the proxy values were built by nasbench-bert {built}, this is {version}; rebuild "
                             f"them with `{REBUILD}` (or `nasbench-bert build-data --force` for the pinned table of "
                             "this version)")
    for bench, want in proxy_versions.items():
        have = meta.get("benchmarks", {}).get(bench, {}).get("proxies", {})
        changed = sorted(n for n, v in want.items() if n in have and have[n].get("version") != v)
        if changed:
            raise StaleDataError(f"{where}: {bench} proxy definition(s) {changed[:4]} changed since the values were "
                                 f"built; rebuild them with `{REBUILD}`")


def select(table: pa.Table, meta: Mapping[str, Any], benchmark: str, semantics: str,
           proxies: Iterable[str] | None) -> pd.DataFrame:
    """The rows of one benchmark and semantics, indexed by its key (:data:`INDEX`), with
    the requested proxy columns (``None``: every proxy the table holds for it), and the
    provenance in ``.attrs``."""
    info = meta.get("benchmarks", {}).get(benchmark)
    if not isinstance(info, dict):
        raise DataNotFoundError(f"the proxy-values table holds no {benchmark} rows; rebuild it with `{REBUILD} "
                                f"--benchmarks {benchmark}`")
    have = list(info.get("proxies", {})) + list(info.get("combined", {}))
    if semantics not in info.get("semantics", []):
        raise InvalidArgumentError(f"semantics = {semantics!r} is not in the proxy-values table; allowed values: "
                                   f"{info.get('semantics', [])}")
    names = have if proxies is None else list(proxies)
    unknown = [n for n in names if n not in have]
    if unknown:
        raise InvalidArgumentError(f"proxy = {unknown[0]!r} is not in the {benchmark} proxy values; allowed values: "
                                   f"{sorted(have)}")
    key = INDEX[benchmark]
    df = table.select([*KEY_COLUMNS, *names]).to_pandas()
    df = df[(df["benchmark"] == benchmark) & (df["semantics"] == semantics)]
    out = df.set_index(key)[names]
    out.index = out.index.astype(INDEX_DTYPES[key])
    top = dict(meta)
    top.pop("benchmarks", None)  # this benchmark's own part is merged in below
    out.attrs = {**top,
                 **{k: v for k, v in info.items() if k not in ("proxies", "semantics")},
                 "table_semantics": list(info.get("semantics", [])), "benchmark": benchmark, "semantics": semantics,
                 "proxies": {n: info.get("proxies", {}).get(n, info.get("combined", {}).get(n)) for n in names}}
    return out


def for_build(source: str | Path | None | bool = None) -> tuple[pa.Table, dict[str, Any]] | None:
    """The proxy-values table a tables build includes, with its provenance, read before
    any work: the file at ``source`` (a table written by ``build-proxy-values --out``), by
    default the pinned one shipped with the package (:data:`PINNED`; None when this install
    has none); ``False``: none. A file asked for by name must exist, verify against its
    sidecar and have been built by this package version, else one line refuses it (naming
    ``proxy_values``); the pinned file of another version is left out with a warning
    (a checkout between a version bump and the table's rebuild, which the tests fail)."""
    from ..version import __version__

    if source is False:
        return None
    path = PINNED if source is None or source is True else Path(source)
    if source is None and not (path.is_file() and sidecar(path).is_file()):
        return None
    if source is not None and not path.is_file():
        raise DataNotFoundError(f"proxy_values = {str(source)!r} is not a file; allowed: a table written by "
                                f"`{REBUILD} --out FILE` (with its .json beside it)")
    table, meta = read_standalone(path)
    try:
        check_current(meta, str(path), version=__version__, proxy_versions={})
    except StaleDataError as e:
        if source is not None:
            raise
        import warnings

        warnings.warn(f"{e}; the tables are built without proxy values", UserWarning, stacklevel=3)
        return None
    return table, {k: v for k, v in meta.items() if k not in ("file", "sha256", "bytes", "rows", "columns")}


def check_arch_list(meta: Mapping[str, Any], flexibert: pa.Table) -> None:
    """Refuse a proxy-values table computed for another arch list than the release's: its
    ids would name other archs (one line, with the rebuild command)."""
    want = meta.get("benchmarks", {}).get("flexibert", {}).get("arch_list_sha256")
    have = arch_list_sha256(flexibert.column("arch").to_pylist())
    if want is not None and want != have:
        raise DataIntegrityError(f"the proxy values were computed for another arch list (sha256 {want[:16]}…, this "
                                 f"release's is {have[:16]}…); rebuild them with `{REBUILD} --out FILE`")


def read_proxy_values(data: DataDir, benchmark: str, semantics: Any = "as_trained",
                      proxies: Iterable[str] | str | None = None) -> pd.DataFrame:
    """The proxy values of ``benchmark`` under ``semantics`` from a data folder's table
    (sha256 and columns verified against the manifest, built by this package version),
    indexed by id (FlexiBERT) or recipe hash (NAS-Bench-NLP), provenance in ``.attrs``.
    ``proxies``: names (``None``: every proxy of the benchmark)."""
    from ..version import __version__
    from ..semantics import get_semantics

    sem = get_semantics(semantics).key
    if isinstance(proxies, str):
        proxies = [proxies]
    if proxies is not None:
        proxies = list(proxies)
        if not proxies or not all(isinstance(p, str) for p in proxies):
            raise InvalidArgumentError(f"proxies = {proxies!r} is not allowed; allowed: None (every proxy) or proxy names")
    meta = provenance(data)
    where = str(data.path / MANIFEST)
    check_current(meta, where, version=__version__, proxy_versions={})
    table = data.table(TABLE)
    entry = data.manifest["tables"][TABLE]
    declared = [c for b in meta.get("benchmarks", {}).values() for c in [*b.get("proxies", {}), *b.get("combined", {})]]
    if sorted(set(entry["columns"]) - set(KEY_COLUMNS)) != sorted(set(declared)):
        raise DataIntegrityError(f"{where}: the proxy-values table's columns do not match the proxies its provenance "
                                 f"lists; rebuild it with `{REBUILD}`")
    info = meta.get("benchmarks", {}).get(benchmark, {})
    if (benchmark, sem) in SAME_AS and sem not in info.get("semantics", []):
        out = select(table, meta, benchmark, SAME_AS[benchmark, sem], proxies)
        out.attrs.update(semantics=sem, rows_of=SAME_AS[benchmark, sem])
        return out
    return select(table, meta, benchmark, sem, proxies)


def arch_list_sha256(archs: Iterable[Any]) -> str:
    """sha256 of the benchmark's canonical arch strings in id order: ties a table's ids to
    the release's archs (a table built against another arch list is refused)."""
    return hashlib.sha256("\n".join(str(a) for a in archs).encode()).hexdigest()
