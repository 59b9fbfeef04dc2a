"""Where a prefill's wall time goes besides its kernels (session 24): for each T, a fresh prompt on the
megakernel tier, its graph captured; then
  region:  tier.prefill as `compare prefill` times it (bind + graph replay + logits clone), CUDA events;
  replay:  plan.graph.replay() alone, CUDA events (the GPU's time for the graph: kernels + the gaps between them);
  kernels: one replay under torch.profiler: the kernels' summed time, the span first start -> last end, the idle
           time between kernels, and the ten widest gaps with the kernels on either side.
    PYTHONPATH=<tree> python gaps.py OUT.json 2,64,520,4096
"""
import json
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights


def events_ms(fn, reps=20):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return statistics.median(out)


def main(path, lengths):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)), device="cuda")
    gen, rows = torch.Generator().manual_seed(3), []
    for T in lengths:
        ids = torch.randint(0, config.vocab_size, (1, T), generator=gen)
        state = tier.new_state(max_seq_len=T)
        for _ in range(3):
            tier.prefill(ids, state)
            state.seq_len = 0  # (the same state again: the plan's table points at it)
        plan = tier.fast_prefill.plan(T, T, True)
        assert plan.graph is not None
        region = events_ms(lambda: (tier.prefill(ids, state), setattr(state, "seq_len", 0)))
        replay = events_ms(plan.graph.replay)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            plan.graph.replay()
            torch.cuda.synchronize()
        ks = sorted(((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                     if e.device_type == torch.autograd.DeviceType.CUDA and "mem" not in e.name.lower()))
        busy = sum(e - s for s, e, _ in ks)
        span = ks[-1][1] - ks[0][0]
        gaps = sorted(((ks[i + 1][0] - ks[i][1], ks[i][2][:60], ks[i + 1][2][:60]) for i in range(len(ks) - 1)), reverse=True)
        row = {"T": T, "region_ms": region, "replay_ms": replay, "kernels": len(ks), "kernel_sum_us": busy, "span_us": span,
               "idle_us": sum(max(0, g[0]) for g in gaps), "median_gap_us": statistics.median(g[0] for g in gaps),
               "widest_gaps": gaps[:10]}
        rows.append(row)
        print(f"pp{T}: region {region * 1e3:.0f} µs, replay {replay * 1e3:.0f} µs, {len(ks)} kernels sum {busy:.0f} µs, "
              f"span {span:.0f} µs, idle {row['idle_us']:.0f} µs (median gap {row['median_gap_us']:.2f} µs)")
        for g in gaps[:5]:
            print(f"   {g[0]:7.1f} µs  {g[1]}  ->  {g[2]}")
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [int(x) for x in sys.argv[2].split(",")])
