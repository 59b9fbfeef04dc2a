"""Session 28 (issue 21): each kernel of the megakernel rule (csrc/prefill_delta_rule.cu) timed alone by the torch
profiler at 256 / 520 / 4,096 rows (one layer at the 0.8B's shapes), and one call at 520 rows for ncu to take apart."""
import sys

import torch

from compare.delta_rule import inputs
from megakernel import ops, prefill_delta_rule as pdr
from reference import ModelConfig

config, dev = ModelConfig.qwen3_5_0_8b(), torch.device("cuda")
HV, scale = config.linear_num_value_heads, config.linear_key_head_dim ** -0.5
ncu = len(sys.argv) > 1 and sys.argv[1] == "ncu"
for T in ((520,) if ncu else (256, 520, 4096)):
    q, k, v, g, beta, h0 = inputs(config, T, "carried", "model", T, dev)
    rule = pdr.make("megakernel", T, HV, dev)
    gc = pdr.chunk_cumsum(g, 64)
    for _ in range(3):
        rule(q, k, v, gc, beta, scale, h0)
    torch.cuda.synchronize()
    if ncu:
        continue
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            rule(q, k, v, gc, beta, scale, h0)
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times.setdefault(e.name, []).append(e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
    for name, ts in sorted(times.items()):
        ts = sorted(ts)
        print(f"T={T}: {name[:60]}: median {ts[len(ts) // 2]:.1f} µs over {len(ts)}", flush=True)
