"""The authors' release files: which they are, their pinned checksums, and getting them.

Why apart from the parsers: fetching is I/O with its own failures (a missing folder, a
download cut off), while parsing is pure. :func:`fetch_release` gives a local folder
with every file of :data:`FILES` whatever the source (a folder, a base URL, or the
authors' repositories at :data:`GITHUB`'s commits); :data:`PINNED_SHA256` is what the
build checks each file against before any parse. The two cell readers here are shared
by the FlexiBERT and NAS-Bench-NLP parsers.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from ..atomic import atomic_path
from ..errors import DataNotFoundError

#: release files (relative to the release folder) -> what they feed
FILES: dict[str, str] = {
    "training-free-nas/data/BERT_benchmark.json": "flexibert",
    "training-free-nas/data/BERT_benchmark_train_ablation.json": "flexibert_curves",
    "training-free-nas/data/BERT_results_activation.csv": "flexibert_proxies",
    "training-free-nas/data/RNN_results.csv": "nlp_ptb",
    "training-free-nas/data/RNN_parameters.csv": "nlp_ptb",
    "nas-bench-nlp/data/doc2vec_features_lowdim.csv": "nlp_ptb, nlp_wikitext2",
    "nas-bench-nlp/train_logs_wikitext-2/logs.zip": "nlp_wikitext2",
}

#: sha256 of every release file at the pinned commits: a copy that differs is refused
#: (``DataIntegrityError``) unless the build is told it is a deliberately modified release
PINNED_SHA256: dict[str, str] = {
    "training-free-nas/data/BERT_benchmark.json": "fa2ff7198dcd71e0b8021ed2ace1c221672c33cc56931b6dff31fda3d044784f",
    "training-free-nas/data/BERT_benchmark_train_ablation.json": "9b4c5d93814cbb5b506c156a3f9b39a8c023af33b167cc1791cb98768f46eab3",
    "training-free-nas/data/BERT_results_activation.csv": "95fb60a0e702102d6b09a60d13745068270aa28183b7cc8dacb79d5ec6a4b36d",
    "training-free-nas/data/RNN_results.csv": "4f084a9b437e4f89475ddb2ada896de2d6cb32268c59924e5542dbf017b90852",
    "training-free-nas/data/RNN_parameters.csv": "536548fa3eb073264b7db8c2fa4625ac6e2333aee0ba0f67b4b154048ac86428",
    "nas-bench-nlp/data/doc2vec_features_lowdim.csv": "85cf5bfd28650ea00c649860d3bdcacfaea7de1b6c4a9d7e483020a6cb3ae7e8",
    "nas-bench-nlp/train_logs_wikitext-2/logs.zip": "f5052d6bea6398001e32c986322a243e8cdedffa906caf242eb0a62ee105aa12",
}

#: the ``source`` that names :data:`GITHUB`
GITHUB_PRESET = "github"
#: the authors' repositories at the commits the project was built from
GITHUB = {
    "training-free-nas/": "https://raw.githubusercontent.com/aaronserianni/training-free-nas/2d76e01/",
    "nas-bench-nlp/": "https://raw.githubusercontent.com/fmsnew/nas-bench-nlp-release/a6d90a3/",
}


def fetch_release(source: str | os.PathLike[str], workdir: Path | None = None) -> Path:
    """Return a local folder with every file in :data:`FILES`.

    ``source`` is a folder, a base URL (``http(s)://host/path/`` with the same layout),
    or ``"github"`` for the authors' repositories at the pinned commits. Downloads go to
    a temporary file first and are renamed into place, so an interrupted download never
    leaves a truncated file behind.
    """
    s = os.fspath(source)
    github = s == GITHUB_PRESET  # the authors' repositories, else a folder or a base URL
    if not github and not s.startswith(("http://", "https://", "file://")):
        p = Path(s)
        if not p.is_dir():
            raise DataNotFoundError(f"release folder {p} does not exist; pass a folder with the layout of shared/upstream "
                                    "(see SOURCES.md), a base URL, or 'github'")
        missing = [f for f in FILES if not (p / f).is_file()]
        if missing:
            raise DataNotFoundError(f"release folder {p} lacks {missing}; expected the layout of shared/upstream (see SOURCES.md)")
        return p
    dest = Path(workdir or tempfile.mkdtemp(prefix="nasbench-bert-release-"))
    for rel in FILES:
        if github:
            prefix = next(k for k in GITHUB if rel.startswith(k))
            url = GITHUB[prefix] + rel[len(prefix):]
        else:
            url = urllib.parse.urljoin(s.rstrip("/") + "/", rel)
        out = dest / rel
        if out.is_file():
            continue
        try:
            with atomic_path(out) as tmp, urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
                shutil.copyfileobj(r, f)
        except OSError as e:
            raise DataNotFoundError(f"cannot download release file {rel} from {url}: {e}") from None
    return dest


def read_csv_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """A release CSV's header and its non-empty rows, as strings (cells are converted by
    the parsers, so each decides what a missing value may be)."""
    with open(path, newline="", encoding="utf-8-sig") as f:  # RNN_results.csv starts with a BOM
        rows = list(csv.reader(f))
    return rows[0], [r for r in rows[1:] if r]


def cell_float(s: str) -> float:
    """Exact float of a CSV cell; 'nan' / '' become NaN (the release's missing marker)."""
    return math.nan if s.strip() in ("", "nan", "NaN") else float(s)
