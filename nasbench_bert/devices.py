"""Where models run: the one check of the ``device=`` argument of
:func:`nasbench_bert.proxies.compute`, :func:`nasbench_bert.proxies.evaluate`,
:func:`nasbench_bert.hardware.measure_many` and their ``--device`` options.

**Why one module.** A device is part of a value's provenance: the proxy cache keys its
parts by it, and rows, reports and hardware tables record it. Three entry points taking
their own spellings would key one GPU three ways, so every one of them canonicalises
here, to ``"cpu"`` or ``"cuda:<index>"``.

**Why before any work.** A wrong device found by the first worker fails a sweep after
the benchmark is loaded and the cache is opened; found here, it is one line naming the
allowed values: an unknown string, ``cuda`` on a machine without CUDA, an index beyond
the device count, and a SLURM job array that asks for fewer GPUs than the device needs
(``gpus_per_node``, ``--slurm-gpus``), or a Ray sweep asked to use a GPU (Ray tasks of a
sweep ask for CPUs only).

``"auto"`` is the first GPU when CUDA is available (for a SLURM array: when the job asks
for a GPU), else the CPU. The default of every entry point stays ``"cpu"``: the pinned
values are CPU values, and a GPU changes their last bits.

No torch import at module level: the syntax is checked without it, and torch is
imported only to ask whether (and how many) CUDA devices exist.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, Callable

from .errors import InvalidArgumentError
from .vocabulary import DeviceKind, ExecutorKind

if TYPE_CHECKING:
    from .slurm import SlurmResources

__all__ = ["ALLOWED", "DEFAULT_DEVICE", "check_device", "cuda_count", "is_cuda", "parse_device"]

#: the default of every entry point (see the module docstring)
DEFAULT_DEVICE = "cpu"
#: how messages name the allowed values
ALLOWED = "'auto', 'cpu', 'cuda' or 'cuda:<index>'"

_SYNTAX = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")


def parse_device(device: Any, name: str = "device") -> tuple[DeviceKind, int | None]:
    """``(kind, index)`` of a device spelling, by syntax alone (no torch): ``kind`` one of
    ``auto``, ``cpu``, ``cuda``; ``index`` given only as ``cuda:<i>``. A ``torch.device``
    is read by its string."""
    torch = sys.modules.get("torch")  # a torch.device exists only where torch is imported
    text = str(device) if torch is not None and isinstance(device, torch.device) else device
    m = _SYNTAX.match(text.strip().lower()) if isinstance(text, str) else None
    kind = None if m is None else DeviceKind(m.group(1))
    if kind is None or (m.group(2) is not None and kind is not DeviceKind.CUDA):
        raise InvalidArgumentError(f"{name} = {device!r} is not allowed; allowed values: {ALLOWED}")
    return kind, None if m.group(2) is None else int(m.group(2))


def cuda_count() -> int:
    """CUDA devices this process sees (0 without torch or without CUDA). It does not
    create a CUDA context, so worker processes started afterwards are safe."""
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def is_cuda(device: str) -> bool:
    """Whether a canonical device (what :func:`check_device` returns) is a GPU."""
    return device.startswith("cuda")


def check_device(device: Any = DEFAULT_DEVICE, *, executor: str = "local", slurm: "SlurmResources | None" = None,
                 name: str = "device") -> str:
    """The canonical device (``"cpu"`` or ``"cuda:<index>"``) for a sweep run by
    ``executor`` (``slurm``: its array tasks' resources), or one line naming ``name``
    and the allowed values. Local sweeps check this machine's CUDA devices; a SLURM
    sweep checks what its array tasks ask for (the login node has no GPU to ask)."""
    kind, index = parse_device(device, name)
    if kind is DeviceKind.CPU:
        return DeviceKind.CPU.value
    return _BY_EXECUTOR.get(executor, _on_this_machine)(device, name, kind, index, slurm)


def _on_ray(device: Any, name: str, kind: DeviceKind, index: int | None, slurm: "SlurmResources | None") -> str:
    """A Ray sweep's tasks ask for CPUs only: ``auto`` is the CPU, a GPU is refused."""
    if kind is DeviceKind.AUTO:
        return DeviceKind.CPU.value
    raise InvalidArgumentError(f"{name} = {device!r} is not allowed with executor 'ray' (its tasks ask for CPUs only); "
                               "allowed there: 'cpu' or 'auto' (= cpu); a GPU sweep runs with executor 'local' or "
                               "'slurm'")


def _on_slurm(device: Any, name: str, kind: DeviceKind, index: int | None, slurm: "SlurmResources | None") -> str:
    """A SLURM array's tasks have the GPUs they ask for (the login node has none to ask)."""
    gpus = 0 if slurm is None else int(slurm.gpus_per_node)
    return _within(device, name, kind, index, gpus, f"the SLURM array tasks ask for {gpus} GPU(s) "
                   "(gpus_per_node, --slurm-gpus)")


def _on_this_machine(device: Any, name: str, kind: DeviceKind, index: int | None, slurm: "SlurmResources | None") -> str:
    """A local sweep has this machine's CUDA devices."""
    return _within(device, name, kind, index, cuda_count(), "CUDA is not available" if not cuda_count() else
                   f"this machine has {cuda_count()} CUDA device(s)")


#: ``executor`` -> how a GPU device is checked for its sweep (any other executor name is
#: refused by the executor's own check; until then it is checked as a local sweep)
_BY_EXECUTOR: dict[str, Callable[[Any, str, DeviceKind, int | None, "SlurmResources | None"], str]] = {
    ExecutorKind.LOCAL: _on_this_machine, ExecutorKind.RAY: _on_ray, ExecutorKind.SLURM: _on_slurm,
}


def _within(device: Any, name: str, kind: DeviceKind, index: int | None, count: int, why: str) -> str:
    """``cuda:<index>`` when the index is below ``count``; ``auto`` falls back to the CPU."""
    if kind is DeviceKind.AUTO:
        return "cuda:0" if count else DeviceKind.CPU.value
    i = 0 if index is None else index
    if i < count:
        return f"cuda:{i}"
    if not count:
        raise InvalidArgumentError(f"{name} = {device!r} is not allowed here: {why}; allowed values: 'auto', 'cpu'")
    raise InvalidArgumentError(f"{name} = {device!r} is not allowed here: {why}; allowed values: 'auto', 'cpu', 'cuda' "
                               f"or 'cuda:<index>' with index < {count}")
