"""Every input a build needs, checked before its first step.

Why: a build pretrains for hours (100,000 steps by default) before it reads its GLUE
tasks, and writes checkpoints and a results folder on the way. An input it cannot use -
a GLUE folder that does not exist, a task without its ``dev.tsv``, a corpus file with no
text, a results folder on a read-only mount - used to surface only after that work (and
left its files behind). :func:`preflight` is the one place that checks them all, cheaply
(file existence, first lines, a probe folder made and removed), without writing anything;
:func:`~.entry.build_entry`, :func:`~.entry.build_many` (before any Ray task is started)
and ``nasbench-bert build-entry`` call it first. It reports every problem at once as a
:class:`~nasbench_bert.errors.PreflightError`, each :class:`~nasbench_bert.errors.InputProblem`
naming its field.

What it cannot check without the work itself: that a Hugging Face dataset is reachable
(it checks that the ``datasets`` package is installed), and that a corpus is long enough
for one sequence once tokenised.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

from nasbench_bert.errors import InputProblem, InvalidArgumentError, PreflightError
from nasbench_bert.semantics import AS_TRAINED, SemanticsLike
from nasbench_bert.spaces.flexibert import Arch

#: executors of :func:`~.entry.build_many`
EXECUTORS = ("local", "ray", "slurm")
_GLUE_LAYOUT = ("a folder of GLUE-format TSVs: <task>/train.tsv and <task>/dev.tsv (dev_matched.tsv for MNLI) for each "
                "task built, or one task's folder")


def writable_folder_problem(field: str, folder: str | os.PathLike[str]) -> InputProblem | None:
    """Whether a folder a job will create or write into can be: not a file, and a probe
    folder can be made (and is removed) in it or in its nearest existing parent - which
    catches read-only mounts and /proc, where permission bits say yes."""
    p = Path(folder)
    if p.exists() and not p.is_dir():
        return InputProblem(field, f"{field} = {str(folder)!r} is a file; allowed: a folder (created if missing)")
    probe = p
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return InputProblem(field, f"{field} = {str(folder)!r}: {probe} is not a folder; allowed: a folder you can write to")
    try:
        os.rmdir(tempfile.mkdtemp(dir=probe, prefix=".nasbench-bert-probe-"))
    except OSError as e:
        return InputProblem(field, f"{field} = {str(folder)!r} cannot be written ({probe}: {e.strerror}); allowed: a folder "
                                   "you can write to")
    return None


def corpus_problem(corpus: Any) -> InputProblem | None:
    """Whether the pretraining corpus can be read: ``text:<file or folder>`` that exists
    and holds a non-blank line (read up to the first one), or ``hf:<dataset>`` with the
    ``datasets`` package installed."""
    allowed = "allowed: 'text:<file or folder>' or 'hf:<dataset>[:<config>]'"
    if not isinstance(corpus, str) or ":" not in corpus:
        return InputProblem("corpus", f"corpus = {corpus!r} is not allowed; {allowed}")
    kind, _, arg = corpus.partition(":")
    if kind == "hf" and arg:
        if importlib.util.find_spec("datasets") is None:
            return InputProblem("corpus", f"corpus = {corpus!r} needs the 'datasets' package (pip install "
                                          "'nasbench-bert[build]'); or give 'text:<file or folder>'")
        return None
    if kind != "text" or not arg:
        return InputProblem("corpus", f"corpus = {corpus!r} is not allowed; {allowed}")
    p = Path(arg)
    if not p.exists():
        return InputProblem("corpus", f"corpus = {corpus!r}: {p} does not exist; {allowed}")
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        try:
            with open(f, errors="replace") as fh:
                if any(line.strip() for line in fh):
                    return None
        except OSError as e:
            return InputProblem("corpus", f"corpus = {corpus!r}: {f} cannot be read ({e.strerror})")
    return InputProblem("corpus", f"corpus = {corpus!r} holds no text ({len(files)} file(s), every line blank); "
                                  f"{allowed}, holding text")


def glue_problems(glue: Any, tasks: Iterable[str]) -> list[InputProblem]:
    """Whether each task's train and dev files can be read from ``glue`` (``hf:glue``: the
    ``datasets`` package installed; a folder: each file there, with the task's columns)."""
    from .glue import TASKS, split_path, split_problem

    if not isinstance(glue, (str, os.PathLike)):
        return [InputProblem("glue", f"glue = {glue!r} is not allowed; allowed: 'hf:glue' or {_GLUE_LAYOUT}")]
    src = os.fspath(glue)
    if src.startswith("hf:"):
        if importlib.util.find_spec("datasets") is None:
            return [InputProblem("glue", f"glue = {src!r} needs the 'datasets' package (pip install 'nasbench-bert[build]'); "
                                         "or give a folder of GLUE TSVs")]
        return []
    folder = Path(src)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        return [InputProblem("glue", f"glue = {src!r} {what}; allowed: 'hf:glue' or {_GLUE_LAYOUT}")]
    tasks = list(tasks)
    whys = [why for t in tasks for split in ("train", "dev")
            if (why := split_problem(TASKS[t], split_path(TASKS[t], folder, split))) is not None]
    if not whys:
        return []
    usable = [t for t in tasks if not any(w.startswith(f"task {t!r}") for w in whys)]
    hint = f" (usable here: {usable}; name the tasks to build with tasks / --tasks)" if usable else ""
    return [InputProblem("glue", f"glue = {src!r}: {'; '.join(whys)}{hint}; allowed: {_GLUE_LAYOUT}")]


def _field_of(message: str, default: str) -> str:
    """The field an existing check's message names (``"<field> = ..."``), else ``default``."""
    m = re.match(r"\s*([A-Za-z_][\w.]*) = ", message)
    return m.group(1) if m else default


def preflight(archs: Sequence[Any], *, corpus: str = "hf:openwebtext", glue: str | os.PathLike[str] = "hf:glue",
              tasks: Sequence[str] | None = None, pretrain_config: Any = None, finetune_config: Any = None,
              results: str | os.PathLike[str] | None = None, workdir: str | os.PathLike[str] | None = None,
              semantics: SemanticsLike = AS_TRAINED, device: str | None = None, executor: str = "local",
              id: int | None = None) -> Any:
    """Check every input of a build of ``archs`` before any work; return its
    :class:`~.recipe.Recipe`, or raise :class:`~nasbench_bert.errors.PreflightError` listing
    every problem, each with its field. Writes nothing.

    Checked: the archs (in the space), the recipe's fields (:func:`~.recipe.make_recipe`),
    the corpus (readable, holding text), the GLUE source and each task's train and dev
    files (their columns), the ``results`` and ``workdir`` folders and, for a
    ``pretokenized`` corpus, its cache folder (writable), the device (available here for
    the local executor; well-formed for Ray and SLURM, whose tasks run elsewhere) and the
    executor.
    """
    from .glue import TASKS
    from .accelerator import resolve_device
    from .recipe import make_recipe

    problems: list[InputProblem] = []
    for a in archs:
        try:
            Arch.coerce(a)
        except (InvalidArgumentError, ValueError, TypeError) as e:
            problems.append(InputProblem("arch", f"arch = {a!r}: {e}" if repr(a) not in str(e) else str(e)))
    recipe = None
    try:
        recipe = make_recipe(corpus=corpus, glue=glue, tasks=tasks, pretrain_config=pretrain_config,
                             finetune_config=finetune_config, semantics=semantics)
    except (InvalidArgumentError, ValueError, TypeError) as e:
        problems.append(InputProblem(_field_of(str(e), "recipe"), str(e)))
    corpus_src = recipe.pretrain.corpus if recipe is not None else corpus
    bad = corpus_problem(corpus_src)
    if bad is not None:
        problems.append(bad)
    task_list = (list(recipe.tasks) if recipe is not None else
                 list(TASKS) if tasks is None else
                 [t for t in tasks if t in TASKS] if isinstance(tasks, (list, tuple)) else [])
    problems += glue_problems(glue, task_list)
    for field, folder in (("results", results), ("workdir", workdir)):
        if folder is not None:
            if not isinstance(folder, (str, os.PathLike)):
                problems.append(InputProblem(field, f"{field} = {folder!r} is not allowed; allowed: None or a folder path"))
                continue
            bad = writable_folder_problem(field, folder)
            if bad is not None:
                problems.append(bad)
    if recipe is not None and recipe.pretrain.pretokenized:
        from .corpus import default_cache_dir

        bad = writable_folder_problem("pretrain_config.corpus_cache", recipe.pretrain.corpus_cache or default_cache_dir())
        if bad is not None:
            problems.append(bad)
    if executor == "local":  # a Ray or SLURM task resolves its device on its own node, which may have a GPU
        try:
            resolve_device(device or "auto")
        except InvalidArgumentError as e:
            problems.append(InputProblem("device", str(e)))
    elif device is not None and not (isinstance(device, str) and (device in ("auto", "cpu", "cuda")
                                                                  or re.fullmatch(r"cuda:[0-9]+", device))):
        problems.append(InputProblem("device", f"device = {device!r} is not allowed; allowed values: None, 'auto', 'cpu', "
                                               "'cuda', 'cuda:<index>'"))
    if executor not in EXECUTORS:
        problems.append(InputProblem("executor", f"executor = {executor!r} is not allowed; allowed values: {list(EXECUTORS)}"))
    if id is not None and (not isinstance(id, int) or isinstance(id, bool) or id < 0):
        problems.append(InputProblem("id", f"id = {id!r} is not allowed; allowed: None or an integer >= 0"))
    if problems:
        raise PreflightError(problems)
    return recipe
