"""Per-part times of a decode step replayed from its CUDA graph, where no Python hook fires.

The step runs once eagerly under torch.profiler with a marker kernel (`torch.cuda._sleep`, whose
kernel is `spin_kernel`) launched at the start and as each part ends: the markers split the eager
kernel sequence into the parts ("embed", "layers.{i}", "norm", "lm_head"; what follows the last
part, the argmax, belongs to none). One replay of the graph is then profiled: its kernels are the
same sequence without the markers (checked name by name), so each replayed kernel takes its part.
A part's time runs from the end of the previous part's last kernel (the first part: from its first
kernel's start) to the end of its own last kernel, so every gap between kernels counts in the part
it precedes, as the eager marks count them.
"""

from __future__ import annotations

MARKER = "spin_kernel"  # torch.cuda._sleep's kernel
_profiler_ready = False


def prepare_profiler() -> bool:
    """Start the profiler once in this process, as a graph must be captured after it for its
    replayed kernels to be profiled (torch.profiler._utils._init_for_cuda_graphs; pytorch issue
    75504) → True the first time: the caller captures its graphs again."""
    global _profiler_ready
    if _profiler_ready:
        return False
    from torch.profiler import _utils

    _utils._init_for_cuda_graphs()
    _profiler_ready = True
    return True


def kernel_events(prof) -> list[tuple[str, float, float]]:
    """(name, start µs, end µs) of every CUDA kernel a torch.profiler run recorded, in start order
    (copies and memsets left out: a replay's input copy is not the graph's)."""
    import torch

    out = []
    for evt in prof.events():
        if evt.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = evt.name.lower()
        if "memcpy" in name or "memset" in name:
            continue
        out.append((evt.name, float(evt.time_range.start), float(evt.time_range.end)))
    return sorted(out, key=lambda e: e[1])


def split_by_markers(eager_kernels: list[str], part_names: list[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The eager run's kernel names (markers included) and the names of the marks in order ("start"
    first) → ([(part, its kernel names)], the kernels after the last part). Raises ValueError where
    the markers and the marks disagree."""
    markers = [i for i, n in enumerate(eager_kernels) if MARKER in n]
    if len(markers) != len(part_names):
        raise ValueError(f"the eager step launched {len(markers)} marker kernels for {len(part_names)} marks "
                         f"({part_names[:3]}...): the parts cannot be told apart")
    parts = [(name, eager_kernels[a + 1:b]) for name, a, b in zip(part_names[1:], markers, markers[1:])]
    return parts, eager_kernels[markers[-1] + 1:]


def part_times(parts: list[tuple[str, list[str]]], tail: list[str], replay: list[tuple[str, float, float]]) -> dict[str, float]:
    """The replay's kernels (kernel_events) mapped onto the eager parts → {part: µs}. The graph's
    kernels are the last ones of the replay whose names are the parts' and the tail's in order;
    raises ValueError where no such run of kernels exists."""
    expected = [n for _, names in parts for n in names] + tail
    if not expected:
        raise ValueError("the eager step launched no kernels")
    names = [e[0] for e in replay]
    for start in range(len(names) - len(expected), -1, -1):
        if names[start:start + len(expected)] == expected:
            break
    else:
        raise ValueError(f"the replayed graph's {len(names)} kernels do not contain the eager step's {len(expected)} "
                         f"in order (first eager kernels: {expected[:3]}; first replayed: {names[:3]})")
    out, i, t_prev = {}, start, replay[start][1]
    for name, kernels in parts:
        if kernels:
            i += len(kernels)
            t_end = replay[i - 1][2]
            out[name] = t_end - t_prev
            t_prev = t_end
        else:
            out[name] = 0.0
    return out
