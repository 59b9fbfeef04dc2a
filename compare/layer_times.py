"""Per-part time of one decode step of a tier (µs): "embed", "layers.{i}", "norm", "lm_head".

How each tier is timed, first that applies:
  kernel timer   the tier has `decode_layer_times(token_ids, state) -> {part: µs}` (the
                 megakernel reads its in-kernel clock);
  model hooks    the tier runs a `reference.HybridModel` as `tier.model` (reference,
                 triton): the tier's own decode step runs with the model's `layer_hook`
                 marking each boundary (eagerly: a tier with `cuda_graph` has it off);
  module hooks   the tier wraps transformers' `Qwen3_5ForCausalLM` as `tier.model` (hf):
                 forward hooks on the embedding, each decoder layer, the norm and lm_head.
A mark is a CUDA event on a GPU (read after the last step, so the steps queue up as in a
decode loop) and perf_counter on a CPU; a part's time is the gap between its mark and the
previous one, the median over several steps taken after warm-up.
"""

from __future__ import annotations

import statistics
import time

import torch

from reference import FULL, LINEAR, HybridModel

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


def timing_method(tier) -> str | None:
    if callable(getattr(tier, "decode_layer_times", None)):
        return "kernel timer"
    model = getattr(tier, "model", None)
    if isinstance(model, HybridModel):
        return "model hooks"
    inner = getattr(model, "model", None)
    if inner is not None and hasattr(inner, "layers") and hasattr(model, "lm_head"):
        return "module hooks"
    return None


class Marks:
    """Timestamps at named boundaries; `durations()` → {name: µs since the previous mark}."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        self.names, self.stamps = [], []

    def mark(self, name: str):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.stamps.append(event)
        else:
            self.stamps.append(time.perf_counter())
        self.names.append(name)

    def durations(self) -> dict[str, float]:
        if self.cuda:
            self.stamps[-1].synchronize()
            gaps = [a.elapsed_time(b) * 1e3 for a, b in zip(self.stamps, self.stamps[1:])]
        else:
            gaps = [(b - a) * 1e6 for a, b in zip(self.stamps, self.stamps[1:])]
        return dict(zip(self.names[1:], gaps))


def _step_with_model_hooks(tier, token, state):
    """One step through the tier's own decode, its model's forward wrapped to pass the hook."""
    marks = Marks(tier.device)
    model = tier.model
    original = model.forward

    def forward(ids, st, trace=None, layer_hook=None):
        marks.mark("start")
        return original(ids, st, trace, layer_hook=marks.mark)

    model.forward = forward
    try:
        token = tier.decode_argmax(token, state)
    finally:
        del model.forward
    return token, marks


def _step_with_module_hooks(tier, token, state):
    marks = Marks(tier.device)
    model = tier.model
    inner = model.model
    modules = [("embed", inner.embed_tokens)] + [(f"layers.{i}", layer) for i, layer in enumerate(inner.layers)]
    modules += [("norm", inner.norm), ("lm_head", model.lm_head)]
    handles = [inner.embed_tokens.register_forward_pre_hook(lambda *_: marks.mark("start"))]
    for name, module in modules:
        handles.append(module.register_forward_hook(lambda *_, name=name: marks.mark(name)))
    try:
        token = tier.decode_argmax(token, state)
    finally:
        for h in handles:
            h.remove()
    return token, marks


def decode_layer_times(tier, prompt_ids, steps: int = 10, warmup: int = 3) -> tuple[dict[str, float], str]:
    """→ ({part: median µs, …, "total": median µs of a whole step}, method) over `steps`
    decode steps after `prompt_ids` [1, T] and `warmup` untimed steps."""
    method = timing_method(tier)
    if method is None:
        raise ValueError(f"tier {tier.name!r} offers no per-layer timing")
    step = {
        "kernel timer": lambda tok, st: (tok, tier.decode_layer_times(tok, st)),
        "model hooks": lambda tok, st: _step_with_model_hooks(tier, tok, st),
        "module hooks": lambda tok, st: _step_with_module_hooks(tier, tok, st),
    }[method]
    graphed = method == "model hooks" and getattr(tier, "cuda_graph", False)
    if graphed:  # a replayed graph runs no Python: time the same step eagerly
        tier.cuda_graph = False
        method += ", eager (cuda_graph off)"
    try:
        state = tier.new_state(1, prompt_ids.shape[1] + warmup + steps + 1)
        token = tier.prefill(prompt_ids, state).argmax(-1)  # [1]
        samples = []
        for i in range(warmup + steps):
            token, times = step(token, state)
            if i >= warmup:
                samples.append(times)
    finally:
        if graphed:
            tier.cuda_graph = True
    # marks are read only now, so no step waits for the GPU before the next one starts
    samples = [s.durations() if isinstance(s, Marks) else dict(s) for s in samples]
    names = list(dict.fromkeys(n for s in samples for n in s if n != "total"))
    result = {n: statistics.median(s.get(n, 0.0) for s in samples) for n in names}
    totals = (s["total"] if "total" in s else sum(s.values()) for s in samples)
    result["total"] = statistics.median(totals)
    return result, method
