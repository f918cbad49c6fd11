"""syne-tune's on-disk blackbox format: writing the tables safely, and reading them back.

syne-tune keeps a tabular blackbox in one folder, written by its
``blackbox_tabular.serialize`` and read by ``deserialize`` / ``load_blackbox(name)``:
``configspace.json``, ``fidelityspace.json``, ``hyperparameters.parquet``,
``objectives_evaluations.npy`` (tasks, configurations, seeds, fidelities, objectives),
``fidelities_values.npy`` and ``metadata.json`` (:data:`FILES`). Everything this package
writes in that format goes through :func:`write_folders`:

* **What the files hold** (:func:`file_table`). The table itself, with two changes so
  that syne-tune's own reader answers every configuration: ``space_index`` (which arch
  answered, reported beside the objectives in memory) is not written as an objective,
  since on disk every row is its own arch; and a table with one hyperparameter
  (NAS-Bench-NLP's ``recipe_id``) gains a constant second one, ``dataset``. syne-tune
  0.16 finds a row with ``index.loc[tuple_of_values]``; with one hyperparameter the index
  is a plain ``Index`` and pandas 3 refuses a 1-tuple key (``zip() argument 2 is longer
  than argument 1``), so every lookup by configuration would fail.
* **Exact values.** ``serialize`` casts the objectives to float32 (GLUE ``74.73375`` would
  read back as ``74.73374938964844``); the objectives file is written again as float64
  (same name and shape; ``deserialize`` reads it unchanged), so every value equals the
  tables.
* **Metadata.** Each metric's direction, the fidelity and elapsed-time attributes, what
  the fidelity and the time mean, the papers to cite (:data:`CITATIONS`) and the package
  version that wrote it (``generated_by``, ``nasbench_bert_version``) - the stamp by which
  a later export recognises the folder as its own.
* **Never a user's file.** A target must be absent, an empty folder, or a folder this
  package wrote (only syne-tune's files, with a stamped ``metadata.json``); anything else
  - a foreign file inside, a plain file or a link where the folder goes - is refused with
  one line before anything is written. A folder is built beside its target and swapped in
  whole (:mod:`nasbench_bert.atomic`): a failure leaves every target as it was.

Below :mod:`.syne_tune` (which re-exports :func:`serialize_blackbox` and
:func:`load_blackbox`) and :mod:`.syne_tune_recipe` (the named blackbox repository).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
from syne_tune.blackbox_repository.blackbox import Blackbox
from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
from syne_tune.blackbox_repository.blackbox_tabular import deserialize as _st_deserialize
from syne_tune.blackbox_repository.blackbox_tabular import serialize as _st_serialize
from syne_tune.config_space import choice

from ..atomic import recover_dir, replace_dir, staging_dir
from ..errors import InvalidArgumentError, MissingExtraError
from ..vocabulary import Space
from .syne_tune_encoding import ELAPSED, FLAT_KEYS, SPACE_INDEX, config_to_arch
from .syne_tune_tables import FlexiBERTTabular, NLPTabular

#: the files syne-tune's ``serialize`` writes into a blackbox folder (what a complete one holds)
FILES: tuple[str, ...] = ("configspace.json", "fidelityspace.json", "hyperparameters.parquet",
                          "objectives_evaluations.npy", "fidelities_values.npy", "metadata.json")
_SERIANNI = ("Training-free Neural Architecture Search for RNNs and Transformers. Serianni, A. and Kalita, J. ACL 2023 "
             "(the FlexiBERT/ELECTRA benchmark: 500 trained architectures). doi:10.18653/v1/2023.acl-long.142")
_FLEXIBERT = ("FlexiBERT: Are Current Transformer Architectures too Homogeneous and Rigid? Tuli, S., Dedhia, B., Tuli, S. "
              "and Jha, N. K. JAIR 2023 (the search space).")
_NLP = ("NAS-Bench-NLP: Neural Architecture Search Benchmark for Natural Language Processing. Klyuchnikov, N., Trofimov, "
        "I., Artemova, E., Salnikov, M., Fedorov, M., Filippov, A. and Burnaev, E. IEEE Access 10, 2022.")
#: benchmark family -> what a user of a blackbox of it cites (CITATION.cff's references)
CITATIONS: dict[str, str] = {"flexibert": f"{_SERIANNI} {_FLEXIBERT}", "nlp": _NLP}
#: what the fidelity and the elapsed time of each kind of table mean (written into metadata.json)
_MEANINGS: dict[tuple[str, str], tuple[str, str]] = {
    ("flexibert", "final"): (
        "steps = 100,000 pretraining steps, the protocol of all 500 runs; the learning curves (15 archs) are the "
        "curves blackbox", "time_to_train: seconds on a TPUv2-8"),
    ("flexibert", "curves"): (
        "steps = 0, 150,000, ..., 1,000,000 pretraining steps of the train ablation's re-pretraining runs (15 archs); "
        "50,000 and 100,000 are left out: the release's points there hold the 500,000- and 1,000,000-step results "
        "(docs/errata.md, finding 11)", "the arch's time_to_train (100,000 steps) scaled by steps, as curve_point charges"),
    ("nlp", "final"): ("epoch = 50, the protocol's last: PTB's release files hold final results only",
                       "the PTB release records no time: 1 per evaluation (a count, not seconds)"),
    ("nlp", "epochs"): ("epoch = 1-50 from the training logs; runs that diverged or stopped early are left out "
                        "(dropped)", "cumulative wall time of the logged epochs, seconds"),
}


def require_fastparquet() -> None:
    """syne-tune writes and reads ``hyperparameters.parquet`` with fastparquet."""
    try:
        import fastparquet  # noqa: F401
    except ModuleNotFoundError:
        raise MissingExtraError("syne-tune's serialisation needs fastparquet (its hyperparameters.parquet engine): "
                                "pip install 'nasbench-bert[hpo]'", name="fastparquet") from None


def _family(blackbox: Any) -> tuple[Space, str]:
    if isinstance(blackbox, FlexiBERTTabular):
        return Space.FLEXIBERT, blackbox.kind
    if isinstance(blackbox, NLPTabular):
        return Space.NLP, blackbox.fidelity
    raise InvalidArgumentError(f"blackbox = {type(blackbox).__name__} is not allowed; allowed: a tabular blackbox "
                               "(FlexiBERTTabular or NLPTabular); a surrogate blackbox has no table to write")


def file_table(blackbox: BlackboxTabular) -> BlackboxTabular:
    """The table as the files hold it (module doc): without ``space_index``, and with a
    constant ``dataset`` hyperparameter beside NAS-Bench-NLP's ``recipe_id``."""
    _family(blackbox)
    names = list(blackbox.objectives_names)
    keep = [i for i, n in enumerate(names) if n != SPACE_INDEX]
    hp, cs = blackbox.hyperparameters.reset_index(drop=True), dict(blackbox.configuration_space)
    if isinstance(blackbox, NLPTabular):
        hp = hp.assign(dataset=blackbox.dataset)
        cs["dataset"] = choice([blackbox.dataset])
    table = BlackboxTabular(hyperparameters=hp, configuration_space=cs, fidelity_space=blackbox.fidelity_space,
                            objectives_evaluations=np.asarray(blackbox.objectives_evaluations, dtype=np.float64)[..., keep],
                            fidelity_values=np.asarray(blackbox.fidelity_values), objectives_names=[names[i] for i in keep])
    table.metric_modes = {n: m for n, m in getattr(blackbox, "metric_modes", {}).items() if n != SPACE_INDEX}  # type: ignore[attr-defined]
    return table


def metadata(blackbox: BlackboxTabular, **extra: Any) -> dict[str, Any]:
    """The free fields of ``metadata.json`` (syne-tune adds ``objectives_names`` and
    ``task_names``). Deterministic: no dates, no paths, so two exports of one data release
    are byte-identical."""
    from ..version import __version__

    family, kind = _family(blackbox)
    fidelity, elapsed = _MEANINGS[family, kind]
    meta: dict[str, Any] = {
        **extra, "metric_modes": file_table(blackbox).metric_modes, "elapsed_time_attr": ELAPSED,  # type: ignore[attr-defined]
        "fidelity_attr": next(iter(blackbox.fidelity_space)), "generated_by": f"nasbench-bert {__version__}",
        "nasbench_bert_version": __version__, "cite": CITATIONS[family], "objectives_dtype": "float64",
        "nasbench_bert": family.value, "fidelity": fidelity, "elapsed_time": elapsed,
    }
    if isinstance(blackbox, FlexiBERTTabular):  # what load_blackbox restores the package's class from
        meta.update({"kind": blackbox.kind, "outside": blackbox.outside, "encoding": "flat-v1",
                     "seeds": "seed s = the arch's s-th run in benchmark-id order; archs with one run repeat it"})
    else:
        meta.update({"dataset": blackbox.dataset, "nlp_fidelity": blackbox.fidelity, "dropped": list(blackbox.dropped),
                     "constant_hyperparameters": {"dataset": blackbox.dataset},
                     "seeds": "seed s = the recipe's s-th run in init_time order; recipes with one run repeat it"})
    return meta


# -- the folders ---------------------------------------------------------------------------------
def _stamped(meta_file: Path) -> bool:
    """Whether ``metadata.json`` says this package wrote the folder (``generated_by``, or
    the ``nasbench_bert`` key that 0.2's serialize_blackbox wrote)."""
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(meta, dict) and (str(meta.get("generated_by", "")).startswith("nasbench-bert ")
                                       or meta.get("nasbench_bert") in ("flexibert", "nlp"))


def check_folder(folder: Path) -> None:
    """Refuse, with one line, a blackbox folder target that is not absent, an empty folder
    or a folder this package wrote (module doc)."""
    move = "move it away or choose another output folder"
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InvalidArgumentError(f"{folder} is a {'link' if folder.is_symlink() else 'file'}, where the syne-tune export "
                                   f"writes a blackbox folder; it replaces only a folder it wrote itself: {move}")
    if not folder.is_dir():
        return
    entries = sorted(p.name for p in folder.iterdir())
    foreign = [n for n in entries if n not in FILES or (folder / n).is_symlink() or not (folder / n).is_file()]
    if foreign:
        raise InvalidArgumentError(f"{folder} holds files the syne-tune export did not write ({foreign[:5]}); it replaces "
                                   f"only a folder it wrote itself (syne-tune's files: {list(FILES)}): {move}")
    if entries and not _stamped(folder / "metadata.json"):
        raise InvalidArgumentError(f"{folder} is a blackbox folder nasbench-bert did not write (its metadata.json has no "
                                   f"'generated_by: nasbench-bert' stamp); the export replaces only its own: {move}")


def write_into(folder: Path, task: str, blackbox: BlackboxTabular, meta: Mapping[str, Any]) -> None:
    """syne-tune's ``serialize`` of :func:`file_table` into ``folder`` (fresh, empty), then
    its objectives file again as float64."""
    table = file_table(blackbox)
    _st_serialize({task: table}, str(folder), metadata=dict(meta))
    with open(folder / "objectives_evaluations.npy", "wb") as f:
        np.save(f, np.stack([np.asarray(table.objectives_evaluations, dtype=np.float64)]), allow_pickle=False)
    missing = [f for f in FILES if not (folder / f).is_file()]
    if missing:  # a newer syne-tune writing other names would otherwise ship a folder its loader cannot read
        raise RuntimeError(f"syne-tune's serialize did not write {missing} in {folder}")


#: what a job of :func:`write_folders` returns: (task name, blackbox, free metadata fields)
Job = Callable[[], tuple[str, BlackboxTabular, Mapping[str, Any]]]


def write_folders(jobs: Mapping[Path, Job]) -> dict[Path, Path]:
    """Write each target folder of ``jobs`` from what its job builds, and return
    ``{target: target}``. Every target is checked (:func:`check_folder`) before any job
    runs, each is built in a staging folder beside it, checked again, and only then
    swapped in with one rename; a failure or Ctrl-C leaves every target as it was."""
    require_fastparquet()
    for target in jobs:
        recover_dir(target)  # an earlier export killed between its renames
        check_folder(target)
    staged: dict[Path, Path] = {}
    try:
        for target, job in jobs.items():
            staged[target] = staging_dir(target)
            task, blackbox, meta = job()
            write_into(staged[target], task, blackbox, meta)
        for target in staged:
            check_folder(target)  # nothing of the user's appeared there while the tables were built
    except BaseException:
        for p in staged.values():
            shutil.rmtree(p, ignore_errors=True)
        raise
    return {target: replace_dir(folder, target) for target, folder in staged.items()}


def serialize_blackbox(blackbox: BlackboxTabular, path: str | os.PathLike[str], name: str | None = None) -> Path:
    """Write a tabular blackbox in syne-tune's on-disk format into the folder ``path`` (absent,
    empty, or written here before; module doc), readable by syne-tune's ``deserialize``;
    the task name defaults to ``flexibert`` / ``flexibert_curves`` / ``nlp_<dataset>``.
    Needs ``fastparquet`` (syne-tune writes parquet with it)."""
    family, kind = _family(blackbox)
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InvalidArgumentError(f"path = {path!r} is not allowed; allowed: a folder path")
    if name is not None and (not isinstance(name, str) or not name):
        raise InvalidArgumentError(f"name = {name!r} is not allowed; allowed: a task name (a non-empty string) or None")
    default = {"final": "flexibert", "curves": "flexibert_curves"}.get(kind) if family is Space.FLEXIBERT \
        else f"nlp_{blackbox.dataset}"
    task = name or default
    target = Path(path)
    return write_folders({target: lambda: (task, blackbox, metadata(blackbox))})[target]


def load_blackbox(path: str | os.PathLike[str]) -> Blackbox:
    """Read a folder this package wrote as the package's class (the flat encoding, the
    nearest-arch rule and ``space_index`` restored for FlexiBERT; ``recipe_id`` keys for
    NAS-Bench-NLP); any other syne-tune serialised table comes back as syne-tune returns
    it (a dict of task -> ``BlackboxTabular``)."""
    p = Path(path)
    if not (p / "metadata.json").is_file():
        raise InvalidArgumentError(f"path = {str(path)!r} holds no metadata.json; allowed: a folder written by "
                                   "serialize_blackbox or the syne-tune export")
    require_fastparquet()
    meta = json.loads((p / "metadata.json").read_text(encoding="utf-8"))
    tasks = _st_deserialize(str(p))
    if meta.get("nasbench_bert") not in _LOADERS or len(tasks) != 1:
        return tasks  # type: ignore[return-value]
    bb = _LOADERS[meta["nasbench_bert"]](next(iter(tasks.values())), meta)
    bb.metric_modes = dict(meta.get("metric_modes", {}))
    return bb


def _load_flexibert(bb: Any, meta: dict[str, Any]) -> FlexiBERTTabular:
    hp = bb.hyperparameters.reset_index(drop=True)
    hp = pd.DataFrame({c: [v.item() if isinstance(v, np.generic) else v for v in hp[c]] for c in FLAT_KEYS})
    y, names = np.asarray(bb.objectives_evaluations, dtype=float), list(bb.objectives_names)
    if SPACE_INDEX not in names:  # the files leave it out: every row is its own arch
        index = np.array([config_to_arch(r).index for r in hp.to_dict("records")], dtype=float)
        y = np.concatenate([y, np.broadcast_to(index[:, None, None, None], (*y.shape[:3], 1))], axis=-1)
        names.append(SPACE_INDEX)
    return FlexiBERTTabular(hp, y, np.asarray(bb.fidelity_values), names, meta["outside"], meta["kind"])


def _load_nlp(bb: Any, meta: dict[str, Any]) -> NLPTabular:
    hp = pd.DataFrame({"recipe_id": [int(v) for v in bb.hyperparameters.reset_index(drop=True)["recipe_id"]]})
    fidelity = meta.get("nlp_fidelity") or ("final" if len(bb.fidelity_values) == 1 else "epochs")
    return NLPTabular(hp, np.asarray(bb.objectives_evaluations, dtype=float), np.asarray(bb.fidelity_values),
                      list(bb.objectives_names), meta["dataset"], tuple(meta.get("dropped", ())), fidelity)


#: the ``nasbench_bert`` metadata of a serialised blackbox -> how it is read back
_LOADERS = {"flexibert": _load_flexibert, "nlp": _load_nlp}
