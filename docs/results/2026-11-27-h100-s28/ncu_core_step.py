"""One batch-1 decode launch for ncu at a given context (session 27's prepared call, with the context an argument):
a random prompt prefilled, then 4 greedy decode launches; ncu profiles the third (`--launch-skip 2 --launch-count 1`)."""
import sys

import torch

from compare import load_tier
from reference import ModelConfig, random_weights

context = int(sys.argv[1])
config = ModelConfig.qwen3_5_0_8b()
tier = load_tier("megakernel", config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
state = tier.new_state(max_seq_len=context + 64)
ids = torch.randint(0, config.vocab_size, (1, context), generator=torch.Generator().manual_seed(0))
nxt = tier.prefill(ids, state).argmax(-1).to(tier.device)
for _ in range(4):
    nxt = tier.decode_argmax(nxt, state)
torch.cuda.synchronize()
print("done", context, int(nxt[0]))
