"""Argument checks shared by every public entry point.

One place decides what counts as an integer (``int`` and numpy integers, never ``bool``),
a seed or a bounded number, so that every function refuses the same bad values with
the same kind of message: the argument's name, the value, and what is allowed
(:class:`~nasbench_bert.errors.InvalidArgumentError`).
"""

from __future__ import annotations

import math
import numbers
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

from .errors import InvalidArgumentError


def is_int(v: Any) -> bool:
    """``int`` or a numpy integer; ``True``/``False`` are not integers here."""
    return type(v) is int or (isinstance(v, numbers.Integral) and not isinstance(v, bool))


def is_real(v: Any) -> bool:
    """A finite real number (int, float or numpy scalar), not a bool."""
    if not isinstance(v, numbers.Real) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:  # an int beyond float range, e.g. 10**400
        return False


def check_int(name: str, v: Any, *, low: int | None = None, high: int | None = None, none: bool = False) -> int | None:
    """``v`` as an int within ``[low, high]`` (``None`` allowed when ``none``)."""
    if v is None and none:
        return None
    if not is_int(v) or (low is not None and v < low) or (high is not None and v > high):
        rng = ("an integer" + (f" >= {low}" if low is not None and high is None else "")
               + (f" in [{low}, {high}]" if low is not None and high is not None else "")
               + (f" <= {high}" if high is not None and low is None else ""))
        raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: {rng}{' or None' if none else ''}")
    return int(v)


#: the largest seed: every generator used here takes it (numpy's legacy RandomState, which
#: ConfigSpace uses, stops at 2**32 - 1; torch and numpy's default_rng go further)
MAX_SEED = 2**32 - 1


def check_seed(name: str, v: Any, *, none: bool = True) -> int | None:
    """The one seed check of the package: an integer in [0, 2**32 - 1] (or ``None`` for
    fresh entropy where ``none``), so every function refuses the same seeds."""
    return check_int(name, v, low=0, high=MAX_SEED, none=none)


def check_real(name: str, v: Any, *, low: float | None = None, high: float | None = None, low_open: bool = False,
               none: bool = False) -> float | None:
    """``v`` as a finite float within the bounds (``low`` excluded when ``low_open``)."""
    if v is None and none:
        return None
    ok = is_real(v)
    if ok:
        f = float(v)
        ok = (low is None or (f > low if low_open else f >= low)) and (high is None or f <= high)
    if not ok:
        lo = "" if low is None else (f"{low} < " if low_open else f"{low} <= ")
        hi = "" if high is None else f" <= {high}"
        raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a finite number {lo}x{hi}".replace("number x", "number")
                                   + (" or None" if none else ""))
    return f


def check_bool(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: True or False")
    return v


def check_choice(name: str, v: Any, allowed: Sequence[Any]) -> Any:
    """``v`` if it is one of ``allowed`` (compared only among hashable values)."""
    try:
        ok = v in allowed and not isinstance(v, bool)
    except TypeError:  # unhashable against a set or dict
        ok = False
    if not ok:
        raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed values: {list(allowed)}")
    return v


def check_names(name: str, v: Any) -> list[str]:
    """A string or an iterable of strings, as a list (the common ``proxies=`` shape)."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, (dict, bytes)) or not isinstance(v, Iterable):
        raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: a name or a list of names")
    out = list(v)
    bad = [x for x in out if not isinstance(x, str)]
    if bad:
        raise InvalidArgumentError(f"{name} = {v!r} is not allowed; allowed: names (strings), got {bad[0]!r}")
    return out


def check_bench(v: Any, name: str = "bench") -> Any:
    """``v`` if it is a benchmark (:class:`~nasbench_bert.vocabulary.BenchmarkLike`:
    ``nasbench_bert.Benchmark.load()``), else a clear error instead of an
    ``AttributeError`` deep inside the caller. The members are looked up on the class, so
    lazy properties are not evaluated by the check."""
    from .vocabulary import BENCHMARK_MEMBERS

    if v is None or isinstance(v, (str, bytes, int, float)) or not all(hasattr(type(v), m) for m in BENCHMARK_MEMBERS):
        shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
        raise InvalidArgumentError(f"{name} = {shown} is not allowed; allowed: a benchmark, "
                                   "nasbench_bert.Benchmark.load()")
    return v


def check_nlp_bench(v: Any, name: str = "bench") -> Any:
    """The NAS-Bench-NLP lookup of ``v``: ``v.nlp`` for a :class:`~nasbench_bert.Benchmark`,
    ``v`` itself for an :class:`~nasbench_bert.NLPBenchmark`; else a clear error."""
    from .vocabulary import NLP_BENCHMARK_MEMBERS

    if v is not None and all(hasattr(type(v), m) for m in NLP_BENCHMARK_MEMBERS) and not hasattr(type(v), "nlp"):
        return v
    return check_bench(v, name).nlp



def check_writable_folder(name: str, folder: str | os.PathLike[str]) -> Path:
    """``folder`` as a Path when it is, or can be made, a folder this process can write;
    otherwise one line naming ``name`` and the folder that said no, before any work.
    Nothing is left behind: a missing folder is not created here (its writer makes it),
    and the probe that catches what permission bits cannot (a read-only mount, /proc, a
    root-owned folder seen as root) is a hidden temporary folder, removed at once."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InvalidArgumentError(f"{name} = {str(folder)!r} is a file; allowed: a folder (created if missing)")
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InvalidArgumentError(f"{name} = {str(folder)!r}: {probe} is not writable; choose a folder you can write to")
    try:
        os.rmdir(tempfile.mkdtemp(dir=probe, prefix=".nasbench-bert-probe-"))
    except OSError as e:
        raise InvalidArgumentError(f"{name} = {str(folder)!r} cannot be written ({probe}: {e.strerror}); choose a folder "
                                   "you can write to") from None
    return folder
