"""The measured hardware table (``flexibert_hardware``) as the lookup layer serves it.

The table is optional build output (:mod:`nasbench_bert.hardware` measures it, the
builders put it beside the release's tables): a data folder built without one answers
every result with empty ``hardware`` figures, and :meth:`MeasuredHardware.table` says how
to measure one. Results get their figures by id, per semantics, read once on first use
so that loading the benchmark stays cheap.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, Mapping

import pandas as pd

from ..data.tables import DataDir
from ..semantics import SemanticsLike, get_semantics
from .results import HardwareMetrics

#: the optional table of measured latency, memory and FLOPs
HARDWARE_TABLE = "flexibert_hardware"
_EMPTY: Mapping[str, HardwareMetrics] = MappingProxyType({})
#: the fields of a result's hardware figures that are no column of the table: the device
#: (the table's machine is one, recorded in the manifest)
_NOT_MEASURED = frozenset({"device"})


class MeasuredHardware:
    """The hardware figures of one data folder, by benchmark id and semantics."""

    def __init__(self, data: DataDir):
        self._data = data
        self._by_id: dict[int, Mapping[str, HardwareMetrics]] | None = None

    def of(self, ident: int) -> Mapping[str, HardwareMetrics]:
        """The figures of benchmark id ``ident`` by semantics name (empty: not measured)."""
        if self._by_id is None:
            self._by_id = self._read()
        return self._by_id.get(ident, _EMPTY)

    def _read(self) -> dict[int, Mapping[str, HardwareMetrics]]:
        if not self._data.has_table(HARDWARE_TABLE):  # a build without a measurement: no figures
            return {}
        names = [f.name for f in dataclasses.fields(HardwareMetrics) if f.name not in _NOT_MEASURED]
        cols = self._data.table(HARDWARE_TABLE).select(["id", *names]).to_pydict()
        by_id: dict[int, dict[str, HardwareMetrics]] = {}
        for j, i in enumerate(cols["id"]):
            m = HardwareMetrics(**{n: cols[n][j] for n in names})
            by_id.setdefault(i, {})[m.semantics] = m
        return {i: MappingProxyType(d) for i, d in by_id.items()}

    def table(self, semantics: SemanticsLike | None = None) -> pd.DataFrame:
        """One row per arch id and semantics, or only ``semantics``'s rows; a data folder
        without a measurement raises :class:`~nasbench_bert.DataNotFoundError` saying how
        to measure one."""
        df = self._data.table(HARDWARE_TABLE).to_pandas()
        if semantics is not None:
            df = df[df["semantics"] == get_semantics(semantics).name].reset_index(drop=True)
        return df

    def machine(self) -> dict[str, Any]:
        """The data manifest's ``hardware`` entry: machine, settings, date, noise."""
        return dict(self._data.manifest.get("hardware", {}))
