"""NAS-Bench-Suite-Zero files: ``zc_flexibert.json`` and ``zc_nasbench_nlp.json``.

NAS-Bench-Suite-Zero (NASLib's ``zerocost`` data) stores zero-cost proxies as
``data[task][arch_str][proxy] = {"score": s, "time": t}`` with
``data[task][arch_str]["val_accuracy"]``; tools built on it (NASLib, zc_combine, ...)
read any file in that layout. This module writes and reads it; plain JSON, no extra.

What is written:

* ``zc_flexibert.json`` - tasks ``glue`` and the 8 GLUE tasks; ``arch_str`` is
  :func:`arch_key` of the arch, ``str()`` of a tuple of its fields, the form NASLib
  writes its own keys in (``str(spec_tuple)``) and reads them back with
  ``[eval(arch) for arch in zc_api.keys()]`` (automl/NASLib ``naslib/runners/zc/runner.py``
  line 32; :func:`arch_of_key` is the inverse); the 491 distinct archs, a repeated arch
  carrying its lowest id's proxies and result, as ``bench.query`` does; ``val_accuracy``
  is that task's dev score (x100) and ``id`` the benchmark id;
* ``zc_nasbench_nlp.json`` - tasks ``ptb`` (8,794 runs) and ``wikitext2`` (the runs
  that did not diverge and whose recipe id has PTB proxies); ``arch_str`` is the recipe
  id; ``val_accuracy`` is ``100 - test loss``, NASLib's convention for NAS-Bench-NLP
  (the release has no validation loss for PTB, so the final test loss is used).

Proxy names carry their semantics and their provenance after an ``@``
(:mod:`nasbench_bert.semantics`), so a stored and a live value never share a key:

* ``<name>@authors:release`` - the release's stored values (computed by the authors'
  code and model; their ``time`` is null: the release recorded no proxy's computation
  time - its ``time_to_train`` is the training time, a different quantity);
* ``<name>@<semantics>:live`` - values from :func:`nasbench_bert.proxies.compute`, with
  the frame's ``semantics`` column; their ``time`` is NAS-Bench-Suite-Zero's: the
  seconds this proxy took on this arch, the frame's ``<name>__seconds`` (its own
  computation on the arch's model pass; the pass itself is shared by the proxies computed
  with it and is the frame's ``seconds_pass``). A frame without per-proxy timings gives
  each proxy the arch's ``seconds`` (all its proxies together). Timing, layer and
  bookkeeping columns of the frame are never written as proxies.

Non-finite scores are written as null. A live frame is refused, never trimmed, when a
row names an arch the file has no place for, a semantics that does not exist, a
non-numeric proxy column, or the same arch twice with different values.
"""

from __future__ import annotations

import ast
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from ..atomic import atomic_path
from ..data.tables import FLEXIBERT_PROXY_COLUMNS, GLUE_TASKS, NLP_PROXY_COLUMNS
from ..checks import check_bench, check_names
from ..errors import InvalidArchitectureError, InvalidArgumentError, NasBenchError
from ..spaces import Arch, Layer
from ..vocabulary import BenchmarkLike, Space

FILES = {"flexibert": "zc_flexibert.json", "nlp": "zc_nasbench_nlp.json"}
#: the top-level key that says which nasbench-bert wrote a file (``{"provenance":
#: {"nasbench_bert_version": ..., "generated_by": ...}}``): not a task - NAS-Bench-Suite-Zero's
#: loader keeps ``data[dataset]`` only, and :func:`read_naszero` skips it
STAMP = "_nasbench_bert"
STORED_SEMANTICS = "authors"
#: the suffix of the release's stored values; live values end in ``:live``
STORED_SUFFIX = f"@{STORED_SEMANTICS}:release"
#: frame columns of proxies.compute that are not proxy values
_NOT_PROXIES = {"id", "key", "arch", "semantics", "objective", "seed", "batch", "dtype", "error", "proxy_versions",
                "seconds", "tokenizer", "cached"}


def stored_key(name: str) -> str:
    """The file's key of the release's stored value of proxy ``name``."""
    return f"{name}{STORED_SUFFIX}"


def live_key(name: str, semantics: str) -> str:
    """The file's key of a live value of proxy ``name`` under ``semantics``."""
    return f"{name}@{semantics}:live"


def arch_key(arch: Arch | str) -> str:
    """The key of ``arch`` in ``zc_flexibert.json``: ``str()`` of the tuple
    ``(hidden_size, ((operation_type, operation_parameter, num_operation_heads,
    feed_forward_dimension, num_feed_forward), ...))``, one inner tuple per layer, e.g.
    ``"(128, (('SA', 'SDP', 2, 512, 1), ('LT', 'DFT', 2, 512, 1)))"``.

    Why this form: NAS-Bench-Suite-Zero's runners build their arch list with
    ``eval(key)`` and look archs up by ``str(spec_tuple)``, so a key must be the ``str``
    of a Python literal that ``str`` gives back unchanged; the canonical arch string
    (``"128/SA-SDP-h2-512x1/..."``) is not a literal."""
    a = Arch.coerce(arch)
    return str((a.hidden_size, tuple((la.operation_type, la.operation_parameter, la.num_operation_heads,
                                      la.feed_forward_dimension, la.num_feed_forward) for la in a.layers)))


def arch_of_key(key: str) -> Arch:
    """The arch a ``zc_flexibert.json`` key names (the inverse of :func:`arch_key`),
    read with :func:`ast.literal_eval`, never ``eval``."""
    try:
        hidden, layers = ast.literal_eval(key) if isinstance(key, str) else (None, None)
        return Arch(hidden, tuple(Layer(*la) for la in layers))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, InvalidArchitectureError) as e:
        raise InvalidArgumentError(f"key = {key!r} is not a zc_flexibert.json key ({type(e).__name__}); allowed: "
                                   "str((hidden_size, ((operation_type, operation_parameter, num_operation_heads, "
                                   "feed_forward_dimension, num_feed_forward), ...))), as arch_key writes it") from None


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _live_columns(name: str, frame: pd.DataFrame) -> list[str]:
    """The proxy columns of a live frame: not identifying, bookkeeping or timing
    (``seconds*``), not per-layer or per-proxy extras (``<proxy>__<what>``)."""
    cols = [c for c in frame.columns if c not in _NOT_PROXIES and "__" not in c and not str(c).startswith("seconds")]
    bad = [c for c in cols if not pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
           and not frame[c].map(lambda v: v is None or _is_number(v)).all()]
    if bad:
        raise InvalidArgumentError(f"{name}: column(s) {bad} hold non-numbers; allowed: proxy columns of numbers (NaN for "
                                   "a missing value), as proxies.compute writes them")
    return cols


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _check_live(name: str, frame: Any, keys: tuple[str, ...]) -> None:
    if frame is None:
        return
    if not isinstance(frame, pd.DataFrame):
        raise InvalidArgumentError(f"{name} = {type(frame).__name__} is not allowed; allowed: a proxies.compute frame or None")
    missing = [c for c in ("semantics",) if c not in frame]
    if missing or not any(k in frame for k in keys):
        raise InvalidArgumentError(f"{name} lacks column(s) {missing or []} / one of {list(keys)}; allowed: a frame from "
                                   "nasbench_bert.proxies.compute (identifying columns and 'semantics')")
    from ..semantics import SEMANTICS, SEMANTICS_NAMES

    bad = sorted({str(s) for s in frame["semantics"] if not isinstance(s, str) or s not in SEMANTICS_NAMES})
    if bad:
        raise InvalidArgumentError(f"{name}: semantics {bad} not allowed; allowed values: {sorted(SEMANTICS)}")


def _live_entries(name: str, frame: pd.DataFrame, key_of: Any) -> dict[str, dict[str, dict[str, float | None]]]:
    """arch_str -> proxy@semantics:live -> {score, time} from a live frame (rows with an
    error are skipped: their proxies are NaN by construction). A row no arch of the file
    matches, or a second row of one arch and semantics with other values, is refused."""
    from ..semantics import get_semantics

    out: dict[str, dict[str, dict[str, float | None]]] = {}
    cols = _live_columns(name, frame)
    unmatched: list[str] = []
    for _, r in frame.iterrows():
        if isinstance(r.get("error"), str) and r.get("error"):
            continue
        sem = get_semantics(r["semantics"]).name
        targets = key_of(r)
        if not targets:
            unmatched.append(str(r.get("key", r.get("arch"))))
        for arch_str in targets:
            d = out.setdefault(arch_str, {})
            for c in cols:
                t = _num(r.get(f"{c}__seconds", r.get("seconds")))  # this proxy's seconds; else the arch's
                k, v = live_key(c, sem), {"score": _num(r[c]), "time": t}
                if k in d and d[k]["score"] != v["score"]:
                    raise InvalidArgumentError(f"{name}: arch {arch_str} appears twice under semantics {sem!r} with "
                                               f"different {c!r} values ({d[k]['score']} and {v['score']}); allowed: one "
                                               "row per arch and semantics")
                d[k] = v
    if unmatched:
        raise InvalidArgumentError(f"{name}: {len(unmatched)} row(s) match no arch of the file (e.g. {unmatched[:3]}); "
                                   "allowed: the benchmark's archs (FlexiBERT: its 491 distinct archs; NAS-Bench-NLP: "
                                   "recipe ids or recipe hashes of its PTB runs). Drop the others first.")
    return out


def _flexibert(bench: BenchmarkLike, live: pd.DataFrame | None, tasks: Iterable[str]) -> dict[str, Any]:
    flex = bench.to_pandas()
    stored = bench.data.table("flexibert_proxies").to_pandas().set_index("id")
    names = list(FLEXIBERT_PROXY_COLUMNS.values())
    if "activation_distance_hook_multiplicity" in stored:  # the per-pass value (docs/errata.md), as scoring does
        stored["activation_distance_dedup"] = stored["activation_distance"] / stored["activation_distance_hook_multiplicity"]
        names.append("activation_distance_dedup")
    first = flex.sort_values("id").drop_duplicates("arch", keep="first")
    keys = {a: arch_key(a) for a in first["arch"].astype(str)}  # canonical string -> the file's key
    live_by = _live_entries("live", live, lambda r: [keys[str(r["arch"])]] if str(r["arch"]) in keys else []) \
        if live is not None else {}
    ids = first["id"].to_numpy()
    scores = {n: [_num(v) for v in stored.loc[ids, n].to_numpy()] for n in names}
    proxies: dict[str, dict[str, Any]] = {}
    for j, (arch, i) in enumerate(zip(first["arch"].astype(str), ids)):
        e: dict[str, Any] = {"id": int(i)}
        for n in names:
            e[stored_key(n)] = {"score": scores[n][j], "time": None}
        e.update(live_by.get(keys[arch], {}))
        proxies[keys[arch]] = e
    data: dict[str, Any] = {}
    for task in tasks:
        data[task] = {arch: {**e, "val_accuracy": _num(v)} for (arch, e), v in zip(proxies.items(), first[task])}
    return data


def _nlp(bench: BenchmarkLike, live: pd.DataFrame | None) -> dict[str, Any]:
    ptb = bench.nlp.ptb
    names = list(NLP_PROXY_COLUMNS.values())
    by_hash: dict[str, list[str]] = {}
    for rid, h in zip(ptb["recipe_id"], ptb["recipe_hash"]):
        if h is not None:
            by_hash.setdefault(h, []).append(str(int(rid)))
    ids = {str(int(r)) for r in ptb["recipe_id"]}

    def key_of(r: pd.Series) -> list[str]:
        k = r.get("key")
        if isinstance(k, str) and k in ids:
            return [k]
        return by_hash.get(str(r.get("arch")), [])

    live_by = _live_entries("live_nlp", live, key_of) if live is not None else {}
    rids = [str(int(r)) for r in ptb["recipe_id"]]
    cols = {n: [_num(v) for v in ptb[n].to_numpy()] for n in names}
    proxies: dict[str, dict[str, Any]] = {}
    for j, rid in enumerate(rids):
        e: dict[str, Any] = {"id": int(rid)}
        for n in names:
            e[stored_key(n)] = {"score": cols[n][j], "time": None}
        e.update(live_by.get(rid, {}))
        proxies[rid] = e
    data: dict[str, Any] = {"ptb": {}, "wikitext2": {}}
    for rid, loss in zip(rids, ptb["test_loss"]):
        f = _num(loss)
        data["ptb"][rid] = {**proxies[rid], "val_accuracy": None if f is None else 100.0 - f}
    w = bench.nlp.wikitext2.sort_values("init_time")
    w = w[~w["diverged"].astype(bool)]
    for r, loss in zip(w["recipe_id"], w["final_test_loss"]):
        rid = str(int(r))
        if rid in proxies and rid not in data["wikitext2"]:  # the earliest run, as bench.nlp.query answers
            data["wikitext2"][rid] = {**proxies[rid], "val_accuracy": 100.0 - float(loss)}
    return data


def live_from_table(bench: BenchmarkLike) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The ``live`` and ``live_nlp`` frames of :func:`export_naszero` from the data's
    proxy-values table (``bench.proxy_values``; ``(None, None)`` when the data holds none):
    every proxy of the table but the trivial spec rules, under each semantics it holds.
    A value's ``time`` is the table's recorded cost per arch of that proxy where it was
    built (its own evaluation plus its layer's shared pass, the mean over the archs): the
    table keeps no per-arch timing. NAS-Bench-NLP rows are the table's recipes that have a
    PTB run (the file is keyed by PTB recipe id)."""
    from ..data.proxy_values import TABLE

    if not bench.data.has_table(TABLE):
        return None, None
    frames: dict[str, list[pd.DataFrame]] = {Space.FLEXIBERT: [], Space.NLP: []}
    for space, lookup in ((Space.FLEXIBERT, bench.proxy_values), (Space.NLP, bench.nlp.proxy_values)):  # type: ignore[attr-defined]
        try:
            first = lookup("as_trained")
        except NasBenchError:  # a table without this benchmark's rows
            continue
        for sem in first.attrs.get("table_semantics", []):
            df = lookup(sem)
            info = df.attrs.get("proxies", {})
            names = [c for c in df.columns if "trivial" not in (info.get(c) or {}).get("group", ())]
            out = df[names].reset_index()
            out["semantics"] = sem
            if space is Space.FLEXIBERT:
                archs = bench.archs
                out["arch"] = [str(archs[i]) for i in out["id"]]
            else:  # the file keys NAS-Bench-NLP by PTB run: a recipe of WikiText-2 alone has no entry there
                out = out[out["recipe_hash"].isin(set(bench.nlp.ptb["recipe_hash"].dropna()))]
                out["arch"] = out["recipe_hash"]
            for n in names:
                out[f"{n}__seconds"] = float((info.get(n) or {}).get("seconds_per_row", {}).get(sem, float("nan")))
            frames[space].append(out.drop(columns=[c for c in ("id", "recipe_hash") if c in out]))
    return tuple(pd.concat(f, ignore_index=True) if f else None for f in (frames[Space.FLEXIBERT], frames[Space.NLP]))  # type: ignore[return-value]


def export_naszero(bench: BenchmarkLike, out_dir: str | os.PathLike[str], *, live: pd.DataFrame | None = None,
                   live_nlp: pd.DataFrame | None = None, spaces: Iterable[str] = ("flexibert", "nlp"),
                   tasks: Iterable[str] = ("glue", *GLUE_TASKS)) -> list[Path]:
    """Write ``zc_flexibert.json`` and/or ``zc_nasbench_nlp.json`` into ``out_dir``
    (atomically; see the module doc for the layout); returns the paths written.

    ``live`` / ``live_nlp``: frames from :func:`nasbench_bert.proxies.compute` for the
    FlexiBERT / NLP space, added beside the stored proxies (``<proxy>@authors:release``)
    under ``<proxy>@<semantics>:live``. ``spaces``: which files. ``tasks``: the
    FlexiBERT tasks. Nothing is written when any argument is refused.
    """
    bench = check_bench(bench)
    if not isinstance(out_dir, (str, os.PathLike)):
        raise InvalidArgumentError(f"out_dir = {out_dir!r} is not allowed; allowed: a folder (str or path)")
    spaces = check_names("spaces", spaces)
    bad = [s for s in spaces if s not in FILES]
    if bad or not spaces:
        raise InvalidArgumentError(f"spaces = {spaces!r} is not allowed; allowed values: {list(FILES)} (one or both)")
    tasks = check_names("tasks", tasks)
    allowed_tasks = ("glue", *GLUE_TASKS)
    bad = [t for t in tasks if t not in allowed_tasks]
    if bad or not tasks:
        raise InvalidArgumentError(f"tasks = {tasks!r} is not allowed; allowed values: {list(allowed_tasks)}")
    _check_live("live", live, ("arch",))
    _check_live("live_nlp", live_nlp, ("key", "arch"))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    builders = {"flexibert": lambda: _flexibert(bench, live, tasks), "nlp": lambda: _nlp(bench, live_nlp)}
    from ..version import __version__

    for space in spaces:
        data = builders[space]()
        data[STAMP] = {"provenance": {"nasbench_bert_version": __version__, "generated_by": f"nasbench-bert {__version__}"}}
        path = out / FILES[space]
        with atomic_path(path) as tmp:
            Path(tmp).write_text(json.dumps(data, allow_nan=False), encoding="utf-8")
        written.append(path)
    return written


def read_naszero(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A ``zc_<space>.json`` file (this package's or any NAS-Bench-Suite-Zero one) as one
    row per (task, arch): ``task``, ``arch``, ``id`` (when present), ``val_accuracy``,
    then per proxy its score (column ``<proxy>``) and time (``<proxy>__time``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"path = {path!r} is not allowed; allowed: a zc_<space>.json file (str or path)")
    p = Path(path)
    if not p.is_file():
        raise InvalidArgumentError(f"path = {str(path)!r} is not a file; allowed: a zc_<space>.json file")
    layout = "{task: {arch: {proxy: {'score': s, 'time': t}, 'val_accuracy': v}}}"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise InvalidArgumentError(f"path = {str(path)!r} is not UTF-8 text ({e.reason} at byte {e.start}); allowed: a "
                                   "zc_<space>.json file") from None
    except json.JSONDecodeError as e:
        raise InvalidArgumentError(f"path = {str(path)!r} is not JSON ({e.msg}, line {e.lineno} column {e.colno}); "
                                   "allowed: a zc_<space>.json file") from None
    if not isinstance(data, dict) or not all(isinstance(a, dict) and all(isinstance(e, dict) for e in a.values())
                                             for a in data.values()):
        raise InvalidArgumentError(f"path = {str(path)!r} is not a NAS-Bench-Suite-Zero file: its layout is not {layout}")
    rows = []
    for task, archs in data.items():
        if task == STAMP:  # which nasbench-bert wrote the file, not a task
            continue
        for arch, entry in archs.items():
            r: dict[str, Any] = {"task": task, "arch": arch, "val_accuracy": entry.get("val_accuracy")}
            if "id" in entry:
                r["id"] = entry["id"]
            for k, v in entry.items():
                if isinstance(v, dict) and "score" in v:
                    r[k] = v["score"]
                    r[f"{k}__time"] = v.get("time")
            rows.append(r)
    df = pd.DataFrame(rows)
    for c in df.columns:
        if c not in ("task", "arch"):
            df[c] = pd.to_numeric(df[c], errors="coerce") if df[c].dtype == object else df[c]
    return df.replace({None: np.nan})
