"""GPU latency and peak memory of one FlexiBERT model (:func:`measure_on_gpu`), the CUDA
counterpart of :mod:`nasbench_bert.hardware`'s CPU figures.

Why its own objectives (``latency_gpu_b1_ms``, ``peak_memory_gpu_b32_mib``, ...): a GPU
latency is not a CPU latency measured faster. Small models are launch-bound on a GPU and
compute-bound on a CPU, so the two rank archs differently, and a table mixing them would
rank by machine. GPU rows therefore have columns of their own, record the GPU's name,
and are kept out of the CPU table (``builders/hardware.py --device cuda`` writes
``flexibert_hardware_gpu.parquet``).

How, and why that way:

* **Latency**: CUDA events around one forward (``inference_mode``, eval), after
  warm-up forwards that pay for cuBLAS handles, kernel selection and the allocator's
  first blocks; the events time the GPU's work, not the Python launch loop alone
  (the end event is waited for before the next forward starts). Median and median
  absolute deviation of the timed repeats, in ms.
* **Peak memory**: the weights plus the largest number of bytes torch's CUDA allocator
  held during one forward beyond what it held before it
  (``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``): the same
  definition as the CPU table's (weights + activation peak), read from the allocator
  instead of the profiler.

This module imports only torch (lazily); :mod:`nasbench_bert.hardware` builds the model
and calls it.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

__all__ = ["HARDWARE_GPU_COLUMNS", "gpu_name", "measure_on_gpu"]

#: the measured columns of a GPU hardware row (besides the keys and the settings)
HARDWARE_GPU_COLUMNS: tuple[str, ...] = (
    "latency_gpu_b1_ms", "latency_gpu_b1_mad_ms", "latency_gpu_b32_ms", "latency_gpu_b32_mad_ms",
    "peak_memory_gpu_b1_mib", "peak_memory_gpu_b32_mib", "activation_peak_gpu_b1_mib", "activation_peak_gpu_b32_mib",
    "flops_per_seq", "num_params", "gpu",
)


def gpu_name(device: str) -> str:
    """The name CUDA gives the device (``"NVIDIA H100 80GB HBM3"``)."""
    from ._torch import torch

    return str(torch.cuda.get_device_name(torch.device(device)))


def _events_ms(model: Any, args: tuple, warmup: int, repeats: int) -> list[float]:
    """``repeats`` forward times in ms from CUDA events, after ``warmup`` untimed ones."""
    from ._torch import torch

    for _ in range(warmup):
        model(*args)
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        model(*args)
        end.record()
        end.synchronize()
        out.append(float(start.elapsed_time(end)))
    return out


def _activation_peak(model: Any, args: tuple, device: Any) -> int:
    """Bytes the allocator held during one forward beyond what it held before it."""
    from ._torch import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    out = model(*args)
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    del out
    return int(peak - before)


def measure_on_gpu(model: Any, ids_by_batch: Sequence[Any], repeats: Sequence[int], warmup: Sequence[int],
                   device: str) -> dict[str, Any]:
    """GPU figures of an eval-mode ``model`` (already on ``device``) for each batch of
    token ids (CPU tensors, one per batch size; moved here): ``latency_gpu_b<n>_ms`` and
    its MAD, ``activation_peak_gpu_b<n>_mib``, ``peak_memory_gpu_b<n>_mib`` and ``gpu``."""
    from ._torch import torch

    dev = torch.device(device)
    weights = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    row: dict[str, Any] = {"gpu": gpu_name(device)}
    with torch.inference_mode():
        for ids, rep, warm in zip(ids_by_batch, repeats, warmup):
            ids = ids.to(dev)
            args = (ids, torch.ones_like(ids))
            b = int(ids.shape[0])
            ts = _events_ms(model, args, warm, rep)
            med = statistics.median(ts)
            act = _activation_peak(model, args, dev)
            row[f"latency_gpu_b{b}_ms"] = med
            row[f"latency_gpu_b{b}_mad_ms"] = statistics.median(abs(t - med) for t in ts)
            row[f"activation_peak_gpu_b{b}_mib"] = act / 2**20
            row[f"peak_memory_gpu_b{b}_mib"] = (weights + act) / 2**20
    return row
