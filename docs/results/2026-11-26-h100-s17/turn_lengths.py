"""Turns of ten different lengths (17..250 tokens) on one 16,384-token conversation, each turn's
prefill timed (CUDA sync before and after): what a chat of varying turn lengths pays. Run per tree:
python turn_lengths.py OUT.json (the tree's megakernel tier, random weights, seed 0)."""
import json
import sys
import time

import torch

from compare.timing import prefill_chunked, random_ids
from megakernel.tier import MegakernelTier
from reference import ModelConfig, random_weights

config = ModelConfig.qwen3_5_0_8b()
tier = MegakernelTier(config, random_weights(config, seed=0, device="cuda"), device="cuda")
lengths = [37, 91, 150, 203, 64, 120, 250, 17, 180, 99, 45, 222]
context = random_ids(config, 16384, 1, tier.device)
state = tier.new_state(1, 16384 + sum(lengths))
prefill_chunked(tier, context, state)
times = []
for i, n in enumerate(lengths):
    ids = random_ids(config, n, 10 + i, tier.device)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tier.prefill(ids, state)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
out = {"lengths": lengths, "ms": [1000 * t for t in times], "total_ms": 1000 * sum(times),
       "tokens_per_s": sum(lengths) / sum(times)}
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(" ".join(f"{n}:{1000 * t:.1f}" for n, t in zip(lengths, times)), f"| total {1000 * sum(times):.1f} ms,",
      f"{out['tokens_per_s']:,.0f} tok/s")
