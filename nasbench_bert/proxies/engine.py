"""The one-pass engine: record what the requested proxies need, then evaluate them.

The capture of one arch is made by its space's capture function
(:func:`~.capture_bert.capture_flexibert`, :func:`~.capture_nlp.capture_nlp`),
following the proxy protocol of the semantics asked for; :func:`evaluate` then runs
each proxy on it, isolating failures.

On a device other than the CPU (:func:`run_one`'s ``device``) the batch moves there
and each capture puts its model where the batch is (:mod:`.placement`: weights,
batches and dropout masks still come from the CPU generators, so the values are the
CPU's up to rounding); the caller's CUDA generator is left as it was.
"""

from __future__ import annotations

import math
import time
from typing import Any, Iterable

from .._torch import torch

from ..semantics import SemanticsLike, get_semantics
from ..vocabulary import DeviceKind
from .capture import Capture
from .capture_bert import capture_flexibert
from .capture_nlp import NOISE_AMPLITUDES, capture_nlp
from .inputs import Batch, BatchSpec
from .placement import batch_on
from .registry import Proxy, SpecInput

__all__ = ["Capture", "capture_flexibert", "capture_nlp", "evaluate", "run_one", "NOISE_AMPLITUDES", "DTYPES"]

#: the precisions a proxy pass can run in
DTYPES = {"float32": torch.float32, "float64": torch.float64}


# -- evaluation --------------------------------------------------------------------------
def evaluate(proxies: Iterable[Proxy], cap: Capture | SpecInput) -> dict[str, Any]:
    """Run each proxy on a capture (analytic scores: on the spec); one proxy failing
    records its error, not the arch's."""
    row: dict[str, Any] = {}
    for p in proxies:
        t0 = time.perf_counter()
        try:
            v = p.fn(cap)
            row[p.name] = v.value
            row[f"{p.name}__layers"] = list(v.per_layer) if v.per_layer is not None else None
        except Exception as e:  # isolate: one broken proxy must not lose the others
            row[p.name] = math.nan
            row[f"{p.name}__layers"] = None
            row[f"{p.name}__error"] = f"{type(e).__name__}: {e}"
        row[f"{p.name}__seconds"] = time.perf_counter() - t0
    return row


def run_one(space: str, key: Any, proxies: list[Proxy], spec: BatchSpec, batch: Batch, semantics: SemanticsLike,
            seed: int, dtype: str = "float32", device: str = "cpu") -> dict[str, Any]:
    """One arch's row: its analytic scores, the proxies that run their own passes (a
    fresh model each) and those that read the shared pass. ``device``: a canonical device
    (:func:`nasbench_bert.devices.check_device`); the CPU path is the one every CPU value
    was computed by."""
    if device == DeviceKind.CPU:
        return _run_one(space, key, proxies, spec, batch, semantics, seed, dtype)
    dev = torch.device(device)
    with torch.random.fork_rng(devices=[dev] if dev.type == DeviceKind.CUDA else []):  # torch.manual_seed reseeds the GPU too
        return _run_one(space, key, proxies, spec, batch_on(batch, dev), semantics, seed, dtype)


def _run_one(space: str, key: Any, proxies: list[Proxy], spec: BatchSpec, batch: Batch, semantics: SemanticsLike,
             seed: int, dtype: str) -> dict[str, Any]:
    sem = get_semantics(semantics)
    analytic = [p for p in proxies if p.analytic]
    own_pass = [p for p in proxies if p.model_only]
    modelled = [p for p in proxies if not p.analytic and not p.model_only]
    row = evaluate(analytic, SpecInput(space, key, sem))  # no model for scores of the spec alone
    capture = {"flexibert": capture_flexibert, "nlp": capture_nlp}[space]  # resolved now: tests may patch them
    t0 = time.perf_counter()
    for p in own_pass:  # a fresh model each, no pass of ours: the proxy runs its own
        row.update(evaluate([p], capture(key, {"model"}, batch, sem, seed, DTYPES[dtype])))
    if modelled or not proxies:
        needs: set[str] = set().union(*(p.needs for p in modelled)) if modelled else {"forward"}
        cap = capture(key, needs, batch, sem, seed, DTYPES[dtype])
        t1 = time.perf_counter()
        row.update(evaluate(modelled, cap))
    else:
        t1 = t0
    row["seconds_pass"] = t1 - t0
    row["seconds_proxies"] = time.perf_counter() - t1
    return row
