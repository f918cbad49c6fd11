"""syne-tune's blackbox repository: the named blackboxes, and the recipes that write them.

syne-tune keeps every tabular benchmark in one on-disk layout, one folder per blackbox
(``~/.blackbox-repository/<name>/``, mirrored at the Hub dataset
``synetune/blackbox-repository``), read by its ``deserialize`` / ``load_blackbox(name)``.
This module names the package's blackboxes in it and writes them (through
:mod:`.syne_tune_files`: syne-tune's own ``serialize``, exact float64 values, never over a
user's file), every fidelity the tables hold:

================================  ======  =================================================================
name                              task    what (:mod:`.syne_tune_tables`)
================================  ======  =================================================================
``nasbench-bert-flexibert``       glue    the 491 distinct FlexiBERT-500 archs, 2 seeds, ``steps`` = 100,000
``nasbench-bert-flexibert-curves`` glue   the 15 learning-curve archs, ``steps`` = 0, 150,000 ... 1,000,000
``nasbench-bert-nlp-ptb``         ptb     PTB's 8,794 runs, final results, ``epoch`` = 50
``nasbench-bert-nlp-ptb-epochs``  ptb     PTB's logged runs, ``epoch`` = 1-50 (only when the data holds the
                                          PTB logs: ``build-data --ptb-logs``)
``nasbench-bert-nlp-wikitext2``   wikitext2  WikiText-2's 341 finished runs, 2 seeds, ``epoch`` = 1-50
================================  ======  =================================================================

FlexiBERT's configurations are the flat 18-field encoding of
:mod:`.syne_tune_encoding`; NAS-Bench-NLP's are ``recipe_id`` (with a constant
``dataset``, :func:`.syne_tune_files.file_table` says why). ``metadata.json`` carries
each metric's direction, what the fidelity and the elapsed time mean, the papers to
cite and the version that wrote it.

The recipes (:class:`FlexiBERTRecipe`, ...) are syne-tune ``BlackboxRecipe``
subclasses, the code an upstream pull request adds to
``syne_tune/blackbox_repository/conversion_scripts/scripts/``; :func:`register` puts
them into syne-tune's registry in this process, so ``load_blackbox(name,
custom_repo_id=...)`` finds them before that pull request is merged. docs/integrations.md
gives the steps.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable

from syne_tune.blackbox_repository.blackbox_tabular import BlackboxTabular
from syne_tune.blackbox_repository.conversion_scripts.blackbox_recipe import BlackboxRecipe

from ..checks import check_bench
from ..errors import DataNotFoundError, InvalidArgumentError
from ..vocabulary import BenchmarkLike
from .syne_tune import nlp_to_syne_tune, to_syne_tune
from .syne_tune_files import CITATIONS, FILES, metadata, require_fastparquet, write_folders

#: syne-tune's name of the FlexiBERT-500 blackbox
FLEXIBERT = "nasbench-bert-flexibert"
#: the learning curves (train ablation) of 15 FlexiBERT archs, every valid checkpoint
FLEXIBERT_CURVES = "nasbench-bert-flexibert-curves"
#: syne-tune's name of the NAS-Bench-NLP PTB blackbox (final results)
NLP_PTB = "nasbench-bert-nlp-ptb"
#: PTB at every epoch, from the PTB training logs (when the data holds them)
NLP_PTB_EPOCHS = "nasbench-bert-nlp-ptb-epochs"
#: WikiText-2 at every epoch
NLP_WIKITEXT2 = "nasbench-bert-nlp-wikitext2"
#: every blackbox this module writes, in export order
BLACKBOXES: tuple[str, ...] = (FLEXIBERT, FLEXIBERT_CURVES, NLP_PTB, NLP_PTB_EPOCHS, NLP_WIKITEXT2)
#: blackbox -> the one task inside it (syne-tune's ``load_blackbox`` returns ``{task: blackbox}``)
TASKS: dict[str, str] = {FLEXIBERT: "glue", FLEXIBERT_CURVES: "glue", NLP_PTB: "ptb", NLP_PTB_EPOCHS: "ptb",
                         NLP_WIKITEXT2: "wikitext2"}
#: blackbox -> the fidelity axis it carries (its ``fidelity_attr``)
FIDELITY_ATTRS: dict[str, str] = {FLEXIBERT: "steps", FLEXIBERT_CURVES: "steps", NLP_PTB: "epoch",
                                  NLP_PTB_EPOCHS: "epoch", NLP_WIKITEXT2: "epoch"}
#: blackbox -> the papers syne-tune asks its users to cite when the blackbox is generated
CITATIONS_OF: dict[str, str] = {n: CITATIONS["flexibert" if n.startswith(FLEXIBERT) else "nlp"] for n in BLACKBOXES}


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or name not in BLACKBOXES:
        raise InvalidArgumentError(f"name = {name!r} is not allowed; allowed values: {list(BLACKBOXES)}")
    return name


def available(bench: BenchmarkLike) -> tuple[str, ...]:
    """The blackboxes ``bench``'s data can make: all but the PTB-epochs one, which needs
    the PTB training logs in the data."""
    return tuple(n for n in BLACKBOXES if n != NLP_PTB_EPOCHS or bench.nlp.has_ptb_logs)


def blackbox_of(bench: BenchmarkLike, name: str) -> BlackboxTabular:
    """The in-memory tabular blackbox that :func:`write_blackboxes` serialises as ``name``
    (built by :func:`~.syne_tune.to_syne_tune` / :func:`~.syne_tune.nlp_to_syne_tune`, so the
    export and the in-memory adapter cannot drift apart)."""
    bench = check_bench(bench)
    return _BUILDERS[_check_name(name)](bench)


def metadata_of(name: str, blackbox: BlackboxTabular) -> dict[str, Any]:
    """The free fields of ``metadata.json`` (:func:`.syne_tune_files.metadata`, with the
    blackbox's name and task). Deterministic: two exports of one data release are
    byte-identical, so a Hub upload of an unchanged release is an empty commit."""
    return metadata(blackbox, name=_check_name(name), task=TASKS[name])


def _check_root(out: str | os.PathLike[str]) -> Path:
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise InvalidArgumentError(f"out = {out!r} is not allowed; allowed: a folder path")
    root = Path(out)
    if root.is_symlink() and not root.is_dir() or root.exists() and not root.is_dir():
        raise InvalidArgumentError(f"out = {str(out)!r} is a file; allowed: a folder (new or existing) to hold "
                                   f"one subfolder per blackbox: {list(BLACKBOXES)}")
    return root


def write_blackboxes(bench: BenchmarkLike, out: str | os.PathLike[str], names: Iterable[str] | None = None,
                     *, build: Callable[[BenchmarkLike, str], BlackboxTabular] | None = None) -> dict[str, Path]:
    """Write each blackbox of ``names`` (default: every one the data can make,
    :func:`available`) to ``out/<name>/`` in syne-tune's layout and return ``{name: folder}``.

    ``out`` is a blackbox repository root (syne-tune's ``~/.blackbox-repository``, or a
    folder to upload to a Hub dataset as it is); other folders in it are left alone. An
    ``out/<name>`` this package wrote earlier is replaced; anything else there - a file,
    a link, a folder holding a file the export did not write - is refused with one line
    before anything is written (:func:`.syne_tune_files.check_folder`). Every blackbox is
    built into a staging folder first and only then swapped in, each with one rename: a
    failure (a bad table, a full disk, Ctrl-C) leaves every ``out/<name>`` as it was.
    ``build`` replaces :func:`blackbox_of` (tests use it to fail on purpose).
    """
    root = _check_root(out)
    bench = check_bench(bench)
    wanted = list(dict.fromkeys(available(bench) if names is None else [_check_name(n) for n in names]))
    if not wanted:
        raise InvalidArgumentError(f"names = [] is not allowed; allowed: one or more of {list(BLACKBOXES)}")
    if NLP_PTB_EPOCHS in wanted and NLP_PTB_EPOCHS not in available(bench):
        raise DataNotFoundError(f"{NLP_PTB_EPOCHS} needs PTB's training logs, which the data in {bench.data.path} lacks "
                                "(the release's PTB files hold final results only); build them in with `nasbench-bert "
                                "build-data --force --ptb-logs ZIP` (NAS-Bench-NLP's train_logs_single_run/logs.zip)")
    require_fastparquet()
    build = build or blackbox_of

    def job(name: str) -> Callable[[], tuple[str, BlackboxTabular, dict[str, Any]]]:
        def run() -> tuple[str, BlackboxTabular, dict[str, Any]]:
            bb = build(bench, name)
            return TASKS[name], bb, metadata_of(name, bb)
        return run

    root.mkdir(parents=True, exist_ok=True)
    done = write_folders({root / name: job(name) for name in wanted})
    return {name: done[root / name] for name in wanted}


def _flexibert(bench: BenchmarkLike) -> BlackboxTabular:
    return to_syne_tune(bench, oracle="tabular", fidelity="final")


def _flexibert_curves(bench: BenchmarkLike) -> BlackboxTabular:
    return to_syne_tune(bench, oracle="tabular", fidelity="curves")


def _nlp_ptb(bench: BenchmarkLike) -> BlackboxTabular:
    return nlp_to_syne_tune(bench, "ptb", "final")


def _nlp_ptb_epochs(bench: BenchmarkLike) -> BlackboxTabular:
    return nlp_to_syne_tune(bench, "ptb", "epochs")


def _nlp_wikitext2(bench: BenchmarkLike) -> BlackboxTabular:
    return nlp_to_syne_tune(bench, "wikitext2", "epochs")


#: blackbox name -> how its table is built from a benchmark
_BUILDERS: dict[str, Callable[[BenchmarkLike], BlackboxTabular]] = {
    FLEXIBERT: _flexibert, FLEXIBERT_CURVES: _flexibert_curves, NLP_PTB: _nlp_ptb, NLP_PTB_EPOCHS: _nlp_ptb_epochs,
    NLP_WIKITEXT2: _nlp_wikitext2}
__all__ = ["BLACKBOXES", "FILES", "FLEXIBERT", "FLEXIBERT_CURVES", "NLP_PTB", "NLP_PTB_EPOCHS", "NLP_WIKITEXT2", "TASKS",
           "available", "blackbox_of", "metadata_of", "write_blackboxes", "register", "recipes", "NasBenchBertRecipe",
           "FlexiBERTRecipe", "FlexiBERTCurvesRecipe", "NLPPTBRecipe", "NLPPTBEpochsRecipe", "NLPWikiText2Recipe",
           "RECIPES"]


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
        super().__init__(name=_check_name(name), cite_reference=CITATIONS_OF[name])
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


class FlexiBERTCurvesRecipe(NasBenchBertRecipe):
    """``nasbench-bert-flexibert-curves``: the 15 learning curves (0 ... 1,000,000 steps, valid checkpoints)."""

    def __init__(self, *, bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None):
        super().__init__(FLEXIBERT_CURVES, bench=bench, root=root)


class NLPPTBRecipe(NasBenchBertRecipe):
    """``nasbench-bert-nlp-ptb``: NAS-Bench-NLP's 8,794 PTB runs (final losses, epoch 50)."""

    def __init__(self, *, bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None):
        super().__init__(NLP_PTB, bench=bench, root=root)


class NLPPTBEpochsRecipe(NasBenchBertRecipe):
    """``nasbench-bert-nlp-ptb-epochs``: PTB at every epoch (needs the PTB logs in the data)."""

    def __init__(self, *, bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None):
        super().__init__(NLP_PTB_EPOCHS, bench=bench, root=root)


class NLPWikiText2Recipe(NasBenchBertRecipe):
    """``nasbench-bert-nlp-wikitext2``: WikiText-2's finished runs at every epoch (1-50)."""

    def __init__(self, *, bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None):
        super().__init__(NLP_WIKITEXT2, bench=bench, root=root)


#: blackbox name -> its recipe class
RECIPES: dict[str, type[NasBenchBertRecipe]] = {
    FLEXIBERT: FlexiBERTRecipe, FLEXIBERT_CURVES: FlexiBERTCurvesRecipe, NLP_PTB: NLPPTBRecipe,
    NLP_PTB_EPOCHS: NLPPTBEpochsRecipe, NLP_WIKITEXT2: NLPWikiText2Recipe}


def recipes(bench: BenchmarkLike | None = None, root: str | os.PathLike[str] | None = None) -> list[NasBenchBertRecipe]:
    """One recipe per blackbox, in :data:`BLACKBOXES` order."""
    return [RECIPES[name](bench=bench, root=root) for name in BLACKBOXES]


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
