"""What users pass as FlexiBERT archs, resolved once for every sweep (proxies, hardware,
evaluation): benchmark ids, :class:`~nasbench_bert.Arch` objects, canonical strings or
release dicts, as ``(id or None, Arch)`` pairs.

Why here: ids mean rows of the benchmark, so resolving them needs one; the sweeps above
this layer share this one function instead of each keeping a copy.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..checks import check_bench, is_int
from ..errors import InvalidArgumentError
from ..spaces.flexibert import Arch
from ..vocabulary import BenchmarkLike


def flexibert_keys(archs: Iterable[Any], bench: BenchmarkLike | None = None) -> tuple[list[tuple[int | None, Arch]],
                                                                                     BenchmarkLike | None]:
    """``(id or None, Arch)`` for each of ``archs``, and the benchmark used.

    Ids are looked up in ``bench``; without one, the benchmark is loaded once
    (``Benchmark.load(progress=False)``: the documented data resolution) and returned, so
    the caller can reuse it. A list of archs alone never loads anything.
    """
    if isinstance(archs, (str, bytes, dict)) or not isinstance(archs, Iterable):
        raise InvalidArgumentError(f"archs = {archs!r} is not allowed; allowed: a list of archs (ids, Arch, strings, "
                                   "release dicts)")
    if bench is not None:
        bench = check_bench(bench)
    out: list[tuple[int | None, Arch]] = []
    for a in archs:
        if isinstance(a, bool):
            raise InvalidArgumentError(f"archs contains {a!r}; allowed: FlexiBERT ids, Arch objects, strings, release dicts")
        if is_int(a):
            if bench is None:
                from .flexibert import Benchmark

                bench = Benchmark.load(progress=False)
            out.append((int(a), Arch.coerce(bench.query(int(a), charge=False).arch)))
        else:
            out.append((None, Arch.coerce(a)))
    return out, bench
