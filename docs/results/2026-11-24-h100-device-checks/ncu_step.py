"""A few fed-back decode steps of the megakernel tier (public interface only), for ncu."""
import torch
from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights

c = ModelConfig.qwen3_5_0_8b()
t = load_tier("megakernel", c, perturb_norms(random_weights(c, seed=0, dtype=torch.bfloat16)), device="cuda")
s = t.new_state(max_seq_len=256)
ids = t.prefill(torch.randint(0, c.vocab_size, (1, 64), generator=torch.Generator().manual_seed(1)), s).argmax(-1).cuda()
for _ in range(8):
    ids = t.decode_argmax(ids, s)
torch.cuda.synchronize()
print("done", int(ids))
