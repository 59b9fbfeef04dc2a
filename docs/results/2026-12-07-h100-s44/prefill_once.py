"""CALLS (default 1) prefills of a T-row prompt (default 520) by the megakernel tier, each into a new state: the first
runs eagerly (a plan's first call: its kernels launched one by one, as ncu profiles them), later ones capture and
replay the graph. A target for `ncu -k regex:NAME --launch-count 1` (session 44's next_call.sh).
    PYTHONPATH=<tree> python prefill_once.py [T] [CALLS]"""
import sys

import torch

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights

T = int(sys.argv[1]) if len(sys.argv) > 1 else 520
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 1
config = ModelConfig.qwen3_5_0_8b()
tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)), device="cuda")
ids = torch.randint(0, config.vocab_size, (1, T), generator=torch.Generator().manual_seed(3)).cuda()
for _ in range(CALLS):
    logits = tier.prefill(ids, tier.new_state(max_seq_len=T))
torch.cuda.synchronize()
print(f"pp{T}: {CALLS} prefills, logits finite: {bool(torch.isfinite(logits).all())}")
