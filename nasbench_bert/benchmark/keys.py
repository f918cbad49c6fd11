"""How FlexiBERT keys find benchmark rows, and what users pass as archs to sweeps.

Two jobs, one concept (a key names an arch, and an evaluated arch names rows):

* :class:`KeyIndex` - the lookup behind :class:`~nasbench_bert.Benchmark`: an id
  (0-499), an :class:`~nasbench_bert.Arch`, its canonical string or its release dict,
  resolved to the table's rows. Archs trained twice keep every row (the lowest id
  first); the common key types resolve by one dict lookup each, so a batch of keys is a
  list of dict hits, not a list of parses.
* :func:`flexibert_keys` - the arch lists that the sweeps above this layer take
  (proxies, hardware, evaluation), resolved once as ``(id or None, Arch)`` pairs.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..checks import check_bench, is_int
from ..errors import InvalidArgumentError, NotEvaluatedError
from ..spaces.flexibert import FLEXIBERT_SPACE, LAYER_FIELDS, Arch
from ..vocabulary import BenchmarkLike


class KeyIndex:
    """Rows of the benchmark table by id, arch, canonical string and release dict."""

    def __init__(self, ids: Sequence[int], archs: Sequence[Arch]):
        self.ids = list(ids)
        self.archs = list(archs)
        self.runs: dict[Arch, list[int]] = {}
        for i, a in enumerate(self.archs):
            self.runs.setdefault(a, []).append(i)
        self.by_arch = {a: rows[0] for a, rows in self.runs.items()}
        self._by_string = {str(a): i for a, i in self.by_arch.items()}
        self._by_release = {_release_key_of_arch(a): i for a, i in self.by_arch.items()}

    def __len__(self) -> int:
        return len(self.archs)

    def others(self, row: int) -> tuple[int, ...]:
        """The rows of the same arch's other runs."""
        return tuple(j for j in self.runs[self.archs[row]] if j != row)

    def rows(self, key: Any) -> list[int]:
        """Every row of ``key``: an id answers with its own row first, an arch key with
        its lowest id first."""
        row = self.row(key)
        return self.runs[self.archs[row]] if not is_int(key) else [row, *self.others(row)]

    def row(self, key: Any) -> int:
        """The canonical row of ``key``; :class:`~nasbench_bert.NotEvaluatedError` for a
        valid arch never trained, :class:`~nasbench_bert.InvalidArchitectureError` for
        a malformed key."""
        if isinstance(key, Arch):
            row = self.by_arch.get(key)
            if row is None:
                raise self.not_evaluated(key)
            return row
        if is_int(key):
            k = int(key)
            if 0 <= k < len(self.ids) and self.ids[k] == k:
                return k
            raise NotEvaluatedError(f"id = {key!r} is not a benchmark id; allowed: integers 0 <= id < {len(self)}")
        if isinstance(key, str):
            row = self._by_string.get(key)
            return row if row is not None else self.row(Arch.from_string(key))
        if isinstance(key, Mapping):
            try:
                row = self._by_release.get(_release_key(key))
            except (KeyError, TypeError, AttributeError, _NotFast):
                row = None
            return row if row is not None else self.row(Arch.from_release(key))
        return self.row(Arch.coerce(key))  # raises InvalidArchitectureError naming the forms

    def not_evaluated(self, arch: Arch) -> NotEvaluatedError:
        return NotEvaluatedError(
            f"{arch} is a valid FlexiBERT arch but not one of the {len(self)} evaluated archs (the space has "
            f"{FLEXIBERT_SPACE.size:,}). Find the closest evaluated ones with bench.nearest(arch).")

    def first_rows(self, keys: list[Any], *, drop: bool) -> np.ndarray:
        """The canonical row of every key, in order (``drop``: keys never evaluated are
        left out, else they raise); equal to ``[self.rows(k)[0] for k in keys]``."""
        by_arch, by_string, ids = self.by_arch, self._by_string, self.ids
        n = len(ids)
        for kind, index in ((Arch, by_arch), (str, by_string)):  # the common case: one key type, all evaluated
            if keys and all(type(k) is kind for k in keys):
                hits = list(map(index.get, keys))
                if None not in hits:
                    return np.asarray(hits, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        keep = np.ones(len(keys), dtype=bool)
        for j, k in enumerate(keys):
            t = type(k)
            r = by_arch.get(k) if t is Arch else by_string.get(k) if t is str else (
                k if t is int and 0 <= k < n and ids[k] == k else None)
            if r is None:
                try:
                    r = self.row(k)
                except NotEvaluatedError:
                    if not drop:
                        raise
                    keep[j] = False
                    continue
            out[j] = r
        return out if keep.all() else out[keep]


class _NotFast(Exception):
    pass


def _release_key(d: Mapping[str, Any]) -> tuple[Any, ...]:
    """A hashable key of a release dict without full validation (fast path only).

    Any irregularity (extra keys, non-int numbers) raises so that the caller falls back
    to :meth:`Arch.from_release` and its precise errors.
    """
    if len(d) != 2:
        raise _NotFast
    h = d["hidden_size"]
    nas = d["nas_config"]
    if type(h) is not int or len(nas) != 1:
        raise _NotFast
    out: list[Any] = [h]
    for layer in nas["encoder_layers"]:
        if len(layer) != 5:
            raise _NotFast
        t, p, n, f, k = (layer["operation_type"], layer["operation_parameter"], layer["num_operation_heads"],
                         layer["feed_forward_dimension"], layer["num_feed_forward"])
        if type(n) is not int or type(f) is not int or type(k) is not int or type(p) not in (str, int):
            raise _NotFast
        out += (t, p, n, f, k)
    return tuple(out)


def _release_key_of_arch(a: Arch) -> tuple[Any, ...]:
    out: list[Any] = [a.hidden_size]
    for layer in a.layers:
        out += (getattr(layer, f) for f in LAYER_FIELDS)
    return tuple(out)


def flexibert_keys(archs: Iterable[Any], bench: BenchmarkLike | None = None) -> list[tuple[int | None, Arch]]:
    """``(id or None, Arch)`` for each of ``archs`` (ids, Arch objects, canonical strings
    or release dicts).

    Ids are rows of a benchmark, so they need ``bench``; the public functions that take
    arch lists load it once at their boundary (:func:`nasbench_bert.benchmark.flexibert.ensure_benchmark`)
    and pass it here. Without one, ids are refused with a message saying so.
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
                raise InvalidArgumentError(f"archs contains the id {a!r}, and ids need a benchmark: pass bench= "
                                           "(nasbench_bert.Benchmark.load()), or give the archs themselves")
            out.append((int(a), Arch.coerce(bench.query(int(a), charge=False).arch)))
        else:
            out.append((None, Arch.coerce(a)))
    return out
