"""Clocks for the benchmarks: a region timer (CUDA events on a GPU, perf_counter on a
CPU), the measured copy bandwidth, NVML's energy counter and the median/min/max summary.

Every GPU region is bracketed by events on the current stream and read back only after
the region, so nothing inside it waits for the host.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Summary:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values) -> "Summary":
        values = list(values)
        return cls(statistics.median(values), min(values), max(values))


class Region:
    """`with Region(device) as r: work()` then `r.seconds` (reading it waits for the GPU)."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"

    def __enter__(self):
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
            self._start.record()
        else:
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self._end.record()
        else:
            self._t1 = time.perf_counter()
        return False

    @property
    def seconds(self) -> float:
        if self.cuda:
            self._end.synchronize()
            return self._start.elapsed_time(self._end) / 1e3
        return self._t1 - self._t0


def synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def copy_bandwidth(device, gib: float = 2.0, repeats: int = 10) -> float | None:
    """Bytes/s of a `gib` GiB bf16 device-to-device copy, counting bytes read + written
    (median of `repeats` after one warm-up); None on a CPU."""
    if torch.device(device).type != "cuda":
        return None
    n = int(gib * 2**30) // 2
    src = torch.randn(n, device=device, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        with Region(device) as r:
            dst.copy_(src)
        times.append(r.seconds)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 2 / statistics.median(times)


class EnergyMeter:
    """NVML's total-energy counter (mJ) of the GPU torch uses; `available` is False (and
    `why` says why) where NVML or the counter cannot be read."""

    def __init__(self, device):
        self.available, self.why, self._handle = False, None, None
        if torch.device(device).type != "cuda":
            self.why = "no GPU"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = self._find_handle(pynvml, torch.device(device))
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            self.available = True
        except ImportError:
            self.why = "pynvml (nvidia-ml-py) is not installed"
        except Exception as e:  # NVML missing, counter not supported on this GPU
            self.why = f"NVML energy counter unreadable: {e}"

    @staticmethod
    def _find_handle(pynvml, device):
        index = device.index if device.index is not None else torch.cuda.current_device()
        uuid = str(torch.cuda.get_device_properties(index).uuid)
        try:
            return pynvml.nvmlDeviceGetHandleByUUID("GPU-" + uuid)
        except Exception:  # older torch/NVML: fall back to the index
            return pynvml.nvmlDeviceGetHandleByIndex(index)

    def millijoules(self) -> int | None:
        if not self.available:
            return None
        return self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
