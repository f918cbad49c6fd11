"""The surrogate as a portable, pinned file: plain arrays, a closed-form prediction.

Why: a surrogate refitted on each user's machine is a slightly different function on
each (BLAS, numpy versions), and a pickled model stops loading when the libraries
move on (NAS-Bench-301's fate). So ``nasbench-bert build-data`` (or
``build-surrogate``) fits the default surrogate once and writes it as an ``.npz`` of
plain numeric arrays - no pickle, no object of any library - that
``np.load(path, allow_pickle=False)`` reads anywhere; the manifest pins its sha256
(:mod:`nasbench_bert.data.artifacts`), and ``bench.surrogate()`` loads it instead of
refitting. ``docs/surrogate.md`` ("The portable file") lists every field and the
formulas that turn them into a prediction, so the file can be used without this package.

Layout: ``meta`` (a JSON string: format, format version, family, features, targets,
members, the sha256 of the training data) and one array per fitted quantity, named
``<part>.<field>``: ``gp.*`` (training features, kernel hyper-parameters, alpha,
K^-1), ``gbt.*`` (trees as flat arrays), ``ridge.*`` (coefficients), ``knn.*`` and
``cal.*`` (the calibration table). The bytes are deterministic: entries in name order,
a fixed zip timestamp, no compression, so a refit on the same data and machine gives
the same file.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..errors import DataIntegrityError, InvalidArgumentError
from .models import Calibrated, EnsembleSurrogate, GBTSurrogate, GPSurrogate, KNNSurrogate, RidgeSurrogate

if TYPE_CHECKING:
    from ..vocabulary import BenchmarkLike
    from . import Surrogate

#: the ``format`` field of every file
FORMAT = "nasbench-bert-surrogate"
#: the layout this package reads and writes; a file of another version is refused
FORMAT_VERSION = 1
#: the families whose fitted state is plain arrays (LightGBM's trees live in its own objects)
PORTABLE_FAMILIES: tuple[str, ...] = ("gp", "gbt", "ridge", "knn", "ensemble")
#: array fields per member, in the order docs/surrogate.md lists them
MEMBER_FIELDS: dict[str, tuple[str, ...]] = {
    "gp": ("mu_x", "sd_x", "Z", "mu_y", "sd_y", "lengthscale", "noise", "alpha", "kinv"),
    "gbt": ("feature", "threshold", "leaf", "mu_y", "sd_y", "resid"),
    "ridge": ("mu_x", "sd_x", "w", "resid"),
    "knn": ("mu_x", "sd_x", "Z", "Y", "k"),
}
CAL_FIELDS: tuple[str, ...] = ("scale", "z0", "z1")
_EPOCH = (1980, 1, 1, 0, 0, 0)


class SurrogateFileError(DataIntegrityError):
    """A surrogate file this package cannot use: not a surrogate file, another format
    version, a wrong sha256, or fitted on other data or features."""


def file_name(family: str) -> str:
    """The versioned file name of ``family``'s file, e.g. ``surrogate-ensemble_cal-v1.npz``."""
    return f"surrogate-{family.replace('+', '_')}-v{FORMAT_VERSION}.npz"


def training_sha256(bench: "BenchmarkLike") -> str:
    """sha256 of what a surrogate is fitted on: the table's space indices (int64) and
    its GLUE and 8 task columns (float64), row order included. A file records it; a file
    fitted on other rows or values is refused."""
    from . import TARGETS

    df = bench.to_pandas()
    h = hashlib.sha256(np.ascontiguousarray(df["space_index"].to_numpy(dtype="<i8")).tobytes())
    h.update(np.ascontiguousarray(df[list(TARGETS)].to_numpy(dtype="<f8")).tobytes())
    return h.hexdigest()


def _split(family: str) -> tuple[str, bool]:
    base, cal = (family[:-4], True) if family.endswith("+cal") else (family, False)
    if base not in PORTABLE_FAMILIES:
        raise InvalidArgumentError(f"family = {family!r} cannot be written as arrays; allowed values: "
                                   f"{list(PORTABLE_FAMILIES)} (each optionally with '+cal')")
    return base, cal


# -- model -> arrays ------------------------------------------------------------------------------
def _member_arrays(m: Any) -> dict[str, np.ndarray]:
    if isinstance(m, GPSurrogate):
        vals = {"mu_x": m.mu_x, "sd_x": m.sd_x, "Z": m.Z, "mu_y": m.mu_y, "sd_y": m.sd_y,
                "lengthscale": np.float64(m.lengthscale), "noise": np.float64(m.noise), "alpha": m.alpha,
                "kinv": m.kinv32()}
    elif isinstance(m, GBTSurrogate):
        vals = {"feature": m.feature, "threshold": m.threshold, "leaf": m.leaf, "mu_y": m.mu_y, "sd_y": m.sd_y,
                "resid": m.resid}
    elif isinstance(m, RidgeSurrogate):
        vals = {"mu_x": m.mu_x, "sd_x": m.sd_x, "w": m.w, "resid": m.resid}
    elif isinstance(m, KNNSurrogate):
        vals = {"mu_x": m.mu_x, "sd_x": m.sd_x, "Z": m.Z, "Y": m.Y, "k": np.int64(m.k)}
    else:
        raise InvalidArgumentError(f"model {type(m).__name__} cannot be written as arrays; allowed: "
                                   f"{list(MEMBER_FIELDS)} members")
    return {f"{m.name}.{k}": np.asarray(v) for k, v in vals.items()}


def model_arrays(model: Any, family: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays of a fitted ``family`` model, and the structure that goes into ``meta``."""
    base, cal = _split(family)
    arrays: dict[str, np.ndarray] = {}
    inner = model
    structure: dict[str, Any] = {"calibrated": cal}
    if cal:
        if not isinstance(model, Calibrated):
            raise InvalidArgumentError(f"family = {family!r} but the model is a {type(model).__name__}; allowed: Calibrated")
        arrays["cal.scale"] = np.stack([model.scale[0], model.scale[1]])
        arrays["cal.z0"], arrays["cal.z1"] = model.z[0], model.z[1]
        structure["group_col"] = model.group_col
        inner = model.model
    members = list(inner.models) if isinstance(inner, EnsembleSurrogate) else [inner]
    structure["members"] = [m.name for m in members]
    structure["ensemble"] = isinstance(inner, EnsembleSurrogate)
    for m in members:
        arrays.update(_member_arrays(m))
    return arrays, structure


# -- arrays -> model ------------------------------------------------------------------------------
def _gp_member(g: dict[str, np.ndarray]) -> Any:
    m = GPSurrogate(lengthscale=float(g["lengthscale"]), noise=float(g["noise"]))
    m.mu_x, m.sd_x, m.Z, m.mu_y, m.sd_y, m.alpha = g["mu_x"], g["sd_x"], g["Z"], g["mu_y"], g["sd_y"], g["alpha"]
    m._kinv32 = g["kinv"]
    return m


def _gbt_member(g: dict[str, np.ndarray]) -> Any:
    leaf = g["leaf"]
    m = GBTSurrogate(n_estimators=int(leaf.shape[0]), max_depth=int(round(np.log2(leaf.shape[1]))))
    m.feature, m.threshold, m.leaf, m.mu_y, m.sd_y, m.resid = (g["feature"], g["threshold"], leaf, g["mu_y"],
                                                              g["sd_y"], g["resid"])
    return m


def _ridge_member(g: dict[str, np.ndarray]) -> Any:
    m = RidgeSurrogate()
    m.mu_x, m.sd_x, m.w, m.resid = g["mu_x"], g["sd_x"], g["w"], g["resid"]
    return m


def _knn_member(g: dict[str, np.ndarray]) -> Any:
    m = KNNSurrogate(k=int(g["k"]))
    m.mu_x, m.sd_x, m.Z, m.Y = g["mu_x"], g["sd_x"], g["Z"], g["Y"]
    return m


#: a member family -> the model rebuilt from its arrays (:data:`MEMBER_FIELDS`); the file's
#: families are checked against :data:`MEMBER_FIELDS` before any is rebuilt
_MEMBERS: dict[str, Callable[[dict[str, np.ndarray]], Any]] = {
    "gp": _gp_member, "gbt": _gbt_member, "ridge": _ridge_member, "knn": _knn_member,
}


def _member(name: str, a: dict[str, np.ndarray]) -> Any:
    g = {k: a[f"{name}.{k}"] for k in MEMBER_FIELDS[name]}
    return _MEMBERS[name](g)


def model_from_arrays(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> Any:
    """The model ``meta`` describes, its fitted state taken from ``arrays`` (no fitting)."""
    members = [_member(n, arrays) for n in meta["members"]]
    inner: Any = members[0]
    if meta["ensemble"]:
        inner = EnsembleSurrogate(members=tuple(meta["members"]))
        inner.models = members
    if not meta["calibrated"]:
        return inner
    cal = Calibrated(meta["family"][:-4], group_col=meta["group_col"], name=meta["family"])
    cal.scale = {0: arrays["cal.scale"][0], 1: arrays["cal.scale"][1]}
    cal.z = {0: arrays["cal.z0"], 1: arrays["cal.z1"]}
    cal.model = inner
    return cal


# -- bytes ------------------------------------------------------------------------------------------
def to_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` of ``arrays`` whose bytes depend on the arrays alone: entries in name
    order, stored (no compression, so no zlib version in the bytes), a fixed timestamp,
    ``.npy`` format 1.0; ``np.load(..., allow_pickle=False)`` reads it."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        for name in sorted(arrays):
            a = np.asarray(arrays[name])
            if a.dtype == object:
                raise InvalidArgumentError(f"array {name!r} has dtype object; allowed: numeric or fixed-width text")
            b = io.BytesIO()
            a = a if a.flags.c_contiguous else a.copy(order="C")  # never Fortran order: one layout, one byte string
            np.lib.format.write_array(b, a, version=(1, 0), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            z.writestr(info, b.getvalue())
    return buf.getvalue()


def surrogate_bytes(sur: "Surrogate") -> bytes:
    """The portable file of a fitted :class:`~nasbench_bert.surrogate.Surrogate`."""
    from . import TARGETS
    from .features import feature_names

    arrays, structure = model_arrays(sur.model, sur.family)
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "family": sur.family, "features": sur.features,
            "feature_names": feature_names(sur.features), "targets": list(TARGETS),
            "training_rows": len(sur._bench), "training_sha256": training_sha256(sur._bench), **structure}
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    return to_bytes(arrays)


def read(payload: bytes | str | Path, *, sha256: str | None = None, where: str = "surrogate file") -> tuple[dict[str, Any], Any]:
    """``(meta, model)`` from a file's bytes (or its path). ``sha256``: the digest the
    manifest pins; a file that differs, is not a surrogate file, has another format
    version, or lacks a field raises :class:`SurrogateFileError` saying which and how to
    rewrite it."""
    if isinstance(payload, (str, Path)):
        where = str(payload)
        payload = Path(payload).read_bytes()
    fix = "rewrite it with `nasbench-bert build-surrogate` or `bench.surrogate(refit=True)`"
    if sha256 is not None:
        digest = hashlib.sha256(payload).hexdigest()
        if digest != sha256:
            raise SurrogateFileError(f"{where}: sha256 is {digest}, the manifest pins {sha256}; {fix}")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays.pop("meta")[()]))
    except (ValueError, KeyError, OSError, zipfile.BadZipFile, TypeError) as e:
        raise SurrogateFileError(f"{where} is not a {FORMAT} file ({type(e).__name__}: {e}); {fix}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SurrogateFileError(f"{where}: field format is {meta.get('format') if isinstance(meta, dict) else meta!r}; "
                                 f"allowed: {FORMAT!r}; {fix}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise SurrogateFileError(f"{where}: field format_version is {meta.get('format_version')!r}; this nasbench-bert "
                                 f"reads format_version {FORMAT_VERSION}: {fix}, or use the nasbench-bert that wrote it")
    need = ["meta.family", "meta.features", "meta.members", "meta.ensemble", "meta.calibrated", "meta.training_sha256"]
    missing = [f for f in need if f[5:] not in meta]
    if not missing:
        _split(meta["family"])
        missing = [f"{n}.{k}" for n in meta["members"] for k in MEMBER_FIELDS.get(n, ("?",)) if f"{n}.{k}" not in arrays]
        missing += [f"cal.{k}" for k in CAL_FIELDS if meta["calibrated"] and f"cal.{k}" not in arrays]
    if missing:
        raise SurrogateFileError(f"{where} lacks field(s) {missing} of format_version {FORMAT_VERSION}; {fix}")
    return meta, model_from_arrays(arrays, meta)


def load(bench: "BenchmarkLike", payload: bytes | str | Path, *, sha256: str | None = None,
         where: str = "surrogate file") -> "Surrogate":
    """A :class:`~nasbench_bert.surrogate.Surrogate` of ``bench`` from a portable file,
    without fitting. Refused (:class:`SurrogateFileError`) when the file was fitted on
    other data than ``bench``'s table or with features this package computes otherwise."""
    from . import Surrogate
    from .features import feature_names

    meta, model = read(payload, sha256=sha256, where=where)
    fix = "refit with `bench.surrogate(refit=True)` or rewrite the file with `nasbench-bert build-surrogate`"
    if meta["training_sha256"] != training_sha256(bench):
        raise SurrogateFileError(f"{where} was fitted on other data (field training_sha256 {meta['training_sha256'][:16]}…, "
                                 f"this benchmark's table {training_sha256(bench)[:16]}…); {fix}")
    if meta.get("feature_names") != feature_names(meta["features"]):
        raise SurrogateFileError(f"{where}: field feature_names differs from this nasbench-bert's {meta['features']!r} "
                                 f"features; {fix}")
    return Surrogate(bench, meta["family"], meta["features"], model=model)


def write_artifacts(bench: BenchmarkLike, *, surrogate: bool = True) -> dict[str, dict[str, Any]]:
    """Add the release artifacts to the built tables ``bench`` reads (``bench.data``, the
    caller's ``Benchmark`` over that folder, so this layer never builds a benchmark itself): ``objectives-v1.json`` (:mod:`nasbench_bert.data.objectives`)
    and, unless ``surrogate=False``, the default surrogate fitted on the table and
    written as its portable file. Each is listed in the manifest with its sha256
    (:func:`nasbench_bert.data.artifacts.add_artifact`). Called by ``nasbench-bert
    build-data`` after the tables are written, and by ``build-surrogate``: the data
    layer that writes the tables never imports the surrogate. Returns the entries."""
    from ..data import objectives
    from ..data.artifacts import add_artifact
    from . import DEFAULT_FAMILY

    d = bench.data
    out = {"objectives": add_artifact(d, "objectives", objectives.FILE,
                                      objectives.to_json(objectives.release_objectives(bench)),
                                      format=objectives.FORMAT, format_version=objectives.FORMAT_VERSION)}
    if surrogate:
        sur = bench.surrogate(DEFAULT_FAMILY, refit=True)
        out["surrogate"] = add_artifact(d, "surrogate", file_name(DEFAULT_FAMILY), surrogate_bytes(sur), format=FORMAT,
                                        format_version=FORMAT_VERSION, family=DEFAULT_FAMILY, features=sur.features)
    return out
