"""Parquet tables on disk: names, manifest, integrity checks, atomic writes.

A *data directory* holds one folder per schema version (``v2/``) with the parquet
tables and a ``manifest.json`` that records the schema version, row counts and the
sha256 of every table and of every release file it was built from. Each schema version
has its own folder so that two installed versions of the package can share one user
cache; a folder of another schema version is never read as this one's
(:func:`other_schema`: it is rebuilt, or refused with the command that rebuilds it). Tables are verified
against the manifest the first time they are read, so a truncated or corrupted file is
reported by name instead of producing wrong numbers.

Writes are atomic: a build goes to a hidden staging folder beside the target and is
renamed into place only when every table and the manifest are complete, so a build that
is killed midway never leaves a half-written table where a reader looks.

Where the data comes from is :mod:`nasbench_bert.data.resolve`; how release files
become tables, :mod:`nasbench_bert.data.release`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from ..atomic import recover_dir, replace_dir, staging_dir
from ..errors import DataIntegrityError, DataNotFoundError, InvalidArgumentError, StaleDataError

#: 2: canonical column names (:mod:`nasbench_bert.data.columns`); 1: release-era names
SCHEMA_VERSION = 2
VERSION_DIR = f"v{SCHEMA_VERSION}"
#: the name of a version folder (``v<schema version>``)
_VERSION_FOLDER = re.compile(r"v(\d+)")
MANIFEST = "manifest.json"

#: table name -> what it holds (also written into the manifest and the dataset card)
TABLES: dict[str, str] = {
    "flexibert": "FlexiBERT/ELECTRA benchmark: one row per arch id 0-499 (GLUE dev scores, training time, hparams, parameter counts)",
    "flexibert_curves": "GLUE dev scores of archs re-pretrained for 0 ... 1,000,000 steps (every 50,000): learning curves",
    "flexibert_proxies": "the paper's 15 stored zero-cost proxy values per arch (computed on the authors model)",
    "flexibert_hardware": "measured by nasbench-bert: CPU latency (batch 1 and 32, sequence 128), peak memory and FLOPs per arch id and semantics; machine in the manifest",
    "nlp_ptb": "NAS-Bench-NLP on Penn Treebank: final test loss, perplexity, bits per word, parameters, stored proxies, graph2vec",
    "nlp_wikitext2": "NAS-Bench-NLP on WikiText-2: every training log with recipe, hyper-parameters and per-epoch curves",
    "proxy_values": "computed by nasbench-bert: every zero-cost proxy it ships, per arch (FlexiBERT id, NAS-Bench-NLP recipe) and semantics; provenance in the manifest",
    "nlp_ptb_logs": "NAS-Bench-NLP on Penn Treebank: the training logs (train_logs_single_run), per-epoch curves as in nlp_wikitext2; built only when build-data is given them",
}

#: tables a data folder may lack: the package's own measurements, which are not built from
#: the release (``python -m nasbench_bert.builders.hardware`` measures them); a build
#: includes them when a measurement is found (:func:`nasbench_bert.data.release.build_tables`)
OPTIONAL_TABLES: frozenset[str] = frozenset({"flexibert_hardware", "proxy_values", "nlp_ptb_logs"})
#: how each optional table is made, for the message of a folder that lacks it
OPTIONAL_HOW: dict[str, str] = {
    "flexibert_hardware": "Measure it with `python -m nasbench_bert.builders.hardware`, then `nasbench-bert build-data "
                          "--force --out {root}`",
    "proxy_values": "Build it with `nasbench-bert build-proxy-values --data {root}`, or `nasbench-bert build-data --force "
                    "--out {root}`, which copies the pinned table",
    "nlp_ptb_logs": "Build it from NAS-Bench-NLP's PTB logs archive with `nasbench-bert build-data --force --ptb-logs "
                    "ZIP --out {root}`",
}

GLUE_TASKS: tuple[str, ...] = ("cola", "mnli", "mrpc", "qnli", "qqp", "rte", "sst2", "stsb")
#: the release's task keys -> the GLUE names used here
RELEASE_TASK_NAMES: dict[str, str] = {"cola": "cola", "mnli": "mnli", "mrpc": "mrpc", "qnli": "qnli", "qqp": "qqp", "rte": "rte", "sst": "sst2", "sts": "stsb"}

#: stored FlexiBERT proxy columns: CSV name -> table name. The CSV's
#: "Jacobian Score Normalized" is in fact the Jacobian *cosine* score (DATA-NOTES).
FLEXIBERT_PROXY_COLUMNS: dict[str, str] = {
    "Synaptic Diversity": "synaptic_diversity",
    "Synaptic Diversity Normalized": "synaptic_diversity_norm",
    "Synaptic Saliency": "synaptic_saliency",
    "Synaptic Saliency Normalized": "synaptic_saliency_norm",
    "Activation Distance": "activation_distance",
    "Activation Distance Normalized": "activation_distance_norm",
    "Jacobian Score": "jacobian_covariance",
    "Jacobian Score Normalized": "jacobian_cosine",
    "Number of Parameters": "num_params_authors",
    "Head Importance": "head_importance",
    "Head Importance Normalized": "head_importance_norm",
    "Head Confidence": "head_confidence",
    "Head Confidence Normalized": "head_confidence_norm",
    "Head Softmax Confidence": "head_softmax_confidence",
    "Head Softmax Confidence Normalized": "head_softmax_confidence_norm",
}

NLP_PROXY_COLUMNS: dict[str, str] = {
    "Activation Distance": "activation_distance",
    "Synaptic Saliency": "synaptic_saliency",
    "Jacobian Covariance": "jacobian_covariance",
    "Jacobian Cosine": "jacobian_cosine",
    "Large Noise Jacobian": "jacobian_covariance_large_noise",
    "Large Noise Jacobian Cosine": "jacobian_cosine_large_noise",
    "More Noised Jacobian": "jacobian_covariance_more_noise",
    "More Noised Jacobian Cosine": "jacobian_cosine_more_noise",
    "Hidden Synaptic Saliency": "hidden_synaptic_saliency",
    "Layer 1 Hidden Covariance": "hidden_covariance_layer1",
    "Layer 2 Hidden Covariance": "hidden_covariance_layer2",
    "Layer 3 Hidden Covariance": "hidden_covariance_layer3",
}
GRAPH2VEC_COLUMNS: tuple[str, ...] = tuple(f"g2v_{i}" for i in range(10))


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(chunk):
            h.update(b)
    return h.hexdigest()


# -- writing -----------------------------------------------------------------------------
def write_parquet_deterministic(table: pa.Table, path: Path) -> None:
    """Write parquet so that the same table always gives the same bytes."""
    pq.write_table(
        table, path, compression="zstd", compression_level=9, use_dictionary=True,
        write_statistics=True, store_schema=True, row_group_size=1 << 20,
    )


def write_dataset(
    tables: Mapping[str, pa.Table],
    root: Path,
    sources: Mapping[str, str],
    *,
    extra: Mapping[str, Any] | None = None,
    on_table: Callable[[str], None] | None = None,
) -> Path:
    """Write ``tables`` and their manifest atomically into ``root/v<SCHEMA_VERSION>/``.

    ``sources`` maps each release file (relative name) to its sha256. ``on_table`` is
    called after each table is written (progress bars, and tests that interrupt builds).
    """
    unknown = sorted(set(tables) - set(TABLES))
    if unknown:
        raise InvalidArgumentError(f"unknown table name(s) {unknown}; allowed: {sorted(TABLES)}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    target = root / VERSION_DIR
    recover_dir(target)  # a build killed mid-swap left the good copy aside: put it back first
    staging = staging_dir(target)
    try:
        entries = {}
        for name in sorted(tables):
            path = staging / f"{name}.parquet"
            write_parquet_deterministic(tables[name], path)
            entries[name] = {
                "file": path.name,
                "rows": tables[name].num_rows,
                "columns": tables[name].column_names,
                "sha256": sha256_file(path),
                "bytes": path.stat().st_size,
                "description": TABLES[name],
            }
            if on_table:
                on_table(name)
        from .columns import RENAMED

        manifest = {
            "schema_version": SCHEMA_VERSION,
            # what changed since schema 1, for readers of the Hub copy (the dataset card says it too)
            "renamed_columns": {t: dict(m) for t, m in RENAMED.items() if t in tables},
            "tables": entries,
            "sources": dict(sorted(sources.items())),
            **(dict(extra) if extra else {}),
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        return replace_dir(staging, target)
    except BaseException:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        raise


# -- reading -----------------------------------------------------------------------------
@dataclass
class DataDir:
    """A verified data folder (``.../v2``): the manifest, and tables read on demand."""

    path: Path
    manifest: dict[str, Any]
    verify: bool = True
    _cache: dict[str, pa.Table] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: Path | str, *, verify: bool = True) -> "DataDir":
        p = Path(path)
        if p.name != VERSION_DIR:
            recover_dir(p / VERSION_DIR)
        if (p / VERSION_DIR / MANIFEST).is_file():
            p = p / VERSION_DIR
        mpath = p / MANIFEST
        if not mpath.is_file():
            stale = other_schema(p)
            if stale:
                raise StaleDataError(stale)
            raise DataNotFoundError(f"no {MANIFEST} in {p}; build the tables with `nasbench-bert build-data --out {p.parent if p.name == VERSION_DIR else p}`")
        fix = f"rebuild with `nasbench-bert build-data --force --out {data_root(p)}` (or download again)"
        try:
            manifest = json.loads(mpath.read_text())
        except (ValueError, UnicodeDecodeError) as e:
            raise DataIntegrityError(f"{mpath} is not valid JSON ({e}); {fix}") from None
        check_manifest(manifest, str(mpath), fix)
        return cls(p, manifest, verify)

    @property
    def _fix(self) -> str:
        # data_root: the folder itself when its manifest lies directly in it (a flat folder), not its parent
        return f"rebuild it with `nasbench-bert build-data --force --out {data_root(self.path)}` (or download again)"

    @property
    def names(self) -> list[str]:
        """The tables this folder holds (every required one, and the optional ones built)."""
        return sorted(self.manifest["tables"])

    def has_table(self, name: str) -> bool:
        return name in self.manifest["tables"]

    def table_path(self, name: str) -> Path:
        if name not in TABLES:
            raise InvalidArgumentError(f"table = {name!r} is not allowed; allowed values: {sorted(TABLES)}")
        if name not in self.manifest["tables"]:
            raise DataNotFoundError(f"table {name!r} is not in {self.path}: it is the package's own measurement, not "
                                    "built from the release. " + OPTIONAL_HOW[name].format(root=self.path.parent))
        return self.path / self.manifest["tables"][name]["file"]

    def table(self, name: str) -> pa.Table:
        """Read one table, checking size and sha256 against the manifest first, and its
        columns against the declared ones after (a swapped file never loads as another)."""
        if name in self._cache:
            return self._cache[name]
        path = self.table_path(name)
        meta = self.manifest["tables"][name]
        fix = self._fix
        if not path.is_file():
            raise DataIntegrityError(f"table {name!r}: file {path} is missing; {fix}")
        if self.verify:
            size = path.stat().st_size
            if size != meta["bytes"]:
                raise DataIntegrityError(f"table {name!r}: {path} has {size} bytes, manifest says {meta['bytes']} (truncated?); {fix}")
            digest = sha256_file(path)
            if digest != meta["sha256"]:
                raise DataIntegrityError(f"table {name!r}: sha256 of {path} is {digest}, manifest says {meta['sha256']}; {fix}")
        try:
            t = pq.read_table(path)
        except (OSError, pa.ArrowException) as e:
            raise DataIntegrityError(f"table {name!r}: cannot read {path} ({e}); {fix}") from None
        if t.num_rows != meta["rows"]:
            raise DataIntegrityError(f"table {name!r}: {t.num_rows} rows, manifest says {meta['rows']}; {fix}")
        check_columns(name, t, fix)
        self._cache[name] = t
        return t

    def verify_all(self) -> None:
        for name in self.names:
            self.table(name)


def check_manifest(manifest: Any, where: str, fix: str) -> None:
    """Raise :class:`DataIntegrityError` unless ``manifest`` has this package's schema
    version, matches ``manifest.schema.json`` (every table with a plain file name, rows,
    columns, sha256 and size) and lists every table. A manifest can come from a server,
    so nothing in it is used before this check."""
    from .schemas import load_schema

    if not isinstance(manifest, dict):
        raise DataIntegrityError(f"{where} is not a manifest (a JSON object), it holds {type(manifest).__name__}; {fix}")
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        if isinstance(version, int) and not isinstance(version, bool) and 1 <= version < SCHEMA_VERSION:
            raise StaleDataError(f"{where} holds schema-{version} tables ({SCHEMA_NOTES.get(version, 'an older layout')}); "
                                 f"this nasbench-bert reads schema {SCHEMA_VERSION}: {fix}")
        raise DataIntegrityError(
            f"{where} has schema_version {version!r}; this nasbench-bert reads {SCHEMA_VERSION}. "
            f"{fix[0].upper() + fix[1:]}, or upgrade nasbench-bert.")
    import jsonschema

    try:
        jsonschema.validate(manifest, load_schema("manifest"))
    except jsonschema.ValidationError as e:
        at = "/".join(str(x) for x in e.absolute_path) or "(root)"
        raise DataIntegrityError(f"{where}: field {at}: {e.message}; {fix}") from None
    unknown = sorted(set(manifest["tables"]) - set(TABLES))
    if unknown:
        raise DataIntegrityError(f"{where} lists unknown table(s) {unknown}; allowed: {sorted(TABLES)}; {fix}")
    missing = sorted(set(TABLES) - OPTIONAL_TABLES - set(manifest["tables"]))
    if missing:  # e.g. a user cache built by an older nasbench-bert, before a table was added
        raise StaleDataError(f"{where} lists no table(s) {missing}: it was built by another version of nasbench-bert, "
                             f"or damaged. {fix[0].upper() + fix[1:]}")
    from .schemas import table_columns

    declared = table_columns()
    stale = {n: [c for c in declared.get(n, {}) if c not in manifest["tables"][n]["columns"]] for n in sorted(manifest["tables"])}
    stale = {n: c for n, c in stale.items() if c}
    if stale:  # e.g. tables a user cache kept from an older nasbench-bert
        raise StaleDataError(
            f"{where} was built by another version of nasbench-bert: "
            + "; ".join(f"table {n!r} lacks column(s) {c}" for n, c in stale.items()) + f". {fix[0].upper() + fix[1:]}")


def check_columns(name: str, table: pa.Table, fix: str) -> None:
    """Raise :class:`DataIntegrityError` unless ``table`` has every declared column of
    table ``name`` with its declared Arrow type (``table_columns.json``)."""
    from .schemas import table_columns

    want = table_columns().get(name, {})
    have = {f.name: str(f.type) for f in table.schema}
    missing = [c for c in want if c not in have]
    wrong = [f"{c} is {have[c]}, expected {t}" for c, t in want.items() if c in have and have[c] != t]
    if missing or wrong:
        raise DataIntegrityError(
            f"table {name!r} does not have the {name} table's columns (missing {missing[:5]}{' ...' if len(missing) > 5 else ''}"
            f"{'; ' + '; '.join(wrong[:3]) if wrong else ''}): a wrong or swapped file; {fix}")


def has_data(p: Path) -> bool:
    """Whether ``p`` (a data folder or its version folder) holds a manifest of this
    schema version's folder (a manifest directly in ``p`` is checked when it is read)."""
    return (p / VERSION_DIR / MANIFEST).is_file() or (p / MANIFEST).is_file()


#: what each older schema version was, for the one-line message that refuses it
SCHEMA_NOTES: dict[int, str] = {1: "release-era column names such as num_params_seed_compat, written by nasbench-bert 0.2 "
                                   "or older"}


def version_number(name: str) -> int | None:
    """The schema version a folder name says (``v2`` -> 2), None for any other name."""
    m = _VERSION_FOLDER.fullmatch(name)
    return None if m is None else int(m.group(1))


def data_root(p: Path) -> Path:
    """The data folder of ``p``: ``p`` itself, or its parent when ``p`` is a version
    folder (``v<n>``) - where ``build-data --out`` must point to rebuild it."""
    return p.parent if version_number(p.name) is not None else p


def other_schema(p: Path) -> str | None:
    """One line saying that ``p`` holds tables of another schema version only - and the
    command that builds this version's - or None when it does not.

    ``p`` may be a data folder (``p/v1/manifest.json``) or a version folder passed by
    path (``.../v1``). A data folder that also holds this version's folder is not stale.
    """
    if (p / VERSION_DIR / MANIFEST).is_file():
        return None
    found = sorted((n for d in (p.iterdir() if p.is_dir() else ())
                    if (n := version_number(d.name)) is not None and (d / MANIFEST).is_file() and n != SCHEMA_VERSION),
                   reverse=True)
    own = version_number(p.name)
    if p.name != VERSION_DIR and own is not None and (p / MANIFEST).is_file():
        found = [own]
    if not found:
        return None
    v, root = found[0], data_root(p)
    build = f"`nasbench-bert build-data --out {root}` (writes {root / VERSION_DIR} beside them)"
    if v > SCHEMA_VERSION:
        return (f"{p} holds schema-{v} tables only, newer than this nasbench-bert reads ({SCHEMA_VERSION}): upgrade "
                f"nasbench-bert, or build schema-{SCHEMA_VERSION} tables with {build}")
    return (f"{p} holds schema-{v} tables only ({SCHEMA_NOTES.get(v, 'an older layout')}); this nasbench-bert reads "
            f"schema {SCHEMA_VERSION}: build them with {build}")


def user_cache_dir() -> Path:
    """``$NASBENCH_BERT_CACHE``, else ``$XDG_CACHE_HOME/nasbench-bert``, else
    ``~/.cache/nasbench-bert``: where built and downloaded tables, tokenizers and Hub
    snapshots are kept."""
    if os.environ.get("NASBENCH_BERT_CACHE"):
        return Path(os.environ["NASBENCH_BERT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nasbench-bert"
