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

A gradient proxy differentiates :func:`objective` (``objective(model, batch)``): the
scalar the package's own gradient proxies differentiate under the semantics the call
runs in, so a new gradient score and the built-in ones answer the same question.
With ``batches=n`` (n >= 2) the callable receives a list of n batches instead of one:
the protocol's batch and the same batch spec drawn with seeds ``seed + 1 ... seed + n - 1``.

**The cache key.** The name (``module:qualname``) says which function, the version says
which definition: a digest of the module *file* (its resolved path and the hash of its
content: editing a helper in the same file invalidates the values; a spec whose file
changed is loaded again), the bytecode in memory of the function and of the functions
of its module it names, the qualname, the
values of its closure cells and its default arguments (two closures of one factory
never share a key), and ``batches``. A helper in another module is not covered: pass
``version=`` (any string), which replaces the file, closure and default digest.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import json
import numbers
import pickle
import sys
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..checks import check_int
from ..errors import InvalidArgumentError
from ..semantics import NLPObjectiveRule
from ..vocabulary import Space
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
            if module is None or _LOADED_FROM.get(key) != _sha256(path):  # new, or the file changed since
                s = importlib.util.spec_from_file_location(key, path)
                assert s is not None and s.loader is not None
                module = importlib.util.module_from_spec(s)
                sys.modules[key] = module
                s.loader.exec_module(module)
                _LOADED_FROM[key] = _sha256(path)
        else:
            module = importlib.import_module(mod_name)
            file = getattr(module, "__file__", None)
            if file and Path(file).is_file():
                digest = _sha256(Path(file))
                if _LOADED_FROM.setdefault(mod_name, digest) != digest:  # edited since imported: the code on disk
                    module = importlib.reload(module)
                    _LOADED_FROM[mod_name] = digest
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


#: the content hash of each file a ``"module:function"`` spec loaded, so that a spec named
#: again after its file was edited runs the code on disk (its cache version hashes the file)
_LOADED_FROM: dict[str, str] = {}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _version(fn: Callable[..., Any], version: str | None = None, batches: int = 1) -> int:
    """The cache version of ``fn`` (see the module docstring): what its value depends on,
    digested. ``version`` (the user's own label) replaces the file, closure and default
    parts; ``batches`` is always part of it (the callable sees other inputs)."""
    parts: list[Any] = [callable_name(fn), f"batches={batches}"]
    if version is not None:
        parts += ["version", str(version)]
    else:
        parts += _definition(fn, depth=0)
    return int(hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:12], 16)


#: how deep closures of closures are followed (a recursive closure stops here)
_MAX_DEPTH = 4


def _definition(fn: Any, depth: int) -> list[Any]:
    """The parts of ``fn``'s definition its values depend on: its module file (path and
    content hash; its source or bytecode where there is no file), its closure cell
    values and its default arguments - and the bytecode in memory of it and of the
    functions of its own module it names, so that a function object older than its
    edited file (not re-imported) never takes the key of the code now on disk."""
    target = fn if inspect.isroutine(fn) else type(fn)  # a callable object: its class's file
    out: list[Any] = [getattr(target, "__qualname__", type(target).__name__)]
    out.append(_file_digest(target))
    code = getattr(fn, "__code__", None)
    if code is not None:
        out.append({"code": _code_digest(code), "helpers": _helpers_digest(fn, depth)})
        cells = [c.cell_contents if _cell_set(c) else "<empty>" for c in (fn.__closure__ or ())]
        out.append({"closure": dict(zip(code.co_freevars, (_stable(v, fn, depth) for v in cells)))})
        out.append({"defaults": [_stable(v, fn, depth) for v in (fn.__defaults__ or ())],
                    "kwdefaults": {k: _stable(v, fn, depth) for k, v in sorted((fn.__kwdefaults__ or {}).items())}})
    elif not inspect.isroutine(fn):
        out.append({"state": _stable(getattr(fn, "__dict__", {}), fn, depth)})
    return out


def _code_digest(code: types.CodeType) -> str:
    """The bytecode, constants and names of ``code`` and of the code objects nested in it."""
    h = hashlib.sha256(code.co_code + repr(code.co_names).encode())
    for c in code.co_consts:
        h.update(_code_digest(c).encode() if isinstance(c, types.CodeType) else repr(c).encode())
    return h.hexdigest()


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _helpers_digest(fn: Any, depth: int, seen: frozenset[int] = frozenset()) -> dict[str, str]:
    """The code digest of every function of ``fn``'s own module that ``fn`` names (and
    that those name, to :data:`_MAX_DEPTH`)."""
    out: dict[str, str] = {}
    g = getattr(fn, "__globals__", {})
    for n in sorted(_names(fn.__code__)):
        h = g.get(n)
        if inspect.isfunction(h) and h.__module__ == fn.__module__ and id(h) not in seen | {id(fn)}:
            out[n] = _code_digest(h.__code__)
            if depth < _MAX_DEPTH:
                out.update({f"{n}.{k}": v for k, v in _helpers_digest(h, depth + 1, seen | {id(fn)}).items()})
    return out


def _cell_set(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a cell not yet assigned (a recursive definition in progress)
        return False
    return True


def _file_digest(target: Any) -> str:
    """``path:sha256`` of the file that defines ``target``; its source (or bytecode) when
    it was defined where there is no file (an interactive session)."""
    try:
        file = inspect.getsourcefile(target) or inspect.getfile(target)
    except (TypeError, OSError):
        file = None
    if file and Path(file).is_file():
        path = Path(file).resolve()
        return f"{path}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
    try:
        return "source:" + hashlib.sha256(inspect.getsource(target).encode()).hexdigest()
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        blob = code.co_code + repr(code.co_consts).encode() if code is not None else repr(type(target)).encode()
        return "bytecode:" + hashlib.sha256(blob).hexdigest()


def _stable(v: Any, owner: Any, depth: int) -> Any:
    """A JSON-able digest of a closure or default value that is equal across processes
    exactly when the value is; a value with no such digest is refused (pass ``version=``)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, bytes):
        return "bytes:" + hashlib.sha256(v).hexdigest()
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [_stable(x, owner, depth) for x in v]
        return [type(v).__name__, sorted(items, key=repr) if isinstance(v, (set, frozenset)) else items]
    if isinstance(v, dict):
        return ["dict", sorted(([repr(k), _stable(x, owner, depth)] for k, x in v.items()), key=lambda kv: kv[0])]
    if isinstance(v, types.ModuleType):
        return "module:" + v.__name__
    if isinstance(v, type):
        return f"type:{v.__module__}.{v.__qualname__}"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.ascontiguousarray(v)
        return f"array:{a.dtype.str}:{a.shape}:{hashlib.sha256(a.tobytes()).hexdigest()}"
    if callable(v) and (inspect.isroutine(v) or hasattr(v, "__code__")):
        if v is owner or depth >= _MAX_DEPTH:
            return "callable:" + callable_name(v)
        return ["callable", callable_name(v), _definition(v, depth + 1)]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return ["dataclass", f"{type(v).__module__}.{type(v).__qualname__}",
                _stable({f.name: getattr(v, f.name) for f in dataclasses.fields(v)}, owner, depth)]
    try:
        return "pickle:" + hashlib.sha256(pickle.dumps(v, protocol=4)).hexdigest()
    except Exception:
        raise InvalidArgumentError(f"proxy {callable_name(owner)!r}: a closure or default value of type "
                                   f"{type(v).__name__} has no stable digest for the cache key; pass version='<label>' "
                                   "(evaluate(..., version=...), --proxy-version)") from None


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


@dataclasses.dataclass(frozen=True)
class _Call:
    """What a running callable proxy is computed under (read by :func:`objective`)."""

    space: str
    semantics: Any
    seed: int


_CURRENT: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("nasbench_bert_callable_call", default=None)


def objective(model: Any, batch: Any, *, semantics: Any = None, seed: int | None = None) -> Any:
    """The scalar the package's own gradient proxies differentiate, for ``model`` on
    ``batch``, as a tensor with its graph (call ``.backward()`` or ``torch.autograd.grad``).

    Inside a callable proxy the semantics and seed are those of the call; elsewhere pass
    them. FlexiBERT: the semantics' ``protocol.objective`` of the last hidden state
    (``"projection"``, as_trained and as_specified: sum(P * h) with the fixed seeded
    Gaussian P; ``"ones"``, authors: sum(h)). NAS-Bench-NLP: ``protocol.nlp_objective``
    (``"decoder_logits"``: the sum of the decoder logits; ``"rnn_output"``, authors: the
    sum of the last RNN layer's output, before the decoder, from the release's embedding
    lookup). The forward runs here, in the model's current mode."""
    from ..checks import check_seed
    from ..semantics import get_semantics
    from .capture import objective_value

    call = _CURRENT.get()
    if isinstance(batch, (list, tuple)):
        raise InvalidArgumentError("batch is a list (batches=n); allowed: one Batch - call objective(model, b) per batch")
    spec = getattr(batch, "spec", None)
    if spec is None:
        raise InvalidArgumentError(f"batch = {type(batch).__name__} is not allowed; allowed: the Batch a callable proxy "
                                   "receives (nasbench_bert.proxies.make_batch)")
    if semantics is None and call is None:
        raise InvalidArgumentError("semantics = None is not allowed outside a callable proxy; allowed: a semantics name "
                                   "(authors, as_trained, as_specified)")
    sem = get_semantics(semantics if semantics is not None else call.semantics)  # type: ignore[union-attr]
    seed = int(check_seed("seed", seed if seed is not None else (call.seed if call is not None else 0), none=False))
    if spec.space == Space.FLEXIBERT:
        out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        return objective_value(out, sem.protocol.objective, seed)
    if sem.protocol.nlp_objective == NLPObjectiveRule.RNN_OUTPUT:
        import torch.nn.functional as F

        w = model.embedding.weight
        y, _ = model(None, inputs_embeds=F.embedding(batch.input_ids, w, padding_idx=w.shape[0] - 1), decode=False)
        return y.sum()
    logits, _ = model(batch.input_ids)
    return logits.sum()


def _batches(batch: Any, n: int) -> Any:
    """The callable's input: the protocol's batch, or with ``n`` >= 2 a list of n batches
    (the same spec drawn with seeds seed, seed + 1, ...), on the device of the first."""
    if n == 1:
        return batch
    from .inputs import make_batch
    from .placement import batch_on

    return [batch, *(batch_on(make_batch(dataclasses.replace(batch.spec, seed=batch.spec.seed + k)), batch.input_ids.device)
                     for k in range(1, n))]


def _wrap(name: str, fn: Callable[..., Any], batches: int = 1) -> Callable[[Any], ProxyValue]:
    def proxy(cap: Any) -> ProxyValue:
        from .._torch import torch

        seed = int(cap.extra.get("seed", 0))
        token = _CURRENT.set(_Call(cap.batch.spec.space, cap.semantics, seed))
        try:
            inputs = _batches(cap.batch, batches)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                value = fn(cap.model, inputs)
        finally:
            _CURRENT.reset(token)
        return ProxyValue(as_number(name, value, cap.extra.get("key")))

    proxy.__doc__ = f"the callable {name} (model, batch) -> float"
    return proxy


def register_callable(target: str | Callable[..., Any], *, higher_is_better: bool = True, version: str | None = None,
                      batches: int = 1) -> str:
    """Register ``target`` (a ``"module:function"`` string or a function) as a proxy of
    both spaces, needs ``{"model"}``, group ``("callable",)``; return its name.

    ``version``: a label that replaces the digest of the file, closure and defaults in
    the cache version (see the module docstring). ``batches``: how many batches the
    callable receives (1: one Batch; n >= 2: a list of n).

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
    if version is not None and (not isinstance(version, str) or not version):
        raise InvalidArgumentError(f"version = {version!r} is not allowed; allowed: None or a non-empty string")
    batches = int(check_int("batches", batches, low=1, high=64))  # type: ignore[arg-type]
    ver = _version(fn, version, batches)
    for space in SPACES:
        old = REGISTRY[space].get(name)
        if old is not None and name not in CALLABLES:
            raise InvalidArgumentError(f"proxy name {name!r} is already a registered proxy of {space!r}; rename the function")
        REGISTRY[space][name] = Proxy(name, space, _wrap(name, fn, batches), frozenset({"model"}), higher_is_better,
                                      ver, None, f"callable {name}", ("callable",))
    CALLABLES[name] = fn
    return name


def unregister_callable(name: str) -> None:
    """Remove a callable registered by :func:`register_callable` (others are left alone)."""
    if name in CALLABLES:
        for space in SPACES:
            REGISTRY[space].pop(name, None)
        del CALLABLES[name]


NAME_RESOLVERS.append(register_callable)  # registry.get resolves 'module:function' through it
