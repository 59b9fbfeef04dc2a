"""A prefill call's whole time, host prelude included, in any tree (session 43: the graph launched with its bind node,
NOTES "Prefill" v21, against main's bind op + graph.replay; s29's prelude_profile.py wraps graph.replay, which the
new tree no longer calls). REPS prefills of one T-token prompt, each into a new state, ids on the GPU (as `compare
prefill` / `bench` give them) and on the CPU (as a tokenizer does):
  span_us: a CUDA event recorded just before the call -> one just after it (the GPU's idle time before the graph
           starts, the host's steps in the call, and the graph);
  wall_us: the host's clock from the call's start to the end of the GPU's work (b.synchronize()).
Medians and minima; writes OUT_DIR/call_span.json.
    PYTHONPATH=<tree> python call_span.py OUT_DIR [T] [REPS]
"""
import json
import statistics
import sys
import time

import torch

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights


def main(out_dir, T=520, reps=60):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)),
                     device="cuda")
    ids_cpu = torch.randint(0, config.vocab_size, (1, T), generator=torch.Generator().manual_seed(3))
    rows = {}
    for where, ids in (("gpu ids", ids_cpu.cuda()), ("cpu ids", ids_cpu)):
        for _ in range(3):  # eager, captured, launched
            tier.prefill(ids, tier.new_state(max_seq_len=T))
        span, wall = [], []
        for _ in range(reps):
            state = tier.new_state(max_seq_len=T)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            a.record()
            t0 = time.perf_counter()
            tier.prefill(ids, state)
            b.record()
            b.synchronize()
            wall.append((time.perf_counter() - t0) * 1e6)
            span.append(a.elapsed_time(b) * 1e3)
        rows[where] = {"span_us": [statistics.median(span), min(span)], "wall_us": [statistics.median(wall), min(wall)]}
        print(f"pp{T} {where}: span {statistics.median(span):8.1f} / {min(span):8.1f} µs, wall "
              f"{statistics.median(wall):8.1f} / {min(wall):8.1f} µs (median / min of {reps})")
    json.dump({"device": torch.cuda.get_device_name(), "T": T, "reps": reps, "rows": rows},
              open(f"{out_dir}/call_span.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
