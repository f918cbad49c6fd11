"""A surrogate for the 10.6M FlexiBERT archs the table does not cover.

The default is a calibrated ensemble (``"ensemble+cal"``): the mean of an exact GP, a
numpy gradient-boosted-tree model and ridge regression, fitted on features of the model
that was actually trained (:mod:`.features`), with its predictive standard deviation
recalibrated on out-of-fold residuals (:class:`~.models.Calibrated`). Everything is
numpy (scipy for statistics), so ``bench.surrogate().predict(arch)`` works on the
light install; LightGBM is an optional family (``"lgbm"``).

How good it is, against what the data allows, is in ``docs/surrogate.md``
(``python -m studies.surrogate_study``):

* :func:`cross_validate` - k-fold by arch, every family, the parameter-count baselines
  and the noise ceiling (:mod:`.noise`);
* :func:`region_cv` - leave-one-region-out (hidden size, depth, operation family);
* :mod:`.noise` - run-to-run noise from exact repeats, curve re-runs and as-trained
  twins; :class:`~.noise.RunNoise` replays it (the noisy surrogate oracle);
* :mod:`.fidelity` - the learning curves, repaired, and the steps fidelity.

Featurisation is vectorised over *space indices*, so hundreds of thousands of archs are
scored per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..checks import check_bench
from ..errors import InvalidArgumentError
from ..data.tables import GLUE_TASKS
from ..spaces.flexibert import CHOICES_PER_LAYER, Arch
from .features import (
    MAX_LAYERS, SLOT, class_representatives, decode_indices, feature_names, feature_set, featurize, featurize_indices,
    flops_indices, num_params_indices, surrogate_features, twin_keys_of,
)
from .models import (
    FAMILIES, Calibrated, EnsembleSurrogate, GBTSurrogate, GPSurrogate, KNNSurrogate, LGBMSurrogate, RidgeSurrogate,
    make_family,
)
from .validation import cross_validate, region_cv
from ..vocabulary import BenchmarkLike

TARGETS: tuple[str, ...] = ("glue", *GLUE_TASKS)
DEFAULT_FAMILY = "ensemble+cal"
DEFAULT_FEATURES = "as_trained"

__all__ = [
    "Surrogate", "SurrogateResult", "cross_validate", "region_cv", "featurize_indices", "featurize", "decode_indices",
    "surrogate_features", "feature_names", "training_data", "CHOICES_PER_LAYER", "MAX_LAYERS", "SLOT", "TARGETS",
    "FAMILIES", "DEFAULT_FAMILY", "make_family", "GPSurrogate", "RidgeSurrogate", "KNNSurrogate", "GBTSurrogate",
    "LGBMSurrogate", "EnsembleSurrogate", "Calibrated", "num_params_indices", "flops_indices", "load_or_fit",
]


def training_data(bench: BenchmarkLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, Y, num_params) in the 0.1 layout: :func:`featurize_indices` features, GLUE
    then the 8 tasks, and the as-specified parameter count."""
    bench = check_bench(bench)
    df = bench.to_pandas()
    idx = df["space_index"].to_numpy(dtype=np.int64)
    return featurize_indices(idx), df[list(TARGETS)].to_numpy(dtype=float), df["num_params_as_specified"].to_numpy(dtype=float)


@dataclass(frozen=True)
class SurrogateResult:
    """A *predicted* result for an arch the benchmark never trained."""

    arch: Arch
    glue: float
    glue_std: float
    scores: dict[str, float]
    scores_std: dict[str, float]
    model: str
    predicted: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"arch": str(self.arch), "glue": self.glue, "glue_std": self.glue_std, "scores": dict(self.scores),
                "scores_std": dict(self.scores_std), "model": self.model, "predicted": True,
                "source": "surrogate (not a trained result)"}


class Surrogate:
    """The fitted surrogate of a benchmark: ``predict`` and ``predict_indices``.

    ``family``: a name in :data:`FAMILIES`, optionally with ``"+cal"`` (recalibrated
    standard deviation); ``features``: ``"as_trained"`` (default) or ``"full"``.
    The predictive standard deviation is that of a *new run* of the arch (model
    uncertainty plus run-to-run noise); :meth:`run_noise` is the measured run-to-run
    part alone.
    """

    def __init__(self, bench: BenchmarkLike, family: str = DEFAULT_FAMILY, features: str = DEFAULT_FEATURES, *,
                 model: Any = None):
        """Fit ``family`` on ``bench``'s table; or, with ``model`` (a fitted model of that
        family, e.g. read from the portable file by :func:`.portable.load`), use it as is."""
        bench = check_bench(bench)
        make_family(family)  # validates the name
        feature_set(features)
        self.family, self.features = family, features
        self._bench = bench
        self._noise = None
        self._lut: tuple[np.ndarray, np.ndarray] | None = None
        # One BLAS/OpenMP thread while fitting and scoring: the matrices are small (500 rows), so
        # threads only add contention - on two busy cores a bare fit took 39 s with OpenBLAS's 2
        # threads and 6 s with one (bench/bench_surrogate.py prints both) - and one thread makes the
        # fitted numbers, and the pinned file's bytes, independent of the machine's core count.
        with threadpool_limits(limits=1):
            if model is None:
                df = bench.to_pandas()
                X = surrogate_features(df["space_index"].to_numpy(dtype=np.int64), features)
                model = make_family(family).fit(X, df[list(TARGETS)].to_numpy(dtype=float))
            self.model = model
            if feature_set(features).per_class:  # features are per as-trained class: score each class once
                rep = surrogate_features(class_representatives(), features)
                keys, first = np.unique(twin_keys_of(rep), return_index=True)
                m, s = self.model.predict(rep[first], return_std=True)
                lut_m = np.full((2 ** 14, len(TARGETS)), np.nan)
                lut_s = np.full_like(lut_m, np.nan)
                lut_m[keys], lut_s[keys] = m, s
                self._lut = (lut_m, lut_s)

    def predict_indices(self, idx: np.ndarray, return_std: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """(mean, std) arrays of shape (n, 9): glue then the 8 tasks."""
        X = surrogate_features(np.asarray(idx, dtype=np.int64), self.features)
        if self._lut is not None:
            k = twin_keys_of(X)
            return self._lut[0][k], (self._lut[1][k] if return_std else None)
        with threadpool_limits(limits=1):  # as at fit: the same numbers whatever the core count
            return self.model.predict(X, return_std)

    def interval(self, idx: np.ndarray, level: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
        """Central ``level`` predictive interval of GLUE for a new run (a calibrated
        family's residual quantiles; Gaussian otherwise)."""
        X = surrogate_features(np.asarray(idx, dtype=np.int64), self.features)
        with threadpool_limits(limits=1):  # one thread, as predict_indices: the interval's centre is its mean
            if hasattr(self.model, "interval"):
                return self.model.interval(X, level)
            m, s = self.model.predict(X)
        from scipy.stats import norm

        z = norm.ppf((1 + level) / 2)
        return m[:, 0] - z * s[:, 0], m[:, 0] + z * s[:, 0]

    def predict(self, arch: Any) -> SurrogateResult:
        a = Arch.coerce(arch)
        m, s = self.predict_indices(np.array([a.index]))
        return SurrogateResult(
            a, float(m[0, 0]), float(s[0, 0]),
            {t: float(m[0, i + 1]) for i, t in enumerate(GLUE_TASKS)},
            {t: float(s[0, i + 1]) for i, t in enumerate(GLUE_TASKS)}, self.family,
        )

    def run_noise(self) -> Any:
        """The measured run-to-run noise model (:class:`~.noise.RunNoise`), built once."""
        if self._noise is None:
            from .noise import RunNoise

            self._noise = RunNoise(self._bench)
        return self._noise

    def mean_std(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """GLUE (mean, std of the arch's expected GLUE, depth) for the noisy oracle: the
        std of a new run with the run-to-run variance of its depth taken out (never
        below 5 % of the total)."""
        idx = np.asarray(idx, dtype=np.int64)
        m, s = self.predict_indices(idx)
        _, ch = decode_indices(idx)
        depth = (ch < CHOICES_PER_LAYER).sum(1)
        rn = self.run_noise()
        run_sd = np.array([rn.sd.get(int(d), 0.0) for d in depth])
        epi = np.sqrt(np.maximum(s[:, 0] ** 2 - run_sd**2, (0.05 * s[:, 0]) ** 2))
        return m[:, 0], epi, depth


def load_or_fit(bench: BenchmarkLike, family: str = DEFAULT_FAMILY, *, refit: bool = False) -> Surrogate:
    """What ``bench.surrogate(family, refit=)`` returns: the data folder's pinned file
    (:mod:`.portable`, sha256-checked against the manifest) when it holds one of
    ``family`` and ``refit`` is False - loaded, not fitted, so everyone with this data
    release predicts with the same function - else a fit on ``bench``'s table here."""
    if not isinstance(refit, bool):
        raise InvalidArgumentError(f"refit = {refit!r} is not allowed; allowed: True or False")
    make_family(family)
    data = getattr(bench, "data", None)
    if not refit and data is not None:
        from ..data.artifacts import artifact_entry, read_artifact
        from . import portable

        entry = artifact_entry(data, "surrogate")
        if entry is not None and entry.get("family") == family:
            payload = read_artifact(data, "surrogate")
            return portable.load(bench, payload, sha256=entry["sha256"], where=str(data.path / entry["file"]))
    return Surrogate(bench, family)
