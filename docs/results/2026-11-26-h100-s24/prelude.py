"""What a prefill does on the host before its graph runs (session 24; call 2 found pp520's region 2,803 µs
against its replay's 2,563 µs): one `tier.prefill` of a fresh T-token prompt (CPU ids, as `compare` passes
them), its graph already captured, under torch.profiler with CPU and CUDA activities:
  - every host op and CUDA runtime call in order with its start (µs from the call's start) and duration;
  - when the GPU's first graph kernel starts and its last one ends (same clock);
  - the chrome trace (prelude_T.json).
    PYTHONPATH=<tree> python prelude.py OUT_DIR 520
"""
import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights


def main(out, lengths):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)), device="cuda")
    gen = torch.Generator().manual_seed(3)
    summary = {"device": torch.cuda.get_device_name(), "rows": []}
    for T in lengths:
        ids = torch.randint(0, config.vocab_size, (1, T), generator=gen)
        for _ in range(4):
            state = tier.new_state(max_seq_len=T)
            tier.prefill(ids, state)
        torch.cuda.synchronize()
        host = []
        for _ in range(20):  # host time of the call alone (the GPU idle before it; the call returns before the GPU ends)
            state = tier.new_state(max_seq_len=T)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            tier.prefill(ids, state)
            host.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
        state = tier.new_state(max_seq_len=T)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            tier.prefill(ids, state)
            torch.cuda.synchronize()
        prof.export_chrome_trace(os.path.join(out, f"prelude_{T}.json"))
        evs = [e for e in prof.events()]
        t0 = min(e.time_range.start for e in evs)
        gpu = [e for e in evs if e.device_type == torch.autograd.DeviceType.CUDA]
        cpu = sorted((e for e in evs if e.device_type != torch.autograd.DeviceType.CUDA), key=lambda e: e.time_range.start)
        first_gpu = min(e.time_range.start for e in gpu) - t0
        kern = [e for e in gpu if "mem" not in e.name.lower()]
        lines = [f"pp{T}: host call {sorted(host)[len(host) // 2]:.0f} µs (median of 20); first GPU activity at "
                 f"{first_gpu:.0f} µs, first kernel at {min(e.time_range.start for e in kern) - t0:.0f} µs, last kernel "
                 f"ends {max(e.time_range.end for e in kern) - t0:.0f} µs"]
        for e in cpu:
            if e.time_range.start - t0 > first_gpu + 400:
                break
            lines.append(f"  {e.time_range.start - t0:8.1f} +{e.time_range.elapsed_us():7.1f}  {e.name[:90]}")
        for e in sorted(gpu, key=lambda e: e.time_range.start)[:6]:
            lines.append(f"  GPU {e.time_range.start - t0:8.1f} +{e.time_range.elapsed_us():7.1f}  {e.name[:90]}")
        print("\n".join(lines))
        summary["rows"].append({"T": T, "host_call_us": sorted(host)[len(host) // 2], "first_gpu_us": first_gpu, "lines": lines})
    json.dump(summary, open(os.path.join(out, "prelude.json"), "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [int(x) for x in sys.argv[2].split(",")])
