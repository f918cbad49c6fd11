"""Publish built tables to a Hugging Face Hub dataset repository, as one commit.

    nasbench-bert publish --repo-id ORG/NAME [--revision main] [--data DIR] [--endpoint URL]
    nasbench-bert publish --repo-id ORG/NAME ...          (the same, from the CLI)

The commit holds ``README.md`` (a dataset card whose YAML header carries the licences,
the citation and one ``configs:`` entry per table, so ``datasets.load_dataset(repo,
name)`` loads each table directly, and a section on what changed since the previous
schema), ``v2/manifest.json`` and ``v2/<table>.parquet``. Readers
(:mod:`nasbench_bert.data.hub`) verify every table against that manifest. A repository
that held schema 1 keeps its ``v1/`` folder (this commit adds ``v2/`` beside it), so
installs of nasbench-bert 0.2 that follow ``main`` keep working.

The tables are verified before anything is uploaded: a corrupt local build is never
published. So is the completeness of the folder: the commit carries the artifacts that
go with the tables (``v2/objectives-v1.json`` and the pinned surrogate
``v2/surrogate-*-v1.npz``, :mod:`nasbench_bert.data.artifacts`), and a folder without
them - built by ``build_tables`` alone or ``build-data --no-surrogate`` - is refused
with one line naming ``nasbench-bert build-surrogate``, before anything is uploaded:
users who download a revision must get what ``build-data`` gives, or every one of
them refits the surrogate.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from nasbench_bert.benchmark.flexibert import complete_build
from nasbench_bert.data.artifacts import ARTIFACTS, read_artifact
from nasbench_bert.data.hub import DEFAULT_REPO_ID, REPO_TYPE, check_repo_id
from nasbench_bert.data.resolve import resolve
from nasbench_bert.data.tables import MANIFEST, SCHEMA_VERSION, TABLES, VERSION_DIR, DataDir, data_root
from nasbench_bert.errors import DataNotFoundError

CITATION = """\
@inproceedings{serianni2023training,
  title     = {Training-free Neural Architecture Search for {RNNs} and Transformers},
  author    = {Serianni, Aaron and Kalita, Jugal},
  booktitle = {Proceedings of the 61st Annual Meeting of the Association for Computational Linguistics (ACL)},
  year      = {2023}
}
@article{klyuchnikov2022nasbenchnlp,
  title   = {{NAS-Bench-NLP}: Neural Architecture Search Benchmark for Natural Language Processing},
  author  = {Klyuchnikov, Nikita and Trofimov, Ilya and Artemova, Ekaterina and Salnikov, Mikhail and
             Fedorov, Maxim and Filippov, Alexander and Burnaev, Evgeny},
  journal = {IEEE Access},
  volume  = {10},
  pages   = {45736--45747},
  year    = {2022},
}"""


#: the card's section on what users of the data should know (measured; docs/errata.md)
KNOWN_FACTS = """\
## What is known about the data

* **Operation types.** In the released TensorFlow training code the per-layer operation
  type is compared with `is` against string literals, so every layer may have been
  trained as scaled dot-product attention. Measured on these 500 runs: adding the
  per-layer operation fields to hidden size, depth, heads and feed-forward settings
  raises the OLS R² of GLUE from 0.765 to 0.771 (partial F-test p = 0.85; permutation
  test p = 0.84). Treat per-operation conclusions with care.
* **Repeats.** 9 FlexiBERT archs appear twice among the 500 ids (GLUE differs by 0.67 on
  average, 2.02 at most); 52 NAS-Bench-NLP WikiText-2 cells appear under several recipe
  ids; 4 WikiText-2 runs diverged (their final loss is NaN).
* **Stored proxies** (`flexibert_proxies`) were computed on a model that ignores each
  arch's hidden size and feed-forward width (hidden 256, feed-forward 1024 for all); its
  raw activation-distance column counts each activation many times (use the normalised
  one).
"""


def schema_changes(manifest: dict) -> str:
    """The card's "What changed" section, from the manifest's ``renamed_columns``: a
    user who pinned the previous schema's revision learns which names to change."""
    renamed = manifest.get("renamed_columns", {})
    rows = "\n".join(f"| `{table}` | `{old}` | `{new}` |" for table in sorted(renamed)
                     for old, new in renamed[table].items())
    return f"""## What changed in schema {SCHEMA_VERSION}

Schema {SCHEMA_VERSION} (nasbench-bert 0.3) names every column by one rule: a column whose value depends on
which model an arch string is read as ends in that model's semantics (`as_specified`, `authors`,
`as_trained`), in every table; NAS-Bench-NLP's counts and the hardware table's (whose rows name
their semantics) keep `num_params`. The values are unchanged; only these columns were renamed:

| table | schema 1 name | schema {SCHEMA_VERSION} name |
|---|---|---|
{rows}

The schema-1 files, where this repository had them, stay in `v1/` for nasbench-bert 0.2. In
nasbench-bert 0.3 the old names still answer (`df["num_params"]`, `result.num_params`,
`nasbench-bert export --legacy-names`) with a `DeprecationWarning` naming the new one; 0.4
removes them. nasbench-bert 0.3 refuses a revision with only `v1/` and says how to build
schema {SCHEMA_VERSION} locally (`nasbench-bert build-data`)."""


def dataset_card(manifest: dict) -> str:
    """The README.md of the dataset repository (YAML metadata + prose)."""
    configs = "\n".join(
        f"- config_name: {name}\n  data_files:\n  - split: train\n    path: {VERSION_DIR}/{manifest['tables'][name]['file']}"
        for name in sorted(manifest["tables"])
    )
    rows = "\n".join(
        f"| `{name}` | {manifest['tables'][name]['rows']:,} | {TABLES[name]} | `{manifest['tables'][name]['sha256'][:16]}…` |"
        for name in sorted(manifest["tables"])
    )
    return f"""---
license:
- cc-by-4.0
- apache-2.0
pretty_name: nasbench-bert (FlexiBERT/ELECTRA and NAS-Bench-NLP benchmark tables)
tags:
- neural-architecture-search
- nas-benchmark
- zero-cost-proxies
- glue
size_categories:
- 1K<n<10K
configs:
{configs}
---

# nasbench-bert tables (schema {VERSION_DIR})

Tabular NAS benchmark results, read by the `nasbench-bert` Python package:

```python
from nasbench_bert import Benchmark
bench = Benchmark.load(source="hub", repo_id="<this repo>", revision="<commit sha>")
```

or directly with `datasets.load_dataset("<this repo>", "flexibert")`.

| table | rows | contents | sha256 |
|---|---|---|---|
{rows}

`{VERSION_DIR}/{MANIFEST}` records the schema version, the sha256 and size of every table and of
every release file the tables were built from; `nasbench-bert` refuses files that do not match it.

{schema_changes(manifest)}

{KNOWN_FACTS}
## Provenance and licences

* `flexibert*` tables: built from the release of Serianni & Kalita (ACL 2023),
  *Training-free Neural Architecture Search for RNNs and Transformers*
  (github.com/aaronserianni/training-free-nas), **CC BY 4.0**.
* `nlp_*` tables: built from NAS-Bench-NLP (Klyuchnikov et al., IEEE Access 2022;
  github.com/fmsnew/nas-bench-nlp-release), **Apache-2.0**.
* `flexibert_hardware`: measured by nasbench-bert (CPU latency, peak memory, FLOPs of each
  arch's encoder under each semantics; the machine is in `{VERSION_DIR}/{MANIFEST}` under
  `hardware`), **CC BY 4.0** like the data it is keyed to.

The other tables are a re-encoding of those releases (no new training); see the package's
README for the data facts (repeated architectures, diverged runs, repaired CSVs).

## Citation

```bibtex
{CITATION}
```
"""


def publish(
    repo_id: str = DEFAULT_REPO_ID,
    *,
    data: str | Path | None = None,
    revision: str = "main",
    endpoint: str | None = None,
    token: str | bool | None = None,
    private: bool = False,
    commit_message: str | None = None,
) -> str:
    """Upload the tables in ``data`` (default: the resolved local tables) and their
    artifacts as one commit; a folder that lacks an artifact raises
    :class:`~nasbench_bert.DataNotFoundError` before anything is uploaded.

    Returns the commit sha, which is what users should pin.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    check_repo_id(repo_id)
    # resolved tables built here get their artifacts too, as Benchmark.load() gives them
    d = DataDir.open(data) if data is not None else resolve(build=True, progress=False, complete=complete_build)
    missing = sorted(set(ARTIFACTS) - set(d.manifest.get("artifacts", {})))
    if missing:  # a revision without them makes every user refit the surrogate
        raise DataNotFoundError(
            f"{d.path} lacks the {' and '.join(missing)} file{'s' if len(missing) > 1 else ''} that go with the tables; "
            f"write {'them' if len(missing) > 1 else 'it'} with `nasbench-bert build-surrogate --data {data_root(d.path)}`, "
            "then publish again (nothing was uploaded)")
    d.verify_all()  # never publish a corrupt build
    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
    if revision != "main":
        api.create_branch(repo_id, repo_type=REPO_TYPE, branch=revision, exist_ok=True)
    ops = [CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=dataset_card(d.manifest).encode())]
    ops.append(CommitOperationAdd(path_in_repo=f"{VERSION_DIR}/{MANIFEST}", path_or_fileobj=str(d.path / MANIFEST)))
    for name in d.names:
        ops.append(CommitOperationAdd(path_in_repo=f"{VERSION_DIR}/{d.manifest['tables'][name]['file']}", path_or_fileobj=str(d.table_path(name))))
    for name, entry in sorted(d.manifest.get("artifacts", {}).items()):  # verified like the tables before upload
        ops.append(CommitOperationAdd(path_in_repo=f"{VERSION_DIR}/{entry['file']}", path_or_fileobj=read_artifact(d, name)))
    srcs = d.manifest.get("sources", {})
    info = api.create_commit(
        repo_id, ops, repo_type=REPO_TYPE, revision=revision,
        commit_message=commit_message or f"nasbench-bert tables {VERSION_DIR} ({len(d.names)} tables from {len(srcs)} release files)",
    )
    return info.oid


def write_pin(repo_id: str, revision: str, path: str | Path | None = None) -> Path:
    """Make ``repo_id@revision`` the Hub source this package loads by default: rewrite
    :mod:`nasbench_bert.data.pin` (its source file, or ``path``) atomically. Run from a
    checkout before a release, so the released package pins the data it was tested with."""
    from nasbench_bert.atomic import atomic_write
    from nasbench_bert.data import pin

    check_repo_id(repo_id)
    if not isinstance(revision, str) or len(revision) != 40 or any(c not in "0123456789abcdef" for c in revision):
        raise ValueError(f"revision = {revision!r} is not allowed; allowed: a 40-hex commit sha (pin commits, not branches)")
    target = Path(path) if path is not None else Path(pin.__file__)
    doc = (pin.__doc__ or "").strip()
    text = f'"""{doc}\n"""\n\nPINNED_REPO_ID: str = {repo_id!r}\nPINNED_REVISION: str | None = {revision!r}\n'
    return atomic_write(target, text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo-id", default=DEFAULT_REPO_ID, help=f"Hub dataset repository (default {DEFAULT_REPO_ID})")
    p.add_argument("--revision", default="main", help="branch to commit to (created if missing)")
    p.add_argument("--endpoint", default=None, help="Hub endpoint (default $HF_ENDPOINT or huggingface.co)")
    p.add_argument("--private", action="store_true", help="create the repository as private")
    p.add_argument("--message", default=None, help="commit message")
    p.add_argument("--pin", action="store_true", help="write the new commit into nasbench_bert/data/pin.py (the default Hub revision)")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m nasbench_bert.builders.publish", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="built tables (default: the resolved local tables)")
    add_arguments(p)
    a = p.parse_args(argv)
    sha = publish(a.repo_id, data=a.data, revision=a.revision, endpoint=a.endpoint, private=a.private, commit_message=a.message)
    print(json.dumps({"repo_id": a.repo_id, "revision": a.revision, "commit": sha}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
