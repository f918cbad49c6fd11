"""Computing the scores on the models: the callable's probe, the sweep with identical
models computed once, and the per-row values of every score.

Why a module of its own: this is the only step that builds models (through the cached,
resumable, executor-aware sweep, :func:`nasbench_bert.proxies.compute`), so it is the one
that costs hours and the one that must fail early: a callable's first call runs on one
model of each benchmark before any sweep (:func:`_probe_benchmarks`), and a callable
that returned a non-number fails the call (:func:`_raise_on_bad_returns`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd

from ..devices import DEFAULT_DEVICE
from ..errors import InvalidArgumentError
from ..proxies import registry
from ..proxies.baselines import analytic_values
from ..proxies.callables import ProxyReturnError
from ..proxies.inputs import BatchSpec
from ..semantics import Semantics
from ..slurm import SlurmResources
from ..vocabulary import BenchmarkLike
from .benchmarks import _BENCHMARK_SPECS, _group_keys, _Items
from .call import _Roles, _Run


# -- the callable's probe: its benchmarks, before any sweep --------------------------------------
def _probe_benchmarks(run: _Run, bms: list[str]) -> list[str]:
    """The benchmarks a callable runs on: its first call on the first model of each,
    before any sweep. One it rejects is skipped with a note, unless the user named it;
    none accepted, or a named one rejected, fails the call with one line."""
    if not run.callable_proxy:
        return bms
    fails: dict[str, str] = {}
    for bm in bms:
        items = _BENCHMARK_SPECS[bm].items(run.bench, run.selection[bm][:1] if run.selection[bm] else [0])
        if items.keys:
            err = _probe(bm, items.keys[0], run.name, run.specs[bm], run.sems[0], run.seed, run.dtype, run.device)
            if err is not None:
                fails[bm] = err
    named = [bm for bm in fails if run.named]
    if named:
        raise InvalidArgumentError(fails[named[0]])
    ok = [bm for bm in bms if bm not in fails]
    if not ok:
        raise InvalidArgumentError("; ".join(fails.values()) if len(fails) == 1 else
                                   f"proxy {run.name!r} fits none of {bms}: " + "; ".join(fails.values()))
    for bm, err in fails.items():
        run.skipped[bm] = err
        run.notes.append(f"{bm} skipped (not named in benchmarks, and the callable rejects its model): {err}")
    return ok


def _probe(space: str, key: Any, name: str, spec: BatchSpec, sem: Semantics, seed: int, dtype: str,
           device: str = DEFAULT_DEVICE) -> str | None:
    """Run a callable proxy on one model before the sweep; None if it gave a number, else
    the one-line reason (a wrong signature for this benchmark's model, a non-number
    returned), naming the arch - in seconds, before any sweep."""
    from ..proxies.engine import run_one
    from ..proxies.inputs import make_batch

    row = run_one(space, key, registry.get(space, [name]), spec, make_batch(spec), sem, seed, dtype, device)
    err = row.get(f"{name}__error")
    if not err:
        return None
    line = " ".join(str(err).split())  # one line, whatever the exception's text held
    return (line.split(": ", 1)[1] if line.startswith(ProxyReturnError.__name__) else
            f"proxy {name!r} failed on the first {space} model ({_short_key(key)}, semantics {sem.key}): {line}")


def _short_key(key: Any) -> str:
    text = f"arch {key}" if not hasattr(key, "hash") else f"recipe {key.hash}"
    return text if len(text) <= 80 else text[:77] + "..."


# -- the sweep with identical models computed once ---------------------------------------------
def _sweep_counted(run: _Run, bm: str, items: _Items, modelled: list[str], sem: Semantics) -> pd.DataFrame:
    """:func:`_sweep` of the model-based scores under ``sem``, counted into ``run``; a
    callable that returned a non-number fails the call."""
    swept = _sweep(bm, items, modelled, sem, dedupe=run.dedupe, spec=run.specs[bm], seed=run.seed, dtype=run.dtype,
                   bench=run.bench, cache=None if run.cache_dir is None else run.cache_dir / bm, jobs=run.jobs,
                   executor=run.executor, ray_address=run.ray_address, progress=run.progress, slurm=run.slurm,
                   refresh=run.refresh, device=run.device)
    reps = swept[~swept.shared.astype(bool)]
    run.computed += int((~reps.cached.astype(bool)).sum())
    run.cached += int(reps.cached.astype(bool).sum())
    run.shared += int(swept.shared.astype(bool).sum())
    _raise_on_bad_returns(swept, run.name, bm, sem)
    return swept


def _sweep(space: str, items: _Items, names: list[str], sem: Semantics, *, dedupe: bool, spec: BatchSpec, seed: int,
           dtype: str, bench: BenchmarkLike | None, cache: Path | None, jobs: int, executor: str, ray_address: str | None,
           progress: bool, slurm: SlurmResources | None = None, refresh: bool = False,
           device: str = DEFAULT_DEVICE) -> pd.DataFrame:
    """Values of the model-based proxies ``names`` for every row, computing one
    representative per identical model; columns: the proxies, ``<proxy>__error``,
    ``model_key``, ``shared``, ``cached``, ``error``."""
    from ..proxies.sweep import compute

    groups = _group_keys(space, items, sem, dedupe)
    first: dict[str, int] = {}
    for i, g in enumerate(groups):
        first.setdefault(g, i)
    reps = list(first.values())
    label = f"{space} {sem.key}: {len(reps)} models for {len(groups)} rows" if progress else None
    df = compute([items.compute_items[i] for i in reps], names, semantics=sem, seed=seed, dtype=dtype, batch=spec,
                 space=space, bench=bench, cache=cache, jobs=jobs, executor=executor, ray_address=ray_address, slurm=slurm,
                 progress=False if label is None else True, refresh=refresh, device=device) if reps else pd.DataFrame()
    if label is not None and not df.empty:
        print(f"{label}: {int((~df.cached.astype(bool)).sum())} computed, {int(df.cached.astype(bool).sum())} from the cache",
              file=sys.stderr, flush=True)
    cols = [c for c in df.columns if c in names or (c.endswith("__error") and c[:-7] in names)] + ["error", "cached"]
    rep_rows = {g: df.iloc[k] for k, g in enumerate(first)}
    out = []
    for i, g in enumerate(groups):
        r = rep_rows[g]
        row = {c: r.get(c) for c in cols}
        row.update(model_key=g, shared=first[g] != i)
        out.append(row)
    return pd.DataFrame(out)


def _raise_on_bad_returns(swept: pd.DataFrame, name: str, space: str, sem: Semantics) -> None:
    col = f"{name}__error"
    if col not in swept:
        return
    bad = [e for e in swept[col] if isinstance(e, str) and e.startswith(ProxyReturnError.__name__ + ":")]
    if bad:
        raise InvalidArgumentError(f"{bad[0].split(': ', 1)[1]} ({space}, semantics {sem.key}; {len(bad)} model(s) so)")


def _values_frame(run: _Run, bm: str, items: _Items, sem: Semantics, swept: pd.DataFrame | None, roles: _Roles
                  ) -> pd.DataFrame:
    """The per-row values of every score on ``bm`` under ``sem`` (model-based ones from
    ``swept``, with their errors noted; analytic ones computed here)."""
    frame = items.ident.copy()
    frame["semantics"] = sem.key
    if swept is not None:
        for c in ["model_key", "shared", "cached", *roles.modelled]:
            frame[c] = swept[c].to_numpy()
        for n in roles.modelled:
            err = swept.get(f"{n}__error")
            frame[f"{n}__error"] = err.to_numpy() if err is not None else None
            bad = int(pd.notna(frame[f"{n}__error"]).sum()) if err is not None else 0
            if bad:
                first = frame.loc[pd.notna(frame[f"{n}__error"]), f"{n}__error"].iloc[0]
                run.notes.append(f"{bm} {sem.key}: `{n}` failed on {bad} of {len(frame)} rows (NaN there); first: {first}")
    for col, vals in analytic_values(bm, items.keys, roles.analytic, sem).items():
        frame[col] = vals
    return frame
