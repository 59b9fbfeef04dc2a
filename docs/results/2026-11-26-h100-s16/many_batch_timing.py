"""tg128 in ONE many-token launch at batch B on the megakernel (decode_greedy: every step's ids
land on the host as the step ends), for a trees' A/B: `compare bench --stream` timed batch 1 only
when call 8 ran this (since then `--stream --batch 1,8` adds `tg128 stream b8` rows, the same timing).
Prints one line per batch: total tok/s, the median of 3 after a warm-up. Run from a tree's root."""
import statistics
import sys
import time

import torch

from compare.timing import prefilled_rows
from compare.tiers import load_tier
from reference import ModelConfig, random_weights

config = ModelConfig.qwen3_5_0_8b()
tier = load_tier("megakernel", config, random_weights(config, seed=0), device="cuda", dtype=torch.bfloat16)
STEPS, PROMPT = 128, 16
for batch in [int(b) for b in sys.argv[1].split(",")]:
    runs = []
    for r in range(4):
        state, first = prefilled_rows(tier, batch, PROMPT, STEPS + 1, seed=r)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = tier.decode_greedy(first, state, STEPS)
        dt = time.perf_counter() - t0
        assert out.shape == (STEPS, batch), out.shape
        if r:
            runs.append(batch * STEPS / dt)
    print(f"tg{STEPS} one launch b{batch}: {statistics.median(runs):,.1f} tok/s (runs {', '.join(f'{x:,.1f}' for x in runs)})")
