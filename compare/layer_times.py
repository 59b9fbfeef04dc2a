"""Per-part time of one decode step of a tier (µs): "embed", "layers.{i}", "norm", "lm_head".

Each tier times its own parts through the interface (`Tier.decode_timed`, how it does it in
`Tier.part_timing`): the megakernel reads its in-kernel clock and the Triton tier with CUDA
graphs the kernel timestamps of a profiled replay (`marks.put`); the reference tier and the
eager Triton tier mark each boundary with the model's layer hook, the hf tier with forward
hooks on transformers' modules (`marks.mark`). A mark is a CUDA event on a GPU (read after
the last step, so the steps queue up as in a decode loop) and perf_counter on a CPU; a
part's time is the gap between its mark and the previous one, the median over several steps
taken after warm-up.
"""

from __future__ import annotations

import statistics
import time

import torch

from reference import FULL, LINEAR

KIND_NAMES = {LINEAR: "DeltaNet", FULL: "attention"}


def parts(config) -> list[str]:
    return ["embed"] + [f"layers.{i}" for i in range(config.num_layers)] + ["norm", "lm_head"]


def part_kind(config, part: str) -> str:
    """What a part is: "embed", "DeltaNet", "attention", "norm", "lm_head" (or "other")."""
    if part.startswith("layers."):
        index = part.split(".", 1)[1]
        if index.isdigit() and int(index) < config.num_layers:
            return KIND_NAMES[config.layer_types[int(index)]]
        return "other"
    return part if part in ("embed", "norm", "lm_head") else "other"


class Marks:
    """Timestamps at named boundaries (`mark`) and durations measured elsewhere (`put`);
    `durations()` → {name: µs}."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        self.names, self.stamps, self.given = [], [], {}

    def mark(self, name: str):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.stamps.append(event)
        else:
            self.stamps.append(time.perf_counter())
        self.names.append(name)

    def put(self, name: str, microseconds: float):
        self.given[name] = float(microseconds)

    def durations(self) -> dict[str, float]:
        gaps = []
        if self.stamps and self.cuda:
            self.stamps[-1].synchronize()
            gaps = [a.elapsed_time(b) * 1e3 for a, b in zip(self.stamps, self.stamps[1:])]
        elif self.stamps:
            gaps = [(b - a) * 1e6 for a, b in zip(self.stamps, self.stamps[1:])]
        return {**dict(zip(self.names[1:], gaps)), **self.given}


WARMUP = 3  # untimed decode steps before the timed ones


def median_context(prompt_len: int, steps: int, warmup: int = WARMUP) -> int:
    """Tokens in the state at the median timed step of `decode_layer_times` (what its K/V reads
    and so its byte floor depend on)."""
    return prompt_len + warmup + steps // 2


def decode_layer_times(tier, prompt_ids, steps: int = 10, warmup: int = WARMUP) -> tuple[dict[str, float], str]:
    """→ ({part: median µs, …, "total": median µs of a whole step}, tier.part_timing) over
    `steps` decode steps after `prompt_ids` [1, T] and `warmup` untimed steps."""
    if tier.part_timing is None:
        raise ValueError(f"tier {tier.name!r} offers no per-part timing")
    state = tier.new_state(1, prompt_ids.shape[1] + warmup + steps + 1)
    token = tier.prefill(prompt_ids, state).argmax(-1)  # [1]
    samples = []
    for i in range(warmup + steps):
        marks = Marks(tier.device)
        token = tier.decode_timed(token, state, marks)
        if i >= warmup:
            samples.append(marks)
    # marks are read only now, so no step waits for the GPU before the next one starts
    samples = [s.durations() for s in samples]
    names = list(dict.fromkeys(n for s in samples for n in s))
    result = {n: statistics.median(s.get(n, 0.0) for s in samples) for n in names}
    result["total"] = statistics.median(sum(s.values()) for s in samples)
    return result, tier.part_timing
