"""Plain ``(model, batch) -> float`` callables as registered proxies.

A researcher with a new zero-cost score should not have to learn the capture machinery
to rank it: :func:`register_callable` wraps the function as a proxy that receives the
freshly built model of each arch (``needs={"model"}``: the engine runs no pass of its
own, so a forward-only score costs one forward) and registers it in both spaces under
``"module:function"``. What the callable receives:

* FlexiBERT: ``model`` is the :class:`~nasbench_bert.models.flexibert.FlexiBERTEncoder`
  of the arch under the semantics (its train/eval mode set by the semantics' proxy
  protocol: ``authors`` trains, i.e. dropout is on; the others evaluate), and ``batch``
  a :class:`~nasbench_bert.proxies.inputs.Batch`: ``model(batch.input_ids,
  batch.attention_mask, batch.token_type_ids)`` is the last hidden state (B, T, H).
* NAS-Bench-NLP: ``model`` is the recipe's language model
  (:class:`~nasbench_bert.models.nlp_rnn.RecipeLM`, eval mode, the same for every
  semantics), ``batch.input_ids`` is (T, B): ``model(batch.input_ids)`` returns the
  logits (T, B, vocab) and the final states.

The callable runs with torch's global generator seeded by the proxy seed (and restored
afterwards), so dropout masks and any random draw are reproducible. Gradients are
allowed (the model is fresh for each call). It must return a real number (int, float,
numpy scalar or a one-element tensor); anything else is a
:class:`ProxyReturnError` naming the proxy and the arch.

The name is the cache identity; the version is a digest of the function's source, so
editing the function invalidates its cached values.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import numbers
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgumentError
from .registry import NAME_RESOLVERS, REGISTRY, SPACES, Proxy, ProxyValue

#: names this module registered (only these may be replaced by a re-registration)
CALLABLES: dict[str, Callable[..., Any]] = {}


class ProxyReturnError(InvalidArgumentError):
    """A callable proxy returned something that is not a real number."""


def callable_name(fn: Callable[..., Any]) -> str:
    """``"module:qualname"`` of a function: the name it is registered and cached under."""
    return f"{getattr(fn, '__module__', None) or 'unknown'}:{getattr(fn, '__qualname__', type(fn).__name__)}"


def load_callable(spec: str) -> Callable[..., Any]:
    """The function named by ``"package.module:function"`` (dots after the colon reach
    attributes) or ``"path/to/file.py:function"``; a clear error otherwise."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise InvalidArgumentError(f"proxy = {spec!r} is not allowed; allowed: a registered name or 'module:function' "
                                   "(or 'path/to/file.py:function')")
    mod_name, attr = spec.split(":")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.is_file():
                raise InvalidArgumentError(f"proxy = {spec!r}: no such file {mod_name!r}")
            key = "nasbench_bert_user_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
            module = sys.modules.get(key)
            if module is None:
                s = importlib.util.spec_from_file_location(key, path)
                assert s is not None and s.loader is not None
                module = importlib.util.module_from_spec(s)
                sys.modules[key] = module
                s.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except InvalidArgumentError:
        raise
    except Exception as e:  # the user's module failed to import: say which and why
        raise InvalidArgumentError(f"proxy = {spec!r}: module {mod_name!r} cannot be imported "
                                   f"({type(e).__name__}: {e})") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InvalidArgumentError(f"proxy = {spec!r}: {mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InvalidArgumentError(f"proxy = {spec!r} is a {type(obj).__name__}, not a callable (model, batch) -> float")
    return obj


def _version(fn: Callable[..., Any]) -> int:
    """A digest of the function's source (its bytecode where the source is unavailable)."""
    try:
        blob = inspect.getsource(fn).encode()
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        blob = code.co_code + repr(code.co_consts).encode() if code is not None else repr(fn).encode()
    return int(hashlib.sha1(blob).hexdigest()[:12], 16)


def as_number(name: str, value: Any, key: Any) -> float:
    """``value`` as a float, or :class:`ProxyReturnError` naming the proxy and the arch.
    NaN and inf are kept (they say the score broke down there), booleans are refused."""
    torch = sys.modules.get("torch")
    v = value
    if torch is not None and isinstance(v, torch.Tensor):
        if v.numel() == 1 and (v.dtype.is_floating_point or v.dtype in _torch_ints()):
            return float(v.detach().reshape(()).item())
    elif isinstance(v, (np.ndarray, np.generic)):
        if v.size == 1 and v.dtype.kind in "iuf":
            return float(v.reshape(()))
    elif isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    raise ProxyReturnError(f"proxy {name!r} returned {type(v).__name__} {_short(v)} for arch {key}; allowed: a real "
                           "number (int, float, numpy scalar or one-element tensor)")


def _torch_ints() -> tuple[Any, ...]:
    torch = sys.modules.get("torch")
    return () if torch is None else (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _wrap(name: str, fn: Callable[..., Any]) -> Callable[[Any], ProxyValue]:
    def proxy(cap: Any) -> ProxyValue:
        from .._torch import torch

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(cap.extra.get("seed", 0)))
            value = fn(cap.model, cap.batch)
        return ProxyValue(as_number(name, value, cap.extra.get("key")))

    proxy.__doc__ = f"the callable {name} (model, batch) -> float"
    return proxy


def register_callable(target: str | Callable[..., Any], *, higher_is_better: bool = True) -> str:
    """Register ``target`` (a ``"module:function"`` string or a function) as a proxy of
    both spaces, needs ``{"model"}``, group ``("callable",)``; return its name.

    Registering the same name again replaces the entry only when it was made here (a
    notebook redefining its function); a built-in proxy is never replaced."""
    if isinstance(target, str):
        fn, name = load_callable(target), target
    elif callable(target):
        fn, name = target, callable_name(target)
    else:
        raise InvalidArgumentError(f"proxy = {target!r} is not allowed; allowed: a registered name, 'module:function' "
                                   "or a callable (model, batch) -> float")
    if not isinstance(higher_is_better, bool):
        raise InvalidArgumentError(f"higher_is_better = {higher_is_better!r} is not allowed; allowed: True or False")
    for space in SPACES:
        old = REGISTRY[space].get(name)
        if old is not None and name not in CALLABLES:
            raise InvalidArgumentError(f"proxy name {name!r} is already a registered proxy of {space!r}; rename the function")
        REGISTRY[space][name] = Proxy(name, space, _wrap(name, fn), frozenset({"model"}), higher_is_better,
                                      _version(fn), None, f"callable {name}", ("callable",))
    CALLABLES[name] = fn
    return name


def unregister_callable(name: str) -> None:
    """Remove a callable registered by :func:`register_callable` (others are left alone)."""
    if name in CALLABLES:
        for space in SPACES:
            REGISTRY[space].pop(name, None)
        del CALLABLES[name]


NAME_RESOLVERS.append(register_callable)  # registry.get resolves 'module:function' through it
