"""One decode launch of a batch for ncu (session 33, call 5): B rows, each its own 16-token random prompt
(prefilled together, compare.timing.prefilled_rows), then 4 greedy decode launches of the whole batch; ncu profiles
the third (`--launch-skip 2 --launch-count 1`, the prefill's launches are not mk_decode)."""
import sys

import torch

from compare import load_tier
from compare.timing import prefilled_rows
from reference import ModelConfig, random_weights

batch = int(sys.argv[1])
config = ModelConfig.qwen3_5_0_8b()
tier = load_tier("megakernel", config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
state, nxt = prefilled_rows(tier, batch, 16, 8, seed=0)
for _ in range(4):
    nxt = tier.decode_argmax(nxt, state)
torch.cuda.synchronize()
print("done", batch, nxt.tolist())
