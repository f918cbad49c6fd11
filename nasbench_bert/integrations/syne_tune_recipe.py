"""syne-tune's blackbox repository: the files its loader reads, and the recipes that write them.

syne-tune keeps every tabular benchmark in one on-disk layout, one folder per blackbox
(``~/.blackbox-repository/<name>/``, mirrored at the Hub dataset
``synetune/blackbox-repository``), written by its ``blackbox_tabular.serialize`` and read
by ``deserialize`` / ``load_blackbox(name)``:

* ``configspace.json`` / ``fidelityspace.json`` - the spaces, syne-tune's JSON;
* ``hyperparameters.parquet`` - one row per evaluated configuration (gzip, fastparquet);
* ``objectives_evaluations.npy`` - ``(tasks, configurations, seeds, fidelities, objectives)``;
* ``fidelities_values.npy`` - the fidelity axis;
* ``metadata.json`` - ``objectives_names``, ``task_names`` and free fields.

This module writes two blackboxes in it, through syne-tune's own ``serialize`` (so the
layout is syne-tune's, not a copy of it):

* :data:`FLEXIBERT` (``"nasbench-bert-flexibert"``, task ``"glue"``): the 491 distinct
  FlexiBERT-500 archs in the flat 18-field encoding of
  :mod:`nasbench_bert.integrations.syne_tune`, 2 seeds (the 9 archs trained twice: seed
  ``s`` is their ``s``-th run in id order, an arch with one run repeats it), one fidelity,
  ``steps = 100,000`` - the protocol every one of the 500 runs used. The learning
  curves exist for 15 archs only (and their 50,000 / 100,000-step points are damaged:
  docs/errata.md), so they are not an axis of the 491-arch table; ``to_syne_tune(bench,
  fidelity="curves")`` is that blackbox, in memory.
* :data:`NLP_PTB` (``"nasbench-bert-nlp-ptb"``, task ``"ptb"``): the 8,794 NAS-Bench-NLP
  runs on PTB keyed by ``recipe_id`` (and a constant ``dataset = "ptb"``: see
  :func:`syne_tune_table`), one fidelity ``epoch = 50`` - the PTB release holds final
  losses only, no per-epoch curves.

**One deviation from serialize, on purpose.** syne-tune's ``serialize`` casts the
objectives to float32; FlexiBERT's GLUE ``74.73375`` would come back as
``74.73374938964844``, and a benchmark whose loader disagrees with its own tables in the
seventh digit is a benchmark two papers can quote differently. The objectives file is
rewritten as float64 (same name, same shape, plain ``np.save``); ``deserialize`` reads
it unchanged (it does ``np.load`` without a cast), so every value equals
``Benchmark.query`` exactly. The file is twice the size (120 KB and 350 KB).

``metadata.json`` carries, beside syne-tune's two fields, each metric's direction
(``metric_modes``, from ``bench.objectives``), the elapsed-time and fidelity attributes
a simulation needs, and the keys :func:`nasbench_bert.integrations.syne_tune.load_blackbox`
reads to restore the package's own classes (nearest-arch answers, the flat encoding).

The recipes (:class:`FlexiBERTRecipe`, :class:`NLPPTBRecipe`) are syne-tune
``BlackboxRecipe`` subclasses, the code an upstream pull request adds to
``syne_tune/blackbox_repository/conversion_scripts/scripts/``; :func:`register` puts
them into syne-tune's registry in this process, so ``load_blackbox(name,
custom_repo_id=...)`` finds them before that pull request is merged. docs/integrations.md
gives the steps.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
from syne_tune.blackbox_repository.blackbox_tabular import serialize as _st_serialize
from syne_tune.blackbox_repository.conversion_scripts.blackbox_recipe import BlackboxRecipe
from syne_tune.config_space import choice

from ..atomic import recover_dir, replace_dir, staging_dir
from ..checks import check_bench
from ..errors import InvalidArgumentError, MissingExtraError
from ..vocabulary import BenchmarkLike
from .syne_tune import ELAPSED, FlexiBERTTabular, NLPTabular, nlp_to_syne_tune, to_syne_tune

#: syne-tune's name of the FlexiBERT-500 blackbox
FLEXIBERT = "nasbench-bert-flexibert"
#: syne-tune's name of the NAS-Bench-NLP PTB blackbox
NLP_PTB = "nasbench-bert-nlp-ptb"
#: every blackbox this module writes, in export order
BLACKBOXES: tuple[str, ...] = (FLEXIBERT, NLP_PTB)
#: blackbox -> the one task inside it (syne-tune's ``load_blackbox`` returns ``{task: blackbox}``)
TASKS: dict[str, str] = {FLEXIBERT: "glue", NLP_PTB: "ptb"}
#: blackbox -> the paper syne-tune asks its users to cite when the blackbox is generated
CITATIONS: dict[str, str] = {
    FLEXIBERT: "FlexiBERT: Are Current Transformer Architectures too Homogeneous and Rigid? "
               "Tuli, S., Dedhia, B., Tuli, S. and Jha, N. K. 2023.",
    NLP_PTB: "NAS-Bench-NLP: Neural Architecture Search Benchmark for Natural Language Processing. "
             "Klyuchnikov, N., Trofimov, I., Artemova, E., Salnikov, M., Fedorov, M., Filippov, A. and Burnaev, E. 2022.",
}
#: the files syne-tune's ``serialize`` writes into a blackbox folder (what a complete export holds)
FILES: tuple[str, ...] = ("configspace.json", "fidelityspace.json", "hyperparameters.parquet",
                          "objectives_evaluations.npy", "fidelities_values.npy", "metadata.json")


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or name not in BLACKBOXES:
        raise InvalidArgumentError(f"name = {name!r} is not allowed; allowed values: {list(BLACKBOXES)}")
    return name


def blackbox_of(bench: BenchmarkLike, name: str) -> BlackboxTabular:
    """The in-memory tabular blackbox that :func:`write_blackbox` serialises as ``name``
    (built by :func:`~.syne_tune.to_syne_tune` / :func:`~.syne_tune.nlp_to_syne_tune`, so the
    export and the in-memory adapter cannot drift apart)."""
    bench = check_bench(bench)
    return _BUILDERS[_check_name(name)](bench)


def metadata_of(name: str, blackbox: BlackboxTabular) -> dict[str, Any]:
    """The free fields of ``metadata.json`` (syne-tune adds ``objectives_names`` and
    ``task_names``). Deterministic: no dates, no paths, so two exports of one data release
    are byte-identical and a Hub upload of an unchanged release is an empty commit."""
    from .. import __version__

    fid = next(iter(blackbox.fidelity_space))
    meta: dict[str, Any] = {
        "name": _check_name(name), "task": TASKS[name], "metric_modes": dict(getattr(blackbox, "metric_modes", {})),
        "elapsed_time_attr": ELAPSED, "fidelity_attr": fid, "generated_by": f"nasbench-bert {__version__}",
        "cite": CITATIONS[name], "objectives_dtype": "float64",
    }
    if isinstance(blackbox, FlexiBERTTabular):  # the keys integrations.syne_tune.load_blackbox restores from
        meta.update({"nasbench_bert": "flexibert", "kind": blackbox.kind, "outside": blackbox.outside,
                     "encoding": "flat-v1",
                     "fidelity": "steps = 100,000 pretraining steps, the protocol of all 500 runs; the learning "
                                 "curves (15 archs) are not an axis of this table",
                     "seeds": "seed s = the arch's s-th run in benchmark-id order; archs with one run repeat it"})
    elif isinstance(blackbox, NLPTabular):
        meta.update({"nasbench_bert": "nlp", "dataset": blackbox.dataset, "dropped": list(blackbox.dropped),
                     "fidelity": "epoch = 50, the protocol's last; the PTB release holds final losses only",
                     "constant_hyperparameters": {"dataset": blackbox.dataset},
                     "elapsed_time": "the PTB release records no time: metric_elapsed_time is 1 per evaluation"})
    return meta


def syne_tune_table(blackbox: BlackboxTabular) -> BlackboxTabular:
    """The table as the files hold it: the blackbox itself, except NAS-Bench-NLP's, whose
    one hyperparameter (``recipe_id``) gains a constant second one, ``dataset`` (``"ptb"``).

    Why: syne-tune 0.16's ``BlackboxTabular`` finds a configuration's row with
    ``index.loc[tuple_of_values]``; with one hyperparameter the index is a plain
    ``Index`` and pandas 3 refuses a 1-tuple key (``ValueError: zip() argument 2 is longer
    than argument 1``), so every lookup by configuration - ``objective_function`` and the
    simulated backend - fails. Two columns make it a ``MultiIndex``, which pandas 2 and 3
    both answer. The column is true (every run is a PTB run) and constant, so a scheduler
    sampling the space always draws ``"ptb"``."""
    if not isinstance(blackbox, NLPTabular):
        return blackbox
    hp = blackbox.hyperparameters.copy()
    hp["dataset"] = blackbox.dataset
    table = BlackboxTabular(hyperparameters=hp,
                            configuration_space={**blackbox.configuration_space, "dataset": choice([blackbox.dataset])},
                            fidelity_space=blackbox.fidelity_space, objectives_evaluations=blackbox.objectives_evaluations,
                            fidelity_values=np.asarray(blackbox.fidelity_values), objectives_names=list(blackbox.objectives_names))
    table.metric_modes = dict(getattr(blackbox, "metric_modes", {}))  # type: ignore[attr-defined]
    return table


def _serialize_into(folder: Path, name: str, blackbox: BlackboxTabular) -> None:
    """syne-tune's ``serialize`` into ``folder``, then its objectives file again as float64
    (see the module doc: serialize's float32 cast would move GLUE in the 7th digit)."""
    _st_serialize({TASKS[name]: syne_tune_table(blackbox)}, str(folder), metadata=metadata_of(name, blackbox))
    objectives = np.stack([np.asarray(blackbox.objectives_evaluations, dtype=np.float64)])
    with open(folder / "objectives_evaluations.npy", "wb") as f:
        np.save(f, objectives, allow_pickle=False)
    missing = [f for f in FILES if not (folder / f).is_file()]
    if missing:  # a newer syne-tune writing other names would otherwise ship a folder its loader cannot read
        raise RuntimeError(f"syne-tune's serialize did not write {missing} in {folder}")


def _check_root(out: str | os.PathLike[str]) -> Path:
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise InvalidArgumentError(f"out = {out!r} is not allowed; allowed: a folder path")
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise InvalidArgumentError(f"out = {str(out)!r} is a file; allowed: a folder (new or existing) to hold "
                                   f"one subfolder per blackbox: {list(BLACKBOXES)}")
    return root


def write_blackboxes(bench: BenchmarkLike, out: str | os.PathLike[str], names: Iterable[str] = BLACKBOXES,
                     *, build: Callable[[BenchmarkLike, str], BlackboxTabular] | None = None) -> dict[str, Path]:
    """Write each blackbox of ``names`` to ``out/<name>/`` in syne-tune's layout and
    return ``{name: folder}``.

    ``out`` is a blackbox repository root (syne-tune's ``~/.blackbox-repository``, or a
    folder to upload to a Hub dataset as it is); other folders in it are left alone, an
    existing ``out/<name>`` is replaced. Every blackbox is built and serialised into a
    staging folder first and only then swapped in, each with one rename: a failure
    (a bad table, a full disk, Ctrl-C) leaves every ``out/<name>`` as it was, never a
    half-written one. ``build`` replaces :func:`blackbox_of` (tests use it to fail on
    purpose).
    """
    root = _check_root(out)
    wanted = [_check_name(n) for n in names]
    if not wanted:
        raise InvalidArgumentError(f"names = [] is not allowed; allowed: one or more of {list(BLACKBOXES)}")
    try:
        import fastparquet  # noqa: F401  (serialize writes, deserialize reads, the parquet with it)
    except ModuleNotFoundError:
        raise MissingExtraError("syne-tune's serialisation needs fastparquet (its hyperparameters.parquet engine): "
                                "pip install 'nasbench-bert[hpo]'", name="fastparquet") from None
    build = build or blackbox_of
    root.mkdir(parents=True, exist_ok=True)
    staged: dict[str, Path] = {}
    try:
        for name in dict.fromkeys(wanted):
            recover_dir(root / name)  # an earlier export killed between its renames
            staged[name] = staging_dir(root / name)
            _serialize_into(staged[name], name, build(bench, name))
    except BaseException:
        for p in staged.values():
            shutil.rmtree(p, ignore_errors=True)
        raise
    return {name: replace_dir(folder, root / name) for name, folder in staged.items()}


def _flexibert(bench: BenchmarkLike) -> BlackboxTabular:
    return to_syne_tune(bench, oracle="tabular", fidelity="final")


def _nlp_ptb(bench: BenchmarkLike) -> BlackboxTabular:
    return nlp_to_syne_tune(bench, "ptb")


#: blackbox name -> how its table is built from a benchmark
_BUILDERS: dict[str, Callable[[BenchmarkLike], BlackboxTabular]] = {FLEXIBERT: _flexibert, NLP_PTB: _nlp_ptb}


# -- syne-tune recipes --------------------------------------------------------------------------
class NasBenchBertRecipe(BlackboxRecipe):
    """A syne-tune ``BlackboxRecipe`` that generates one nasbench-bert blackbox.

    ``BlackboxRecipe.generate()`` calls :meth:`_generate_on_disk`, then uploads
    ``repository_path/<name>`` to the Hub. Upstream recipes download their raw files
    from the authors; this one loads the benchmark with ``nasbench_bert.Benchmark.load()``
    (the checksum-verified data release) and serialises it, so the recipe holds no
    conversion logic of its own to get wrong. ``bench`` and ``root`` default to that and
    to syne-tune's ``repository_path``, read when the recipe runs (tests point it at a
    temporary folder).
    """

    def __init__(self, name: str, *, bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None):
        super().__init__(name=_check_name(name), cite_reference=CITATIONS[name])
        self.bench = bench
        self.root = None if root is None else _check_root(root)

    def _generate_on_disk(self) -> None:
        from syne_tune.blackbox_repository.conversion_scripts import utils as st_utils

        from .. import Benchmark

        bench = self.bench if self.bench is not None else Benchmark.load()
        root = self.root if self.root is not None else Path(st_utils.repository_path)
        write_blackboxes(bench, root, [self.name])


class FlexiBERTRecipe(NasBenchBertRecipe):
    """``nasbench-bert-flexibert``: FlexiBERT-500's GLUE dev scores (491 archs, 2 seeds, 100,000 steps)."""

    def __init__(self, *, bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None):
        super().__init__(FLEXIBERT, bench=bench, root=root)


class NLPPTBRecipe(NasBenchBertRecipe):
    """``nasbench-bert-nlp-ptb``: NAS-Bench-NLP's 8,794 PTB runs (final losses, epoch 50)."""

    def __init__(self, *, bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None):
        super().__init__(NLP_PTB, bench=bench, root=root)


def recipes(bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None) -> list[NasBenchBertRecipe]:
    """One recipe per blackbox, in :data:`BLACKBOXES` order."""
    return [FlexiBERTRecipe(bench=bench, root=root), NLPPTBRecipe(bench=bench, root=root)]


def register(bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None) -> list[str]:
    """Add the recipes to syne-tune's registry (``conversion_scripts.recipes.generate_blackbox_recipes``,
    the dict ``load_blackbox`` and ``blackbox_list`` consult) in this process, and return
    their names. What the upstream pull request does permanently; until it is merged,
    ``register()`` then ``load_blackbox("nasbench-bert-flexibert", custom_repo_id=<your Hub
    dataset>)`` loads the files :func:`write_blackboxes` wrote and you uploaded."""
    from syne_tune.blackbox_repository.conversion_scripts import recipes as st_recipes

    made = recipes(bench, root)
    st_recipes.generate_blackbox_recipes.update({r.name: r for r in made})
    return [r.name for r in made]
